"""Paint servers for the SVG front end: linear and radial gradients drawn as solid bands under a clip
of the painted shape (bands of at most half a device pixel, or finer where the colour changes fast;
sharp stop edges exact). Opaque gradients use overlapping bands so that no seam lets the background
through; translucent ones use disjoint bands."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .geometry import compose

MAX_BANDS = 2048


@dataclass
class Gradient:
    kind: str  # "linear" | "radial"
    units: str = "objectBoundingBox"
    spread: str = "pad"
    transform: np.ndarray | None = None
    #: linear: x1, y1, x2, y2; radial: cx, cy, r, fx, fy, fr (user units or bbox fractions)
    geom: tuple = ()
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    colors: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))  # straight RGBA 0..1


def _colour_at(g: Gradient, t: np.ndarray) -> np.ndarray:
    """Straight-alpha colours at parameters ``t`` after the spread method (SVG interpolates
    straight RGBA in sRGB)."""
    if g.spread == "repeat":
        t = t - np.floor(t)
    elif g.spread == "reflect":
        t = np.abs(t - 2 * np.floor(t / 2))
        t = np.where(t > 1, 2 - t, t)
    t = np.clip(t, 0, 1)
    off, col = g.offsets, g.colors
    out = np.empty((len(t), 4))
    for c in range(4):
        out[:, c] = np.interp(t, off, col[:, c])
    return out


def _breaks(g: Gradient, t0: float, t1: float, dt: float) -> np.ndarray:
    """Band edges over [t0, t1]: a uniform grid plus every stop offset (in every period)."""
    n = min(MAX_BANDS, max(1, math.ceil((t1 - t0) / dt)))
    grid = np.linspace(t0, t1, n + 1)
    if g.spread == "pad":
        stops = g.offsets
    elif g.spread == "repeat":
        k = np.arange(math.floor(t0) - 1, math.ceil(t1) + 1)
        stops = (k[:, None] + g.offsets[None]).ravel()
    else:
        k = np.arange(math.floor(t0 / 2) - 1, math.ceil(t1 / 2) + 1) * 2
        stops = (k[:, None] + np.concatenate([g.offsets, 2 - g.offsets])[None]).ravel()
    e = np.unique(np.concatenate([grid, stops[(stops > t0) & (stops < t1)]]))
    return e


def _dt(g: Gradient, px_per_t: float) -> float:
    """Band width in t: half a device pixel, or wider where the colour changes slowly."""
    d_off = np.diff(g.offsets)
    d_col = np.abs(np.diff(g.colors, axis=0)).max(axis=1) if len(g.colors) > 1 else np.zeros(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(d_off > 0, d_col / np.where(d_off > 0, d_off, 1), 0)
    s = float(slope.max(initial=0.0))
    dt_px = 0.5 / max(px_per_t, 1e-9)
    dt_col = (3 / 255) / s if s > 0 else math.inf
    return max(dt_px, min(dt_col, 1.0))


def gradient_bands(g: Gradient, bbox, ctm, opacity: float, circle_n, cover=None
                   ) -> list[tuple[np.ndarray, tuple, str]]:
    """Bands covering the user-space box ``cover`` (x0, y0, x1, y1; default ``bbox``, the object
    bounding box that ``objectBoundingBox`` units refer to), as ``(polygons (m, k, 2) in user
    space, straight RGBA 0-255, fill rule)``, in painting order. ``ctm`` maps user space to device
    pixels; ``circle_n(r_px)`` gives vertices per circle."""
    x0, y0, x1, y1 = bbox
    m = None
    if g.units == "objectBoundingBox":
        m = np.array([[x1 - x0, 0, x0], [0, y1 - y0, y0]], float)
    m = compose(m, g.transform)  # gradient space -> user space
    if m is None:
        m = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    full = compose(ctm, m) if ctm is not None else m  # gradient space -> device
    det = np.linalg.det(m[:, :2])
    if not np.isfinite(m).all() or abs(det) < 1e-12:
        return []
    inv = np.linalg.inv(np.vstack([m, [0, 0, 1]]))[:2]
    c0, c1, c2, c3 = bbox if cover is None else cover
    corners = np.array([[c0, c1], [c2, c1], [c2, c3], [c0, c3]], float)
    gc = corners @ inv[:, :2].T + inv[:, 2]  # the box in gradient space
    opaque = opacity >= 1 and bool((g.colors[:, 3] >= 1).all())
    out = []

    def colour(t):
        c = _colour_at(g, np.atleast_1d(np.asarray(t, float)))[0]
        return (c[0] * 255, c[1] * 255, c[2] * 255, c[3] * 255 * opacity)

    def to_user(pts):
        return pts @ m[:, :2].T + m[:, 2]

    if g.kind == "linear":
        ax, ay, bx, by = g.geom
        v = np.array([bx - ax, by - ay])
        L2 = float(v @ v)
        u = v / math.sqrt(L2)
        nrm = np.array([-u[1], u[0]])
        t_c = ((gc - [ax, ay]) @ v) / L2
        s_c = (gc - [ax, ay]) @ nrm
        tmin, tmax = float(t_c.min()), float(t_c.max())
        smin, smax = float(s_c.min()) - 1, float(s_c.max()) + 1
        dev_v = full[:, :2] @ v
        px_per_t = float(np.hypot(*dev_v))
        pad = 2.0 / max(px_per_t, 1e-9)
        tmin, tmax = tmin - pad, tmax + pad
        lo, hi = (max(tmin, 0.0), min(tmax, 1.0)) if g.spread == "pad" else (tmin, tmax)
        edges = _breaks(g, lo, hi, _dt(g, px_per_t)) if hi > lo else np.array([lo, hi])
        if g.spread == "pad":
            edges = np.unique(np.concatenate([[tmin] if tmin < lo else [], edges, [tmax] if tmax > hi else []]))
        over = 1.5 / max(px_per_t, 1e-9)
        a, b = edges[:-1], edges[1:]
        mid = (a + b) / 2
        if g.spread == "pad":
            mid = np.where(b <= 0, 0.0, np.where(a >= 1, 1.0, mid))
        cols = _colour_at(g, mid)
        b_draw = np.minimum(b + over, edges[-1]) if opaque else b
        base = np.array([ax, ay])
        quad = np.stack([
            base + a[:, None] * v + smin * nrm, base + b_draw[:, None] * v + smin * nrm,
            base + b_draw[:, None] * v + smax * nrm, base + a[:, None] * v + smax * nrm], axis=1)
        quad = to_user(quad)
        for q, c in zip(quad, cols, strict=True):
            out.append((q[None], (c[0] * 255, c[1] * 255, c[2] * 255, c[3] * 255 * opacity), "nonzero"))
        return out
    cx, cy, r, fx, fy, fr = g.geom
    c = np.array([cx, cy])
    f = np.array([fx, fy])
    dcf = f - c
    if math.hypot(*dcf) > r * 0.999:  # the focal point is moved inside the end circle
        dcf = dcf / math.hypot(*dcf) * r * 0.999
        f = c + dcf
    fr = min(max(fr, 0.0), r)
    dist = np.hypot(*(gc - f).T).max()
    span = r - fr - math.hypot(*dcf)
    if span <= 0:
        return []
    tmax = max(1.0, (dist + 1) / span + 0.01)
    sv = np.linalg.svd(full[:, :2], compute_uv=False)
    px_per_t = float(sv[0] * (r - fr))
    hi = 1.0 if g.spread == "pad" else tmax
    edges = _breaks(g, 0.0, hi, _dt(g, px_per_t))
    n_c = circle_n(float(sv[0] * r * hi))
    ang = np.linspace(0, 2 * np.pi, n_c, endpoint=False)
    ring = np.stack([np.cos(ang), np.sin(ang)], axis=1)

    def disc(t):
        return to_user((f + t * (c - f)) + (fr + t * (r - fr)) * ring)

    if g.spread == "pad" and tmax > 1:
        big = to_user(np.array([[gc[:, 0].min() - 1, gc[:, 1].min() - 1], [gc[:, 0].max() + 1, gc[:, 1].min() - 1],
                                [gc[:, 0].max() + 1, gc[:, 1].max() + 1], [gc[:, 0].min() - 1, gc[:, 1].max() + 1]]))
        if opaque:
            out.append((big[None], colour(1.0), "nonzero"))
        else:
            out.append((np.stack([big, disc(1.0)[::-1]]), colour(1.0), "evenodd"))
    a, b = edges[:-1], edges[1:]
    cols = _colour_at(g, (a + b) / 2)
    for i in range(len(a) - 1, -1, -1):
        col = (cols[i, 0] * 255, cols[i, 1] * 255, cols[i, 2] * 255, cols[i, 3] * 255 * opacity)
        if opaque or a[i] <= 0:
            out.append((disc(b[i])[None], col, "nonzero"))
        else:
            out.append((np.stack([disc(b[i]), disc(a[i])]), col, "evenodd"))
    if fr > 0:
        out.append((disc(0.0)[None], colour(0.0), "nonzero"))
    return out
