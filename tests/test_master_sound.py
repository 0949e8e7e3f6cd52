"""``cinegpu master --audio``: the WAV reader, the sound layouts and length matching, the
ST 429-3 sound track file (checked against libdcp's ``dcp_test1/audio.mxf`` and read back by
ffprobe, mediainfo and ffmpeg bit for bit), the CPL's MainSound, and the mistakes refused
with exit code 2 before any frame is encoded."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import wave
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from cinegpu.media import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.mxf.sound_write import SoundTrackWriter
from cinegpu.media.sound.inputs import FIVE_ONE, SEVEN_ONE, STEREO, open_sound
from cinegpu.media.sound.resample import ResampledWav
from cinegpu.media.sound.wav import read_samples, read_wav_info
from cinegpu.player.cli import main

from test_master import _clairmeta_ok, _write_png16, needs_encoder

needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
                                  reason="ffmpeg/ffprobe not installed")
needs_mediainfo = pytest.mark.skipif(shutil.which("mediainfo") is None,
                                     reason="mediainfo not installed")
SUBTYPE_PCM = bytes.fromhex("0100000000001000800000aa00389b71")


# -- making WAV files --------------------------------------------------------------------------------
def _wav(path: Path, samples: np.ndarray, *, rate=48000, bits=24, extensible=True,
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


def _rf64(riff: Path, out: Path, kind: bytes = b"RF64", table: bytes = b"",
          data_size: int | None = None) -> Path:
    """``riff`` (a file of :func:`_wav`) as an RF64 file (EBU Tech 3306): ``kind`` for
    "RIFF" and 0xFFFFFFFF for its size, a ds64 chunk first (``table``: its entries; ``data_size``
    for dataSize, default the data's), and the data chunk's 32-bit size 0xFFFFFFFF."""
    d = riff.read_bytes()
    at = d.index(b"data", 12)
    n = struct.unpack("<I", d[at + 4:at + 8])[0]
    entries = len(table) // 12
    ds64 = struct.pack("<QQQI", len(d) + 36 + len(table) - 8, n if data_size is None else data_size,
                       0, entries) + table
    body = (b"WAVE" + b"ds64" + struct.pack("<I", len(ds64)) + ds64 + d[12:at] + b"data"
            + struct.pack("<I", 0xFFFFFFFF) + d[at + 8:])
    out.write_bytes(kind + struct.pack("<I", 0xFFFFFFFF) + body)
    return out


def _tones(n: int, channels: int, rate=48000, seed=0) -> np.ndarray:
    """A distinct tone per channel (220 Hz * (c + 1)), with random low bytes: 24-bit values."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate
    tones = [np.sin(2 * np.pi * 220 * (c + 1) * t) * (1 << 22) for c in range(channels)]
    return (np.stack(tones, 1).astype(np.int32) & ~0xFF) | rng.integers(0, 256, (n, channels))


def _s24(raw: bytes, channels: int) -> np.ndarray:
    """ffmpeg's ``-f s24le`` output as (n, channels) int32."""
    b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
    v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    return np.where(v >= 1 << 23, v - (1 << 24), v).reshape(-1, channels)


def _extract(mxf: Path, channels: int) -> np.ndarray:
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", str(mxf), "-f", "s24le", "-"],
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-1000:]
    return _s24(run.stdout, channels)


# -- the WAV reader ----------------------------------------------------------------------------------
def test_wav_reader_reads_16_24_32_bit(tmp_path):
    x = _tones(500, 6)
    info = read_wav_info(_wav(tmp_path / "a.wav", x))
    assert (info.channels, info.rate, info.bits, info.frames) == (6, 48000, 24, 500)
    assert np.array_equal(read_samples(info, 0, 500), x)
    assert np.array_equal(read_samples(info, 490, 100), x[490:])          # past the end: fewer
    s16 = (x >> 8).astype(np.int16)
    with wave.open(str(tmp_path / "b.wav"), "wb") as w:                    # Python's own writer
        w.setnchannels(6), w.setsampwidth(2), w.setframerate(96000)
        w.writeframes(s16.tobytes())
    info = read_wav_info(tmp_path / "b.wav")
    assert (info.bits, info.rate) == (16, 96000)
    assert np.array_equal(read_samples(info, 0, 500), s16.astype(np.int32) << 8)
    info = read_wav_info(_wav(tmp_path / "c.wav", x << 8, bits=32, extensible=False))
    assert np.array_equal(read_samples(info, 0, 500), x)


