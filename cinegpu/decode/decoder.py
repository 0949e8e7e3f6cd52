"""The frame decoder: codestream in, component arrays out.

:class:`Decoder` keeps decode plans between frames (a reel's frames share
their main header), so only tier-2, tier-1 and reconstruction run per frame.
Its three steps can also run apart, which the multi-process pipeline does:
:meth:`Decoder.prepare` (headers and plans), :meth:`Decoder.entropy_decode`
(tier-2 and tier-1 into a flat coefficient buffer, in a worker process) and
:meth:`Decoder.reconstruct` (dequantise, inverse DWT and MCT, DC shift, on
the CPU or the GPU). :func:`cinegpu.decode.decode` is a one-shot wrapper.
What to decode out of a frame (``reduce``, ``layers``, ``strict``, ``components``) is one
:class:`~cinegpu.decode.request.DecodeRequest`, which their keyword arguments build.
"""

from __future__ import annotations

import functools
import itertools
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .area import REACH, Area, codeblocks_meeting, component_windows, within_area
from .backend import Backend, select_backend
from .codestream import markers as M
from .codestream.header import Codestream, MainHeaderCache, parse_codestream, tile_part_ppm_headers
from .codestream.siz import MAX_PRECISION
from .errors import InvalidSegment, UnsupportedFeature
from .frame_entropy import FrameTables, entropy_decode_frame
from .jp2 import JP2Header, apply_channels, apply_palette, read_jp2
from .limits import (
    DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_PIXELS,
    Cost,
    Limits,
    LimitsShape,
    TileGeometry,
    check_shape,
    memory_guard,
    shape_cost,
    tile_geometries,
)
from .plan import (
    TileCoding,
    TilePlan,
    build_tile_plans,
    check_plan,
    sampling_pairs,
    tile_coding,
    tile_covers_samples,
    tile_rect,
    translated,
    translation_period,
)
from .reconstruct import frame_layout, reconstruct_frame, reconstruct_mct_of, reconstruct_tile, reconstruct_tile_window
from .request import DecodeRequest
from .strictness import Fault, Strictness
from .tile import TileReport, TileSegments, check_tier1_status, missing_tile, missing_tile_report, tier2_tile

#: Plans kept per decoder (one per distinct tile header and reduce level).
PLAN_CACHE_SIZE = 4096
#: Frame layouts kept per decoder (one per distinct set of tile plans: a reel has one or two).
FRAME_CACHE_SIZE = 8
#: Frame shapes kept per decoder (:class:`KnownFrame`: one per main header, reduce and leniency).
KNOWN_FRAMES = 8
#: Component sub-samplings looked at, over all absent tiles of a frame, to tell which of them
#: hold no samples (missing_tiles); bounds that look to a few tens of milliseconds.
MISSING_TILE_CHECKS = 1 << 16


@dataclass
class Frame:
    """A decoded frame: one array per component, and what was concealed.

    ``warnings``: the codestream's (``Codestream.warnings``), typed
    :class:`~cinegpu.decode.strictness.Fault` objects that print as one line each.
    """

    components: list
    reports: list[TileReport] = field(default_factory=list)
    warnings: list[Fault] = field(default_factory=list)
    #: seconds per stage: "parse" (headers, plan), "tier2", "tier1", "reconstruct"
    timings: dict[str, float] = field(default_factory=dict)
    #: index in ``components`` of the opacity channel a JP2 file's cdef names, else None
    alpha: int | None = None

    @property
    def damaged(self) -> bool:
        """True when something was concealed (a fault not merely tolerated)."""
        return any(not f.tolerated for r in self.reports for f in r.faults)

    def passed_over(self) -> list[Fault]:
        """Every fault a lenient decode went past: the codestream's warnings, then the tiles'."""
        faults = list(self.warnings)
        for r in self.reports:
            faults += r.faults
        return faults


@dataclass
class Prepared:
    """A parsed frame with its plans: what the entropy and GPU stages need."""

    cs: Codestream
    jp2: JP2Header | None
    plans: list[TilePlan]
    offsets: list[int]  #: first coefficient of each tile in the frame buffer
    size: int  #: coefficients in the frame buffer (int32 samples)
    reduce: int
    layers: int | None
    policy: Strictness
    parse_s: float = 0.0
    #: some code-block may be an HT block (ISO/IEC 15444-15); both tier-1s decode them
    ht: bool = False
    #: what the decode was estimated to need (cinegpu.decode.limits)
    cost: Cost | None = None
    #: tiles absent from the codestream that hold samples at this resolution (concealed: zeros)
    missing: tuple[int, ...] = ()
    #: the decode area (:mod:`.area`): ``cs`` holds only its tiles; None: the whole image
    area: Area | None = None

    def windows(self) -> tuple[tuple, tuple]:
        """Each component's (width, height) and first sample's (y, x) on its grid, of the
        image or of the decode area, at the frame's reduction (B-2)."""
        s = self.cs.siz
        if self.area is None:
            return s.component_sizes(self.reduce), s.component_origins(self.reduce)
        return component_windows(s, self.area, self.reduce)

    @property
    def strict(self) -> bool:
        """True when the first fault raises (``policy.strict``)."""
        return self.policy.strict


