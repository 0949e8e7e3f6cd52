"""Mastering benchmark: ``cinegpu master`` (:func:`cinegpu.jobs.mastering.master` of a
:class:`.master_job.MasterJob` of image files: TIFF frames read, colour conversion, encoding,
the MXF track file and the DCP) in several layouts of
encoder processes and threads, against ``opj_compress -cinema2K/-cinema4K`` and
``grk_compress -cinema2K/-cinema4K`` on the same synthetic frames.

    python -m cinegpu.bench.master [--profile dci-2k dci-4k] [--frames N]
        [--distinct K] [--files N] [--layouts 1x1 1x8 auto] [--backend auto|cpu|cuda]
        [--peer-frames N] [--opj-processes N] [--grk-threads N] [--fps 24] [--gpus 1 2 ...]
        [--mps on off] [--rate default cpu gpu]
        [--format dcp|imf --codec j2k|htj2k --bitrate MBITS] [--read P ...] [--timeline]
        [--source FILE ...] [--code]

The input is a folder of ``--frames`` 16-bit RGB TIFF files, as a user masters, made of
``--distinct`` different images (the encoder benchmark's 12-bit pattern,
:func:`cinegpu.bench.encode.synthetic_frame`, scaled by 16), copied to ``--files`` files
(default 240: a sequence's frames are files of their own, whose pages processes reading at
once do not share), the other files links to those, so every frame is read and coded.
``--source`` takes the images from real pictures
instead, one distinct image each (:func:`source_images`): DCI codestreams (``.j2c``,
``.j2k``, e.g. ``../shared/bench-frames``), decoded and mastered again from their X'Y'Z'
samples (``colorspace="xyz"``), or RGB TIFF/PNG/DPX files; each of the profile's size.
Each layout ``PxT`` is P encoder processes of T threads (``auto``: the defaults of
``cinegpu master``), run on each count of ``--gpus`` (the processes take the GPUs in turn;
default: one) and for each of ``--mps`` (``on``: master's
private CUDA MPS where processes outnumber the GPUs, ``off``: without) and of ``--rate``
(Part-1 rate control's hull on the ``cpu``, the ``gpu`` or master's ``default``), after one
warm-up run; each prints the frames per second end to end (the encoder processes' start
included) and from the first frame written to the last (the coding rate), and the seconds then spent
finishing the package (the track file's hash, read back whole, is most of it); with
``--timeline``, per GPU the encoder processes' rate, how busy their threads were and where a
frame waited (:func:`timeline_lines`), and the rate over the middle 80 % of the frames
(:func:`steady_fps`).  OpenJPEG codes ``--peer-frames`` of the same frames
converted to X'Y'Z', as PPM files (DCPs only; ``--format imf`` masters an IMF package of the
same frames, ``--read`` also times reading the files alone, what mastering would reach if
coding cost nothing: into host memory (a buffer each process reuses), and with the cuda back
end also to the GPU as the encoder threads read them; ``--code`` masters each layout once more
from frames held in GPU memory (:class:`HeldFrames`: the distinct images, read once by each
encoder process), what mastering would reach if reading cost nothing), ``--opj-processes`` at
once, and Grok
all of them in one run of ``--grk-threads`` threads (0: every core).  Not a timed test: the
numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import resource
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from cinegpu.decode.cpus import usable_cores
from cinegpu.decode.codestream import dci
from cinegpu.bench.encode import opj_encode_frames, synthetic_frame
from cinegpu.bench.encode_peers import grk_compress_dci, have_grk, have_opj

from cinegpu.media.images.colour import to_xyz12
from cinegpu.jobs.frame_encode import pick_backend
from cinegpu.jobs.frame_uploads import FrameUploads, UploadSettings
from cinegpu.media.images.frames import read_image, tiff_run
from cinegpu.jobs.master_job import (Composition, Compute, InputFrames, MasterJob, Picture,
                                     image_input)
from cinegpu.jobs.mastering import master

__all__ = ["HeldFrames", "Peers", "Sweep", "layout", "main", "run_master", "source_images",
           "steady_fps", "timeline_lines", "write_frames"]

#: Codestream files that --source decodes (the others are read as images).
CODESTREAMS = (".j2c", ".j2k", ".jpc")


def layout(text: str) -> tuple[int | None, int | None]:
    """``PxT`` -> (P, T) processes and threads; ``auto`` -> (None, None): master's defaults."""
    if text == "auto":
        return None, None
    try:
        p, t = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"want PxT (processes x threads) or auto, got "
                                         f"{text!r}") from None
    if p < 1 or t < 1:
        raise argparse.ArgumentTypeError(f"processes and threads must be at least 1: {text!r}")
    return p, t


def write_frames(folder: Path, images: list[np.ndarray], frames: int, files: int = 0) -> None:
    """``frames`` TIFF files in ``folder``: the ``images`` written once, copied up to
    ``files`` files in all (each its own file and pages in the page cache, as a sequence's
    frames are), the rest symbolic links to those in turn."""
    import tifffile
    files = max(len(images), min(files, frames))
    for k in range(frames):
        path = folder / f"f{k:06d}.tif"
        if k < len(images):
            tifffile.imwrite(path, images[k], photometric="rgb")
        elif k < files:
            shutil.copyfile(folder / f"f{k % len(images):06d}.tif", path)
        else:
            os.symlink(f"f{k % files:06d}.tif", path)


