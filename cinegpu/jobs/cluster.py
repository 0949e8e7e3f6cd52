"""A Dask cluster to spread frames over: a scheduler's address, or a local cluster.

A Dask worker runs whatever function a client of its scheduler sends, so every cluster
cinegpu uses authenticates both ends (Dask's TLS, :mod:`.cluster_tls`):

- ``--cluster local`` or ``local:N`` starts a :class:`distributed.LocalCluster` of N worker
  processes (default: one per CPU core) of one thread each on 127.0.0.1, ended with the
  connection, with throw-away credentials (``Security.temporary()``: a key and certificate
  made in memory for this cluster alone), so another process of this machine cannot join
  it or send it work;
- ``--cluster tls://host:8786 --cluster-tls DIR`` connects to a running ``dask scheduler``
  started with TLS (docs/cluster.md), showing the client certificate of ``DIR``
  (:func:`.cluster_tls.read_credentials`); without ``--cluster-tls``, Dask's own
  configuration (``distributed.comm.tls.*``) must name the files;
- a plain ``tcp://`` (or ``ucx://``) scheduler is refused, unless ``--insecure-cluster``
  says the network is trusted.

Dask is an optional extra (``pip install 'cinegpu[cluster]'``); without it, a missing
scheduler, or a scheduler without workers, :func:`connect` raises one
:class:`.errors.MediaError` saying which.

A local cluster is started without the workers' statistical profiler, and with
``distributed.scheduler.allowed-failures`` at 0, so that a
worker process that dies while it holds a frame fails that frame at once (the callers
resubmit a failed task once under a new key); a remote scheduler keeps its own setting
(Dask's default: a task fails after its workers died 4 times).

GPU-aware scheduling goes through Dask's worker resources: a worker with a GPU advertises
``GPU`` (``--resources GPU=1``, with ``CUDA_VISIBLE_DEVICES`` naming its GPU; best several
one-thread workers a GPU: on the GPU machine a worker of 4 threads took clearly longer a frame
than 4 of one thread, docs/performance.md), and GPU tasks ask for a share of it
(:meth:`Cluster.gpu_share`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import cinegpu
from cinegpu.decode.cpus import usable_cores
from cinegpu.media.errors import MediaError

__all__ = ["CONNECT_TIMEOUT", "Cluster", "ClusterAddress", "check_versions", "connect", "parse_address",
           "worker_version"]

#: Seconds to reach a scheduler, and to wait for its first worker.
CONNECT_TIMEOUT = 5.0
#: Seconds a local cluster's worker processes may take to start (imports).
LOCAL_START_TIMEOUT = 120.0

_INSTALL = "pip install 'cinegpu[cluster]' (or: pip install 'dask[distributed]')"


#: Why a plain tcp:// scheduler is refused, and the ways out.
PLAIN = ("a Dask scheduler at a plain {scheme}:// address runs tasks from anyone who reaches it, "
         "in your workers: start it with TLS and give tls://HOST:PORT with --cluster-tls DIR "
         "(docs/cluster.md), or say --insecure-cluster on a network you trust")


@dataclass(frozen=True)
class ClusterAddress:
    """Where the cluster is: a scheduler's ``address`` (``tls://host:8786``), or None for
    a local cluster of ``workers`` processes (None: one per CPU core). ``tls``: the folder of
    this side's TLS credentials for a ``tls://`` scheduler (:mod:`.cluster_tls`; None: Dask's
    configuration); ``insecure``: a plain ``tcp://`` scheduler was asked for knowingly.
    ``shared``: whether the workers see the input files at the same paths (shared storage) and
    read them themselves; else this machine reads each frame and sends it to the worker that
    codes it, over the cluster's connections. None: shared for a local cluster (the same
    machine), sent for a scheduler's."""

    address: str | None
    workers: int | None = None
    tls: Path | None = None
    insecure: bool = False
    shared: bool | None = None

    @property
    def local(self) -> bool:
        return self.address is None

    @property
    def shared_files(self) -> bool:
        """Whether the workers read the input files themselves (see ``shared``)."""
        return self.local if self.shared is None else self.shared

    def __str__(self) -> str:
        if self.address is not None:
            return self.address
        return "local" if self.workers is None else f"local:{self.workers}"


