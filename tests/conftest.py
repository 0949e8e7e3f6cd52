"""What the tests share: the CUDA and headless-OpenGL probes, the shared test data, the header.

* CUDA: :func:`cuda_reason` probes once per session (CuPy importable and a device visible).
  Every test marked ``gpu`` (registered in pyproject.toml: "needs CUDA") is skipped with that
  reason where it is not None; the ``gpu`` fixture gives such a test the ``cupy`` module.
* OpenGL: :func:`gl_reason` opens one 8x8 headless window (pyglet on EGL, GL 3.3) once per
  session; the ``gl`` fixture and :func:`require_gl` skip with the reason where that fails.
* Data: :data:`SHARED` is the ``shared`` folder beside the checkout (``../shared``, or
  ``$CINEGPU_SHARED``), holding the
  ISO/IEC 15444-4 conformance streams (:data:`CONFORMANCE`, with ``MANIFEST.tsv``) and real
  DCP/IMF packages (:data:`DCP_SAMPLES`).  ``needs_conformance`` / ``needs_dcp_samples`` mark
  a test (or a module, as ``pytestmark``) to skip when they are absent; the ``conformance`` and
  ``dcp_samples`` fixtures give the folder or skip; :func:`present` skips a test for each file
  of them it needs that is missing, naming it.

* Configuration: every test runs with ``XDG_CONFIG_HOME`` set to a session temporary folder
  (:func:`_config_home`), so that ``cinegpu master --encrypt`` makes its signer chain there,
  never in the real home; ``config_home`` gives the folder.

Test modules import the names here (``from conftest import ...``): the tests folder is on
``sys.path`` (pytest's default "prepend" import mode), as for ``conformance.py``.
"""

from __future__ import annotations

import functools
import os
import re
from importlib import metadata
from pathlib import Path

import pytest

#: ``../shared`` beside the checkout, or where ``CINEGPU_SHARED`` says (data kept elsewhere, or a
#: partial copy: every test skips per file it lacks, see :func:`present`)
SHARED = Path(os.environ.get("CINEGPU_SHARED") or Path(__file__).resolve().parents[1].parent / "shared")
CONFORMANCE = SHARED / "conformance"
DCP_SAMPLES = SHARED / "dcp-samples"

needs_conformance = pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="../shared/conformance is absent")
needs_dcp_samples = pytest.mark.skipif(not DCP_SAMPLES.is_dir(), reason="../shared/dcp-samples is absent")


