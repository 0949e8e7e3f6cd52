"""The encoder's CUDA forward stage against its numpy twins (gpu-marked)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_cuda

cupy = require_cuda()  # skips the module without CuPy or a device

from cinegpu.decode import decode  # noqa: E402
from cinegpu.decode.transform import fdwt_53, fdwt_97, forward_ict, forward_rct  # noqa: E402
from cinegpu.encode import encode  # noqa: E402
from cinegpu.encode import gpu  # noqa: E402
from cinegpu.bench.encode import synthetic_frame  # noqa: E402
from cinegpu.encode.forward import quantize_band  # noqa: E402

pytestmark = pytest.mark.gpu

SIZES = [(1, 1), (1, 7), (7, 1), (2, 3), (13, 17), (31, 64), (67, 45), (64, 67)]


@pytest.mark.parametrize("h,w", SIZES)
@pytest.mark.parametrize("levels", [0, 1, 3, 6])
@pytest.mark.parametrize("origin", [(0, 0), (3, 1)])
def test_fdwt97_matches_numpy(h, w, levels, origin):
    x = np.random.default_rng(h * 100 + w).normal(0, 500, (h, w)).astype(np.float32)
    ll, lv = fdwt_97(x, levels, origin)
    gll, glv = gpu.fdwt97(cupy.asarray(x), levels, origin)
    np.testing.assert_array_equal(cupy.asnumpy(gll), ll)
    for a, b in zip(lv, glv):
        assert a[3] == b[3]
        for i in range(3):
            np.testing.assert_array_equal(cupy.asnumpy(b[i]), a[i])


def test_ict_and_quantize_match_numpy():
    rng = np.random.default_rng(0)
    r, g, b = (rng.integers(0, 4096, (37, 53)).astype(np.int32) for _ in range(3))
    want = forward_ict(*(np.float32(c) - np.float32(2048) for c in (r, g, b)))
    got = gpu.ict(*(cupy.asarray(c) for c in (r, g, b)), shifts=(2048, 2048, 2048))
    for a, c in zip(want, got):
        np.testing.assert_array_equal(cupy.asnumpy(c), a)
    band = rng.normal(0, 300, (33, 29)).astype(np.float32)
    for delta in (0.037, 0.5, 1.7, 9.0):
        np.testing.assert_array_equal(cupy.asnumpy(gpu.quantize(cupy.asarray(band), delta)),
                                      quantize_band(band, delta, False))


@pytest.mark.parametrize("profile,size", [("generic", (61, 83)), ("dci-2k", (1080, 2048))])
def test_encode_cuda_equals_cpu(profile, size):
    img = synthetic_frame(size[1], size[0], seed=4)
    kw = dict(profile=profile, bits=12)
    if profile == "generic":
        kw.update(bitrate=61 * 83 * 3 * 2 * 24, levels=4)
    assert encode(img, backend="cuda", **kw) == encode(img, backend="cpu", **kw)


def test_encode_from_host_images_checks_and_uploads_as_the_cpu_path():
    # a whole (H, W, C) image goes up once at its dtype; planes and strided views too
    img = synthetic_frame(83, 61, seed=7)
    kw = dict(bitrate=61 * 83 * 3 * 2 * 24, levels=3, bits=12)
    ref = encode(img, backend="cpu", **kw)
    assert encode(img, backend="cuda", **kw) == ref
    assert encode([img[:, :, i] for i in range(3)], backend="cuda", **kw) == ref
    wide = np.zeros((61, 83, 4), np.int32)
    wide[:, :, :3] = img
    assert encode(wide[:, :, :3], backend="cuda", **kw) == ref
    assert encode(cupy.asarray(img), backend="cuda", **kw) == ref
    assert encode(cupy.asarray(wide)[:, :, :3], backend="cuda", **kw) == ref
    bad = img.copy()
    bad[60, 82, 2] = 4096
    for backend in ("cpu", "cuda"):
        with pytest.raises(ValueError, match="12-bit unsigned"):
            encode(bad, backend=backend, **kw)
    signed = img.astype(np.int16) - 2048
    assert encode(signed, backend="cuda", levels=3) == encode(signed, backend="cpu", levels=3)


def test_encoders_on_each_device_give_the_same_codestream():
    # frames spread over the GPUs (cinegpu master: a device per encoder thread, in turn);
    # on a one-GPU machine this checks device=0 against the default
    from concurrent.futures import ThreadPoolExecutor

    from cinegpu.encode.encoder import Encoder, EncoderSettings
    from cinegpu.jobs.frame_encode import FrameEncoders
    img = synthetic_frame(2048, 1080, seed=11)
    devices = list(range(cupy.cuda.runtime.getDeviceCount()))
    with Encoder(EncoderSettings.of(profile="dci-2k", backend="cuda", workers=1)) as enc:
        ref = enc.encode(img, bits=12)
    for d in devices:
        with Encoder(EncoderSettings.of(profile="dci-2k", backend="cuda", workers=1, device=d)) as enc:
            assert enc.encode(img, bits=12) == ref
            with enc.on_stream():
                assert cupy.cuda.Device().id == d
    rgb = (img.astype(np.uint32) * 16).astype(np.uint16)
    with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709",
                       backend="cuda", gpus=None) as fe:
        assert fe.gpus == len(devices)
        threads = 2 * len(devices)
        with ThreadPoolExecutor(threads) as pool:
            out = list(pool.map(fe.encode, [rgb] * (4 * threads)))
        assert len(set(out)) == 1
        assert sorted(e.device for e in fe._made) == sorted(devices * 2)


# -- reversible path: RCT + 5/3, bit for bit -------------------------------------------

# every odd size 1..67 down the rows, against a complementary odd width (and square)
SWEEP_53 = [(n, 68 - n) for n in range(1, 68, 2)] + [(n, n) for n in range(1, 68, 2)] \
    + [(2, 4), (64, 66)]
ORIGINS = [(0, 0), (1, 0), (0, 1), (3, 5)]  # both parities of u0 and of v0


def test_sweep_53_case_count():
    assert len(SWEEP_53) == 70 and len(ORIGINS) == 4


def _assert_same_dwt(want, got):
    ll, lv = want
    gll, glv = got
    np.testing.assert_array_equal(cupy.asnumpy(gll), ll)
    assert gll.dtype == cupy.int32 and len(glv) == len(lv)
    for a, b in zip(lv, glv):
        assert a[3] == b[3]
        for i in range(3):
            assert b[i].dtype == cupy.int32
            np.testing.assert_array_equal(cupy.asnumpy(b[i]), a[i])


@pytest.mark.parametrize("levels", range(7))
@pytest.mark.parametrize("origin", ORIGINS)
def test_fdwt53_matches_numpy(levels, origin):
    rng = np.random.default_rng(levels * 10 + origin[0])
    for h, w in SWEEP_53:
        x = rng.integers(-(1 << 13), 1 << 13, (h, w)).astype(np.int32)
        _assert_same_dwt(fdwt_53(x, levels, origin), gpu.fdwt53(cupy.asarray(x), levels, origin))


@pytest.mark.parametrize("levels", [10, 32])
def test_fdwt53_deep_levels_and_extremes(levels):
    """Down to empty and one-sample resolutions; int32 wrap-around as numpy's."""
    rng = np.random.default_rng(levels)
    for h, w, origin in [(67, 45, (1, 1)), (1, 1, (1, 0)), (5, 3, (7, 9)), (64, 67, (0, 3))]:
        x = rng.integers(-(1 << 20), 1 << 20, (h, w)).astype(np.int32)
        _assert_same_dwt(fdwt_53(x, levels, origin), gpu.fdwt53(cupy.asarray(x), levels, origin))
    x = rng.integers(-(2**31), 2**31 - 1, (9, 11), dtype=np.int64).astype(np.int32)
    with np.errstate(over="ignore"):
        want = fdwt_53(x, 3, (1, 0))
    _assert_same_dwt(want, gpu.fdwt53(cupy.asarray(x), 3, (1, 0)))


