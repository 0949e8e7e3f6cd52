"""A mastering job as one value (cinegpu/jobs/master_job.py): it pickles, it refuses what no
package takes when it is made (before any frame is read), ``MasterJob.of`` shares keyword
options out to its parts, and ``cinegpu master``'s options map onto it."""

from __future__ import annotations

import pickle
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cinegpu.decode.codestream import dci
from cinegpu.jobs.demo import demo_frame
from cinegpu.jobs.frame_encode import FrameEncoders
from cinegpu.jobs.master_job import (
    Composition,
    Compute,
    Encoding,
    FrameCoding,
    InputFrames,
    MasterJob,
    Picture,
    Protection,
)
from cinegpu.media import MediaError
from cinegpu.media.describe import frame_caps, size_lines
from cinegpu.media.images.frames import ImageFrames
from cinegpu.media.package.cpl_metadata import CplMetadata, Marker, Rating
from cinegpu.media.sound.inputs import open_sound
from cinegpu.player.cli import build_parser
from helpers.mastering import write_png16
from helpers.sound_util import tones, write_wav


class _Untouchable:
    """A frame source that fails the test if a frame is read (it pickles)."""

    def __call__(self, i: int):
        raise AssertionError(f"frame {i} was read")


def _folder(path: Path, count: int) -> Path:
    path.mkdir()
    for i in range(count):
        write_png16(path / f"f{i:02d}.png", demo_frame(i, 16, 9))
    return path


def test_a_job_pickles_and_round_trips(tmp_path):
    wav = write_wav(tmp_path / "s.wav", tones(48 * 2000, 6))
    job = MasterJob.of(ImageFrames(("a.tif", "b.tif"), (4096, 2160)), 2, tmp_path / "out",
                       title="t", frames=48, reel_length=1, fps=24, bitrate=100,
                       sound=open_sound([wav]), keys=tmp_path / "keys.txt", processes=2,
                       workers=3, mps=False, backend="cpu")
    again = pickle.loads(pickle.dumps(job))
    assert again == job and again is not job
    assert again.reel_lengths == (24, 24) and again.length == 48
    assert (again.picture.fps, again.compute.processes, again.protection.keys) == \
        (Fraction(24), 2, tmp_path / "keys.txt")
    coding = FrameCoding(job.input.read, 1998, 1080,
                         Encoding(job.picture, "2k", "cpu", 1, None))
    assert pickle.loads(pickle.dumps(coding)) == coding
    assert hash(coding.encoding) == hash(Encoding(Picture(bitrate=100), "2k", "cpu"))


def test_of_shares_the_options_out_by_name(tmp_path):
    job = MasterJob.of(_Untouchable(), 3, tmp_path / "out", title="T", kind="test",
                       format="imf", fps=25, codec="htj2k", bits=10, lossless=True,
                       gpus=None, rate_on_gpu=True)
    assert job.input == InputFrames(job.input.read, 3) and job.out == tmp_path / "out"
    assert job.composition == Composition("T", "test")
    assert job.picture == Picture("imf", fps=25, codec="htj2k", bits=10, lossless=True)
    assert job.protection == Protection()
    assert job.compute == Compute(gpus=None, rate_on_gpu=True)
    with pytest.raises(TypeError, match="not an option of a mastering job: stats"):
        MasterJob.of(_Untouchable(), 3, tmp_path / "out", title="T", stats={})


def _mistakes(tmp_path: Path) -> dict:
    """Name -> (options, error, words)."""
    short = write_wav(tmp_path / "short.wav", tones(20000, 6))
    (tmp_path / "exists.txt").write_text("keep me")
    return {
        "format": (dict(format="mxf"), ValueError, "format must be dcp or imf"),
        "profile": (dict(profile="8k"), ValueError, "profile must be 2k or 4k"),
        "rate": (dict(fps=23), ValueError, "23 fps is not a DCI 2K rate"),
        "colorspace": (dict(colorspace="srgb"), ValueError, "colorspace must be one of"),
        "container": (dict(container="wide"), ValueError, "container must be auto"),
        "dcp sampling": (dict(sampling="ycbcr422"), ValueError, "apply to --format imf"),
        "imf rate": (dict(format="imf", fps=48), ValueError, "48 fps is not an IMF rate"),
        "imf 4:4:4": (dict(format="imf", sampling="ycbcr444"), ValueError,
                      "does not allow 12-bit Y'CbCr 4:4:4"),
        "imf reels": (dict(format="imf", frames=48, reel_length=1), ValueError, "one segment"),
        "imf keys": (dict(format="imf", keys=tmp_path / "k.txt"), ValueError, "one segment"),
        "imf subtitles": (dict(format="imf", subtitles=SimpleNamespace(duration=3)), ValueError,
                          "subtitles in IMF packages are not supported yet"),
        "imf metadata": (dict(format="imf", metadata=CplMetadata(ratings=(Rating("BBFC", "U"),))),
                         ValueError, "an IMF CPL's are not supported yet"),
        "marker past the end": (dict(metadata=CplMetadata(markers=(Marker("FFEC", 3),))), ValueError,
                                "marker FFEC at frame 3 is past the composition's last frame"),
        "length": (dict(frames=0), ValueError, "--frames must be at least 1"),
        "short reel": (dict(frames=47, reels=(24, 23)), ValueError, "reel 2 lasts 23 frames"),
        "reels": (dict(frames=60, reels=(24, 24)), ValueError,
                  "reels of 48 frames for a composition of 60"),
        "reel length": (dict(reels=(24,), reel_length=1), ValueError, "not both"),
        "reel under a second": (dict(frames=60, reel_length=Fraction(1, 2)), ValueError,
                                "at least one second"),
        "subtitles": (dict(subtitles=SimpleNamespace(duration=10)), ValueError,
                      "subtitles prepared for 10 frames; the composition has 3"),
        "processes": (dict(processes=0), ValueError, "processes must be at least 1"),
        "cluster": (dict(cluster="nowhere://x"), ValueError, "want local, local:N"),
        "cluster and processes": (dict(cluster="local", processes=2), ValueError,
                                  "exclude each other"),
        "key file": (dict(keys=tmp_path / "exists.txt"), MediaError, "exists already"),
        "key folder": (dict(keys=tmp_path / "no" / "k.txt"), MediaError, "does not exist"),
        "sound": (dict(frames=24, sound=open_sound([short])), MediaError,
                  "shorter than the picture"),
    }


