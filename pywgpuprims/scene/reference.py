"""CPU reference renderer for scenes (numpy): the same 4x4 samples per pixel, the same winding
rule per sample, the same clip-coverage stack and premultiplied source-over as the GPU, element
by element over each element's tile rectangle."""

from __future__ import annotations

import numpy as np

from .paint import RAMP, paint_colors
from .plan import CLIP_BEGIN, CLIP_END, TILE, ScenePlan

_Q = np.float32(0.25)
_H = np.float32(0.125)


def _part_inside(plan: ScenePlan, p: int, px0: int, py0: int, w: int, h: int) -> np.ndarray:
    """Boolean (4h, 4w) samples inside part ``p`` over the pixel region."""
    lo, hi = np.searchsorted(plan.seg_part, [p, p + 1])
    seg = plan.segments[lo:hi]
    diff = np.zeros((4 * h, 4 * w + 1), np.int32)
    if len(seg):
        y0, y1 = seg[:, 1], seg[:, 3]
        ymin, ymax = np.minimum(y0, y1).astype(np.float64), np.maximum(y0, y1).astype(np.float64)
        j0 = np.maximum(np.floor((ymin - 0.125) * 4).astype(np.int64) - 1, 4 * py0)
        j1 = np.minimum(np.ceil((ymax - 0.125) * 4).astype(np.int64) + 1, 4 * (py0 + h) - 1)
        cnt = np.maximum(j1 - j0 + 1, 0)
        sid = np.repeat(np.arange(len(seg)), cnt)
        j = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt) + j0[sid]
        jl = j - 4 * py0
        pix = (j >> 2).astype(np.float32)
        sy = pix + (j & 3).astype(np.float32) * _Q + _H
        s = seg[sid]
        x0, ya, x1, yb = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        cross = (ya <= sy) != (yb <= sy)
        xc = x0 + ((sy - ya) * (x1 - x0)) / (yb - ya)
        d = np.where(yb > ya, 1, -1).astype(np.int32)
        k0 = np.floor(xc.astype(np.float64) * 4 - 0.5) + 1 - 4 * px0
        k0 = np.clip(k0, 0, 4 * w).astype(np.int64)
        np.add.at(diff, (jl[cross], k0[cross]), d[cross])
    wind = np.cumsum(diff, axis=1)[:, : 4 * w]
    return (wind & 1).astype(bool) if plan.part_rule[p] else wind != 0


def _coverage(plan: ScenePlan, e: int, px0, py0, w, h) -> np.ndarray:
    acc = np.zeros((4 * h, 4 * w), bool)
    term = None
    for p in range(plan.part_lo[e], plan.part_hi[e]):
        bits = _part_inside(plan, p, px0, py0, w, h)
        if plan.part_newterm[p]:
            if term is not None:
                acc |= term
            term = bits
        else:
            term = term & bits
    if term is not None:
        acc |= term
    return acc.reshape(h, 4, w, 4).sum(axis=(1, 3)).astype(np.float32) / np.float32(16)


def render_reference_plan(plan: ScenePlan) -> np.ndarray:
    plan.layout()
    W, H = plan.width, plan.height
    col = np.broadcast_to(plan.background, (H, W, 4)).astype(np.float32).copy()
    top = np.ones((H, W), np.float32)
    stack: list[np.ndarray] = []
    layers: list[np.ndarray] = []
    lum: list[np.ndarray] = []
    for e in range(plan.n_elements):
        tx0, ty0, tx1, ty1 = (int(v) for v in plan.tile_rect[e])
        kind = plan.kinds[e]
        if kind == CLIP_END:
            if tx1 > tx0:
                top = stack.pop()
                if plan.layer[e] >= 0:  # composite the layer over the colour saved under it
                    under = layers.pop()
                    py0, py1 = ty0 * TILE, min(ty1 * TILE, H)
                    px0, px1 = tx0 * TILE, min(tx1 * TILE, W)
                    k = np.float32(plan.layer[e])
                    if plan.masked[e]:
                        k = k * lum.pop()[py0:py1, px0:px1, None]
                    s = col[py0:py1, px0:px1] * k
                    under[py0:py1, px0:px1] = s + under[py0:py1, px0:px1] * (np.float32(1) - s[..., 3:4])
                    col = under
            continue
        if tx1 <= tx0:
            continue
        px0, py0 = tx0 * TILE, ty0 * TILE
        px1, py1 = min(tx1 * TILE, W), min(ty1 * TILE, H)
        w, h = px1 - px0, py1 - py0
        c = _coverage(plan, e, px0, py0, w, h)
        if kind == CLIP_BEGIN:
            stack.append(top)
            if plan.layer[e] >= 0:  # a layer starts transparent over its region
                layers.append(col)
                col = col.copy()
                col[py0:py1, px0:px1] = 0
            new = np.zeros_like(top)
            new[py0:py1, px0:px1] = top[py0:py1, px0:px1] * c
            top = new
        elif plan.switch[e]:  # the mask is drawn: keep its luminance, start the content
            lum.append(np.clip(col[..., :3] @ np.array([0.2125, 0.7154, 0.0721], np.float32), 0, 1).astype(np.float32))
            col = col.copy()
            col[py0:py1, px0:px1] = 0
        else:
            eff = c * top[py0:py1, px0:px1]
            if plan.paint[e]:
                yy, xx = np.mgrid[py0:py1, px0:px1]
                b0 = int(plan.paint[e]) - 1
                s = paint_colors(plan.paints[b0:b0 + 4 + RAMP], xx, yy) * eff[..., None]
            else:
                s = plan.colors[e][None, None, :] * eff[..., None]
            reg = col[py0:py1, px0:px1]
            col[py0:py1, px0:px1] = s + reg * (np.float32(1) - s[..., 3:4])
    return to_u8(col)


def to_u8(col: np.ndarray) -> np.ndarray:
    """Premultiplied float RGBA to straight-alpha uint8, rounding like the GPU resolve pass."""
    a = col[..., 3:4]
    rgb = np.where(a > 0, col[..., :3] / np.where(a > 0, a, np.float32(1)), np.float32(0))
    out = np.concatenate([rgb, a], axis=-1)
    return np.floor(np.clip(out, 0, 1) * np.float32(255) + np.float32(0.5)).astype(np.uint8)
