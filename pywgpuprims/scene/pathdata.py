"""SVG path data (``d``) and ``transform`` lists, with the specification's error handling: path data
is rendered up to the first error; an invalid transform list is ignored as a whole."""

from __future__ import annotations

import math
import re

import numpy as np

from .geometry import Path, compose

_NUM_RE = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_ALL = re.compile(rf"[\s,]*(?:([MmZzLlHhVvCcSsQqTtAa])|({_NUM_RE})|(\S))")
_N_ARGS = {"m": 2, "l": 2, "h": 1, "v": 1, "c": 6, "s": 4, "q": 4, "t": 2, "a": 7, "z": 0}


class PathDataError(ValueError):
    """Raised internally where path data stops being valid."""


def parse_path_d(d: str, max_segments: int | None = None) -> tuple[Path, bool]:
    """``(path, complete)``: the path up to the first error (``complete`` False when one was met).

    Examples
    --------
    >>> p, ok = parse_path_d("M0 0 L10 0 10 10z")
    >>> len(p), ok
    (3, True)
    >>> p, ok = parse_path_d("M0 0 L10 0 L 5")
    >>> len(p), ok
    (1, False)
    """
    # One pass of the regex engine over the whole string; a junk character ends the valid part.
    toks = _ALL.findall(d or "")
    n = len(toks)
    pos = 0
    p = Path()
    cmd = None
    cx = cy = sx = sy = 0.0
    last_c = last_q = None
    first = True
    count = 0

    def number():
        nonlocal pos
        if pos >= n or not toks[pos][1]:
            raise PathDataError
        v = float(toks[pos][1])
        if not math.isfinite(v):
            raise PathDataError
        pos += 1
        return v

    def flag():
        nonlocal pos
        if pos >= n or not toks[pos][1] or toks[pos][1][0] not in "01":
            raise PathDataError
        t = toks[pos][1]
        if len(t) > 1:  # packed flags ("a1 1 0 0150 50"): the rest of the token is read next
            toks[pos] = ("", t[1:], "")
        else:
            pos += 1
        return t[0] == "1"

    try:
        while True:
            if pos >= n:
                break
            tc, tn, tj = toks[pos]
            if tj:
                raise PathDataError
            if tc:
                cmd = tc
                pos += 1
                if first and cmd not in "Mm":
                    raise PathDataError
                first = False
            elif cmd is None or cmd in "Zz":
                raise PathDataError  # numbers before any command, or straight after Z
            c = cmd.lower()
            if c == "z":
                p.close()
                cx, cy = sx, sy
                last_c = last_q = None
                continue
            rel = cmd.islower()
            ox, oy = (cx, cy) if rel else (0.0, 0.0)
            if c == "a":
                a = [number(), number(), number(), flag(), flag(), number(), number()]
            else:
                a = [number() for _ in range(_N_ARGS[c])]
            count += 1
            if max_segments is not None and count > max_segments:
                raise OverflowError(count)
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
            if c in "lhv":
                if c == "l":
                    cx, cy = ox + a[0], oy + a[1]
                elif c == "h":
                    cx = ox + a[0]
                else:
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
            else:
                x, y = a[5] + ox, a[6] + oy
                p.arc_to(a[0], a[1], a[2], a[3], a[4], x, y)
                cx, cy = x, y
                last_c = last_q = None
    except PathDataError:
        return p, False
    return p, True


_TR_ITEM = re.compile(r"[\s,]*(matrix|translate|scale|rotate|skewX|skewY)\s*\(([^)]*)\)")
_TR_END = re.compile(r"[\s,]*$")


def parse_transform(s: str | None) -> tuple[np.ndarray | None, bool]:
    """``(matrix 2x3 or None, valid)`` of a transform list; an invalid list gives ``(None, False)``.

    Examples
    --------
    >>> m, ok = parse_transform("translate(10 20) scale(2)")
    >>> m.tolist(), ok
    ([[2.0, 0.0, 10.0], [0.0, 2.0, 20.0]], True)
    """
    if s is None or not s.strip() or s.strip() == "none":
        return None, True
    pos, m = 0, None
    while not _TR_END.match(s, pos):
        it = _TR_ITEM.match(s, pos)
        if not it:
            return None, False
        pos = it.end()
        name, args = it.group(1), it.group(2)
        raw = re.sub(r"(deg|px)\b", "", args)  # the CSS form of the property
        try:
            a = [float(x) for x in re.split(r"[\s,]+", raw.strip()) if x]
        except ValueError:
            return None, False
        n = len(a)
        if name == "matrix" and n == 6:
            t = np.array([[a[0], a[2], a[4]], [a[1], a[3], a[5]]])
        elif name == "translate" and n in (1, 2):
            t = np.array([[1, 0, a[0]], [0, 1, a[1] if n > 1 else 0.0]])
        elif name == "scale" and n in (1, 2):
            t = np.array([[a[0], 0, 0], [0, a[1] if n > 1 else a[0], 0]])
        elif name == "rotate" and n in (1, 3):
            c, s_ = math.cos(math.radians(a[0])), math.sin(math.radians(a[0]))
            cx, cy = (a[1], a[2]) if n == 3 else (0.0, 0.0)
            t = np.array([[c, -s_, cx - c * cx + s_ * cy], [s_, c, cy - s_ * cx - c * cy]])
        elif name == "skewX" and n == 1:
            t = np.array([[1, math.tan(math.radians(a[0])), 0], [0, 1, 0]])
        elif name == "skewY" and n == 1:
            t = np.array([[1, 0, 0], [math.tan(math.radians(a[0])), 1, 0]])
        else:
            return None, False
        m = compose(m, t.astype(np.float64)) if m is not None else t.astype(np.float64)
    if m is not None and not np.isfinite(m).all():
        return None, False
    return m, True
