"""The decode area (cinegpu/decode/area.py, ``decode(area=...)``, ``cinegpu decode -d/-t``): each
component's samples in a rectangle of the reference grid, the tiles that meet it decoded and the
others not read; the same samples as the whole decode cut out, and as ``opj_decompress -d``."""

from __future__ import annotations

import shutil
import subprocess
import warnings

import numpy as np
import pytest

from cinegpu.decode import LenientWarning, UnsupportedFeature, decode
from cinegpu.decode.area import Area, component_windows, tile_area, tiles_meeting
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.request import DecodeRequest
from cinegpu.encode import encode
from cinegpu.player.cli import main
from conftest import have_cuda, present
from helpers.conformance import CONFORMANCE
from helpers.differential import available, made_streams
from helpers.pgx import read_pgx

OPJ = shutil.which("opj_decompress")
needs_opj = pytest.mark.skipif(OPJ is None, reason="opj_decompress is not installed: no reference")


def cut_out(data: bytes, area: Area, reduce: int) -> list[np.ndarray]:
    """The whole decode's samples in ``area``: each component's window (B-2) cut out."""
    siz = parse_codestream(data, strict=False).siz
    whole = decode(data, reduce=reduce)
    sizes, origins = component_windows(siz, area, reduce)
    first = siz.component_origins(reduce)
    return [c[oy - fy : oy - fy + h, ox - fx : ox - fx + w]
            for c, (w, h), (oy, ox), (fy, fx) in zip(whole, sizes, origins, first)]


def random_areas(siz, rng, n: int) -> list[Area]:
    out = []
    for _ in range(n):
        x0 = int(rng.integers(siz.XOsiz, siz.Xsiz))
        y0 = int(rng.integers(siz.YOsiz, siz.Ysiz))
        out.append(Area(x0, y0, int(rng.integers(x0 + 1, siz.Xsiz + 1)), int(rng.integers(y0 + 1, siz.Ysiz + 1))))
    return out


@pytest.mark.filterwarnings("ignore::cinegpu.decode.errors.LenientWarning")     # ds0_ht_12's CPF marker
@pytest.mark.parametrize("name", ["part1/codestreams/p0_03.j2k", "part1/codestreams/p0_06.j2k",
                                  "part1/codestreams/p1_05.j2k", "part1/codestreams/p0_09.j2k",
                                  "htj2k/codestreams/ds0_ht_12_b11.j2k"])
def test_an_area_is_the_whole_decode_cut_out(name):
    """Tiles (p0_03: 4, p1_05: 225 with PPM's packed headers), sub-sampled components (p0_06),
    an image offset, HT code-blocks; two reductions."""
    data = present(CONFORMANCE / name).read_bytes()
    siz = parse_codestream(data, strict=False).siz
    rng = np.random.default_rng(len(name))
    for reduce in (0, 1):
        for area in random_areas(siz, rng, 4):
            got = decode(data, reduce=reduce, area=(area.x0, area.y0, area.x1, area.y1))
            want = cut_out(data, area, reduce)
            assert [g.shape for g in got] == [w.shape for w in want], area
            assert all(np.array_equal(g, w) for g, w in zip(got, want)), (area, reduce)


@pytest.mark.parametrize("reversible", [True, False])
def test_small_areas_get_every_code_block_that_reaches_them(reversible):
    """Areas of a few samples over an image of 4 x 4 code-blocks and five levels: each area's
    edges cut blocks at every level, where a block left out too eagerly (area.REACH) would
    change a sample; yet most blocks are left out of each."""
    rng = np.random.default_rng(11)
    y, x = np.mgrid[0:80, 0:96]
    image = np.clip(128 + 60 * np.sin(x / 5.0) * np.cos(y / 7.0) + rng.normal(0, 20, (80, 96)), 0, 255)
    data = encode(image.astype(np.uint8), levels=5, codeblock=(2, 2), reversible=reversible, backend="cpu",
                  workers=0)
    siz = parse_codestream(data).siz
    from cinegpu.decode.area import codeblocks_meeting
    from cinegpu.decode.decoder import Decoder

    plan = Decoder("cpu").prepare(data).plans[0]
    for reduce in (0, 1):
        for _ in range(30):
            x0, y0 = int(rng.integers(0, 94)), int(rng.integers(0, 78))
            area = Area(x0, y0, x0 + int(rng.integers(1, 3)), y0 + int(rng.integers(1, 3)))
            got = decode(data, reduce=reduce, area=(area.x0, area.y0, area.x1, area.y1))
            assert np.array_equal(got[0], cut_out(data, area, reduce)[0]), (area, reduce)
    reaching = codeblocks_meeting(plan, siz, Area(40, 30, 42, 32), 0)
    assert 0 < reaching.sum() < plan.cb.shape[0] // 2


def test_an_area_of_a_dci_frame_is_the_whole_decode_cut_out():
    """The package's 2K DCI sample (9/7, ICT, five levels, one tile): the three components'
    inverse DWT and MCT over a window about the area."""
    from cinegpu.media.samples import BARS_2K

    data = BARS_2K.read_bytes()
    for area in (Area(1000, 500, 1090, 530), Area(0, 1070, 7, 1080)):
        got = decode(data, area=(area.x0, area.y0, area.x1, area.y1))
        assert all(np.array_equal(g, w) for g, w in zip(got, cut_out(data, area, 0))), area


