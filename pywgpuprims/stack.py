"""Stack monoid on the GPU: bracket matching, nesting depth and clip bounding boxes.

Definitions (the stack semantics every function here follows). Elements are processed left to
right; an *open* pushes itself, a *close* pops the top open if the stack is not empty (a close
on an empty stack is *unmatched* and changes nothing), anything else (a draw) leaves the stack
alone. ``B(i)`` is the stack size just before element ``i``.

- ``link[i]``: the open on top of the stack just before ``i``, i.e. for an open its parent open,
  for a close the open it matches, for a draw its innermost enclosing open; ``-1`` when the stack
  is empty there (top-level open or draw, unmatched close).
- ``depth[i] = min(B(i), B(i+1))``: for an open the number of opens enclosing it, for a matched
  close the depth of its open, for a draw the number of enclosing opens, for an unmatched close 0.

Algorithm (``wgsl/stack/``), six small dispatches, no inter-workgroup waiting at all:

1. ``bracket_reduce.wgsl`` REDUCE: each partition of ``P = 16 * WG`` elements (512 by default, larger
   only past 2^29 elements) computes its bicyclic summary (closes it pops from outside, opens it
   leaves open) and scatters the global indices of the opens it leaves open into a scratch list,
   slot = height above the partition's minimum (no compaction needed).
2. ``spine.wgsl`` UP, TOP, DOWN: chunks of 1024 partitions scan the summaries into the stack size
   at each partition start and each partition's minimum stack size ``M[q]``, and build a min
   segment tree over ``M``.
3. ``bracket_chain.wgsl`` CHAIN: per partition, its start size, ``parent(q)`` = nearest earlier partition
   with a smaller minimum, and ``first(q)`` = nearest earlier partition with a minimum below its
   start size (two tree queries).
4. ``bracket_leaf.wgsl`` LEAF: each partition recomputes ``B`` for its elements and answers
   ``link[i]`` = nearest ``k < i`` with ``B(k) < B(i)`` (that ``k`` is the open at height ``B(i)``):

   - within the invocation's 16 elements: a stack of 4-bit offsets in two registers;
   - else (the element found that stack empty: one element per height from ``B(start)`` down to
     the invocation's minimum) from the nearest earlier invocation whose minimum is below the
     height, which serves every height down to its minimum from its own stack of unmatched opens:
     the first is the previous invocation or its parent (the nearest earlier invocation with a
     smaller minimum, found once per invocation in workgroup memory: its block of 32 minima, then
     block minima), each next one the last one's parent;
   - else from the nearest earlier partition ``q`` with ``M[q] < h``: walk ``first(p)``,
     ``parent(...)`` (up to 8 hops, then the tree), and read ``q``'s list; ``q`` also serves a
     whole range of heights.

   Scans use subgroup shuffles where the device has subgroups (one or two barriers), Hillis-Steele
   in workgroup memory otherwise (the GL backend). Each invocation stores its own 16 outputs
   (staging them through workgroup memory for contiguous stores cost occupancy: slower at random
   input on an H100, faster at deep nesting).

Depth is unbounded: no stack is capped at a partition's size (the lists cover any depth, the chain
and tree any distance); every loop has a constant bound (owner rounds per invocation <= 16 inside
the partition and <= 17 before it, chain hops <= 8, tree walks <= 40 steps) far under lavapipe's
65,535 trips. Because no workgroup ever waits on another, there is no decoupled lookback and so no
fallback to force: any schedule, any order of workgroups gives the same result; the price is reading
the input twice (1 byte per element each time for bool/uint8 input).

The single pass the issue describes, a choice (``method="single_pass"``; on an H100 at 2^28 it runs
104 G el/s on random brackets and 68 at depth 2^20, against 142 and 81 for the multi-pass method; see
BENCHMARKS.md): ``single_pass.wgsl``, partitions of 4096 taken by ticket. Each publishes its
bicyclic summary (subgroup reductions, before any scan), writes its list (REDUCE's code, its scans
started from the summary's per-subgroup sums, so without barriers of their own), then
works in rounds over windows of 256 predecessors, one poll per invocation, scanned by subgroup
shuffles, a few barriers a round. The first round is the decoupled lookback for its start size (a
predecessor silent for SPIN_LIMIT polls is reduced by the workgroup: the decoupled fallback),
which it publishes; the same polls give each predecessor's minimum stack size M, so the owners of
the heights it needs (the records of M going back) mostly come from that round too; later rounds
go further back, jumping along published parent links where they can, but never wait for one.
It publishes its own parent link, fetches the opens it needs from the owners' lists at once, and
runs the leaf (with the masks and exclusive summaries write_list left it in workgroup memory).
List entries carry the call's epoch, so a reader that cannot see an entry's store yet (plain stores
and relaxed atomics are not ordered) rebuilds it from the input (``stack_list_spin``: after that
many polls). Every loop has a
budget; a partition past one gives up and arms the multi-pass method, recorded after the single
pass as indirect dispatches with zero grids, wherever a give-up is possible (more than 64
partitions). No wrong result and no hang depends on forward progress between workgroups.

Limits: n < 2^31 - 2^16 (int32 indices). Past the largest storage binding (``Device.binding_limit``;
the lists take 4 bytes per element, clip boxes 16) the input is matched in chunks, in order.
Bracket matching (``_BracketChunks``) records them all in one batch with no readback: each chunk
runs the multi-pass kernels on its own range of the input and outputs (views), entered with the
stack the earlier chunks left, whose size stays on the GPU (``spine.wgsl`` CARRY: TOP starts from
it, so every height is global, and writes the next chunk's); its leaf serves the heights no
partition of the chunk owns from ``carried`` (the carried slots it may read, gathered before it
from the earlier chunks' segments by ``carry.wgsl``, on a grid TOP sized) and stores the opens it
leaves unclosed in its own segment. Clip boxes (``_Chunks``, ``chunk.wgsl``) run each chunk on an
extended input, the top ``t = min(s, chunk length)`` of the ``s`` carried opens (with their boxes),
then the chunk, and read back the unclosed-open count per chunk.
:func:`record_bracket_match` records into the caller's batch and so stays within one binding.

Test hooks (``device().using(...)``, fields of ``pywgpuprims._hooks.TestHooks``):
``stack_wg`` (invocations per partition workgroup),
``stack_subgroups`` (False: workgroup-memory scans), ``stack_spine_wg`` (spine chunks of 4 x that),
and for the single pass ``stack_withhold_period`` (every k-th partition publishes nothing: its
successors must reduce it), ``stack_force_repair`` (record the repair whatever the size),
``stack_max_steps`` / ``stack_max_hops`` (budgets; 0 forces give-ups), ``stack_chain_cap``,
``stack_spin_limit``, ``stack_list_spin``, ``stack_stale_lists`` (no list entry carries the epoch:
every read rebuilds), ``stack_no_sizes`` (no partition publishes its size: every lookback goes back
to partition 0), ``stack_stats_buffer`` (receives the state counters: tickets, give-ups, fallbacks,
and with ``stack_round_stats`` "look" or "walk" the rounds of that phase, "rebuild" the list
entries rebuilt).
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import _dtypes as _dt
from ._array import GpuArray, as_input, submit_to_host
from ._device import Binding, Device, takes_device
from ._errors import DeviceLimitError, InputError

_I32, _U32 = np.dtype(np.int32), np.dtype(np.uint32)

__all__ = ["bracket_match", "record_bracket_match", "bracket_match_reference", "clip_bboxes",
           "clip_bboxes_reference", "is_empty", "BracketInfo", "unclosed_opens", "CLIP_DRAW", "CLIP_BEGIN",
           "CLIP_END"]

CLIP_DRAW = 0
CLIP_BEGIN = 1
CLIP_END = 2

@dataclass(frozen=True)
class StackTuning:
    """Bracket matching's tuning (H100 80GB HBM3, Vulkan, driver 580, 2^28 brackets, random and 2^20
    deep; ``python -m pywgpuprims.bench bracket_match``)."""

    wg: int = 32               # multi-pass partition workgroup: 32 and 64 both 139 G el/s (see _wg), 2026-11-22
    spine_wg: int = 256        # the spine's workgroup (chunks of 1024 partitions), 2026-11-21
    single_pass_wg: int = 256  # single-pass partitions of 4096: 2048 / 4096 ran 79 / 104 G el/s, 2026-11-25
    spin_limit: int = 32       # single pass, polls before a fallback: 8 took 646 fallbacks, 32 none, 2026-11-26
    list_spin: int = 0         # polls of an untagged list entry before its rebuild: 0 as fast, 2026-11-26


TUNING = StackTuning()
WG = TUNING.wg  # partition workgroup up to 2^29 elements (see _wg)
EPT = 16
SPINE_WG = TUNING.spine_wg
METHODS = ("multi_pass", "single_pass")  # H100, 2^28 random: 142 / 104 G el/s (BENCHMARKS.md)
SINGLE_PASS_WG = TUNING.single_pass_wg
SPIN_LIMIT = TUNING.spin_limit
CHAIN_CAP = 64  # owners a partition may need (more: it gives up to the repair)
LIST_SPIN = TUNING.list_spin
# Budgets of the single pass, per invocation: lookback steps and owner-walk rounds; within
# lavapipe's loop cap (65,535 trips) with room to spare.
MAX_STEPS = 256
MAX_HOPS = 1024
LOCAL_BITS = 12  # list entries: epoch << 12 | the open's offset in its partition (bracket_common.wgsl)
CLIP_WG = 256  # clip boxes: tiles of CLIP_TILE elements, CLIP_WG invocations each (clip.wgsl)
CLIP_TILE = 512
MAX_LOCAL_BITS = 14  # the single pass's partitions: up to 4 chunks (2^14 elements; summaries pack a in 15 bits)


class BracketInfo(NamedTuple):
    """Counts of unbalanced brackets: closes with no open to match, opens never closed."""

    unmatched_closes: int
    unclosed_opens: int


def _leaf_storage_bytes(wg: int) -> int:
    """Workgroup memory of the leaf kernel in bytes: scan (2 WG words), minima (WG), unmatched-open
    stacks (4 WG), block minima."""
    return 4 * (7 * wg + wg // 32)


def _or(value, default):
    """A hook's value, or ``default`` where the hook is unset (None)."""
    return default if value is None else value


