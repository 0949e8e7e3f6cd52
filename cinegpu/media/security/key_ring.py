"""The content keys a player holds: a key ring built from KDMs (SMPTE ST 430-1) opened with the
recipient's private key, and from content key files (:mod:`.content_keys`, the mastering side's:
for previewing one's own encrypted master).

A KDM joins the ring only when it holds (:meth:`KeyRing.add_kdm`): its XML signature (ST 430-3
clause 5.3), its signer's certificate chain at the ring's time (ST 430-2 clause 5), and every
content key decrypted with the private key (ST 430-1 clause 6.2); otherwise
:class:`~.errors.KdmRefused` says which KDM and why.  The window is checked when a composition is
opened (:meth:`KeyRing.for_composition`), against the ring's clock (``now``, a constructor
argument, so that tests choose the time): a KDM may be loaded before its screening.

The keys' bytes stay inside this module's objects and the track files' readers: no ``repr``,
error message, log line or public listing (:meth:`KdmInfo.to_json`) names them.  The private key
is held only to open KDMs added later (the server's upload); it is never listed either.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from cinegpu.media.security.content_keys import KeyFile
from cinegpu.media.errors import EncryptedMedia, KdmRefused
from cinegpu.media.security.kdm import ContentKey, Kdm, TypedKeyId, check_chain, check_signature, check_window, decrypt_keys, read_kdm

__all__ = ["CompositionKeys", "KdmInfo", "KeyRing", "check_track_key", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class KdmInfo:
    """The public fields of a KDM in the ring (ST 430-1 clause 6: what anyone reading the
    message sees anyway); never a key."""

    message_id: str
    path: str | None
    cpl_id: str
    content_title: str | None
    annotation: str | None
    not_before: datetime
    not_after: datetime
    recipient_subject: str | None
    key_ids: tuple[TypedKeyId, ...]

    @classmethod
    def of(cls, kdm: Kdm) -> "KdmInfo":
        return cls(kdm.message_id, kdm.path, kdm.cpl_id, kdm.content_title, kdm.annotation,
                   kdm.not_before, kdm.not_after, kdm.recipient_subject, kdm.key_ids)

    def name(self) -> str:
        """How messages name the KDM: its file (or message id) and its composition's title."""
        title = f" ({self.content_title})" if self.content_title else ""
        return f"KDM {os.path.basename(self.path) if self.path else self.message_id}{title}"

    def window(self) -> str:
        return f"{self.not_before.isoformat()} to {self.not_after.isoformat()}"

    def to_json(self) -> dict:
        return {"message_id": self.message_id, "cpl_id": self.cpl_id, "content_title": self.content_title,
                "annotation": self.annotation, "not_before": self.not_before.isoformat(),
                "not_after": self.not_after.isoformat(), "recipient": self.recipient_subject,
                "keys": [{"type": t.key_type, "id": t.key_id} for t in self.key_ids]}


@dataclass(frozen=True)
class _Held:
    """A KDM that holds, with its decrypted keys (left out of ``repr``)."""

    info: KdmInfo
    kdm: Kdm = field(repr=False)
    keys: tuple[ContentKey, ...] = field(repr=False)


class CompositionKeys:
    """The keys that open one composition's track files, by key id (the CPL's ``KeyId``).

    ``where`` names, per key id, what gave it (a KDM or a key file), for messages."""

    def __init__(self, cpl_id: str, title: str | None, keys: dict[str, bytes], where: dict[str, str]):
        self.cpl_id, self.title = cpl_id, title
        self._keys, self._where = dict(keys), dict(where)

    def __repr__(self) -> str:
        return f"<CompositionKeys {self.cpl_id}: {len(self._keys)} keys>"

    def __contains__(self, key_id: str) -> bool:
        return key_id in self._keys

    def where(self, key_id: str) -> str:
        return self._where.get(key_id, "no KDM")

    def key(self, key_id: str | None, *, kind: str, asset_id: str, reel_id: str, path=None) -> bytes:
        """The key of the track file ``asset_id`` (a ``kind`` asset of reel ``reel_id``), which the
        CPL says is encrypted under ``key_id``; :class:`KdmRefused` naming the asset and the reel
        when no KDM (or key file) held for this composition gives it."""
        if key_id is None:
            raise KdmRefused(path, f"the {kind} track file of asset {asset_id} (reel {reel_id}) is encrypted, "
                                   f"but the CPL gives the asset no KeyId")
        try:
            return self._keys[key_id]
        except KeyError:
            raise KdmRefused(path, f"no KDM or key file for composition {self.cpl_id} holds key {key_id}, "
                                   f"which the {kind} asset {asset_id} of reel {reel_id} is encrypted "
                                   f"with (held: {len(self._keys)} keys)") from None


