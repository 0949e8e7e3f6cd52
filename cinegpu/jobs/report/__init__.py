"""A package's QC report (``cinegpu check PACKAGE --report R.html``): one self-contained HTML
page and its JSON twin (``R.json``, the same figures), per composition, reel and track: the
picture's frame sizes and bit rate against DCI's cap, the sound's loudness (ITU-R BS.1770-4,
EBU R 128) and true peak, the subtitle and caption cues, thumbnails, and the check's verdicts;
written by ``cinegpu master --report R.html``, also each frame's PSNR against the source
(:mod:`.psnr`).

:mod:`.gather` collects the figures, :mod:`.plots` draws them (matplotlib), :mod:`.html` lays
out the page.  matplotlib and scipy are optional (``pip install 'cinegpu[report]'``):
:func:`missing` says, before any work, what is absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

from cinegpu.media.files import replace_atomically

__all__ = ["INSTALL", "check_target", "json_path", "missing", "write_report"]

#: What installs the report's dependencies.
INSTALL = "pip install 'cinegpu[report]'"
#: The report's optional modules (matplotlib: plots; scipy: the loudness meter's filters).
NEEDS = ("matplotlib", "scipy")


def missing() -> str | None:
    """None when the report can be made, else one line naming what is missing and
    :data:`INSTALL` (found without importing anything)."""
    absent = []
    for name in NEEDS:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):       # a module set to None, a broken install
            found = False
        if not found:
            absent.append(name)
    if not absent:
        return None
    return f"--report needs {' and '.join(absent)}: {INSTALL}"


def check_target(html: str | os.PathLike) -> Path:
    """The report page ``html``, checked before any work: ValueError (one line) where the
    report's dependencies are :func:`missing`, the name is not an .html page, or its folder
    does not exist."""
    why = missing()
    if why:
        raise ValueError(why)
    page = Path(html)
    if page.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--report {page}: want an .html file (its JSON twin goes beside it)")
    if not page.parent.is_dir():
        raise ValueError(f"--report {page}: folder {page.parent} does not exist")
    return page


def json_path(html: str | os.PathLike) -> Path:
    """The JSON twin of the report page ``html``: the same stem, ``.json``."""
    return Path(html).with_suffix(".json")


def write_report(html: str | os.PathLike, package, *, checked=None, decoded=None, ov=(), every: float = 10.0,
                 progress: bool = True, psnr=None) -> tuple[Path, Path]:
    """Gather the figures of ``package`` (with the verdicts ``checked`` or ``decoded``, its
    original versions ``ov``, the PSNR of the master that wrote it, ``psnr``:
    :func:`.gather.gather`), and write the page ``html`` and its JSON twin; their paths.
    MediaError when the package cannot be read or a file cannot be written (an earlier
    report of the same name is replaced)."""
    from .gather import gather  # noqa: PLC0415  (optional: what it imports needs the report extra)
    from .html import render  # noqa: PLC0415  (optional: matplotlib, the report extra)

    gathered = gather(package, checked=checked, decoded=decoded, ov=ov, every=every, progress=progress,
                      psnr=psnr)
    page, twin = Path(html), json_path(html)
    replace_atomically(twin, (json.dumps(gathered.data, indent=1, allow_nan=False) + "\n").encode(),
                       "report's JSON twin", overwrite=True)
    replace_atomically(page, render(gathered).encode("utf-8"), "report", overwrite=True)
    return page, twin
