"""Mastering one frame: an input image -> DCI X'Y'Z' 12-bit -> a DCI codestream.

:class:`FrameEncoders` keeps one :class:`cinegpu.encode.Encoder` per worker thread (its
geometry cache, and on the GPU its own CUDA stream, so that threads overlap on one device).
With the ``cuda`` back end the frame goes up once as it was read (8/16-bit integers or
float32) and the colour conversion (:func:`cinegpu.encode.gpu.rgb_to_xyz12`, the GPU twin of
:func:`.colour.to_xyz12`), the forward stage and tier-1 run there; only the coded blocks come
back.  On the CPU the same chain runs in numpy and numba.  The bit-planes the budget drops are
not coded (:mod:`cinegpu.encode.early_stop`, decided per frame from the frame alone), so a
frame's bytes never depend on which thread coded it or on the frames before it.  How an input
frame reaches the encoders is their upload seam's to say (:attr:`FrameEncoders.uploads`,
:mod:`.frame_uploads`).  ``CINEGPU_ENCODER=opj_compress`` selects the OpenJPEG stand-in of
:mod:`.dcp_write`.
"""

from __future__ import annotations

import os
import threading
from fractions import Fraction

import numpy as np

from cinegpu.decode.backend import ENCODER_NAMES, select_backend
from cinegpu.decode.codestream import dci, imf
from cinegpu.decode.cpus import usable_cores
from cinegpu.encode.encoder import Encoder, EncoderSettings, GeometryCache
from cinegpu.encode.presets import Coding
from cinegpu.jobs.frame_uploads import FrameUploads, UploadSettings
from cinegpu.jobs.gpu_waits import sleep_on_waits
from cinegpu.media.errors import UnsupportedMedia
from cinegpu.media.images.colour import rgb_to_ycbcr, to_xyz12, xyz12_parameters
from cinegpu.media.images.frames import fit, unit_scale
from cinegpu.media.mxf.write import J2KHeader
from cinegpu.media.package.dcp_write import _cinegpu_encoder, encode_frame, encoder_name
from cinegpu.media.video.ycbcr import YCbCrPlanes, to_rgb48

__all__ = ["FUSED_CODE_VALUES", "GPU_PROCESSES", "GPU_WORKERS", "PROCESS_MIN_FRAMES",
           "PROCESS_THREADS", "FrameEncoders", "device_for", "pick_backend"]

#: Frames encoded at once on one GPU by one process's threads, by default
#: (:meth:`FrameEncoders.default_workers`).
GPU_WORKERS = 8
#: Encoder threads in each encoder process on the GPU, by default
#: (:meth:`FrameEncoders.default_processes`): their frames wait on the GPU much of the time
#: (the waits sleep, :mod:`.gpu_waits`), and more threads in one process contend for its GIL.
#: Processes of 2 threads mastered fastest on one GPU with 16 cores (4K IMF HTJ2K and 4K DCI)
#: and on 4 GPUs with 64 cores (DCI 2K and 4K): docs/performance.md.
PROCESS_THREADS = 2
#: Encoder processes on one GPU at most, by default: 24 ran there, 32 failed at 4K
#: (cudaErrorDevicesUnavailable).
GPU_PROCESSES = 16
#: Frames to encode from which encoder processes are started by default: they take about 3 s
#: to start (imports, CUDA context, kernels), which 4 processes of 4 threads won back over 8
#: threads of one process after about 580 2K or 720 4K frames on the GPU machine
#: (docs/performance.md).
PROCESS_MIN_FRAMES = 720
#: IMF R'G'B' image sample types whose code values the cuda back end computes in the forward
#: stage's colour kernel as it reads the image in place (``Encoder.encode_planes(...,
#: code_values=)``: no int32 planes); others (float32) through
#: :func:`cinegpu.encode.gpu.code_values` first.  The same codestream either way.
FUSED_CODE_VALUES = (np.dtype(np.uint8), np.dtype(np.uint16))


def pick_backend(backend: str = "auto") -> str:
    """``cpu`` or ``cuda`` for mastering: ``auto`` takes CUDA when CuPy sees a device
    (:func:`cinegpu.decode.backend.select_backend` with the encoder's names).

    ``ValueError`` for another name; :class:`~cinegpu.decode.errors.BackendUnavailable`
    (naming what is missing and how to install it) for "cuda" without CuPy or a device.
    """
    return select_backend(backend, names=ENCODER_NAMES).name


