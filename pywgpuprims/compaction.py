"""Stream compaction and run-length encoding (PARLE), with decoding.

``compact(x, mask)``, ``nonzero(a)`` / ``flatnonzero(a)``, ``rle_encode(x)`` and
``rle_decode(values, counts)``.

Two pipelines produce the same bits:

``method="fused"`` (default)
    One pass reads the input once. Each tile flags its items (run starts, or kept elements),
    scans the flag counts within the workgroup, takes its output offset from the single-pass
    decoupled lookback over u32 counts (``common/lookback.wgsl``; a tile that polls a silent
    predecessor re-counts that tile's flags itself: ``fallback_aggregate``) and writes its items.
    ``compact`` and ``rle_encode`` of 32-bit values use ``wgsl/rle/compact.wgsl``, built like
    the scan: each invocation holds 8 (compact) or 12 (RLE) vec4 words of its tile in registers
    (subgroup-contiguous slots, so loads are coalesced), subgroup inclusive adds with the carry
    from the last lane, and loop-free stores by rank. ``compact`` writes each kept value straight
    from registers (the L2 merges the partial lines); ``rle_encode`` stages values and run starts
    in 2048-entry rounds of workgroup memory and writes aligned vec4 words of values and run
    lengths. A run's length is the distance to the next start in the same tile; the tile's last
    run, which may cross into later tiles, leaves its start in its count slot, and a tiny pass
    over the tiles (``wgsl/rle/fixup.wgsl``) turns it into ``next_start - start``, the next start
    being the first run start of the next tile that has one. ``nonzero`` and uint8 values go
    through ``wgsl/rle/fused.wgsl`` (tiles of 8192 32-bit or 4096 uint8 elements, items staged in
    workgroup memory); uint8 values (packed four to a word) go through run START positions (with
    the sentinel ``n``) and the finishing pass (``wgsl/rle/finish.wgsl``: counts and a packing
    gather), so no output word is written by two workgroups.
    A lookback past its step budget walks on one predecessor per loop trip, recounting silent
    tiles itself (``wgsl/common/lookback.wgsl``), which covers about 40,000 tiles within
    lavapipe's loop cap. Only past that could a tile give up: it records it in a status word,
    and the last tile to finish arms a reduce-then-scan repair on the GPU (indirect dispatch:
    per-tile counts, a one-workgroup scan of them, a rewrite of every tile from its exact
    offset), recorded only for such inputs. There is no host read-back, so GpuArray results are
    repaired too.

``method="parle"`` (the readable reference; ``wgsl/rle/parle.wgsl``)
    Balevic's PARLE: a flag per element, the library's inclusive scan (``record_scan``, same
    batch), a scatter of the flagged positions (with the ``n`` sentinel for RLE), and the same
    finishing pass for values and counts.

Results whose length is known only on the GPU. numpy in gives numpy out (the count is read back
first). GpuArray in gives a :class:`Compacted` or :class:`RunLengths`: GpuArrays sized for the
worst case plus the count as a one-element GpuArray, so chains stay on the GPU
(``rle_decode(rle_encode(g))`` reads nothing back: it takes the run ends from the encoder's run
starts (uint8, PARLE) or, for the fused 32-bit pipeline, from a per-tile scan of the run lengths
seeded by the fused pass's per-tile record (``wgsl/rle/ends.wgsl``)).

Decoding: an inclusive scan of the counts (the library's scan), a partition pass (one binary
search per output tile, all in parallel), then the expand. For 32-bit values
(``wgsl/rle/expand.wgsl``) each output tile (2048 elements) marks the start of each of its runs
in workgroup memory and scans the marks, laid out like the scan (subgroup inclusive adds, or a
max-scan where zero-length runs share a start), so every element finds its run without a
search or a branch, and stores whole vec4 words. uint8 values use ``wgsl/rle/decode.wgsl``
(each invocation searches its runs within the tile's range and walks them).

Runs compare bit patterns: float32 ``-0.0`` and ``0.0`` are different runs, and NaNs with the same
bits form one run (numpy's ``x[1:] != x[:-1]`` would split NaN runs and join the zeros).
Indices (``nonzero``, ``flatnonzero``) are int64 by default, as numpy's (``intp``): the fused
pass writes each as a pair of 32-bit words (``rle/fused.wgsl`` IDX64: no ``shader-int64``
needed), the high word from a 64-bit base and its carry, so a chunk of a larger array
(``pywgpuprims.stream``, ``pywgpuprims.dask``) gets exact global indices past 2^32;
``dtype=np.uint32`` keeps the 32-bit path (half the bytes written). ``nonzero`` gives a tuple of
per-axis arrays as numpy does (found on the host for numpy input, on the GPU for a GpuArray:
``rle/pairs.wgsl`` UNRAVEL). Run lengths (``rle_encode``'s counts) are uint32: numpy has no
run-length encoder to follow, and ``rle_decode`` takes them as they come. One call is limited to
fewer than 2^32 - 2^16 elements.

Test hooks (``device().using(...)``, fields of ``pywgpuprims._hooks.TestHooks``):
``rle_withhold_period`` (every k-th tile withholds its
lookback state, forcing the fallback), ``rle_max_steps`` (lookback step budget; 0 sends every
lookback to the tile-by-tile walk), ``rle_max_self`` (tiles that walk may cover; 0 with
``rle_max_steps=0`` forces the repair), ``rle_subgroups`` (False: the workgroup-memory paths),
``rle_stats_buffer`` (receives the single pass's 4 counter words: ticket, gave-up, fallbacks,
finished), ``rle_wg`` / ``rle_vec4_per_thread`` / ``rle_compact_vec4_per_thread`` / ``rle_stage`` /
``rle_decode_vec4_per_thread``
(other tiles and staging sizes), ``rle_decode_cap`` (runs in an expand tile's range past which it
searches per element: small values force that path).

Past one storage binding (:attr:`Device.binding_limit`; the ``max_binding`` test hook forces it
on small inputs) every call runs in chunks whose offsets are aligned for every array, all
recorded into one submission and joined on the GPU with no read-back per chunk. The fused
pipelines of ``compact`` (32-bit values), ``nonzero`` and ``rle_encode`` (32-bit values) chain
their chunks (``wgsl/rle/chain.wgsl``): each chunk's single pass adds the count of the chunks
before it (read from the previous chunk's info block on the GPU) to its offsets and stores its
items straight into the result, bound as two adjacent output windows (one binding each, at a
multiple of the window; stores past the first go to the second). Chunks are a window long, so
the pair starting at the window that holds the chunk's first item holds them all: the second
chunk has one candidate pair, a later one a pair per window before it, among which a
one-invocation pass (``wgsl/rle/route.wgsl``) picks on the GPU (the chunk's kernel is recorded
once per candidate, each dispatched indirectly, all but one with an empty grid). ``nonzero``
adds the chunk's first index; ``rle_encode`` compares a chunk's first element with the one
before it, so a run across a boundary simply goes on, and finishes the run lengths
that cross tiles once at the end over every chunk's tiles, two windows a pass. 64-bit values and
int64 indices chain their chunks the same way, the geometry counted in 8-byte items. The other
pipelines (uint8 values, ``method="parle"``) run each chunk into scratch, then
(``wgsl/rle/place.wgsl``) a one-invocation pass advances a per-chunk record (items so far, the
last value) and writes the indirect grids of the placement, which moves the chunk's items to the
running offset through windows of the output at aligned offsets, joining a chunk's first run to
the last run so far when their values are equal. ``rle_decode`` into an output past one
binding decodes window by window, the decoder clamping the run ends to its window as it reads
them; runs that themselves exceed a binding are split on the host (GpuArray
runs are then read back). Within one binding nothing of this is recorded.

64-bit values (int64, uint64, float64) travel as pairs of 32-bit words on any adapter
(``wgsl/rle/pairs.wgsl``; ``shader-int64`` is not needed: a value is only compared, as both
words, and moved): fused ``rle_encode`` is one pass of ``wgsl/rle/fused.wgsl`` (PAIRS: two
elements to a vec4, VALUES), which finds the run starts (pairs differing in either word) and
writes each run's value and length (the next start in the tile; the tile's last run finished by
``wgsl/rle/fixup.wgsl`` as for 32-bit values); ``method="parle"``: a flags pass, ``nonzero``,
then values and lengths gathered. Fused ``compact`` is one pass of
``wgsl/rle/compact.wgsl`` over the values' words (PAIRS: each mask element flags both words of
its value, counts and offsets are in words), so it reads 8 bytes per element and writes 8 per
kept one; ``method="parle"`` compacts the mask's indices and gathers both words; ``rle_decode``
decodes the low and the high words as two 32-bit decodings and merges them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _dtypes as _dt
from ._array import GpuArray, _bool_as_uint8, as_input, asarray, submit_counted_to_host, submit_to_host
from ._device import Binding, Device, takes_device
from ._device import device as _default_device
from ._errors import InputError
from ._monoid import monoid_defines
from .scan import LOOKBACK_WINDOW, SPIN_LIMIT, lookback_steps, lookback_walk_tiles, record_scan

__all__ = ["Compacted", "RunLengths", "compact", "flatnonzero", "nonzero", "rle_decode", "rle_encode"]

@dataclass(frozen=True)
class RleTuning:
    """Compaction's and run-length coding's tuning (H100 80GB HBM3, Vulkan, driver 580, 2^28 int32;
    ``python -m pywgpuprims.bench rle compact``)."""

    wg: int = 256                  # invocations per workgroup: 512 and 128 ran slower, 2026-11-21
    fused_vec4_per_thread: int = 8  # rle/fused.wgsl (uint8 values, nonzero): tiles of 8192 elements, 2026-11-21
    compact_vec4_per_thread: int = 8  # compact, direct stores: 286 G el/s (staged vec4 257 at best), 2026-11-21
    encode_vec4_per_thread: int = 13  # rle_encode, staged (no subgroups): 14 falls off the register cliff, 2026-11-22
    bitmask_vec4_per_thread: int = 7  # rle_encode, bitmask (subgroups): runs~16 / random 443 / 193 G el/s, 2026-11-25
    encode_stage: int = 2048       # staged encoder's entries: 1024 equal, 4096 slower, 2026-11-21
    decode_vec4_per_thread: int = 2  # rle/expand.wgsl: H200 runs~16 1 / 2 / 4: 329 / 349 / 249 G el/s, 2026-11-21


TUNING = RleTuning()
WG = TUNING.wg
VEC4_PER_THREAD = TUNING.fused_vec4_per_thread
TILE = WG * VEC4_PER_THREAD * 4  # elements per tile of the fused pass for 32-bit values (uint8: 256 x 16 bytes)
COMPACT_VEC4_PER_THREAD = TUNING.compact_vec4_per_thread
ENCODE_VEC4_PER_THREAD = TUNING.encode_vec4_per_thread
BITMASK_VEC4_PER_THREAD = TUNING.bitmask_vec4_per_thread
RLE_STAGE = TUNING.encode_stage


def _wg(dev: Device) -> int:
    """Invocations per workgroup of the encode and compaction kernels (option ``rle_wg``)."""
    return _or(dev.hooks.rle_wg, WG)


def _use_bitmask(dev: Device) -> bool:
    """Whether rle/compact.wgsl encodes through the run-start bitmask (BITMASK: with subgroups),
    else through staged stores."""
    return _use_subgroups(dev)


def _use_subgroups(dev: Device) -> bool:
    return dev.has_subgroups and dev.hooks.rle_subgroups


def _vpt(dev: Device, dtype) -> int:
    """vec4 words per invocation of the pass that run-length encodes ``dtype``: 1 for uint8 (a tile
    of 4096 elements), else BITMASK_VEC4_PER_THREAD or ENCODE_VEC4_PER_THREAD (rle/compact.wgsl, with or without the
    bitmask); the hook ``rle_vec4_per_thread`` overrides it."""
    if np.dtype(dtype) == np.uint8:
        return 1
    return _or(dev.hooks.rle_vec4_per_thread, BITMASK_VEC4_PER_THREAD if _use_bitmask(dev) else ENCODE_VEC4_PER_THREAD)


def _tile(dev: Device, dtype) -> int:
    return _wg(dev) * _vpt(dev, dtype) * (16 if np.dtype(dtype) == np.uint8 else 4)


def _compact_vpt(dev: Device) -> int:
    return _or(dev.hooks.rle_compact_vec4_per_thread, COMPACT_VEC4_PER_THREAD)


def _encode_stage(dev: Device, vpt: int) -> int:
    """Staging entries of rle/compact.wgsl's staged encoder (8 bytes each: value and start), within
    the device's workgroup memory."""
    room = (dev.limits["max-compute-workgroup-storage-size"] - 4096) // 8
    return max(1024, min(RLE_STAGE, room, _wg(dev) * vpt * 4))


