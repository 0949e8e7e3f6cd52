"""A private CUDA Multi-Process Service (MPS) for one mastering job's encoder processes.

Without MPS, every encoder process has its own CUDA context on its GPU, and a GPU time-slices
between contexts: one process's kernels never run beside another's, and each wait for a
result may wait for the other contexts' slices.  Under MPS the processes' work goes through
one server context per GPU and runs side by side.  Measured on the GPU machine, DCI 2K and 4K
IMF HTJ2K mastering in processes of 2 threads ran clearly faster with an MPS than without
(docs/performance.md).

:func:`start_private_mps` starts a control daemon of the job's own (``nvidia-cuda-mps-control
-f``, its pipe and log folders in a fresh temporary folder, so nothing outside the job is
touched), checks with a probe process that an MPS server really starts, and returns a
:class:`PrivateMPS` whose :attr:`~PrivateMPS.environ` the encoder processes take before CUDA
starts in them; :meth:`PrivateMPS.close` quits the daemon (and its server) and removes the
folder.  The daemon is also ended by the kernel if this process dies (PR_SET_PDEATHSIG),
and the folder of a job killed outright is removed by the next one (:func:`reclaim_folders`).

MPS is left alone where it cannot help or might surprise: off Linux, without the control
program, where an MPS already serves this user (``CUDA_MPS_PIPE_DIRECTORY`` set, or the
default pipe folder present: its server's numbering of the GPUs is then its own), or where
the daemon or the probe fails (the job then runs without MPS, as before).

Device numbers under the private daemon: the daemon is started with this process's own
``CUDA_VISIBLE_DEVICES``, and its server numbers the GPUs as this process does; a client
names its GPU by that number (:meth:`PrivateMPS.device_environ`).  (NVIDIA, "Multi-Process
Service", Appendix: Environment Variables, CUDA_VISIBLE_DEVICES.)
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cinegpu.decode.shm import process_alive

__all__ = ["CONTROL", "DEFAULT_PIPE", "PrivateMPS", "mps_serves", "reclaim_folders",
           "start_private_mps"]

#: the MPS control program (NVIDIA driver utilities)
CONTROL = "nvidia-cuda-mps-control"
#: where a system-wide MPS control daemon keeps its pipes when none is named
DEFAULT_PIPE = Path("/tmp/nvidia-mps")
#: seconds the daemon may take to open its pipe, and a probe process to finish
START_TIMEOUT = 10.0
PROBE_TIMEOUT = 120.0
#: what the probe runs: CUDA started and a kernel run through the private server
PROBE = "import cupy; cupy.arange(4).sum().item()"
#: the start of a private daemon's folder name, then the job's process id
FOLDER_PREFIX = "cinegpu-mps-"


def reclaim_folders(parent: Path | None = None) -> list[Path]:
    """Remove the folders of private daemons whose job is gone (named after its process id:
    a job killed outright leaves its folder; its daemon ends with it); the folders removed."""
    parent = Path(tempfile.gettempdir()) if parent is None else parent
    gone = []
    for folder in parent.glob(f"{FOLDER_PREFIX}*-*"):
        pid = folder.name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or process_alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    return gone


def mps_serves(environ) -> bool:
    """Whether an MPS control daemon already serves processes with ``environ``: one named by
    CUDA_MPS_PIPE_DIRECTORY, or a system-wide one at the default pipe folder."""
    return bool(environ.get("CUDA_MPS_PIPE_DIRECTORY")) or (DEFAULT_PIPE / "control").exists()


def _death_signal():
    """A function for the daemon's child to run before exec: SIGTERM to it when the process
    that started it dies (Linux prctl PR_SET_PDEATHSIG), so that a killed job leaves no
    daemon behind; looked up here, so that the child only calls it."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)          # 1: PR_SET_PDEATHSIG


class PrivateMPS:
    """A running private MPS control daemon (see the module docstring); ``control`` the
    path of nvidia-cuda-mps-control.  ``close()`` when the encoder processes are done."""

    def __init__(self, control: str, folder: Path, daemon: subprocess.Popen):
        self.control, self.folder, self._daemon = control, folder, daemon
        #: what a client process sets before CUDA starts in it, to be served by this daemon
        self.environ = {"CUDA_MPS_PIPE_DIRECTORY": str(folder / "pipe"),
                        "CUDA_MPS_LOG_DIRECTORY": str(folder / "log")}

    def device_environ(self, device: int) -> dict:
        """:attr:`environ` with the GPU ``device`` (as this process numbers it) the only one
        the client sees: the server's numbering is this process's."""
        return dict(self.environ, CUDA_VISIBLE_DEVICES=str(device))

    def ask(self, command: str, timeout: float = START_TIMEOUT) -> str:
        """The daemon's answer to one control ``command`` (e.g. "get_server_list")."""
        done = subprocess.run([self.control], input=command + "\n", capture_output=True,
                              text=True, env=dict(os.environ, **self.environ), timeout=timeout)
        return done.stdout

    def close(self) -> None:
        """Quit the daemon (its server ends with it) and remove the folder."""
        if self._daemon.poll() is None:
            try:
                self.ask("quit")
                self._daemon.wait(timeout=START_TIMEOUT)
            except (OSError, subprocess.SubprocessError):
                self._daemon.kill()
                self._daemon.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def start_private_mps(environ=None, which=shutil.which, probe: str = PROBE) -> PrivateMPS | None:
    """A :class:`PrivateMPS` whose server a probe process (Python running ``probe``) reached,
    or None where MPS is not for this job (see the module docstring); never raises for a
    missing or failing MPS."""
    environ = os.environ if environ is None else environ
    control = which(CONTROL)
    if not sys.platform.startswith("linux") or control is None or mps_serves(environ):
        return None
    reclaim_folders()
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
    (folder / "pipe").mkdir()
    (folder / "log").mkdir()
    env = dict(environ, CUDA_MPS_PIPE_DIRECTORY=str(folder / "pipe"),
               CUDA_MPS_LOG_DIRECTORY=str(folder / "log"))
    try:
        daemon = subprocess.Popen([control, "-f"], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  preexec_fn=_death_signal())
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    mps = PrivateMPS(control, folder, daemon)
    try:
        if _probe(mps, env, probe):
            return mps
    except (OSError, subprocess.SubprocessError):
        pass
    mps.close()
    return None


def _probe(mps: PrivateMPS, env: dict, probe: str) -> bool:
    """Whether the daemon opened its pipe and a probe process got an MPS server from it
    (a CUDA process that cannot reach MPS runs without it, so its exit status alone does
    not tell)."""
    until = time.monotonic() + START_TIMEOUT
    while not (mps.folder / "pipe" / "control").exists():
        if mps._daemon.poll() is not None or time.monotonic() > until:
            return False
        time.sleep(0.05)
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          timeout=PROBE_TIMEOUT)
    return done.returncode == 0 and mps.ask("get_server_list").split() != []
