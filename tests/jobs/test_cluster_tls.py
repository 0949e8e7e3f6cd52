"""TLS for Dask clusters (:mod:`cinegpu.jobs.cluster_tls`, :mod:`cinegpu.jobs.cluster`): the
credentials ``cinegpu cluster-tls`` makes, the checks on reading them, a local cluster no
other process can use, and a scheduler and workers started as docs/cluster.md says (the
``dask`` command with the made files) that cinegpu reaches with ``--cluster-tls`` only."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography import x509

from cinegpu.jobs.cluster_tls import CA_FILE, CERT_FILE, KEY_FILE, make_credentials, read_credentials
from cinegpu.media.errors import ExposedKey, MediaError
from helpers.cluster import dask_command, processes, tls_options


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_credentials_are_private_and_chain_to_their_ca(tmp_path):
    old = os.umask(0)
    try:
        made = make_credentials(tmp_path / "tls", days=30)
    finally:
        os.umask(old)
    assert set(made) == {"scheduler", "worker", "client"}
    ca = x509.load_pem_x509_certificate((tmp_path / "tls" / "ca" / CA_FILE).read_bytes())
    assert _mode(tmp_path / "tls") == _mode(tmp_path / "tls" / "ca") == 0o700
    assert _mode(tmp_path / "tls" / "ca" / "ca.key") == 0o600
    for role, folder in made.items():
        assert folder == tmp_path / "tls" / role and _mode(folder) == 0o700
        assert _mode(folder / KEY_FILE) == 0o600
        assert (folder / CA_FILE).read_bytes() == (tmp_path / "tls" / "ca" / CA_FILE).read_bytes()
        cert = x509.load_pem_x509_certificate((folder / CERT_FILE).read_bytes())
        cert.verify_directly_issued_by(ca)
        assert role in cert.subject.rfc4514_string()
        c = read_credentials(folder)
        assert c.key.startswith("-----BEGIN PRIVATE KEY-----") and "key=<hidden>" in repr(c)
        assert "BEGIN PRIVATE KEY" not in repr(c)
    with pytest.raises(MediaError, match="exist there already; choose another folder"):
        make_credentials(tmp_path / "tls")
    for bad in ("ca", "", "a/b", ".x"):
        with pytest.raises(ValueError, match="a role is a plain folder name"):
            make_credentials(tmp_path / "other", (bad,))


def test_credentials_are_read_only_when_safe(tmp_path):
    client = make_credentials(tmp_path / "tls", ("client",))["client"]
    (client / KEY_FILE).chmod(0o644)
    with pytest.raises(ExposedKey, match=r"cluster private key is open to others \(mode 644\).*chmod 600"):
        read_credentials(client)
    (client / KEY_FILE).chmod(0o600)
    (client / CERT_FILE).write_text("not a certificate\n")
    with pytest.raises(MediaError, match="not a PEM certificate"):
        read_credentials(client)
    (client / CERT_FILE).unlink()
    (client / CERT_FILE).symlink_to("/dev/zero")
    with pytest.raises(MediaError) as info:          # a device is refused, never read to the end
        read_credentials(client)
    assert str(client / CERT_FILE) in str(info.value)
    with pytest.raises(MediaError, match="not a folder of cluster TLS credentials.*cinegpu cluster-tls"):
        read_credentials(tmp_path / "nowhere")


def test_cluster_tls_command(tmp_path):
    from cinegpu.player.cli import main
    assert main(["cluster-tls", str(tmp_path / "c"), "--role", "render", "--days", "2"]) == 0
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["ca", "render"]
    r = subprocess.run([sys.executable, "-m", "cinegpu.player.cli", "cluster-tls", str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nothing was overwritten" in r.stderr


distributed = pytest.importorskip("distributed", reason="dask distributed is not installed "
                                                        "(pip install 'cinegpu[cluster]')")

from cinegpu.jobs.cluster import connect, parse_address  # noqa: E402  (after importorskip: distributed)


def _refused(address: str, security=None) -> str:
    """How a client of ``address`` with ``security`` fails (AssertionError when it connects)."""
    try:
        client = distributed.Client(address, timeout=3, set_as_default=False, security=security)
    except Exception as exc:        # noqa: BLE001 - any refusal will do; its kind is returned
        return type(exc).__name__
    client.close()
    raise AssertionError(f"a client of {address} connected with {security!r}")


@pytest.mark.slow  # long: a local cluster of worker processes
def test_a_local_cluster_takes_no_one_elses_work():
    with connect("local:1") as cluster:
        address = cluster.client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert all(w.startswith("tls://") for w in cluster.workers())
        assert cluster.client.submit(sum, [1, 2]).result() == 3
        _refused(address.replace("tls://", "tcp://"))              # plain TCP: no TLS handshake
        _refused(address, distributed.Security.temporary())      # TLS with another CA's certificate


@pytest.mark.slow  # long: a dask scheduler and worker started as processes
def test_a_tls_scheduler_started_as_documented(tmp_path):
    """``dask scheduler`` and ``dask worker`` with the files ``cinegpu cluster-tls`` made
    (docs/cluster.md): cinegpu reaches them with the client folder, and with nothing else."""
    from cinegpu.jobs.cluster import Cluster

    roles = make_credentials(tmp_path / "tls")
    files = {r: tls_options(d) for r, d in roles.items()}
    info = tmp_path / "scheduler.json"
    with processes() as procs:
        procs.append(subprocess.Popen(dask_command(
            "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
            "127.0.0.1:0", "--scheduler-file", str(info), *files["scheduler"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tls://127.0.0.1:")
        procs.append(subprocess.Popen(dask_command("worker", address, "--nthreads", "1", "--no-dashboard",
                                                   *files["worker"]),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with connect(parse_address(address, tls=roles["client"]), timeout=60) as cluster:
            assert isinstance(cluster, Cluster) and cluster.threads == 1
            assert cluster.client.submit(sum, [2, 3]).result() == 5
        with pytest.raises(MediaError, match="needs this side's credentials: --cluster-tls DIR"):
            connect(parse_address(address))
        _refused(address.replace("tls://", "tcp://"))
        _refused(address, distributed.Security.temporary())
