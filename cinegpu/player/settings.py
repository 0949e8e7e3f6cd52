"""What a user chose for playback: frozen values the command line builds and the player reads.

- :class:`Playback`: how frames are decoded and shown, with what sound and subtitles; the
  options ``cinegpu play`` and ``cinegpu serve`` share (docs/server.md: "as for cinegpu play");
- :class:`PlaySettings`: those and what only ``cinegpu play`` does (loop, stop after N frames,
  screenshots, a subtitle file, a WAV record of the sound);
- :class:`ServeSettings`: a :class:`Playback` and what only ``cinegpu serve`` does (docs/server.md):
  the library, the address, who may drive it (:class:`Access`), its :class:`ConnectionLimits`,
  the window, what to load at start and the key ring.

The token and the key ring are left out of the values' ``repr``: no key appears in any log,
error or output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

__all__ = ["Access", "ConnectionLimits", "Playback", "PlaySettings", "ServeSettings"]


@dataclass(frozen=True, kw_only=True)
class Playback:
    """How a composition is decoded and shown (docs/playback.md).

    ``headless``: offscreen OpenGL (EGL) instead of a window.  ``fps``: frames/s overriding
    the edit rate (None: the composition's; a bare sequence's is 24).  ``backend``: the decode
    back end, "auto", "cpu" or "cuda".  ``interop``: how decoded frames reach the texture,
    "auto", "surface", "pbo" or "host".  ``colour``: what the content is, "auto", "xyz" or
    "rgb"; ``primaries``: the display's for X'Y'Z' content, "p3d65" or "rec709".
    ``workers``: tier-1 worker processes (None: the default of the source), or decode threads
    when not ``processes`` (the multi-process pipeline).  ``preroll``: frames decoded before
    the clock starts.  ``audio``: the sound sink, "auto", "device", "null" or "off"
    (:func:`~cinegpu.player.audio.open_sink`; "auto" is "null" headless).  ``subtitles``:
    draw the composition's subtitles (or, for :func:`~.commands.play.play`, a
    :class:`~cinegpu.media.subtitles.track.CompositionSubtitles` to draw).  ``stereo``: how
    a 3D composition is shown (:data:`~cinegpu.player.stereo.STEREO_MODES`; None: its left
    eye).  ``captions``: draw its closed captions (ST 429-12) too, over the subtitles.
    ``tier1``: where tier-1 runs (:data:`~cinegpu.decode.backend.TIER1_PLACES`: "auto", "gpu",
    or "cpu": in the workers, the GPU reconstructing)."""

    headless: bool
    fps: Fraction | None = None
    backend: str = "auto"
    interop: str = "auto"
    colour: str = "auto"
    primaries: str = "p3d65"
    workers: int | None = None
    processes: bool = True
    preroll: int = 2
    audio: str = "auto"
    subtitles: object = True
    stereo: str | None = None
    captions: bool = False
    tier1: str = "auto"


@dataclass(frozen=True, kw_only=True)
class PlaySettings(Playback):
    """:class:`Playback` and what only ``cinegpu play`` does.

    ``loop``: start with looping on.  ``frames``: stop after this many frames of playback
    (None: at the end).  ``screenshots``: {frame number (0-based): PNG path}, the picture drawn
    for each, at full resolution.  ``auto_resolution``: decode at 1/2 or 1/4 of the size while
    decoding cannot keep up.  ``subtitle_file``: draw this Interop/SMPTE XML or SRT file
    instead of the composition's subtitles.  ``audio_out``: a WAV record of the sound as
    played."""

    loop: bool = False
    frames: int | None = None
    screenshots: dict | None = None
    auto_resolution: bool = True
    subtitle_file: str | Path | None = None
    audio_out: Path | None = None


@dataclass(frozen=True, kw_only=True)
class Access:
    """Who may drive the server (:class:`~cinegpu.player.server.access.Guard`).

    ``token``: the bearer token (None: generate one at start, unless ``no_token``);
    ``no_token``: go without (loopback addresses only); ``hosts``: more ``Host`` names to
    accept (``--allow-host``); ``origins``: more browser origins to accept (``--allow-origin``)."""

    token: str | None = field(default=None, repr=False)
    no_token: bool = False
    hosts: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ConnectionLimits:
    """How the HTTP connections are bounded (:mod:`cinegpu.player.server.protocol`): at most
    ``max_connections`` open at once (1..100000); a request head (or the next one on a
    keep-alive connection) must arrive within ``head_timeout`` seconds (0.1..3600)."""

    max_connections: int = 256
    head_timeout: float = 5.0

    def check(self) -> None:
        """Raise ValueError for limits out of their ranges."""
        if not (1 <= self.max_connections <= 100_000 and 0.1 <= self.head_timeout <= 3600):
            raise ValueError("--max-connections wants 1..100000, --head-timeout 0.1..3600 seconds")


@dataclass(frozen=True, kw_only=True)
class ServeSettings:
    """A server's settings.

    ``library``: the folder of DCPs, IMF packages and frame folders it serves (nothing whose
    real path is outside).  ``listen``: ``HOST:PORT``, ``[v6]:PORT`` or ``:PORT`` (port 0: any
    free port).  ``access``, ``limits``: see :class:`Access`, :class:`ConnectionLimits`.
    ``playback``: how it plays (:class:`Playback`; its ``audio`` "auto", "null" or "off").
    ``window_size``: (width, height) of the window, pixels.
    ``load``: ids of compositions to load at start (a playlist), then ``play`` and ``loop``.
    ``keys``: the :class:`~cinegpu.media.security.key_ring.KeyRing` encrypted compositions open
    with (KDMs added at start, and through ``POST /api/v1/kdms`` when it holds the private
    key), or None."""

    library: Path | str
    listen: str = "127.0.0.1:8080"
    access: Access = Access()
    limits: ConnectionLimits = ConnectionLimits()
    playback: Playback = Playback(headless=True)
    window_size: tuple[int, int] = (1280, 720)
    load: tuple[str, ...] = ()
    play: bool = False
    loop: bool = False
    keys: object = field(default=None, repr=False)
