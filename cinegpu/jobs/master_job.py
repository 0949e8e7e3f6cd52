"""A mastering job as one value: :class:`MasterJob`, what :func:`.mastering.master` runs.

A job is made of a few named parts, each a frozen dataclass that checks itself when it is made
(ValueError, or :class:`.errors.MediaError` for what it finds on disk), so that a job that
exists may be mastered and nothing is read or encoded for one that may not:

- :class:`InputFrames`: ``read(i)`` gives input frame ``i`` of ``count``
  (:class:`.images_in.ImageFrames` for image files: picklable, so that encoder processes and
  cluster workers read their own frames);
- :class:`Picture`: what the picture becomes: a DCP (ST 429-2: X'Y'Z', a DCI profile, its
  rates and image areas) or an IMF App #2E package (ST 2067-21: R'G'B' or Y'CbCr at the
  input's size, Part-1 or HTJ2K, 10 or 12 bits);
- :class:`Composition`: the CPL's title and kind, its length in frames, its reels (ST 429-7:
  each at least a second), sound and subtitles;
- :class:`Protection`: the content key file of an encrypted DCP (ST 429-6) and the signer of
  its CPL and PKL (ST 429-7, ST 429-8);
- :class:`Compute`: where the frames are encoded: back end, threads, encoder processes, GPUs,
  a Dask cluster, CUDA MPS, rate control on the GPU;

the output folder, and the QC report to write of the finished package, if any (``report``:
an .html page, :mod:`cinegpu.jobs.report`, with each frame's PSNR against the source).  The checks that need two parts (an IMF package is one segment in the
clear, the sound and subtitles last as long as the picture, the reels make the composition,
frames read elsewhere must pickle) are :class:`MasterJob`'s own.  The job pickles where its
parts do (its ``read``; a :class:`.package_signature.Signer`'s key does not).

The command line (``cinegpu master``) builds a job part by part; scripts and tests use
:meth:`MasterJob.of` (a callable and keyword options) or :meth:`MasterJob.of_images` (image
files).  Each frame's coder gets a :class:`FrameCoding` (the job's ``read``, the image area and
the :class:`Encoding`), made by :func:`.mastering.master` once it has read the first frame.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np

from cinegpu.decode.codestream import dci, imf
from cinegpu.jobs.cluster import ClusterAddress, parse_address
from cinegpu.jobs.frame_encode import FrameEncoders
from cinegpu.jobs.report import check_target
from cinegpu.media.errors import UnsupportedMedia
from cinegpu.media.images.colour import COLORSPACES, SAMPLINGS
from cinegpu.media.images.frames import ImageFrames, image_area, list_frames, max_input_size
from cinegpu.media.images.geometry import SCALES, Crop, Placement, place
from cinegpu.media.package.cpl_metadata import CplMetadata
from cinegpu.media.package.dcp_write import check_key_path, check_reels, reels_of_length
from cinegpu.media.package.interop_write import INTEROP_RATES, check_interop_sound
from cinegpu.media.security.package_signature import Signer, check_signer
from cinegpu.media.sound.inputs import SoundInput
from cinegpu.media.subtitles.write import TimedTextAsset
from cinegpu.media.video import is_video

__all__ = ["Composition", "Compute", "Encoding", "FrameCoding", "InputFrames", "MasterJob",
           "Picture", "Protection", "check_imf", "image_input", "video_input"]

_SAMPLING_NAMES = {"rgb": "R'G'B'", "ycbcr444": "Y'CbCr 4:4:4", "ycbcr422": "Y'CbCr 4:2:2"}


def check_imf(codec: str, rate: Fraction, colorspace: str, bits: int, sound=None,
              subtitles=None, lossless: bool = False, bitrate=None, sampling: str = "rgb") -> None:
    """ValueError unless an IMF package can be mastered with these: Part-1 JPEG 2000 or HTJ2K
    (``lossless``: HTJ2K only, without a ``bitrate``), an ST 2067-21 edit rate, Rec. 709
    input, 10 or 12 bits, a sampling of :data:`.colour.SAMPLINGS` that an App #2E edition
    allows at that depth, rate and codec (:func:`imf.identification`), no subtitles. ``sound`` (a :class:`.sound_in.SoundInput`) must
    last a whole number of samples as long as the picture: :meth:`~.SoundInput.fit_imf`,
    checked by :class:`MasterJob`."""
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


@dataclass(frozen=True)
class Picture:
    """What the picture becomes.  ``format``: ``dcp`` (SMPTE DCP: X'Y'Z' 12-bit Part-1 JPEG
    2000 in the DCI ``profile``'s container, ``2k`` or ``4k``, at one of its rates, fitted to
    the image area ``container``: flat, scope, full or ``auto``, the nearest aspect ratio) or
    ``imf`` (ST 2067-21 App #2E: the input's size and R'G'B', :func:`check_imf`: ``codec``
    ``j2k`` or ``htj2k``, ``bits`` 10 or 12 per component, ``lossless`` the 5/3 path, ``sampling``
    ``ycbcr444``/``ycbcr422`` for Rec. 709 Y'CbCr; ``profile`` and ``container`` not used).
    ``fps``: the edit rate (frames/s, kept as a Fraction); ``bitrate``: the target in Mbit/s
    (None: for a DCP the safe level :data:`dci.FRAME_BITRATE_SAFE`, for IMF the profile's
    default; :meth:`bitrate_warning` above the safe level); ``colorspace``: what the input holds
    (:data:`.colour.COLORSPACES`); ``standard``: a DCP's, ``smpte`` or ``interop`` (an Interop
    DCP, :mod:`.interop_write`: 24 or 48 fps, 2D, in the clear).  ``crop``: pixels cut from
    each side of every input frame (a :class:`.geometry.Crop`, or ``L,T,R,B``; checked against
    the first frame's size, :meth:`placement`); ``scale``: how the cropped frame goes into a
    DCP's image area, ``fit``, ``fill`` or ``none`` (:mod:`.geometry`; an IMF picture keeps the
    cropped size: ``fit`` only).  ValueError when made with values no package takes."""

    format: str = "dcp"
    profile: str = "2k"
    fps: Fraction = Fraction(24)
    bitrate: float | None = None
    colorspace: str = "rec709"
    container: str = "auto"
    codec: str = "j2k"
    bits: int = 12
    lossless: bool = False
    sampling: str = "rgb"
    stereoscopic: bool = False
    standard: str = "smpte"
    crop: Crop = Crop()
    scale: str = "fit"

    def __post_init__(self):
        rate = Fraction(self.fps)
        object.__setattr__(self, "crop", Crop.of(self.crop))
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {self.scale!r}")
        if self.format == "imf" and self.scale != "fit":
            raise ValueError("--scale is for DCPs: an IMF package keeps the input's size "
                             "(after --crop)")
        if self.standard not in ("smpte", "interop"):
            raise ValueError(f"standard must be smpte or interop, got {self.standard!r}")
        if self.format == "imf":
            if self.standard != "smpte":
                raise ValueError("--standard interop is for DCPs (an IMF package is SMPTE ST 2067)")
            if self.stereoscopic:
                raise ValueError("--stereo is for DCPs: stereoscopic IMF packages are not "
                                 "supported yet")
            check_imf(self.codec, rate, self.colorspace, self.bits, lossless=self.lossless,
                      bitrate=self.bitrate, sampling=self.sampling)
        elif self.format != "dcp":
            raise ValueError(f"format must be dcp or imf, got {self.format!r}")
        else:
            self._check_dcp(rate)
        if self.colorspace not in COLORSPACES:
            raise ValueError(f"colorspace must be one of {COLORSPACES}, got {self.colorspace!r}")
        object.__setattr__(self, "fps", rate)

    def _check_dcp(self, rate: Fraction) -> None:
        """A DCP's picture: DCI 12-bit X'Y'Z' Part-1, a DCI profile, rate and image area."""
        if self.codec != "j2k" or self.bits != 12 or self.lossless or self.sampling != "rgb":
            raise ValueError("--codec, --bits, --lossless and --sampling apply to --format imf "
                             "(a DCP is 12-bit lossy Part-1 JPEG 2000 in X'Y'Z')")
        try:
            p = dci.profile(self.profile)
        except ValueError:
            raise ValueError(f"profile must be 2k or 4k, got {self.profile!r}") from None
        if rate not in p.frame_rates:
            raise ValueError(f"{self.fps} fps is not a {p.title} rate {p.frame_rates}")
        if self.container not in ("auto", *dict(p.image_areas)):
            raise ValueError(f"container must be auto, flat, scope or full, got "
                             f"{self.container!r}")
        if self.stereoscopic and p is not dci.DCI_2K:
            raise ValueError("--stereo: DCI defines stereoscopic DCPs in 2K only (a 4K DCP is "
                             "2D); master 3D with --profile 2k")
        if self.interop:           # Interop: asdcplib's MXF Interop, the PROTO-ASDCP documents
            if rate not in INTEROP_RATES:
                raise ValueError(f"an Interop DCP runs at 24 or 48 fps, not {self.fps}: "
                                 "master SMPTE (the default) for other rates")
            if self.stereoscopic:
                raise ValueError("--stereo with --standard interop: 3D Interop DCPs are not "
                                 "written; master 3D as SMPTE (the default)")

    def bitrate_warning(self) -> str | None:
        """The warning for a DCP ``bitrate`` above the safe level (:data:`dci.FRAME_BITRATE_SAFE`,
        which ``cinegpu info`` and libdcp warn above), else None.  Up to the DCI cap
        (:data:`dci.FRAME_BITRATE`) it is coded as asked; above it, at the cap."""
        if self.imf or self.bitrate is None or self.bitrate * 1e6 <= dci.FRAME_BITRATE_SAFE:
            return None
        safe, cap = dci.FRAME_BITRATE_SAFE // 1_000_000, dci.FRAME_BITRATE // 1_000_000
        coded = "" if self.bitrate * 1e6 <= dci.FRAME_BITRATE else f"; coded at the cap, {cap}"
        return (f"--bitrate {self.bitrate:g} Mbit/s is above the safe {safe} Mbit/s (the "
                f"default{coded}): cinegpu info and libdcp warn above {safe}, ClairMeta above "
                f"an average of 245, and asdcplib refuses an encrypted picture above {cap} "
                f"Mbit/s once the encryption's bytes count")

    @property
    def interop(self) -> bool:
        """Whether the DCP is an Interop one (:mod:`.interop_write`), else SMPTE."""
        return self.standard == "interop"

    @property
    def imf(self) -> bool:
        """Whether the package is an IMF one (else a DCP)."""
        return self.format == "imf"

    @property
    def eyes(self) -> int:
        """Codestreams a frame: 2 for a stereoscopic picture (left eye, right eye), else 1."""
        return 2 if self.stereoscopic else 1

    @property
    def coded_bitrate(self) -> float | None:
        """The encoder's target in Mbit/s at :attr:`fps`: :attr:`bitrate` (None: the encoder's
        default); for a stereoscopic picture each eye's half of it (the DCI cap, and the safe
        level by default, hold for the picture's two eyes together)."""
        if not self.stereoscopic:
            return self.bitrate
        return (self.bitrate or dci.FRAME_BITRATE_SAFE / 1e6) / 2

    @property
    def input_limit(self) -> tuple[int, int]:
        """(width, height) in pixels of the largest input frame this picture takes: IMF's 4K
        (4096 x 3112), or twice the DCI profile's container each way
        (:func:`.images_in.max_input_size`)."""
        return imf.IMF_4K.container if self.imf else max_input_size(self.profile)

    def check_holds(self, reels: int = 1, reel_length=None, encrypted: bool = False,
                    subtitles=None) -> None:
        """ValueError unless this picture's package can hold ``reels`` reels (or reels of
        ``reel_length`` seconds), encryption and ``subtitles``: an IMF package is one segment
        in the clear, without subtitles so far (:func:`check_imf`); an Interop DCP is in the
        clear; an SMPTE DCP holds them all."""
        if self.interop and encrypted:
            raise ValueError("--encrypt with --standard interop: encrypted Interop DCPs are not "
                             "supported yet (master SMPTE, the default, to encrypt)")
        if not self.imf:
            return
        if encrypted or reels > 1 or reel_length is not None:
            raise ValueError("IMF packages are written with one segment and in the clear: "
                             "--reel-length, several INPUT folders and --encrypt are for DCPs")
        check_imf(self.codec, self.fps, self.colorspace, self.bits, None, subtitles,
                  self.lossless, self.bitrate, self.sampling)

    def coded_size(self, width: int, height: int) -> tuple[int, int, str]:
        """(width, height, encoder profile) of the frames coded from a ``width`` x ``height``
        input: an IMF picture keeps its size, in the IMF profile for it
        (:func:`imf.profile_for`, ValueError above 4K); a DCP's is the image area of the DCI
        container (:func:`.images_in.image_area`), chosen by the cropped size.  ValueError
        for a :attr:`crop` that leaves nothing."""
        width, height = self.crop.size(width, height)
        if self.imf:
            return width, height, imf.profile_for(width, height).name
        _, w, h = image_area(width, height, self.profile, self.container)
        return w, h, self.profile

    def placement(self, width: int, height: int) -> Placement:
        """Where a ``width`` x ``height`` input frame lands in the coded picture
        (:func:`.geometry.place`: :attr:`crop`, then :attr:`scale` into the image area of
        :meth:`coded_size`; an IMF picture's area is the cropped size).  ValueError for a crop
        that leaves nothing."""
        w, h, _ = self.coded_size(width, height)
        area = "input" if self.imf else image_area(*self.crop.size(width, height), self.profile,
                                                   self.container)[0]
        return place(width, height, w, h, self.crop, self.scale, area)