def _check_method(method: str, primitive: str) -> None:
    if method not in METHODS:
        raise InputError(primitive, f"method {method!r}: expected 'multi_pass' or 'single_pass'")


def _wg(dev: Device, n: int, method: str = "multi_pass") -> int:
    """Invocations per partition workgroup (partition = 16 x that): for the multi-pass method the
    smallest of 32, 64, 128 that keeps the partitions within 2^20 (the tree's reach); on an H100
    at 2^28 random brackets 32 and 64 both ran 139 G el/s (the owner searches are shorter at 32; the
    spine is a few microseconds either way). The single pass takes SINGLE_PASS_WG."""
    if dev.hooks.stack_wg is not None:
        wg = dev.hooks.stack_wg
        if wg * EPT > 1 << LOCAL_BITS:  # list entries hold an offset within the partition
            raise ValueError(f"stack_wg={wg}: partitions hold at most {1 << LOCAL_BITS} elements "
                             f"({(1 << LOCAL_BITS) // EPT} invocations)")
        return wg
    if method == "single_pass":
        return SINGLE_PASS_WG
    for wg in (32, 64):
        if -(-n // (wg * EPT)) <= 1 << 20:
            return wg
    return 128


def _spine_wg(dev: Device) -> int:
    """The spine's workgroup: 256 invocations, chunks of 1024 partitions (tests shrink it to get
    several chunks at small sizes)."""
    return dev.hooks.stack_spine_wg or SPINE_WG


_lists_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
LISTS_KEPT = 256 << 20  # bytes of lists kept per device between calls


def _lists(dev: Device, b, nbytes: int):
    """The partitions' lists of unmatched opens and this call's epoch (the tag its entries carry).

    A reader in the single pass tells a stale entry (one whose store it cannot see yet) by its tag,
    so a reused buffer must hold only entries of earlier epochs: one buffer per device (up to
    LISTS_KEPT bytes) with a counter, cleared when it is new and when the counter wraps; larger
    ones come from the pool and are cleared each call. Returns (buffer, epoch).
    """
    size = max(256, 1 << (int(nbytes) - 1).bit_length())
    if size > LISTS_KEPT:
        buf = dev.alloc(size, label="stack lists")
        b.clear(buf)
        return buf, 1
    with dev._lock:
        ent = _lists_cache.get(dev)
        if ent is None or ent[0].size < size:
            ent = [dev.alloc(size, label="stack lists"), 0]
            b.clear(ent[0])
            _lists_cache[dev] = ent
        ent[1] += 1
        if ent[1] >= 1 << (32 - MAX_LOCAL_BITS):
            b.clear(ent[0])
            ent[1] = 1
        return ent[0], ent[1]


def _spine_shape(dev: Device, tree_size: int) -> tuple[int, int, int]:
    """(spine workgroup, chunk, chunks) for a tree of ``tree_size`` leaves."""
    swg = _spine_wg(dev)
    chunk = min(4 * swg, tree_size)
    n_chunks = tree_size // chunk
    if n_chunks > 4 * swg:  # the top pass holds 4 chunks per invocation
        swg = 256
        chunk = min(4 * swg, tree_size)
        n_chunks = tree_size // chunk
    return swg, chunk, n_chunks


def _record_match(b, g: GpuArray, mode: str, link: GpuArray, depth: GpuArray | None, info,
                  method: str = "multi_pass", carry: dict | None = None) -> None:
    """Record bracket matching of ``g`` (mode "u8", "u32" or "kind") into ``link``/``depth``: the
    multi-pass method, or the single pass with the multi-pass method as its repair, recorded
    indirect (zero grids unless a partition gave up) where one may give up. ``depth=None``: links
    only (the leaf stores no depth; clip boxes need none). ``carry`` (multi-pass method only, past
    one binding: ``_BracketChunks.carry``): ``g`` is chunk ``k`` of a longer input, entered with the
    stack the earlier chunks left: heights are global, TOP reads and writes the ``state`` of the
    chunks instead of ``info``, ``gather(b)`` records the gathering of the carried slots the
    leaf may read, and the leaf writes global links and depths and pushes the opens it leaves
    unclosed into ``segment``."""
    dev = g.device
    no_depth = depth is None
    if no_depth:
        depth = dev.alloc(16)  # bound, never written (NO_DEPTH)
    n = g.size
    wg = _wg(dev, n, method)
    P = wg * EPT
    n_parts = -(-n // P)
    tree_size = 1 << max(0, (n_parts - 1).bit_length())
    defs = {"WG": wg, f"MODE_{mode.upper()}": True, "ELEMS_PER_VEC": 16 if mode == "u8" else 4,
            "SUBGROUPS": dev.has_subgroups and dev.hooks.stack_subgroups,
            "LOCAL_BITS": LOCAL_BITS, "NO_DEPTH": no_depth}
    single = method == "single_pass"
    if single:
        chunks = 1  # partitions of one chunk of P elements (single_pass.wgsl's code holds for more)
        one_parts = -(-n // (P * chunks))
        lists, epoch = _lists(dev, b, 4 * one_parts * chunks * P)
    else:  # dispatch order alone orders the multi-pass method's list stores and loads
        lists, epoch = b.scratch(4 * n_parts * P), 1
    params = {"n": n, "n_parts": n_parts, "n_groups": n_parts, "tree_size": tree_size, "epoch": epoch}
    swg, chunk, n_chunks = _spine_shape(dev, tree_size)
    rargs = None
    if single:
        hk = dev.hooks
        steps = _or(hk.stack_max_steps, MAX_STEPS)
        hops = _or(hk.stack_max_hops, MAX_HOPS)
        cap = _or(hk.stack_chain_cap, CHAIN_CAP)
        # No partition can give up where there are at most this many: a lookback step passes at
        # least one predecessor; a partition needs at most one owner per earlier partition; its
        # walk passes at least one partition every two rounds (a silent one costs a round).
        safe = min(steps, cap, hops // 2 - 1)
        repair = one_parts > safe or hk.stack_force_repair
        # The walk's segments are subgroups, one summary each in workgroup memory: sized by the
        # smallest subgroup the device reports (none reported: the workgroup-memory path).
        sg_min = dev.subgroup_min_size
        sub = defs["SUBGROUPS"] and sg_min >= 4
        k_one = dev.kernel("stack/single_pass.wgsl", defines=dict(
            defs, SUBGROUPS=sub, SINGLE_PASS=True, REDUCE_FNS=True, LEAF_FNS=True, CHAIN_CAP=cap, CHUNKS=chunks,
            LOCAL_BITS=max(LOCAL_BITS, (P * chunks - 1).bit_length()),
            SPIN_LIMIT=_or(hk.stack_spin_limit, SPIN_LIMIT), N_SEG=wg // sg_min if sub else 1,
            LIST_SPIN=_or(hk.stack_list_spin, LIST_SPIN),
            STALE_LISTS=hk.stack_stale_lists, NO_SIZES=hk.stack_no_sizes,
            ROUND_STATS=hk.stack_round_stats is not None,
            LOOK_STATS={"look": 1, "rebuild": 2}.get(hk.stack_round_stats, 0),
            SEG_TOTALS=sub, BLOCK_MIN_LANES=sub, SHARED_WALK=sub and chunks == 1))
        state = dev.alloc(16 + 12 * one_parts)  # counters, then 3 words per partition
        rargs = dev.alloc(18 * 4)
        sublists = dev.alloc(max(16, 4 * one_parts * (chunks - 1) * P))
        red, up, ch = dev.grid(n_parts), dev.grid(n_chunks), dev.grid(-(-n_parts // 256))
        one = dict(params, n_parts=one_parts, n_groups=one_parts,
                   withhold_period=hk.stack_withhold_period, max_steps=steps,
                   max_hops=hops, arm=int(repair), red_x=red[0], red_y=red[1], up_x=up[0], up_y=up[1],
                   chain_x=ch[0], chain_y=ch[1])
        b.clear(state, 0, 16 + 12 * one_parts)
        b.clear(info, 0, 8)
        if repair:  # else never written (arm = 0)
            b.clear(rargs, 0, 18 * 4)
        b.dispatch(k_one, one_parts, params=one, input=g, lists=lists, sublists=sublists, link=link, depth=depth,
                   state=state, info=info, repair_args=rargs)
        stats = hk.stack_stats_buffer
        if stats is not None:
            b.copy(state, 0, stats, 0, 16)
        if not repair:
            return
    chunk_out = carry is not None
    k_red, k_chain, k_leaf, k_up, k_top, k_down = dev.plan(("bracket kernels", mode, wg, swg, no_depth, chunk_out),
                                                           lambda: _multipass_kernels(dev, defs, swg, chunk_out))
    # apart: a buffer bound read-only and read-write in one dispatch is refused
    part_bic, part_start, tree, chain, chunk_bic, chunk_start = (b.scratch(sz) for sz in (
        8 * n_parts, 4 * n_parts, 8 * tree_size, 16 * n_parts, 8 * n_chunks, 4 * n_chunks))
    sp = {"n_parts": n_parts, "tree_size": tree_size, "chunk": chunk, "n_chunks": n_chunks}

    def dispatch(k, groups, slot, **kw):
        if rargs is None:
            b.dispatch(k, groups, **kw)
        else:  # the repair: grids armed on the GPU by a partition that gave up, else zero
            b.dispatch_indirect(k, rargs, 12 * slot, **kw)

    dispatch(k_red, n_parts, 0, params=params, input=g, part_bic=part_bic, opens_out=lists)
    dispatch(k_up, n_chunks, 1, params=sp, part_bic=part_bic, chunk_bic=chunk_bic)
    if chunk_out:  # the carried stack's size in, the next chunk's out (spine.wgsl CARRY)
        dispatch(k_top, 1, 2, params=dict(sp, carry_k=carry["k"], gather_at=carry["gather_at"]), part_bic=part_bic,
                 chunk_bic=chunk_bic, chunk_start=chunk_start, tree=tree, carry=carry["state"])
    else:
        dispatch(k_top, 1, 2, params=sp, part_bic=part_bic, chunk_bic=chunk_bic, chunk_start=chunk_start, tree=tree,
                 info=info)
    dispatch(k_down, n_chunks, 3, params=sp, part_bic=part_bic, chunk_start=chunk_start, part_start=part_start,
             tree=tree)
    leaf = {"params": params}
    if chunk_out:  # CHAIN also writes the lowest height after each partition (where the leaf pushes)
        tails = dev.alloc(4 * n_parts)
        leaf = {"params": dict(params, out_base=carry["base"], push_opens=carry["push"]), "tails": tails}
    dispatch(k_chain, -(-n_parts // 256), 4, **leaf, part_start=part_start, tree=tree, chain=chain)
    if chunk_out:
        carry["gather"](b)
        leaf.update(carried=carry["carried"], segment=carry["segment"])
    dispatch(k_leaf, n_parts, 5, **leaf, input=g, opens_out=lists, tree=tree, chain=chain, link=link, depth=depth)


def _multipass_kernels(dev: Device, defs: dict, swg: int, chunk_out: bool = False) -> tuple:
    """The multi-pass method's six kernels: reduce, chain, leaf, and the spine's up, top, down."""
    return (dev.kernel("stack/bracket_reduce.wgsl", defines=dict(defs, REDUCE=True, REDUCE_FNS=True)),
            dev.kernel("stack/bracket_chain.wgsl", defines={"WG": 256, "CHAIN": True, "TREE": True,
                                                      "LOCAL_BITS": LOCAL_BITS, "CHUNK_OUT": chunk_out}),
            dev.kernel("stack/bracket_leaf.wgsl", defines=dict(defs, LEAF=True, LEAF_FNS=True, TREE=True,
                                                             CHUNK_OUT=chunk_out)),
            *(dev.kernel("stack/spine.wgsl", defines={"WG": swg, m: True, "CARRY": chunk_out and m == "TOP"})
              for m in ("UP", "TOP", "DOWN")))


def record_bracket_match(batch, is_open: GpuArray, link: GpuArray, depth: GpuArray, info=None,
                         kinds: bool = False, method: str = "multi_pass") -> None:
    """Record bracket matching into ``batch`` (no readback), for chains that stay on the GPU.

    Parameters
    ----------
    batch : Batch
        From ``device().batch()``; submit it afterwards.
    is_open : GpuArray, 1-D
        uint8 (nonzero = open) or uint32/int32 (nonzero = open); with ``kinds=True`` uint32/int32
        codes CLIP_DRAW / CLIP_BEGIN / CLIP_END (other values: draw).
    link, depth : GpuArray int32 of the same length
        Receive the outputs of :func:`bracket_match` (draws too, when ``kinds``).
    info : buffer of 8+ bytes, optional
        Receives (unmatched closes, unclosed opens) as two uint32.
    method : {"multi_pass", "single_pass"}
        See :func:`bracket_match`.
    """
    dev = is_open.device
    _check_method(method, "bracket_match")
    _check_size(dev, is_open.size, "bracket_match", method)
    if not is_open.size:
        return
    mode = "kind" if kinds else ("u8" if is_open.dtype == np.uint8 else "u32")
    if kinds and is_open.dtype == np.uint8:
        raise InputError("bracket_match", "kinds must be uint32 or int32 on the GPU")
    own = info is None
    if own:
        info = dev.alloc(16)
    _record_match(batch, is_open, mode, link, depth, info, method)


def _check_size(dev: Device, n: int, primitive: str, method: str = "multi_pass") -> None:
    """Raise where ``n`` elements cannot be matched within one storage binding (record_bracket_match)."""
    _check_count(dev, n, primitive, method)
    if not _fits(dev, n, method):
        raise DeviceLimitError(primitive, f"{n} elements need {4 * n} byte bindings; the largest storage "
                               f"binding is {dev.binding_limit} bytes")


def _check_count(dev: Device, n: int, primitive: str, method: str = "multi_pass") -> None:
    if n >= 2**31 - 2**16:
        raise InputError(primitive, f"{n} elements: indices must fit int32")
    P = _wg(dev, n, method) * EPT
    if -(-n // P) > 1 << 20 and _fits(dev, n, method):  # the leaf's global tree walk covers 2^20 partitions
        raise InputError(primitive, f"{n} elements: at most {P << 20} with partitions of {P}")


def _fits(dev: Device, n: int, method: str, box_bytes: int = 0) -> bool:
    """Whether ``n`` elements are matched in one run: the lists' partitions (4 bytes per element,
    whole partitions) and, for clip boxes, ``box_bytes`` per element fit one storage binding."""
    P = _wg(dev, n, method) * EPT
    limit = dev.binding_limit
    return 4 * (-(-n // P)) * P <= limit and box_bytes * n <= limit


# ----------------------------------------------------------------------------- past one binding
def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _capacity(dev: Device, method: str, box_bytes: int) -> tuple[int, int]:
    """(M, unit): the most elements one extended run may hold (prefix + chunk) within the binding
    limit (keeping 512 bytes for sub-range alignment), and the multiple of elements chunk starts
    keep (int32 and box sub-ranges aligned to the device's storage offset alignment)."""
    limit = dev.binding_limit - 512
    P = _wg(dev, max(1, limit // 4), method) * EPT
    m = (limit // (4 * P)) * P
    if box_bytes:
        m = min(m, limit // box_bytes)
    unit = max(16, dev.storage_align // 4)
    return m // unit * unit, unit


def _chunk_plan(n: int, base: int, s: int, M: int, unit: int) -> int:
    """The next chunk's length from ``base`` with ``s`` carried opens: as long as fits ``M`` with
    its prefix of min(s, chunk) opens (rounded up to 4), a multiple of ``unit`` except the last."""
    r = n - base
    if _round_up(min(s, r), 4) + r <= M:
        return r
    c = (M - _round_up(s, 4)) // unit * unit
    if c >= max(s, unit):
        return c
    return (M - 4) // 2 // unit * unit  # the prefix takes the chunk's length: t = c


class _Chunks:
    """Clip boxes past one storage binding: chunks in order, each run by the in-binding kernels on
    its extended input (prefix of carried opens, then the chunk); the opens left unmatched are
    carried on the GPU as a stack of global indices and boxes. See ``wgsl/stack/chunk.wgsl``. One
    small readback per chunk (the run's unclosed-open count). (Bracket matching: _BracketChunks.)"""

    def __init__(self, dev: Device, n: int, mode: str, method: str, primitive: str, box_bytes: int = 0):
        self.dev, self.n, self.mode, self.method = dev, n, mode, method
        M, unit = _capacity(dev, method, box_bytes)
        if M < 4 * unit:
            raise DeviceLimitError(primitive, f"a storage binding of {dev.binding_limit} bytes is too small "
                                   f"to match brackets in chunks")
        self.M, self.unit = M, unit
        self.es = 1 if mode == "u8" else 4
        self.ext = GpuArray.empty((M,), np.uint8 if mode == "u8" else np.uint32, dev)
        self.info = dev.alloc(16)
        self.stack = dev.alloc(4 * n)
        self.defs = {f"MODE_{mode.upper()}": True}

    @functools.cached_property
    def ext_link(self) -> GpuArray:
        """The extended run's links."""
        return GpuArray.empty((self.M,), np.int32, self.dev)

    @functools.cached_property
    def ext_depth(self) -> GpuArray:
        """The extended run's depths (as ``ext_link``)."""
        return GpuArray.empty((self.M,), np.int32, self.dev)

    def kernel(self, stage: str, **defs):
        return self.dev.kernel("stack/chunk.wgsl", defines=dict(self.defs, **{stage: True}, **defs))

    def sub(self, buf, slot: int, item: int, count: int):
        """A binding of ``buf`` from slot ``slot`` (aligned down) for ``count`` items; (binding, offset)."""
        align = self.dev.storage_align
        lo = slot * item // align * align
        size = min(buf.size - lo, _round_up(slot * item - lo + count * item, 4))
        return Binding(getattr(buf, "buffer", buf), lo, size), (slot * item - lo) // item

    @staticmethod
    def scratch(a: GpuArray, m: int) -> GpuArray:
        """The first ``m`` elements of a scratch array, bound as its whole block: the kernels may write
        the last 16-byte word whole, which a view (refused as an output there) would not allow."""
        return GpuArray(a.device, a.buffer, (m,) + a.shape[1:], a.dtype)

    def run(self, g: GpuArray, record_run, outputs: dict, clip: tuple | None = None) -> tuple[int, int]:
        """Process every chunk: ``record_run(b, ext kinds)`` records the in-binding run on the
        extended input (into ``ext_link`` / ``ext_depth`` / ``info``) and returns the batch to
        continue in; ``outputs`` maps "link" (and "depth") to the global GpuArrays; ``clip`` is
        (boxes, ext boxes, ext results, carried boxes buffer) for clip boxes, whose results
        ``record_run`` writes and this copies out. Returns (unmatched closes, unclosed opens)."""
        dev, n, M, unit, es = self.dev, self.n, self.M, self.unit, self.es
        b = dev.batch()
        cleared = 0  # stack slots below this were cleared (PUSH's atomicMax needs entries below base)
        rects = clip[3] if clip is not None else None
        if rects is not None:
            k_prefix = self.kernel("PREFIX", BOXES=True)
            k_rects = self.kernel("RECTS")
        else:
            k_prefix = self.kernel("PREFIX")
        k_fix = self.kernel("FIXUP", DEPTH="depth" in outputs)
        k_push = self.kernel("PUSH")
        base = s = unmatched = 0
        while base < n:
            c = _chunk_plan(n, base, s, M, unit)
            t = min(s, c)
            T = _round_up(t, 4)
            p = T - t
            m = T + c
            slot0 = s - t
            if slot0 + m > cleared:  # slots PUSH may reach, never written yet
                top = min(n, slot0 + m)
                b.clear(self.stack, 4 * cleared, 4 * (top - cleared))
                cleared = top
            lo_slot = slot0 - 1 if s > t else slot0
            st_bind, st_off = self.sub(self.stack, lo_slot, 4, slot0 - lo_slot + M)
            s_off = st_off + slot0 - lo_slot
            pr = {"count": 0, "prefix": T, "pad": p, "s_off": s_off, "r_off": 0, "below": int(s > t),
                  "depth_add": slot0, "base": base, "n_groups": 0}
            if rects is not None:
                r_bind, r_off = self.sub(rects, slot0, 16, M)
                pr["r_off"] = r_off
            if T:
                cnt = T // 4 if self.mode == "u8" else T
                kw = {"rects": r_bind, "ext_boxes": clip[1]} if rects is not None else {}
                groups = -(-cnt // 256)
                b.dispatch(k_prefix, groups, params=dict(pr, count=cnt, n_groups=groups), ext=self.ext, **kw)
            b.copy(g.buffer, g.byte_offset + base * es, self.ext.buffer, T * es, _round_up(c * es, 4))
            if clip is not None:
                b.copy(clip[0].buffer, clip[0].byte_offset + 16 * base, clip[1].buffer, 16 * T, 16 * c)
            g_ext = GpuArray(dev, self.ext.buffer, (m,), self.ext.dtype)
            out = {k: Binding(a.buffer, a.byte_offset + 4 * base, _round_up(4 * c, 4))
                   for k, a in outputs.items() if k in ("link", "depth")}
            b = record_run(b, g_ext)
            groups = -(-c // 256)
            fix = {"ext_link": self.ext_link, "stack": st_bind, "link": out["link"]}
            if "depth" in outputs:
                fix.update(ext_depth=self.ext_depth, depth=out["depth"])
            b.dispatch(k_fix, groups, params=dict(pr, count=c, n_groups=groups), **fix)
            blocks = -(-c // 4096)  # PUSH: 16 elements per invocation
            b.dispatch(k_push, blocks, params=dict(pr, count=c, n_groups=blocks), ext=self.ext,
                       ext_depth=self.ext_depth, info=self.info, stack=st_bind)
            if rects is not None:
                g2 = -(-m // 256)
                b.dispatch(k_rects, g2, params=dict(pr, count=m, n_groups=g2), stack=st_bind, info=self.info,
                           ext_out=clip[2], rects=r_bind)
                b.copy(clip[2].buffer, 16 * T, outputs["out"].buffer, outputs["out"].byte_offset + 16 * base, 16 * c)
            rb = b.readback((self.info, 0, 8))
            b.submit()
            u, f = (int(v) for v in rb.numpy(np.uint32)[:2])
            unmatched += u - p
            s = slot0 + f
            base += c
            b = dev.batch()
        return unmatched, s


class _BracketChunks:
    """Bracket matching past one storage binding, recorded in one batch with no readback: chunks of
    the run capacity in order, each matched by the multi-pass kernels bound to its range of the
    input and of the outputs (views, no copies), entered with the stack the earlier chunks left
    (``_record_match``'s ``carry``). The carried stack lives on the GPU as per-chunk segments:
    chunk k's leaf stores the opens it leaves unclosed at their global depth minus its lowest
    height, in its own range of ``segments``; before chunk k's leaf, one small GATHER per earlier
    chunk (``wgsl/stack/carry.wgsl``, indirect, on the grid chunk k's TOP sized) copies the slots
    chunk k may read (from its lowest height minus 1 up to its start size: at most its length plus
    1) into ``carried``. The sizes (stack sizes, lowest heights, unmatched closes) stay on the GPU
    in ``state`` (spine.wgsl CARRY); every buffer is sized from the host-known chunk lengths."""

    def __init__(self, dev: Device, n: int, mode: str):
        M, unit = _capacity(dev, "multi_pass", 0)
        es = 1 if mode == "u8" else 4
        step = int(np.lcm(unit, max(1, dev.storage_align // es)))  # chunks bound in place (input, outputs)
        M = M // step * step
        if M < 4 * step:
            raise DeviceLimitError("bracket_match", f"a storage binding of {dev.binding_limit} bytes is too small "
                                   f"to match brackets in chunks")
        self.dev, self.n, self.mode, self.M = dev, n, mode, int(M)
        self.bases = list(range(0, n, self.M))

    def record(self, b, g: GpuArray, link: GpuArray, depth: GpuArray, info) -> None:
        """Record every chunk into ``b``; ``info`` receives (unmatched closes, unclosed opens)."""
        dev, n, M, bases = self.dev, self.n, self.M, self.bases
        K = len(bases)
        # per chunk: (unmatched closes before it, stack size before it, its lowest height, 0); after
        # them the grid of each chunk's gathers (written by its TOP)
        state = dev.alloc(16 * (2 * K + 1))
        b.clear(state, 0, 16)
        carried = dev.alloc(4 * (M + 1))
        segments = dev.alloc(4 * max(4, bases[-1]))  # chunk j: [base_j, base_j + M) (not the last)
        k_gather = dev.kernel("stack/carry.wgsl")
        for k, base in enumerate(bases):
            c = min(M, n - base)

            def gather(b, k=k):
                for j in range(k):  # the slots chunk j still holds, for chunk k
                    b.dispatch_indirect(k_gather, state, 16 * (K + 1 + k), params={"k": k, "j": j}, carry=state,
                                        segment=Binding(segments, 4 * bases[j], 4 * M), carried=carried)

            last = k == K - 1
            carry = {"k": k, "gather_at": K + 1 + k, "state": state, "gather": gather, "base": base,
                     "push": int(not last), "carried": carried,
                     "segment": Binding(segments, 4 * base, 4 * M) if not last else dev.alloc(16)}
            _record_match(b, g[base:base + c], self.mode, link[base:base + c], depth[base:base + c], None,
                          "multi_pass", carry)
        b.copy(state, 16 * K, info, 0, 8)


@takes_device
def bracket_match(is_open, return_info: bool = False, out=None, *, method: str = "multi_pass"):
    """Match brackets: each element's parent/matching open and its nesting depth.

    Parameters
    ----------
    is_open : numpy.ndarray or GpuArray, 1-D
        bool, uint8, uint32 or int32; nonzero = open bracket, zero = close bracket.
    return_info : bool
        Also return a :class:`BracketInfo` with the number of unmatched closes and of opens left
        unclosed (the indices of those opens: :func:`unclosed_opens`).

    Returns
    -------
    link : int32 array
        For an open, the index of its parent open (-1 at top level); for a close, the index of its
        matching open (-1 when unmatched: a close on an empty stack, which changes nothing).
    depth : int32 array
        ``min(B(i), B(i+1))`` with ``B(i)`` the stack size before ``i``: for an open the number of
        opens enclosing it; for a matched close the depth of its open; 0 for an unmatched close.
    info : BracketInfo, only when ``return_info``
    out : (GpuArray, GpuArray), optional
        int32 GpuArrays of shape (N,) to receive link and depth (GpuArray input only).
    method : {"multi_pass", "single_pass"}
        Six passes in which no workgroup waits on another (default, the faster on an H100), or the
        single pass (decoupled lookback and fallback, owner walks), with the multi-pass method as
        its repair. Past one storage binding the chunks run the multi-pass method.

    numpy in gives numpy out; GpuArray in gives GpuArrays out.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> link, depth = pp.bracket_match(np.array([1, 1, 0, 1, 0, 0, 0], dtype=bool))
    >>> link
    array([-1,  0,  1,  0,  3,  0, -1], dtype=int32)
    >>> depth
    array([0, 1, 1, 1, 1, 0, 0], dtype=int32)
    """
    if not isinstance(is_open, GpuArray) and np.asarray(is_open).dtype.kind in "biu":
        is_open = _dt.mask_carrier(is_open, "bracket_match")  # any integer dtype: nonzero opens
    g, host = as_input(is_open, "bracket_match", dtypes=(np.uint8, np.uint32, np.int32), ndims=(1,))
    dev = g.device
    n = g.size
    _check_method(method, "bracket_match")
    _check_count(dev, n, "bracket_match", method)
    if out is not None:
        if host is not None or len(out) != 2 or not all(
                isinstance(o, GpuArray) and o.shape == (n,) and o.dtype == np.int32 for o in out):
            raise InputError("bracket_match", "out must be two int32 GpuArrays of the input's shape "
                             "(for GpuArray input)")
        link, depth = out
    else:
        link = GpuArray._new((n,), _I32, dev)
        depth = GpuArray._new((n,), _I32, dev)
    info = GpuArray._new((4,), _U32, dev)
    mode = "u8" if g.dtype == np.uint8 else "u32"
    b = dev.batch()
    if not n:
        b.clear(info)
    elif _fits(dev, n, method):
        _record_match(b, g, mode, link, depth, info, method)
    else:  # chunks, in the same batch (the multi-pass method's kernels)
        _BracketChunks(dev, n, mode).record(b, g, link, depth, info)
    if host is not None:
        res = submit_to_host(b, link, depth, info)
    else:
        b.submit()
        res = (link, depth, info.numpy() if return_info else None)
    if return_info:
        return res[0], res[1], BracketInfo(int(res[2][0]), int(res[2][1]))
    return res[0], res[1]


def unclosed_opens(is_open, link) -> np.ndarray:
    """Indices of the opens that no close matches (the stack left at the end), on the host.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> x = np.array([1, 1, 0, 1], dtype=bool)
    >>> pp.unclosed_opens(x, pp.bracket_match(x)[0])
    array([0, 3])
    """
    is_open = np.asarray(is_open).astype(bool)
    link = np.asarray(link)
    closed = np.zeros(len(is_open), bool)
    m = (~is_open) & (link >= 0)
    closed[link[m]] = True
    return np.flatnonzero(is_open & ~closed)


def bracket_match_reference(kinds) -> tuple[np.ndarray, np.ndarray]:
    """The sequential stack (a Python loop): same outputs as :func:`bracket_match`.

    ``kinds``: bool/ints where (for bool input) True = open, False = close; or, for integer input
    with values in {0, 1, 2}, pass ``kinds=("kind", array)`` to use CLIP_DRAW/BEGIN/END codes.

    Examples
    --------
    >>> import numpy as np
    >>> from pywgpuprims import bracket_match_reference
    >>> link, depth = bracket_match_reference(np.array([1, 1, 0, 0], bool))  # "(())"
    >>> link.tolist(), depth.tolist()
    ([-1, 0, 1, 0], [0, 1, 1, 0])
    """
    if isinstance(kinds, tuple) and kinds[0] == "kind":
        k = np.asarray(kinds[1]).astype(np.int64)
    else:
        k = np.where(np.asarray(kinds) != 0, CLIP_BEGIN, CLIP_END)
    n = len(k)
    link = np.full(n, -1, np.int32)
    depth = np.zeros(n, np.int32)
    stack: list[int] = []
    for i, c in enumerate(k.tolist()):
        if stack:
            link[i] = stack[-1]
        if c == CLIP_BEGIN:
            depth[i] = len(stack)
            stack.append(i)
        elif c == CLIP_END:
            if stack:
                stack.pop()
            depth[i] = len(stack)
        else:
            depth[i] = len(stack)
    return link, depth


_OPS = ("intersect", "union")


def is_empty(bboxes) -> np.ndarray:
    """True where a (..., 4) box (x0, y0, x1, y1) is empty: not (x0 < x1 and y0 < y1) (NaN: empty).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.is_empty(np.array([[0, 0, 1, 1], [0, 0, 0, 0], [2, 0, 1, 1]], dtype=np.float32))
    array([False,  True,  True])
    """
    b = np.asarray(bboxes)
    return ~((b[..., 0] < b[..., 2]) & (b[..., 1] < b[..., 3]))


def _rect_op(a: tuple, b: tuple, union: bool) -> tuple:
    """op on two boxes as tuples of float32 values (exact: min/max only)."""
    if union:
        if not (a[0] < a[2] and a[1] < a[3]):
            return b
        if not (b[0] < b[2] and b[1] < b[3]):
            return a
        return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
    r = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    return r if (r[0] < r[2] and r[1] < r[3]) else (0.0, 0.0, 0.0, 0.0)


def clip_bboxes_reference(kinds, bboxes, viewport, op: str = "intersect") -> np.ndarray:
    """The sequential stack on the CPU (a Python loop, about 1 us per element): same semantics and
    output as :func:`clip_bboxes`, bit for bit.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> k = [pp.CLIP_BEGIN, pp.CLIP_DRAW, pp.CLIP_END]
    >>> bb = np.array([[0, 0, 10, 10], [5, 5, 20, 20], [0, 0, 0, 0]], dtype=np.float32)
    >>> pp.clip_bboxes_reference(k, bb, (0, 0, 8, 100))
    array([[ 0.,  0.,  8., 10.],
           [ 5.,  5.,  8., 10.],
           [ 0.,  0.,  8., 10.]], dtype=float32)
    """
    if op not in _OPS:
        raise InputError("clip_bboxes_reference", f"op {op!r}: expected one of {_OPS}")
    union = op == "union"
    kinds = np.asarray(kinds).tolist()
    bb = np.asarray(bboxes, dtype=np.float32).reshape(-1, 4)
    boxes = [tuple(r) for r in bb.tolist()]  # float32 values held exactly as Python floats
    vp = tuple(np.asarray(viewport, dtype=np.float32).reshape(4).tolist())
    out = []
    stack = [vp]
    for k, box in zip(kinds, boxes, strict=True):
        if k == CLIP_BEGIN:
            v = _rect_op(box, stack[-1], union)
            stack.append(v)
        elif k == CLIP_END and len(stack) > 1:
            v = stack.pop()
        else:
            v = _rect_op(box, stack[-1], union)
        out.append(v)
    res = np.array(out, dtype=np.float32).reshape(-1, 4)
    res[is_empty(res)] = 0
    return res


@takes_device
def clip_bboxes(kinds, bboxes, viewport, op: str = "intersect", return_links: bool = False, *,
                method: str = "multi_pass"):
    """Bounding boxes through a stack of clips (or blend groups): GPU passes, any depth, no readback.

    The stack starts as ``[viewport]``. A begin-clip pushes ``op(its bbox, top)``; an end-clip pops;
    every element's output is computed as follows:

    - draw (``CLIP_DRAW``): ``op(its bbox, top)``;
    - begin-clip (``CLIP_BEGIN``): the value it pushes, ``op(its bbox, top)``;
    - end-clip (``CLIP_END``): the value its begin-clip pushed (the clip it closes intersected with
      all enclosing clips: the area its composite touches); its own bbox is ignored. An unmatched
      end-clip (empty clip stack) pops nothing and gets ``op(its bbox, viewport)``, like a draw.

    Begin-clips left open simply stay on the stack to the end (count them with
    :func:`bracket_match`'s ``return_info`` on ``kinds == CLIP_BEGIN``).

    Parameters
    ----------
    kinds : array of N ints (uint8, int32 or uint32)
        ``CLIP_DRAW`` (0), ``CLIP_BEGIN`` (1) or ``CLIP_END`` (2). A GpuArray must be uint32 or
        int32 (other values there count as draws; numpy input is checked).
    bboxes : float32 array (N, 4) of (x0, y0, x1, y1)
    viewport : 4 numbers (x0, y0, x1, y1)
    op : {"intersect", "union"}
        "intersect" for clips; "union" for blend groups (then pass an empty viewport such as
        (0, 0, 0, 0) to start from nothing).
    return_links : bool
        Also return the stack links (``link`` of :func:`bracket_match` with draws: each element's
        enclosing begin-clip, or an end-clip's own begin-clip; -1 at top level).
    method : {"multi_pass", "single_pass"}
        How the links are found (see :func:`bracket_match`).

    Returns
    -------
    float32 array (N, 4) (numpy in, numpy out; GpuArray in, GpuArray out). A box is empty when not
    (x0 < x1 and y0 < y1) (see :func:`is_empty`); empty results are written as (0, 0, 0, 0).
    Results are exact (min/max only), equal to :func:`clip_bboxes_reference` bit for bit.

    Notes
    -----
    Links come from :func:`bracket_match` on the kinds (draws included). Then, in tiles of 512
    elements, with no readback: each tile combines the boxes of the begin-clips it leaves open (a
    chain) and finds their anchor (the open below them); pointer jumping over the tiles
    (``ceil(log2(tiles))`` small passes) gives every tile its anchor's pushed box; a last pass
    resolves each element's chain within its tile in workgroup memory (``wgsl/stack/clip.wgsl``).
    Past the largest storage binding (16 bytes a box) the elements go in chunks, the open
    begin-clips and their boxes carried from chunk to chunk.
    Boxes with NaN coordinates give unspecified results (GPU min/max with NaN).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> k = np.array([pp.CLIP_BEGIN, pp.CLIP_DRAW, pp.CLIP_END, pp.CLIP_DRAW], dtype=np.uint32)
    >>> bb = np.array([[0, 0, 10, 10], [5, 5, 20, 20], [0, 0, 0, 0], [5, 5, 20, 20]], dtype=np.float32)
    >>> pp.clip_bboxes(k, bb, (0, 0, 100, 100))
    array([[ 0.,  0., 10., 10.],
           [ 5.,  5., 10., 10.],
           [ 0.,  0., 10., 10.],
           [ 5.,  5., 20., 20.]], dtype=float32)
    """
    if op not in _OPS:
        raise InputError("clip_bboxes", f"op {op!r}: expected one of {_OPS}")
    gk_in = kinds
    if not isinstance(kinds, GpuArray):
        kh = np.asarray(kinds)
        if kh.ndim != 1:
            raise InputError("clip_bboxes", f"kinds must be 1-D, got shape {kh.shape}")
        if kh.dtype.kind not in "uib":
            raise InputError("clip_bboxes", f"kinds must be integers, got {kh.dtype}")
        if kh.size and (kh.min() < 0 or kh.max() > 2):
            raise InputError("clip_bboxes", "kinds must be CLIP_DRAW (0), CLIP_BEGIN (1) or CLIP_END (2)")
        gk_in = kh.astype(np.uint32)
    gk, _ = as_input(gk_in, "clip_bboxes", dtypes=(np.uint32, np.int32), ndims=(1,))
    gb, bhost = as_input(bboxes, "clip_bboxes", dtypes=(np.float32,), ndims=(2,))
    n = gk.size
    if gb.shape != (n, 4):
        raise InputError("clip_bboxes", f"bboxes must have shape ({n}, 4), got {gb.shape}")
    vp = np.asarray(viewport, dtype=np.float64).reshape(-1)
    if vp.size != 4:
        raise InputError("clip_bboxes", f"viewport must be 4 numbers (x0, y0, x1, y1), got {vp.size}")
    dev = gk.device
    _check_method(method, "clip_bboxes")
    _check_count(dev, n, "clip_bboxes", method)
    out = GpuArray.empty((n, 4), np.float32, dev)
    link = GpuArray.empty((n,), np.int32, dev)
    union = op == "union"
    if n and _fits(dev, n, method, 16):
        _record_clip(dev.batch(), gk, gb, vp, union, out, link, None, dev.alloc(16), method).submit()
    elif n:  # chunks, the carried opens with their boxes
        ch = _Chunks(dev, n, "kind", method, "clip_bboxes", 16)
        M = ch.M
        ext_boxes = GpuArray.empty((M, 4), np.float32, dev)
        ext_out = GpuArray.empty((M, 4), np.float32, dev)

        def run(b, g_ext):
            m = g_ext.size
            return _record_clip(b, g_ext, ch.scratch(ext_boxes, m), vp, union, ch.scratch(ext_out, m),
                                ch.scratch(ch.ext_link, m), ch.scratch(ch.ext_depth, m), ch.info, method)

        ch.run(gk, run, {"link": link, "out": out}, (gb, ext_boxes, ext_out, dev.alloc(16 * n)))
    res = out if bhost is None else out.numpy()
    if return_links:
        return res, (link if bhost is None else link.numpy())
    return res


def _record_clip(b, gk: GpuArray, gb: GpuArray, vp, union: bool, out: GpuArray, link: GpuArray,
                 depth: GpuArray | None, info, method: str):
    """Record clip boxes of ``gk`` / ``gb`` within one binding into ``out`` (and ``link``, ``depth``
    unless None, ``info`` as bracket matching gives them), with no readback: bracket matching,
    then :class:`_ClipPasses`. Returns ``b``."""
    _record_match(b, gk, "kind", link, depth, info, method)
    passes = _ClipPasses(gk, gb, vp, union, out, link)
    passes.tile(b)
    passes.jump(b)
    passes.leaf(b)
    return b


class _ClipPasses:
    """The box passes after bracket matching (``clip.wgsl``), in this order: ``tile`` (tiles of
    CLIP_TILE elements find the opens they leave unclosed, their running boxes and their anchor),
    ``jump`` (INIT and ceil(log2(tiles)) rounds of pointer jumping over the tiles give each tile
    its anchor's box), ``leaf`` (every element's chain within its tile, in workgroup memory)."""

    def __init__(self, gk: GpuArray, gb: GpuArray, vp, union: bool, out: GpuArray, link: GpuArray):
        dev = gk.device
        n = gk.size
        self.gk, self.gb, self.out, self.link = gk, gb, out, link
        self.tiles = tiles = -(-n // CLIP_TILE)
        defs = {"WG": CLIP_WG, "EPT": CLIP_TILE // CLIP_WG, "LOG_T": CLIP_TILE.bit_length() - 1, "UNION": union}
        self.k = {st: dev.kernel("stack/clip.wgsl", defines=dict(defs, **{st: True}, TILE_PASS=st in ("INIT", "JUMP")))
                  for st in ("TILE", "INIT", "JUMP", "LEAF")}
        self.rl = GpuArray.empty((n, 4), np.float32, dev)
        self.anchor = dev.alloc(4 * tiles)
        self.acc = [dev.alloc(16 * tiles) for _ in range(2)]
        self.nxt = [dev.alloc(4 * tiles) for _ in range(2)]
        self.rounds = max(0, tiles - 1).bit_length()
        self.pr = {"n": n, "n_tiles": tiles, "n_groups": tiles, "vx0": vp[0], "vy0": vp[1], "vx1": vp[2],
                   "vy1": vp[3]}

    def tile(self, b) -> None:
        b.dispatch(self.k["TILE"], self.tiles, params=self.pr, kinds=self.gk, link=self.link, bboxes=self.gb,
                   rl=self.rl, anchor=self.anchor)

    def jump(self, b) -> None:
        groups = -(-self.tiles // 256)
        small = dict(self.pr, n_groups=groups)
        acc, nxt = self.acc, self.nxt
        b.dispatch(self.k["INIT"], groups, params=small, anchor=self.anchor, rl=self.rl, acc_out=acc[0],
                   next_out=nxt[0])
        for r in range(self.rounds):
            b.dispatch(self.k["JUMP"], groups, params=small, acc_in=acc[r % 2], next_in=nxt[r % 2],
                       acc_out=acc[1 - r % 2], next_out=nxt[1 - r % 2])

    def leaf(self, b) -> None:
        b.dispatch(self.k["LEAF"], self.tiles, params=self.pr, kinds=self.gk, link=self.link, bboxes=self.gb,
                   rl=self.rl, acc=self.acc[self.rounds % 2], output=self.out)


def _fast_reference(is_open: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised equivalent of :func:`bracket_match_reference` (O(n log n) numpy), for the bench's check.

    The link of ``i`` is the last open ``k < i`` with ``B(k) = B(i) - 1``: found by a search in the
    opens sorted by (B, index).
    """
    o = np.asarray(is_open) != 0
    n = len(o)
    s = np.concatenate([[0], np.cumsum(np.where(o, 1, -1), dtype=np.int64)])
    B = s - np.minimum(np.minimum.accumulate(s), 0)  # clamped walk: B[i] = stack size before i
    before, after = B[:-1], B[1:]
    opens = np.flatnonzero(o)
    keys = before[o] * (n + 1) + opens
    order = np.argsort(keys, kind="stable")
    keys, opens = keys[order], opens[order]
    q = (before - 1) * (n + 1) + np.arange(n)
    pos = np.searchsorted(keys, q) - 1
    cand = opens[np.maximum(pos, 0)] if keys.size else np.zeros(n, np.int64)
    link = np.where((before > 0) & (pos >= 0), cand, -1).astype(np.int32)
    return link, np.minimum(before, after).astype(np.int32)
