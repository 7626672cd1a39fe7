"""Simple SVG text: ``text`` and ``tspan`` (``x``, ``y``, ``dx``, ``dy`` as single values or lists,
``font-family`` with fallback, ``font-size``, ``font-weight``, ``font-style``, ``text-anchor`` per
chunk) drawn from the glyph outlines of a font on the system (fontTools), with the font's ``kern``
table. No shaping (ligatures, complex scripts), no ``textPath``, no bidi: those warn. When no font
file is found, text warns and is not drawn."""

from __future__ import annotations

import functools
import glob
import os
import re

from .geometry import Path

FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", os.path.expanduser("~/.fonts"),
             os.path.expanduser("~/.local/share/fonts"))
_GENERIC = {"serif": "DejaVu Serif", "sans-serif": "DejaVu Sans", "monospace": "DejaVu Sans Mono",
            "cursive": "DejaVu Sans", "fantasy": "DejaVu Sans", "system-ui": "DejaVu Sans"}
_DEFAULT_FAMILY = "serif"  # resvg's default is Times New Roman, a serif


@functools.lru_cache(maxsize=1)
def _fonts() -> dict[tuple[str, bool, bool], str]:
    """(family lower-case, bold, italic) -> file, for the fonts found on the system."""
    from fontTools.ttLib import TTFont  # noqa: PLC0415

    out: dict[tuple[str, bool, bool], str] = {}
    files = []
    for d in FONT_DIRS:
        files += glob.glob(os.path.join(d, "**", "*.ttf"), recursive=True)
        files += glob.glob(os.path.join(d, "**", "*.otf"), recursive=True)
    for f in sorted(files):
        try:
            with TTFont(f, lazy=True) as font:
                info = _info(font)
        except Exception:  # noqa: BLE001 - an unreadable font file is skipped
            continue
        if info is not None:
            out.setdefault(info, f)
    return out


def _info(font) -> tuple[str, bool, bool] | None:
    """(family lower-case, bold, italic) of a font; None for condensed and light faces."""
    name = font["name"]
    fam = (name.getDebugName(16) or name.getDebugName(1) or "").strip().lower()
    sub = (name.getDebugName(17) or name.getDebugName(2) or "").lower()
    os2 = font["OS/2"] if "OS/2" in font else None
    bold = (os2.usWeightClass >= 600) if os2 is not None else "bold" in sub
    italic = "italic" in sub or "oblique" in sub
    if "condensed" in sub or "light" in sub or "condensed" in fam:
        return None
    return (fam, bold, italic)


def find_font(families: str | None, bold: bool, italic: bool) -> str | None:
    """The file of the first family in the CSS list ``families`` found on the system (generic
    names map to DejaVu), with the closest weight and style; None when none is found."""
    fonts = _fonts()
    if not fonts:
        return None
    names = [n.strip().strip("'\"").strip() for n in (families or _DEFAULT_FAMILY).split(",")]
    names = [_GENERIC.get(n.lower(), n) for n in names if n] + [_GENERIC[_DEFAULT_FAMILY], "DejaVu Sans"]
    for n in names:
        k = n.lower()
        for b, i in ((bold, italic), (bold, False), (False, italic), (False, False)):
            if (k, b, i) in fonts:
                return fonts[(k, b, i)]
    return next(iter(fonts.values()))


class _Font:
    def __init__(self, path: str):
        from fontTools.ttLib import TTFont  # noqa: PLC0415

        self.tt = TTFont(path)
        self.cmap = self.tt.getBestCmap() or {}
        self.glyphs = self.tt.getGlyphSet()
        self.upem = self.tt["head"].unitsPerEm
        self.hmtx = self.tt["hmtx"]
        self.kern = {}
        if "kern" in self.tt:
            for t in self.tt["kern"].kernTables:
                if getattr(t, "coverage", 1) & 1:
                    self.kern.update(getattr(t, "kernTable", {}))
        self._outline: dict[str, Path] = {}

    def outline(self, gname: str) -> Path:
        if gname not in self._outline:
            from fontTools.pens.basePen import BasePen  # noqa: PLC0415

            p = Path()

            class Pen(BasePen):
                def _moveTo(self, pt):
                    p.move_to(pt[0], -pt[1])

                def _lineTo(self, pt):
                    p.line_to(pt[0], -pt[1])

                def _curveToOne(self, a, b, c):
                    p.cubic_to(a[0], -a[1], b[0], -b[1], c[0], -c[1])

                def _qCurveToOne(self, a, b):
                    p.quad_to(a[0], -a[1], b[0], -b[1])

                def _closePath(self):
                    p.close()

            self.glyphs[gname].draw(Pen(self.glyphs))
            self._outline[gname] = p
        return self._outline[gname]


@functools.lru_cache(maxsize=16)
def _font(path: str) -> _Font:
    return _Font(path)


def _lengths_list(v, lengths, axis, fs) -> list[float]:
    if v is None:
        return []
    out = []
    for tok in re.split(r"[\s,]+", v.strip()):
        if tok:
            r = lengths.resolve(tok, axis, None, font_size=fs)
            if r is None:
                return out
            out.append(r)
    return out


