"""The CPU kernels shipped compiled (cinegpu/jobs/prebuilt.py, made by cinegpu/jobs/bake.py):
fresh for these sources, loaded by a first run without compiling anything, used only where
they fit, never replacing what a user's cache holds."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from cinegpu.jobs import prebuilt
from cinegpu.jobs.bake import kernel_modules, kernel_sources

#: a first run's compile step in a process of its own, its cache in $XDG_CACHE_HOME
FIRST_RUN = """
from cinegpu.jobs.first_run import cache_root, compile_kernels
lines = []
compile_kernels(cache_root(), progress=False, say=lines.append)
compile_kernels(cache_root(), progress=False, say=lines.append, encoder=False)
print("\\n".join(lines))
"""
#: the bake's workloads after the archive is installed, in a process of its own
WORKLOADS = """
from cinegpu.jobs import prebuilt
from cinegpu.jobs.bake import workloads
assert prebuilt.install().why is None
workloads()
"""


def _archive_files() -> dict[str, bytes]:
    with tarfile.open(prebuilt.ARCHIVE, "r:xz") as tar:
        return {m.name.removeprefix("numba/"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_the_shipped_kernels_were_compiled_from_these_sources():
    made = json.loads(prebuilt.MANIFEST.read_text())
    now = kernel_sources(made["modules"])
    stale = sorted(set(now) ^ set(made["sources"]) | {k for k in now if made["sources"].get(k) != now[k]})
    assert not stale, (f"the kernels shipped compiled are stale ({', '.join(stale[:5])}...): "
                       "run `python -m cinegpu.jobs.bake` and commit cinegpu/jobs/compiled/")


def _cold_run(tmp_path, script: str) -> tuple[str, dict[str, bytes]]:
    """``script`` run by a new Python with an empty cache folder (skipped where the shipped
    kernels do not fit this machine): what it printed, and numba's cache files after it."""
    why = prebuilt.unusable()
    if why is not None:
        pytest.skip(f"the shipped kernels do not fit this machine: {why}")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_CPU_NAME", None)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    cache = tmp_path / "cinegpu" / "numba"
    return r.stdout, {p.relative_to(cache).as_posix(): p.read_bytes() for p in cache.rglob("*") if p.is_file()}


def test_a_first_run_loads_them_and_compiles_nothing(tmp_path):
    out, found = _cold_run(tmp_path, FIRST_RUN)
    assert out.splitlines()[0] == "loading the CPU encoder and decoder compiled ahead (first run only)"
    assert out.splitlines()[2] == "loading the CPU decoder compiled ahead (first run only)"
    # anything compiled would have added a data file and rewritten its index
    assert found == _archive_files()


@pytest.mark.slow  # long: every kind of stream encoded and decoded once (the bake's workloads)
def test_what_the_commands_compile_beyond_the_demo_is_shipped_too(tmp_path):
    assert _cold_run(tmp_path, WORKLOADS)[1] == _archive_files()


def test_the_manifest_names_the_modules_of_the_cached_kernels_and_what_they_import(tmp_path):
    (tmp_path / "decode" / "tier1").mkdir(parents=True)
    (tmp_path / "decode" / "tier1" / "mq.mq_init-40.py311.nbi").write_bytes(b"")
    (tmp_path / "decode" / "tier1" / "mq.mq_init-40.py311.1.nbc").write_bytes(b"")
    (tmp_path / "encode" / "tier2").mkdir(parents=True)
    (tmp_path / "encode" / "tier2" / "bits.put_bit-48.py311.nbi").write_bytes(b"")
    assert kernel_modules(tmp_path) == ["cinegpu.decode.tier1.mq", "cinegpu.encode.tier2.bits"]
    sources = kernel_sources(["cinegpu.decode.tier1.codeblock"])
    # the module itself, the kernels it calls (relative and absolute imports), never the player
    assert {"cinegpu/decode/tier1/codeblock.py", "cinegpu/decode/tier1/mq.py",
            "cinegpu/decode/tier1/passes.py"} <= set(sources)
    assert not [k for k in sources if k.startswith(("cinegpu/player/", "cinegpu/jobs/"))]
    assert all(len(digest) == 64 for digest in sources.values())