def source_images(paths, size: tuple[int, int]) -> tuple[list[np.ndarray], str]:
    """(16-bit RGB images, the colorspace to master them in) of real pictures, each
    ``size`` (width, height): DCI codestreams decoded (:func:`cinegpu.decode.decode`) as
    their X'Y'Z' code values v scaled to round(v x 65535 / 4095), which ``xyz`` mastering
    brings back to v exactly; or TIFF/PNG/DPX RGB files as stored, mastered as ``rec709``.
    All of one kind; ValueError otherwise or for another size."""
    from cinegpu.decode import decode
    paths = [Path(p) for p in paths]
    kinds = {p.suffix.lower() in CODESTREAMS for p in paths}
    if len(kinds) != 1:
        raise ValueError("--source: codestreams or images, not both")
    out = []
    for path in paths:
        if path.suffix.lower() in CODESTREAMS:
            comps = decode(path.read_bytes())
            if len(comps) != 3 or any(c.shape != comps[0].shape for c in comps):
                raise ValueError(f"{path}: not three components of one size")
            xyz = np.stack(comps, -1).astype(np.int64)
            if xyz.min() < 0 or xyz.max() > 4095:
                raise ValueError(f"{path}: samples outside 12-bit X'Y'Z' code values")
            image = ((xyz * 65535 + 2047) // 4095).astype(np.uint16)
        else:             # 8- and 16-bit samples as stored, others as floats 0..1 (DPX)
            image = read_image(path, limit=None, stored=True)
            if image.dtype == np.uint8:
                image = image.astype(np.uint16) * np.uint16(257)
            elif image.dtype != np.uint16:
                image = np.rint(np.clip(image, 0.0, 1.0) * 65535.0).astype(np.uint16)
        if image.shape[:2] != (size[1], size[0]):
            raise ValueError(f"{path}: {image.shape[1]} x {image.shape[0]}, not the profile's "
                             f"{size[0]} x {size[1]}")
        out.append(image)
    return out, "xyz" if True in kinds else "rec709"


def _cpu_seconds(who: int) -> float:
    """User + system CPU seconds of ``resource.getrusage(who)``."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def timeline_lines(records, threads: int) -> list[str]:
    """Per GPU (``CPU`` for encoder processes without one), from the encoder processes'
    :class:`.frame_coders.FrameTiming` records: the frames, their rate from the first taken to
    the last finished, how busy the processes' ``threads`` threads were (seconds inside
    frames over that span x threads), per frame the mean milliseconds it waited in its process before
    a thread took it, was being read, was being coded, and waited before this process read it
    back, and how many frames went to the GPU straight from their files (and how many were
    read ``O_DIRECT``, where any were)."""
    by: dict = {}
    for r in records:
        by.setdefault(r.device, []).append(r)
    lines = []
    for dev in sorted(by, key=lambda d: (d is None, d or 0)):
        rs = by[dev]
        procs = len({r.process for r in rs})
        span = max(max(r.ended for r in rs) - min(r.began for r in rs), 1e-9)
        busy = sum(r.ended - r.began for r in rs) / (span * procs * threads)
        ms = [1e3 * float(np.mean([b - a for a, b in pairs])) for pairs in (
            [(r.submitted, r.began) for r in rs], [(r.began, r.read) for r in rs],
            [(r.read, r.ended) for r in rs], [(r.ended, r.received) for r in rs])]
        where = "CPU" if dev is None else f"GPU {dev}"
        mapped = sum(r.mapped for r in rs)
        direct = sum(r.direct for r in rs)
        lines.append(f"    {where}: {len(rs)} frames in {procs} process(es), {len(rs) / span:.1f} "
                     f"fps, threads busy {100 * busy:.0f} %; a frame {ms[0]:.1f} ms queued in "
                     f"its process, {ms[1]:.1f} ms read, {ms[2]:.1f} ms coded, {ms[3]:.1f} ms "
                     f"until read back; {mapped} went up straight from their files" +
                     (f", {direct} were read O_DIRECT from storage" if direct else ""))
        steady = _steady_records(records, rs)
        if steady:
            lines.append("      " + _median_line(steady))
    return lines


def _steady_records(records, rs, middle: float = 0.8) -> list:
    """Those of ``rs`` read back within the ``middle`` share of all ``records`` (as
    :func:`steady_fps` counts them): no encoder's first frames, no drain."""
    t, a, b = _middle(records, middle)
    return [r for r in rs if t[a] <= r.received <= t[b]]


def _middle(records, middle: float):
    """(sorted read-back times of ``records``, first and last index of their ``middle``
    share)."""
    t = np.sort([r.received for r in records])
    a = int(round(len(t) * (1 - middle) / 2))
    return t, a, len(t) - 1 - a


