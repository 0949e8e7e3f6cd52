/* The three coding passes of T.800 Annex D on bit masks, for code-blocks of at most 64 x 64
 * samples: included by tier1.cu, used by decode_slot for the Part-1 rows that fit (the others
 * take the flag-array passes of tier1.cu).  Same symbols in the same order, so the same values
 * and status bits as the flag passes and the numba decoder, corrupt data included.
 *
 * Why.  The flag passes visit every sample of the block in every pass, and most visits code
 * nothing; with one thread per code-block that scanning, not the MQ decoder, is most of the
 * kernel's instructions.  Here each row of the block is a 64-bit word per state, so a stripe's
 * columns with nothing to code are skipped a word at a time:
 *
 *   sig[y + 1]  bit x set: sample (x, y) is significant (sigma, D.3.1)
 *   neg[y + 1]  bit x set: ... and negative (chi)
 *   vis[y + 1]  coded by this bit-plane's significance propagation pass (eta, D.3.1)
 *   ref[y + 1]  refined at least once (the MR context's first-refinement test, Table D.4)
 *
 * rows y = -1 .. h + 3 (the border above, and enough below that a stripe's six rows always
 * exist), h + 5 words per state, all 0 outside the block.
 *
 * The neighbourhood of a stripe column.  For column x of the stripe at row y0, W packs the
 * three bits x - 1, x, x + 1 (a "window") of the six sig rows y0 - 1 .. y0 + 4, row j in bits
 * 3j .. 3j + 2.  Sample (x, y0 + t)'s eight neighbours and itself are then the nine bits
 * (W >> 3t) & 0x1FF, which index the 512-entry zero-coding table built from Table D.1 (bit 4,
 * the sample itself, is ignored); VCAUSAL (D.7) hides the row below the stripe from its last
 * row (mask 0x3F for t = 3).  A new significant sample sets its bit in W, so the rows below it
 * see it at once, as the flag passes' set_significant makes them.
 *
 * Values are written straight into the output window (zeroed first), as 2 x the reconstructed
 * coefficient with its sign, as the flag passes keep them in vals.
 */

#define MASK_SIDE 64 /* widest and tallest code-block of these passes */
#define MASK_ROWS_EXTRA 5 /* rows per state beyond h */

struct Masks {
    u64* sig; /* row y at [y + 1] */
    u64* neg;
    u64* vis;
    u64* ref;
    int* out; /* sample (x, y) at out[y * stride + x] */
    i64 stride;
    int w, h;
    u64 wmask; /* bits of the block's columns */
    const unsigned char* zc9; /* 512 zero-coding contexts of the row's orientation, by window */
};

/* Bits x - 1, x, x + 1 of a row (bit -1 and bit 64 are 0) */
T1_DEV int window(u64 row, int x)
{
    return (int)((x ? row >> (x - 1) : row << 1) & 7);
}

/* W of column x of the stripe at row y0: the windows of the sig rows y0 - 1 .. y0 + 4 */
T1_DEV int stripe_windows(const Masks& mk, int y0, int x)
{
    int wv = 0;
    for (int j = 5; j >= 0; j--)
        wv = (wv << 3) | window(mk.sig[y0 + j], x);
    return wv;
}

/* The nine neighbourhood bits of row t of a stripe column, with VCAUSAL's hidden row */
T1_DEV int neighbourhood(int wv, int t, bool vcausal)
{
    return (wv >> (3 * t)) & ((vcausal && t == 3) ? 0x3F : 0x1FF);
}

/* Columns whose 3 x 6 neighbourhood in rows y0 - 1 .. y0 + 4 (+ 3 under VCAUSAL) holds a
 * significant sample */
T1_DEV u64 near_significant(const Masks& mk, int y0, bool vcausal)
{
    u64 o = 0;
    int last = vcausal ? 4 : 5;
    for (int j = 0; j <= last; j++)
        o |= mk.sig[y0 + j];
    return (o | (o << 1) | (o >> 1)) & mk.wmask;
}

