"""The whole encrypted round trip as a user runs it, every step our own command line:
``cinegpu master --encrypt`` (two reels), ``cinegpu kdm chain`` for a distributor and for a
projector, ``cinegpu kdm make`` from the master's key file, ClairMeta's check of both packages (the
encrypted one with the KDM and the key), then ``cinegpu play --kdm --key`` shows what the clear
master of the same frames shows, in both reels, with nothing dropped."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cinegpu.jobs.demo import demo_frame
from cinegpu.media.images.png import read_png16
from cinegpu.media.security.content_keys import read_key_file
from helpers.cli import cinegpu
from helpers.kdm_commands import kdm_by_command
from helpers.mastering import clairmeta_ok, needs_encoder, write_png16

FRAMES = 48                     # two reels of one second at 24 fps


@pytest.mark.slow                       # two masters and two plays of two seconds at 4 fps: 35 s
@needs_encoder
def test_our_encrypted_master_plays_with_the_kdm_we_make(tmp_path, gl):
    frames = tmp_path / "frames"
    frames.mkdir()
    for i in range(4):
        write_png16(frames / f"f{i}.png", demo_frame(9 * i, 128, 72))
    common = [str(frames), "--title", "round trip", "--frames", str(FRAMES), "--reel-length", "1", "--quiet"]
    keys = tmp_path / "keys.txt"
    for name, extra in (("clear", []), ("enc", ["--encrypt", "--keys", str(keys)])):
        r = cinegpu("master", *common, "-o", str(tmp_path / name), *extra)
        assert r.returncode == 0, r.stderr
    key_hex = [k.key.hex() for k in read_key_file(keys).keys]
    assert len(key_hex) == 2            # a picture track file per reel, each its own key
    (cpl,) = (tmp_path / "enc").glob("*cpl*.xml") or [p for p in (tmp_path / "enc").glob("*.xml")
                                                      if b"CompositionPlaylist" in p.read_bytes()[:400]]
    kdm, projector_key = kdm_by_command(tmp_path, cpl, keys)
    # ClairMeta checks the encrypted package with the KDM and the projector's key, and the clear one
    clairmeta_ok(tmp_path / "enc", kdm=kdm, key=projector_key)
    clairmeta_ok(tmp_path / "clear")
    shots = {}
    for name, extra in (("clear", []), ("enc", ["--kdm", str(kdm), "--key", str(projector_key)])):
        shots[name] = [tmp_path / f"{name}-{n}.png" for n in (5, 30)]     # reel 1 and reel 2
        r = cinegpu("play", "--headless", "--audio", "null", "--backend", "cpu", "--fps", "4",
                    *(f for n, s in zip((5, 30), shots[name]) for f in ("--screenshot", f"{n}:{s}")),
                    str(tmp_path / name), *extra)
        assert r.returncode == 0, r.stderr
        assert re.search(rf"shown {FRAMES}\b", r.stdout) and re.search(r"dropped 0\b", r.stdout), r.stdout
        assert re.search(r"errors 0\b", r.stdout), r.stdout
        for k in key_hex:
            assert k not in r.stdout and k not in r.stderr
    for enc, clear in zip(shots["enc"], shots["clear"]):
        np.testing.assert_array_equal(read_png16(enc), read_png16(clear))
    assert not np.array_equal(read_png16(shots["enc"][0]), read_png16(shots["enc"][1]))
    # without the KDM the package is refused, naming what is missing
    r = cinegpu("play", "--headless", "--audio", "null", str(tmp_path / "enc"))
    assert r.returncode == 2 and "KDM" in r.stderr, r.stderr
