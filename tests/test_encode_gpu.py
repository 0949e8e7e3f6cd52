"""The encoder's CUDA forward stage against its numpy twins (gpu-marked)."""

from __future__ import annotations

import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="CuPy not installed")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from cinegpu.decode.transform import fdwt_97, forward_ict  # noqa: E402
from cinegpu.encode import encode  # noqa: E402
from cinegpu.encode import gpu  # noqa: E402
from cinegpu.encode.bench import synthetic_frame  # noqa: E402
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