def _fake_archive(tmp_path: Path, monkeypatch, members: dict[str, bytes], **manifest) -> None:
    """An archive of ``members`` and a manifest made for this process (``manifest`` changes it)."""
    archive, listed = tmp_path / "kernels.tar.xz", tmp_path / "manifest.json"
    with tarfile.open(archive, "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    listed.write_text(json.dumps({**prebuilt.target(), "sources": {}, **manifest}))
    monkeypatch.setattr(prebuilt, "ARCHIVE", archive)
    monkeypatch.setattr(prebuilt, "MANIFEST", listed)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(prebuilt.config, "CACHE_DIR", "")


def test_install_writes_each_kernel_once_and_keeps_what_the_user_has(tmp_path, monkeypatch):
    _fake_archive(tmp_path, monkeypatch, {
        "numba/decode/m.f-10.py311.nbi": b"index f", "numba/decode/m.f-10.py311.1.nbc": b"data f",
        "numba/decode/m.g-20.py311.nbi": b"index g", "numba/decode/m.g-20.py311.1.nbc": b"data g",
        "numba/decode/m.g-20.py311.2.nbc": b"data g2"})
    cache = tmp_path / "cache"
    (cache / "decode").mkdir(parents=True)
    (cache / "decode" / "m.g-20.py311.nbi").write_bytes(b"the user's own")
    (cache / "decode" / "m.g-20.py311.1.nbc").write_bytes(b"the user's data")
    assert prebuilt.install(cache) == prebuilt.Installed(written=1)
    assert (cache / "decode" / "m.f-10.py311.nbi").read_bytes() == b"index f"
    assert (cache / "decode" / "m.f-10.py311.1.nbc").read_bytes() == b"data f"
    assert (cache / "decode" / "m.g-20.py311.nbi").read_bytes() == b"the user's own"
    assert (cache / "decode" / "m.g-20.py311.1.nbc").read_bytes() == b"the user's data"
    assert not (cache / "decode" / "m.g-20.py311.2.nbc").exists()
    assert not [p for p in cache.rglob(".*")]          # no temporary file left
    assert prebuilt.install(cache) == prebuilt.Installed(written=0)


def test_members_outside_the_cache_folder_are_not_written(tmp_path, monkeypatch):
    _fake_archive(tmp_path, monkeypatch, {"numba/../escape.nbi": b"x", "/abs.nbi": b"x", "other/k.nbi": b"x",
                                          "numba/decode/ok-1.py311.nbi": b"ok"})
    cache = tmp_path / "deep" / "cache"
    assert prebuilt.install(cache) == prebuilt.Installed(written=1)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.nbi")) == [
        "deep/cache/decode/ok-1.py311.nbi"]


@pytest.mark.parametrize("change, why", [
    ({"cpu": "cell-be"}, "they were compiled for cpu 'cell-be', this process has "),
    ({"numba": "0.1.0"}, "they were compiled for numba '0.1.0', this process has "),
    ({"python": "py27"}, "they were compiled for python 'py27', this process has "),
    ({"sources": {"cinegpu/decode/tier1/mq.py": "0" * 64}}, "cinegpu/decode/tier1/mq.py changed since they were compiled"),
    ({"sources": {"cinegpu/gone.py": "0" * 64}}, "cinegpu/gone.py changed since they were compiled"),
])
def test_an_archive_made_for_something_else_is_not_used(tmp_path, monkeypatch, change, why):
    _fake_archive(tmp_path, monkeypatch, {"numba/decode/m.f-10.py311.nbi": b"index f"}, **change)
    cache = tmp_path / "cache"
    got = prebuilt.install(cache)
    assert got.written == 0 and got.why.startswith(why)
    assert not cache.exists()


def test_no_archive_or_numbas_own_cache_folder_leaves_them_unused(tmp_path, monkeypatch):
    _fake_archive(tmp_path, monkeypatch, {"numba/decode/m.f-10.py311.nbi": b"index f"})
    monkeypatch.setattr(prebuilt.config, "CACHE_DIR", str(tmp_path / "numba-cache"))
    assert prebuilt.unusable() == "NUMBA_CACHE_DIR is set"
    monkeypatch.setattr(prebuilt, "ARCHIVE", tmp_path / "none.tar.xz")
    assert prebuilt.unusable() == "no compiled kernels were shipped with this copy"
