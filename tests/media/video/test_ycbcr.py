"""A video frame's Y'CbCr planes made R'G'B' by our own arithmetic (cinegpu/media/video/ycbcr.py,
what the GPU computes for mastering): the standard's equations exactly (against an
independent float64 reading), chroma sited and interpolated as libswscale does (near its
fixed-point output), the planes as the decoder gave them, and mastering's seam handing them
on (issue 55, item 1: the encoder fed without libswscale's conversion on the host)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cinegpu.media import MediaError
from cinegpu.media.video.ycbcr import YCbCrPlanes, to_rgb48
from helpers.video_planes import CASES, random_planes


def _keys(d: float, a: float = -0.6) -> float:
    d = abs(d)
    return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1 if d <= 1 else \
        (a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a if d < 2 else 0.0)


def _reference(p: YCbCrPlanes) -> np.ndarray:
    """BT.709/601/2020's equations read backwards in float64, written out anew: chroma at
    column x of 4:2:2 sits at (x - 1/2) / 2 in chroma samples, interpolated by Keys' cubic
    (a = -0.6) over its four neighbours, the edge samples repeated."""
    bits, n = p.bits, (1 << p.bits) - 1
    h, w = p.y.shape
    cw = p.cb.shape[1]
    if p.shift:
        pos = (np.arange(w) - 0.5) / 2
        base = np.floor(pos).astype(int) - 1
        cols = [np.clip(base + t, 0, cw - 1) for t in range(4)]
        wts = [np.array([_keys(pos[x] - (base[x] + t)) for x in range(w)]) for t in range(4)]

        def up(c):
            return sum(c[:, cols[t]].astype(np.float64) * wts[t] for t in range(4))
    else:
        def up(c):
            return c.astype(np.float64)
    if p.full_range:
        y = p.y / n
        cb, cr = (up(p.cb) - (1 << (bits - 1))) / n, (up(p.cr) - (1 << (bits - 1))) / n
    else:
        s = 1 << (bits - 8)
        y = (p.y - 16.0 * s) / (219 * s)
        cb, cr = (up(p.cb) - 128.0 * s) / (224 * s), (up(p.cr) - 128.0 * s) / (224 * s)
    kg = 1 - p.kr - p.kb
    r = y + 2 * (1 - p.kr) * cr
    b = y + 2 * (1 - p.kb) * cb
    g = (y - p.kr * r - p.kb * b) / kg
    return np.clip(np.rint(np.stack([r, g, b], -1) * 65535), 0, 65535)


@pytest.mark.parametrize("bits, shift, matrix, full", CASES)
def test_the_equations_of_the_standard_within_one_code_value(bits, shift, matrix, full):
    p = random_planes(bits * 10 + shift, 9, 37, bits, shift, matrix, full)
    got = to_rgb48(p)
    assert got.dtype == np.uint16 and got.shape == (9, 37, 3)
    assert np.abs(got.astype(np.int64) - _reference(p)).max() <= 1


def test_padded_rows_and_odd_widths():
    """Views with padded rows (as the decoder's buffers are) give what packed copies give;
    an odd width's last chroma column serves its last pixel."""
    p = random_planes(3, 6, 31, 10, 1, 1, False)
    padded = [np.zeros((6, a.shape[1] + 5), a.dtype) for a in (p.y, p.cb, p.cr)]
    for buf, a in zip(padded, (p.y, p.cb, p.cr)):
        buf[:, :a.shape[1]] = a
    views = YCbCrPlanes(*(buf[:, :a.shape[1]] for buf, a in zip(padded, (p.y, p.cb, p.cr))),
                        p.bits, p.shift, p.kr, p.kb, p.full_range)
    assert p.cb.shape[1] == 16
    np.testing.assert_array_equal(to_rgb48(views), to_rgb48(p))


# -- real decoded frames -----------------------------------------------------------------------
av = pytest.importorskip("av", minversion="18", reason="PyAV 18+ (pip install av) reads video files")
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None,
                                  reason="the ffmpeg command makes the test clips")
TAGS = "setparams=colorspace=bt709:color_primaries=bt709:color_trc=bt709"
PATTERN = "testsrc2=size=256x144:rate=24,trim=end_frame=2"
SMOOTH = "gradients=size=256x144:rate=24:speed=0.1:seed={seed},trim=end_frame=2"
#: name: (source, codec options, suffix, the pixel format FFmpeg decodes it to)
CLIPS = {
    "prores 422 HQ": (PATTERN, "-c:v prores_ks -profile:v 3 -pix_fmt yuv422p10le", "mov", "yuv422p10le"),
    "prores 4444 + alpha": (PATTERN, "-c:v prores_ks -profile:v 4 -pix_fmt yuva444p10le", "mov", "yuva444p12le"),
    "dnxhr hq": (PATTERN, "-c:v dnxhd -profile:v dnxhr_hq -pix_fmt yuv422p", "mxf", "yuv422p"),
    "motion jpeg, full range": (PATTERN, "-c:v mjpeg -pix_fmt yuvj422p", "mov", "yuvj422p"),
    "prores 422, smooth": (SMOOTH.format(seed=1), "-c:v prores_ks -profile:v 3 -pix_fmt yuv422p10le", "mov", "yuv422p10le"),
}


def _clip(tmp_path: Path, source: str, options: str, suffix: str) -> Path:
    path = tmp_path / f"clip.{suffix}"
    run = subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-vf", TAGS,
                          *options.split(), str(path)], capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()[-1500:]
    return path


