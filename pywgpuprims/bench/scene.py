"""Benchmark scene and entry ``scene``: 10^5 paths under 10^4 clips at 1920x1080 (smaller on a CPU
adapter), GPU time per stage and frames per second."""

from __future__ import annotations

import time

import numpy as np

from ..scene import CLIP_BEGIN, CLIP_DRAW, CLIP_END, Scene, rect
from ..scene.geometry import ellipse_records, line_records, rect_records, rounded_rect_records
from ._harness import BenchContext, benchmark


def grid_scene(n_paths: int, n_clips: int, width: int, height: int, seed: int = 1) -> Scene:
    """Cells in a grid, each under 3 nested clips (circle, star, rounded rect) holding small shapes.

    Roughly ``n_clips`` clips (a multiple of 3) and ``n_paths`` filled paths plus a background. The
    whole scene is a few numpy calls: every outline is made at once as cubic records
    (``scene.geometry``'s ``*_records``), laid out cell after cell (three pushes, the fills, three
    pops) and handed to :meth:`Scene.add_many` in one call.
    """
    rng = np.random.default_rng(seed)
    n_cells = max(1, n_clips // 3)
    cols = max(1, int(round(np.sqrt(n_cells * width / height))))
    rows = -(-n_cells // cols)
    cw, ch = width / cols, height / rows
    per = max(1, n_paths // n_cells)
    rot = rng.uniform(0, 360, n_cells)
    u = rng.uniform(0, 1, (n_cells, per, 4))
    col = rng.integers(0, 256, (n_cells, per, 4))
    col[..., 3] = rng.integers(120, 256, (n_cells, per))
    kc = np.arange(n_cells)
    x0, y0 = (kc % cols) * cw, (kc // cols) * ch
    cx, cy, r = x0 + cw / 2, y0 + ch / 2, min(cw, ch) / 2
    clip_circle = ellipse_records(cx, cy, r * 1.05, r * 1.05)
    ang = np.radians(rot)[:, None] + np.arange(14) * np.pi / 7
    rad = np.where(np.arange(14) % 2 == 0, r * 1.3, r * 0.75)
    clip_star = line_records(np.stack([cx[:, None] + rad * np.cos(ang), cy[:, None] + rad * np.sin(ang)], axis=2))
    clip_rrect = rounded_rect_records(x0 + cw * 0.08, y0 + ch * 0.08, cw * 0.84, ch * 0.84, r * 0.3)
    px, py = x0[:, None] + u[..., 0] * cw, y0[:, None] + u[..., 1] * ch
    sz = r * (0.15 + 0.5 * u[..., 2])
    kind = np.arange(per) % 3  # 0 circles, 1 rectangles, 2 triangles (padded with a zero-length record)
    k0, k1, k2 = (slice(j, None, 3) for j in range(3))  # where kind is 0, 1, 2
    # Every cell's records in one array, written in place: circle, star, rounded rect, the fills.
    records = np.empty((n_cells, 26 + 4 * per, 8))
    records[:, :4], records[:, 4:18], records[:, 18:26] = clip_circle, clip_star, clip_rrect
    rec = records[:, 26:].reshape(n_cells, per, 4, 8)
    rec[:, k0] = ellipse_records(px[:, k0], py[:, k0], sz[:, k0], sz[:, k0]).reshape(n_cells, -1, 4, 8)
    x, y, z = px[:, k1], py[:, k1], sz[:, k1]
    rec[:, k1] = rect_records(x - z, y - z * 0.6, 2 * z, 1.2 * z).reshape(n_cells, -1, 4, 8)
    a = u[:, k2, 3:4] * 6.28 + np.array([0, 2.1, 4.2])
    z = sz[:, k2, None]
    tri = line_records(np.stack([px[:, k2, None] + z * np.cos(a), py[:, k2, None] + z * np.sin(a)],
                                axis=-1).reshape(-1, 3, 2)).reshape(n_cells, -1, 3, 8)
    rec[:, k2, :3] = tri
    rec[:, k2, 3] = np.tile(tri[:, :, 0, :2], 4)
    # One cell: push circle, push star (evenodd), push rounded rect, the fills, three pops.
    ops = np.concatenate([[CLIP_BEGIN] * 3, np.full(per, CLIP_DRAW), [CLIP_END] * 3])
    counts = np.concatenate([[4, 14, 8], np.full(per, 4), [0, 0, 0]])
    rules = np.concatenate([[0, 1, 0], np.zeros(per + 3, np.int64)])
    curve = np.concatenate([np.ones(4, bool), np.zeros(14, bool), np.arange(8) % 2 == 0,
                            np.repeat(kind == 0, 4)])
    colors = np.zeros((n_cells, per + 6, 4))
    colors[:, 3:3 + per] = col
    s = Scene()
    s.fill(rect(0, 0, width, height), (245, 245, 240, 255))
    s.add_many(np.tile(ops, n_cells), records.reshape(-1, 8), np.tile(counts, n_cells), colors.reshape(-1, 4),
               np.tile(rules, n_cells), kinds=np.tile(curve, n_cells))
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
    plan = s.plan(W, H, layout=False)  # flat arrays only: flattening, boxes, clip boxes and cells are GPU stages
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
                      f"host: build {t1 - t0:.2f}s, plan {t2 - t1:.2f}s")
    rows.append(r)
    return rows


_scene_entry.default_sizes = [100_000]
benchmark("scene")(_scene_entry)