@dataclass(frozen=True)
class Composition:
    """The composition: the CPL's ContentTitleText ``title`` and ContentKind ``kind``;
    ``frames``, its length in frames (None: the input's count; more frames repeat the input,
    each distinct frame encoded once); ``reels``, each reel's length in frames (summing to the
    length; one reel each at least a second, ST 429-7), or ``reel_length``, reels of that many
    seconds, the last taking the rest (:func:`.dcp_write.reels_of_length`), not both; the
    ``sound`` (a checked :class:`.sound_in.SoundInput`, cut or padded to the composition:
    :meth:`~.SoundInput.fit`) and ``subtitles`` (a :class:`.subtitle_write.TimedTextAsset`
    prepared for the composition's length, :func:`.subtitle_write.prepare_subtitles`); the
    CPL's content version, ratings and markers, ``metadata`` (a DCP's only so far); the closed
    ``captions``, prepared as the subtitles are (a DCP's only)."""

    title: str
    kind: str = "feature"
    frames: int | None = None
    reels: tuple[int, ...] | None = None
    reel_length: Fraction | None = None
    sound: SoundInput | None = None
    subtitles: TimedTextAsset | None = None
    metadata: CplMetadata = CplMetadata()
    captions: TimedTextAsset | None = None

    def __post_init__(self):
        if self.frames is not None and self.frames < 1:
            raise ValueError("--frames must be at least 1")
        if self.reels is not None:
            object.__setattr__(self, "reels", tuple(int(n) for n in self.reels))
            if self.reel_length is not None:
                raise ValueError("reels come from the input folders or from --reel-length, "
                                 "not both")


