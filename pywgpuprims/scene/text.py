"""Simple SVG text (``text`` / ``tspan``) drawn from glyph outlines (fontTools)."""

from __future__ import annotations


def text_paths(ld, el, lengths, st) -> list:
    """(path, style) of each run of ``el`` in its user space."""
    ld.warn("<text>", "text")
    return []


def draw_text(ld, el, tr, st, lengths, op) -> None:
    for p, rst in text_paths(ld, el, lengths, st):
        ld.fill_shape(el, p, tr, rst, lengths, op)
