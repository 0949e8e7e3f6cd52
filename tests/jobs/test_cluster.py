"""Mastering and library-wide decode checks on a Dask cluster (:mod:`cinegpu.jobs.cluster`,
:mod:`cinegpu.jobs.cluster_coders`, :mod:`cinegpu.jobs.check_decode`): the same
codestreams as one machine, a lost worker's frames redone, a frame that fails twice one
error naming it with no package left, a scheduler that cannot be reached one line and exit
2, and every failing frame of a library reported.  Local clusters of worker processes run
here on the CPU; the GPU case is marked ``gpu``.

The DCPs' UUIDs and timestamps are random (``uuid4``, ``now``: no deterministic option), so
"the same DCP" is checked as :mod:`test_master_processes` does: the same codestreams, in
order, in the picture track file, and the same track file size (the same MXF layout)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from cinegpu.jobs.master_job import MasterJob
from cinegpu.jobs.mastering import master
from cinegpu.media import MediaError
from cinegpu.media.errors import CorruptMedia
from cinegpu.media.images.frames import ImageFrames, list_frames
from helpers.cluster import SlowFrames, kill_a_worker_during, tls_cluster
from helpers.mastering import DieOn, needs_encoder, package_codestreams, write_tiffs

distributed = pytest.importorskip("distributed", reason="dask distributed is not installed "
                                                        "(pip install 'cinegpu[cluster]')")

from cinegpu.jobs import cluster as cluster_mod  # noqa: E402  (after importorskip: distributed)
from cinegpu.jobs.check_decode import check_library, find_packages  # noqa: E402  (after importorskip: distributed)
from cinegpu.jobs.cluster import ClusterAddress, connect, parse_address  # noqa: E402  (after importorskip: distributed)


def _track(dcp: Path) -> Path:
    (mxf,) = [p for p in dcp.iterdir() if p.suffix == ".mxf" and p.name.startswith("j2c")] or \
        [p for p in dcp.iterdir() if p.suffix == ".mxf"]
    return mxf


def _same_dcp(a: Path, b: Path) -> None:
    assert package_codestreams(a) == package_codestreams(b)
    assert _track(a).stat().st_size == _track(b).stat().st_size


@dataclass(frozen=True)
class _FailOnce:
    """Frames of ``files``; the first read of frame ``k`` fails (it leaves ``mark`` behind)."""

    files: ImageFrames
    k: int
    mark: str

    def __call__(self, i: int):
        if i == self.k and not os.path.exists(self.mark):
            Path(self.mark).touch()
            raise OSError("a transient read error")
        return self.files(i)


def _files(folder: Path) -> ImageFrames:
    return ImageFrames(tuple(map(str, list_frames(folder))), (4096, 2160))


# -- no cluster started -----------------------------------------------------------------------
def test_addresses():
    assert parse_address("local") == ClusterAddress(None, None)
    assert parse_address("local:3") == ClusterAddress(None, 3)
    assert parse_address("tls://10.0.0.5:8786") == ClusterAddress("tls://10.0.0.5:8786")
    assert parse_address("tls://10.0.0.5:8786", tls="/k") == ClusterAddress("tls://10.0.0.5:8786", tls=Path("/k"))
    assert parse_address("tcp://10.0.0.5:8786", insecure=True) == ClusterAddress("tcp://10.0.0.5:8786", insecure=True)
    assert parse_address("render-1:8786", insecure=True) == ClusterAddress("tcp://render-1:8786", insecure=True)
    assert str(ClusterAddress(None, 2)) == "local:2"
    for bad in ("local:0", "local:x", "http://a b", "", "tcp://"):
        with pytest.raises(ValueError):
            parse_address(bad, insecure=True)
    # a plain scheduler runs anyone's tasks: refused unless asked for knowingly
    for plain in ("tcp://10.0.0.5:8786", "render-1:8786", "ucx://10.0.0.5:8786"):
        with pytest.raises(ValueError, match="runs tasks from anyone who reaches it.*--insecure-cluster"):
            parse_address(plain)
    with pytest.raises(ValueError, match="--cluster-tls is for a tls:// scheduler"):
        parse_address("tcp://10.0.0.5:8786", tls="/k", insecure=True)
    with pytest.raises(ValueError, match="a local cluster makes credentials of its own"):
        parse_address("local:2", tls="/k")
    # frames: read by the workers on one machine, sent to a scheduler's unless told otherwise
    assert parse_address("local:2").shared_files and not parse_address("tls://10.0.0.5:8786").shared_files
    assert parse_address("tls://10.0.0.5:8786", shared=True).shared_files
    assert not parse_address("local", shared=False).shared_files


def test_missing_dask_is_one_media_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MediaError, match=r"needs Dask distributed .*pip install "
                                         r"'cinegpu\[cluster\]'"):
        connect("local:1")


def test_unreachable_scheduler_is_one_line_and_status_2(monkeypatch, capsys, tmp_path):
    from cinegpu.player.cli import main
    monkeypatch.setattr(cluster_mod, "CONNECT_TIMEOUT", 0.5)
    src = write_tiffs(tmp_path / "in", 1)
    t0 = time.monotonic()
    status = main(["master", str(src), "-o", str(tmp_path / "out"), "--title", "t",
                   "--backend", "cpu", "--quiet", "--cluster", "tcp://127.0.0.1:9", "--insecure-cluster"])
    err = capsys.readouterr().err
    assert status == 2 and time.monotonic() - t0 < 30
    assert err.count("\n") == 1, err
    assert err.startswith("cinegpu master: tcp://127.0.0.1:9: cannot reach a Dask scheduler "
                          "there within 0.5 s")
    assert not (tmp_path / "out").exists()
    assert main(["check", "--decode", str(tmp_path), "--cluster", "local:0"]) == 2
    assert capsys.readouterr().err == "cinegpu check: --cluster: a local cluster needs at least 1 worker, " \
                                      "got 'local:0'\n"


def test_packages_of_a_library(tmp_path, dcp_samples):
    import shutil
    for name in ("libdcp-dcp_test1-smpte-2k", "libdcp-dcp_test3-interop-2k"):
        shutil.copytree(dcp_samples / name, tmp_path / "lib" / "shelf" / name)
    (tmp_path / "lib" / "empty").mkdir()
    found = find_packages(tmp_path / "lib")
    assert [p.name for p in found] == ["libdcp-dcp_test1-smpte-2k", "libdcp-dcp_test3-interop-2k"]
    assert find_packages(found[0]) == [found[0]]
    with pytest.raises(MediaError, match="not a folder"):
        find_packages(tmp_path / "nothing")


def _master_in_threads(src, out, backend="cpu", **options):
    """The single-machine master the cluster's output is compared with: 2 threads, 1 process."""
    master(MasterJob.of_images(src, out, title="t", processes=1, workers=2, backend=backend,
                               **options), progress=False)


