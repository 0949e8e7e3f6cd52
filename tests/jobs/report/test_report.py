"""``cinegpu check PACKAGE --report R.html`` (issue 53, item 3): one self-contained HTML page and
its JSON twin, whose figures are what ``info`` and ``check`` compute (frames, sizes, the largest
bit rate, cues) and whose loudness is FFmpeg ``ebur128``'s; refused up front, in one line,
without matplotlib; an encrypted package's tracks reported as not measured."""

from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from cinegpu.jobs.check_decode import DecodeReport, FrameFault
from cinegpu.jobs.report import json_path, missing
from cinegpu.jobs.report.gather import MAX_THUMBNAILS, _thumbnail_frames, downsample, gather
from cinegpu.media.describe import describe
from cinegpu.media.errors import MediaError
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.package.check import check
from cinegpu.media.package.dcp_write import DCPWriter
from cinegpu.media.package.read import read_package
from cinegpu.media.samples import BARS_2K
from cinegpu.media.sound.inputs import open_sound
from cinegpu.media.subtitles.documents import composition_subtitles
from cinegpu.media.subtitles.write import prepare_subtitles
from cinegpu.player.cli import main
from helpers.ebur128 import ffmpeg_ebur128, write_pcm_wav

needs_report = pytest.mark.skipif(missing() is not None, reason="the report extra (matplotlib, scipy) is not installed")

RATE, FPS, REELS = 48000, 24, (48, 48)
SRT = "1\n00:00:00,500 --> 00:00:01,000\nfirst\n\n2\n00:00:02,500 --> 00:00:03,000\nsecond reel\n"


def _mix(frames: int) -> np.ndarray:
    """Stereo 24-bit values: a 997 Hz tone at -14 dBFS left, noise right."""
    n = frames * RATE // FPS
    t = np.arange(n) / RATE
    x = np.stack([0.2 * np.sin(2 * np.pi * 997 * t), 0.05 * np.random.default_rng(0).standard_normal(n)], 1)
    return np.round(x * (1 << 23)).astype(np.int32)


def _package(base: Path, keys: Path | None = None) -> Path:
    """A two-reel DCP of the sample frame, with the mix (in 5.1: L, R) and the SRT's cues."""
    base.mkdir(parents=True, exist_ok=True)
    frames = sum(REELS)
    wav = write_pcm_wav(base / "mix.wav", _mix(frames))
    (base / "s.srt").write_text(SRT)
    try:
        subs, _ = prepare_subtitles(base / "s.srt", frames=frames, fps=FPS, title="t", language="en")
    except MediaError as exc:                   # no DejaVu Sans here
        pytest.skip(f"no subtitle font: {exc}")
    frame = BARS_2K.read_bytes()
    with DCPWriter(base / "dcp", title="Report_TST", edit_rate=FPS, reels=list(REELS), sound=open_sound([wav]),
                   subtitles=subs, keys=keys) as w:
        for _ in range(frames):
            w.write(frame)
        return w.close().root


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The package, and its report made by ``cinegpu check --report`` (exit status, page, twin)."""
    base = tmp_path_factory.mktemp("report")
    pkg = _package(base)
    page = base / "qc.html"
    status = main(["check", str(pkg), "--report", str(page), "--no-progress"])
    return pkg, status, page, json.loads(json_path(page).read_text())


@needs_report
def test_the_page_is_one_file_with_everything_inline(reported):
    pkg, status, page, data = reported
    assert status == 0
    html = page.read_text()
    assert json_path(page) == page.with_suffix(".json") and json_path(page).is_file()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|file:)""", html, re.I)
    assert "<script" not in html and "<link" not in html and "@import" not in html
    # the plots (bit rate, level, cue timeline) and the thumbnails (each reel's first frame)
    images = re.findall(r'<img[^>]*src="data:image/png;base64,', html)
    assert len(images) == 3 + 2, len(images)
    assert [t["frame"] for t in data["compositions"][0]["thumbnails"]] == [0, 48]
    assert all(t["width"] == 320 for t in data["compositions"][0]["thumbnails"])


