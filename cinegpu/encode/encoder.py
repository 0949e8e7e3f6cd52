"""The encoder: image -> codestream (T.800 Annex A layout, Annexes B-G coding).

Per frame: parameters and headers (:mod:`.profiles`, :mod:`.markers`); the
geometry of each tile from the decoder's own plan (so both halves agree on
every precinct and code-block); the forward stage (:mod:`.forward` on the
CPU, :mod:`.gpu` with CUDA); tier-1 per code-block (:mod:`.blocks`); PCRD
rate control to the byte budget, headers included (:mod:`.rate`); packets
(:mod:`.tier2`) cut into tile-parts and written with SOT/SOD, TLM and EOC.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from cinegpu.decode.backend import ENCODER_NAMES, select_backend
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.plan import build_tile_plan

from . import markers as mk
from .blocks import Block, BlockTable, TierOnePool
from .early_stop import FLOOR_SHARE, component_histograms, first_floor, floor_share
from .early_stop import on_device as _on_device  # noqa: I001 (one definition of 'a CuPy array')
from .forward import code_value_step, forward_tile
from cinegpu.encode.presets import Coding, Params, make_params
from .markers import main_header
from .quant import block_components
from .tier1.ht_gpu_plan import KERNEL_CHOICES

__all__ = ["Encoder", "EncoderSettings", "GeometryCache", "encode"]

#: COD code-block style bit of HT blocks (T.814 A.2) and the Rsiz bit of Part 15 (T.814 A.2).
HT_STYLE = 0x40
RSIZ_HT = 0x4000
#: Code a frame again at most this many times with a lower floor (:mod:`.early_stop`).
MAX_RETRIES = 2
#: The highest floor (bit-planes never coded) early stop may choose.
MAX_FLOOR = 24


@dataclass(frozen=True, kw_only=True)
class EncoderSettings:
    """How an :class:`Encoder` codes: the codestream asked for (``coding``, a
    :class:`~cinegpu.encode.presets.Coding`), the block coder, the quantisation step, early
    stop, and where the work runs.

    ``codec``: "j2k" (Part 1, EBCOT) or "htj2k" (Part 15: HT code-blocks, cleanup pass only,
    :mod:`.ht`; the HT bit is set in the code-block style).  ``base_step``: the irreversible
    quantisation step, sample units, before the per-band weighting.  ``early_stop``: under a
    budget (irreversible), skip the bit-planes rate control would drop (:mod:`.early_stop`).
    ``backend``: the forward stage on "cpu" or "cuda" ("auto": CUDA when present;
    :func:`cinegpu.decode.backend.select_backend`).  ``workers``: tier-1 threads (None: the
    pool's default).  ``rate_on_gpu``: PCRD-opt on the GPU where tier-1 ran (:mod:`.rate_gpu`,
    cuda only; None: on the CPU).  ``device``: the CUDA device (None: the current one when
    it first runs).  ``ht_kernel``: the GPU's HT cleanup kernel, one of
    :data:`~.tier1.ht_gpu_plan.KERNEL_CHOICES`.  ``graphs`` (cuda back end): replay the
    forward stage as a CUDA graph per geometry from its second frame (:mod:`.forward_graph`:
    the same codestream, far fewer launches from Python); False runs it kernel by kernel."""

    coding: Coding = field(default_factory=Coding)
    codec: str = "j2k"
    base_step: float = 1.0
    early_stop: bool = True
    backend: str = "auto"
    workers: int | None = None
    rate_on_gpu: bool | None = None
    device: int | None = None
    ht_kernel: str = "auto"
    graphs: bool = True

    def __post_init__(self):
        if self.codec not in ("j2k", "htj2k"):
            raise ValueError(f"codec {self.codec!r} is neither 'j2k' nor 'htj2k'")
        if self.ht_kernel not in KERNEL_CHOICES:
            raise ValueError(f"ht_kernel {self.ht_kernel!r}: one of {KERNEL_CHOICES}")

    @classmethod
    def of(cls, **options) -> EncoderSettings:
        """The settings of flat keyword options, as :func:`encode` takes them: the fields of
        :class:`~cinegpu.encode.presets.Coding` and of this class (but ``coding``); a
        TypeError names any other."""
        coding_names = {f.name for f in fields(Coding)}
        own_names = {f.name for f in fields(cls)} - {"coding"}
        for name in options:
            if name not in coding_names and name not in own_names:
                raise TypeError(f"unknown encoder option {name!r} (neither a Coding nor an "
                                f"EncoderSettings field)")
        coding = Coding(**{k: v for k, v in options.items() if k in coding_names})
        return cls(coding=coding, **{k: v for k, v in options.items() if k in own_names})


@dataclass
class Frame:
    """What one frame's rate control works on: plans, tier-1 output and per-block facts."""

    params: Params
    cs: object
    plans: list
    table: BlockTable  # every block of every tile, tiles in order, each in plan.cb order
    dists: np.ndarray  # per pass, as table.rates: distortion decrease (index units squared)
    comp: np.ndarray  # component of each block, all tiles concatenated
    base: np.ndarray  # first global block index of each tile
    #: (rate_off, rates, dists) as table and dists on the GPU (CuPy), for rate control
    #: there (:mod:`.rate_gpu`); None: rate control on the CPU
    device: tuple | None = None

    def tile_blocks(self, t: int) -> list[Block]:
        """Tile t's blocks as :class:`Block` objects (for tests and references)."""
        b0 = int(self.base[t])
        return [self.table.block(i, self.dists)
                for i in range(b0, b0 + self.plans[t].cb.shape[0])]


