"""The SVG front end of :mod:`pywgpuprims.scene`: an SVG document to a :class:`Scene`.

XML goes through defusedxml (no entity expansion, no external resources); CSS through tinycss2 and
cssselect2 (``<style>`` sheets with selectors, ``style`` attributes, presentation attributes,
inheritance, ``inherit``, ``currentColor``, ``!important``). Read: ``svg`` (nested, ``viewBox``,
``preserveAspectRatio``), ``g``, ``a``, ``defs``, ``use``, ``symbol``, ``switch``; every shape (SVG 2
``auto`` radii) and path data up to its first error; lengths in every unit and percentages of the
right viewport; every colour syntax; fill and stroke with their opacities (strokes with widths,
caps, joins, miter limits, dashes, ``vector-effect: non-scaling-stroke``; :mod:`.stroke`);
``linearGradient`` / ``radialGradient`` (:mod:`.paint`); ``clip-path`` with ``clipPath`` in all its
forms (reference cycles drop the cyclic link, as resvg does); ``opacity`` (a layer wherever more
than one thing is painted, see :meth:`Scene.push_layer`); simple
``text`` / ``tspan`` (:mod:`.text`); ``mask`` (luminance, a masked layer); ``marker``
(:mod:`.svg_markers`); ``pattern`` (:mod:`.svg_pattern`); ``image`` and ``filter`` with
``feGaussianBlur`` / ``feOffset`` / ``feFlood`` / ``feMerge`` / ``feColorMatrix`` /
``feComposite`` (:mod:`.svg_raster`). Anything else
(other filter primitives, CSS filter functions, ``foreignObject``, external images, ...) gives one
warning per feature and element name.

Hostile files are bounded: elements after ``use`` and clip expansion, path segments and nesting
depth each have a budget (arguments of :func:`load_svg`); past it, :class:`~pywgpuprims.InputError`.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path as FsPath

import defusedxml.ElementTree as DET
import numpy as np

from .._errors import InputError
from .builder import Scene
from .css import INHERITED, Cascade, Lengths, parse_color, parse_number, parse_opacity, parse_url
from .geometry import Path, compose, ellipse, polygon, rect, rounded_rect
from .paint import Gradient
from .pathdata import parse_path_d, parse_transform
from .stroke import StrokeStyle, stroke_outline
from .svg_markers import MARKED, draw_markers
from .svg_pattern import chain_attr, draw_pattern, has_size
from .svg_raster import draw_filtered, draw_image, filter_of

_XLINK = "{http://www.w3.org/1999/xlink}href"
_SHAPES = ("rect", "circle", "ellipse", "line", "polygon", "polyline", "path")
_GROUPS = ("g", "a")
_QUIET = {"defs", "clipPath", "title", "desc", "metadata", "style", "linearGradient", "radialGradient", "symbol",
          "mask", "pattern", "marker", "filter", "script", "font", "font-face", "cursor", "view", "stop",
          "namedview", "sodipodi:namedview"}
_ALIGN = {"none", "xMinYMin", "xMidYMin", "xMaxYMin", "xMinYMid", "xMidYMid", "xMaxYMid", "xMinYMax", "xMidYMax",
          "xMaxYMax"}
MAX_SIZE = 1 << 20
_INHERITABLE = INHERITED | {"font-size"}


def _local(tag) -> str:
    if not isinstance(tag, str):
        return ""
    return tag.split("}", 1)[1] if "}" in tag else tag


def _is_svg(el) -> bool:
    t = el.tag
    return isinstance(t, str) and (not t.startswith("{") or t.startswith("{http://www.w3.org/2000/svg}"))


def _floats(text) -> list[float] | None:
    import re  # noqa: PLC0415

    parts = [p for p in re.split(r"[\s,]+", (text or "").strip()) if p]
    try:
        return [float(p) for p in parts]
    except ValueError:
        return None


def view_box_transform(vb, par: str | None, w: float, h: float) -> np.ndarray:
    """The transform of a ``viewBox`` (x, y, w, h) into a ``w`` x ``h`` viewport under
    ``preserveAspectRatio`` ``par``."""
    vx, vy, vw, vh = vb
    parts = (par or "").split()
    if parts and parts[0] == "defer":
        parts = parts[1:]
    align = parts[0] if parts and parts[0] in _ALIGN else "xMidYMid"
    slice_ = len(parts) > 1 and parts[1] == "slice"
    sx, sy = w / vw, h / vh
    if align == "none":
        return np.array([[sx, 0, -vx * sx], [0, sy, -vy * sy]])
    s = max(sx, sy) if slice_ else min(sx, sy)
    ax = {"Min": 0.0, "Mid": 0.5, "Max": 1.0}[align[1:4]]
    ay = {"Min": 0.0, "Mid": 0.5, "Max": 1.0}[align[5:8]]
    tx = (w - vw * s) * ax - vx * s
    ty = (h - vh * s) * ay - vy * s
    return np.array([[s, 0, tx], [0, s, ty]])


def _scale_of(m) -> float:
    if m is None:
        return 1.0
    return math.sqrt(abs(float(np.linalg.det(m[:, :2])))) or float(np.abs(m[:, :2]).max()) or 1.0


class _Budget:
    def __init__(self, elements: int, segments: int, depth: int):
        self.elements, self.segments, self.depth = elements, segments, depth
        self.n_elements = 0
        self.n_segments = 0

    def charge(self, n: int = 1, segments: int = 0) -> None:
        self.n_elements += n
        self.n_segments += segments
        if self.n_elements > self.elements:
            raise InputError("load_svg", f"the document expands to more than max_elements={self.elements} elements "
                             "(after use and clip-path expansion); raise max_elements to render it")
        if self.n_segments > self.segments:
            raise InputError("load_svg", f"the document has more than max_segments={self.segments} path segments; "
                             "raise max_segments to render it")


class _Loader:
    def __init__(self, root, budget: _Budget):
        self.root = root
        self.budget = budget
        self.ids: dict[str, object] = {}
        self.parent: dict[int, object] = {}
        for el in root.iter():
            i = el.get("id")
            if i and i not in self.ids:
                self.ids[i] = el
            for c in el:
                self.parent[id(c)] = el
        self.cascade = Cascade(root, _local, self.warn)
        self.scene = Scene()
        self.warned: set[tuple[str, str]] = set()
        self._doc_style: dict[int, dict] = {}
        self._weight: dict[int, int] = {}
        self._masks_open: set[int] = set()
        self._markers_open: set[int] = set()
        self._patterns_open: set[int] = set()
        self.base_dir: str | None = None  # the SVG file's folder (images beside it), None for text
        self.canvas = (1, 1)  # the canvas in pixels (filters render on it)

    # ---------------------------------------------------------------- helpers
    def warn(self, feature: str, element: str, effect: str = "is not supported; it is ignored") -> None:
        """One warning per feature and element name."""
        if (feature, element) not in self.warned:
            self.warned.add((feature, element))
            warnings.warn(f"load_svg: {feature} on <{element}> {effect}", stacklevel=4)

    def href(self, el):
        h = el.get("href") or el.get(_XLINK)
        if not h:
            return None
        h = h.strip()
        return self.ids.get(h[1:]) if h.startswith("#") else None

    def style(self, el, parent: dict) -> dict:
        """Computed style of ``el`` under the parent's computed style."""
        decl = self.cascade.declared(el, _local)
        out = {k: v for k, v in parent.items() if k in _INHERITABLE}
        fs_parent = parent.get("font-size", 16.0)
        for k, v in decl.items():
            if v == "inherit":
                if k in parent:
                    out[k] = parent[k]
                else:
                    out.pop(k, None)
                continue
            if (k in ("fill", "stroke") and not _valid_paint(v)) or (
                    k in ("color", "stop-color") and parse_color(v) is None):
                continue  # an invalid value is ignored: the property keeps its inherited or initial value
            out[k] = v
        fs = decl.get("font-size")
        if fs is not None and fs != "inherit":
            named = {"xx-small": 9, "x-small": 10, "small": 13, "medium": 16, "large": 18, "x-large": 24,
                     "xx-large": 32}
            if fs in named:
                out["font-size"] = float(named[fs])
            elif fs == "larger":
                out["font-size"] = fs_parent * 1.2
            elif fs == "smaller":
                out["font-size"] = fs_parent / 1.2
            else:
                v = Lengths(fs_parent, fs_parent, fs_parent).resolve(fs, "x", None, font_size=fs_parent)
                out["font-size"] = v if v is not None and v >= 0 else fs_parent
        else:
            out["font-size"] = fs_parent
        return out

    def doc_style(self, el) -> dict:
        """Computed style of ``el`` in the document tree (for clipPath children, gradient stops)."""
        k = id(el)
        if k not in self._doc_style:
            chain = []
            e = el
            while e is not None and id(e) not in self._doc_style:
                chain.append(e)
                e = self.parent.get(id(e))
            st = self._doc_style[id(e)] if e is not None else {}
            for e in reversed(chain):
                st = self.style(e, st)
                self._doc_style[id(e)] = st
        return self._doc_style[k]

    def transform(self, el, st) -> np.ndarray | None:
        t = st.get("transform") if "transform" in st else el.get("transform")
        m, ok = parse_transform(t)
        if not ok:
            self.warn(f"transform {t!r} (invalid)", _local(el.tag))
        return m

    def weight(self, el, stack=()) -> int:
        """Elements under ``el`` after ``use`` expansion (memoised; bounded by the budget)."""
        k = id(el)
        if k in self._weight:
            return self._weight[k]
        if len(stack) > self.budget.depth:
            raise InputError("load_svg", f"elements nest or reference deeper than max_depth={self.budget.depth}")
        w = 1
        if _local(el.tag) == "use":
            t = self.href(el)
            if t is not None and id(t) not in stack:
                w += self.weight(t, (*stack, k))
        else:
            for c in el:
                w += self.weight(c, (*stack, k))
                if w > self.budget.elements:
                    break
        w = min(w, self.budget.elements + 1)
        self._weight[k] = w
        return w

    # ---------------------------------------------------------------- geometry
    def shape_path(self, el, lengths: Lengths, st) -> Path | None:
        t = _local(el.tag)
        g = el.get
        fs = st.get("font-size", 16.0)

        def L(name, axis, default=0.0):
            return lengths.resolve(g(name), axis, default, font_size=fs)

        if t == "rect":
            w, h = L("width", "x", 0.0), L("height", "y", 0.0)
            if not (w > 0 and h > 0):
                return None
            rx, ry = L("rx", "x", None), L("ry", "y", None)
            rx = None if rx is not None and rx < 0 else rx
            ry = None if ry is not None and ry < 0 else ry
            rx, ry = (rx if rx is not None else ry), (ry if ry is not None else rx)
            rx, ry = rx or 0.0, ry or 0.0
            x, y = L("x", "x"), L("y", "y")
            return rounded_rect(x, y, w, h, rx, ry) if (rx > 0 and ry > 0) else rect(x, y, w, h)
        if t == "circle":
            r = L("r", "xy")
            return ellipse(L("cx", "x"), L("cy", "y"), r, r) if r > 0 else None
        if t == "ellipse":
            rx, ry = L("rx", "x", None), L("ry", "y", None)
            rx = None if rx is not None and rx < 0 else rx
            ry = None if ry is not None and ry < 0 else ry
            rx, ry = (rx if rx is not None else ry), (ry if ry is not None else rx)
            if not (rx and ry and rx > 0 and ry > 0):
                return None
            return ellipse(L("cx", "x"), L("cy", "y"), rx, ry)
        if t == "line":
            return Path().move_to(L("x1", "x"), L("y1", "y")).line_to(L("x2", "x"), L("y2", "y"))
        if t in ("polygon", "polyline"):
            a = _points(g("points"))
            if len(a) < 4:
                return None
            self.budget.charge(0, len(a) // 2)
            return polygon(np.array(a[: len(a) // 2 * 2]).reshape(-1, 2), closed=t == "polygon")
        if t == "path":
            left = self.budget.segments - self.budget.n_segments
            try:
                p, _ = parse_path_d(g("d") or "", max_segments=left)
            except OverflowError:
                self.budget.charge(0, left + 1)
            self.budget.charge(0, len(p))
            return p if p._sub_first else None
        return None

    def bbox(self, el, lengths: Lengths, st, tr=None, depth=0):
        """Object bounding box (fill geometry) of ``el`` in the space ``tr`` maps its user space to."""
        t = _local(el.tag)
        if depth > self.budget.depth:
            return None
        if t in _SHAPES:
            p = self.shape_path(el, lengths, st)
            if p is None:
                return None
            return p.bbox(tr)
        if t == "text":
            from .text import text_paths  # noqa: PLC0415

            boxes = [p.bbox(tr) for p, _ in text_paths(self, el, lengths, st)]
            return _union(boxes)
        if t in (*_GROUPS, "svg", "switch", "use"):
            boxes = []
            kids = [self.href(el)] if t == "use" else list(el)
            for c in kids:
                if c is None or not isinstance(c.tag, str):
                    continue
                cst = self.style(c, st)
                if cst.get("display") == "none":
                    continue
                ctr = compose(tr, self.transform(c, cst))
                if t == "use":
                    ctr = compose(compose(tr, np.array([[1, 0, lengths.resolve(el.get("x"), "x", 0.0)],
                                                        [0, 1, lengths.resolve(el.get("y"), "y", 0.0)]])),
                                  self.transform(c, cst))
                b = self.bbox(c, lengths, cst, ctr, depth + 1)
                if b is not None:
                    boxes.append(b)
            return _union(boxes)
        return None

    # ---------------------------------------------------------------- clips
    def clip_terms(self, cid: str, target, target_st, lengths, ctm, chain: tuple) -> list | None:
        """Union-of-products terms of clipPath ``cid`` on ``target`` under ``ctm``; None when the
        reference is invalid (the clip is then dropped, as resvg does)."""
        cp = self.ids.get(cid)
        if cp is None or _local(cp.tag) != "clipPath":
            return None
        if cid in chain:
            return None  # a reference cycle: the cyclic link is dropped
        chain = (*chain, cid)
        cst = self.doc_style(cp)
        tr = compose(ctm, self.transform(cp, cst))
        if (cp.get("clipPathUnits") or "").strip() == "objectBoundingBox":
            bb = self.bbox(target, lengths, target_st)
            if bb is None or not (bb[2] > bb[0] and bb[3] > bb[1]):
                return []
            tr = compose(tr, np.array([[bb[2] - bb[0], 0, bb[0]], [0, bb[3] - bb[1], bb[1]]]))
        terms: list = []
        for child in cp:
            t = _local(child.tag)
            if not isinstance(child.tag, str) or t in ("title", "desc", "metadata"):
                continue
            st = self.doc_style(child)
            node, nst, ntr = child, st, compose(tr, self.transform(child, st))
            if t == "use":
                tgt = self.href(child)
                if tgt is None or _local(tgt.tag) not in (*_SHAPES, "text"):
                    if tgt is not None:
                        self.warn(f"<use> of <{_local(tgt.tag)}>", "clipPath")
                    continue
                nst = self.style(tgt, st)
                off = np.array([[1, 0, lengths.resolve(child.get("x"), "x", 0.0)],
                                [0, 1, lengths.resolve(child.get("y"), "y", 0.0)]])
                node, ntr = tgt, compose(compose(ntr, off), self.transform(tgt, nst))
            elif t not in (*_SHAPES, "text"):
                self.warn(f"<{t}> inside a clipPath", t)
                continue
            if nst.get("display") == "none" or st.get("display") == "none" or nst.get("visibility") in (
                    "hidden", "collapse"):
                continue
            rule = nst.get("clip-rule", "nonzero")
            rule = rule if rule in ("nonzero", "evenodd") else "nonzero"
            if _local(node.tag) == "text":
                from .text import text_paths  # noqa: PLC0415

                paths = [p for p, _ in text_paths(self, node, lengths, nst)]
                rule = "nonzero"
            else:
                p = self.shape_path(node, lengths, nst)
                paths = [p] if p is not None else []
            child_terms = [[(p, rule, ntr)] for p in paths]
            if not child_terms:
                continue
            inner = parse_url(st.get("clip-path"))
            if inner:
                sub = self.clip_terms(inner[0], child, st, lengths, tr, chain)
                if sub is not None:
                    child_terms = self._product(child_terms, sub)
            terms += child_terms
            self.budget.charge(len(child_terms))
        outer = parse_url(cst.get("clip-path"))
        if outer:
            sub = self.clip_terms(outer[0], target, target_st, lengths, ctm, chain)
            if sub is not None:
                terms = self._product(terms, sub)
        return terms

    def _product(self, a: list, b: list) -> list:
        n = len(a) * len(b)
        self.budget.charge(n)
        return [x + y for x in a for y in b]

    def push_clip(self, st, el, lengths, ctm) -> bool:
        ref = parse_url(st.get("clip-path"))
        if ref is None:
            if st.get("clip-path") not in (None, "none", ""):
                self.warn(f"clip-path {st.get('clip-path')!r}", _local(el.tag))
            return False
        terms = self.clip_terms(ref[0], el, st, lengths, ctm, ())
        if terms is None:
            return False
        try:
            self.scene.push_clip_union(terms)
        except InputError as exc:  # coordinates that overflow after the transforms: nothing shows through
            self.warn(f"a clip path that cannot be drawn ({exc})", _local(el.tag), "clips everything")
            self.scene.push_clip_union([])
        return True

    # ---------------------------------------------------------------- drawing
    def draw(self, el, ctm, parent_st: dict, lengths: Lengths, opacity: float, depth: int = 0,
             use_stack: tuple = ()) -> None:
        if not _is_svg(el):
            return
        t = _local(el.tag)
        if depth > self.budget.depth:
            raise InputError("load_svg", f"elements nest or reference deeper than max_depth={self.budget.depth}")
        if t in _QUIET:
            return
        st = self.style(el, parent_st)
        if st.get("display") == "none":
            return
        self.budget.charge(1)
        if not _conditions_pass(el):
            return
        tr = compose(ctm, self.transform(el, st))
        flt = filter_of(self, st, el)
        if flt is False:
            return  # a filter reference to nothing: the element is not drawn
        op = opacity
        own = parse_opacity(st.get("opacity"), 1.0)
        mask = None
        mref = parse_url(st.get("mask"))
        if mref is not None:
            mask = self.ids.get(mref[0])
            if mask is None or _local(mask.tag) != "mask" or id(mask) in self._masks_open:
                mask = None  # an invalid or self-referencing mask is ignored, as resvg does
        elif st.get("mask") not in (None, "none", ""):
            self.warn(f"mask {st.get('mask')!r}", t)
        layer = False
        if own < 1 and mask is None:  # a layer where more than one thing is painted, else the opacity goes to the paint
            layer = self._painted(el, st, depth) > 1
            if not layer:
                op *= own
        pushed = self.push_clip(st, el, lengths, tr)
        if layer:
            self.budget.charge(2)
            self.scene.push_layer(own)
        if mask is not None:
            self.budget.charge(3)
            self.scene.push_layer(own, masked=True)
            self.draw_mask(mask, el, st, lengths, tr, depth)
            self.scene.end_mask()
            layer = True
        try:
            if flt is not None:
                draw_filtered(self, flt, el, tr, st, lengths, op,
                              lambda shift: self._content(el, t, compose(shift, tr), st, lengths, 1.0, depth,
                                                          use_stack))
            else:
                self._content(el, t, tr, st, lengths, op, depth, use_stack)
        finally:
            if layer:
                self.scene.pop_layer()
            if pushed:
                self.scene.pop_clip()

    def _content(self, el, t, tr, st, lengths, op, depth, use_stack) -> None:
        """Draw what ``el`` itself paints (its clip, mask and layer already pushed)."""
        if t in _GROUPS:
            for c in el:
                self.draw(c, tr, st, lengths, op, depth + 1, use_stack)
        elif t == "switch":
            for c in el:
                if isinstance(c.tag, str) and _is_svg(c) and _conditions_pass(c) and _local(c.tag) not in _QUIET:
                    self.draw(c, tr, st, lengths, op, depth + 1, use_stack)
                    break
        elif t == "svg":
            self.nested_svg(el, tr, st, lengths, op, depth, use_stack, None)
        elif t == "use":
            self.use(el, tr, st, lengths, op, depth, use_stack)
        elif t in _SHAPES:
            if st.get("visibility", "visible") == "visible":
                self.shape(el, tr, st, lengths, op)
        elif t == "text":
            from .text import draw_text  # noqa: PLC0415

            draw_text(self, el, tr, st, lengths, op)
        elif t == "image":
            draw_image(self, el, tr, st, lengths, op)
        else:
            self.warn(f"<{t}>", t)

    def draw_mask(self, mask, target, target_st, lengths, tr, depth) -> None:
        """Draw the content of ``mask`` for ``target`` (clipped to the mask's region)."""
        obb = (mask.get("maskUnits") or "objectBoundingBox").strip() != "userSpaceOnUse"
        content_obb = (mask.get("maskContentUnits") or "").strip() == "objectBoundingBox"
        bb = self.bbox(target, lengths, target_st) if (obb or content_obb) else None
        if (obb or content_obb) and (bb is None or not (bb[2] > bb[0] and bb[3] > bb[1])):
            return  # no box to measure the region by: an empty mask
        g = mask.get

        def frac(name, default):
            v = (g(name) or default).strip()
            try:
                return float(v[:-1]) / 100 if v.endswith("%") else float(v)
            except ValueError:
                return float(default[:-1]) / 100

        if obb:
            bw, bh = bb[2] - bb[0], bb[3] - bb[1]
            x, y = bb[0] + frac("x", "-10%") * bw, bb[1] + frac("y", "-10%") * bh
            w, h = frac("width", "120%") * bw, frac("height", "120%") * bh
        else:
            x, y = lengths.resolve(g("x") or "-10%", "x", 0.0), lengths.resolve(g("y") or "-10%", "y", 0.0)
            w, h = lengths.resolve(g("width") or "120%", "x", 0.0), lengths.resolve(g("height") or "120%", "y", 0.0)
        if not (w > 0 and h > 0):
            return
        ctr = tr
        if content_obb:
            ctr = compose(tr, np.array([[bb[2] - bb[0], 0, bb[0]], [0, bb[3] - bb[1], bb[1]]]))
        mst = self.doc_style(mask)
        if mst.get("mask") not in (None, "none", ""):
            self.warn("mask on a mask", "mask")
        self._masks_open.add(id(mask))
        self.scene.push_clip(rect(x, y, w, h), transform=tr)
        try:
            for c in mask:
                self.draw(c, ctr, mst, lengths, 1.0, depth + 1)
        finally:
            self.scene.pop_clip()
            self._masks_open.discard(id(mask))

    def _painted(self, el, st, depth) -> int:
        """How many painted primitives an element draws (stops counting at 2)."""
        t = _local(el.tag)
        if t in _SHAPES or t == "text":
            n = int(st.get("fill", "black") != "none") + int(st.get("stroke", "none") != "none")
            return n if t != "text" else 2
        if t == "use":
            tgt = self.href(el)
            return self._painted(tgt, self.style(tgt, st), depth + 1) if tgt is not None and depth < 32 else 0
        n = 0
        for c in el:
            if not isinstance(c.tag, str) or _local(c.tag) in _QUIET:
                continue
            cst = self.style(c, st)
            if cst.get("display") == "none":
                continue
            n += self._painted(c, cst, depth + 1)
            if n > 1 or depth > 32:
                return 2
        return n

    def use(self, el, tr, st, lengths, op, depth, use_stack):
        tgt = self.href(el)
        if tgt is None or id(tgt) in use_stack or _is_ancestor(self, tgt, el):
            return
        x = lengths.resolve(el.get("x"), "x", 0.0, font_size=st["font-size"])
        y = lengths.resolve(el.get("y"), "y", 0.0, font_size=st["font-size"])
        utr = compose(tr, np.array([[1, 0, x], [0, 1, y]], float))
        stack = (*use_stack, id(tgt), id(el))
        tt = _local(tgt.tag)
        if tt == "symbol":
            sst = self.style(tgt, st)
            if sst.get("display") == "none":
                return
            self.nested_svg(tgt, compose(utr, self.transform(tgt, sst)), sst, lengths, op, depth + 1, stack, el)
        elif tt == "svg":
            sst = self.style(tgt, st)
            self.nested_svg(tgt, compose(utr, self.transform(tgt, sst)), sst, lengths, op, depth + 1, stack, el)
        else:
            self.draw(tgt, utr, st, lengths, op, depth + 1, stack)

    def nested_svg(self, el, tr, st, lengths, op, depth, use_stack, use_el):
        """A nested ``svg`` (or a ``symbol`` instanced by ``use_el``): new viewport, clipped."""
        fs = st["font-size"]
        is_symbol = _local(el.tag) == "symbol"

        def dim(name, axis):
            v = use_el.get(name) if use_el is not None else None
            if v is None or v.strip() == "auto":
                v = el.get(name)
            if v is None or v.strip() == "auto":
                v = "100%"
            return lengths.resolve(v, axis, 0.0, font_size=fs)

        x = 0.0 if (is_symbol or use_el is not None) else lengths.resolve(el.get("x"), "x", 0.0, font_size=fs)
        y = 0.0 if (is_symbol or use_el is not None) else lengths.resolve(el.get("y"), "y", 0.0, font_size=fs)
        if is_symbol:
            x = lengths.resolve(el.get("x"), "x", 0.0, font_size=fs)
            y = lengths.resolve(el.get("y"), "y", 0.0, font_size=fs)
        w, h = dim("width", "x"), dim("height", "y")
        if not (w > 0 and h > 0):
            return
        vb = _floats(el.get("viewBox"))
        m = np.array([[1.0, 0, x], [0, 1.0, y]])
        inner = Lengths(w, h, fs, lengths.root)
        if vb is not None and len(vb) == 4:
            if not (vb[2] > 0 and vb[3] > 0):
                return
            m = compose(m, view_box_transform(vb, el.get("preserveAspectRatio"), w, h))
            inner = Lengths(vb[2], vb[3], fs, lengths.root)
        clip = st.get("overflow", "hidden") not in ("visible", "auto")
        if clip:
            self.scene.push_clip(rect(x, y, w, h), transform=tr)
        try:
            ntr = compose(tr, m)
            for c in el:
                self.draw(c, ntr, st, inner, op, depth + 1, use_stack)
        finally:
            if clip:
                self.scene.pop_clip()

    def paint(self, value, st, what: str, el):
        """None (no paint), ('color', rgba), ('grad', Gradient) or ('pattern', element)."""
        if value is None or value == "none":
            return None
        ref = parse_url(value)
        if ref is not None:
            tgt = self.ids.get(ref[0])
            fallback = ref[1]
            g = None
            if tgt is not None and _local(tgt.tag) in ("linearGradient", "radialGradient"):
                try:
                    g = self.gradient(tgt)
                except InputError as exc:
                    self.warn(f"gradient {ref[0]!r} ({exc})", _local(el.tag))
                    return None
            if g is not None:
                if len(g.offsets) == 1 or (g.kind == "linear" and g.geom[0] == g.geom[2] and g.geom[1] == g.geom[3]) \
                        or (g.kind == "radial" and g.geom[2] <= 0):
                    c = g.colors[-1]
                    return ("color", tuple(c))
                return ("grad", g)
            if tgt is not None and _local(tgt.tag) == "pattern" and has_size(self, tgt):
                return ("pattern", tgt)
            if fallback and fallback != "none":
                return self.paint(fallback, st, what, el)
            return None
        c = parse_color(value)
        if c == "currentColor":
            c = parse_color(st.get("color", "black"))
            if c is None or c == "currentColor":
                c = (0.0, 0.0, 0.0, 1.0)
        if c is None:
            return None
        return ("color", c)

    def gradient(self, el) -> Gradient | None:
        chain = []
        e = el
        while e is not None and e not in chain and _local(e.tag) in ("linearGradient", "radialGradient") \
                and len(chain) < 64:
            chain.append(e)
            e = self.href(e)

        def attr(name, default=None):
            return chain_attr(chain, name, default)

        kind = "linear" if _local(el.tag) == "linearGradient" else "radial"
        units = (attr("gradientUnits") or "objectBoundingBox").strip()
        spread = (attr("spreadMethod") or "pad").strip()
        spread = spread if spread in ("pad", "reflect", "repeat") else "pad"
        tm, _ = parse_transform(attr("gradientTransform"))
        stops_el = next((g for g in chain if any(_local(c.tag) == "stop" for c in g)), None)
        if stops_el is None:
            return None
        offs, cols = [], []
        for s in stops_el:
            if _local(s.tag) != "stop":
                continue
            sst = self.doc_style(s)
            o = (s.get("offset") or "0").strip()
            try:
                ov = float(o[:-1]) / 100 if o.endswith("%") else float(o)
            except ValueError:
                ov = 0.0
            ov = min(1.0, max(0.0, ov))
            if offs:
                ov = max(ov, offs[-1])
            c = parse_color(sst.get("stop-color", "black"))
            if c == "currentColor":
                c = parse_color(sst.get("color", "black"))
            if c is None or c == "currentColor":
                c = (0.0, 0.0, 0.0, 1.0)
            a = c[3] * parse_opacity(sst.get("stop-opacity"), 1.0)
            offs.append(ov)
            cols.append((c[0], c[1], c[2], a))
        if not offs:
            return None
        obb = units == "objectBoundingBox"

        def num(name, default, axis):
            v = attr(name)
            if v is None:
                v = default
            v = v.strip()
            if obb:
                try:
                    return float(v[:-1]) / 100 if v.endswith("%") else float(v)
                except ValueError:
                    return float(default[:-1]) / 100 if default.endswith("%") else float(default)
            r = self.lengths.resolve(v, axis, None)
            return r if r is not None else self.lengths.resolve(default, axis, 0.0)

        if kind == "linear":
            geom = (num("x1", "0%", "x"), num("y1", "0%", "y"), num("x2", "100%", "x"), num("y2", "0%", "y"))
        else:
            cx, cy, r = num("cx", "50%", "x"), num("cy", "50%", "y"), num("r", "50%", "xy")
            fx = num("fx", attr("cx") or "50%", "x")
            fy = num("fy", attr("cy") or "50%", "y")
            fr = num("fr", "0%", "xy")
            geom = (cx, cy, r, fx, fy, fr)
        units = units if units in ("userSpaceOnUse", "objectBoundingBox") else "objectBoundingBox"
        return Gradient(kind, geom, offs, cols, spread, units, tm)

    def shape(self, el, tr, st, lengths, op) -> None:
        p = self.shape_path(el, lengths, st)
        if p is None:
            return
        t = _local(el.tag)
        order = ["fill", "stroke", "markers"]
        po = [w for w in (st.get("paint-order") or "normal").split() if w in order]
        order = list(dict.fromkeys(po + order))  # the named ones first, the others in their usual order
        self.lengths = lengths
        for what in order:
            if what == "fill" and t != "line":
                self.fill_shape(el, p, tr, st, lengths, op)
            elif what == "stroke":
                self.stroke_shape(el, p, tr, st, lengths, op)
            elif what == "markers" and t in MARKED:
                draw_markers(self, el, p, tr, st, lengths, op, 0)
                self.lengths = lengths

    def _paint_path(self, el, p: Path, rule: str, tr, paint, alpha: float, lengths, bbox_path: Path) -> None:
        kind, v = paint
        self.budget.charge(1, len(p))
        try:
            if kind == "color":
                a = 255.0 * v[3] * alpha
                if a > 0:
                    self.scene.fill(p, (v[0] * 255, v[1] * 255, v[2] * 255, a), fill_rule=rule, transform=tr)
            elif kind == "pattern":
                if alpha > 0:
                    draw_pattern(self, el, p, rule, tr, v, min(1.0, alpha), lengths, bbox_path)
            else:
                self.scene.fill(p, v, fill_rule=rule, transform=tr, opacity=min(1.0, max(0.0, alpha)),
                                bbox=bbox_path.bbox())
        except InputError as exc:  # coordinates that overflow after the transforms
            self.warn(f"a shape that cannot be drawn ({exc})", _local(el.tag), "is skipped")

    def fill_shape(self, el, p, tr, st, lengths, op) -> None:
        paint = self.paint(st.get("fill", "black"), st, "fill", el)
        if paint is None:
            return
        rule = st.get("fill-rule", "nonzero")
        rule = rule if rule in ("nonzero", "evenodd") else "nonzero"
        self._paint_path(el, p, rule, tr, paint, op * parse_opacity(st.get("fill-opacity"), 1.0), lengths, p)

    def stroke_shape(self, el, p, tr, st, lengths, op) -> None:
        paint = self.paint(st.get("stroke", "none"), st, "stroke", el)
        if paint is None:
            return
        fs = st["font-size"]
        width = lengths.resolve(st.get("stroke-width", "1"), "xy", 1.0, font_size=fs)
        if not width > 0:
            return
        cap = st.get("stroke-linecap", "butt")
        join = st.get("stroke-linejoin", "miter")
        if join in ("miter-clip", "arcs"):
            self.warn(f"stroke-linejoin {join} (drawn as miter)", _local(el.tag))
        ml = parse_number(st.get("stroke-miterlimit"), 4.0)
        ml = ml if ml is not None and ml >= 1 else 4.0
        dashes = ()
        da = st.get("stroke-dasharray")
        if da and da != "none":
            import re  # noqa: PLC0415

            vals = [lengths.resolve(x, "xy", None, font_size=fs) for x in re.split(r"[\s,]+", da.strip()) if x]
            if vals and all(v is not None and v >= 0 for v in vals) and sum(vals) > 0:
                dashes = tuple(vals)
        off = lengths.resolve(st.get("stroke-dashoffset", "0"), "xy", 0.0, font_size=fs)
        style = StrokeStyle(width, cap if cap in ("butt", "round", "square") else "butt",
                            join if join in ("miter", "round", "bevel", "miter-clip", "arcs") else "miter", ml,
                            dashes, off)
        non_scaling = st.get("vector-effect") == "non-scaling-stroke"
        scale = 1.0 if non_scaling else _scale_of(tr)
        thin = 1.0
        if width * scale < 1.0:  # a hairline, as resvg draws it: one pixel wide, its alpha scaled by the width
            thin = width * scale
            style.width = 1.0 / scale
        left = max(0, self.budget.segments - self.budget.n_segments)
        try:
            if non_scaling and tr is not None:
                dev = p.transformed(tr)
                outline = stroke_outline(dev, style, 1.0, max_pieces=left)
                str_ = None
            else:
                outline = stroke_outline(p, style, _scale_of(tr), max_pieces=left)
                str_ = tr
        except OverflowError:
            self.budget.charge(0, left + 1)
            return
        if outline is None:
            return
        alpha = op * parse_opacity(st.get("stroke-opacity"), 1.0) * thin
        if paint[0] in ("grad", "pattern") and non_scaling and tr is not None:
            self.warn(f"{'gradient' if paint[0] == 'grad' else 'pattern'} on a non-scaling stroke", _local(el.tag))
            return
        self._paint_path(el, outline, "nonzero", str_, paint, alpha, lengths, p)


def _valid_paint(v: str) -> bool:
    return v == "none" or parse_url(v) is not None or parse_color(v) is not None


def _union(boxes):
    boxes = [b for b in boxes if b is not None and (b[2] > b[0] or b[3] > b[1])]
    if not boxes:
        return None
    b = np.array(boxes)
    return (float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 2].max()), float(b[:, 3].max()))


def _points(text) -> list[float]:
    import re  # noqa: PLC0415

    out = []
    for tok in re.finditer(r"[\s,]*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|[\s,]*(\S)", text or ""):
        if tok.group(2):
            break  # invalid: the points up to here
        out.append(float(tok.group(1)))
    return out


def _is_ancestor(ld: _Loader, a, el) -> bool:
    e = el
    n = 0
    while e is not None and n < 10000:
        if e is a:
            return True
        e = ld.parent.get(id(e))
        n += 1
    return False


def _conditions_pass(el) -> bool:
    if el.get("requiredExtensions") is not None:
        return False
    langs = el.get("systemLanguage")
    if langs is not None:
        return any(x.strip().lower().split("-")[0] == "en" for x in langs.split(","))
    return True




def _read_source(source) -> str:
    if isinstance(source, bytes | bytearray):
        return bytes(source).decode("utf-8", errors="replace")
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise InputError("load_svg", f"expected SVG text, bytes or a file name, got {type(source).__name__}")
    if source.lstrip().startswith("<"):
        return source
    if not source.strip():
        raise InputError("load_svg", "empty source: expected SVG text or a file name")
    p = FsPath(source)
    try:
        if p.suffix.lower() == ".svgz":
            import gzip  # noqa: PLC0415

            return gzip.decompress(p.read_bytes()).decode("utf-8", errors="replace")
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError("load_svg", f"cannot read {source!r}: {exc.strerror or exc}") from exc


def load_svg(source, *, scale: float | tuple[float, float] = 1.0, max_elements: int = 100_000,
             max_segments: int = 1_000_000, max_depth: int = 128):
    """Read an SVG file (name, text or bytes) into a Scene: returns ``(scene, width, height)``.

    Parameters
    ----------
    source : str, bytes or os.PathLike
        SVG text (starting with ``<``), or the name of an ``.svg`` / ``.svgz`` file.
    scale : float or (float, float)
        Zoom: the canvas is the document's size times ``scale`` (one factor, or one per axis), and
        the drawing scaled to it.
    max_elements, max_segments, max_depth : int
        The expansion budget: elements drawn after ``use`` and clip-path expansion (clip parts
        included), path segments, and nesting depth. Past any of them, ``InputError``.

    Returns
    -------
    (Scene, int, int)
        The scene and the canvas size in pixels (the document's ``width`` / ``height``, else its
        ``viewBox`` size, times ``scale``).

    Warns
    -----
    UserWarning
        Once per unsupported feature and element name (see :mod:`pywgpuprims.scene.svg`).

    Examples
    --------
    >>> from pywgpuprims.scene import load_svg
    >>> s, w, h = load_svg('<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10">'
    ...                    '<rect width="5" height="5" fill="red"/></svg>')
    >>> (len(s), w, h)
    (1, 20, 10)
    """
    for name, v in (("max_elements", max_elements), ("max_segments", max_segments), ("max_depth", max_depth)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise InputError("load_svg", f"{name} must be a positive integer, got {v!r}")
    try:
        sx, sy = (float(scale), float(scale)) if np.ndim(scale) == 0 else (float(scale[0]), float(scale[1]))
        if len(np.ravel(scale)) not in (1, 2):
            raise ValueError
    except (TypeError, ValueError, IndexError):
        sx = sy = math.nan
    if not (math.isfinite(sx) and math.isfinite(sy) and sx > 0 and sy > 0):
        raise InputError("load_svg", f"scale must be a positive finite number or a pair of them, got {scale!r}")
    text = _read_source(source)
    try:
        root = DET.fromstring(text)
    except DET.ParseError as exc:
        raise InputError("load_svg", f"not well-formed XML: {exc}") from exc
    except Exception as exc:  # defusedxml refuses entities, DTD tricks and external references
        if type(exc).__module__.startswith("defusedxml"):
            raise InputError("load_svg", f"refused: {exc}") from exc
        raise
    if _local(root.tag) != "svg":
        raise InputError("load_svg", f"the root element is <{_local(root.tag)}>, not <svg>")
    budget = _Budget(int(max_elements), int(max_segments), int(max_depth))
    stack = [(root, 0)]  # the document's depth, before anything recursive (the CSS matcher) walks it
    while stack:
        el, d = stack.pop()
        if d > budget.depth:
            raise InputError("load_svg", f"elements nest deeper than max_depth={budget.depth}")
        stack.extend((c, d + 1) for c in el)
    ld = _Loader(root, budget)
    if not (isinstance(source, str) and source.lstrip().startswith("<")) and not isinstance(source, bytes | bytearray):
        ld.base_dir = str(FsPath(os.fspath(source)).resolve().parent)  # images may be read from beside the file
    if ld.weight(root) > budget.elements:
        raise InputError("load_svg", f"the document expands to more than max_elements={budget.elements} elements "
                         "(after use expansion); raise max_elements to render it")
    vb = _floats(root.get("viewBox"))
    vb = vb if vb is not None and len(vb) == 4 and vb[2] > 0 and vb[3] > 0 else None
    st0 = ld.style(root, {})
    base = Lengths(100.0, 100.0, st0["font-size"])

    def size(name):
        v = root.get(name)
        if v is None or v.strip() in ("auto", "") or v.strip().endswith("%"):
            return None
        return base.resolve(v, "x", None, font_size=st0["font-size"])

    w, h = size("width"), size("height")
    if vb is not None:  # a missing side follows the viewBox's aspect ratio
        if w is None and h is None:
            w, h = vb[2], vb[3]
        elif w is None:
            w = h * vb[2] / vb[3]
        elif h is None:
            h = w * vb[3] / vb[2]
    w = 100.0 if w is None else w
    h = 100.0 if h is None else h
    for name, v in (("width", w), ("height", h)):
        if not (math.isfinite(v) and 0 < v <= MAX_SIZE):
            raise InputError("load_svg", f"the document's {name} {v!r} is not in (0, {MAX_SIZE}] pixels")
    ctm = None
    lengths = Lengths(w, h, st0["font-size"], (w, h))
    if vb is not None:
        ctm = view_box_transform(vb, root.get("preserveAspectRatio"), w, h)
        lengths = Lengths(vb[2], vb[3], st0["font-size"], (w, h))
        if not np.isfinite(ctm).all():
            raise InputError("load_svg", f"the viewBox {root.get('viewBox')!r} gives a non-finite transform")
    if (sx, sy) != (1.0, 1.0):
        ctm = compose(np.array([[sx, 0.0, 0.0], [0.0, sy, 0.0]]), ctm)
        w, h = w * sx, h * sy
        if not (0 < w <= MAX_SIZE and 0 < h <= MAX_SIZE):
            raise InputError("load_svg", f"the scaled canvas {w!r} x {h!r} is not in (0, {MAX_SIZE}] pixels a side")
    ld.lengths = lengths
    ld.canvas = (int(math.ceil(w - 1e-9)), int(math.ceil(h - 1e-9)))
    op = parse_opacity(st0.get("opacity"), 1.0)
    pushed = ld.push_clip(st0, root, lengths, ctm)
    layer = op < 1 and ld._painted(root, st0, 0) > 1
    if layer:
        ld.scene.push_layer(op)
        op = 1.0
    for c in root:
        ld.draw(c, ctm, st0, lengths, op)
    if layer:
        ld.scene.pop_layer()
    if pushed:
        ld.scene.pop_clip()
    return ld.scene, int(math.ceil(w - 1e-9)), int(math.ceil(h - 1e-9))
