"""What one decode may cost: memory and samples from the headers, work from the input's size.

:func:`check_limits` runs after the headers are parsed and before any plan, table or sample
buffer is made. It works out from SIZ, COD/COC and the tile-part lengths (T.800 Annex A, the
geometry of Annex B) what the decode will need, and raises :class:`LimitExceeded` naming the
figure and the limit when it is too much:

* **pixels**: the largest component's width x height at the decoded resolution (samples) is
  checked against ``max_pixels`` (default 2**27 = 134,217,728: a 16K UHD 15360 x 8640 component
  fits; Pillow refuses from 2 x 89.5 M = 179 M). A 15000 x 15000 image (225 M samples) is
  refused by default however few bytes code it: an empty picture is legal (every packet
  absent), so a 100-byte stream can ask for it, and decoding it takes seconds and gigabytes.
  Pass a larger ``max_pixels`` (or None) to decode such images.
* **memory** (bytes): output samples (1, 2 or 4 bytes each), the int32 coefficient buffer,
  the reconstruction's working planes of the largest tile, the plan and tier-2 tables
  (per code-block, precinct and listed packet) and copies of the input, against
  ``max_memory`` (default 4 GiB: a DCI 4K frame is estimated at 0.36 GiB, an 8K 8192 x 4320
  three-component frame at 1.4 GiB; a 16K three-component frame, 5.3 GiB, needs it raised).
  The estimate is meant to be above the real peak: 367 MiB for a 4K DCI frame whose decode
  grew the process by 309 MiB.
* **work**, tied to the input's size and always on: every precinct and code-block costs a
  unit to plan (about a microsecond of numpy), every packet listed a unit, every code-block a
  1/32 unit per layer it may be read in, every tile :data:`TILE_WORK` units and every
  tile-component resolution :data:`RESOLUTION_WORK` units (Python objects). Packets of a
  layer the data cannot reach are not listed: a packet costs at least one byte of header
  (B.10.3: an empty packet is one 0 bit, padded to the byte), and every layer of a precinct
  comes before the next layer in every progression, so at most as many layers as the tile has
  bytes of packet headers (its tile-part bodies, PPT, PPM) can be read. The work may reach :data:`WORK_FREE` units
  (a few seconds) whatever the input, plus :data:`WORK_PER_BYTE` per byte of codestream. A
  large sparse image (few code-blocks with data among many empty ones) therefore decodes as
  long as its code-blocks and precincts number about 2 M; 1 x 1 precincts over a 2048 x 2048
  image (8 M units) need about 400 KB of codestream.
* **tiles**: the tiles and their resolutions are Python objects, each costing its tenth of a
  millisecond whatever its size, and a tile may be coded in 15 bytes (SOT, SOD, one empty
  packet): 65,535 tiles of one sample fit in 983 KB and took 16 s to plan, read and
  reconstruct (2 cores; 0.25 ms a tile).  Their work, counted before anything is planned, may
  reach :data:`WORK_FREE` plus only :data:`TILE_WORK_PER_BYTE` per byte of codestream: such a
  stream is refused in the time it takes to parse, while the 225 tiles of the largest
  conformance stream (p1_05) need 0.75 M units, within the free work, and 64 x 64 tiles over
  a three-component 4K frame (2,176 tiles of six resolutions, 5.6 M units) need about 900 KB.

Allocation failures still possible past these estimates (a machine with less free memory)
are turned into :class:`LimitExceeded` by :func:`memory_guard`: numpy's ``MemoryError``
never reaches the caller.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .codestream.header import Codestream
from .errors import LimitExceeded
from .plan import TileCoding, plan_counts, tile_coding
from .plan_numba import COUNT_CB, COUNT_PREC, COUNT_RES, COUNT_SAMPLES

#: Default cap on one component's samples at the decoded resolution (16K UHD fits).
DEFAULT_MAX_PIXELS = 1 << 27
#: Default cap on the estimated memory of one decode, bytes.
DEFAULT_MAX_MEMORY = 4 << 30
#: Work units any input may ask for (about 1 us each on one core: a few seconds in all).
WORK_FREE = 1 << 21
#: Further work units per byte of codestream.
WORK_PER_BYTE = 16
#: Work units of one resolution of one tile-component (its Python objects, about 60 us).
RESOLUTION_WORK = 128
#: Work units of one tile beyond its resolutions: its tile-part markers, plan, tier-2 and
#: reconstruction calls (about 80 us, plus about 100 us for each of its components).
TILE_WORK = 256
#: Work units per byte of codestream that tiles and resolutions may ask for beyond
#: :data:`WORK_FREE` (the work of precincts, code-blocks and packets has :data:`WORK_PER_BYTE`):
#: a tile must be paid for by about a hundred bytes, not fifteen.
TILE_WORK_PER_BYTE = 4
#: Bytes of the plan and tier-2 tables per code-block (two rows of 11 int64, tier-2 state,
#: tag-tree nodes, tier-1 status), per precinct (precinct-band rows, progression table) and
#: per listed packet (the progression's sort keys and order).
CODEBLOCK_BYTES = 320
PRECINCT_BYTES = 160
PACKET_BYTES = 128
#: Bytes per sample of the largest tile while it is reconstructed (dequantised and
#: transformed planes of every component, float32 or int32, and their temporaries).
RECONSTRUCT_BYTES = 8
#: Copies of the input a decode holds (tile data, gathered segments, pieces), per byte.
INPUT_COPIES = 4


@dataclass(frozen=True)
class Limits:
    """``max_pixels`` (samples of one component) and ``max_memory`` (bytes); None: no limit."""

    max_pixels: int | None = DEFAULT_MAX_PIXELS
    max_memory: int | None = DEFAULT_MAX_MEMORY


@dataclass(frozen=True)
class TileGeometry:
    """Counts of one tile's plan, from its headers alone (cacheable with the plan)."""

    resolutions: int  #: tile-component resolutions
    precincts: int
    codeblocks: int
    layers: int
    samples: int  #: coefficients at the decoded resolution, all components
    #: what :func:`cinegpu.decode.plan.tile_counts` gave (the plan reuses it), or None
    counts: np.ndarray | None = field(default=None, repr=False, compare=False)


