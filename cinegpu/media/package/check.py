"""``cinegpu check PATH``: verify a package against its packing lists (ST 429-8, ST 2067-2).

Every PKL asset must exist where the ASSETMAP puts it, with the PKL's size and SHA-1 hash
(base64 of the digest, as PKLs carry it); every file the ASSETMAP names with a chunk ``Length``
(optional, ST 429-9) must have that many bytes, which a CPL changed and its PKL re-signed
without a new ASSETMAP does not. Files in the package folder that the ASSETMAP does not
name are reported as extra (a warning); CPL assets missing from the ASSETMAP are problems.
A supplemental package (VF) checked with its original versions (``ov``) has the CPL assets it
lacks looked up in their ASSETMAPs (:func:`.package.resolve_from_ov`): those found are reported
as notes, "in the OV", and their files checked against the CPL's Hash.
Each CPL and PKL's signature (ST 429-7 clause 6.13, ST 429-8 clause 5.10) is checked
(:func:`.package_signature.check_package_signature`): a note says who signed it and that it
holds, a problem why it does not; an unsigned one is a note, a warning when the package is
encrypted (DCI requires its CPL and PKL to be signed), never a problem.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from cinegpu.media.errors import MediaError, UnsupportedMedia
from cinegpu.media.package.read import Package, read_package, relpath
from cinegpu.media.security.package_signature import check_package_signature
from cinegpu.media.source import kind_of

CHUNK = 1 << 20


@dataclass
class CheckReport:
    root: Path
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def text(self) -> str:
        lines = [f"checked {self.checked} asset(s) in {self.root}"]
        lines += [f"PROBLEM: {p}" for p in self.problems]
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"note: {n}" for n in self.notes]
        lines.append("OK" if self.ok else f"FAILED: {len(self.problems)} problem(s)")
        return "\n".join(lines)


def sha1_base64(path: Path, bar: tqdm | None = None) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        while True:
            block = f.read(CHUNK)
            if not block:
                break
            h.update(block)
            if bar is not None:
                bar.update(len(block))
    return base64.b64encode(h.digest()).decode("ascii")


def _verify_assets(pkg: Package, report: CheckReport, progress: bool) -> None:
    todo = []
    for pkl in pkg.pkls:
        for a in pkl.assets:
            path = pkg.paths.get(a.id)
            name = relpath(pkl.path, pkg.root)
            if path is None:
                report.problems.append(f"{name}: asset {a.id} is not in the ASSETMAP")
                continue
            if not path.is_file():
                report.problems.append(f"{relpath(path, pkg.root)}: missing (asset {a.id} of {name})")
                continue
            size = path.stat().st_size
            if a.size is not None and size != a.size:
                report.problems.append(f"{relpath(path, pkg.root)}: {size} bytes, the PKL says "
                                       f"{a.size}")
                continue
            todo.append((path, a, name))
    todo += _ov_assets(pkg, report)
    total = sum(p.stat().st_size for p, _, _ in todo)
    with tqdm(total=total, unit="B", unit_scale=True, desc="hashing",
              disable=None if progress else True,   # None: only on a terminal
              leave=False) as bar:
        for path, a, name in todo:
            report.checked += 1
            if not a.hash:
                report.warnings.append(f"{relpath(path, pkg.root)}: no hash in {name}")
                continue
            digest = sha1_base64(path, bar)
            if digest != a.hash.strip():
                whose = f"the CPL's ({name})" if getattr(a, "ov", None) else "the PKL's"
                report.problems.append(f"{relpath(path, pkg.root)}: SHA-1 {digest} does not "
                                       f"match {whose} {a.hash.strip()}")


def _check_lengths(pkg: Package, report: CheckReport) -> None:
    """A problem for each ASSETMAP chunk ``Length`` that is not its file's size in bytes (a
    missing file is reported by :func:`_verify_assets` or :func:`_cross_check`)."""
    for aid, length in pkg.lengths.items():
        path = pkg.paths[aid]
        if not path.is_file():
            continue
        name = relpath(path, pkg.root)
        where = f"the {pkg.assetmap_path.name}'s Length for asset {aid}"
        if not (length.isascii() and length.isdigit()):
            report.problems.append(f"{name}: {where} is not a number of bytes: {length[:40]!r}")
            continue
        size = path.stat().st_size
        if size != int(length):
            report.problems.append(f"{name}: {size} bytes, {where} says {int(length)}")


def _ov_assets(pkg: Package, report: CheckReport) -> list:
    """The CPL assets found in an OV package: a note each, and (path, asset, CPL name) to hash
    against the CPL's Hash (a missing OV file is a problem)."""
    todo, seen = [], set()
    for comp in pkg.compositions:
        name = relpath(comp.path, pkg.root)
        for reel in comp.reels:
            for a in reel.assets:
                if a.ov is None or a.id in seen:
                    continue
                seen.add(a.id)
                where = f"{a.kind} asset {a.id} of {name} is in the OV {a.ov}"
                if not a.path.is_file():
                    report.problems.append(f"{where}, whose file {a.path.name} is missing")
                    continue
                report.notes.append(f"{where} ({a.path.name})")
                todo.append((a.path, a, name))
    return todo