def _median_line(rs) -> str:
    """Median milliseconds of steady frames: read and coded, each with its thread's CPU
    time, and the encoder's stages (:attr:`.frame_coders.FrameTiming.stages`)."""
    def med(values) -> float:
        return 1e3 * float(np.median(values))
    text = (f"steady, medians of {len(rs)} frames: read {med([r.read - r.began for r in rs]):.1f} "
            f"ms ({med([r.cpu[0] for r in rs]):.1f} ms CPU), coded "
            f"{med([r.ended - r.read for r in rs]):.1f} ms ({med([r.cpu[1] for r in rs]):.1f} ms "
            "CPU)")
    names = [name for name, _ in rs[0].stages]
    if names and all([name for name, _ in r.stages] == names for r in rs):
        text += "; in the encoder " + ", ".join(
            f"{name} {med([r.stages[k][1] for r in rs]):.1f}" for k, name in enumerate(names)) \
            + " ms"
    return text


def steady_fps(records, middle: float = 0.8) -> float | None:
    """Frames per second over the ``middle`` share of a master's frames, by the moments this
    process read them back (:attr:`.frame_coders.FrameTiming.received`): the rate once every
    encoder has started and before the last ones drain (a feature is 150,000 frames; a
    benchmark's few thousand are coded partly while the later encoders are still starting).
    None for fewer than 10 records."""
    if not records or len(records) < 10:
        return None
    t, a, b = _middle(records, middle)
    return (b - a) / max(float(t[b] - t[a]), 1e-9)


def _master(folder: Path, tmp: str, picture: Picture, compute: Compute, *,
            timeline: bool = False, held: "HeldFrames | None" = None, frames: int = 0) -> dict:
    """One master of ``folder`` as ``picture`` and ``compute`` say, or with ``held`` of
    ``frames`` frames of those images held in memory (the coding alone): mastering's figures
    (:class:`.mastering.MasterFigures`) as a dict, with the CPU seconds of this (the writing)
    process and of the encoder processes it started and ended (``main_cpu_s``,
    ``coders_cpu_s``; threads of one process count once each); with ``timeline``, the encoder
    processes' frame timings (``timeline``)."""
    out = Path(tmp) / "dcp"
    records: list | None = [] if timeline else None
    main0, kids0 = _cpu_seconds(resource.RUSAGE_SELF), _cpu_seconds(resource.RUSAGE_CHILDREN)
    frames_in = image_input(folder, picture)[0] if held is None else InputFrames(held, frames)
    job = MasterJob(frames_in, out, Composition(title="bench"), picture, compute=compute)
    stats = asdict(master(job, progress=False, timeline=records).stats)
    stats["timeline"] = records
    stats["main_cpu_s"] = _cpu_seconds(resource.RUSAGE_SELF) - main0
    stats["coders_cpu_s"] = _cpu_seconds(resource.RUSAGE_CHILDREN) - kids0
    shutil.rmtree(out)
    if held is not None:
        stats["held"] = "GPU memory" if held.gpu else "memory"
    return stats


class HeldFrames:
    """Frames held in memory, for timing the coding alone: frame ``i`` is the image of
    ``files[i % len(files)]`` (:func:`.images_in.read_image` as stored), read once.  In the
    process that makes it the images are numpy arrays; unpickled in an encoder process
    (:mod:`.frame_coders`) with ``gpu``, they are CuPy arrays on that process's current GPU,
    so the encoder takes them as they are: no file read and no upload per frame.  A
    picklable value."""

    def __init__(self, files, gpu: bool = False):
        self.files, self.gpu = tuple(str(f) for f in files), bool(gpu)
        self._device = False
        self._held: dict = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"files": self.files, "gpu": self.gpu}

    def __setstate__(self, state):
        self.files, self.gpu = state["files"], state["gpu"]
        self._device = self.gpu          # an encoder process: the images go to its GPU
        self._held = {}
        self._lock = threading.Lock()

    def __call__(self, i: int) -> np.ndarray:
        k = i % len(self.files)
        with self._lock:
            image = self._held.get(k)
            if image is None:
                image = read_image(self.files[k], limit=None, stored=True)
                if self._device:
                    import cupy
                    image = cupy.asarray(image)
                    cupy.cuda.get_current_stream().synchronize()
                self._held[k] = image
        return image


@contextlib.contextmanager
def _environ(name: str, value: str | None):
    """The environment variable ``name`` set to ``value`` (None: as it was) for the encoder
    processes started meanwhile."""
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def written_rate(s: dict, frames: int) -> float:
    """A master run's frames a second from the first frame written to the last."""
    return (frames - 1) / max(s["written_s"] - s["first_s"], 1e-9)


def _direct_env(direct: bool | None) -> str | None:
    """``CINEGPU_DIRECT_READS`` for ``direct`` (None: as it is)."""
    return None if direct is None else ("auto" if direct else "off")


def _median(values) -> float:
    return float(np.median(values))


