"""``cinegpu master INPUT... -o OUTDIR``: master TIFF/PNG/DPX frames into an SMPTE DCP of one or
more reels (``--reel-length``, or one reel per INPUT folder), encrypted with ``--encrypt --keys
KEYS.txt``, its CPL and PKL signed with ``--sign DIR`` (with ``--encrypt`` and no ``--sign``: the
user's own chain, made on first use; ``--no-sign``: unsigned), or with ``--format imf`` into an IMF package (Application #2E,
Part-1 JPEG 2000 or HTJ2K; one segment, in the clear); with ``--report R.html``, also the
finished package's QC report (:mod:`cinegpu.jobs.report`: the page ``check --report`` writes),
with each frame's PSNR against the source."""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from cinegpu.decode import BackendUnavailable
from cinegpu.decode.codestream import dci, imf
from cinegpu.media import MediaError
from cinegpu.media.errors import UnsupportedMedia
from cinegpu.media.images.geometry import SCALES, Crop
from cinegpu.media.package.cpl_metadata import (
    MARKER_LABELS,
    CplMetadata,
    parse_content_version,
    parse_marker,
    parse_rating,
)
from cinegpu.media.package.isdcf import KIND_TYPES, parse_isdcf_option
from cinegpu.media.security.package_signature import load_signer, user_signer
from cinegpu.media.sound.channel_map import map_channels, open_mapped_sound, parse_channel_map
from cinegpu.media.sound.inputs import open_sound
from cinegpu.media.video import is_video

from .args import cluster_address, cluster_arguments, gpu_count, one_line_text, positive_int, positive_rate
from .interrupts import INTERRUPTED, TERMINATED, Terminated, interrupts


