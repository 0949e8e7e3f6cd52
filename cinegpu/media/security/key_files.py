"""Private key files on disk: read only when no one else could read or replace them, and
folders for them made private whatever the umask.

OpenSSH's rules for its keys (``sshkey_perm_ok``) and its StrictModes:

- :func:`check_private_file`: a private key (a PEM RSA key, a content key file) must be a
  regular file that neither its group nor others may read or write (``mode & 0o077`` is 0),
  in a folder that neither its group nor others may write, unless the folder has the sticky
  bit (``/tmp``: no one may rename or remove another's file there); else an
  :class:`~cinegpu.media.errors.ExposedKey` names the file, its mode in octal and the
  ``chmod`` that fixes it.  A key others could read may be a copy already; a key in a folder
  others may write may be another's key put in its place.
- :func:`read_private_file`: the bytes of such a file, checked on the open file (``fstat``),
  so that what is checked is what is read.
- :func:`make_private_folder`: a folder for keys and every parent it has to make, each mode
  0700 whatever the umask (``mkdir`` then ``chmod``: the umask masks ``mkdir``'s mode).
  A file in it is written 0600 by :func:`cinegpu.media.files.create_new_file`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cinegpu.media.errors import ExposedKey, MediaError
from cinegpu.media.files import read_bounded

__all__ = ["check_private_file", "make_private_folder", "read_private_file"]

#: mode bits a private key file must not have: read, write, execute by group and others
FILE_OPEN_BITS = 0o077
#: mode bits its folder must not have (unless sticky): write by group and others
FOLDER_OPEN_BITS = 0o022


def check_private_file(path, st: os.stat_result | None = None, what: str = "private key") -> None:
    """:class:`~cinegpu.media.errors.ExposedKey` unless ``path`` (``st``: its ``fstat``, when
    the caller has it open; else it is ``stat``-ed) is a regular file only its owner may read
    or write, in a folder (the one named and, for a link, its target's) that neither group nor
    others may write, or that is sticky.  ``what`` names the file in the message."""

    path = Path(path)
    try:
        st = os.stat(path) if st is None else st
    except OSError as exc:
        raise MediaError(path, f"cannot read the {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ExposedKey(path, f"the {what} is not a regular file; give the path of the {what} itself")
    mode = stat.S_IMODE(st.st_mode)
    if mode & FILE_OPEN_BITS:
        raise ExposedKey(path, f"the {what} is open to others (mode {mode:03o}): others may have read it; "
                               f"make it private with: chmod 600 {path}")
    folders = dict.fromkeys((path.absolute().parent, Path(os.path.realpath(path)).parent))
    for folder in folders:
        try:
            fmode = os.stat(folder).st_mode
        except OSError as exc:
            raise MediaError(folder, f"cannot read the {what}'s folder: {exc.strerror or exc}") from None
        if fmode & FOLDER_OPEN_BITS and not fmode & stat.S_ISVTX:
            raise ExposedKey(path, f"the {what}'s folder {folder} may be written by others (mode "
                                   f"{stat.S_IMODE(fmode):03o}): another's key may have been put in its "
                                   f"place; make it private with: chmod 700 {folder}")


def read_private_file(path, limit: int, what: str = "private key") -> bytes:
    """The bytes of the private file ``path`` (at most ``limit`` of them), read through the
    bounded reader (:func:`cinegpu.media.files.read_bounded`) after :func:`check_private_file`
    on the open file: a FIFO or a device is refused, not waited on or read."""

    return read_bounded(path, limit, what, check=lambda p, st: check_private_file(p, st, what))


def make_private_folder(path, what: str = "folder") -> Path:
    """The folder ``path``, made if absent with every missing parent, each made mode 0700
    whatever the umask.  A folder there already is kept as it is, unless group or others may
    write it (and it is not sticky): :class:`~cinegpu.media.errors.ExposedKey`, since keys
    written there could be replaced."""

    path = Path(path)
    missing = []
    p = path.absolute()
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    try:
        for p in reversed(missing):
            try:
                p.mkdir(mode=0o700)
            except FileExistsError:     # made meanwhile by another: checked below as any other
                continue
            os.chmod(p, 0o700)          # mkdir's mode is masked by the umask: this one is not
        fmode = path.stat().st_mode
    except OSError as exc:
        raise MediaError(path, f"cannot make the {what}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(fmode):
        raise MediaError(path, f"not a folder: the {what} cannot be made there")
    if fmode & FOLDER_OPEN_BITS and not fmode & stat.S_ISVTX:
        raise ExposedKey(path, f"the {what} may be written by others (mode {stat.S_IMODE(fmode):03o}), who "
                               f"could replace the keys written there; make it private with: chmod 700 {path}")
    return path