def test_rct_and_dc_shift_match_numpy():
    rng = np.random.default_rng(5)
    for shape in [(1, 1), (37, 53), (67, 1)]:
        r, g, b = (rng.integers(0, 4096, shape).astype(np.int32) for _ in range(3))
        want = forward_rct(*(c - np.int32(2048) for c in (r, g, b)))
        got = gpu.rct(*(cupy.asarray(c) for c in (r, g, b)), shifts=(2048, 2048, 2048))
        for a, c in zip(want, got):
            assert c.dtype == cupy.int32
            np.testing.assert_array_equal(cupy.asnumpy(c), a)
        got = gpu.dc_shift_i32(cupy.asarray(r), 2048)
        np.testing.assert_array_equal(cupy.asnumpy(got), r - np.int32(2048))
    signed = [rng.integers(-(1 << 15), 1 << 15, (13, 7)).astype(np.int32) for _ in range(3)]
    for a, c in zip(forward_rct(*signed), gpu.rct(*(cupy.asarray(s) for s in signed))):
        np.testing.assert_array_equal(cupy.asnumpy(c), a)


def _rgb(h, w, bits, seed):
    return np.random.default_rng(seed).integers(0, 1 << bits, (h, w, 3)).astype(np.uint16)


REVERSIBLE_ENCODES = [
    ("rgb-mct", lambda: synthetic_frame(83, 61, seed=4), dict(bits=12, levels=4)),
    ("rgb-odd-tiles", lambda: _rgb(45, 67, 10, 1), dict(bits=10, levels=3, tiles=(37, 29))),
    ("grey-6-levels", lambda: _rgb(67, 65, 8, 2)[..., 0].astype(np.uint8), dict(levels=6)),
    ("subsampled", lambda: [np.random.default_rng(3).integers(0, 256, s).astype(np.uint8)
                            for s in [(30, 41), (15, 21), (15, 21)]], {}),
]


