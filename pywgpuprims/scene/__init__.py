"""Clipped 2-D scenes rendered on the GPU: paths, fills, nested clips, an SVG subset.

A :class:`Scene` records fills and clip pushes/pops in painter's order. :meth:`Scene.render`
flattens curves on the host (vectorised numpy, 0.1 px tolerance), then runs the GPU pipeline:
path bounding boxes, clip bounding boxes with the stack monoid (``pywgpuprims.clip_bboxes``),
tile rectangles and cells, segments binned to (path, tile row)
cells, elements binned to 16x16 tiles by their clipped bbox,
and a fine pass that computes 16 samples per pixel (4x4 grid, winding numbers per sample,
nonzero or even-odd), keeps a per-pixel clip-coverage stack of any depth (levels live in a
storage buffer sized per tile from a depth bound; when that would not fit in memory, no levels
are stored: an END recomputes its clip's coverage and divides it back out, so deeper is slower,
never wrong) and composites premultiplied source-over. Each fine invocation stops after a bounded
number of loop trips and resumes in the next dispatch, so no scene comes near lavapipe's loop cap.

Examples
--------
>>> from pywgpuprims.scene import Scene, circle, rect, star
>>> s = Scene()
>>> s.push_clip(circle(32, 32, 28))
>>> s.fill(rect(0, 0, 64, 64), (200, 30, 30, 255))
>>> s.fill(star(32, 32, 30), (30, 30, 200, 255), fill_rule="evenodd")
>>> s.pop_clip()
>>> img = s.render(64, 64)  # doctest: +SKIP
>>> img.shape, img.dtype  # doctest: +SKIP
((64, 64, 4), dtype('uint8'))
"""

from .builder import Scene, render_reference
from .geometry import Path, as_transform, circle, compose, ellipse, flatten, polygon, rect, rounded_rect, star
from .paint import Gradient
from .plan import CLIP_BEGIN, CLIP_DRAW, CLIP_END, ScenePlan, clip_bboxes


def __getattr__(name: str):
    # The SVG front end needs the optional `svg` extra (defusedxml, tinycss2, cssselect2, fontTools):
    # loaded on first use, so that `import pywgpuprims` works without it.
    if name == "load_svg":
        try:
            from .svg import load_svg
        except ImportError as e:
            raise ImportError(f"pywgpuprims.scene.load_svg needs the 'svg' extra ({e}): "
                              "pip install 'pywgpuprims[svg]'") from e
        return load_svg
    raise AttributeError(f"module 'pywgpuprims.scene' has no attribute {name!r}")

__all__ = ["CLIP_BEGIN", "CLIP_DRAW", "CLIP_END", "Gradient", "Path", "Scene", "ScenePlan", "as_transform", "circle",
           "clip_bboxes", "compose", "ellipse", "flatten", "load_svg", "polygon", "rect", "render_reference",
           "rounded_rect", "star"]
