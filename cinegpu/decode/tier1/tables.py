"""Constant tables of EBCOT tier-1 (T.800 Annex C and D), as module-level numpy arrays.

numba freezes module-level arrays into the compiled code, so the hot loops index them like C
tables.  Everything here is built once at import; nothing is mutable state.

The decoder keeps its flags as one int64 word per stripe column ("column words", below); the
encoder (cinegpu.encode.tier1) keeps one int32 per sample, the layout the ZC and SC tables
below are indexed by.

Sample flags (one int32 per sample, in an array with a one-sample border, row pitch width + 2):

    bits 0..7   significance of the 8 neighbours: N, S, W, E, NW, NE, SW, SE
    bits 8..11  sign (1 = negative) of the 4 direct neighbours: N, S, W, E
    bit 12      SIG      the sample itself is significant
    bit 13      VISIT    coded in the significance propagation pass of the current bit-plane
    bit 14      REFINED  has had at least one magnitude refinement (Table D.4)
"""

import numpy as np

# -- flags ---------------------------------------------------------------------------------
F_N, F_S, F_W, F_E = 0x01, 0x02, 0x04, 0x08
F_NW, F_NE, F_SW, F_SE = 0x10, 0x20, 0x40, 0x80
F_NEG_N, F_NEG_S, F_NEG_W, F_NEG_E = 0x100, 0x200, 0x400, 0x800
F_SIG = 0x1000
F_VISIT = 0x2000
F_REFINED = 0x4000
F_NEIGHBOURS = 0xFF

# -- contexts (T.800 D.3, Table D.7) -----------------------------------------------------------
CTX_ZC = 0  # 0..8 zero coding (Table D.1)
CTX_SC = 9  # 9..13 sign coding (Table D.3)
CTX_MR = 14  # 14..16 magnitude refinement (Table D.4)
CTX_RL = 17  # run-length
CTX_UNI = 18  # UNIFORM
NUM_CONTEXTS = 19

# -- MQ coder probability estimation, T.800 Table C.2 ------------------------------------------
_QE = [0x5601, 0x3401, 0x1801, 0x0AC1, 0x0521, 0x0221, 0x5601, 0x5401, 0x4801, 0x3801,
       0x3001, 0x2401, 0x1C01, 0x1601, 0x5601, 0x5401, 0x5101, 0x4801, 0x3801, 0x3401,
       0x3001, 0x2801, 0x2401, 0x2201, 0x1C01, 0x1801, 0x1601, 0x1401, 0x1201, 0x1101,
       0x0AC1, 0x09C1, 0x08A1, 0x0521, 0x0441, 0x02A1, 0x0221, 0x0141, 0x0111, 0x0085,
       0x0049, 0x0025, 0x0015, 0x0009, 0x0005, 0x0001, 0x5601]
_NMPS = [1, 2, 3, 4, 5, 38, 7, 8, 9, 10, 11, 12, 13, 29, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
         25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 45,
         46]
_NLPS = [1, 6, 9, 12, 29, 33, 6, 14, 14, 14, 17, 18, 20, 21, 14, 14, 15, 16, 17, 18, 19, 19, 20,
         21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42,
         43, 46]
_SWITCH = [1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1] + [0] * 32

# A context holds sv = 2 * state index + MPS (94 values), as OpenJPEG's mqc_states does, so the
# SWITCH column of Table C.2 folds into the next-state tables.
MQ_QE = np.array([_QE[sv >> 1] for sv in range(94)], dtype=np.int64)
MQ_NMPS = np.array([2 * _NMPS[sv >> 1] + (sv & 1) for sv in range(94)], dtype=np.int32)
MQ_NLPS = np.array([2 * _NLPS[sv >> 1] + ((sv & 1) ^ _SWITCH[sv >> 1]) for sv in range(94)],
                   dtype=np.int32)



def _lps_shift(qe):
    """RENORMD shifts after an LPS exchange (A = Qe): until A >= 0x8000."""
    n = 0
    while (qe << n) < 0x8000:
        n += 1
    return n


