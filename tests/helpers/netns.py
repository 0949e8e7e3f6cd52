"""Machines of a test's own: Linux network namespaces on a bridge, each with an address, so
that a scheduler and its workers reach each other only over a network (``ip netns``, a veth
pair per namespace). Needs root and the ``ip`` command: :func:`why_not` says what is missing."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass


def why_not() -> str | None:
    """Why network namespaces cannot be made here, or None."""
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    name = f"cgprobe{secrets.token_hex(3)}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode:
        return f"ip netns add failed: {r.stderr.strip() or r.returncode}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = ["ip", "netns", "exec", ns, "ip", *args] if ns else ["ip", *args]
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


@dataclass(frozen=True)
class Host:
    """A namespace: its name and its address on the bridge."""

    ns: str
    address: str

    def command(self, *argv: str) -> list[str]:
        """``argv`` run inside this namespace."""
        return ["ip", "netns", "exec", self.ns, *argv]


@contextmanager
def hosts(count: int):
    """``count`` :class:`Host` s on a bridge of their own, 10.N.M.2 and on (this namespace is
    10.N.M.1 on it); all removed afterwards."""
    tag = secrets.token_hex(2)
    net = f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(250)}"
    bridge = f"cgbr{tag}"
    made: list[str] = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{net}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        out = []
        for i in range(count):
            ns, outside, inside = f"cg{tag}h{i}", f"cgv{tag}{i}", f"cgp{tag}{i}"
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", ns)
            _ip("link", "set", outside, "master", bridge, "up")
            _ip("addr", "add", f"{net}.{i + 2}/24", "dev", inside, ns=ns)
            _ip("link", "set", inside, "up", ns=ns)
            _ip("link", "set", "lo", "up", ns=ns)
            out.append(Host(ns, f"{net}.{i + 2}"))
        yield out
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
