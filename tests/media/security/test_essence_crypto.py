"""Encrypted essence (SMPTE ST 429-6, cinegpu.media.security.essence_crypto): the MIC key generator on
NIST's vector, our encrypted track files read back by us and decrypted by ffmpeg to the same
codestreams, wrong and missing keys, damaged triplets, and asdcplib's triplets (libdcp's
encrypted test DCP in ../shared, whose key is not published: structure and refusal only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest

from cinegpu.decode.codestream import dci
from cinegpu.media.errors import CorruptMedia, EncryptedMedia
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.mxf.write import EssenceEncryption, write_track
from cinegpu.media.security import essence_crypto as E
from conftest import DCP_SAMPLES, SAMPLE

LIBDCP_ENCRYPTED = DCP_SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted" / "video.mxf"
PICTURE_ELEMENT = bytes.fromhex("060e2b34010201010d01030115010801")


def test_the_fips_186_generator_gives_nists_values():
    """FIPS 186-2 change notice 1's example: XKEY bd029bbe..., b = 160, x0 then x1."""
    out = E.fips186_prf(bytes.fromhex("bd029bbe7f51960bcf9edb2b61f06f0feb5a38b6"), 40)
    assert out.hex() == "2070b3223dba372fde1c0ffc7b2e3b498b2606143c6c18bacb0f6c55babb13788e20d737a3275116"
    key = bytes(range(16))
    assert E.mic_key(key) == E.fips186_prf(key, 40)[20:36] and len(E.mic_key(key, interop=True)) == 16


@pytest.mark.parametrize("size,offset", [(0, 0), (1, 0), (16, 0), (939, 0), (939, 5), (939, 939), (4096, 100)])
def test_a_triplet_round_trips(size, offset):
    key, value = os.urandom(16), os.urandom(size)
    triplet = E.encrypt_element(PICTURE_ELEMENT, value, key, context_id=os.urandom(16),
                                track_file_id=os.urandom(16), sequence=7, plaintext_offset=offset)
    assert triplet[:16] == E.ENCRYPTED_TRIPLET
    body = triplet[20:]
    t = E.parse_triplet(body)
    assert (t.plaintext_offset, t.source_key, t.source_length, t.sequence) == (offset, PICTURE_ELEMENT, size, 7)
    assert t.esv[2 * 16:2 * 16 + offset] == value[:offset]      # the clear region stays clear
    assert E.decrypt_triplet(body, key) == (PICTURE_ELEMENT, value)
    with pytest.raises(EncryptedMedia, match="check value differs"):
        E.decrypt_triplet(body, os.urandom(16))


def _encrypted_track(tmp_path, key, frames):
    write_track(tmp_path / "enc.mxf", frames, edit_rate=24, encryption=EssenceEncryption(key, uuid.uuid4()))
    return tmp_path / "enc.mxf"


def test_our_encrypted_track_file_reads_back_only_with_its_key(tmp_path):
    key, frames = os.urandom(16), [SAMPLE.read_bytes(), SAMPLE.read_bytes()[:-2] + b"\xff\xd9"]
    path = _encrypted_track(tmp_path, key, frames * 2)
    assert path.read_bytes().count(E.ENCRYPTED_TRIPLET) == 4
    assert frames[0][200:400] not in path.read_bytes()          # no clear essence in the file
    m = MXFFile(path, key=key)
    assert m.encrypted and m.frame_count == 4
    assert [m.frame(i) for i in range(4)] == frames * 2
    assert m.frame_size(1) == len(frames[1])
    with pytest.raises(EncryptedMedia, match="a KDM is needed"):
        MXFFile(path).frame(0)
    with pytest.raises(EncryptedMedia, match="frame 2: the key does not decrypt"):
        MXFFile(path, key=os.urandom(16)).frame(2)


