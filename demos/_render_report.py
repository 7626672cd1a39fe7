"""Shared tail of the scene demos: render on the GPU, print the time of each stage, write the PNG,
and optionally compare with the CPU reference renderer."""

from __future__ import annotations

import time
from pathlib import Path

import imageio.v3 as iio
import numpy as np


def render_and_report(scene, width: int, height: int, output: str, check: bool,
                      background=(255, 255, 255, 255)) -> np.ndarray:
    timings: dict = {}
    t0 = time.perf_counter()
    img = scene.render(width, height, background=background, timings=timings)
    wall = time.perf_counter() - t0
    for k, v in timings.items():
        print(f"  {k}: {1e3 * v:.2f} ms")
    print(f"  render wall time (incl. first-use shader compilation): {1e3 * wall:.1f} ms")
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(out, img)
    print(f"wrote {out.resolve()}")
    if check:
        ref = scene.render_reference(width, height, background=background)
        d = np.abs(img.astype(int) - ref.astype(int))
        print(f"CPU reference: max difference {d.max()}, pixels differing by >1: {(d.max(-1) > 1).mean():.4%}")
    return img
