/* HT code-block decoding on the GPU (ITU-T T.814 | ISO/IEC 15444-15 clause 7), one thread per
 * code-block: included by tier1.cu, called from decode_slot for rows with the CBLK_HT style bit.
 *
 * A line-by-line twin of the numba decoder decode/tier1/ht.py (ht_select, ht_cleanup,
 * ht_sigprop, ht_magref, ht_decode_into): the same HT set chosen, the same values (2 x the
 * coefficient, sign applied), the same status bits and early exits, corrupt data included.
 * Read that module's docstring for the streams; in short, the cleanup segment holds MagSgn
 * (forward from byte 0, 7.3.2), MEL (forward from Pcup, 7.3.3) and VLC (backward from Lcup - 2,
 * 7.3.4 / 7.3.6); the refinement segment SigProp forward (7.4) and MagRef backward (7.5).
 *
 * Scratch.  No arrays of its own: the slot's flags (uint16) and vals (int32) of the bordered
 * block, entry i = (y + 1) * (w + 2) + x + 1, as EBCOT uses them.  numba's sig map (pitch
 * w + 4) and exponent lines (eline) become bits of the flags entry of the same sample:
 *
 *   HT_SIG  significant after the cleanup pass (numba sig == 1)
 *   HT_NEW  significant from the SigProp pass (numba sig == 2)
 *   HT_VAL  vals holds the sample's MagSgn value (numba: vals zeroed up front; here only
 *           entries with HT_VAL or HT_NEW are read back, so vals needs no zeroing)
 *   bits 8..13  the exponent E (7.3.5, <= 32) of a sample on a quad's lower row: the exponent
 *           line of numba's eline for the next line-pair, read from the row above.
 *
 * The border is enough: samples outside the block (x = w or y = h of odd sizes) are never
 * significant (a corrupt-data exit), so they hold 0 as numba's wider sig does; the one read
 * past the right border, the exponent of column w + 1 of the row above (odd w), lands on the
 * left border of the next row, which is never written (0, as numba's unwritten eline entry).
 *
 * Tables: vlc (uint16, 2 x 1024 entries: VLC_LUT_0 for the first line-pair, then VLC_LUT_1,
 * decode/tier1/ht_tables.py's packing), in shared memory; the MEL exponents (T.814 Table 2)
 * as the nibbles of a constant.
 */

#define CBLK_HT 0x40
#define STATUS_HT_CORRUPT 0x20

#define HT_SIG 0x01
#define HT_NEW 0x02
#define HT_VAL 0x04
#define HT_E_SHIFT 8
#define HT_MAX_SCUP 4079 /* T.814 7.1: Scup is 12 bits below 0xFF0 */

/* MEL_EXP[k] (ht_tables.py, T.814 7.3.3), k = 0..12, nibble k of this constant */
#define HT_MEL_EXP 0x5433222111000ULL

/* Forward reader (MagSgn, SigProp): byte position, accumulator (next bit lowest, at most 56
 * valid bits), its bit count, whether the byte read last was 0xFF, the fill byte past `end`. */
struct HtFwd {
    i64 pos, end;
    u64 acc;
    int nb;
    bool ff;
    unsigned int fill;
};

/* Backward reader (VLC, MagRef): reads bytes from `pos` down to `stop`, zeros below. */
struct HtBwd {
    i64 pos, stop;
    u64 acc;
    int nb;
    bool unstuff;
};

/* MEL decoder state (ht.py mel_symbol): byte position, current byte, its bits left, the
 * state k, zeros left in the run, and whether a one ends the run. */
struct HtMel {
    i64 pos, end;
    int cur, nbits, k, run, one;
};

/* ht.py fwd_fill: top up to more than 48 bits; after 0xFF only 7 bits of the next byte */
T1_DEV void ht_fwd_fill(HtFwd& r, const unsigned char* data)
{
    while (r.nb <= 48) {
        u64 b = r.pos < r.end ? (u64)data[r.pos] : (u64)r.fill;
        r.pos++;
        if (r.ff) {
            r.acc |= (b & 0x7F) << r.nb;
            r.nb += 7;
        } else {
            r.acc |= b << r.nb;
            r.nb += 8;
        }
        r.ff = b == 0xFF;
    }
}

