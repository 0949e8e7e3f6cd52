"""The report of ``cinegpu info PATH``: package, compositions, reels, picture, frame sizes, profile.

Frame-size caps are those of :mod:`cinegpu.decode.codestream.dci`: libdcp's verifier errors
above 250e6 / (8 fps) bytes per frame (DCI's cap) and warns above 230e6 / (8 fps)
(:data:`~cinegpu.decode.codestream.dci.FRAME_BITRATE_SAFE`, also ``cinegpu master``'s default).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from cinegpu.decode.codestream import dci
from cinegpu.media.errors import MediaError, UnsupportedMedia
from cinegpu.media.j2k_profile import Profile, image_size, parse_profile
from cinegpu.media.mxf.klv import ul_str
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.package.cpl_metadata import CplMetadata, timecode_text
from cinegpu.media.package.read import (
    Composition,
    Package,
    find_assetmap,
    local,
    missing_cpl_error,
    parse_xml,
    read_package,
    relpath,
)
from cinegpu.media.security.package_signature import check_package_signature
from cinegpu.media.sound.composition import open_composition_sound
from cinegpu.media.sound.loudness import composition_loudness, loudness_text
from cinegpu.media.sound.track import SoundTrack
from cinegpu.media.source import Source, kind_of, open_composition, open_mxf_source, open_sequence, open_source

FLAVOURS = {"dcp-smpte": "DCP, SMPTE (ST 429)", "dcp-interop": "DCP, Interop (PROTO-ASDCP)",
            "imf": "IMF (ST 2067)"}


def fps_text(rate: Fraction | None) -> str:
    if rate is None:
        return "unknown rate"
    return f"{float(rate):.3f}".rstrip("0").rstrip(".") + (f" ({rate})" if rate.denominator != 1 else "")


def duration_text(frames: int, rate: Fraction | None) -> str:
    if not rate:
        return f"{frames} frames"
    seconds = frames / rate
    return f"{frames} frames ({float(seconds):.3f} s)"


def frame_caps(rate: Fraction | None) -> tuple[int, int] | None:
    """(error cap, warning cap) in bytes per frame at ``rate`` (libdcp verify.cc practice)."""
    if not rate:
        return None
    return (dci.bytes_per_frame(dci.FRAME_BITRATE, rate),
            dci.bytes_per_frame(dci.FRAME_BITRATE_SAFE, rate))


def size_lines(sizes: list[tuple[int, int]], rate: Fraction | None, dci_checks: bool = True) -> list[str]:
    """Frame-size statistics of ``sizes``, (bytes, times played) pairs; with ``dci_checks``,
    the verdict against the DCI cap at ``rate``."""
    total = sum(k for _, k in sizes)
    if not total:
        return ["frame sizes: none"]
    lo, hi = min(s for s, _ in sizes), max(s for s, _ in sizes)
    mean = sum(s * k for s, k in sizes) / total
    out = [f"frame sizes: min {lo:,} / mean {mean:,.0f} / max {hi:,} bytes over {total} frames"]
    empty = sum(k for s, k in sizes if s == 0)
    if empty:
        out.append(f"  {empty} empty frame(s) (0 bytes): the player conceals them")
    caps = frame_caps(rate) if dci_checks else None
    if caps:
        cap, warn = caps
        over = sum(k for s, k in sizes if s > cap)
        near = sum(k for s, k in sizes if warn < s <= cap)
        verdict = ("within the cap" if not over and not near else
                   f"{over} frame(s) over the cap, {near} above the "
                   f"{dci.FRAME_BITRATE_SAFE // 1_000_000} Mbit/s warning level")
        out.append(f"  DCI cap at {fps_text(rate)} fps: {cap:,} bytes per frame "
                   f"({dci.FRAME_BITRATE // 1_000_000} Mbit/s): {verdict}")
    return out


def profile_lines(prof: Profile, dci_checks: bool = True) -> list[str]:
    """The codestream lines of a frame's profile: summary, markers and, with ``dci_checks``,
    the DCI verdict."""
    name, problems = prof.dci_problems()
    out = [f"codestream: {prof.summary()}", f"  markers before the first SOT: {' '.join(prof.markers)}"]
    if prof.htj2k:
        out.append("  HTJ2K (ISO 15444-15) block coding: HT code-blocks (tier-1 on the CPU or the GPU)")
    if not dci_checks:
        return out
    if problems:
        out.append(f"  {name} profile: not met: " + "; ".join(problems))
    else:
        out.append(f"  {name} profile: met")
    return out


def frame_sizes(source: Source) -> list[tuple[int, int]]:
    """(bytes, times played) of every track frame the source plays: a repeated IMF resource
    is sized once per distinct frame, so the work is bounded by the tracks, not the repeats.
    A stereoscopic frame's bytes are both eyes' (DCI's bit rate caps the two together)."""
    out = []
    for span in source.spans:
        distinct = min(span.duration, span.source_duration or span.duration)
        loops, rest = divmod(span.duration, distinct) if distinct else (0, 0)
        eyes = ("left", "right") if getattr(span.track, "stereoscopic", False) else ("left",)
        for k in range(distinct):
            size = sum(span.track.frame_size(span.entry_point + k, eye) for eye in eyes)
            out.append((size, loops + (k < rest)))
    return out


def first_readable(source: Source, probe: int = 24) -> tuple[int | None, Profile | None, list[str]]:
    """(index, profile) of the first frame with a readable main header among the first
    ``probe``, and a line for each unreadable frame before it. Frame 0's profile is the one
    the source parsed when it opened."""
    bad = []
    for n in range(min(probe, source.frame_count)):
        if n == 0 and source.profile is not None:
            return 0, source.profile, bad
        try:
            data = source.frame(n)
            if not data:
                bad.append(f"frame {n}: empty (0 bytes); the player conceals it")
                continue
            return n, parse_profile(data, source.path), bad
        except MediaError as exc:
            bad.append(f"frame {n}: unreadable ({exc.reason}); the player conceals it")
    return None, None, bad


#: Bytes read from the start of each frame file for its image size (the SIZ segment follows
#: SOC; a JP2 file's header boxes come first).
SIZE_PROBE_BYTES = 65536


def sequence_size_lines(files: list[Path]) -> list[str]:
    """Nothing when every frame file of a sequence has the first one's image size; else a line
    per size, with how many frames and which (a folder mixing 2K and 4K frames, say)."""
    sizes: dict[tuple[int, int] | str, list[int]] = {}
    for n, f in enumerate(files):
        try:
            with open(f, "rb") as fh:
                key: tuple[int, int] | str = image_size(fh.read(SIZE_PROBE_BYTES), f)
        except (OSError, MediaError):
            key = "unreadable"
        sizes.setdefault(key, []).append(n)
    if len(sizes) <= 1:
        return []
    out = [f"image sizes differ: {len(sizes)} sizes in {len(files)} frames (playback shows the "
           f"first frame's size; frames of another size are reported as errors)"]
    for key, frames in sorted(sizes.items(), key=lambda kv: kv[1][0]):
        what = key if isinstance(key, str) else f"{key[0]}x{key[1]}"
        out.append(f"  {what}: {len(frames)} frame{'s' if len(frames) != 1 else ''} "
                   f"({ranges(frames)})")
    return out


def ranges(frames: list[int], most: int = 8) -> str:
    """"0-23, 48-71" for sorted frame numbers (the first ``most`` runs, then "...")."""
    runs: list[list[int]] = []
    for n in frames:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:most])
    return text + (", ..." if len(runs) > most else "")