def variant_medians(row) -> list[tuple[dict, list[dict], float, float | None]]:
    """The runs of ``row`` grouped by setting (all but the round), in first-run order: (the
    first run, the setting's runs, the median rate from the first frame written to the last,
    the median steady rate or None without timelines)."""
    groups: dict = {}
    for s in row["runs"]:
        key = tuple((k, v) for k, v in sorted(s.items()) if k in _SETTING)
        groups.setdefault(key, []).append(s)
    out = []
    for runs in groups.values():
        rates = [written_rate(s, row["frames"]) for s in runs]
        steady = [steady_fps(s["timeline"]) for s in runs if s.get("timeline")]
        steady = [v for v in steady if v is not None]
        out.append((runs[0], runs, _median(rates), _median(steady) if steady else None))
    return out


def same_way_read(row, run) -> float | None:
    """The median rate (frames/s) of reading the files alone to the GPU as ``run`` read them
    (the same ring and O_DIRECT settings), the best of the process counts; None where not
    measured."""
    rates = [f for (_, on, d), f in row.get("read_gpu_fps", {}).items()
             if on == run.get("ring") and d == run.get("direct")]
    return max(rates, default=None)


#: What tells one setting's runs from another's (:func:`variant_medians`).
_SETTING = ("processes", "threads", "gpus", "mps", "rate_on_gpu", "held", "turns", "ring",
            "direct")


def _on_off(on: bool | None) -> str | None:
    return None if on is None else ("on" if on else "off")


def drop_files(folder: Path) -> None:
    """Every file of ``folder`` (not the links to them) dropped from the page cache
    (``posix_fadvise`` ``DONTNEED``; their pages are clean once written out), so that the
    next run reads them from storage."""
    os.sync()
    for p in sorted(folder.iterdir()):
        if p.is_symlink() or not p.is_file():
            continue
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _read_files(paths: list[str], gpu: bool = False) -> tuple[int, float]:
    """(files read, CPU seconds of this process meanwhile, all its threads)."""
    cpu = time.process_time()
    return _read_each(paths, gpu), time.process_time() - cpu


def _read_each(paths: list[str], gpu: bool) -> int:
    if not gpu:                   # into one buffer, reused as an encoder thread reuses its own
        kept: dict = {}

        def out(shape, dtype):
            key = (tuple(shape), np.dtype(dtype))
            if key not in kept:
                kept.clear()
                kept[key] = np.empty(shape, dtype)
            return kept[key]
        for path in paths:
            read_image(path, limit=None, stored=True, out=out)
        return len(paths)
    import cupy
    from cinegpu.encode.gpu import HostStaging
    staging = HostStaging()
    # as an encoder thread sends a run up (FrameUploads.send), the switches read as an
    # encoder process reads them
    uploads = FrameUploads(_OnStream(), UploadSettings.of(os.environ))
    with cupy.cuda.Stream(non_blocking=True) as stream:
        for path in paths:
            run = tiff_run(path, limit=None)
            if run is None or uploads.send(run) is None:
                staging.upload(read_image(path, limit=None, stored=True,
                                          out=staging.buffer))
        uploads.close()
        stream.synchronize()
    return len(paths)


class _OnStream:
    """What :meth:`.FrameUploads.send` asks of an encoder, for reading alone: the stream to
    queue the copies on, which is current already."""

    @staticmethod
    def on_stream():
        return contextlib.nullcontext()


