"""A/B timing of one primitive under sets of test hooks (``device().using``), or across source trees.

    python scripts/profile/ab.py PRIMITIVE LOG2N ROUNDS OPTS [OPTS ...] [--repeats N] [--replays K] [--warm-ms MS]

PRIMITIVE (its cases, the inputs at n = 2^LOG2N):

- ``scan``: inclusive add-scan of n random uint32 (two inputs, alternated).
- ``rle``: ``rle_encode`` (fused) of n int32 in runs of ~16 and random 0..9 (the benchmark's
  inputs), and ``compact`` of the runs input with half kept.
- ``bracket_match`` (or ``stack``): n brackets, random and nesting 2^20 deep (as in the benchmark).
- ``recursive_filter`` (or ``recfilter``): a sqrt(n)^2 float32 image through the overlapped filter,
  order 2 (zero) and Gaussian sigma 16 (reflect); timed by replays (below) unless told otherwise.

OPTS is a JSON object of test hooks (``pywgpuprims._hooks.TestHooks`` fields; older trees: device
options), e.g. ``'{}' '{"scan_max_self": 0}'``; a key ``MODULE.NAME`` sets that module-level name
of ``pywgpuprims.MODULE`` for the set instead (``'{"recfilter.SOME_CONSTANT": [32, 8, 8]}'``; lists
become tuples); a key ``method`` picks bracket_match's method (``'{"method": "single_pass"}'``).
``TREE:OPTS`` (TREE a directory holding ``pywgpuprims/`` and
``wgsl/``: the checkout, or a ``git archive`` of an older commit) runs the set on that tree, in a
process of its own for every round; with any TREE entry, all entries run that way.

Checks: every case is run once with the default options and, where a numpy reference exists (up to
2^26 for brackets), checked against it; then each set's result is compared with the default's
(with TREE entries: with the first entry's), exactly, or for floats by the largest difference
relative to the largest value (``d=``, ok up to 1e-4). Sets with an option whose name holds
``timing_only``, or ``rle_no_lookback``, give wrong results on purpose and are not checked. The
state counters of the scan and of the stack's single pass are printed with each check.

Timing: every round times each set in turn (so drift of the GPU's clock falls on all of them
alike), the median of ``--repeats`` back-to-back GPU timings after the clock is raised; with
``--replays K`` every batch is recorded K times in one submission after about ``--warm-ms`` of
untimed replays and the mean replay counts (``Device.timer``'s ``replays`` / ``warmup_ns``).
Printed: each round's rate and the median, per set and case.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

TIMING_ONLY = ("timing_only", "rle_no_lookback")
METHOD = [None]  # a set's "method" key (bracket_match: "multi_pass" or "single_pass"), not a test hook


@dataclass
class Case:
    name: str
    run: Callable[[int], None]  # one call, i numbers the run (inputs may rotate)
    result: Callable[[], list[np.ndarray]]  # runs it once more and reads the outputs back
    reference: Callable[[], list[np.ndarray]] | None = None  # numpy's answer, where there is one
    elements: int = 0


@dataclass
class Primitive:
    setup: Callable  # (dev, n) -> list[Case]
    repeats: int = 15
    replays: int = 1
    warm_ms: float = 0.0
    unit: str = "G el/s"
    stats: tuple[str, tuple[str, ...]] | None = None  # (option naming the counter buffer, word names)
    stats_when: Callable[[dict], bool] = lambda opts: True


# ------------------------------------------------------------------------------- the primitives
def _scan(dev, n: int) -> list[Case]:
    import pywgpuprims as pp
    from pywgpuprims._array import GpuArray

    rng = np.random.default_rng(5)
    host = [rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(2)]
    inputs = [pp.asarray(h) for h in host]
    out = GpuArray.empty((n,), np.uint32, dev)

    def result():
        pp.scan(inputs[1], out=out)
        return [out.numpy()]

    return [Case("uint32 add", lambda i: pp.scan(inputs[i % 2], out=out), result,
                 lambda: [np.cumsum(host[1], dtype=np.uint32)], n)]


def _rle_input(rng, n: int, runs: bool) -> np.ndarray:
    """The benchmark's inputs (``pywgpuprims/bench/compaction.py``): int32 values 0..9, independent or in
    runs of 1..31 (mean 16)."""
    if not runs:
        return rng.integers(0, 10, n, dtype=np.int32)
    lens = rng.integers(1, 32, n // 15 + 256, dtype=np.int64)
    vals = rng.integers(0, 10, lens.size, dtype=np.int32)
    return np.repeat(vals, lens)[:n]


def _numpy_rle(x: np.ndarray) -> list[np.ndarray]:
    st = np.concatenate([[0], np.flatnonzero(x[1:] != x[:-1]) + 1])
    return [x[st], np.diff(np.append(st, x.size)).astype(np.uint32)]


def _rle(dev, n: int) -> list[Case]:
    import pywgpuprims as pp
    from pywgpuprims import compaction as rle
    from pywgpuprims._array import GpuArray

    rng = np.random.default_rng(12345)  # the benchmark's seed
    cases = []
    xs = {}
    for name, runs in (("runs~16", True), ("random", False)):
        x = xs[name] = _rle_input(rng, n, runs)
        g = pp.asarray(x)
        res = rle.RunLengths(GpuArray.empty((n,), np.int32, dev), GpuArray.empty((n,), np.uint32, dev),
                             rle._count_view(GpuArray.empty((16,), np.uint32, dev)), None, n)

        def run(i, g=g, res=res):
            rle._run(dev, lambda b: rle._record_rle(b, g, res, "fused"))

        def result(run=run, res=res):
            run(0)
            return list(res.numpy())

        cases.append(Case(f"rle_encode {name}", run, result, lambda x=x: _numpy_rle(x), n))
    x0 = xs["runs~16"]
    mask = rng.random(n) < 0.5
    g0, gmask = pp.asarray(x0), pp.asarray(mask.astype(np.uint8))
    cases.append(Case("compact half kept", lambda i: pp.compact(g0, gmask),
                      lambda: [pp.compact(g0, gmask).numpy()], lambda: [x0[mask]], n))
    return cases


def _bracket_match(dev, n: int) -> list[Case]:
    from pywgpuprims._array import GpuArray
    from pywgpuprims.stack import _fast_reference, _record_match

    rng = np.random.default_rng(7)
    d = min(1 << 20, n // 2)
    link = GpuArray.empty((n,), np.int32, dev)
    depth = GpuArray.empty((n,), np.int32, dev)
    info = dev.alloc(16)
    cases = []
    for name, x in (("random", rng.random(n) < 0.5),
                    ("deep 2^20", np.resize(np.concatenate([np.ones(d, bool), np.zeros(d, bool)]), n))):
        g = GpuArray.empty((n,), np.uint8, dev)
        dev.write(g.buffer, x.view(np.uint8).tobytes() + b"\0" * (-n % 4))

        def run(i, g=g):
            b = dev.batch()
            _record_match(b, g, "u8", link, depth, info, *([METHOD[0]] if METHOD[0] else []))
            b.submit()

        def result(run=run):
            if n <= 1 << 24:  # poisoned first, so that an element left unwritten shows
                dev.write(link.buffer, b"\xff" * 4 * n)
            run(0)
            return [link.numpy(), depth.numpy()]

        cases.append(Case(name, run, result, (lambda x=x: list(_fast_reference(x))) if n <= 1 << 26 else None, n))
    return cases


def _recursive_filter(dev, n: int) -> list[Case]:
    import pywgpuprims as pp
    from pywgpuprims import recfilter as rf
    from pywgpuprims._array import GpuArray

    side = int(round(n ** 0.5))
    img = np.random.default_rng(1).standard_normal((side, side)).astype(np.float32)
    g = pp.asarray(img)
    out = GpuArray.empty((side, side), np.float32, dev)
    b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")  # poles 0.6 +- 0.3i
    gb0, ga = rf._gaussian_coefs(16.0)
    gb0, ga, grho = rf._coefs(gb0, ga, "bench")
    cases = []
    for name, passes, mode in ((f"order 2, zero, {side}^2", [(b0, a, rho, True, True)], "zero"),
                               (f"Gaussian 16, reflect, {side}^2", [(gb0, ga, grho, True, True)], "reflect")):
        def run(i, p=passes, m=mode):
            rf._filter_gpu(g, p, (0, 1), m, "block", "bench", out=out)

        def result(run=run):
            run(0)
            return [out.numpy()]

        cases.append(Case(name, run, result, None, side * side))
    return cases


PRIMITIVES = {
    "scan": Primitive(_scan, stats=("scan_stats_buffer", ("", "", "fallbacks", "word3"))),
    "rle": Primitive(_rle, stats=("rle_stats_buffer", ("tickets", "gave_up", "fallbacks", "finished"))),
    "bracket_match": Primitive(_bracket_match, repeats=10,
                               stats=("stack_stats_buffer", ("tickets", "gave_up", "fallbacks", "word3")),
                               stats_when=lambda opts: opts.get("method") == "single_pass"),
    "recursive_filter": Primitive(_recursive_filter, repeats=7, replays=20, warm_ms=20.0, unit="G px/s"),
}
ALIASES = {"stack": "bracket_match", "recfilter": "recursive_filter"}


# ------------------------------------------------------------------------------------ machinery
def gpu_ns(dev, run: Callable[[int], None], repeats: int, replays: int, warm_ms: float) -> float:
    """Median GPU time of ``run(i)`` over ``repeats`` back-to-back runs after the clock is raised;
    with ``replays`` > 1 each batch is replayed that often after about ``warm_ms`` of untimed replays."""
    try:
        from pywgpuprims._timing import raise_gpu_clock
    except ImportError:  # a tree older than pywgpuprims/bench/
        from pywgpuprims._bench import raise_gpu_clock
    raise_gpu_clock(dev)
    if replays <= 1:
        for i in range(3):
            run(i)
        with dev.timer() as t:
            for i in range(repeats):
                run(3 + i)
                t.mark()
    else:
        run(0)
        with dev.timer() as first:  # learns each batch's duration, for warmup_ns
            run(1)
        with dev.timer(replays=replays, warmup_ns=int(warm_ms * 1e6), learned=first.durations) as t:
            for i in range(repeats):
                run(2 + i)
                t.mark()
    return float(np.median(t.laps))


class Settings:
    """A set's device options and module settings (``MODULE.NAME`` keys), applied for a ``with``."""

    def __init__(self, dev, opts: dict, **extra):
        self.dev = dev
        self.method = opts.get("method")
        self.options = {k: v for k, v in opts.items() if "." not in k and k != "method"} | extra
        self.modules = {}
        for key, value in opts.items():
            if "." in key:
                mod, _, name = key.rpartition(".")
                self.modules[(importlib.import_module(f"pywgpuprims.{mod}"), name)] = (
                    tuple(value) if isinstance(value, list) else value)
        self.checked = not any(word in k for k in opts for word in TIMING_ONLY)

    def __enter__(self):
        self.saved = {(m, n): getattr(m, n) for m, n in self.modules}
        for (m, n), v in self.modules.items():
            setattr(m, n, v)
        METHOD[0] = self.method
        self.using = self.dev.using(**self.options)
        self.using.__enter__()
        return self

    def __exit__(self, *exc):
        self.using.__exit__(*exc)
        METHOD[0] = None
        for (m, n), v in self.saved.items():
            setattr(m, n, v)