def picture_lines(source: Source, dci_checks: bool = True) -> list[str]:
    """Picture format, frame-size statistics and codestream profile of an open source; the
    DCI cap and profile verdicts only with ``dci_checks`` (not for IMF, which has its own
    profiles)."""
    out = []
    n, prof, bad = first_readable(source)
    comps = depth = "?"
    if prof is not None:
        comps = str(len(prof.components))
        depth = "/".join(str(c[0]) for c in prof.components)
    out.append(f"picture: {source.width}x{source.height}, {fps_text(source.edit_rate)} fps, "
               f"{comps} components, {depth} bit, {'stereoscopic' if source.stereoscopic else '2D'}")
    out += bad
    out += size_lines(frame_sizes(source), source.edit_rate, dci_checks)
    if prof is not None:
        lines = profile_lines(prof, dci_checks)
        if n:
            lines[0] += f" (frame {n}, the first readable)"
        out += lines
    elif source.frame_count:
        out.append(f"codestream: none of the first {len(bad)} frames is readable")
    return out


def mxf_lines(mxf: MXFFile, indent: str = "") -> list[str]:
    out = []
    parts = ", ".join(f"{p.kind}@{p.offset}" + (f" (body SID {p.body_sid})" if p.body_sid else "")
                      for p in mxf.partitions)
    op = mxf.partitions[0].operational_pattern
    out.append(f"{indent}track file: {Path(mxf.path).name}, operational pattern {ul_str(op)}")
    out.append(f"{indent}  partitions: {parts}")
    segs = mxf.index_segments
    if segs:
        kind = "CBR" if segs[0].edit_unit_byte_count else "VBR"
        out.append(f"{indent}  index: {len(segs)} segment(s), {kind}, {mxf.frame_count} edit units, "
                   f"{'clip' if mxf.clip_wrapped else 'frame'}-wrapped")
    if mxf.picture:
        pic = mxf.picture
        out.append(f"{indent}  picture descriptor: {pic.descriptor}, stored {pic.stored_width}x"
                   f"{pic.stored_height}, sample rate {pic.sample_rate}, container duration "
                   f"{pic.container_duration}" + (f", JPEG 2000 Rsiz 0x{pic.j2k['Rsiz']:04x}"
                                                  if isinstance(pic.j2k.get("Rsiz"), int) else ""))
    if mxf.sound:
        snd = mxf.sound
        out.append(f"{indent}  sound descriptor: {snd.descriptor}, {snd.channels} channels, "
                   f"{snd.quantization_bits} bit, {snd.sample_rate} Hz, container duration "
                   f"{snd.container_duration}")
    if mxf.encrypted:
        out.append(f"{indent}  encrypted (ST 429-6): a KDM is needed to play it")
    elif mxf.sound and not mxf.picture:
        try:
            with SoundTrack(mxf.path) as t:
                out.append(f"{indent}  sound: {sound_text(t)}")
        except MediaError as exc:
            out.append(f"{indent}  sound: not readable: {exc}")
    return out