def _split(image) -> list:
    """The components of an (H, W), (H, W, C) or list-of-planes image (numpy or CuPy; views,
    no copy), checked for shape and integer type."""
    if isinstance(image, (list, tuple)):
        comps = [c if _on_device(c) else np.asarray(c) for c in image]
    else:
        a = image if _on_device(image) else np.asarray(image)
        if a.ndim == 2:
            comps = [a]
        elif a.ndim == 3:
            comps = [a[:, :, i] for i in range(a.shape[2])]
        else:
            raise ValueError(f"image must be (H, W) or (H, W, C), got shape {a.shape}")
    if not 1 <= len(comps) <= 16384 or any(c.ndim != 2 or c.size == 0 for c in comps):
        raise ValueError("need 1.. components, each a non-empty 2-D array")
    if any(not np.issubdtype(c.dtype, np.integer) for c in comps):
        raise ValueError("components must be integer arrays")
    return comps


def _extremes(comps) -> list[tuple[int, int]]:
    """(min, max) of every component; on the GPU, a reduction kernel per component
    (:func:`.gpu.component_extremes`: strided views read in place) and one device-to-host
    copy for all."""
    if comps and _on_device(comps[0]):
        from .gpu import component_extremes  # noqa: PLC0415
        return [(int(lo), int(hi)) for lo, hi in component_extremes(comps)]
    return [(int(c.min()), int(c.max())) for c in comps]


def _precisions(comps, bits, signed) -> tuple[list[int], list[bool]]:
    """Each component's precision (``bits``, or from its sample range) and signedness
    (``signed``, or whether it holds a negative sample), checked against its samples.  The
    samples are read (one pass over the image) only where the dtype leaves a question
    open: an unsigned 16-bit image of 12-bit samples is read once, for its maximum."""
    dtypes = [np.dtype(c.dtype) for c in comps]
    need = [np.issubdtype(d, np.signedinteger) if signed is None else False for d in dtypes]
    if bits is None:
        need = [n or d.itemsize > 1 for n, d in zip(need, dtypes)]
        precs = None
    else:
        precs = [int(bits)] * len(comps) if np.ndim(bits) == 0 else [int(b) for b in bits]
    sgn0 = [bool(signed) if signed is not None else np.issubdtype(d, np.signedinteger)
            for d in dtypes]
    for i, d in enumerate(dtypes):           # can this dtype hold a sample out of range?
        if precs is not None:
            info = np.iinfo(d)
            p, s = precs[i], sgn0[i]
            lo, hi = (-(1 << (p - 1)), (1 << (p - 1)) - 1) if s else (0, (1 << p) - 1)
            need[i] = need[i] or info.min < lo or info.max > hi
    ext = _extremes(comps) if any(need) else [None] * len(comps)
    sgn = [bool(signed) if signed is not None else bool(e is not None and e[0] < 0)
           for e in ext]
    if precs is None:
        precs = []
        for d, e, s in zip(dtypes, ext, sgn):
            if d.itemsize == 1:
                precs.append(8)
            else:
                m = max(abs(e[1]), abs(e[0]) - (1 if s else 0))
                precs.append(max(8, m.bit_length() + (1 if s else 0)))
    for e, p, s in zip(ext, precs, sgn):
        lo, hi = (-(1 << (p - 1)), (1 << (p - 1)) - 1) if s else (0, (1 << p) - 1)
        if e is not None and (e[0] < lo or e[1] > hi):
            raise ValueError(f"samples outside the {p}-bit {'signed' if s else 'unsigned'} range")
    return precs, sgn