def parse_address(text: str, *, tls=None, insecure: bool = False, shared: bool | None = None) -> ClusterAddress:
    """``local``, ``local:N`` (N >= 1), ``tls://host:port``, or with ``insecure``
    ``tcp://host:port``, ``ucx://host:port`` or ``host:port`` (taken as tcp); ``tls``: the
    folder of the client's credentials, for a ``tls://`` address only; ``shared``: as
    :class:`ClusterAddress` has it. ValueError otherwise, saying why (:data:`PLAIN` for a
    plain address without ``insecure``)."""
    t = text.strip()
    m = re.fullmatch(r"local(?::(\d+))?", t)
    if m:
        n = None if m.group(1) is None else int(m.group(1))
        if n is not None and n < 1:
            raise ValueError(f"a local cluster needs at least 1 worker, got {t!r}")
        if tls is not None:
            raise ValueError("--cluster-tls is for a tls:// scheduler; a local cluster makes "
                             "credentials of its own")
        return ClusterAddress(None, n, shared=shared)
    if "://" not in t:
        t = "tcp://" + t
    if not re.fullmatch(r"(tcp|tls|ucx)://([^\s/:\[\]]+|\[[0-9A-Fa-f:.]+\])(:\d+)?/?", t):
        raise ValueError(f"want local, local:N or a scheduler address such as "
                         f"tls://host:8786, got {text!r}")
    scheme = t.split("://")[0]
    if scheme != "tls":
        if not insecure:
            raise ValueError(PLAIN.format(scheme=scheme))
        if tls is not None:
            raise ValueError(f"--cluster-tls is for a tls:// scheduler, not {scheme}://")
    return ClusterAddress(t.rstrip("/"), tls=None if tls is None else Path(tls), insecure=insecure, shared=shared)


def distributed_module():
    """The ``distributed`` package, or a MediaError saying how to install it."""
    try:
        import distributed  # noqa: PLC0415  (optional: dask.distributed)
    except ImportError as exc:
        raise MediaError(None, f"--cluster needs Dask distributed ({exc.name or exc} is not "
                               f"installed): {_INSTALL}") from None
    return distributed


class Cluster:
    """A connection (``client``) to a Dask scheduler, and the local cluster it runs when
    started by :func:`connect` for ``local``; close() ends both."""

    def __init__(self, where: ClusterAddress, client, local=None):
        self.where, self.client, self._local = where, client, local

    def workers(self) -> dict[str, dict]:
        """The scheduler's workers: address -> Dask's worker info (``nthreads``,
        ``resources``, ...)."""
        return dict(self.client.scheduler_info(n_workers=-1).get("workers", {}))

    @property
    def threads(self) -> int:
        """Worker threads in the cluster now (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def gpu_workers(self) -> dict[str, dict]:
        """The workers that advertise a ``GPU`` resource."""
        return {a: w for a, w in self.workers().items()
                if (w.get("resources") or {}).get("GPU", 0) > 0}

    def gpu_share(self) -> float:
        """The ``GPU`` resource one task asks for: the smallest GPU amount per worker thread
        among the GPU workers (1.0 for a worker of one thread and GPU=1, 0.25 for four
        threads), so that every thread of a GPU worker codes a frame at once, as the threads
        of one encoder process share its GPU; MediaError when no worker has a GPU."""
        gpus = self.gpu_workers()
        if not gpus:
            raise MediaError(str(self.where), "no worker of the cluster offers a GPU: start "
                                              "GPU workers with --resources GPU=1")
        return min(w["resources"]["GPU"] / max(1, w.get("nthreads", 1)) for w in gpus.values())

    def close(self) -> None:
        """Disconnect; a local cluster's workers and scheduler are ended."""
        try:
            self.client.close()
        finally:
            if self._local is not None:
                self._local.close()
                self._local = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(where: ClusterAddress | str, *, threads: int = 1, resources: dict | None = None,
            timeout: float | None = None) -> Cluster:
    """Connect to the scheduler at ``where``, or start a local cluster of ``where.workers``
    processes of ``threads`` threads each (``resources``: what each local worker offers,
    e.g. ``{"GPU": 1}``), and wait up to ``timeout`` seconds for a worker.  MediaError when
    Dask is not installed, the scheduler cannot be reached in ``timeout`` seconds, or it has
    no worker.  ``timeout`` None: :data:`CONNECT_TIMEOUT`."""
    if isinstance(where, str):
        where = parse_address(where)
    distributed = distributed_module()
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    if where.local:
        return _local(where, distributed, threads, resources)
    security = _security(where, distributed)
    try:
        client = distributed.Client(where.address, timeout=timeout, set_as_default=False,
                                    security=security)
    except (OSError, TimeoutError) as exc:
        raise MediaError(where.address, f"cannot reach a Dask scheduler there within "
                                        f"{timeout:g} s ({type(exc).__name__}: "
                                        f"{str(exc).splitlines()[0] if str(exc) else 'no answer'})"
                         ) from None
    cluster = Cluster(where, client)
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError):
        cluster.close()
        raise MediaError(where.address, f"the Dask scheduler has no workers (none joined "
                                        f"within {timeout:g} s): start some with "
                                        f"dask worker {where.address}") from None
    try:
        check_versions(cluster)
    except BaseException:
        cluster.close()
        raise
    return cluster