def test_wav_reader_reads_rf64_and_bw64(tmp_path):
    """A WAV over 4 GiB is RF64 (or BW64): its 64-bit sizes come from the ds64 chunk; the
    samples read are those of the same file as RIFF."""
    x = _tones(700, 6, seed=3)
    riff = _wav(tmp_path / "a.wav", x)
    for kind in (b"RF64", b"BW64"):
        info = read_wav_info(_rf64(riff, tmp_path / "b.wav", kind))
        assert (info.channels, info.rate, info.bits, info.frames) == (6, 48000, 24, 700)
        assert np.array_equal(read_samples(info, 0, 700), x)
        assert np.array_equal(read_samples(info, 650, 100), x[650:])
    # a table entry for another chunk of deferred size is taken as well
    table = b"LIST" + struct.pack("<Q", 3)
    d = _rf64(riff, tmp_path / "c.wav", table=table).read_bytes()
    at = d.index(b"LIST")
    (tmp_path / "c.wav").write_bytes(d[:at + 4] + struct.pack("<I", 0xFFFFFFFF) + d[at + 8:])
    assert np.array_equal(read_samples(read_wav_info(tmp_path / "c.wav"), 0, 700), x)


@needs_ffmpeg
def test_wav_reader_reads_ffmpegs_rf64(tmp_path):
    """ffmpeg's own RF64 writer (``-rf64 always``), an independent maker of the format."""
    x = _tones(900, 6, seed=4)
    riff = tmp_path / "a.wav"
    with wave.open(str(riff), "wb") as w:                # plain PCM, which ffmpeg reads
        w.setnchannels(6), w.setsampwidth(3), w.setframerate(48000)
        w.writeframes(np.ascontiguousarray(x, "<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes())
    out = tmp_path / "b.wav"
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", str(riff), "-c:a", "pcm_s24le",
                          "-rf64", "always", "-y", str(out)], capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-1000:]
    assert out.read_bytes()[:4] == b"RF64"
    info = read_wav_info(out)
    assert (info.channels, info.frames) == (6, 900)
    assert np.array_equal(read_samples(info, 0, 900), x)


@pytest.mark.parametrize("make, kind, words", [
    # no ds64 chunk first
    (lambda riff, out: out.write_bytes(b"RF64" + riff.read_bytes()[4:]), CorruptMedia,
     "without a ds64"),
    # dataSize past the end of the file
    (lambda riff, out: _rf64(riff, out, data_size=1 << 40), CorruptMedia, "runs past the end"),
    # a table longer than its chunk
    (lambda riff, out: out.write_bytes(_rf64(riff, out).read_bytes()[:44]
                                       + struct.pack("<I", 9) + _rf64(riff, out).read_bytes()[48:]),
     CorruptMedia, "ds64 table of 9 entries"),
    # a deferred size the ds64 chunk does not give
    (lambda riff, out: out.write_bytes(_rf64(riff, out).read_bytes().replace(
        b"LIST" + struct.pack("<I", 3), b"LIST" + struct.pack("<I", 0xFFFFFFFF))),
     CorruptMedia, "does not give it"),
])
def test_wav_reader_refuses_bad_rf64(tmp_path, make, kind, words):
    riff = _wav(tmp_path / "a.wav", _tones(10, 2))
    out = tmp_path / "b.wav"
    make(riff, out)
    with pytest.raises(kind, match=words) as err:
        read_wav_info(out)
    assert err.value.path == str(out) and err.value.offset is not None


