"""A/B timing of ``rle_encode`` and ``compact`` (issue 4) under ``device().options`` sets, in one process.

    python scripts/profile/rle_ab.py LOG2N ROUNDS OPTS [OPTS ...]

OPTS is a JSON object of options, e.g. ``'{}' '{"rle_max_self": 0}'``. Inputs are the benchmark's
2^LOG2N int32 (runs of ~16, random values 0..9; half of them kept for ``compact``). Each option set is
checked once against numpy, then every round times each set in turn (median of 15 GPU timings after
the clock is raised), so drift of the clock falls on all sets alike.
"""

from __future__ import annotations

import json
import sys

import numpy as np

import pywgpuprims as pp
from pywgpuprims import rle
from pywgpuprims._array import GpuArray, asarray
from pywgpuprims._bench import BenchContext


def main(log2n: int, rounds: int, variants: list[dict]) -> None:
    dev = pp.device()
    n = 1 << log2n
    ctx = BenchContext(dev, repeats=15, cpu=False, cuda=False)
    cases = []
    for runs in (True, False):
        x = rle._bench_input(ctx, n, runs)
        res = rle.RunLengths(GpuArray.empty((n,), np.int32, dev), GpuArray.empty((n,), np.uint32, dev),
                             rle._count_view(GpuArray.empty((16,), np.uint32, dev)), None, n)
        cases.append(("runs~16" if runs else "random", x, asarray(x, dev=dev), res))
    mask = ctx.rng.random(n) < 0.5
    gmask = asarray(mask.astype(np.uint8), dev=dev)
    x0, g0 = cases[0][1], cases[0][2]
    for v in variants:
        with dev.using(**v):
            for name, x, _, _ in cases:
                vals, counts = pp.rle_encode(x)
                want_v, want_c = rle._numpy_rle(x)
                ok = np.array_equal(vals, want_v) and np.array_equal(counts, want_c)
                print(f"{json.dumps(v)} {name} ok={ok}", flush=True)
            print(f"{json.dumps(v)} compact ok={np.array_equal(pp.compact(x0, mask), x0[mask])}", flush=True)
    rates: dict[tuple[int, str], list[float]] = {}
    for _ in range(rounds):
        for vi, v in enumerate(variants):
            with dev.using(**v):
                for name, _, g, res in cases:
                    ns = ctx.gpu_ns(lambda i, g=g, res=res: rle._run(
                        dev, lambda b, s: rle._record_rle(b, g, res, "fused", s)))
                    rates.setdefault((vi, name), []).append(n / ns)
                ns = ctx.gpu_ns(lambda i: pp.compact(g0, gmask))
                rates.setdefault((vi, "compact"), []).append(n / ns)
    for vi, v in enumerate(variants):
        cells = [f"{name} {np.median(rates[(vi, name)]):.1f} ({' '.join(f'{r:.1f}' for r in rates[(vi, name)])})"
                 for name in ("runs~16", "random", "compact")]
        print(f"{json.dumps(v):40s} " + "  ".join(cells))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), [json.loads(a) for a in sys.argv[3:]])
