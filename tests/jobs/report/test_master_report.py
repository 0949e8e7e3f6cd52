"""``cinegpu master ... --report R.html`` (issue 53, its last piece): the finished package's QC
report, the page ``check --report`` writes, with each frame's PSNR against the source; the
figures checked against PSNR computed here (numpy) of the package's codestreams decoded by
``opj_decompress`` (or, without it, our decoder) against the source's code values computed
here; a lossless master gives null and the lossless flag; the refusals come before any work."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode import decode
from cinegpu.jobs.master_job import MasterJob
from cinegpu.jobs.report import json_path, missing
from cinegpu.jobs.report.psnr import FramePsnr, MasterPsnr, frame_psnr
from cinegpu.media import open_source
from cinegpu.media.images.colour import to_xyz12
from cinegpu.media.images.frames import fit, unit_scale
from cinegpu.player.cli import main
from helpers.mastering import needs_encoder, write_tiffs
from helpers.peers import have, opj_reference

needs_report = pytest.mark.skipif(missing() is not None, reason="the report extra (matplotlib, scipy) is not installed")

#: the input frames' size (width, height): a DCP fits them into its 2K flat area, 1998 x 1080
SIZE = (96, 54)
#: distinct input frames; the composition repeats them to last a second (24 frames)
INPUTS = 2


def _db(squared: float, count: int, peak: int) -> float | None:
    return None if squared == 0 else 10 * math.log10(peak ** 2 * count / squared)


def numpy_psnr(source: list[np.ndarray], decoded: list[np.ndarray], peak: int) -> tuple[list, float | None]:
    """(per component dB, overall dB) written out here; None for an exact match."""
    se = [float(((d.astype(np.float64) - s.astype(np.float64)) ** 2).sum()) for s, d in zip(source, decoded)]
    sizes = [s.size for s in source]
    return [_db(e, n, peak) for e, n in zip(se, sizes)], _db(sum(se), sum(sizes), peak)


def _tiff_samples(folder: Path) -> list[list[np.ndarray]]:
    """Each input TIFF's X'Y'Z' code values as the DCP's encoder takes them: fitted into the
    2K flat area (float32 0..1), Rec. 709 to X'Y'Z' 12-bit."""
    import tifffile
    out = []
    for f in sorted(folder.glob("*.tif")):
        image = fit(tifffile.imread(f), 1998, 1080)
        if image.dtype != np.float32:
            image = unit_scale(image, 65535)
        xyz = to_xyz12(image, "rec709")
        out.append([xyz[..., c] for c in range(3)])
    return out


def _decoded(data: bytes, folder: Path) -> list[np.ndarray]:
    """A codestream decoded by ``opj_decompress`` where it is installed, else by ours."""
    if not have("opj_decompress"):
        return decode(data)
    folder.mkdir()
    (folder / "f.j2c").write_bytes(data)
    return opj_reference(folder / "f.j2c", folder)


@pytest.fixture(scope="module")
def dcp_report(tmp_path_factory):
    """A 24-frame 2K DCP mastered from two small TIFFs with --report; (folder, inputs, page,
    twin's data)."""
    base = tmp_path_factory.mktemp("master_report")
    src = write_tiffs(base / "in", INPUTS, SIZE)
    page = base / "qc.html"
    rc = main(["master", str(src), "-o", str(base / "dcp"), "--title", "t", "--quiet", "--backend", "cpu",
               "--workers", "2", "--report", str(page)])
    assert rc == 0
    return base / "dcp", src, page, json.loads(json_path(page).read_text())