# The decoder's packed form of Table C.2, one int64 per sv: Qe in bits 0..15, the RENORMD shift
# after an LPS exchange in bits 16..19, next sv after an MPS in bits 20..26 and after an LPS
# (MPS switch folded in) in bits 27..33.  One load per decision (mq.py).
MQ_STATE = np.array([int(MQ_QE[sv]) | (_lps_shift(int(MQ_QE[sv])) << 16)
                     | (int(MQ_NMPS[sv]) << 20) | (int(MQ_NLPS[sv]) << 27) for sv in range(94)],
                    dtype=np.int64)
# Bit position of Chigh in the decoder's 64-bit C register (mq.py): 40 coded bits wait below.
MQ_SHIFT = 40
# A decoding context's word (mq.py): MQ_STATE[sv] with the MPS (sv & 1) in bit 34, so that a
# decision reads its Qe, shifts and next states from the context itself, one load fewer on the
# path from one decision to the next; its next state is written as its word.
MQ_WORD_MPS = 34
MQ_WORD = MQ_STATE | ((np.arange(94, dtype=np.int64) & 1) << MQ_WORD_MPS)

# Initial context states, T.800 Table D.7: all state 0 / MPS 0, except ZC context 0 (state 4),
# run-length (state 3) and UNIFORM (state 46).
CTX_INIT = np.zeros(NUM_CONTEXTS, dtype=np.int32)
CTX_INIT[CTX_ZC] = 2 * 4
CTX_INIT[CTX_RL] = 2 * 3
CTX_INIT[CTX_UNI] = 2 * 46
#: the same as decoding contexts' words (MQ_WORD)
CTX_INIT_WORD = MQ_WORD[CTX_INIT]


# -- zero coding contexts, T.800 Table D.1 ------------------------------------------------------
def _zc_context(h, v, d, orient):
    """Context 0..8 from the counts of significant horizontal, vertical, diagonal neighbours."""
    if orient == 1:  # HL (horizontally high-pass): Table D.1 with H and V exchanged
        h, v = v, h
    if orient == 3:  # HH
        hv = h + v
        if d >= 3:
            return 8
        if d == 2:
            return 7 if hv >= 1 else 6
        if d == 1:
            return 5 if hv >= 2 else (4 if hv == 1 else 3)
        return 2 if hv >= 2 else hv
    # LL and LH (vertically high-pass)
    if h == 2:
        return 8
    if h == 1:
        return 7 if v >= 1 else (6 if d >= 1 else 5)
    if v == 2:
        return 4
    if v == 1:
        return 3
    return 2 if d >= 2 else d


def _build_zc():
    lut = np.zeros((4, 256), dtype=np.int32)
    for orient in range(4):
        for nb in range(256):
            v = (nb & 1) + ((nb >> 1) & 1)
            h = ((nb >> 2) & 1) + ((nb >> 3) & 1)
            d = sum((nb >> b) & 1 for b in range(4, 8))
            lut[orient, nb] = CTX_ZC + _zc_context(h, v, d, orient)
    return lut


# ZC_LUT[orient, flags & 0xFF] -> context; orient 0 LL, 1 HL, 2 LH, 3 HH.
ZC_LUT = _build_zc()


# -- sign coding contexts, T.800 Tables D.2 and D.3 ---------------------------------------------
def _build_sc():
    """SC_LUT[i] = context | (XORbit << 7), i = sig N,S,W,E in bits 0..3, negative in bits 4..7."""
    table = {(1, 1): (13, 0), (1, 0): (12, 0), (1, -1): (11, 0),
             (0, 1): (10, 0), (0, 0): (9, 0), (0, -1): (10, 1),
             (-1, 1): (11, 1), (-1, 0): (12, 1), (-1, -1): (13, 1)}
    lut = np.zeros(256, dtype=np.int32)
    for i in range(256):
        contrib = []
        for b in range(4):  # N, S, W, E
            sig = (i >> b) & 1
            neg = (i >> (b + 4)) & 1
            contrib.append(0 if not sig else (-1 if neg else 1))
        vsum = max(-1, min(1, contrib[0] + contrib[1]))
        hsum = max(-1, min(1, contrib[2] + contrib[3]))
        ctx, xor = table[(hsum, vsum)]
        lut[i] = ctx | (xor << 7)
    return lut