def _cross_check(pkg: Package, report: CheckReport) -> None:
    in_pkl = {a.id for pkl in pkg.pkls for a in pkl.assets} | set(pkg.packing_list_ids)
    for aid, path in pkg.paths.items():
        if aid not in in_pkl:
            report.warnings.append(f"{relpath(path, pkg.root)}: in the ASSETMAP but in no PKL")
    for comp in pkg.compositions:
        for reel in comp.reels:
            for a in reel.assets:
                if a.path is None and a.kind != "markers":
                    hint = (" nor in the OV package(s) given" if pkg.ovs else
                            "; if this is a supplemental package (VF), give its OV with --ov DIR")
                    report.problems.append(f"{relpath(comp.path, pkg.root)}: {a.kind} asset {a.id} "
                                           f"is not in the ASSETMAP{hint}")
    named = {p.resolve() for p in pkg.paths.values()} | {pkg.assetmap_path.resolve()}
    if pkg.volindex:
        named.add(pkg.volindex.resolve())
    for dirpath, _dirs, files in os.walk(pkg.root):
        for f in files:
            p = Path(dirpath, f)
            if p.resolve() not in named:
                report.warnings.append(f"{relpath(p, pkg.root)}: extra file, not in the ASSETMAP")


def _check_signatures(pkg: Package, report: CheckReport) -> None:
    """A line per CPL and PKL of the package on its signature (see the module)."""
    encrypted = any(a.key_id for c in pkg.compositions for r in c.reels for a in r.assets)
    documents = [c.path for c in pkg.compositions] + [p.path for p in pkg.pkls]
    for path in dict.fromkeys(d for d in documents if d is not None):
        name = relpath(path, pkg.root)
        try:
            sig = check_package_signature(path)
        except MediaError as exc:
            report.problems.append(str(exc))
            continue
        if not sig.signed:
            if encrypted:
                report.warnings.append(f"{name}: unsigned, in an encrypted package (DCI requires its CPL "
                                       f"and PKL to be signed)")
            else:
                report.notes.append(f"{name}: unsigned")
        elif sig.problems:
            report.problems.append(f"{name}: {sig.text()}")
        else:
            report.notes.append(f"{name}: {sig.text(with_warnings=False)}")
            report.warnings += [f"{name}: {w}" for w in sig.warnings]


def check(path, progress: bool = True, ov=()) -> CheckReport:
    """Check the package at ``path`` (a folder or its ASSETMAP); ``ov``: the original-version
    packages of a supplemental one. Never raises MediaError."""
    root = Path(path)
    report = CheckReport(root.parent if root.is_file() else root)
    try:
        kind = kind_of(root)
        if kind not in ("folder", "xml"):
            what = "an MXF track file" if kind == "mxf" else "a codestream"
            raise UnsupportedMedia(root, f"not a package folder or ASSETMAP ({what})")
        pkg = read_package(root, ov=ov)
    except MediaError as exc:
        report.problems.append(str(exc))
        return report
    report.root = pkg.root
    if not pkg.pkls:
        report.problems.append(f"{pkg.assetmap_path.name}: no packing list")
    _verify_assets(pkg, report, progress)
    _check_lengths(pkg, report)
    _cross_check(pkg, report)
    _check_signatures(pkg, report)
    return report


def run(path, progress: bool = True, ov=()) -> int:
    """Print the report; 0 when the package checks out, 1 otherwise."""
    report = check(path, progress, ov)
    print(report.text())
    return 0 if report.ok else 1