/* Sample (x, y) becomes significant with sign s (1 negative), value 3 << plane (D.3.2) */
T1_DEV void mask_significant(Masks& mk, int x, int y, int s, int plane)
{
    u64 bit = 1ULL << x;
    mk.sig[y + 1] |= bit;
    if (s)
        mk.neg[y + 1] |= bit;
    mk.out[y * mk.stride + x] = s ? -(3 << plane) : (3 << plane);
}

/* Table D.3 index of sample (x, y0 + t) from its neighbourhood bits nb: significance of N, S,
 * W, E in bits 0..3 and their signs in bits 4..7, as sign_context reads the flags */
T1_DEV int mask_sign_index(const Masks& mk, int x, int y, int nb)
{
    int n = (nb >> 1) & 1, w = (nb >> 3) & 1, e = (nb >> 5) & 1, s = (nb >> 7) & 1;
    int nn = n & (int)(mk.neg[y] >> x);
    int ns = s & (int)(mk.neg[y + 2] >> x);
    int nw = x ? w & (int)(mk.neg[y + 1] >> (x - 1)) : 0;
    int ne = e & (int)(mk.neg[y + 1] >> x >> 1);
    return n | s << 1 | w << 2 | e << 3 | nn << 4 | ns << 5 | nw << 6 | ne << 7;
}

/* Sign of a newly significant sample by MQ (D.3.2) */
T1_DEV void mask_decode_sign(Mq& m, const Cb& cb, Masks& mk, int x, int y, int nb, int plane)
{
    int sc = cb.sc[mask_sign_index(mk, x, y, nb)];
    mask_significant(mk, x, y, mq_decode(m, cb, sc & 0x1F) ^ (sc >> 7), plane);
}

/* Significance propagation pass, D.3.1 (raw, D.6, when `raw`).  Columns are taken from the
 * mask of those near a significant sample; a column that gains one adds the next. */
T1_DEV void mask_spp(Mq& m, const Cb& cb, Masks& mk, int plane, bool vcausal, bool raw)
{
    for (int y0 = 0; y0 < mk.h; y0 += 4) {
        int rows = mk.h - y0 < 4 ? mk.h - y0 : 4;
        u64 todo = near_significant(mk, y0, vcausal);
        while (todo) {
            int x = T1_CTZ64(todo);
            todo &= todo - 1;
            int wv = stripe_windows(mk, y0, x);
            bool gained = false;
            for (int t = 0; t < rows; t++) {
                int nb = neighbourhood(wv, t, vcausal);
                if ((nb & 0x10) || nb == 0)
                    continue;
                int y = y0 + t;
                bool now = false;
                if (raw) {
                    if (raw_decode(m)) {
                        mask_significant(mk, x, y, raw_decode(m), plane);
                        now = true;
                    }
                } else if (mq_decode(m, cb, mk.zc9[nb])) {
                    mask_decode_sign(m, cb, mk, x, y, nb, plane);
                    now = true;
                }
                if (now)
                    wv |= 2 << (3 * (t + 1));
                gained |= now;
                mk.vis[y + 1] |= 1ULL << x;
            }
            if (gained)
                todo |= (1ULL << x << 1) & mk.wmask;
        }
    }
}

/* Magnitude refinement pass, D.3.3, contexts of Table D.4 (raw when `raw`): the significant
 * samples not coded by this plane's SPP */
T1_DEV void mask_mrp(Mq& m, const Cb& cb, Masks& mk, int plane, bool vcausal, bool raw)
{
    int half = 1 << plane;
    for (int y0 = 0; y0 < mk.h; y0 += 4) {
        int rows = mk.h - y0 < 4 ? mk.h - y0 : 4;
        u64 todo = 0;
        for (int t = 0; t < rows; t++)
            todo |= mk.sig[y0 + t + 1] & ~mk.vis[y0 + t + 1];
        while (todo) {
            int x = T1_CTZ64(todo);
            todo &= todo - 1;
            int wv = raw ? 0 : stripe_windows(mk, y0, x);
            for (int t = 0; t < rows; t++) {
                int y = y0 + t;
                if (!(((mk.sig[y + 1] & ~mk.vis[y + 1]) >> x) & 1))
                    continue;
                int d;
                if (raw) {
                    d = raw_decode(m);
                } else {
                    int cx = ((mk.ref[y + 1] >> x) & 1) ? CTX_MR + 2
                             : ((neighbourhood(wv, t, vcausal) & ~0x10) ? CTX_MR + 1 : CTX_MR);
                    d = mq_decode(m, cb, cx);
                }
                int* o = mk.out + y * mk.stride + x;
                int v = *o;
                *o = (d ^ (v < 0)) ? v + half : v - half;
                mk.ref[y + 1] |= 1ULL << x;
            }
        }
    }
}

