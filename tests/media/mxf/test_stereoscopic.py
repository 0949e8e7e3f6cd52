"""ST 429-10 stereoscopic picture track files: written by :class:`StereoscopicPictureTrackWriter`
as asdcplib's ``JP2K::MXFSWriter`` writes them, read back pair by pair by :class:`MXFFile`,
checked by asdcplib's own tools (``asdcp-info``, ``asdcp-unwrap -3``; skipped where they are
not installed), in the clear and encrypted (ST 429-6), and damaged: cut short, or with an
index that points past the essence or at a unit's right eye.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import uuid
from fractions import Fraction

import pytest

from cinegpu.media.errors import CorruptMedia, EncryptedMedia, MediaError, UnsupportedMedia
from cinegpu.media.mxf.read import GC_ELEMENT, MXFFile
from cinegpu.media.mxf.write import (
    HEADER_RESERVE,
    PICTURE_ELEMENT,
    EssenceEncryption,
    StereoscopicPictureTrackWriter,
    write_track,
)
from cinegpu.media.security import essence_crypto as E
from conftest import HAVE_ASDCPLIB, SAMPLE
from helpers.encrypted_dcp import frames

needs_asdcplib = pytest.mark.skipif(not HAVE_ASDCPLIB, reason="asdcplib's asdcp-info and asdcp-unwrap "
                                    "are not on PATH (.ci/install-asdcplib builds them)")

#: ST 377-1 GenericDescriptor SubDescriptors, a dynamic tag the reader keeps by its UL
SUBDESCRIPTORS = bytes.fromhex("060e2b34010101090601010406100000")
UNITS = 3


def _pairs() -> list[tuple[bytes, bytes]]:
    """Three left/right pairs of distinct 64 x 48 12-bit codestreams."""
    f = frames(2 * UNITS)
    return [(f[2 * i], f[2 * i + 1]) for i in range(UNITS)]


def _write(path, pairs, **kwargs):
    with StereoscopicPictureTrackWriter(path, edit_rate=24, **kwargs) as w:
        for left, right in pairs:
            w.write(left, right)
        return w.close()


def _key_offsets(m: MXFFile, n: int) -> tuple[int, int]:
    """File offsets of the keys of frame ``n``'s left and right elements (4-byte BER lengths)."""
    return m.locate_frame(n, "left")[0] - 20, m.locate_frame(n, "right")[0] - 20


def _set_index_entry(m: MXFFile, path, n: int, stream_offset: int) -> None:
    """Rewrite the StreamOffset of index entry ``n`` (ST 377-1 11.2.3) in the file at ``path``."""
    seg = m.index_segments[0]
    data = bytearray(path.read_bytes())
    struct.pack_into(">Q", data, seg.entries_offset + n * seg.entry_size + 3, stream_offset)
    path.write_bytes(bytes(data))


def test_a_stereoscopic_track_file_reads_back_pair_by_pair(tmp_path):
    pairs = _pairs()
    track = _write(tmp_path / "3d.mxf", pairs)
    assert (track.frames, track.edit_rate, track.stereoscopic, track.width, track.height) == \
        (UNITS, 24, True, 64, 48)
    assert track.size == (tmp_path / "3d.mxf").stat().st_size
    with MXFFile(tmp_path / "3d.mxf") as m:
        assert m.stereoscopic and m.picture is not None and m.picture.stereoscopic
        assert m.frame_count == UNITS and m.edit_rate == 24
        assert (m.picture.sample_rate, m.picture.container_duration) == (48, UNITS)
        assert [m.frame_pair(i) for i in range(UNITS)] == pairs
        assert [(m.frame(i, "left"), m.frame(i, "right")) for i in range(UNITS)] == pairs
        assert m.frame_size(2, "right") == len(pairs[2][1])
        with pytest.raises(ValueError, match=r"frame 1 of a stereoscopic track file .* frame_pair\(1\)"):
            m.frame(1)                      # never one eye as the frame unless asked
        with pytest.raises(ValueError, match="eye must be"):
            m.frame(1, "both")
        with pytest.raises(IndexError):
            m.frame_pair(UNITS)
    write_track(tmp_path / "2d.mxf", [pairs[0][0]], edit_rate=24)
    with MXFFile(tmp_path / "2d.mxf") as flat:
        assert not flat.stereoscopic and flat.picture is not None and not flat.picture.stereoscopic
        assert flat.frame(0) == flat.frame(0, "right") == pairs[0][0]
        with pytest.raises(UnsupportedMedia, match="not a stereoscopic track file"):
            flat.frame_pair(0)


