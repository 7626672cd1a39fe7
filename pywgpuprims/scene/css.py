"""CSS for the SVG front end: the cascade (``<style>`` sheets through tinycss2 + cssselect2,
presentation attributes, ``style`` attributes, ``!important``), colours and lengths."""

from __future__ import annotations

import math
import re

import cssselect2
import tinycss2
import tinycss2.color3
import tinycss2.color4

#: Properties an SVG element inherits from its parent when it does not set them.
INHERITED = frozenset({
    "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity", "stroke-linecap",
    "stroke-linejoin", "stroke-miterlimit", "stroke-dasharray", "stroke-dashoffset", "clip-rule", "color",
    "visibility", "font-size", "font-family", "font-weight", "font-style", "text-anchor", "font",
    "marker-start", "marker-mid", "marker-end", "letter-spacing", "word-spacing", "paint-order",
    "shape-rendering", "direction", "writing-mode", "vector-effect-inherited", "color-interpolation-filters",
    "image-rendering",
})
#: Properties that do not inherit (but may be given ``inherit``).
NOT_INHERITED = frozenset({
    "opacity", "clip-path", "mask", "display", "stop-color", "stop-opacity", "filter", "transform", "overflow",
    "vector-effect", "mix-blend-mode", "isolation", "clip", "solid-color", "solid-opacity", "flood-color",
    "flood-opacity",
})
PROPERTIES = INHERITED | NOT_INHERITED | {"marker"}

_NUM_RE = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LENGTH = re.compile(rf"\s*({_NUM_RE})\s*(px|in|cm|mm|pt|pc|em|ex|%|vw|vh|vmin|vmax|q)?\s*$", re.I)
_UNIT = {"px": 1.0, "in": 96.0, "cm": 96.0 / 2.54, "mm": 96.0 / 25.4, "q": 96.0 / 101.6, "pt": 4.0 / 3.0,
         "pc": 16.0}
_NUMBER = re.compile(rf"\s*({_NUM_RE})\s*$")


class Lengths:
    """The context lengths resolve in: the viewport (for percentages) and the font size (em, ex)."""

    def __init__(self, vw: float, vh: float, font_size: float = 16.0, root=(300.0, 150.0)):
        self.vw, self.vh, self.font_size, self.root = vw, vh, font_size, root

    def diag(self) -> float:
        return math.hypot(self.vw, self.vh) / math.sqrt(2.0)

    def resolve(self, text, axis: str = "x", default=None, font_size: float | None = None):
        """``text`` (a length) in user units; ``axis`` 'x', 'y' or 'xy' picks the percentage base;
        ``default`` for a missing or invalid value."""
        if text is None:
            return default
        m = _LENGTH.match(str(text))
        if not m:
            return default
        v = float(m.group(1))
        unit = (m.group(2) or "px").lower()
        fs = self.font_size if font_size is None else font_size
        if unit in _UNIT:
            v *= _UNIT[unit]
        elif unit == "em":
            v *= fs
        elif unit == "ex":
            v *= fs / 2
        elif unit == "%":
            base = self.vw if axis == "x" else self.vh if axis == "y" else self.diag()
            v *= base / 100.0
        elif unit in ("vw", "vh", "vmin", "vmax"):
            w, h = self.root
            v *= {"vw": w, "vh": h, "vmin": min(w, h), "vmax": max(w, h)}[unit] / 100.0
        return v if math.isfinite(v) else default


def parse_number(text, default=None):
    if text is None:
        return default
    m = _NUMBER.match(str(text))
    return float(m.group(1)) if m else default


def parse_opacity(text, default: float = 1.0) -> float:
    """An opacity: a number or a percentage, clamped to [0, 1]."""
    if text is None:
        return default
    s = str(text).strip()
    try:
        v = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
    except ValueError:
        return default
    return min(1.0, max(0.0, v)) if math.isfinite(v) else default