@pytest.mark.parametrize("damage, kind, words", [
    (lambda d: b"RIFX" + d[4:], UnsupportedMedia, "not a RIFF/WAVE"),
    (lambda d: d[:-7], CorruptMedia, "runs past the end"),
    (lambda d: d[:20] + struct.pack("<H", 3) + d[22:], UnsupportedMedia, "format tag 0x0003"),
    (lambda d: d[:36] + b"\x00" * 24 + d[60:], UnsupportedMedia, "sub-format"),
    (lambda d: d[:22] + struct.pack("<H", 0) + d[24:], CorruptMedia, "0 channels"),
    (lambda d: d[:34] + struct.pack("<H", 8) + d[36:], UnsupportedMedia, "8-bit"),
    (lambda d: d[:12], CorruptMedia, "no fmt chunk"),
])
def test_wav_reader_refuses_bad_headers(tmp_path, damage, kind, words):
    path = _wav(tmp_path / "a.wav", _tones(10, 2))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(kind, match=words) as err:
        read_wav_info(path)
    assert err.value.path == str(path) and err.value.offset is not None


# -- layouts and length ------------------------------------------------------------------------------
def test_layouts_and_the_cpl_configuration():
    assert FIVE_ONE.configuration == "51/L,R,C,LFE,Ls,Rs"
    assert SEVEN_ONE.configuration == "71/L,R,C,LFE,Lss,Rss,-,-,-,-,Lrs,Rrs"


def test_length_against_the_picture(tmp_path):
    s = open_sound([_wav(tmp_path / "a.wav", _tones(24 * 2000 - 1500, 6))])
    assert "padded with silence" in s.fit(24, 24)                         # short by < 1 frame
    with pytest.raises(MediaError, match="shorter than the picture's 50000"):
        s.fit(25, 24)
    assert "last 44500 samples are cut" in s.fit(1, 24)
    exact = open_sound([_wav(tmp_path / "b.wav", _tones(23 * 1920, 6))])
    assert exact.fit(23, 25) is None and exact.samples_per_frame(25) == 1920
    with pytest.raises(MediaError, match="not a whole number"):
        s.samples_per_frame(Fraction(30000, 1001))          # 1601.6 samples



def _units(s, frames, rate) -> np.ndarray:
    raw = b"".join(s.edit_units(frames, rate))
    return _s24(raw, s.layout.track_channels)


def test_seven_one_goes_to_channels_11_and_12(tmp_path):
    x = _tones(3840, 8)
    files = [_wav(tmp_path / f"{k}.wav", x[:, k:k + 1], extensible=False) for k in range(8)]
    s = open_sound(files)
    assert s.layout is SEVEN_ONE
    got = _units(s, 2, 25)
    assert got.shape == (3840, 12)
    assert np.array_equal(got[:, [0, 1, 2, 3, 4, 5, 10, 11]], x) and not got[:, 6:10].any()
    # an extensible 8-channel file with mask 0x63F is FL FR FC LFE BL BR SL SR: back before side
    ms = x[:, [0, 1, 2, 3, 6, 7, 4, 5]]
    s = open_sound([_wav(tmp_path / "ms.wav", ms, mask=0x63F)])
    assert np.array_equal(_units(s, 2, 25)[:, [0, 1, 2, 3, 4, 5, 10, 11]], x)