@dataclass(frozen=True)
class Protection:
    """``keys``: encrypt every track file under its own key and write the keys to this new
    file (ST 429-6, :mod:`.content_keys`; MediaError when it exists or its folder does not);
    ``signer``: a :class:`.package_signature.Signer` that signs the CPL and PKL (ST 429-7,
    ST 429-8; MediaError unless it can sign now)."""

    keys: str | Path | None = None
    signer: Signer | None = None

    def __post_init__(self):
        if self.keys is not None:
            check_key_path(self.keys)
        if self.signer is not None:
            check_signer(self.signer)


@dataclass(frozen=True)
class Compute:
    """Where the frames are encoded.  ``backend``: the encoder's ``cpu`` or ``cuda`` (``auto``:
    CUDA when there is a device; colour conversion, forward stage and tier-1 then run on the
    GPU).  ``processes``: encoder processes (:class:`.frame_coders.ProcessCoders`), each with
    ``workers`` threads (None: :meth:`.FrameEncoders.default_processes` and
    :meth:`~.FrameEncoders.default_workers` where the input pickles, else threads of this
    process).  ``gpus``: CUDA devices the encoders are spread over (None: every one).
    ``cluster``: a :class:`.cluster.ClusterAddress`, or its text (a ``tls://`` scheduler's
    address or ``local[:N]``, :func:`.cluster.parse_address`):
    the frames are coded there (:class:`.cluster_coders.ClusterCoders`; the workers must see
    the input's files) and written here; ``processes`` is not given then, ``gpus`` does not
    apply and ``workers`` is a local cluster's threads per worker process.  ``mps``: where
    encoder processes outnumber the GPUs, let them share each GPU through a CUDA MPS of the
    job's own (:func:`.mps.start_private_mps`, where it is available).  ``rate_on_gpu``: Part-1
    rate control's hull and thresholds on the GPU (:attr:`.FrameEncoders.rate_on_gpu`; the
    same codestreams; None: the encoder's default)."""

    backend: str = "auto"
    workers: int | None = None
    processes: int | None = None
    gpus: int | None = 1
    cluster: ClusterAddress | str | None = None
    mps: bool = True
    rate_on_gpu: bool | None = None

    def __post_init__(self):
        if self.processes is not None and self.processes < 1:
            raise ValueError(f"processes must be at least 1, got {self.processes}")
        if isinstance(self.cluster, str):       # ValueError for a bad or a plain tcp:// address
            object.__setattr__(self, "cluster", parse_address(self.cluster))
        if self.cluster is not None:
            if self.processes is not None:
                raise ValueError("--processes and --cluster exclude each other (a cluster's "
                                 "worker processes code the frames)")


