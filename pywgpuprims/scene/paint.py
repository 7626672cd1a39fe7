"""Gradient paints for scenes: linear and two-point conical (SVG radial, with a focal point and
radius) gradients, evaluated per pixel by the fine pass (``wgsl/scene/fine.wgsl``) and the CPU
reference alike.

A gradient element carries a block of ``4 + RAMP`` vec4s: a header (device pixel -> gradient
space matrix, kind, spread, geometry) and a colour ramp (premultiplied RGBA at ``t = i / (RAMP - 1)``,
the paint's opacity included)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._errors import InputError
from .geometry import as_transform, compose

#: Ramp entries per gradient.
RAMP = 512
_SPREAD = {"pad": 0, "reflect": 1, "repeat": 2}


@dataclass
class Gradient:
    """A linear or radial gradient (SVG's ``linearGradient`` / ``radialGradient``).

    Parameters
    ----------
    kind : {'linear', 'radial'}
    geom : tuple
        linear: ``(x1, y1, x2, y2)``; radial: ``(cx, cy, r, fx, fy, fr)``; in the gradient's space.
    offsets : array of float
        Stop offsets in [0, 1], non-decreasing.
    colors : array (n, 4)
        Stop colours, straight RGBA in [0, 1].
    spread : {'pad', 'reflect', 'repeat'}
    units : {'userSpaceOnUse', 'objectBoundingBox'}
        Whether ``geom`` is in user space or in fractions of the painted shape's bounding box.
    transform : optional 2x3 matrix
        The ``gradientTransform`` (gradient space -> user space, before the bounding box mapping).

    Examples
    --------
    >>> from pywgpuprims.scene import Gradient, Scene, rect
    >>> g = Gradient("linear", (0, 0, 1, 0), [0, 1], [(1, 0, 0, 1), (0, 0, 1, 1)], units="objectBoundingBox")
    >>> s = Scene()
    >>> s.fill(rect(0, 0, 32, 32), g)
    >>> len(s)
    1
    """

    kind: str
    geom: tuple
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    colors: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    spread: str = "pad"
    units: str = "userSpaceOnUse"
    transform: np.ndarray | None = None

    def __post_init__(self):
        self.offsets = np.asarray(self.offsets, np.float64).ravel()
        self.colors = np.asarray(self.colors, np.float64).reshape(-1, 4)
        if self.kind not in ("linear", "radial"):
            raise InputError("Gradient", f"kind must be 'linear' or 'radial', got {self.kind!r}")
        if self.spread not in _SPREAD:
            raise InputError("Gradient", f"spread must be 'pad', 'reflect' or 'repeat', got {self.spread!r}")
        if self.units not in ("userSpaceOnUse", "objectBoundingBox"):
            raise InputError("Gradient", f"units must be 'userSpaceOnUse' or 'objectBoundingBox', got {self.units!r}")
        if len(self.geom) != (4 if self.kind == "linear" else 6) or not np.isfinite(self.geom).all():
            raise InputError("Gradient", f"geom has the wrong length or non-finite values: {self.geom!r}")
        if not len(self.offsets) or len(self.offsets) != len(self.colors):
            raise InputError("Gradient", "a gradient needs as many colours as offsets (at least one)")
        if not (np.isfinite(self.colors).all() and self.colors.min() >= 0 and self.colors.max() <= 1):
            raise InputError("Gradient", "colours are straight RGBA values in [0, 1]")
        self.offsets = np.maximum.accumulate(np.clip(self.offsets, 0, 1))
        self.transform = as_transform(self.transform)

    def ramp(self, opacity: float = 1.0) -> np.ndarray:
        """(RAMP, 4) premultiplied colours at ``t = i / (RAMP - 1)``; at equal offsets the later stop
        wins past the offset."""
        t = np.linspace(0.0, 1.0, RAMP)
        off = self.offsets
        out = np.empty((RAMP, 4))
        j = np.clip(np.searchsorted(off, t, side="right"), 1, max(1, len(off) - 1))
        if len(off) == 1:
            out[:] = self.colors[0]
        else:
            o0, o1 = off[j - 1], off[j]
            w = np.where(o1 > o0, (t - o0) / np.where(o1 > o0, o1 - o0, 1.0), 1.0)
            w = np.clip(w, 0, 1)[:, None]
            out = self.colors[j - 1] * (1 - w) + self.colors[j] * w
            out[t < off[0]] = self.colors[0]
            out[t >= off[-1]] = self.colors[-1]
        out[:, 3] *= opacity
        out[:, :3] *= out[:, 3:4]
        return out


def gradient_block(g: Gradient, bbox, ctm, opacity: float = 1.0) -> np.ndarray | None:
    """The element block (4 + RAMP, 4) float32 of ``g`` painted on a shape whose user-space bounding
    box is ``bbox`` (x0, y0, x1, y1), with ``ctm`` mapping user space to device pixels; None when
    the mapping is degenerate (nothing is painted)."""
    m = None
    if g.units == "objectBoundingBox":
        x0, y0, x1, y1 = bbox
        if not (x1 > x0 and y1 > y0):
            return None
        m = np.array([[x1 - x0, 0, x0], [0, y1 - y0, y0]], float)
    m = compose(m, g.transform)
    full = compose(as_transform(ctm), m)
    if full is None:
        full = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    det = float(np.linalg.det(full[:, :2]))
    if not np.isfinite(full).all() or abs(det) < 1e-12:
        return None
    inv = np.linalg.inv(np.vstack([full, [0, 0, 1]]))[:2]
    head = np.zeros((4, 4), np.float64)
    head[0] = (inv[0, 0], inv[0, 1], inv[0, 2], inv[1, 0])
    head[1] = (inv[1, 1], inv[1, 2], 0.0 if g.kind == "linear" else 1.0, _SPREAD[g.spread])
    if g.kind == "linear":
        ax, ay, bx, by = g.geom
        vx, vy = bx - ax, by - ay
        L2 = vx * vx + vy * vy
        if L2 <= 0:
            return None
        head[2] = (ax, ay, vx / L2, vy / L2)
    else:
        cx, cy, r, fx, fy, fr = g.geom
        if r <= 0:
            return None
        d = math.hypot(fx - cx, fy - cy)
        if d > r * 0.999:  # a focal point outside the end circle moves onto it (SVG 1.1)
            fx, fy = cx + (fx - cx) * r * 0.999 / d, cy + (fy - cy) * r * 0.999 / d
        fr = min(max(fr, 0.0), r)
        head[2] = (fx, fy, cx - fx, cy - fy)
        head[3] = (fr, r - fr, 0.0, 0.0)
    return np.concatenate([head, g.ramp(opacity)]).astype(np.float32)


def paint_colors(block: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Premultiplied colours (..., 4) of a gradient block at pixel centres ``xs + 0.5, ys + 0.5``
    (float32 arithmetic as in the fine pass)."""
    f = np.float32
    h0, h1, g0, g1 = block[0], block[1], block[2], block[3]
    x = xs.astype(f) + f(0.5)
    y = ys.astype(f) + f(0.5)
    gx = h0[0] * x + h0[1] * y + h0[2]
    gy = h0[3] * x + h1[0] * y + h1[1]
    with np.errstate(all="ignore"):
        if h1[2] < 0.5:
            t = (gx - g0[0]) * g0[2] + (gy - g0[1]) * g0[3]
        else:
            px, py = gx - g0[0], gy - g0[1]
            cdx, cdy, fr, dr = g0[2], g0[3], g1[0], g1[1]
            a = cdx * cdx + cdy * cdy - dr * dr
            b = px * cdx + py * cdy + fr * dr
            c = px * px + py * py - fr * fr
            sq = np.sqrt(np.maximum(b * b - a * c, f(0)))
            t1, t2 = (b + sq) / a, (b - sq) / a
            thi, tlo = np.maximum(t1, t2), np.minimum(t1, t2)
            t = np.where(fr + thi * dr >= 0, thi, tlo)
            t = np.where(np.abs(a) < f(1e-6) * np.maximum(dr * dr, f(1e-12)), c / (f(2) * b), t)
        t = np.nan_to_num(t.astype(f), nan=0.0, posinf=1e9, neginf=-1e9)
        spread = int(h1[3])
        if spread == 2:
            t = t - np.floor(t)
        elif spread == 1:
            t = np.abs(t - f(2) * np.floor(t * f(0.5)))
            t = np.where(t > 1, f(2) - t, t)
    idx = np.floor(np.clip(t, 0, 1) * f(RAMP - 1) + f(0.5)).astype(np.int64)
    return block[4 + idx]
