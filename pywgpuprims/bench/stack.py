"""Benchmark entry ``bracket_match`` (``bracket_match`` and ``clip_bboxes``)."""

from __future__ import annotations

import numpy as np

from .._array import GpuArray
from ..stack import EPT, SINGLE_PASS_WG, _fast_reference, _leaf_storage_bytes, _record_match, _wg, clip_bboxes
from ._harness import BenchContext, benchmark


def _torch_match_ns(ctx: BenchContext, x: np.ndarray) -> float | None:
    """The CUDA baseline: depth by cumsum, then a stable sort by depth pairs each open with its close."""
    if not ctx.torch:
        return None
    t = ctx.torch
    xt = t.from_numpy(np.ascontiguousarray(x)).to("cuda")

    def run(xt=xt):
        delta = xt.to(t.int32) * 2 - 1
        after = t.cumsum(delta, 0, dtype=t.int32)
        level = t.where(xt, after, after + 1)  # open: depth after it; close: depth before it
        return t.sort(level, stable=True)[1]

    ns = ctx.cuda_ns(run)
    del xt
    return ns


def _bench_entry(ctx: BenchContext, n: int) -> list[dict]:
    """Rows: random brackets and nesting 2^20 deep (per partition size), then clip_bboxes.

    ``bracket_match`` reads 1 byte per element (twice) and writes 8; the copy baseline copies
    9n/2 bytes (9n bytes moved, as the rows' GB/s count).
    """
    dev = ctx.dev
    rows = []
    rng = ctx.rng
    d = min(1 << 20, n // 2)
    cases = {
        "random": rng.random(n) < 0.5,
        "deep 2^20": np.resize(np.concatenate([np.ones(d, bool), np.zeros(d, bool)]), n),
    }
    copy_ns = ctx.copy_ns(9 * n // 2)
    limit = int(dev.limits.get("max-compute-workgroup-storage-size", 16384))
    multi_wg = _wg(dev, n)
    wgs = list(dict.fromkeys(w for w in (multi_wg, 64, 128) if _leaf_storage_bytes(w) <= limit))
    # (partition workgroup, subgroups, single pass)
    variants = [(w, True, False) for w in wgs]
    if dev.has_subgroups:
        variants.append((wgs[0], False, False))
    variants += [(w, True, True) for w in (SINGLE_PASS_WG, 128) if -(-n // (w * EPT)) <= 1 << 20]
    link = GpuArray.empty((n,), np.int32, dev)
    depth = GpuArray.empty((n,), np.int32, dev)
    g = GpuArray.empty((n,), np.uint8, dev)
    stats = GpuArray.empty((4,), np.uint32, dev)
    for name, x in cases.items():
        dev.write(g.buffer, x.view(np.uint8).tobytes() + b"\0" * (-n % 4))
        cuda_ns = _torch_match_ns(ctx, x)
        want = _fast_reference(x) if n <= 1 << 24 else None
        for wg, sg, one in variants:
            info = dev.alloc(16)

            def run(i, info=info, one=one):
                b = dev.batch()
                _record_match(b, g, "u8", link, depth, info, "single_pass" if one else "multi_pass")
                b.submit()

            with dev.using(stack_wg=wg, stack_subgroups=sg, stack_stats_buffer=stats.buffer if one else None):
                ns = ctx.gpu_ns(run)
            method = "single pass" if one else "multi-pass"
            rows.append(ctx.row("bracket_match", f"{name}, {method}, partition {wg * EPT}"
                                f"{'' if sg else ', no subgroups'}",
                                n, ns, bytes_moved=9 * n, baseline_ns=copy_ns, cuda_ns=cuda_ns,
                                cuda_name="torch cumsum + stable sort by depth"))
            if one:  # the last timed run's counts: predecessors reduced by a successor, give-ups
                st = stats.numpy()
                rows[-1]["fallbacks"] = int(st[2])
                rows[-1]["gave_up"] = int(st[1])
                if st[1]:
                    rows[-1]["variant"] += f", {int(st[1])} invocations gave up (repair ran)"
            if want is not None:  # the last timed run's result against the vectorised reference
                ok = np.array_equal(link.numpy(), want[0]) and np.array_equal(depth.numpy(), want[1])
                rows[-1]["verified"] = ok
                rows[-1]["variant"] += ", checked" if ok else ", WRONG RESULT"
    # clip_bboxes on 1/3 begin, 1/3 end, 1/3 draw (random-walk nesting): the whole call, including
    # its one readback (the maximum depth, which sets the pointer-jumping rounds).
    m = min(n, 1 << 24)
    kinds = rng.choice(np.array([0, 1, 2], np.uint32), m)
    lo = rng.uniform(0, 1000, (m, 2)).astype(np.float32)
    boxes = np.concatenate([lo, lo + rng.uniform(1, 500, (m, 2)).astype(np.float32)], 1)
    gk = GpuArray.empty((m,), np.uint32, dev)
    dev.write(gk.buffer, kinds.tobytes())
    gbx = GpuArray.empty((m, 4), np.float32, dev)
    dev.write(gbx.buffer, boxes.tobytes())
    ns = ctx.gpu_ns(lambda i: clip_bboxes(gk, gbx, (0, 0, 1500, 1500)))
    rows.append(ctx.row("clip_bboxes", "intersect, random 1/3 begin/end/draw", m, ns, bytes_moved=40 * m))
    return rows


_bench_entry.default_sizes = [1 << 20, 1 << 24, 1 << 28]
benchmark("bracket_match")(_bench_entry)
