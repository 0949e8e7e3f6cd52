"""The figures of a package's QC report (``cinegpu check PACKAGE --report R.html``).

Per composition (CPL) and per reel, as JSON-ready values (the report's JSON twin holds exactly
these; the HTML page draws them):

* picture: each frame's codestream size in bytes, from the track file's index table
  (:meth:`~cinegpu.media.mxf.read.MXFFile.frame_size`: no frame is read), as ``cinegpu info``
  sizes them (a stereoscopic frame by its left eye), and the bit rate, Mbit/s =
  bytes x 8 x edit rate / 10^6, against DCI's caps (250 Mbit/s, and the 230 Mbit/s safe level:
  :func:`cinegpu.media.describe.frame_caps`); with ``check --decode``, the frames that failed
  to decode (:class:`~cinegpu.jobs.check_decode.FrameFault`) placed in their reels;
* sound: the composition's sound as the player lays it out (:class:`CompositionSound`), read
  once, in blocks of :data:`SOUND_BLOCK` seconds, through a BS.1770-4 / EBU R 128 meter
  (:mod:`cinegpu.media.sound.loudness`): integrated loudness (LUFS), loudness range (LU), true
  peak (dBTP) per channel and for the programme, per reel and for the composition, and the
  momentary and short-term loudness over time.  ``check`` takes no key, so an encrypted track
  is not measured, and the report says so;
* subtitles and captions (ST 429-5 / ST 428-7, Interop): each reel's cues placed on the
  composition's timeline (seconds), and their count;
* thumbnails: a frame every ``every`` seconds and the first frame of each reel, at most
  :data:`MAX_THUMBNAILS`, decoded at a reduced resolution level (the smallest at least
  :data:`THUMB_WIDTH` pixels wide) and shown as the player shows it (X'Y'Z' through the DCI
  output transform, :func:`cinegpu.decode.transform.xyz_to_rgb`; an IMF picture as R'G'B', or
  by its luma when Y'CbCr), :func:`thumbnail`;
* the check's verdicts (problems, warnings, notes; the decode faults);
* from ``cinegpu master --report``: each frame's PSNR against the source, per reel, eye and
  component, with min/mean/max (:meth:`.psnr.MasterPsnr.section`), under ``psnr``.

Times are seconds from the composition's start; sizes bytes; rates Mbit/s (10^6 bit/s).
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from cinegpu import __version__
from cinegpu.decode import decode
from cinegpu.decode.codestream import dci
from cinegpu.decode.errors import CodestreamError
from cinegpu.decode.transform import xyz_to_rgb
from cinegpu.jobs.check_decode import DecodeReport, FrameFault
from cinegpu.media.describe import frame_caps
from cinegpu.media.errors import EncryptedMedia, MediaError
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.package.check import CheckReport
from cinegpu.media.package.read import Composition, Package, Reel, read_package, relpath
from cinegpu.media.sound.composition import CompositionSound, open_composition_sound
from cinegpu.media.sound.loudness import LoudnessMeter, channel_weights
from cinegpu.media.source import open_composition
from cinegpu.media.subtitles.documents import read_subtitles

__all__ = ["MAX_POINTS", "MAX_THUMBNAILS", "Gathered", "downsample", "gather", "thumbnail"]

#: Thumbnails a composition gets at most (the interval grows to keep to it).
MAX_THUMBNAILS = 48
#: Thumbnail width, pixels.
THUMB_WIDTH = 320
#: Sound read at a time, seconds.
SOUND_BLOCK = 10.0
#: Points a plotted series keeps at most (and the JSON twin's level series).
MAX_POINTS = 3000
#: Characters of a cue's text kept.
CUE_TEXT = 80


@dataclass
class Gathered:
    """The report's figures (``data``, JSON values) and its thumbnails: (composition index,
    frame) -> PNG bytes."""

    data: dict
    thumbnails: dict[tuple[int, int], bytes] = field(default_factory=dict)


def downsample(values, most: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of at most ``most`` points of a series: each bucket of consecutive
    values by its largest (peaks survive), at the bucket's first index.  NaN and -inf stay."""
    v = np.asarray(values, np.float64)
    n = len(v)
    if n <= most:
        return np.arange(n), v
    k = -(-n // most)
    pad = np.full(k * (-(-n // k)) - n, -np.inf)
    buckets = np.concatenate([v, pad]).reshape(-1, k)
    with np.errstate(invalid="ignore"):
        return np.arange(0, n, k), np.nanmax(np.where(np.isnan(buckets), -np.inf, buckets), 1)


def _finite(values) -> list:
    """JSON values of a float series: None for -inf and NaN, 0.01 precision."""
    return [round(float(v), 2) if math.isfinite(v) else None for v in values]


def _checks(checked: CheckReport | None, decoded: DecodeReport | None) -> dict:
    """What ``check`` reported, as JSON values."""
    out: dict = {"ran": [], "ok": True, "problems": [], "warnings": [], "notes": [], "faults": []}
    if checked is not None:
        out["ran"].append("hashes")
        out["assets_checked"] = checked.checked
        out["problems"] += checked.problems
        out["warnings"] += checked.warnings
        out["notes"] += checked.notes
        out["ok"] = out["ok"] and checked.ok
    if decoded is not None:
        out["ran"].append("decode")
        out["frames_decoded"] = decoded.frames
        out["problems"] += decoded.problems
        out["warnings"] += decoded.warnings
        out["faults"] = [_fault(f) for f in sorted(decoded.faults, key=lambda f: (f.track, f.frame, f.eye or ""))]
        out["ok"] = out["ok"] and decoded.ok
    return out


def _fault(f: FrameFault) -> dict:
    return {"track": f.track, "frame": f.frame, "through": f.through, "eye": f.eye, "error": f.error,
            "text": f.text()}


def _size_stats(sizes: list[int], rate: Fraction | None, dci_checks: bool = True) -> dict:
    """min/mean/max bytes, Mbit/s and, with ``dci_checks`` (not for IMF, which has its own
    profiles), the DCI verdict of frame sizes (``describe.size_lines``'s)."""
    if not sizes:
        return {"frames": 0}
    fps = float(rate) if rate else None
    a = np.asarray(sizes, np.int64)
    out = {"frames": len(sizes), "min_bytes": int(a.min()), "mean_bytes": round(float(a.mean()), 1),
           "max_bytes": int(a.max()), "empty_frames": int((a == 0).sum())}
    if fps:
        out["max_mbps"] = round(float(a.max()) * 8 * fps / 1e6, 3)
        out["mean_mbps"] = round(float(a.mean()) * 8 * fps / 1e6, 3)
    caps = frame_caps(rate) if dci_checks else None
    if caps:
        cap, safe = caps
        out.update(cap_bytes=cap, safe_bytes=safe, cap_mbps=dci.FRAME_BITRATE / 1e6,
                   safe_mbps=dci.FRAME_BITRATE_SAFE / 1e6, over_cap=int((a > cap).sum()),
                   above_safe=int(((a > safe) & (a <= cap)).sum()))
    return out


def _picture(pkg: Package, reel: Reel, comp: Composition, first: int,
             faults: list[FrameFault]) -> tuple[dict, list[int]]:
    """A reel's picture: its track, sizes (bytes, each frame the CPL plays) and decode faults."""
    assets = reel.of_kind("picture", "stereo-picture")
    if not assets:
        return {"error": "no picture"}, []
    a = assets[0]
    out: dict = {"track": relpath(a.path, pkg.root) if a.path else None, "entry_point": a.entry_point,
                 "encrypted": bool(a.key_id), "stereoscopic": a.kind == "stereo-picture"}
    sizes: list[int] = []
    try:
        if a.path is None or not a.path.is_file():
            raise MediaError(a.path, f"picture asset {a.id} is missing")
        with MXFFile(a.path) as mxf:
            mxf.check_readable()
            distinct = a.duration // max(1, a.repeat_count)
            eye = "left" if mxf.stereoscopic else None
            one = [mxf.frame_size(a.entry_point + k, eye) for k in range(distinct)]
            sizes = (one * max(1, a.repeat_count))[:a.duration] if one else []
    except EncryptedMedia:
        out["error"] = "encrypted: frame sizes not read (check takes no key)"
    except (MediaError, OSError, IndexError) as exc:
        out["error"] = str(exc)
    out["sizes_bytes"] = sizes
    out.update(_size_stats(sizes, comp.edit_rate, pkg.kind != "imf"))
    mine = []
    if a.path is not None:
        real = os.path.realpath(a.path)
        for f in faults:
            if os.path.realpath(f.track) != real:
                continue
            last = f.through if f.through is not None else f.frame
            if last < a.entry_point or f.frame >= a.entry_point + a.duration:
                continue
            mine.append(dict(_fault(f), reel_frame=max(0, f.frame - a.entry_point),
                             composition_frame=first + max(0, f.frame - a.entry_point)))
    out["decode_faults"] = mine
    return out, sizes


def _timed_text(pkg: Package, reel: Reel, rate: Fraction, start: float, length: int) -> list[dict]:
    """A reel's subtitle and caption tracks, their cues on the composition's timeline (s)."""
    out = []
    end = start + length / float(rate)
    for a in reel.of_kind("subtitle", "caption"):
        item: dict = {"kind": a.kind, "track": relpath(a.path, pkg.root) if a.path else None,
                      "cues": [], "cue_count": 0}
        try:
            if a.path is None:
                raise MediaError(None, f"{a.kind} asset {a.id} is not in the ASSETMAP")
            if a.key_id:                    # its CPL KeyId: ST 429-6 essence
                raise EncryptedMedia(a.path, "encrypted")
            track = read_subtitles(a.path, root=pkg.root)
        except EncryptedMedia:
            item["error"] = "encrypted: not read (check takes no key)"
            out.append(item)
            continue
        except MediaError as exc:
            item["error"] = str(exc)
            out.append(item)
            continue
        sub_rate = a.edit_rate or track.edit_rate or rate
        entry = Fraction(a.entry_point) / sub_rate
        item["language"] = track.language
        for c in track.cues:
            t0 = start + float(c.time_in - entry)
            t1 = min(end, start + float(c.time_out - entry))
            if t1 <= start or t0 >= end:
                continue
            text = " / ".join(line.text for line in c.lines) or ("[image]" if c.images else "")
            item["cues"].append({"in": round(max(start, t0), 3), "out": round(t1, 3), "text": text[:CUE_TEXT]})
        item["cue_count"] = len(item["cues"])
        item["warnings"] = list(track.warnings)
        out.append(item)
    return out


def _sound(sound: CompositionSound, reels: list[dict], progress: bool) -> dict:
    """The composition's loudness, and each reel's into ``reels[i]["sound"]`` (see the module)."""
    d = sound.descriptor
    labels = [lab.symbol for lab in d.labels] if d and d.labels else None
    weights = channel_weights(labels, sound.channels)
    rate = float(sound.sample_rate)
    meter = LoudnessMeter(rate, sound.channels, weights, full_scale=float(1 << (sound.bits - 1)))
    block = int(rate * SOUND_BLOCK)
    with tqdm(total=sound.sample_count, unit="sample", unit_scale=True, desc="loudness", leave=False,
              disable=None if progress else True) as bar:
        for s in range(0, sound.sample_count, block):
            pcm = sound.read_samples(s, min(sound.sample_count, s + block))
            meter.add(pcm)
            bar.update(len(pcm))
    for info, sr in zip(reels, sound.reels):
        track = sr.track
        here = {"track": os.path.basename(track.path) if track is not None else None}
        if track is None:
            here["error"] = "no sound measured (see the warnings)"
        else:
            here["loudness"] = meter.measure(sr.start / rate, (sr.start + sr.length) / rate).as_dict()
        info["sound"] = here
    momentary, short = meter.momentary(), meter.short_term()
    ix, m = downsample(momentary)
    sx, s = downsample(short)
    return {"channels": sound.channels, "labels": labels, "weights": list(weights),
            "sample_rate": rate, "bits": sound.bits, "configuration": sound.config,
            "summary": sound.summary(), "warnings": list(sound.warnings),
            "loudness": meter.measure().as_dict(),
            "level": {"momentary_seconds": [round((i + 4) * 0.1, 1) for i in ix], "momentary_lufs": _finite(m),
                      "short_term_seconds": [round((i + 30) * 0.1, 1) for i in sx], "short_term_lufs": _finite(s)}}


def _reduction(width: int | None, levels: int | None, want: int = THUMB_WIDTH) -> int:
    """The most resolution levels to discard (T.800 B.5: each halves the width) that leave a
    picture ``width`` pixels wide at least ``want`` wide, and no more than its ``levels``."""
    r = 0
    while width and levels is not None and r < levels and (width >> (r + 1)) >= want:
        r += 1
    return r


def thumbnail(data: bytes, colour: str, bits: int = dci.PRECISION, reduce: int = 0,
              width: int = THUMB_WIDTH) -> tuple[bytes, int, int]:
    """A PNG of one codestream ``width`` pixels wide: decoded with ``reduce`` resolution levels
    discarded (again whole when that fails), then shown by ``colour``: "xyz", X'Y'Z' through
    the DCI output transform to Rec. 709 primaries, 8 bits (as ``cinegpu play --primaries
    rec709`` shows it, near what a browser's sRGB shows: :func:`~cinegpu.decode.transform.xyz_to_rgb`);
    "rgb", components 1-3 (or a single one as grey) at their ``bits`` precision; "luma", a
    Y'CbCr picture's first component, grey.  Scaled to ``width`` (Lanczos)."""
    try:
        comps = decode(data, reduce=reduce)
    except CodestreamError:
        if not reduce:
            raise
        comps = decode(data)
    if colour == "xyz" and len(comps) >= 3:
        rgb = xyz_to_rgb(*comps[:3], primaries="rec709", out_bits=8, in_bits=bits).astype(np.uint8)
    else:
        same = len(comps) >= 3 and len({c.shape for c in comps[:3]}) == 1
        planes = comps[:3] if colour == "rgb" and same else comps[:1] * 3
        scale = 255.0 / ((1 << bits) - 1)
        rgb = np.stack([np.clip(np.rint(c * scale), 0, 255).astype(np.uint8) for c in planes], -1)
    img = Image.fromarray(np.ascontiguousarray(rgb), "RGB")
    h = max(1, round(img.height * width / img.width))
    img = img.resize((width, h), Image.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, "PNG", optimize=True)
    return buf.getvalue(), width, h


def _thumbnail_frames(starts: list[int], frames: int, rate: Fraction | None, every: float) -> list[int]:
    """Frames to show: each reel's first, and one every ``every`` seconds, :data:`MAX_THUMBNAILS`
    at most (the interval widened to keep to it)."""
    fps = float(rate or 24)
    step = max(1, round(every * fps))
    room = max(1, MAX_THUMBNAILS - len(starts))
    step = max(step, -(-frames // room))
    chosen = set(starts[:MAX_THUMBNAILS]) | set(range(0, frames, step))
    return sorted(chosen)[:MAX_THUMBNAILS]


def _thumbnails(pkg: Package, comp: Composition, index: int, starts: list[int], frames: int, every: float,
                gathered: Gathered, progress: bool) -> list[dict]:
    """Decode the composition's thumbnails into ``gathered``; their frames and times."""
    out = []
    try:
        source = open_composition(pkg, comp)
    except EncryptedMedia:
        return [{"error": "encrypted picture: no thumbnails (check takes no key)"}]
    except MediaError as exc:
        return [{"error": f"no thumbnails: {exc}"}]
    with source:
        prof = source.profile
        colour = "luma" if source.ycbcr else "xyz" if pkg.kind != "imf" else "rgb"
        bits = prof.components[0][0] if prof is not None and prof.components else dci.PRECISION
        reduce = _reduction(source.width, prof.levels if prof is not None else None)
        wanted = _thumbnail_frames(starts, min(frames, source.frame_count), comp.edit_rate, every)
        for n in tqdm(wanted, desc="thumbnails", unit="frame", leave=False, disable=None if progress else True):
            item: dict = {"frame": n, "seconds": round(n / float(comp.edit_rate or 24), 3)}
            try:
                png, w, h = thumbnail(source.frame(n), colour, bits, reduce)   # a 3D frame's left eye
                gathered.thumbnails[(index, n)] = png
                item.update(width=w, height=h)
            except (CodestreamError, MediaError, OSError, IndexError) as exc:
                item["error"] = f"{type(exc).__name__}: {exc}"
            out.append(item)
    return out


def _composition(pkg: Package, comp: Composition, index: int, faults: list[FrameFault], every: float,
                 gathered: Gathered, progress: bool, psnr=None) -> dict:
    """One composition's figures (see the module); ``psnr``: its master's
    :class:`.psnr.MasterPsnr`, or None."""
    rate = comp.edit_rate
    fps = float(rate) if rate else None
    reels, all_sizes, starts, frame = [], [], [], 0
    for number, reel in enumerate(comp.reels, 1):
        pictures = reel.of_kind("picture", "stereo-picture")
        length = pictures[0].duration if pictures else 0
        start = frame / fps if fps else 0.0
        picture, sizes = _picture(pkg, reel, comp, frame, faults)
        all_sizes += sizes
        reels.append({"number": number, "id": reel.id, "first_frame": frame, "frames": length,
                      "start_seconds": round(start, 3), "picture": picture,
                      "timed_text": _timed_text(pkg, reel, rate or Fraction(24), start, length)})
        starts.append(frame)
        frame += length
    out = {"title": comp.title, "id": comp.id, "cpl": relpath(comp.path, pkg.root), "flavour": comp.flavour,
           "content_kind": comp.content_kind, "edit_rate": str(rate) if rate else None, "fps": fps,
           "frames": frame, "seconds": round(frame / fps, 3) if fps else None,
           "stereoscopic": comp.stereoscopic, "picture": _size_stats(all_sizes, rate, pkg.kind != "imf"),
           "reels": reels}
    out["cue_count"] = sum(t["cue_count"] for r in reels for t in r["timed_text"])
    out["sound"] = _composition_sound(pkg, comp, reels, progress)
    out["thumbnails"] = _thumbnails(pkg, comp, index, starts, frame, every, gathered, progress)
    if psnr is not None:
        out["psnr"] = psnr.section([(r["first_frame"], r["frames"]) for r in reels])
    return out


def _composition_sound(pkg: Package, comp: Composition, reels: list[dict], progress: bool) -> dict | None:
    """The sound figures, or why there are none (None: the composition has no sound)."""
    if not any(r.of_kind("sound") for r in comp.reels):
        return None
    try:
        source = open_composition(pkg, comp)
    except MediaError as exc:          # the sound is laid out by the picture's reels
        return {"error": f"not measured: the picture cannot be opened: {exc}"}
    with source:
        try:
            sound = open_composition_sound(source)
        except MediaError as exc:
            return {"error": f"not measured: {exc}"}
        if sound is None:
            return None
        try:
            if not any(sr.track is not None for sr in sound.reels):
                return {"error": "not measured: no sound track could be read (encrypted tracks need a "
                                 "key, which check does not take)", "warnings": list(sound.warnings)}
            return _sound(sound, reels, progress)
        finally:
            sound.close()


def gather(package, *, checked: CheckReport | None = None, decoded: DecodeReport | None = None, ov=(),
           every: float = 10.0, progress: bool = True, psnr=None) -> Gathered:
    """The figures of the package folder (or ASSETMAP) ``package`` (see the module), with the
    verdicts of the check that ran (``checked``: hashes; ``decoded``: ``check --decode``);
    ``ov``: the original-version packages of a supplemental one (:func:`.package.read.read_package`).
    ``every``: seconds between thumbnails; ``psnr``: the :class:`.psnr.MasterPsnr` of the
    master that wrote the package (its one composition's frames).  MediaError when the
    package cannot be read."""
    if every <= 0:
        raise ValueError(f"thumbnails every {every} s: want more than 0")
    root = Path(package)
    pkg = read_package(root.parent if root.is_file() else root, ov=ov)
    gathered = Gathered({})
    faults = list(decoded.faults) if decoded is not None else []
    comps = [_composition(pkg, comp, i, faults, every, gathered, progress, psnr)
             for i, comp in enumerate(pkg.compositions)]
    gathered.data = {"report": "cinegpu QC report", "version": 1, "cinegpu": __version__,
                     "generated": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                     "package": {"root": str(pkg.root), "kind": pkg.kind, "assets": len(pkg.paths)},
                     "checks": _checks(checked, decoded), "compositions": comps,
                     "thumbnail_every_seconds": every}
    return gathered