def register(subparsers) -> None:
    rates = " or ".join(f"{', '.join(map(str, prof.frame_rates))} ({prof.short.upper()})"
                        for prof in dci.PROFILES.values())
    p = subparsers.add_parser("master", help="master an image sequence into a DCP (reels, picture, "
                                             "sound, subtitles, optionally encrypted)")
    p.add_argument("input", nargs="+",
                   help="a folder of .tif/.tiff/.png/.dpx frames (natural order) or one image; "
                        "several folders: one reel per folder, in the order given; or one "
                        "video file (.mov/.mp4/.m4v/.mxf/.mkv: its picture, rate, colour tags "
                        "and sound, through FFmpeg's libraries)")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR",
                   help="DCP folder to create (must not exist, or be empty)")
    p.add_argument("--profile", choices=tuple(prof.short for prof in dci.PROFILES.values()), default="2k", help="DCI container (default 2k)")
    p.add_argument("--fps", type=positive_rate, default=None, metavar="RATE",
                   help=f"edit rate: {rates}; default a video file's own rate, else 24 (a "
                        f"video's frames are taken one for one at RATE)")
    p.add_argument("--title", default=None, type=one_line_text, metavar="TEXT",
                   help="content title (ContentTitleText of the CPL); default: an ISDCF name "
                        "(see --isdcf) for a DCP, the input folder's name for IMF")
    p.add_argument("--isdcf", type=_option(parse_isdcf_option), default=None, metavar="FIELDS",
                   help="build the title as an ISDCF Digital Cinema Naming Convention name from "
                        "the package's facts and these fields: title=, type= (FTR, TLR, TST...), "
                        "version=, temp, pre, 2d, language=, subtitles=, captions=, territory=, "
                        "rating=, studio=, facility=, package= (OV, VF, VF-2), comma-separated "
                        "(the film title defaults to --title, else the input folder's name)")
    p.add_argument("--bitrate", type=float, default=None, metavar="MBPS",
                   help=f"target Mbit/s (DCP default: the safe {dci.FRAME_BITRATE_SAFE // 1_000_000}, "
                        f"which leaves room for encryption; up to the DCI cap of "
                        f"{dci.FRAME_BITRATE // 1_000_000} with a warning)")
    p.add_argument("--colorspace", choices=("rec709", "p3d65", "dcip3", "xyz"), default=None,
                   help="what the input holds (default: a video file's colour tags, else "
                        "rec709); xyz: X'Y'Z' code values as they are")
    p.add_argument("--container", choices=("auto", "flat", "scope", "full"), default="auto",
                   help="image area: flat 1.85, scope 2.39, full container; auto: nearest aspect ratio")
    p.add_argument("--crop", type=_option(Crop.parse), default=Crop(), metavar="L,T,R,B",
                   help="pixels cut from the left, top, right and bottom of every input frame "
                        "before it is scaled (checked against the first frame's size)")
    p.add_argument("--scale", choices=SCALES, default="fit",
                   help="into the image area: fit (default: the whole picture inside, "
                        "letterboxed or pillarboxed with black), fill (the area covered, the "
                        "excess cut centred), none (pixels 1:1, centred, padded or cut); "
                        "resized with a Lanczos (a=3) filter. IMF keeps the cropped size")
    p.add_argument("--stereo", action="store_true",
                   help="a stereoscopic (3D) DCP, 2K only: two INPUTs, the left eye's frames then "
                        "the right eye's (folders or images of the same length); the picture is "
                        "an ST 429-10 track file, the bit rate shared by the two eyes")
    p.add_argument("--frames", type=positive_int, default=None, metavar="N",
                   help="composition length in frames; the input repeats to fill it "
                        "(default: one pass of the input, at least one second)")
    _package_arguments(p)
    p.add_argument("--kind", default="feature", type=one_line_text, metavar="KIND", help="CPL ContentKind (default feature)")
    _cpl_arguments(p)
    _compute_arguments(p)
    p.add_argument("--audio", nargs="+", default=None, metavar="FILE.wav",
                   help="sound: one multichannel WAV, or one mono WAV per channel, in 5.1 "
                        "(L R C LFE Ls Rs) or 7.1 (L R C LFE Lss Rss Lrs Rrs) order, or one "
                        "stereo or mono WAV (a DCP: in 5.1, the rest silent; IMF: stereo as "
                        "it is); 16/24/32-bit PCM at 48 or 96 kHz, other rates from 8 to 384 "
                        "kHz converted to 48. Longer than the picture: cut (warning); shorter "
                        "by more than a frame: refused")
    p.add_argument("--audio-language", default=None, metavar="TAG",
                   help="spoken language of the sound, an RFC 5646 tag such as en-US")
    p.add_argument("--channel-map", type=_option(parse_channel_map), default=None, metavar="MAP",
                   help="which input channel (from 1, across the --audio files in order) feeds "
                        "each track channel: L=1,R=2,C=3,LFE=4,Ls=5,Rs=6 (a channel left out is "
                        "silent; Lss/Rss/Lrs/Rrs make a 7.1 track), or a preset of a stem order: "
                        "smpte, film (L C R Ls Rs LFE), dts (L R Ls Rs C LFE); DCPs only")
    p.add_argument("--gain", type=_gain, default=0.0, metavar="DB",
                   help="gain applied to the sound, in dB (-60 to +30; clipped at full scale)")
    p.add_argument("--subtitles", default=None, metavar="FILE",
                   help="subtitles (SRT, SSA/ASS, WebVTT, Interop or SMPTE ST 428-7 XML), written as an SMPTE timed-text "
                        "track with an embedded font. Cues past the picture's end: cut (warning); a "
                        "cue with a bad time: refused")
    p.add_argument("--subtitle-language", default=None, metavar="TAG",
                   help="language of the subtitles, an RFC 5646 tag such as fr (default: the file's, else en)")
    p.add_argument("--captions", default=None, metavar="FILE",
                   help="closed captions (SRT, SSA/ASS, WebVTT, Interop or SMPTE ST 428-7 XML), written as their own "
                        "timed-text track, named in the CPL as an ST 429-12 ClosedCaption")
    p.add_argument("--caption-language", default=None, metavar="TAG",
                   help="language of the closed captions, an RFC 5646 tag (default: the file's, else en)")
    p.add_argument("--subtitle-font", default=None, metavar="FILE.ttf",
                   help="font embedded for the subtitles (default DejaVu Sans, which may be redistributed)")
    p.add_argument("--standard", choices=("smpte", "interop"), default="smpte",
                   help="DCP standard: smpte (default) or interop (older servers: asdcplib's MXF "
                        "Interop track files, PROTO-ASDCP CPL/PKL/ASSETMAP, DCSubtitle XML with its "
                        "font; 24 or 48 fps, 2D, in the clear, 48 kHz 5.1 sound)")
    p.add_argument("--format", choices=("dcp", "imf"), default="dcp",
                   help="package: dcp (default) or imf (ST 2067-21 App #2E: R'G'B' 4:4:4 at the "
                        "input's size up to 4096x3112, 23.976/24/25/29.97/30/50/59.94/60 fps; "
                        "--profile and --container do not apply)")
    p.add_argument("--codec", choices=("j2k", "htj2k"), default="j2k",
                   help="IMF picture coding: j2k (Part-1 JPEG 2000, default) or htj2k "
                        "(High-Throughput JPEG 2000, ST 2067-21:2021)")
    p.add_argument("--lossless", action="store_true",
                   help="IMF with --codec htj2k: reversible 5/3 wavelet, lossless (no --bitrate)")
    p.add_argument("--bits", type=int, choices=(10, 12), default=12,
                   help="IMF bit depth per component (default 12)")
    p.add_argument("--sampling", choices=("rgb", "ycbcr444", "ycbcr422"), default="rgb",
                   help="IMF picture: rgb (R'G'B' 4:4:4 as given, default), ycbcr444 or ycbcr422 "
                        "(narrow-range Rec. 709 Y'CbCr; 4:2:2 halves the chroma width, co-sited)")
    p.add_argument("--report", metavar="HTML", default=None,
                   help="also write a QC report of the finished package, as 'cinegpu check --report' "
                        "writes it (bit rate, loudness, subtitles, thumbnails), with each frame's PSNR "
                        "against the source per component: one self-contained HTML page and its JSON "
                        "twin (same stem, .json); needs pip install 'cinegpu[report]'")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def _package_arguments(p) -> None:
    """The reel and encryption options."""
    p.add_argument("--reel-length", type=reel_seconds, default=None, metavar="SECONDS",
                   help="cut the composition into reels of SECONDS (at least 1), the last taking "
                        "the rest (a rest under a second joins the reel before); each reel has "
                        "its own picture, sound and subtitle track files")
    p.add_argument("--encrypt", action="store_true",
                   help="encrypt every track file (SMPTE ST 429-6), each under its own new "
                        "AES-128 key; needs --keys")
    p.add_argument("--keys", default=None, metavar="KEYS.txt",
                   help="with --encrypt: the content key file to create (mode 600; refused if "
                        "it exists); cinegpu kdm make reads it")
    p.add_argument("--sign", default=None, metavar="DIR",
                   help="sign the CPL and PKL (SMPTE ST 429-7, 429-8) with the chain in DIR, as "
                        "'cinegpu kdm chain -o DIR' writes it (chain.pem, leaf.key). With --encrypt "
                        "and no --sign: your own chain in $XDG_CONFIG_HOME/cinegpu/signer (made on "
                        "first use), as DCI requires an encrypted DCP to be signed")
    p.add_argument("--no-sign", action="store_true",
                   help="with --encrypt: leave the CPL and PKL unsigned (for signing elsewhere; "
                        "DCI and ClairMeta refuse an unsigned encrypted DCP)")


