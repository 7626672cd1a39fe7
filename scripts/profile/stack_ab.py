"""A/B timing of ``bracket_match`` (issue 5) under ``device().options`` sets, in one process.

    python scripts/profile/stack_ab.py LOG2N ROUNDS OPTS [OPTS ...]

OPTS is a JSON object of options, e.g. ``'{}' '{"stack_onepass": true, "stack_chunks": 4}'``. Two
inputs of 2^LOG2N brackets: random, and nesting 2^20 deep (as in the benchmark). The multi-pass
default's result on each input is checked once against the vectorised reference; every option set's
result is then checked against it (timing-only sets, ``stack_timing_only``, are not), with the
single pass's counters (tickets, give-ups, fallbacks). Every round times each set in turn (median of
10 GPU timings after the clock is raised), so drift of the clock falls on all sets alike.
"""

from __future__ import annotations

import json
import sys

import numpy as np

import pywgpuprims as pp
from pywgpuprims._array import GpuArray
from pywgpuprims._bench import median_gpu_ns
from pywgpuprims.stack import _encode_match, _fast_reference


def main(log2n: int, rounds: int, variants: list[dict]) -> None:
    dev = pp.device()
    n = 1 << log2n
    rng = np.random.default_rng(7)
    d = min(1 << 20, n // 2)
    cases = {"random": rng.random(n) < 0.5,
             "deep": np.resize(np.concatenate([np.ones(d, bool), np.zeros(d, bool)]), n)}
    g = GpuArray.empty((n,), np.uint8, dev)
    link = GpuArray.empty((n,), np.int32, dev)
    depth = GpuArray.empty((n,), np.int32, dev)
    stats = GpuArray.empty((4,), np.uint32, dev)
    info = dev.scratch(16)

    def run(_i=0):
        b = dev.batch()
        _encode_match(b, g, "u8", link, depth, info)
        b.submit()

    times: dict[tuple[str, int], list[float]] = {}
    for name, x in cases.items():
        dev.write(g.buffer, x.view(np.uint8).tobytes() + b"\0" * (-n % 4))
        with dev.using(stack_onepass=False):
            run()
        want = (link.numpy(), depth.numpy())
        if n <= 1 << 26:
            ref = _fast_reference(x)
            print(f"{name}: multi-pass default against the reference: "
                  f"{np.array_equal(want[0], ref[0]) and np.array_equal(want[1], ref[1])}", flush=True)
        for v in variants:
            with dev.using(**v, stack_stats_buffer=stats.buffer):
                if n <= 1 << 24:  # poisoned first, so that an element left unwritten shows
                    dev.write(link.buffer, b"\xff" * 4 * n)
                run()
                st = stats.numpy()
                ok = None if v.get("stack_timing_only") else bool(
                    np.array_equal(link.numpy(), want[0]) and np.array_equal(depth.numpy(), want[1]))
            counts = (f" tickets={int(st[0])} gave_up={int(st[1])} fallbacks={int(st[2])} word3={int(st[3])}"
                      if v.get("stack_onepass") else "")
            print(f"{name} {json.dumps(v)}: ok={ok}{counts}", flush=True)
        for _ in range(rounds):
            for vi, v in enumerate(variants):
                with dev.using(**v):
                    times.setdefault((name, vi), []).append(median_gpu_ns(dev, run, 10))
    for name in cases:
        print(f"--- {name}, 2^{log2n}: ms per round, median, G el/s")
        for vi, v in enumerate(variants):
            t = times[(name, vi)]
            each = " ".join(f"{x / 1e6:.3f}" for x in t)
            print(f"{json.dumps(v):70s} {each}  median {np.median(t) / 1e6:.3f} ms = {n / np.median(t):.2f} G el/s")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), [json.loads(a) for a in sys.argv[3:]])
