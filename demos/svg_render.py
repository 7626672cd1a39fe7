"""Render an SVG file (pywgpuprims.scene.load_svg) to PNG on the GPU.

    python demos/svg_render.py IN.svg OUT.png [--scale 1.0] [--check]

Prints the time per stage; warnings name what the subset does not support.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from _render_report import render_and_report  # noqa: E402

import pywgpuprims as pp  # noqa: E402
from pywgpuprims.scene import load_svg  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--check", action="store_true", help="compare with the CPU reference")
    args = ap.parse_args()
    print(f"adapter: {pp.device().adapter_summary}")
    t0 = time.perf_counter()
    s, W, H = load_svg(args.input, scale=args.scale)
    print(f"  parse SVG ({len(s)} elements, {W}x{H}): {1e3 * (time.perf_counter() - t0):.1f} ms")
    render_and_report(s, W, H, args.output, args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
