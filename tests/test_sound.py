"""cinegpu.media.sound.track: PCM track files (ST 382) read by edit unit and by sample, compared with
ffmpeg's extraction, and its errors on bad input."""

from __future__ import annotations

import random
import shutil
from fractions import Fraction

import numpy as np
import pytest

from cinegpu.media.errors import CorruptMedia, EncryptedMedia, MediaError, UnsupportedMedia
from cinegpu.media.sound.track import SoundTrack, decode_pcm
from conftest import DCP_SAMPLES, needs_dcp_samples
from sound_util import ffmpeg_pcm, pattern, patterned_copy

pytestmark = needs_dcp_samples

SMPTE_AUDIO = DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k" / "audio.mxf"
# (track file, channels, edit units, wrapping, layout)
TRACKS = [
    ("libdcp-dcp_test1-smpte-2k/audio.mxf", 6, 24, "frame", "51/L,R,C,LFE,Ls,Rs"),
    ("libdcp-dcp_test3-interop-2k/pcm_69cf9eaf-9a99-4776-b022-6902208626c3.mxf", 6, 24, "frame", ""),
    ("photon-imf-htj2k-1080p/AUDIO_b285d8f3-0294-4207-8ea8-4f0b72314213.mxf", 2, 64064, "clip",
     "ST/L,R"),
    ("photon-imf-phdr-4k-j2k/AUDIO_a2a83e0a-a0ac-4785-8685-d868631f493a.mxf", 6, 48048, "clip",
     "51/L,R,C,LFE,Ls,Rs"),
]


def test_case_count():
    assert len(TRACKS) == 4


@pytest.mark.parametrize("case", TRACKS, ids=lambda c: c[0].split("/")[0])
def test_descriptor(case):
    name, channels, units, wrapping, layout = case
    with SoundTrack(DCP_SAMPLES / name) as t:
        d = t.descriptor
        assert (d.channels, d.bits, d.sample_rate, d.block_align) == (channels, 24, 48000, 3 * channels)
        assert (t.duration, d.wrapping, d.layout()) == (units, wrapping, layout)
        assert t.sample_count == units * t.samples_per_unit
        assert d.edit_rate == (24 if wrapping == "frame" else 48000)


@pytest.mark.parametrize("case", TRACKS, ids=lambda c: c[0].split("/")[0])
def test_samples_equal_ffmpeg(case):
    """The whole track and 20 random edit-unit ranges equal ffmpeg's s24le extraction."""
    path = DCP_SAMPLES / case[0]
    with SoundTrack(path) as t:
        ref = ffmpeg_pcm(path, t.descriptor.channels)
        assert ref.shape == (t.sample_count, t.descriptor.channels)
        assert np.array_equal(t.read(0, t.duration), ref)
        rng = random.Random(17)
        spu = t.samples_per_unit
        for _ in range(20):
            a = rng.randrange(t.duration)
            b = rng.randrange(a, min(t.duration, a + 5000) + 1)
            assert np.array_equal(t.read(a, b), ref[a * spu:b * spu])
            s0 = rng.randrange(t.sample_count)
            s1 = rng.randrange(s0, t.sample_count + 1)
            assert np.array_equal(t.read_samples(s0, s1), ref[s0:s1])


def test_imf_tracks_are_not_silent():
    """The IMF tracks carry real sound, so the comparison above says something."""
    with SoundTrack(DCP_SAMPLES / TRACKS[3][0]) as t:
        assert np.abs(t.read(0, t.duration)).max() > 1_000_000


def test_patterned_frame_wrapped_copy_equals_ffmpeg(tmp_path):
    """libdcp's tracks are silent: a copy with position-coded samples checks frame wrapping."""
    dst = tmp_path / "audio.mxf"
    patterned_copy(SMPTE_AUDIO, dst)
    with SoundTrack(dst) as t:
        ref = ffmpeg_pcm(dst, 6)
        assert np.array_equal(ref, pattern(0, 48000, 6))
        assert np.array_equal(t.read(0, 24), ref)
        assert np.array_equal(t.read(5, 7), ref[10000:14000])
        assert np.array_equal(t.read_samples(1999, 2001), ref[1999:2001])


def test_decode_pcm_widths():
    v = np.array([[-(1 << 23), (1 << 23) - 1], [-1, 5]], np.int32)
    b24 = v.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    assert np.array_equal(decode_pcm(b24, 2, 24), v)
    assert np.array_equal(decode_pcm(v.astype("<i2").tobytes(), 2, 16), v.astype(np.int16))
    assert np.array_equal(decode_pcm(v.astype("<i4").tobytes(), 2, 32), v)


def test_range_checks():
    with SoundTrack(SMPTE_AUDIO) as t:
        assert t.read(3, 3).shape == (0, 6)
        with pytest.raises(IndexError):
            t.read(0, 25)
        with pytest.raises(IndexError):
            t.read_samples(-1, 10)


def test_encrypted_track():
    with pytest.raises(EncryptedMedia, match="ST 429-6"):
        SoundTrack(DCP_SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted" / "audio.mxf")


def test_picture_file_is_not_sound():
    with pytest.raises(UnsupportedMedia, match="no sound essence descriptor"):
        SoundTrack(DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k" / "video.mxf")


def test_truncated_track(tmp_path):
    """Cut inside the essence: the partitions the header names are gone, a CorruptMedia with
    the byte offset (the reads of a damaged element are in test_wrong_element_size)."""
    data = SMPTE_AUDIO.read_bytes()
    bad = tmp_path / "cut.mxf"
    bad.write_bytes(data[:16524 + 36020 * 10 + 100])
    with pytest.raises(CorruptMedia, match="truncated") as info:
        SoundTrack(bad)
    assert info.value.offset is not None


def test_wrong_element_size(tmp_path):
    """An essence KLV whose length disagrees with the descriptor (2000 x 18 bytes) is corrupt."""
    bad = tmp_path / "len.mxf"
    shutil.copyfile(SMPTE_AUDIO, bad)
    with SoundTrack(bad) as t:
        so, _ = t.mxf.stream_offset(3)
        off, _ = t.mxf.file_offset(so)
    with open(bad, "r+b") as f:   # BER 0x83 + 3 bytes: 36000 -> 35999
        f.seek(off + 17)
        f.write((35999).to_bytes(3, "big"))
    with SoundTrack(bad) as t:
        assert t.read(0, 3).shape == (6000, 6)
        with pytest.raises(CorruptMedia, match="edit unit 3 holds 35999 bytes"):
            t.read(3, 4)


def test_bad_descriptor_fields(tmp_path):
    """Zero channels in the descriptor: a MediaError naming the field, never a crash."""
    bad = tmp_path / "ch.mxf"
    data = bytearray(SMPTE_AUDIO.read_bytes())
    tag = bytes.fromhex("3d070004") + (6).to_bytes(4, "big")
    i = data.find(tag)
    assert i > 0
    data[i + 4:i + 8] = (0).to_bytes(4, "big")
    bad.write_bytes(bytes(data))
    with pytest.raises(MediaError, match="0 channels"):
        SoundTrack(bad)


def test_samples_per_edit_unit():
    with SoundTrack(SMPTE_AUDIO) as t:
        assert t.descriptor.samples_per_edit_unit == Fraction(2000)
        assert t.samples_per_unit == 2000
