"""The private CUDA MPS of a mastering job (media/mps.py) against a stand-in control program
(a script that keeps the real one's pipe folder, answers get_server_list once a client has
come, and ends on quit), and where MPS is left alone: no control program, an MPS of the
user's, a daemon that dies, a probe that fails.  The real MPS runs in the gpu test of
test_master_processes.py."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cinegpu.jobs.frame_coders import device_environ
from cinegpu.jobs.mps import PrivateMPS, mps_serves, start_private_mps

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MPS is Linux's")

#: the stand-in control program: "-f" runs the daemon (its pipe file, then waits for quit);
#: no argument reads one command from stdin, as nvidia-cuda-mps-control does
FAKE = r'''#!{python}
import os, sys, time, pathlib
pipe = pathlib.Path(os.environ["CUDA_MPS_PIPE_DIRECTORY"])
log = pathlib.Path(os.environ["CUDA_MPS_LOG_DIRECTORY"])
if sys.argv[1:] == ["-f"]:
    if os.environ.get("FAKE_MPS_DIES"):
        sys.exit(1)
    (log / "started").write_text(os.environ.get("CUDA_VISIBLE_DEVICES", "-"))
    (pipe / "control").touch()
    while not (pipe / "quit").exists():
        time.sleep(0.02)
    sys.exit(0)
command = sys.stdin.read().strip()
if command == "get_server_list":
    print("4242" if (pipe / "server").exists() else "")
elif command == "quit":
    (pipe / "quit").touch()
'''
#: a probe that stands for a CUDA client reaching the server
CLIENT = "import os, pathlib; pathlib.Path(os.environ['CUDA_MPS_PIPE_DIRECTORY'], 'server').touch()"


@pytest.fixture
def control(tmp_path):
    path = tmp_path / "nvidia-cuda-mps-control"
    path.write_text(FAKE.replace("{python}", sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _env(**more):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_MPS_")}
    env.update(more)
    return env


def test_private_daemon_serves_the_job_and_is_gone_after(control):
    mps = start_private_mps(_env(CUDA_VISIBLE_DEVICES="1,3"), which=lambda name: control,
                            probe=CLIENT)
    assert isinstance(mps, PrivateMPS)
    folder = mps.folder
    try:
        pipe = Path(mps.environ["CUDA_MPS_PIPE_DIRECTORY"])
        assert pipe.parent == folder and (pipe / "control").exists()
        # the daemon runs with the job's own GPU list, and a client names its GPU by index
        assert (folder / "log" / "started").read_text() == "1,3"
        assert mps.device_environ(1) == dict(mps.environ, CUDA_VISIBLE_DEVICES="1")
        assert mps.ask("get_server_list").split() == ["4242"]
        daemon = mps._daemon
    finally:
        mps.close()
    assert daemon.poll() == 0 and not folder.exists()       # quit, not killed; folder gone
    mps.close()                                             # twice is harmless


@pytest.mark.parametrize("case", ["no control", "user's MPS", "daemon dies", "probe fails",
                                  "no server"])
def test_mps_is_left_alone(case, control, tmp_path, monkeypatch):
    env, which, probe = _env(), (lambda name: control), CLIENT
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))     # where its folder would be
    if case == "no control":
        which = lambda name: None                            # noqa: E731
    elif case == "user's MPS":
        env["CUDA_MPS_PIPE_DIRECTORY"] = str(tmp_path / "theirs")
    elif case == "daemon dies":
        env["FAKE_MPS_DIES"] = "1"
    elif case == "probe fails":
        probe = "raise SystemExit(3)"
    elif case == "no server":
        probe = "pass"                 # a CUDA client that ran without reaching MPS
    t = time.monotonic()
    assert start_private_mps(env, which=which, probe=probe) is None
    assert time.monotonic() - t < 30
    assert list(scratch.iterdir()) == []                    # its folder removed


def test_mps_serves():
    if Path("/tmp/nvidia-mps/control").exists():
        pytest.skip("an MPS daemon serves this machine")
    assert mps_serves({"CUDA_MPS_PIPE_DIRECTORY": "/x"})
    assert not mps_serves({"CUDA_MPS_PIPE_DIRECTORY": ""}) and not mps_serves({})


def test_an_encoder_process_sees_only_its_gpu(monkeypatch):
    """Without an MPS, an encoder process on GPU d is shown that GPU alone, as the parent
    numbers it: the d-th entry of the parent's CUDA_VISIBLE_DEVICES (numbers, UUIDs or MIG
    names), or d; under an MPS of the user's, nothing is changed."""
    if Path("/tmp/nvidia-mps/control").exists():
        pytest.skip("an MPS daemon serves this machine")
    assert device_environ(3, {}) == {"CUDA_VISIBLE_DEVICES": "3"}
    assert device_environ(0, {"CUDA_VISIBLE_DEVICES": ""}) == {"CUDA_VISIBLE_DEVICES": "0"}
    assert device_environ(1, {"CUDA_VISIBLE_DEVICES": "2, 5,7"}) == {"CUDA_VISIBLE_DEVICES": "5"}
    assert device_environ(0, {"CUDA_VISIBLE_DEVICES": "GPU-8f0e,GPU-11aa"}) == \
        {"CUDA_VISIBLE_DEVICES": "GPU-8f0e"}
    assert device_environ(1, {"CUDA_VISIBLE_DEVICES": "2,5", "CUDA_MPS_PIPE_DIRECTORY": "/p"}) == {}
    for bad in (2, -1):
        with pytest.raises(ValueError, match="not among CUDA_VISIBLE_DEVICES"):
            device_environ(bad, {"CUDA_VISIBLE_DEVICES": "4,6"})


def test_folders_of_gone_jobs_are_reclaimed(tmp_path):
    """A folder left by a job that was killed (its process gone) is removed; a live job's,
    this process's and other names are kept."""
    import subprocess
    from cinegpu.jobs.mps import FOLDER_PREFIX, reclaim_folders
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        names = [f"{FOLDER_PREFIX}{dead.pid}-abc", f"{FOLDER_PREFIX}{live.pid}-abc",
                 f"{FOLDER_PREFIX}{os.getpid()}-abc", f"{FOLDER_PREFIX}x-abc", "other-1-abc"]
        for name in names:
            (tmp_path / name / "pipe").mkdir(parents=True)
        assert reclaim_folders(tmp_path) == [tmp_path / names[0]]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[1:])
    finally:
        live.kill()
        live.wait()
