"""Ordinary mistakes on the command line: one line on stderr naming the problem, exit code 2,
no traceback, found before any long work (issue: the first ten minutes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image

from cinegpu.media.security.certificates import make_chain, write_chain
from cinegpu.media.security.content_keys import TrackKey, write_key_file
from conftest import DCP_SAMPLES, SAMPLE, have_cuda
from helpers.cli import cinegpu
from helpers.kdm_build import private_copy

MISTAKES = [
    # (arguments, words the one line must contain)
    (["play", "--fps", "0", SAMPLE, "--headless"], "above 0"),
    (["play", "--fps", "-3", SAMPLE, "--headless"], "above 0"),
    (["play", "--fps", "fast", SAMPLE, "--headless"], "want a rate"),
    (["play", SAMPLE, "--headless", "--screenshot", "99:x.png"], "past the last frame"),
    (["play", SAMPLE, "--headless", "--screenshot", "0:{tmp}/nowhere/x.png"], "nowhere does not exist"),
    (["play", SAMPLE, "--headless", "--screenshot", "0:{tmp}/x.jpg"], "a screenshot is a .png file"),
    (["check", "{tmp}/missing"], "no such file or folder"),
    (["play", "{tmp}/missing", "--headless"], "no such file or folder"),
    (["play", "{png}", "--headless"], "a PNG image"),
    (["serve", "--fps", "0", "--library", "{tmp}"], "above 0"),
    (["demo", "--frames", "0"], "at least 1"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--workers", "0"], "at least 1"),
    (["bench", "--frames", "-1"], "at least 1"),
    (["bench", "--gpus", "0"], "at least 1"),
    (["bench", "--workers", "0", "--gpus", "2"], "--gpus needs worker processes"),
    (["bench", "--backend", "cpu", "--workers", "1", "--gpus", "2"], "several GPUs need the cuda back end"),
    (["bench", "--backend", "cpu", "--tier1", "gpu"], "--tier1 gpu needs the cuda back end"),
    (["play", SAMPLE, "--headless", "--backend", "cpu", "--tier1", "gpu"], "--tier1 gpu needs the cuda back end"),
    (["serve", "--library", "{tmp}", "--backend", "cpu", "--tier1", "gpu"], "--tier1 gpu needs the cuda back end"),
    (["play", SAMPLE, "--headless", "--tier1", "fpga"], "invalid choice"),
    (["play", SAMPLE, "--headless", "--stereo", "quad-buffer"],
     "--stereo quad-buffer: this display offers no quad-buffered stereo"),
    (["serve", "--library", "{tmp}", "--headless", "--stereo", "quad-buffer"],
     "--stereo quad-buffer: this display offers no quad-buffered stereo"),
    (["info", "{png}"], "a PNG image"),
    (["info", "{tmp}/mix.wav"], "an RF64 (WAV) file"),
    (["info", "{tmp}/missing"], "no such file or folder"),
    (["decode", "{tmp}/missing.j2c", "-o", "{tmp}/o.png"], "no such file"),
    (["decode", SAMPLE, "-o", "{tmp}/o.jpg"], "unknown image type"),
    (["decode", SAMPLE, "-o", "{tmp}/o.png", "-r", "-1"], "0 or more"),
    (["nosuchcommand"], "invalid choice"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "a\x07b"], "U+0007"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", " "], "must not be empty"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--marker", "FFXX=00:00:01:00"],
     "'FFXX' is not a standard marker"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--marker", "FFEC=00:00:01:24"],
     "frames to 23 at 24 fps"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--rating", "PG-13"], "--rating wants AGENCY:LABEL"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--content-version", "v2"],
     "--content-version wants ID,LABEL"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--isdcf", "type=XYZ"], "--isdcf type"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--stereo"], "--stereo takes two INPUTs"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--caption-language", "en"], "--caption-language needs --captions"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--gain", "40"], "a gain from -60 to +30 dB"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--channel-map", "L=1,X=2"], "no channel of 5.1 or 7.1"),
    (["play", SAMPLE, "--headless", "--stereo", "anaglyph"], "the composition is 2D"),
    (["master", "{tmp}", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--stereo", "--profile", "4k"],
     "stereoscopic DCPs in 2K only"),
    (["master", "{tmp}", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--stereo", "--format", "imf"],
     "stereoscopic IMF packages are not supported yet"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--isdcf", "colour=red"], "--isdcf colour"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--standard", "interop", "--fps", "25"],
     "an Interop DCP runs at 24 or 48 fps, not 25"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--standard", "interop", "--encrypt", "--keys",
      "{tmp}/keys.txt"], "encrypted or signed Interop DCPs are not supported yet"),
    (["master", "{tmp}", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--standard", "interop", "--stereo"],
     "3D Interop DCPs are not written"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--standard", "interop", "--format", "imf"],
     "--standard interop is for DCPs"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--crop", "0,140,0"], "--crop wants L,T,R,B"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--crop", "0,-1,0,0"], "cannot be negative"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--scale", "stretch"], "invalid choice"),
    (["master", "{tmp}", "-o", "{tmp}/out", "--title", "T", "--format", "imf", "--scale", "fill"],
     "--scale is for DCPs"),
]
if not have_cuda():
    MISTAKES += [(["play", SAMPLE, "--headless", "--backend", "cuda"], "CUDA"),
                 # refused before the media is even opened: the path's absence is not what it names
                 (["play", "{tmp}/missing", "--headless", "--interop", "surface"],
                  "--interop surface cannot work here"),
                 (["play", "{tmp}/missing", "--headless", "--interop", "pbo"], "--interop pbo cannot work here"),
                 (["decode", SAMPLE, "-o", "{tmp}/o.png", "--backend", "cuda"], "CUDA")]


@pytest.mark.parametrize("args,words", MISTAKES, ids=lambda v: " ".join(map(str, v))[:60]
                         if isinstance(v, list) else None)
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_a_mistake_is_one_line_and_exit_2(tmp_path, args, words):
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (tmp_path / "mix.wav").write_bytes(b"RF64\xff\xff\xff\xffWAVEds64" + bytes(64))
    args = [str(a).format(tmp=tmp_path, png=png) for a in args]
    r = cinegpu(*args, cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert len(lines) == 1 and words in lines[0], r.stderr


ENCRYPTED = DCP_SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted"
ENCRYPTED_CPL = ENCRYPTED / "cpl_6affb8ee-0020-4dff-a53c-17652f6358ab.xml"
KDM = DCP_SAMPLES / "libdcp-kdm" / "target.pem.crt.de5d4eba-e683-41ca-bdda-aa4ad96af3f4.kdm.xml"
RECIPIENT_KEY = DCP_SAMPLES / "libdcp-kdm" / "private.key"
KDM_MAKE = ["kdm", "make", "--keys", "{tmp}/keys", "--not-before", "now", "--not-after", "+2d", "-o", "{tmp}/kdm.xml"]
DEVICE = "bytes (1 MiB) cinegpu reads (not a regular file"
#: files a user names given as /dev/zero, whose st_size is 0 (issue 51, item 4: each was read until
#: MemoryError): (arguments, words the one line must contain)
DEVICE_FILES = [
    (["kdm", "inspect", "/dev/zero"], f"/dev/zero: KDM of more than the 1048576 {DEVICE}"),
    (["kdm", "inspect", KDM, "--key", "/dev/zero"], "/dev/zero: the private key is not a regular file"),
    (["play", ENCRYPTED, "--headless", "--kdm", "/dev/zero", "--key", "{tmp}/recipient/private.key"],
     f"KDM of more than the 1048576 {DEVICE}"),
    (["play", ENCRYPTED, "--headless", "--kdm", KDM, "--key", "/dev/zero"], "/dev/zero: the private key is not a regular file"),
    (["play", "/dev/zero", "--headless"], "/dev/zero: not a regular file or a folder"),
    ([*KDM_MAKE, "--cpl", "/dev/zero", "--recipient", "{tmp}/chain/leaf.signed.pem", "--signer-key", "{tmp}/chain/leaf.key",
      "--signer-chain", "{tmp}/chain/chain.pem"], "/dev/zero: XML document of more than the 8388608 bytes (8 MiB)"),
    ([*KDM_MAKE, "--cpl", ENCRYPTED_CPL, "--recipient", "/dev/zero", "--signer-key", "{tmp}/chain/leaf.key",
      "--signer-chain", "{tmp}/chain/chain.pem"], f"/dev/zero: PEM file of more than the 1048576 {DEVICE}"),
    ([*KDM_MAKE, "--cpl", ENCRYPTED_CPL, "--recipient", "{tmp}/chain/leaf.signed.pem", "--signer-key", "/dev/zero",
      "--signer-chain", "{tmp}/chain/chain.pem"], "/dev/zero: the private key is not a regular file"),
    ([*KDM_MAKE, "--cpl", ENCRYPTED_CPL, "--recipient", "{tmp}/chain/leaf.signed.pem", "--signer-key",
      "{tmp}/chain/leaf.key", "--signer-chain", "/dev/zero"], f"/dev/zero: PEM file of more than the 1048576 {DEVICE}"),
    ([*KDM_MAKE, "--cpl", ENCRYPTED_CPL, "--recipient", "{tmp}/chain/leaf.signed.pem", "--signer-key",
      "{tmp}/chain/leaf.key", "--signer-chain", "{tmp}/chain/chain.pem", "--trusted-device", "/dev/zero"],
     f"/dev/zero: PEM file of more than the 1048576 {DEVICE}"),
    (["master", "{tmp}/frames", "-o", "{tmp}/out", "--title", "T", "--subtitles", "{tmp}/s.srt",
      "--subtitle-font", "/dev/zero"], "/dev/zero: subtitle font of more than the 67108864 bytes (64 MiB) cinegpu reads"),
    (["master", "{tmp}/frames", "-o", "{tmp}/out", "--title", "T", "--subtitles", "/dev/zero"],
     "/dev/zero: XML document of more than the 8388608 bytes (8 MiB)"),
    (["master", "{tmp}/frames", "-o", "{tmp}/out", "--title", "T", "--audio", "/dev/zero"], "not a RIFF/WAVE file"),
    (["info", "/dev/zero"], "/dev/zero: not a regular file or a folder"),
    (["decode", "/dev/zero", "-o", "{tmp}/o.png"], "/dev/zero: not a file"),
]


@pytest.fixture(scope="module")
def named_files(tmp_path_factory) -> Path:
    """A chain and its leaf key, a key file for libdcp's encrypted CPL, a frame folder and an SRT file."""
    d = tmp_path_factory.mktemp("named")
    write_chain(make_chain("cinegpu.test", "signer"), d / "chain")
    keys = [("MDIK", "ac8d301c-e5d9-4343-b6f3-ba2668adbe56"), ("MDAK", "7ab6c77b-6648-44b9-8549-a5290ada6238")]
    write_key_file(d / "keys", [TrackKey(t, i, os.urandom(16)) for t, i in keys], "6affb8ee-0020-4dff-a53c-17652f6358ab")
    (d / "frames").mkdir()
    Image.new("RGB", (1998, 1080)).save(d / "frames" / "f0.png")
    (d / "s.srt").write_text("1\n00:00:00,000 --> 00:00:00,040\nhi\n")
    if RECIPIENT_KEY.is_file():     # the shared copy is mode 444, which the key check refuses
        private_copy(RECIPIENT_KEY, d / "recipient")
    return d


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
@pytest.mark.parametrize("args,words", DEVICE_FILES,
                         ids=[" ".join(str(a) for a in args if "/" not in str(a) or a == "/dev/zero")[:60]
                              for args, _ in DEVICE_FILES])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_a_device_named_as_a_file_is_one_line_and_exit_2(named_files, args, words):
    """Each is refused within the time a mistake takes (not read until memory runs out)."""
    if any(str(a).startswith(str(DCP_SAMPLES)) for a in args) and not DCP_SAMPLES.is_dir():
        pytest.skip("../shared/dcp-samples is absent")
    r = cinegpu(*[str(a).format(tmp=named_files) for a in args], cwd=named_files, timeout=60)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert len(lines) == 1 and words in lines[0], r.stderr


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_serve_refuses_a_token_on_the_command_line(tmp_path):
    """Issue 51, item 5: ``--token T`` is readable in /proc/PID/cmdline; refused, naming the safe ways."""
    r = cinegpu("serve", "--library", tmp_path, "--headless", "--token", "cmdline-token-0123", timeout=60)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "$CINEGPU_SERVE_TOKEN" in lines[0] and "--token-file" in lines[0] and "/proc/PID/cmdline" in lines[0]
    assert "--insecure-token-on-command-line" in lines[0]
    r = cinegpu("serve", "--library", tmp_path, "--headless", "--insecure-token-on-command-line", timeout=60)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "cinegpu serve: --insecure-token-on-command-line without --token"], r.stderr