def read_rate(folder: Path, processes: int, gpu: bool = False,
              cold: bool = False) -> tuple[float, float]:
    """(Frames per second, ms of CPU a frame) at which ``processes`` processes read the TIFF
    files of ``folder``
    (:func:`.images_in.read_image`, as stored) and do nothing else, after reading two each:
    the rate mastering would have if coding cost nothing.  Each process reads into one
    buffer it reuses, as an encoder thread reads into its own page-locked one (a fresh array
    a frame costs its pages' first touch: on the 2-core development machine one process read
    4K 16-bit frames at 89-95 fps into fresh arrays, 311-315 into one reused).  ``gpu``: read
    as a GPU encoder thread reads them, into GPU memory (straight from the file where it can,
    :mod:`cinegpu.encode.mapped_upload`, else through a small page-locked ring,
    :mod:`cinegpu.encode.ring_upload`).  ``cold``: the files dropped from the page cache
    after the two read to warm up (:func:`drop_files`)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    paths = [str(p) for p in sorted(folder.glob("*.tif"))]
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_read_files, [paths[:2]] * processes, [gpu] * processes))
        if cold:
            drop_files(folder)
        start = time.perf_counter()
        parts = list(pool.map(_read_files, [paths[k::processes] for k in range(processes)],
                              [gpu] * processes))
        seconds = time.perf_counter() - start
        done = sum(n for n, _ in parts)
        return done / seconds, 1e3 * sum(c for _, c in parts) / max(done, 1)


@dataclass(frozen=True)
class Sweep:
    """What the masters of one benchmark row vary, each combination in turn after a warm-up:
    ``layouts``, (encoder processes, threads) pairs ((None, None): master's defaults); ``gpus``,
    GPU counts (None: master's, one); ``mps``, with (True: master's private CUDA MPS where
    processes outnumber the GPUs and it starts) and/or without it; ``rate``, Part-1 rate
    control's hull on the host (False), the GPU (True) and/or master's default (None);
    ``turns``, counts of threads that may lock file pages for the GPU at once
    (``CINEGPU_MAPPED_TURNS``, see :class:`cinegpu.jobs.frame_uploads.UploadSettings`; None:
    master's); ``ring``, frames not taken straight from their files read to the GPU through a
    small page-locked ring (True, :mod:`cinegpu.encode.ring_upload`) and/or whole into the
    page-locked buffer (False), through ``CINEGPU_RING_UPLOADS`` (None: master's); ``direct``,
    files not in the page cache read ``O_DIRECT`` (True, :mod:`cinegpu.encode.direct_read`)
    and/or the usual way (False), through ``CINEGPU_DIRECT_READS``.  ``code``: each layout once
    more from frames held in GPU memory (:class:`HeldFrames`); ``timeline``: the encoder
    processes' frame timings; ``read``: counts of processes that read the files alone, into
    memory and, on the GPU, to it once per ``ring`` and ``direct``; ``cold``: every file
    dropped from the page cache before each reading alone (after its warming up) and each
    master (:func:`drop_files`), as a feature's frames come from storage; ``rounds``: all the
    readings alone and masters that many times over, in turn."""

    layouts: tuple = ((1, 1), (None, None))
    gpus: tuple = (None,)
    mps: tuple = (True,)
    rate: tuple = (None,)
    turns: tuple = (None,)
    ring: tuple = (None,)
    direct: tuple = (None,)
    code: bool = False
    timeline: bool = False
    read: tuple = ()
    cold: bool = False
    rounds: int = 1


@dataclass(frozen=True)
class Peers:
    """The peers' runs: OpenJPEG (``opj_processes`` at once) and Grok (``grk_threads``, 0:
    every core) code ``frames`` of the frames, where installed (DCPs only)."""

    frames: int = 0
    opj_processes: int = 1
    grk_threads: int = 0


def run_master(picture: Picture, frames: int, distinct: int = 4, *, backend: str = "auto",
               sweep: Sweep = Sweep(), peers: Peers = Peers(), sources=None,
               files: int = 0) -> dict:
    """One profile (``picture``: a DCP or an IMF package at its DCI profile's container
    size): per setting of ``sweep`` the figures of :func:`cinegpu.jobs.mastering.master`
    over ``frames`` TIFF files, each run a dict with its setting (``runs``; ``round``: the
    sweep's round); the frames per second at which the sweep's ``read`` processes read the
    same files alone (``read_fps``, ``read_cpu_ms``; to the GPU ``read_gpu_fps`` keyed
    (processes, ring, direct); the medians over the rounds, each round's in ``read_rounds``);
    OpenJPEG's and Grok's frames per second (``peers``).  ``sources``: files of real
    pictures (:func:`source_images`) in place of ``distinct`` synthetic ones; ``files``: how
    many files the frames are (:func:`write_frames`), at most as many as a quarter of the
    temporary folder's free space holds (``files`` in the row: how many were made; give as
    many as ``frames`` with ``cold``, or a file read twice is read from memory the second
    time where it is read the usual way).  Runs of one setting spread widely from one to the
    next: hence rounds."""
    images, colorspace = _images(picture.profile, frames, distinct, sources)
    picture = replace(picture, colorspace=colorspace)
    row = {"profile": picture.profile, "frames": frames,
           "distinct": min(len(images), frames), "runs": [], "colorspace": colorspace}
    with tempfile.TemporaryDirectory(prefix="cinegpu-bench-") as tmp:
        folder, warm = Path(tmp) / "in", Path(tmp) / "warm"
        folder.mkdir()
        warm.mkdir()
        # copies only as far as a quarter of the free space: the frames' folder must fit
        each = images[0].nbytes + 4096 if images else 1
        room = shutil.disk_usage(folder).free // 4 // each
        row["files"] = max(len(images), min(files, frames, room))
        write_frames(folder, images, frames, row["files"])
        for k in range(min(2, frames)):
            os.symlink(folder / f"f{k:06d}.tif", warm / f"f{k:06d}.tif")
        # warm: imports, numba and kernel caches, here and (on disk) for encoder processes
        _master(warm, tmp, picture, Compute(backend, processes=1))
        if any(p != 1 for p, _ in sweep.layouts):
            _master(warm, tmp, picture, Compute(backend, workers=1, processes=2))
        reads: dict = {}          # (where, processes, ring, direct) -> [(fps, cpu ms)], a round each
        for rnd in range(sweep.rounds):
            _read_alone(folder, backend, sweep, reads)
            row["runs"] += _sweep_runs(folder, tmp, picture, backend, sweep, rnd, frames,
                                       len(images))
        _read_medians(row, reads)
    n = min(peers.frames, frames) if not picture.imf else 0     # the peers write DCI frames
    if n and (have_opj() or have_grk()):
        xyz = [to_xyz12(f.astype(np.float32) / np.float32(65535), colorspace) for f in images]
        peer = [xyz[k % len(xyz)] for k in range(n)]
        row["peer_frames"] = n
        if have_opj():
            row["opj_fps"] = n / opj_encode_frames(peer, picture.profile, picture.fps,
                                                   peers.opj_processes)[1]
        if have_grk():
            row["grk_fps"] = n / grk_compress_dci(peer, picture.profile, picture.fps,
                                                  peers.grk_threads)[1]
    return row


def _images(profile: str, frames: int, distinct: int, sources) -> tuple[list[np.ndarray], str]:
    """(the distinct 16-bit RGB images of a row, the colorspace they are mastered in): the
    ``sources`` (:func:`source_images`), or ``distinct`` synthetic ones (the encoder
    benchmark's 12-bit pattern scaled by 16) of the profile's container size."""
    w, h = dci.profile(profile).container
    if sources:
        return source_images(sources, (w, h))
    return [(synthetic_frame(w, h, seed=k).astype(np.uint32) * 16).astype(np.uint16)
            for k in range(min(distinct, frames))], "rec709"


def _read_alone(folder: Path, backend: str, sweep: Sweep, reads: dict) -> None:
    """One round of reading the files alone (:func:`read_rate`) in each of the sweep's
    ``read`` process counts, into memory, and on the GPU to it once per ``ring`` and
    ``direct``: appended to ``reads`` under (where, processes, ring, direct)."""
    for k in sweep.read:
        reads.setdefault(("memory", k, None, None), []).append(
            read_rate(folder, k, cold=sweep.cold))
    if sweep.read and backend != "cpu" and pick_backend(backend) == "cuda":
        for k, on, d in itertools.product(sweep.read, sweep.ring, sweep.direct):
            with _environ("CINEGPU_RING_UPLOADS", _on_off(on)), \
                    _environ("CINEGPU_DIRECT_READS", _direct_env(d)):
                reads.setdefault(("gpu", k, on, d), []).append(
                    read_rate(folder, k, gpu=True, cold=sweep.cold))


def _sweep_runs(folder: Path, tmp: str, picture: Picture, backend: str, sweep: Sweep,
                rnd: int, frames: int, distinct: int) -> list[dict]:
    """Round ``rnd`` of the sweep's masters of the ``frames`` frames of ``folder``, each a dict
    of its figures and its setting; with the sweep's ``code``, each (gpus, layout, mps) once
    more from its ``distinct`` images held in memory (:class:`HeldFrames`)."""
    runs = []
    for g, (procs, threads), shared in itertools.product(sweep.gpus, sweep.layouts, sweep.mps):
        compute = Compute(backend, workers=threads, processes=procs,
                          gpus=1 if g is None else g, mps=shared)
        for on_gpu, n, on, d in itertools.product(sweep.rate, sweep.turns, sweep.ring,
                                                  sweep.direct):
            with _environ("CINEGPU_MAPPED_TURNS", None if n is None else str(n)), \
                    _environ("CINEGPU_RING_UPLOADS", _on_off(on)), \
                    _environ("CINEGPU_DIRECT_READS", _direct_env(d)):
                if sweep.cold:
                    drop_files(folder)
                s = _master(folder, tmp, picture, replace(compute, rate_on_gpu=on_gpu),
                            timeline=sweep.timeline)
            runs.append(dict(s, gpus=g, rate_on_gpu=on_gpu, turns=n, ring=on, direct=d,
                             round=rnd))
        if sweep.code:
            gpu = backend != "cpu" and pick_backend(backend) == "cuda"
            held = HeldFrames(sorted(folder.glob("*.tif"))[:distinct], gpu)
            s = _master(folder, tmp, picture, compute, timeline=sweep.timeline, held=held,
                        frames=frames)
            runs.append(dict(s, gpus=g, rate_on_gpu=None, round=rnd))
    return runs


def _read_medians(row: dict, reads: dict) -> None:
    """The reading rates of ``row``: medians over the rounds (each round's: ``read_rounds``)."""
    row["read_rounds"] = reads
    row["read_fps"] = {k: _median([f for f, _ in v]) for (w, k, _, _), v in reads.items()
                       if w == "memory"}
    row["read_cpu_ms"] = {k: _median([c for _, c in v]) for (w, k, _, _), v in reads.items()
                          if w == "memory"}
    if any(w == "gpu" for w, *_ in reads):
        row["read_gpu_fps"] = {key[1:]: _median([f for f, _ in v])
                               for key, v in reads.items() if key[0] == "gpu"}
        row["read_gpu_cpu_ms"] = {key[1:]: _median([c for _, c in v])
                                  for key, v in reads.items() if key[0] == "gpu"}


def _setting_words(s) -> str:
    """A run's setting in words (all but its layout)."""
    return (f", frames held in {s['held']}" if s.get("held") else "") + \
        ("" if s.get("turns") is None else f", {s['turns']} page-locking turn(s)") + \
        ("" if s.get("ring") is None else
         f", {'ring' if s['ring'] else 'whole-frame'} reads") + \
        ("" if s.get("direct") is None else
         (", O_DIRECT where not in memory" if s["direct"] else ", no O_DIRECT")) + \
        ("" if s["gpus"] is None else f" on {s['gpus']} GPU(s)") + \
        (", CUDA MPS" if s["mps"] else "") + \
        ("" if s["rate_on_gpu"] is None else
         f", rate control on the {'GPU' if s['rate_on_gpu'] else 'host'}")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", nargs="+", default=["dci-2k", "dci-4k"])
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--distinct", type=int, default=4)
    ap.add_argument("--files", type=int, default=240,
                    help="files the frames are copied to (the rest are links to them), as far "
                         "as a quarter of the temporary folder's free space allows")
    ap.add_argument("--layouts", type=layout, nargs="+", default=[(1, 1), (None, None)],
                    metavar="PxT|auto")
    ap.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--fps", type=int, default=24)
    ap.add_argument("--peer-frames", type=int, default=4)
    ap.add_argument("--opj-processes", type=int, default=usable_cores())
    ap.add_argument("--grk-threads", type=int, default=0)
    ap.add_argument("--gpus", type=int, nargs="+", default=[None], metavar="N",
                    help="CUDA: run every layout on each of these GPU counts (default: master's, one)")
    ap.add_argument("--mps", choices=("on", "off"), nargs="+", default=["on"],
                    help="run every layout with master's private CUDA MPS (on, where it starts) "
                         "and/or without it (off)")
    ap.add_argument("--format", choices=("dcp", "imf"), default="dcp",
                    help="the package mastered (imf: App 2E, the picture at the profile's size)")
    ap.add_argument("--codec", choices=("j2k", "htj2k"), default="j2k", help="IMF only")
    ap.add_argument("--bitrate", type=float, default=None, metavar="MBITS",
                    help="IMF only (default: master's)")
    ap.add_argument("--read", type=int, nargs="*", default=[], metavar="P",
                    help="also time reading the files alone in P processes (each count)")
    ap.add_argument("--rate", choices=("default", "cpu", "gpu"), nargs="+", default=["default"],
                    help="Part-1 rate control's hull on the host (cpu), the GPU (gpu) or "
                         "master's default, each in turn")
    ap.add_argument("--turns", type=int, nargs="+", default=[None], metavar="N",
                    help="run every layout with each count of threads that may lock file pages "
                         "for the GPU at once (CINEGPU_MAPPED_TURNS; default: master's)")
    ap.add_argument("--ring", choices=("on", "off"), nargs="+", default=None,
                    help="run every layout with frames that are not taken straight from their "
                         "files read to the GPU through a small page-locked ring (on) and/or "
                         "whole into a page-locked buffer (off) (CINEGPU_RING_UPLOADS; default: "
                         "master's)")
    ap.add_argument("--direct", choices=("on", "off"), nargs="+", default=None,
                    help="run every layout with files not in the page cache read O_DIRECT "
                         "(on) and/or the usual way (off) (CINEGPU_DIRECT_READS; default: "
                         "master's, on)")
    ap.add_argument("--cold", action="store_true",
                    help="drop the files from the page cache before each reading alone and "
                         "each master, as a feature's frames come from storage (with --files "
                         "as large as --frames)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run all the readings alone and masters this many times over, in "
                         "turn, and print each setting's median (runs of one setting spread "
                         "widely from one to the next)")
    ap.add_argument("--code", action="store_true",
                    help="also master each layout from frames held in GPU memory (cuda): the "
                         "coding alone, without reading files")
    ap.add_argument("--timeline", action="store_true",
                    help="per GPU: the encoder processes' rate, busy threads and where a frame waits")
    ap.add_argument("--source", nargs="+", default=None, metavar="FILE",
                    help="real pictures instead of the synthetic ones: DCI codestreams "
                         "(mastered again from their X'Y'Z') or RGB TIFF/PNG/DPX files, "
                         "each of the profile's size (one --profile)")
    return ap


def main(argv=None) -> None:
    ap = _parser()
    a = ap.parse_args(argv)
    if a.source and len(a.profile) != 1:
        ap.error("--source takes one --profile (the pictures' size)")
    if a.format != "imf" and (a.codec != "j2k" or a.bitrate is not None):
        ap.error("--codec and --bitrate are for --format imf")
    sweep = Sweep(layouts=tuple(a.layouts), gpus=tuple(a.gpus),
                  mps=tuple(m == "on" for m in a.mps),
                  rate=tuple({"default": None, "cpu": False, "gpu": True}[r] for r in a.rate),
                  turns=tuple(a.turns),
                  ring=(None,) if a.ring is None else tuple(r == "on" for r in a.ring),
                  direct=(None,) if a.direct is None else tuple(r == "on" for r in a.direct),
                  code=a.code, timeline=a.timeline, read=tuple(a.read), cold=a.cold,
                  rounds=a.rounds)
    for profile in a.profile:
        picture = Picture(format=a.format, profile=profile, fps=a.fps, codec=a.codec,
                          bitrate=a.bitrate)
        r = run_master(picture, a.frames, a.distinct, backend=a.backend, sweep=sweep,
                       peers=Peers(a.peer_frames, a.opj_processes, a.grk_threads),
                       sources=a.source, files=a.files)
        what = profile if a.format != "imf" else \
            f"{profile} IMF {a.codec}" + (f" {a.bitrate:g} Mbit/s" if a.bitrate else "")
        source = f", real pictures ({r['colorspace']})" if a.source else ""
        print(f"{what} master: {r['frames']} frames ({r['distinct']} distinct{source}) "
              f"from {min(r['files'], r['frames'])} TIFF files" +
              (", each dropped from the page cache before each run" if a.cold else ""))
        if a.cold and r["files"] < r["frames"]:
            print(f"  (--cold with fewer files than frames: a file read the usual way is in "
                  f"memory the next time; {r['frames'] - r['files']} frames are such re-reads)")
        _print_reads(r)
        best = _print_runs(r, a.rounds)
        if a.rounds > 1:
            _print_medians(r, a.rounds)
        if "opj_fps" in r:
            print(f"  opj_compress ({a.opj_processes} processes, {r['peer_frames']} frames) "
                  f"{r['opj_fps']:.3f} fps  ratio x{best / r['opj_fps']:.2f} (end to end)")
        if "grk_fps" in r:
            threads = f"{a.grk_threads} threads" if a.grk_threads else "all cores"
            print(f"  grk_compress ({threads}, {r['peer_frames']} frames) {r['grk_fps']:.3f} fps  "
                  f"ratio x{best / r['grk_fps']:.2f} (end to end)")


def _print_reads(r: dict) -> None:
    """The row's readings alone: into memory, and to the GPU as mastering reads."""
    def each(key) -> str:
        v = r["read_rounds"][key]
        return "" if len(v) < 2 else \
            " (median of " + " / ".join(f"{f:.2f}" for f, _ in v) + ")"
    for k, fps in r["read_fps"].items():
        print(f"  reading the files alone in {k} process(es): {fps:.2f} fps "
              f"({r['read_cpu_ms'][k]:.1f} ms of CPU a frame){each(('memory', k, None, None))}")
    for (k, on, d), fps in r.get("read_gpu_fps", {}).items():
        how = ("" if on is None else (", through the ring" if on else ", whole frames")) + \
            ("" if d is None else (", O_DIRECT where not in memory" if d else
                                   ", no O_DIRECT"))
        print(f"  reading them alone to the GPU as mastering does{how}, in {k} process(es): "
              f"{fps:.2f} fps ({r['read_gpu_cpu_ms'][k, on, d]:.1f} ms of CPU a frame)"
              f"{each(('gpu', k, on, d))}")


def _print_runs(r: dict, rounds: int) -> float:
    """Each master of the row: its rates, when it was ready, where its CPU went, its
    timeline; the best end-to-end rate (frames/s)."""
    best = 0.0
    for s in r["runs"]:
        end = r["frames"] / s["total_s"]
        steady = written_rate(s, r["frames"])
        best = max(best, end)
        on = _setting_words(s) + (f", round {s['round'] + 1}" if rounds > 1 else "")
        print(f"  {s['processes']} process(es) x {s['threads']} thread(s){on}: {end:.2f} fps end "
              f"to end (ready after {s['ready_s']:.2f} s, first frame after "
              f"{s['first_s']:.2f} s), {steady:.2f} fps from the first frame written to the "
              f"last, then {s['total_s'] - s['written_s']:.2f} s to finish the package "
              "(track file hashed, XML)")
        n = r["frames"]
        coding = max(s["written_s"] - s["first_s"], 1e-9)
        print(f"    while coding: the receiving thread busy {100 * s['loop_cpu_s'] / coding:.0f} %"
              f" of the time, the writing thread {100 * s['write_cpu_s'] / coding:.0f} %")
        print(f"    CPU per frame: writing process {1e3 * s['main_cpu_s'] / n:.1f} ms, encoder "
              f"processes {1e3 * s['coders_cpu_s'] / n:.1f} ms (start included); on average "
              f"{(s['main_cpu_s'] + s['coders_cpu_s']) / s['total_s']:.1f} of "
              f"{usable_cores()} cores busy")
        if s["timeline"]:
            middle = steady_fps(s["timeline"])
            if middle is not None:
                print(f"    steady: {middle:.2f} fps over the middle 80 % of the frames")
            print("\n".join(timeline_lines(s["timeline"], s["threads"])))
    return best


def _print_medians(r: dict, rounds: int) -> None:
    """Each setting's median rate over the rounds, and its share of reading alone."""
    memory = max(r["read_fps"].values(), default=None)
    print(f"  medians of {rounds} rounds, from the first frame written to the last"
          + (f" (share: of the median reading alone into memory, {memory:.2f} fps, "
             f"the best of the process counts; and of reading alone to the GPU the "
             f"same way, where measured)" if memory else "") + ":")
    for first, runs, rate, steady in variant_medians(r):
        share = f", {100 * rate / memory:.0f} %" if memory else ""
        gpu = None if first.get("held") else same_way_read(r, first)
        if gpu:
            share += f" and {100 * rate / gpu:.0f} % of {gpu:.2f}"
        print(f"    {first['processes']} process(es) x {first['threads']} thread(s)"
              f"{_setting_words(first)}: {rate:.2f} fps{share} ("
              + " / ".join(f"{written_rate(s, r['frames']):.2f}" for s in runs) + ")"
              + ("" if steady is None else f"; steady {steady:.2f}"))


if __name__ == "__main__":
    main()
