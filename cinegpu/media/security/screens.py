"""Screens to make KDMs for: a CSV file in the spirit of DCP-o-matic's cinema and screen
database, the KDMs' file names as DCP-o-matic names them, and the folder they are written to.

The CSV (RFC 4180; UTF-8, a byte-order mark allowed) has a header row naming its columns, in
any order; each further row is one screen:

- ``cinema`` (required): the cinema's name, one line of text;
- ``screen`` (required): the screen's name, one line, unique within its cinema;
- ``certificate`` (required): the screen's recipient certificate (ST 430-2), the leaf that its
  KDMs are encrypted for, usually its media block's security manager (``SM.``): a path to a
  PEM file, relative to the CSV's folder (absolute also allowed), or the PEM itself inline (a
  quoted cell holding ``-----BEGIN CERTIFICATE-----``...).  A PEM holding a chain gives its
  leaf (:func:`.certificates.order_chain`);
- ``trusted_devices`` (optional, may be empty): the screen's other trusted devices for the
  ``DeviceList`` of the formulations that list them (:data:`.kdm_write.FORMULATIONS`),
  separated by ``;``: each an ST 430-2 certificate thumbprint (base64 of 20 bytes, 28
  characters ending in ``=``) or a path to its certificate's PEM, as for ``certificate``;
- ``utc_offset`` (optional, may be empty): the cinema's offset from UTC, as DCP-o-matic keeps
  one per cinema: ``+01:00``, ``-05:30``, ``+0100`` or hours (``+1``), from -12:00 to +14:00
  (:func:`parse_utc_offset`).  The screen's KDM writes its window (``ContentKeysNotValidBefore``
  and ``After``, ST 430-1 xs:dateTime, and the key blocks' times) in that offset
  (``2026-12-01T20:00:00+01:00``): the same instants, only written as the cinema's local time.

Blank rows are skipped; another column name, a missing cell, an empty name, a screen named
twice or two screens whose file names would be the same is a :class:`~.errors.CorruptMedia`
naming the CSV's line; a certificate that cannot be read is the error that says so, with the
CSV's line in front (:func:`read_screens`).  Every file is read through the bounded reader
(:func:`cinegpu.media.files.read_bounded`).

File names (:func:`kdm_file_name`, :func:`zip_file_name`) follow DCP-o-matic's defaults
(``src/lib/config.cc``: ``kdm_filename_format`` ``KDM_%f_%c_%s``, ``kdm_container_name_format``
``KDM_%f_%c``; ``%f`` the film's name, here the CPL's ``ContentTitleText``, ``%c`` the cinema,
``%s`` the screen), with ``.xml`` or ``.zip`` after, each whole name passed through
DCP-o-matic's ``careful_string_filter`` (``src/lib/util.cc``): accents removed (Unicode NFD,
combining marks dropped; ``ł`` to ``l``), then only ``0-9 A-Z a-z - _ % . +`` kept.

:func:`write_kdm_folder` writes the KDMs (or one ZIP per cinema) into a partial folder beside
the destination and renames it into place, so that the destination appears whole or not at all.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import unicodedata
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cryptography import x509

from cinegpu.media.errors import CorruptMedia, MediaError
from cinegpu.media.files import new_partial_folder, read_bounded
from cinegpu.media.security.certificates import order_chain, read_certificates
from cinegpu.media.security.kdm import MAX_KDM_BYTES
from cinegpu.media.security.kdm_write import device_thumbprint

__all__ = ["COLUMNS", "Screen", "careful_name", "kdm_file_name", "parse_utc_offset", "read_screens",
           "write_kdm_folder", "zip_file_name"]

#: the CSV's columns: required, then optional
COLUMNS = ("cinema", "screen", "certificate", "trusted_devices", "utc_offset")
REQUIRED = COLUMNS[:3]
#: a screens file of 10 000 screens with inline certificates is about 20 MB
MAX_SCREENS_BYTES = 32 << 20
MAX_SCREENS = 10_000
#: a cell (an inline PEM chain of a few certificates is a few KB)
MAX_CELL_CHARS = 64 << 10
#: DCP-o-matic's careful_string_filter: the characters a file name keeps
_KEPT = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_%.+")
_THUMBPRINT = re.compile(r"[A-Za-z0-9+/]{27}=")
_PEM = "-----BEGIN CERTIFICATE-----"
#: a UTC offset: sign, then H:MM or HH:MM, HHMM, or hours alone
_OFFSET = re.compile(r"([+-]?)(?:(\d{1,2}):(\d{2})|(\d{2})(\d{2})|(\d{1,2}))")
#: the offsets in use (UTC-12:00, Baker Island, to UTC+14:00, the Line Islands)
OFFSET_RANGE = (timedelta(hours=-12), timedelta(hours=14))


@dataclass(frozen=True)
class Screen:
    """One row of the screens CSV: names, the recipient's leaf certificate, the trusted
    devices' ST 430-2 thumbprints (base64 strings), the row's first ``line`` in the file
    (1 is the header) and the cinema's ``utc_offset`` (None where the cell is absent or empty)."""

    cinema: str
    screen: str
    certificate: x509.Certificate
    trusted_devices: tuple[str, ...]
    line: int
    utc_offset: timedelta | None = None

    def local(self, instant: datetime) -> datetime:
        """``instant`` (aware) written in the cinema's offset (as it is where it has none)."""
        return instant if self.utc_offset is None else instant.astimezone(timezone(self.utc_offset))

    def where(self) -> str:
        """How errors name the row: its line, cinema and screen."""
        return f"line {self.line} ({self.cinema} / {self.screen})"