def tile_geometries(cs: Codestream, tiles: list[int], reduce: int, codings: list[TileCoding]) -> list[TileGeometry]:
    """Precincts, code-blocks and decoded samples of each of ``tiles`` (B.5-B.7), without tables.

    Counts exactly what :func:`cinegpu.decode.plan.build_tile_plan` would lay out, in one
    compiled pass over the tiles (:func:`cinegpu.decode.plan_numba.tiles_counts`): code-block
    cells never straddle precincts, so a band's blocks are (cells across) x (cells down).
    ``codings``: each tile's :func:`~cinegpu.decode.plan.tile_coding`.
    """
    counts = plan_counts(cs, tiles, reduce, codings)
    return [TileGeometry(n_res, n_prec, n_cb, cs.cod(cs.tiles.get(t)).layers, samples, row)
            for t, row, (n_res, n_prec, n_cb, samples) in
            zip(tiles, counts, counts[:, [COUNT_RES, COUNT_PREC, COUNT_CB, COUNT_SAMPLES]].tolist())]


def tile_geometry(cs: Codestream, t: int, reduce: int, coding: TileCoding | None = None) -> TileGeometry:
    """:func:`tile_geometries` of tile ``t`` alone (``coding``: its
    :func:`~cinegpu.decode.plan.tile_coding`, when the caller keeps them)."""
    return tile_geometries(cs, [t], reduce, [tile_coding(cs, cs.tiles.get(t), lenient=True) if coding is None
                                             else coding])[0]


@dataclass(frozen=True)
class Cost:
    """What a decode needs, as estimated by :func:`check_limits`."""

    memory: int  #: bytes
    work: int  #: units (see the module docstring)
    allowed_work: int  #: units this input may ask for
    precincts: int
    codeblocks: int
    packets: int  #: packets listed: precincts x the layers the data can reach


def ppm_bytes(cs: Codestream) -> int:
    """Bytes of all the main header's PPM data (A.7.4)."""
    return sum(len(s.data) for s in cs.main.ppm)


def packet_header_bytes(cs: Codestream, t: int, ppm: int | None = None) -> int:
    """Bytes that may hold tile ``t``'s packet headers: its tile-part bodies, its PPT and all
    PPM data (an upper bound; B.10, A.7.4, A.7.5). Each packet takes at least one of them.
    ``ppm``: :func:`ppm_bytes` of ``cs``, when the caller asks for many tiles (summing the PPM
    segments again for each tile costs tiles x segments)."""
    tile = cs.tiles.get(t)
    if tile is None:
        return 0
    body = sum(p.end - p.start for p in tile.parts)
    return body + sum(len(s.data) for s in tile.header.ppt) + (ppm_bytes(cs) if ppm is None else ppm)


def _sample_bytes(precision: int) -> int:
    return 1 if precision <= 8 else 2 if precision <= 16 else 4


def _main_resolutions(cs: Codestream) -> int:
    """The sum over the components of the main header's decomposition levels + 1 (A.6: a
    main COC replaces COD for its component), in time of the COC segments, not of the
    components (a codestream may have 16,384)."""
    n = cs.siz.Csiz
    own = [c for c in cs.main.coc if 0 <= c < n]
    total = sum(cs.main.coc[c].spcod.levels + 1 for c in own)
    if len(own) < n:
        total += (n - len(own)) * (cs.cod(None).spcod.levels + 1)
    return total


