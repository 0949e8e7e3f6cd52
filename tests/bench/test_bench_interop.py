"""The interop benchmark's arguments and its one-line refusal where it cannot run (its GPU
rows: tests/interop/test_interop_gpu.py)."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from cinegpu.bench import interop as bench


def test_size_is_width_by_height():
    assert bench._size("4096x2160") == (4096, 2160)
    assert bench._size("7X5") == (7, 5)
    for bad in ("4096", "0x10", "ax2", "20000x10"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench._size(bad)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_without_cupy_it_says_why_in_one_line(capsys):
    assert bench.main(["--size", "64x64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interop bench: cannot run here: ") and "cupy" in err[0]
