"""``cinegpu master --crop L,T,R,B --scale fit|fill|none`` (issue 55, item 3): the placement's
arithmetic (:mod:`cinegpu.media.images.geometry`), the Lanczos resize against Pillow and its
numba twin against the numpy one (:mod:`cinegpu.media.images.resize`), frames fitted in each
mode (:func:`cinegpu.media.images.frames.fit`), the job's checks, the upload seam (a moved
frame is fitted on the host, never sent up as stored), and a master end to end.  GPU twins
are marked ``gpu``."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from cinegpu.jobs.master_job import MasterJob, Picture
from cinegpu.media.images.frames import ImageFrames, fit
from cinegpu.media.images.geometry import SCALES, Axis, Crop, place
from cinegpu.media.images.resize import lanczos, lanczos_taps, resample, resample_fast
from helpers.cli import cinegpu
from helpers.upload_fakes import seam_of

tifffile = pytest.importorskip("tifffile")

#: DCI image areas (DCSS 1.4.5 3.2.1.2) and a few odd ones, (width, height) in pixels
AREAS = [(1998, 1080), (2048, 858), (2048, 1080), (3996, 2160), (4096, 1716), (64, 48), (7, 3)]


# -- the arithmetic ------------------------------------------------------------------------------
def check_axis(a: Axis) -> None:
    """Centred: padding or cut, never both; before and after differ by at most one pixel (the
    odd one after); every pixel of the area accounted for."""
    assert a.pad_before + a.shown + a.pad_after == a.area
    assert a.cut_before + a.shown + a.cut_after == a.scaled
    assert 0 <= a.pad_after - a.pad_before <= 1 and 0 <= a.cut_after - a.cut_before <= 1
    assert not ((a.pad_before or a.pad_after) and (a.cut_before or a.cut_after))


@settings(max_examples=300, deadline=None)
@given(w=st.integers(1, 8192), h=st.integers(1, 4320), area=st.sampled_from(AREAS),
       crop=st.tuples(*[st.integers(0, 400)] * 4), scale=st.sampled_from(SCALES))
def test_placements_are_centred_and_keep_the_aspect_ratio(w, h, area, crop, scale):
    crop = Crop(*crop)
    if w - crop.left - crop.right < 1 or h - crop.top - crop.bottom < 1:
        with pytest.raises(ValueError, match="leaves nothing"):
            place(w, h, *area, crop, scale)
        return
    p = place(w, h, *area, crop, scale)
    cw, ch = p.cropped
    sw, sh = p.scaled_width, p.scaled_height
    check_axis(p.x)
    check_axis(p.y)
    aw, ah = area
    if scale == "none":
        assert (sw, sh) == (cw, ch)
    elif scale == "fit":        # inside, touching on the limiting axis
        assert sw <= aw and sh <= ah and (sw == aw or sh == ah)
        assert not p.x.cut_before + p.x.cut_after + p.y.cut_before + p.y.cut_after
    else:                       # covering, touching on the limiting axis
        assert sw >= aw and sh >= ah and (sw == aw or sh == ah)
        assert not p.x.pad_before + p.x.pad_after + p.y.pad_before + p.y.pad_after
    if scale != "none":         # one scale both ways, each side rounded (at least a pixel)
        kx, ky = Fraction(aw, cw), Fraction(ah, ch)
        k = min(kx, ky) if scale == "fit" else max(kx, ky)
        assert abs(sw - cw * k) <= Fraction(1, 2) or sw == 1
        assert abs(sh - ch * k) <= Fraction(1, 2) or sh == 1
    assert p.identity == ((w, h) == (sw, sh) == area and not crop)


def test_the_plan_names_the_geometry():
    flat = (1998, 1080)
    assert place(1920, 1080, *flat, area="flat").describe() == \
        "1920x1080, kept at 1920x1080 (fit) in the flat area 1998x1080: pillarbox 39 px each side"
    assert place(1920, 1080, *flat, Crop(0, 140, 0, 140), "fit", "flat").describe() == \
        ("1920x1080 cropped 0,140,0,140 to 1920x800, scaled (fit) to 1998x832 in the flat area "
         "1998x1080: letterbox 124 px top and bottom")
    assert place(1920, 1080, *flat, Crop(0, 140, 0, 140), "fill", "flat").describe() == \
        ("1920x1080 cropped 0,140,0,140 to 1920x800, scaled (fill) to 2592x1080 in the flat area "
         "1998x1080: cut 297 px left and right")
    assert place(3000, 1201, *flat, scale="none", area="flat").describe().endswith(
        "kept at 3000x1201 (none) in the flat area 1998x1080: cut 501 px left and right, "
        "cut 60 px top, 61 px bottom")
    assert place(1998, 1080, *flat, area="flat").describe().endswith("fills the area")
    assert place(1998, 1080, *flat).identity and not place(1998, 1080, *flat, Crop(1, 0, 0, 0),
                                                           "none").identity


def test_crops_parse_or_say_what_they_want():
    assert Crop.parse("0, 140,0,140") == Crop(0, 140, 0, 140) and str(Crop(1, 2, 3, 4)) == "1,2,3,4"
    assert Crop.of(None) == Crop() and not Crop() and Crop.of((1, 0, 0, 0)) and \
        Crop.of("1,2,3,4") == Crop(1, 2, 3, 4)
    for bad in ("1,2,3", "1,2,3,4,5", "a,b,c,d", "1.5,0,0,0", ""):
        with pytest.raises(ValueError, match="L,T,R,B"):
            Crop.parse(bad)
    with pytest.raises(ValueError, match="cannot be negative"):
        Crop.parse("0,-1,0,0")
    with pytest.raises(ValueError, match="--scale must be one of fit, fill, none"):
        place(10, 10, 10, 10, scale="stretch")


# -- Lanczos ---------------------------------------------------------------------------------------
def test_the_lanczos_kernel():
    assert lanczos(0.0) == 1.0 and lanczos(3.0) == 0.0 and lanczos(-3.5) == 0.0
    assert np.allclose(lanczos(np.arange(-2, 3)), [0, 0, 1, 0, 0])
    for n_in, n_out in ((10, 37), (37, 10), (1, 5), (5, 1), (67, 66)):
        idx, w = lanczos_taps(n_in, n_out)
        assert idx.shape[0] == n_out and np.allclose(w.sum(axis=1), 1.0, atol=1e-6)
        assert idx.min() >= 0 and idx.max() < n_in


@pytest.mark.parametrize("size,out", [((50, 70), (120, 33)), ((64, 64), (20, 200)),
                                      ((37, 101), (37, 55)), ((9, 5), (81, 45)),
                                      ((300, 200), (41, 29)), ((1, 7), (3, 3))])
def test_lanczos_agrees_with_pillow(size, out):
    """Pillow's Image.resize(..., LANCZOS) of a float ("F") image: the same taps, the same
    edge rule; within float32 rounding."""
    img = np.random.default_rng(sum(size)).random(size).astype(np.float32)
    want = np.asarray(Image.fromarray(img, "F").resize(out[::-1], Image.LANCZOS))
    got = resample(resample(img, out[0], 0), out[1], 1)
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-5


def test_the_numba_passes_are_the_numpy_twin_to_the_bit():
    """Odd sizes 1..67 each way, up and down, whole and windows of the output (fill's)."""
    rng = np.random.default_rng(5)
    for n_in in (1, 2, 3, 7, 16, 31, 64, 67):
        img = rng.random((n_in, n_in + 2, 3)).astype(np.float32)
        for n_out in (1, 5, 13, 33, 66, 67):
            for axis in (0, 1):
                n = img.shape[axis]
                if n == n_out:
                    continue
                for start, count in ((0, n_out), (n_out // 3, n_out - n_out // 3 - n_out // 4)):
                    want = resample(img, n_out, axis, start, count)
                    got = resample_fast(img, n_out, axis, start, count)
                    assert np.array_equal(got, want), (n_in, n_out, axis, start, count)


# -- frames fitted in each mode --------------------------------------------------------------------
def test_fit_pads_with_exact_black_and_keeps_the_default():
    img = np.random.default_rng(1).random((50, 100, 3)).astype(np.float32) * 0.5 + 0.25
    out = fit(img, 300, 300)                  # 2:1 into a square: letterbox 75 px each side
    assert out.shape == (300, 300, 3) and out.dtype == np.float32
    assert not out[:75].any() and not out[225:].any() and out[75:225].min() > 0
    assert np.array_equal(out, fit(img, 300, 300, place(100, 50, 300, 300)))
    assert fit(img, 100, 50) is img


def test_fit_lands_markers_where_the_geometry_says():
    """A grey picture with a white column and row: scaled x10, each lands 10 pixels wide at
    10 x its place plus the padding; the cropped edges (black) are gone."""
    img = np.full((12, 20, 3), 0.5, np.float32)
    img[:2], img[-2:] = 0, 0                  # cut by the crop
    img[:, 7] = 1.0
    img[5] = 1.0
    p = place(20, 12, 260, 80, Crop(0, 2, 0, 2), "fit")       # 20x8 -> 200x80, pillarbox 30
    assert (p.scaled_width, p.scaled_height, p.x.pad_before, p.x.pad_after) == (200, 80, 30, 30)
    out = fit(img, 260, 80, p)
    assert not out[:, :30].any() and not out[:, 230:].any()
    assert out[:, 30:230].min() > 0.3         # no black row left of the crop
    col = out[70, :, 0]                       # a grey row: the white column at 30 + 70..80
    assert np.argmax(col) in (104, 105) and np.all(col[103:107] > 0.95)
    assert abs(col[30 + 40] - 0.5) < 0.01
    row = out[:, 200, 0]                      # the white row 5 (3 once cropped) at 30..40
    assert np.argmax(row) in (34, 35) and np.all(row[33:37] > 0.95) and abs(row[70] - 0.5) < 0.01


def test_fill_covers_the_area_centred():
    img = np.random.default_rng(2).random((40, 100, 3)).astype(np.float32) * 0.2 + 0.4
    img[:, 48:52] = 1.0                       # a white band at the centre
    p = place(100, 40, 200, 200, scale="fill")                # 100x40 -> 500x200, cut 150
    out = fit(img, 200, 200, p)
    assert (p.scaled_width, p.x.cut_before) == (500, 150) and out.min() > 0.05
    assert np.all(out[:, 94:106].mean(axis=(0, 2)) > 0.9)     # the band at 48*5-150 .. 52*5-150
    # the same pixels as fitting the centre part alone at that scale
    whole = resample(resample(img, 200, 0), 500, 1)
    assert np.allclose(out, np.clip(whole[:, 150:350], 0, 1), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_none_keeps_pixels_one_to_one(dtype):
    rng = np.random.default_rng(3)
    img = (rng.random((37, 53, 3)) * (255 if dtype == np.uint8 else 65535 if dtype == np.uint16
                                      else 1)).astype(dtype)
    out = fit(img, 64, 48, place(53, 37, 64, 48, scale="none"))      # padded: 5/6 x, 5/6 y
    assert out.dtype == dtype and np.array_equal(out[5:42, 5:58], img)
    out[5:42, 5:58] = 0
    assert not out.any()
    crop = Crop(3, 4, 5, 6)
    out = fit(img, 20, 10, place(53, 37, 20, 10, crop, "none"))      # 45x27 cut to 20x10
    assert np.array_equal(out, img[4:31, 3:48][8:18, 12:32])
    out = fit(img, 45, 27, place(53, 37, 45, 27, crop, "none"))      # exactly the crop
    assert np.array_equal(out, img[4:31, 3:48])


def test_fit_refuses_a_placement_of_another_size():
    with pytest.raises(ValueError, match="placement"):
        fit(np.zeros((10, 20, 3), np.float32), 30, 30, place(20, 11, 30, 30))


# -- the job -------------------------------------------------------------------------------------
def test_the_picture_crops_before_it_chooses_the_area():
    p = Picture(crop=(0, 140, 0, 140))
    assert p.crop == Crop(0, 140, 0, 140) and p.coded_size(1920, 1080) == (2048, 858, "2k")
    pl = p.placement(1920, 1080)
    assert pl.area == "scope" and (pl.scaled_width, pl.scaled_height) == (2048, 853)
    assert Picture().placement(1920, 1080).describe().startswith("1920x1080, kept at")
    with pytest.raises(ValueError, match="leaves nothing of a 1920x1080"):
        Picture(crop="960,0,960,0").placement(1920, 1080)
    with pytest.raises(ValueError, match="scale must be one of"):
        Picture(scale="stretch")
    with pytest.raises(ValueError, match="--scale is for DCPs"):
        Picture(format="imf", scale="fill")
    imf = Picture(format="imf", crop=Crop(10, 0, 10, 0))
    assert imf.coded_size(1940, 1080)[:2] == (1920, 1080) and \
        imf.placement(1940, 1080).describe().endswith("in the area 1920x1080: fills the area")


def test_a_crop_too_large_is_refused_before_any_frame_is_encoded(tmp_path, monkeypatch):
    from cinegpu.jobs import frame_encode
    from cinegpu.jobs.mastering import master

    def never(*a, **k):
        raise AssertionError("encoded")
    monkeypatch.setattr(frame_encode.FrameEncoders, "encode", never)
    job = MasterJob.of(lambda i: np.zeros((20, 30, 3), np.float32), 1, tmp_path / "out",
                       title="t", backend="cpu", crop=(15, 0, 15, 0))
    with pytest.raises(ValueError, match="--crop 15,0,15,0 leaves nothing of a 30x20"):
        master(job, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_an_imf_master_keeps_the_cropped_size(tmp_path):
    from cinegpu.jobs.mastering import master
    img = np.random.default_rng(0).integers(0, 65536, (52, 68, 3)).astype(np.uint16)
    done = master(MasterJob.of(lambda i: img, 1, tmp_path / "imf", title="t", format="imf",
                               backend="cpu", crop=(2, 1, 2, 3), frames=24), progress=False)
    assert (done.package.track.width, done.package.track.height) == (64, 48)
    assert done.placement.describe() == ("68x52 cropped 2,1,2,3 to 64x48, kept at 64x48 (fit) in "
                                         "the area 64x48: fills the area")


# -- the upload seam -----------------------------------------------------------------------------
class _Encoders:
    """A GPU encoder's side of the upload seam: every GPU path would take the frame."""

    uploads_runs = True

    def __init__(self):
        self.asked = []

    def upload_run(self, run):
        self.asked.append("mapped")
        return np.zeros(run.shape, np.uint16)

    def send_run(self, run, direct=False):
        self.asked.append("ring")
        return np.zeros(run.shape, np.uint16)

    def input_buffer(self, shape, dtype):
        return np.empty(shape, dtype)


def test_a_moved_frame_is_fitted_on_the_host_not_sent_up(tmp_path, monkeypatch):
    """A TIFF frame of the area's size goes up as stored only where the placement leaves it
    as it is; a crop or a scale that moves its pixels sends it through the host (staged)."""
    from cinegpu.encode import direct_read
    monkeypatch.setattr(direct_read, "in_page_cache", lambda *a: True)
    img = np.random.default_rng(4).integers(0, 65536, (6, 8, 3)).astype(np.uint16)
    tifffile.imwrite(tmp_path / "a.tif", img, photometric="rgb")
    frames = ImageFrames((str(tmp_path / "a.tif"),), None)
    enc = _Encoders()
    uploads = seam_of(enc)
    assert uploads.up(frames, 0, 8, 6).path == "mapped"
    assert uploads.up(frames, 0, 8, 6, placement=place(8, 6, 8, 6)).path == "mapped"
    for p in (place(8, 6, 8, 6, Crop(1, 0, 0, 0)), place(8, 6, 8, 6, Crop(0, 1, 0, 1), "fill"),
              place(8, 6, 8, 6, Crop(1, 1, 1, 1), "none")):
        enc.asked.clear()
        up = uploads.up(frames, 0, 8, 6, placement=p)
        assert up.path == "staged" and enc.asked == [] and np.array_equal(up.image, img)


# -- end to end ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pattern(tmp_path_factory) -> Path:
    """A 192x108 16-bit TIFF: grey, its top and bottom 14 rows black (for --crop 0,14,0,14:
    192x80, 2.4:1), a white block in its 16 leftmost columns (cut by fill) and a white band at
    columns 90..101 (centred once filled)."""
    img = np.full((108, 192, 3), 32768, np.uint16)
    img[:14], img[-14:] = 0, 0
    img[14:-14, :16] = 65535
    img[14:-14, 90:102] = 65535
    d = tmp_path_factory.mktemp("pattern")
    (d / "frames").mkdir()
    tifffile.imwrite(d / "frames" / "f0.tif", img, photometric="rgb")
    return d / "frames"


def _first_frame(folder: Path) -> np.ndarray:
    from cinegpu.decode import decode
    from cinegpu.media import open_source
    with open_source(folder) as src:
        return np.stack(decode(src.frame(0), backend="cpu"), -1)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_master_crops_and_fills(pattern, tmp_path, capsys, backend):
    """``--crop 0,14,0,14 --scale fill --container flat``: 192x80 x 13.5 = 2592x1080, 297
    pixels cut each side; the frame decoded is grey to every edge (the black rows cropped,
    the white block cut) with the white band at 90*13.5-297 .. 102*13.5-297 = 918 .. 1080."""
    from cinegpu.player.cli import main
    out = tmp_path / "dcp"
    rc = main(["master", str(pattern), "-o", str(out), "--title", "t", "--frames", "24",
               "--crop", "0,14,0,14", "--scale", "fill", "--container", "flat",
               "--backend", backend, "--workers", "1"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    geometry = ("192x108 cropped 0,14,0,14 to 192x80, scaled (fill) to 2592x1080 in the flat "
                "area 1998x1080: cut 297 px left and right")
    assert f"; picture {geometry}" in captured.err and f"(input {geometry})" in captured.out
    got = _first_frame(out)[..., 1].astype(np.int64)              # Y'
    assert got.shape == (1080, 1998)
    grey, white = np.median(got[:, 500]), np.median(got[:, 999])
    assert white > grey + 300 > 600
    for edge in (got[:4, :850], got[-4:, 1150:], got[:, :4], got[:, -4:]):  # grey to every edge
        assert np.abs(edge - grey).max() < 80
    band = np.flatnonzero(got[540] > (grey + white) / 2)
    assert abs(band[0] - 918) <= 2 and abs(band[-1] - 1079) <= 2


def test_a_crop_too_large_is_one_line_and_exit_2(pattern, tmp_path):
    r = cinegpu("master", pattern, "-o", tmp_path / "out", "--title", "T", "--crop",
                "100,0,92,0", cwd=tmp_path, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines == ["cinegpu master: --crop 100,0,92,0 leaves nothing of a 192x108 input frame "
                     "(0x108 pixels)"]
    assert not (tmp_path / "out").exists()


# -- GPU twins -----------------------------------------------------------------------------------
@pytest.mark.gpu
def test_a_cropped_frame_codes_on_the_gpu_as_its_host_fit(gpu, tmp_path):
    """On a GPU encoder, a TIFF frame of the area's size with a crop takes the host path
    (staged) and codes to the bytes of the host-fitted frame; without one it goes up as stored
    and codes to the bytes of the frame as read."""
    from cinegpu.jobs.frame_coders import code_frame
    from cinegpu.jobs.frame_encode import FrameEncoders
    img = np.random.default_rng(6).integers(0, 65536, (1080, 1998, 3)).astype(np.uint16)
    tifffile.imwrite(tmp_path / "f0.tif", img, photometric="rgb")
    frames = ImageFrames((str(tmp_path / "f0.tif"),), (4096, 2160))
    p = place(1998, 1080, 1998, 1080, Crop(0, 140, 0, 140), "fill")
    with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709",
                       backend="cuda") as enc:
        stamps = []
        moved = code_frame(enc, frames, 0, 1998, 1080, stamps, p)
        assert stamps[2] is False and stamps[3] is False         # not mapped, not direct
        assert moved.codestream == enc.encode(fit(frames(0), 1998, 1080, p))
        as_is = code_frame(enc, frames, 0, 1998, 1080, None, place(1998, 1080, 1998, 1080))
        assert as_is.codestream == code_frame(enc, lambda i: frames(i), 0, 1998, 1080).codestream
