"""Content keys kept by the mastering side: the file ``cinegpu master --encrypt`` writes and
``cinegpu kdm make --keys`` reads.

An encrypted DCP's track files are each encrypted (SMPTE ST 429-6) with their own AES-128 key,
named in the CPL by its ``KeyId``; the keys themselves travel only inside KDMs (ST 430-1). Until
KDMs are made, the keys live in one file the user names, created with file mode 600 (owner
read/write only), one key per line::

    # cinegpu content keys: anyone holding this file can decrypt the composition
    cpl urn:uuid:<the CPL's id>
    MDIK urn:uuid:<key id> <32 hex digits>
    MDAK urn:uuid:<key id> <32 hex digits>

The key types are ST 430-1's (MDIK picture, MDAK sound, MDSK subtitles). A :class:`TrackKey`'s
``repr`` leaves the key out; no error raised here names a key's bytes.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from cinegpu.media.errors import CorruptMedia
from cinegpu.media.files import create_new_file
from cinegpu.media.security.key_files import read_private_file

__all__ = ["KEY_TYPES", "KeyFile", "TrackKey", "new_track_key", "read_key_file", "write_key_file"]

#: ST 430-1 key types a composition's track files are encrypted under, by CPL asset kind
KEY_TYPES = {"picture": "MDIK", "stereo-picture": "MDIK", "sound": "MDAK", "subtitle": "MDSK",
             "caption": "MDSK"}
MAX_KEY_FILE_BYTES = 1 << 20
AES_KEY_BYTES = 16


@dataclass(frozen=True)
class TrackKey:
    """One track file's content key: its ST 430-1 ``key_type``, its ``key_id`` (a lower-case
    UUID without ``urn:uuid:``, the CPL's ``KeyId``) and the 16-byte AES ``key``."""

    key_type: str
    key_id: str
    key: bytes = field(repr=False)


@dataclass(frozen=True)
class KeyFile:
    """A key file's contents: the composition (``cpl_id``, lower-case UUID, or None) and its keys."""

    cpl_id: str | None
    keys: tuple[TrackKey, ...]

    def by_id(self) -> dict[str, TrackKey]:
        return {k.key_id: k for k in self.keys}


def new_track_key(key_type: str) -> TrackKey:
    """A fresh key (16 bytes from the operating system's CSPRNG) with a fresh random key id."""
    if key_type not in set(KEY_TYPES.values()):
        raise ValueError(f"key type {key_type!r} is none of {sorted(set(KEY_TYPES.values()))}")
    return TrackKey(key_type, str(uuid.uuid4()), os.urandom(AES_KEY_BYTES))


def write_key_file(path, keys, cpl_id: str | None = None) -> Path:
    """Write ``keys`` (TrackKeys) for composition ``cpl_id`` to a new file at ``path``, mode 600
    from its creation (never readable by others, not even for a moment). An existing file is
    not overwritten (:class:`MediaError`): it may hold the only copy of other keys."""
    path = Path(path)
    lines = ["# cinegpu content keys: anyone holding this file can decrypt the composition"]
    if cpl_id:
        lines.append(f"cpl urn:uuid:{_uuid(cpl_id, path, 'cpl')}")
    for k in keys:
        if len(k.key) != AES_KEY_BYTES:
            raise ValueError(f"key {k.key_id} is not {AES_KEY_BYTES} bytes")
        lines.append(f"{k.key_type} urn:uuid:{_uuid(k.key_id, path, k.key_type)} {k.key.hex()}")
    data = ("\n".join(lines) + "\n").encode("ascii")
    return create_new_file(path, data, 0o600, "key file",
                           "name a new file (it may hold the only copy of other keys)")


def read_key_file(path) -> KeyFile:
    """Parse a key file (:func:`write_key_file`'s format). A file that others may read is
    refused: keys must not lie open on a shared machine (:func:`.key_files.read_private_file`:
    nor in a folder others may write)."""
    path = Path(path)
    text = read_private_file(path, MAX_KEY_FILE_BYTES, "key file")
    try:
        lines = text.decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise CorruptMedia(path, "not a cinegpu key file (not ASCII text)") from None
    cpl_id, keys, seen = None, [], set()
    for n, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "cpl" and len(words) == 2 and cpl_id is None:
            cpl_id = _uuid(words[1], path, f"line {n}")
            continue
        if len(words) != 3 or words[0] not in set(KEY_TYPES.values()):
            raise CorruptMedia(path, f"line {n}: expected 'TYPE urn:uuid:KEYID HEXKEY' "
                                     f"(TYPE one of MDIK, MDAK, MDSK)")
        key_id = _uuid(words[1], path, f"line {n}")
        try:
            key = bytes.fromhex(words[2])
        except ValueError:
            key = b""
        if len(key) != AES_KEY_BYTES:
            raise CorruptMedia(path, f"line {n}: the key of {key_id} is not {AES_KEY_BYTES * 2} hex digits")
        if key_id in seen:
            raise CorruptMedia(path, f"line {n}: key id {key_id} is listed twice")
        seen.add(key_id)
        keys.append(TrackKey(words[0], key_id, key))
    if not keys:
        raise CorruptMedia(path, "the key file holds no keys")
    return KeyFile(cpl_id, tuple(keys))


def _uuid(text: str, path, where: str) -> str:
    t = text.removeprefix("urn:uuid:")
    try:
        return str(uuid.UUID(t))
    except ValueError:
        raise CorruptMedia(path, f"{where}: {text[:60]!r} is not a UUID") from None