/* ht.py bwd_fill: top up to more than 48 bits; a byte ending 0x7F after one above 0x8F gives
 * only its low 7 bits (T.814 7.3.4) */
T1_DEV void ht_bwd_fill(HtBwd& r, const unsigned char* data)
{
    while (r.nb <= 48) {
        u64 b = r.pos >= r.stop ? (u64)data[r.pos] : 0;
        r.pos--;
        if (r.unstuff && (b & 0x7F) == 0x7F) {
            r.acc |= (b & 0x7F) << r.nb;
            r.nb += 7;
        } else {
            r.acc |= b << r.nb;
            r.nb += 8;
        }
        r.unstuff = b > 0x8F;
    }
}

/* ht.py mel_bit with mel_byte: MSB first, one bit unstuffed after 0xFF; the segment's last
 * byte reads 0xFF and the one before it has its low nibble (Scup's) set, 0xFF past the end */
T1_DEV int ht_mel_bit(HtMel& m, const unsigned char* data)
{
    if (m.nbits == 0) {
        m.nbits = m.cur == 0xFF ? 7 : 8;
        if (m.pos < m.end - 2)
            m.cur = data[m.pos];
        else if (m.pos == m.end - 2)
            m.cur = data[m.pos] | 0x0F;
        else
            m.cur = 0xFF;
        m.pos++;
    }
    m.nbits--;
    return (m.cur >> m.nbits) & 1;
}

/* ht.py mel_symbol (T.814 7.3.3): 1 stands for 2^E[k] zeros, 0 + E[k] bits r for r zeros
 * and a one */
T1_DEV int ht_mel_symbol(HtMel& m, const unsigned char* data)
{
    if (m.run == 0 && m.one == 0) {
        int e = (int)((HT_MEL_EXP >> (4 * m.k)) & 0xF);
        if (ht_mel_bit(m, data)) {
            m.run = 1 << e;
            m.k = m.k + 1 < 12 ? m.k + 1 : 12;
        } else {
            m.run = 0;
            for (int b = 0; b < e; b++)
                m.run = (m.run << 1) | ht_mel_bit(m, data);
            m.k = m.k > 0 ? m.k - 1 : 0;
            m.one = 1;
        }
    }
    if (m.run > 0) {
        m.run--;
        return 0;
    }
    m.one = 0;
    return 1;
}

/* U-VLC (T.814 Table 3), ht.py u_prefix / u_suffix / u_extension */
T1_DEV int ht_u_prefix(HtBwd& r)
{
    if (r.acc & 1) {
        r.acc >>= 1;
        r.nb -= 1;
        return 1;
    }
    if (r.acc & 2) {
        r.acc >>= 2;
        r.nb -= 2;
        return 2;
    }
    int v = (r.acc & 4) ? 3 : 5;
    r.acc >>= 3;
    r.nb -= 3;
    return v;
}

T1_DEV int ht_u_suffix(HtBwd& r, int pfx)
{
    if (pfx < 3)
        return 0;
    if (pfx == 3) {
        int v = (int)(r.acc & 1);
        r.acc >>= 1;
        r.nb -= 1;
        return v;
    }
    int v = (int)(r.acc & 31);
    r.acc >>= 5;
    r.nb -= 5;
    return v;
}

T1_DEV int ht_u_extension(HtBwd& r, int sfx)
{
    if (sfx < 28)
        return 0;
    int v = (int)(r.acc & 15);
    r.acc >>= 4;
    r.nb -= 4;
    return v;
}

/* ht.py magsgn_quad (T.814 7.3.7): the significant samples of the quad whose top-left
 * sample is entry i read m = U - e_k bits v, |mu| = (v >> 1) + 1, sign v & 1; the lower row's
 * exponents go to the flags' bits 8..13.  False when a value exceeds int32 (corrupt data);
 * the quad's other samples are still written, as numba does. */
