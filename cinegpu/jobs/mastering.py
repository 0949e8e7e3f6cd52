"""Mastering: images -> DCI X'Y'Z' codestreams -> an SMPTE DCP of one or more reels.

One frame: read (or make) the image -> fit it to the DCI image area (flat, scope or full) ->
RGB to X'Y'Z' 12-bit and encode (:class:`.frame_encode.FrameEncoders`: on the GPU the colour
conversion, forward stage and tier-1 run there, each thread on its own CUDA stream) -> the
track file, in order. Frames are read and encoded a bounded window ahead of the writer
(:mod:`.frame_coders`): on the GPU by encoder processes of a few threads each, which read and
decode their own frames when the frames come from files (:class:`.images_in.ImageFrames`);
otherwise by ``workers`` threads of this process (the encoder releases the GIL: OpenJPEG runs
as a process, the GPU encoder waits on the device, and the CPU encoder's tier-1 codes each
tile in one numba call without it); or, with ``cluster``, by the workers of a Dask cluster
(:mod:`.cluster_coders`), which read their own frames too. A
composition shorter than ``frames`` repeats its input (a still image becomes a shot of ``frames``
frames); each distinct input frame is encoded once. With ``sound`` (:func:`.sound_in.open_sound`)
its length is checked against the composition before the first frame is encoded, and the sound
track file is written beside the picture's when the last frame is in; so is the timed-text track
file of ``subtitles`` (checked and converted before, by :func:`.subtitle_write.prepare_subtitles`).
With several reels (``reels``, ``reel_length``) the writer cuts picture, sound and subtitles
into each reel's own track files as the frames pass (ST 429-2 8.3); with ``keys`` every track
file is encrypted under its own key (ST 429-6) and the keys are written to that file; with
``signer`` the CPL and PKL are signed (ST 429-7, ST 429-8).
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import replace
from fractions import Fraction
from typing import Callable

import numpy as np

from cinegpu.decode.codestream import dci, imf

from cinegpu.media.images.colour import COLORSPACES, SAMPLINGS
from cinegpu.media.package.dcp_write import DCPWriter, Package, check_key_path, check_reels, reels_of_length
from cinegpu.jobs.frame_coders import CoderSetup, ProcessCoders, ThreadCoders, device_environ
from cinegpu.jobs.frame_encode import FrameEncoders, device_for, pick_backend
from cinegpu.jobs.write_behind import WriteBehind
from cinegpu.media.package.imf_write import IMFWriter
from cinegpu.media.security.package_signature import check_signer
from cinegpu.media.images.frames import ImageFrames, image_area, list_frames, max_input_size
from cinegpu.jobs.mps import start_private_mps
from cinegpu.media.sound.inputs import SoundInput
from cinegpu.media.subtitles.write import TimedTextAsset

__all__ = ["check_imf", "master", "master_images"]


def master(get_frame: Callable[[int], np.ndarray], count: int, out, *, title: str,
           profile: str = "2k", fps=24, bitrate: float | None = None,
           colorspace: str = "rec709", container: str = "auto", frames: int | None = None,
           workers: int | None = None, kind: str = "feature", progress: bool = True,
           backend: str = "auto", sound: SoundInput | None = None,
           subtitles: TimedTextAsset | None = None, format: str = "dcp",
           codec: str = "j2k", bits: int = 12, lossless: bool = False,
           sampling: str = "rgb", processes: int | None = None, gpus: int | None = 1,
           cluster: str | None = None, stats: dict | None = None, reels=None,
           reel_length=None, keys=None, signer=None, timeline: list | None = None,
           mps: bool = True, rate_on_gpu: bool | None = None) -> Package:
    """Master ``count`` input images (``get_frame(i)``: (H, W, 3) floats 0..1, or integers
    read as a fraction of their dtype's maximum) into a DCP at ``out``. ``frames``:
    composition length (default ``count``; the input repeats to fill it). ``bitrate`` in
    Mbit/s. ``backend``: the encoder's ``cpu`` or ``cuda`` (``auto``: CUDA when there is a
    device; colour conversion, forward stage and tier-1 then run on the GPU). ``sound``:
    checked sound input, cut or padded to the composition (see :meth:`SoundInput.fit`, which
    the caller may run first to show its warning). ``subtitles``: a reel's subtitles made by
    :func:`.subtitle_write.prepare_subtitles` for ``frames`` frames. ``format`` "imf": an IMF
    App #2E package instead (:func:`check_imf`: ``profile`` and ``container`` are not used, the
    picture keeps its size and its R'G'B' at ``bits`` per component; ``codec`` "htj2k" codes
    HTJ2K, ``lossless`` with the 5/3 path; ``sampling`` "ycbcr444"/"ycbcr422" writes Rec. 709
    Y'CbCr instead of R'G'B'; the sound track as long as the picture, in samples).
    ``processes``: encoder processes (:class:`.frame_coders.ProcessCoders`), each with
    ``workers`` threads; None: :meth:`.FrameEncoders.default_processes` when ``get_frame``
    pickles (e.g. a :class:`.images_in.ImageFrames`), else 1 (threads of this process).
    ``gpus``: CUDA devices the encoders are spread over (None: every one).  ``cluster``: a
    Dask scheduler's address or ``local[:N]`` (:func:`.cluster.parse_address`): the frames are
    coded there (:class:`.cluster_coders.ClusterCoders`; ``get_frame`` must pickle, and the
    workers see its files) and written here in order; ``processes`` and ``gpus`` do not
    apply, ``workers`` is a local cluster's threads per worker process.  ``stats``: a
    dict, filled with ``processes``, ``threads`` and the seconds from the call until the
    encoders were ready (``ready_s``), the first frame was written (``first_s``), the last
    frame was (``written_s``) and the package was complete (``total_s``: the track files
    finished and hashed, the sound and subtitles written, the XML).  ``reels``: each reel's length in frames (summing to
    the composition), or ``reel_length``: reels of that many seconds, the last taking the rest
    (:func:`.dcp_write.reels_of_length`); each reel has its own track files, the sound and
    subtitles cut at the joins (:class:`.dcp_write.DCPWriter`). ``keys``: encrypt every track
    file under its own key and write the keys to this new file (ST 429-6,
    :mod:`.content_keys`).  ``signer``: a :class:`.package_signature.Signer` that signs the
    CPL and PKL (ST 429-7, ST 429-8; checked before anything is encoded).  ``timeline``: a
    list to which encoder processes' frames are appended as
    :class:`.frame_coders.FrameTiming` (benchmarks).  ``mps``: where encoder processes
    outnumber the GPUs, let them share each GPU through a CUDA MPS of the job's own
    (:func:`.mps.start_private_mps`, where it is available; ``stats["mps"]`` says whether it
    ran).  ``rate_on_gpu``: Part-1 rate control's hull and thresholds on the GPU
    (:attr:`.FrameEncoders.rate_on_gpu`; the same codestreams).  Raises ValueError for a
    bad profile, rate, size, colour space, ``processes`` or reels, MediaError for sound
    shorter than the picture or a key file that exists."""
    started = time.perf_counter()
    rate = Fraction(fps)
    if format == "imf":
        check_imf(codec, rate, colorspace, bits, sound, subtitles, lossless, bitrate, sampling)
    elif sampling != "rgb":
        raise ValueError("Y'CbCr sampling is for IMF packages (--format imf): a DCP is X'Y'Z'")
    elif format != "dcp":
        raise ValueError(f"format must be dcp or imf, got {format!r}")
    else:
        try:
            p = dci.profile(profile)
        except ValueError:
            raise ValueError(f"profile must be 2k or 4k, got {profile!r}") from None
        if rate not in p.frame_rates:
            raise ValueError(f"{fps} fps is not a {p.title} rate {p.frame_rates}")
    if colorspace not in COLORSPACES:
        raise ValueError(f"colorspace must be one of {COLORSPACES}, got {colorspace!r}")
    if count < 1:
        raise ValueError("no input frames")
    total = frames or count
    if sound is not None:            # MediaError before anything is encoded
        if format == "imf":
            sound = sound.for_imf()
            sound.fit_imf(total, rate)
        else:
            sound.fit(total, rate)
    if subtitles is not None and subtitles.duration != total:
        raise ValueError(f"subtitles prepared for {subtitles.duration} frames; the composition has {total}")
    reels = _reels(reels, reel_length, total, rate, format, keys)
    if signer is not None:
        if format == "imf":
            raise ValueError("signed IMF packages are not written: --sign is for DCPs")
        check_signer(signer)            # MediaError before anything is encoded
    first = get_frame(0)
    if format == "imf":
        width, height = first.shape[1], first.shape[0]
        encoder_profile = imf.profile_for(width, height).name      # ValueError above 4K

        def writer():
            return IMFWriter(out, title=title, edit_rate=rate, kind=kind, sound=sound)
    else:
        area, width, height = image_area(first.shape[1], first.shape[0], profile, container)
        encoder_profile = profile

        def writer():
            return DCPWriter(out, title=title, edit_rate=rate, aspect=(width, height),
                             kind=kind, sound=sound, subtitles=subtitles,
                             reels=reels if len(reels) > 1 else None, keys=keys,
                             signer=signer)

    options = dict(profile=encoder_profile, fps=rate, bitrate=bitrate, colorspace=colorspace,
                   backend=backend, bits=bits, codec=codec if format == "imf" else "j2k",
                   lossless=lossless, sampling=sampling, gpus=gpus, rate_on_gpu=rate_on_gpu)
    encoders = procs = private = None
    if cluster is None:
        encoders = FrameEncoders(**options)
        procs = _processes(processes, encoders, get_frame, count)
        workers = max(1, workers or encoders.default_workers(procs))
        if mps and procs > 1 and encoders.backend == "cuda" and procs > encoders.gpus:
            private = start_private_mps()        # before any thread of ours (its fork)
    bar = _progress(total, title, progress)
    if bar is not None and private is not None:
        bar.set_postfix_str("GPUs shared through CUDA MPS")
    cache: dict[int, bytes] = {}
    coders = first_s = None
    try:
        if cluster is not None:
            coders = _cluster_coders(cluster, get_frame, width, height, options, workers or 1)
            procs, workers = coders.processes, coders.threads
        elif procs > 1:
            options["backend"] = encoders.backend
            if encoders.backend == "cuda":
                options["gpus"] = encoders.gpus

            def setup(p: int) -> CoderSetup:
                if encoders.backend != "cuda":
                    return CoderSetup(get_frame, width, height, options, None, workers)
                device = device_for(p, encoders.gpus)
                environ = private.device_environ(device) if private is not None else \
                    device_environ(device, os.environ)
                return CoderSetup(get_frame, width, height, options, device, workers, environ)
            coders = ProcessCoders(setup, procs, timeline=timeline)
        else:
            coders = ThreadCoders(encoders, lambda i: first if i == 0 else get_frame(i),
                                  width, height, workers)
        ready = time.perf_counter()
        with writer() as dcp:
            behind = WriteBehind(dcp.write, depth=8)
            try:
                loop_cpu = time.thread_time()
                submitted = 0
                for i in range(total):
                    while submitted < count and coders.has_room():
                        coders.submit(submitted)
                        submitted += 1
                    k = i % count
                    if k in cache:
                        data = cache[k]
                    else:
                        data = coders.next()
                        if total > count:
                            cache[k] = data
                    behind.put(data)
                    if bar is not None:
                        bar.update(1)
                loop_cpu = time.thread_time() - loop_cpu
                behind.finish()
            except BaseException:
                behind.stop()
                raise
            first_s, written = behind.first_s, behind.last_s
            coders.stop()             # they end while the package is finished
            package = dcp.close()
            coders.close()
            coders = None
    finally:
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
    if stats is not None:
        stats.update(processes=procs, threads=workers, mps=private is not None,
                     ready_s=ready - started,
                     first_s=first_s - started, written_s=written - started,
                     total_s=time.perf_counter() - started, loop_cpu_s=loop_cpu,
                     write_cpu_s=behind.cpu_s)
    return package


def _reels(reels, reel_length, total: int, rate: Fraction, format: str = "dcp",
           keys=None) -> tuple[int, ...]:
    """The reels' lengths in frames: ``reels`` as given (they must make ``total``), or cut
    every ``reel_length`` seconds, or one reel; each at least a second (ValueError). Checked
    before anything is encoded, with the key file's path (:func:`.dcp_write.check_key_path`)
    and what IMF refuses (several reels, encryption)."""
    if keys is not None:
        check_key_path(keys)
    if format == "imf" and (keys is not None or (reels is not None and len(reels) > 1)
                            or reel_length is not None):
        raise ValueError("IMF packages are written with one segment and in the clear: "
                         "several reels and --encrypt are for DCPs")
    if reels is not None and reel_length is not None:
        raise ValueError("reels come from the input folders or from --reel-length, not both")
    if reel_length is not None:
        return reels_of_length(total, rate, reel_length)
    if reels is None:
        return (total,)
    reels = check_reels(reels, rate)
    if sum(reels) != total:
        raise ValueError(f"reels of {sum(reels)} frames for a composition of {total}")
    return reels


def _cluster_coders(where: str, get_frame, width: int, height: int, options: dict,
                    threads: int):
    """:class:`.cluster_coders.ClusterCoders` on the cluster at ``where`` (a local one of
    ``threads`` threads per worker): the back end ``auto`` is ``cuda`` when the cluster has
    GPU workers (a local cluster: when this machine has a GPU, each worker then offering
    ``GPU=1``).  ValueError when ``get_frame`` does not pickle; MediaError from
    :func:`.cluster.connect`."""
    from cinegpu.jobs.cluster import connect, parse_address
    from cinegpu.jobs.cluster_coders import ClusterCoders, ClusterJob
    try:
        pickle.dumps(get_frame)
    except Exception:
        raise ValueError("cluster workers read their own frames: get_frame must pickle (e.g. "
                         f"an images_in.ImageFrames), not a {type(get_frame).__name__}") from None
    address = parse_address(where)
    backend = options["backend"]
    resources = None
    if address.local:
        backend = pick_backend(backend)
        resources = {"GPU": 1} if backend == "cuda" else None
    cluster = connect(address, threads=threads, resources=resources)
    try:
        if backend == "auto":
            backend = "cuda" if cluster.gpu_workers() else "cpu"
        job = ClusterJob.of(get_frame, width, height,
                            dict(options, backend=backend, gpus=1))
        return ClusterCoders(cluster, job, backend)
    except BaseException:
        cluster.close()
        raise


def _processes(processes: int | None, encoders: FrameEncoders, get_frame, count: int) -> int:
    """Encoder processes for a job of ``count`` input frames: as asked (ValueError when more
    than one is asked and ``get_frame`` does not pickle), or the encoders' default for
    ``count`` frames when ``get_frame`` pickles and the encoder is ours, else one; never more
    than the frames."""
    if processes is not None and processes < 1:
        raise ValueError(f"processes must be at least 1, got {processes}")
    want = processes if processes is not None else encoders.default_processes(count)
    if want > 1:
        try:
            pickle.dumps(get_frame)
        except Exception:
            if processes is not None:
                raise ValueError("encoder processes read their own frames: get_frame must "
                                 "pickle (e.g. an images_in.ImageFrames), not a "
                                 f"{type(get_frame).__name__}") from None
            want = 1
        if not encoders.ours:
            want = 1                   # the OpenJPEG stand-in is a process per frame already
    return max(1, min(want, count))


_SAMPLING_NAMES = {"rgb": "R'G'B'", "ycbcr444": "Y'CbCr 4:4:4", "ycbcr422": "Y'CbCr 4:2:2"}


def check_imf(codec: str, rate: Fraction, colorspace: str, bits: int, sound=None,
              subtitles=None, lossless: bool = False, bitrate=None, sampling: str = "rgb") -> None:
    """ValueError unless an IMF package can be mastered with these: Part-1 JPEG 2000 or HTJ2K
    (``lossless``: HTJ2K only, without a ``bitrate``), an ST 2067-21 edit rate, Rec. 709
    input, 10 or 12 bits, a sampling of :data:`.colour.SAMPLINGS` that an App #2E edition
    allows at that depth, rate and codec (:func:`imf.identification`), no subtitles. ``sound`` (a :class:`.sound_in.SoundInput`) must
    last a whole number of samples as long as the picture: :meth:`~.SoundInput.fit_imf`,
    checked by :func:`master`."""
    if codec not in ("j2k", "htj2k"):
        raise ValueError(f"codec must be j2k or htj2k, got {codec!r}")
    if rate not in imf.FRAME_RATES:
        rates = ", ".join(f"{float(r):g}" for r in imf.FRAME_RATES)
        raise ValueError(f"{float(rate):g} fps is not an IMF rate ({rates})")
    if colorspace != "rec709":
        raise ValueError(f"IMF packages carry the input's R'G'B' as it is: only rec709 input "
                         f"is written so far, got {colorspace!r}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    if bits not in imf.PRECISIONS:
        raise ValueError(f"IMF bit depth must be one of {imf.PRECISIONS}, got {bits}")
    ycbcr = sampling != "rgb"
    if imf.identification(codec == "htj2k", ycbcr, 2 if sampling == "ycbcr422" else 1, bits,
                          1, 1, rate) is None:
        raise ValueError(
            f"ST 2067-21 App #2E does not allow {bits}-bit {_SAMPLING_NAMES[sampling]} "
            f"{'HTJ2K' if codec == 'htj2k' else 'JPEG 2000'} at {float(rate):g} fps (Table 3, "
            f"as photon checks it: Y'CbCr 4:4:4 is 8/10-bit, and under HTJ2K at 25, 29.97 "
            f"or 30 fps only): use R'G'B' or 4:2:2")
    if lossless and codec != "htj2k":
        raise ValueError("--lossless is written for --codec htj2k only (Part-1 IMF is the "
                         "lossy 9/7 profile here)")
    if lossless and bitrate is not None:
        raise ValueError("--lossless and --bitrate exclude each other")
    if subtitles is not None:
        raise ValueError("subtitles in IMF packages are not supported yet (IMF timed text is "
                         "ST 2067-2 IMSC1, not the DCP's ST 428-7): leave out --subtitles")


def master_images(path, out, *, profile: str = "2k", **options) -> Package:
    """Master a TIFF/PNG/DPX frame, or a folder of them in natural order (see :func:`master`);
    ``path`` a list of several folders: one reel per folder, in the order given (each at
    least a second long; not with ``frames`` or ``reel_length``).

    Every frame must have the first frame's size, and none may be larger than
    :func:`.images_in.max_input_size` of ``profile``; both are checked from each file's header
    before its pixels are decoded. A bad frame raises MediaError naming its file and number."""
    paths = [path] if isinstance(path, (str, bytes)) or hasattr(path, "__fspath__") else list(path)
    folders = [list_frames(p) for p in paths]
    files = [f for fs in folders for f in fs]
    if len(folders) > 1:
        if options.get("frames") not in (None, len(files)):
            raise ValueError("with several INPUT folders (one reel each) the composition is the "
                             "input: leave out --frames")
        options["reels"] = [len(fs) for fs in folders]
    limit = imf.IMF_4K.container if options.get("format") == "imf" else max_input_size(profile)
    frames = ImageFrames(tuple(map(str, files)), limit)
    first = frames(0)
    return master(replace(frames, size=(first.shape[1], first.shape[0])), len(files), out,
                  profile=profile, **options)


def _progress(total: int, title: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    # disable=None: drawn only on a terminal, never into a redirected stderr
    return tqdm(total=total, unit="frame", desc=f"mastering {title}"[:40], dynamic_ncols=True,
                disable=None)

