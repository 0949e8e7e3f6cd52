"""The options that give a command the keys of encrypted DCPs (ST 429-6): ``--kdm KDM.xml``
(repeatable) with ``--key recipient.pem``, and ``--keys KEYS.txt`` (the content key file that
``cinegpu master --encrypt`` writes, to preview one's own master).  Keys are read into a
:class:`~cinegpu.media.security.key_ring.KeyRing` only; once any is loaded the process gives up core
dumps (a dump would hold them)."""

from __future__ import annotations

from pathlib import Path

from .args import UsageError

__all__ = ["add_key_args", "key_ring", "no_core_dumps"]


def add_key_args(p) -> None:
    g = p.add_argument_group("encrypted DCPs (SMPTE ST 429-6)")
    g.add_argument("--kdm", action="append", default=[], type=Path, metavar="KDM.xml",
                   help="a KDM for the composition (repeatable); needs --key")
    g.add_argument("--key", type=Path, default=None, metavar="recipient.pem",
                   help="the private key (PEM, unencrypted) of the certificate the KDMs are made for")
    g.add_argument("--keys", action="append", default=[], type=Path, metavar="KEYS.txt",
                   help="a content key file (cinegpu master --encrypt --keys; mode 600): play one's own "
                        "encrypted master without a KDM")


def no_core_dumps() -> None:
    """No core file from this process from now on (RLIMIT_CORE 0): content keys are in its memory."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):       # not allowed here: nothing else to do about it
        pass


def key_ring(args, kdm_dir: Path | None = None, warn=None, key_alone: bool = False):
    """The key ring of ``args.kdm`` / ``args.key`` / ``args.keys`` (and every ``*.xml`` of
    ``kdm_dir``), or None when none is given; a KDM that does not hold is a
    :class:`~cinegpu.media.errors.KdmRefused` saying which and why (one of ``kdm_dir``'s is
    passed to ``warn`` and left out, when ``warn`` is given: a folder may hold old KDMs).
    ``key_alone``: ``--key`` without KDMs is a ring too (the server's, for KDMs uploaded later)."""
    from cinegpu.media.security.content_keys import read_key_file
    from cinegpu.media.errors import MediaError
    from cinegpu.media.security.kdm import load_private_key
    from cinegpu.media.security.key_ring import KeyRing

    kdms = list(args.kdm)
    folder = []
    if kdm_dir is not None:
        if not kdm_dir.is_dir():
            raise UsageError(f"--kdm-dir {kdm_dir}: not a folder")
        folder = sorted(p for p in kdm_dir.iterdir() if p.suffix.lower() == ".xml" and p.is_file())
    if (kdms or kdm_dir is not None) and args.key is None:
        raise UsageError("--kdm needs --key recipient.pem: the private key the KDMs are made for")
    if args.key is not None and kdm_dir is None and not kdms and not key_alone:
        raise UsageError("--key without --kdm: give the KDMs it opens")
    if args.key is None and not kdms and not args.keys:
        return None
    no_core_dumps()
    ring = KeyRing(None if args.key is None else load_private_key(args.key))
    for p in kdms:
        ring.add_kdm_file(p)
    for p in folder:
        try:
            ring.add_kdm_file(p)
        except MediaError as exc:
            if warn is None:
                raise
            warn(f"KDM not loaded: {exc}")
    for p in args.keys:
        ring.add_key_file(read_key_file(p))
    return ring