@dataclass(frozen=True)
class InputFrames:
    """The input: ``read(i)`` gives input frame ``i`` of ``count``, an (H, W, 3) array of
    floats 0..1 or of integers read as a fraction of their dtype's maximum;
    :class:`.images_in.ImageFrames` for image files (:func:`image_input`).  ValueError for no
    frames."""

    read: Callable[[int], np.ndarray]
    count: int

    def __post_init__(self):
        if self.count < 1:
            raise ValueError("no input frames")

    @property
    def picklable(self) -> bool:
        """Whether ``read`` pickles, so that encoder processes or cluster workers may read
        their own frames."""
        try:
            pickle.dumps(self.read)
        except Exception:
            return False
        return True

    @classmethod
    def stereo(cls, left: "InputFrames", right: "InputFrames") -> "InputFrames":
        """The two eyes' frames as one input of their images in coding order: left eye,
        right eye, frame after frame (:class:`StereoFrames`); ValueError for eyes of unlike
        lengths."""
        if left.count != right.count:
            raise ValueError(f"--stereo: the left eye has {left.count} frames, the right "
                             f"{right.count}; both eyes need the same number")
        return cls(StereoFrames(left.read, right.read), 2 * left.count)

    def first(self) -> tuple[np.ndarray, Callable[[int], np.ndarray]]:
        """Frame 0, and ``read`` with every frame held to its size (an
        :class:`.images_in.ImageFrames` that does not hold them to one yet: checked from each
        file's header before its pixels are decoded)."""
        first = self.read(0)
        return first, held_to(self.read, (first.shape[1], first.shape[0]))