def test_stereo_and_mono_go_into_a_5_1_track(tmp_path):
    """As DCP-o-matic maps them by default: stereo to L and R, mono to C, the rest of the 5.1
    track silent, and said so; in an IMF package stereo is Standard Stereo, mono refused."""
    x = _tones(3840, 2, seed=5)
    s = open_sound([_wav(tmp_path / "st.wav", x, extensible=False)])
    assert s.layout is FIVE_ONE and s.mapping == \
        "stereo sound: L and R of a 5.1 track, C, LFE, Ls, Rs silent"
    got = _units(s, 2, 25)
    assert got.shape == (3840, 6) and np.array_equal(got[:, :2], x) and not got[:, 2:].any()
    blocks = _s24(b"".join(s.sample_blocks(3840, block=1000)), 6)
    assert np.array_equal(blocks, got)
    imf = s.for_imf()                    # IMF: a Standard Stereo track of 2 channels
    assert imf.layout is STEREO and imf.mapping is None and imf.fit_imf(2, 25) is None
    assert imf.for_imf() is imf
    assert np.array_equal(_s24(b"".join(imf.sample_blocks(3840, block=1000)), 2), x)
    m = open_sound([_wav(tmp_path / "m.wav", x[:, :1], extensible=False)])
    assert m.mapping == "mono sound: C of a 5.1 track, L, R, LFE, Ls, Rs silent"
    got = _units(m, 2, 25)
    assert np.array_equal(got[:, 2], x[:, 0]) and not got[:, [0, 1, 3, 4, 5]].any()
    with pytest.raises(UnsupportedMedia, match="IMF package takes stereo, 5.1 or 7.1"):
        m.fit_imf(2, 25)
    six = open_sound([_wav(tmp_path / "six.wav", _tones(3840, 6))])
    assert six.mapping is None and six.fit_imf(2, 25) is None


def _sines(n: int, channels: int, rate: int, start: int = 0) -> np.ndarray:
    """Half-scale sines (1 kHz * (c + 1) per channel) at ``rate``: 24-bit values, samples
    ``start`` .. ``start + n``."""
    t = np.arange(start, start + n)[:, None] / rate
    return np.rint(np.sin(2 * np.pi * 1000 * (np.arange(channels) + 1) * t)
                   * (1 << 22)).astype(np.int32)


def test_sound_at_another_rate_is_converted_to_48k(tmp_path):
    """44.1 kHz (a music or video edit's rate) goes into the track at 48 kHz: as long in time,
    the same sines within a 24-bit step away from the ends, read in blocks of any size alike;
    rates too low to convert are refused."""
    s = open_sound([_wav(tmp_path / "cd.wav", _sines(44100, 6, 44100), rate=44100)])
    assert (s.rate, s.frames, s.source_rate) == (48000, 48000, 44100)
    assert s.note == "sound converted from 44100 Hz to 48000 Hz (libsoxr, very high quality)"
    assert s.fit(24, 24) is None
    got = _units(s, 24, 24)
    ideal = _sines(48000, 6, 48000)
    assert got.shape == (48000, 6)
    assert np.abs(got[2000:-2000] - ideal[2000:-2000]).max() <= 1
    blocks = _s24(b"".join(s.sample_blocks(48000, block=777)), 6)
    assert np.array_equal(blocks, got)
    assert s.fit_imf(24, 24) is None and s.imf_samples(24, 24) == 48000
    # one mono file per channel: each converted on its own, the same samples
    x = _sines(44100, 6, 44100)
    mono = open_sound([_wav(tmp_path / f"m{k}.wav", x[:, k:k + 1], rate=44100, extensible=False)
                       for k in range(6)])
    assert mono.source_rate == 44100 and np.array_equal(_units(mono, 24, 24), got)
    # a stereo mix at 32 kHz: converted and placed in 5.1 both
    st = open_sound([_wav(tmp_path / "st.wav", _sines(32000, 2, 32000), rate=32000)])
    assert (st.frames, st.layout) == (48000, FIVE_ONE) and "stereo" in st.note \
        and "from 32000 Hz" in st.note
    got = _units(st, 24, 24)
    assert np.abs(got[2000:-2000, :2] - ideal[2000:-2000, :2]).max() <= 1
    assert not got[:, 2:].any()
    reader = ResampledWav(read_wav_info(tmp_path / "cd.wav"), 48000)
    reader.read(0, 100)
    with pytest.raises(ValueError, match="read in order"):
        reader.read(0, 100)
    with pytest.raises(UnsupportedMedia, match="4000 Hz.*8000 to 384000 Hz is converted"):
        open_sound([_wav(tmp_path / "low.wav", _sines(400, 6, 4000), rate=4000)])
    with pytest.raises(UnsupportedMedia, match="too low to convert"):   # output bounded by input
        ResampledWav(read_wav_info(tmp_path / "low.wav"), 48000)


