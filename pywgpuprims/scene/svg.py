"""An SVG subset for :mod:`pywgpuprims.scene` (stdlib xml.etree, no other dependency).

Read: ``rect``, ``circle``, ``ellipse``, ``line``, ``polygon``, ``polyline``, ``path`` (every
command, arcs included), ``g``, ``use``, ``svg`` (root ``width``/``height``/``viewBox``),
``transform``, ``fill``, ``fill-opacity``, ``opacity`` (on shapes; a group's opacity is pushed
down to its shapes, an approximation, with a warning), ``fill-rule``, ``style="..."`` properties,
and ``clip-path`` with ``clipPath`` (``clipPathUnits`` userSpaceOnUse / objectBoundingBox,
``clip-rule``, several children as a union, ``clip-path`` on a clipPath or on its children,
transforms on both). ``stroke`` is approximated (quads along the flattened
outline, round joins) with a warning. Anything else gets a warning naming the element; a
clip-path reference cycle raises :class:`~pywgpuprims.InputError`.
"""

from __future__ import annotations

import math
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path as FsPath

import numpy as np

from .._errors import InputError
from .builder import Scene
from .geometry import Path, compose, ellipse, flatten, polygon, rect, rounded_rect

_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_COLORS = {
    "black": (0, 0, 0), "white": (255, 255, 255), "red": (255, 0, 0), "green": (0, 128, 0), "lime": (0, 255, 0),
    "blue": (0, 0, 255), "yellow": (255, 255, 0), "cyan": (0, 255, 255), "aqua": (0, 255, 255),
    "magenta": (255, 0, 255), "fuchsia": (255, 0, 255), "gray": (128, 128, 128), "grey": (128, 128, 128),
    "silver": (192, 192, 192), "maroon": (128, 0, 0), "olive": (128, 128, 0), "navy": (0, 0, 128),
    "purple": (128, 0, 128), "teal": (0, 128, 128), "orange": (255, 165, 0), "pink": (255, 192, 203),
    "brown": (165, 42, 42), "gold": (255, 215, 0), "seagreen": (46, 139, 87), "skyblue": (135, 206, 235),
    "steelblue": (70, 130, 180), "indigo": (75, 0, 130), "violet": (238, 130, 238), "coral": (255, 127, 80),
    "salmon": (250, 128, 114), "tomato": (255, 99, 71), "darkgreen": (0, 100, 0), "darkblue": (0, 0, 139),
    "darkred": (139, 0, 0), "lightblue": (173, 216, 230), "lightgreen": (144, 238, 144),
    "lightgray": (211, 211, 211), "lightgrey": (211, 211, 211), "darkgray": (169, 169, 169),
    "darkgrey": (169, 169, 169), "orchid": (218, 112, 214), "crimson": (220, 20, 60), "khaki": (240, 230, 140),
}
_INHERITED = ("fill", "fill-rule", "fill-opacity", "clip-rule", "stroke", "stroke-width", "stroke-opacity",
              "visibility")
_SHAPES = ("rect", "circle", "ellipse", "line", "polygon", "polyline", "path")
_SKIP_QUIET = ("defs", "clipPath", "title", "desc", "metadata", "style")


def _tag(el) -> str:
    t = el.tag
    return t.split("}", 1)[1] if isinstance(t, str) and "}" in t else str(t)


def _num(v, default=0.0, ref: float | None = None) -> float:
    if v is None:
        return default
    v = str(v).strip()
    m = _NUM.match(v)
    if not m:
        return default
    x = float(m.group(0))
    if v.endswith("%") and ref is not None:
        return x / 100.0 * ref
    return x


def _nums(v) -> list[float]:
    return [float(x) for x in _NUM.findall(v or "")]