def _as_components(image, bits, signed):
    """(components, precisions, signedness) of an image, checked (:func:`_split`,
    :func:`_precisions`)."""
    comps = _split(image)
    precs, sgn = _precisions(comps, bits, signed)
    return comps, precs, sgn


class GeometryCache:
    """The parsed main header and tile plans per main header (bytes), the 8 latest: a
    sequence's frames share their geometry, and the plans of a 4K DCI frame take tens of ms
    to build.  Read-only once built, so encoders in several threads share one (``geometry=``)."""

    def __init__(self, size: int = 8):
        import threading
        self._size = size
        self._items: dict[bytes, tuple] = {}
        self._lock = threading.Lock()

    def get(self, header: bytes, build):
        """(cs, plans) for ``header``; ``build()`` makes them on a miss, under the lock, so
        threads starting together build a geometry once (the others wait for it)."""
        with self._lock:
            hit = self._items.get(header)
            if hit is None:
                hit = build()
                if len(self._items) >= self._size:
                    self._items.pop(next(iter(self._items)))
                self._items[header] = hit
            return hit


class Encoder:
    """Reusable encoder (keeps its tier-1 worker threads between frames), coding as
    ``settings`` (:class:`EncoderSettings`) say; ``encode(image, bits=None)`` returns the
    codestream.  ``geometry``: a :class:`GeometryCache` shared with other encoders (default:
    its own).  Encoders in several threads, each on its ``settings.device``, spread frames
    over several GPUs.
    """

    def __init__(self, settings: EncoderSettings = EncoderSettings(), *,
                 geometry: GeometryCache | None = None):
        self.settings = settings
        #: "htj2k": HT code-blocks (ISO/IEC 15444-15), the path of :mod:`.ht`
        self.codec = settings.codec
        #: the GPU's HT cleanup-pass kernel (cuda back end): "auto" one warp a code-block up
        #: to 64 x 64, "thread" one thread a block (benchmarks; the same bytes)
        self.ht_kernel = settings.ht_kernel
        #: what the codestream is asked to be; the HT bit in the style for "htj2k"
        self.coding = settings.coding if self.codec != "htj2k" else \
            replace(settings.coding, style=int(settings.coding.style) | HT_STYLE)
        self.base_step = float(settings.base_step)
        #: under a budget (irreversible), skip the bit-planes rate control would drop
        #: (:mod:`.early_stop`), decided per frame from the frame alone
        self.early_stop = settings.early_stop
        #: the last frame's "floor" (bit-planes not coded), "floor_share", "retries",
        #: "rounds" and "spare_planes"
        self.stats: dict = {}
        self.backend = select_backend(settings.backend, names=ENCODER_NAMES).name
        #: PCRD-opt's hull and thresholds on the GPU where tier-1 ran (:mod:`.rate_gpu`;
        #: the same codestream as on the CPU).  None: on the CPU: measured on the GPU machine,
        #: the GPU path is faster for one encoder but slower for sixteen in threads, which is
        #: how ``cinegpu master`` runs them (docs/performance.md)
        self.rate_on_gpu = bool(settings.rate_on_gpu)
        if self.rate_on_gpu and self.backend != "cuda":
            raise ValueError("rate_on_gpu needs the cuda back end")
        self.pool = TierOnePool(settings.workers)
        self.timings: dict[str, float] = {}
        #: the main header the last frame was written with, as the codec parses it (a
        #: :class:`~cinegpu.decode.codestream.header.Codestream` of its SIZ, CAP, COD, QCD...,
        #: shared by every frame of one geometry: parsed once, when the geometry was planned;
        #: its TLM without entries), for a writer that repeats it (the MXF picture descriptor)
        #: without parsing the codestream again; None before a frame
        self.header = None
        self._plans = geometry if geometry is not None else GeometryCache()
        #: the CUDA device (cuda back end) this encoder's stream, buffers and kernels live on;
        #: None: the current device when it first runs
        self.device = settings.device
        self._stream = None
        self._staging = None        # page-locked upload buffer (cuda, made on first use)
        self._tiles = None          # the GPU tier-1's per-plan tables (TileGeometries)
        #: the forward stage replayed as CUDA graphs (:mod:`.forward_graph`; cuda back end)
        self.graphs = settings.graphs
        self._graphs = None
        self._band_tables = None    # the batched forward path's per-plan tables (cuda)
        self._maxima = None         # the last forward stage's band maxima per tile (cuda)
        self._ht_blocks: dict = {}  # each plan's HT BlockSet on the GPU (cuda, htj2k)

    def close(self):
        self.pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- stages -------------------------------------------------------------
    def encode(self, image, *, bits=None, signed=None) -> bytes:
        comps = _split(image)
        with self.on_stream():       # the upload and the sample checks on the encoder's stream
            if self.backend == "cuda":
                comps = self._upload(image, comps)
            precs, sgn = _precisions(comps, bits, signed)
        return self._encode(comps, precs, sgn)

    def _upload(self, image, comps) -> list:
        """The components on the GPU: an (H, W[, C]) host image goes up whole, at its own
        dtype, through the encoder's page-locked buffer (one copy; the GPU splits and widens
        the components); separate host planes go up one by one.  Called on the encoder's
        stream."""
        import cupy  # noqa: PLC0415
        from .gpu import HostStaging  # noqa: PLC0415
        if not isinstance(image, (list, tuple)) and not _on_device(image):
            if self._staging is None:
                self._staging = HostStaging()
            return _split(self._staging.upload(np.asarray(image), self._stream))
        return [c if _on_device(c) else cupy.asarray(np.ascontiguousarray(c)) for c in comps]

    def encode_planes(self, planes, precisions, signed=None, *, code_values=None) -> bytes:
        """Encode components already on the GPU (CuPy int32 planes, e.g. from
        :func:`cinegpu.encode.gpu.rgb_to_xyz12`) without a host round trip.  The caller
        guarantees every sample lies in its ``precisions`` range (unsigned unless
        ``signed``); needs the ``cuda`` back end.

        ``code_values``: (top, bits): the planes hold samples (e.g. the component views
        ``image[:, :, c]`` of an interleaved uint8 / uint16 CuPy image, read in place) to be
        coded as IMF's R'G'B' code values ``rint((2^bits - 1) clip(s / top, 0, 1))``, computed
        in the forward stage's colour kernel: the codestream of
        ``encode_planes(gpu.code_values(image, top, bits), precisions)`` without its int32
        planes.  The code values (0 .. 2^bits - 1) are what is coded and checked: they must
        fit every precision, unsigned."""
        if self.backend != "cuda":
            raise ValueError("encode_planes needs the cuda back end")
        n = len(planes)
        precs = [int(precisions)] * n if np.ndim(precisions) == 0 else [int(p) for p in precisions]
        sgn = [bool(signed)] * n if signed is None or np.ndim(signed) == 0 else \
            [bool(s) for s in signed]
        step = None
        if code_values is not None:
            top, bits = code_values
            if any(sgn) or any(p < int(bits) for p in precs):
                raise ValueError(f"{int(bits)}-bit code values need unsigned components of "
                                 f"at least {int(bits)} bits, got {precs} (signed {sgn})")
            step = code_value_step(top, bits)
        return self._encode(list(planes), precs, sgn, step)

    def _encode(self, comps, precs, sgn, code_values=None) -> bytes:
        """The codestream of ``comps`` (precisions ``precs``, signedness ``sgn``);
        ``code_values``: (scale, peak) of :func:`.forward.code_value_step`, the components'
        samples coded as their code values (cuda back end)."""
        import time
        t0 = time.perf_counter()
        params = make_params([c.shape for c in comps], precs, sgn, self.coding)
        if self.codec == "htj2k":
            params = replace(params, Rsiz=params.Rsiz | RSIZ_HT)
        self.stats = {}
        with self.on_stream():
            cs, plans = self._geometry(params)
            flats = self._forward(comps, params, plans, code_values)
            params, cs, plans, flats = self._guard_bits(params, cs, plans, flats)
            self.header = cs                 # the header this frame is written with
            if self.codec == "htj2k":
                return self._encode_ht(params, cs, plans, flats, t0)
            tf = time.perf_counter()
            floor = self._first_floor(params, plans, flats)
        t1 = time.perf_counter()
        tier1 = rate = 0.0
        retries = 0
        while True:
            ta = time.perf_counter()
            with self.on_stream():
                frame = self._tier1(params, cs, plans, flats, floor)
            tb = time.perf_counter()
            with self.on_stream():
                data, share, starved = self._rate_and_write(frame, floor)
            tier1, rate = tier1 + tb - ta, rate + time.perf_counter() - tb
            if floor == 0 or (share <= FLOOR_SHARE and not starved) or retries == MAX_RETRIES:
                break
            # the floor cut what rate control wanted: one plane lower, or every plane when
            # the budget had room for passes the floor left out
            floor, retries = (0 if starved else floor - 1), retries + 1
        self.stats.update(floor=floor, floor_share=share, retries=retries)
        self.timings = {"forward": tf - t0, "floor": t1 - tf, "tier1": tier1,
                        "rate+tier2": rate}
        return data

    def _encode_ht(self, params, cs, plans, flats, t0) -> bytes:
        """The HTJ2K codestream (:func:`.ht.encode_ht_frame`) of the forward stage's output,
        its cleanup passes coded where the forward stage ran (on the cuda back end the
        coefficients stay on the GPU)."""
        import time
        from .ht import encode_ht_frame
        t1 = time.perf_counter()
        with self.on_stream():
            data = encode_ht_frame(Frame, params, cs, plans, flats, self.base_step, self.pool,
                                   self.stats, kernel=self.ht_kernel,
                                   blocks=self._ht_blocks)
        self.timings = {"forward": t1 - t0, "tier1+rate+tier2": time.perf_counter() - t1}
        return data

    def on_stream(self):
        """A context in which the encoder's device is current and its own CUDA stream (so
        that encoders in several threads overlap on one GPU) is the current stream, or a
        no-op context on the CPU back end."""
        import contextlib
        if self.backend != "cuda":
            return contextlib.nullcontext()
        import cupy
        if self._stream is None:
            if self.device is None:
                self.device = cupy.cuda.runtime.getDevice()
            with cupy.cuda.Device(self.device):
                self._stream = cupy.cuda.Stream(non_blocking=True)
        ctx = contextlib.ExitStack()
        ctx.enter_context(cupy.cuda.Device(self.device))
        ctx.enter_context(self._stream)
        return ctx

    def _geometry(self, params: Params):
        header = main_header(params, self.base_step, [])

        def build():
            cs = parse_codestream(header + mk.eoc())
            return cs, [build_tile_plan(cs, t) for t in range(params.num_tiles)]
        return self._plans.get(header, build)

    def _forward(self, comps, params, plans, code_values=None):
        """Each tile's flat int32 buffer (:func:`.forward.forward_tile`, or
        :func:`.gpu.forward_tile_cuda` on the GPU, replayed as a CUDA graph per geometry and
        code-value step); ``code_values``: (scale, peak), as :meth:`_encode`."""
        if self.backend == "cuda":
            from .gpu import forward_tile_cuda

            if self._band_tables is None:
                from .gpu import BandTables
                self._band_tables = BandTables()

            def build(planes):                 # each tile's flat buffer, then its maxima
                maxima: list = []
                return [forward_tile_cuda(planes, p, params.precisions, params.signed,
                                          params.mct, params.reversible, on_device=True,
                                          tables=self._band_tables, maxima=maxima,
                                          code_values=code_values)
                        for p in plans] + maxima
            if not self.graphs:
                outs = build(comps)
            else:
                if self._graphs is None:
                    from .forward_graph import ForwardGraphs
                    self._graphs = ForwardGraphs()
                key = (id(plans), tuple((c.shape, c.dtype.str) for c in comps),
                       tuple(params.precisions), tuple(params.signed), params.mct,
                       params.reversible,    # the step's scale and peak are kernel arguments
                       None if code_values is None else tuple(float(v) for v in code_values))
                outs = self._graphs.run(key, plans, comps, build, self._stream)
            self._maxima = outs[len(plans):]
            return outs[:len(plans)]
        return [forward_tile(comps, p, params.precisions, params.signed, params.mct,
                             params.reversible, code_values) for p in plans]

    def _guard_bits(self, params, cs, plans, flats):
        """Raise G until every band's indices fit in M_b bit-planes (E-2); DCI keeps its
        G and clips instead (as a real-time encoder would)."""
        if self.backend == "cuda":
            from .gpu import guard_bits_cuda
            maxima, self._maxima = self._maxima, None     # this frame's, from _forward
            need = guard_bits_cuda(plans, flats, params.guard_bits, params.guard_bits_fixed,
                                   maxima, self._band_tables, params.reversible)
            return self._with_guard_bits(params, cs, plans, flats, need)
        need = params.guard_bits
        for plan, flat in zip(plans, flats):
            for tc in plan.components:
                for res in tc.resolutions:
                    for b in res.bands:
                        n = b.width * b.height
                        if n == 0:
                            continue
                        m = int(np.abs(flat[b.offset:b.offset + n]).max())
                        over = m.bit_length() - b.Mb
                        if over > 0:
                            if params.guard_bits_fixed:
                                lim = (1 << b.Mb) - 1
                                np.clip(flat[b.offset:b.offset + n], -lim, lim,
                                        out=flat[b.offset:b.offset + n])
                            else:
                                need = max(need, params.guard_bits + over)
        return self._with_guard_bits(params, cs, plans, flats, need)

    def _with_guard_bits(self, params, cs, plans, flats, need):
        if need == params.guard_bits:
            return params, cs, plans, flats
        if need > 7:
            raise ValueError("coefficients need more than 7 guard bits")
        params = replace(params, guard_bits=need)
        cs, plans = self._geometry(params)
        return params, cs, plans, flats

    def _tier1(self, params, cs, plans, flats, floor: int = 0) -> Frame:
        """Tier-1 of every tile's blocks, down to bit-plane ``floor`` (early stop)."""
        if self.backend == "cuda":   # on the GPU, every tile launched before any is waited on
            from .tier1.gpu import TileGeometries, launch_tile
            if self._tiles is None:
                self._tiles = TileGeometries()
            pending = [launch_tile(flat, plan.cb, params.cblk_style, stream=self._stream,
                                   floor=floor, geometry=self._tiles.get(plan))
                       for plan, flat in zip(plans, flats)]
            parts = [p.result() for p in pending]
        else:
            parts = [self.pool.run_tile(flat, plan.cb, params.cblk_style, floor)
                     for plan, flat in zip(plans, flats)]
        table, dists = BlockTable.join(parts)
        sizes = [plan.cb.shape[0] for plan in plans]
        base = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        comp = np.concatenate([block_components(plan) for plan in plans])
        device = None
        if self.backend == "cuda" and self.rate_on_gpu:
            device = self._device_figures(pending, table, dists)
        return Frame(params, cs, plans, table, dists, comp, base, device)

    def _device_figures(self, pending, table, dists):
        """The frame's (rate_off, rates, dists) on the GPU: tier-1's own buffers (one tile),
        joined there (several), or uploaded from the table when the numba fallback coded
        some blocks."""
        import cupy
        with self._stream:
            figs = [p.figures for p in pending]
            if len(figs) == 1 and figs[0] is not None:
                return figs[0]
            if all(f is not None for f in figs):
                return (cupy.asarray(table.rate_off), cupy.concatenate([f[1] for f in figs]),
                        cupy.concatenate([f[2] for f in figs]))
            return (cupy.asarray(table.rate_off), cupy.asarray(table.rates.astype(np.int32)),
                    cupy.asarray(dists))

    def _first_floor(self, params: Params, plans, flats) -> int:
        """Bit-planes not to code (:func:`.early_stop.first_floor`, from each component's
        histogram and its cap): 0 without a budget, for the reversible path (lossless
        unless a budget cuts it; its planes are few), or with early_stop off."""
        budget = params.frame_bytes or params.component_bytes
        if not self.early_stop or params.reversible or not budget:
            return 0
        return first_floor(component_histograms(plans, flats, params.ncomp), budget, MAX_FLOOR,
                           params.component_bytes)

    def _rate_and_write(self, frame: Frame, floor: int) -> tuple[bytes, float, bool]:
        """The codestream and, when the planes under ``floor`` were not coded, the share of
        its body bytes from plane ``floor`` (:func:`.early_stop.floor_share`) and whether
        rate control was starved (the writer's stats)."""
        from .writer import allocate_and_write
        stats: dict = {}
        data = allocate_and_write(frame, self.base_step, stats)
        self.stats.update(stats)
        t = frame.table
        share = floor_share(t.rates, t.rate_off, t.num_bps, stats["passes"], floor) \
            if floor else 0.0
        return data, share, bool(floor) and stats["starved"]