# -- the track file ----------------------------------------------------------------------------------
def _write_track(tmp_path, sound, frames, rate, name="s.mxf", language=None):
    path = tmp_path / name
    with SoundTrackWriter(path, edit_rate=rate, rate=sound.rate, layout=sound.layout,
                          language=language) as w:
        for unit in sound.edit_units(frames, rate):
            w.write(unit)
        return w.close()


def _klv_sets(path: Path) -> dict:
    """Header metadata of an MXF file: set key byte 14 -> list of {tag: value} (tags resolved
    to ULs through the primer pack)."""
    d = path.read_bytes()
    pos, primer, sets = 0, {}, {}
    while pos < 16384:
        key = d[pos:pos + 16]
        k = d[pos + 16] & 0x7F
        n = int.from_bytes(d[pos + 17:pos + 17 + k], "big")
        v = d[pos + 17 + k:pos + 17 + k + n]
        if key.hex().startswith("060e2b34020501010d01020101050100"):
            count, size = struct.unpack(">II", v[:8])
            primer = {v[8 + i * size:10 + i * size]: v[10 + i * size:8 + (i + 1) * size]
                      for i in range(count)}
        elif key[5] == 0x53:
            items, r = {}, 0
            while r < len(v):
                tag, ln = struct.unpack(">HH", v[r:r + 4])
                items[primer[v[r:r + 2]].hex()] = v[r + 4:r + 4 + ln]
                r += 4 + ln
            sets.setdefault(key[14], []).append(items)
        pos += 17 + k + n
    return sets


def test_sound_track_matches_libdcps_layout(tmp_path, dcp_samples):
    """The same sound as libdcp's sample's shape (5.1, 48 kHz, 24 frames at 24 fps, en-US) gives
    a file of the same size with the same WaveAudioDescriptor and MCA labels."""
    ref = dcp_samples / "libdcp-dcp_test1-smpte-2k" / "audio.mxf"
    s = open_sound([_wav(tmp_path / "a.wav", _tones(48000, 6))])
    ours = _write_track(tmp_path, s, 24, 24, language="en-US")
    assert ours.size == ref.stat().st_size == 881326
    mine, theirs = _klv_sets(ours.path), _klv_sets(ref)
    uid_items = ("060e2b34010101010101150200000000", "060e2b34010101090601010406100000",
                 "060e2b340101010e0103070105000000", "060e2b340101010e0103070106000000")
    strip = lambda items: {k: v for k, v in items.items() if k not in uid_items}  # noqa: E731
    assert strip(mine[0x48][0]) == strip(theirs[0x48][0])       # WaveAudioDescriptor
    assert [strip(x) for x in mine[0x6B]] == [strip(x) for x in theirs[0x6B]]   # channels
    assert [strip(x) for x in mine[0x6C]] == [strip(x) for x in theirs[0x6C]]   # soundfield
    assert len(mine[0x48][0]["060e2b34010101090601010406100000"]) == 8 + 7 * 16