def test_the_header_and_essence_are_laid_out_as_asdcplib_writes_them(tmp_path):
    """asdcplib's MXFSWriter: one index entry a unit (its left element) at the per-eye rate,
    both eyes under the one picture element key, the descriptor's SampleRate the element
    rate, a StereoscopicPictureSubDescriptor linked after the JPEG 2000 one, the timecode's
    RoundedTimecodeBase 48."""
    pairs = _pairs()
    _write(tmp_path / "3d.mxf", pairs)
    with MXFFile(tmp_path / "3d.mxf") as m:
        (seg,) = m.index_segments
        assert (seg.edit_rate, seg.duration, seg.entry_count) == (24, UNITS, UNITS)
        (body,) = [p for p in m.partitions if p.kind == "body"]
        assert body.offset == HEADER_RESERVE and body.essence_start is not None
        keys = []
        for i in range(UNITS):
            left, right = _key_offsets(m, i)
            assert left == body.essence_start + seg.stream_offset(i)
            assert right == left + 20 + len(pairs[i][0])
            keys += [m.reader.read(left, 16), m.reader.read(right, 16)]
        assert set(keys) == {PICTURE_ELEMENT} and PICTURE_ELEMENT.startswith(GC_ELEMENT)
        (desc,) = m.sets_named("RGBAEssenceDescriptor")
        (j2k,) = m.sets_named("JPEG2000PictureSubDescriptor")
        (stereo,) = m.sets_named("StereoscopicPictureSubDescriptor")
        assert desc.items[SUBDESCRIPTORS][8:] == j2k.items[0x3C0A] + stereo.items[0x3C0A]  # type: ignore[index]
        assert set(stereo.items) == {0x3C0A}
        (package,) = m.sets_named("SourcePackage")
        assert package.items[0x4402].decode("utf-16-be") == \
            "File Package: SMPTE 429-10 frame wrapping of stereoscopic JPEG 2000 codestreams"
        tracks = m.sets_named("TimelineTrack")
        assert {struct.unpack(">ii", t.items[0x4B01]) for t in tracks} == {(24, 1)}
        assert 0x15010801 in {struct.unpack(">I", t.items[0x4804])[0] for t in tracks}
        assert {struct.unpack(">H", t.items[0x1502])[0] for t in m.sets_named("TimecodeComponent")} == {48}


def test_the_writer_refuses_a_mismatched_eye_and_a_rate_asdcplib_cannot_read(tmp_path):
    pairs = _pairs()
    with pytest.raises(ValueError, match="edit rate"):
        StereoscopicPictureTrackWriter(tmp_path / "x.mxf", edit_rate=Fraction(24000, 1001))
    assert not (tmp_path / "x.mxf").exists()
    with StereoscopicPictureTrackWriter(tmp_path / "y.mxf", edit_rate=24) as w:
        w.write(*pairs[0])
        with pytest.raises(MediaError, match=r"frame 1 \(right eye\) is 2048x1080 .* the track is 64x48"):
            w.write(pairs[1][0], SAMPLE.read_bytes())
        assert (len(w.offsets), w.elements) == (1, 2)       # neither eye of the pair written
        w.write(*pairs[1])
        track = w.close()
    with MXFFile(track.path) as m:
        assert track.frames == m.frame_count == 2 and [m.frame_pair(i) for i in range(2)] == pairs[:2]


def _asdcp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60)