def parse_transform(s: str | None) -> np.ndarray | None:
    """An SVG ``transform`` attribute as a 2x3 matrix (None when absent)."""
    if not s:
        return None
    m = None
    for name, args in re.findall(r"(\w+)\s*\(([^)]*)\)", s):
        a = _nums(args)
        if name == "matrix" and len(a) == 6:
            t = np.array([[a[0], a[2], a[4]], [a[1], a[3], a[5]]])
        elif name == "translate" and a:
            t = np.array([[1, 0, a[0]], [0, 1, a[1] if len(a) > 1 else 0.0]])
        elif name == "scale" and a:
            t = np.array([[a[0], 0, 0], [0, a[1] if len(a) > 1 else a[0], 0]])
        elif name == "rotate" and a:
            c, s_ = math.cos(math.radians(a[0])), math.sin(math.radians(a[0]))
            cx, cy = (a[1], a[2]) if len(a) >= 3 else (0.0, 0.0)
            t = np.array([[c, -s_, cx - c * cx + s_ * cy], [s_, c, cy - s_ * cx - c * cy]])
        elif name == "skewX" and a:
            t = np.array([[1, math.tan(math.radians(a[0])), 0], [0, 1, 0]])
        elif name == "skewY" and a:
            t = np.array([[1, 0, 0], [math.tan(math.radians(a[0])), 1, 0]])
        else:
            warnings.warn(f"svg: transform {name}({args}) not understood; ignored", stacklevel=3)
            continue
        m = compose(m, t) if m is not None else t.astype(np.float64)
    return m


def parse_color(v: str | None):
    """(r, g, b) 0-255, None for 'none', or raises ValueError."""
    v = (v or "").strip()
    lv = v.lower()
    if lv in ("none", "transparent"):
        return None
    if lv in _COLORS:
        return _COLORS[lv]
    if v.startswith("#"):
        h = v[1:]
        if len(h) in (3, 4):
            return tuple(int(c * 2, 16) for c in h[:3])
        if len(h) in (6, 8):
            return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))
    if lv.startswith("rgb"):
        parts = re.findall(r"[-+]?[\d.]+%?", v)[:3]
        if len(parts) == 3:
            return tuple(int(round(min(255.0, max(0.0, float(p[:-1]) * 2.55 if p.endswith("%") else float(p)))))
                         for p in parts)
    raise ValueError(v)