T1_DEV bool ht_magsgn_quad(HtFwd& ms, const unsigned char* data, const Cb& cb, int entry,
                           int big_u, int p, int i, int fs)
{
    bool ok = true;
    int rho = (entry >> 4) & 0xF;
    int e_1 = (entry >> 8) & 0xF;
    int e_k = (entry >> 12) & 0xF;
    for (int n = 0; n < 4; n++) {
        int j = i + (n >> 1) + (n & 1) * fs; /* sample (x0 + n / 2, y0 + n % 2) */
        int e = 0;
        if ((rho >> n) & 1) {
            int m = big_u - ((e_k >> n) & 1);
            if (ms.nb < m)
                ht_fwd_fill(ms, data);
            u64 v = (ms.acc & ((1ULL << m) - 1)) | ((u64)((e_1 >> n) & 1) << m);
            ms.acc >>= m;
            ms.nb -= m;
            i64 mag = (i64)(((v >> 1) * 2 + 3) << p);
            if (mag > 0x7FFFFFFF) {
                ok = false;
                mag = 0;
            }
            VA(cb, j) = (v & 1) ? -(int)mag : (int)mag;
            FL(cb, j) |= HT_VAL;
            if (v)
                e = 64 - T1_CLZ64(v);
        }
        if (n & 1)
            FL(cb, j) |= (unsigned short)(e << HT_E_SHIFT);
    }
    return ok;
}

/* The U-VLC exponent offsets u of a quad pair (T.814 7.3.6; ht.py ht_cleanup's middle part):
 * e1 / e2 the pair's VLC entries (u_off at bit 3), MEL symbols on the initial line-pair */
T1_DEV void ht_u_pair(HtBwd& vl, HtMel& mr, const unsigned char* data, int e1, int e2,
                      bool initial, int* u1, int* u2)
{
    int uoff1 = (e1 >> 3) & 1, uoff2 = (e2 >> 3) & 1;
    *u1 = 0;
    *u2 = 0;
    if (uoff1 && uoff2) {
        int mel = 0;
        if (initial)
            mel = ht_mel_symbol(mr, data);
        int pfx1 = ht_u_prefix(vl);
        int sfx1, ext1;
        if (initial && mel == 0 && pfx1 > 2) {
            *u2 = (int)(vl.acc & 1) + 1;
            vl.acc >>= 1;
            vl.nb -= 1;
            sfx1 = ht_u_suffix(vl, pfx1);
            ext1 = ht_u_extension(vl, sfx1);
        } else {
            int pfx2 = ht_u_prefix(vl);
            sfx1 = ht_u_suffix(vl, pfx1);
            int sfx2 = ht_u_suffix(vl, pfx2);
            ext1 = ht_u_extension(vl, sfx1);
            int ext2 = ht_u_extension(vl, sfx2);
            *u2 = pfx2 + sfx2 + 4 * ext2 + (mel ? 2 : 0);
        }
        *u1 = pfx1 + sfx1 + 4 * ext1 + (mel ? 2 : 0);
    } else if (uoff1 || uoff2) {
        int pfx = ht_u_prefix(vl);
        int sfx = ht_u_suffix(vl, pfx);
        int ext = ht_u_extension(vl, sfx);
        if (uoff1)
            *u1 = pfx + sfx + 4 * ext;
        else
            *u2 = pfx + sfx + 4 * ext;
    }
}

/* The VLC context of the quad whose top-left sample is entry i (ht.py quad_context, T.814
 * 7.3.4): on the first line-pair from the quad to the left (rho_w), below it from the
 * significance of the neighbours above and to the left */
T1_DEV int ht_quad_context(const Cb& cb, int i, int fs, bool initial, int rho_w)
{
    if (initial)
        return (rho_w & 1) | ((rho_w >> 1) & 1) | ((rho_w >> 1) & 6);
    return ((FL(cb, i - fs - 1) | FL(cb, i - fs)) & HT_SIG)
           | (((FL(cb, i - 1) | FL(cb, i + fs - 1)) & HT_SIG) << 1)
           | (((FL(cb, i - fs + 1) | FL(cb, i - fs + 2)) & HT_SIG) << 2);
}

/* kappa of a quad with two or more significant samples below the first line-pair (T.814
 * 7.3.5): max(E_max - 1, 1), E_max over the exponents of samples x0 - 1 .. x0 + 2 of the row
 * above (flags entries y0 * fs + x0 .. + 3) */
