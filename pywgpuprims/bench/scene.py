"""Benchmark scene and entry ``scene``: 10^5 paths under 10^4 clips at 1920x1080 (smaller on a CPU
adapter), GPU time per stage and frames per second."""

from __future__ import annotations

import time

import numpy as np

from ..scene import Scene, circle, polygon, rect, rounded_rect, star
from ._harness import BenchContext, benchmark


def grid_scene(n_paths: int, n_clips: int, width: int, height: int, seed: int = 1) -> Scene:
    """Cells in a grid, each under 3 nested clips (circle, star, rounded rect) holding small shapes.

    Roughly ``n_clips`` clips (a multiple of 3) and ``n_paths`` filled paths plus a background.
    """
    rng = np.random.default_rng(seed)
    n_cells = max(1, n_clips // 3)
    cols = max(1, int(round(np.sqrt(n_cells * width / height))))
    rows = -(-n_cells // cols)
    cw, ch = width / cols, height / rows
    per = max(1, n_paths // n_cells)
    s = Scene()
    s.fill(rect(0, 0, width, height), (245, 245, 240, 255))
    for k in range(n_cells):
        x0, y0 = (k % cols) * cw, (k // cols) * ch
        cx, cy, r = x0 + cw / 2, y0 + ch / 2, min(cw, ch) / 2
        s.push_clip(circle(cx, cy, r * 1.05))
        s.push_clip(star(cx, cy, r * 1.3, r * 0.75, 7, float(rng.uniform(0, 360))), fill_rule="evenodd")
        s.push_clip(rounded_rect(x0 + cw * 0.08, y0 + ch * 0.08, cw * 0.84, ch * 0.84, r * 0.3))
        u = rng.uniform(0, 1, (per, 4))
        col = rng.integers(0, 256, (per, 4))
        col[:, 3] = rng.integers(120, 256, per)
        for j in range(per):
            px, py, sz = x0 + u[j, 0] * cw, y0 + u[j, 1] * ch, r * (0.15 + 0.5 * u[j, 2])
            kind = j % 3
            if kind == 0:
                p = circle(px, py, sz)
            elif kind == 1:
                p = rect(px - sz, py - sz * 0.6, 2 * sz, 1.2 * sz)
            else:
                a = u[j, 3] * 6.28
                p = polygon([(px + sz * np.cos(a + t), py + sz * np.sin(a + t)) for t in (0, 2.1, 4.2)])
            s.fill(p, tuple(int(v) for v in col[j]))
        s.pop_clip()
        s.pop_clip()
        s.pop_clip()
    return s


def _scene_entry(ctx: BenchContext, n: int) -> list[dict]:

    from ..scene.gpu import GpuScene  # noqa: PLC0415

    dev = ctx.dev
    cpu = dev.info.get("adapter_type") == "CPU"
    W, H = (480, 270) if cpu else (1920, 1080)
    if cpu:
        n = min(n, 10_000)
    n_clips = n // 10
    t0 = time.perf_counter()
    s = grid_scene(n, n_clips, W, H)
    t1 = time.perf_counter()
    plan = s.plan(W, H, layout=False)  # flatten only: boxes, clip boxes and cells are GPU stages
    t2 = time.perf_counter()
    g = GpuScene(plan, dev, gpu_layout=True)
    label = f"{W}x{H} {n} paths {3 * max(1, n_clips // 3)} clips"
    stage_ns = {name: max(1.0, ctx.gpu_ns(lambda i, name=name: getattr(g, name)())) for name in GpuScene.STAGES}
    frame = sum(stage_ns.values())
    work = float(plan.n_elements)
    rows = []
    for name, ns in stage_ns.items():
        rows.append(ctx.row("scene", f"{name} ({100 * ns / frame:.1f}%)", n, ns, bytes_moved=0, work=work))
    r = ctx.row("scene", f"frame {label}", n, frame, bytes_moved=0, work=1e9, unit="fps")
    r["fallbacks"] = (f"clip {100 * stage_ns['clip_stage'] / frame:.1f}% of frame; fine rounds {g.rounds}; "
                      f"host: build {t1 - t0:.2f}s, flatten {t2 - t1:.2f}s")
    rows.append(r)
    return rows


_scene_entry.default_sizes = [100_000]
benchmark("scene")(_scene_entry)
