"""Strokes as fills, vectorised with numpy: a stroke's outline is the union (nonzero, every piece wound
the same way) of one quad per flattened segment, one join per vertex (miter with its limit, round,
bevel), caps at open ends (butt, round, square) and dots for zero-length subpaths, after dashing."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .geometry import Path, flatten


@dataclass
class StrokeStyle:
    width: float = 1.0
    cap: str = "butt"  # butt | round | square
    join: str = "miter"  # miter | round | bevel
    miter_limit: float = 4.0
    dashes: tuple[float, ...] = ()
    dash_offset: float = 0.0


def _orient(polys: np.ndarray) -> np.ndarray:
    """Polygons (m, k, 2) all wound with a positive signed area (degenerate ones dropped)."""
    if not len(polys):
        return polys
    x, y = polys[..., 0], polys[..., 1]
    area = (x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)
    out = np.where((area < 0)[:, None, None], polys[:, ::-1], polys)
    return out[np.abs(area) > 0]


def _circle_n(r_px: float) -> int:
    if r_px <= 0.1:
        return 8
    return int(np.clip(math.ceil(math.pi / math.acos(max(-1.0, 1 - 0.1 / r_px))), 8, 256))


def _dash(points: list[np.ndarray], closed: np.ndarray, style: StrokeStyle, max_pieces: int
          ) -> tuple[list[np.ndarray], np.ndarray]:
    """Split polylines into dashes (open polylines)."""
    d = np.asarray(style.dashes, np.float64)
    if len(d) % 2:
        d = np.concatenate([d, d])
    period = d.sum()
    bounds = np.concatenate([[0.0], np.cumsum(d)])
    out: list[np.ndarray] = []
    for pts in points:
        seg = np.hypot(*np.diff(pts, axis=0).T)
        s = np.concatenate([[0.0], np.cumsum(seg)])
        total = s[-1]
        if total <= 0:
            continue
        phase = style.dash_offset % period
        k0 = math.floor(phase / period)
        n_periods = math.ceil((total + phase) / period) + 1
        if len(out) + n_periods * len(d) // 2 > max_pieces:
            raise OverflowError("dashes")
        base = (np.arange(k0, k0 + n_periods) * period)[:, None] - phase
        on0 = (base + bounds[0:-1:2]).ravel()
        on1 = (base + bounds[1::2]).ravel()
        a, b = np.maximum(on0, 0.0), np.minimum(on1, total)
        keep = b > a
        for lo, hi in zip(a[keep], b[keep], strict=True):
            inner = (s > lo) & (s < hi)
            ts = np.concatenate([[lo], s[inner], [hi]])
            out.append(np.stack([np.interp(ts, s, pts[:, 0]), np.interp(ts, s, pts[:, 1])], axis=1))
    return out, np.zeros(len(out), bool)


def stroke_outline(path: Path, style: StrokeStyle, scale: float = 1.0, max_pieces: int = 10**7) -> Path | None:
    """The outline of ``path`` stroked with ``style``, as a Path to fill with the nonzero rule.

    ``scale`` is the user-to-device scale (flattening tolerance and round pieces follow it).

    Examples
    --------
    >>> from pywgpuprims.scene import Path
    >>> p = Path().move_to(0, 0).line_to(10, 0)
    >>> [round(v, 6) for v in stroke_outline(p, StrokeStyle(width=2, cap="square")).bbox()]
    [-1.0, -1.0, 11.0, 1.0]
    """
    r = style.width / 2
    if not r > 0:
        return None
    rec, kind, sub, closed, start = path.stroke_records()
    tol = (0.01 if style.dashes else 0.1) / max(scale, 1e-12)  # dash ends follow the arc length closely
    seg, owner = flatten(rec, kind, sub, tol=tol)
    # Polylines per subpath (points in order), zero-length segments dropped.
    lines: list[np.ndarray] = []
    line_closed: list[bool] = []
    dots: list[np.ndarray] = []
    if len(seg):
        nz = np.hypot(seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1]) > 1e-12 * max(1.0, np.abs(seg).max())
        cuts = np.nonzero(np.diff(owner))[0] + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(seg)]])
        for a, b in zip(starts, ends, strict=True):
            k = nz[a:b]
            sp = int(owner[a])
            if not k.any():
                dots.append(seg[a, :2])
                continue
            s2 = seg[a:b][k]
            pts = np.concatenate([s2[:1, :2], s2[:, 2:]])
            lines.append(pts)
            line_closed.append(bool(closed[sp]))
    has_rec = np.zeros(len(closed), bool)
    has_rec[sub] = True
    for i in np.nonzero(closed & ~has_rec)[0]:
        dots.append(start[i])
    if style.dashes and sum(style.dashes) > 0:
        closed_pts = [np.concatenate([p, p[:1]]) if c and np.any(p[0] != p[-1]) else p
                      for p, c in zip(lines, line_closed, strict=True)]
        lines, lc = _dash(closed_pts, np.asarray(line_closed), style, max_pieces)
        line_closed = list(lc)
        dots = []
    pieces = _pieces(lines, line_closed, dots, style, r, scale, max_pieces)
    if not pieces:
        return None
    out = Path()
    for polys in pieces:
        out.add_polygons(_orient(polys))
    return out


def _pieces(lines, line_closed, dots, style: StrokeStyle, r: float, scale: float, max_pieces: int) -> list:
    pieces: list[np.ndarray] = []
    nc = _circle_n(r * scale)
    ang = np.linspace(0, 2 * np.pi, nc, endpoint=False)
    ring = np.stack([np.cos(ang), np.sin(ang)], axis=1) * r
    total = sum(len(p) for p in lines)
    if total * 3 > max_pieces:
        raise OverflowError("stroke pieces")
    ends, end_dirs, joins = [], [], []
    segs = []
    for pts, cl in zip(lines, line_closed, strict=True):
        if cl and np.any(pts[0] != pts[-1]):
            pts = np.concatenate([pts, pts[:1]])
        segs.append(np.concatenate([pts[:-1], pts[1:]], axis=1))
        d = np.diff(pts, axis=0)
        t = d / np.hypot(d[:, 0], d[:, 1])[:, None]
        if cl:  # joins at every vertex, the start included
            joins.append((pts[:-1], np.roll(t, 1, axis=0), t))
        else:
            if len(t) > 1:
                joins.append((pts[1:-1], t[:-1], t[1:]))
            ends.append(pts[0])
            end_dirs.append(-t[0])
            ends.append(pts[-1])
            end_dirs.append(t[-1])
    if segs:
        s = np.concatenate(segs)
        d = s[:, 2:] - s[:, :2]
        u = d / np.hypot(d[:, 0], d[:, 1])[:, None]
        n = np.stack([-u[:, 1], u[:, 0]], axis=1) * r
        a, b = s[:, :2], s[:, 2:]
        pieces.append(np.stack([a + n, b + n, b - n, a - n], axis=1))
    if joins:
        v = np.concatenate([j[0] for j in joins])
        t0 = np.concatenate([j[1] for j in joins])
        t1 = np.concatenate([j[2] for j in joins])
        cross = t0[:, 0] * t1[:, 1] - t0[:, 1] * t1[:, 0]
        dot = (t0 * t1).sum(axis=1)
        turn = (np.abs(cross) > 1e-9) | (dot < 0)
        v, t0, t1, cross, dot = v[turn], t0[turn], t1[turn], cross[turn], dot[turn]
        side = np.where(cross > 0, -1.0, 1.0)[:, None]  # the outer side of the turn
        n0 = np.stack([-t0[:, 1], t0[:, 0]], axis=1) * r * side
        n1 = np.stack([-t1[:, 1], t1[:, 0]], axis=1) * r * side
        if style.join == "round":
            pieces.append(v[:, None, :] + ring[None])
        else:
            bevel = np.ones(len(v), bool)
            if style.join in ("miter", "miter-clip", "arcs"):
                # miter length / stroke width = 1 / sin(theta / 2), theta the angle between the segments
                cos_theta = np.clip(-dot, -1.0, 1.0)
                sin_half = np.sqrt(np.maximum((1 - cos_theta) / 2, 0.0))
                ok = (sin_half > 1e-9) & (1.0 / np.maximum(sin_half, 1e-12) <= style.miter_limit)
                if ok.any():
                    m = n0[ok] + n1[ok]
                    mlen = np.hypot(m[:, 0], m[:, 1])
                    tip = v[ok] + m / mlen[:, None] * (r / sin_half[ok])[:, None]
                    pieces.append(np.stack([v[ok], v[ok] + n0[ok], tip, v[ok] + n1[ok]], axis=1))
                    bevel = ~ok
            if bevel.any():
                pieces.append(np.stack([v[bevel], v[bevel] + n0[bevel], v[bevel] + n1[bevel]], axis=1))
    if ends and style.cap != "butt":
        e = np.asarray(ends)
        t = np.asarray(end_dirs)
        n = np.stack([-t[:, 1], t[:, 0]], axis=1) * r
        if style.cap == "round":
            pieces.append(e[:, None, :] + ring[None])
        else:
            f = t * r
            pieces.append(np.stack([e + n, e + n + f, e - n + f, e - n], axis=1))
    if dots and style.cap != "butt":
        e = np.asarray(dots)
        if style.cap == "round":
            pieces.append(e[:, None, :] + ring[None])
        else:
            sq = np.array([[-r, -r], [r, -r], [r, r], [-r, r]])
            pieces.append(e[:, None, :] + sq[None])
    return pieces