def read_screens(path) -> tuple[Screen, ...]:
    """The screens of the CSV at ``path`` (the module's docstring says its columns), in file
    order; an error names the CSV and the line of the row at fault."""

    path = Path(path)
    data = read_bounded(path, MAX_SCREENS_BYTES, "screens CSV")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorruptMedia(path, f"not UTF-8 text (byte {exc.start})") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip().lower() for h in next(reader, [])]
    except csv.Error as exc:
        raise CorruptMedia(path, f"line 1: not CSV: {exc}") from None
    _check_header(header, path)
    screens: list[Screen] = []
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader, None)
        except csv.Error as exc:
            raise CorruptMedia(path, f"line {line}: not CSV: {exc}") from None
        if row is None:
            break
        if not any(cell.strip() for cell in row):
            continue
        if len(screens) == MAX_SCREENS:
            raise CorruptMedia(path, f"line {line}: more than {MAX_SCREENS} screens")
        screens.append(_screen(dict(zip(header, row)), len(row), len(header), line, path))
    if not screens:
        raise CorruptMedia(path, "the screens CSV has a header and no screen")
    _check_unique(screens, path)
    return tuple(screens)


def _check_header(header: list[str], path) -> None:
    unknown = [h for h in header if h not in COLUMNS]
    missing = [c for c in REQUIRED if c not in header]
    if unknown or missing or len(set(header)) != len(header):
        raise CorruptMedia(path, f"line 1: the header must name the columns {', '.join(REQUIRED)} and "
                                 f"optionally {', '.join(COLUMNS[3:])}, each once (it has {', '.join(header) or 'none'})")


