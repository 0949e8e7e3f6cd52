"""Whole small files the media layer reads and writes.

- :func:`read_bounded`: every whole file a user names (a codestream, a KDM, a key or certificate,
  an XML document, an SRT file, a font, a subtitle resource), never more than a bound on its size,
  whatever ``stat`` says (a device or a pipe says 0 bytes);
- :func:`create_new_file`: a file that must not exist yet (a private key, a key file), created
  with its final mode (e.g. 600) so that it is never readable by others, not even for a moment;
- :func:`replace_atomically`: a file that appears whole or not at all (a KDM), through a
  temporary file in the same folder renamed into place;
- :func:`new_partial_folder`: a folder being filled (a package) before it is renamed into
  place, with the mode ``mkdir`` gives it (the umask's), not ``mkdtemp``'s 0700.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path

from cinegpu.media.errors import MediaError, UnsupportedMedia

__all__ = ["create_new_file", "new_partial_folder", "read_bounded", "replace_atomically"]

#: names :func:`new_partial_folder` tries before it gives up (each taken already)
FOLDER_TRIES = 100


def read_bounded(path, limit: int, what: str, hint: str = "", check=None) -> bytes:
    """The bytes of ``path``, a file a user named (``what`` says what kind, e.g. "KDM"): at
    most ``limit`` bytes, else :class:`~.errors.UnsupportedMedia` naming the file and the limit;
    :class:`~.errors.MediaError` naming the ``OSError`` when it cannot be read.

    The size is not taken on trust: a device (``/dev/zero``) or a pipe says 0 bytes, so at most
    ``limit + 1`` bytes are read whatever ``stat`` says (a regular file larger than ``limit`` is
    refused before a byte is read).  A folder is refused by name.  ``hint`` ends the message of a
    file too large (e.g. how large real ones are).  ``check(path, st)``, where given, is
    called with the ``fstat`` of the file as opened (without blocking, so that a pipe with no
    writer is not waited on) before a byte is read: what it checks is what is read."""
    p = Path(path)
    bound = f"{limit} bytes{f' ({limit >> 20} MiB)' if limit >= 1 << 20 and limit % (1 << 20) == 0 else ''}"
    hint = f"; {hint}" if hint else ""
    try:
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | (os.O_NONBLOCK if check else 0)
        with os.fdopen(os.open(p, flags), "rb") as f:
            st = os.fstat(f.fileno())
            if check is not None:
                check(p, st)
            if stat.S_ISDIR(st.st_mode):
                raise MediaError(p, "a folder, not a file")
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise UnsupportedMedia(p, f"{what} of {st.st_size} bytes, more than the {bound} cinegpu "
                                          f"reads{hint}")
            data = f.read(limit + 1)
    except IsADirectoryError:
        raise MediaError(p, "a folder, not a file") from None
    except OSError as exc:
        raise MediaError(p, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        kind = "" if stat.S_ISREG(st.st_mode) else " (not a regular file: a device or a pipe?)"
        raise UnsupportedMedia(p, f"{what} of more than the {bound} cinegpu reads{kind}{hint}")
    return data


def create_new_file(path, data: bytes, mode: int, what: str, exists: str = "") -> Path:
    """Write ``data`` to a new file at ``path``, created with ``mode`` (``O_EXCL``: an existing
    file is a :class:`~.errors.MediaError`, ``exists`` saying why it is kept), flushed to disk;
    on a failure to write, the partial file is removed."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise MediaError(path, f"the {what} exists already{'; ' + exists if exists else ''}") from None
    except OSError as exc:
        raise MediaError(path, f"cannot create the {what}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)         # the umask may have narrowed it; never wider than asked
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise MediaError(path, f"cannot write the {what}: {exc.strerror or exc}") from None
    return path


def replace_atomically(path, data: bytes, what: str, overwrite: bool = False, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, flushed, then
    renamed into place, so that ``path`` never holds a partial file.  Without ``overwrite`` an
    existing ``path`` is a :class:`~.errors.MediaError`, checked atomically (a hard link, which
    fails when the name is taken; a rename where the file system has no links)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise MediaError(path, f"cannot create the {what}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise MediaError(path, f"the {what} exists already (--force replaces it)") from None
            except OSError:             # no hard links here: check, then rename
                if path.exists():
                    raise MediaError(path, f"the {what} exists already (--force replaces it)") from None
                os.replace(tmp, path)
    except OSError as exc:
        raise MediaError(path, f"cannot write the {what}: {exc.strerror or exc}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def new_partial_folder(parent, prefix: str) -> Path:
    """A new, empty folder ``prefix`` + a random suffix in ``parent``, made as ``mkdir`` makes
    one (mode 0777 less the umask: a package's folder is as readable as the user's other
    folders once it is renamed into place); ``OSError`` as ``mkdir`` raises it."""
    for _ in range(FOLDER_TRIES):
        path = Path(parent) / f"{prefix}{secrets.token_hex(4)}"
        try:
            path.mkdir(mode=0o777)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{parent}: no free name {prefix}* after {FOLDER_TRIES} tries")