def test_the_tiles_that_meet_an_area():
    cs = parse_codestream(encode(np.zeros((40, 50), np.uint8), tiles=(16, 16), backend="cpu", workers=0))
    siz = cs.siz
    assert (siz.num_tiles_x, siz.num_tiles_y) == (4, 3)
    assert tiles_meeting(siz, Area(0, 0, 1, 1)) == [0]
    assert tiles_meeting(siz, Area(15, 15, 17, 17)) == [0, 1, 4, 5]
    assert tiles_meeting(siz, Area(0, 32, 50, 40)) == [8, 9, 10, 11]
    assert tile_area(cs, 11) == Area(48, 32, 50, 40)        # cut to the image
    with pytest.raises(ValueError, match="tiles 0 to 11"):
        tile_area(cs, 12)


def test_tiles_outside_the_area_are_not_read():
    """A tile missing from the codestream is concealed (with a warning) in the whole decode; an
    area that does not meet it decodes without a word, the samples of the tile present."""
    rng = np.random.default_rng(2)
    image = rng.integers(0, 256, (32, 64), dtype=np.uint8)
    whole = encode(image, tiles=(32, 32), reversible=True, backend="cpu", workers=0)
    part = parse_codestream(whole).tiles[1].parts[0]
    data = whole[: part.offset] + whole[part.end :]                     # tile 1's tile-part taken out
    with pytest.warns(LenientWarning):
        decode(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LenientWarning)
        got = decode(data, area=(2, 3, 30, 31))[0]
    assert np.array_equal(got, image[3:31, 2:30])
    # an area in the missing tile alone: zeros, said as the whole decode says it
    with pytest.warns(LenientWarning, match="tile 1"):
        assert not decode(data, area=(40, 3, 60, 31))[0].any()


def test_an_area_is_cut_to_the_image_and_must_hold_samples():
    """Reaching outside the image, an area is cut to it (as OpenJPEG cuts it); wholly outside
    or empty, it is refused."""
    image = np.arange(600, dtype=np.uint16).reshape(20, 30) % 256
    data = encode(image.astype(np.uint8), reversible=True, backend="cpu", workers=0)
    assert np.array_equal(decode(data, area=(25, 15, 99, 99))[0], image[15:, 25:])
    with pytest.raises(ValueError, match="outside the image"):
        decode(data, area=(30, 0, 40, 5))
    with pytest.raises(ValueError, match="empty"):
        decode(data, area=(4, 4, 4, 9))
    with pytest.raises(ValueError, match="four integers"):
        DecodeRequest(area=(1, 2, 3))


@pytest.mark.gpu
@pytest.mark.skipif(not have_cuda(), reason="no CUDA device")
def test_an_area_on_the_cuda_back_end_is_the_cpus():
    """The CUDA back end's tier-1 and reconstruction of the area's tiles, cut on the way to the host."""
    from cinegpu.decode.decoder import Decoder

    data = present(CONFORMANCE / "part1" / "codestreams" / "p1_05.j2k").read_bytes()
    for reduce, area in ((0, (100, 100, 300, 180)), (1, (7, 3, 520, 40))):
        got = Decoder("cuda").decode(data, reduce=reduce, area=area).components
        want = decode(data, reduce=reduce, area=area)
        assert all(np.array_equal(g, w) for g, w in zip(got, want)), (reduce, area)


def test_the_cpu_pipeline_decodes_an_area():
    from cinegpu.decode.pipeline import FramePipeline

    data = present(CONFORMANCE / "part1" / "codestreams" / "p1_05.j2k").read_bytes()
    request = DecodeRequest(area=(100, 100, 300, 180), reduce=1)
    with FramePipeline(backend="cpu", workers=1, request=request) as pipe:
        got = [frame.components for _, frame in pipe.map([data, data])]
    want = decode(data, request=request)
    assert all(np.array_equal(g, w) for frame in got for g, w in zip(frame, want))


@pytest.mark.gpu
@pytest.mark.skipif(not have_cuda(), reason="no CUDA device")
def test_the_gpu_pipeline_refuses_an_area():
    from cinegpu.decode.pipeline import FramePipeline, tiny_codestream

    with FramePipeline(backend="cuda", workers=1) as pipe, pytest.raises(UnsupportedFeature, match="area"):
        pipe.submit(tiny_codestream(), request=DecodeRequest(area=(0, 0, 1, 1)))


def opj_area(stream, folder, area: Area, reduce: int) -> list[np.ndarray] | None:
    out = folder / "ref"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    p = subprocess.run([OPJ, "-i", str(stream), "-o", str(out / "o.pgx"), "-r", str(reduce),
                        "-d", f"{area.x0},{area.y0},{area.x1},{area.y1}"], capture_output=True, text=True, timeout=60)
    files = sorted(out.glob("o*.pgx"), key=lambda f: int(f.stem.rpartition("_")[2] or 0) if f.stem != "o" else -1)
    return [read_pgx(f) for f in files] if p.returncode == 0 and files else None