# -- local clusters on the CPU ----------------------------------------------------------------
@pytest.mark.slow
@needs_encoder
def test_cluster_master_writes_the_same_dcp_as_threads(tmp_path):
    src = write_tiffs(tmp_path / "in", 5)
    _master_in_threads(src, tmp_path / "threads")
    dist = master(MasterJob.of_images(src, tmp_path / "cluster", title="t", cluster="local:2",
                                      backend="cpu"), progress=False).stats
    assert (dist.processes, dist.threads) == (2, 1)
    assert 0 < dist.ready_s <= dist.first_s <= dist.total_s
    assert len(package_codestreams(tmp_path / "cluster")) == 5
    _same_dcp(tmp_path / "threads", tmp_path / "cluster")


@pytest.mark.slow
@needs_encoder
def test_frames_sent_to_the_workers_give_the_same_dcp(tmp_path):
    """The frames read here and sent to the workers (what a scheduler's cluster does unless
    the workers share the files): the DCP the threads write; a broken frame is named, read
    here."""
    src = write_tiffs(tmp_path / "in", 5)
    _master_in_threads(src, tmp_path / "threads")
    sent = parse_address("local:2", shared=False)
    master(MasterJob.of_images(src, tmp_path / "cluster", title="t", cluster=sent, backend="cpu"), progress=False)
    _same_dcp(tmp_path / "threads", tmp_path / "cluster")
    victim = src / "f0003.tif"
    victim.write_bytes(victim.read_bytes()[:300])
    with pytest.raises(CorruptMedia) as info:
        master(MasterJob.of_images(src, tmp_path / "out", title="t", cluster=sent, backend="cpu"), progress=False)
    assert info.value.path == str(victim) and info.value.reason.startswith("frame 3: ")
    assert not (tmp_path / "out").exists()


def _corrupt_frame(track: Path, n: int) -> None:
    """Break frame ``n``'s codestream in place: its SIZ marker (bytes 2-3) becomes junk."""
    from cinegpu.media.mxf.read import MXFFile
    with MXFFile(track) as mxf:
        off, _size = mxf.locate_frame(n)
    with open(track, "r+b") as f:
        f.seek(off + 2)
        f.write(b"\x12\x34")


