"""A Dask cluster as a remote one would be: TLS with credentials on disk made by
:func:`cinegpu.jobs.cluster_tls.make_credentials`, its scheduler and workers here."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cinegpu.jobs.cluster import ClusterAddress, parse_address
from cinegpu.jobs.cluster_tls import CA_FILE, CERT_FILE, KEY_FILE, make_credentials
from cinegpu.media.images.frames import ImageFrames


@dataclass(frozen=True)
class SlowFrames:
    """Frames of ``files``, each read taking ``delay`` seconds more (frames stay in flight)."""

    files: ImageFrames
    delay: float

    def __call__(self, i: int):
        time.sleep(self.delay)
        return self.files(i)


def dask_command(*args: str) -> list[str]:
    """The ``dask`` command beside this Python."""
    exe = Path(sys.executable).with_name("dask")
    return [str(exe) if exe.exists() else shutil.which("dask") or "dask", *args]


def tls_options(folder: Path) -> list[str]:
    """The ``dask scheduler`` / ``dask worker`` options for a role's credentials folder."""
    return ["--tls-ca-file", str(folder / CA_FILE), "--tls-cert", str(folder / CERT_FILE),
            "--tls-key", str(folder / KEY_FILE)]


@dataclass(frozen=True)
class TlsCluster:
    """The scheduler's ``address`` (tls://), the client credentials' folder, the Dask client
    of the test (for its own looks at the workers), and the credentials' folder per role."""

    address: str
    client_dir: Path
    client: object
    roles: dict

    @property
    def where(self) -> ClusterAddress:
        """What ``--cluster ADDRESS --cluster-tls CLIENT_DIR`` gives."""
        return parse_address(self.address, tls=self.client_dir)


def security(roles: dict):
    """Dask's Security for a scheduler and workers holding the ``scheduler`` and ``worker``
    credentials (the test's own client shows the worker's)."""
    import distributed

    s, w = roles["scheduler"], roles["worker"]
    return distributed.Security(
        tls_ca_file=str(s / CA_FILE), tls_scheduler_cert=str(s / CERT_FILE), tls_scheduler_key=str(s / KEY_FILE),
        tls_worker_cert=str(w / CERT_FILE), tls_worker_key=str(w / KEY_FILE),
        tls_client_cert=str(w / CERT_FILE), tls_client_key=str(w / KEY_FILE), require_encryption=True)


@contextmanager
def tls_cluster(folder: Path, workers: int = 2):
    """A :class:`TlsCluster` of ``workers`` one-thread worker processes on 127.0.0.1, with
    ``allowed-failures`` 0 as cinegpu's local clusters (a task whose worker dies fails)."""
    import dask
    import distributed

    roles = make_credentials(folder)
    sec = security(roles)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.worker.profile.enabled": False}):
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None, security=sec, protocol="tls://",
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=logging.CRITICAL)
    try:
        client = distributed.Client(cluster, security=sec, set_as_default=False)
        try:
            client.wait_for_workers(workers, timeout=120)
            yield TlsCluster(cluster.scheduler_address, roles["client"], client, roles)
        finally:
            client.close()
    finally:
        cluster.close()


@contextmanager
def processes():
    """A list to put started processes in; each is terminated at the end (killed after 20 s)."""
    procs: list[subprocess.Popen] = []
    try:
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def kill_a_worker_during(job, client, pids: dict) -> int:
    """Run ``job()`` in a thread and SIGKILL the worker process (of ``pids``: worker address ->
    pid) that first holds a frame task; the job must then end without an error. The pid killed."""
    errors: list[BaseException] = []

    def run():
        try:
            job()
        except BaseException as exc:      # noqa: BLE001 - handed to the test's thread
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline:
        for worker, keys in client.processing().items():
            if any(str(k).startswith("cinegpu-frame-") for k in keys) and worker in pids:
                victim = pids[worker]
                break
        time.sleep(0.1)
    assert victim is not None, "no frame reached a worker"
    time.sleep(0.3)
    os.kill(victim, signal.SIGKILL)
    t.join(timeout=300)
    assert not t.is_alive() and not errors, errors
    return victim