def test_a_changed_frame_fails_its_integrity_check(tmp_path):
    key = os.urandom(16)
    path = _encrypted_track(tmp_path, key, [SAMPLE.read_bytes()] * 2)
    off, size = MXFFile(path, key=key).locate_frame(1)
    data = bytearray(path.read_bytes())
    data[off + size // 2] ^= 0x01            # a byte of the ciphertext
    (tmp_path / "changed.mxf").write_bytes(bytes(data))
    changed = MXFFile(tmp_path / "changed.mxf", key=key)
    assert changed.frame(0) == SAMPLE.read_bytes()
    with pytest.raises(CorruptMedia, match="frame 1: .*integrity check"):
        changed.frame(1)


@pytest.mark.parametrize("cut", [3, 30, 70, -30])
def test_a_cut_triplet_is_corrupt_media(cut):
    key = os.urandom(16)
    body = E.encrypt_element(PICTURE_ELEMENT, os.urandom(100), key, context_id=bytes(16),
                             track_file_id=bytes(16), sequence=1)[20:]
    with pytest.raises(CorruptMedia):
        E.decrypt_triplet(body[:cut], key)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg")
def test_ffmpeg_decrypts_our_track_file_to_the_codestreams(tmp_path):
    """An independent check of the encrypted source values (IV, check value, CBC chain,
    padding): ffmpeg's MXF demuxer with -cryptokey.  It matches the triplet key with its
    registry version byte 7 = 0x07; asdcplib and we write 0x01, so the copy it reads has it
    changed, nothing else."""
    key, frames = os.urandom(16), [SAMPLE.read_bytes(), SAMPLE.read_bytes()[:-2] + b"\xff\xd9"]
    data = _encrypted_track(tmp_path, key, frames).read_bytes()
    v7 = E.ENCRYPTED_TRIPLET[:7] + b"\x07" + E.ENCRYPTED_TRIPLET[8:]
    (tmp_path / "v7.mxf").write_bytes(data.replace(E.ENCRYPTED_TRIPLET, v7))
    r = subprocess.run(["ffmpeg", "-v", "error", "-cryptokey", key.hex(), "-i", str(tmp_path / "v7.mxf"),
                        "-c", "copy", "-f", "image2", str(tmp_path / "out%03d.j2c")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [p.read_bytes() for p in sorted(tmp_path.glob("out*.j2c"))] == frames


@pytest.mark.skipif(not LIBDCP_ENCRYPTED.is_file(), reason="../shared/dcp-samples is absent")
def test_asdcplibs_triplets_parse_and_refuse_a_wrong_key():
    m = MXFFile(LIBDCP_ENCRYPTED, key=os.urandom(16))
    assert m.encrypted and m.frame_count == 24
    heads, sequences, files = [], [], set()
    for n in range(m.frame_count):
        off, size = m.locate_frame(n)
        t = E.parse_triplet(m.reader.read(off, size))
        heads.append((t.plaintext_offset, t.source_key))
        sequences.append(t.sequence)
        files.add(t.track_file_id)
        assert m.frame_size(n) == t.source_length > 0
    assert set(heads) == {(0, PICTURE_ELEMENT)} and sequences == list(range(1, 25)) and len(files) == 1
    with pytest.raises(EncryptedMedia, match="frame 0: the key does not decrypt"):
        m.frame(0)
    with pytest.raises(EncryptedMedia, match="a KDM is needed"):
        MXFFile(LIBDCP_ENCRYPTED).frame(0)


@pytest.mark.parametrize("fps", dci.DCI_2K.frame_rates)
def test_an_encrypted_frame_at_the_safe_rate_stays_under_clairmetas_safe_average(fps):
    """Issue 51 item 6: the default rate (:data:`dci.FRAME_BITRATE_SAFE`) leaves room for what
    encryption adds (ST 429-6 clause 7): at most 172 bytes a frame over the clear triplet, so
    the encrypted picture stays under 230.1 Mbit/s, below ClairMeta's 245 and asdcplib's 250;
    at the 250 cap the same bytes go over it, as asdcp-info -r says."""
    key, source_key = os.urandom(16), PICTURE_ELEMENT
    for n in range(1000, 1016):           # every CBC padding length, 1 to 16
        triplet = E.encrypt_element(source_key, bytes(n), key, context_id=bytes(16),
                                    track_file_id=bytes(16), sequence=1)
        assert len(triplet) - (16 + 4 + n) <= 172
    safe = dci.bytes_per_frame(dci.FRAME_BITRATE_SAFE, fps)
    triplet = E.encrypt_element(source_key, bytes(safe), key, context_id=bytes(16),
                                track_file_id=bytes(16), sequence=1)
    assert len(triplet) * 8 * fps < 230.1e6 < 245e6
    cap = dci.bytes_per_frame(dci.FRAME_BITRATE, fps)
    assert (cap + 172) * 8 * fps > dci.FRAME_BITRATE