@pytest.mark.slow
def test_check_decode_reports_exactly_the_broken_frame(tmp_path, dcp_samples):
    import shutil
    lib = tmp_path / "lib"
    for name in ("libdcp-dcp_test1-smpte-2k", "libdcp-dcp_test3-interop-2k"):
        shutil.copytree(dcp_samples / name, lib / name)
    with tls_cluster(tmp_path / "tls") as cluster:
        address = cluster.where
        report = check_library(lib, cluster=address, progress=False)
        assert report.ok, report.text()
        assert (report.packages, report.tracks, report.frames) == (2, 2, 48)
        track = next((lib / "libdcp-dcp_test3-interop-2k").glob("j2c_*.mxf"))
        _corrupt_frame(track, 7)
        report = check_library(lib, cluster=address, progress=False, chunk=5)
    assert not report.ok and report.frames == 48 and not report.problems
    (fault,) = report.faults
    assert (Path(fault.track), fault.frame, fault.through) == (track, 7, None)
    assert fault.text().startswith(f"libdcp-dcp_test3-interop-2k: {track.name} frame 7: ")
    assert fault.error == "MisplacedMarker: SIZ must follow SOC at byte 2"
    text = report.text()
    assert f"FAILED: libdcp-dcp_test3-interop-2k: {track.name} frame 7: " in text
    assert text.endswith("FAILED: 1 problem(s)")


