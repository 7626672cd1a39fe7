"""Geometry for the scene renderer: the Path builder, shape helpers, affine transforms and the
vectorised flattening of curves to line segments (host side, numpy)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._errors import InputError

#: Flattening tolerance in device pixels (maximum distance between a curve and its polyline).
TOLERANCE = 0.1
_KAPPA = 0.5522847498307936  # cubic approximation of a quarter circle
_MAX_SUBDIV = 1024


def as_transform(t) -> np.ndarray | None:
    """A 2x3 float64 affine matrix from ``None``, 6 numbers ``(a, b, c, d, e, f)`` (SVG order:
    ``x' = a x + c y + e``, ``y' = b x + d y + f``), or a 2x3 / 3x3 array."""
    if t is None:
        return None
    m = np.asarray(t, dtype=np.float64)
    if m.shape == (6,):
        a, b, c, d, e, f = m
        return np.array([[a, c, e], [b, d, f]])
    if m.shape in ((2, 3), (3, 3)):
        return m[:2].copy()
    raise InputError("scene", f"a transform is 6 numbers (a, b, c, d, e, f) or a 2x3/3x3 matrix, got shape {m.shape}")


def compose(outer: np.ndarray | None, inner: np.ndarray | None) -> np.ndarray | None:
    """``outer @ inner`` for 2x3 affine matrices (either may be None = identity)."""
    if outer is None:
        return inner
    if inner is None:
        return outer
    o = np.vstack([outer, [0, 0, 1]])
    i = np.vstack([inner, [0, 0, 1]])
    return (o @ i)[:2]


class Path:
    """A 2-D path: subpaths of lines and Bezier curves, closed implicitly when filled.

    Examples
    --------
    >>> from pywgpuprims.scene import Path
    >>> p = Path().move_to(10, 10).line_to(90, 10).quad_to(90, 90, 10, 90).close()
    >>> p.bbox()
    (10.0, 10.0, 90.0, 90.0)
    """

    def __init__(self):
        # Each record is a cubic (x0, y0, x1, y1, x2, y2, x3, y3) plus a flag: 0 line, 1 curve.
        self._rec: list[tuple] = []
        self._kind: list[int] = []
        self._implicit: list[bool] = []  # closing lines added only because fills close subpaths
        self._joint: list[bool] = []  # a record ends at a vertex of the path data (not inside an arc)
        self._start: tuple[float, float] | None = None
        self._cur: tuple[float, float] | None = None
        # Subpaths, for strokes: first record, closed explicitly, start point.
        self._sub_first: list[int] = []
        self._sub_closed: list[bool] = []
        self._sub_pt: list[tuple[float, float]] = []
        self._sub_open = False
        self._chunks: list[np.ndarray] = []  # closed outlines added in bulk (records, for filling)
        self._chunk_kinds: list[np.ndarray] = []

    def _touch(self) -> None:
        if not self._sub_open:  # drawing on after a close starts a new subpath at the same point
            self._sub_first.append(len(self._rec))
            self._sub_closed.append(False)
            self._sub_pt.append(self._cur)
            self._sub_open = True

    # ---------------------------------------------------------------- building
    def _need_current(self, what: str) -> tuple[float, float]:
        if self._cur is None:
            raise InputError("Path", f"{what} needs a current point: call move_to first")
        return self._cur

    def move_to(self, x: float, y: float) -> Path:
        """Start a new subpath at (x, y) (the previous one is closed implicitly when filled)."""
        self._close_implicit()
        self._start = self._cur = (float(x), float(y))
        self._sub_open = False
        self._touch()
        return self

    def line_to(self, x: float, y: float) -> Path:
        """A straight line to (x, y)."""
        x0, y0 = self._need_current("line_to")
        x, y = float(x), float(y)
        self._touch()
        self._rec.append((x0, y0, x0, y0, x, y, x, y))
        self._kind.append(0)
        self._implicit.append(False)
        self._joint.append(True)
        self._cur = (x, y)
        return self

    def quad_to(self, cx: float, cy: float, x: float, y: float) -> Path:
        """A quadratic Bezier curve with control point (cx, cy) to (x, y)."""
        x0, y0 = self._need_current("quad_to")
        c1 = (x0 + 2.0 / 3.0 * (cx - x0), y0 + 2.0 / 3.0 * (cy - y0))
        c2 = (x + 2.0 / 3.0 * (cx - x), y + 2.0 / 3.0 * (cy - y))
        return self._cubic(x0, y0, *c1, *c2, float(x), float(y))

    def cubic_to(self, c1x: float, c1y: float, c2x: float, c2y: float, x: float, y: float) -> Path:
        """A cubic Bezier curve with control points (c1x, c1y), (c2x, c2y) to (x, y)."""
        x0, y0 = self._need_current("cubic_to")
        return self._cubic(x0, y0, float(c1x), float(c1y), float(c2x), float(c2y), float(x), float(y))

    def _cubic(self, *p) -> Path:
        self._touch()
        self._rec.append(tuple(p))
        self._kind.append(1)
        self._implicit.append(False)
        self._joint.append(True)
        self._cur = (p[6], p[7])
        return self

    def arc_to(self, rx: float, ry: float, x_axis_rotation: float, large_arc: bool, sweep: bool,
               x: float, y: float) -> Path:
        """An SVG elliptical arc (the ``A`` command; rotation in degrees) to (x, y)."""
        x1, y1 = self._need_current("arc_to")
        x2, y2 = float(x), float(y)
        rx, ry = abs(float(rx)), abs(float(ry))
        if (x1, y1) == (x2, y2):
            return self
        if rx == 0 or ry == 0:
            return self.line_to(x2, y2)
        phi = math.radians(float(x_axis_rotation))
        cp, sp = math.cos(phi), math.sin(phi)
        dx, dy = (x1 - x2) / 2, (y1 - y2) / 2
        x1p, y1p = cp * dx + sp * dy, -sp * dx + cp * dy
        lam = (x1p / rx) ** 2 + (y1p / ry) ** 2
        if lam > 1:
            s = math.sqrt(lam)
            rx, ry = rx * s, ry * s
        num = rx * rx * ry * ry - rx * rx * y1p * y1p - ry * ry * x1p * x1p
        den = rx * rx * y1p * y1p + ry * ry * x1p * x1p
        coef = math.sqrt(max(0.0, num / den)) if den else 0.0
        if bool(large_arc) == bool(sweep):
            coef = -coef
        cxp, cyp = coef * rx * y1p / ry, -coef * ry * x1p / rx
        cx = cp * cxp - sp * cyp + (x1 + x2) / 2
        cy = sp * cxp + cp * cyp + (y1 + y2) / 2

        def ang(ux, uy, vx, vy):
            return math.atan2(ux * vy - uy * vx, ux * vx + uy * vy)

        th1 = ang(1, 0, (x1p - cxp) / rx, (y1p - cyp) / ry)
        dth = ang((x1p - cxp) / rx, (y1p - cyp) / ry, (-x1p - cxp) / rx, (-y1p - cyp) / ry)
        if not sweep and dth > 0:
            dth -= 2 * math.pi
        elif sweep and dth < 0:
            dth += 2 * math.pi
        self._arc_center(cx, cy, rx, ry, phi, th1, dth, end=(x2, y2))
        return self

    def _arc_center(self, cx, cy, rx, ry, phi, th1, dth, end=None) -> None:
        n = max(1, math.ceil(abs(dth) / (math.pi / 2) - 1e-9))
        d = dth / n
        k = 4.0 / 3.0 * math.tan(d / 4)
        cp, sp = math.cos(phi), math.sin(phi)

        def pt(ex, ey):
            return cx + cp * rx * ex - sp * ry * ey, cy + sp * rx * ex + cp * ry * ey

        for i in range(n):
            a0, a1 = th1 + i * d, th1 + (i + 1) * d
            c0, s0, c1, s1 = math.cos(a0), math.sin(a0), math.cos(a1), math.sin(a1)
            p1 = pt(c0 - k * s0, s0 + k * c0)
            p2 = pt(c1 + k * s1, s1 - k * c1)
            p3 = end if (end is not None and i == n - 1) else pt(c1, s1)
            x0, y0 = self._cur
            self._cubic(x0, y0, *p1, *p2, *p3)
            self._joint[-1] = i == n - 1

    def close(self) -> Path:
        """Close the current subpath with a line back to its start."""
        if self._cur is not None:
            self._touch()
            self._close_implicit(explicit=True)
            self._sub_closed[-1] = True
            self._sub_open = False
        return self

    def _close_implicit(self, explicit: bool = False) -> None:
        if self._cur is not None and self._start is not None and self._cur != self._start:
            self.line_to(*self._start)
            self._implicit[-1] = not explicit
        self._cur = self._start

    def extend(self, other: Path) -> Path:
        """Append the subpaths of ``other`` (a compound path)."""
        self._close_implicit()
        other._close_implicit()
        off = len(self._rec)
        self._sub_first.extend(f + off for f in other._sub_first)
        self._sub_closed.extend(other._sub_closed)
        self._sub_pt.extend(other._sub_pt)
        self._rec.extend(other._rec)
        self._kind.extend(other._kind)
        self._implicit.extend(other._implicit)
        self._joint.extend(other._joint)
        self._chunks.extend(other._chunks)
        self._chunk_kinds.extend(other._chunk_kinds)
        self._start, self._cur = other._start, other._cur
        self._sub_open = False
        return self

    def transformed(self, transform) -> Path:
        """A copy with the affine ``transform`` applied to its points (subpaths kept).

        Examples
        --------
        >>> rect(0, 0, 2, 2).transformed((2, 0, 0, 2, 1, 1)).bbox()
        (1.0, 1.0, 5.0, 5.0)
        """
        m = as_transform(transform)
        q = Path()
        self._close_implicit()

        def tp(pts):
            a = np.asarray(pts, np.float64).reshape(-1, 2)
            return a @ m[:, :2].T + m[:, 2] if m is not None else a

        if self._rec:
            q._rec = [tuple(r) for r in tp(self._rec).reshape(-1, 8)]
        q._kind = list(self._kind)
        q._implicit = list(self._implicit)
        q._joint = list(self._joint)
        q._sub_first = list(self._sub_first)
        q._sub_closed = list(self._sub_closed)
        q._sub_pt = [tuple(r) for r in tp(self._sub_pt)] if self._sub_pt else []
        q._chunks = [tp(c).reshape(-1, 8) for c in self._chunks]
        q._chunk_kinds = list(self._chunk_kinds)
        q._start = None if self._start is None else tuple(tp(self._start)[0])
        q._cur = None if self._cur is None else tuple(tp(self._cur)[0])
        return q

    @classmethod
    def from_polygons(cls, polys: np.ndarray) -> Path:
        """Closed polygons in bulk: ``polys`` is (m, k, 2), m polygons of k vertices each (for
        filling; a compound path).

        Examples
        --------
        >>> sq = np.array([[[0, 0], [4, 0], [4, 4], [0, 4]]], float)
        >>> Path.from_polygons(sq).bbox()
        (0.0, 0.0, 4.0, 4.0)
        """
        p = cls()
        p.add_polygons(polys)
        return p

    def add_polygons(self, polys: np.ndarray) -> Path:
        """Append closed polygons (m, k, 2) in bulk (for filling)."""
        polys = np.asarray(polys, np.float64)
        if polys.ndim != 3 or polys.shape[2] != 2:
            raise InputError("Path", f"polygons are an (m, k, 2) array, got shape {polys.shape}")
        if polys.size:
            a = polys.reshape(-1, 2)
            b = np.roll(polys, -1, axis=1).reshape(-1, 2)
            self._chunks.append(np.concatenate([a, a, b, b], axis=1))
            self._chunk_kinds.append(np.zeros(len(a), np.uint8))
        return self

    @classmethod
    def from_records(cls, records: np.ndarray, kinds=None) -> Path:
        """A path (for filling) from cubic records (n, 8) of closed outlines, e.g. a row of
        :func:`ellipse_records`; ``kinds`` (n,) is 1 for curves, 0 for lines (default: 1 where a
        record's control points are off its end points).

        Examples
        --------
        >>> Path.from_records(ellipse_records(5, 5, 2, 1)[0]).bbox()
        (3.0, 4.0, 7.0, 6.0)
        """
        rec = np.ascontiguousarray(records, np.float64).reshape(-1, 8)
        if kinds is None:
            p = rec.reshape(-1, 4, 2)
            kinds = ~(np.all(p[:, 1] == p[:, 0], axis=1) & np.all(p[:, 2] == p[:, 3], axis=1))
        q = cls()
        q._chunks.append(rec)
        q._chunk_kinds.append(np.asarray(kinds, np.uint8).reshape(-1))
        return q

    def stroke_records(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For strokes: (records, kinds, subpath of each record, closed per subpath, start point per
        subpath); implicit closing lines left out."""
        self._close_implicit()
        rec = np.asarray(self._rec, dtype=np.float64).reshape(-1, 8)
        kind = np.asarray(self._kind, dtype=np.uint8)
        sub = np.searchsorted(np.asarray(self._sub_first, np.int64), np.arange(len(rec)), side="right") - 1
        keep = ~np.asarray(self._implicit, bool)
        closed = np.asarray(self._sub_closed, bool)
        pts = np.asarray(self._sub_pt, np.float64).reshape(-1, 2)
        return rec[keep], kind[keep], sub[keep], closed, pts

    def vertices(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]]:
        """Per subpath, for markers: (vertices (k, 2), incoming directions (k, 2), outgoing
        directions (k, 2), closed). Vertices are the path data's: a subpath's start and the end of
        each command (an arc's inner pieces are not vertices); a direction is (0, 0) where there is
        none (a subpath's first incoming, last outgoing). Degenerate tangents fall back to the chord."""
        self._close_implicit()
        out = []
        firsts = [*self._sub_first, len(self._rec)]
        for si in range(len(self._sub_first)):
            a, b = firsts[si], firsts[si + 1]
            recs = [np.asarray(self._rec[i], np.float64).reshape(4, 2) for i in range(a, b) if not self._implicit[i]]
            joints = [self._joint[i] for i in range(a, b) if not self._implicit[i]]
            start = np.asarray(self._sub_pt[si], np.float64)
            pts, d_in, d_out = [start], [np.zeros(2)], []
            for r, j in zip(recs, joints, strict=True):
                t0 = next((q - r[0] for q in (r[1], r[2], r[3]) if np.any(q != r[0])), np.zeros(2))
                t1 = next((r[3] - q for q in (r[2], r[1], r[0]) if np.any(q != r[3])), np.zeros(2))
                if len(d_out) < len(pts):
                    d_out.append(t0)
                if j:
                    pts.append(r[3])
                    d_in.append(t1)
            d_out.append(np.zeros(2))
            out.append((np.array(pts), np.array(d_in), np.array(d_out[:len(pts)]), bool(self._sub_closed[si])))
        return out

    # ---------------------------------------------------------------- queries
    def records(self, transform=None, stroke: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(cubic records float64 (n, 8), kinds uint8 (n,)), transformed; closed for filling, or
        without the implicit closing lines when ``stroke``."""
        self._close_implicit()
        rec = np.asarray(self._rec, dtype=np.float64).reshape(-1, 8)
        kind = np.asarray(self._kind, dtype=np.uint8)
        if stroke and len(rec):
            keep = ~np.asarray(self._implicit, bool)
            rec, kind = rec[keep], kind[keep]
        if self._chunks and not stroke:
            rec = np.concatenate([rec, *self._chunks])
            kind = np.concatenate([kind, *self._chunk_kinds])
        m = as_transform(transform)
        if m is not None and len(rec):
            pts = rec.reshape(-1, 4, 2)
            with np.errstate(all="ignore"):  # non-finite input is reported by the caller
                pts = pts @ m[:, :2].T + m[:, 2]
            rec = pts.reshape(-1, 8)
        return rec, kind

    def bbox(self, transform=None) -> tuple[float, float, float, float]:
        """Bounding box of the flattened path (x0, y0, x1, y1); (0, 0, 0, 0) when empty."""
        rec, kind = self.records(transform)
        seg, _ = flatten(rec, kind, np.zeros(len(rec), np.int64))
        if not len(seg):
            return (0.0, 0.0, 0.0, 0.0)
        xs, ys = seg[:, 0::2], seg[:, 1::2]
        return (float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()))

    def __len__(self) -> int:
        return len(self._rec) + sum(len(c) for c in self._chunks)


def flatten(rec: np.ndarray, kind: np.ndarray, owner: np.ndarray, tol: float = TOLERANCE,
            dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Flatten cubic records to line segments, all at once.

    Returns (segments (m, 4) as x0, y0, x1, y1 in ``dtype`` (float32 or float64); owner of each
    segment). The number of pieces of a curve comes from Wang's formula:
    n = ceil(sqrt(3/4 * max|second difference| / tol)); lines are one segment.

    Every record's points are written once, as whole points: the curves are grouped by their piece
    count and evaluated as one matrix product per group (Bernstein weights times control points).

    Examples
    --------
    >>> seg, owner = flatten(ellipse_records(0, 0, 10, 10).reshape(-1, 8), np.ones(4, np.uint8), np.zeros(4, int))
    >>> seg.shape, bool(np.allclose(np.hypot(seg[:, 0], seg[:, 1]), 10, atol=0.1))
    ((24, 4), True)
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise InputError("flatten", f"dtype must be float32 or float64, got {dtype}")
    rec = np.asarray(rec, np.float64).reshape(-1, 8)
    owner = np.asarray(owner)
    if not len(rec):
        return np.zeros((0, 4), dtype), np.zeros(0, owner.dtype)
    point = np.int64 if dtype == np.float32 else np.complex128  # one (x, y) pair as one element
    curve = np.nonzero(np.asarray(kind).reshape(-1))[0]
    q = rec[curve]
    with np.errstate(invalid="ignore", over="ignore"):
        d1 = (q[:, 0] - 2 * q[:, 2] + q[:, 4]) ** 2 + (q[:, 1] - 2 * q[:, 3] + q[:, 5]) ** 2
        d2 = (q[:, 2] - 2 * q[:, 4] + q[:, 6]) ** 2 + (q[:, 3] - 2 * q[:, 5] + q[:, 7]) ** 2
        nc = np.ceil(np.sqrt(0.75 / tol * np.sqrt(np.maximum(d1, d2))))
    n = np.ones(len(rec), np.int64)
    n[curve] = np.clip(np.nan_to_num(nc, nan=1.0), 1, _MAX_SUBDIV)
    end = np.cumsum(n)
    start = end - n
    total = int(end[-1])
    seg = np.empty((total, 2), point)  # start and end point of each segment
    ends = np.ascontiguousarray(rec[:, [0, 1, 6, 7]], dtype).view(point)  # (R, 2): each record's end points
    seg[start, 0] = ends[:, 0]
    seg[end - 1, 1] = ends[:, 1]
    more = n[curve] > 1
    big, qb = curve[more], q[more]
    nb = n[big].astype(np.int16)  # <= _MAX_SUBDIV: a stable sort of int16 is a radix sort
    order = np.argsort(nb, kind="stable")
    hist = np.bincount(nb, minlength=2)
    bounds = np.cumsum(hist) - hist
    for v in np.nonzero(hist)[0].tolist():
        sel = order[bounds[v]:bounds[v] + hist[v]]
        t = np.arange(1, v) / v
        s = 1 - t
        weights = np.stack([s ** 3, 3 * s * s * t, 3 * s * t * t, t ** 3], axis=1)  # (v - 1, 4)
        ctrl = qb[sel].reshape(-1, 4, 2).transpose(1, 0, 2).reshape(4, -1)  # (4, 2 m)
        inner = np.ascontiguousarray((weights @ ctrl).astype(dtype, copy=False)).view(point)  # (v - 1, m)
        rows = start[big[sel]] + np.arange(1, v)[:, None]
        seg[rows, 0] = inner
        seg[rows - 1, 1] = inner
    return seg.view(dtype).reshape(total, 4), np.repeat(owner, n)


# ---------------------------------------------------------------- many shapes at once (numpy)
def _bcast(*args):
    arrs = np.broadcast_arrays(*[np.asarray(a, np.float64) for a in args])
    return [a.ravel() for a in arrs]


def line_records(points: np.ndarray) -> np.ndarray:
    """Closed polygons (m, k, 2) as cubic records (m, k, 8) of their k edges.

    Examples
    --------
    >>> line_records([[[0, 0], [4, 0], [0, 3]]])[0, 2].tolist()
    [0.0, 3.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0]
    """
    p = np.asarray(points, np.float64)
    m, k = p.shape[:2]
    out = np.empty((m, k, 8))
    if out.size:
        # One (x, y) pair as one complex128 element, so that every copy below is one long loop.
        pc = np.ascontiguousarray(p).view(np.complex128).reshape(m, k)
        oc = out.view(np.complex128)  # (m, k, 4): start, start, next vertex, next vertex
        oc[..., 0] = pc
        oc[..., 1] = pc
        nxt = oc[..., 2].reshape(-1)  # each record's end: the following vertex ...
        nxt[:-1] = pc.reshape(-1)[1:]
        oc[:, -1, 2] = pc[:, 0]  # ... and the polygon's first for its last edge
        oc[..., 3] = oc[..., 2]
    return out


def _ellipse_unit() -> tuple[np.ndarray, np.ndarray]:
    """The unit circle's four quarters as cubic control points: x and y, each (4 quarters, 4 points)."""
    k = _KAPPA
    c, s = np.array([1.0, 0.0, -1.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0, -1.0, 0.0])
    # quarter i goes from angle i*90 to (i+1)*90 degrees; control points along the tangents
    p0x, p0y = c[:4], s[:4]
    p3x, p3y = c[1:], s[1:]
    p1x, p1y = p0x - k * p0y, p0y + k * p0x
    p2x, p2y = p3x + k * p3y, p3y - k * p3x
    return np.stack([p0x, p1x, p2x, p3x], axis=1), np.stack([p0y, p1y, p2y, p3y], axis=1)


_UNIT_X, _UNIT_Y = _ellipse_unit()


def ellipse_records(cx, cy, rx, ry) -> np.ndarray:
    """Ellipses (broadcast arrays) as cubic records (m, 4, 8), as :func:`ellipse` draws one.

    Examples
    --------
    >>> ellipse_records([0, 10], 0, 1, 2).shape
    (2, 4, 8)
    """
    cx, cy, rx, ry = _bcast(cx, cy, rx, ry)
    out = np.empty((len(cx), 4, 4, 2))  # (ellipse, quarter, control point, x / y)
    for j, (c, r, unit) in enumerate(((cx, rx, _UNIT_X), (cy, ry, _UNIT_Y))):  # c + r * unit
        v = out[..., j]
        np.multiply(r[:, None, None], unit, out=v)
        v += c[:, None, None]
    return out.reshape(len(cx), 4, 8)


def rect_records(x, y, w, h) -> np.ndarray:
    """Axis-aligned rectangles (broadcast arrays) as line records (m, 4, 8).

    Examples
    --------
    >>> rect_records(1, 2, 3, 4)[0, 1].tolist()
    [4.0, 2.0, 4.0, 2.0, 4.0, 6.0, 4.0, 6.0]
    """
    x, y, w, h = _bcast(x, y, w, h)
    x1, y1 = x + w, y + h
    corners = np.empty((len(x), 4, 2))  # (x, y), (x1, y), (x1, y1), (x, y1)
    for i, (a, b) in enumerate(((x, y), (x1, y), (x1, y1), (x, y1))):
        corners[:, i, 0] = a
        corners[:, i, 1] = b
    return line_records(corners)


def rounded_rect_records(x, y, w, h, rx, ry=None) -> np.ndarray:
    """Rounded rectangles (broadcast arrays; radii clamped to half the sides, and positive) as
    cubic records (m, 8, 8): four sides and four quarter-ellipse corners, as :func:`rounded_rect`."""
    ry = rx if ry is None else ry
    x, y, w, h, rx, ry = _bcast(x, y, w, h, rx, ry)
    rx, ry = np.minimum(np.abs(rx), np.abs(w) / 2), np.minimum(np.abs(ry), np.abs(h) / 2)
    m = len(x)
    corners = ellipse_records(np.zeros(m), np.zeros(m), rx, ry)  # quarters: +x+y, -x+y, -x-y, +x-y
    cxs = np.stack([x + w - rx, x + rx, x + rx, x + w - rx], 1)
    cys = np.stack([y + h - ry, y + h - ry, y + ry, y + ry], 1)
    corners = corners.reshape(m, 4, 4, 2) + np.stack([cxs, cys], axis=2)[:, :, None, :]
    # order: corner (+x+y) then side to (-x+y) corner, and so on round the rectangle
    starts = corners[:, :, 3]  # each corner's end point
    ends = np.roll(corners[:, :, 0], -1, axis=1)  # the next corner's start point
    sides = np.concatenate([starts, starts, ends, ends], axis=2)
    out = np.empty((m, 8, 8))
    out[:, 0::2] = corners.reshape(m, 4, 8)
    out[:, 1::2] = sides
    return out


# ---------------------------------------------------------------- shape helpers
def rect(x: float, y: float, w: float, h: float) -> Path:
    """An axis-aligned rectangle.

    Examples
    --------
    >>> from pywgpuprims.scene import rect
    >>> rect(1, 2, 3, 4).bbox()
    (1.0, 2.0, 4.0, 6.0)
    """
    return Path().move_to(x, y).line_to(x + w, y).line_to(x + w, y + h).line_to(x, y + h).close()


def rounded_rect(x: float, y: float, w: float, h: float, rx: float, ry: float | None = None) -> Path:
    """A rectangle with elliptical corners of radii (rx, ry) (clamped to half the sides)."""
    ry = rx if ry is None else ry
    rx, ry = min(abs(rx), abs(w) / 2), min(abs(ry), abs(h) / 2)
    if rx <= 0 or ry <= 0:
        return rect(x, y, w, h)
    p = Path().move_to(x + rx, y).line_to(x + w - rx, y)
    p.arc_to(rx, ry, 0, False, True, x + w, y + ry).line_to(x + w, y + h - ry)
    p.arc_to(rx, ry, 0, False, True, x + w - rx, y + h).line_to(x + rx, y + h)
    p.arc_to(rx, ry, 0, False, True, x, y + h - ry).line_to(x, y + ry)
    p.arc_to(rx, ry, 0, False, True, x + rx, y)
    return p.close()


def ellipse(cx: float, cy: float, rx: float, ry: float) -> Path:
    """An axis-aligned ellipse (four cubic arcs)."""
    k = _KAPPA
    p = Path().move_to(cx + rx, cy)
    p.cubic_to(cx + rx, cy + k * ry, cx + k * rx, cy + ry, cx, cy + ry)
    p.cubic_to(cx - k * rx, cy + ry, cx - rx, cy + k * ry, cx - rx, cy)
    p.cubic_to(cx - rx, cy - k * ry, cx - k * rx, cy - ry, cx, cy - ry)
    p.cubic_to(cx + k * rx, cy - ry, cx + rx, cy - k * ry, cx + rx, cy)
    return p.close()


def circle(cx: float, cy: float, r: float) -> Path:
    """A circle.

    Examples
    --------
    >>> from pywgpuprims.scene import circle
    >>> [round(v, 3) for v in circle(50, 50, 10).bbox()]
    [40.0, 40.0, 60.0, 60.0]
    """
    return ellipse(cx, cy, r, r)


def polygon(points: Sequence[Sequence[float]], closed: bool = True) -> Path:
    """A polygon through ``points`` ((x, y) pairs)."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    p = Path()
    if not len(pts):
        return p
    p.move_to(*pts[0])
    for q in pts[1:]:
        p.line_to(*q)
    return p.close() if closed else p


def star(cx: float, cy: float, r_outer: float, r_inner: float | None = None, points: int = 5,
         rotation: float = -90.0) -> Path:
    """A star polygon with ``points`` tips (rotation in degrees of the first tip)."""
    r_inner = r_outer * 0.4 if r_inner is None else r_inner
    a = np.radians(rotation) + np.arange(2 * points) * np.pi / points
    r = np.where(np.arange(2 * points) % 2 == 0, r_outer, r_inner)
    return polygon(np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], axis=1))