def encode(image, *, bits=None, signed=None, **options) -> bytes:
    """Encode an image as a JPEG 2000 codestream (T.800 Annex A), returned as bytes.

    ``image``: (H, W) or (H, W, C) integer array, or a list of 2-D component arrays
    (subsampled ones allowed); ``bits`` the precision (inferred: 8 for 8-bit arrays,
    else the bits the samples need, at least 8), ``signed`` inferred from the data.
    ``options``: :meth:`EncoderSettings.of`'s, by name (a TypeError for any other):
    ``profile``: "generic", "dci-2k" or "dci-4k" (the DCI 2K / 4K profiles of ISO/IEC 15444-1
    Amd 1, see :mod:`cinegpu.encode.presets`: the profile fixes everything but ``fps`` and ``bitrate``).
    ``bitrate``: bits per second at ``fps``; the codestream (headers included) is at
    most bitrate / 8 / fps bytes (DCI: also the 250/200 Mbit/s frame/component caps).
    None in the generic profile keeps every coding pass.
    ``reversible``: 5/3 + RCT, lossless when no bitrate is set; else 9/7 + ICT.
    ``levels``: decomposition levels (default min(5, log2(min side) - 2)).
    ``codeblock``: (width, height) as sizes or exponents.  ``progression``: LRCP,
    RLCP, RPCL, PCRL or CPRL.  ``layers``: quality layers.  ``tiles``: (XTsiz,
    YTsiz) or None for one tile.  ``precincts``: per-resolution (PPx, PPy) sizes or
    exponents, lowest resolution first, or None.  ``style``: code-block style bits
    (CBLK_* of cinegpu.decode.tier1).  ``backend``: forward stage on "cpu" or
    "cuda" ("auto" picks CUDA when present; :func:`cinegpu.decode.backend.select_backend`
    raises :class:`~cinegpu.decode.errors.BackendUnavailable` for "cuda" without it).
    ``workers``: tier-1 threads.
    ``quantization``: "expounded" or "derived" (irreversible only).  ``base_step``:
    irreversible quantisation step in sample units before the per-band weighting.
    ``codec``: "j2k" (Part 1, EBCOT) or "htj2k" (Part 15: HT code-blocks, cleanup pass only,
    see :mod:`cinegpu.encode.ht`; wrap the result with :func:`cinegpu.encode.ht.jph_file`
    for a .jph file).  ``mct``: the component transform over components 0-2 where they are
    of one size (None, the default), or never (False: Y'CbCr input, as IMF carries it).
    """
    with Encoder(EncoderSettings.of(**options)) as enc:
        return enc.encode(image, bits=bits, signed=signed)