@needs_ffmpeg
@pytest.mark.parametrize("name", list(CLIPS))
def test_a_decoded_frame_near_libswscales_conversion(tmp_path, name):
    """Against libswscale's conversion of the same frame (the reader's ``v(0)``, fixed point):
    within 1/128 of the range wherever chroma is not subsampled or the picture is smooth; at
    the pattern's hard chroma edges under 1 % of the samples further than 1/256 (chroma sited
    a quarter sample off, or not interpolated, puts some 4 % there). Ours is the exact one
    (the tests above and below); libswscale's fixed point is off by up to about 1/256
    everywhere, 1/500 on average on a smooth picture."""
    from cinegpu.media.video.frames import open_video
    source, options, suffix, pix_fmt = CLIPS[name]
    v = open_video(_clip(tmp_path, source, options, suffix))
    assert v.pix_fmt == pix_fmt
    p = v.planes(0)
    assert p.y.shape == (144, 256) and p.cb.shape == (144, 256 >> p.shift)
    assert p.full_range == (pix_fmt == "yuvj422p")
    err = np.abs(to_rgb48(p).astype(np.int64) - v(0).astype(np.int64))
    assert np.abs(to_rgb48(p).astype(np.int64) - _reference(p)).max() <= 1
    if not p.shift or "smooth" in name:
        assert err.max() <= 512, err.max()
    else:
        assert (err > 256).mean() < 0.01 and np.percentile(err, 99) <= 512, (err > 256).mean()
    assert err.mean() < 256


def _has_zscale() -> bool:
    if shutil.which("ffmpeg") is None:
        return False
    run = subprocess.run(["ffmpeg", "-hide_banner", "-filters"], capture_output=True, text=True, timeout=30)
    return " zscale " in run.stdout


@pytest.mark.skipif(not _has_zscale(), reason="no ffmpeg with the zscale filter (zimg)")
def test_zimgs_float_conversion_agrees(tmp_path):
    """zimg (ffmpeg's zscale, float32 throughout) converts the same 4:4:4 planes within one
    code value of ours everywhere (libswscale: some 50 on average). (Its 4:2:2 chroma is
    sited on the left, libswscale's and ours in the middle.)"""
    from cinegpu.media.video.frames import open_video
    path = _clip(tmp_path, *CLIPS["prores 4444 + alpha"][:3])
    v = open_video(path)
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vf",
                          "zscale=matrixin=709:rangein=limited:range=full,format=gbrpf32le",
                          "-frames:v", "1", "-f", "rawvideo", "-"], capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()[-1500:]
    g, b, r = np.frombuffer(run.stdout, np.float32).reshape(3, v.height, v.width)
    zimg = np.rint(np.clip(np.stack([r, g, b], -1), 0, 1) * 65535)
    assert v.planes(0).shift == 0
    assert np.abs(to_rgb48(v.planes(0)) - zimg).max() <= 1


@needs_ffmpeg
def test_formats_the_gpu_does_not_convert_give_no_planes(tmp_path):
    from cinegpu.media.video.frames import open_video
    v = open_video(_clip(tmp_path, PATTERN, "-c:v libx264 -pix_fmt yuv420p", "mp4"))
    assert v.pix_fmt == "yuv420p" and v.planes(0) is None and v(0).shape == (144, 256, 3)
    with pytest.raises(MediaError, match="frames 0 to 1"):
        open_video(_clip(tmp_path, *CLIPS["dnxhr hq"][:3])).planes(5)


@needs_ffmpeg
def test_the_seam_hands_a_gpu_encoder_the_planes_and_a_host_one_rgb(tmp_path):
    """FrameUploads.up: a video frame for encoders that take frames on their GPU is its
    planes (unless CINEGPU_VIDEO_PLANES=off); for any other, R'G'B' as read. Encoders on the host code the planes as the
    twin's R'G'B' fitted."""
    from cinegpu.jobs.frame_encode import FrameEncoders
    from cinegpu.jobs.frame_uploads import FrameUploads, UploadSettings
    from cinegpu.media.images.frames import fit
    from cinegpu.media.video.frames import open_video
    v = open_video(_clip(tmp_path, *CLIPS["prores 422 HQ"][:3]))

    class Encoders:
        input_buffer = None

        def __init__(self, on_gpu):
            self.uploads_runs = on_gpu

    assert isinstance(FrameUploads(Encoders(True)).up(v, 1, 1998, 1080).image, YCbCrPlanes)
    off = FrameUploads(Encoders(True), UploadSettings.of({"CINEGPU_VIDEO_PLANES": "off"}))
    np.testing.assert_array_equal(off.up(v, 1, 1998, 1080).image, v(1))
    # what a report measures the coded frames against: the R'G'B' the encoders were given
    np.testing.assert_array_equal(FrameUploads(Encoders(True)).host_image(v, 1), to_rgb48(v.planes(1)))
    np.testing.assert_array_equal(off.host_image(v, 1), v(1))
    np.testing.assert_array_equal(FrameUploads(Encoders(False)).host_image(v, 1), v(1))
    rgb = FrameUploads(Encoders(False)).up(v, 1, 1998, 1080).image
    np.testing.assert_array_equal(rgb, v(1))
    with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709", backend="cpu") as enc:
        assert not enc.uploads_runs
        assert enc.encode_fitted(v.planes(1), 1998, 1080) == enc.encode(fit(to_rgb48(v.planes(1)), 1998, 1080))