def _screen(cells: dict, n_cells: int, n_header: int, line: int, path) -> Screen:
    """One row: its cells by column name."""
    if n_cells != n_header:
        raise CorruptMedia(path, f"line {line}: {n_cells} cells, the header names {n_header} columns")
    for column, value in cells.items():
        if len(value) > MAX_CELL_CHARS:
            raise CorruptMedia(path, f"line {line}: the {column} cell has more than {MAX_CELL_CHARS} characters")
    names = {}
    for column in ("cinema", "screen"):
        value = cells[column].strip()
        if not value or any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
            raise CorruptMedia(path, f"line {line}: the {column} name must be one line of text, not "
                                     f"{'empty' if not value else repr(value[:40])}")
        names[column] = value
    where = f"line {line} ({names['cinema']} / {names['screen']})"
    folder = path.parent
    if not cells["certificate"].strip():
        raise CorruptMedia(path, f"{where}: no certificate")
    leaf = _leaf(cells["certificate"], folder, path, where)
    trusted = tuple(_thumbprint(t.strip(), folder, path, where)
                    for t in cells.get("trusted_devices", "").split(";") if t.strip())
    offset = None
    if cells.get("utc_offset", "").strip():
        try:
            offset = parse_utc_offset(cells["utc_offset"])
        except ValueError as exc:
            raise CorruptMedia(path, f"{where}, column utc_offset: {exc}") from None
    return Screen(names["cinema"], names["screen"], leaf, trusted, line, offset)


def parse_utc_offset(text: str) -> timedelta:
    """A UTC offset: ``+01:00``, ``-05:30``, ``+0100``, ``+1`` (hours; the sign may be left off
    for a positive offset), from -12:00 to +14:00; ``ValueError`` saying what is wanted."""
    t = text.strip()
    m = _OFFSET.fullmatch(t)
    offset = None
    if m:
        sign, colon_h, colon_m, bare_h, bare_m, hours_only = m.groups()
        hours, minutes = (colon_h, colon_m) if colon_h else (bare_h, bare_m) if bare_h else (hours_only, "0")
        if int(minutes) < 60:
            offset = timedelta(hours=int(hours), minutes=int(minutes)) * (-1 if sign == "-" else 1)
    if offset is None or not OFFSET_RANGE[0] <= offset <= OFFSET_RANGE[1]:
        raise ValueError(f"{t[:40]!r} is not a UTC offset from -12:00 to +14:00 "
                         f"(want +HH:MM, -HH:MM, +HHMM or hours, such as +01:00, -05:30, +0100, +1)")
    return offset


def _leaf(cell: str, folder: Path, path, where: str) -> x509.Certificate:
    """The leaf certificate of ``cell``: an inline PEM, or a PEM file relative to ``folder``."""
    text = cell.strip()
    try:
        if _PEM in text:
            try:
                certs = tuple(x509.load_pem_x509_certificates(text.encode("ascii")))
            except (ValueError, UnicodeEncodeError):
                raise CorruptMedia(path, "the inline certificate is not PEM") from None
            return order_chain(certs, path)[0]
        file = folder / text
        return order_chain(read_certificates(file), file)[0]
    except MediaError as exc:
        raise type(exc)(path, f"{where}: {exc.reason if exc.path in (None, os.fspath(path)) else exc}") from None


def _thumbprint(item: str, folder: Path, path, where: str) -> str:
    """A trusted device's ST 430-2 certificate thumbprint: ``item`` itself, or its
    certificate's (a PEM file relative to ``folder``)."""
    if _THUMBPRINT.fullmatch(item):
        return item
    return device_thumbprint(_leaf(item, folder, path, where + ", trusted device"), path)


def _check_unique(screens: list[Screen], path) -> None:
    seen: dict = {}
    names: dict = {}
    for s in screens:
        key = (s.cinema, s.screen)
        if key in seen:
            raise CorruptMedia(path, f"{s.where()}: the same screen as line {seen[key].line}")
        seen[key] = s
        name = kdm_file_name("", s.cinema, s.screen).lower()
        if name in names:
            raise CorruptMedia(path, f"{s.where()}: its KDM's file name would be that of line "
                                     f"{names[name].line} ({names[name].cinema} / {names[name].screen}): "
                                     f"file names keep only 0-9 A-Z a-z - _ % . +")
        names[name] = s


def careful_name(text: str) -> str:
    """DCP-o-matic's ``careful_string_filter``: accents removed (NFD, combining marks dropped,
    NFC; ``ł`` and ``Ł`` to ``l`` and ``L``), then only ``0-9 A-Z a-z - _ % . +`` kept."""
    bare = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
    bare = unicodedata.normalize("NFC", bare).replace("ł", "l").replace("Ł", "L")
    return "".join(ch for ch in bare if ch in _KEPT)


