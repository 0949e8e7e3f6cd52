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

* Paths: :data:`ROOT` (the checkout), :data:`PACKAGE` (``cinegpu/``), :data:`SAMPLE` (the
  bundled ``bars_2k.j2c``), :data:`TESTS` (this folder) and :data:`TOOLS` (``tests/tools``:
  stand-ins for programs a test puts on ``PATH``).  Test modules sit in folders that mirror the
  package (``tests/decode/tier1/`` ...), so none computes these from its own ``__file__``.
* Host builds: :func:`host_library` is a ``cuda/*_host*.cpp`` emulation built by g++ (once a
  session) and loaded with ctypes, skipping the test where g++ is missing; :func:`cuda_or_host`
  makes the fixture that runs a case on the GPU kernel and on its host emulation; :func:`ptr`
  passes a numpy array to it.

Test modules import the names here (``from conftest import ...``) and the shared helpers of
``tests/helpers/`` (``from helpers.peers import ...``): this folder is on ``sys.path``, since
pytest's default "prepend" import mode inserts the folder of this conftest.py (and of each
test module, which is how a test module may import a sibling of its own folder).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import subprocess
import tempfile
from importlib import metadata
from pathlib import Path

import pytest

#: this folder (``tests/``), on ``sys.path`` for the test modules and ``tests/helpers``
TESTS = Path(__file__).resolve().parent
#: the checkout
ROOT = TESTS.parent
#: the package's folder
PACKAGE = ROOT / "cinegpu"
#: the 2K DCI codestream the package ships (``cinegpu bench``'s default input)
SAMPLE = PACKAGE / "media" / "samples" / "bars_2k.j2c"
#: stand-ins for programs a test puts first on ``PATH`` (``asdcp-unwrap``)
TOOLS = TESTS / "tools"
#: asdcplib's asdcp-info and asdcp-unwrap on PATH (CI builds them: .ci/install-asdcplib): ClairMeta
#: then probes every track file and no check is bypassed
HAVE_ASDCPLIB = bool(shutil.which("asdcp-info") and shutil.which("asdcp-unwrap"))
#: ``../shared`` beside the checkout, or where ``CINEGPU_SHARED`` says (data kept elsewhere, or a
#: partial copy: every test skips per file it lacks, see :func:`present`)
SHARED = Path(os.environ.get("CINEGPU_SHARED") or ROOT.parent / "shared")
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


#: g++, which builds the host emulations (None where it is missing)
CXX = shutil.which("g++")
#: marks a test (or a module, as ``pytestmark``) that needs g++
needs_cxx = pytest.mark.skipif(CXX is None, reason="g++ not installed: no host build")


@functools.cache
def host_build(source: Path, *flags: str):
    """A ``cuda/*_host*.cpp`` emulation (a .cu compiled as C++ for the host, so CI checks a
    kernel's own code without a GPU) built by g++ with ``flags`` and loaded with ctypes; built
    once per session.  The caller skips when g++ is missing (:data:`CXX`); see
    :func:`host_library`."""
    return _host_build(str(source), tuple(flags))


def host_library(source: Path, *, restypes: dict | None = None,
                 flags: tuple[str, ...] = ("-ffp-contract=off",)):
    """:func:`host_build` of ``source`` (by default with ``-ffp-contract=off``: no fused
    multiply-adds, so float results match numpy's to the bit), with the ``restypes`` given
    (``{"function": ctypes.c_longlong}``) set; skips the calling test where g++ is missing.
    A module's ``lib`` fixture is one call of it."""
    if CXX is None:
        pytest.skip("g++ not installed: no host build")
    lib = host_build(source, *flags)
    for name, restype in (restypes or {}).items():
        getattr(lib, name).restype = restype
    return lib


def ptr(a) -> ctypes.c_void_p:
    """A numpy array's data as a ``void *`` argument of a host-built kernel (None: NULL)."""
    return ctypes.c_void_p(None if a is None else a.ctypes.data)


def cuda_or_host(cuda, host, *, slow_host: bool = False):
    """A fixture, parametrized ``cuda`` (marked gpu) and ``host`` (skipped without g++; marked
    slow too where ``slow_host``), that gives the ``cuda`` or the ``host`` function: the same
    case run on a kernel and on its host emulation.  A module names it by assignment:
    ``backend = cuda_or_host(decode_cuda, decode_host)``."""
    host_marks = [pytest.mark.skipif(CXX is None, reason="no g++ to build the host emulation")]
    if slow_host:
        host_marks.insert(0, pytest.mark.slow)

    @pytest.fixture(params=[pytest.param("cuda", marks=pytest.mark.gpu),
                            pytest.param("host", marks=host_marks)])
    def backend(request):
        return cuda if request.param == "cuda" else host

    return backend


@functools.lru_cache(maxsize=None)
def _host_build(source: str, flags: tuple):
    src = Path(source)
    with tempfile.TemporaryDirectory(prefix=src.stem) as folder:  # gone once loaded: nothing left in /tmp
        lib = Path(folder) / f"{src.stem}.so"
        subprocess.run([CXX, "-O2", *flags, "-shared", "-fPIC", "-o", str(lib),
                        str(src)], check=True, cwd=src.parent, capture_output=True)
        return ctypes.CDLL(str(lib))


def gl_reason() -> str | None:
    """Why headless OpenGL cannot be used here, or None (one 8x8 headless window opened once)."""
    try:
        from cinegpu.interop.window import open_window

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


@pytest.fixture
def smpte_dcp(tmp_path) -> Path:
    """A scratch copy of libdcp's SMPTE sample DCP (``../shared/dcp-samples/
    libdcp-dcp_test1-smpte-2k``) in the test's temporary folder, to damage; skips where absent."""
    sample = DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k"
    if not sample.is_dir():
        pytest.skip(f"{sample} is not present")
    return Path(shutil.copytree(sample, tmp_path / "dcp"))


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


def pytest_configure(config: pytest.Config) -> None:
    """In the controller (or the one process) only: the CPU encoder and decoder compiled as the
    first run and the decoding commands do (:func:`cinegpu.jobs.first_run.compile_kernels`, a
    no-op once its stamp is there), before any test: the commands that decode compile them on first use and say so on
    stderr, which a test comparing stderr would otherwise meet on a machine's first run."""
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    from cinegpu.jobs.first_run import cache_root, compile_kernels

    compile_kernels(cache_root(), progress=False, say=lambda line: None)
    # the decoding commands' set too (HTJ2K's kernels; the rest is found in the cache)
    compile_kernels(cache_root(), progress=False, say=lambda line: None, encoder=False)
