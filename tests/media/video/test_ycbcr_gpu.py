"""The Y'CbCr conversion's GPU twin (cinegpu/media/video/ycbcr_gpu.py, cuda/ycbcr.cu) against
the host's (ycbcr.to_rgb48), bit for bit; mastering's video frames sent up as planes coded
as the host-converted ones (issue 55, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.media.images.frames import fit
from cinegpu.media.video.ycbcr import to_rgb48
from helpers.video_planes import CASES, random_planes

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy", reason="CuPy is not installed: the GPU twin needs it")


@pytest.mark.parametrize("bits, shift, matrix, full", CASES)
@pytest.mark.parametrize("size", [(9, 37), (1080, 1921)])
def test_the_kernel_gives_the_twins_bits(bits, shift, matrix, full, size):
    from cinegpu.media.video.ycbcr_gpu import pack, to_rgb48_on_device
    p = random_planes(bits + shift + size[0], *size, bits, shift, matrix, full)
    packed = cupy.asarray(pack(p, lambda shape, dtype: np.empty(shape, dtype)))
    got = to_rgb48_on_device(packed, p)
    assert isinstance(got, cupy.ndarray) and got.dtype == cupy.uint16 and got.shape == (*size, 3)
    np.testing.assert_array_equal(got.get(), to_rgb48(p))


@pytest.mark.parametrize("size", [(2160, 3840), (1080, 1920)])
def test_mastering_codes_planes_sent_up_as_the_hosts_rgb(size):
    """FrameEncoders.encode_fitted of a video frame's planes on the GPU: the codestream of the
    host twin's R'G'B' fitted on the host (UHD halved into 2K flat, HD pillarboxed)."""
    from cinegpu.jobs.frame_encode import FrameEncoders
    p = random_planes(5, *size, 10, 1, 1, False, edges=False)
    with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709", backend="cuda") as encoders:
        assert encoders.uploads_runs
        on_gpu = encoders.encode_fitted(p, 1998, 1080)
        on_host = encoders.encode(fit(to_rgb48(p), 1998, 1080))
    assert on_gpu == on_host