def parse_color(text):
    """``(r, g, b, a)`` floats in [0, 1]; ``'currentColor'``; or None when not a colour."""
    if text is None:
        return None
    s = str(text).strip()
    if s.lower() == "currentcolor":
        return "currentColor"
    if s.startswith("#") and not re.fullmatch(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})", s):
        return None
    c = tinycss2.color4.parse_color(s)
    if c is None:
        c = tinycss2.color3.parse_color(s)
        if c is None or c == "currentColor":
            return None
        return (c.red, c.green, c.blue, c.alpha)
    if c == "currentcolor":
        return "currentColor"
    rgb = c.to("srgb")
    r, g, b = (min(1.0, max(0.0, float(v))) for v in rgb.coordinates)
    return (r, g, b, min(1.0, max(0.0, float(c.alpha))))


_URL = re.compile(r"\s*url\(\s*(['\"]?)#([^)'\"]+)\1\s*\)\s*(.*)$", re.S)


def parse_url(text):
    """``(id, rest)`` of ``url(#id) rest``, or None."""
    if not text:
        return None
    m = _URL.match(str(text))
    return (m.group(2).strip(), m.group(3).strip()) if m else None


def split_declarations(text: str) -> list[tuple[str, str, bool]]:
    """``(name, value, important)`` of a ``style`` attribute or a rule's body (comments skipped)."""
    out = []
    for d in tinycss2.parse_declaration_list(text or "", skip_comments=True, skip_whitespace=True):
        if d.type == "declaration":
            out.append((d.lower_name, tinycss2.serialize(d.value).strip(), bool(d.important)))
    return out


class Cascade:
    """Specified values per element: presentation attributes, then the ``<style>`` rules that match
    (by specificity, then order), then the ``style`` attribute; ``!important`` declarations last."""

    def __init__(self, root, local_name, warn):
        self._matches: dict[int, list] = {}
        sheets = []
        for el in root.iter():
            if isinstance(el.tag, str) and local_name(el.tag) == "style":
                if (el.get("type") or "text/css").strip().lower() in ("text/css", ""):
                    sheets.append("".join(el.itertext()))
        if not sheets:
            return
        matcher = cssselect2.Matcher()
        order = 0
        for sheet in sheets:
            for rule in tinycss2.parse_stylesheet(sheet, skip_comments=True, skip_whitespace=True):
                if rule.type == "at-rule":
                    if rule.lower_at_keyword not in ("import", "namespace", "charset"):
                        warn(f"CSS at-rule @{rule.at_keyword}", "style")
                    continue
                if rule.type != "qualified-rule":
                    continue
                decls = split_declarations(tinycss2.serialize(rule.content))
                try:
                    selectors = cssselect2.compile_selector_list(rule.prelude)
                except cssselect2.SelectorError:
                    warn(f"CSS selector {tinycss2.serialize(rule.prelude).strip()!r}", "style")
                    continue
                for sel in selectors:
                    matcher.add_selector(sel, (order, decls))
                order += 1
        wrapper = cssselect2.ElementWrapper.from_xml_root(root)
        for w in wrapper.iter_subtree():
            found = matcher.match(w)
            if found:
                self._matches[id(w.etree_element)] = found

    def declared(self, el, local_name) -> dict[str, str]:
        """The element's specified values (only what it sets itself)."""
        out: dict[str, str] = {}
        for k, v in el.attrib.items():
            k = local_name(k)
            if k in PROPERTIES and k != "transform":
                out[k] = v.strip()
        important: dict[str, str] = {}
        for spec, _, _, (_order, decls) in sorted(self._matches.get(id(el), ()), key=lambda m: (m[0], m[3][0])):
            del spec
            for name, value, imp in decls:
                (important if imp else out)[name] = value
        for name, value, imp in split_declarations(el.get("style") or ""):
            if name == "transform":
                continue  # resvg reads the transform attribute only
            (important if imp else out)[name] = value
        out.update(important)
        if "marker" in out:
            for k in ("marker-start", "marker-mid", "marker-end"):
                out.setdefault(k, out["marker"])
        return out