@dataclass(frozen=True)
class KnownFrame:
    """What :meth:`Decoder.prepare` works out for a frame from its headers alone, kept for the
    frames after it whose main header matched the same cached one (:class:`MainHeaderCache`:
    the same segments but TLM, PLM, PPM and COM), whose tiles are all present and whose
    tile-part headers hold no segment that shapes a plan (COD, COC, QCD, QCC, RGN, POC,
    A.4.2): such a frame has the same plans, so only its tile-parts and its cost
    (:func:`~.limits.shape_cost`: its size and packet bytes) are its own."""

    header: object              #: the cached main header it was made for (``Codestream.header_key``)
    shape: LimitsShape
    plans: list[TilePlan]
    offsets: list[int]
    size: int
    ht: bool


def _plain_tiles(cs: Codestream) -> bool:
    """True when every tile of the tile grid is present and no tile-part header holds a
    segment that shapes a plan (A.4.2: COD, COC, QCD, QCC, RGN, POC)."""
    if len(cs.tiles) != cs.siz.num_tiles:
        return False
    for tile in cs.tiles.values():
        h = tile.header
        if h.cod or h.coc or h.qcd or h.qcc or h.rgn or h.poc:
            return False
    return True


def has_ht_blocks(plans: list[TilePlan]) -> bool:
    """True when a code-block of these plans is (or, mixed, may be) an HT block (T.814).

    By code-block style (SPcod/SPcoc bit 6), known before any packet (each plan's ``ht``,
    worked out when it is built); both tier-1s (numba and the CUDA kernel of tier1/gpu.py)
    decode HT and EBCOT blocks, so it only informs.
    """
    return any(p.ht for p in plans)


@functools.lru_cache(maxsize=64)
def sample_dtypes(Ssiz: tuple[int, ...]) -> tuple:
    """:func:`sample_dtype` of every component of a SIZ's ``Ssiz`` (A.5.1), worked out once
    per distinct Ssiz (a frame may have thousands of components)."""
    return tuple(sample_dtype((v & 0x7F) + 1, bool(v & 0x80)) for v in Ssiz)


def sample_dtype(precision: int, signed: bool):
    """The numpy type a component of this precision is returned in."""
    if signed:
        return np.int8 if precision <= 8 else np.int16 if precision <= 16 else np.int32
    return np.uint8 if precision <= 8 else np.uint16 if precision <= 16 else np.int32