@pytest.mark.slow  # long: masters and decodes 2K frames (about 10 s on two cores)
@needs_encoder
@needs_report
def test_the_psnr_of_each_frame_is_what_numpy_measures(dcp_report, tmp_path):
    dcp, src, _, data = dcp_report
    psnr = data["compositions"][0]["psnr"]
    with open_source(dcp) as source:
        count = source.frame_count
        streams = [source.frame(n) for n in range(count)]
    assert psnr["frames"] == count == 24 and psnr["bits"] == 12 and psnr["peak"] == 4095
    assert psnr["components"] == ["X'", "Y'", "Z'"] and psnr["lossless"] is False
    (reel,) = psnr["reels"]
    (eye,) = reel["eyes"]
    assert eye["eye"] is None and len(eye["overall_db"]) == count and eye["lossless_frames"] == 0
    samples = _tiff_samples(src)
    measured: dict[bytes, tuple] = {}
    for n, data_n in enumerate(streams):
        if data_n not in measured:
            measured[data_n] = numpy_psnr(samples[n % INPUTS], _decoded(data_n, tmp_path / f"f{n}"), 4095)
        per, overall = measured[data_n]
        assert eye["overall_db"][n] == pytest.approx(overall, abs=0.01), n
        for c in range(3):
            assert eye["components_db"][c][n] == pytest.approx(per[c], abs=0.01), (n, c)
    overall = [measured[d][1] for d in streams]
    assert psnr["overall"]["min_db"] == pytest.approx(min(overall), abs=0.01)
    assert psnr["overall"]["mean_db"] == pytest.approx(sum(overall) / count, abs=0.01)
    assert psnr["overall"]["max_db"] == pytest.approx(max(overall), abs=0.01)
    assert eye["overall"] == psnr["overall"]