@needs_report
def test_the_twin_holds_what_info_and_check_compute(reported):
    pkg, _, _, data = reported
    comp = data["compositions"][0]
    assert comp["frames"] == sum(REELS) and [r["frames"] for r in comp["reels"]] == list(REELS)
    sizes = []
    for reel, asset in zip(comp["reels"], (r.of_kind("picture")[0] for r in read_package(pkg).compositions[0].reels)):
        with MXFFile(asset.path) as mxf:
            assert reel["picture"]["sizes_bytes"] == [mxf.frame_size(n) for n in range(mxf.frame_count)]
            sizes += reel["picture"]["sizes_bytes"]
    pic = comp["picture"]
    info = describe(pkg)
    assert f"min {pic['min_bytes']:,} / mean {pic['mean_bytes']:,.0f} / max {pic['max_bytes']:,} bytes over " \
           f"{sum(REELS)} frames" in info
    assert pic["max_mbps"] == pytest.approx(max(sizes) * 8 * FPS / 1e6, abs=1e-3)
    assert pic["cap_bytes"] == 1_302_083 and pic["over_cap"] == 0
    assert pic["above_safe"] == sum(REELS)           # the sample frame sits just under the cap
    assert f"{pic['over_cap']} frame(s) over the cap, {pic['above_safe']} above the 230 Mbit/s" in info
    # cues: as the player places them
    subs = composition_subtitles(read_package(pkg).compositions[0], root=pkg)
    assert comp["cue_count"] == sum(len(r.track.cues) for r in subs.reels) == 2
    cues = [(c["in"], c["out"], c["text"]) for r in comp["reels"] for t in r["timed_text"] for c in t["cues"]]
    assert cues == [(0.5, 1.0, "first"), (2.5, 3.0, "second reel")]
    # the verdicts: what check says
    verdict = check(pkg, progress=False)
    checks = data["checks"]
    assert checks["ran"] == ["hashes"] and checks["ok"] is verdict.ok is True
    assert (checks["problems"], checks["warnings"], checks["notes"]) == (verdict.problems, verdict.warnings,
                                                                         verdict.notes)


@needs_report
@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg")
def test_the_loudness_is_ffmpeg_ebur128s(reported, tmp_path):
    pkg, _, _, data = reported
    comp = data["compositions"][0]
    sound = comp["sound"]
    assert sound["channels"] == 6 and sound["labels"] == ["chL", "chR", "chC", "chLFE", "chLs", "chRs"]
    whole = ffmpeg_ebur128(write_pcm_wav(tmp_path / "mix.wav", _mix(sum(REELS))))
    got = sound["loudness"]
    assert abs(got["integrated_lufs"] - whole["I"]) <= 0.1, (got, whole)
    assert abs(got["range_lu"] - whole["LRA"]) <= 0.1, (got, whole)
    assert abs(got["true_peak_dbtp"] - whole["true_peak"]) <= 0.2, (got, whole)
    assert got["channel_true_peak_dbtp"][2:] == [None] * 4        # C, LFE, Ls, Rs: silence
    for reel in comp["reels"]:                                    # each reel's track file, as FFmpeg reads it
        ref = ffmpeg_ebur128(pkg / reel["sound"]["track"])
        mine = reel["sound"]["loudness"]
        assert abs(mine["integrated_lufs"] - ref["I"]) <= 0.1, (mine, ref)
        assert abs(mine["true_peak_dbtp"] - ref["true_peak"]) <= 0.2, (mine, ref)
    level = sound["level"]
    assert len(level["momentary_lufs"]) == 40 - 3 and len(level["short_term_lufs"]) == 40 - 29


@needs_report
def test_decode_faults_land_in_their_reels(reported):
    """A fault ``check --decode`` reports in the second reel's track file is that reel's, at its
    composition frame; a run of frames not checked is in each reel it touches."""
    pkg, _, _, _ = reported
    reels = read_package(pkg).compositions[0].reels
    second = str(reels[1].of_kind("picture")[0].path)
    decoded = DecodeReport(pkg, packages=1, tracks=2, frames=96,
                           faults=[FrameFault(str(pkg), second, 5, "CodestreamError: broken"),
                                   FrameFault(str(pkg), second, 40, "not checked: died", None, 47)])
    data = gather(pkg, decoded=decoded, every=1000.0, progress=False).data
    comp = data["compositions"][0]
    assert comp["reels"][0]["picture"]["decode_faults"] == []
    faults = comp["reels"][1]["picture"]["decode_faults"]
    assert [(f["frame"], f["composition_frame"], f["through"]) for f in faults] == [(5, 53, None), (40, 88, 47)]
    assert data["checks"]["ran"] == ["decode"] and data["checks"]["ok"] is False
    assert [t["frame"] for t in comp["thumbnails"]] == [0, 48]    # the reels' first frames only