def _unwrapped(folder, units: int) -> list[tuple[bytes, bytes]]:
    """What ``asdcp-unwrap -3 FILE PREFIX`` wrote: PREFIX000000L.j2c, PREFIX000000R.j2c, ..."""
    assert len(list(folder.iterdir())) == 2 * units
    return [((folder / f"eye{i:06d}L.j2c").read_bytes(), (folder / f"eye{i:06d}R.j2c").read_bytes())
            for i in range(units)]


@needs_asdcplib
def test_asdcplib_reads_it_as_stereoscopic_jpeg_2000_and_unwraps_our_codestreams(tmp_path):
    pairs = _pairs()
    path = tmp_path / "3d.mxf"
    _write(path, pairs)
    info = _asdcp("asdcp-info", "-d", str(path))     # no -3: the header alone says stereoscopic
    assert info.returncode == 0, info.stdout + info.stderr
    assert f"essence type is JPEG 2000 stereoscopic pictures, ({UNITS} edit units)" in info.stdout
    fields = {k.strip(): v.strip() for k, _, v in
              (line.partition(":") for line in info.stdout.splitlines()) if v}
    assert (fields["EditRate"], fields["SampleRate"], fields["ContainerDuration"]) == ("24/1", "48/1", str(UNITS))
    assert (fields["StoredWidth"], fields["StoredHeight"]) == ("64", "48")
    out = tmp_path / "out"
    out.mkdir()
    unwrap = _asdcp("asdcp-unwrap", "-3", str(path), str(out / "eye"))
    assert unwrap.returncode == 0, unwrap.stdout + unwrap.stderr
    assert _unwrapped(out, UNITS) == pairs


def test_an_encrypted_stereoscopic_file_is_a_triplet_an_eye(tmp_path):
    """ST 429-6 as asdcplib applies it to ST 429-10: each eye its own triplet, SequenceNumber
    2n+1 (left) and 2n+2 (right) for unit n, the one track file id; read back only with the
    key."""
    pairs, key = _pairs(), os.urandom(16)
    path = tmp_path / "enc.mxf"
    track = _write(path, pairs, encryption=EssenceEncryption(key, uuid.uuid4()))
    data = path.read_bytes()
    assert data.count(E.ENCRYPTED_TRIPLET) == 2 * UNITS
    assert all(cs[100:300] not in data for pair in pairs for cs in pair)    # no clear essence
    with MXFFile(path, key=key) as m:
        assert m.encrypted and m.stereoscopic and m.frame_count == UNITS
        assert [m.frame_pair(i) for i in range(UNITS)] == pairs
        assert m.frame_size(1, "right") == len(pairs[1][1])
        triplets = [E.parse_triplet(m.reader.read(*m.locate_frame(i, eye)))
                    for i in range(UNITS) for eye in ("left", "right")]
    assert [t.sequence for t in triplets] == list(range(1, 2 * UNITS + 1))
    assert {(t.source_key, t.track_file_id) for t in triplets} == {(PICTURE_ELEMENT, track.asset_id.bytes)}
    with pytest.raises(EncryptedMedia, match="a KDM is needed"):
        MXFFile(path).frame_pair(0)
    with pytest.raises(EncryptedMedia, match=r"frame 2 \(right eye\): the key does not decrypt"):
        MXFFile(path, key=os.urandom(16)).frame(2, "right")


@needs_asdcplib
def test_asdcplib_decrypts_our_encrypted_stereoscopic_file(tmp_path):
    """asdcp-info shows the encryption and the key id; asdcp-unwrap -k decrypts both eyes,
    checking each triplet's HMAC with the sequence number it expects (-m)."""
    pairs, key, key_id = _pairs(), os.urandom(16), uuid.uuid4()
    path = tmp_path / "enc.mxf"
    _write(path, pairs, encryption=EssenceEncryption(key, key_id))
    info = _asdcp("asdcp-info", "-i", str(path))
    assert info.returncode == 0, info.stdout + info.stderr
    assert "JPEG 2000 stereoscopic pictures" in info.stdout
    assert "EncryptedEssence: Yes" in info.stdout and f"CryptographicKeyID: {key_id}" in info.stdout
    out = tmp_path / "out"
    out.mkdir()
    unwrap = _asdcp("asdcp-unwrap", "-3", "-m", "-k", key.hex(), str(path), str(out / "eye"))
    assert unwrap.returncode == 0, unwrap.stdout + unwrap.stderr
    assert _unwrapped(out, UNITS) == pairs
    shutil.rmtree(out)
    out.mkdir()
    wrong = _asdcp("asdcp-unwrap", "-3", "-k", os.urandom(16).hex(), str(path), str(out / "eye"))
    assert wrong.returncode != 0