def _cpl_arguments(p) -> None:
    """The CPL's content version, ratings and markers (ST 429-7)."""
    p.add_argument("--content-version", type=_option(parse_content_version), default=None,
                   metavar="ID,LABEL",
                   help="the CPL's ContentVersion: an id (a UUID or a URI such as urn:uuid:...) "
                        "and its label (default: a new id, labelled TITLE_DATE)")
    p.add_argument("--rating", type=_option(parse_rating), action="append", default=[],
                   metavar="AGENCY:LABEL",
                   help="a rating in the CPL's RatingList, the agency a URI "
                        "(http://www.mpaa.org/2003-ratings:PG-13); repeatable")
    p.add_argument("--marker", action="append", default=[], metavar="LABEL=HH:MM:SS:FF",
                   help=f"a reel marker ({', '.join(MARKER_LABELS)}) at a timecode of the "
                        f"composition (or a frame number), such as FFEC=00:41:12:00; repeatable. "
                        f"FFOC (frame 1) and LFOC (the last frame) are written unless given")


def _gain(text: str) -> float:
    """A gain in dB, -60 to +30."""
    try:
        db = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want a gain in dB such as -3 or 1.5, got {text!r}") from None
    if not -60 <= db <= 30:
        raise argparse.ArgumentTypeError(f"a gain from -60 to +30 dB, got {text}")
    return db