T1_DEV int ht_kappa(const Cb& cb, int x0, int y0, int fs)
{
    int a = y0 * fs + x0;
    int e0 = FL(cb, a) >> HT_E_SHIFT, e1 = FL(cb, a + 1) >> HT_E_SHIFT;
    int e2 = FL(cb, a + 2) >> HT_E_SHIFT, e3 = FL(cb, a + 3) >> HT_E_SHIFT;
    int emax = e0 > e1 ? e0 : e1;
    emax = emax > e2 ? emax : e2;
    emax = emax > e3 ? emax : e3;
    return emax - 1 > 1 ? emax - 1 : 1;
}

/* ht.py ht_cleanup: the HT cleanup pass (T.814 7.3) of the w x h block at plane p, from the
 * Lcup bytes at coded[start].  Flags must be zero on entry.  Returns 0 or STATUS_HT_CORRUPT.
 * Audited hot kernel, longer than the usual 80 lines: the three readers stay in registers
 * across the block. */
T1_DEV int ht_cleanup(const Cb& cb, const unsigned char* data, i64 start, i64 lcup, int w,
                      int h, int p, const unsigned short* vlc)
{
    if (lcup < 2) /* numba reads Scup first, from before the segment: the same exit */
        return STATUS_HT_CORRUPT;
    i64 end = start + lcup;
    int scup = ((int)data[end - 1] << 4) | (data[end - 2] & 0xF);
    if (scup < 2 || scup > lcup || scup > HT_MAX_SCUP)
        return STATUS_HT_CORRUPT;
    i64 pcup = end - scup;
    HtFwd ms;
    ms.pos = start;
    ms.end = pcup;
    ms.acc = 0;
    ms.nb = 0;
    ms.ff = false;
    ms.fill = 0xFF;
    HtMel mel;
    mel.pos = pcup;
    mel.end = end;
    mel.cur = mel.nbits = mel.k = mel.run = mel.one = 0;
    int d = data[end - 2];
    HtBwd vl;
    vl.acc = (u64)(d >> 4);
    vl.nb = 4;
    if ((vl.acc & 7) == 7) { /* the nibble's top bit is a stuffed 0 (Lcup - 1 counts as 0xFF) */
        vl.acc &= 7;
        vl.nb = 3;
    }
    vl.unstuff = (d | 0x0F) > 0x8F;
    vl.pos = end - 3;
    vl.stop = pcup;
    int fs = w + 2;
    int qw = (w + 1) >> 1, qh = (h + 1) >> 1;
    for (int qy = 0; qy < qh; qy++) {
        int y0 = 2 * qy;
        bool initial = qy == 0;
        const unsigned short* lut = vlc + (initial ? 0 : 1024);
        int rho_w = 0; /* initial line-pair: significance of the quad to the left */
        for (int qx = 0; qx < qw; qx += 2) {
            ht_bwd_fill(vl, data);
            int e1 = 0, e2 = 0; /* the pair's VLC entries (registers, not an array) */
            int nquads = qx + 1 < qw ? 2 : 1;
#pragma unroll
            for (int j = 0; j < 2; j++) {
                if (j == nquads)
                    break;
                int x0 = 2 * (qx + j);
                int i = (y0 + 1) * fs + x0 + 1;
                int c = ht_quad_context(cb, i, fs, initial, rho_w);
                int present = c == 0 ? ht_mel_symbol(mel, data) : 1;
                int entry = 0;
                if (present) {
                    entry = lut[(c << 7) | (int)(vl.acc & 0x7F)];
                    vl.acc >>= entry & 7;
                    vl.nb -= entry & 7;
                }
                int rho = (entry >> 4) & 0xF;
                /* samples outside the block may not be significant */
                if ((x0 + 1 >= w && (rho & 0xC)) || (y0 + 1 >= h && (rho & 0xA)))
                    return STATUS_HT_CORRUPT;
                FL(cb, i) = (unsigned short)(rho & 1);
                FL(cb, i + fs) = (unsigned short)((rho >> 1) & 1);
                FL(cb, i + 1) = (unsigned short)((rho >> 2) & 1);
                FL(cb, i + fs + 1) = (unsigned short)((rho >> 3) & 1);
                rho_w = rho;
                if (j == 0)
                    e1 = entry;
                else
                    e2 = entry;
            }
            int u1, u2;
            ht_u_pair(vl, mel, data, e1, e2, initial, &u1, &u2);
#pragma unroll
            for (int j = 0; j < 2; j++) {
                if (j == nquads)
                    break;
                int entry = j == 0 ? e1 : e2;
                int rho = (entry >> 4) & 0xF;
                int x0 = 2 * (qx + j);
                int kappa = 1;
                if (!initial && (rho & (rho - 1))) /* two or more significant samples */
                    kappa = ht_kappa(cb, x0, y0, fs);
                int big_u = kappa + (j == 0 ? u1 : u2);
                if (big_u + p > 31) /* v would have more bits than a 32-bit value holds */
                    return STATUS_HT_CORRUPT;
                if (!ht_magsgn_quad(ms, data, cb, entry, big_u, p, (y0 + 1) * fs + x0 + 1, fs))
                    return STATUS_HT_CORRUPT;
            }
        }
    }
    return 0;
}