def compare(got: list[np.ndarray], want: list[np.ndarray]) -> tuple[bool, str]:
    ok, notes = True, []
    for a, b in zip(got, want, strict=True):
        if np.issubdtype(np.asarray(b).dtype, np.floating):
            d = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30)) if a.shape == b.shape else np.inf
            notes.append(f"d={d:.1e}")
            ok = ok and d <= 1e-4
        else:
            ok = ok and a.shape == b.shape and np.array_equal(a, b)
    return ok, " ".join(notes)


def check(dev, prim: Primitive, cases: list[Case], opts: dict, want: dict | None, label: str) -> dict:
    """Run every case once under ``opts``; compare with ``want`` (case name -> outputs) when given, else
    with numpy. Returns the outputs."""
    from pywgpuprims._array import GpuArray

    stats = GpuArray.empty((256,), np.uint32, dev) if prim.stats and prim.stats_when(opts) else None
    got = {}
    with Settings(dev, opts, **({prim.stats[0]: stats.buffer} if stats is not None else {})) as s:
        for c in cases:
            got[c.name] = c.result()
            counts = ""
            if stats is not None:
                words = stats.numpy()[:4]  # the first (or only) chunk's
                counts = " " + " ".join(f"{w}={int(v)}" for w, v in zip(prim.stats[1], words, strict=True) if w)
            if not s.checked:
                print(f"{label} {c.name}: timing only, not checked{counts}", flush=True)
                continue
            against = want[c.name] if want is not None else (c.reference() if c.reference else None)
            if against is None:
                print(f"{label} {c.name}: no reference{counts}", flush=True)
                continue
            ok, note = compare(got[c.name], against)
            what = "against the reference" if want is None else "against the default"
            print(" ".join(w for w in (f"{label} {c.name}: {what} ok={ok}", note, counts.strip()) if w), flush=True)
    return got