@needs_ffmpeg
@needs_mediainfo
def test_sound_track_read_back_by_ffprobe_mediainfo_ffmpeg(tmp_path):
    x = _tones(2 * 48000 // 25 * 3, 8, seed=5)
    s = open_sound([_wav(tmp_path / "a.wav", x)])
    track = _write_track(tmp_path, s, 6, 25)
    probe = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(track.path)],
        capture_output=True, text=True, timeout=60).stdout)["streams"][0]
    assert (probe["codec_name"], probe["sample_rate"], probe["channels"],
            probe["bits_per_raw_sample"], float(probe["duration"])) == \
        ("pcm_s24le", "48000", 12, "24", 6 / 25)
    info = json.loads(subprocess.run(["mediainfo", "--Output=JSON", str(track.path)],
                                     capture_output=True, text=True, timeout=60).stdout)
    audio = next(t for t in info["media"]["track"] if t["@type"] == "Audio")
    assert (audio["Channels"], audio["SamplingRate"], audio["BitDepth"],
            audio["SamplesPerFrame"]) == ("12", "48000", "24", "1920")
    assert float(audio["Duration"]) == pytest.approx(0.24)
    got = _extract(track.path, 12)
    assert np.array_equal(got[:, [0, 1, 2, 3, 4, 5, 10, 11]], x) and not got[:, 6:10].any()