/* ht.py ht_sigprop: the HT SigProp pass (T.814 7.4) at plane p - 1 from the Lref bytes at
 * coded[start], forward.  Stripes of four rows, groups of four columns: each insignificant
 * sample with a significant neighbour (the row below hidden at a stripe's foot when vcausal)
 * reads a bit, then the group's new samples (HT_NEW) read their signs. */
T1_DEV void ht_sigprop(const Cb& cb, const unsigned char* data, i64 start, i64 lref, int w,
                       int h, int p, bool vcausal)
{
    HtFwd r;
    r.pos = start;
    r.end = start + lref;
    r.acc = 0;
    r.nb = 0;
    r.ff = false;
    r.fill = 0;
    int fs = w + 2;
    int one_half = 3 << (p - 1);
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x0 = 0; x0 < w; x0 += 4) {
            int x1 = x0 + 4 < w ? x0 + 4 : w;
            int fresh = 0;
            for (int x = x0; x < x1; x++) {
                for (int y = y0; y < y1; y++) {
                    int i = (y + 1) * fs + x + 1;
                    if (FL(cb, i) & (HT_SIG | HT_NEW))
                        continue;
                    int near = FL(cb, i - fs - 1) | FL(cb, i - fs) | FL(cb, i - fs + 1)
                               | FL(cb, i - 1) | FL(cb, i + 1);
                    if (!(vcausal && y == y1 - 1))
                        near |= FL(cb, i + fs - 1) | FL(cb, i + fs) | FL(cb, i + fs + 1);
                    if (near & (HT_SIG | HT_NEW)) {
                        if (r.nb < 1)
                            ht_fwd_fill(r, data);
                        if (r.acc & 1) {
                            FL(cb, i) |= HT_NEW;
                            fresh |= 1 << ((x - x0) * 4 + y - y0);
                        }
                        r.acc >>= 1;
                        r.nb -= 1;
                    }
                }
            }
            if (!fresh)
                continue;
            for (int x = x0; x < x1; x++) {
                for (int y = y0; y < y1; y++) {
                    if ((fresh >> ((x - x0) * 4 + y - y0)) & 1) {
                        if (r.nb < 1)
                            ht_fwd_fill(r, data);
                        VA(cb, (y + 1) * fs + x + 1) = (r.acc & 1) ? -one_half : one_half;
                        r.acc >>= 1;
                        r.nb -= 1;
                    }
                }
            }
        }
    }
}

/* ht.py ht_magref: the HT MagRef pass (T.814 7.5) at plane p - 1, backward from the end of
 * the Lref bytes at coded[start]: one bit per sample significant after the cleanup pass, in
 * stripe order */
