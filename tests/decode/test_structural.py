"""Structural edits (tests/helpers/structural.py) of the differential harness's streams: markers
added, tile-parts dropped, repeated, swapped or cut, pointer fields changed; what OpenJPEG
decodes of them we decode to its samples (issue 48). The quick pass edits :data:`QUICK` seeds'
streams, the slow pass (``-m slow``) :data:`SLOW` more. A failure names its seed and edit."""

from __future__ import annotations

import shutil

import pytest

from helpers.differential import ENCODERS, available, made_streams
from helpers.structural import check_edit, edits

QUICK = range(41_000, 41_008)
SLOW = range(50_000, 50_400)
#: the encoders of other tools (our own encoder's streams are the other tests')
TOOLS = tuple(t for t in ENCODERS if t != "cinegpu" and available(t))
pytestmark = pytest.mark.skipif(shutil.which("opj_decompress") is None,
                                reason="opj_decompress is not installed (libopenjp2-tools): no reference")


def _run(seeds: range, tmp_path) -> int:
    problems, checked = [], 0
    for seed, case, data, folder in made_streams(seeds, TOOLS, tmp_path, cut_share=0.0):
        try:
            edited = list(edits(data, seed))
        except Exception:       # noqa: BLE001  (a stream our parser refuses: the differential tests judge it)
            shutil.rmtree(folder)
            continue
        for name, stream in edited:
            checked += 1
            problem = check_edit(name, stream, data, case.lossy, folder)
            if problem:
                problems.append(f"seed {seed} ({case.id}, {case.args}): {name}: {problem}")
        shutil.rmtree(folder)
    assert not problems, "\n".join(problems)
    return checked


def test_quick(tmp_path):
    assert _run(QUICK, tmp_path) > 50


@pytest.mark.slow
def test_slow(tmp_path):
    assert _run(SLOW, tmp_path) > 2_000