@pytest.mark.slow
def test_check_decode_command_here_and_on_a_local_cluster(tmp_path, dcp_samples, capsys):
    """The command: the same report from processes here and from ``local:2``; status 1 for a
    broken frame, an encrypted package a warning."""
    import shutil

    from cinegpu.player.cli import main
    lib = tmp_path / "lib"
    for name in ("libdcp-dcp_test1-smpte-2k", "libdcp-encryption_test-smpte-2k-encrypted"):
        shutil.copytree(dcp_samples / name, lib / name)
    assert main(["check", "--decode", str(lib), "--no-progress", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "decoded 24 frame(s) of 1 picture track file(s) in 2 package(s)" in out
    assert "encrypted, not decoded" in out and out.rstrip().endswith("OK")
    _corrupt_frame(lib / "libdcp-dcp_test1-smpte-2k" / "video.mxf", 23)
    for extra in ([], ["--cluster", "local:2"]):
        assert main(["check", "--decode", str(lib), "--no-progress", *extra]) == 1
        out = capsys.readouterr().out
        assert out.count("FAILED: libdcp-dcp_test1-smpte-2k: video.mxf frame 23: ") == 1


@pytest.mark.slow
@needs_encoder
def test_a_worker_killed_mid_job_changes_nothing(tmp_path):
    src = write_tiffs(tmp_path / "in", 8)
    _master_in_threads(src, tmp_path / "threads")
    with tls_cluster(tmp_path / "tls") as cluster:
        client = cluster.client
        pids = client.run(os.getpid)
        victim = kill_a_worker_during(
            lambda: master(MasterJob.of(SlowFrames(_files(src), 0.5), 8, tmp_path / "cluster", title="t",
                                        cluster=cluster.where, backend="cpu"), progress=False),
            client, pids)
        assert victim not in client.run(os.getpid).values()      # the worker was replaced
    _same_dcp(tmp_path / "threads", tmp_path / "cluster")


@pytest.mark.slow
@needs_encoder
def test_a_frame_that_fails_once_is_coded_again(tmp_path):
    src = write_tiffs(tmp_path / "in", 4)
    _master_in_threads(src, tmp_path / "threads")
    mark = tmp_path / "failed-once"
    master(MasterJob.of(_FailOnce(_files(src), 2, str(mark)), 4, tmp_path / "cluster",
                        title="t", cluster="local:2", backend="cpu"), progress=False)
    assert mark.exists()
    _same_dcp(tmp_path / "threads", tmp_path / "cluster")


@pytest.mark.slow
@needs_encoder
def test_a_corrupt_input_frame_stops_the_job_naming_it(tmp_path):
    src = write_tiffs(tmp_path / "in", 6)
    victim = src / "f0004.tif"
    victim.write_bytes(victim.read_bytes()[:300])
    with pytest.raises(CorruptMedia) as info:
        master(MasterJob.of_images(src, tmp_path / "out", title="t", cluster="local:2",
                                   backend="cpu"), progress=False)
    assert info.value.path == str(victim) and info.value.reason.startswith("frame 4: ")
    assert sorted(os.listdir(tmp_path)) == ["in"]


@pytest.mark.slow
@needs_encoder
def test_a_frame_whose_workers_die_twice_is_one_error(tmp_path):
    src = write_tiffs(tmp_path / "in", 5)
    t0 = time.monotonic()
    with pytest.raises(MediaError, match=r"frame 3: failed 2 times on the cluster at local:2: "
                                         r"KilledWorker"):
        master(MasterJob.of(DieOn(_files(src), 3), 5, tmp_path / "out", title="t",
                            cluster="local:2", backend="cpu"), progress=False)
    assert time.monotonic() - t0 < 120
    assert sorted(os.listdir(tmp_path)) == ["in"]


@pytest.mark.slow
def test_cluster_command_line_mistakes(tmp_path):
    """In a process of its own: one line on stderr, status 2, nothing written."""
    import subprocess
    import sys
    src = write_tiffs(tmp_path / "in", 1)
    cli = [sys.executable, "-m", "cinegpu.player.cli"]
    for extra, want in ((["--cluster", "tcp://127.0.0.1:9", "--insecure-cluster"], "tcp://127.0.0.1:9: cannot reach"),
                        (["--cluster", "tcp://127.0.0.1:9"], "or say --insecure-cluster"),
                        (["--cluster-tls", str(tmp_path)], "go with --cluster"),
                        (["--cluster-frames", "sent"], "go with --cluster"),
                        (["--cluster", "local", "--processes", "2"], "exclude each other"),
                        (["--cluster", "nowhere://x"], "want local, local:N")):
        r = subprocess.run(cli + ["master", str(src), "-o", str(tmp_path / "out"), "--title",
                                  "t", "--backend", "cpu", "--quiet", *extra],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and want in r.stderr, r.stderr
        assert not (tmp_path / "out").exists()


# -- on the GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_cluster_master_writes_the_same_dcp(tmp_path, gpu):
    """A local cluster of one GPU worker (resources GPU=1, 2 threads: each frame asks for
    half of it) against the local GPU master."""
    src = write_tiffs(tmp_path / "in", 6, size=(2048, 1080))
    _master_in_threads(src, tmp_path / "threads", backend="cuda")
    stats = master(MasterJob.of_images(src, tmp_path / "cluster", title="t", cluster="local:1",
                                       workers=2, backend="cuda"), progress=False).stats
    assert (stats.processes, stats.threads) == (1, 2)
    _same_dcp(tmp_path / "threads", tmp_path / "cluster")


def test_a_worker_of_another_version_codes_nothing():
    """A worker that joined after the version check (:func:`.cluster.check_versions`) and runs
    another cinegpu refuses the frame instead of coding it."""
    from cinegpu.jobs.cluster_coders import code_cluster_frame
    from cinegpu.jobs.frame_coders import FrameFailed

    failed = code_cluster_frame(None, 3, "0.0.0+other")
    assert isinstance(failed, FrameFailed) and failed.seq == 3 and failed.kind == "MediaError"
    assert "this machine runs 0.0.0+other" in failed.reason and "same version on every machine" in failed.reason


class _FlakyClient:
    """A client whose first ``fails`` scatters meet a closed connection (a worker killed a
    moment ago, not yet removed by the scheduler)."""

    def __init__(self, fails: int):
        self.fails, self.scattered = fails, []

    def nthreads(self):
        return {"tls://w1": 1}

    def scatter(self, data, **options):
        from distributed.comm.core import CommClosedError
        if self.fails:
            self.fails -= 1
            raise CommClosedError("in <TLS (closed) ConnectionPool.scatter>: Stream is closed")
        self.scattered.append(data)
        return f"future-{len(self.scattered)}"


@dataclass
class _FlakyCluster:
    client: _FlakyClient
    where: str = "tls://scheduler:8786"
    threads: int = 1


@pytest.mark.parametrize("fails", [0, 1, 4, 5])
def test_a_scatter_meeting_a_lost_worker_is_tried_again(monkeypatch, fails):
    """A frame sent to the cluster: a closed connection is tried again (up to SCATTER_TRIES
    times, pausing), then is one MediaError naming the frame and the cluster."""
    from cinegpu.jobs.cluster_coders import ClusterCoders

    pauses = []
    monkeypatch.setattr("cinegpu.jobs.cluster_coders.time.sleep", pauses.append)
    client = _FlakyClient(fails)
    coders = ClusterCoders(_FlakyCluster(client), None, "cpu", send_frames=True)
    if fails < ClusterCoders.SCATTER_TRIES:
        assert coders._scatter(b"frame 7's image", "frame 7") == "future-1"
        assert client.scattered == [b"frame 7's image"]
    else:
        with pytest.raises(MediaError, match=r"^<input>: frame 7: cannot send it to the cluster at "
                                             r"tls://scheduler:8786: CommClosedError: "):
            coders._scatter(b"frame 7's image", "frame 7")
        assert client.scattered == []
    assert len(pauses) == min(fails, ClusterCoders.SCATTER_TRIES - 1)
    assert pauses == sorted(pauses) and len(set(pauses)) == len(pauses)