/* Cleanup pass, D.3.4, with run-length coding of stripe columns whose samples and neighbours
 * are all insignificant and uncoded; clears vis.  Columns whose four samples are all
 * significant or coded are skipped; "quiet" holds the columns that qualify for run-length
 * coding, and loses the next column when a column gains a significant sample. */
T1_DEV void mask_cup(Mq& m, const Cb& cb, Masks& mk, int plane, bool vcausal)
{
    for (int y0 = 0; y0 < mk.h; y0 += 4) {
        int rows = mk.h - y0 < 4 ? mk.h - y0 : 4;
        u64 open = 0, coded = 0;
        for (int t = 0; t < rows; t++) {
            open |= ~(mk.sig[y0 + t + 1] | mk.vis[y0 + t + 1]);
            coded |= mk.vis[y0 + t + 1];
        }
        open &= mk.wmask;
        u64 quiet = rows == 4 ? ~(near_significant(mk, y0, vcausal) | coded) & mk.wmask : 0;
        while (open) {
            int x = T1_CTZ64(open);
            open &= open - 1;
            u64 bit = 1ULL << x;
            int t = 0;
            if (quiet & bit) {
                if (!mq_decode(m, cb, CTX_RL))
                    continue;
                t = mq_decode(m, cb, CTX_UNI) << 1;
                t |= mq_decode(m, cb, CTX_UNI);
                /* every neighbour insignificant: sign context index 0 */
                int sc = cb.sc[0];
                mask_significant(mk, x, y0 + t, mq_decode(m, cb, sc & 0x1F) ^ (sc >> 7), plane);
                quiet &= ~(bit << 1);
                t++;
            }
            if (t >= rows)
                continue;
            int wv = stripe_windows(mk, y0, x);
            for (; t < rows; t++) {
                int y = y0 + t;
                if (((mk.sig[y + 1] | mk.vis[y + 1]) >> x) & 1)
                    continue;
                int nb = neighbourhood(wv, t, vcausal);
                if (mq_decode(m, cb, mk.zc9[nb])) {
                    mask_decode_sign(m, cb, mk, x, y, nb, plane);
                    wv |= 2 << (3 * (t + 1));
                    quiet &= ~(bit << 1);
                }
            }
        }
    }
    for (int y = 0; y < mk.h; y++)
        mk.vis[y + 1] = 0;
}

/* The bit-mask state of a block: all 0, and its output window zeroed */
T1_DEV void mask_clear(Masks& mk)
{
    int rows = mk.h + MASK_ROWS_EXTRA;
    for (int r = 0; r < rows; r++)
        mk.sig[r] = mk.neg[r] = mk.vis[r] = mk.ref[r] = 0;
    for (int y = 0; y < mk.h; y++) {
        int* o = mk.out + y * mk.stride;
        for (int x = 0; x < mk.w; x++)
            o[x] = 0;
    }
}

/* The zero-coding context of the nine neighbourhood bits idx (bit 4 ignored) from Table D.1's
 * flag-indexed row zc (tables.py's F_N .. F_SE) */
T1_DEV unsigned char zc_by_window(const unsigned char* zc, int idx)
{
    int f = ((idx >> 1) & 1) * F_N | ((idx >> 7) & 1) * F_S | ((idx >> 3) & 1) * F_W
            | ((idx >> 5) & 1) * F_E | (idx & 1) * F_NW | ((idx >> 2) & 1) * F_NE
            | ((idx >> 6) & 1) * F_SW | ((idx >> 8) & 1) * F_SE;
    return zc[f];
}
