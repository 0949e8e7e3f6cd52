"""Mastering with encoder processes (:mod:`cinegpu.jobs.frame_coders`): the same codestreams as
threads of one process, frames read in the processes, and every failure (a bad frame, an
encoder process that dies or cannot start, Ctrl-C, SIGTERM) one clear error with nothing left
behind.  The CPU encoder runs here; the GPU case is marked ``gpu``."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from cinegpu.bench.master import Sweep
from cinegpu.jobs.frame_coders import FrameFailed
from cinegpu.jobs.frame_encode import FrameEncoders
from cinegpu.jobs.master_job import Encoding, FrameCoding, InputFrames, MasterJob, Picture
from cinegpu.jobs.mastering import _processes, master
from cinegpu.media import MediaError
from cinegpu.media.errors import CorruptMedia, UnsupportedMedia
from cinegpu.media.images.frames import ImageFrames, list_frames
from helpers.cli import CLI
from helpers.mastering import DieOn, dpx_bytes, needs_encoder, package_codestreams, write_tiffs


@dataclass(frozen=True)
class _HoldFirst:
    """Frames of ``files``, except that reading frame 0 waits until ``flag`` exists (at most
    two minutes, so that a failing test cannot hang)."""

    files: ImageFrames
    flag: str

    def __call__(self, i: int):
        end = time.monotonic() + 120
        while i == 0 and not os.path.exists(self.flag) and time.monotonic() < end:
            time.sleep(0.01)
        return self.files(i)


@pytest.mark.slow
def test_next_takes_the_replies_already_waiting(tmp_path):
    """next() reads every reply already in the pipes, not only until the head frame is
    here: a process whose frame is coded no longer counts as holding it, so has_room lets
    the next frame go to it."""
    from multiprocessing.connection import wait

    import tifffile

    from cinegpu.jobs.frame_coders import CoderSetup, ProcessCoders
    for i in range(2):
        tifffile.imwrite(tmp_path / f"f{i}.tif", np.full((54, 96, 3), 9000 * (i + 1), np.uint16),
                         photometric="rgb")
    files = ImageFrames(tuple(str(tmp_path / f"f{i}.tif") for i in range(2)), (4096, 2160))
    encoding = Encoding(Picture(), "2k", "cpu")
    coders = ProcessCoders(lambda p: CoderSetup(FrameCoding(files, 96, 54, encoding), None, 1), 2)
    try:
        coders.submit(0)
        while 0 not in coders._done:
            coders._collect()                      # frame 0 coded and read back
        coders.submit(1)
        p = next(k for k in range(2) if coders._held[k])
        assert wait([coders._pool.conns[p]], timeout=100), "frame 1 was not coded in time"
        assert coders.in_flight == 2
        assert coders.next()                       # frame 0's codestream ...
        assert not coders._held[p] and 1 in coders._done   # ... and frame 1's reply taken
        assert coders.next()
    finally:
        coders.close()


@pytest.mark.slow
def test_a_slow_frame_at_the_head_does_not_stop_the_other_processes(tmp_path):
    """While the oldest frame is still being coded, the other processes go on: coded frames
    may wait for it beyond the processes' own window (the writer takes them in order), and
    they all come out in order once it is done."""
    import tifffile

    from cinegpu.decode import decode
    from cinegpu.jobs.frame_coders import CoderSetup, ProcessCoders
    total = 10
    src = tmp_path / "in"
    src.mkdir()
    for i in range(total):      # frame i: one grey level, rising with i
        tifffile.imwrite(src / f"f{i:04d}.tif", np.full((54, 96, 3), 4000 * (i + 1), np.uint16),
                         photometric="rgb")
    files = ImageFrames(tuple(map(str, list_frames(src))), (4096, 2160))
    flag = tmp_path / "go"
    encoding = Encoding(Picture(), "2k", "cpu")
    held = FrameCoding(_HoldFirst(files, str(flag)), 96, 54, encoding)
    coders = ProcessCoders(lambda p: CoderSetup(held, None, 1), 2)
    submitted, t0 = 0, time.monotonic()
    try:
        assert coders.window == 4 and coders.reorder == 4
        # frame 0 holds process 0; process 1 codes on until `reorder` frames wait for frame 0
        while len(coders._done) < coders.reorder:
            if coders.has_room():
                coders.submit(submitted)
                submitted += 1
            else:
                coders._collect()
        assert not flag.exists() and time.monotonic() - t0 < 100, "frame 0 was let go by its time limit"
        assert coders.in_flight > coders.window      # the old rule stopped at the window
        assert not coders.has_room()                  # and the waiting frames are bounded
        flag.touch()
        out = []
        while len(out) < total:
            while submitted < total and coders.has_room():
                coders.submit(submitted)
                submitted += 1
            out.append(coders.next().codestream)
    finally:
        coders.close(abort=True)
    levels = [int(decode(c)[1][27, 48]) for c in out]
    assert levels == sorted(levels) and len(set(levels)) == total, levels


# -- no processes started ---------------------------------------------------------------------
def test_frame_failure_crosses_back_as_the_same_kind():
    for exc in (CorruptMedia("/a/f7.tif", "frame 7: damaged image", 12),
                UnsupportedMedia(None, "frame 2: 9x9 pixels"), MediaError("x", "frame 1: y")):
        got = pickle.loads(pickle.dumps(FrameFailed.of(3, exc))).error()
        assert type(got) is type(exc) and str(got) == str(exc)
        assert (got.path, got.reason, got.offset) == (exc.path, exc.reason, exc.offset)
    assert type(FrameFailed(0, "ValueError", None, "r").error()) is MediaError   # not a media kind
    assert type(FrameFailed(0, "os", None, "r").error()) is MediaError


def test_how_many_processes(tmp_path, monkeypatch):
    from cinegpu.jobs import frame_encode
    enc = FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709", backend="cpu")
    files = ImageFrames(("a.tif", "b.tif"), (4096, 2160))
    assert _processes(None, enc, InputFrames(files, 2)) == 1    # CPU: threads
    monkeypatch.setattr(enc, "default_processes", lambda frames: 4)
    assert _processes(None, enc, InputFrames(files, 2)) == 2    # never more than the frames
    assert _processes(None, enc, InputFrames(files, 9)) == 4
    assert _processes(None, enc, InputFrames(lambda i: None, 9)) == 1   # a lambda cannot be sent
    assert _processes(3, enc, InputFrames(files, 9)) == 3
    # a job that asks for processes it cannot have is refused when it is made
    with pytest.raises(ValueError, match="get_frame must pickle"):
        MasterJob.of(lambda i: None, 9, tmp_path / "out", title="t", processes=3)
    with pytest.raises(ValueError, match="at least 1"):
        MasterJob.of(files, 9, tmp_path / "out", title="t", processes=0)
    # processes of 2 threads: one per core on one GPU, one per two cores on several (the
    # host bounds them there), at most 16 per GPU
    for cores, gpus, procs, threads in ((16, 1, 16, 2), (2, 1, 2, 2), (32, 2, 16, 2), (4, 2, 2, 2),
                                        (64, 1, 16, 2), (64, 4, 32, 2), (4, 4, 4, 2),
                                        (200, 4, 64, 2), (1, 1, 1, 1)):
        monkeypatch.setattr(frame_encode, "usable_cores", lambda: cores)
        enc = FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709",
                            backend="cpu", gpus=gpus)
        assert enc.default_processes() == 1
        assert enc.default_workers(2) == max(1, cores // 2)
        enc.backend = "cuda"
        assert (enc.default_processes(), enc.default_workers(enc.default_processes())) == \
            (procs, threads if procs > 1 else min(cores, 8 * gpus))
        assert enc.default_processes(frame_encode.PROCESS_MIN_FRAMES) == procs
        assert enc.default_processes(frame_encode.PROCESS_MIN_FRAMES - 1) == 1   # short job


def test_gpus_argument():
    from argparse import ArgumentTypeError

    from cinegpu.player.commands.args import gpu_count
    assert gpu_count("all") is None and gpu_count("ALL") is None and gpu_count("2") == 2
    for bad in ("0", "-1", "two"):
        with pytest.raises(ArgumentTypeError):
            gpu_count(bad)


def test_threads_of_this_process_get_the_reader_itself(tmp_path, monkeypatch):
    """One process: its coder threads are handed the input's reader (an ImageFrames), not a
    function of it, so that the upload seam takes image files and video frames by their own
    paths there too (jobs/frame_uploads.py: it recognises the reader)."""
    from cinegpu.jobs import mastering
    from cinegpu.media.images.frames import ImageFrames
    seen = []

    class Stop(Exception):
        pass

    def coders(encoders, read, *args):
        seen.append(read)
        raise Stop
    monkeypatch.setattr(mastering, "ThreadCoders", coders)
    src = write_tiffs(tmp_path / "in", 2)
    with pytest.raises(Stop):
        master(MasterJob.of_images(src, tmp_path / "out", title="t", processes=1, workers=1,
                                   backend="cpu"), progress=False)
    assert len(seen) == 1 and isinstance(seen[0], ImageFrames)
    assert not (tmp_path / "out").exists()


# -- encoder processes on the CPU -------------------------------------------------------------
@pytest.mark.slow
@needs_encoder
def test_processes_write_the_same_codestreams_as_threads(tmp_path):
    src = write_tiffs(tmp_path / "in", 5)
    timeline = []
    one = master(MasterJob.of_images(src, tmp_path / "threads", title="t", processes=1,
                                     workers=2, backend="cpu"),
                 progress=False, timeline=timeline).stats
    assert timeline == []                       # threads of this process: nothing recorded
    two = master(MasterJob.of_images(src, tmp_path / "procs", title="t", processes=2, workers=1,
                                     backend="cpu"),
                 progress=False, timeline=timeline).stats
    assert (one.processes, one.threads, two.processes, two.threads) == (1, 2, 2, 1)
    assert 0 < two.ready_s <= two.first_s <= two.total_s
    a, b = package_codestreams(tmp_path / "threads"), package_codestreams(tmp_path / "procs")
    assert len(a) == 5 and a == b
    # each frame's way through the processes, on one clock
    assert sorted(t.seq for t in timeline) == list(range(5))
    assert {t.process for t in timeline} <= {0, 1} and {t.device for t in timeline} == {None}
    assert all(0 < t.submitted <= t.began <= t.read <= t.ended <= t.received for t in timeline)
    # the thread's CPU time reading and coding, and the encoder's stages of each frame
    assert all(t.cpu[0] >= 0 and t.cpu[1] > 0 for t in timeline)
    assert all([name for name, _ in t.stages] == ["forward", "floor", "tier1", "rate+tier2"]
               and all(v >= 0 for _, v in t.stages) for t in timeline)


@pytest.mark.slow
@needs_encoder
def test_processes_fill_a_longer_composition_in_order(tmp_path):
    src = write_tiffs(tmp_path / "in", 3)
    master(MasterJob.of_images(src, tmp_path / "p", title="t", processes=2, workers=2,
                               backend="cpu", frames=7), progress=False)
    cs = package_codestreams(tmp_path / "p")
    assert len(cs) == 7 and cs[3:6] == cs[:3] and cs[6] == cs[0] and len(set(cs)) == 3


@pytest.mark.slow
@needs_encoder
@pytest.mark.parametrize("bad", ["corrupt", "size"])
def test_bad_frame_read_in_a_process_is_named(tmp_path, bad):
    src = write_tiffs(tmp_path / "in", 6)
    victim = src / "f0004.tif"
    if bad == "corrupt":
        victim.write_bytes(victim.read_bytes()[:300])
    else:
        import tifffile
        tifffile.imwrite(victim, np.zeros((20, 30, 3), np.uint16), photometric="rgb")
    with pytest.raises(MediaError) as info:
        master(MasterJob.of_images(src, tmp_path / "out", title="t", processes=2, workers=1,
                                   backend="cpu"), progress=False)
    assert info.value.path == str(victim) and info.value.reason.startswith("frame 4: ")
    assert isinstance(info.value, CorruptMedia if bad == "corrupt" else UnsupportedMedia)
    assert not (tmp_path / "out").exists() and sorted(os.listdir(tmp_path)) == ["in"]


@pytest.mark.slow
@needs_encoder
def test_an_encoder_process_that_dies_is_one_error(tmp_path):
    src = write_tiffs(tmp_path / "in", 6)
    files = ImageFrames(tuple(map(str, list_frames(src))), (4096, 2160))
    t0 = time.monotonic()
    with pytest.raises(MediaError, match=r"encoder process \d ended \(exit code -9\) while "
                                         r"coding frame\(s\) .*\b3\b"):
        master(MasterJob.of(DieOn(files, 3), 6, tmp_path / "out", title="t", processes=2,
                            workers=1, backend="cpu"), progress=False)
    assert time.monotonic() - t0 < 60
    assert sorted(os.listdir(tmp_path)) == ["in"]


def _segments_of_this_process() -> set[str]:
    folder = Path("/dev/shm")
    return {e.name for e in folder.iterdir() if e.name.startswith(f"cinegpu_{os.getpid()}_")} \
        if folder.is_dir() else set()


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_codestreams_come_back_through_slots_or_the_pipe(tmp_path):
    """Codestreams come back through each process's shared-memory slots, through the pipe
    when a codestream is larger than a slot (here some are, some not) or no slots were made
    (slot_bytes 0): the same bytes in the same order, every slot free again; the segments
    are gone after close, and after an abort."""
    from cinegpu.jobs.frame_coders import CoderSetup, ProcessCoders
    src = write_tiffs(tmp_path / "in", 8)
    files = ImageFrames(tuple(map(str, list_frames(src))), (4096, 2160))
    encoding = Encoding(Picture(), "2k", "cpu")
    before = _segments_of_this_process()

    def run(slot_bytes, frames=range(8)):
        coders = ProcessCoders(lambda p: CoderSetup(FrameCoding(files, 96, 54, encoding), None, 1),
                               1, slot_bytes=slot_bytes)
        try:
            made = [seg is not None for seg in coders._segments]
            got = []
            for i in frames:
                while not coders.has_room():
                    got.append(coders.next().codestream)
                coders.submit(i)
            while len(got) < len(frames):
                got.append(coders.next().codestream)
            assert [len(f) for f in coders._free] == [coders.capacity * m for m in made]  # free
            return got, made
        finally:
            coders.close()

    piped, made = run(0)
    assert made == [False]
    sizes = sorted(map(len, piped))
    assert sizes[0] < sizes[-1]
    for slot_bytes in (1 << 20, sizes[len(sizes) // 2]):     # all fit; about half fit
        got, made = run(slot_bytes)
        assert made == [True] and got == piped
    assert _segments_of_this_process() == before
    coders = ProcessCoders(lambda p: CoderSetup(FrameCoding(files, 96, 54, encoding), None, 1), 1)
    assert _segments_of_this_process() - before
    coders.submit(0)
    coders.close(abort=True)
    assert _segments_of_this_process() == before


@pytest.mark.slow
def test_an_encoder_process_that_ended_while_idle_is_one_error(tmp_path):
    """A frame handed to a process that has ended (its pipe broken) is the same MediaError,
    not an OSError."""
    from cinegpu.jobs.frame_coders import CoderSetup, ProcessCoders
    src = write_tiffs(tmp_path / "in", 2)
    files = ImageFrames(tuple(map(str, list_frames(src))), (4096, 2160))
    encoding = Encoding(Picture(), "2k", "cpu")
    coders = ProcessCoders(lambda p: CoderSetup(FrameCoding(files, 96, 54, encoding), None, 1), 1)
    try:
        proc = coders._pool.procs[0]
        proc.kill()
        proc.join(timeout=10)
        with pytest.raises(MediaError, match=r"encoder process 0 ended \(exit code -9\)"):
            for i in range(2):            # the pipe may take a send before it breaks
                coders.submit(i)
            coders.next()
    finally:
        coders.close(abort=True)


@pytest.mark.slow
def test_an_encoder_process_that_cannot_start_is_one_error(tmp_path):
    src = write_tiffs(tmp_path / "in", 2)
    files = ImageFrames(tuple(map(str, list_frames(src))), (4096, 2160))
    from cinegpu.jobs.frame_coders import CoderSetup, ProcessCoders
    encoding = Encoding(Picture(), "8k", "cpu")   # no such profile
    with pytest.raises(MediaError, match="encoder process 0 could not start: ValueError"):
        ProcessCoders(lambda p: CoderSetup(FrameCoding(files, 96, 54, encoding), None, 1), 1)


@pytest.mark.slow
@needs_encoder
@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_ends_the_encoder_processes(tmp_path, sig, status):
    """The main process is signalled mid-run: its exit status, no package, and no encoder
    process left running (each is a child of the CLI's process)."""
    src = write_tiffs(tmp_path / "in", 40, size=(1024, 540))
    proc = subprocess.Popen(CLI + ["master", str(src), "-o", str(tmp_path / "out"), "--title",
                                   "t", "--backend", "cpu", "--processes", "2", "--workers", "1",
                                   "--quiet"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    children = []
    while time.monotonic() < deadline and len(children) < 2:   # both encoder processes up
        time.sleep(0.2)
        children = _children(proc.pid)
    time.sleep(2.0)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "no DCP written" in err
    assert not (tmp_path / "out").exists() and sorted(os.listdir(tmp_path)) == ["in"]
    for pid in children:
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists() or "Z" in _state(pid):
                break
            time.sleep(0.1)
        assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid), f"process {pid} left"


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


# -- on the GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_encoders_sleep_while_they_wait(gpu, monkeypatch):
    """A GPU FrameEncoders sets its device's primary context to sleep in waits
    (CU_CTX_SCHED_BLOCKING_SYNC) instead of spinning a core; CINEGPU_CUDA_WAITS=spin
    leaves CUDA's default."""
    driver = pytest.importorskip("cuda.bindings.driver")   # what sleep_on_waits sets it with
    from cinegpu.jobs.gpu_waits import sleep_on_waits
    monkeypatch.setenv("CINEGPU_CUDA_WAITS", "spin")
    assert sleep_on_waits([0]) is False
    monkeypatch.delenv("CINEGPU_CUDA_WAITS")
    enc = FrameEncoders(profile="dci-2k", fps=24, bitrate=None, colorspace="rec709",
                        backend="cuda", device=0)
    assert enc.sleeping_waits is True
    _, dev = driver.cuDeviceGet(0)
    _, flags, _ = driver.cuDevicePrimaryCtxGetState(dev)
    mask = int(driver.CUctx_flags.CU_CTX_SCHED_MASK)
    assert int(flags) & mask == int(driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC)
    enc.close()


@pytest.mark.gpu
def test_gpu_processes_write_the_same_codestreams_as_threads(tmp_path, gpu):
    src = write_tiffs(tmp_path / "in", 6, size=(2048, 1080))
    def run(out, **options):
        job = MasterJob.of_images(src, tmp_path / out, title="t", backend="cuda", **options)
        return master(job, progress=False).stats
    one = run("threads", processes=1, workers=3)
    many = run("procs", processes=3, workers=2)
    assert many.processes == 3 and one.processes == 1
    assert package_codestreams(tmp_path / "threads") == package_codestreams(tmp_path / "procs")
    # three processes on one GPU share it through the job's own MPS where there is one
    import shutil

    from cinegpu.jobs.mps import CONTROL, mps_serves
    assert many.mps == (shutil.which(CONTROL) is not None and not mps_serves(os.environ))
    assert not one.mps
    many = run("no-mps", processes=3, workers=2, mps=False)
    assert not many.mps
    assert package_codestreams(tmp_path / "no-mps") == package_codestreams(tmp_path / "procs")
    # rate control's hull on the GPU: the same codestreams, whichever way it is asked for
    for on_gpu in (True, False):
        run(f"rate-{on_gpu}", processes=3, workers=2, rate_on_gpu=on_gpu)
        assert package_codestreams(tmp_path / f"rate-{on_gpu}") == package_codestreams(tmp_path / "procs")


def test_bench_master_frames_are_files_of_their_own(tmp_path):
    """write_frames: the distinct images written, copied up to ``files`` files (each its own
    inode, so its own pages in the page cache), the other frames links to those in turn."""
    from cinegpu.bench.master import write_frames
    from cinegpu.media.images.frames import read_image
    images = [np.full((4, 6, 3), k, np.uint16) for k in range(2)]
    write_frames(tmp_path, images, 7, files=5)
    paths = sorted(tmp_path.iterdir())
    assert [p.name for p in paths] == [f"f{k:06d}.tif" for k in range(7)]
    assert [p.is_symlink() for p in paths] == [False] * 5 + [True] * 2
    assert len({p.stat().st_ino for p in paths[:5]}) == 5
    assert [int(read_image(p, stored=True)[0, 0, 0]) for p in paths] == [0, 1, 0, 1, 0, 0, 1]
    other = tmp_path / "few"
    other.mkdir()
    write_frames(other, images, 3)              # files below the images: one each
    assert [p.is_symlink() for p in sorted(other.iterdir())] == [False, False, True]


def test_bench_master_held_frames(tmp_path):
    """HeldFrames: frame i is the (i mod files)-th image as stored, read once; pickled it
    carries only the file names (an encoder process reads its own copy)."""
    import pickle

    from cinegpu.bench.master import HeldFrames, write_frames
    images = [np.full((4, 6, 3), 100 * k + 1, np.uint16) for k in range(2)]
    write_frames(tmp_path, images, 2)
    held = HeldFrames(sorted(tmp_path.iterdir()))
    assert [int(held(i)[0, 0, 0]) for i in range(5)] == [1, 101, 1, 101, 1]
    assert held(0) is held(2) and held(0).dtype == np.uint16
    blob = pickle.dumps(held)
    assert len(blob) < 1000
    again = pickle.loads(blob)
    assert again.files == held.files and not again.gpu and np.array_equal(again(1), images[1])


@pytest.mark.slow
@needs_encoder
def test_bench_master_codes_held_frames(capsys):
    """--code: each layout mastered once more from frames held in memory (on the CPU back
    end, host memory), printed as its own row."""
    from cinegpu.bench.master import main
    main(["--profile", "dci-2k", "--frames", "3", "--distinct", "2", "--layouts", "1x1", "2x1",
          "--backend", "cpu", "--peer-frames", "0", "--code"])
    out = capsys.readouterr().out
    assert "1 process(es) x 1 thread(s), frames held in memory:" in out and \
        "2 process(es) x 1 thread(s), frames held in memory:" in out
    assert out.count("s to finish the package") == 4


@pytest.mark.slow
@needs_encoder
def test_bench_master_copies_only_what_the_disk_holds(monkeypatch):
    """The frames are copied to --files files only as far as a quarter of the temporary
    folder's free space holds them; the rest are links."""
    from collections import namedtuple

    from cinegpu.bench import master as bench_master
    usage = namedtuple("usage", "total used free")
    w, h = 2048, 1080
    for free, want in ((4 * 2 * (w * h * 6 + 4096), 2), (10 ** 15, 3)):
        monkeypatch.setattr(bench_master.shutil, "disk_usage",
                            lambda path, free=free: usage(free, 0, free))
        row = bench_master.run_master(Picture(profile="dci-2k"), 3, 1, backend="cpu",
                                      sweep=Sweep(layouts=((1, 1),)), files=240)
        assert row["files"] == want and row["frames"] == 3


def test_bench_master_runs_each_layout_with_each_turns_and_ring(monkeypatch):
    """--turns and --ring: every layout mastered once per (turns, ring) pair with
    CINEGPU_MAPPED_TURNS and CINEGPU_RING_UPLOADS set for its encoder processes, and the
    environment as it was afterwards (None: left as it is)."""
    from cinegpu.bench import master as bench_master
    seen = []

    def fake(folder, tmp, *args, **kw):
        seen.append((folder.name, os.environ.get("CINEGPU_MAPPED_TURNS"),
                     os.environ.get("CINEGPU_RING_UPLOADS")))
        return {}
    monkeypatch.setattr(bench_master, "_master", fake)
    monkeypatch.setattr(bench_master, "synthetic_frame",
                        lambda w, h, seed=0: np.zeros((8, 16, 3), np.float32))
    monkeypatch.setenv("CINEGPU_RING_UPLOADS", "kept")
    monkeypatch.delenv("CINEGPU_MAPPED_TURNS", raising=False)
    row = bench_master.run_master(Picture(profile="dci-2k"), 2, 1, backend="cpu",
                                  sweep=Sweep(layouts=((2, 1),), turns=(None, 4),
                                              ring=(True, False, None)))
    runs = [s for s in seen if s[0] != "warm"]
    assert runs == [("in", None, "on"), ("in", None, "off"), ("in", None, "kept"),
                    ("in", "4", "on"), ("in", "4", "off"), ("in", "4", "kept")]
    assert [(r["turns"], r["ring"]) for r in row["runs"]] == \
        [(None, True), (None, False), (None, None), (4, True), (4, False), (4, None)]
    assert os.environ["CINEGPU_RING_UPLOADS"] == "kept" and \
        "CINEGPU_MAPPED_TURNS" not in os.environ
    # the reading alone to the GPU too, once per ring value (into memory once)
    reads = []
    monkeypatch.setattr(bench_master, "pick_backend", lambda backend: "cuda")
    monkeypatch.setattr(bench_master, "read_rate", lambda folder, k, gpu=False, cold=False: reads.append(
        (k, gpu, os.environ.get("CINEGPU_RING_UPLOADS"))) or (10.0 * len(reads), 1.0))
    row = bench_master.run_master(Picture(profile="dci-2k"), 2, 1, backend="cuda",
                                  sweep=Sweep(layouts=((2, 1),), read=(16,), ring=(True, False)))
    assert reads == [(16, False, "kept"), (16, True, "on"), (16, True, "off")]
    assert row["read_fps"] == {16: 10.0} and \
        row["read_gpu_fps"] == {(16, True, None): 20.0, (16, False, None): 30.0}


def test_bench_master_direct_and_cold(monkeypatch, tmp_path):
    """--direct: every layout and the reading alone to the GPU once per value, with
    CINEGPU_DIRECT_READS set (on: auto); --cold: the files dropped from the page cache
    before each master and in each reading alone (drop_files), links left alone."""
    from cinegpu.bench import master as bench_master
    seen, dropped = [], []

    def fake(folder, tmp, *args, **kw):
        seen.append((folder.name, os.environ.get("CINEGPU_DIRECT_READS")))
        return {}
    monkeypatch.setattr(bench_master, "_master", fake)
    monkeypatch.setattr(bench_master, "pick_backend", lambda backend: "cuda")
    monkeypatch.setattr(bench_master, "synthetic_frame",
                        lambda w, h, seed=0: np.zeros((8, 16, 3), np.float32))
    monkeypatch.setattr(bench_master, "read_rate", lambda folder, k, gpu=False, cold=False:
                        seen.append(("read", gpu, os.environ.get("CINEGPU_DIRECT_READS"), cold))
                        or (5.0, 2.0))
    real_drop = bench_master.drop_files
    monkeypatch.setattr(bench_master, "drop_files", lambda folder: dropped.append(len(seen)) or
                        real_drop(folder))
    monkeypatch.delenv("CINEGPU_DIRECT_READS", raising=False)
    row = bench_master.run_master(Picture(profile="dci-2k"), 3, 1, backend="cuda",
                                  sweep=Sweep(layouts=((2, 1),), read=(4,), direct=(True, False),
                                              cold=True))
    assert [s for s in seen if s[0] != "warm"] == [
        ("read", False, None, True), ("read", True, "auto", True), ("read", True, "off", True),
        ("in", "auto"), ("in", "off")]
    assert dropped == [5, 6]          # before each master (read_rate drops after warming up)
    assert [r["direct"] for r in row["runs"]] == [True, False]
    assert set(row["read_gpu_fps"]) == {(4, None, True), (4, None, False)}
    assert row["read_gpu_cpu_ms"] == {(4, None, True): 2.0, (4, None, False): 2.0}
    assert "CINEGPU_DIRECT_READS" not in os.environ
    from cinegpu.encode.direct_read import in_page_cache

    def cached(path) -> bool:
        fd = os.open(path, os.O_RDONLY)
        try:
            return in_page_cache(fd, 0, 1 << 16)
        finally:
            os.close(fd)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.raw").write_bytes(os.urandom(1 << 16))
    os.symlink("a.raw", folder / "b.raw")
    assert cached(folder / "a.raw")                  # just written
    real_drop(folder)
    if cached(folder / "a.raw"):
        fd = os.open(folder / "a.raw", os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        if cached(folder / "a.raw"):
            pytest.skip("this file system keeps the pages, or cannot tell whether it does")
        raise AssertionError("drop_files left the file in the page cache")


@pytest.mark.slow
@needs_encoder
def test_bench_master_prints_each_layout(capsys):
    from cinegpu.bench.master import layout, main
    assert layout("auto") == (None, None) and layout("4x3") == (4, 3)
    for bad in ("4", "0x2", "ax2"):
        with pytest.raises(Exception, match="PxT|at least 1"):
            layout(bad)
    main(["--profile", "dci-2k", "--frames", "3", "--distinct", "2", "--layouts", "1x1", "2x1",
          "--backend", "cpu", "--peer-frames", "0", "--timeline", "--rate", "cpu"])
    out = capsys.readouterr().out
    assert out.count("    CPU: 3 frames in 2 process(es), ") == 1     # the 2x1 layout's
    assert out.count(", rate control on the host") == 2
    assert "threads busy" in out and " ms read, " in out and "ms until read back" in out
    assert out.count("      steady, medians of 3 frames: read ") == 1 and \
        "ms CPU); in the encoder forward " in out and " rate+tier2 " in out
    assert "dci-2k master: 3 frames (2 distinct) from 3 TIFF files" in out
    assert "1 process(es) x 1 thread(s), rate control on the host:" in out and \
        "2 process(es) x 1 thread(s), rate control on the host:" in out
    assert out.count("s to finish the package") == 2 and out.count("CPU per frame: writing process") == 2 \
        and out.count("while coding: the receiving thread busy") == 2


@pytest.mark.slow
@needs_encoder
def test_bench_master_imf_and_reading_alone(capsys):
    """bench_master --format imf masters an IMF package of the frames (no DCI peers) and
    --read times reading the same files alone; --codec without --format imf is refused."""
    from cinegpu.bench.master import main
    main(["--profile", "dci-2k", "--frames", "3", "--distinct", "2", "--layouts", "1x1",
          "--backend", "cpu", "--format", "imf", "--codec", "htj2k", "--bitrate", "100",
          "--read", "1", "2", "--peer-frames", "3"])
    out = capsys.readouterr().out
    assert "dci-2k IMF htj2k 100 Mbit/s master: 3 frames (2 distinct) from 3 TIFF files" in out
    assert "reading the files alone in 1 process(es): " in out
    assert "reading the files alone in 2 process(es): " in out
    assert "1 process(es) x 1 thread(s):" in out and "opj_compress" not in out
    with pytest.raises(SystemExit):
        main(["--codec", "htj2k", "--frames", "1"])


def test_bench_master_sources_are_real_pictures(tmp_path):
    """--source: a DCI codestream's X'Y'Z' samples come back exactly from the 16-bit images
    that xyz mastering reads; RGB image files are taken as stored (8-bit scaled to 16) in
    rec709; kinds mixed or another size are refused."""
    from PIL import Image

    from cinegpu.bench.master import source_images
    from cinegpu.decode import decode
    from cinegpu.encode import encode
    from cinegpu.media.images.colour import to_xyz12
    rng = np.random.default_rng(4)
    xyz = rng.integers(0, 4096, (48, 64, 3)).astype(np.uint16)
    xyz[0, 0], xyz[0, 1] = 0, 4095
    (tmp_path / "a.j2c").write_bytes(encode(xyz, bits=12, reversible=True, backend="cpu"))
    images, colorspace = source_images([tmp_path / "a.j2c"], (64, 48))
    assert colorspace == "xyz" and images[0].dtype == np.uint16
    want = np.stack(decode((tmp_path / "a.j2c").read_bytes()), -1)
    assert np.array_equal(want, xyz)
    assert np.array_equal(to_xyz12(images[0].astype(np.float32) / np.float32(65535), "xyz"), want)
    rgb = rng.integers(0, 256, (48, 64, 3)).astype(np.uint8)
    Image.fromarray(rgb).save(tmp_path / "b.png")
    images, colorspace = source_images([tmp_path / "b.png"], (64, 48))
    assert colorspace == "rec709" and np.array_equal(images[0], rgb.astype(np.uint16) * 257)
    ten = rng.integers(0, 1024, (48, 64, 3))
    (tmp_path / "c.dpx").write_bytes(dpx_bytes(ten, 10))
    images, colorspace = source_images([tmp_path / "c.dpx"], (64, 48))  # 10-bit: as 0..1
    assert colorspace == "rec709" and images[0].dtype == np.uint16
    assert np.array_equal(images[0], np.rint(ten * 65535.0 / 1023.0).astype(np.uint16))
    with pytest.raises(ValueError, match="not both"):
        source_images([tmp_path / "a.j2c", tmp_path / "b.png"], (64, 48))
    with pytest.raises(ValueError, match="not the profile's"):
        source_images([tmp_path / "a.j2c"], (2048, 1080))


@pytest.mark.slow
@needs_encoder
def test_bench_master_masters_real_pictures(tmp_path, capsys):
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.bench.master import main
    from cinegpu.encode import encode
    frame = tmp_path / "f.j2c"
    frame.write_bytes(encode(synthetic_frame(2048, 1080, seed=3), profile="dci-2k", bits=12,
                             backend="cpu"))
    main(["--profile", "dci-2k", "--frames", "2", "--layouts", "1x1", "--backend", "cpu",
          "--peer-frames", "0", "--source", str(frame)])
    out = capsys.readouterr().out
    assert "dci-2k master: 2 frames (1 distinct, real pictures (xyz)) from 2 TIFF files" in out
    assert "1 process(es) x 1 thread(s):" in out
    with pytest.raises(SystemExit):
        main(["--profile", "dci-2k", "dci-4k", "--source", str(frame)])


def test_timeline_lines_per_gpu():
    from cinegpu.bench.master import timeline_lines
    from cinegpu.jobs.frame_coders import FrameTiming
    recs = [FrameTiming(0, 0, 1, 10.0, 10.5, 10.75, 11.5, 11.6, mapped=True),
            FrameTiming(1, 1, 1, 10.0, 11.0, 11.25, 12.5, 12.6, direct=True),
            FrameTiming(2, 2, 0, 10.0, 10.0, 10.5, 11.0, 11.2)]
    lines = timeline_lines(recs, 2)
    # GPU 0 first; GPU 1: 2 frames from 10.5 to 12.5 (1 fps each second), 2.5 s in frames over
    # 2 s x 2 processes x 2 threads; queued 0.5 and 1.0 s, read in 0.25 s, coded in 0.75 and
    # 1.25 s, read back 0.1 s after each; one of them went up straight from its file
    assert lines[0].startswith("    GPU 0: 1 frames in 1 process(es), 1.0 fps")
    assert lines[0].endswith("until read back; 0 went up straight from their files")
    assert lines[2] == ("    GPU 1: 2 frames in 2 process(es), 1.0 fps, threads busy 31 %; a frame "
                        "750.0 ms queued in its process, 250.0 ms read, 1000.0 ms coded, "
                        "100.0 ms until read back; 1 went up straight from their files, "
                        "1 were read O_DIRECT from storage")
    # under each GPU, medians of its frames read back in the middle 80 % of all the frames
    # (of 3 frames, all), with the threads' CPU time and the encoder's stages
    assert lines[1] == "      steady, medians of 1 frames: read 500.0 ms (0.0 ms CPU), coded " \
        "500.0 ms (0.0 ms CPU)"
    stages = (("forward", 0.25), ("tier1", 0.5))
    recs = [replace(r, cpu=(0.001 * k, 0.1 * k), stages=stages) for k, r in enumerate(recs)]
    lines = timeline_lines(recs, 2)
    assert lines[3] == "      steady, medians of 2 frames: read 250.0 ms (0.5 ms CPU), coded " \
        "1000.0 ms (50.0 ms CPU); in the encoder forward 250.0, tier1 500.0 ms"


def test_steady_records_leave_out_the_start_and_the_drain():
    from cinegpu.bench.master import _steady_records
    from cinegpu.jobs.frame_coders import FrameTiming
    recs = [FrameTiming(k, 0, k % 2, 0.0, 0.0, 0.0, 0.0, float(k)) for k in range(20)]
    # of 20 frames read back at 0 .. 19 s, the middle 80 %: 2 .. 17 s
    assert [r.seq for r in _steady_records(recs, recs)] == list(range(2, 18))
    assert [r.seq for r in _steady_records(recs, recs[1::2])] == list(range(3, 18, 2))


def test_steady_fps_over_the_middle_of_the_frames():
    from cinegpu.bench.master import steady_fps
    from cinegpu.jobs.frame_coders import FrameTiming

    def recs(times):
        return [FrameTiming(k, 0, 0, 0.0, 0.0, 0.0, 0.0, t) for k, t in enumerate(times)]
    # 100 frames: the first 10 and the last 10 slow (a start and a drain), 80 at 2 ms each
    times = [1.0 * k for k in range(10)] + [10.0 + 0.002 * k for k in range(80)] + \
        [11.0 + k for k in range(10)]
    # the middle 80 %: records 10 .. 89, 79 intervals of 2 ms
    assert steady_fps(recs(times)) == pytest.approx(500.0)
    assert steady_fps(recs(times[::-1])) == pytest.approx(500.0)   # order of arrival only
    assert steady_fps(recs(times), middle=1.0) == pytest.approx(99 / 20.0)
    assert steady_fps(recs(times[:9])) is None and steady_fps([]) is None


def test_code_frame_stamps_whether_the_frame_went_up_from_its_file(tmp_path):
    """code_frame's stamps say whether the frame went to the encoder straight from its file
    (upload_run gave an array) or was read (upload_run gave None, or no run)."""
    import tifffile

    from cinegpu.jobs.frame_coders import code_frame
    from cinegpu.media.images.frames import ImageFrames
    from helpers.upload_fakes import HostFitting, seam_of
    img = np.arange(6 * 8 * 3, dtype=np.uint16).reshape(6, 8, 3)
    tifffile.imwrite(tmp_path / "f0.tif", img, photometric="rgb")
    frames = ImageFrames((str(tmp_path / "f0.tif"),), None)

    class Encoders(HostFitting):
        uploads_runs, input_buffer = True, None

        def __init__(self, up):
            self.up, self.seen = up, []
            self.uploads = seam_of(self)

        def upload_run(self, run):
            return img.copy() if self.up else None

        def send_run(self, run, direct=False):
            return None

        def encode(self, image):
            self.seen.append(image)
            return b"x"

        def last_header(self):
            return None

    for up in (True, False):
        enc, stamps = Encoders(up), []
        assert code_frame(enc, frames, 0, 8, 6, stamps).codestream == b"x"
        assert len(stamps) == 4 and stamps[2] is up and stamps[3] is False
        assert np.array_equal(enc.seen[0], img)
    stamps = []
    code_frame(Encoders(True), lambda i: img, 0, 8, 6, stamps)   # not image files: read
    assert stamps[2] is False


def test_reading_alone_reuses_one_buffer(tmp_path, monkeypatch):
    """bench_master's reading alone reads every frame into one buffer, as an encoder thread
    reads into its page-locked one (fresh arrays would cost their pages' first touch, which
    mastering does not pay), a new one only for frames of another shape."""
    import tifffile

    from cinegpu.bench import master as bench_master
    paths = []
    for k, shape in enumerate([(6, 8, 3), (6, 8, 3), (4, 8, 3), (4, 8, 3)]):
        paths.append(str(tmp_path / f"f{k}.tif"))
        tifffile.imwrite(paths[-1], np.full(shape, k, np.uint16), photometric="rgb")
    seen, values = [], []
    real = bench_master.read_image

    def spy(path, **kw):
        a = real(path, **kw)
        seen.append(a)
        values.append(int(a[0, 0, 0]))
        return a
    monkeypatch.setattr(bench_master, "read_image", spy)
    n, cpu = bench_master._read_files(paths)
    assert n == 4 and cpu >= 0
    assert values == [0, 1, 2, 3]          # each frame read whole, into the one buffer
    assert np.shares_memory(seen[0], seen[1]) and np.shares_memory(seen[2], seen[3])
    assert not np.shares_memory(seen[1], seen[2])


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_reading_alone_cold_drops_the_files_after_warming_up(tmp_path, monkeypatch):
    """read_rate(cold=True) drops the folder's files from the page cache after the reads that
    warm its processes up and before the clock starts, and times every file; (frames per
    second, ms of CPU a frame) both positive."""
    import tifffile

    from cinegpu.bench import master as bench_master
    for k in range(3):
        tifffile.imwrite(tmp_path / f"f{k}.tif", np.full((6, 8, 3), k, np.uint16),
                         photometric="rgb")
    dropped = []
    monkeypatch.setattr(bench_master, "drop_files", lambda folder: dropped.append(folder))
    fps, cpu = bench_master.read_rate(tmp_path, 1, cold=True)
    assert dropped == [tmp_path] and fps > 0 and cpu >= 0
    fps, cpu = bench_master.read_rate(tmp_path, 1)
    assert dropped == [tmp_path] and fps > 0


def test_bench_master_rounds_interleave_and_give_medians(monkeypatch):
    """--rounds: every reading alone and every master run that many times, in turn (all the
    settings of round 1, then of round 2...); the reading rates are the medians over the
    rounds, each round's kept; variant_medians groups the runs by setting, in first-run order,
    with the median rate from the first frame written to the last."""
    from cinegpu.bench import master as bench_master
    order, rates = [], iter([10.0, 30.0, 20.0, 40.0])

    def fake(folder, tmp, picture, compute, **kw):
        if folder.name == "warm":
            return {}
        ring = os.environ.get("CINEGPU_RING_UPLOADS")
        order.append(ring)
        written = 1.0 + 9.0 / next(rates)      # 10 frames: 9 intervals at that rate
        return {"processes": compute.processes, "threads": compute.workers, "gpus": None,
                "mps": True,
                "rate_on_gpu": None, "first_s": 1.0, "written_s": written, "timeline": []}
    monkeypatch.setattr(bench_master, "_master", fake)
    monkeypatch.setattr(bench_master, "synthetic_frame",
                        lambda w, h, seed=0: np.zeros((8, 16, 3), np.float32))
    reads = iter([(100.0, 1.0), (300.0, 3.0)])
    monkeypatch.setattr(bench_master, "read_rate",
                        lambda folder, k, gpu=False, cold=False: next(reads))
    row = bench_master.run_master(Picture(profile="dci-2k"), 10, 1, backend="cpu",
                                  sweep=Sweep(layouts=((2, 1),), read=(4,), ring=(True, False),
                                              rounds=2))
    assert order == ["on", "off", "on", "off"]
    assert [s["round"] for s in row["runs"]] == [0, 0, 1, 1]
    assert row["read_fps"] == {4: 200.0} and row["read_cpu_ms"] == {4: 2.0}
    assert row["read_rounds"] == {("memory", 4, None, None): [(100.0, 1.0), (300.0, 3.0)]}
    groups = bench_master.variant_medians(row)
    assert [(g[0]["ring"], len(g[1])) for g in groups] == [(True, 2), (False, 2)]
    assert [round(g[2], 6) for g in groups] == [15.0, 35.0] and groups[0][3] is None


def test_same_way_read_matches_the_masters_ring_and_direct_settings():
    """A master's share against reading alone to the GPU is taken against the reading with
    its own ring and O_DIRECT settings, the best of the process counts; None where that way
    was not measured."""
    from cinegpu.bench.master import same_way_read
    row = {"read_gpu_fps": {(16, True, None): 500.0, (8, True, None): 550.0,
                            (16, False, None): 600.0, (16, True, False): 400.0}}
    assert same_way_read(row, {"ring": True, "direct": None}) == 550.0
    assert same_way_read(row, {"ring": False, "direct": None}) == 600.0
    assert same_way_read(row, {"ring": True, "direct": False}) == 400.0
    assert same_way_read(row, {"ring": None, "direct": None}) is None
    assert same_way_read({}, {"ring": True, "direct": None}) is None


@pytest.mark.slow
def test_stop_ends_idle_processes_without_waiting_and_close_waits(tmp_path):
    """stop() tells the encoder processes that hold no frame to stop and returns at once
    (master finishes its package meanwhile); they end by themselves; a process holding a
    frame is not told; close() then joins them without telling any twice."""
    import tifffile

    from cinegpu.jobs.frame_coders import CoderSetup, ProcessCoders
    tifffile.imwrite(tmp_path / "f0.tif", np.full((54, 96, 3), 9000, np.uint16),
                     photometric="rgb")
    files = ImageFrames((str(tmp_path / "f0.tif"),), (4096, 2160))
    encoding = Encoding(Picture(), "2k", "cpu")
    coders = ProcessCoders(lambda p: CoderSetup(FrameCoding(files, 96, 54, encoding), None, 1), 2)
    try:
        coders.submit(0)
        assert coders.next()
        coders.stop()
        assert coders._stopped == {0, 1}
        for proc in coders._pool.procs:
            proc.join(timeout=60)
            assert proc.exitcode == 0              # ended of itself, told once
        coders.stop()                              # nothing more to tell
        assert coders._stopped == {0, 1}
    finally:
        coders.close()
    assert coders._pool.procs == [None, None]
    coders = ProcessCoders(lambda p: CoderSetup(FrameCoding(files, 96, 54, encoding), None, 1), 2)
    try:
        coders._held[0][99] = 0                    # as if process 0 held a frame
        coders.stop()
        assert coders._stopped == {1}
        coders._pool.procs[1].join(timeout=60)
        assert coders._pool.procs[1].exitcode == 0 and coders._pool.procs[0].is_alive()
        coders._held[0].clear()
    finally:
        coders.close()


@needs_encoder
@pytest.mark.slow  # long: 2.9 s with one process (issue 50: the quick pass under 150 s)
@pytest.mark.parametrize("processes", [1, 2])
def test_the_writer_parses_no_frame_header_but_the_first(tmp_path, monkeypatch, processes):
    """Each frame reaches the track file with the main header its encoder wrote (threads of
    this process, or encoder processes through their replies): the writer parses the first
    frame's header only, and the track file's codestreams are the frames coded."""
    from cinegpu.media.mxf import write as mxf_write

    parsed = []
    parse = mxf_write.parse_j2k_header
    monkeypatch.setattr(mxf_write, "parse_j2k_header", lambda data: parsed.append(len(data)) or parse(data))
    src = write_tiffs(tmp_path / "in", 4)
    master(MasterJob.of_images(src, tmp_path / "out", title="t", processes=processes, workers=1,
                               backend="cpu"), progress=False)
    assert len(parsed) == 1
    frames = package_codestreams(tmp_path / "out")
    headers = [mxf_write.parse_j2k_header(f) for f in frames]
    assert len(frames) == 4 and all(h == headers[0] for h in headers) and headers[0].height == 1080
