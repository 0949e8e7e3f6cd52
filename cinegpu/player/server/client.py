"""Start a ``cinegpu serve`` process and talk to it (stdlib only): the tests' harness and the
status-polling bench.

    python -m cinegpu.player.server.client --sequence '../shared/bench-frames/f4k_*.j2c' --repeat 60 \\
        --backend cuda --hz 20 --seconds 30

starts the server (headless, on a free loopback port, with a token of its own passed through
``$CINEGPU_SERVE_TOKEN``) over a library holding one sequence of the files matched, copied into
the library and repeated (symlinks inside the library, so every frame is decoded), loads it looping, plays it and
polls ``GET /api/v1/status`` ``--hz`` times a second for ``--seconds``; then SIGTERMs the server
and prints one JSON line: frames shown, dropped and late, achieved fps, polls answered and their
latency.  Exit status 0 when nothing was dropped, every poll answered and the server exited 0.
``--library DIR --cpl ID`` plays a composition of an existing library instead.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["ServerProcess", "request", "rss_bytes"]


class ServerProcess:
    """``cinegpu serve --library DIR --listen 127.0.0.1:0 --headless ARGS...`` as a child process.

    ``token``: "auto" (a fresh random token, given through ``$CINEGPU_SERVE_TOKEN``), a token to
    give that way, or None (none given: ``$CINEGPU_SERVE_TOKEN`` is removed; ARGS say what to do,
    e.g. ``--no-token`` or ``--token-file``).  ``self.token`` is the token given, or None.
    ``url`` is set once the server printed its listening line (within ``timeout`` seconds).
    :meth:`stop` sends SIGTERM and waits; its result is the exit status.
    """

    def __init__(self, library, *args: str, timeout: float = 120.0, env: dict | None = None,
                 token: str | None = "auto") -> None:
        cmd = [sys.executable, "-m", "cinegpu.player.cli", "serve", "--library", str(library),
               "--listen", "127.0.0.1:0", "--headless", *args]
        self.token = secrets.token_urlsafe(24) if token == "auto" else token
        environ = {k: v for k, v in os.environ.items() if k != "CINEGPU_SERVE_TOKEN"}
        if self.token is not None:
            environ["CINEGPU_SERVE_TOKEN"] = self.token
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**environ, **(env or {})})
        self.stderr: list[str] = []
        self.stdout: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr), daemon=True).start()
        line = self._first_line(timeout)
        if "listening on " not in line:
            self.stop(5)
            raise RuntimeError(f"server did not start: {line!r}; stderr: {''.join(self.stderr)[-2000:]}")
        self.url = line.split("listening on ", 1)[1].split()[0]
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.stdout), daemon=True).start()

    @staticmethod
    def _pump(stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)
            del sink[:-200]

    def _first_line(self, timeout: float) -> str:
        box: list[str] = []
        t = threading.Thread(target=lambda: box.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        return box[0] if box else ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def request(url: str, method: str = "GET", body=None, *, token: str | None = None, timeout: float = 10.0,
            headers: dict | None = None) -> tuple[int, object]:
    """(status, decoded JSON or text) of one request; HTTP errors are returned, not raised.  A POST
    is sent as application/json even without a body (the server refuses other POSTs)."""
    data = None if body is None else json.dumps(body).encode()
    json_type = data is not None or method not in ("GET", "HEAD")
    h = {"Accept": "application/json", **({"Content-Type": "application/json"} if json_type else {}),
         **({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw, ctype = r.status, r.read(), r.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        status, raw, ctype = exc.code, exc.read(), exc.headers.get("content-type", "")
    return status, (json.loads(raw) if "json" in ctype and raw else raw.decode(errors="replace"))


def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` (Linux /proc), bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def make_sequence(pattern: str, repeat: int, folder: Path) -> Path:
    """A folder of symlinks cycling ``repeat`` times through the files matching ``pattern``, which
    are linked or copied into ``folder/.frames`` first (the library serves nothing outside it)."""
    files = sorted(glob.glob(pattern))
    if not files:
        raise SystemExit(f"no files match {pattern!r}")
    store = folder / ".frames"
    store.mkdir(parents=True)
    local = []
    for i, f in enumerate(files):
        dst = store / f"{i:06d}{Path(f).suffix}"
        try:
            os.link(f, dst)
        except OSError:
            shutil.copyfile(f, dst)
        local.append(dst)
    seq = folder / "sequence"
    seq.mkdir(parents=True)
    suffix = Path(files[0]).suffix
    for k in range(repeat * len(files)):
        (seq / f"f{k:06d}{suffix}").symlink_to(local[k % len(local)])
    return seq


def poll_bench(base: str, *, cpl: str | None, hz: float, seconds: float, token: str | None = None,
               loop: bool = True, load_timeout: float = 300.0) -> dict:
    """Load, play and poll status ``hz`` times a second for ``seconds``; the summary."""
    api = base + "/api/v1"
    status, lib = request(api + "/library", token=token)
    if status != 200 or not lib["compositions"]:
        raise RuntimeError(f"library: {status} {lib}")
    entry = next((c for c in lib["compositions"] if cpl is None or c["id"] == cpl), None)
    if entry is None:
        raise RuntimeError(f"no composition {cpl} in {[c['id'] for c in lib['compositions']]}")
    status, st = request(api + "/load", "POST", {"cpl": entry["id"], "loop": loop}, token=token,
                         timeout=load_timeout)
    if status != 200:
        raise RuntimeError(f"load: {status} {st}")
    request(api + "/play", "POST", {}, token=token)
    deadline = time.monotonic() + 60
    while st.get("state") != "playing" and time.monotonic() < deadline:
        time.sleep(0.05)
        _, st = request(api + "/status", token=token)
    first, t0 = st, time.monotonic()
    answered = failed = 0
    latencies = []
    period = 1.0 / hz
    next_t = t0
    while time.monotonic() - t0 < seconds:
        q0 = time.monotonic()
        try:
            code, st = request(api + "/status", token=token, timeout=5)
            answered += code == 200
            failed += code != 200
        except OSError:
            failed += 1
        latencies.append(time.monotonic() - q0)
        next_t += period
        time.sleep(max(0.0, next_t - time.monotonic()))
    elapsed = time.monotonic() - t0
    latencies.sort()
    return {"composition": entry["id"], "title": entry["title"], "backend": st.get("backend"),
            "interop": st.get("interop"), "seconds": round(elapsed, 2), "edit_rate": st.get("edit_rate"),
            "shown": st["shown"] - first["shown"], "dropped": st["dropped"] - first["dropped"],
            "late": st["late"] - first["late"], "frame_errors": st["frame_errors"],
            "dropped_at": st.get("dropped_at", ""),
            "fps": round((st["shown"] - first["shown"]) / elapsed, 2), "decode_fps": st.get("decode_fps"),
            "polls": answered, "poll_failures": failed,
            "poll_ms_median": round(1e3 * latencies[len(latencies) // 2], 2) if latencies else None,
            "poll_ms_max": round(1e3 * latencies[-1], 2) if latencies else None,
            "errors": st.get("errors", [])[-3:]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--sequence", metavar="GLOB", help="codestream files to play as one sequence")
    src.add_argument("--library", metavar="DIR", help="an existing library folder")
    ap.add_argument("--repeat", type=int, default=30, help="with --sequence: times through the files")
    ap.add_argument("--cpl", help="with --library: the composition id (default: the first)")
    ap.add_argument("--hz", type=float, default=20.0, help="status polls per second")
    ap.add_argument("--seconds", type=float, default=30.0, help="how long to poll while playing")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--start-timeout", type=float, default=300.0)
    ap.add_argument("serve_args", nargs="*", help="more `cinegpu serve` options (after --)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        library = Path(args.library) if args.library else make_sequence(args.sequence, args.repeat, Path(tmp)).parent
        server = ServerProcess(library, "--backend", args.backend, *args.serve_args, timeout=args.start_timeout)
        try:
            summary = poll_bench(server.url, cpl=args.cpl, hz=args.hz, seconds=args.seconds, token=server.token)
        finally:
            code = server.stop()
        summary["server_exit"] = code
        print(json.dumps(summary))
    ok = summary["dropped"] == 0 and summary["poll_failures"] == 0 and code == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