def _rate(v: float) -> str:
    return f"{v:.1f}" if v >= 10 else f"{v:.3g}"


def report(prim: Primitive, cases: list[tuple[str, int]], labels: list[str], times: dict) -> None:
    width = max(len(x) for x in labels)
    for name, n in cases:
        print(f"--- {name}: {prim.unit} per round, median (ms)")
        for label in labels:
            t = times[(label, name)]
            each = " ".join(_rate(n / v) for v in t)
            print(f"{label:{width}s}  {each}  median {_rate(n / np.median(t))} ({np.median(t) / 1e6:.3f} ms)")


def in_process(name: str, log2n: int, rounds: int, sets: list[dict], args) -> None:
    import pywgpuprims as pp

    prim = PRIMITIVES[name]
    dev = pp.device()
    print(f"device: {dev.adapter_summary}", flush=True)
    cases = prim.setup(dev, 1 << log2n)
    want = check(dev, prim, cases, {}, None, "default")
    labels = [json.dumps(s) for s in sets]
    for label, s in zip(labels, sets, strict=True):
        check(dev, prim, cases, s, want, label)
    times: dict = {}
    for _ in range(rounds):
        for label, s in zip(labels, sets, strict=True):
            with Settings(dev, s):
                for c in cases:
                    times.setdefault((label, c.name), []).append(
                        gpu_ns(dev, c.run, args.repeats, args.replays, args.warm_ms))
    report(prim, [(c.name, c.elements) for c in cases], labels, times)


