"""IMF's code-value scaling fused into the forward stage's colour kernel (forward.cu's
``code_value`` in ``colour_*``; ``Encoder.encode_planes(..., code_values=(top, bits))``)
against the two-kernel path it replaces (``gpu.code_values`` then ``encode_planes``), to the
byte (gpu-marked):

* FrameEncoders' IMF frames (what ``_encode_rgb`` now codes) of uint16 and uint8 images,
  HTJ2K 9/7 and 5/3 and Part-1 9/7 (IMF's Part-1 path is irreversible only), over several
  frames of one encoder (the first eager, the second captured as a CUDA graph, the rest
  replayed);
* ``Encoder.encode_planes`` with the step, Part-1 and HTJ2K, reversible and irreversible,
  through changes of ``top`` and bits between frames (a graph per step, never a stale
  replay);
* ``forward_tile_cuda`` with the step, batched and component by component, against its
  int32 code-value planes and, reversible, the numpy twin ``forward_tile(code_values=)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_cuda

cupy = require_cuda()  # skips the module without CuPy or a device

from cinegpu.encode import Encoder, EncoderSettings, gpu  # noqa: E402
from cinegpu.encode.forward import code_value_step, forward_tile  # noqa: E402

pytestmark = pytest.mark.gpu

CODECS = [("j2k", False), ("j2k", True), ("htj2k", False), ("htj2k", True)]
CODEC_IDS = ["j2k-97", "j2k-53", "htj2k-97", "htj2k-53"]
#: IMF's codecs here: Part-1 9/7, HTJ2K 9/7 and 5/3
IMF_CODECS = [c for c in CODECS if c != ("j2k", True)]
IMF_CODEC_IDS = [i for c, i in zip(CODECS, CODEC_IDS) if c != ("j2k", True)]


def _image(dtype, h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    top = np.iinfo(dtype).max
    y, x = np.mgrid[0:h, 0:w]
    ramp = np.stack([(x * 37 + y * 11 + seed * 101) % (top + 1), (x ^ y) * 257 % (top + 1),
                     rng.integers(0, top + 1, (h, w))], -1)
    return ramp.astype(dtype)


@pytest.mark.parametrize("dtype,bits", [(np.uint16, 12), (np.uint8, 10)])
@pytest.mark.parametrize("codec,lossless", IMF_CODECS, ids=IMF_CODEC_IDS)
def test_fused_imf_frames_equal_the_two_kernel_path(dtype, bits, codec, lossless):
    from cinegpu.jobs.frame_encode import FUSED_CODE_VALUES, FrameEncoders
    assert np.dtype(dtype) in FUSED_CODE_VALUES
    frames = [_image(dtype, 1080, 2048, k) for k in range(4)]
    top = float(np.iinfo(dtype).max)
    opts = dict(profile="imf-2k", fps=24, bitrate=None if lossless else 200,
                colorspace="rec709", backend="cuda", bits=bits, codec=codec,
                lossless=lossless)
    with FrameEncoders(**opts) as fused, FrameEncoders(**opts) as plain:
        got = [fused.encode(f) for f in frames]
        enc = plain._encoder()
        want = []
        for f in frames:
            with enc.on_stream():
                planes = gpu.code_values(cupy.asarray(f), top, bits)
            want.append(enc.encode_planes(planes, bits))
        assert fused._encoder()._graphs.captured == 1      # frames 3.. replayed one graph
    assert len(set(want)) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {k}"


@pytest.mark.parametrize("codec,lossless", CODECS, ids=CODEC_IDS)
def test_code_value_step_change_between_frames(codec, lossless):
    """Another top or bits on the same geometry is another graph, never a stale replay."""
    img = cupy.asarray(_image(np.uint16, 200, 328, 3))
    cupy.cuda.Device().synchronize()          # uploaded before the encoders' own streams read it
    steps = [(65535.0, 12), (4095.0, 12), (65535.0, 12), (65535.0, 10), (4095.0, 12)]
    opts = dict(codec=codec, reversible=lossless, codeblock=(64, 64), base_step=2.0)
    with Encoder(EncoderSettings.of(backend="cuda", **opts)) as enc, \
            Encoder(EncoderSettings.of(backend="cuda", **opts)) as ref:
        for top, bits in steps * 2:
            with enc.on_stream():
                got = enc.encode_planes([img[:, :, c] for c in range(3)], 12,
                                        code_values=(top, bits))
            with ref.on_stream():
                want = ref.encode_planes(gpu.code_values(img, top, bits), 12)
            assert got == want, (top, bits)


@pytest.mark.parametrize("reversible", [False, True], ids=["97", "53"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "per-component"])
@pytest.mark.parametrize("dtype", [np.uint16, np.uint8])
def test_forward_tile_cuda_with_the_step_equals_its_planes(reversible, batched, dtype):
    from cinegpu.encode.presets import make_params
    h, w, bits = 67, 45, 10
    img = _image(dtype, h, w, 5)
    top = float(np.iinfo(dtype).max) * 0.9             # some samples over top: clipped
    step = code_value_step(top, bits)
    with Encoder(EncoderSettings.of(backend="cpu", reversible=reversible, levels=3)) as enc:
        params = make_params([(h, w)] * 3, [bits] * 3, [False] * 3, enc.coding)
        _, plans = enc._geometry(params)
    plan = plans[0]
    dev = cupy.asarray(img)
    views = [dev[:, :, c] for c in range(3)]
    planes = gpu.code_values(dev, top, bits)
    args = (plan, params.precisions, params.signed, params.mct, reversible)
    got = gpu.forward_tile_cuda(views, *args, batched=batched, code_values=step)
    want = gpu.forward_tile_cuda(list(planes), *args, batched=batched)
    np.testing.assert_array_equal(got, want)
    if reversible:                                     # the numpy twin, bit for bit
        host = forward_tile([img[:, :, c] for c in range(3)], *args, code_values=step)
        np.testing.assert_array_equal(got, host)
