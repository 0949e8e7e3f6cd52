"""KDMs made the way a user makes them, through ``cinegpu kdm chain`` and ``cinegpu kdm make``:
a distributor's chain signs, a projector's chain receives."""

from __future__ import annotations

from pathlib import Path

from helpers.cli import cinegpu


def kdm_by_command(folder: Path, cpl: Path, keys: Path) -> tuple[Path, Path]:
    """A KDM for ``cpl``'s content keys (the key file ``keys``) valid from an hour ago for two
    days, made in ``folder`` by the command line: (the KDM, the projector's private key)."""
    for who, role in (("distributor", "CS"), ("projector", "SM")):
        r = cinegpu("kdm", "chain", "-o", str(folder / who), "--organisation", f"{who}.test", "--role", role)
        assert r.returncode == 0, r.stderr
    kdm = folder / "kdm.xml"
    r = cinegpu("kdm", "make", "--cpl", str(cpl), "--keys", str(keys),
                "--recipient", str(folder / "projector" / "leaf.signed.pem"),
                "--signer-key", str(folder / "distributor" / "leaf.key"),
                "--signer-chain", str(folder / "distributor" / "chain.pem"),
                "--not-before=-1h", "--not-after=+2d", "-o", str(kdm))
    assert r.returncode == 0, r.stderr
    return kdm, folder / "projector" / "leaf.key"