def _option(parse):
    """An argparse type of ``parse``: its ValueError is the option's one-line error."""
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = parse.__name__
    return convert


def _compute_arguments(p) -> None:
    """Where the frames are encoded: threads, processes, GPUs, MPS, a cluster, the back end."""
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="encoder threads in each encoder process (default: on the CPU the cores "
                        "shared out; on the GPU 2 per encoder process, or in one process one "
                        "per core, at most 8 per GPU)")
    p.add_argument("--processes", type=positive_int, default=None, metavar="N",
                   help="encoder processes, each reading and encoding its own frames (default: "
                        "on the GPU for 720 input frames or more one per CPU core on one GPU, "
                        "one per 2 cores on several, at most 16 per GPU; else 1; on the CPU 1)")
    p.add_argument("--gpus", type=gpu_count, default=1, metavar="N|all",
                   help="GPUs the encoder processes are spread over (default 1)")
    p.add_argument("--no-mps", dest="mps", action="store_false",
                   help="do not share each GPU between the encoder processes through a CUDA "
                        "MPS of the job's own (default: where processes outnumber the GPUs and "
                        "nvidia-cuda-mps-control is there, and no MPS of yours runs)")
    cluster_arguments(p, "code the frames (this machine writes the package)")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where the encoder runs (default auto: the GPU when CuPy sees one)")


def reel_seconds(text: str) -> Fraction:
    """A reel length in seconds: a number of at least 1 (ST 429-7: no reel under a second)."""
    try:
        seconds = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"want seconds such as 600 or 2.5, got {text!r}") from None
    if seconds < 1:
        raise argparse.ArgumentTypeError(f"a reel lasts at least 1 second, got {text}")
    return seconds


def _check_options(args) -> None:
    """ValueError for options that do not go together (before anything is read or made):
    --encrypt and --keys, --sign and --no-sign or IMF, several INPUT folders (one reel each)
    and --reel-length or --frames."""
    if args.encrypt != (args.keys is not None):
        raise ValueError("--encrypt needs --keys KEYS.txt (the file the content keys are "
                         "written to), and --keys goes with --encrypt")
    if args.standard == "interop" and (args.encrypt or args.sign is not None):
        raise ValueError("--encrypt and --sign with --standard interop: encrypted or signed "
                         "Interop DCPs are not supported yet (master SMPTE, the default)")
    if args.sign is not None and (args.no_sign or args.format == "imf"):
        raise ValueError("--sign goes without --no-sign, and signs DCPs (not --format imf)")
    if len(args.input) > 1 and not args.stereo and (args.reel_length is not None or args.frames is not None):
        raise ValueError("several INPUT folders make one reel each: leave out --reel-length "
                         "and --frames")


def run(args) -> int:
    """Exit status: 0 done; 2 bad input, bad output path or a full disk (one line on stderr);
    130 Ctrl-C (SIGINT); 143 SIGTERM (128 + 15). Only 0 leaves anything at ``--output``, but for
    a ``--report`` that could not be written once the package was (2, the package kept)."""
    with interrupts():
        return _run(args)