FIN_PER_GROUP = 4 * 256  # items per workgroup of the finishing pass
DECODE_VEC4_PER_THREAD = TUNING.decode_vec4_per_thread
DECODE_VEC4_PER_THREAD_EB8 = 4  # of rle/decode.wgsl (uint8 values)
DECODE_CAP = 64 * 256  # runs in an expand tile's range past which it searches per element instead
STAGE = 4096  # workgroup-memory staging entries of the fused pass (larger tiles store in rounds)
MAX_STEPS = 512
MAX_ELEMENTS = (1 << 32) - (1 << 16)
MASK_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint32), np.dtype(np.int32))
_MASK_SET = frozenset(MASK_DTYPES)
_CARRIED = frozenset(_dt._CARRIED)  # dtypes the kernels take as they are (bit_carrier passes them through)


@dataclass
class Compacted:
    """A compaction whose length lives on the GPU.

    Attributes
    ----------
    data : GpuArray
        Worst-case length (the input's size); the first ``count`` elements are the result, the
        rest is unspecified.
    count : GpuArray
        Shape (1,), uint32: the number of elements kept.
    """

    data: GpuArray
    count: GpuArray

    def numpy(self) -> np.ndarray:
        """The kept elements (the count and the data read together where they are small)."""
        return submit_counted_to_host(self.data.device.batch(), self.count, self.data)[0]


@dataclass
class RunLengths:
    """A run-length encoding whose number of runs lives on the GPU.

    Attributes
    ----------
    values, counts : GpuArray
        Worst-case length (the input's size); the first ``n_runs`` entries are the runs.
    n_runs : GpuArray
        Shape (1,), uint32.
    starts : GpuArray or None
        The runs' first positions followed by the sentinel ``size``, where the pipeline made them
        (uint8 input, or ``method="parle"``); the fused passes for 32- and 64-bit values write the run
        lengths directly and leave this None.
    size : int
        The decoded length (known on the host).
    """

    values: GpuArray
    counts: GpuArray
    n_runs: GpuArray
    starts: GpuArray | None
    size: int
    _head: GpuArray | None = field(default=None, repr=False)  # per fused tile: first run index and start
    _tile_elems: int = field(default=TILE, repr=False)

    def numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, counts)`` (read with the number of runs where they are small)."""
        values, counts = submit_counted_to_host(self.values.device.batch(), self.n_runs, self.values, self.counts)
        return values, counts


def _count_view(meta: GpuArray) -> GpuArray:
    return GpuArray._wrap(meta.device, meta.buffer, (1,), _U32, meta.byte_offset)


_U32 = np.dtype(np.uint32)


def _words(n: int, dtype) -> int:
    return -(-n // 4) if np.dtype(dtype) == np.uint8 else n


def _needs_chunks(primitive: str, n: int, dev: Device, itemsize_bytes: int) -> bool:
    """Whether a call of ``n`` elements whose widest array has ``itemsize_bytes`` bytes needs more
    than one storage binding (:attr:`Device.binding_limit`): then it runs in chunks."""
    if n >= MAX_ELEMENTS:
        raise InputError(primitive, f"{n} elements: at most {MAX_ELEMENTS - 1} are supported")
    return -(-itemsize_bytes // 16) * 16 > dev.binding_limit  # buffers come in 16-byte words


def _or(value, default):
    """A hook's value, or ``default`` where the hook is unset (None)."""
    return default if value is None else value


def _method(dev: Device, method: str | None, primitive: str) -> str:
    m = method or "fused"
    if m not in ("fused", "parle"):
        raise InputError(primitive, f"method {m!r}: expected 'fused' or 'parle'")
    return m


