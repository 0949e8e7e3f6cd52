"""``cinegpu play [PATH]``: play a DCP, CPL, IMF, MXF, codestream or folder of frames."""

from __future__ import annotations

import argparse
import logging
import sys
from fractions import Fraction
from pathlib import Path

from cinegpu.decode import BackendUnavailable, PipelineError
from cinegpu.decode.cpus import usable_cores
from cinegpu.interop import TARGETS, choose_target
from cinegpu.interop.window import NoStereoDisplay, has_display, open_window
from cinegpu.media import MediaError, open_source

from ..audio import AudioDeviceError, measure_offset, offset_text, open_feed
from ..media_default import default_media
from ..player import Player
from ..presenter import Presenter
from ..settings import PlaySettings
from ..source import DecodeAheadSource, PipelineSource
from ..stereo import stereo_source
from .args import (
    UsageError,
    captions_argument,
    check_stereo,
    check_tier1,
    playback_options,
    positive_int,
    positive_rate,
    stereo_argument,
    tier1_argument,
)
from .compiling import compile_decoder
from .interrupts import stoppable
from .keys import add_key_args, key_ring


def _screenshot(text: str) -> tuple[int, Path]:
    """``N:FILE.png``: the frame and the picture to write, refused before anything plays where
    the folder does not exist or the file is not a PNG."""
    frame, sep, path = text.partition(":")
    if not sep or not frame.isdigit() or not path:
        raise argparse.ArgumentTypeError(f"want N:file.png, got {text!r}")
    where = Path(path)
    if where.suffix.lower() != ".png":
        raise argparse.ArgumentTypeError(f"{path}: a screenshot is a .png file")
    if not where.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: folder {where.parent} does not exist")
    if where.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: is a folder")
    return int(frame), where


