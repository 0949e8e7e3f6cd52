"""The HT block encoder (encode/tier1/ht.py) and HTJ2K codestreams (encode/ht.py).

Block level: random blocks of many sizes and magnitudes, each coded at a plane p and
decoded by the project's HT decoder (decode/tier1/ht.py), must give back every magnitude
above p and every sign.  Stream level: lossless 5/3 round trips (RGB, 12-bit grey) with our
decoder and with ojph_expand, grk_decompress and opj_decompress; 9/7 under a byte budget:
within the budget, PSNR reported, the same samples from grk/opj as from ours (ojph_expand
within 1 code value: OpenJPH's 9/7 synthesis rounds differently, as on Part-1 streams).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode import decode
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.tier1.ht import ht_decode_into, make_ht_scratch
from cinegpu.encode import Encoder, EncoderSettings, encode
from cinegpu.encode.ht import jph_file
from cinegpu.encode.tier1.ht import ht_encode_block, make_ht_enc_scratch

from peers import have
from pgx import read_pgx


def _roundtrip(a: np.ndarray, p: int, scratch) -> tuple[int, bool]:
    """Code block ``a`` at plane p, decode it; (Lcup, decoded == expected)."""
    h, w = a.shape
    out = np.zeros(a.size * 5 + 64, np.uint8)
    n = ht_encode_block(np.ascontiguousarray(a, np.int32).ravel(), 0, w, w, h, p, out, 0,
                        *scratch[0])
    mag = np.abs(a.astype(np.int64)) >> p
    if n == 0:
        return 0, not mag.any()
    coded = np.concatenate([out[:n], [0xFF, 0xFF]]).astype(np.uint8)
    vals = np.zeros((h + 2) * (w + 2), np.int64)
    st = ht_decode_into(coded, 0, np.array([n], np.int64), np.array([1], np.int64), 0, 1, w,
                        h, p + 1, 0x40, vals, *scratch[1])
    got = vals.reshape(h + 2, w + 2)[1:-1, 1:-1]
    want = np.where(mag > 0, ((2 * mag + 1) << p) * np.sign(a), 0)
    return n, st == 0 and np.array_equal(got, want)


@pytest.fixture(scope="module")
def scratch():
    return make_ht_enc_scratch(), make_ht_scratch()


def _random_block(rng, h, w, k):
    a = rng.integers(-(1 << k) + 1, 1 << k, size=(h, w), dtype=np.int64)
    a *= rng.random((h, w)) < rng.random()
    return a >> rng.integers(0, k + 1, size=(h, w))  # mixed magnitudes within the block


SHAPES = [(1, 1), (1, 2), (2, 1), (3, 5), (4, 4), (7, 9), (16, 16), (31, 33), (64, 64),
          (4, 1024), (1024, 4), (1, 1024), (2, 1024), (5, 64)]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{h}x{w}" for h, w in SHAPES])
def test_blocks_round_trip(shape, scratch):
    rng = np.random.default_rng(shape[0] * 7919 + shape[1])
    h, w = shape
    for k in (1, 2, 5, 12, 20, 30):
        for p in (0, 1, 3):
            n, ok = _roundtrip(_random_block(rng, h, w, k), p, scratch)
            assert ok, (shape, k, p, n)


def test_special_blocks(scratch):
    rng = np.random.default_rng(1)
    assert _roundtrip(np.zeros((64, 64), np.int64), 0, scratch) == (0, True)
    assert _roundtrip(np.full((1, 1), -1), 0, scratch)[1]
    assert _roundtrip(np.full((1, 1), (1 << 30) - 1), 0, scratch)[1]
    assert _roundtrip(np.full((64, 64), -(1 << 30) + 1), 0, scratch)[1]
    dense = rng.integers(-(1 << 30) + 1, 1 << 30, size=(64, 64))
    assert _roundtrip(dense, 0, scratch)[1]
    lone = np.zeros((64, 64), np.int64)
    lone[63, 63] = 5
    assert _roundtrip(lone, 0, scratch)[1]
    assert _roundtrip(lone, 3, scratch) == (0, True)   # nothing left at plane 3


@pytest.mark.slow
def test_blocks_random_sweep(scratch):
    rng = np.random.default_rng(2024)
    for _ in range(1500):
        h, w = int(rng.integers(1, 65)), int(rng.integers(1, 65))
        k = int(rng.integers(1, 31))
        p = int(rng.integers(0, min(k, 4)))
        n, ok = _roundtrip(_random_block(rng, h, w, k), p, scratch)
        assert ok, (h, w, k, p, n)


# ------------------------------------------------------------------------------ streams

def _rgb():
    y, x = np.mgrid[0:67, 0:93]
    rng = np.random.default_rng(3)
    return np.stack([(x * 3 + y) % 256, (x * y) % 256, rng.integers(0, 256, (67, 93))],
                    -1).astype(np.uint8)


def _grey12():
    y, x = np.mgrid[0:80, 0:120]
    rng = np.random.default_rng(4)
    return (rng.integers(0, 4096, (80, 120)) // 7 + x * 30).clip(0, 4095).astype(np.uint16)


def _lossy_rgb12():
    y, x = np.mgrid[0:135, 0:240]
    rng = np.random.default_rng(5)
    return np.stack([np.sin(x / 17.0) * np.cos(y / 23.0) * 1800 + 2048
                     + rng.normal(0, 40, x.shape), (x * 8 + y * 3) % 4096 + 0.0,
                     ((x // 30 + y // 30) % 2) * 3000 + 500.0], -1).clip(0, 4095) \
        .astype(np.uint16)


def test_header_marks_ht():
    cs = encode(_grey12(), reversible=True, codec="htj2k", bits=12)
    h = parse_codestream(cs)
    assert h.siz.Rsiz & 0x4000
    cap = h.main.cap
    assert cap is not None and cap.ccap15 is not None
    ccap = cap.ccap15
    assert ccap >> 14 == 0 and not ccap & 0x20          # HT only, reversible
    assert (ccap & 0x1F) + 8 >= 12                        # MAGB covers 12-bit + gains
    assert cs[cs.index(b"\xff\x52") + 12] & 0x40         # COD code-block style: HT
    with pytest.raises(ValueError):
        Encoder(EncoderSettings.of(codec="jpeg"))


def test_lossless_ours():
    img = _rgb()
    cs = encode(img, reversible=True, codec="htj2k", codeblock=(64, 64))
    assert all(np.array_equal(o, img[:, :, i]) for i, o in enumerate(decode(cs)))
    g = _grey12()
    assert np.array_equal(decode(encode(g, reversible=True, codec="htj2k", bits=12))[0], g)


def test_jph_file():
    g = _grey12()
    cs = encode(g, reversible=True, codec="htj2k", bits=12)
    f = jph_file(cs)
    assert f[:12] == b"\x00\x00\x00\x0cjP  \r\n\x87\n" and f[20:24] == b"jph "
    assert np.array_equal(decode(f)[0], g)


def test_budget_fits():
    img = _lossy_rgb12()
    budget = 9000
    with Encoder(EncoderSettings.of(codec="htj2k", bitrate=budget * 8 * 24, codeblock=(64, 64))) as enc:
        cs = enc.encode(img, bits=12)
    assert budget * 0.9 <= len(cs) <= budget
    out = np.stack(decode(cs), -1).astype(float)
    psnr = 10 * np.log10(4095 ** 2 / ((out - img) ** 2).mean())
    print(f"9/7 HT at {len(cs)} / {budget} bytes: PSNR {psnr:.2f} dB")
    assert psnr > 30


@pytest.mark.parametrize("size,opts,rate", [
    ((300, 200), dict(tiles=(96, 80), codeblock=(32, 16)), 1_000_000),
    ((300, 200), dict(tiles=(96, 80), codeblock=(32, 16)), 3_000_000),
    ((331, 197), dict(codeblock=(16, 16), levels=3), 2_500_000),
    ((256, 144), dict(codeblock=(64, 64), progression="RPCL"), 6_000_000),
])
def test_budget_rounds_fill_the_budget(size, opts, rate):
    """The budget's rounds end within 3 % of the budget, never over, in at most ROUNDS
    rounds (a single-ratio rescaling once swung about the goal: the first case kept 511 of
    its 5,208 bytes)."""
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.encode.ht import ROUNDS
    budget = rate / 8 / 24
    with Encoder(EncoderSettings.of(codec="htj2k", bitrate=rate, fps=24, backend="cpu", **opts)) as enc:
        cs = enc.encode(synthetic_frame(*size, seed=1), bits=12)
        assert 0.97 * budget <= len(cs) <= budget
        assert enc.stats["rounds"] <= ROUNDS


@pytest.mark.parametrize("seed,size", [(1, (512, 288)), (2, (640, 360))])
def test_estimate_follows_the_coded_bytes(seed, size, monkeypatch):
    """The plane figures' bit estimate tracks the coded cleanup segments: at targets from 2 %
    to 40 % of the plane-0 size the coded bytes are within 10 % of the estimate, and their
    ratio moves less than 8 % between targets (the estimate before, 2 + E bits a sample and
    w h / 8, gave 0.39 to 1.48 here, so rounds overshot and undershot in turn)."""
    from cinegpu.encode import ht
    from cinegpu.bench.encode import synthetic_frame
    seen = {}
    real = ht.encode_ht_frame

    def spy(*args, **kw):
        seen["args"] = args[:5]
        return real(*args, **kw)

    monkeypatch.setattr(ht, "encode_ht_frame", spy)
    with Encoder(EncoderSettings.of(codec="htj2k", bitrate=20_000_000, fps=24, backend="cpu",
                                    codeblock=(32, 32))) as enc:
        enc.encode(synthetic_frame(*size, seed=seed), bits=12)
    _, params, _, plans, flats = seen["args"]
    choice = ht._plane_choice(None, plans, flats, params)
    nblocks = sum(plan.cb.shape[0] for plan in plans)
    full = int(ht._code_rows(plans, flats, None, np.zeros(nblocks, np.int64), None)[1][-1])
    ratios = []
    for share in (0.02, 0.05, 0.1, 0.2, 0.4):
        drops = choice.select(8.0 * full * share)
        coded = int(ht._code_rows(plans, flats, None, drops, None)[1][-1])
        ratios.append(8.0 * coded / choice.estimate(drops))
    assert 0.9 <= min(ratios) and max(ratios) <= 1.1, ratios
    assert max(ratios) / min(ratios) < 1.08, ratios


def test_a_frame_that_fits_whole_takes_one_round():
    """Where every block at plane 0 fits the budget, the second round would pick the same
    planes: the loop ends after one (it once coded and wrote the frame six times)."""
    from cinegpu.bench.encode import synthetic_frame
    img = synthetic_frame(256, 144, seed=4) // 64          # little to code
    with Encoder(EncoderSettings.of(codec="htj2k", bitrate=200_000_000, fps=24, backend="cpu")) as enc:
        cs = enc.encode(img, bits=12)
        assert enc.stats["rounds"] == 1 and not enc.stats["drops"].any()
    assert len(cs) < 0.5 * 200_000_000 / 8 / 24


@pytest.mark.parametrize("size,opts,rate,workers", [
    ((300, 200), dict(tiles=(96, 80), codeblock=(32, 16)), 1_000_000, 1),
    ((300, 200), dict(tiles=(96, 80), codeblock=(32, 16)), 3_000_000, 3),
    ((331, 197), dict(codeblock=(16, 16), levels=3), 2_500_000, 2),
])
def test_later_rounds_code_only_changed_blocks(size, opts, rate, workers, monkeypatch):
    """A round after the first codes only the blocks whose plane changed and splices them
    into the segments kept: every round's frame (table, K, rates) is the one coding every
    block gives, over tiles and threads, and fewer blocks are coded than rounds x blocks."""
    from cinegpu.encode import ht
    from cinegpu.bench.encode import synthetic_frame
    real = ht._code
    seen = []

    def checked(frame_cls, params, cs, plans, flats, drops, pool, kernel, tables, layout,
                segments=None, d_drops=None):
        frame, kept = real(frame_cls, params, cs, plans, flats, drops, pool, kernel, tables,
                           layout, segments, d_drops)
        whole, _ = real(frame_cls, params, cs, plans, flats, drops, pool, kernel, tables,
                        layout)
        for name in ("coded", "coded_off", "rates", "rate_off", "num_bps"):
            assert np.array_equal(getattr(frame.table, name), getattr(whole.table, name)), name
        assert np.array_equal(frame.dists, whole.dists)
        assert np.array_equal(kept.drops, drops)
        seen.append(segments is not None and bool((segments.drops != drops).any()))
        return frame, kept

    monkeypatch.setattr(ht, "_code", checked)
    with Encoder(EncoderSettings.of(codec="htj2k", bitrate=rate, fps=24, backend="cpu", workers=workers,
                                    **opts)) as enc:
        enc.encode(synthetic_frame(*size, seed=3), bits=12)
        nblocks = enc.stats["drops"].shape[0]
        rounds, coded = enc.stats["rounds"], enc.stats["coded"]
    assert rounds >= 2 and any(seen)            # a later round spliced changed blocks in
    assert nblocks <= coded < rounds * nblocks


@pytest.mark.parametrize("n,pick", [(1, [0]), (5, []), (5, [0, 4]), (9, [1, 2, 3]),
                                     (40, list(range(0, 40, 3))), (40, list(range(40)))])
def test_splice_segments(n, pick):
    """_splice puts the new segments of the rows picked (first, last, runs, none, all; some
    of zero bytes) in place of the old ones and keeps the rest in order."""
    from cinegpu.encode.ht import _splice
    rng = np.random.default_rng(n + len(pick))
    old = [rng.integers(0, 256, rng.integers(0, 4) * 3, dtype=np.uint8) for _ in range(n)]
    new = [rng.integers(0, 256, rng.integers(0, 4) * 5, dtype=np.uint8) for _ in pick]

    def joined(parts):
        off = np.concatenate(([0], np.cumsum([p.size for p in parts]))).astype(np.int64)
        return (np.concatenate(parts) if parts else np.zeros(0, np.uint8)), off

    want = list(old)
    for r, seg in zip(pick, new):
        want[r] = seg
    got, got_off = _splice(*joined(old), np.array(pick, np.int64), *joined(new))
    w, w_off = joined(want)
    assert np.array_equal(got_off, w_off) and got.tobytes() == w.tobytes()


def test_budget_in_threads_gives_the_same_codestream():
    """Under a budget the plane figures and the blocks are worked out in runs of blocks on
    the encoder's threads: the codestream is the one of a single thread, byte for byte."""
    img = _lossy_rgb12()
    opts = dict(codec="htj2k", bitrate=9000 * 8 * 24, codeblock=(16, 16), backend="cpu")
    with Encoder(EncoderSettings.of(workers=1, **opts)) as one, \
            Encoder(EncoderSettings.of(workers=3, **opts)) as three:
        assert one.encode(img, bits=12) == three.encode(img, bits=12)
        assert three.stats["rounds"] >= 1 and three.stats["drops"].any()