@needs_opj
@pytest.mark.parametrize("tool", ["opj", "ffmpeg"])
def test_an_area_as_opj_decompress_decodes_it(tool, tmp_path):
    """Streams of OpenJPEG's and FFmpeg's encoders (the differential harness's seeded options:
    tiles, offsets, precincts, sub-sampling, 5/3 and 9/7), random areas and reductions, against
    ``opj_decompress -d``: reversible identical, irreversible within 1. (Not HTJ2K, which these
    two encoders do not write: OpenJPEG 2.5's area decode of HT code-blocks differs from its own
    whole decode.)"""
    if not available(tool):
        pytest.skip(f"{tool} is not installed")
    compared = 0
    for seed, case, data, folder in made_streams(range(20), (tool,), tmp_path, cut_share=0.0):
        stream = folder / "in.j2k"
        stream.write_bytes(data)
        siz = parse_codestream(data).siz
        rng = np.random.default_rng(seed)
        for area in random_areas(siz, rng, 2):
            reduce = int(rng.integers(0, 2))
            ref = opj_area(stream, folder, area, reduce)
            if ref is None:
                continue            # OpenJPEG refuses some (an area holding no sample of a component)
            got = decode(data, reduce=reduce, area=(area.x0, area.y0, area.x1, area.y1))
            assert [g.shape for g in got] == [r.shape for r in ref], (seed, area, reduce)
            peak = max((int(np.abs(g.astype(np.int64) - r).max()) for g, r in zip(got, ref) if g.size), default=0)
            assert peak <= (1 if case.lossy else 0), (seed, case.args, area, reduce, peak)
            compared += 1
    assert compared >= 10


@needs_opj
@pytest.mark.parametrize("options", [["-d", "10,20,300,100"], ["-t", "2"], ["-d", "3,5,41,33", "-r", "1"]])
def test_the_command_line_decodes_an_area_or_a_tile_as_opj_decompress(tmp_path, options):
    stream = present(CONFORMANCE / "part1" / "codestreams" / "p0_03.j2k" if "-t" in options
                     else CONFORMANCE / "part1" / "codestreams" / "p0_06.j2k")
    assert main(["decode", str(stream), "-o", str(tmp_path / "ours.pgx"), *options]) == 0
    p = subprocess.run([OPJ, "-i", str(stream), "-o", str(tmp_path / "opj.pgx"), *options], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    ours = sorted(tmp_path.glob("ours*.pgx"))
    theirs = sorted(tmp_path.glob("opj*.pgx"))
    assert len(ours) == len(theirs) > 0
    for a, b in zip(ours, theirs):
        assert np.array_equal(read_pgx(a), read_pgx(b)), a.name


def test_the_command_line_says_what_is_wrong_with_an_area(tmp_path, capsys):
    stream = tmp_path / "s.j2k"
    stream.write_bytes(encode(np.zeros((20, 30), np.uint8), backend="cpu", workers=0))
    assert main(["decode", str(stream), "-o", str(tmp_path / "o.png"), "-d", "0,0,99,5"]) == 0
    assert "decode area cut to the image: 0,0,30,5" in capsys.readouterr().err
    assert main(["decode", str(stream), "-o", str(tmp_path / "o.png"), "-d", "40,0,99,5"]) == 2
    assert "lies outside the image (0, 0, 30, 20)" in capsys.readouterr().err
    assert main(["decode", str(stream), "-o", str(tmp_path / "o.png"), "-t", "1"]) == 2
    assert "tiles 0 to 0" in capsys.readouterr().err
    assert main(["decode", str(stream), str(stream), "-o", str(tmp_path / "out"), "-t", "0"]) == 2
    assert "one file" in capsys.readouterr().err


def test_the_folder_mode_decodes_an_area_of_every_file(tmp_path, capsys):
    """``-d`` with a folder: each file's area through the CPU pipeline's workers, the images as
    one file's decode writes them; a file whose image holds nothing of the area fails alone."""
    from helpers.pgx import read_pgx

    folder = tmp_path / "in"
    folder.mkdir()
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 4096, (40 + 8 * k, 64), dtype=np.uint16) for k in range(3)]
    for k, image in enumerate(images):
        (folder / f"f{k}.j2k").write_bytes(encode(image, bits=12, tiles=(32, 32), reversible=True, backend="cpu",
                                                  workers=0))
    (folder / "f3.j2k").write_bytes(encode(np.zeros((8, 8), np.uint16), bits=12, backend="cpu", workers=0))
    out = tmp_path / "out"
    assert main(["decode", str(folder), "-o", str(out), "--format", "pgx", "-d", "10,20,50,45",
                 "--workers", "1"]) == 2
    assert "f3.j2k: decode area (10, 20, 50, 45) lies outside the image" in capsys.readouterr().err
    for k, image in enumerate(images):
        assert np.array_equal(read_pgx(out / f"f{k}_0.pgx"), image[20:45, 10:50]), k