def kdm_file_name(title: str, cinema: str, screen: str) -> str:
    """DCP-o-matic's default KDM file name, ``KDM_%f_%c_%s.xml`` filtered by
    :func:`careful_name` (``title``: the CPL's ContentTitleText)."""
    return careful_name(f"KDM_{title}_{cinema}_{screen}.xml")


def zip_file_name(title: str, cinema: str) -> str:
    """DCP-o-matic's default KDM container (ZIP) name, ``KDM_%f_%c.zip``, filtered."""
    return careful_name(f"KDM_{title}_{cinema}.zip")


def write_kdm_folder(out, kdms, title: str, zip_by_cinema: bool = False) -> list[Path]:
    """Write ``kdms`` (pairs of a :class:`Screen` and its KDM's bytes) into the new folder
    ``out`` (absent, or an empty folder, which is replaced), each as :func:`kdm_file_name`
    names it, or with ``zip_by_cinema`` one ZIP per cinema (:func:`zip_file_name`) holding its
    screens' KDMs.  Everything is written into a partial folder beside ``out`` (``.NAME.partial-*``),
    each file read back and compared with what was made, then renamed to ``out``; on any
    failure the partial folder is removed and ``out`` is as it was.  Returns the files written,
    as they are named once in place."""

    out = Path(out)
    kdms = list(kdms)
    if zip_by_cinema:
        _check_zip_names([s for s, _ in kdms], title, out)
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise MediaError(out, "exists already: name a new folder (or an empty one) for the KDMs")
    prefix = f".{out.name}.partial-"
    try:
        tmp = new_partial_folder(out.parent, prefix)
    except OSError as exc:
        raise MediaError(out, f"cannot make the folder: {exc.strerror or exc}") from None
    try:
        names = _fill(tmp, kdms, title, zip_by_cinema)
        os.replace(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise MediaError(out, f"cannot write the KDMs: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / n for n in names]


def _check_zip_names(screens, title: str, out) -> None:
    by_name: dict[str, Screen] = {}
    for s in screens:
        other = by_name.setdefault(zip_file_name(title, s.cinema).lower(), s)
        if other.cinema != s.cinema:
            raise MediaError(out, f"the ZIP of cinema {s.cinema!r} ({s.where()}) would have the name of "
                                  f"{other.cinema!r}'s ({other.where()}): file names keep only 0-9 A-Z a-z - _ % . +")


def _fill(tmp: Path, kdms: list, title: str, zip_by_cinema: bool) -> list[str]:
    """Write the files into ``tmp``, each flushed to disk and read back; their names."""
    names = []
    if not zip_by_cinema:
        for screen, data in kdms:
            names.append(_write(tmp / kdm_file_name(title, screen.cinema, screen.screen), data))
            _compare(tmp / names[-1], data, MAX_KDM_BYTES)
        return names
    cinemas: dict[str, list] = {}
    for screen, data in kdms:
        cinemas.setdefault(screen.cinema, []).append((screen, data))
    for cinema, members in cinemas.items():
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
            for screen, data in members:
                z.writestr(kdm_file_name(title, cinema, screen.screen), data)
        names.append(_write(tmp / zip_file_name(title, cinema), buffer.getvalue()))
        _compare(tmp / names[-1], buffer.getvalue(), len(buffer.getvalue()))
    return names


def _write(path: Path, data: bytes) -> str:
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return path.name


def _compare(path: Path, data: bytes, limit: int) -> None:
    """The file as written, read back through the bounded reader, must be what was made (and
    checked: :func:`.kdm_write.make_kdm` reads every KDM back before it returns it)."""
    if read_bounded(path, limit, "KDM") != data:
        raise MediaError(path, "the file read back differs from what was written")