@functools.cache
def cuda_reason() -> str | None:
    """Why CUDA cannot be used here, or None when CuPy imports and sees a device (probed once)."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA library that fails to load
        return f"CuPy not usable: {type(exc).__name__}: {exc}"
    try:
        if not cupy.cuda.is_available():
            return "no CUDA device visible to CuPy"
    except Exception as exc:  # a CUDA driver/runtime error
        return f"CuPy not usable: {type(exc).__name__}: {exc}"
    return None


def have_cuda() -> bool:
    """True where :func:`cuda_reason` finds CuPy and a device."""
    return cuda_reason() is None


def require_cuda():
    """The ``cupy`` module, or skip the calling test (or module) with :func:`cuda_reason`."""
    reason = cuda_reason()
    if reason is not None:
        pytest.skip(reason, allow_module_level=True)
    import cupy

    return cupy


@functools.cache
def host_build(source: Path, *flags: str):
    """A ``cuda/*_host*.cpp`` emulation (a .cu compiled as C++ for the host, so CI checks a
    kernel's own code without a GPU) built by g++ with ``flags`` and loaded with ctypes; built
    once per session.  The caller skips when g++ is missing (``shutil.which("g++")``)."""
    return _host_build(str(source), tuple(flags))


@functools.lru_cache(maxsize=None)
def _host_build(source: str, flags: tuple):
    import ctypes
    import shutil
    import subprocess
    import tempfile
    src = Path(source)
    lib = Path(tempfile.mkdtemp(prefix=src.stem)) / f"{src.stem}.so"
    subprocess.run([shutil.which("g++"), "-O2", *flags, "-shared", "-fPIC", "-o", str(lib),
                    str(src)], check=True, cwd=src.parent, capture_output=True)
    return ctypes.CDLL(str(lib))


def gl_reason() -> str | None:
    """Why headless OpenGL cannot be used here, or None (one 8x8 headless window opened once)."""
    try:
        from cinegpu.player.window import open_window

        open_window(8, 8, headless=True).close()
    except Exception as exc:  # no pyglet, no EGL, no GL 3.3: the reason is the skip message
        return f"no headless OpenGL: {type(exc).__name__}: {exc}"
    return None


def require_gl() -> None:
    """Skip the calling test (or fixture) with :func:`gl_reason` where headless GL fails."""
    reason = gl_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def _config_home(tmp_path_factory):
    """``XDG_CONFIG_HOME`` for the whole session: a temporary folder (child processes inherit
    it), so that nothing is written into the user's configuration."""
    folder = tmp_path_factory.mktemp("config-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(folder))
        yield folder


@pytest.fixture(scope="session")
def config_home(_config_home) -> Path:
    """The session's ``XDG_CONFIG_HOME`` (see :func:`_config_home`)."""
    return _config_home


@pytest.fixture(scope="session")
def gpu():
    """The ``cupy`` module; skips the test with the reason where CuPy or a device is missing."""
    return require_cuda()


@pytest.fixture(scope="session")
def gl() -> None:
    """Skips the test with the reason where no headless OpenGL window can be opened."""
    require_gl()


def present(*paths: Path) -> Path:
    """The first of ``paths``, once every one of them is there: a test that needs a file of
    the shared data skips naming the first one absent (a partial copy of ``../shared`` skips
    what it lacks, file by file)."""
    for path in paths:
        if not Path(path).is_file():
            pytest.skip(f"{path} is not present")
    return paths[0]


@pytest.fixture(scope="session")
def conformance() -> Path:
    """``../shared/conformance`` (skips where absent)."""
    if not (CONFORMANCE / "MANIFEST.tsv").is_file():
        pytest.skip("../shared/conformance is absent")
    return CONFORMANCE


@pytest.fixture(scope="session")
def dcp_samples() -> Path:
    """``../shared/dcp-samples`` (skips where absent)."""
    if not DCP_SAMPLES.is_dir():
        pytest.skip("../shared/dcp-samples is absent")
    return DCP_SAMPLES


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``gpu`` needs CUDA: skipped with the probe's reason without it."""
    if item.get_closest_marker("gpu") is not None:
        reason = cuda_reason()
        if reason is not None:
            pytest.skip(reason)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _nvidia_driver() -> str:
    """The NVIDIA kernel driver's version, from /proc/driver/nvidia/version ("unknown" elsewhere)."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return "unknown"
    found = re.search(r"Kernel Module(?: for [^ ]+)?\s+([0-9][0-9.]+)", text)
    return found.group(1) if found else "unknown"


def _cuda_line() -> str:
    reason = cuda_reason()
    if reason is not None:
        return f"no CUDA ({reason})"
    try:
        import cupy

        rt = cupy.cuda.runtime
        name = rt.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else name

        def dotted(v: int) -> str:  # CUDA's 1000 * major + 10 * minor
            return f"{v // 1000}.{v % 1000 // 10}"

        return (f"GPU {name}, driver {_nvidia_driver()} (CUDA {dotted(rt.driverGetVersion())}), "
                f"CUDA runtime {dotted(rt.runtimeGetVersion())}")
    except Exception as exc:  # a device that vanished between the probe and here
        return f"no CUDA ({type(exc).__name__}: {exc})"


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The GPU, its driver and CUDA runtime, and the versions of CuPy, numba and pyglet."""
    cupy = next((v for v in map(_version, ("cupy", "cupy-cuda12x", "cupy-cuda11x", "cupy-cuda13x"))
                 if v != "not installed"), "not installed")
    return [_cuda_line(),
            f"cupy {cupy}, numba {_version('numba')}, pyglet {_version('pyglet')}"]