def metadata_lines(meta: CplMetadata, rate: Fraction | None) -> list[str]:
    """The CPL's content version, ratings and markers (each at its timecode, ``rate``'s
    frames per timecode second, and its frame), a line each where the CPL has them."""
    out = []
    if meta.content_version is not None:
        out.append(f"  content version: {meta.content_version.label!r} ({meta.content_version.id})")
    if meta.ratings:
        out.append("  ratings: " + "; ".join(f"{r.label} ({r.agency})" for r in meta.ratings))
    if meta.markers:
        out.append("  markers: " + ", ".join(f"{m.label} {timecode_text(m.frame, rate or 24)} "
                                               f"(frame {m.frame})" for m in meta.markers))
    return out


def composition_lines(pkg: Package, comp: Composition) -> list[str]:
    pics = [a for r in comp.reels for a in r.of_kind("picture", "stereo-picture")]
    frames = sum(a.duration for a in pics)
    out = [f"composition: {comp.title!r} ({comp.content_kind or 'no kind'}), "
           f"{relpath(comp.path, pkg.root)}, id {comp.id}",
           f"  {FLAVOURS.get(comp.flavour, comp.flavour)}, edit rate {fps_text(comp.edit_rate)}, "
           f"{len(comp.reels)} {'segment' if comp.flavour == 'imf' else 'reel'}(s), "
           f"{duration_text(frames, comp.edit_rate)}, "
           f"{'stereoscopic' if comp.stereoscopic else '2D'}"]
    out += metadata_lines(comp.metadata, comp.edit_rate)
    for i, reel in enumerate(comp.reels, 1):
        out.append(f"  {'segment' if comp.flavour == 'imf' else 'reel'} {i} ({reel.id}):")
        for a in reel.assets:
            if a.kind == "markers":       # a list in the CPL itself (metadata_lines), no file
                out.append(f"    markers: {a.id}, duration {a.duration}")
                continue
            name = relpath(a.path, pkg.root) if a.path else f"{a.id} (not in the ASSETMAP)"
            extra = []
            if a.frame_rate:
                extra.append(f"frame rate {a.frame_rate}")
            if a.screen_aspect_ratio:
                extra.append(f"aspect {a.screen_aspect_ratio}")
            if a.key_id:
                extra.append(f"encrypted, key {a.key_id}")
            if a.repeat_count != 1:
                extra.append(f"repeated {a.repeat_count}x")
            out.append(f"    {a.kind}: {name}, entry {a.entry_point}, duration {a.duration} "
                       f"(intrinsic {a.intrinsic_duration}), edit rate {a.edit_rate}"
                       + ("; " + ", ".join(extra) if extra else ""))
            if a.kind == "sound" and a.path and a.path.is_file():
                try:
                    with SoundTrack(a.path) as t:
                        out.append("      " + sound_text(t))
                except MediaError as exc:
                    out.append(f"      unreadable: {exc}")
    return out


def signature_text(path) -> str:
    """The document's signature in a line (:func:`.package_signature.check_package_signature`):
    unsigned, or signed by whom and whether it holds."""

    try:
        return check_package_signature(path).text()
    except MediaError as exc:
        return f"signature not checked: {exc.reason}"