def parse_path_d(d: str) -> Path:
    """An SVG path ``d`` string as a :class:`Path` (all commands, arcs included)."""
    toks = re.findall(r"[MmLlHhVvCcSsQqTtAaZz]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", d or "")
    p = Path()
    i = 0
    cmd = None
    cx = cy = sx = sy = 0.0
    last_c = last_q = None  # reflected control points for S and T
    n_args = {"m": 2, "l": 2, "h": 1, "v": 1, "c": 6, "s": 4, "q": 4, "t": 2, "a": 7, "z": 0}

    def take(k):
        nonlocal i
        vals = toks[i:i + k]
        if len(vals) < k or any(t.isalpha() for t in vals):
            raise ValueError("truncated")
        i += k
        return [float(t) for t in vals]

    while i < len(toks):
        t = toks[i]
        if t.isalpha():
            cmd = t
            i += 1
            if cmd in "Zz":
                p.close()
                cx, cy = sx, sy
                last_c = last_q = None
                continue
        elif cmd is None:
            raise ValueError("path data must start with a command")
        c = cmd.lower()
        if c == "z":  # numbers straight after Z: an error in SVG; render up to here
            warnings.warn("svg: path data has numbers after Z; the rest is ignored", stacklevel=3)
            break
        rel = cmd.islower()
        ox, oy = (cx, cy) if rel else (0.0, 0.0)
        try:
            if c == "a":
                # Flags may be packed without separators ("a1 1 0 01 5 5"): split single digits.
                vals = []
                for k in range(7):
                    if i >= len(toks) or toks[i].isalpha():
                        raise ValueError("truncated")
                    tk = toks[i]
                    if k in (3, 4) and tk[0] in "01" and len(tk) > 1 and "." not in tk[:2]:
                        vals.append(float(tk[0]))
                        toks[i] = tk[1:]
                        continue
                    vals.append(float(tk))
                    i += 1
                a = vals
            else:
                a = take(n_args[c])
        except ValueError:
            warnings.warn(f"svg: path data truncated at command {cmd!r}; the rest is ignored", stacklevel=3)
            break
        if c == "m":
            cx, cy = ox + a[0], oy + a[1]
            sx, sy = cx, cy
            p.move_to(cx, cy)
            cmd = "l" if rel else "L"
            last_c = last_q = None
            continue
        if p._cur is None:
            p.move_to(cx, cy)
            sx, sy = cx, cy
        if c == "l":
            cx, cy = ox + a[0], oy + a[1]
            p.line_to(cx, cy)
            last_c = last_q = None
        elif c == "h":
            cx = ox + a[0]
            p.line_to(cx, cy)
            last_c = last_q = None
        elif c == "v":
            cy = oy + a[0]
            p.line_to(cx, cy)
            last_c = last_q = None
        elif c in "cs":
            if c == "c":
                x1, y1, x2, y2, x, y = a[0] + ox, a[1] + oy, a[2] + ox, a[3] + oy, a[4] + ox, a[5] + oy
            else:
                x1, y1 = (2 * cx - last_c[0], 2 * cy - last_c[1]) if last_c else (cx, cy)
                x2, y2, x, y = a[0] + ox, a[1] + oy, a[2] + ox, a[3] + oy
            p.cubic_to(x1, y1, x2, y2, x, y)
            last_c, last_q = (x2, y2), None
            cx, cy = x, y
        elif c in "qt":
            if c == "q":
                x1, y1, x, y = a[0] + ox, a[1] + oy, a[2] + ox, a[3] + oy
            else:
                x1, y1 = (2 * cx - last_q[0], 2 * cy - last_q[1]) if last_q else (cx, cy)
                x, y = a[0] + ox, a[1] + oy
            p.quad_to(x1, y1, x, y)
            last_q, last_c = (x1, y1), None
            cx, cy = x, y
        elif c == "a":
            x, y = a[5] + ox, a[6] + oy
            p.arc_to(a[0], a[1], a[2], a[3] != 0, a[4] != 0, x, y)
            cx, cy = x, y
            last_c = last_q = None
    return p