def test_reversible_encode_case_count():
    assert len(REVERSIBLE_ENCODES) == 4


@pytest.mark.parametrize("name,image,opts", REVERSIBLE_ENCODES,
                         ids=[c[0] for c in REVERSIBLE_ENCODES])
def test_encode_cuda_reversible_equals_cpu_and_is_lossless(name, image, opts):
    img = image()
    got = encode(img, reversible=True, backend="cuda", **opts)
    assert got == encode(img, reversible=True, backend="cpu", **opts)
    comps = img if isinstance(img, list) else [img] if img.ndim == 2 else \
        [img[..., i] for i in range(img.shape[2])]
    out = decode(got)
    assert len(out) == len(comps)
    for a, b in zip(out, comps):
        np.testing.assert_array_equal(a, b)


# -- mastering colour, guard bits, device-resident frames --------------------------------

@pytest.mark.parametrize("colorspace", ["rec709", "p3d65", "dcip3", "xyz"])
@pytest.mark.parametrize("dtype", [np.uint16, np.uint8, np.float32])
def test_rgb_to_xyz12_matches_numpy_within_one_code_value(colorspace, dtype):
    from cinegpu.media.images.colour import to_xyz12, xyz12_parameters
    from cinegpu.media.images.frames import unit_scale
    rng = np.random.default_rng(7)
    shape = (37, 53, 3)
    if dtype == np.float32:
        img, top = rng.uniform(-0.1, 1.1, shape).astype(np.float32), 1.0
    else:
        top = float(np.iinfo(dtype).max)
        img = rng.integers(0, int(top) + 1, shape).astype(dtype)
    want = to_xyz12(unit_scale(img, top), colorspace)
    got = np.stack([cupy.asnumpy(p) for p in
                    gpu.rgb_to_xyz12(img, top, *xyz12_parameters(colorspace))], -1)
    diff = np.abs(got.astype(np.int64) - want)
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99
    if colorspace == "xyz":           # no transform: the samples' scaling is numpy's, exactly
        assert diff.max() == 0


@pytest.mark.parametrize("bits", [10, 12])
@pytest.mark.parametrize("dtype", [np.uint16, np.uint8, np.float32])
def test_code_values_are_the_hosts_exactly(bits, dtype):
    """IMF R'G'B' on the GPU: rint((2^bits - 1) unit_scale(s, top)), as the host computes it
    in FrameEncoders (so a lossless IMF master holds the same samples either way)."""
    from cinegpu.media.images.frames import unit_scale
    rng = np.random.default_rng(bits)
    shape = (41, 67, 3)
    if dtype == np.float32:
        img, top = rng.uniform(-0.1, 1.1, shape).astype(np.float32), 1.0
    else:
        top = float(np.iinfo(dtype).max)
        img = rng.integers(0, int(top) + 1, shape).astype(dtype)
    want = np.rint(unit_scale(img, top) * ((1 << bits) - 1)).astype(np.int64)
    got = np.stack([cupy.asnumpy(p) for p in gpu.code_values(img, top, bits)], -1)
    assert np.array_equal(got, want)