# ------------------------------------------------------------------------- recording
def _record_items(b, dev: Device, mode: str, x: GpuArray, n: int, mask: GpuArray | None, meta: GpuArray,
                  idx: GpuArray | None, val: GpuArray | None, method: str,
                  counts: GpuArray | None = None, head: GpuArray | None = None, xb=None, mb=None,
                  pairs: bool = False, idx64: bool = False, base: int = 0) -> None:
    """Record the compaction of flagged items of ``x`` (mode 'rle', 'compact' or 'nonzero').

    Writes ``meta[0]`` (item count) and the finishing pass's grid at ``meta[4..6]``; item indices
    to ``idx`` and/or 32-bit values to ``val``; with ``counts`` (fused RLE of 32-bit values) the
    run lengths directly, finished by the per-tile fix-up pass. Scratch blocks live as long as the
    batch holds them. ``xb`` / ``mb``: the bindings of ``x`` / ``mask`` where they are a chunk of
    a larger buffer (a :class:`Binding` of the chunk's bytes), else the arrays themselves.
    ``pairs``: mode 'compact' (fused): ``x`` and ``val`` are the 32-bit words of 64-bit values,
    ``n`` counts words (two per mask element); mode 'rle' (fused): ``x`` holds 64-bit values; with
    ``counts`` their values (``val``) and run lengths are written in the one pass (fused.wgsl
    VALUES), else their run starts (and the sentinel ``n``) go to ``idx``. ``idx64`` (mode
    'nonzero', fused): ``idx`` is int64, each index plus ``base`` written as a word pair.
    """
    xb = x if xb is None else xb
    mb = mask if mb is None else mb
    if method == "parle":
        b.clear(meta)
        _record_parle(b, dev, _flags(mode, x, mask), xb, n, mb, meta, idx)
        return
    p = dev.plan(("rle items", mode, x.dtype, n, None if mask is None else mask.dtype, idx is not None,
                  val is not None, counts is not None, pairs, idx64),
                 lambda: _items_plan(dev, mode, x.dtype, n, mask, idx is not None, val is not None, counts is not None,
                                     pairs=pairs, idx64=idx64))
    params, packed = p.params, p.packed
    if idx64 and base:
        params = dict(params, base_lo=base & 0xFFFFFFFF, base_hi=base >> 32)
        packed = p.k_single.pack_params(params)
    state = b.scratch(16 + 8 * p.n_tiles)  # the batch's scratch: the same buffers call after call
    rargs = b.scratch(32)
    if counts is not None and head is None:
        head = b.scratch(8 * p.n_tiles)
    io = {"x": xb}
    if mask is not None:
        io["mask"] = mb
    outs = {"info": meta}
    if idx is not None:
        outs["out_idx"] = idx
    if val is not None:
        outs["out_val"] = val
    if counts is not None:
        outs.update(counts=counts, head=head)
    if p.bitmask:
        io["x_u32"] = xb  # the run values, read again at the store
    if p.vec4:
        outs.update(out_vec=val, counts_vec=counts)
    b.clear(meta)
    b.clear(state, 0, 16 + 8 * p.n_tiles)
    b.dispatch(p.k_single, p.n_tiles, packed, tile_state=state, repair_args=rargs, **io, **outs)
    stats = dev.hooks.rle_stats_buffer
    if stats is not None:
        b.copy(state, 0, stats, 0, 16)
    if p.repair:  # armed on the GPU: zero-sized grids unless some tile gave up
        _record_repair(b, dev, p, rargs, params, io, outs)
    if counts is not None:  # the runs that cross tile boundaries (rle/fixup.wgsl)
        b.dispatch(p.k_fix, -(-(p.n_tiles + 1) // 256), p.fix_packed, info=meta, head=head, counts=counts)


def _record_repair(b, dev: Device, p: _ItemsPlan, rargs, params: dict, io: dict, outs: dict) -> None:
    """Record the reduce-then-scan repair of the single pass, its grids armed on the GPU in
    ``rargs`` (zero-sized unless some tile gave up)."""
    partials = b.scratch(4 * p.n_tiles)
    carry = b.scratch(16)
    red_outs = {} if p.path == "rle/compact.wgsl" else {"WRITE_IDX": False}
    k_red = dev.kernel(p.path, defines=dict(p.base, RTS_REDUCE=True, **red_outs))
    k_spine = dev.kernel("scan/rts_spine.wgsl", defines=monoid_defines("add", np.uint32, "rle"))
    k_down = dev.kernel(p.path, defines=dict(p.base, RTS_DOWNSWEEP=True))
    b.dispatch_indirect(k_red, rargs, 0, params=params, partials=partials, **io)
    b.dispatch_indirect(k_spine, rargs, 16, params={"tiles_per_row": p.n_tiles, "rows": 1, "carry_in": 0,
                                                    "chunk": 0}, partials=partials, carry=carry)
    b.dispatch_indirect(k_down, rargs, 0, params=params, partials=partials, **io, **outs)


def _flags(mode: str, x: GpuArray, mask) -> dict:
    return {"RLE": mode == "rle", "COMPACT": mode == "compact", "NONZERO": mode == "nonzero",
            "EB8": x.dtype == np.uint8, "MASK_U8": mask is not None and mask.dtype == np.uint8}


@dataclass
class _ItemsPlan:
    """What the recording of one shape needs: kernels, packed params, the choices made."""

    n_tiles: int
    k_single: object
    packed: bytes
    params: dict
    base: dict
    path: str
    repair: bool
    bitmask: bool
    vec4: bool
    rle_kernel: bool
    k_fix: object | None
    fix_packed: bytes | None


def _items_plan(dev: Device, mode: str, dtype, n: int, mask, has_idx: bool, has_val: bool,
                has_counts: bool, chained: bool = False, pairs: bool = False, idx64: bool = False) -> _ItemsPlan:
    eb8 = np.dtype(dtype) == np.uint8
    mask_u8 = mask is not None and mask.dtype == np.uint8
    flags = {"RLE": mode == "rle", "COMPACT": mode == "compact", "NONZERO": mode == "nonzero",
             "EB8": eb8, "MASK_U8": mask_u8, "PAIRS": pairs, "IDX64": idx64,
             "VALUES": pairs and mode == "rle" and has_counts}
    n_vec4 = -(-n // 2) if pairs and mode == "rle" else -(-_words(n, dtype) // 4)
    # 32-bit compaction by value has its own kernel, built like the scan (rle/compact.wgsl)
    # (and RLE of 32-bit values, there with the fused pass's tile size: RunLengths records it)
    compact_kernel = mode == "compact" and not eb8 and has_val
    rle_kernel = mode == "rle" and not eb8 and has_counts and not pairs
    if compact_kernel:
        vpt = _compact_vpt(dev)
    elif mode == "rle" and not pairs:
        vpt = _vpt(dev, dtype)
    else:
        vpt = 1 if eb8 else _or(dev.hooks.rle_vec4_per_thread, VEC4_PER_THREAD)
    wg = _wg(dev)
    n_tiles = -(-n_vec4 // (wg * vpt))
    subgroups = _use_subgroups(dev)
    spin = SPIN_LIMIT
    # the lookback publishes a tile's inclusive count from its step for encoding (faster), not for
    # compaction (1% slower there)
    base = dict(monoid_defines("add", np.uint32, "rle"), WG=wg, VEC4_PER_THREAD=vpt, SUBGROUPS=subgroups,
                SPIN_LIMIT=spin,
                SG_LOOKBACK=subgroups, EARLY_PUBLISH=mode == "rle", SELF_REDUCE=True,
                LOOKBACK_WINDOW=LOOKBACK_WINDOW, WRITE_IDX=has_idx,
                STAGE=min(_or(dev.hooks.rle_stage, STAGE), wg * vpt * (16 if eb8 else 4)), CHAINED=chained, **flags)
    grid = dev.grid(n_tiles)
    steps = _or(dev.hooks.rle_max_steps, lookback_steps(spin, MAX_STEPS))
    # Past its step budget a lookback walks on one predecessor per loop trip (common/lookback.wgsl
    # SELF_REDUCE) over what the loop budget leaves; within that it always finishes.
    max_self = _or(dev.hooks.rle_max_self, lookback_walk_tiles(steps, spin))
    repair = n_tiles > max_self  # else no tile can give up: no repair to record (its idle dispatches cost)
    base["ARM_REPAIR"] = repair
    n_mask = n // 2 if pairs else n  # mask elements
    params = {"n": n, "n_vec4": n_vec4, "n_mask_words": 0 if mask is None else max(1, _words(n_mask, mask.dtype)),
              "n_tiles": n_tiles, "n_groups": n_tiles,
              "withhold_period": dev.hooks.rle_withhold_period,
              "max_steps": steps, "max_self": max_self,
              "repair_x": grid[0], "repair_y": grid[1], "fin_per_group": FIN_PER_GROUP, "max_groups": dev.max_groups}
    if chained:  # set per chunk and window (_record_chained)
        params.update(win_base=0, pos_base=0, tile_base=0, has_prev=0, win_len=0)
    if idx64:  # the indices' 64-bit base (set per call where it is not 0)
        params.update(base_lo=0, base_hi=0)
    path = "rle/fused.wgsl"
    bitmask = vec4 = False
    if compact_kernel or rle_kernel:
        path = "rle/compact.wgsl"
        # compaction stores straight from registers; encoding writes aligned vec4 words, its run
        # starts found through a bitmask (subgroups) or staged in workgroup memory.
        # Workgroup memory: the bitmask (VEC4_PER_THREAD * WG / 8 words), the table of every fourth start
        # (VEC4_PER_THREAD * WG words), the combine's WG words, and under 1 KiB for the lookback
        vec4 = rle_kernel
        bitmask = (rle_kernel and vpt <= 16 and _use_bitmask(dev)
                   and 4 * (vpt * wg + vpt * wg // 8 + wg) + 1024 <= dev.limits["max-compute-workgroup-storage-size"])
        staged = rle_kernel and not bitmask
        base = dict(base, BITMASK=bitmask, SLOT_MAJOR=bitmask, EARLY_AGGREGATE=True, STAGED=staged,
                    STAGE=_encode_stage(dev, vpt) if staged else 0, CHAIN_WORDS=pairs and chained)
    k_single = dev.kernel(path, defines=dict(base, SINGLE_PASS=True))
    k_fix = fix_packed = None
    if has_counts:
        k_fix = dev.kernel("rle/fixup.wgsl")
        fix_packed = k_fix.pack_params({"n": n, "n_tiles": n_tiles, "lo": 0, "len": 0xFFFFFFFF, "len_hi": 0})
    return _ItemsPlan(n_tiles, k_single, k_single.pack_params(params), params, base, path, repair, bitmask, vec4,
                      rle_kernel, k_fix, fix_packed)


def _record_parle(b, dev: Device, flags: dict, x: GpuArray, n: int, mask, meta, idx) -> None:
    fbuf = dev.alloc(4 * n)
    sbuf = dev.alloc(4 * n)
    fl = GpuArray(dev, fbuf, (n,), np.uint32)
    sc = GpuArray(dev, sbuf, (n,), np.uint32)
    groups = -(-n // 256)
    params = {"n": n, "n_groups": groups, "fin_per_group": FIN_PER_GROUP, "max_groups": dev.max_groups}
    k_flags = dev.kernel("rle/parle.wgsl", defines=dict(flags, FLAGS=True))
    k_scatter = dev.kernel("rle/parle.wgsl", defines=dict(flags, SCATTER=True))
    src = {"mask": mask} if flags["COMPACT"] else {"x": x}
    b.dispatch(k_flags, groups, params=params, flags=fl, **src)
    record_scan(b, fl, sc, "add", False, method="single_pass")
    b.dispatch(k_scatter, groups, params=params, flags=fl, scanned=sc, idx=idx, info=meta)


def _record_finish(b, dev: Device, meta: GpuArray, idx: GpuArray, x: GpuArray | None, values: GpuArray | None,
                   counts: GpuArray | None, xb=None) -> None:
    defs = {"COUNTS": counts is not None, "GATHER": values is not None,
            "EB8": x is not None and x.dtype == np.uint8}
    k = dev.kernel("rle/finish.wgsl", defines=defs)
    binds = {"info": meta, "idx": idx}
    if values is not None:
        binds.update(x=x if xb is None else xb, values=values)
    if counts is not None:
        binds["counts"] = counts
    b.dispatch_indirect(k, meta, 16, params={"dummy": 0}, **binds)


# ------------------------------------------------------------------------- compaction
def _compact_impl(primitive: str, x, mask, mode: str, method: str | None, index_dtype=np.uint32, base: int = 0):
    """compact (``x`` by ``mask``) or nonzero (flat indices of ``mask``, as ``index_dtype``:
    uint32, or int64 with ``base`` added)."""
    if mode == "nonzero":
        gm, host = as_input(mask, primitive, dtypes=MASK_DTYPES)
        g = gm
        gmask = None
    else:
        g, host = as_input(x, primitive)
        if isinstance(mask, GpuArray):
            gmask = _bool_as_uint8(mask)
            if host is not None:
                raise InputError(primitive, "x and mask must both be numpy arrays or both GpuArrays")
        else:
            if host is None:
                raise InputError(primitive, "x and mask must both be numpy arrays or both GpuArrays")
            m = np.asarray(mask)
            if m.dtype == np.bool_:
                m = m.view(np.uint8)
            gmask = m
        mshape = gmask.shape
        if tuple(mshape) != tuple(g.shape):
            raise InputError(primitive, f"mask has shape {tuple(mshape)}, x has shape {tuple(g.shape)}")
        if gmask.dtype not in _MASK_SET:
            raise InputError(primitive, f"mask dtype {gmask.dtype} is not supported (expected bool, uint8, "
                             "uint32 or int32)")
        if not isinstance(gmask, GpuArray):
            gmask = asarray(gmask, dev=g.device)
    dev = g.device
    n = g.size
    m = _method(dev, method, primitive)
    out_dtype = np.dtype(index_dtype) if mode == "nonzero" else g.dtype
    idx64 = out_dtype.itemsize == 8 and mode == "nonzero"
    chunked = _needs_chunks(primitive, n, dev, 4 * n)
    if n == 0:
        empty = np.empty(0, out_dtype)
        if host is not None:
            return empty
        meta = asarray(np.zeros(16, np.uint32), dev=dev)
        return Compacted(GpuArray.empty((0,), out_dtype, dev), _count_view(meta))
    res = Compacted(GpuArray._new((n,), out_dtype, dev), _count_view(GpuArray._new((16,), _U32, dev)))
    g1 = g if len(g.shape) == 1 else g.reshape(-1)
    if idx64:
        b = _record(dev, lambda b: _record_nonzero64(b, g1, res, m, base))
    elif chunked:
        b = _record(dev, lambda b: _record_compact_chunked(b, mode, g1, None if gmask is None
                                                           else gmask.reshape(-1), res, m))
    else:
        b = _record(dev, lambda b: _record_compact(b, mode, g1, gmask, res, m))
    if host is not None:
        return submit_counted_to_host(b, res.count, res.data)[0]
    b.snapshot(res.count)  # int(res.count): one map round trip, no submission
    b.submit()
    return res


def _record(dev: Device, record):
    """A batch with ``record(batch)`` recorded in it (not submitted)."""
    b = dev.batch()
    record(b)
    return b


def _run(dev: Device, record) -> None:
    _record(dev, record).submit()


def _meta_of(count: GpuArray) -> GpuArray:
    """The 16-word info block behind a count view."""
    return GpuArray._wrap(count.device, count.buffer, (16,), _U32, count.byte_offset)


def _record_compact(b, mode: str, g1: GpuArray, gmask: GpuArray | None, res: Compacted, m: str) -> None:
    dev = g1.device
    n = g1.size
    meta = _meta_of(res.count)
    data = res.data
    if mode == "nonzero":
        _record_items(b, dev, "nonzero", g1, n, None, meta, data, None, m)
    elif g1.dtype == np.uint8 or m == "parle":
        ibuf = dev.alloc(4 * n)
        idx = GpuArray(dev, ibuf, (n,), np.uint32)
        _record_items(b, dev, "compact", g1, n, gmask.reshape(-1), meta, idx, None, m)
        _record_finish(b, dev, meta, idx, g1, data, None)
    else:
        _record_items(b, dev, "compact", g1, n, gmask if len(gmask.shape) == 1 else gmask.reshape(-1), meta, None,
                      data, m)


def _record_nonzero64(b, g1: GpuArray, res: Compacted, m: str, base: int) -> None:
    """nonzero as int64 (plus ``base``): the fused pass writes each index as a word pair (low
    word, high word from the base and its carry; rle/fused.wgsl IDX64), within one binding or as
    chained chunks (the geometry in 8-byte indices). ``method="parle"`` (and bindings too small
    to chain) compact uint32 indices, then widen them (rle/pairs.wgsl WIDEN)."""
    dev, n = g1.device, g1.size
    meta = _meta_of(res.count)
    chunked = _needs_chunks("nonzero", n, dev, 8 * n)
    c = _chain64(dev, n) if chunked else None
    if m == "fused" and not chunked:
        _record_items(b, dev, "nonzero", g1, n, None, meta, res.data, None, m, idx64=True, base=base)
        return
    if m == "fused" and c is not None:
        _record_chained(b, dev, "nonzero", g1, None, res.data, None, meta, c, base=base)
        return
    r32 = Compacted(GpuArray.empty((n,), np.uint32, dev), res.count)
    if _needs_chunks("nonzero", n, dev, 4 * n):
        _record_compact_chunked(b, "nonzero", g1, None, r32, m)
    else:
        _record_compact(b, "nonzero", g1, None, r32, m)
    k = dev.kernel("rle/pairs.wgsl", defines={"WIDEN": True})
    align = dev.storage_align
    w = max(1, (dev.binding_limit - 16) // 8 // align) * align
    for e0 in range(0, n, w):
        ne = min(w, n - e0)
        b.dispatch(k, -(-ne // 256), params={"n": ne, "e0": e0, "base_lo": base & 0xFFFFFFFF, "base_hi": base >> 32},
                   x=_sub(res.data, e0, ne), info=meta, lo=_sub(r32.data, e0, ne))


# ------------------------------------------------------------------------- chunks
def _chunk_len(dev: Device, itemsize: int) -> int:
    """Elements per chunk past one binding: the widest per-element array of a chunk (``itemsize``
    bytes, plus a sentinel word) fits :attr:`Device.binding_limit`, and every chunk's offset in
    every array is a multiple of the storage-offset alignment (at least one alignment's worth)."""
    align = dev.storage_align
    return max(1, (dev.binding_limit - 16) // itemsize // align) * align


def _sub(arr: GpuArray, e0: int, ne: int) -> Binding:
    """Elements ``e0 .. e0 + ne`` of ``arr`` as a binding of their own bytes (whole 16-byte words,
    within the buffer)."""
    start = arr.byte_offset + e0 * arr.dtype.itemsize
    return Binding(arr.buffer, start, min(arr.buffer.size - start, -(-ne * arr.dtype.itemsize // 16) * 16))


def _view(arr: GpuArray, e0: int, ne: int) -> GpuArray:
    return GpuArray(arr.device, arr.buffer, (ne,), arr.dtype, arr.byte_offset + e0 * arr.dtype.itemsize)


class _Placer:
    """Joins the results of chunks (each compacted into scratch at 0) into the final arrays on the
    GPU (``wgsl/rle/place.wgsl``): the running item count and the last value are carried in a
    record per chunk; RLE (``counts``) joins a run that crosses a chunk boundary. The outputs are
    bound in windows of :attr:`Device.binding_limit` at aligned offsets (they may exceed one
    binding), each window's share of a chunk dispatched indirectly."""

    def __init__(self, b, n_chunks: int, out_values: GpuArray, out_counts: GpuArray | None = None, vw: int = 1):
        dev = out_values.device
        self.dev, self.n_chunks = dev, n_chunks
        self.out_values, self.out_counts = out_values, out_counts
        eb8 = out_values.dtype == np.uint8
        itemsize = max(4, out_values.dtype.itemsize)
        align = dev.storage_align
        self.wi = max(1, dev.binding_limit // itemsize // align) * align  # items per window
        self.wu = self.wi // 4 if eb8 else self.wi  # units per window (EB8: words)
        self.n_win = -(-out_values.size // self.wi)
        self.rec = dev.alloc(32 * (n_chunks + 1))
        self.args = dev.alloc(16 * n_chunks * self.n_win)
        b.clear(self.rec)
        defs = {"COUNTS": out_counts is not None, "EB8": eb8, "VW": vw}
        self.k_adv = dev.kernel("rle/place.wgsl", defines=dict(defs, ADVANCE=True))
        self.k_place = dev.kernel("rle/place.wgsl", defines=dict(defs, ADVANCE=False))

    def record(self, b, k: int, e_end: int, info: GpuArray, src_values: GpuArray,
               src_counts: GpuArray | None = None, add: int = 0) -> None:
        """Record chunk ``k``'s placement (its items end at or before output item ``e_end``)."""
        dev = self.dev
        params = {"chunk": k, "n_win": self.n_win, "win_units": self.wu, "win": 0, "add": add,
                  "max_groups": dev.max_groups}
        b.dispatch(self.k_adv, 1, params=params, info=info, src_values=src_values, rec=self.rec, args=self.args)
        n = self.out_values.size
        for w in range(min(self.n_win, -(-e_end // self.wi))):
            e0, ne = w * self.wi, min(self.wi, n - w * self.wi)
            binds = {"out_values": _sub(self.out_values, e0, ne)}
            if self.out_counts is not None:
                binds.update(src_counts=src_counts, out_counts=_sub(self.out_counts, e0, ne))
            b.dispatch_indirect(self.k_place, self.args, 16 * (k * self.n_win + w), params=dict(params, win=w),
                                info=info, src_values=src_values, rec=self.rec, args=self.args, **binds)

    def finish(self, b, count: GpuArray) -> None:
        """Copy the total into ``count`` (the result's count word)."""
        b.copy(self.rec, 32 * self.n_chunks, count.buffer, count.byte_offset, 4)


@dataclass(frozen=True)
class _Chain:
    """Geometry of chained chunks (``wgsl/rle/chain.wgsl``), in output items (32-bit, or 8-byte
    for 64-bit values and int64 indices: ``_chain(dev, 8)``): chunks of
    ``per`` input elements (at most a ``window``, one binding), the output bound as two adjacent
    windows of ``window`` elements at a multiple of the window (the kernel stores past the first
    into the second). A chunk's items start at some position at or below its first element and
    are at most ``per``: the pair starting at the window holding that start holds them all."""

    per: int
    window: int

    def bases(self, e0: int) -> list[int]:
        """The candidate starts of the window pair of the chunk at ``e0``: every window start
        below ``e0`` (a start at ``e0`` itself means every item before was kept, and the pair
        before holds the chunk's items too), or 0 for the first chunk."""
        return [j * self.window for j in range(max(1, -(-e0 // self.window)))]


def _chain(dev: Device, itemsize: int = 4) -> _Chain | None:
    """Chained chunks at :attr:`Device.binding_limit`: a chunk is as long as an output window, less
    whatever aligns chunk offsets to multiples of the storage alignment in elements (uint8 masks);
    window starts are whole vec4 words at that alignment. None where a binding is too small.
    ``itemsize``: bytes per output item (8: 64-bit values or indices, windows counted in them;
    their starts stay aligned for 4-byte arrays beside them, RLE's run lengths)."""
    a = dev.storage_align
    a4 = max(4, a // 4)
    window = (dev.binding_limit - 16) // itemsize // a4 * a4
    per = window // a * a
    return _Chain(per, window) if per else None


def _chained(dev: Device, n: int, tile: int, itemsize: int = 4) -> _Chain | None:
    """The chain geometry where chained chunks serve a call of ``n`` elements in tiles of about
    ``tile`` elements (RLE's per-tile record of all chunks must fit one binding), else None."""
    c = _chain(dev, itemsize)
    if c is None or 8 * (-(-n // tile) + -(-n // c.per)) + 16 > dev.binding_limit:
        return None
    return c


def _chain64(dev: Device, n: int, tile: int | None = None) -> _Chain | None:
    """The chain geometry for ``n`` 8-byte items (64-bit values or int64 indices; ``tile``: RLE's
    tile, whose per-tile record must fit), where the route pass's arguments (16 bytes per
    candidate window) fit one binding too; else None (chunks placed from scratch)."""
    c = _chained(dev, n, tile, 8) if tile else _chain(dev, 8)
    if c is None or 16 * -(-n // c.window) > dev.binding_limit:
        return None
    return c


def _record_chained(b, dev: Device, mode: str, g1: GpuArray, gmask: GpuArray | None, data: GpuArray,
                    counts: GpuArray | None, meta_out: GpuArray, c: _Chain, base: int = 0) -> None:
    """Record compaction ('compact', 32-bit values), 'nonzero' or 'rle' (32-bit values, ``counts``)
    of an input past one binding as chained chunks (``wgsl/rle/chain.wgsl``): the fused single
    pass per chunk, continuing the count of the chunks before it (read on the GPU from the
    previous chunk's info block) and writing straight into the final arrays through a window
    picked on the GPU (``wgsl/rle/route.wgsl``) among host-known candidates. RLE compares the
    chunk's first element with the one before it, so a run across a boundary simply goes on;
    the run lengths that cross tiles are finished at the end over every chunk's tiles, two
    windows a dispatch (``wgsl/rle/fixup.wgsl``).

    64-bit values (``g1`` int64 / uint64 / float64) and int64 indices (``data`` of 8-byte items,
    'nonzero': plus ``base``) count the geometry ``c`` in 8-byte items (``_chain(dev, 8)``);
    compaction of 64-bit values runs over their 32-bit words (rle/compact.wgsl PAIRS, the window
    start and length in words), run-length encoding in one pass of rle/fused.wgsl (PAIRS, VALUES)."""
    n = g1.size
    rle = mode == "rle"
    pairs = mode != "nonzero" and g1.dtype.itemsize == 8
    idx64 = mode == "nonzero" and data.dtype.itemsize == 8
    words = 2 if pairs and mode == "compact" else 1  # kernel units per element (compact: words)
    bounds = [(e0, min(c.per, n - e0)) for e0 in range(0, n, c.per)]
    mdt = None if gmask is None else gmask.dtype
    plans = [dev.plan(("rle chained", mode, g1.dtype, ne, mdt, idx64),
                      lambda ne=ne: _items_plan(dev, "rle" if rle else mode,
                                                np.uint32 if pairs else g1.dtype, words * ne, gmask,
                                                mode == "nonzero", mode != "nonzero", rle, chained=True,
                                                pairs=pairs, idx64=idx64)) for _, ne in bounds]
    head = dev.alloc(8 * sum(p.n_tiles for p in plans)) if rle else None
    # every chunk's info block (the last is the result's) and lookback state, cleared up front (and
    # the element before each chunk copied beside the count before it): the chunks' dispatches then
    # share one compute pass
    metas = [GpuArray.empty((16,), np.uint32, dev) for _ in bounds] + [meta_out]  # [k]: before chunk k
    states = [dev.alloc(16 + 8 * p.n_tiles) for p in plans]
    for k, ((e0, _), st) in enumerate(zip(bounds, states, strict=True)):
        b.clear(metas[k])
        b.clear(st)
        if rle and k:
            isz = g1.dtype.itemsize
            b.copy(g1.buffer, g1.byte_offset + isz * (e0 - 1), metas[k].buffer, metas[k].byte_offset + 48, isz)
    b.clear(meta_out)
    k_route = dev.kernel("rle/route.wgsl")
    stats = dev.hooks.rle_stats_buffer
    tile_base = 0
    for k, ((e0, ne), p) in enumerate(zip(bounds, plans, strict=True)):
        before, meta, state = metas[k], metas[k + 1], states[k]
        xb = _sub(g1, e0, ne)
        io = {"x": xb, "chain": before}
        if gmask is not None:
            io["mask"] = _sub(gmask, e0, ne)
        if p.bitmask:
            io["x_u32"] = xb
        bases = c.bases(e0)
        args = None
        if len(bases) > 1:
            gx, gy, _ = dev.grid(p.n_tiles)
            args = dev.alloc(16 * len(bases))
            b.dispatch(k_route, 1, params={"stride": c.window, "top": bases[-1], "n_alt": len(bases), "gx": gx,
                                           "gy": gy}, chain=before, args=args)
        for a, w0 in enumerate(bases):
            w1 = w0 + c.window if w0 + c.window < n else w0  # no next window: nothing is stored past this one
            wb, wb1 = (_sub(data, w, min(c.window, n - w)) for w in (w0, w1))
            if mode == "nonzero":
                outs = {"out_idx": wb, "out_idx_hi": wb1}
            elif rle:
                cb, cb1 = (_sub(counts, w, min(c.window, n - w)) for w in (w0, w1))
                outs = {"out_val": wb, "counts": cb, "head": head, "out_val_hi": wb1, "counts_hi": cb1}
                if p.vec4:
                    outs.update(out_vec=wb, counts_vec=cb, out_vec_hi=wb1, counts_vec_hi=cb1)
            else:
                outs = {"out_val": wb, "out_val_hi": wb1}
            params = dict(p.params, win_base=words * w0, pos_base=e0, tile_base=tile_base, has_prev=int(k > 0),
                          win_len=words * c.window)
            if idx64:
                params.update(base_lo=base & 0xFFFFFFFF, base_hi=base >> 32)
            rargs = dev.alloc(32)
            if p.repair and args is not None:  # a candidate that does not run never arms it
                b.clear(rargs)
            binds = dict(tile_state=state, repair_args=rargs, info=meta, **io, **outs)
            if args is None:
                b.dispatch(p.k_single, p.n_tiles, params, **binds)
            else:
                b.dispatch_indirect(p.k_single, args, 16 * a, params, **binds)
            if p.repair:
                _record_repair(b, dev, p, rargs, params, dict(io), dict(outs, info=meta))
        if stats is not None:
            b.copy(state, 0, stats, 0, 16)
        tile_base += p.n_tiles
    if rle:
        for w0 in range(0, n, 2 * c.window):  # two windows a dispatch
            wl = min(c.window, n - w0)
            hl = max(0, min(c.window, n - w0 - c.window))
            hi = {"counts_hi": _sub(counts, w0 + wl, hl)} if hl else {}
            b.dispatch(dev.kernel("rle/fixup.wgsl", defines={"PAIR": bool(hl)}), -(-(tile_base + 1) // 256),
                       {"n": n, "n_tiles": tile_base, "lo": w0, "len": wl, "len_hi": hl},
                       info=meta_out, head=head, counts=_sub(counts, w0, wl), **hi)


def _record_compact_chunked(b, mode: str, g1: GpuArray, gmask: GpuArray | None, res: Compacted, m: str) -> None:
    """Compaction / nonzero of an input past one binding: the fused pass as chained chunks
    (32-bit values, nonzero), else chunks compacted into scratch, then placed at the running
    offset (nonzero: indices made global)."""
    dev = g1.device
    n = g1.size
    c = _chain(dev)
    if c is not None and m == "fused" and (mode == "nonzero" or g1.dtype != np.uint8):
        _record_chained(b, dev, mode, g1, gmask, res.data, None, _meta_of(res.count), c)
        return
    per = _chunk_len(dev, 4)
    bounds = [(e0, min(per, n - e0)) for e0 in range(0, n, per)]
    data = res.data
    scratch = GpuArray.empty((per,), data.dtype, dev)
    idx = GpuArray.empty((per,), np.uint32, dev) if mode == "compact" and (g1.dtype == np.uint8 or m == "parle") \
        else None
    placer = _Placer(b, len(bounds), data)
    for k, (e0, ne) in enumerate(bounds):
        meta = GpuArray.empty((16,), np.uint32, dev)
        xk, xb = _view(g1, e0, ne), _sub(g1, e0, ne)
        sk = _view(scratch, 0, ne)
        if mode == "nonzero":
            _record_items(b, dev, "nonzero", xk, ne, None, meta, sk, None, m, xb=xb)
        else:
            mk, mb = _view(gmask, e0, ne), _sub(gmask, e0, ne)
            if idx is not None:
                _record_items(b, dev, "compact", xk, ne, mk, meta, _view(idx, 0, ne), None, m, xb=xb, mb=mb)
                _record_finish(b, dev, meta, _view(idx, 0, ne), xk, sk, None, xb=xb)
            else:
                _record_items(b, dev, "compact", xk, ne, mk, meta, None, sk, m, xb=xb, mb=mb)
        placer.record(b, k, e0 + ne, meta, scratch, add=e0 if mode == "nonzero" else 0)
    placer.finish(b, res.count)


@takes_device
def compact(x, mask, *, method: str | None = None):
    """The elements of ``x`` where ``mask`` is true, in order (``x[mask]`` flattened).

    Parameters
    ----------
    x : numpy.ndarray or GpuArray
        Any shape; 8- to 64-bit integers, bool, float16 to float64 (numpy); uint8 / int8 / bool,
        32-bit and 64-bit dtypes (GpuArray). Past one storage binding in chunks.
    mask : numpy.ndarray or GpuArray
        The same shape; bool, uint8, uint32 or int32 (nonzero keeps). Both numpy or both GpuArray.
    method : {"fused", "parle"}, optional
        The single-pass kernel (default) or the multi-pass PARLE reference.

    Returns
    -------
    numpy.ndarray or Compacted
        numpy in: the kept elements (1-D). GpuArray in: a :class:`Compacted` (worst-case-sized
        ``data`` and a GPU-side ``count``); nothing is read back.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.compact(np.array([5, 6, 7, 8], np.int32), np.array([True, False, True, True]))
    array([5, 7, 8], dtype=int32)

    Other dtypes (see ``_dtypes.bit_carrier``): bool / int8 as uint8 views; 16-bit values widened
    on the host; 64-bit values as word pairs, each mask element keeping both words of its value
    in the single pass (bits moved: float64 NaN payloads and ``-0.0`` are kept); masks of any
    dtype (``mask != 0`` on the host).
    """
    if x.__class__ is GpuArray and mask.__class__ is GpuArray and x.dtype in _CARRIED:
        return _compact_impl("compact", x, mask, "compact", method)  # carried as they are
    if isinstance(x, GpuArray) and _is_pairs(x.dtype):
        return _compact_pairs(x, _dt.mask_carrier(mask, "compact"), method)
    xc, restore, words = _dt.bit_carrier(x, "compact", pairs=True)
    mask = _dt.mask_carrier(mask, "compact")
    if words == 2:
        m = np.asarray(mask)
        if m.shape != np.shape(x):
            raise InputError("compact", f"mask has shape {m.shape}, x has shape {np.shape(x)}")
        if isinstance(mask, GpuArray):
            raise InputError("compact", "x and mask must both be numpy arrays or both GpuArrays")
        m = m.view(np.uint8) if m.dtype == np.bool_ else m
        g64 = asarray(np.ascontiguousarray(xc).reshape(-1).view(np.uint64))
        res = _compact_pairs(g64, asarray(np.ascontiguousarray(m).reshape(-1), dev=g64.device), method)
        return restore(submit_counted_to_host(g64.device.batch(), res.count, res.data)[0].view(np.uint32))
    res = _compact_impl("compact", xc, mask, "compact", method)
    return Compacted(restore(res.data), res.count) if isinstance(res, Compacted) else restore(res)


INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.uint32))


def _index_dtype(dtype, primitive: str) -> np.dtype:
    """The index dtype asked for: int64 (numpy's intp, the default) or uint32 (the 32-bit path)."""
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise InputError(primitive, f"dtype {dtype!r} is not a dtype") from e
    if d not in INDEX_DTYPES:
        raise InputError(primitive, f"dtype {d}: expected int64 (numpy's intp, the default) or uint32 (the "
                         "32-bit fast path)")
    return d


def _flatnonzero(mask, dtype, method: str | None, primitive: str, base: int = 0):
    """Flat indices of ``mask``'s nonzero elements as ``dtype``, plus ``base`` (int64 only: the
    global index of the mask's first element where it is one chunk of a larger array)."""
    if mask.__class__ is not GpuArray:  # GpuArrays go as they are (_compact_impl checks their dtype)
        mask = _dt.mask_carrier(mask, primitive)
    return _compact_impl(primitive, None, mask, "nonzero", method, _index_dtype(dtype, primitive), base)


def _unravel(res: Compacted, shape: tuple[int, ...]) -> tuple[Compacted, ...]:
    """Per-axis indices (``np.unravel_index``) of the flat indices ``res``, on the GPU
    (rle/pairs.wgsl UNRAVEL), window by window; they share ``res``'s count."""
    dev, n = res.data.device, res.data.size
    dt = res.data.dtype
    outs = tuple(Compacted(GpuArray.empty((n,), dt, dev), res.count) for _ in shape)
    if n:
        k = dev.kernel("rle/pairs.wgsl", defines={"UNRAVEL": True, "IDX64": dt.itemsize == 8})
        align = dev.storage_align
        w = max(1, (dev.binding_limit - 16) // 8 // align) * align
        meta = _meta_of(res.count)
        b = dev.batch()
        stride = 1
        for ax in range(len(shape) - 1, -1, -1):
            for e0 in range(0, n, w):
                ne = min(w, n - e0)
                b.dispatch(k, -(-ne // 256), params={"n": ne, "e0": e0, "stride": stride, "dim": shape[ax]},
                           info=meta, src=_sub(res.data, e0, ne), dst=_sub(outs[ax].data, e0, ne))
            stride *= shape[ax]
        b.submit()
    return outs


@takes_device
def nonzero(a, *, dtype=np.int64, method: str | None = None):
    """``np.nonzero``: the indices of the nonzero elements of ``a``, one array per axis.

    Parameters
    ----------
    a : array_like or GpuArray
        At least 1-D, any dtype (nonzero: ``a != 0``; NaN counts). GpuArray: bool, uint8,
        uint32 or int32.
    dtype : {numpy.int64, numpy.uint32}, optional
        The index dtype: int64 (numpy's ``intp``, the default) or uint32, the 32-bit fast path
        (half the bytes written). Both are written by the same single pass.
    method : {"fused", "parle"}, optional
        The single-pass kernel (default) or the multi-pass PARLE reference.

    Returns
    -------
    tuple of numpy.ndarray, or tuple of Compacted
        numpy in: a tuple of ``a.ndim`` index arrays, as ``np.nonzero``. GpuArray in: a tuple of
        :class:`Compacted` (worst-case-sized, sharing one GPU-side count; per-axis indices are
        found on the GPU); nothing is read back.

    See Also
    --------
    flatnonzero : the flat indices (no per-axis split).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.nonzero(np.array([0, 3, 0, 1], np.uint32))
    (array([1, 3]),)
    >>> pp.nonzero(np.array([[0, 2], [1, 0]]), dtype=np.uint32)
    (array([0, 1], dtype=uint32), array([1, 0], dtype=uint32))
    """
    m = a if a.__class__ is GpuArray else _dt.mask_carrier(a, "nonzero")
    shape = tuple(m.shape)
    if len(shape) == 0:
        raise InputError("nonzero", "a 0-d array has no axes to index (as numpy: use np.atleast_1d)")
    res = _flatnonzero(m, dtype, method, "nonzero")
    if len(shape) == 1:
        return (res,)
    if isinstance(res, Compacted):
        return _unravel(res, shape)
    return tuple(ix.astype(res.dtype, copy=False) for ix in np.unravel_index(res, shape))


@takes_device
def flatnonzero(a, *, dtype=np.int64, method: str | None = None):
    """``np.flatnonzero``: indices of the nonzero elements of the flattened ``a``.

    Parameters
    ----------
    a : array_like or GpuArray
        Any shape (flattened in C order) and dtype (nonzero: ``a != 0``; NaN counts). GpuArray:
        bool, uint8, uint32 or int32.
    dtype : {numpy.int64, numpy.uint32}, optional
        int64 (numpy's ``intp``, the default) or uint32, the 32-bit fast path. Both are written by
        the same single pass (int64 as word pairs, so no ``shader-int64`` is needed).
    method : {"fused", "parle"}, optional
        The single-pass kernel (default) or the multi-pass PARLE reference.

    Returns
    -------
    numpy.ndarray or Compacted
        numpy in: the indices. GpuArray in: a :class:`Compacted` of them; nothing is read back.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.flatnonzero(np.array([[0, 2], [1, 0]], np.int16))
    array([1, 2])
    >>> pp.flatnonzero(np.array([0, 3, 0, 1], np.uint32), dtype=np.uint32)
    array([1, 3], dtype=uint32)
    """
    return _flatnonzero(a, dtype, method, "flatnonzero")


# ------------------------------------------------------------------------- RLE
@takes_device
def rle_encode(x, *, method: str | None = None):
    """Run-length encode a 1-D array: each maximal run becomes one value and its length.

    Equal means equal bits: float32 ``-0.0`` and ``0.0`` are different runs, and NaNs with the
    same bits form one run.

    Parameters
    ----------
    x : array_like or GpuArray
        1-D; bool, 8-, 16-, 32- or 64-bit integers, float16, float32 or float64.
    method : {"fused", "parle"}, optional
        The single-pass kernel (default) or the multi-pass PARLE reference.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray) or RunLengths
        numpy in: ``(values, counts)`` with counts uint32. GpuArray in: a :class:`RunLengths`
        (worst-case-sized arrays, the number of runs on the GPU); nothing is read back.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> v, c = pp.rle_encode(np.array([7, 7, 7, 2, 9, 9], np.int32))
    >>> v, c
    (array([7, 2, 9], dtype=int32), array([3, 1, 2], dtype=uint32))

    bool / int8 values travel as uint8 views, 16-bit ones widened on the host, 64-bit ones as
    pairs of 32-bit words (equal means both words equal). Inputs past one storage binding run in
    chunks, a run across a chunk boundary joined.
    """
    if x.__class__ is GpuArray and x.dtype in _CARRIED:
        return _rle_encode(x, method)  # carried as they are
    a = x if isinstance(x, GpuArray) else _dt.host_array(x, "rle_encode")
    if _is_pairs(a.dtype):
        return _rle_encode_pairs(a, method)
    x, restore, _ = _dt.bit_carrier(a, "rle_encode")
    res = _rle_encode(x, method)
    if isinstance(res, RunLengths):
        res.values = restore(res.values)
        return res
    return restore(res[0]), res[1]


def _rle_encode(x, method):
    g, host = as_input(x, "rle_encode", ndims=(1,))
    dev = g.device
    n = g.size
    m = _method(dev, method, "rle_encode")
    need_starts = m == "parle" or g.dtype == np.uint8
    chunked = _needs_chunks("rle_encode", n, dev, 4 * (n + 1) if need_starts else 4 * n)
    if n == 0:
        if host is not None:
            return np.empty(0, g.dtype), np.empty(0, np.uint32)
        meta = asarray(np.zeros(16, np.uint32), dev=dev)
        return RunLengths(GpuArray.empty((0,), g.dtype, dev), GpuArray.empty((0,), np.uint32, dev),
                          _count_view(meta), asarray(np.zeros(1, np.uint32), dev=dev), 0)
    if chunked:
        res = RunLengths(GpuArray.empty((n,), g.dtype, dev), GpuArray.empty((n,), np.uint32, dev),
                         _count_view(GpuArray.empty((16,), np.uint32, dev)), None, n)
        b = _record(dev, lambda b: _record_rle_chunked(b, g, res, m))
    else:
        tile = _tile(dev, g.dtype)
        res = RunLengths(GpuArray._new((n,), g.dtype, dev), GpuArray._new((n,), _U32, dev),
                         _count_view(GpuArray._new((16,), _U32, dev)),
                         GpuArray._new((n + 1,), _U32, dev) if need_starts else None, n,
                         None if need_starts else GpuArray._new((2 * -(-n // tile),), _U32, dev), tile)
        b = _record(dev, lambda b: _record_rle(b, g, res, m))
    if host is not None:
        values, counts = submit_counted_to_host(b, res.n_runs, res.values, res.counts)
        return values, counts
    b.snapshot(res.n_runs)  # int(res.n_runs): one map round trip, no submission
    b.submit()
    return res


def _record_rle(b, g: GpuArray, res: RunLengths, m: str, xb=None) -> None:
    dev = g.device
    meta = _meta_of(res.n_runs)
    if m == "fused" and g.dtype != np.uint8:
        # values and run lengths straight from the fused pass (no start positions written)
        _record_items(b, dev, "rle", g, g.size, None, meta, None, res.values, m, counts=res.counts,
                      head=res._head, xb=xb)
        return
    _record_items(b, dev, "rle", g, g.size, None, meta, res.starts, None, m, xb=xb)
    _record_finish(b, dev, meta, res.starts, g, res.values, res.counts, xb=xb)


def _record_rle_chunked(b, g: GpuArray, res: RunLengths, m: str) -> None:
    """Run-length encoding of an input past one binding: the fused pass for 32-bit values as
    chained chunks; else chunks encoded into scratch, then placed after the runs so far, a chunk's
    first run joining the last run so far where their values are equal (a run across the
    boundary)."""
    dev = g.device
    n = g.size
    c = _chained(dev, n, _tile(dev, g.dtype))
    if c is not None and m == "fused" and g.dtype != np.uint8:
        _record_chained(b, dev, "rle", g, None, res.values, res.counts, _meta_of(res.n_runs), c)
        return
    per = _chunk_len(dev, 4)
    bounds = [(e0, min(per, n - e0)) for e0 in range(0, n, per)]
    need_starts = m == "parle" or g.dtype == np.uint8
    tile = _tile(dev, g.dtype)
    sv = GpuArray.empty((per,), g.dtype, dev)
    sc = GpuArray.empty((per,), np.uint32, dev)
    starts = GpuArray.empty((per + 1,), np.uint32, dev) if need_starts else None
    head = None if need_starts else GpuArray.empty((2 * -(-per // tile),), np.uint32, dev)
    placer = _Placer(b, len(bounds), res.values, res.counts)
    for k, (e0, ne) in enumerate(bounds):
        meta = GpuArray.empty((16,), np.uint32, dev)
        rk = RunLengths(_view(sv, 0, ne), _view(sc, 0, ne), _count_view(meta),
                        None if starts is None else _view(starts, 0, ne + 1), ne, head, tile)
        _record_rle(b, _view(g, e0, ne), rk, m, xb=_sub(g, e0, ne))
        placer.record(b, k, e0 + ne, meta, sv, sc)
    placer.finish(b, res.n_runs)


def _counts_total(c: np.ndarray, primitive: str) -> int:
    """The exact sum of host run counts, checked: non-negative integers summing below
    ``MAX_ELEMENTS`` (no count alone reaches it, so the 64-bit sum of fewer than 2^32 of them
    cannot wrap)."""
    if not c.size:
        return 0
    if not np.issubdtype(c.dtype, np.integer) or int(c.min()) < 0:
        raise InputError(primitive, "counts must be non-negative integers")
    big = int(c.max())
    if big >= MAX_ELEMENTS or c.size >= MAX_ELEMENTS:
        raise InputError(primitive, f"a count of {big} overflows 32-bit positions (the counts must sum to at most "
                         f"{MAX_ELEMENTS - 1})")
    total = int(c.sum(dtype=np.uint64))
    if total >= MAX_ELEMENTS:
        raise InputError(primitive, f"the counts sum to {total}, which overflows 32-bit positions "
                         f"(at most {MAX_ELEMENTS - 1})")
    return total


def _check_host_size(size, total: int) -> None:
    """numpy input knows its length: ``size``, if given, must be that length."""
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size != total):
        raise InputError("rle_decode", f"size={size!r} does not match the counts' sum {total} (for numpy input "
                         "size is not needed)")


@takes_device
def rle_decode(values, counts=None, *, size: int | None = None):
    """Expand runs: ``values[r]`` repeated ``counts[r]`` times (``np.repeat(values, counts)``).

    Parameters
    ----------
    values : numpy.ndarray, GpuArray or RunLengths
        The run values (the dtypes of :func:`rle_encode`), or a :class:`RunLengths` from
        :func:`rle_encode` (then ``counts`` is omitted and nothing is read back).
    counts : numpy.ndarray or GpuArray
        Same length as ``values``; non-negative integers (GpuArray: uint32) whose sum is below
        2^32 - 2^16. Zero counts are allowed.
    size : int, optional
        GpuArray input only: the decoded length, if known, so nothing is read back (elements past
        the counts' sum are 0; the sum is then not checked for overflow). Without it the sum is
        read back and checked.

    Returns
    -------
    numpy.ndarray or GpuArray
        numpy in gives numpy out; GpuArray (or RunLengths) in gives a GpuArray.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.rle_decode(np.array([7, 2, 9], np.int32), np.array([3, 1, 2], np.uint32))
    array([7, 7, 7, 2, 9, 9], dtype=int32)
    """
    if not isinstance(values, RunLengths):
        a = values if isinstance(values, GpuArray) else _dt.host_array(values, "rle_decode")
        if _is_pairs(a.dtype):
            return _rle_decode_pairs(a, counts, size)
        values, restore, _ = _dt.bit_carrier(a, "rle_decode")
        return restore(_rle_decode(values, counts, size=size))
    if _is_pairs(values.values.dtype):
        return _rle_decode_pairs(values, counts, size)
    return _rle_decode(values, counts, size=size)


def _rle_decode(values, counts=None, *, size: int | None = None):
    if isinstance(values, RunLengths):
        if counts is not None:
            raise InputError("rle_decode", "give either a RunLengths or values and counts")
        rl = values
        dev = rl.values.device
        if rl.size and not _runs_fit(dev, rl.size):
            return _decode_runlengths_chunked(rl)
        out = GpuArray.empty((rl.size,), rl.values.dtype, dev)
        if rl.size:
            _run(dev, lambda b: _record_decode_runlengths(b, rl, out))
        return out
    if counts is None:
        raise InputError("rle_decode", "counts is missing")
    gv, host = as_input(values, "rle_decode", ndims=(1,))
    dev = gv.device
    if host is not None:
        if isinstance(counts, GpuArray):
            raise InputError("rle_decode", "values and counts must both be numpy arrays or both GpuArrays")
        c = np.asarray(counts)
        if c.ndim != 1 or c.shape != gv.shape:
            raise InputError("rle_decode", f"values has shape {gv.shape} but counts has shape {c.shape}")
        total = _counts_total(c, "rle_decode")
        _check_host_size(size, total)
        if total == 0:
            return np.empty(0, gv.dtype)
        if not _runs_fit(dev, gv.size):
            return _decode_split(dev, host, c, total).numpy()
        gc = asarray(c.astype(np.uint32, copy=False), dev=dev)
        meta = dev.constant(np.array([gv.size, 0, 0, 0], np.uint32), label="rle_decode info")  # read only: kept
        ends = GpuArray.empty((gv.size,), np.uint32, dev)
        b = dev.batch()
        record_scan(b, gc, ends, "add", False)
        return submit_to_host(b, _record_decode_new(b, gv, ends, 0, meta, total))
    if not isinstance(counts, GpuArray):
        raise InputError("rle_decode", "values and counts must both be numpy arrays or both GpuArrays")
    if counts.shape != gv.shape:
        raise InputError("rle_decode", f"values has shape {gv.shape} but counts has shape {counts.shape}")
    if counts.dtype not in (np.dtype(np.uint32), np.dtype(np.int32)):
        raise InputError("rle_decode", f"counts dtype {counts.dtype}: expected uint32")
    r = gv.size
    meta = dev.constant(np.array([r, 0, 0, 0], np.uint32), label="rle_decode info")  # read only: kept
    if r == 0:
        return _zeros(dev, int(size or 0), gv.dtype)
    if not _runs_fit(dev, r):  # runs past one binding: split on the host (the runs are read back)
        c = counts.numpy()
        if c.dtype == np.int32 and c.size and int(c.min()) < 0:
            raise InputError("rle_decode", "counts must be non-negative integers")
        total = _counts_total(c.view(np.uint32), "rle_decode")
        if size is not None and not 0 <= int(size) < MAX_ELEMENTS:
            raise InputError("rle_decode", f"size {size} is out of range")
        return _decode_split(dev, gv.numpy(), c.view(np.uint32), total if size is None else int(size))
    ends = GpuArray.empty((r,), np.uint32, dev)
    cu = GpuArray(dev, counts.buffer, counts.shape, np.uint32, counts.byte_offset)
    b = dev.batch()
    record_scan(b, cu, ends, "add", False)
    if size is None:
        status = GpuArray.empty((4,), np.uint32, dev)
        b.clear(status)  # zeroed in the batch: no upload of its own
        k = dev.kernel("rle/check.wgsl")
        groups = -(-r // 256)
        b.dispatch(k, groups, params={"n": r}, ends=ends, status=status)
        rb = b.readback((status, status.byte_offset, 4), (ends, ends.byte_offset + 4 * (r - 1), 4))  # the last end
        b.submit()
        status_word, last_end = rb.parts(np.uint32, np.uint32)
        total = int(last_end[0])
        if int(status_word[0]):
            raise InputError("rle_decode", "the counts sum past 2^32 (32-bit positions overflow)")
        if total >= MAX_ELEMENTS:
            raise InputError("rle_decode", f"the counts sum to {total}: at most {MAX_ELEMENTS - 1} are supported")
        b = dev.batch()
    else:
        total = int(size)
        if not 0 <= total < MAX_ELEMENTS:
            raise InputError("rle_decode", f"size {size} is out of range")
    out = _record_decode_new(b, gv, ends, 0, meta, total)
    b.submit()
    return out


def _record_decode_runlengths(b, rl: RunLengths, out: GpuArray, ends: GpuArray | None = None) -> None:
    dev = rl.values.device
    meta = _meta_of(rl.n_runs)
    if rl.starts is not None:
        _record_decode(b, rl.values, rl.starts, 1, meta, out)
        return
    if ends is None:
        ends = GpuArray.empty((rl.size,), np.uint32, dev)
    if rl._head is not None:
        # run ends tile by tile, from the fused pass's per-tile first run and start
        n_tiles = rl._head.size // 2
        k = dev.kernel("rle/ends.wgsl", defines={"PER": rl._tile_elems // 256})
        b.dispatch(k, n_tiles, params={"n_tiles": n_tiles, "n_groups": n_tiles}, info=meta, head=rl._head,
                   counts=rl.counts, ends=ends)
    else:
        # Scan the worst-case-sized counts: entries past n_runs are garbage, but they come after
        # every prefix the decoder reads.
        record_scan(b, rl.counts, ends, "add", False)
    _record_decode(b, rl.values, ends, 0, meta, out)


def _zeros(dev, n, dtype):
    return asarray(np.zeros(n, dtype), dev=dev) if n else GpuArray.empty((0,), dtype, dev)


def _runs_fit(dev: Device, r: int) -> bool:
    """Whether ``r`` runs (values, ends and a sentinel word) fit one storage binding."""
    return -(-4 * (r + 1) // 16) * 16 <= dev.binding_limit


def _record_decode_new(b, values: GpuArray, ends: GpuArray, shift: int, meta: GpuArray, size: int) -> GpuArray:
    """Record the expansion into a new array of ``size`` elements (returned); the runs fit one
    binding, the output may not (then it is decoded window by window)."""
    out = GpuArray.empty((size,), values.dtype, values.device)
    if size:
        if _needs_chunks("rle_decode", size, values.device, 4 * _words(size, values.dtype)):
            _record_decode_windows(b, values, ends, shift, meta, out, values.size)
        else:
            _record_decode(b, values, ends, shift, meta, out)
    return out


def _record_decode_windows(b, values: GpuArray, ends: GpuArray, shift: int, meta: GpuArray, out: GpuArray,
                           n_runs: int) -> None:
    """Decode into an output past one binding, window by window (each bound at an aligned offset):
    the unchunked decoder on the window, reading the first ``n_runs`` run ends (they fit one
    binding) clamped to the window as it goes."""
    dev = values.device
    align = dev.storage_align
    wo = max(1, dev.binding_limit // values.dtype.itemsize // align) * align
    eb, vb = _sub(ends, 0, n_runs + shift), _sub(values, 0, n_runs)
    for o0 in range(0, out.size, wo):
        m = min(wo, out.size - o0)
        _record_decode(b, values, ends, shift, meta, _view(out, o0, m), vb=vb, ob=_sub(out, o0, m), eb=eb,
                       window=(o0, m))


def _decode_split(dev: Device, values: np.ndarray, counts: np.ndarray, size: int) -> GpuArray:
    """Decode runs past one binding, split on the host: per output window (at most a binding's
    worth of runs, zero-length runs dropped) its runs, their ends clamped to the window, uploaded
    and decoded into the window. Elements past the counts' sum are 0."""
    out = GpuArray.empty((size,), values.dtype, dev)
    if not size:
        return out
    keep = counts != 0
    v, ends = values[keep], np.cumsum(counts[keep], dtype=np.int64)
    align = dev.storage_align
    wo = max(1, (dev.binding_limit - 16) // 4 // align) * align  # each run in a window has an element there
    b = dev.batch()
    for o0 in range(0, size, wo):
        o1 = min(size, o0 + wo)
        ra, rb = np.searchsorted(ends, [o0, o1 - 1], side="right")
        rb = min(int(rb), v.size - 1)
        n_r = max(0, rb + 1 - int(ra))
        pe = (np.minimum(ends[ra:ra + n_r], o1) - o0).astype(np.uint32) if n_r else np.zeros(1, np.uint32)
        pv = v[ra:ra + n_r] if n_r else np.zeros(1, v.dtype)
        meta = asarray(np.array([n_r, 0, 0, 0], np.uint32), dev=dev)
        _record_decode(b, asarray(np.ascontiguousarray(pv), dev=dev), asarray(pe, dev=dev), 0, meta,
                       _view(out, o0, o1 - o0), ob=_sub(out, o0, o1 - o0))
    b.submit()
    return out


def _decode_runlengths_chunked(rl: RunLengths) -> GpuArray:
    """Decode a RunLengths past one binding (from a chunked encode): the number of runs is read
    back; runs that fit one binding are decoded window by window on the GPU, more are split on the
    host (their prefix read back)."""
    dev = rl.values.device
    r = int(rl.n_runs.numpy()[0])
    if not _runs_fit(dev, r):
        values, counts = rl.numpy()
        return _decode_split(dev, values, counts, rl.size)
    out = GpuArray.empty((rl.size,), rl.values.dtype, dev)
    b = dev.batch()
    meta = _meta_of(rl.n_runs)
    if rl.starts is not None:
        _record_decode_windows(b, rl.values, rl.starts, 1, meta, out, r)
    else:
        ends = GpuArray.empty((r,), np.uint32, dev)
        record_scan(b, _view(rl.counts, 0, r), ends, "add", False)
        _record_decode_windows(b, rl.values, ends, 0, meta, out, r)
    b.submit()
    return out


def _decode_kernels(dev: Device, vpt: int, eb8: bool):
    """The partition pass and the expansion (or the 8-bit decoder) for ``vpt`` vec4 per thread."""
    k_part = dev.kernel("rle/decode.wgsl", defines={"VEC4_PER_THREAD": vpt, "EB8": eb8, "PARTITION": True})
    if not eb8:
        k = dev.kernel("rle/expand.wgsl", defines=dict(monoid_defines("max", np.uint32, "rle_decode"),
                                                       VEC4_PER_THREAD=vpt,
                                                       SUBGROUPS=_use_subgroups(dev),
                                                       CAP=_or(dev.hooks.rle_decode_cap, DECODE_CAP)))
    else:
        k = dev.kernel("rle/decode.wgsl", defines={"VEC4_PER_THREAD": vpt, "EB8": eb8, "PARTITION": False})
    return k_part, k


def _record_decode(b, values: GpuArray, ends: GpuArray, shift: int, meta: GpuArray, out: GpuArray,
                   vb=None, ob=None, eb=None, window: tuple[int, int] = (0, 0xFFFFFFFF)) -> None:
    """Record the expansion of the runs into ``out`` (``vb`` / ``ob`` / ``eb``: bindings of values,
    output and ends where they are part of a larger buffer); ``window``: ``out`` is the output
    window ``(lo, len)`` of a larger result, the run ends clamped to it."""
    dev = values.device
    size = out.size
    eb8 = values.dtype == np.uint8
    n_vec4 = -(-_words(size, values.dtype) // 4)
    vpt = _or(dev.hooks.rle_decode_vec4_per_thread, DECODE_VEC4_PER_THREAD_EB8 if eb8 else DECODE_VEC4_PER_THREAD)
    if not eb8:  # expand.wgsl keeps a mark per output element in workgroup memory
        vpt = max(1, min(vpt, (dev.limits["max-compute-workgroup-storage-size"] - 2048) // (256 * 16)))
    per_group = 256 * vpt * 4 * (4 if eb8 else 1)
    groups = -(-size // per_group)
    k_part, k = dev.plan(("rle decode kernels", vpt, eb8), lambda: _decode_kernels(dev, vpt, eb8))
    parts = dev.alloc(4 * (groups + 1))
    params = {"size": size, "n_vec4": n_vec4, "shift": shift, "n_groups": groups, "lo": window[0], "len": window[1]}
    eb = ends if eb is None else eb
    b.dispatch(k_part, -(-(groups + 1) // 256), params=params, info=meta, ends=eb, parts=parts)
    b.dispatch(k, groups, params=params, info=meta, ends=eb, values=values if vb is None else vb,
               output=out if ob is None else ob, parts=parts)


# ------------------------------------------------------------------------- 64-bit values
def _is_pairs(dtype) -> bool:
    """64-bit integers and floats: carried as pairs of 32-bit words (``wgsl/rle/pairs.wgsl``)."""
    d = np.dtype(dtype)
    return d.itemsize == 8 and d.kind in "iuf"


def _record_pairs(b, mode: str, x64: GpuArray, lo: GpuArray, hi: GpuArray) -> None:
    """SPLIT ``x64`` into its low and high words, or MERGE them back, window by window."""
    dev = x64.device
    align = dev.storage_align
    w = max(1, dev.binding_limit // 8 // align) * align
    k = dev.kernel("rle/pairs.wgsl", defines={mode: True})
    n = x64.size
    for e0 in range(0, n, w):
        ne = min(w, n - e0)
        b.dispatch(k, -(-ne // 256), params={"n": ne}, x=_sub(x64, e0, ne), lo=_sub(lo, e0, ne), hi=_sub(hi, e0, ne))


def _split(g: GpuArray) -> tuple[GpuArray, GpuArray]:
    lo, hi = GpuArray.empty(g.shape, np.uint32, g.device), GpuArray.empty(g.shape, np.uint32, g.device)
    if g.size:
        _run(g.device, lambda b: _record_pairs(b, "SPLIT", g.reshape(-1), lo.reshape(-1), hi.reshape(-1)))
    return lo, hi


def _merge(lo: GpuArray, hi: GpuArray, dtype) -> GpuArray:
    out = GpuArray.empty(lo.shape, dtype, lo.device)
    if out.size:
        _run(lo.device, lambda b: _record_pairs(b, "MERGE", out, lo, hi))
    return out


def _words32(g: GpuArray, ne: int, e0: int = 0) -> GpuArray:
    """Elements ``e0 .. e0 + ne`` of the 64-bit array ``g`` as their 2 ``ne`` 32-bit words."""
    return GpuArray(g.device, g.buffer, (2 * ne,), np.uint32, g.byte_offset + 8 * e0)


def _compact_pairs(x: GpuArray, mask, method: str | None) -> Compacted:
    """compact of a GpuArray of 64-bit values. Fused: one pass of rle/compact.wgsl over the values'
    32-bit words (PAIRS: each mask element flags both words of its value), 8 bytes read per
    element and written per kept one. PARLE: the kept indices (``nonzero`` of the mask), then both
    words of each kept value gathered. Past one binding: fused, as chained chunks (the geometry
    in 8-byte elements); PARLE in chunks (each into scratch) placed as 32-bit compaction's."""
    if not isinstance(mask, GpuArray):
        raise InputError("compact", "x and mask must both be numpy arrays or both GpuArrays")
    gmask = _bool_as_uint8(mask)
    if tuple(gmask.shape) != tuple(x.shape):
        raise InputError("compact", f"mask has shape {tuple(gmask.shape)}, x has shape {tuple(x.shape)}")
    if np.dtype(gmask.dtype) not in MASK_DTYPES:
        raise InputError("compact", f"mask dtype {gmask.dtype} is not supported (expected bool, uint8, uint32 "
                         "or int32)")
    dev, n = x.device, x.size
    m = _method(dev, method, "compact")
    chunked = _needs_chunks("compact", n, dev, 8 * n)
    res = Compacted(GpuArray.empty((n,), x.dtype, dev), _count_view(GpuArray.empty((16,), np.uint32, dev)))
    if n == 0:
        _run(dev, lambda b: b.clear(_meta_of(res.count)))
        return res
    g, gm = x.reshape(-1), gmask.reshape(-1)
    c = _chain64(dev, n) if chunked and m == "fused" else None
    if c is not None:
        _run(dev, lambda b: _record_chained(b, dev, "compact", g, gm, res.data, None, _meta_of(res.count), c))
        return res
    per = _chunk_len(dev, 8) if chunked else n
    bounds = [(e0, min(per, n - e0)) for e0 in range(0, n, per)]
    idx = GpuArray.empty((per,), np.uint32, dev) if m == "parle" else None
    scratch = GpuArray.empty((per,), x.dtype, dev) if chunked else res.data
    k_gather = dev.kernel("rle/pairs.wgsl", defines={"GATHER": True, "COUNTS": False}) if m == "parle" else None
    b = dev.batch()
    placer = _Placer(b, len(bounds), res.data, vw=2) if chunked else None
    for k, (e0, ne) in enumerate(bounds):
        meta = GpuArray.empty((16,), np.uint32, dev) if chunked else _meta_of(res.count)
        xb = _sub(g, e0, ne)
        if m == "fused":
            _record_items(b, dev, "compact", _words32(g, ne, e0), 2 * ne, _view(gm, e0, ne), meta, None,
                          _words32(scratch, ne), m, xb=xb, mb=_sub(gm, e0, ne), pairs=True)
        else:
            _record_items(b, dev, "nonzero", _view(gm, e0, ne), ne, None, meta, _view(idx, 0, ne), None, m,
                          xb=_sub(gm, e0, ne))
            b.dispatch_indirect(k_gather, meta.buffer, meta.byte_offset + 16, params={"n": ne}, x=xb, info=meta,
                                idx=idx, values=scratch)
        if placer is not None:
            placer.record(b, k, e0 + ne, meta, scratch)
    if placer is not None:
        placer.finish(b, res.count)
    b.submit()
    return res


def _pairs_tile(dev: Device) -> int:
    """Elements per tile of rle/fused.wgsl's encoding of 64-bit values (two to a vec4)."""
    return _wg(dev) * _or(dev.hooks.rle_vec4_per_thread, VEC4_PER_THREAD) * 2


def _rle_encode_pairs(a, method: str | None):
    """rle_encode of 64-bit values. Fused: one pass of rle/fused.wgsl (PAIRS, VALUES) finds the
    run starts (pairs differing in either word) and writes their values and lengths, the runs
    that cross tiles finished by rle/fixup.wgsl; past one binding as chained chunks (the geometry
    in 8-byte values). PARLE: flags, ``nonzero`` of them, then values and lengths gathered;
    past one binding in chunks placed as 32-bit encoding's."""
    g, host = as_input(a, "rle_encode", dtypes=(a.dtype,), ndims=(1,))
    dev, n = g.device, g.size
    m = _method(dev, method, "rle_encode")
    chunked = _needs_chunks("rle_encode", n, dev, 8 * n)
    if n == 0:
        if host is not None:
            return np.empty(0, g.dtype), np.empty(0, np.uint32)
        meta = asarray(np.zeros(16, np.uint32), dev=dev)
        return RunLengths(GpuArray.empty((0,), g.dtype, dev), GpuArray.empty((0,), np.uint32, dev),
                          _count_view(meta), None, 0)
    fused = m == "fused"
    tile = _pairs_tile(dev)
    c = _chain64(dev, n, tile) if chunked and fused else None
    head = GpuArray.empty((2 * -(-n // tile),), np.uint32, dev) if fused and not chunked else None
    res = RunLengths(GpuArray.empty((n,), g.dtype, dev), GpuArray.empty((n,), np.uint32, dev),
                     _count_view(GpuArray.empty((16,), np.uint32, dev)), None, n, head, tile)
    if fused and (c is not None or not chunked):
        b = dev.batch()
        if c is not None:
            _record_chained(b, dev, "rle", g, None, res.values, res.counts, _meta_of(res.n_runs), c)
        else:
            _record_items(b, dev, "rle", g, n, None, _meta_of(res.n_runs), None, res.values, m, counts=res.counts,
                          head=head, pairs=True)
        if host is not None:
            return tuple(submit_counted_to_host(b, res.n_runs, res.values, res.counts))
        b.snapshot(res.n_runs)
        b.submit()
        return res
    per = _chunk_len(dev, 8) if chunked else n
    bounds = [(e0, min(per, n - e0)) for e0 in range(0, n, per)]
    flags = None if fused else GpuArray.empty((per,), np.uint32, dev)
    idx = GpuArray.empty((per + 1,), np.uint32, dev)  # the fused pass writes the sentinel after the starts
    sv = GpuArray.empty((per,), g.dtype, dev) if chunked else res.values
    sc = GpuArray.empty((per,), np.uint32, dev) if chunked else res.counts
    k_flags = None if fused else dev.kernel("rle/pairs.wgsl", defines={"FLAGS": True})
    k_gather = dev.kernel("rle/pairs.wgsl", defines={"GATHER": True, "COUNTS": True})
    b = dev.batch()
    placer = _Placer(b, len(bounds), res.values, res.counts, vw=2) if chunked else None
    for k, (e0, ne) in enumerate(bounds):
        meta = GpuArray.empty((16,), np.uint32, dev) if chunked else _meta_of(res.n_runs)
        xb = _sub(g, e0, ne)
        if fused:  # one pass: run starts compared as both words, their positions compacted (rle/fused.wgsl)
            _record_items(b, dev, "rle", _view(g, e0, ne), ne, None, meta, _view(idx, 0, ne + 1), None, m, xb=xb,
                          pairs=True)
        else:
            b.dispatch(k_flags, -(-ne // 256), params={"n": ne}, x=xb, flags=flags)
            _record_items(b, dev, "nonzero", _view(flags, 0, ne), ne, None, meta, _view(idx, 0, ne), None, m)
        b.dispatch_indirect(k_gather, meta.buffer, meta.byte_offset + 16, params={"n": ne}, x=xb, info=meta,
                            idx=idx, values=sv, counts=sc)
        if placer is not None:
            placer.record(b, k, e0 + ne, meta, sv, sc)
    if placer is not None:
        placer.finish(b, res.n_runs)
    if host is not None:
        return tuple(submit_counted_to_host(b, res.n_runs, res.values, res.counts))
    b.submit()
    return res


def _rle_decode_pairs(values, counts, size):
    """rle_decode of 64-bit values: the low and the high words decoded as two 32-bit decodings
    (sharing the counts), then merged."""
    if isinstance(values, RunLengths):
        if counts is not None:
            raise InputError("rle_decode", "give either a RunLengths or values and counts")
        rl = values
        lo, hi = _split(rl.values)
        out_lo = _rle_decode(RunLengths(lo, rl.counts, rl.n_runs, rl.starts, rl.size, rl._head, rl._tile_elems))
        out_hi = _rle_decode(RunLengths(hi, rl.counts, rl.n_runs, rl.starts, rl.size, rl._head, rl._tile_elems))
        return _merge(out_lo, out_hi, rl.values.dtype)
    if counts is None:
        raise InputError("rle_decode", "counts is missing")
    if isinstance(values, GpuArray):
        if values.ndim != 1:
            raise InputError("rle_decode", f"expected an array of 1 dimensions, got shape {values.shape}")
        if not isinstance(counts, GpuArray):
            raise InputError("rle_decode", "values and counts must both be numpy arrays or both GpuArrays")
        lo, hi = _split(values)
        out_lo = _rle_decode(lo, counts, size=size)
        out_hi = _rle_decode(hi, counts, size=out_lo.size)
        return _merge(out_lo, out_hi, values.dtype)
    if isinstance(counts, GpuArray):
        raise InputError("rle_decode", "values and counts must both be numpy arrays or both GpuArrays")
    v = values
    if v.ndim != 1:
        raise InputError("rle_decode", f"expected an array of 1 dimensions, got shape {v.shape}")
    c = np.asarray(counts)
    if c.ndim != 1 or c.shape != v.shape:
        raise InputError("rle_decode", f"values has shape {v.shape} but counts has shape {c.shape}")
    total = _counts_total(c, "rle_decode")
    _check_host_size(size, total)
    if total == 0:
        return np.empty(0, v.dtype)
    w = np.ascontiguousarray(v).view(np.uint32).reshape(-1, 2)
    dev = _default_device()
    gc = asarray(c.astype(np.uint32, copy=False), dev=dev)
    out_lo = _rle_decode(asarray(np.ascontiguousarray(w[:, 0]), dev=dev), gc, size=total)
    out_hi = _rle_decode(asarray(np.ascontiguousarray(w[:, 1]), dev=dev), gc, size=total)
    return _merge(out_lo, out_hi, v.dtype).numpy()
