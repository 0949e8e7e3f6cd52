"""Helpers for the sound tests: ffmpeg's extraction of a PCM track, and a copy of a frame-wrapped
track file whose (silent) samples are replaced by a known, position-coded pattern."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

from cinegpu.media.sound.track import SoundTrack, decode_pcm


def ffmpeg_pcm(path: Path, channels: int) -> np.ndarray:
    """All samples of ``path`` as ffmpeg decodes them (s24le), int32 (frames, channels)."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "s24le", "-"],
                         capture_output=True, check=True).stdout
    return decode_pcm(raw, channels, 24)


def pattern(s0: int, s1: int, channels: int) -> np.ndarray:
    """A 24-bit value for each (sample frame, channel) that differs from its neighbours in time
    (a run of a few samples fixes the position), int32 (s1 - s0, channels)."""
    s = np.arange(s0, s1, dtype=np.int64)[:, None]
    c = np.arange(channels, dtype=np.int64)[None, :]
    v = (s * 7919 + c * 104729 + (s * s) % 8191) % (1 << 24) - (1 << 23)
    return v.astype(np.int32)


def patterned_copy(src: Path, dst: Path) -> None:
    """Copy the frame-wrapped 24-bit track ``src`` to ``dst`` with each edit unit's samples
    replaced by :func:`pattern` at their absolute sample positions (headers kept as they are)."""
    shutil.copyfile(src, dst)
    with SoundTrack(src) as t:
        d, spu = t.descriptor, t.samples_per_unit
        assert d.wrapping == "frame" and d.bits == 24
        spots = []
        for n in range(t.duration):
            so, _ = t.mxf.stream_offset(n)
            off, part = t.mxf.file_offset(so)
            spots.append(t.mxf.reader.klv_at(off, part.end).value_offset)
    with open(dst, "r+b") as f:
        for n, off in enumerate(spots):
            v = pattern(n * spu, (n + 1) * spu, d.channels).astype("<i4")
            f.seek(off)
            f.write(v.view(np.uint8).reshape(-1, 4)[:, :3].tobytes())


def sound_dcp(tmp_path: Path, reels: list[tuple[int, int, int, int]], src: Path) -> Path:
    """A copy of the libdcp SMPTE DCP ``src`` with position-coded sound (:func:`patterned_copy`)
    and its one reel replaced by ``reels``: (picture entry, picture duration, sound entry, sound
    duration) each, all in 24 fps edit units. Hashes and signature are left stale (the player
    does not check them)."""
    from lxml import etree

    dst = tmp_path / "dcp"
    shutil.copytree(src, dst)
    (dst / "audio.mxf").chmod(0o644)
    patterned_copy(src / "audio.mxf", dst / "audio.mxf")
    cpl = next(dst.glob("cpl_*.xml"))
    cpl.chmod(0o644)
    tree = etree.parse(str(cpl))
    ns = {"c": tree.getroot().nsmap[None]}
    reel_list = tree.find(".//c:ReelList", ns)
    template = reel_list.find("c:Reel", ns)
    reel_list.remove(template)
    for i, (pe, pd, se, sd) in enumerate(reels):
        reel = etree.fromstring(etree.tostring(template))
        reel.find("c:Id", ns).text = f"urn:uuid:00000000-0000-4000-8000-{i:012d}"
        for tag, entry, dur in (("MainPicture", pe, pd), ("MainSound", se, sd)):
            el = reel.find(f".//c:{tag}", ns)
            el.find("c:EntryPoint", ns).text = str(entry)
            el.find("c:Duration", ns).text = str(dur)
        reel_list.append(reel)
    tree.write(str(cpl), xml_declaration=True, encoding="UTF-8")
    return dst