def test_host_staging_uploads_each_array_exactly_on_a_stream():
    """One pinned buffer, reused by uploads of other sizes and types queued back to back on a
    non-default stream: every device copy equals its source (the buffer is not overwritten
    before its copy has run)."""
    rng = np.random.default_rng(3)
    staging = gpu.HostStaging()
    stream = cupy.cuda.Stream(non_blocking=True)
    sources = [rng.integers(0, 65536, (2160, 4096, 3)).astype(np.uint16),
               rng.integers(0, 256, (5, 7, 3)).astype(np.uint8),
               rng.random((1080, 2048, 3)).astype(np.float32),
               rng.integers(0, 65536, (1, 1, 3)).astype(np.uint16)]
    with stream:
        copies = [staging.upload(a[:, ::-1] if k == 2 else a) for k, a in enumerate(sources)]
    stream.synchronize()
    for k, (a, d) in enumerate(zip(sources, copies)):
        np.testing.assert_array_equal(cupy.asnumpy(d), a[:, ::-1] if k == 2 else a)


def test_host_staging_buffer_goes_up_without_a_copy(monkeypatch):
    """A frame read into the staging buffer itself (buffer(shape, dtype)) goes up as it is
    (np.copyto not called) and equals its source; an array that is another view of the
    buffer is copied out first, not over itself."""
    rng = np.random.default_rng(4)
    staging = gpu.HostStaging()
    src = rng.integers(0, 65536, (216, 409, 3)).astype(np.uint16)
    buf = staging.buffer(src.shape, src.dtype)
    buf[...] = src
    copies = []
    real = np.copyto
    monkeypatch.setattr(np, "copyto", lambda *a, **k: copies.append(1) or real(*a, **k))
    d = staging.upload(buf)
    assert copies == []
    np.testing.assert_array_equal(cupy.asnumpy(d), src)
    view = staging.buffer(src.shape, src.dtype)[:, ::-1]          # reversed: same memory
    d = staging.upload(view)
    assert copies == [1]
    np.testing.assert_array_equal(cupy.asnumpy(d), src[:, ::-1])


def test_frames_read_into_the_upload_buffer_code_the_same(tmp_path, monkeypatch):
    """Mastering's encoder threads copy TIFF frames to the GPU straight from their files
    (FrameEncoders.uploads, the mapped path) or read them into their page-locked upload buffer
    (FrameEncoders.input_buffer): the same codestreams as from frames read on their own,
    DCI and IMF HTJ2K; the CPU back end reads them as before."""
    from dataclasses import replace

    import tifffile
    from cinegpu.jobs.frame_coders import code_frame
    from cinegpu.jobs.frame_encode import FrameEncoders
    from cinegpu.jobs.frame_uploads import FrameUploads
    from cinegpu.media.images.frames import ImageFrames
    rng = np.random.default_rng(6)
    files = []
    for k in range(3):
        tifffile.imwrite(tmp_path / f"f{k}.tif",
                         rng.integers(0, 65536, (1080, 2048, 3)).astype(np.uint16),
                         photometric="rgb")
        files.append(str(tmp_path / f"f{k}.tif"))
    frames = ImageFrames(tuple(files), (4096, 2160))
    with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709",
                       backend="cuda") as enc:
        assert enc.input_buffer((4, 5, 3), np.uint16).shape == (4, 5, 3)
        assert enc.input_buffer((4, 5, 3), np.int32) is None
        assert enc.uploads.send(frames.run(0)).path == "mapped"   # straight from the file
        direct = [code_frame(enc, frames, k, 2048, 1080) for k in range(3)]
        plain = [code_frame(enc, lambda i: frames(i), k, 2048, 1080) for k in range(3)]
        ring_only = FrameUploads(enc, replace(enc.uploads.settings, mapped=False))
        sent = ring_only.send(frames.run(1))                    # through the ring
        assert sent.path == "ring" and np.array_equal(cupy.asnumpy(sent.image), frames(1))
        ring_only.close()
    assert direct == plain
    # IMF HTJ2K R'G'B': frames copied up straight from their files code the same too
    with FrameEncoders(profile="imf-2k", fps=24, bitrate=100, colorspace="rec709",
                       backend="cuda", bits=12, codec="htj2k") as enc:
        assert enc.uploads.send(frames.run(0)).path == "mapped"
        direct = [code_frame(enc, frames, k, 2048, 1080) for k in range(3)]
        plain = [code_frame(enc, lambda i: frames(i), k, 2048, 1080) for k in range(3)]
    assert direct == plain
    # every file's pages refused: the frames go up through the ring, and code the same
    monkeypatch.setenv("CINEGPU_MAPPED_UPLOADS", "off")
    with FrameEncoders(profile="imf-2k", fps=24, bitrate=100, colorspace="rec709",
                       backend="cuda", bits=12, codec="htj2k") as enc:
        sent = []
        real = enc.uploads.send
        enc.uploads.send = lambda run: sent.append(real(run)) or sent[-1]
        ringed = [code_frame(enc, frames, k, 2048, 1080) for k in range(3)]
    assert [u.path for u in sent] == ["ring"] * 3 and ringed == plain
    with FrameEncoders(profile="imf-2k", fps=24, bitrate=100, colorspace="rec709",
                       backend="cpu", bits=12, codec="htj2k") as cpu:
        assert cpu.uploads.up(frames, 0, 2048, 1080).path == "read" and not cpu.uploads_runs


