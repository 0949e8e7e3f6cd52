"""The first run compiles on purpose and says so (jobs/first_run.py)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from cinegpu.jobs import prebuilt
from cinegpu.jobs.first_run import (
    DEMO_KERNELS,
    ENTRY_KERNELS,
    HTJ2K_KERNELS,
    compile_kernels,
    entry_kernel,
    signature,
    stamp_path,
)
from cinegpu.media.samples import BARS_2K


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_compiles_once_saying_what_it_does(tmp_path, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(prebuilt, "ARCHIVE", tmp_path / "none.tar.xz")  # as a copy shipped without them
    seconds = compile_kernels(tmp_path, progress=False, say=lines.append)
    assert seconds is not None and seconds > 0
    assert stamp_path(tmp_path).is_file()
    assert lines[0] == ("compiling the CPU encoder and decoder (first run only; later runs start in seconds): "
                        "the kernels shipped compiled do not fit here (no compiled kernels were shipped with this copy)")
    assert lines[1].startswith("compiled in")
    lines.clear()
    assert compile_kernels(tmp_path, progress=False, say=lines.append) is None
    assert lines == []


def test_the_entry_kernels_are_what_the_encoder_and_decoder_call():
    """Each entry kernel is compiled ahead by a signature: the one the demo's encoder and
    decoder (and the decoder of an HTJ2K stream) call it with (else it would be compiled again
    on first use), and every kernel they call from Python on that path is one of them."""

    from numba.core.registry import CPUDispatcher

    from cinegpu.decode.decoder import Decoder
    from cinegpu.encode import encode
    from cinegpu.jobs.demo import demo_frame
    from cinegpu.jobs.frame_encode import FrameEncoders
    from cinegpu.media.images.frames import fit

    kernels = {name: entry_kernel(name) for name in DEMO_KERNELS}
    ht_stream = encode(np.zeros((16, 24), np.uint8) + np.arange(24, dtype=np.uint8), bits=8, backend="cpu",
                       codec="htj2k", levels=2, reversible=True)

    def called():
        return {(f"{v.py_func.__module__}:{v.py_func.__qualname__}", sig) for m in list(sys.modules.values())
                if m is not None and m.__name__.startswith("cinegpu.")
                for v in list(vars(m).values()) if isinstance(v, CPUDispatcher) for sig in v.signatures}

    before = called()
    Decoder("cpu").decode(BARS_2K.read_bytes())
    with FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709", backend="cpu") as encoders:
        encoders.encode(fit(demo_frame(0), 2048, 1080))
    new = called() - before
    declared = {(name, signature(text)) for name, text in ENTRY_KERNELS.items()}
    assert new <= declared, f"called with other signatures than ENTRY_KERNELS: {sorted(map(str, new - declared))}"
    for name, kernel in kernels.items():
        assert signature(ENTRY_KERNELS[name]) in kernel.signatures, f"{name} was not called as declared"
    # the demo's DCI frame has no HT code-block: the HTJ2K kernels are left to a stream that has
    assert not {name for name, _ in new} & set(HTJ2K_KERNELS)
    before = called()
    Decoder("cpu").decode(ht_stream)
    assert (called() - before) <= declared
    for name in HTJ2K_KERNELS:      # called before this test or now, as declared
        assert signature(ENTRY_KERNELS[name]) in entry_kernel(name).signatures, f"{name} was not called as declared"


def test_signature_texts():
    from numba import types as t
    assert signature("u8[1]r int ( i64[2] f32[1] ) i32[3]") == (
        t.Array(t.uint8, 1, "C", readonly=True), t.int64,
        t.Tuple((t.Array(t.int64, 2, "C"), t.Array(t.float32, 1, "C"))), t.Array(t.int32, 3, "C"))


@pytest.mark.slow  # long: the compiling processes start (numba's cache warm: they load, not compile)
def test_a_decoding_command_compiles_the_decoder_first_once(tmp_path, monkeypatch, capsys):
    from cinegpu.jobs import first_run
    from cinegpu.player.cli import main
    from cinegpu.player.commands import compiling

    monkeypatch.setattr(compiling, "cache_root", lambda: tmp_path)
    out = tmp_path / "f.png"
    assert main(["decode", str(BARS_2K), "-o", str(out), "-r", "2"]) == 0
    err = capsys.readouterr().err.splitlines()
    why = prebuilt.unusable()
    if why is None:
        assert err[0] == "cinegpu decode: loading the CPU decoder compiled ahead (first run only)"
        assert err[1].startswith("cinegpu decode: loaded in ")
    else:
        assert err[0] == ("cinegpu decode: compiling the CPU decoder (first run only; later runs start in seconds): "
                          f"the kernels shipped compiled do not fit here ({why})")
        assert err[1].startswith("cinegpu decode: compiled in ")
    assert first_run.stamp_path(tmp_path, encoder=False).is_file() and not first_run.stamp_path(tmp_path).is_file()
    out.unlink()
    assert main(["decode", str(BARS_2K), "-o", str(out), "-r", "2"]) == 0
    assert "compil" not in capsys.readouterr().err
