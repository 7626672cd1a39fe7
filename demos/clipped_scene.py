"""A grid of shapes under three nested levels of clips (circle, star, circle), rendered on the GPU.

    python demos/clipped_scene.py [OUT.png] [--size 800x600] [--check]

Prints the time per stage (host and GPU) and writes the PNG (default out/clipped_scene.png).
``--check`` also renders with the CPU reference and reports the largest difference.
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
from pywgpuprims.scene import Scene, circle, polygon, rect, rounded_rect, star  # noqa: E402


def build(W: int, H: int, seed: int = 7) -> Scene:
    rng = np.random.default_rng(seed)
    s = Scene()
    s.fill(rect(0, 0, W, H), (250, 248, 240, 255))
    # A backdrop grid that the clips cut into.
    step = max(8, min(W, H) // 24)
    for y in range(0, H, step):
        for x in range(0, W, step):
            if (x // step + y // step) % 2 == 0:
                s.fill(rect(x, y, step, step), (225, 225, 235, 255))
    cx, cy, R = W / 2, H / 2, min(W, H) * 0.47
    s.push_clip(circle(cx, cy, R))                                   # level 1: a circle
    s.fill(rect(0, 0, W, H), (30, 40, 70, 255))
    s.push_clip(star(cx, cy, R * 1.05, R * 0.55, 8, -90), "evenodd")  # level 2: a star
    s.fill(rect(0, 0, W, H), (60, 80, 140, 255))
    n = 9
    cell = 2 * R / n
    for i in range(n):
        for j in range(n):
            x, y = cx - R + (i + 0.5) * cell, cy - R + (j + 0.5) * cell
            s.push_clip(circle(x, y, cell * 0.48))                   # level 3: a circle per cell
            hue = rng.integers(60, 256, 3)
            s.fill(rounded_rect(x - cell / 2, y - cell / 2, cell, cell, cell * 0.2), (*hue, 255))
            for k in range(6):
                a = rng.uniform(0, 2 * np.pi)
                px, py = x + cell * 0.3 * np.cos(a), y + cell * 0.3 * np.sin(a)
                col = (*rng.integers(0, 256, 3), int(rng.integers(120, 230)))
                if k % 3 == 0:
                    s.fill(circle(px, py, cell * 0.18), col)
                elif k % 3 == 1:
                    s.fill(star(px, py, cell * 0.25, cell * 0.1, 5, rng.uniform(0, 360)), col)
                else:
                    s.fill(polygon([(px, py - cell * 0.2), (px + cell * 0.2, py + cell * 0.15),
                                    (px - cell * 0.2, py + cell * 0.15)]), col)
            s.pop_clip()
    s.pop_clip()
    s.fill(star(cx, cy, R * 0.3, R * 0.12, 5), (255, 200, 0, 160))
    s.pop_clip()
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", nargs="?", default="out/clipped_scene.png")
    ap.add_argument("--size", default="800x600")
    ap.add_argument("--check", action="store_true", help="compare with the CPU reference")
    args = ap.parse_args()
    W, H = (int(v) for v in args.size.lower().split("x"))
    print(f"adapter: {pp.device().adapter_summary}")
    t0 = time.perf_counter()
    s = build(W, H)
    print(f"  build scene ({len(s)} elements, clip depth {s.max_depth}): {1e3 * (time.perf_counter() - t0):.1f} ms")
    render_and_report(s, W, H, args.output, args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