# ------------------------------------------------------------------------------ peers

def _pnm(path: Path) -> np.ndarray:
    data = path.read_bytes()
    magic, w, h, mx, raw = data.split(maxsplit=4)
    c = 3 if magic == b"P6" else 1
    dt = np.dtype(">u2" if int(mx) > 255 else "u1")
    n = int(w) * int(h) * c * dt.itemsize
    return np.frombuffer(raw[len(raw) - n:], dt).reshape(int(h), int(w), c).astype(np.int64)


def _peers(cs: bytes, ncomp: int, folder: Path) -> dict[str, list[np.ndarray]]:
    """Every installed peer's decode of ``cs``, per component."""
    src = folder / "x.j2c"
    src.write_bytes(cs)
    out = {}
    run = dict(capture_output=True, timeout=60, check=True)
    if have("ojph_expand"):
        dst = folder / ("o.ppm" if ncomp == 3 else "o.pgm")
        subprocess.run(["ojph_expand", "-i", str(src), "-o", str(dst)], **run)
        a = _pnm(dst)
        out["ojph"] = [a[:, :, c] for c in range(ncomp)]
    for tool, name in (("grk_decompress", "grk"), ("opj_decompress", "opj")):
        if have(tool):
            subprocess.run([tool, "-i", str(src), "-o", str(folder / f"{name}.pgx")], **run)
            files = [folder / (f"{name}_{c}.pgx") for c in range(ncomp)]
            out[name] = [read_pgx(f) for f in files]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("which", ["rgb8", "grey12"])
def test_lossless_peers(which, tmp_path):
    img = _rgb() if which == "rgb8" else _grey12()[:, :, None]
    cs = encode(img if which == "rgb8" else img[:, :, 0], reversible=True, codec="htj2k",
                bits=8 if which == "rgb8" else 12)
    peers = _peers(cs, img.shape[2], tmp_path)
    if not peers:
        pytest.skip("no HTJ2K peer decoder installed")
    for name, comps in peers.items():
        for c, got in enumerate(comps):
            assert np.array_equal(got, img[:, :, c]), (name, c)


@pytest.mark.slow
def test_budget_peers(tmp_path):
    img = _lossy_rgb12()
    cs = encode(img, codec="htj2k", bitrate=15000 * 8 * 24, bits=12, codeblock=(64, 64))
    ours = decode(cs)
    peers = _peers(cs, 3, tmp_path)
    if not peers:
        pytest.skip("no HTJ2K peer decoder installed")
    for name, comps in peers.items():
        tol = 1 if name == "ojph" else 0
        for c, got in enumerate(comps):
            assert int(np.abs(got - ours[c]).max()) <= tol, (name, c)