SC_LUT = _build_sc()


# -- the decoder's column words (passes.py), as OpenJPEG's decoder keeps its flags (opj_t1_t) ---
# One int64 word per column of a stripe (the 4 samples of D.1's scan), in an array of
# (stripes + 2) rows of (width + 2) words: a border word each side and a border stripe above
# and below; the word of column x of stripe s at (s + 1) * (width + 2) + x + 1.  For the rows
# r = -1..4 of the stripe (-1: the last row of the stripe above, 4: the first of the one below):
#   bits 3(r+1) + 0, 1, 2   significance of column x-1, x, x+1 at row r (a 3 x 6 window)
#   bit 18 + 3(r+1)         sign of sample (x, r), 1 = negative (rows -1..4)
#   bit 19 + 3(r+1)         refined at least once (rows 0..3; Table D.4)
#   bit 20 + 3(r+1)         visited: coded in this bit-plane's significance pass (rows 0..3)
#   bit 36 + 3r, 38 + 3r    sign of the west / east neighbour of (x, r) (rows 0..3)
# So for the sample of row k, g = word >> 3k holds its 3 x 3 neighbourhood in bits 0..8 (bit 4
# the sample itself), the signs of N, itself and S at bits 18, 21, 24, its refined and visited
# bits at 22 and 23, and the signs of W and E at 36 and 38.
COL_WINDOW = (1 << 18) - 1      # the 3 x 6 window's significance
COL_NEIGHBOURS = 0x1EF          # in g: the 8 neighbours (bit 4, the sample, left out)
COL_SIG = 1 << 4                # in g: the sample is significant
COL_NEG = 1 << 21               # in g: the sample is negative
COL_REFINED = 1 << 22           # in g
COL_VISIT = 1 << 23             # in g
COL_VISIT_ALL = sum(COL_VISIT << (3 * k) for k in range(4))    # the four rows' visited bits
COL_ROWS = 0x249                # a bit per row k at 3k (a column's rows to code, as bits)
SIG_ROW0 = 4                    # the significance of row k at bit SIG_ROW0 + 3k
VISIT_ROW0 = 23                 # its visited bit at VISIT_ROW0 + 3k
# g's window bit -> the sample flag of the same neighbour (NW N NE / W . E / SW S SE)
_WINDOW_NEIGHBOUR = {0: F_NW, 1: F_N, 2: F_NE, 3: F_W, 5: F_E, 6: F_SW, 7: F_S, 8: F_SE}


def _build_zc_col():
    """ZC_COL_LUT[orient, g & 0x1FF]: ZC_LUT's context of the same eight neighbours."""
    lut = np.zeros((4, 512), dtype=np.int32)
    for window in range(512):
        nb = sum(flag for bit, flag in _WINDOW_NEIGHBOUR.items() if (window >> bit) & 1)
        lut[:, window] = ZC_LUT[:, nb]
    return lut


ZC_COL_LUT = _build_zc_col()


def _build_sc_col():
    """SC_COL_LUT[i]: SC_LUT's entry for i = significance and sign of N (bits 0, 1), W (2, 3),
    E (4, 5) and S (6, 7), as passes.sign_context gathers them from g."""
    lut = np.zeros(256, dtype=np.int32)
    for i in range(256):
        sig_n, neg_n, sig_w, neg_w, sig_e, neg_e, sig_s, neg_s = ((i >> j) & 1 for j in range(8))
        lut[i] = SC_LUT[sig_n | (sig_s << 1) | (sig_w << 2) | (sig_e << 3)
                        | (neg_n << 4) | (neg_s << 5) | (neg_w << 6) | (neg_e << 7)]
    return lut


SC_COL_LUT = _build_sc_col()
