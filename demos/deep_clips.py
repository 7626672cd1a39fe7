"""1,000 nested clips (alternating circles and rotating stars, shrinking towards the centre).

    python demos/deep_clips.py [OUT.png] [--size 256x256] [--depth 1000] [--check]

Prints the time per stage and writes the PNG (default out/deep_clips.png).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from _render_report import render_and_report  # noqa: E402

import pywgpuprims as pp  # noqa: E402
from pywgpuprims.scene import Scene, circle, rect, star  # noqa: E402


def build(W: int, H: int, depth: int) -> Scene:
    s = Scene()
    s.fill(rect(0, 0, W, H), (20, 20, 30, 255))
    cx, cy, R = W / 2, H / 2, min(W, H) * 0.49
    for i in range(depth):
        r = R * (1 - 0.9 * i / depth)
        if i % 2 == 0:
            s.push_clip(circle(cx + 0.05 * r * np.cos(i * 0.05), cy + 0.05 * r * np.sin(i * 0.05), r))
        else:
            s.push_clip(star(cx, cy, r * 1.08, r * 0.8, 9, i * 0.7))
        if i % 25 == 0:
            t = i / depth
            s.fill(rect(0, 0, W, H), (int(255 * t), int(120 + 100 * np.sin(6 * t) ** 2), int(255 * (1 - t)), 255))
    for _ in range(depth):
        s.pop_clip()
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", nargs="?", default="out/deep_clips.png")
    ap.add_argument("--size", default="256x256")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--check", action="store_true", help="compare with the CPU reference")
    args = ap.parse_args()
    W, H = (int(v) for v in args.size.lower().split("x"))
    print(f"adapter: {pp.device().adapter_summary}")
    t0 = time.perf_counter()
    s = build(W, H, args.depth)
    print(f"  build scene ({len(s)} elements, clip depth {s.max_depth}): {1e3 * (time.perf_counter() - t0):.1f} ms")
    render_and_report(s, W, H, args.output, args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