class KeyRing:
    """Content keys by key id, from KDMs and key files (see the module docstring).

    ``private_key``: the recipient's RSA key (:func:`~.kdm.load_private_key`), needed to add
    KDMs; ``now``: the clock (aware datetimes) the chains and windows are checked against.
    Safe to use from several threads (the server adds KDMs while compositions are opened)."""

    def __init__(self, private_key=None, *, now: Callable[[], datetime] = utc_now):
        self._private_key = private_key
        self._now = now
        self._lock = threading.Lock()
        self._kdms: list[_Held] = []
        self._files: list[KeyFile] = []

    def __repr__(self) -> str:
        with self._lock:
            return f"<KeyRing {len(self._kdms)} KDMs, {len(self._files)} key files>"

    @property
    def can_open_kdms(self) -> bool:
        return self._private_key is not None

    def add_kdm(self, kdm: Kdm) -> KdmInfo:
        """Check ``kdm`` (signature, then its signer's chain at the ring's time) and decrypt its
        keys with the private key; it replaces a KDM of the same message id.  Its public fields."""
        info = KdmInfo.of(kdm)
        if self._private_key is None:
            raise KdmRefused(kdm.path, f"{info.name()}: no private key was given (--key) to open its keys")
        try:
            check_signature(kdm)
        except KdmRefused as exc:
            raise KdmRefused(kdm.path, f"{info.name()} is refused: {exc.reason}") from None
        at = self._now()
        chain = check_chain(kdm, at)
        if not chain.ok:
            raise KdmRefused(kdm.path, f"{info.name()} is refused: its signer's certificate chain does not "
                                       f"hold at {at.isoformat(timespec='seconds')}: {'; '.join(chain.problems)}")
        try:
            keys = tuple(decrypt_keys(kdm, self._private_key))
        except KdmRefused as exc:
            raise KdmRefused(kdm.path, f"{info.name()} is refused: {exc.reason}") from None
        held = _Held(info, kdm, keys)
        with self._lock:
            self._kdms = [h for h in self._kdms if h.info.message_id != info.message_id] + [held]
        return info

    def add_kdm_file(self, path) -> KdmInfo:
        """:meth:`add_kdm` of the KDM file at ``path``."""
        return self.add_kdm(read_kdm(path))

    def add_key_file(self, keys: KeyFile) -> None:
        """Add a content key file's keys (for its composition, or for any when it names none)."""
        with self._lock:
            self._files.append(keys)

    def kdms(self) -> list[KdmInfo]:
        """The public fields of the KDMs held, in the order they were added."""
        with self._lock:
            return [h.info for h in self._kdms]

    def __len__(self) -> int:
        with self._lock:
            return len(self._kdms) + len(self._files)

    def for_composition(self, cpl_id: str, title: str | None = None, path=None) -> CompositionKeys:
        """The keys for composition ``cpl_id`` now: those of its KDMs whose window holds the
        ring's time, and of the key files for it.  :class:`KdmRefused` when there are none: no
        KDM for this composition (naming the compositions the ring's KDMs are for), or each of
        its KDMs outside its window (giving the window)."""
        at = self._now()
        with self._lock:
            held, files = list(self._kdms), list(self._files)
        keys: dict[str, bytes] = {}
        where: dict[str, str] = {}
        for f in files:
            if f.cpl_id in (None, cpl_id):
                for k in f.keys:
                    keys[k.key_id], where[k.key_id] = k.key, "a key file"
        mine = [h for h in held if h.info.cpl_id == cpl_id]
        refusals = []
        for h in mine:
            try:
                check_window(h.kdm, cpl_id, at)
            except KdmRefused as exc:
                refusals.append(f"{h.info.name()} is valid from {h.info.window()}, not at "
                                f"{at.isoformat(timespec='seconds')} ({exc.reason})")
                continue
            for k in h.keys:
                keys[k.key_id], where[k.key_id] = k.key, h.info.name()
        if keys:
            return CompositionKeys(cpl_id, title, keys, where)
        named = f"composition {cpl_id}" + (f" ({title})" if title else "")
        if refusals:
            raise KdmRefused(path, f"no KDM opens {named} now: {'; '.join(refusals)}")
        others = "; ".join(f"{h.info.cpl_id} ({h.info.content_title or 'no title'})" for h in held)
        told = [f"the KDMs given are for {others}" if others else "no KDM was given"]
        if files:
            told.append(f"the key files given are for {', '.join(sorted({str(f.cpl_id) for f in files}))}")
        raise KdmRefused(path, f"no KDM for {named}; {'; '.join(told)}")

    def candidate_keys(self, key_type: str | None = None) -> list[tuple[str, bytes, str]]:
        """(key id, key, where from) of every key usable now (KDMs in their window, key files),
        of ``key_type`` (MDIK, MDAK, MDSK) when given: for a bare track file, whose KeyId no
        CPL gives."""
        at = self._now()
        with self._lock:
            held, files = list(self._kdms), list(self._files)
        out = [(k.key_type, k.key_id, k.key, "a key file") for f in files for k in f.keys]
        for h in held:
            if h.info.not_before <= at <= h.info.not_after:
                out += [(k.key_type, k.key_id, k.key, h.info.name()) for k in h.keys]
        return [(i, k, w) for t, i, k, w in out if key_type is None or t == key_type]


def check_track_key(mxf, key: bytes, *, kind: str, asset_id: str, reel_id: str, key_id: str, where: str) -> None:
    """Raise :class:`KdmRefused` unless ``key`` opens the track file ``mxf`` (the check value of
    its first encrypted triplet, ST 429-6 clause 7), naming the asset, the reel, the key id and
    where the key came from."""
    try:
        mxf.check_key(key)
    except EncryptedMedia:
        raise KdmRefused(mxf.path, f"the key {key_id} ({where}) does not decrypt the {kind} asset {asset_id} "
                                   f"of reel {reel_id}: its check value differs (ST 429-6)") from None