class Decoder:
    """Decodes frames, reusing plans across frames with the same headers."""

    def __init__(self, backend: str = "cpu", *, gpu_tier1: bool | None = None,
                 max_pixels: int | None = DEFAULT_MAX_PIXELS, max_memory: int | None = DEFAULT_MAX_MEMORY) -> None:
        """``backend``: a name :func:`~cinegpu.decode.backend.select_backend` takes ("cpu", the
        default, "cuda", "auto", "numpy"). ``gpu_tier1``: run tier-1 on the GPU too (default: with the
        CUDA back end; True with another back end: ValueError).

        ``max_pixels`` (samples of one component at the decoded resolution) and ``max_memory``
        (bytes, estimated from the headers) bound every frame; a frame beyond them raises
        :class:`~cinegpu.decode.errors.LimitExceeded` before anything large is allocated
        (None: no limit). The work a frame may ask for is bounded by its size whatever these
        say; :mod:`cinegpu.decode.limits` gives the rules and the defaults' reasons.
        """
        #: the :class:`~cinegpu.decode.backend.Backend` in use; ``backend`` is its name
        self.selected: Backend = select_backend(backend)
        self.transform, self.xp, self.backend = self.selected.transform, self.selected.xp, self.selected.name
        if gpu_tier1 and not self.selected.gpu_tier1:     # asked for, not silently dropped
            raise ValueError(f"tier-1 on the GPU needs the cuda back end, not {self.backend}")
        self.gpu_tier1 = self.selected.gpu_tier1 if gpu_tier1 is None else gpu_tier1
        self.limits = Limits(max_pixels, max_memory)
        #: plans by (class key, tile): a tile's own, or its class's first moved to it
        self._plans: dict[tuple, TilePlan] = {}
        #: the first plan built of each class key (tiles that share one, see :meth:`_key`)
        self._templates: dict[tuple, TilePlan] = {}
        #: reference-grid periods (:func:`~.plan.translation_period`) by main key and tile coding styles
        self._periods: dict[tuple, tuple[int, int]] = {}
        self._geometries: dict[tuple, TileGeometry] = {}
        #: each coding's :class:`~.plan.TileCoding`, by main key, tile key and leniency
        self._codings: dict[tuple, TileCoding] = {}
        #: what is kept per set of plans (FrameLayout, FrameTables), by the plans' identities
        self._frames: dict[tuple, dict] = {}
        #: the latest main headers parsed, reused whole by frames that share them
        self._headers = MainHeaderCache()
        self._last_main: tuple = (None, b"")   # (main Segments, its plan key)
        #: :class:`KnownFrame` by (id of the cached main header, reduce, strictness)
        self._known: dict[tuple, KnownFrame] = {}
        #: the int32 planes buffer :meth:`planes_buffer` lends, kept from frame to frame
        self._planes: np.ndarray | None = None

    def tier1_on_gpu(self, prep: Prepared) -> bool:
        """Whether this frame's tier-1 runs on the GPU: with ``gpu_tier1``, for EBCOT and HT
        (ISO/IEC 15444-15) code-blocks alike, the kernel being numba's twin for both."""
        return self.gpu_tier1

    def _main_key(self, cs: Codestream) -> bytes:
        """What of ``cs``'s main header shapes its plans (:func:`plan_segments`: SIZ, COD, COC,
        QCD, QCC, RGN, POC as stored), the same for every frame of a reel whatever its TLM and COM."""
        m = cs.main if cs.header_key is None else cs.header_key
        if self._last_main[0] is m:     # the same cached header (MainHeaderCache): same key
            return self._last_main[1]
        key = plan_segments(cs)
        self._last_main = (m, key)
        return key

    def _check_precision(self, cs: Codestream) -> None:
        """:class:`UnsupportedFeature` for a component of more bits (A.5.1) than this back end
        reconstructs (:attr:`~.backend.Backend.max_precision`; the parser took it)."""
        most, siz = self.selected.max_precision, cs.siz
        for c in range(siz.Csiz):
            if siz.precision(c) > most:
                raise UnsupportedFeature(f"component {c} has {siz.precision(c)} bits; the {self.selected.name} back "
                                         f"end reconstructs up to {most} (the cpu back end up to {MAX_PRECISION})")

    def _key(self, cs: Codestream, t: int, reduce: int, main_key: bytes, lenient: bool = False) -> tuple:
        """Tile ``t``'s class: tiles of one coding (main and tile headers), one size and one
        position modulo :func:`~.plan.translation_period` have one plan, moved (B.5-B.7), and one
        geometry; a stream of hundreds of like tiles plans a handful."""
        tile = cs.tiles.get(t)
        h = tile.header if tile is not None else None
        if h is None or not (h.cod or h.coc or h.qcd or h.qcc or h.rgn or h.poc):
            tile_key, style_key = None if h is None else "", None    # no segment that shapes the plan
        else:
            # the parsed segments (frozen, hashable), not their bytes: a lenient parse keeps
            # those read before a damaged tile-part that it drops
            coc = tuple(h.coc.items())
            tile_key = (h.cod, coc, h.qcd, tuple(h.qcc.items()), tuple(h.rgn.items()), tuple(h.poc))
            # the period depends on the coding styles alone (COD, COC), not on the step sizes
            style_key = (h.cod, coc) if h.cod or h.coc else None
        periods = self._periods.get((main_key, style_key))
        if periods is None:
            if len(self._periods) >= PLAN_CACHE_SIZE:
                self._periods.clear()
            periods = self._periods[(main_key, style_key)] = translation_period(cs, tile)
        x0, y0, x1, y1 = tile_rect(cs, t)
        return (main_key, tile_key, reduce, lenient, x0 % periods[0], y0 % periods[1], x1 - x0, y1 - y0)

    def _coding(self, cs: Codestream, t: int, key: tuple) -> TileCoding:
        """Tile ``t``'s :class:`~.plan.TileCoding`, worked out once per coding (the main and
        tile keys and the leniency of its class ``key``)."""
        found = self._codings.get((key[0], key[1], key[3]))
        if found is None:
            if len(self._codings) >= PLAN_CACHE_SIZE:
                self._codings.clear()
            found = self._codings[(key[0], key[1], key[3])] = tile_coding(cs, cs.tiles.get(t), key[3])
        return found

    def geometry(self, cs: Codestream, t: int, reduce: int, main_key: bytes | None = None,
                 key: tuple | None = None) -> TileGeometry:
        """Tile ``t``'s precinct and code-block counts (cached by its class, :meth:`_key`, which
        the caller may give)."""
        if key is None:
            key = self._key(cs, t, reduce, self._main_key(cs) if main_key is None else main_key)
        return self._geometries_of(cs, [t], reduce, {t: key})[t]

    def _geometries_of(self, cs: Codestream, tiles: list[int], reduce: int, keys: dict) -> dict[int, TileGeometry]:
        """The :class:`~.limits.TileGeometry` of each of ``tiles`` (classes ``keys``), those of
        classes not yet measured in one pass (:func:`~.limits.tile_geometries`)."""
        found, todo = {}, {}
        for t in tiles:
            g = self._geometries.get(keys[t])
            if g is None:
                todo.setdefault(keys[t], []).append(t)
            else:
                found[t] = g
        if todo:
            firsts = [ts[0] for ts in todo.values()]
            measured = tile_geometries(cs, firsts, reduce, [self._coding(cs, t, keys[t]) for t in firsts])
            if len(self._geometries) + len(todo) > PLAN_CACHE_SIZE:
                self._geometries.clear()
            for (key, ts), g in zip(todo.items(), measured):
                self._geometries[key] = g
                found.update(dict.fromkeys(ts, g))
        return found

    def plan(self, cs: Codestream, t: int, reduce: int, main_key: bytes | None = None,
             key: tuple | None = None) -> TilePlan:
        """Tile ``t``'s plan: built for the first tile of its class (:meth:`_key`), moved for
        the others (:func:`~.plan.translated`), kept for the frames that follow."""
        if key is None:
            key = self._key(cs, t, reduce, self._main_key(cs) if main_key is None else main_key)
        return self._plans_of(cs, [t], reduce, {t: key})[0]

    def _plans_of(self, cs: Codestream, tiles: list[int], reduce: int, keys: dict) -> list[TilePlan]:
        """The plans of ``tiles`` (classes ``keys``): kept ones, those of classes without one
        built in one pass (:func:`~.plan.build_tile_plans`, with the limits' counts where
        measured; faults raised in the order of ``tiles``), the others moved from their class's."""
        build = {}   # class: its first tile without a plan
        for t in tiles:
            if (keys[t], t) not in self._plans and keys[t] not in self._templates:
                build.setdefault(keys[t], t)
        made = {}
        if build:
            firsts = list(build.values())
            geometries = [self._geometries.get(keys[t]) for t in firsts]
            counts = None if None in geometries else np.array([g.counts for g in geometries], np.int64)
            made = dict(zip(firsts, build_tile_plans(cs, firsts, reduce, codings=[self._coding(cs, t, keys[t])
                                                                                  for t in firsts], counts=counts)))
            for plan in made.values():
                check_plan(plan)
            if len(self._templates) + len(made) > PLAN_CACHE_SIZE:
                self._templates.clear()
            self._templates.update((keys[t], plan) for t, plan in made.items())
        plans = []
        for t in tiles:
            plan = made.get(t) or self._plans.get((keys[t], t))
            if plan is None:
                plan = translated(self._templates[keys[t]], t, tile_rect(cs, t), cs.siz)
            if (keys[t], t) not in self._plans:
                if len(self._plans) >= PLAN_CACHE_SIZE:
                    self._plans.clear()
                self._plans[(keys[t], t)] = plan
            plans.append(plan)
        return plans

    def _frame(self, prep: Prepared) -> dict:
        """What is kept for the set of plans of ``prep``'s tiles: its "layout" and "tables"
        (each built on first use)."""
        key = tuple(map(id, prep.plans))
        found = self._frames.get(key)
        if found is None:
            if len(self._frames) >= FRAME_CACHE_SIZE:
                self._frames.clear()
            # the plans are kept with it, so that their ids cannot be reused while cached
            found = self._frames[key] = {"plans": tuple(prep.plans)}
        return found

    def frame_layout(self, prep: Prepared):
        """The :class:`~cinegpu.decode.transform.layout.FrameLayout` of ``prep``'s tiles, built
        once per set of plans (None where the frame takes the per-tile path)."""
        frame = self._frame(prep)
        if "layout" not in frame:
            frame["layout"] = frame_layout(prep.plans, prep.offsets, prep.cs.siz, prep.reduce,
                                           sample_dtypes(prep.cs.siz.Ssiz))
        return frame["layout"]

    def frame_tables(self, prep: Prepared) -> FrameTables:
        """The stacked tier-2 / tier-1 tables of ``prep``'s tiles (built once per set of plans)."""
        frame = self._frame(prep)
        tables = frame.get("tables")
        if tables is None:
            tables = frame["tables"] = FrameTables.build(prep.plans, prep.offsets)
        return tables

    def planes_buffer(self, samples: int) -> np.ndarray:
        """An int32 buffer of ``samples`` (the length of a :class:`~.transform.layout.FrameLayout`'s
        planes), the same memory frame after frame and never zeroed here, for a caller that is
        done with it before its next call (the pipeline's workers, which copy the samples out
        into a slot). A fresh buffer of a 4K frame's 106 MB is mapped anew by the system on
        every frame (glibc serves blocks above 32 MB so), about 8,000 page faults."""
        if self._planes is None or self._planes.size < samples:
            self._planes = np.empty(samples, np.int32)
        return self._planes[:samples]

    # --- the three steps -------------------------------------------------
    @memory_guard
    def prepare(self, data, *, reduce: int = 0, layers: int | None = None,
                strict: bool | Strictness = False, request: DecodeRequest | None = None) -> Prepared:
        """Parse the headers, check the limits and find (or build) the plan of every tile.

        ``strict``: a bool or a :class:`~cinegpu.decode.strictness.Strictness` (the policy the
        later steps follow); strict, a tile missing from the codestream raises here.
        ``request``: the options as one :class:`~cinegpu.decode.request.DecodeRequest` instead
        (its ``components`` are not used here).
        """
        request = DecodeRequest.given(request, reduce=reduce, layers=layers, strict=strict)
        reduce, layers = request.reduce, request.layers
        policy = Strictness.of(request.strict)
        if reduce < 0:
            raise ValueError("reduce must be >= 0")
        if layers is not None and layers < 1:
            raise ValueError("layers must be >= 1")
        t0 = time.perf_counter()
        codestream, jp2 = read_jp2(data)
        cs = parse_codestream(codestream, strict=policy, cache=self._headers)
        area, among, sizes = request.area, None, None
        if area is not None:        # only the tiles that meet it (no cached plans of the whole frame)
            area = area.within(cs.siz)
            cs, among = within_area(cs, area)
            sizes = component_windows(cs.siz, area, reduce)[0]
        memo = (id(cs.header_key), reduce, policy.strict)
        known = self._known.get(memo)
        if known is not None and known.header is cs.header_key and _plain_tiles(cs):
            # the plans of the frame before: only this one's cost is worked out
            cost = shape_cost(known.shape, cs, self.limits, len(codestream))
            return Prepared(cs, jp2, known.plans, known.offsets, known.size, reduce, layers, policy,
                            time.perf_counter() - t0, known.ht, cost, ())
        if self.selected.max_precision < MAX_PRECISION:
            self._check_precision(cs)
        missing = missing_tiles(cs, reduce, among)
        if missing:
            # lenient: recorded in the missing tile's report (missing_tile_report) and left zero
            policy.fault(missing_tile(missing[0], cs.siz.num_tiles))
        main_key = self._main_key(cs)
        keys = {t: self._key(cs, t, reduce, main_key, not policy.strict) for t in cs.tiles}
        measured: dict[int, TileGeometry] = {}

        def geometry(t: int) -> TileGeometry:   # every tile's at once, once the tiles are counted
            if not measured:
                measured.update(self._geometries_of(cs, sorted(cs.tiles), reduce, keys))
            return measured[t]

        # check_limits, with its shape kept for the frames that follow
        shape, cost = check_shape(cs, reduce, self.limits, len(codestream), geometry, sizes)
        # only tiles present are planned: a missing tile stays zero (reported)
        plans = self._plans_of(cs, sorted(cs.tiles), reduce, keys)
        missing_steps = sum(p.missing_steps for p in plans)
        if missing_steps:
            policy.tolerate(InvalidSegment("quantization lists fewer step sizes than subbands"), cs.warnings,
                            text=f"QCD/QCC list no step size for {missing_steps} subbands (A.6.4); "
                                 "decoded with what OpenJPEG's decoder holds for them")
        offsets = list(itertools.accumulate((p.coeff_size for p in plans), initial=0))
        ht = has_ht_blocks(plans)
        if cs.header_key is not None and not missing_steps and not cs.warnings and _plain_tiles(cs):
            if len(self._known) >= KNOWN_FRAMES:
                self._known.clear()
            self._known[memo] = KnownFrame(cs.header_key, shape, plans, offsets[:-1], offsets[-1], ht)
        return Prepared(cs, jp2, plans, offsets[:-1], offsets[-1], reduce, layers, policy,
                        time.perf_counter() - t0, ht, cost, missing, area)

    @memory_guard
    def entropy_decode(self, prep: Prepared, out: np.ndarray | None = None) -> tuple[np.ndarray, list[TileReport]]:
        """Tier-2 and tier-1 of every tile into one int32 buffer of ``prep.size``."""
        coeffs = np.empty(prep.size, np.int32) if out is None else out
        ppm = tile_part_ppm_headers(prep.cs)
        reports = [missing_tile_report(t, prep.cs.siz.num_tiles) for t in prep.missing]
        tables = self.frame_tables(prep)
        if prep.area is not None and prep.plans:    # tier-1 only for the code-blocks that reach the area (area.py)
            reach = [codeblocks_meeting(p, prep.cs.siz, prep.area, prep.reduce) for p in prep.plans]
            tables = replace(tables, cb_keep=(tables.cb_keep.astype(bool) & np.concatenate(reach)).astype(np.int8))
        # every tile in one tier-2 and one tier-1 call (frame_entropy.py)
        reports += entropy_decode_frame(prep.cs, prep.plans, prep.offsets, tables,
                                        layers=prep.layers, ppm=ppm, policy=prep.policy, coeffs=coeffs)
        return coeffs, reports

    @memory_guard
    def tier2(self, prep: Prepared) -> tuple[list[TileSegments | None], list[TileReport]]:
        """Tier-2 of every planned tile: the arrays tier-1 takes, per tile."""
        ppm = tile_part_ppm_headers(prep.cs)
        reports = [missing_tile_report(t, prep.cs.siz.num_tiles) for t in prep.missing]
        segments = []
        for plan in prep.plans:
            report = TileReport(plan.index)
            segments.append(tier2_tile(prep.cs, plan, prep.cs.tiles[plan.index], layers=prep.layers,
                                       ppm=ppm, policy=prep.policy, report=report))
            reports.append(report)
        return segments, reports

    @memory_guard
    def tier1_gpu(self, prep: Prepared, segments: list[TileSegments], reports: list[TileReport]):
        """Tier-1 of every tile on the GPU into one device coefficient buffer (waits for it)."""
        coeffs, statuses = self.tier1_gpu_launch(prep, segments)
        self.tier1_gpu_check(prep, statuses, reports)
        return coeffs

    @memory_guard
    def tier1_gpu_launch(self, prep: Prepared, segments: list[TileSegments]):
        """Launch tier-1 of every tile on the GPU (asynchronous, on the current stream):
        the device coefficient buffer and each tile's device status array (None: no blocks),
        for :meth:`tier1_gpu_check` once the kernels have run."""
        return self.tier1_gpu_launch_batch([(prep, segments)])[0]

    @memory_guard
    def tier1_gpu_launch_batch(self, frames: list[tuple[Prepared, list[TileSegments]]]):
        """Tier-1 of every tile of several frames in one kernel launch (asynchronous, on the
        current stream): for each frame, its device coefficient buffer (a view of the batch's
        one buffer) and each tile's device status array (None: no blocks).

        One launch keeps the GPU's threads busy to the end of the batch (a frame alone leaves
        the tail of its largest blocks to a few threads), and costs one launch's host time.
        The tier-2 arrays are copied from host memory without waiting (page-locked: by DMA), so
        they must stay unchanged until the launch has run (an event recorded after it says so).
        """
        return self._tier1_gpu_launch(frames, host_statuses=False)[0]

    @memory_guard
    def tier1_gpu_launch_host(self, frames: list[tuple[Prepared, list[TileSegments]]]):
        """:meth:`tier1_gpu_launch_batch` with the statuses in host memory: (for each frame,
        its device coefficient buffer and each tile's status array; the batch's statuses, of
        which those are views, as one array, None without blocks). The statuses are numpy
        arrays of page-locked memory that an asynchronous copy queued behind the launch fills:
        read them only once the stream has passed it (a later event), never sooner. A pipeline
        that reads them so never makes the host wait for every kernel queued on the stream (a
        device-to-host copy of a CuPy array does), and can look through a batch's at once
        (:class:`~cinegpu.decode.pipeline_modes.BatchStatuses`) rather than frame by frame."""
        return self._tier1_gpu_launch(frames, host_statuses=True)

    def _tier1_gpu_launch(self, frames, *, host_statuses: bool):
        """The launch of :meth:`tier1_gpu_launch_batch`: (its per-frame results, the batch's
        status array or None)."""
        from .tier1 import gpu as t1gpu  # noqa: PLC0415  (optional: CuPy, which tier1.gpu imports)

        xp = self.xp
        parts, out_bases, frame_bases, base = [], [], [], 0
        for prep, segments in frames:
            frame_bases.append(base)
            for plan, off, seg in zip(prep.plans, prep.offsets, segments):
                if plan.cb.shape[0]:
                    parts.append(seg)
                    out_bases.append(base + off)
            base += prep.size
        coeffs = xp.empty(max(base, 1), xp.int32)
        status = None
        if parts:
            batch, (coded, table, lengths, passes, order) = t1gpu.upload_batch(parts, out_bases)
            lanes = t1gpu.lanes_for(int(batch.rows[-1]))
            status = t1gpu.decode_codeblocks_cuda(coded, table, lengths, passes, coeffs, entries=batch.entries,
                                            order=order, lanes=lanes)
            if host_statuses:
                pinned = xp.cuda.alloc_pinned_memory(status.nbytes)
                host = np.frombuffer(pinned, np.int32, status.size)
                xp.cuda.runtime.memcpyAsync(host.ctypes.data, status.data.ptr, status.nbytes,
                                            xp.cuda.runtime.memcpyDeviceToHost, xp.cuda.get_current_stream().ptr)
                status = host
        results, k = [], 0
        for (prep, _), fbase in zip(frames, frame_bases):
            statuses = []
            for plan in prep.plans:
                if plan.cb.shape[0]:
                    statuses.append(status[batch.rows[k]:batch.rows[k + 1]])
                    k += 1
                else:
                    statuses.append(None)
            results.append((coeffs[fbase : fbase + prep.size], statuses))
        return results, status

    def tier1_gpu_check(self, prep: Prepared, statuses: list, reports: list[TileReport]) -> None:
        """Read the tier-1 statuses back (a synchronisation) into the tile reports; strict
        decoding raises :class:`InvalidSegment` for a faulty code-block."""
        by_tile = {r.tile: r for r in reports}
        for plan, status in zip(prep.plans, statuses):
            if status is not None:
                status = status if isinstance(status, np.ndarray) else self.xp.asnumpy(status)
                check_tier1_status(status, plan, prep.policy, by_tile[plan.index])

    @memory_guard
    def reconstruct(self, prep: Prepared, coeffs, components=None, *, to_host: bool = True,
                    timings: dict | None = None) -> list:
        """Samples of every wanted component, assembled from the tiles.

        ``coeffs`` is a numpy or (CUDA back end) CuPy array; with
        ``to_host=False`` on the CUDA back end the result stays on the device.
        ``timings`` (CUDA back end) receives "upload", "gpu" and "download"
        seconds, measured with device synchronisation.
        """
        if components is None and prep.area is None and self.xp is np and hasattr(self.transform, "frame_samples_flat"):
            layout = self.frame_layout(prep)
            if layout is not None:   # the whole frame in one compiled call
                return reconstruct_frame(layout, np.ascontiguousarray(coeffs, np.int32), self.transform)
        s = prep.cs.siz
        xp = self.xp
        keep_on_device = xp is not np and not to_host
        mod = xp if keep_on_device else np
        # each component's size and origin on its own grid at this reduction (B-2), of the
        # image or of the decode area
        sizes, origins = prep.windows()
        dtypes = sample_dtypes(s.Ssiz)
        if prep.area is not None and xp is np:
            return self._reconstruct_area(prep, coeffs, components, sizes, origins, dtypes)
        # a component that one tile covers whole takes that tile's plane (converted: one kernel
        # on the device, not a zeroed plane and a copy); the others are made here, zero where
        # no tile lands
        out: list = [None] * s.Csiz
        gpu_planes = []
        t_gpu = time.perf_counter()
        if xp is not np:
            coeffs = xp.asarray(coeffs)
            if timings is not None:
                xp.cuda.Device().synchronize()
                timings["upload"] = time.perf_counter() - t_gpu
                t_gpu = time.perf_counter()
        for plan, off in zip(prep.plans, prep.offsets):
            planes = reconstruct_tile(plan, coeffs[off : off + plan.coeff_size], s, self.transform, components,
                                      dtypes)
            for c, (tc, plane) in enumerate(zip(plan.components, planes)):
                if plane is None:
                    continue
                res = tc.resolutions[tc.decoded - 1]
                cy0, cx0 = origins[c]
                if xp is not np and not keep_on_device:
                    gpu_planes.append((c, res, cy0, cx0, plane))
                    continue
                w, h = sizes[c]
                if out[c] is None:
                    if (res.x0 - cx0, res.y0 - cy0, res.x1 - cx0, res.y1 - cy0) == (0, 0, w, h):
                        out[c] = plane.astype(dtypes[c], copy=False)
                        continue
                    out[c] = mod.zeros((h, w), dtypes[c])
                _place(out[c], plane, (res.x0, res.y0, res.x1, res.y1), cy0, cx0, h, w)
        for c, a in enumerate(out):
            if a is None:
                w, h = sizes[c]
                out[c] = mod.zeros((h, w), dtypes[c])
        if xp is not np and timings is not None:
            xp.cuda.Device().synchronize()
            timings["gpu"] = time.perf_counter() - t_gpu
        if gpu_planes:
            t1 = time.perf_counter()
            for c, res, cy0, cx0, plane in gpu_planes:    # out: zeros made above (host)
                w, h = sizes[c]
                _place(out[c], plane, (res.x0, res.y0, res.x1, res.y1), cy0, cx0, h, w, xp.asnumpy)
            if timings is not None:
                timings["download"] = time.perf_counter() - t1
        return out

    def _reconstruct_area(self, prep: Prepared, coeffs: np.ndarray, components, sizes, origins, dtypes) -> list:
        """:meth:`reconstruct` of a decode area on the host: each tile's samples in the area's
        window and :data:`~.area.REACH` 2^levels about it (what reaches the window from past
        the cut's edges stays outside), reconstructed alone (:func:`~.reconstruct.reconstruct_tile_window`)."""
        out = [np.zeros((h, w), dtype) for (w, h), dtype in zip(sizes, dtypes)]
        for plan, off in zip(prep.plans, prep.offsets):
            m = REACH << max((tc.decoded - 1 for tc in plan.components), default=0)
            windows = [(ox - m, oy - m, ox + w + m, oy + h + m) for (w, h), (oy, ox) in zip(sizes, origins)]
            planes, rects = reconstruct_tile_window(plan, coeffs[off : off + plan.coeff_size], prep.cs.siz,
                                                    self.transform, windows, components)
            for c, (plane, rect) in enumerate(zip(planes, rects)):
                if plane is not None:
                    (w, h), (cy0, cx0) = sizes[c], origins[c]
                    _place(out[c], plane, rect, cy0, cx0, h, w)
        return out

    @memory_guard
    def reconstruct_frames(self, preps: list[Prepared], coeffs: list, components: list, *,
                           to_host: bool = True) -> list[list]:
        """:meth:`reconstruct` of each of several frames (``coeffs``: each one's buffer,
        ``components``: each one's checked indices or None). Frames of one plan, one tile whose
        three components go through the MCT, all components wanted, whose coefficients lie evenly
        in one device buffer (a batch's tier-1 output) are reconstructed together: each kernel
        launched once for all of them (:func:`~.transform.cuda_backend.reconstruct_mct_frames`),
        the same samples as frame by frame; others frame by frame."""
        batched = self._frames_together(preps, coeffs, components)
        if batched is not None:
            planes = self.transform.reconstruct_mct_frames(*batched)
            if planes is not None:
                if not to_host:
                    return [list(frame) for frame in planes]
                host = self.xp.asnumpy(planes)
                return [list(frame) for frame in host]
        return [self.reconstruct(p, c, comp, to_host=to_host) for p, c, comp in zip(preps, coeffs, components)]

    def _frames_together(self, preps: list[Prepared], coeffs: list, components: list) -> tuple | None:
        """The arguments of ``reconstruct_mct_frames`` for frames :meth:`reconstruct_frames`
        reconstructs together, or None."""
        first = preps[0]
        if (len(preps) < 2 or self.xp is np or not hasattr(self.transform, "reconstruct_mct_frames")
                or len(first.plans) != 1 or any(c is not None for c in components)):
            return None
        plan, s = first.plans[0], first.cs.siz
        if s.Csiz != 3 or not plan.mct or any(len(p.plans) != 1 or p.plans[0] is not plan for p in preps):
            return None
        sizes, origins = s.component_sizes(first.reduce), s.component_origins(first.reduce)
        for c, tc in enumerate(plan.components):
            res = tc.resolutions[tc.decoded - 1]
            (cy0, cx0), (w, h) = origins[c], sizes[c]
            if (res.x0 - cx0, res.y0 - cy0, res.x1 - cx0, res.y1 - cy0) != (0, 0, w, h):
                return None     # the tile does not cover the component: placed frame by frame
        buffer = coeffs[0].base if coeffs[0].base is not None else coeffs[0]
        stride = plan.coeff_size
        start = coeffs[0].data.ptr - buffer.data.ptr
        if start % 4 or any(c.data.ptr != coeffs[0].data.ptr + 4 * stride * k for k, c in enumerate(coeffs)):
            return None
        start //= 4
        if buffer.ndim != 1 or start + stride * len(preps) > buffer.size:
            return None
        dtypes = sample_dtypes(s.Ssiz)
        dtype = dtypes[0] if dtypes[0] == dtypes[1] == dtypes[2] else None
        if dtype is None:
            return None
        reversible = reconstruct_mct_of(plan)
        return (buffer[start : start + stride * len(preps)], len(preps), stride,
                [tc.flat_layout() for tc in plan.components], reversible,
                [s.precision(c) for c in range(3)], [s.signed(c) for c in range(3)], dtype)

    @memory_guard
    def decode(self, data, *, reduce: int = 0, layers: int | None = None, strict: bool | Strictness = False,
               components=None, area=None, request: DecodeRequest | None = None) -> Frame:
        """Decode a codestream or JP2 file into a :class:`Frame`.

        ``strict``: raise on the first fault; otherwise (lenient, the default) decode what
        OpenJPEG decodes as it does, conceal damaged tiles and code-blocks (zeros), and report
        both in ``Frame.reports`` (a bool, or a :class:`~cinegpu.decode.strictness.Strictness`).
        ``components``: indices to decode (None: all); the result then holds
        only those, in that order, and skips the inverse MCT unless 0-2 are
        all among them.
        ``area``: (x0, y0, x1, y1) of the reference grid to decode instead of the whole image
        (:mod:`cinegpu.decode.area`: the tiles that meet it, cut to it).
        ``request``: these options as one :class:`~cinegpu.decode.request.DecodeRequest` instead.
        """
        request = DecodeRequest.given(request, reduce=reduce, layers=layers, strict=strict, components=components,
                                      area=area)
        prep = self.prepare(data, request=request)
        components = check_components(request.components, prep.cs.siz.Csiz)
        if self.tier1_on_gpu(prep):
            segments, reports = self.tier2(prep)
            t0 = time.perf_counter()
            coeffs = self.tier1_gpu(prep, segments, reports)
            self.xp.cuda.Device().synchronize()
            reports[0].tier1_s = time.perf_counter() - t0 if reports else 0.0
        else:
            coeffs, reports = self.entropy_decode(prep)
        t0 = time.perf_counter()
        out = self.reconstruct(prep, coeffs, components)
        return finish_frame(prep, out, reports, components, time.perf_counter() - t0)