T1_DEV void ht_magref(const Cb& cb, const unsigned char* data, i64 start, i64 lref, int w,
                      int h, int p)
{
    HtBwd r;
    r.pos = start + lref - 1;
    r.stop = start;
    r.acc = 0;
    r.nb = 0;
    r.unstuff = true;
    int fs = w + 2;
    unsigned int half = 1u << (p - 1);
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            for (int y = y0; y < y1; y++, i += fs) {
                if (!(FL(cb, i) & HT_SIG))
                    continue;
                if (r.nb < 1)
                    ht_bwd_fill(r, data);
                int v = VA(cb, i);
                unsigned int uv = (unsigned int)v;
                VA(cb, i) = (int)(((r.acc & 1) ^ (u64)(v < 0)) ? uv + half : uv - half);
                r.acc >>= 1;
                r.nb -= 1;
            }
        }
    }
}

/* ht.py ht_select: the HT set to decode from the block's segments (T.814 Annex B).  Offsets
 * (bytes) count from the block's first byte, with the two padding bytes after each segment;
 * *zc = -1 when no cleanup segment holds data.  Returns the status bits. */
T1_DEV int ht_select(const int* seg_lengths, const int* seg_passes, i64 seg_first,
                     i64 seg_count, i64* c_off, i64* lcup, i64* zc, i64* r_off, i64* lref,
                     i64* nref)
{
    i64 z = 0, off = 0;
    int status = 0;
    *c_off = *lcup = *r_off = *lref = *nref = 0;
    *zc = -1;
    i64 seg_end = wadd(seg_first, seg_count);
    for (i64 j = seg_first; j < seg_end; j++) {
        i64 n = seg_passes[j];
        i64 length = seg_lengths[j];
        if (n > 0) {
            i64 last = z + n - 1;
            if (last % 3 == 0) { /* ends with a cleanup pass (any passes before: placeholders) */
                if (length > 0) {
                    *c_off = off;
                    *lcup = length;
                    *zc = last;
                    *r_off = off + length + 2;
                    *lref = 0;
                    *nref = 0;
                }
            } else if (*zc >= 0 && z / 3 == *zc / 3 && z % 3 != 0) { /* refinement of that set */
                *r_off = off;
                *lref = length;
                *nref = last - *zc;
            } else if (length > 0) { /* data in passes that can hold none */
                status |= STATUS_HT_CORRUPT;
            }
        }
        off += length + 2;
        z += n;
    }
    return status;
}

/* ht.py ht_decode_into: one validated HT code-block into the slot's flags and vals (read
 * back where flags & (HT_VAL | HT_NEW)).  num_bps: K, the block's magnitude bit-planes.
 * Returns the status bits: STATUS_HT_CORRUPT, or STATUS_TOO_MANY_PASSES when the cleanup
 * plane falls below 0 (nothing decoded) or refinement follows a cleanup at plane 0. */
T1_DEV int ht_decode_into(const Cb& cb, const unsigned char* coded, i64 data_start,
                          const int* seg_lengths, const int* seg_passes, i64 seg_first,
                          i64 seg_count, int w, int h, int num_bps, i64 style,
                          const unsigned short* vlc)
{
    int n = (h + 2) * (w + 2);
    for (int i = 0; i < n; i++)
        FL(cb, i) = 0;
    i64 c_off, lcup, zc, r_off, lref, nref;
    int status = ht_select(seg_lengths, seg_passes, seg_first, seg_count, &c_off, &lcup, &zc,
                           &r_off, &lref, &nref);
    if (zc < 0)
        return status;
    i64 p = num_bps - 1 - zc / 3;
    if (p < 0)
        return status | STATUS_TOO_MANY_PASSES;
    if (lref == 0) /* refinement passes without bytes: nothing to refine */
        nref = 0;
    if (nref > 0 && p == 0) {
        nref = 0;
        status |= STATUS_TOO_MANY_PASSES;
    }
    int st = ht_cleanup(cb, coded, data_start + c_off, lcup, w, h, (int)p, vlc);
    if (st)
        return status | st;
    if (nref >= 1)
        ht_sigprop(cb, coded, data_start + r_off, lref, w, h, (int)p, (style & CBLK_VCAUSAL) != 0);
    if (nref >= 2)
        ht_magref(cb, coded, data_start + r_off, lref, w, h, (int)p);
    return status;
}
