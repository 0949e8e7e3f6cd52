"""The differential harness of tests/helpers/differential.py: seeded random streams from OpenJPEG, Grok,
OpenJPH, FFmpeg's jpeg2000 encoder and cinegpu's own encoder, whole and cut short, decoded by us and
by opj_decompress.

The quick pass checks :data:`QUICK` seeds; the slow pass (``-m slow``) :data:`SLOW_CHUNKS`
chunks of :data:`CHUNK` seeds more. A failure names its seed:
``python3 -c "import helpers.differential as d; print(d.make_case(SEED))"`` (from tests/) shows the case.
"""

from __future__ import annotations

import shutil

import pytest

from helpers.differential import ENCODERS, available, check, made_streams, make_case, make_stream

QUICK = 48
CHUNK = 100
SLOW_CHUNKS = 30
#: At least this share of a chunk's seeds must give a stream (the encoders decline some
#: option sets, e.g. precincts smaller than the code-blocks in Grok); fewer means the harness
#: went blind.
MADE_SHARE = 0.6

TOOLS = tuple(t for t in ENCODERS if available(t))
pytestmark = pytest.mark.skipif(shutil.which("opj_decompress") is None,
                                reason="opj_decompress is not installed (libopenjp2-tools): no reference")


def _run(seeds: range, tmp_path) -> None:
    problems, made = [], 0
    for seed, case, data, folder in made_streams(seeds, TOOLS, tmp_path):
        made += 1
        problems += [f"seed {seed} ({case.id}, {case.args}, cut {case.cut}): {p}" for p in check(case, data, folder)]
        shutil.rmtree(folder)
    assert not problems, "\n".join(problems)
    assert made >= MADE_SHARE * len(seeds), f"only {made} of {len(seeds)} seeds gave a stream"


@pytest.mark.parametrize("half", [0, 1])
def test_quick(half, tmp_path):
    _run(range(half * QUICK // 2, (half + 1) * QUICK // 2), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(SLOW_CHUNKS))
def test_slow(chunk, tmp_path):
    start = 10_000 + chunk * CHUNK
    _run(range(start, start + CHUNK), tmp_path)


def test_the_cases_are_seeded_and_varied():
    """A seed always makes the same case; the seeds reach every encoder, progression, cuts."""
    assert make_case(7) == make_case(7)
    cases = [make_case(s) for s in range(400)]
    assert {c.tool for c in cases} == set(ENCODERS)
    assert sum(c.cut is not None for c in cases) > 50
    args = " ".join(str(a) for c in cases for a in c.args)
    for option in ("LRCP", "RLCP", "RPCL", "PCRL", "CPRL", "-M", "-SOP", "-TLM", "-c", "-t", "bitrate", "derived",
                   "dwt97int", "-layer_rates", "yuv444p"):
        assert option in args, option
    # Grok's HTJ2K code-blocks (-M 64)
    assert any(c.tool == "grk" and "-M" in c.args and c.args[c.args.index("-M") + 1] == "64" for c in cases)


@pytest.mark.parametrize("tool", ["opj", "grk", "cinegpu"])
def test_dci_precincts_two_layers_lrcp(tool, tmp_path):
    """The shape of the stream issue 48 found decoded wrong: 2K-wide, 12 bits, 9/7, two
    quality layers in LRCP, the DCI precincts (128 at the lowest resolution, 256 above),
    32 x 32 code-blocks, no mode switch; a layer cut from each block's passes after rate control."""
    from helpers.differential import DiffCase
    from helpers.peers import Image

    if not available(tool):
        pytest.skip(f"{ENCODERS[tool]} is not installed")
    img = Image(w=2048, h=270, n=3, bits=12, fmt="raw", seed=48)
    if tool == "cinegpu":
        args = tuple(sorted({"levels": 5, "reversible": False, "codeblock": (32, 32), "progression": "LRCP",
                             "layers": 2, "bitrate": 2048 * 270 * 36 * 24 // 10,
                             "precincts": [(128, 128)] + [(256, 256)] * 5}.items()))
    else:
        prec = ",".join(["[256,256]"] * 5 + ["[128,128]"])
        args = ("-n", "6", "-I", "-r", "40,10", "-p", "LRCP", "-b", "32,32", "-c", prec)
    case = DiffCase(48, tool, img, args, lossy=True)
    data = make_stream(case, tmp_path)
    assert check(case, data, tmp_path) == []


def test_more_than_255_tile_parts_of_subsampled_components_at_an_odd_origin(tmp_path):
    """A tile of 480 tile-parts (OpenJPEG's decoder reads such a tile only in part) whose
    chroma is sub-sampled with the image at an odd origin: checked against the sizes B-2 gives
    (123 columns from x = 9: 61 at half width, where the source plane has 62)."""
    from helpers.differential import DiffCase, _parts_per_tile
    from helpers.peers import Image

    img = Image(w=123, h=118, n=3, bits=12, fmt="raw", sub=((1, 1), (1, 2), (2, 1)), seed=200560)
    args = ("-n", "2", "-I", "-r", "85.7,72.0,68.3,52.9,44.8,42.3,16.3,15.3", "-p", "CPRL", "-b", "16,8",
            "-d", "9,30", "-c", "[128,32]", "-SOP", "-TP", "L", "-mct", "0")
    case = DiffCase(200560, "opj", img, args, lossy=True)
    data = make_stream(case, tmp_path)
    assert _parts_per_tile(data) > 255
    assert check(case, data, tmp_path) == []
