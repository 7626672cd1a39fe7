"""Benchmark harness: ``python -m pywgpuprims.bench [primitive ...] [--sizes ...] [--json F] [--plot F.png]``.

GPU time comes from timestamp queries (warm-up, then the median of ``--repeats`` runs, inputs
rotated among fresh random sets). Each row is shown beside a WGSL copy (or read-only pass) over
the same bytes in the same run, numpy on the CPU, and torch on CUDA when it is importable.

``python -m pywgpuprims.bench --e2e [args ...]`` runs the end-to-end wall-time benchmark instead
(``pywgpuprims/bench/e2e.py``; ``--e2e --help`` lists its arguments), and
``python -m pywgpuprims.bench --stream [args ...]`` the out-of-core one (``pywgpuprims/bench/stream.py``).
"""

from __future__ import annotations

import argparse
import json
import sys

from .._device import device
from . import compaction, conv, fse, recfilter, sat, scan, scene, stack, yardstick  # noqa: F401  (each registers its entries)
from ._harness import REGISTRY, BenchContext


def _parse_size(s: str) -> int:
    s = s.strip().lower()
    if s.startswith("2^") or s.startswith("2**"):
        return 1 << int(s.split("^")[-1].split("*")[-1])
    return int(float(s))


def _fmt_table(rows: list[dict]) -> str:
    cols = ["primitive", "variant", "n", "gpu_ms", "rate", "unit", "GB/s", "%copy", "%read", "cuda",
            "cuda_rate", "x_cuda", "cpu_rate", "fallbacks"]
    cols = [c for c in cols if any(c in r for r in rows)]

    def cell(v):
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)

    table = [cols] + [[cell(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(cols))]
    lines = ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(names: list[str], sizes: list[int] | None, repeats: int, cpu: bool, progress: bool = True) -> list[dict]:
    dev = device()
    ctx = BenchContext(dev, repeats=repeats, cpu=cpu)
    jobs = [(name, n) for name in names for n in (sizes or REGISTRY[name].default_sizes)]
    try:
        from tqdm import tqdm  # noqa: PLC0415

        it = tqdm(jobs, disable=not progress, file=sys.stderr)
    except ImportError:
        it = jobs
    rows: list[dict] = []
    for name, n in it:
        if hasattr(it, "set_description"):
            it.set_description(f"{name} n={n}")
        elif progress:
            print(f"... {name} n={n}", file=sys.stderr, flush=True)
        rows.extend(REGISTRY[name](ctx, n))
    return rows


def plot(rows: list[dict], path: str) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(8, 5))
    series: dict = {}
    for r in rows:
        series.setdefault((r["primitive"], r["variant"]), []).append((r["n"], r["rate"]))
        if "cuda_rate" in r:
            series.setdefault((r["primitive"], r["cuda"]), []).append((r["n"], r["cuda_rate"]))
    for (prim, var), pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{prim} {var}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n")
    ax.set_ylabel("rate (" + (rows[0]["unit"] if rows else "") + ")")
    ax.set_title(f"pywgpuprims on {device().adapter_summary}")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--e2e" in argv:
        from . import e2e  # noqa: PLC0415

        argv.remove("--e2e")
        return e2e.main(argv)
    if "--stream" in argv:
        from . import stream  # noqa: PLC0415

        argv.remove("--stream")
        return stream.main(argv)
    ap = argparse.ArgumentParser(prog="python -m pywgpuprims.bench", description=__doc__.splitlines()[0])
    ap.add_argument("primitives", nargs="*", help=f"entries to run (default: all): {', '.join(sorted(REGISTRY))}")
    ap.add_argument("--sizes", nargs="+", help="problem sizes, e.g. 2^20 2^24 (default: per entry)")
    ap.add_argument("--repeats", type=int, default=10, help="timed runs per row (median reported)")
    ap.add_argument("--no-cpu", action="store_true", help="skip the numpy CPU baseline")
    ap.add_argument("--json", help="write rows as JSON to this file")
    ap.add_argument("--plot", help="write a PNG plot of rates to this file")
    ap.add_argument("--e2e", action="store_true",
                    help="run the end-to-end wall-time benchmark instead, with the other arguments (--e2e --help)")
    ap.add_argument("--stream", action="store_true",
                    help="run the out-of-core (memmap) benchmark instead, with the other arguments (--stream --help)")
    args = ap.parse_args(argv)
    names = args.primitives or sorted(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        ap.error(f"unknown primitive(s) {unknown}; known: {sorted(REGISTRY)}")
    sizes = [_parse_size(s) for s in args.sizes] if args.sizes else None
    print(f"device: {device().adapter_summary}", flush=True)
    rows = run(names, sizes, max(1, args.repeats), cpu=not args.no_cpu)
    print(_fmt_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device().adapter_summary, "rows": rows}, f, indent=1)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