def _run(args) -> int:
    from cinegpu.jobs.mastering import master  # noqa: PLC0415  (start-up: mastering, ~0.3 s)

    try:
        job = _job(args)
        if not args.quiet:        # the first frame read for its geometry: a crop too large ends here
            print(_plan(job, _first_placement(job)), file=sys.stderr)
        job = replace(job, protection=replace(job.protection, signer=_signer(args)))
        if job.report is not None:
            from .compiling import compile_decoder  # noqa: PLC0415  (start-up: numba, for --report only)
            compile_decoder("master")
        mastered = master(job, progress=not args.quiet)
        package = mastered.package
    except (MediaError, BackendUnavailable, ValueError, OSError) as exc:
        print(f"cinegpu master: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"cinegpu master: interrupted; no {args.format.upper()} written", file=sys.stderr)
        return INTERRUPTED
    except Terminated:
        print(f"cinegpu master: terminated (SIGTERM); no {args.format.upper()} written",
              file=sys.stderr)
        return TERMINATED
    print(_summary(package, mastered.placement))
    if mastered.report is not None:
        print(f"report: {mastered.report[0]} ({mastered.report[1].name})")
    if job.sound is not None:
        try:
            print(_loudness(job))
        except MediaError as exc:          # the input changed since it was written
            print(f"cinegpu master: the sound's loudness not measured: {exc}", file=sys.stderr)
    return 0


def _loudness(job) -> str:
    """The line on the mix's loudness as the package carries it (its track's samples, read
    again from the input through the same mapping, conversion and gain)."""
    from cinegpu.media.sound.loudness import loudness_text, mix_loudness  # noqa: PLC0415  (start-up: scipy's filters)
    sound, p = job.sound, job.picture
    samples = sound.imf_samples(job.length, p.fps) if p.imf else job.length * sound.samples_per_frame(p.fps)
    return f"sound: {loudness_text(mix_loudness(sound, samples))}"


def _job(args):
    """The :class:`.master_job.MasterJob` of the options, unsigned (:func:`_signer` is asked
    last): each part checked as it is made, the cheap ones first (ValueError, MediaError;
    nothing is encoded yet); the sound's and subtitles' notes and warnings printed.  A single
    INPUT shorter than a second is repeated to last one (a reel lasts at least a second,
    ST 429-2)."""
    from cinegpu.jobs.master_job import (  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
        Composition,
        Compute,
        MasterJob,
        Picture,
        Protection,
        image_input,
    )
    from cinegpu.jobs.report import check_target  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    from cinegpu.media.package.dcp_write import check_output  # noqa: PLC0415  (start-up: mastering, ~0.3 s)

    _check_options(args)
    report = None if args.report is None else check_target(args.report)    # before any work
    video = _video(args)                   # sets args.fps and args.colorspace where not given
    metadata = CplMetadata(args.content_version, tuple(args.rating),
                           tuple(parse_marker(m, args.fps) for m in args.marker))
    picture = Picture(format=args.format, profile=args.profile, fps=args.fps,
                      bitrate=args.bitrate, colorspace=args.colorspace, container=args.container,
                      codec=args.codec, bits=args.bits, lossless=args.lossless,
                      sampling=args.sampling, stereoscopic=args.stereo, standard=args.standard,
                      crop=args.crop, scale=args.scale)
    picture.check_holds(1 if args.stereo else len(args.input), args.reel_length, args.encrypt,
                        args.subtitles or None)
    if (warning := picture.bitrate_warning()) is not None:
        print(f"cinegpu master: warning: {warning}", file=sys.stderr)
    protection = Protection(keys=args.keys)
    compute = Compute(backend=args.backend, workers=args.workers, processes=args.processes,
                      gpus=args.gpus, cluster=cluster_address(args), mps=args.mps)
    check_output(args.output)
    frames, reels = _stereo_input(args, picture) if args.stereo else image_input(args.input, picture, video)
    length = args.frames
    if length is None and frames.count // picture.eyes < args.fps and reels is None:
        length = int(-(-args.fps // 1))
    length_or_input = length or frames.count // picture.eyes
    sound = _sound(args, picture, length_or_input, video)
    subtitles = _subtitles(args, length_or_input, args.title or "")
    captions = _captions(args, length_or_input)
    title = args.title
    if args.isdcf is not None or (title is None and not picture.imf):
        title = _isdcf_title(args, picture, frames, sound, subtitles)
        if subtitles is not None:      # its documents carry the title
            subtitles = _subtitles(args, length_or_input, title, say=False)
    composition = Composition(title=title or _input_name(args), kind=_kind(args), frames=length,
                              reels=reels, reel_length=args.reel_length, sound=sound,
                              subtitles=subtitles, metadata=metadata, captions=captions)
    return MasterJob(frames, args.output, composition, picture, protection, compute, report)


def _stereo_input(args, picture):
    """``--stereo``'s two INPUTs (the left eye's frames, then the right eye's) as one input
    in coding order (:meth:`.InputFrames.stereo`), and no reels of their own."""
    from cinegpu.jobs.master_job import InputFrames, image_input  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    if len(args.input) != 2:
        raise ValueError(f"--stereo takes two INPUTs, the left eye's frames then the right "
                         f"eye's, not {len(args.input)}")
    left, right = (image_input(path, picture)[0] for path in args.input)
    return InputFrames.stereo(left, right), None


def _video(args):
    """The probed :class:`.video.frames.VideoFrames` of a video INPUT, else None; sets
    ``args.fps`` (the file's rate, else 24) and ``args.colorspace`` (its tags, else rec709)
    where they were not given.  MediaError for a file that does not read or whose rate the
    package does not take (unless --fps gives the rate to master at: its frames are then taken
    one for one, which one line says)."""
    if not any(is_video(p) for p in args.input):
        args.fps = Fraction(24) if args.fps is None else args.fps
        args.colorspace = args.colorspace or "rec709"
        return None
    if len(args.input) != 1:
        raise ValueError("a video file is mastered on its own: give it as the only INPUT")
    try:
        from cinegpu.media.video.frames import open_video  # noqa: PLC0415  (start-up: PyAV, ~0.1 s)
    except ImportError as exc:
        raise ValueError(f"reading video files needs PyAV (pip install av): {exc}") from None
    video = open_video(args.input[0])
    rate = video.rate
    if args.fps is None:
        if args.format == "imf":
            name, rates = "an IMF", imf.FRAME_RATES
        else:
            p = dci.profile(args.profile)
            name, rates = f"a {p.title}", p.frame_rates
        if rate not in rates:
            raise UnsupportedMedia(video.path, f"{rate} fps ({float(rate):.3f}) is not {name} "
                                   f"rate ({', '.join(f'{float(r):g}' for r in rates)}): give "
                                   "--fps RATE to master its frames one for one at RATE")
        args.fps = rate
    elif args.fps != rate:
        print(f"cinegpu master: {video.path}: its {video.count} frames at {rate} fps are "
              f"mastered one for one at {args.fps} fps: {float(video.count / rate):.3f} s become "
              f"{float(video.count / args.fps):.3f} s"
              + (", its sound follows" if video.sound and not args.audio else ""), file=sys.stderr)
    args.colorspace = args.colorspace or video.colorspace
    if not args.quiet:
        print(f"cinegpu master: {video.path}: {video.describe()}; read as {args.colorspace}",
              file=sys.stderr)
    return video


def _sound(args, picture, frames: int, video=None):
    """The --audio input (else a video INPUT's own sound, decoded into a temporary WAV beside
    the output) as the package carries it, checked against ``frames`` frames (MediaError;
    its note and any warning printed), or None."""
    if not args.audio and video is not None:
        from cinegpu.media.video.sound import video_sound  # noqa: PLC0415  (start-up: PyAV, ~0.1 s)
        sound = video_sound(video, folder=Path(args.output).resolve().parent,
                            language=args.audio_language, speed=Fraction(picture.fps) / video.rate)
    elif not args.audio:
        sound = None
    elif args.channel_map is not None:
        sound = open_mapped_sound(args.audio, args.audio_language, args.channel_map)
    else:
        sound = open_sound(args.audio, args.audio_language)
    if sound is None:
        if args.audio_language or args.channel_map is not None or args.gain:
            raise ValueError("--audio-language, --channel-map and --gain need sound: give --audio"
                             + ("" if video is None else " (the video file has none)"))
        return None
    if args.channel_map is not None and picture.imf:
        raise ValueError("--channel-map is for DCPs: an IMF package's sound is taken as it is")
    if args.channel_map is not None and not args.audio:      # a video's own sound
        sound = map_channels(sound, args.channel_map)
    if args.gain:
        sound = replace(sound, gain_db=args.gain)
    if picture.imf:
        sound = sound.for_imf()
    warning = (sound.fit_imf if picture.imf else sound.fit)(frames, picture.fps)
    if sound.note:
        print(f"cinegpu master: {sound.note}", file=sys.stderr)
    if warning:
        print(f"cinegpu master: warning: {warning}", file=sys.stderr)
    return sound


def _kind(args) -> str:
    """The CPL's ContentKind: --kind's, or where it is left at feature, the one of
    ``--isdcf type=`` (TLR: trailer...)."""
    if args.kind != "feature" or args.isdcf is None:
        return args.kind
    return {code: kind for kind, code in KIND_TYPES.items()}.get(args.isdcf.content_type, "feature")


def _captions(args, frames: int):
    """The --captions track prepared for ``frames`` frames as subtitles are (its warnings
    printed), or None."""
    from cinegpu.media.subtitles.write import prepare_subtitles  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    if not args.captions:
        if args.caption_language:
            raise ValueError("--caption-language needs --captions")
        return None
    captions, warnings = prepare_subtitles(args.captions, frames=frames, fps=args.fps, title=args.title or "",
                                           language=args.caption_language, font=args.subtitle_font)
    for warning in warnings:
        print(f"cinegpu master: warning (captions): {warning}", file=sys.stderr)
    return captions


def _input_name(args) -> str:
    """The first INPUT's name (a folder's, or an image's without its suffix)."""
    first = Path(args.input[0]).resolve()
    return first.name if first.is_dir() else first.stem


def _isdcf_title(args, picture, frames, sound, subtitles) -> str:
    """The ISDCF name (:func:`.isdcf.isdcf_name`) of the package the options make: the
    picture's size from the first input frame (read here), its rate, today's date, the
    sound's soundfield and language, the subtitles' language; ValueError naming a field the
    package contradicts or the convention cannot carry."""
    from cinegpu.media.package.isdcf import IsdcfFields, PackageFacts, isdcf_name  # noqa: PLC0415  (start-up: only when a title is built)
    first = frames.read(0)
    width, height, _ = picture.coded_size(first.shape[1], first.shape[0])
    fields = args.isdcf or IsdcfFields()
    if fields.content_type == "FTR" and args.kind != "feature":     # the type follows --kind
        fields = replace(fields, content_type=KIND_TYPES.get(args.kind, "FTR"))
    if sound is not None and sound.language and fields.language == "XX":
        fields = replace(fields, language=sound.language.split("-")[0])
    if subtitles is not None and fields.subtitle_language is None:
        fields = replace(fields, subtitle_language=subtitles.language.split("-")[0])
    facts = PackageFacts(width, height, Fraction(args.fps), datetime.date.today(),
                         stereoscopic=picture.stereoscopic, standard="IOP" if picture.interop else "SMPTE",
                         sound_channels=0 if sound is None else len(sound.layout.inputs),
                         sound_field=None if sound is None else sound.layout.isdcf,
                         subtitles=subtitles is not None)
    return isdcf_name(facts, fields, default_title=args.title or _input_name(args))


def _subtitles(args, frames: int, title: str, say: bool = True):
    """The --subtitles track prepared for ``frames`` frames, its documents titled ``title``
    (its warnings printed where ``say``), or None."""
    from cinegpu.media.subtitles.write import prepare_subtitles  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    if not args.subtitles:
        if args.subtitle_language or (args.subtitle_font and not args.captions):
            raise ValueError("--subtitle-language and --subtitle-font need --subtitles (the font: or --captions)")
        return None
    subtitles, warnings = prepare_subtitles(
        args.subtitles, frames=frames, fps=args.fps, title=title,
        language=args.subtitle_language, font=args.subtitle_font)
    for warning in warnings if say else ():
        print(f"cinegpu master: warning: {warning}", file=sys.stderr)
    return subtitles


def _first_placement(job):
    """Where the first input frame lands in the picture (:meth:`.Picture.placement`, read for
    its size): ValueError for a ``--crop`` that leaves nothing of it."""
    first = job.input.read(0)
    return job.picture.placement(first.shape[1], first.shape[0])


def _plan(job, placement=None) -> str:
    """The line printed before mastering: frames in and out, the package, the encoder and
    where it runs (BackendUnavailable for a back end that is not there), and where the frames
    land in the picture (``placement``, :meth:`.geometry.Placement.describe`)."""
    from cinegpu.jobs.frame_encode import pick_backend  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    from cinegpu.media.package.dcp_write import encoder_name  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    p, cluster = job.picture, job.compute.cluster
    what = f"IMF App 2E {p.bits}-bit {p.sampling}" if p.imf else \
        f"DCI {p.profile.upper()}" + (" Interop" if p.interop else "")
    where = f"on the cluster {cluster}" if cluster else pick_backend(job.compute.backend)
    return (f"cinegpu master: {job.input.count} input frame(s) -> {job.length} frames at "
            f"{p.fps} fps, {what}, encoder {encoder_name()} ({where})"
            + ("" if placement is None else f"; picture {placement.describe()}"))


def _signer(args):
    """The signer of the CPL and PKL: ``--sign DIR``'s; with ``--encrypt`` (and no
    ``--no-sign``) the user's own, made on first use (one line says so); else None."""
    if args.sign is not None:
        return load_signer(args.sign)
    if not args.encrypt or args.no_sign:
        return None
    signer, made = user_signer()
    if made:
        print(f"cinegpu master: made your own signing certificate chain in {signer.folder} "
              f"(DCI requires an encrypted DCP to be signed; --sign DIR signs with another)",
              file=sys.stderr)
    elif not args.quiet:
        print(f"cinegpu master: signing with your own certificate chain in {signer.folder}",
              file=sys.stderr)
    return signer


def _summary(package, placement=None) -> str:
    """The line printed for a finished package: frames, size, reels, sound, subtitles, keys;
    the picture, sound and subtitle bytes are each summed over every reel; where the input
    frames landed in the picture (``placement``: crop, scale, padding)."""
    t = package.track
    s = package.sound
    reels = package.reels or ()
    frames = sum(r.picture.frames for r in reels) if reels else t.frames
    pictures = sum(r.picture.size for r in reels) if reels else t.size
    sounds = sum(r.sound.size for r in reels if r.sound is not None) if reels else \
        (0 if s is None else s.size)
    texts = sum(r.subtitle.size for r in reels if r.subtitle is not None) if reels else \
        (0 if package.subtitle is None else package.subtitle.size)
    sound = "" if s is None else \
        f", sound {s.layout.name} {s.channels} channels {s.rate} Hz ({sounds} bytes)"
    subs = "" if package.subtitle is None else f", subtitles ({texts} bytes)"
    captions = sum(r.caption.size for r in reels if getattr(r, "caption", None) is not None)
    subs += f", closed captions ({captions} bytes)" if captions else ""
    more = f" in {len(reels)} reels ({', '.join(str(r.picture.frames) for r in reels)} frames)" \
        if len(reels) > 1 else ""
    keys = "" if package.keys is None else f"; encrypted, content keys in {package.keys}"
    signed = "" if getattr(package, "signer", None) is None else f"; signed by {package.signer}"
    geometry = "" if placement is None else f" (input {placement.describe()})"
    return (f"{package.root}: {frames} frames {t.width}x{t.height} at {t.edit_rate} fps{more}, "
            f"CPL {package.cpl_id}, {pictures} bytes of picture{geometry}{sound}{subs}{keys}"
            f"{signed}")