def register(subparsers) -> None:
    p = subparsers.add_parser("play", help="play media on screen, or headless with a summary")
    p.add_argument("path", nargs="?", help="DCP/IMF folder, CPL, MXF, J2K/JP2 file or folder of frames "
                                           "(default: a built-in synthetic sequence)")
    p.add_argument("--ov", action="append", default=[], metavar="DIR",
                   help="an original-version package whose track files a supplemental package "
                        "(VF) uses; repeatable")
    p.add_argument("--fps", type=positive_rate, default=None, metavar="RATE",
                   help="frame rate for bare sequences (default 24); overrides a package's edit rate")
    p.add_argument("--headless", action="store_true",
                   help="offscreen OpenGL (EGL), play through and print a summary (automatic without a display)")
    p.add_argument("--screenshot", type=_screenshot, action="append", default=[], metavar="N:FILE.png",
                   help="save the picture drawn for frame N (0-based) at its own size, 16-bit PNG; repeatable")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto", help="decode back end")
    p.add_argument("--interop", choices=("auto", "surface", "pbo", "host"), default="auto",
                   help="texture upload path (default: the best that probes well)")
    p.add_argument("--colour", "--color", choices=("auto", "xyz", "rgb"), default="auto",
                   help="content colour: X'Y'Z' (DCI) or RGB; auto: X'Y'Z' for DCPs and DCI-profile codestreams")
    p.add_argument("--primaries", choices=("p3d65", "rec709"), default="p3d65", help="display for X'Y'Z' content")
    p.add_argument("--loop", action="store_true", help="start with looping on (key l)")
    p.add_argument("--frames", type=positive_int, default=None, metavar="N", help="stop after N frames of playback")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="tier-1 worker processes (default: cores - 1); with --threads, decode threads")
    p.add_argument("--threads", action="store_true",
                   help="decode in threads of this process instead of the multi-process pipeline")
    p.add_argument("--full-resolution", action="store_true",
                   help="always decode at full resolution (by default playback decodes at 1/2 or 1/4 "
                        "of the size while this machine cannot decode at the frame rate, and goes "
                        "back up when it can)")
    p.add_argument("--subtitles", choices=("on", "off"), default="on",
                   help="draw the package's subtitles (Interop or SMPTE XML) over the picture (default on)")
    p.add_argument("--subtitle-file", default=None, metavar="FILE",
                   help="draw this Interop/SMPTE subtitle XML or SRT file from the first frame instead")
    p.add_argument("--preroll", type=positive_int, default=2, metavar="N", help="frames decoded before the clock starts (default 2)")
    p.add_argument("--audio", choices=("auto", "device", "null", "off"), default="auto",
                   help="sound: auto (the default output device through sounddevice when there is one, "
                        "else the null sink; headless: null), device (the output device, headless too; "
                        "exit status 2 when there is none), null (a silent sink on the same clock), off")
    p.add_argument("--audio-out", type=Path, default=None, metavar="FILE.wav",
                   help="write the sound as played (all channels, native rate and bit depth, before any "
                        "downmix; sample 0 at the first frame played) and print the measured offset")
    stereo_argument(p)
    captions_argument(p)
    tier1_argument(p)
    add_key_args(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Exit status: 0 played; 2 a mistake or media that cannot play (one line on stderr); 143 after
    SIGTERM, 130 after Ctrl-C, each with the decode workers ended and their shared memory unlinked."""

    return stoppable("play", _run, args)


def _run(args) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    path = args.path if args.path is not None else default_media()
    headless = args.headless or not has_display()
    if args.interop != "auto":          # asked for before any frame is opened or decoded
        reason = TARGETS[args.interop].missing()
        if reason is not None:
            print(f"cinegpu play: --interop {args.interop} cannot work here: {reason}", file=sys.stderr)
            return 2
    try:
        check_tier1(args.backend, args.tier1)
        check_stereo(args.stereo, headless)
        media = open_source(path, keys=key_ring(args), ov=args.ov)
    except (MediaError, UsageError, BackendUnavailable) as exc:
        print(f"cinegpu play: {exc}", file=sys.stderr)
        return 2
    compile_decoder("play")
    try:
        summary = play(media, _settings(args, headless))
    except (MediaError, BackendUnavailable, PipelineError, AudioDeviceError) as exc:
        # no frame readable; no GPU; no workers; --audio device without a sound device
        print(f"cinegpu play: {exc}", file=sys.stderr)
        return 2
    finally:
        media.close()
    if headless:
        print(summary)
        if summary.why_dropped():
            print(summary.why_dropped())
    return 0


def _settings(args, headless: bool) -> PlaySettings:
    """The :class:`PlaySettings` of ``cinegpu play``'s arguments."""
    return PlaySettings(**playback_options(args), headless=headless, loop=args.loop, frames=args.frames,
                        screenshots=dict(args.screenshot), auto_resolution=not args.full_resolution,
                        subtitle_file=args.subtitle_file, audio_out=args.audio_out)


def play(media, settings: PlaySettings, *, source=None):
    """Play an opened media source (or a ready frame ``source``) as ``settings`` say; the
    :class:`~..player.Summary`."""

    s = settings
    if source is None:
        source = _frame_source(media, s)
    for n in s.screenshots or {}:
        if not 0 <= n < source.frame_count:
            source.close()
            raise UsageError(f"--screenshot {n}: past the last frame ({source.frame_count} frames, "
                             f"numbered from 0)")
    depth = max(8, s.preroll, getattr(source, "depth", 8))
    rate = Fraction(s.fps) if s.fps is not None else (source.edit_rate or Fraction(24))
    title = f"cinegpu - {getattr(media, 'title', '') or 'play'}"
    subtitles = s.subtitles
    if subtitles is True or s.subtitle_file is not None or (s.captions and subtitles in (False, None)):
        from ..subtitles import subtitles_for  # noqa: PLC0415  (start-up: PIL and the timed-text readers, ~50-90 ms)
        subtitles = subtitles_for(media, source.frame_count, source.edit_rate or rate, on=bool(subtitles),
                                  file=s.subtitle_file, captions=s.captions)
    eyes = getattr(source, "eyes", 1)     # 2: quad-buffer stereo, an eye a back buffer
    try:
        window = open_window(*_window_size(source.width, source.height // eyes), headless=s.headless,
                             title=title, stereo=eyes == 2)
    except NoStereoDisplay as exc:
        source.close()
        raise UsageError(f"--stereo quad-buffer: {exc.detail}") from None
    try:
        target = _target(s.interop, source.backend)
        player = Player(source, window, target, Presenter(), rate=rate, loop=s.loop, screenshots=s.screenshots,
                        headless=s.headless, depth=depth, preroll=s.preroll, max_frames=s.frames,
                        subtitles=subtitles or None)
        try:
            player.audio = open_feed(media, player.clock, "null" if s.headless and s.audio == "auto" else s.audio,
                                     s.audio_out)
            summary = player.run()
            if player.audio is not None:
                summary.audio = _audio_result(player, summary.frames, s.audio_out)
            return summary
        finally:
            if player.audio is not None:
                player.audio.close()
                player.audio.sound.close()
            player.close()
    finally:
        source.close()
        window.close()


def _frame_source(media, s: PlaySettings):
    """The decoded frames of ``media`` as ``s.stereo`` shows a 3D one (:func:`.stereo_source`;
    UsageError for a mode asked of a 2D one): the multi-process pipeline, or decode-ahead
    threads (``s.workers`` of them, default min(8, usable cores)) when not ``s.processes``;
    two eyes joined take half the workers each."""

    def make(view, share):
        if s.processes:     # the pipeline's default: a process a core but one
            workers = None if s.workers is None and share == 1 else \
                max(1, int((s.workers or usable_cores() - 1) * share))
            return PipelineSource(view, backend=s.backend, colour=s.colour, primaries=s.primaries,
                                  workers=workers, auto_resolution=s.auto_resolution, tier1=s.tier1)
        workers = max(1, int((s.workers or min(8, usable_cores())) * share))
        return DecodeAheadSource(view, backend=s.backend, colour=s.colour, primaries=s.primaries,
                                 workers=workers, depth=max(8, s.preroll, 2 * workers),
                                 auto_resolution=s.auto_resolution, tier1=s.tier1)

    try:
        return stereo_source(media, s.stereo, make)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _target(interop: str, backend: str):
    """The texture target: the best that probes well for ``backend`` ("auto"), else
    ``interop``'s, which must probe well (a :class:`UsageError` saying why not)."""

    if interop == "auto":
        return choose_target(backend)
    reason = TARGETS[interop].probe()
    if reason is not None:
        raise UsageError(f"--interop {interop} cannot work here: {reason}")
    return TARGETS[interop]()


def _audio_result(player, frames: int, audio_out: Path | None) -> str:
    """Finish the sound and say what became of it: the sink, the record, the measured offset."""

    feed = player.audio
    if not player.quit:
        feed.finish(frames)
    text = f"audio {feed.sink.name} ({feed.sound.summary()})"
    if feed.sink.output_latency > 0:
        text += f"; the device's output latency, {feed.sink.output_latency * 1e3:.1f} ms, fed ahead"
    feed.resolve_device()
    at_device = feed.device_offset_ms()
    if at_device is not None:
        median, worst, n = at_device
        text += (f"; offset at the device {median:+.1f} ms (median of {n} frames, largest "
                 f"{worst:+.1f} ms; by the device's DAC times)")
    if feed.wav is None:
        return text
    feed.wav.close()
    ms, measured = measure_offset(audio_out, feed.sound, feed.marks())
    return f"{text}; written to {audio_out}; {offset_text(ms, measured)}"


def _window_size(width: int, height: int, limit: int = 1280) -> tuple[int, int]:
    scale = min(1.0, limit / max(width, 1))
    return max(1, round(width * scale)), max(1, round(height * scale))
