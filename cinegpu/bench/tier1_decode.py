"""Tier-1 decode benchmark on synthetic Laplacian code-blocks made by the encoder
(python -m cinegpu.bench.tier1_decode; here because it needs the encoder).

Symbols are counted by replaying pass membership in Python on 10 blocks and extrapolating."""
import numpy as np, time
from cinegpu.decode import tier1 as t
from cinegpu.encode.tier1 import encode_codeblock, segments

def count_symbols(v):
    """MQ symbols the decoder reads (no SEGSYM, no bypass), by replaying pass membership."""
    h, w = v.shape; mag = np.abs(v); K = int(mag.max()).bit_length()
    sig = np.zeros((h+2, w+2), bool); vis = np.zeros_like(sig); n = 0
    for k in range(3*K-2):
        kind = (k+2) % 3; p = K-1-(k+2)//3
        for y0 in range(0, h, 4):
            for x in range(w):
                y = y0
                if kind == 2 and y0+4 <= h and not sig[y0:y0+6, x:x+3].any() and not vis[y0+1:y0+5, x+1].any():
                    n += 1
                    r = next((j for j in range(4) if (mag[y0+j, x] >> p) & 1), 4)
                    if r == 4: continue
                    n += 3; sig[y0+r+1, x+1] = True; y = y0+r+1
                while y < min(y0+4, h):
                    s = sig[y+1, x+1]; vi = vis[y+1, x+1]; bit = (mag[y, x] >> p) & 1
                    if kind == 1:
                        if s and not vi: n += 1
                    elif not s and not vi and (kind == 2 or sig[y:y+3, x:x+3].any()):
                        n += 1
                        if bit: n += 1; sig[y+1, x+1] = True
                        if kind == 0: vis[y+1, x+1] = True
                    if kind == 2: vis[y+1, x+1] = False
                    y += 1
    return n

def build(nblk, bits, density, seed=0, size=32):
    rng = np.random.default_rng(seed)
    blobs, rows, lens, passes, vs = [], [], [], [], []
    pos = 0; segi = 0
    for b in range(nblk):
        # Laplacian-ish magnitudes (wavelet-like), `bits` bit dynamic range
        v = np.round(rng.laplace(0, 2**(bits-3), (size, size))).clip(-(2**bits-1), 2**bits-1)
        v = (v * (rng.random((size, size)) < density)).astype(np.int32)
        coded, rates, d, K = encode_codeblock(v, b % 4, 0)
        sl, sp = segments(rates, 0)
        blob = bytes(coded) + b"\xff\xff"
        rows.append([pos, segi, len(sl), K, b % 4, 0, 0, b*size*size, size, size, size])
        blobs.append(blob); pos += len(blob); lens += list(sl); passes += list(sp); segi += len(sl)
        vs.append(v)
    return (np.frombuffer(b"".join(blobs), np.uint8), np.array(rows, np.int64),
            np.array(lens, np.int32), np.array(passes, np.int32), vs)

def main():
  for bits, dens in [(12, 1.0), (8, 0.5), (5, 0.3), (4, 0.15)]:
      coded, table, sl, sp, vs = build(1000, bits, dens)
      out = np.zeros(1000*1024, np.int32)
      st = t.decode_codeblocks(coded, table, sl, sp, out)
      assert not st.any()
      exp = np.concatenate([np.where(v != 0, np.sign(v)*(2*np.abs(v)+1), 0).ravel() for v in vs])
      assert np.array_equal(out, exp)
      best = 1e9
      for _ in range(5):
          t0 = time.perf_counter(); t.decode_codeblocks(coded, table, sl, sp, out); best = min(best, time.perf_counter()-t0)
      nsym = sum(count_symbols(v) for v in vs[:10]) * 100
      print(f"{bits}-bit density {dens}: {len(coded)/1000:.0f} B/block, {best*1e3:.1f} ms per 1000 blocks, "
            f"{nsym/best/1e6:.1f} M symbols/s, {len(coded)*8/best/1e6:.0f} Mbit/s")


if __name__ == "__main__":
    main()