class _Loader:
    def __init__(self, root):
        self.root = root
        self.ids = {el.get("id"): el for el in root.iter() if el.get("id")}
        self.scene = Scene()
        self.warned: set[str] = set()

    def warn(self, msg: str) -> None:
        if msg not in self.warned:
            self.warned.add(msg)
            warnings.warn(f"svg: {msg}", stacklevel=4)

    @staticmethod
    def props(el, parent: dict) -> dict:
        p = {k: v for k, v in parent.items() if k in _INHERITED}
        for k in (*_INHERITED, "opacity", "clip-path", "display", "visibility"):
            if el.get(k) is not None:
                p[k] = el.get(k).strip()
        for decl in (el.get("style") or "").split(";"):
            if ":" in decl:
                k, v = decl.split(":", 1)
                p[k.strip()] = v.strip()
        return p

    def ref(self, v: str | None):
        if not v:
            return None
        m = re.match(r"\s*url\(\s*['\"]?#([^)'\"]+)['\"]?\s*\)", v) or re.match(r"\s*#(\S+)", v)
        return m.group(1) if m else None

    def href(self, el):
        h = el.get("href") or el.get("{http://www.w3.org/1999/xlink}href")
        return self.ref(h)

    # ---------------------------------------------------------------- geometry
    def shape_path(self, el) -> Path | None:
        t = _tag(el)
        g = el.get
        if t == "rect":
            w, h = _num(g("width")), _num(g("height"))
            if w <= 0 or h <= 0:
                return None
            rx, ry = g("rx"), g("ry")
            rxv = _num(rx if rx is not None else ry)
            ryv = _num(ry if ry is not None else rx)
            x, y = _num(g("x")), _num(g("y"))
            return rounded_rect(x, y, w, h, rxv, ryv) if (rxv > 0 and ryv > 0) else rect(x, y, w, h)
        if t == "circle":
            r = _num(g("r"))
            return ellipse(_num(g("cx")), _num(g("cy")), r, r) if r > 0 else None
        if t == "ellipse":
            rx, ry = _num(g("rx")), _num(g("ry"))
            return ellipse(_num(g("cx")), _num(g("cy")), rx, ry) if rx > 0 and ry > 0 else None
        if t == "line":
            return Path().move_to(_num(g("x1")), _num(g("y1"))).line_to(_num(g("x2")), _num(g("y2")))
        if t in ("polygon", "polyline"):
            a = _nums(g("points"))
            if len(a) < 4:
                return None
            return polygon(np.array(a[: len(a) // 2 * 2]).reshape(-1, 2), closed=t == "polygon")
        if t == "path":
            return parse_path_d(g("d") or "")
        return None

    def collect(self, el, tr, depth=0):
        """(path, transform, element) of every shape under ``el`` (for bounding boxes)."""
        if depth > 64:
            return []
        t = _tag(el)
        tr = compose(tr, parse_transform(el.get("transform")))
        if t in _SHAPES:
            p = self.shape_path(el)
            return [(p, tr, el)] if p is not None else []
        if t == "use":
            target = self.ids.get(self.href(el) or "")
            if target is None:
                return []
            tr = compose(tr, np.array([[1, 0, _num(el.get("x"))], [0, 1, _num(el.get("y"))]], float))
            return self.collect(target, tr, depth + 1)
        if t in ("g", "svg", "a", "switch"):
            out = []
            for c in el:
                out += self.collect(c, tr, depth + 1)
            return out
        return []

    def bbox(self, el) -> tuple[float, float, float, float] | None:
        """Object bounding box of ``el`` in its own user space (before its transform)."""
        items = self.collect(el, None)
        el_tr = parse_transform(el.get("transform"))
        inv = None
        if el_tr is not None:
            inv = np.linalg.inv(np.vstack([el_tr, [0, 0, 1]]))[:2]
        boxes = []
        for p, tr, _ in items:
            b = p.bbox(compose(inv, tr))
            if b[2] > b[0] or b[3] > b[1]:
                boxes.append(b)
        if not boxes:
            return None
        b = np.array(boxes)
        return (b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max())

    # ---------------------------------------------------------------- clips
    def clip_terms(self, cid: str, target, ctm, chain: tuple) -> list | None:
        """Union-of-products terms for clipPath ``cid`` applied to ``target`` under ``ctm``."""
        if cid in chain:
            raise InputError("load_svg", "clip-path reference cycle: " + " -> ".join((*chain, cid)))
        cp = self.ids.get(cid)
        if cp is None or _tag(cp) != "clipPath":
            self.warn(f"clip-path url(#{cid}) does not name a clipPath; ignored")
            return None
        chain = (*chain, cid)
        tr = compose(ctm, parse_transform(cp.get("transform")))
        if cp.get("clipPathUnits") == "objectBoundingBox":
            bb = self.bbox(target)
            if bb is None:
                return []
            tr = compose(tr, np.array([[bb[2] - bb[0], 0, bb[0]], [0, bb[3] - bb[1], bb[1]]]))
        cprops = self.props(cp, {})
        terms: list = []
        for child in cp:
            t = _tag(child)
            if t in ("title", "desc"):
                continue
            props = self.props(child, cprops)
            if props.get("display") == "none" or props.get("visibility") in ("hidden", "collapse"):
                continue
            try:
                items = self.collect(child, tr) if t in (*_SHAPES, "use") else []
            except (ValueError, ArithmeticError, IndexError) as exc:
                self.warn(f"<{t}> in clipPath {cid!r} could not be read ({exc}); ignored")
                items = []
            if t not in (*_SHAPES, "use"):
                self.warn(f"<{t}> inside a clipPath is not supported; ignored")
                continue
            rule = props.get("clip-rule", "nonzero")
            rule = rule if rule in ("nonzero", "evenodd") else "nonzero"
            child_terms = [[(p, rule, ptr)] for p, ptr, _ in items]
            if not child_terms:
                continue
            inner = self.ref(props.get("clip-path"))
            if inner:
                ctr = compose(tr, parse_transform(child.get("transform")))
                sub = self.clip_terms(inner, child, ctr, chain)
                if sub is not None:
                    child_terms = [a + b for a in child_terms for b in sub]
            terms += child_terms
        outer = self.ref(cprops.get("clip-path"))
        if outer:
            sub = self.clip_terms(outer, target, ctm, chain)
            if sub is not None:
                terms = [a + b for a in terms for b in sub]
        return terms

    # ---------------------------------------------------------------- drawing
    def draw(self, el, ctm, parent_props: dict, opacity: float, depth: int = 0) -> None:
        t = _tag(el)
        if depth > 64:
            self.warn(f"<{t}> nested or referenced too deeply; ignored")
            return
        if t in _SKIP_QUIET or not isinstance(el.tag, str):
            return
        props = self.props(el, parent_props)
        if props.get("display") == "none":
            return
        tr = compose(ctm, parse_transform(el.get("transform")))
        for attr in ("mask", "filter", "marker-start", "marker-mid", "marker-end", "stroke-dasharray"):
            if attr in props or el.get(attr) is not None:
                self.warn(f"{attr} on <{t}> is not supported; ignored")
        op = opacity * min(1.0, max(0.0, _num(props.get("opacity"), 1.0)))
        cid = self.ref(props.get("clip-path"))
        pushed = False
        if cid:
            terms = self.clip_terms(cid, el, tr, ())
            if terms is not None:
                self.scene.push_clip_union(terms)
                pushed = True
        if t in ("g", "svg", "a", "switch"):
            if props.get("opacity") and _num(props.get("opacity"), 1.0) < 1 and len(el) > 1:
                self.warn(f"group opacity on <{t}> is applied to each shape (overlaps differ from SVG)")
            for c in el:
                self.draw(c, tr, props, op, depth + 1)
        elif t == "use":
            target = self.ids.get(self.href(el) or "")
            if target is None:
                self.warn(f"<use> references a missing element {self.href(el)!r}; ignored")
            else:
                utr = compose(tr, np.array([[1, 0, _num(el.get("x"))], [0, 1, _num(el.get("y"))]], float))
                self.draw(target, utr, props, op, depth + 1)
        elif t in _SHAPES:
            if props.get("visibility") not in ("hidden", "collapse"):
                self.shape(el, tr, props, op)
        else:
            self.warn(f"<{t}> is not supported; ignored")
        if pushed:
            self.scene.pop_clip()

    def paint(self, value, what: str):
        if value is None:
            return None
        if value.startswith("url("):
            self.warn(f"paint server {value} ({what}) is not supported; drawn grey")
            return (128, 128, 128)
        if value == "currentColor":
            return (0, 0, 0)
        try:
            return parse_color(value)
        except ValueError:
            self.warn(f"colour {value!r} not understood; drawn black")
            return (0, 0, 0)

    def shape(self, el, tr, props, op) -> None:
        t = _tag(el)
        try:
            self._shape(el, tr, props, op)
        except (ValueError, ArithmeticError, IndexError) as exc:  # InputError is a ValueError
            self.warn(f"<{t} id={el.get('id')!r}> could not be read ({exc}); ignored")

    def _shape(self, el, tr, props, op) -> None:
        p = self.shape_path(el)
        if p is None:
            return
        t = _tag(el)
        fill = self.paint(props.get("fill", "black"), "fill")
        if fill is not None and t != "line":
            a = 255.0 * op * min(1.0, max(0.0, _num(props.get("fill-opacity"), 1.0)))
            rule = props.get("fill-rule", "nonzero")
            if rule not in ("nonzero", "evenodd"):
                rule = "nonzero"
            self.scene.fill(p, (*fill, a), fill_rule=rule, transform=tr)
        stroke = self.paint(props.get("stroke"), "stroke")
        width = _num(props.get("stroke-width"), 1.0)
        if stroke is not None and width > 0:
            self.warn("stroke is approximated (butt caps, round joins, no dashes)")
            a = 255.0 * op * min(1.0, max(0.0, _num(props.get("stroke-opacity"), 1.0)))
            sp = stroke_outline(p, width)
            if sp is not None:
                self.scene.fill(sp, (*stroke, a), transform=tr)


def stroke_outline(p: Path, width: float) -> Path | None:
    """Quads (all wound the same way) along the flattened path plus round joins: nonzero fills them
    as a union."""
    rec, kind = p.records(stroke=True)
    if not len(rec):
        return None
    seg, _ = flatten(rec, kind, np.zeros(len(rec), np.int64), tol=max(0.01, width / 20))
    d = seg[:, 2:] - seg[:, :2]
    ln = np.hypot(d[:, 0], d[:, 1])
    keep = ln > 0
    seg, d, ln = seg[keep], d[keep], ln[keep]
    if not len(seg):
        return None
    u = d / ln[:, None] * (width / 2)
    n = np.stack([-u[:, 1], u[:, 0]], axis=1)
    a, b = seg[:, :2], seg[:, 2:]  # butt caps
    out = Path()
    for q in zip(a + n, b + n, b - n, a - n, strict=True):
        out.move_to(*q[0]).line_to(*q[1]).line_to(*q[2]).line_to(*q[3]).close()
    # Round joins where consecutive segments meet at an angle, wound like the quads (so that
    # nonzero fills the union): the quads' signed area is negative in y-down coordinates.
    if len(seg) > 1:
        t0, t1 = d[:-1] / ln[:-1, None], d[1:] / ln[1:, None]
        joined = np.all(np.abs(seg[:-1, 2:] - seg[1:, :2]) < 1e-9, axis=1) & ((t0 * t1).sum(axis=1) < 0.995)
        ang = -np.linspace(0, 2 * np.pi, 12, endpoint=False)
        ring = np.stack([np.cos(ang), np.sin(ang)], axis=1) * (width / 2)
        for c in seg[:-1, 2:][joined]:
            out.extend(polygon(c + ring))
    return out


def load_svg(source: str):
    """Parse an SVG file name or SVG text into ``(Scene, width, height)``."""
    text = source
    if not str(source).lstrip().startswith("<"):
        text = FsPath(source).read_text()
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError("load_svg", f"not well-formed XML: {exc}") from exc
    if _tag(root) != "svg":
        raise InputError("load_svg", f"the root element is <{_tag(root)}>, not <svg>")
    vb = _nums(root.get("viewBox"))
    w = _num(root.get("width"), vb[2] if len(vb) == 4 else 300.0)
    h = _num(root.get("height"), vb[3] if len(vb) == 4 else 150.0)
    if (root.get("width") or "").endswith("%"):
        w = vb[2] if len(vb) == 4 else 300.0
    if (root.get("height") or "").endswith("%"):
        h = vb[3] if len(vb) == 4 else 150.0
    ctm = None
    if len(vb) == 4 and vb[2] > 0 and vb[3] > 0:
        s = min(w / vb[2], h / vb[3])  # preserveAspectRatio xMidYMid meet
        if (root.get("preserveAspectRatio") or "").strip() == "none":
            sx, sy = w / vb[2], h / vb[3]
        else:
            sx = sy = s
        ctm = np.array([[sx, 0, (w - sx * vb[2]) / 2 - sx * vb[0]], [0, sy, (h - sy * vb[3]) / 2 - sy * vb[1]]])
    ld = _Loader(root)
    props = ld.props(root, {})
    cid = ld.ref(props.get("clip-path"))
    pushed = False
    if cid:
        terms = ld.clip_terms(cid, root, ctm, ())
        if terms is not None:
            ld.scene.push_clip_union(terms)
            pushed = True
    op = min(1.0, max(0.0, _num(props.get("opacity"), 1.0)))
    for c in root:
        ld.draw(c, ctm, props, op)
    if pushed:
        ld.scene.pop_clip()
    return ld.scene, int(math.ceil(w)), int(math.ceil(h))