def test_without_matplotlib_the_report_is_refused_up_front(tmp_path, monkeypatch, capsys):
    import cinegpu.jobs.report as report

    real = report.importlib.util.find_spec
    monkeypatch.setattr(report.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert missing() == "--report needs matplotlib: pip install 'cinegpu[report]'"
    folder = tmp_path / "pkg"
    folder.mkdir()
    status = main(["check", str(folder), "--report", str(tmp_path / "r.html")])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""                             # nothing checked
    assert err.strip().splitlines() == ["cinegpu check: --report needs matplotlib: pip install 'cinegpu[report]'"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]


def _status(argv: list[str]) -> int:
    """``cinegpu ARGV``'s exit status, in this process (argparse's refusals exit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


@needs_report
@pytest.mark.parametrize("args,words", [
    (["{pkg}", "--report", "{tmp}/r.txt"], "want an .html file"),
    (["{pkg}", "--report", "{tmp}/nowhere/r.html"], "nowhere does not exist"),
    (["{tmp}", "--report", "{tmp}/r.html"], "is not a package"),
    (["{pkg}", "--report", "{tmp}/r.html", "--thumbnails-every", "0"], "must be above 0"),
    (["{pkg}", "--thumbnails-every", "5"], "--thumbnails-every goes with --report"),
])
def test_report_mistakes_are_one_line_and_exit_2(tmp_path, capsys, args, words):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "ASSETMAP.xml").write_text("<AssetMap/>")
    assert _status(["check", *[a.format(pkg=pkg, tmp=tmp_path) for a in args]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]


@needs_report
def test_thumbnails_and_plotted_points_are_bounded():
    # a two-hour feature in 6 reels: a frame every 10 s would be 720 thumbnails
    frames = 2 * 3600 * 24
    starts = [k * frames // 6 for k in range(6)]
    chosen = _thumbnail_frames(starts, frames, Fraction(24), 10.0)
    assert len(chosen) <= MAX_THUMBNAILS and set(starts) <= set(chosen) and chosen[0] == 0
    assert _thumbnail_frames([0], 240, Fraction(24), 2.0) == [0, 48, 96, 144, 192]
    ix, v = downsample(np.arange(100_000, dtype=float), 3000)
    assert len(v) <= 3000 and v.max() == 99_999 and ix[0] == 0     # the peaks kept


@needs_report
def test_an_encrypted_package_says_what_was_not_measured(tmp_path):
    pkg = _package(tmp_path / "enc", keys=tmp_path / "keys.txt")
    page = tmp_path / "enc.html"
    assert main(["check", str(pkg), "--report", str(page), "--no-progress"]) == 0
    comp = json.loads(json_path(page).read_text())["compositions"][0]
    assert {r["picture"]["error"] for r in comp["reels"]} == {"encrypted: frame sizes not read (check takes no key)"}
    assert comp["sound"]["error"].startswith("not measured")
    assert {t["error"] for r in comp["reels"] for t in r["timed_text"]} == {"encrypted: not read (check takes no key)"}
    assert comp["thumbnails"] == [{"error": "encrypted picture: no thumbnails (check takes no key)"}]
    assert "encrypted" in page.read_text()


@needs_report
@pytest.mark.slow  # long: check --decode starts decoding processes (~50 s on 2 cores)
def test_decode_verdicts_reach_the_report(reported, tmp_path):
    """``check --decode --report``: a frame whose codestream lost its SOC marker fails, and the
    report places it in its reel, at its composition frame, crossed on the bit-rate plot."""
    pkg, _, _, _ = reported
    copy = tmp_path / "dcp"
    shutil.copytree(pkg, copy)
    track = read_package(copy).compositions[0].reels[1].of_kind("picture")[0].path
    with MXFFile(track) as mxf:
        offset, _ = mxf.locate_frame(5)
    with open(track, "r+b") as f:
        f.seek(offset)
        f.write(b"\0\0")
    page = tmp_path / "d.html"
    assert main(["check", str(copy), "--decode", "--workers", "2", "--report", str(page), "--no-progress"]) == 1
    data = json.loads(json_path(page).read_text())
    assert data["checks"]["ran"] == ["decode"] and data["checks"]["frames_decoded"] == 96
    faults = data["compositions"][0]["reels"][1]["picture"]["decode_faults"]
    assert [(f["frame"], f["composition_frame"]) for f in faults] == [(5, 53)]
    assert "decode failed" in page.read_text()