# -- cinegpu master --audio --------------------------------------------------------------------------
def _still(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    _write_png16(src / "f.png", np.ones((36, 64, 3), np.float32))   # white: see test_master_hostile
    return src


class _NoEncoding:
    def __init__(self, *a, **k):
        raise AssertionError("a frame was about to be encoded")


def _mistakes(tmp_path: Path) -> dict:
    """Sound inputs ``cinegpu master`` must refuse, each with the words of its message."""
    one_s = _tones(48000, 6)
    mono = [_wav(tmp_path / f"m{k}.wav", one_s[:, k:k + 1]) for k in range(6)]
    shorter = _wav(tmp_path / "m_short.wav", one_s[:47000, :1])
    _wav(tmp_path / "zero.wav", one_s[:, :1])
    data = bytearray((tmp_path / "zero.wav").read_bytes())
    data[22:24] = b"\x00\x00"
    (tmp_path / "zero.wav").write_bytes(bytes(data))
    return {
        "short": ([_wav(tmp_path / "short.wav", one_s[:45000])], "shorter than the picture"),
        "4 kHz": ([_wav(tmp_path / "low.wav", one_s[:4000], rate=4000)],
                  "4000 Hz.*8000 to 384000 Hz is converted"),
        "mono lengths": (mono[:5] + [shorter], "mono files must be of equal length"),
        "0 channels": ([tmp_path / "zero.wav"], "0 channels"),
        "missing": ([tmp_path / "nowhere.wav"], "cannot read: No such file"),
        "4 channels": ([_wav(tmp_path / "quad.wav", one_s[:, :4])], "4 channels; the CPL declares"),
        "stereo mono": (mono[:2], "2 mono sound files"),
    }


def test_sound_mistakes_exit_2_before_encoding(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("cinegpu.jobs.master_job.FrameEncoders", _NoEncoding)
    src = _still(tmp_path)
    for name, (files, words) in _mistakes(tmp_path).items():
        rc = main(["master", str(src), "-o", str(tmp_path / "out"), "--title", "t", "--quiet",
                   "--audio", *map(str, files)])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1, (name, err)
        assert re.search(words, err), (name, err)
        assert not (tmp_path / "out").exists() and not any(tmp_path.glob(".out*")), name


def _check_master(tmp_path, capsys, audio: list[Path], x: np.ndarray, note: str = "") -> None:
    """Master a second of picture with ``audio``; the sound track must be ``x`` (the track's
    6 channels) cut to the picture, and the master's messages include ``note``."""
    out = tmp_path / "dcp"
    rc = main(["master", str(_still(tmp_path)), "-o", str(out), "--title",
               "Sound_TST_F_EN-XX_51_2K_CGP_20260101_CGP_SMPTE_OV", "--quiet",
               "--audio", *map(str, audio), "--audio-language", "en-US"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "last 1000 samples are cut" in captured.err           # 1 s of picture, 49000 samples
    assert note in captured.err
    (pcm,) = out.glob("pcm_*.mxf")
    got = _extract(pcm, 6)
    assert np.array_equal(got, x[:48000])
    probe = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(pcm)],
        capture_output=True, text=True, timeout=60).stdout)["streams"][0]
    assert (probe["channels"], probe["sample_rate"], probe["bits_per_raw_sample"],
            float(probe["duration"])) == (6, "48000", "24", 1.0)
    info = json.loads(subprocess.run(["mediainfo", "--Output=JSON", str(pcm)],
                                     capture_output=True, text=True, timeout=60).stdout)
    audio_t = next(t for t in info["media"]["track"] if t["@type"] == "Audio")
    assert (audio_t["Channels"], audio_t["ChannelLayout"], audio_t["Language"]) == \
        ("6", "L R C LFE Ls Rs", "en-US")
    cpl = next(out.glob("cpl_*.xml")).read_text()
    sound_id = pcm.stem[len("pcm_"):]
    assert re.search(rf"<MainSound>\s*<Id>urn:uuid:{sound_id}</Id>\s*<EditRate>24 1</EditRate>\s*"
                     r"<IntrinsicDuration>24</IntrinsicDuration>\s*<EntryPoint>0</EntryPoint>\s*"
                     r"<Duration>24</Duration>\s*<Hash>[^<]+</Hash>\s*<Language>en-US</Language>",
                     cpl)
    assert "<meta:MainSoundConfiguration>51/L,R,C,LFE,Ls,Rs<" in cpl
    assert sound_id in next(out.glob("pkl_*.xml")).read_text()
    assert sound_id in (out / "ASSETMAP.xml").read_text()
    _clairmeta_ok(out)


@pytest.mark.slow
@needs_encoder
@needs_ffmpeg
@needs_mediainfo
@pytest.mark.parametrize("rf64", [False, True])
def test_master_with_one_six_channel_wav(tmp_path, capsys, rf64):
    """One 5.1 WAV; as RF64 too (a feature's mix over 4 GiB comes so), which masters the same."""
    x = _tones(49000, 6, seed=7)
    wav = _wav(tmp_path / "r.wav", x, mask=0x60F)
    _check_master(tmp_path, capsys, [_rf64(wav, tmp_path / "s.wav") if rf64 else wav], x)


@pytest.mark.slow
@needs_encoder
@needs_ffmpeg
def test_master_with_a_44_1_khz_wav(tmp_path, capsys):
    """A 44.1 kHz mix masters into a 48 kHz track (ffmpeg reads back the sines) and says so."""
    out = tmp_path / "dcp"
    wav = _wav(tmp_path / "cd.wav", _sines(44100, 6, 44100), rate=44100)
    rc = main(["master", str(_still(tmp_path)), "-o", str(out), "--title", "t", "--quiet",
               "--audio", str(wav)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "converted from 44100 Hz to 48000 Hz" in err
    (pcm,) = out.glob("pcm_*.mxf")
    got = _extract(pcm, 6)
    assert got.shape == (48000, 6)
    ideal = _sines(48000, 6, 48000)
    assert np.abs(got[2000:-2000] - ideal[2000:-2000]).max() <= 1
    _clairmeta_ok(out)


@pytest.mark.slow
@needs_encoder
@needs_ffmpeg
@needs_mediainfo
def test_master_with_a_stereo_wav(tmp_path, capsys):
    """A stereo mix: L and R of the 5.1 track, the rest silent, and the mapping said."""
    x = _tones(49000, 2, seed=10)
    track = np.zeros((49000, 6), np.int32)
    track[:, :2] = x
    _check_master(tmp_path, capsys, [_wav(tmp_path / "st.wav", x, extensible=False)], track,
                  note="stereo sound: L and R of a 5.1 track")


@pytest.mark.slow
@needs_encoder
@needs_ffmpeg
@needs_mediainfo
def test_master_with_six_mono_wavs(tmp_path, capsys):
    x = _tones(49000, 6, seed=8)
    files = [_wav(tmp_path / f"{c}.wav", x[:, k:k + 1], extensible=False)
             for k, c in enumerate(("L", "R", "C", "LFE", "Ls", "Rs"))]
    _check_master(tmp_path, capsys, files, x)