def test_guard_bits_cuda_clips_and_measures_as_numpy():
    from cinegpu.encode.presets import make_params
    enc_opts = dict(profile="generic", fps=24, bitrate=None, reversible=False, levels=3,
                    codeblock=(32, 32), progression="LRCP", layers=1, tiles=None,
                    precincts=None, style=0, quantization="expounded", guard_bits=1)
    from cinegpu.encode.encoder import Encoder, EncoderSettings
    enc = Encoder(EncoderSettings.of(**enc_opts, backend="cpu"))
    params = make_params([(40, 70)], [12], [False], enc.coding)
    _, plans = enc._geometry(params)
    plan = plans[0]
    off, length, mb = gpu.band_layout(plan)
    rng = np.random.default_rng(3)
    flat = rng.integers(-(1 << 14), 1 << 14, plan.coeff_size).astype(np.int32)
    flat[off[2]] = np.iinfo(np.int32).min + 1
    need = gpu.guard_bits_cuda(plans, [cupy.asarray(flat)], 1, False)
    bits = max(int(np.abs(flat[o:o + n].astype(np.int64)).max()).bit_length() - m
               for o, n, m in zip(off, length, mb))
    assert need == 1 + max(0, bits)
    dev = cupy.asarray(flat)
    gpu.guard_bits_cuda(plans, [dev], 1, True)
    want = flat.copy()
    for o, n, m in zip(off, length, mb):
        lim = (1 << int(m)) - 1
        np.clip(want[o:o + n], -lim, lim, out=want[o:o + n])
    np.testing.assert_array_equal(cupy.asnumpy(dev), want)


@pytest.mark.parametrize("profile,size", [("dci-2k", (1080, 2048)), ("generic", (61, 83))])
def test_encode_planes_on_device_equals_host_encode(profile, size):
    from cinegpu.encode.encoder import Encoder, EncoderSettings
    img = synthetic_frame(size[1], size[0], seed=5)
    kw = dict(profile=profile)
    if profile == "generic":
        kw.update(bitrate=61 * 83 * 3 * 2 * 24, levels=4)
    with Encoder(EncoderSettings.of(backend="cuda", **kw)) as enc:
        planes = [cupy.asarray(img[..., c].astype(np.int32)) for c in range(3)]
        got = enc.encode_planes(planes, 12)
        again = enc.encode_planes(planes, 12)     # the cached geometry gives the same bytes
    assert got == again == encode(img, backend="cpu", bits=12, **kw)


def test_magnitude_histogram_on_the_gpu_equals_the_cpu_twin():
    from cinegpu.encode.early_stop import magnitude_histogram
    rng = np.random.default_rng(3)
    flats = [(rng.integers(-(1 << 29), 1 << 29, n) >> rng.integers(0, 30, n)).astype(np.int32)
             for n in (1, 1000, 1 << 20)]
    flats += [np.array([-(1 << 31), (1 << 31) - 1, 0, -1, 1], np.int32), np.zeros(0, np.int32)]
    want = magnitude_histogram(flats)
    got = magnitude_histogram([cupy.asarray(f) for f in flats])
    np.testing.assert_array_equal(got, want)
    assert want.sum() == sum(f.size for f in flats)