def test_a_bad_job_is_refused_before_any_frame_is_read(tmp_path):
    for name, (options, error, words) in _mistakes(tmp_path).items():
        with pytest.raises(error, match=words):
            MasterJob.of(_Untouchable(), 3, tmp_path / "out", title="t", **options)
            pytest.fail(f"{name}: made")
    with pytest.raises(ValueError, match="no input frames"):
        MasterJob.of(_Untouchable(), 0, tmp_path / "out", title="t")
    # frames read elsewhere must pickle: a lambda does not
    for options in (dict(processes=2), dict(cluster="local:1")):
        with pytest.raises(ValueError, match="get_frame must pickle"):
            MasterJob.of(lambda i: pytest.fail("a frame was read"), 3, tmp_path / "out",
                         title="t", **options)
    assert not (tmp_path / "out").exists()


def test_a_job_is_checked_again_when_a_part_is_replaced(tmp_path):
    from dataclasses import replace
    job = MasterJob.of(_Untouchable(), 48, tmp_path / "out", title="t", reel_length=1)
    assert job.reel_lengths == (24, 24)
    with pytest.raises(ValueError, match="one segment"):
        replace(job, picture=Picture(format="imf"))


def _job(argv: list[str]):
    from cinegpu.player.commands.master import _job
    return _job(build_parser().parse_args(["master", *argv]))


def test_the_command_lines_options_map_onto_the_job(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _folder(tmp_path / "in", 30)
    job = _job(["in", "-o", "out", "--title", "T", "--kind", "trailer", "--profile", "4k",
                "--fps", "25", "--bitrate", "100", "--colorspace", "p3d65", "--container",
                "scope", "--frames", "60", "--reel-length", "1", "--encrypt", "--keys",
                "k.txt", "--no-sign", "--workers", "3", "--processes", "2", "--gpus", "2",
                "--no-mps", "--backend", "cpu"])
    assert isinstance(job.input.read, ImageFrames) and job.input.count == 30
    assert job.input.read.limit == (8192, 4320) and job.input.read.size is None
    assert job.out == "out"
    assert job.picture == Picture("dcp", "4k", Fraction(25), 100.0, "p3d65", "scope")
    assert job.composition == Composition("T", "trailer", 60, None, Fraction(1))
    assert job.reel_lengths == (25, 35)
    assert job.protection == Protection(keys="k.txt")          # the signer comes last
    assert job.compute == Compute("cpu", 3, 2, 2, None, False, None)
    imf = _job(["in", "-o", "imf", "--title", "T", "--format", "imf", "--codec", "htj2k",
                "--bits", "12", "--lossless", "--sampling", "ycbcr422", "--cluster", "local:2"])
    assert imf.picture == Picture("imf", codec="htj2k", bits=12, lossless=True,
                                  sampling="ycbcr422")
    assert imf.input.read.limit == (4096, 3112)
    assert imf.compute == Compute(cluster="local:2")
    # several folders: one reel each; one short input: repeated to last a second
    _folder(tmp_path / "more", 24)
    two = _job(["in", "more", "-o", "two", "--title", "T"])
    assert two.composition.reels == (30, 24) and two.length == 54
    _folder(tmp_path / "still", 1)
    assert _job(["still", "-o", "s", "--title", "T"]).length == 24
    assert capsys.readouterr().err == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "more", "still"]


