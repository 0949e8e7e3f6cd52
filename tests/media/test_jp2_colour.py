"""``cinegpu decode`` writes a JP2 file's display colours, as ``opj_decompress`` does
(cinegpu.media.images.jp2_colour): sYCC, e-sYCC, CMYK, CIELab, ICC profiles; cdef's alpha."""

from __future__ import annotations

import shutil
import subprocess

import imagecodecs
import numpy as np
import pytest

from cinegpu.decode import decode
from cinegpu.media.images import lcms2
from cinegpu.media.images.jp2_colour import for_display, upsample
from cinegpu.media.images.write import to_file_range
from cinegpu.player.cli import main
from helpers.jp2_files import cdef, codestream, colr, ihdr, jp2, planes

H, W = 19, 25
OPJ = shutil.which("opj_decompress")
needs_opj = pytest.mark.skipif(OPJ is None, reason="opj_decompress is not installed")


def srgb_icc() -> bytes:
    from PIL import ImageCms

    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def adobe_rgb_icc(intent: int = 0) -> bytes:
    """An RGB profile other than sRGB: Adobe RGB (1998)'s primaries and gamma, D65."""
    return lcms2.rgb_profile((0.3127, 0.3290), ((0.64, 0.33), (0.21, 0.71), (0.15, 0.06)), 563 / 256, intent)