def package_report(pkg: Package, loudness: bool = False) -> list[str]:
    """The lines ``cinegpu info`` prints for a package; a MediaError when a CPL that a packing
    list names is missing (the package cannot be described whole)."""

    missing = missing_cpl_error(pkg)
    if missing is not None:
        raise missing
    out = [f"package: {FLAVOURS.get(pkg.kind, pkg.kind)}, {pkg.root}",
           f"  asset map: {pkg.assetmap_path.name} ({pkg.flavour}), {len(pkg.paths)} assets"
           + (f", volume index {pkg.volindex.name}" if pkg.volindex else "")]
    for pkl in pkg.pkls:
        out.append(f"  packing list: {relpath(pkl.path, pkg.root)} ({pkl.flavour}), "
                   f"{len(pkl.assets)} assets; {signature_text(pkl.path)}")
    for ov in pkg.ovs:
        found = {a.id for c in pkg.compositions for r in c.reels for a in r.assets if a.ov == ov}
        out.append(f"  original version (OV): {ov}, {len(found)} CPL asset(s) resolved there")
    for comp in pkg.compositions:
        lines = composition_lines(pkg, comp)
        lines.insert(2, f"  {signature_text(comp.path)}")
        out += [""] + lines
        try:
            with open_composition(pkg, comp) as source:
                out += ["  " + line for line in picture_lines(source, dci_checks=pkg.kind != "imf")]
        except MediaError as exc:
            out.append(f"  picture: not readable: {exc}")
            continue
        out += composition_sound_lines(comp, source, loudness)
    return out


def sound_text(t: SoundTrack) -> str:
    """A track file's sound: channels and their ST 377-4 labels, rate, bits, duration."""
    d = t.descriptor
    seconds = t.sample_count / float(d.sample_rate)
    labels = ", channel labels " + " ".join(lab.symbol for lab in d.labels) if d.labels else ""
    return (f"{d.channels_text()}, {d.sample_rate} Hz, {d.bits}-bit, "
            f"{t.duration} edit units at {d.edit_rate}/s ({seconds:.3f} s), {d.wrapping}-wrapped"
            + (f", {d.channel_assignment}" if d.channel_assignment else "") + labels)


def composition_sound_lines(comp: Composition, source: Source, loudness: bool = False) -> list[str]:
    """The composition's sound as played beside its picture, and what is wrong with it; with
    ``loudness``, its loudness (:func:`.sound.loudness.composition_loudness`)."""

    try:
        sound = open_composition_sound(source)
    except MediaError as exc:
        return [f"  sound: not readable: {exc}"]
    if sound is None:
        return ["  sound: none"]
    try:
        lines = [f"  sound: {sound.summary()}"]
        if sound.config:
            lines.append(f"    CPL MainSoundConfiguration {sound.config}")
        if loudness:
            lines.append(f"    loudness: {loudness_text(composition_loudness(sound))}")
        return lines + [f"    warning: {w}" for w in sound.warnings]
    finally:
        sound.close()


def describe(path, ov=(), loudness: bool = False) -> str:
    """What ``path`` holds, as lines of text; ``ov``: original-version packages that resolve a
    supplemental package's assets (:func:`.package.resolve_from_ov`); ``loudness``: each
    composition's sound measured too (read whole: ITU-R BS.1770-4)."""
    p = Path(path)
    kind = kind_of(p)
    if kind == "folder":
        if find_assetmap(p) is not None:
            return "\n".join(package_report(read_package(p, ov=ov), loudness))
        with open_sequence(p) as seq:
            files = seq.spans[0].track.files  # type: ignore[attr-defined]
            return "\n".join([f"J2K sequence: {p}, {seq.frame_count} frames "
                              f"({files[0].name} .. {files[-1].name})"]
                             + picture_lines(seq) + sequence_size_lines(files))
    if kind == "mxf":
        with MXFFile(p) as mxf:
            out = [f"MXF track file: {p}"] + mxf_lines(mxf)
            if mxf.picture and not mxf.encrypted:
                with open_mxf_source(p) as src:
                    out += picture_lines(src)
            return "\n".join(out)
    if kind == "codestream":
        with open_source(p) as src:
            return "\n".join([f"codestream: {p}"] + picture_lines(src))
    root = parse_xml(p)
    if local(root) in ("AssetMap", "PackingList", "CompositionPlaylist", "VolumeIndex"):
        return describe(p.parent, ov, loudness)
    raise UnsupportedMedia(p, f"not a package, track file or codestream (XML root <{local(root)}>)")