def text_paths(ld, el, lengths, st) -> list:
    """``(path, computed style)`` of each run of ``el`` (a ``text``) in its user space."""
    # Characters with their style and positioning attributes, whitespace collapsed (xml:space default).
    chars: list[tuple[str, dict, float | None, float | None, float, float]] = []

    def walk(node, nst, depth):
        xs = _lengths_list(node.get("x"), lengths, "x", nst["font-size"])
        ys = _lengths_list(node.get("y"), lengths, "y", nst["font-size"])
        dxs = _lengths_list(node.get("dx"), lengths, "x", nst["font-size"])
        dys = _lengths_list(node.get("dy"), lengths, "y", nst["font-size"])
        if node.get("rotate") or node.get("textLength"):
            ld.warn("rotate / textLength on text", "tspan" if depth else "text")
        k = 0

        def add(s, cst):
            nonlocal k
            for ch in s:
                chars.append((ch, cst, xs[k] if k < len(xs) else None, ys[k] if k < len(ys) else None,
                              dxs[k] if k < len(dxs) else 0.0, dys[k] if k < len(dys) else 0.0))
                k += 1

        if node.text:
            add(node.text, nst)
        for c in node:
            tag = c.tag.split("}", 1)[-1] if isinstance(c.tag, str) else ""
            if tag == "tspan":
                cst = ld.style(c, nst)
                if cst.get("display") != "none":
                    walk(c, cst, depth + 1)
            elif tag in ("textPath", "tref", "a"):
                ld.warn(f"<{tag}> in text", tag)
            if c.tail:
                add(c.tail, nst)

    walk(el, st, 0)
    # Collapse white space (SVG's xml:space="default").
    kept = []
    prev_space = True
    for ch, cst, x, y, dx, dy in chars:
        if ch in "\n\r":
            continue
        if ch == "\t":
            ch = " "
        if ch == " " and prev_space:
            continue
        prev_space = ch == " "
        kept.append((ch, cst, x, y, dx, dy))
    while kept and kept[-1][0] == " ":
        kept.pop()
    if not kept:
        return []
    # Lay out: chunks start at absolute positions; each chunk is anchored by its first character's anchor.
    pen_x, pen_y = 0.0, 0.0
    chunks: list[list] = []
    prev = None
    for ch, cst, x, y, dx, dy in kept:
        if x is not None or y is not None or not chunks:
            pen_x = x if x is not None else pen_x
            pen_y = y if y is not None else pen_y
            chunks.append([])
            prev = None  # no kerning across chunks
        pen_x += dx
        pen_y += dy
        fpath = find_font(cst.get("font-family"), _bold(cst), cst.get("font-style") in ("italic", "oblique"))
        if fpath is None:
            ld.warn("text (no font file found on the system)", "text")
            return []
        font = _font(fpath)
        fs = cst["font-size"]
        scale = fs / font.upem
        g = font.cmap.get(ord(ch))
        if g is None:
            ld.warn("characters missing from the font", "text")
            g = ".notdef"
        if prev is not None and prev[0] is font:
            pen_x += font.kern.get((prev[1], g), 0) * scale
        adv = font.hmtx[g][0] * scale
        ls = cst.get("letter-spacing")
        extra = lengths.resolve(ls, "x", 0.0, font_size=fs) if ls not in (None, "normal") else 0.0
        chunks[-1].append((font, g, pen_x, pen_y, scale, cst))
        pen_x += adv + extra
        prev = (font, g)
        chunks[-1][-1] += (pen_x,)
    out = []
    for chunk in chunks:
        if not chunk:
            continue
        anchor = chunk[0][5].get("text-anchor", "start")
        width = chunk[-1][6] - chunk[0][2]
        shift = {"middle": -width / 2, "end": -width}.get(anchor, 0.0)
        runs: list[tuple[Path, dict]] = []
        for font, g, x, y, scale, cst, _ in chunk:
            glyph = font.outline(g)
            if not len(glyph):
                continue
            p = glyph.transformed((scale, 0, 0, scale, x + shift, y))
            ld.budget.charge(0, len(p))
            if runs and runs[-1][1] is cst:
                runs[-1][0].extend(p)
            else:
                runs.append((p, cst))
        out += runs
    return out


def _bold(st) -> bool:
    w = (st.get("font-weight") or "normal").strip()
    return w in ("bold", "bolder") or (w.isdigit() and int(w) >= 600)


def draw_text(ld, el, tr, st, lengths, op) -> None:
    """Fill and stroke the runs of a ``text`` element."""
    if st.get("writing-mode", "horizontal-tb") not in ("horizontal-tb", "lr", "lr-tb"):
        ld.warn("vertical writing-mode", "text")
    for p, rst in text_paths(ld, el, lengths, st):
        if rst.get("visibility", "visible") != "visible":
            continue
        ld.fill_shape(el, p, tr, rst, lengths, op)
        ld.stroke_shape(el, p, tr, rst, lengths, op)
