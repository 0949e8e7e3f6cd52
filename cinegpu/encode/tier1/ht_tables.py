"""Encoding tables of the HT cleanup pass (ITU-T T.814 | ISO/IEC 15444-15), numpy arrays.

Built at import from the decoder's copy of the standard's CxtVLC rows
(:mod:`cinegpu.decode.tier1.ht_tables`, T.814 Annex C Tables C.1 and C.2), so both halves
read one table.  The encoder knows, per quad, its context c_q, its significance pattern rho
and eps, the samples whose exponent E_n equals the quad's bound U_q (none when u_q = 0,
then u_off = 0).  A row (c_q, rho, u_off, e_k, e_1) may code that quad when its e_k samples
agree with eps (e_1 = eps & e_k): those samples then send one MagSgn bit fewer (7.3.7).
Among the rows that may, the table keeps the one with the fewest bits in all (codeword
length minus the MagSgn bits saved), the first in the standard's order on a tie.

VLC_ENC_0 (first line-pair) and VLC_ENC_1 (the others) are indexed by
(c_q << 8) | (rho << 4) | eps, each entry packing

    bits 0..6 codeword (LSB first as sent)   bits 8..11 length   bits 12..15 e_k

and -1 where no row applies (rho = 0 with c_q = 0: such quads are coded by MEL alone).
"""

import numpy as np

from cinegpu.decode.tier1.ht_tables import _VLC_TABLE_0, _VLC_TABLE_1, vlc_rows


def build_vlc_encoder(rows: list[tuple[int, ...]]) -> np.ndarray:
    """The 8 x 16 x 16 encoding table of a CxtVLC table (see the module docstring)."""
    table = np.full(8 * 256, -1, dtype=np.int32)
    for c_q in range(8):
        for rho in range(16):
            for eps in range(16):
                if eps & ~rho:
                    continue
                u_off = 1 if eps else 0
                best, cost = -1, 99
                for rc, rr, ru, ek, e1, cwd, length in rows:
                    if rc != c_q or rr != rho or ru != u_off or (ek & eps) != e1:
                        continue
                    c = length - bin(ek).count("1")
                    if c < cost:
                        best, cost = cwd | (length << 8) | (ek << 12), c
                table[(c_q << 8) | (rho << 4) | eps] = best
    return table


#: Encoding tables of the first line-pair (0) and the other line-pairs (1).
VLC_ENC_0 = build_vlc_encoder(vlc_rows(_VLC_TABLE_0))
VLC_ENC_1 = build_vlc_encoder(vlc_rows(_VLC_TABLE_1))