def test_the_default_bitrate_is_the_level_info_warns_above():
    """Issue 51 item 6: a DCP's default rate is :data:`dci.FRAME_BITRATE_SAFE` (230 Mbit/s),
    the one figure ``cinegpu info`` warns above and ``--help`` names; IMF keeps its own."""
    assert dci.FRAME_BITRATE_SAFE == 230_000_000 < dci.FRAME_BITRATE == 250_000_000
    for profile in ("2k", "4k"):
        enc = FrameEncoders(profile=profile, fps=24, bitrate=None, colorspace="rec709",
                            backend="cpu")
        assert enc.bitrate == dci.FRAME_BITRATE_SAFE
    assert FrameEncoders(profile="2k", fps=24, bitrate=250, colorspace="rec709",
                         backend="cpu").bitrate == 250e6
    assert FrameEncoders(profile="imf-2k", fps=24, bitrate=None, colorspace="rec709",
                         backend="cpu").bitrate is None
    for fps in (24, 48, 60):
        assert frame_caps(Fraction(fps))[1] == dci.bytes_per_frame(dci.FRAME_BITRATE_SAFE, fps)
    master_help = build_parser()._subparsers._group_actions[0].choices["master"].format_help()
    assert "DCP default: the safe 230" in " ".join(master_help.split())


def test_a_bitrate_above_the_safe_level_is_coded_with_a_warning(tmp_path, monkeypatch, capsys):
    assert Picture().bitrate_warning() is None and Picture(bitrate=230).bitrate_warning() is None
    assert Picture(format="imf", bitrate=400).bitrate_warning() is None
    warning = Picture(bitrate=250).bitrate_warning()
    assert warning.startswith("--bitrate 250 Mbit/s is above the safe 230 Mbit/s (the default)")
    assert "coded at the cap, 250" in Picture(bitrate=300).bitrate_warning()
    monkeypatch.chdir(tmp_path)
    _folder(tmp_path / "in", 2)
    job = _job(["in", "-o", "out", "--title", "T", "--bitrate", "250"])
    assert job.picture.bitrate == 250
    assert capsys.readouterr().err == f"cinegpu master: warning: {warning}\n"
    _job(["in", "-o", "out", "--title", "T"])
    assert capsys.readouterr().err == ""


@pytest.mark.slow   # two 2K frames filled to their budget: a few seconds on the CPU
def test_a_frame_at_the_default_rate_is_within_infos_warning_level():
    noise = np.random.default_rng(1).random((1080, 1998, 3), dtype=np.float32)
    sizes, verdicts = [], []
    for bitrate in (None, 250):
        with FrameEncoders(profile="2k", fps=24, bitrate=bitrate, colorspace="rec709",
                           backend="cpu") as enc:
            sizes.append(len(enc.encode(noise)))
        verdicts.append(size_lines([(sizes[-1], 1)], Fraction(24))[1])
    safe = dci.bytes_per_frame(dci.FRAME_BITRATE_SAFE, 24)
    assert 0.99 * safe < sizes[0] <= safe < sizes[1] <= dci.bytes_per_frame(dci.FRAME_BITRATE, 24)
    assert verdicts[0].endswith(": within the cap"), verdicts
    assert verdicts[1].endswith("0 frame(s) over the cap, 1 above the 230 Mbit/s warning level")


def test_the_progress_bar_names_the_film_not_a_cut_naming_convention_title():
    """The bar's label (issue 50, 8): a Digital Cinema Naming Convention title by its film title,
    a long plain title cut at a word with an ellipsis."""
    from cinegpu.jobs.demo import TITLE
    from cinegpu.jobs.mastering import BAR_TITLE, bar_title

    assert bar_title(TITLE) == "cinegpu-Demo"
    assert bar_title("MyFilm_FTR-1_F-185_EN-XX_US-R_51_2K_ST_20260101_FAC_SMPTE_OV") == "MyFilm"
    long = "A very long feature title that goes on and on"
    assert bar_title(long) == "A very long feature title\u2026" and len(bar_title(long)) <= BAR_TITLE
    assert bar_title("x" * 40) == "x" * (BAR_TITLE - 1) + "\u2026"
    assert bar_title("Short_title") == "Short_title"


def test_stereo_input_interleaves_the_eyes_and_needs_equal_lengths():
    """Image 2n is frame n of the left eye, 2n + 1 of the right; the job's length counts
    frames (pairs); eyes of unlike lengths are refused."""
    left = InputFrames(lambda i: np.full((2, 2, 3), i, np.float32), 3)
    right = InputFrames(lambda i: np.full((2, 2, 3), 10 + i, np.float32), 3)
    both = InputFrames.stereo(left, right)
    assert both.count == 6 and [both.read(i)[0, 0, 0] for i in range(6)] == [0, 10, 1, 11, 2, 12]
    job = MasterJob(both, "out", Composition(title="t"), Picture(stereoscopic=True))
    assert job.length == 3 and job.picture.eyes == 2
    assert job.picture.coded_bitrate == 115.0          # each eye half the safe 230 Mbit/s
    with pytest.raises(ValueError, match="the left eye has 3 frames, the right 2"):
        InputFrames.stereo(left, InputFrames(right.read, 2))
