"""Mastering: images -> DCI X'Y'Z' codestreams -> an SMPTE DCP of one or more reels (or an IMF
package): :func:`master` runs a :class:`.master_job.MasterJob`.

One frame: read (or make) the image -> fit it to the DCI image area (flat, scope or full) ->
RGB to X'Y'Z' 12-bit and encode (:class:`.frame_encode.FrameEncoders`: on the GPU the colour
conversion, forward stage and tier-1 run there, each thread on its own CUDA stream) -> the
track file, in order. Frames are read and encoded a bounded window ahead of the writer
(:mod:`.frame_coders`): on the GPU by encoder processes of a few threads each, which read and
decode their own frames when the frames come from files (:class:`.images_in.ImageFrames`);
otherwise by threads of this process (the encoder releases the GIL: OpenJPEG runs as a process,
the GPU encoder waits on the device, and the CPU encoder's tier-1 codes each tile in one numba
call without it); or, with a cluster, by the workers of a Dask cluster
(:mod:`.cluster_coders`), which read their own frames too. A composition longer than its input
repeats the input (a still image becomes a shot); each distinct input frame is encoded once.
The sound track file is written beside the picture's when the last frame is in; so is the
timed-text track file.  With several reels the writer cuts picture, sound and subtitles into
each reel's own track files as the frames pass (ST 429-2 8.3); with a key file every track
file is encrypted under its own key (ST 429-6); with a signer the CPL and PKL are signed
(ST 429-7, ST 429-8).  With a ``report`` page, each distinct input frame's codestream is
measured against the source as the loop takes it (:class:`.report.psnr.PsnrMeter`, beside
the writer), and the finished package's QC report written with those figures
(:func:`cinegpu.jobs.report.write_report`).  Everything the job can be refused for was
checked when it was made.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm import tqdm

from cinegpu.decode.cpus import usable_cores
from cinegpu.jobs.cluster import connect
from cinegpu.jobs.cluster_coders import ClusterCoders
from cinegpu.jobs.frame_coders import Coded, CoderSetup, ProcessCoders, ThreadCoders, device_environ
from cinegpu.jobs.frame_encode import FrameEncoders, device_for, pick_backend
from cinegpu.jobs.master_job import Encoding, FrameCoding, InputFrames, MasterJob
from cinegpu.jobs.mps import start_private_mps
from cinegpu.jobs.report import write_report
from cinegpu.jobs.report.psnr import MasterPsnr, PsnrMeter, component_names
from cinegpu.jobs.write_behind import WriteBehind
from cinegpu.media.images.frames import fit
from cinegpu.media.images.geometry import Placement
from cinegpu.media.package.dcp_write import DCPWriter, Package
from cinegpu.media.package.imf_write import IMFWriter
from cinegpu.media.package.interop_write import InteropDCPWriter

__all__ = ["MasterFigures", "Mastered", "master"]


@dataclass(frozen=True)
class MasterFigures:
    """How a master went: its encoder ``processes`` and ``threads`` in each (a cluster's
    worker processes and threads), whether a CUDA MPS of its own ran (``mps``), and the
    seconds from the call of :func:`master` until the encoders were ready (``ready_s``), the
    first frame was written (``first_s``), the last frame was (``written_s``) and the package
    was complete (``total_s``: the track files finished and hashed, the sound and subtitles
    written, the XML); the CPU seconds of the thread that took the coded frames
    (``loop_cpu_s``) and of the one that wrote them (``write_cpu_s``) meanwhile."""

    processes: int
    threads: int
    mps: bool
    ready_s: float
    first_s: float
    written_s: float
    total_s: float
    loop_cpu_s: float
    write_cpu_s: float


@dataclass(frozen=True)
class Mastered:
    """A finished master: the ``package`` written, its ``stats``, where each input frame
    landed in the picture (``placement``: a :class:`.geometry.Placement`, crop and scale) and
    the QC report written of it (``report``: the page and its JSON twin; None: not asked)."""

    package: Package
    stats: MasterFigures
    placement: Placement | None = None
    report: tuple[Path, Path] | None = None


def master(job: MasterJob, *, progress: bool = True, timeline: list | None = None) -> Mastered:
    """Master ``job``: read its first frame (the image area, the encoder's profile), set up
    the coders, write every frame of the composition in order and finish the package (written
    beside ``job.out`` and moved there when complete; a failure, Ctrl-C or SIGTERM removes
    it).  ``progress``: a progress bar on a terminal.  ``timeline``: a list to which encoder
    processes' frames are appended as :class:`.frame_coders.FrameTiming` (benchmarks).
    With ``job.report``, the package's QC report is written once it is complete, with each
    frame's PSNR against the source (:func:`_psnr_meter`).
    Raises ValueError for a first frame of a size no package takes, MediaError for a bad
    frame, a failed encoder or a full disk (or a report that cannot be written: the
    package is complete then)."""
    started = time.perf_counter()
    _, coding = _first_frame(job)
    encoders = private = coders = bar = meter = None
    try:
        processes, threads = 1, job.compute.workers or 1
        if job.compute.cluster is None:
            encoders = coding.encoding.encoders()
            processes, threads = _layout(job, encoders)
            if job.compute.mps and processes > 1 and encoders.backend == "cuda" and \
                    processes > encoders.gpus:
                private = start_private_mps()        # before any thread of ours (its fork)
        bar = _progress(job.length * job.picture.eyes, job.composition.title, progress,
                        private is not None)
        if job.compute.cluster is not None:
            coders = _cluster_coders(job, coding, threads)
        elif processes > 1:
            # a video file is decoded in order by each process: its frames go out in runs
            coders = ProcessCoders(_process_setups(coding, encoders, threads, private),
                                   processes, timeline=timeline, runs=getattr(coding.read, "sequential", False))
        else:
            # the reader itself (frame 0 read again): the upload seam takes image files and
            # video frames by their readers' own paths (jobs/frame_uploads.py)
            coders = ThreadCoders(encoders, coding.read, coding.width, coding.height, threads,
                                  coding.placement)
        if job.report is not None:
            meter = _psnr_meter(coding, encoders)
        ready = time.perf_counter()
        package, behind, loop_cpu = _write(job, coders, coding, bar, meter)
        figures = (coders.processes, coders.threads)
        coders = None
        measured = meter.finish() if meter is not None else None
        meter = None
    finally:
        if meter is not None:
            meter.close()
        if coders is not None:
            # a failure: drop the frames not started, end the encoder processes; the writer's
            # exit has removed the partial folder without waiting for the frames being
            # encoded (they only return bytes)
            coders.close(abort=True)
        if encoders is not None:
            encoders.close()
        if private is not None:
            private.close()
        if bar is not None:
            bar.close()
    stats = MasterFigures(
        *figures, mps=private is not None, ready_s=ready - started,
        first_s=behind.first_s - started, written_s=behind.last_s - started,
        total_s=time.perf_counter() - started, loop_cpu_s=loop_cpu, write_cpu_s=behind.cpu_s)
    report = None
    if measured is not None:
        p = job.picture
        psnr = MasterPsnr(measured, job.input.count, p.eyes, p.bits, component_names(p.imf, p.sampling))
        report = write_report(job.report, package.root, psnr=psnr, progress=progress)
    return Mastered(package, stats, coding.placement, report)


def _first_frame(job: MasterJob) -> tuple[np.ndarray, FrameCoding]:
    """The input's first frame, and what coding each frame needs: the input held to the
    first frame's size, the image area and the encoder's profile for it
    (:meth:`.Picture.coded_size`: ValueError above 4K for IMF), the encoders' settings."""
    first, read = job.input.first()
    width, height, profile = job.picture.coded_size(first.shape[1], first.shape[0])
    placement = job.picture.placement(first.shape[1], first.shape[0])  # ValueError: a crop too large
    c = job.compute
    return first, FrameCoding(read, width, height,
                              Encoding(job.picture, profile, c.backend, c.gpus, c.rate_on_gpu),
                              placement)


def _psnr_meter(coding: FrameCoding, encoders: FrameEncoders | None) -> PsnrMeter:
    """The report's :class:`.report.psnr.PsnrMeter`: input frame ``k`` read again as the
    encoders are given it (:meth:`.FrameUploads.host_image`: a video frame that goes up as
    planes made R'G'B' by the GPU's twin), fitted as the coders fit it (:func:`.images_in.fit`)
    and taken to the code values ``encoders`` code (:meth:`.FrameEncoders.samples`; a
    cluster's frames: those of a CPU encoder of the job's settings, the host's, within one
    code value of a GPU worker's X'Y'Z', a video frame there read through libswscale, which
    its GPU workers' planes differ from by up to about 1/256), on a quarter of the cores (at
    least one thread)."""
    if encoders is None:           # never encodes: no encoder, nothing uploaded, nothing to close
        encoders = replace(coding.encoding, backend="cpu").encoders()

    def samples(k: int):
        image = encoders.uploads.host_image(coding.read, k)     # a video frame as the GPU makes it
        return encoders.samples(fit(image, coding.width, coding.height, coding.placement))
    return PsnrMeter(samples, coding.encoding.picture.bits, threads=max(1, usable_cores() // 4))


def _write(job: MasterJob, coders, coding: FrameCoding, bar,
           meter: PsnrMeter | None = None) -> tuple[Package, WriteBehind, float]:
    """The write loop and the finish: every frame of the composition from ``coders`` in order
    (an input frame coded once, kept where the input repeats) handed to the writer's thread
    (and each input frame's codestream, once, to the report's ``meter``),
    then the coders told to stop while the package is finished (the track files hashed, the
    XML written), then closed.  (The package, the writer's thread with its times, the CPU
    seconds of this thread in the loop.)"""
    total, count = job.length * job.picture.eyes, job.input.count   # codestreams (3D: eye by eye)
    cache: dict[int, Coded] = {}
    with _writer(job, coding.width, coding.height) as dcp:
        # each frame with the header its encoder wrote: the writer parses none but the first
        behind = WriteBehind(lambda coded: dcp.write(*coded), depth=8)
        try:
            loop_cpu = time.thread_time()
            submitted = 0
            for i in range(total):
                while submitted < count and coders.has_room():
                    coders.submit(submitted)
                    submitted += 1
                k = i % count
                if k in cache:
                    coded = cache[k]
                else:
                    coded = coders.next()
                    if total > count:
                        cache[k] = coded
                    if meter is not None:
                        meter.put(k, coded.codestream)
                behind.put(coded)
                if bar is not None:
                    bar.update(1)
            loop_cpu = time.thread_time() - loop_cpu
            behind.finish()
        except BaseException:
            behind.stop()
            raise
        coders.stop()             # they end while the package is finished
        package = dcp.close()
        coders.close()
    return package, behind, loop_cpu


def _writer(job: MasterJob, width: int, height: int):
    """The package's writer: :class:`.imf_write.IMFWriter`, :class:`.interop_write.
    InteropDCPWriter` (an Interop DCP), or :class:`.dcp_write.DCPWriter` with the job's reels,
    keys and signer (a picture of ``width`` x ``height``)."""
    p, c, rate = job.picture, job.composition, job.picture.fps
    if p.imf:
        return IMFWriter(job.out, title=c.title, edit_rate=rate, kind=c.kind, sound=job.sound)
    reels = job.reel_lengths
    if p.interop:
        return InteropDCPWriter(job.out, title=c.title, edit_rate=rate, aspect=(width, height),
                                kind=c.kind, sound=job.sound, subtitles=c.subtitles,
                                reels=reels if len(reels) > 1 else None, metadata=c.metadata)
    return DCPWriter(job.out, title=c.title, edit_rate=rate, aspect=(width, height),
                     kind=c.kind, sound=job.sound, subtitles=c.subtitles,
                     reels=reels if len(reels) > 1 else None, keys=job.protection.keys,
                     signer=job.protection.signer, metadata=c.metadata,
                     stereoscopic=p.stereoscopic, captions=c.captions)


def _process_setups(coding: FrameCoding, encoders: FrameEncoders, threads: int,
                    private) -> Callable[[int], CoderSetup]:
    """Each encoder process's :class:`.frame_coders.CoderSetup`: ``threads`` threads coding
    with the back end this process settled; on the GPU its device (the processes take the
    GPUs in turn, :func:`.frame_encode.device_for`) and the environment that shows it that GPU
    alone (through the job's ``private`` MPS where one runs)."""
    cuda = encoders.backend == "cuda"
    coding = replace(coding, encoding=replace(
        coding.encoding, backend=encoders.backend,
        gpus=encoders.gpus if cuda else coding.encoding.gpus))

    def setup(p: int) -> CoderSetup:
        if not cuda:
            return CoderSetup(coding, None, threads)
        device = device_for(p, encoders.gpus)
        environ = private.device_environ(device) if private is not None else \
            device_environ(device, os.environ)
        return CoderSetup(coding, device, threads, environ)
    return setup


def _cluster_coders(job: MasterJob, coding: FrameCoding, threads: int) -> ClusterCoders:
    """:class:`.cluster_coders.ClusterCoders` on the job's cluster (a local one of
    ``threads`` threads per worker): the back end ``auto`` is ``cuda`` when the cluster has
    GPU workers (a local cluster: when this machine has a GPU, each worker then offering
    ``GPU=1``).  MediaError from :func:`.cluster.connect`."""
    address = job.compute.cluster
    backend = job.compute.backend
    resources = None
    if address.local:
        backend = pick_backend(backend)
        resources = {"GPU": 1} if backend == "cuda" else None
    cluster = connect(address, threads=threads, resources=resources)
    try:
        if backend == "auto":
            backend = "cuda" if cluster.gpu_workers() else "cpu"
        coding = replace(coding, encoding=replace(coding.encoding, backend=backend, gpus=1))
        return ClusterCoders(cluster, coding, backend, send_frames=not address.shared_files)
    except BaseException:
        cluster.close()
        raise


def _layout(job: MasterJob, encoders: FrameEncoders) -> tuple[int, int]:
    """(encoder processes, threads in each) of this machine for ``job``: as asked, else the
    encoders' defaults (:func:`_processes`, :meth:`.FrameEncoders.default_workers`)."""
    processes = _processes(job.compute.processes, encoders, job.input)
    return processes, max(1, job.compute.workers or encoders.default_workers(processes))


def _processes(processes: int | None, encoders: FrameEncoders, frames: InputFrames) -> int:
    """Encoder processes for a job of ``frames``: as asked, or the encoders' default for
    their count when they pickle (a :class:`.master_job.MasterJob` that asks for more than one
    has been refused where they do not) and the encoder is ours, else one; never more than
    the frames."""
    want = processes if processes is not None else encoders.default_processes(frames.count)
    if want > 1 and processes is None and not frames.picklable:
        want = 1
    if want > 1 and not encoders.ours:
        want = 1                   # the OpenJPEG stand-in is a process per frame already
    return max(1, min(want, frames.count))


#: characters of a title a progress bar shows
BAR_TITLE = 28
#: fields of a Digital Cinema Naming Convention title (FilmTitle_ContentType_...): at least these
DCNC_FIELDS = 8


def bar_title(title: str, width: int = BAR_TITLE) -> str:
    """A content title short enough for a progress bar's label: the film title of one written
    after the Digital Cinema Naming Convention (``cinegpu-Demo`` of
    ``cinegpu-Demo_TST-1_F_XX-XX_51_2K_CINEGPU_20260101_CGP_SMPTE_OV``), and any title longer
    than ``width`` characters cut at a word with an ellipsis, never in mid-field."""
    fields = title.split("_")
    if len(fields) >= DCNC_FIELDS and fields[0]:
        title = fields[0]
    if len(title) <= width:
        return title
    cut = title[:width - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > width // 2 else cut).rstrip() + "\u2026"


def _progress(total: int, title: str, enabled: bool, mps: bool):
    """A progress bar of ``total`` frames (None: not ``enabled``), saying where the GPUs are
    shared through the job's ``mps``."""
    if not enabled:
        return None
    # disable=None: drawn only on a terminal, never into a redirected stderr
    bar = tqdm(total=total, unit="frame", desc=f"mastering {bar_title(title)}", dynamic_ncols=True,
               disable=None)
    if mps:
        bar.set_postfix_str("GPUs shared through CUDA MPS")
    return bar