def held_to(read, size: tuple[int, int]):
    """``read`` with every image file held to ``size`` (width, height): an
    :class:`.images_in.ImageFrames` not yet held to one (both of a :class:`StereoFrames`'s),
    else ``read`` itself."""
    if isinstance(read, StereoFrames):
        return StereoFrames(held_to(read.left, size), held_to(read.right, size))
    if isinstance(read, ImageFrames) and read.size is None:
        return replace(read, size=size)
    return read


@dataclass(frozen=True)
class StereoFrames:
    """A stereoscopic input's images in coding order (ST 429-10: the left eye's image of a
    frame, then the right eye's): image ``i`` is frame ``i // 2`` of ``left`` (even ``i``) or
    of ``right`` (odd).  Picklable where both readers are."""

    left: Callable[[int], np.ndarray]
    right: Callable[[int], np.ndarray]

    def __call__(self, i: int, *args, **kwargs) -> np.ndarray:
        return (self.right if i % 2 else self.left)(i // 2, *args, **kwargs)


def image_input(paths, picture: Picture, video=None) -> tuple[InputFrames, tuple[int, ...] | None]:
    """The frames of ``paths`` (a TIFF/PNG/DPX frame or a folder of them in natural order, or
    a list of several folders) as :class:`.images_in.ImageFrames` held to the ``picture``'s
    :attr:`~Picture.input_limit`, and with several folders each one's length in frames (one
    reel each, in the order given; else None).  MediaError for a folder without frames.
    One video file (:func:`.video.is_video`; ``video``: it, already probed) gives its
    :class:`.video.frames.VideoFrames` held to that limit, one reel (:func:`video_input`)."""
    paths = [paths] if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__") \
        else list(paths)
    if video is not None or any(is_video(p) for p in paths):
        if len(paths) != 1:
            raise ValueError("a video file is mastered on its own: give it as the only INPUT")
        return video_input(paths[0], picture, video), None
    folders = [list_frames(p) for p in paths]
    files = tuple(str(f) for fs in folders for f in fs)
    reels = tuple(len(fs) for fs in folders) if len(folders) > 1 else None
    return InputFrames(ImageFrames(files, picture.input_limit), len(files)), reels


def video_input(path, picture: Picture, video=None) -> InputFrames:
    """The frames of the video file ``path`` (``video``: its probed
    :class:`.video.frames.VideoFrames`, else probed here) held to the ``picture``'s
    :attr:`~Picture.input_limit` (UnsupportedMedia where larger; nothing decoded then).
    UnsupportedMedia where PyAV, which reads video files, is not installed."""
    if video is None:
        try:
            from cinegpu.media.video.frames import open_video  # noqa: PLC0415  (start-up: PyAV, ~0.1 s; optional)
        except ImportError as exc:
            raise UnsupportedMedia(path, f"reading video files needs PyAV (pip install av): "
                                         f"{exc}") from None
        video = open_video(path, picture.input_limit)
    video = video.within(picture.input_limit)
    return InputFrames(video, video.count)


@dataclass(frozen=True)
class MasterJob:
    """One mastering job: the ``input`` frames mastered into a package at ``out`` (created;
    written beside it first, :class:`.dcp_write.DCPWriter`), as the ``composition``,
    ``picture``, ``protection`` and ``compute`` say; ``report``: an .html page to write the
    finished package's QC report to, with each frame's PSNR against the source
    (:mod:`cinegpu.jobs.report.psnr`; its JSON twin beside it; ValueError when the report's
    dependencies are missing or its folder does not exist).  Made, it is checked as a whole, before
    any frame is read: ValueError for an IMF package of several reels, encrypted, signed or
    with subtitles or CPL metadata, subtitles of another length, markers past the end, reels that do not make the composition or
    last less than a second, or an input that does not pickle where encoder processes or a
    cluster read it; MediaError for sound shorter than the picture (or, in an IMF package,
    not a whole number of samples or mono)."""

    input: InputFrames
    out: str | Path
    composition: Composition
    picture: Picture = Picture()
    protection: Protection = Protection()
    compute: Compute = Compute()
    report: str | Path | None = None

    def __post_init__(self):
        p, c = self.picture, self.composition
        if self.report is not None:        # first: nothing else is looked at for a job refused
            object.__setattr__(self, "report", check_target(self.report))
        p.check_holds(len(c.reels or ()), c.reel_length, self.protection.keys is not None,
                      c.subtitles)
        if c.sound is not None:            # MediaError before anything is encoded
            fit = c.sound.fit_imf if p.imf else c.sound.fit
            fit(self.length, p.fps)
        for what, text in (("subtitles", c.subtitles), ("captions", c.captions)):
            if text is not None and text.duration != self.length:
                raise ValueError(f"{what} prepared for {text.duration} frames; the "
                                 f"composition has {self.length}")
        if c.captions is not None and p.imf:
            raise ValueError("closed captions in IMF packages are not supported yet: leave out --captions")
        self.reel_lengths                  # read for its check: ValueError for reels that do not fit
        c.metadata.markers_for(self.length)   # ValueError for a marker past the end
        if p.imf and c.metadata != CplMetadata():
            raise ValueError("--content-version, --rating and --marker are written in DCPs; "
                             "an IMF CPL's are not supported yet")
        if self.protection.signer is not None and p.imf:
            raise ValueError("signed IMF packages are not written: --sign is for DCPs")
        if p.interop:
            self._check_interop()
        self._check_readers()

    def _check_interop(self) -> None:
        """ValueError for what an Interop DCP is not written with here: a signature, closed
        captions, sound other than 48 kHz 5.1 (a stereo or mono mix placed in it)."""
        if self.protection.signer is not None:
            raise ValueError("--sign with --standard interop: signed Interop DCPs are not "
                             "supported yet")
        if self.composition.captions is not None:
            raise ValueError("--captions with --standard interop: closed captions are written "
                             "in SMPTE DCPs only")
        check_interop_sound(self.composition.sound)

    def _check_readers(self) -> None:
        """ValueError where encoder processes or cluster workers must read their own frames
        and the input does not pickle."""
        compute, read = self.compute, self.input.read
        if compute.cluster is not None and not self.input.picklable:
            raise ValueError("cluster workers read their own frames: get_frame must pickle (e.g. "
                             f"an images_in.ImageFrames), not a {type(read).__name__}")
        if compute.processes is not None and compute.processes > 1 and \
                not self.input.picklable:
            raise ValueError("encoder processes read their own frames: get_frame must "
                             "pickle (e.g. an images_in.ImageFrames), not a "
                             f"{type(read).__name__}")

    @property
    def length(self) -> int:
        """The composition's length in frames (a stereoscopic picture's: pairs of input
        images)."""
        return self.composition.frames or self.input.count // self.picture.eyes

    @property
    def reel_lengths(self) -> tuple[int, ...]:
        """Each reel's length in frames: the composition's ``reels`` (they must make its
        length), or cut every ``reel_length`` seconds, or one reel; each at least a second
        (ValueError, ST 429-7)."""
        c, rate = self.composition, self.picture.fps
        if c.reel_length is not None:
            return reels_of_length(self.length, rate, c.reel_length)
        if c.reels is None:
            return (self.length,)
        reels = check_reels(c.reels, rate)
        if sum(reels) != self.length:
            raise ValueError(f"reels of {sum(reels)} frames for a composition of {self.length}")
        return reels

    @property
    def sound(self) -> SoundInput | None:
        """The sound as the package's track carries it (an IMF track: a stereo mix as
        stereo, :meth:`~.SoundInput.for_imf`), or None."""
        s = self.composition.sound
        return s.for_imf() if s is not None and self.picture.imf else s

    @classmethod
    def of(cls, read: Callable[[int], np.ndarray], count: int, out, **options) -> "MasterJob":
        """The job of ``count`` frames of ``read`` into ``out``, each keyword option going to
        the part with a field of that name (``title=``, ``fps=``, ``keys=``, ``workers=``...);
        TypeError for a name no part has; ``report=``: the job's own :attr:`report`."""
        report = options.pop("report", None)
        parts = _parts(options)
        picture = Picture(**parts[Picture])
        return cls._of(InputFrames(read, count), out, picture, parts, report)

    @classmethod
    def of_images(cls, path, out, **options) -> "MasterJob":
        """:meth:`of` for a TIFF/PNG/DPX frame, or a folder of them in natural order
        (:func:`image_input`); ``path`` a list of several folders: one reel per folder, in the
        order given (each at least a second long; not with ``frames`` or ``reel_length``).
        Every frame must have the first frame's size, and none may be larger than the
        picture's :attr:`~Picture.input_limit`; both are checked from each file's header
        before its pixels are decoded.  A bad frame raises MediaError naming its file and
        number."""
        report = options.pop("report", None)
        parts = _parts(options)
        picture = Picture(**parts[Picture])
        frames, reels = image_input(path, picture)
        if reels is not None:
            if parts[Composition].get("frames") not in (None, frames.count):
                raise ValueError("with several INPUT folders (one reel each) the composition "
                                 "is the input: leave out --frames")
            parts[Composition]["reels"] = reels
        return cls._of(frames, out, picture, parts, report)

    @classmethod
    def _of(cls, frames: InputFrames, out, picture: Picture, parts: dict, report=None) -> "MasterJob":
        return cls(frames, out, Composition(**parts[Composition]), picture,
                   Protection(**parts[Protection]), Compute(**parts[Compute]), report)


def _parts(options: dict) -> dict[type, dict]:
    """``options`` shared out by field name to the job's parts: {part: {name: value}};
    TypeError for a name no part has."""
    parts = {part: {f.name: options.pop(f.name) for f in fields(part) if f.name in options}
             for part in (Picture, Composition, Protection, Compute)}
    if options:
        raise TypeError(f"not an option of a mastering job: {', '.join(sorted(options))}")
    return parts


@dataclass(frozen=True)
class Encoding:
    """How every frame of a job is encoded: :class:`.frame_encode.FrameEncoders`' settings,
    from the job's ``picture`` and :class:`Compute`: the encoder's ``profile`` (the DCI one, or
    the IMF one for the picture's size: :meth:`Picture.coded_size`), the back end, the GPUs and
    where Part-1 rate control runs.  Hashable: a cluster worker keeps its encoders for it."""

    picture: Picture
    profile: str
    backend: str = "auto"
    gpus: int | None = 1
    rate_on_gpu: bool | None = None

    def encoders(self, device: int | None = None) -> FrameEncoders:
        """Thread-local encoders of these settings (close() when done); ``device``: the one
        CUDA device of every thread's encoder (None: the threads take :attr:`gpus` in turn)."""
        p = self.picture
        return FrameEncoders(profile=self.profile, fps=p.fps, bitrate=p.coded_bitrate,
                             colorspace=p.colorspace, backend=self.backend, bits=p.bits,
                             codec=p.codec, lossless=p.lossless, sampling=p.sampling,
                             gpus=self.gpus, device=device, rate_on_gpu=self.rate_on_gpu)


@dataclass(frozen=True)
class FrameCoding:
    """What coding any input frame of a job needs, in this process, in an encoder process or
    on a cluster worker (picklable where ``read`` is): ``read(i)``, the image area ``width`` x
    ``height`` in pixels each frame is fitted to (:func:`.images_in.fit`), its
    :class:`Encoding`, and the ``placement`` of every frame in that area
    (:meth:`Picture.placement`; None: the default ``fit`` of each frame's own size)."""

    read: Callable[[int], np.ndarray]
    width: int
    height: int
    encoding: Encoding
    placement: Placement | None = None