def worker_version() -> str:
    """This process's cinegpu version (run on each worker by :func:`check_versions`)."""
    return cinegpu.__version__


def check_versions(cluster: Cluster) -> None:
    """MediaError naming each worker that runs another cinegpu version than this process, or
    none: a frame coded by another version could differ from this machine's."""
    try:
        versions = cluster.client.run(worker_version, on_error="return")
    except (OSError, TimeoutError) as exc:
        raise MediaError(str(cluster.where), f"cannot ask the workers their cinegpu version: {exc}") from None
    def said(v) -> str:         # a version, or the exception of a worker that has no cinegpu
        return f"runs cinegpu {v}" if isinstance(v, str) else f"has no cinegpu ({type(v).__name__})"

    wrong = sorted((w, said(v)) for w, v in versions.items() if v != cinegpu.__version__)
    if wrong:
        what = "; ".join(f"{w} {text}" for w, text in wrong)
        raise MediaError(str(cluster.where), f"workers of another cinegpu than this machine's "
                                             f"{cinegpu.__version__}: {what}; install the same "
                                             f"version on every machine")


def _security(where: ClusterAddress, distributed):
    """Dask's Security for a remote scheduler: the client credentials of ``where.tls``
    (required both ways); None (Dask's configuration) when no folder was given."""
    if where.tls is None:
        import dask  # noqa: PLC0415  (optional: dask.distributed)
        if where.address.startswith("tls://") and not dask.config.get("distributed.comm.tls.ca-file", None):
            raise MediaError(where.address, "a tls:// scheduler needs this side's credentials: "
                                            "--cluster-tls DIR (ca.pem, cert.pem, key.pem; "
                                            "cinegpu cluster-tls makes them)")
        return None
    from cinegpu.jobs.cluster_tls import read_credentials  # noqa: PLC0415  (start-up: cryptography, for tls:// only)

    c = read_credentials(where.tls)
    return distributed.Security(tls_ca_file=c.ca, tls_client_cert=c.cert, tls_client_key=c.key,
                                require_encryption=True)


def _local(where: ClusterAddress, distributed, threads: int, resources: dict | None) -> Cluster:
    """A LocalCluster of worker processes, its scheduler in this process, every connection
    TLS with credentials made for it alone (in memory; Dask hands them to its workers)."""
    import dask  # noqa: PLC0415  (optional: dask.distributed)
    workers = where.workers or usable_cores()
    security = distributed.Security.temporary()
    # no statistical profiler in the workers: it samples every thread's stack each 10 ms,
    # holding the GIL that the encoders' Python steps need
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.worker.profile.enabled": False}):
        local = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=threads, processes=True,
            host="127.0.0.1", dashboard_address=None, resources=resources,
            security=security, protocol="tls://",
            # no dashboard; the scheduler's HTTP routes on a free port of this machine
            # (by default they try 8787, warning when another cluster has it)
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            # the scheduler's and workers' own log lines about a dying worker: the callers
            # report what it costs (a frame redone, or one error)
            silence_logs=logging.CRITICAL)
    try:
        client = distributed.Client(local, set_as_default=False, security=security)
        client.wait_for_workers(workers, timeout=LOCAL_START_TIMEOUT)
    except BaseException:
        local.close()
        raise
    return Cluster(where, client, local)
