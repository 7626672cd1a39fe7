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

Algorithm (``wgsl/stack/``), three dispatches, no inter-workgroup waiting at all:

1. ``bracket.wgsl`` REDUCE: each partition of ``P = 16 * WG`` elements (4096 by default) computes
   its bicyclic summary (closes it pops from outside, opens it leaves open) and scatters the global
   indices of the opens it leaves open into a scratch list, slot = height above its minimum.
2. ``spine.wgsl``: one workgroup scans the summaries into the stack size at each partition start
   and each partition's minimum stack size, and builds a min segment tree over those minima.
3. ``bracket.wgsl`` LEAF: each partition recomputes ``B`` for its elements and answers
   ``link[i]`` = nearest ``k < i`` with ``B(k) < B(i)`` (which is the open at height ``B(i)``):
   within the invocation's 16 elements (registers), else through a min tree over the invocations'
   minima in workgroup memory, else from a slice of the incoming stack (heights ``max(1, min B)``
   to ``B(start)``, at most ``P + 1`` entries) that the workgroup materialises first through the
   global tree (descending heights, owners found by tree descent, O(log n) each).

Depth is unbounded: nothing is capped at a partition's size; every loop has a constant bound
(largest: 17 slice entries per invocation; tree walks <= 40 steps) far under lavapipe's 65,535.
Because no workgroup ever waits on another, no decoupled lookback (and so no fallback) is needed;
the price is reading the input twice.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._array import GpuArray, as_input
from ._bench import BenchContext, benchmark
from ._device import Binding, Device
from ._errors import DeviceLimitError, InputError

__all__ = ["bracket_match", "bracket_match_reference", "clip_bboxes", "clip_bboxes_reference", "is_empty",
           "BracketInfo", "unclosed_opens", "CLIP_DRAW", "CLIP_BEGIN", "CLIP_END"]

CLIP_DRAW = 0
CLIP_BEGIN = 1
CLIP_END = 2

WG = 256
EPT = 16
SPINE_WG = 256


class BracketInfo(NamedTuple):
    """Counts of unbalanced brackets: closes with no open to match, opens never closed."""

    unmatched_closes: int
    unclosed_opens: int


def _wg(dev: Device) -> int:
    return int(dev.options.get("stack_wg", WG))


def _encode_match(b, g: GpuArray, mode: str, link: GpuArray, depth: GpuArray, info) -> None:
    """Record bracket matching of ``g`` (mode "u8", "u32" or "kind") into ``link``/``depth``."""
    dev = g.device
    n = g.size
    wg = _wg(dev)
    P = wg * EPT
    n_parts = -(-n // P)
    tree_size = 1 << max(0, (n_parts - 1).bit_length())
    defs = {"WG": wg, f"MODE_{mode.upper()}": True}
    k_red = dev.kernel("stack/bracket.wgsl", defines=dict(defs, REDUCE=True))
    k_leaf = dev.kernel("stack/bracket.wgsl", defines=dict(defs, LEAF=True))
    k_spine = dev.kernel("stack/spine.wgsl")
    part_bic = dev.scratch(8 * n_parts)
    part_start = dev.scratch(4 * n_parts)
    opens = dev.scratch(4 * n_parts * P)
    tree = dev.scratch(8 * tree_size)
    params = {"n": n, "n_parts": n_parts, "n_groups": n_parts, "tree_size": tree_size}
    b.dispatch(k_red, n_parts, params=params, input=g, part_bic=part_bic, opens_out=opens)
    b.dispatch(k_spine, 1, params={"n_parts": n_parts, "chunk": -(-n_parts // SPINE_WG), "tree_size": tree_size,
                                   "pad": 0}, part_bic=part_bic, part_start=part_start, tree=tree, info=info)
    b.dispatch(k_leaf, n_parts, params=params, input=g, part_start=part_start, opens_out=opens, tree=tree,
               link=link, depth=depth)
    for buf in (part_bic, part_start, opens, tree):
        dev.release(buf)


def _check_size(dev: Device, n: int, primitive: str) -> None:
    if n >= 2**31 - 2**16:
        raise InputError(primitive, f"{n} elements: indices must fit int32")
    P = _wg(dev) * EPT
    if 4 * (-(-n // P)) * P > dev.max_binding:
        raise DeviceLimitError(primitive, f"{n} elements need {4 * n} byte bindings; the device's largest "
                               f"storage binding is {dev.max_binding} bytes")


def bracket_match(is_open, return_info: bool = False):
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
    g, host = as_input(is_open, "bracket_match", dtypes=(np.uint8, np.uint32, np.int32), ndims=(1,))
    dev = g.device
    n = g.size
    _check_size(dev, n, "bracket_match")
    link = GpuArray.empty((n,), np.int32, dev)
    depth = GpuArray.empty((n,), np.int32, dev)
    info = dev.scratch(16)
    if n:
        b = dev.batch()
        _encode_match(b, g, "u8" if g.dtype == np.uint8 else "u32", link, depth, info)
        b.submit()
    res = (link, depth) if host is None else (link.numpy(), depth.numpy())
    if return_info:
        words = np.frombuffer(dev.read(info, 0, 8), np.uint32) if n else np.zeros(2, np.uint32)
        res = (*res, BracketInfo(int(words[0]), int(words[1])))
    dev.release(info)
    return res


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


# ------------------------------------------------------------------------- benchmarks
def _bench_entry(ctx: BenchContext, n: int) -> list[dict]:
    dev = ctx.dev
    rows = []
    P = _wg(dev) * EPT
    _ = P
    cases = {}
    rng = ctx.rng
    cases["random"] = (rng.random(n) < 0.5)
    d = min(1 << 20, n // 2)
    pattern = np.concatenate([np.ones(d, bool), np.zeros(d, bool)])
    cases["deep 2^20"] = np.resize(pattern, n)
    cuda = {}
    for name, x in cases.items():
        g = GpuArray.empty((n,), np.uint8, dev)
        dev.write(g.buffer, np.ascontiguousarray(x.view(np.uint8)).tobytes() + b"\0" * (-n % 4))
        link = GpuArray.empty((n,), np.int32, dev)
        depth = GpuArray.empty((n,), np.int32, dev)
        info = dev.scratch(16)

        def run(i, g=g, link=link, depth=depth, info=info):
            b = dev.batch()
            _encode_match(b, g, "u8", link, depth, info)
            b.submit()

        ns = ctx.gpu_ns(run)
        dev.release(info)
        cuda_ns = None
        if ctx.torch and name not in cuda:
            t = ctx.torch
            xt = t.from_numpy(np.ascontiguousarray(x)).to("cuda")

            def torch_match(xt=xt):
                delta = xt.to(t.int32) * 2 - 1
                after = t.cumsum(delta, 0, dtype=t.int32)
                lvl = t.where(xt, after, after + 1)  # open: depth after; close: depth before
                _, order = t.sort(lvl, stable=True)
                return order

            cuda_ns = ctx.cuda_ns(torch_match)
            del xt
        rows.append(ctx.row("bracket_match", name, n, ns, bytes_moved=9 * n, baseline_ns=ctx.copy_ns(9 * n // 2),
                            cuda_ns=cuda_ns, cuda_name="torch cumsum + stable sort by depth"))
        del g, link, depth
    return rows


_bench_entry.default_sizes = [1 << 20, 1 << 24, 1 << 28]
benchmark("bracket_match")(_bench_entry)