def test_component_histograms_on_the_gpu_equal_the_cpu_twin():
    """Each component's counts on the GPU (one wait for all the tiles' components), from the
    cuda forward stage's flats, equal the CPU twin's on the same indices; and a DCI 2K frame
    whose luma passes its cap gets the same floor and codestream on both back ends."""
    from cinegpu.encode.early_stop import component_histograms
    from cinegpu.encode.encoder import Encoder, EncoderSettings, _as_components
    from cinegpu.encode.presets import make_params
    img = synthetic_frame(150, 90, seed=6)
    with Encoder(EncoderSettings.of(backend="cuda", bitrate=150 * 90 * 24 * 4, fps=24, tiles=(64, 48))) as enc:
        comps, precs, sgn = _as_components(img, 12, None)
        params = make_params([c.shape for c in comps], precs, sgn, enc.coding)
        cs, plans = enc._geometry(params)
        with enc.on_stream():
            flats = enc._forward(enc._upload(img, comps), params, plans)
            got = component_histograms(plans, flats, 3)
    want = component_histograms(plans, [cupy.asnumpy(f) for f in flats], 3)
    np.testing.assert_array_equal(got, want)
    rng = np.random.default_rng(0)
    g = rng.integers(0, 3900, (1080, 2048))
    img = np.stack([g + rng.integers(0, 8, g.shape) for _ in range(3)], -1).astype(np.uint16)
    out = {}
    for backend in ("cpu", "cuda"):
        with Encoder(EncoderSettings.of(profile="dci-2k", fps=24, backend=backend)) as enc:
            out[backend] = (enc.encode(img, bits=12), enc.stats["floor"], enc.stats["retries"])
    assert out["cpu"] == out["cuda"]


def test_mastering_frames_on_the_gpu_match_the_cpu_path():
    """FrameEncoders (what ``cinegpu master`` runs) on the cuda back end, from 16-bit RGB read
    as a TIFF would give it, in four threads sharing one geometry: every codestream fits the
    DCI 2K frame cap, decodes, and stays within 0.05 dB of the CPU path's PSNR against the
    same X'Y'Z' source; the threads' bytes equal one thread's."""
    from concurrent.futures import ThreadPoolExecutor

    from cinegpu.bench.encode_peers import psnr
    from cinegpu.media.images.colour import to_xyz12
    from cinegpu.jobs.frame_encode import FrameEncoders

    frames = [(synthetic_frame(2048, 1080, seed=k).astype(np.uint32) * 16).astype(np.uint16)
              for k in range(4)]
    opts = dict(profile="2k", fps=24, bitrate=None, colorspace="rec709")
    with FrameEncoders(backend="cpu", **opts) as cpu, FrameEncoders(backend="cuda", **opts) as gpu_:
        ours = [gpu_.encode(f) for f in frames]
        with ThreadPoolExecutor(4) as pool:
            threaded = list(pool.map(gpu_.encode, frames))
        ref = [cpu.encode(f) for f in frames[:2]]
    assert threaded == ours
    cap = 250_000_000 // 8 // 24
    for k, data in enumerate(ours):
        assert len(data) <= cap
        src = to_xyz12(frames[k].astype(np.float32) / np.float32(65535), "rec709")
        got = psnr(src, decode(data, backend="cpu"))
        if k < 2:
            want = psnr(src, decode(ref[k], backend="cpu"))
            assert abs(got - want) <= 0.05, (k, got, want)
        assert got > 35, (k, got)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                                   np.int64, np.uint64])
def test_component_extremes_kernel_reads_strided_views_as_numpy(dtype):
    """The sample check's (min, max) per component on the GPU (one kernel each, the views of an
    interleaved image read in place, negative strides included; uint64 by CuPy) equals numpy's."""
    from cinegpu.encode.gpu import component_extremes
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    img = rng.integers(info.min, min(info.max, np.iinfo(np.int64).max), size=(301, 517, 3),
                       dtype=dtype, endpoint=True)
    img[300, 516, 1] = info.min
    d = cupy.asarray(img)
    views = [(img[..., 0], d[..., 0]), (img[::-1, :, 1], d[::-1, :, 1]),
             (img[:, ::-3, 2], d[:, ::-3, 2]), (img[:1, :1, 0], d[:1, :1, 0])]
    got = component_extremes([v for _, v in views])
    assert got.dtype == np.int64
    assert [tuple(map(int, g)) for g in got] == [(int(h.min()), int(h.max())) for h, _ in views]
