"""SVG ``marker`` for :mod:`.svg`: ``marker-start`` / ``marker-mid`` / ``marker-end`` on ``path``,
``line``, ``polyline`` and ``polygon``, with ``orient`` (an angle, ``auto``, ``auto-start-reverse``),
``markerUnits`` (``strokeWidth`` or ``userSpaceOnUse``), ``markerWidth`` / ``markerHeight``,
``refX`` / ``refY``, ``viewBox`` with ``preserveAspectRatio`` and the clip to the marker's viewport
(unless ``overflow`` is visible). Each marker instance is the marker's content drawn in its own
transform, as vector geometry."""

from __future__ import annotations

import math

import numpy as np

from .css import parse_url
from .geometry import Path, compose, rect

MARKED = ("path", "line", "polyline", "polygon")


def _angle(d: np.ndarray) -> float | None:
    return math.degrees(math.atan2(d[1], d[0])) if np.any(d != 0) else None


def _bisect(d_in: np.ndarray, d_out: np.ndarray) -> float:
    a, b = _angle(d_in), _angle(d_out)
    if a is None and b is None:
        return 0.0
    if a is None or b is None:
        return a if b is None else b
    diff = (b - a + 180.0) % 360.0 - 180.0
    return a + diff / 2


def instances(p: Path) -> list[tuple[str, float, float, float]]:
    """(which, x, y, auto angle in degrees) for every vertex of ``p``: 'start', 'mid' or 'end'."""
    subs = p.vertices()
    out = []
    n_sub = len(subs)
    for si, (pts, d_in, d_out, closed) in enumerate(subs):
        d_in, d_out = d_in.copy(), d_out.copy()
        if closed and len(pts) > 1:  # the first and last vertex join the closing segment to the first
            d_in[0] = d_in[-1]
            d_out[-1] = d_out[0]
        for k in range(len(pts)):
            first = si == 0 and k == 0
            last = si == n_sub - 1 and k == len(pts) - 1
            which = "start" if first else "end" if last else "mid"
            out.append((which, float(pts[k, 0]), float(pts[k, 1]), _bisect(d_in[k], d_out[k])))
    if len(out) == 1:  # a single vertex is the start and the end
        out.append(("end", *out[0][1:]))
    return out


def draw_markers(ld, el, p: Path, tr, st: dict, lengths, op: float, depth: int) -> None:
    """Draw the markers of shape ``el`` (its fill path ``p`` in user space, transform ``tr``)."""
    from .svg import _floats, _local, view_box_transform  # noqa: PLC0415

    refs = {w: parse_url(st.get(f"marker-{w}")) for w in ("start", "mid", "end")}
    if not any(refs.values()):
        return
    fs = st["font-size"]
    sw = lengths.resolve(st.get("stroke-width", "1"), "xy", 1.0, font_size=fs)
    for which, x, y, auto in instances(p):
        ref = refs[which]
        if ref is None:
            continue
        mk = ld.ids.get(ref[0])
        if mk is None or _local(mk.tag) != "marker" or id(mk) in ld._markers_open:
            continue
        mst = ld.doc_style(mk)
        g = mk.get
        units = (g("markerUnits") or "strokeWidth").strip()
        scale = sw if units != "userSpaceOnUse" else 1.0
        mw = lengths.resolve(g("markerWidth") or "3", "x", 3.0, font_size=fs)
        mh = lengths.resolve(g("markerHeight") or "3", "y", 3.0, font_size=fs)
        if not (mw > 0 and mh > 0 and scale > 0):
            continue
        orient = (g("orient") or "0").strip()
        if orient == "auto":
            ang = auto
        elif orient == "auto-start-reverse":
            ang = auto + (180.0 if which == "start" else 0.0)
        else:
            try:
                ang = float(orient[:-3]) if orient.endswith("deg") else float(orient)
            except ValueError:
                ang = 0.0
        vb = _floats(g("viewBox"))
        vbt = np.array([[1.0, 0, 0], [0, 1.0, 0]])
        if vb is not None and len(vb) == 4:
            if not (vb[2] > 0 and vb[3] > 0):
                continue
            vbt = view_box_transform(vb, g("preserveAspectRatio"), mw, mh)
        rx = lengths.resolve(g("refX") or "0", "x", 0.0, font_size=fs)
        ry = lengths.resolve(g("refY") or "0", "y", 0.0, font_size=fs)
        refp = vbt[:, :2] @ np.array([rx, ry]) + vbt[:, 2]
        c, s = math.cos(math.radians(ang)), math.sin(math.radians(ang))
        place = np.array([[c * scale, -s * scale, x], [s * scale, c * scale, y]])  # vertex, rotation, scale
        base = compose(tr, compose(place, np.array([[1.0, 0, -refp[0]], [0, 1.0, -refp[1]]])))
        clip = mst.get("overflow", "hidden") not in ("visible", "auto")
        ld.budget.charge(1)
        if clip:
            if vb is not None and len(vb) == 4:  # the viewport is the viewBox's area when it is sliced
                ld.scene.push_clip(rect(*vb), transform=compose(base, vbt))
            else:
                ld.scene.push_clip(rect(0, 0, mw, mh), transform=base)
        ld._markers_open.add(id(mk))
        try:
            inner = type(lengths)(vb[2], vb[3], fs, lengths.root) if vb is not None and len(vb) == 4 else lengths
            for child in mk:
                ld.draw(child, compose(base, vbt), mst, inner, op, depth + 1)
        finally:
            ld._markers_open.discard(id(mk))
            if clip:
                ld.scene.pop_clip()