#: The main header's marker segments that shape the plans: SIZ (A.5.1) and the coding,
#: quantization, ROI and progression order changes (A.6).
MAIN_PLAN_MARKERS = frozenset((M.SIZ, M.COD, M.COC, M.QCD, M.QCC, M.RGN, M.POC))


def plan_segments(cs: Codestream) -> bytes:
    """The main header's segments (marker, Lxxx and body, A.1.4) that shape the plans
    (:data:`MAIN_PLAN_MARKERS`), as stored, one after another: a cache key cheaper than the
    parsed segments' repr. Codestreams of one key parse to equal SIZ, COD, COC, QCD, QCC, RGN
    and POC; those whose TLM, COM and the like alone differ (a reel's frames) share it."""
    data, end, parts = cs.data, cs.main_end, []
    for code, offset, length in cs.markers:
        if offset >= end:
            break
        if code in MAIN_PLAN_MARKERS:
            parts.append(data[offset : offset + 2 + length])
    return b"".join(parts)


def _place(out: np.ndarray, plane, rect: tuple, cy0: int, cx0: int, h: int, w: int, fetch=None) -> None:
    """The part of a tile-component's ``plane`` (the rectangle ``rect`` (x0, y0, x1, y1) of
    its decoded resolution, on the component's grid) inside the window of ``out`` (``h`` x
    ``w`` samples from (``cy0``, ``cx0``)), copied there (``fetch``: brings the part to the host
    first). The whole plane for a frame decoded whole; a decode area's window cuts its tiles."""
    px0, py0, px1, py1 = rect
    y0, y1 = max(py0, cy0), min(py1, cy0 + h)
    x0, x1 = max(px0, cx0), min(px1, cx0 + w)
    if y0 >= y1 or x0 >= x1:
        return
    part = plane[y0 - py0 : y1 - py0, x0 - px0 : x1 - px0]
    out[y0 - cy0 : y1 - cy0, x0 - cx0 : x1 - cx0] = part if fetch is None else fetch(part)


