"""SVG ``pattern`` paint for :mod:`.svg`. The tile's content is drawn alone (a scene of its own,
rendered on the GPU at the device scale, as resvg does), and the shape is a clip under which every
device pixel samples that tile, repeated (bilinear), through the pattern's transform: tiles meet
without seams. ``patternUnits``, ``patternContentUnits``, ``viewBox`` with ``preserveAspectRatio``,
``patternTransform`` and ``href`` inheritance (attributes and content) follow SVG 1.1; the paint's
opacity (``fill-opacity``, ``stroke-opacity``) scales the pixels. Each pixel counts against the
expansion budget."""

from __future__ import annotations

import math

import numpy as np

from .builder import Scene
from .geometry import compose
from .pathdata import parse_transform
from .svg_raster import MAX_IMAGE_PIXELS, put_sampled


def chain_attr(chain, name: str, default=None):
    """The first value of attribute ``name`` along an ``href`` chain (the element first), as paint
    servers and patterns inherit their attributes."""
    for g in chain:
        v = g.get(name)
        if v is not None:
            return v
    return default


def _chain(ld, el) -> list:
    from .svg import _local  # noqa: PLC0415

    chain, e = [], el
    while e is not None and e not in chain and _local(e.tag) == "pattern" and len(chain) < 64:
        chain.append(e)
        e = ld.href(e)
    return chain


def draw_pattern(ld, el, p, rule: str, tr, pattern, alpha: float, lengths, bbox_path) -> None:
    """Fill path ``p`` (user space, transform ``tr``) of element ``el`` with ``pattern``."""
    from .svg import _floats, _local, view_box_transform  # noqa: PLC0415

    chain = _chain(ld, pattern)

    def attr(name, default=None):
        return chain_attr(chain, name, default)

    if id(pattern) in ld._patterns_open:
        return  # a pattern drawn inside itself: nothing
    units = (attr("patternUnits") or "objectBoundingBox").strip()
    content_units = (attr("patternContentUnits") or "userSpaceOnUse").strip()
    bb = bbox_path.bbox()
    bw, bh = bb[2] - bb[0], bb[3] - bb[1]
    obb = units != "userSpaceOnUse"
    if (obb or content_units == "objectBoundingBox") and not (bw > 0 and bh > 0):
        return

    def num(name, axis):
        v = (attr(name) or "0").strip()
        if obb:
            try:
                k = float(v[:-1]) / 100 if v.endswith("%") else float(v)
            except ValueError:
                k = 0.0
            return k * (bw if axis == "x" else bh) + ((bb[0] if axis == "x" else bb[1]) if name in ("x", "y") else 0)
        return lengths.resolve(v, axis, 0.0)

    x, y, w, h = num("x", "x"), num("y", "y"), num("width", "x"), num("height", "y")
    if not (w > 0 and h > 0):
        return
    pt, _ = parse_transform(attr("patternTransform"))
    vb = _floats(attr("viewBox"))
    vb = vb if vb is not None and len(vb) == 4 else None
    if vb is not None and not (vb[2] > 0 and vb[3] > 0):
        return
    if vb is not None:
        content = view_box_transform(vb, attr("preserveAspectRatio"), w, h)
    elif content_units == "objectBoundingBox":
        content = np.array([[bw, 0, 0], [0, bh, 0]], float)
    else:
        content = None
    holder = next((g for g in chain if any(isinstance(c.tag, str) and _local(c.tag) not in ("title", "desc")
                                           for c in g)), None)
    if holder is None:
        return
    # The tile, rasterised at the device scale, in its own pixels.
    ptr = compose(tr, pt)
    if ptr is None:
        ptr = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    sx, sy = math.hypot(ptr[0, 0], ptr[1, 0]), math.hypot(ptr[0, 1], ptr[1, 1])
    tw, th = max(1, math.ceil(w * sx - 1e-9)), max(1, math.ceil(h * sy - 1e-9))
    if tw * th > MAX_IMAGE_PIXELS:
        ld.warn(f"a pattern tile over {MAX_IMAGE_PIXELS} pixels", _local(el.tag), "is not drawn")
        return
    ld.budget.charge(max(1, ld.weight(holder)))
    pst = ld.doc_style(holder)
    inner = type(lengths)(vb[2], vb[3], pst.get("font-size", 16.0), lengths.root) if vb is not None else lengths
    sub, main, canvas = Scene(), ld.scene, ld.canvas
    ld.scene, ld.canvas = sub, (tw, th)
    ld._patterns_open.add(id(pattern))
    try:
        ctm = compose(np.array([[tw / w, 0, 0], [0, th / h, 0]]), content)
        for c in holder:
            ld.draw(c, ctm, pst, inner, 1.0, 1)
    finally:
        ld._patterns_open.discard(id(pattern))
        ld.scene, ld.canvas = main, canvas
    if not len(sub):
        return
    img = sub.render(tw, th, background=(0, 0, 0, 0)).astype(np.float64) / 255
    tile = np.concatenate([img[..., :3] * img[..., 3:], img[..., 3:]], axis=2)
    m = compose(ptr, np.array([[w / tw, 0, x], [0, h / th, y]]))  # tile pixels -> device
    dev = np.array([[bb[0], bb[1]], [bb[2], bb[1]], [bb[0], bb[3]], [bb[2], bb[3]]])
    if tr is not None:
        dev = dev @ tr[:, :2].T + tr[:, 2]
    pad = 1.0  # a stroke's outline reaches past the fill box: cover the outline's box instead
    ob = p.bbox(tr)
    box = (min(dev[:, 0].min(), ob[0]) - pad, min(dev[:, 1].min(), ob[1]) - pad,
           max(dev[:, 0].max(), ob[2]) + pad, max(dev[:, 1].max(), ob[3]) + pad)
    ld.scene.push_clip(p, fill_rule=rule, transform=tr)
    try:
        put_sampled(ld, tile, m, box, alpha, smooth=True, wrap=True)
    finally:
        ld.scene.pop_clip()


def has_size(ld, pattern) -> bool:
    """Whether ``pattern`` (with its ``href`` chain) has a positive width and height (else the paint
    falls back, as resvg does)."""
    from .css import parse_number  # noqa: PLC0415

    chain = _chain(ld, pattern)
    for name in ("width", "height"):
        v = next((g.get(name) for g in chain if g.get(name) is not None), None)
        n = parse_number((v or "0").strip().rstrip("%"), 0.0)
        if n is None or not n > 0:
            return False
    return True
