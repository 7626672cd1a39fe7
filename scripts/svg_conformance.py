"""Pass rate of pywgpuprims.scene.load_svg + Scene.render against resvg-py, per group of SVG files.

    python scripts/svg_conformance.py [PATH ...] [--max-size 200] [--reference] [--list]

PATHs are SVG files or folders (searched recursively); a file's group is its folder's name. The
default is the corpus in tests/svg_corpus/. The rule (pywgpuprims/scene/conformance.py): a file passes
when at most 1% of its pixels differ by more than 32/255 in any channel (premultiplied RGBA).
Files are drawn at their own size, scaled down to fit ``--max-size`` pixels a side.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import pywgpuprims as pp  # noqa: E402
from pywgpuprims.scene import load_svg  # noqa: E402
from pywgpuprims.scene.conformance import compare, premultiplied, render_resvg  # noqa: E402


def check(path: Path, max_size: int, reference: bool = False, fit: bool = False) -> dict:
    """Render ``path`` both ways (scaled down to ``max_size`` pixels a side, or up too with ``fit``);
    a dict with the verdict, the bad fraction, warnings and times."""
    text = path.read_text(errors="replace")
    out = {"file": str(path), "group": path.parent.name}
    k = 1.0
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _, w, h = load_svg(text)
            k = max_size / max(w, h) if fit else min(1.0, max_size / max(w, h))
            if k != 1.0:  # resvg-py's canvas: the width rounded, the height from it; the drawing stretched to fit
                W = max(1, round(w * k))
                H = max(1, math.ceil(h * W / w - 1e-9))
                k = (W / w, H / h)
            s, w, h = load_svg(text, scale=k)
            img = (s.render_reference if reference else s.render)(w, h, background=(0, 0, 0, 0))
        out["warnings"] = sorted({str(c.message) for c in caught})
    except pp.InputError as exc:
        out.update(ok=False, frac=1.0, error=str(exc), warnings=[])
        return out
    out["ours_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        ref = render_resvg(text, w, h)
    except ValueError as exc:
        out.update(ok=False, frac=1.0, error=f"resvg: {exc}")
        return out
    out["resvg_s"] = time.perf_counter() - t0
    ok, frac, bad = compare(premultiplied(img), ref)
    out.update(ok=ok, frac=frac, ours=img, ref=ref, bad=bad)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[str(Path(__file__).resolve().parents[1] / "tests" / "svg_corpus")])
    ap.add_argument("--max-size", type=int, default=200)
    ap.add_argument("--reference", action="store_true", help="the CPU reference renderer instead of the GPU")
    ap.add_argument("--list", action="store_true", help="print every failing file")
    args = ap.parse_args()
    files = []
    for p in map(Path, args.paths):
        files += sorted(p.rglob("*.svg")) if p.is_dir() else [p]
    by_group: dict[str, list[dict]] = defaultdict(list)
    for f in files:
        r = check(f, args.max_size, args.reference)
        by_group[r["group"]].append(r)
        if args.list and not r["ok"]:
            print(f"FAIL {r['frac']:.2%} {f} {r.get('error', '')} {r.get('warnings', '')[:2]}")
    total = passed = 0
    print(f"{'group':<16} {'pass':>6} {'files':>6} {'rate':>7}")
    for g in sorted(by_group):
        rs = by_group[g]
        n, k = len(rs), sum(r["ok"] for r in rs)
        total, passed = total + n, passed + k
        print(f"{g:<16} {k:>6} {n:>6} {k / n:>7.1%}")
    print(f"{'all':<16} {passed:>6} {total:>6} {passed / max(total, 1):>7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