def missing_tiles(cs: Codestream, reduce: int, among: list[int] | None = None) -> tuple[int, ...]:
    """Tiles no tile-part carries (A.4.2) that hold samples at the resolution decoded, of
    ``among`` (a decode area's tiles; None: every tile).

    A tile that holds no sample of any component there (narrower than a component's
    sub-sampling, say: :func:`~.plan.tile_covers_samples`) has nothing to lose and is not
    missing. The look costs a tile's distinct component sub-samplings; past
    :data:`MISSING_TILE_CHECKS` of them, an absent tile counts as missing unlooked.
    """
    if len(cs.tiles) == (cs.siz.num_tiles if among is None else len(among)):
        return ()
    pairs = sampling_pairs(cs.siz)
    budget = MISSING_TILE_CHECKS
    missing = []
    for t in range(cs.siz.num_tiles) if among is None else among:
        if t in cs.tiles:
            continue
        budget -= len(pairs)
        if budget < 0 or tile_covers_samples(cs, t, reduce, pairs):
            missing.append(t)
    return tuple(missing)


def check_components(components, csiz: int):
    if components is None:
        return None
    components = [int(c) for c in components]
    if not components or any(not 0 <= c < csiz for c in components):
        raise ValueError(f"components {components} outside 0..{csiz - 1}")
    return components


def finish_frame(prep: Prepared, out: list, reports: list[TileReport], components, reconstruct_s: float) -> Frame:
    """Select components, apply a JP2 palette and (all components decoded) its channel
    definitions, gather timings."""
    alpha = None
    if components is not None:
        out = [out[c] for c in components]
        if prep.jp2 is not None:
            out = apply_palette(out, prep.jp2)
    elif prep.jp2 is not None:
        out, order = apply_channels(out, prep.jp2, prep.strict)
        alpha = order.alpha
    frame = Frame(out, reports, list(prep.cs.warnings), alpha=alpha)
    tier2 = tier1 = 0.0
    for r in reports:
        tier2 += r.tier2_s
        tier1 += r.tier1_s
    frame.timings = {"parse": prep.parse_s, "tier2": tier2, "tier1": tier1, "reconstruct": reconstruct_s}
    return frame
