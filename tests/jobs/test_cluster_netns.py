"""The cluster across machines, as far as one machine allows: a TLS scheduler and its workers
each in a network namespace of its own (tests/helpers/netns.py), reaching each other and
``cinegpu master`` only over a bridge, started with the ``dask`` command as docs/cluster.md
says. The input frames are in a folder all of them see (shared storage, ``--cluster-frames
shared``), or in one the workers cannot see (a mount namespace of their own), the frames then
sent to them over the network (the default with a scheduler). A worker killed mid-job leaves the package as one machine writes it; a worker of another
cinegpu version is refused at connect. Skipped, with the reason, where namespaces cannot be
made (not root, no ``ip``)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from cinegpu.jobs.cluster_tls import make_credentials
from cinegpu.jobs.master_job import MasterJob
from cinegpu.jobs.mastering import master
from cinegpu.media import MediaError
from cinegpu.media.images.frames import ImageFrames, list_frames
from helpers.cluster import SlowFrames, dask_command, kill_a_worker_during, processes, tls_options
from helpers.mastering import needs_encoder, package_codestreams, write_tiffs
from helpers.netns import hosts, why_not

distributed = pytest.importorskip("distributed", reason="dask distributed is not installed "
                                                        "(pip install 'cinegpu[cluster]')")

from cinegpu.jobs.cluster import connect, parse_address  # noqa: E402  (after importorskip: distributed)

WHY_NOT = why_not()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY_NOT is not None, reason=f"no network namespaces: {WHY_NOT}")]

TESTS = Path(__file__).resolve().parents[1]
PORT = 8786


def _wait_port(host: str, port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on {host}:{port} after {seconds} s")


def _worker(host, scheduler: str, folder: Path, log: Path, *extra: str, hide: Path | None = None) -> subprocess.Popen:
    """``dask worker`` in ``host``'s namespace, listening on its address only; ``hide``: a
    folder the worker cannot see (an empty file system mounted over it, in a mount namespace
    of the worker's own), as on a machine without the shared storage."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    argv = dask_command("worker", scheduler, "--host", host.address, "--nthreads", "1", "--no-dashboard",
                        *tls_options(folder), *extra)
    if hide is not None:
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount -t tmpfs none "$0" && exec "$@"', str(hide), *argv]
    return subprocess.Popen(host.command(*argv), env=env, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))


def _scheduler(host, roles, log: Path) -> subprocess.Popen:
    """``dask scheduler`` (TLS) in ``host``'s namespace on :data:`PORT`, once it listens."""
    proc = subprocess.Popen(host.command(*dask_command(
        "scheduler", "--protocol", "tls", "--host", host.address, "--port", str(PORT), "--no-dashboard",
        *tls_options(roles["scheduler"]))), stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    _wait_port(host.address, PORT, 60)
    return proc


@needs_encoder
def test_master_across_namespaces_a_worker_killed_and_another_version_refused(tmp_path):
    src = write_tiffs(tmp_path / "in", 8)
    files = ImageFrames(tuple(map(str, list_frames(src))), (4096, 2160))
    master(MasterJob.of(files, 8, tmp_path / "one", title="t", backend="cpu"), progress=False)
    roles = make_credentials(tmp_path / "tls")
    with hosts(4) as (s, w1, w2, other), processes() as procs:
        scheduler = f"tls://{s.address}:{PORT}"
        procs.append(_scheduler(s, roles, tmp_path / "s.log"))
        procs += [_worker(w, scheduler, roles["worker"], tmp_path / f"{w.ns}.log") for w in (w1, w2)]
        where = parse_address(scheduler, tls=roles["client"], shared=True)
        with connect(where, timeout=60) as cluster:
            cluster.client.wait_for_workers(2, timeout=60)
            pids = cluster.client.run(os.getpid)
            assert sorted(a.split("//")[1].split(":")[0] for a in pids) == sorted([w1.address, w2.address])
            kill_a_worker_during(
                lambda: master(MasterJob.of(SlowFrames(files, 0.5), 8, tmp_path / "cluster", title="t",
                                            cluster=where, backend="cpu"), progress=False),
                cluster.client, pids)
        assert package_codestreams(tmp_path / "one") == package_codestreams(tmp_path / "cluster")

        # a worker whose cinegpu says another version (a preload changes it) is refused at connect
        preload = tmp_path / "other_version.py"
        preload.write_text("import cinegpu\ncinegpu.__version__ = '0.0.0+other'\n")
        procs.append(_worker(other, scheduler, roles["worker"], tmp_path / "other.log", "--preload", str(preload)))
        deadline = time.monotonic() + 90
        while True:                                  # until the third worker has joined
            try:
                with connect(where, timeout=60) as cluster:
                    joined = len(cluster.workers())
            except MediaError as exc:
                refusal = str(exc)
                break
            assert joined < 3 and time.monotonic() < deadline, "a worker of another version was taken"
            time.sleep(0.5)
        assert f"tls://{other.address}:" in refusal and "runs cinegpu 0.0.0+other" in refusal, refusal
        assert "install the same version on every machine" in refusal


@needs_encoder
def test_frames_reach_workers_that_do_not_see_them_over_the_network(tmp_path):
    """Workers on machines without the input files (the folder hidden from them): the frames
    are read by ``master`` and sent over the TLS connections, the package the same as one
    machine writes; told the workers share the files, they cannot read them and the job
    stops naming the frame."""
    src = write_tiffs(tmp_path / "in", 4)
    files = ImageFrames(tuple(map(str, list_frames(src))), (4096, 2160))
    master(MasterJob.of(files, 4, tmp_path / "one", title="t", backend="cpu"), progress=False)
    roles = make_credentials(tmp_path / "tls")
    with hosts(3) as (s, w1, w2), processes() as procs:
        scheduler = f"tls://{s.address}:{PORT}"
        procs.append(_scheduler(s, roles, tmp_path / "s.log"))
        procs += [_worker(w, scheduler, roles["worker"], tmp_path / f"{w.ns}.log", hide=src) for w in (w1, w2)]
        where = parse_address(scheduler, tls=roles["client"])       # a scheduler's: frames sent
        assert not where.shared_files
        with connect(where, timeout=60) as cluster:
            cluster.client.wait_for_workers(2, timeout=60)
            seen = cluster.client.run(os.path.exists, str(src / "f0000.tif"))
            assert len(seen) == 2 and not any(seen.values())           # the workers do not see them
        master(MasterJob.of(files, 4, tmp_path / "sent", title="t", cluster=where, backend="cpu"), progress=False)
        assert package_codestreams(tmp_path / "one") == package_codestreams(tmp_path / "sent")
        shared = parse_address(scheduler, tls=roles["client"], shared=True)
        with pytest.raises(MediaError, match="frame 0"):
            master(MasterJob.of(files, 4, tmp_path / "shared", title="t", cluster=shared, backend="cpu"),
                   progress=False)