def full_range(n: int, bits: int, seed: int, shape=(H, W)) -> list[np.ndarray]:
    """``n`` planes of ``bits``-bit samples over the whole range (a ramp plus noise)."""
    rng = np.random.default_rng(seed)
    top = (1 << bits) - 1
    ramp = np.linspace(0, top, shape[0] * shape[1]).reshape(shape)
    return [np.clip(np.roll(ramp, 97 * k) + rng.integers(-top // 20, top // 20 + 1, shape), 0, top)
            .astype(np.uint8 if bits <= 8 else np.uint16) for k in range(n)]


def write(tmp_path, name: str, comps: list[np.ndarray], header: bytes, bits: int | None = None):
    path = tmp_path / f"{name}.jp2"
    path.write_bytes(jp2(codestream(comps, bits), ihdr(comps[0].shape[0], comps[0].shape[1], len(comps),
                                                      (bits or 8) - 1) + header))
    return path


def ours(path, suffix: str = ".png", capsys=None) -> np.ndarray:
    out = path.with_name(path.stem + "_ours" + suffix)
    assert main(["decode", str(path), "-o", str(out)]) == 0
    if suffix == ".png":
        return imagecodecs.png_decode(out.read_bytes())
    import tifffile

    return tifffile.imread(out)


def opj(path, suffix: str = ".png") -> np.ndarray:
    out = path.with_name(path.stem + "_opj" + suffix)
    p = subprocess.run([OPJ, "-i", str(path), "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    if suffix == ".png":
        return imagecodecs.png_decode(out.read_bytes())
    import tifffile

    return tifffile.imread(out)


def peak(a: np.ndarray, b: np.ndarray) -> int:
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    return int(np.abs(a.astype(np.int64) - b).max())


@needs_opj
@pytest.mark.parametrize("chroma", [(10, 13), (H, 13), (H, W)], ids=["420", "422", "444"])
def test_sycc_is_written_as_rgb_like_opj(tmp_path, chroma):
    comps = planes([(H, W)], seed=5) + planes([chroma] * 2, seed=6)
    path = write(tmp_path, "sycc", comps, colr(18))
    got = ours(path)
    assert got.shape == (H, W, 3)
    assert peak(got, opj(path)) == 0
    # decode() itself returns the raw Y, Cb, Cr at their own sizes
    assert [c.shape for c in decode(path.read_bytes())] == [(H, W), chroma, chroma]


@needs_opj
def test_sycc_12_bit_like_opj(tmp_path):
    comps = planes([(H, W)], seed=5, top=4095) + planes([(10, 13)] * 2, seed=6, top=4095)
    path = write(tmp_path, "sycc12", comps, colr(18), bits=12)
    assert peak(ours(path), opj(path)) == 0


def test_sycc_pgx_keeps_the_decoded_values(tmp_path):
    comps = planes([(H, W)], seed=5) + planes([(10, 13)] * 2, seed=6)
    path = write(tmp_path, "sycc", comps, colr(18))
    assert main(["decode", str(path), "-o", str(tmp_path / "out.pgx")]) == 0
    from helpers.pgx import read_pgx

    assert all(np.array_equal(read_pgx(tmp_path / f"out_{k}.pgx"), comps[k]) for k in range(3))


def bare(tmp_path, name: str, comps: list[np.ndarray], bits: int | None = None):
    """A bare codestream (.j2k: no JP2 header, so no colour space) of ``comps``."""
    path = tmp_path / f"{name}.j2k"
    path.write_bytes(codestream(comps, bits))
    return path


@needs_opj
@pytest.mark.parametrize("chroma", [(10, 13), (H, 13)], ids=["420", "422"])
def test_bare_codestream_of_subsampled_chroma_is_written_as_rgb_like_opj(tmp_path, capsys, chroma):
    """opj_decompress takes three components whose chroma is sub-sampled for sYCC: so do we,
    and say that we guessed."""
    comps = planes([(H, W)], seed=5) + planes([chroma] * 2, seed=6)
    path = bare(tmp_path, "ycc", comps)
    got = ours(path)
    assert got.shape == (H, W, 3)
    assert peak(got, opj(path)) == 0
    assert "taken for sYCC" in capsys.readouterr().err


@needs_opj
def test_bare_codestream_of_three_full_components_is_written_as_decoded_like_opj(tmp_path, capsys):
    comps = planes([(H, W)] * 3, seed=7)
    path = bare(tmp_path, "rgb", comps)
    got = ours(path)
    assert np.array_equal(got, np.stack(comps, -1))
    assert peak(got, opj(path)) == 0
    assert "sYCC" not in capsys.readouterr().err


def test_bare_codestream_of_411_chroma_is_converted_too(tmp_path):
    """4:1:1 chroma (4 across, 1 down): opj_decompress's conversion refuses the ratio and it
    writes no PNG; ours repeats each chroma sample over the four luma samples it covers, and
    the PGX output keeps the decoded values."""
    comps = planes([(H, W)], seed=5) + planes([(H, 7)] * 2, seed=6)
    path = bare(tmp_path, "y411", comps)
    got = ours(path)
    pic = for_display(comps, [8] * 3, [False] * 3, None)
    assert pic.components == comps          # no header: for_display leaves them
    luma = comps[0].astype(np.int64)
    cr = upsample(comps[2], (H, W), (0, 0), (0, 0)).astype(np.float64) - 128
    assert np.array_equal(got[..., 0], np.clip(luma + np.trunc(1.402 * cr).astype(np.int64), 0, 255))
    assert main(["decode", str(path), "-o", str(tmp_path / "out.pgx")]) == 0
    from helpers.pgx import read_pgx

    assert all(np.array_equal(read_pgx(tmp_path / f"out_{k}.pgx"), comps[k]) for k in range(3))


@needs_opj
@pytest.mark.skipif(shutil.which("opj_compress") is None, reason="opj_compress is not installed")
def test_sycc_of_an_odd_origin_and_of_an_area_like_opj(tmp_path):
    """4:2:0 sYCC whose image starts at x = 1 (91 samples of luma, 45 of chroma across: the
    sizes alone would say a ratio of 3): the chroma ratio comes from SIZ, and the picture is
    OpenJPEG's but for the first column, where OpenJPEG takes no chroma (neutral) and we take
    the nearest. An area of it (-d): the whole picture's samples but for its first row and
    column, whose covering chroma lies outside the area."""
    rng = np.random.default_rng(1)
    y = (np.add.outer(np.arange(60) * 3, np.arange(91) * 2) % 200 + 20).astype(np.uint8)
    cb, cr = (rng.integers(60, 200, (30, 46)).astype(np.uint8) for _ in range(2))
    raw = tmp_path / "in.raw"
    raw.write_bytes(y.tobytes() + cb.tobytes() + cr.tobytes())     # opj_compress reads ceil(91 / 2) across
    path = tmp_path / "odd.jp2"
    p = subprocess.run(["opj_compress", "-i", str(raw), "-F", "91,60,3,8,u@1x1:2x2:2x2", "-d", "1,0", "-o", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    whole = ours(path)
    assert np.abs(whole.astype(np.int64) - opj(path))[:, 1:].max() == 0
    out = tmp_path / "area.png"
    assert main(["decode", str(path), "-o", str(out), "-d", "8,5,60,33"]) == 0
    area = imagecodecs.png_decode(out.read_bytes()).astype(np.int64)
    assert np.abs(area - whole[5:33, 7:59])[1:, 1:].max() == 0


def test_upsample_repeats_chroma_over_the_luma_it_covers():
    chroma = np.arange(6).reshape(2, 3)
    assert upsample(chroma, (3, 5), (0, 0), (0, 0)).tolist() == [[0, 0, 1, 1, 2], [0, 0, 1, 1, 2], [3, 3, 4, 4, 5]]
    # an odd origin (XOsiz 1): the first chroma sample is at canvas x 2 (ceil(1 / 2) = 1 on its
    # grid), under luma 1 and 2; luma 0 (canvas x 1) has none to its left and takes it too
    assert upsample(chroma, (3, 5), (1, 0), (1, 0)).tolist()[0] == [0, 0, 0, 1, 1]
    assert upsample(chroma, (3, 6), (1, 0), (1, 0)).tolist()[0] == [0, 0, 0, 1, 1, 2]


@needs_opj
def test_esycc_like_opj(tmp_path):
    path = write(tmp_path, "esycc", planes([(H, W)] * 3, seed=12), colr(24))
    assert peak(ours(path), opj(path)) == 0


@needs_opj
def test_cmyk_png_is_rgb_and_tiff_stays_cmyk_like_opj(tmp_path):
    path = write(tmp_path, "cmyk", planes([(H, W)] * 4, seed=9), colr(12))
    got = ours(path)
    assert got.shape == (H, W, 3) and peak(got, opj(path)) == 0
    import tifffile

    assert peak(ours(path, ".tif"), opj(path, ".tif")) == 0
    with tifffile.TiffFile(path.with_name("cmyk_ours.tif")) as t:
        assert t.pages[0].photometric == tifffile.PHOTOMETRIC.SEPARATED


@needs_opj
def test_cielab_is_16_bit_srgb_close_to_opj(tmp_path):
    path = write(tmp_path, "lab", planes([(H, W)] * 3, seed=10), colr(14))
    got = ours(path)
    assert got.dtype == np.uint16 and got.shape == (H, W, 3)
    # opj goes through lcms2's Lab transform; ours is the CIE formulas in float64
    assert peak(got, opj(path)) <= 64


def test_srgb_icc_profile_changes_nothing(tmp_path):
    comps = planes([(H, W)] * 3, seed=11)
    with_icc = ours(write(tmp_path, "icc", comps, colr(icc=srgb_icc())))
    without = ours(write(tmp_path, "plain", comps, colr(16)))
    assert peak(with_icc, without) <= 1


@needs_opj
@pytest.mark.parametrize("bits", [8, 16])
def test_rgb_icc_profile_like_opj(tmp_path, bits):
    comps = full_range(3, bits, seed=21)
    path = write(tmp_path, f"adobe{bits}", comps, colr(icc=adobe_rgb_icc()), bits=bits)
    got = ours(path)
    assert got.dtype == (np.uint8 if bits == 8 else np.uint16) and got.shape == (H, W, 3)
    assert peak(got, np.stack([to_file_range(c, bits, False, got.itemsize * 8) for c in comps], -1)) > 0
    assert peak(got, opj(path)) == 0


@needs_opj
def test_rgb_icc_profile_on_12_bit_samples_is_opjs_16_bit_transform(tmp_path):
    """12-bit samples go through lcms2 on its 16-bit scale and come back to 12 bits. (opj 2.5
    hands lcms2 12-bit samples unscaled, a dark picture; its 16-bit path is right, so the
    reference is opj's decoding of the same samples scaled to 16 bits, brought back to 12.)"""
    comps = full_range(3, 12, seed=22)
    path = write(tmp_path, "adobe12", comps, colr(icc=adobe_rgb_icc()), bits=12)
    to16 = [((c.astype(np.int64) * 65535 + 2047) // 4095).astype(np.uint16) for c in comps]
    deep = opj(write(tmp_path, "adobe16", to16, colr(icc=adobe_rgb_icc()), bits=16))
    back = (deep.astype(np.int64) * 4095 + 32767) // 65535
    assert peak(ours(path), to_file_range(back, 12, False, 16)) == 0


@pytest.mark.parametrize("bits", [8, 12, 16])
def test_grey_icc_profile_becomes_srgb(tmp_path, bits):
    """A grey profile (gamma 2.2, D65) makes R = G = B = the sRGB encoding of v ** 2.2, at the
    samples' own precision: within 0.5 % of the full range of the formula, as lcms2 interpolates
    its grey-to-sRGB table (nodes 2048 apart at 16 bits: up to 0.23 % off in the shadows).
    (``opj_decompress`` 2.5 reads grey samples above 8 bits as 8-bit bytes: no reference there.)"""
    comps = full_range(1, bits, seed=23)
    icc = lcms2.grey_profile((0.3127, 0.3290), 2.2)
    got = ours(write(tmp_path, f"grey{bits}", comps, colr(icc=icc), bits=bits))
    top, full = (1 << bits) - 1, (1 << got.itemsize * 8) - 1
    y = (comps[0] / top) ** 2.2
    srgb = np.where(y <= 0.0031308, 12.92 * y, 1.055 * y ** (1 / 2.4) - 0.055)
    want = to_file_range(np.rint(srgb * top).astype(np.int64), bits, False, got.itemsize * 8)
    assert got.shape == (H, W, 3) and (got == got[..., :1]).all()
    assert peak(got[..., 0], want) <= max(1, round(0.005 * full))


@needs_opj
def test_grey_icc_profile_8_bit_like_opj(tmp_path):
    path = write(tmp_path, "grey8", full_range(1, 8, seed=24), colr(icc=lcms2.grey_profile((0.3127, 0.3290), 2.2)))
    assert peak(ours(path), opj(path)) == 0


def test_srgb_icc_profile_on_12_bit_samples_changes_little(tmp_path, capsys):
    comps = full_range(3, 12, seed=25)
    got = ours(write(tmp_path, "icc12", comps, colr(icc=srgb_icc()), bits=12))
    assert "ICC profile" not in capsys.readouterr().err
    plain = ours(write(tmp_path, "plain12", comps, colr(16), bits=12))
    assert peak(got, plain) <= 17  # 1 12-bit code value (16 or 17 in the 16-bit PNG)


@pytest.mark.parametrize("bits", [8, 12, 16])
def test_unreadable_icc_profile_is_written_raw_with_a_note(tmp_path, capsys, bits):
    comps = full_range(3, bits, seed=26)
    plain = ours(write(tmp_path, "plain", comps, colr(16), bits=bits))
    for name, icc in [("bad", b"nonsense" * 20), ("cut", adobe_rgb_icc()[:200]), ("empty", b"")]:
        assert peak(ours(write(tmp_path, name, comps, colr(icc=icc), bits=bits)), plain) == 0, name
        assert "ICC profile not applied: lcms2 cannot read the ICC profile" in capsys.readouterr().err, name


def test_icc_profile_of_another_colour_space_is_written_raw_with_a_note(tmp_path, capsys):
    comps = full_range(3, 12, seed=27)
    plain = ours(write(tmp_path, "plain", comps, colr(16), bits=12))
    icc = bytearray(adobe_rgb_icc())
    icc[16:20] = b"CMYK"  # ICC.1 7.2.6: the data colour space field of the header
    assert peak(ours(write(tmp_path, "cmykicc", comps, colr(icc=bytes(icc)), bits=12)), plain) == 0
    assert "ICC profile of colour space 'CMYK' not applied" in capsys.readouterr().err


def test_other_colour_spaces_are_written_raw(tmp_path, capsys):
    comps = planes([(H, W)] * 3, seed=11)
    plain = ours(write(tmp_path, "plain", comps, colr(16)))
    assert peak(ours(write(tmp_path, "ycck", comps, colr(13))), plain) == 0
    assert "colour space 13 (YCCK) written as decoded" in capsys.readouterr().err


@needs_opj
def test_alpha_from_cdef_is_written_last_like_opj(tmp_path):
    comps = planes([(H, W)] * 4, seed=13)
    path = write(tmp_path, "rgba", comps, colr(16) + cdef((0, 1, 0), (1, 0, 1), (2, 0, 2), (3, 0, 3)))
    got = ours(path)
    assert got.shape == (H, W, 4) and np.array_equal(got[..., 3], comps[0])
    assert peak(got, opj(path)) == 0
    import tifffile

    ours(path, ".tif")
    with tifffile.TiffFile(path.with_name("rgba_ours.tif")) as t:
        assert t.pages[0].extrasamples == (tifffile.EXTRASAMPLE.UNASSALPHA,)


def test_for_display_keeps_alpha_after_the_converted_colour():
    comps = planes([(4, 5)] * 5, seed=1)
    from cinegpu.decode.jp2 import JP2Header

    pic = for_display(comps, [8] * 5, [False] * 5, JP2Header(colourspace=12), alpha=4)
    assert len(pic.components) == 4 and pic.alpha == 3 and pic.bits == [8, 8, 8, 8]
    assert np.array_equal(pic.components[3], comps[4])