@pytest.mark.parametrize("where", ["header", "left eye", "right eye", "footer", "random index pack"])
def test_a_cut_stereoscopic_file_is_corrupt_media(tmp_path, where):
    """Cut anywhere, the file is a MediaError (opening it, or reading a pair), never another
    exception; what is read before the error is what was written."""
    pairs = _pairs()
    path = tmp_path / "3d.mxf"
    track = _write(path, pairs)
    with MXFFile(path) as m:
        left, right = _key_offsets(m, UNITS - 1)
        (footer,) = [p.offset for p in m.partitions if p.kind == "footer"]
    cut = {"header": 3000, "left eye": left + 500, "right eye": right + 500, "footer": footer + 200,
           "random index pack": track.size - 10}[where]
    path.write_bytes(path.read_bytes()[:cut])
    read = []
    with pytest.raises(MediaError):
        with MXFFile(path) as m:
            for i in range(m.frame_count):
                read.append(m.frame_pair(i))
    assert read == pairs[:len(read)]


def test_an_index_entry_past_the_essence_names_the_frame(tmp_path):
    pairs = _pairs()
    path = tmp_path / "3d.mxf"
    _write(path, pairs)
    with MXFFile(path) as m:
        _set_index_entry(m, path, 2, 10 ** 9)
    with MXFFile(path) as m:
        assert [m.frame_pair(i) for i in range(2)] == pairs[:2]
        with pytest.raises(CorruptMedia, match=r"3d.mxf at byte \d+: frame 2 \(left eye\): stream "
                                               r"offset 1000000000 lies past"):
            m.frame_pair(2)
        assert m.frame(1, "right") == pairs[1][1]


@pytest.mark.parametrize("unit", [1, UNITS - 1])
def test_an_index_entry_at_a_right_eye_leaves_a_unit_of_one_element(tmp_path, unit):
    """An entry pointing at its unit's right element: a middle unit's "right eye" would be the
    next unit's left, the last unit has no element after it; either is an error naming the
    frame and eye, the units before it read as written."""
    pairs = _pairs()
    path = tmp_path / "3d.mxf"
    _write(path, pairs)
    with MXFFile(path) as m:
        (body,) = [p for p in m.partitions if p.kind == "body"]
        assert body.essence_start is not None
        _set_index_entry(m, path, unit, _key_offsets(m, unit)[1] - body.essence_start)
    with MXFFile(path) as m:
        assert [m.frame_pair(i) for i in range(unit)] == pairs[:unit]
        assert m.frame(unit, "left") == pairs[unit][1]
        message = (r"the edit unit holds one picture element \(the next is frame 2's" if unit < UNITS - 1
                   else "no second picture element")
        with pytest.raises(CorruptMedia, match=rf"frame {unit} \(right eye\): {message}"):
            m.frame_pair(unit)


def test_a_right_eye_longer_than_its_partition_is_corrupt_media(tmp_path):
    pairs = _pairs()
    path = tmp_path / "3d.mxf"
    _write(path, pairs)
    with MXFFile(path) as m:
        right = _key_offsets(m, UNITS - 1)[1]
    data = bytearray(path.read_bytes())
    assert data[right + 16] == 0x83            # a 4-byte BER length, as asdcplib writes it
    data[right + 17:right + 20] = (len(pairs[-1][1]) + 4096).to_bytes(3, "big")
    path.write_bytes(bytes(data))
    with MXFFile(path) as m:
        assert m.frame_pair(1) == pairs[1] and m.frame(2, "left") == pairs[2][0]
        with pytest.raises(CorruptMedia, match=r"frame 2 \(right eye\).* runs past the end"):
            m.frame(2, "right")