@functools.lru_cache(maxsize=64)
def _output_bytes(Ssiz: tuple[int, ...], sizes: tuple[tuple[int, int], ...]) -> int:
    """Bytes of the decoded components (``sizes`` (w, h) each, A.5.1 precisions of ``Ssiz``),
    worked out once per geometry."""
    return sum(w * h * _sample_bytes((v & 0x7F) + 1) for v, (w, h) in zip(Ssiz, sizes))


def check_pixels(cs: Codestream, reduce: int, max_pixels: int | None, sizes=None) -> None:
    """Raise :class:`LimitExceeded` when a component has more than ``max_pixels`` samples
    (``sizes``: each component's (width, height) decoded, a decode area's; None: the image's)."""
    if max_pixels is None:
        return
    s = cs.siz
    sizes = s.component_sizes(reduce) if sizes is None else sizes
    if max(w * h for w, h in sizes) <= max_pixels:
        return
    for c, (w, h) in enumerate(sizes):
        if w * h > max_pixels:
            at = f" at reduce {reduce}" if reduce else ""
            raise LimitExceeded(f"component {c} is {w} x {h} = {w * h} samples{at}, more than "
                                f"max_pixels {max_pixels}", needed=w * h, limit=max_pixels)


def check_tiles(cs: Codestream, input_bytes: int) -> int:
    """The work of ``cs``'s tiles and tile-component resolutions (the Python objects a decode
    makes, see the module docstring); :class:`LimitExceeded`, at the SIZ that sets the tile
    grid, when it is more than :data:`WORK_FREE` + :data:`TILE_WORK_PER_BYTE` per byte of
    codestream.  Bounded itself: the tiles are counted, and refused, before their
    resolutions are summed."""
    s = cs.siz
    allowed = WORK_FREE + TILE_WORK_PER_BYTE * input_bytes
    n = len(cs.tiles)
    work = n * (TILE_WORK + s.Csiz * RESOLUTION_WORK)  # every tile-component has a resolution
    resolutions = n * s.Csiz
    if work <= allowed:
        resolutions = 0
        main = None     # the main header's resolutions over the components, for tiles without COD/COC
        for tile in cs.tiles.values():
            if tile.header.cod is None and not tile.header.coc:
                if main is None:
                    main = _main_resolutions(cs)
                resolutions += main
            else:
                resolutions += sum(cs.spcod(tile, c).levels + 1 for c in range(s.Csiz))
        work = n * TILE_WORK + RESOLUTION_WORK * resolutions
    if work > allowed:
        at_least = "at least " if resolutions == n * s.Csiz else ""
        raise LimitExceeded(
            f"{n} tiles with {at_least}{resolutions} tile-component resolutions need {work} units of work, "
            f"more than the {allowed} allowed for {input_bytes} bytes of codestream ({WORK_FREE} + "
            f"{TILE_WORK_PER_BYTE} per byte; a tile costs at least {TILE_WORK + RESOLUTION_WORK} units however few "
            f"bytes code it): too many tiles for the data, from the tile grid of {s.XTsiz} x {s.YTsiz} "
            f"samples in SIZ", 2, needed=work, limit=allowed)
    return work


def check_limits(cs: Codestream, reduce: int, limits: Limits, input_bytes: int, geometry) -> Cost:
    """Check the decode of ``cs`` at ``reduce`` against ``limits`` and the work bound.

    ``geometry(t)`` gives tile ``t``'s :class:`TileGeometry` (the decoder caches them with
    its plans); ``input_bytes`` is the codestream's length. Runs in time bounded by the work
    allowed: the tiles' resolutions are counted, and refused, before they are measured.
    """
    return check_shape(cs, reduce, limits, input_bytes, geometry)[1]


def check_shape(cs: Codestream, reduce: int, limits: Limits, input_bytes: int, geometry,
                sizes=None) -> tuple[LimitsShape, Cost]:
    """:func:`check_limits`, with the :class:`LimitsShape` it worked out (kept by a decoder for
    the frames of the same headers, which :func:`shape_cost` then checks alone). ``sizes``: each
    component's (width, height) decoded where a decode area cuts them (None: the image's)."""
    check_pixels(cs, reduce, limits.max_pixels, sizes)
    shape = limits_shape(cs, reduce, geometry, check_tiles(cs, input_bytes), sizes)
    return shape, shape_cost(shape, cs, limits, input_bytes)


