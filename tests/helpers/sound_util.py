"""Helpers for the sound tests: WAV files written byte by byte (:func:`write_wav`) of distinct
tones (:func:`tones`), ffmpeg's extraction of a PCM track (:func:`ffmpeg_pcm`, read by
:func:`s24le`, not by the library's reader), and a copy of a frame-wrapped track file whose
(silent) samples are replaced by a known, position-coded pattern; :class:`SquareWaveSound`, a
composition's sound in memory at known levels."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np

from cinegpu.media.sound.track import SoundTrack


def ffmpeg_pcm(path: Path, channels: int) -> np.ndarray:
    """All samples of ``path`` as ffmpeg decodes them (s24le), int32 (frames, channels)."""
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "s24le", "-"],
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-1000:]
    return s24le(run.stdout, channels)


#: the WAVE_FORMAT_EXTENSIBLE sub-format of PCM (KSDATAFORMAT_SUBTYPE_PCM)
SUBTYPE_PCM = bytes.fromhex("0100000000001000800000aa00389b71")


def write_wav(path: Path, samples: np.ndarray, *, rate=48000, bits=24, extensible=True,
         mask=0, tag=None) -> Path:
    """``samples``: (n, channels) ints in range of ``bits``; written little-endian."""
    n, ch = samples.shape
    if bits == 24:
        data = np.ascontiguousarray(samples, "<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    else:
        data = np.ascontiguousarray(samples, f"<i{bits // 8}").tobytes()
    align = ch * bits // 8
    fmt_tag = tag if tag is not None else (0xFFFE if extensible else 1)
    fmt = struct.pack("<HHIIHH", fmt_tag, ch, rate, rate * align, align, bits)
    if fmt_tag == 0xFFFE:
        fmt += struct.pack("<HHI", 22, bits, mask) + SUBTYPE_PCM
    body = (b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
            + b"LIST" + struct.pack("<I", 3) + b"abc\x00"          # an odd chunk, padded
            + b"data" + struct.pack("<I", len(data)) + data)
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def tones(n: int, channels: int, rate=48000, seed=0) -> np.ndarray:
    """A distinct tone per channel (220 Hz * (c + 1)), with random low bytes: 24-bit values."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate
    tones = [np.sin(2 * np.pi * 220 * (c + 1) * t) * (1 << 22) for c in range(channels)]
    return (np.stack(tones, 1).astype(np.int32) & ~0xFF) | rng.integers(0, 256, (n, channels))


def s24le(raw: bytes, channels: int) -> np.ndarray:
    """ffmpeg's ``-f s24le`` output as (n, channels) int32."""
    b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
    v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    return np.where(v >= 1 << 23, v - (1 << 24), v).reshape(-1, channels)


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


class SquareWaveSound:
    """A CompositionSound in memory: 48 kHz 24-bit, 2000 samples a frame (24 fps), channel c a
    square wave between +-``levels[c]`` of full scale (1.0)."""

    sample_rate, bits, descriptor = 48000, 24, None

    def __init__(self, levels):
        self.levels, self.channels = np.asarray(levels, np.float64), len(levels)

    def sample_of_frame(self, f: int) -> int:
        return f * 2000

    def read_samples(self, s0: int, s1: int) -> np.ndarray:
        sign = np.where(np.arange(s0, s1) % 2, 1.0, -1.0)[:, None]
        return np.round(sign * self.levels * ((1 << 23) - 1)).astype(np.int32)

    def close(self):
        pass