@pytest.mark.slow  # long: the master of the test above
@needs_encoder
@needs_report
def test_the_page_is_check_reports_with_the_psnr_plot(dcp_report):
    dcp, _, page, data = dcp_report
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|file:)""", html, re.I)
    assert "<script" not in html and "<link" not in html
    assert "PSNR against the source" in html and 'alt="PSNR per frame, reel 1"' in html
    assert re.search(r'<img class="plot" alt="PSNR per frame, reel 1" src="data:image/png;base64,', html)
    assert data["report"] == "cinegpu QC report" and data["compositions"][0]["frames"] == 24
    assert "bit rate per frame" in html          # the rest of check --report's page


@needs_encoder
@needs_report
def test_a_lossless_master_is_null_and_flagged(tmp_path):
    src = write_tiffs(tmp_path / "in", INPUTS, SIZE)
    page = tmp_path / "qc.html"
    rc = main(["master", str(src), "-o", str(tmp_path / "imf"), "--title", "t", "--quiet", "--backend", "cpu",
               "--format", "imf", "--codec", "htj2k", "--lossless", "--fps", "24", "--report", str(page)])
    assert rc == 0
    psnr = json.loads(json_path(page).read_text())["compositions"][0]["psnr"]
    (eye,) = psnr["reels"][0]["eyes"]
    assert psnr["lossless"] is True and psnr["components"] == ["R'", "G'", "B'"] and psnr["peak"] == 4095
    assert eye["lossless"] == [True] * psnr["frames"] and eye["lossless_frames"] == psnr["frames"]
    assert set(eye["overall_db"]) == {None} and all(set(c) == {None} for c in eye["components_db"])
    assert psnr["overall"] == {"min_db": None, "mean_db": None, "max_db": None}
    with open_source(tmp_path / "imf") as source:
        decoded = decode(source.frame(0))
    import tifffile
    first = tifffile.imread(sorted(src.glob("*.tif"))[0])
    want = np.rint(unit_scale(first, 65535) * 4095)
    assert all(np.array_equal(decoded[c], want[..., c]) for c in range(3))
    html = page.read_text()
    assert "Lossless: every frame decoded exactly." in html and 'alt="PSNR per frame' not in html


@pytest.mark.slow  # long: masters a 3D DCP (2K frames, both eyes)
@needs_encoder
@needs_report
def test_a_stereo_master_measures_each_eye(tmp_path):
    left = write_tiffs(tmp_path / "left", INPUTS, SIZE)
    right = tmp_path / "right"
    right.mkdir()
    import tifffile
    for f in sorted(left.glob("*.tif")):         # the right eye: the left's frames darkened
        tifffile.imwrite(right / f.name, tifffile.imread(f) // 3, photometric="rgb")
    page = tmp_path / "qc.html"
    rc = main(["master", str(left), str(right), "--stereo", "-o", str(tmp_path / "dcp"), "--title", "t",
               "--quiet", "--backend", "cpu", "--report", str(page)])
    assert rc == 0
    psnr = json.loads(json_path(page).read_text())["compositions"][0]["psnr"]
    eyes = psnr["reels"][0]["eyes"]
    assert [e["eye"] for e in eyes] == ["left", "right"] and psnr["frames"] == 24 and psnr["codestreams"] == 48
    with open_source(tmp_path / "dcp") as source:
        pairs = [(source.frame(n, "left"), source.frame(n, "right")) for n in (0, 1)]
    for n, streams in enumerate(pairs):
        for e, (data, folder) in enumerate(zip(streams, (left, right))):
            _, overall = numpy_psnr(_tiff_samples(folder)[n], decode(data), 4095)
            assert eyes[e]["overall_db"][n] == pytest.approx(overall, abs=0.01), (n, e)
            assert eyes[e]["overall_db"][n + 2] == eyes[e]["overall_db"][n]    # the input repeats


def test_a_missing_report_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    def no_reading(*_a, **_k):
        raise AssertionError("the input was read")
    monkeypatch.setattr("cinegpu.jobs.master_job.image_input", no_reading)
    monkeypatch.setattr("cinegpu.jobs.report.missing", lambda: None)
    page = tmp_path / "nowhere" / "qc.html"
    rc = main(["master", str(tmp_path), "-o", str(tmp_path / "dcp"), "--title", "t", "--quiet",
               "--report", str(page)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith("cinegpu master: --report") and "does not exist" in err
    assert not (tmp_path / "dcp").exists()


def test_a_report_without_matplotlib_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("cinegpu.jobs.report.missing", lambda: "--report needs matplotlib: pip install x")
    rc = main(["master", str(tmp_path), "-o", str(tmp_path / "dcp"), "--title", "t", "--quiet",
               "--report", str(tmp_path / "qc.html")])
    err = capsys.readouterr().err
    assert rc == 2 and err == "cinegpu master: --report needs matplotlib: pip install x\n"
    assert not (tmp_path / "dcp").exists()


def test_the_job_checks_its_report_target(tmp_path, monkeypatch):
    monkeypatch.setattr("cinegpu.jobs.report.missing", lambda: None)
    frame = np.zeros((54, 96, 3), np.uint8)
    with pytest.raises(ValueError, match="does not exist"):
        MasterJob.of(lambda i: frame, 24, tmp_path / "dcp", title="t", report=tmp_path / "no" / "r.html")
    with pytest.raises(ValueError, match="want an .html file"):
        MasterJob.of(lambda i: frame, 24, tmp_path / "dcp", title="t", report=tmp_path / "r.txt")
    job = MasterJob.of(lambda i: frame, 24, tmp_path / "dcp", title="t", report=str(tmp_path / "r.html"))
    assert job.report == tmp_path / "r.html"


def test_frame_psnr_is_the_formula():
    rng = np.random.default_rng(1)
    source = [rng.integers(0, 4096, (6, 8)), rng.integers(0, 4096, (6, 4))]     # a 4:2:2 pair
    decoded = [source[0] + rng.integers(-3, 4, (6, 8)), source[1].copy()]
    got = frame_psnr(source, decoded, 4095)
    per, overall = numpy_psnr(source, decoded, 4095)
    assert got.components[0] == pytest.approx(per[0]) and got.overall == pytest.approx(overall)
    assert math.isinf(got.components[1]) and not got.lossless
    assert frame_psnr(source, [s.copy() for s in source], 4095).lossless
    with pytest.raises(ValueError, match="decoded 4x6, coded 8x6"):
        frame_psnr(source, [source[1], source[1]], 4095)


def test_the_section_maps_repeats_reels_and_eyes():
    lossy, exact = FramePsnr((40.0, 50.0, 60.0), 45.0), FramePsnr((math.inf,) * 3, math.inf)
    # a 3D input of two frames (images: L0 R0 L1 R1), a composition of 5 frames in reels of 2 and 3
    frames = {0: lossy, 1: exact, 2: FramePsnr((30.0, 30.0, 30.0), 30.0), 3: exact}
    section = MasterPsnr(frames, 4, 2, 12, ("X'", "Y'", "Z'")).section([(0, 2), (2, 3)])
    assert section["frames"] == 5 and section["codestreams"] == 10 and section["peak"] == 4095
    first, second = section["reels"]
    assert [e["eye"] for e in first["eyes"]] == ["left", "right"]
    assert first["eyes"][0]["overall_db"] == [45.0, 30.0] and second["eyes"][0]["overall_db"] == [45.0, 30.0, 45.0]
    assert first["eyes"][1]["overall_db"] == [None, None] and first["eyes"][1]["lossless"] == [True, True]
    assert second["eyes"][0]["components_db"][2] == [60.0, 30.0, 60.0]
    assert section["overall"] == {"min_db": 30.0, "mean_db": 39.0, "max_db": 45.0}
    assert section["lossless"] is False
    json.dumps(section, allow_nan=False)
