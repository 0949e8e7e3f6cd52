"""Distribution KDMs: a KDM (SMPTE ST 430-1) to one's own certificate, kept instead of the
content key file, from which KDMs for screens are made.

A DKDM is no other format: DCP-o-matic's and libdcp's DKDM is an ordinary KDM whose recipient
is the distributor's (or the mastering house's) own leaf certificate, usually valid for a long
time. ``cinegpu kdm make --recipient MY_CERT.pem -o DKDM.xml`` makes one; ``cinegpu kdm make
--dkdm DKDM.xml --dkdm-key MY_KEY.pem`` makes KDMs from one, so that the key file need not
travel.

:func:`open_dkdm` reads the DKDM as the player reads a KDM (:mod:`.key_ring`'s checks, with the
same functions): its XML signature (ST 430-3 clause 5.3), its signer's certificate chain now
(ST 430-2 clause 5), and every content key decrypted with the private key (RSA-OAEP, ST 430-1
clause 6.2), each block checked against the message.  What it gives constrains the KDMs made
from it (:func:`check_inside`): their composition is the DKDM's, and their validity window lies
inside the DKDM's (the intersection of its public window and its key blocks' windows).

The keys live in :class:`Dkdm`'s ``keys`` (:class:`.content_keys.TrackKey`, whose ``repr``
leaves the key out); no error here names a key's bytes.  Errors are the security area's:
:class:`~.errors.KdmRefused` for a DKDM that does not unlock or a window it does not allow,
:class:`~.errors.CorruptMedia` for one that breaks the format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone

from cinegpu.media.errors import KdmRefused
from cinegpu.media.security.content_keys import KeyFile, TrackKey
from cinegpu.media.security.kdm import check_chain, check_signature, decrypt_keys, read_kdm

__all__ = ["Dkdm", "check_inside", "open_dkdm"]


@dataclass(frozen=True)
class Dkdm:
    """A DKDM's composition (``cpl_id``, a lower-case UUID; its title and annotation), its
    validity window (aware datetimes, to the second) and its decrypted keys (``repr`` leaves
    them out)."""

    path: str | None
    message_id: str
    cpl_id: str
    content_title: str | None
    annotation: str | None
    not_before: datetime
    not_after: datetime
    keys: tuple[TrackKey, ...] = field(repr=False)

    def key_file(self) -> KeyFile:
        """The keys as a content key file of the DKDM's composition, for
        :func:`.kdm_write.composition_keys` to match against a CPL."""
        return KeyFile(self.cpl_id, self.keys)

    def window(self) -> str:
        return f"{self.not_before.isoformat()} to {self.not_after.isoformat()}"


def open_dkdm(path, private_key, at: datetime | None = None) -> Dkdm:
    """The DKDM at ``path`` (read bounded: :func:`.kdm.read_kdm`), opened with
    ``private_key`` (:func:`.kdm.load_private_key`, the DKDM's recipient's): its signature
    checked, its signer's chain checked at ``at`` (default: now), its keys decrypted and
    checked.  :class:`~.errors.KdmRefused` says what does not hold."""

    at = at or datetime.now(timezone.utc)
    kdm = read_kdm(path)
    name = f"the DKDM {os.path.basename(os.fspath(path))}"
    try:
        check_signature(kdm)
    except KdmRefused as exc:
        raise KdmRefused(path, f"{name} is refused: {exc.reason}") from None
    chain = check_chain(kdm, at)
    if not chain.ok:
        raise KdmRefused(path, f"{name} is refused: its signer's certificate chain does not hold at "
                               f"{at.isoformat(timespec='seconds')}: {'; '.join(chain.problems)}")
    try:
        opened = decrypt_keys(kdm, private_key)
    except KdmRefused as exc:
        raise KdmRefused(path, f"{name} is refused: {exc.reason}") from None
    not_before = max([kdm.not_before] + [k.not_before for k in opened])
    not_after = min([kdm.not_after] + [k.not_after for k in opened])
    if not_after <= not_before:
        raise KdmRefused(path, f"{name}'s keys have no common validity window")
    keys = tuple(TrackKey(k.key_type, k.key_id, k.key) for k in opened)
    return Dkdm(kdm.path, kdm.message_id, kdm.cpl_id, kdm.content_title, kdm.annotation,
                not_before, not_after, keys)


def check_inside(dkdm: Dkdm, not_before: datetime, not_after: datetime) -> None:
    """Refuse (:class:`~.errors.KdmRefused`, one line) a new KDM's window, ``not_before`` to
    ``not_after`` (aware datetimes), that does not lie inside the DKDM's: a KDM made from a
    DKDM gives no more time than the DKDM holds."""
    if not_before < dkdm.not_before or not_after > dkdm.not_after:
        raise KdmRefused(dkdm.path, f"the validity window {not_before.isoformat()} to {not_after.isoformat()} "
                                    f"lies outside the DKDM's, {dkdm.window()}")
