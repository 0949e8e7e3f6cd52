"""The content key file of ``cinegpu master --encrypt`` (:mod:`cinegpu.media.security.content_keys`)."""

import os
import stat

import pytest

from cinegpu.media import MediaError
from cinegpu.media.security.content_keys import KeyFile, TrackKey, new_track_key, read_key_file, write_key_file
from cinegpu.media.errors import CorruptMedia

CPL = "d3b0a6f2-59b4-4c8e-9d43-2b1f0e1c7a11"


def test_keys_round_trip_with_mode_600_and_never_show_in_repr(tmp_path):
    keys = [new_track_key("MDIK"), new_track_key("MDAK")]
    old = os.umask(0)           # a permissive umask must not widen the file
    try:
        path = write_key_file(tmp_path / "keys.txt", keys, cpl_id="urn:uuid:" + CPL.upper())
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    back = read_key_file(path)
    assert back == KeyFile(CPL, tuple(keys))
    assert back.by_id()[keys[1].key_id].key == keys[1].key
    assert keys[0].key.hex() not in repr(back) and keys[0].key.hex() not in str(keys[0])
    assert len({k.key for k in keys}) == 2 and len({k.key_id for k in keys}) == 2


def test_an_existing_key_file_is_never_overwritten(tmp_path):
    path = write_key_file(tmp_path / "keys.txt", [new_track_key("MDIK")])
    before = path.read_bytes()
    with pytest.raises(MediaError, match="exists already"):
        write_key_file(path, [new_track_key("MDIK")])
    assert path.read_bytes() == before


def test_a_key_file_open_to_others_is_refused(tmp_path):
    path = write_key_file(tmp_path / "keys.txt", [new_track_key("MDSK")])
    path.chmod(0o644)
    with pytest.raises(MediaError, match="open to others"):
        read_key_file(path)


@pytest.mark.parametrize("body, match", [
    ("MDIK urn:uuid:nope 00112233445566778899aabbccddeeff\n", "not a UUID"),
    (f"MDIK urn:uuid:{CPL} 0011\n", "32 hex digits"),
    (f"XXXX urn:uuid:{CPL} 00112233445566778899aabbccddeeff\n", "expected"),
    (f"MDIK urn:uuid:{CPL} 00112233445566778899aabbccddeeff\n" * 2, "listed twice"),
    ("# only a comment\n", "no keys"),
    ("\xe9\n", "not ASCII"),
])
def test_damaged_key_files_name_the_line_and_never_the_key(tmp_path, body, match):
    path = tmp_path / "keys.txt"
    path.write_bytes(body.encode("latin-1"))
    path.chmod(0o600)
    with pytest.raises(CorruptMedia, match=match) as e:
        read_key_file(path)
    assert "00112233445566778899aabbccddeeff" not in str(e.value)


def test_new_keys_refuse_unknown_types():
    with pytest.raises(ValueError):
        new_track_key("FMIK")
    assert isinstance(new_track_key("MDIK"), TrackKey)