def worker(name: str, log2n: int, opts: dict, out_dir: str, repeats: int, replays: int, warm_ms: float) -> None:
    """One TREE entry's round in its own process: outputs saved for the parent's comparison, times printed."""
    import pywgpuprims as pp

    prim = PRIMITIVES[name]
    dev = pp.device()
    cases = prim.setup(dev, 1 << log2n)
    res = {}
    with Settings(dev, opts):
        for i, c in enumerate(cases):
            res[c.name] = [gpu_ns(dev, c.run, repeats, replays, warm_ms), c.elements]
            np.savez(os.path.join(out_dir, f"{i}.npz"), *c.result())
    print(json.dumps(res))


def across_trees(name: str, log2n: int, rounds: int, entries: list[tuple[str, dict, str]], args) -> None:
    root = tempfile.mkdtemp(prefix="ab_")
    try:
        dirs = {label: tempfile.mkdtemp(dir=root) for _, _, label in entries}
        times: dict = {}
        order: list[tuple[str, int]] = []
        for _ in range(rounds):
            for tree, opts, label in entries:
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]))
                cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, str(log2n), json.dumps(opts),
                       dirs[label], str(args.repeats), str(args.replays), str(args.warm_ms)]
                r = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
                if r.returncode:
                    sys.exit(f"{label}: failed\n{r.stderr[-3000:]}")
                res = json.loads(r.stdout.strip().splitlines()[-1])
                order = [(c, n) for c, (_, n) in res.items()]
                for c, (ns, _) in res.items():
                    times.setdefault((label, c), []).append(ns)
        first = entries[0][2]
        for _, opts, label in entries[1:]:
            if any(word in k for k in opts for word in TIMING_ONLY):
                print(f"{label}: timing only, not checked")
                continue
            for i, (c, _) in enumerate(order):
                a = np.load(os.path.join(dirs[first], f"{i}.npz"))
                b = np.load(os.path.join(dirs[label], f"{i}.npz"))
                ok, note = compare([b[k] for k in sorted(b.files)], [a[k] for k in sorted(a.files)])
                print(f"{label} {c}: against {first} ok={ok} {note}".rstrip())
        report(PRIMITIVES[name], order, [e[2] for e in entries], times)
    finally:
        shutil.rmtree(root)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python scripts/profile/ab.py", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("primitive", choices=sorted(PRIMITIVES) + sorted(ALIASES))
    ap.add_argument("log2n", type=int)
    ap.add_argument("rounds", type=int)
    ap.add_argument("sets", nargs="+", metavar="OPTS", help="JSON options, or TREE:JSON")
    ap.add_argument("--repeats", type=int, help="timed runs per measurement (default: per primitive)")
    ap.add_argument("--replays", type=int, help="replays of each batch per timed run (default: per primitive)")
    ap.add_argument("--warm-ms", type=float, help="untimed replays before the timed ones, in ms")
    args = ap.parse_args(argv)
    name = ALIASES.get(args.primitive, args.primitive)
    prim = PRIMITIVES[name]
    args.repeats = args.repeats or prim.repeats
    args.replays = args.replays or prim.replays
    args.warm_ms = prim.warm_ms if args.warm_ms is None else args.warm_ms
    if all(s.lstrip().startswith("{") for s in args.sets):
        in_process(name, args.log2n, args.rounds, [json.loads(s) for s in args.sets], args)
        return
    entries = []
    for s in args.sets:
        tree, _, opts = s.partition(":") if not s.lstrip().startswith("{") else (".", "", s)
        entries.append((os.path.abspath(tree), json.loads(opts) if opts else {}, s))
    across_trees(name, args.log2n, args.rounds, entries, args)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        a = sys.argv[2:]
        worker(a[0], int(a[1]), json.loads(a[2]), a[3], int(a[4]), int(a[5]), float(a[6]))
    else:
        main()