def _on_device(a) -> bool:
    """Whether ``a`` is a GPU array (one :class:`.frame_uploads.FrameUploads` sent up), not a
    host one."""
    return hasattr(a, "__cuda_array_interface__")


def device_for(thread: int, gpus: int) -> int:
    """The CUDA device of the ``thread``-th encoder thread (0, 1, ...) over ``gpus`` devices:
    round robin, so that frames, handed to the threads in turn, spread evenly."""
    return thread % max(1, gpus)


class FrameEncoders:
    """Thread-local encoders for :func:`cinegpu.jobs.mastering.master`; close() when done.

    ``encode(image, top)``: ``image`` an (H, W, 3) array already at the DCI container size,
    integers read as ``clip(v / top, 0, 1)`` (``top`` default: the dtype's maximum) or floats
    0..1; returns the codestream bytes.  :attr:`uploads`: how input frames reach these
    encoders (:class:`.frame_uploads.FrameUploads`, the upload switches read from the
    environment once, where the encoders take frames as stored on the GPU).
    """

    def __init__(self, *, profile: str, fps, bitrate: float | None, colorspace: str,
                 backend: str = "auto", bits: int = 12, codec: str = "j2k",
                 lossless: bool = False, sampling: str = "rgb", gpus: int | None = 1,
                 device: int | None = None, rate_on_gpu: bool | None = None):
        self.profile, self.fps, self.colorspace = profile, Fraction(fps), colorspace
        #: an IMF profile ("imf-2k", "imf-4k"): R'G'B' as given, ``bits`` per component
        self.imf = profile in imf.PROFILES
        self.bits = bits
        #: IMF only: "htj2k" codes HT code-blocks; ``lossless`` the 5/3 path (+ RCT for R'G'B')
        self.codec, self.lossless = codec, lossless
        #: IMF only: "rgb" (R'G'B' 4:4:4 as given, the ICT/RCT), "ycbcr444" or "ycbcr422"
        #: (narrow-range Rec. 709 Y'CbCr, :func:`.colour.rgb_to_ycbcr`, no component transform)
        self.sampling = sampling
        self.dci = None if self.imf else dci.profile(profile)   # "2k" / "4k" / "dci-2k"...
        self.encoder_profile = profile if self.imf else self.dci.name
        #: bits/s; a DCP's default the safe level (:data:`dci.FRAME_BITRATE_SAFE`, which
        #: ``cinegpu info`` warns above), IMF's None (the profile's own default)
        self.bitrate = bitrate * 1e6 if bitrate is not None else \
            (None if self.imf else float(dci.FRAME_BITRATE_SAFE))
        #: Part-1 codestreams on the cuda back end: PCRD-opt's hull and thresholds on the GPU
        #: (:mod:`cinegpu.encode.rate_gpu`, the same codestream) instead of the host's
        #: (None: the encoder's default, the host)
        self.rate_on_gpu = rate_on_gpu
        self.ours = _cinegpu_encoder() is not None
        self.backend = pick_backend(backend) if self.ours else "cpu"
        self._local = threading.local()
        self._geometry = None           # one GeometryCache for every thread's encoder
        #: whether this process's waits for its GPUs sleep (:func:`.gpu_waits.sleep_on_waits`)
        self.sleeping_waits = False
        self._gpus = gpus               # CUDA devices (cuda back end); None: counted on first use
        #: the one CUDA device of every thread's encoder (an encoder process's); None: the
        #: threads take the :attr:`gpus` devices in turn
        self.device = device
        self._started = 0               # encoder threads started so far
        if self.backend == "cuda" and self.ours:
            self.sleeping_waits = sleep_on_waits(
                [device] if device is not None else range(self.gpus))
        self._made: list = []
        self._lock = threading.Lock()
        #: the one way from image files to these encoders (the CPU back end reads no switch)
        self.uploads = FrameUploads(self, UploadSettings.of(os.environ) if self.uploads_runs
                                    else UploadSettings())

    def default_processes(self, frames: int | None = None) -> int:
        """Encoder processes when the user does not say, for a job of ``frames`` frames to
        encode (None: a long one): on the GPU, once the job is long enough
        (:data:`PROCESS_MIN_FRAMES`) to pay for their start, one per core on one GPU (the
        frames' waits on it overlap) and one per two cores on several (the host bounds them
        there), at least one and at most :data:`GPU_PROCESSES` per GPU, each reading,
        converting and encoding its own frames in :data:`PROCESS_THREADS` threads; else, and
        on the CPU (the numba tier-1 releases the GIL, so threads suffice), one."""
        if self.backend != "cuda" or (frames is not None and frames < PROCESS_MIN_FRAMES):
            return 1
        cores = usable_cores()
        return max(self.gpus, min(cores if self.gpus == 1 else cores // 2,
                                  GPU_PROCESSES * self.gpus))

    def default_workers(self, processes: int = 1) -> int:
        """Encoder threads in each of ``processes`` processes when the user does not say: a
        thread per CPU core shared out, or on the GPU :data:`PROCESS_THREADS` per process,
        and in a single process at most GPU_WORKERS per device used (more threads only
        contend for the GIL and the device: on the GPU machine 8 threads mastered faster than
        12 or 16, docs/performance.md)."""
        cores = usable_cores()
        if self.backend != "cuda":
            return max(1, cores // max(1, processes))
        if processes > 1:
            return PROCESS_THREADS
        return min(cores, GPU_WORKERS * self.gpus)

    @property
    def gpus(self) -> int:
        """The CUDA devices the threads' encoders are spread over (round robin, in the order
        the threads start: :func:`device_for`): ``gpus`` as given, None for every device
        CUDA_VISIBLE_DEVICES shows.  One by default: the threads of one process are bound
        by the host (the GIL), not by the device: 8 threads mastered more slowly over two
        GPUs than on one (docs/performance.md, "Several GPUs")."""
        if self._gpus is None:
            import cupy  # noqa: PLC0415  (optional: CuPy)
            self._gpus = max(1, cupy.cuda.runtime.getDeviceCount())
        return self._gpus

    @property
    def name(self) -> str:
        return f"{encoder_name()} ({self.backend})" if self.ours else encoder_name()

    def _encoder(self):
        enc = getattr(self._local, "encoder", None)
        if enc is None:
            with self._lock:
                if self._geometry is None:
                    self._geometry = GeometryCache()
                started, self._started = self._started, self._started + 1
            device = None
            if self.backend == "cuda":
                device = self.device if self.device is not None else device_for(started, self.gpus)
            coding = Coding(profile=self.encoder_profile, fps=self.fps, bitrate=self.bitrate,
                            reversible=self.lossless, mct=False if self.sampling != "rgb" else None)
            settings = EncoderSettings(coding=coding, backend=self.backend, workers=1, device=device,
                                       codec=self.codec,
                                       rate_on_gpu=self.rate_on_gpu if self.backend == "cuda" and
                                       self.codec == "j2k" else None)
            enc = Encoder(settings, geometry=self._geometry)
            self._local.encoder = enc
            with self._lock:
                self._made.append(enc)
        return enc

    def encode(self, image, top: float | None = None) -> bytes:
        a = image if _on_device(image) else np.asarray(image)
        if a.ndim != 3 or a.shape[2] != 3:
            raise UnsupportedMedia(None, f"want an (H, W, 3) image, got shape {a.shape}")
        if top is None:
            top = float(np.iinfo(a.dtype).max) if a.dtype.kind in "ui" else 1.0
        if self.imf:
            return self._encode_rgb(a, top)
        if not self.ours:
            return encode_frame(self._host_samples(a, top), profile=self.profile, fps=self.fps,
                                bitrate=None if self.bitrate is None else self.bitrate / 1e6)
        enc = self._encoder()
        if self.backend == "cuda":
            from cinegpu.encode.gpu import rgb_to_xyz12  # noqa: PLC0415  (optional: CuPy, which encode.gpu imports)
            planes = self._on_gpu(enc, a, lambda image: rgb_to_xyz12(
                image, top, *xyz12_parameters(self.colorspace)))
            return enc.encode_planes(planes, 12)
        return enc.encode(self._host_samples(a, top), bits=12, signed=False)

    def encode_fitted(self, image, width: int, height: int, placement=None) -> bytes:
        """:meth:`encode` of ``image`` fitted to ``width`` x ``height`` pixels as ``placement``
        says (:func:`cinegpu.media.images.frames.fit`; None: ``fit``).  Where these encoders
        take frames on their GPU (:attr:`uploads_runs`) a host frame that must be cut, padded
        or resized goes up as read and is fitted there, on the encoder's device and stream
        (the Lanczos passes' GPU twins: the same samples as on the host); else on the host.
        A video frame's Y'CbCr planes (:class:`cinegpu.media.video.ycbcr.YCbCrPlanes`) go up
        as decoded and are made R'G'B' there (:mod:`cinegpu.media.video.ycbcr_gpu`), or on
        the host by the twin where these encoders are not on a GPU."""
        if isinstance(image, YCbCrPlanes):
            if not self.uploads_runs:
                return self.encode(fit(to_rgb48(image), width, height, placement))
            from cinegpu.media.video.ycbcr_gpu import pack, to_rgb48_on_device  # noqa: PLC0415  (optional: CuPy)
            staging = self._staging()
            with self._encoder().on_stream():
                packed = staging.upload(pack(image, staging.buffer))
                fitted = fit(to_rgb48_on_device(packed, image), width, height, placement)
            return self.encode(fitted)
        a = image if _on_device(image) else np.asarray(image)
        if self.uploads_runs and not _on_device(a) and a.dtype in (np.uint8, np.uint16, np.float32):
            enc = self._encoder()
            with enc.on_stream():
                fitted = fit(self._staging().upload(a), width, height, placement)
            return self.encode(fitted)
        return self.encode(fit(a, width, height, placement))

    def _host_samples(self, a: np.ndarray, top: float):
        """The code values the host paths hand the encoder for the image ``a`` (read as
        ``clip(a / top, 0, 1)``): a DCP's X'Y'Z' 12-bit as an (H, W, 3) uint16 array
        (:func:`.colour.to_xyz12`), an IMF picture's R'G'B' at :attr:`bits` likewise, or its
        Y'CbCr as three uint16 planes (:func:`.colour.rgb_to_ycbcr`: 4:2:2 chroma at half
        width)."""
        if self.imf:
            if self.sampling != "rgb":
                return rgb_to_ycbcr(unit_scale(a, top), self.bits, self.sampling, self.colorspace)
            return np.rint(unit_scale(a, top) * ((1 << self.bits) - 1)).astype(np.uint16)
        if a.dtype != np.float32 or top != 1.0:
            a = unit_scale(a, top)
        return to_xyz12(a, self.colorspace)

    def samples(self, image, top: float | None = None) -> list[np.ndarray]:
        """The code values these encoders are asked to code for ``image`` (as :meth:`encode`
        takes it, ``top`` likewise), on the host, one plane per component (0..2^bits - 1; a
        4:2:2 picture's chroma at half width): what the mastering report's PSNR is measured
        against (:mod:`cinegpu.jobs.report.psnr`).  The host paths' own values; on the cuda
        back end a DCP's X'Y'Z' come from the GPU twin the encoder runs
        (:func:`cinegpu.encode.gpu.rgb_to_xyz12`, within one code value of the host's), run
        here on this thread's current device and copied back; an IMF picture's R'G'B' are
        the host's there too (:func:`cinegpu.encode.gpu.code_values`: the same values)."""
        a = np.asarray(image)
        if a.ndim != 3 or a.shape[2] != 3:
            raise UnsupportedMedia(None, f"want an (H, W, 3) image, got shape {a.shape}")
        if top is None:
            top = float(np.iinfo(a.dtype).max) if a.dtype.kind in "ui" else 1.0
        if self.backend == "cuda" and self.ours and not self.imf:
            from cinegpu.encode.gpu import rgb_to_xyz12  # noqa: PLC0415  (optional: CuPy, which encode.gpu imports)
            return [p.get() for p in rgb_to_xyz12(a, top, *xyz12_parameters(self.colorspace))]
        out = self._host_samples(a, top)
        return list(out) if isinstance(out, list) else [out[..., c] for c in range(out.shape[2])]

    def _encode_rgb(self, a: np.ndarray, top: float) -> bytes:
        """IMF: the R'G'B' samples scaled to ``bits`` (no colour conversion; on the GPU with
        the cuda back end, :func:`cinegpu.encode.gpu.code_values`, the same values, computed
        by the forward stage's colour kernel for :data:`FUSED_CODE_VALUES` images), or their
        Y'CbCr (:attr:`sampling`, on the host)."""
        if not self.ours:
            raise UnsupportedMedia(None, "IMF mastering needs cinegpu.encode "
                                         "(the OpenJPEG stand-in makes DCI codestreams only)")
        if self.sampling != "rgb":
            return self._encoder().encode(self._host_samples(a, top), bits=self.bits, signed=False)
        enc = self._encoder()
        if self.backend == "cuda":
            if np.dtype(a.dtype) in FUSED_CODE_VALUES:   # the image read in place, once
                image = self._on_gpu(enc, a, lambda image: image)
                return enc.encode_planes([image[:, :, c] for c in range(3)], self.bits,
                                         code_values=(top, self.bits))
            from cinegpu.encode.gpu import code_values  # noqa: PLC0415  (optional: CuPy, which encode.gpu imports)
            planes = self._on_gpu(enc, a, lambda image: code_values(image, top, self.bits))
            return enc.encode_planes(planes, self.bits)
        return enc.encode(self._host_samples(a, top), bits=self.bits, signed=False)

    def last_timings(self) -> dict:
        """This thread's encoder's stage seconds of its last frame
        (:attr:`cinegpu.encode.encoder.Encoder.timings`); empty before one, or for the
        OpenJPEG stand-in."""
        enc = getattr(self._local, "encoder", None)
        return dict(getattr(enc, "timings", None) or {})

    def input_buffer(self, shape, dtype) -> np.ndarray | None:
        """An array of ``shape`` and ``dtype`` to read this thread's next frame into: on the
        GPU back end (uint8, uint16 and float32 samples) a view of the thread's page-locked
        upload buffer, which :meth:`encode` then sends up without copying it; else None."""
        if self.backend != "cuda" or not self.ours or \
                np.dtype(dtype) not in (np.uint8, np.uint16, np.float32):
            return None
        with self._encoder().on_stream():       # allocated on the encoder's own device
            return self._staging().buffer(shape, dtype)

    @property
    def uploads_runs(self) -> bool:
        """Whether these encoders take frames as stored on their GPU, straight from their files
        (:attr:`uploads`): the cuda back end with cinegpu's encoder, and R'G'B' kept as given
        (Y'CbCr is made on the host)."""
        return self.backend == "cuda" and self.ours and not (self.imf and self.sampling != "rgb")

    def on_stream(self):
        """A context in which this thread's encoder's device and CUDA stream are current (a
        no-op one on the CPU): where :attr:`uploads` queues a frame's copies."""
        return self._encoder().on_stream()

    def last_header(self) -> J2KHeader | None:
        """What the track file repeats of the main header this thread's encoder wrote for its
        last frame (from the encoder's own parse of it, :attr:`cinegpu.encode.Encoder.header`:
        the codestream is not parsed again); None before a frame, or for the OpenJPEG
        stand-in."""
        header = getattr(getattr(self._local, "encoder", None), "header", None)
        return None if header is None else J2KHeader.of(header)

    def _staging(self):
        """This thread's :class:`cinegpu.encode.gpu.HostStaging`."""
        from cinegpu.encode.gpu import HostStaging  # noqa: PLC0415  (optional: CuPy, which encode.gpu imports)
        staging = getattr(self._local, "staging", None)
        if staging is None:
            staging = self._local.staging = HostStaging()
        return staging

    def _on_gpu(self, enc, a: np.ndarray, convert):
        """``convert(image)`` of ``a`` uploaded as it is (uint8, uint16 and float32 through
        this thread's page-locked buffer), on the encoder's device and stream: the planes."""
        staging = self._staging()
        with enc.on_stream():     # the upload and the kernels on the encoder's stream
            image = a if _on_device(a) or a.dtype not in (np.uint8, np.uint16, np.float32) \
                else staging.upload(a)
            return convert(image)

    def close(self) -> None:
        """Close the uploads' uploaders, then every thread's encoder."""
        self.uploads.close()
        with self._lock:
            made, self._made = self._made, []
        for enc in made:
            enc.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
