"""The Lanczos resize's GPU twin (cinegpu/media/images/resize_gpu.py) against the numba passes,
bit for bit; ``fit`` of a frame on the GPU against the host's; mastering's frames fitted on the
GPU coded as the host-fitted ones (issue 55, item 3: the scaling on the GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.media.images.frames import fit
from cinegpu.media.images.geometry import Crop, place
from cinegpu.media.images.resize import resample_fast

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy", reason="CuPy is not installed: the GPU twin needs it")


@pytest.mark.parametrize("n_in, n_out, start, count", [
    (108, 1080, 0, None), (2160, 1080, 0, None), (1920, 1998, 0, None), (97, 31, 0, None),
    (1080, 2592, 297, 1998), (7, 1, 0, None), (1, 9, 2, 5)])
@pytest.mark.parametrize("axis", [0, 1])
def test_each_pass_gives_the_numba_twins_bits(n_in, n_out, start, count, axis):
    from cinegpu.media.images.resize_gpu import resample_on_device
    rng = np.random.default_rng(n_in * 7 + n_out)
    other = 13
    shape = (n_in, other, 3) if axis == 0 else (other, n_in, 3)
    image = rng.random(shape, np.float32)
    image[..., 1] = np.where(image[..., 1] > 0.5, 1.0, 0.0)      # hard edges: lobes overshoot
    want = resample_fast(image, n_out, axis, start, count)
    got = resample_on_device(cupy.asarray(image), n_out, axis, start, count).get()
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("size, crop, scale", [
    ((3840, 2160), Crop(), "fit"),              # UHD into a 2K flat area: halved
    ((1920, 1080), Crop(), "fit"),              # HD into 2K flat: pillarboxed, not resized
    ((192, 108), Crop(0, 14, 0, 14), "fill"),   # cut, then enlarged and cut again
    ((640, 360), Crop(5, 3, 7, 1), "none"),     # placed 1:1, padded
])
def test_fit_on_the_gpu_is_the_hosts(dtype, size, crop, scale):
    rng = np.random.default_rng(1)
    w, h = size
    top = 1.0 if dtype == np.float32 else np.iinfo(dtype).max
    image = (rng.random((h, w, 3)) * top).astype(dtype)
    p = place(w, h, 1998, 1080, crop, scale)
    want = fit(image, 1998, 1080, p)
    got = fit(cupy.asarray(image), 1998, 1080, p)
    assert isinstance(got, cupy.ndarray) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)


def test_mastering_codes_a_frame_fitted_on_the_gpu_as_one_fitted_on_the_host():
    from cinegpu.jobs.frame_encode import FrameEncoders
    rng = np.random.default_rng(2)
    image = (rng.random((540, 960, 3)) * 65535).astype(np.uint16)
    with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709", backend="cuda") as encoders:
        assert encoders.uploads_runs
        on_gpu = encoders.encode_fitted(image, 1998, 1080)
        on_host = encoders.encode(fit(image, 1998, 1080))
    assert on_gpu == on_host