@dataclass(frozen=True)
class LimitsShape:
    """What :func:`check_limits` works out from the headers alone (SIZ, COD/COC, the tiles
    present) before the input's size and its tile-parts' lengths come in: the same for every
    frame of a reel, so a decoder keeps it with the frame's plans (:func:`shape_cost` then
    costs a frame in a few operations a tile)."""

    tiles: tuple[int, ...]         #: the tiles present, in order
    layers: tuple[int, ...]        #: each one's quality layers (COD)
    precincts: tuple[int, ...]     #: each one's precincts
    codeblocks: tuple[int, ...]    #: each one's code-blocks
    all_precincts: int             #: their sum
    all_codeblocks: int            #: their sum
    #: the work of the tiles, their resolutions, precincts and code-blocks (without packets)
    work: int
    tile_work: int                 #: :func:`check_tiles`'s work
    samples: int                   #: coefficients of all tiles at the decoded resolution
    largest: int                   #: those of the largest tile
    output: int                    #: bytes of the decoded components


def limits_shape(cs: Codestream, reduce: int, geometry, tile_work: int, sizes=None) -> LimitsShape:
    """The :class:`LimitsShape` of ``cs`` at ``reduce`` (``geometry`` and ``tile_work`` as in
    :func:`check_limits`, the tiles already counted by :func:`check_tiles`; ``sizes``: the
    components' decoded sizes where not the image's)."""
    tiles = tuple(sorted(cs.tiles))
    layers, precincts, codeblocks = [], [], []
    work = samples = largest = 0
    for t in tiles:
        g = geometry(t)
        layers.append(g.layers)
        precincts.append(g.precincts)
        codeblocks.append(g.codeblocks)
        work += TILE_WORK + RESOLUTION_WORK * g.resolutions + g.precincts + g.codeblocks
        samples += g.samples
        largest = max(largest, g.samples)
    s = cs.siz
    return LimitsShape(tiles, tuple(layers), tuple(precincts), tuple(codeblocks), sum(precincts), sum(codeblocks),
                       work, tile_work, samples, largest,
                       _output_bytes(s.Ssiz, s.component_sizes(reduce) if sizes is None else sizes))


def shape_cost(shape: LimitsShape, cs: Codestream, limits: Limits, input_bytes: int) -> Cost:
    """The :class:`Cost` of a frame of ``shape`` (its tile-parts in ``cs``, ``input_bytes``
    long), with the checks of :func:`check_limits` past the pixels: the tiles' work, then
    memory, then work; :class:`LimitExceeded` as there."""
    if shape.tile_work > WORK_FREE + TILE_WORK_PER_BYTE * input_bytes:
        check_tiles(cs, input_bytes)        # raises (what check_limits raises first)
    allowed = WORK_FREE + WORK_PER_BYTE * input_bytes
    work, packets = shape.work, 0
    ppm = ppm_bytes(cs)
    for t, layers, n_prec, n_cb in zip(shape.tiles, shape.layers, shape.precincts, shape.codeblocks):
        reach = min(layers, packet_header_bytes(cs, t, ppm))
        packets += n_prec * reach
        work += n_prec * reach + n_cb * reach // 32
    precincts, codeblocks = shape.all_precincts, shape.all_codeblocks
    output, samples = shape.output, shape.samples
    tables = CODEBLOCK_BYTES * codeblocks + PRECINCT_BYTES * precincts + PACKET_BYTES * packets
    memory = output + 4 * samples + RECONSTRUCT_BYTES * shape.largest + tables + INPUT_COPIES * input_bytes
    if limits.max_memory is not None and memory > limits.max_memory:
        raise LimitExceeded(
            f"decoding needs about {_mib(memory)} MiB ({_mib(output)} MiB of samples, {_mib(4 * samples)} MiB "
            f"of coefficients, {_mib(RECONSTRUCT_BYTES * shape.largest)} MiB to reconstruct a tile, "
            f"{_mib(tables)} MiB of tables), more than max_memory {_mib(limits.max_memory)} MiB",
            needed=memory, limit=limits.max_memory)
    if work > allowed:
        raise LimitExceeded(f"{precincts} precincts, {codeblocks} code-blocks and {packets} packets need "
                            f"{work} units of work, more than the {allowed} allowed for {input_bytes} bytes "
                            f"of codestream ({WORK_FREE} + {WORK_PER_BYTE} per byte)", needed=work, limit=allowed)
    return Cost(memory, work, allowed, precincts, codeblocks, packets)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f}"


def memory_guard(fn):
    """Decorate a decode step so that a failed allocation (numpy's or CuPy's ``MemoryError``)
    raises :class:`LimitExceeded` instead; the failed step's frames are released first."""

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemoryError as exc:
            what = str(exc) or type(exc).__name__
        raise LimitExceeded(f"out of memory in {fn.__name__}: {what}")

    return guarded
