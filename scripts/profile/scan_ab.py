"""A/B timing of the single-pass scan (issue 3) under ``device().options`` sets, in one process.

    python scripts/profile/scan_ab.py LOG2N ROUNDS OPTS [OPTS ...]

OPTS is a JSON object of options, e.g. ``'{}' '{"scan_max_self": 0}'``. Each option set is checked
once against numpy (inclusive add-scan of 2^LOG2N random uint32; the fallback count from the state
words is printed), then every round times each set in turn (median of 15 GPU timings after the clock
is raised) beside a WGSL copy over the same buffers, so drift of the clock falls on all sets alike.
``scan_no_lookback_timing_only`` gives wrong results and is not checked.
"""

from __future__ import annotations

import json
import sys

import numpy as np

import pywgpuprims as pp
from pywgpuprims._array import GpuArray
from pywgpuprims._bench import copy_pass, median_gpu_ns


def main(log2n: int, rounds: int, variants: list[dict]) -> None:
    dev = pp.device()
    n = 1 << log2n
    rng = np.random.default_rng(5)
    host = [rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(2)]
    inputs = [GpuArray.empty((n,), np.uint32, dev) for _ in range(2)]
    for a, h in zip(inputs, host, strict=True):
        dev.write(a.buffer, h.tobytes())
    out = GpuArray.empty((n,), np.uint32, dev)
    stats = GpuArray.empty((4 * 64,), np.uint32, dev)
    ref = np.cumsum(host[1], dtype=np.uint32)
    for v in variants:
        with dev.using(**v, scan_stats_buffer=stats.buffer):
            pp.scan(inputs[1], out=out)
            ok = None if v.get("scan_no_lookback_timing_only") else bool(np.array_equal(out.numpy(), ref))
            st = stats.numpy()
            print(f"{json.dumps(v)}: ok={ok} fallbacks={int(st[2])} word3={int(st[3])}", flush=True)
    rates: dict[int, list[float]] = {i: [] for i in range(len(variants))}
    copy = []
    for _ in range(rounds):
        copy.append(median_gpu_ns(dev, lambda i: copy_pass(dev, inputs[0], out, n // 4, True), 15))
        for vi, v in enumerate(variants):
            with dev.using(**v):
                rates[vi].append(n / median_gpu_ns(dev, lambda i: pp.scan(inputs[i % 2], out=out), 15))
    print(f"copy {n / np.median(copy):.1f} G el/s")
    for vi, v in enumerate(variants):
        each = " ".join(f"{r:.1f}" for r in rates[vi])
        print(f"{json.dumps(v):60s} {each}  median {np.median(rates[vi]):.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), [json.loads(a) for a in sys.argv[3:]])