def test_version_and_examples():
    r = cinegpu("--version")
    assert r.returncode == 0 and r.stdout.startswith("cinegpu ")
    r = cinegpu("--help")
    assert r.returncode == 0 and "examples:" in r.stdout and "cinegpu play" in r.stdout


def test_a_failing_peer_is_reported_as_failing(tmp_path):
    """bench --compare goes on when a peer decoder fails on a frame, and names the frame."""
    import shutil

    from cinegpu.bench import decode_peers as peers

    if not shutil.which("opj_decompress"):
        pytest.skip("opj_decompress is not installed")
    good, bad = tmp_path / "good.j2c", tmp_path / "bad.j2c"
    good.write_bytes(SAMPLE.read_bytes())
    bad.write_bytes(SAMPLE.read_bytes()[:200])     # the main header, then nothing
    ok = peers.opj_decompress([good])
    assert ok.frames == 1 and ok.seconds > 0 and not ok.note
    failed = peers.opj_decompress([good, bad])
    assert failed.frames == 0 and "failed on bad.j2c (frame 1): exit code" in failed.note


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_bench_compare_names_the_peers_it_left_out(tmp_path):
    """bench --compare says which peers it left out for not being installed (nvJPEG2000's rows
    without nvImageCodec's package among them), in one line after the rows (issue 54, item 5)."""
    import subprocess
    import sys

    from helpers.cli import CLI

    try:
        from nvidia import nvimgcodec  # noqa: F401  (probe: is nvImageCodec installed)
        have_nvimgcodec = True
    except ImportError:
        have_nvimgcodec = False
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))      # no peer CLI on it
    r = subprocess.run([*CLI, "bench", str(SAMPLE), "--compare", "--workers", "0", "--peer-threads", "1",
                        "--frames", "1", "--repeat", "1"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("left out, not installed here: ")]
    assert len(line) == 1, r.stdout
    assert "opj_decompress, grk_decompress" in line[0]
    assert ("nvJPEG2000 (nvImageCodec's Python package" in line[0]) != have_nvimgcodec
    assert line[0].count("nvJPEG2000") <= 1 and line[0].count("opj_decompress") == 1


def test_peers_are_timed_on_a_bounded_sample(tmp_path, monkeypatch):
    """A peer runs on at most SAMPLE_FRAMES of the frames, starting none once its run has
    taken BUDGET_S seconds (a --repeat 1000 benchmark must not wait minutes for it); one that
    cannot start is reported as such, in one line."""
    from cinegpu.bench import decode_peers as peers

    files = [tmp_path / f"f{k}.j2c" for k in range(200)]
    ran = []
    done, _ = peers._run_files(lambda f, o: ran.append(f) or ["true"], files, 1)
    assert done == peers.SAMPLE_FRAMES and len(ran) == peers.SAMPLE_FRAMES + 1   # and the warm-up
    done, seconds = peers._run_files(lambda f, o: ["sleep", "0.2"], files, 1, budget_s=0.5)
    assert 1 <= done < 10 and seconds < 2
    gone = peers._timed("nothing", lambda f, o: [str(tmp_path / "no-such-tool")], files, 1)
    assert gone.frames == 0 and gone.note.startswith("could not start: ")


def test_encoder_benchmark_reports_a_failing_peer_in_one_line(tmp_path, capsys):
    """bench.encode_ht goes on past a peer encoder that fails, cannot start or runs too long,
    saying so in one line (no traceback)."""
    import subprocess

    from cinegpu.bench import encode_ht

    def fails():
        subprocess.run(["sh", "-c", "echo broken input >&2; exit 3"], check=True, capture_output=True)

    def missing():
        subprocess.run([str(tmp_path / "no-such-encoder")], check=True, capture_output=True)

    def slow():
        subprocess.run(["sleep", "2"], check=True, capture_output=True, timeout=0.1)

    for run in (fails, missing, slow):
        encode_ht._peer_row("lossless", "peer", run, [])
    out = capsys.readouterr().out.splitlines()
    assert [line.split("peer", 1)[1].strip().split(":")[0] for line in out] == \
           ["failed", "could not start", "failed"]
    assert "exit code 3: broken input" in out[0] and "ran past 0 s" in out[2]


def test_serve_on_a_port_in_use_names_it_and_suggests_listen(tmp_path):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        r = cinegpu("serve", "--library", tmp_path, "--no-token", "--headless", "--listen", f"127.0.0.1:{port}")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"port {port} on 127.0.0.1 is in use" in r.stderr and "--listen 127.0.0.1:PORT" in r.stderr


def test_check_draws_no_progress_bar_into_a_redirected_stderr():
    dcp = DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k"
    if not dcp.is_dir():
        pytest.skip(f"{dcp} is absent")
    r = cinegpu("check", dcp)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK" in r.stdout and "hashing" not in r.stderr and "\r" not in r.stderr


def test_decimal_ntsc_rates_read_as_ffmpeg_reads_them():
    from fractions import Fraction

    from cinegpu.player.commands.args import positive_rate
    for text, want in [("23.976", Fraction(24000, 1001)), ("23.98", Fraction(24000, 1001)),
                       ("29.97", Fraction(30000, 1001)), ("59.94", Fraction(60000, 1001)),
                       ("24", Fraction(24)), ("24.0", Fraction(24)), ("25", Fraction(25)),
                       ("12.5", Fraction(25, 2)), ("30000/1001", Fraction(30000, 1001))]:
        assert positive_rate(text) == want, text


@pytest.mark.slow
def test_bench_compare_runs_openjph_on_htj2k_frames_only(tmp_path):
    """OpenJPH decodes HTJ2K alone: bench --compare times ``ojph_expand`` on HT frames and leaves
    it out for Part-1 frames."""
    import shutil

    from helpers.conformance import CONFORMANCE

    ht = CONFORMANCE / "htj2k" / "codestreams" / "ds0_ht_01_b11.j2k"
    if not shutil.which("ojph_expand") or not ht.exists():
        pytest.skip("ojph_expand or the HTJ2K conformance streams are absent")
    r = cinegpu("bench", ht, "--compare", "--workers", "0", "--peer-threads", "1", "--frames", "1", "--repeat", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ojph_expand (1 thread x 1 proc):" in r.stdout and "fps" in r.stdout.split("ojph_expand")[1]
    r = cinegpu("bench", SAMPLE, "--compare", "--workers", "0", "--peer-threads", "1", "--frames", "1", "--repeat", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ojph_expand" not in r.stdout


def test_master_refuses_a_rate_before_its_banner(tmp_path):
    """A rate DCI does not have is refused before anything is read or printed (issue 50, 5)."""
    import numpy as np
    import tifffile

    stills = tmp_path / "stills"
    stills.mkdir()
    for i in range(2):
        tifffile.imwrite(stills / f"f{i}.tif", np.full((54, 96, 3), 9000, np.uint16), photometric="rgb")
    r = cinegpu("master", stills, "-o", tmp_path / "out", "--title", "T", "--fps", "23.976", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr.strip() == "cinegpu master: 24000/1001 fps is not a DCI 2K rate (24, 25, 30, 48, 50, 60)"
    assert not (tmp_path / "out").exists()


def test_every_argument_has_help_and_a_named_value():
    """``--help`` explains every argument and names what each option takes (N, FILE, RATE ...),
    not the bare ``--workers WORKERS`` argparse makes up (issue 50, 8)."""
    import argparse

    from cinegpu.player.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, parser in sub.choices.items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help:
                missing.append(f"{name} {action.option_strings or action.dest}: no help")
            if action.option_strings and action.nargs != 0 and action.metavar is None and action.choices is None:
                missing.append(f"{name} {action.option_strings}: shown as {action.dest.upper()}")
    assert not missing, missing
