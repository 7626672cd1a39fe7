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

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._errors import InputError
from ._scene_geom import Path, as_transform, circle, compose, ellipse, flatten, polygon, rect, rounded_rect, star

__all__ = ["CLIP_BEGIN", "CLIP_DRAW", "CLIP_END", "Path", "Scene", "circle", "compose", "ellipse", "load_svg",
           "polygon", "rect", "render_reference", "rounded_rect", "star"]

CLIP_DRAW, CLIP_BEGIN, CLIP_END = 0, 1, 2
TILE = 16
_RULES = {"nonzero": 0, "evenodd": 1}


def _rule(fill_rule: str) -> int:
    if fill_rule not in _RULES:
        raise InputError("scene", f"fill_rule must be 'nonzero' or 'evenodd', got {fill_rule!r}")
    return _RULES[fill_rule]


def _color(rgba) -> tuple[float, float, float, float]:
    c = np.asarray(rgba, dtype=np.float64).ravel()
    if c.shape == (3,):
        c = np.append(c, 255.0)
    if c.shape != (4,) or not np.all(np.isfinite(c)) or c.min() < 0 or c.max() > 255:
        raise InputError("scene", f"a colour is an (r, g, b[, a]) tuple of 0-255 values, got {rgba!r}")
    return tuple(float(v) for v in c)


def clip_bboxes(kinds, bboxes, viewport, max_depth: int | None = None) -> np.ndarray:
    """Clip-stack bounding boxes of a scene's elements (``pywgpuprims.clip_bboxes``), as numpy."""
    import pywgpuprims as pp  # noqa: PLC0415

    kinds = np.ascontiguousarray(kinds, dtype=np.uint32)
    bboxes = np.ascontiguousarray(bboxes, dtype=np.float32).reshape(-1, 4)
    if not len(kinds):
        return np.zeros((0, 4), np.float32)
    vp = tuple(float(v) for v in np.asarray(viewport, np.float64).ravel())
    return np.asarray(pp.clip_bboxes(kinds, bboxes, vp, max_depth=max_depth), dtype=np.float32).reshape(-1, 4)


@dataclass
class _Part:
    rec: np.ndarray
    kind: np.ndarray
    rule: int
    new_term: bool  # starts a new product term: a clip is the union of products of parts


class Scene:
    """A list of fills and clips in painter's order; see the module docs.

    Examples
    --------
    >>> from pywgpuprims.scene import Scene, circle
    >>> s = Scene()
    >>> s.fill(circle(8, 8, 6), (255, 0, 0, 128))
    >>> len(s)
    1
    """

    def __init__(self):
        self._ops: list[tuple] = []  # ("fill", parts, color) | ("push", parts) | ("pop",)
        self._depth = 0
        self.max_depth = 0

    def __len__(self) -> int:
        return len(self._ops)

    @property
    def depth(self) -> int:
        """Clips pushed and not yet popped."""
        return self._depth

    @staticmethod
    def _parts_of(path: Path, fill_rule: str, transform) -> list[_Part]:
        if not isinstance(path, Path):
            raise InputError("scene", f"expected a Path, got {type(path).__name__}")
        rec, kind = path.records(as_transform(transform))
        if not np.isfinite(rec).all():
            raise InputError("scene", "path coordinates (after the transform) must be finite")
        return [_Part(rec, kind, _rule(fill_rule), True)]

    def fill(self, path: Path, rgba, fill_rule: str = "nonzero", transform=None) -> None:
        """Fill ``path`` with the colour ``rgba`` (0-255 straight alpha), under the current clips."""
        self._ops.append(("fill", self._parts_of(path, fill_rule, transform), _color(rgba)))

    def push_clip(self, path: Path, fill_rule: str = "nonzero", transform=None) -> None:
        """Intersect the clip with ``path`` until the matching :meth:`pop_clip`."""
        self._push(self._parts_of(path, fill_rule, transform))

    def push_clip_union(self, terms: list[list[tuple[Path, str, object]]]) -> None:
        """Push a clip that is a union of intersections: ``terms`` is a list of products, each a list
        of ``(path, fill_rule, transform)``. (SVG ``clipPath`` with several children and nested
        ``clip-path`` references is expressed this way.) An empty list clips everything away."""
        parts: list[_Part] = []
        for term in terms:
            for j, (path, rule, tr) in enumerate(term):
                p = self._parts_of(path, rule, tr)[0]
                p.new_term = j == 0
                parts.append(p)
        self._push(parts)

    def _push(self, parts: list[_Part]) -> None:
        self._ops.append(("push", parts))
        self._depth += 1
        self.max_depth = max(self.max_depth, self._depth)

    def pop_clip(self) -> None:
        """End the innermost clip."""
        if self._depth == 0:
            raise InputError("scene", "pop_clip without a matching push_clip")
        self._ops.append(("pop",))
        self._depth -= 1

    def _check_balanced(self) -> None:
        if self._depth:
            raise InputError("scene", f"{self._depth} push_clip call(s) without a matching pop_clip")

    def plan(self, width: int, height: int, background=(255, 255, 255, 255), layout: bool = True) -> ScenePlan:
        """Flatten (and with ``layout``, lay out on the host) the scene for a ``width`` x ``height`` canvas."""
        self._check_balanced()
        return ScenePlan(self._ops, int(width), int(height), _color(background), layout)

    def render(self, width: int, height: int, background=(255, 255, 255, 255), timings: dict | None = None
               ) -> np.ndarray:
        """Render on the GPU: an (height, width, 4) uint8 array, sRGB values, straight alpha.

        ``timings`` (a dict), when given, receives host and GPU seconds per stage.
        """
        from ._scene_gpu import render_plan  # noqa: PLC0415

        _check_size(width, height)
        import time  # noqa: PLC0415

        from ._device import device  # noqa: PLC0415

        t0 = time.perf_counter()
        host_layout = device().hooks.scene_layout != "gpu"
        plan = self.plan(width, height, background, layout=host_layout)
        if timings is not None:
            timings["host: flatten" + (" + layout" if host_layout else "")] = time.perf_counter() - t0
        return render_plan(plan, timings=timings)

    def render_reference(self, width: int, height: int, background=(255, 255, 255, 255)) -> np.ndarray:
        """The same image from the CPU reference renderer (numpy, same sampling)."""
        from ._scene_ref import render_reference_plan  # noqa: PLC0415

        _check_size(width, height)
        return render_reference_plan(self.plan(width, height, background))

    def save(self, filename: str, width: int, height: int, background=(255, 255, 255, 255)) -> np.ndarray:
        """Render and write a PNG (with imageio); returns the image."""
        import imageio.v3 as iio  # noqa: PLC0415

        img = self.render(width, height, background)
        iio.imwrite(filename, img)
        return img


def _check_size(width, height) -> None:
    if int(width) != width or int(height) != height or width < 1 or height < 1 or width > 16384 or height > 16384:
        raise InputError("scene", f"canvas size must be 1..16384 pixels per side, got {width}x{height}")


def render_reference(scene: Scene, width: int, height: int, background=(255, 255, 255, 255)) -> np.ndarray:
    """CPU reference rendering of ``scene`` (see :meth:`Scene.render_reference`)."""
    return scene.render_reference(width, height, background)


class ScenePlan:
    """Everything the GPU and the CPU reference need, as flat numpy arrays.

    Elements (one per fill, push, pop) carry a kind, a part range, a premultiplied colour and a
    tile rectangle (their clipped bbox in tiles). Parts (the paths: one per fill, one or more per
    clip) carry a rule, a product-term flag and their cell range: one cell per tile row that the
    element's tile rectangle spans. Segments are the flattened lines of every part, filtered to
    those that can cross a sample row in those tile rows left of the canvas' right edge.
    """

    def __init__(self, ops, width: int, height: int, background, layout: bool = True):
        self.width, self.height = width, height
        self.tiles_x, self.tiles_y = -(-width // TILE), -(-height // TILE)
        a = background[3] / 255.0
        self.background = np.array([background[0] / 255 * a, background[1] / 255 * a, background[2] / 255 * a, a],
                                   np.float32)
        n = len(ops)
        kinds = np.zeros(n, np.uint32)
        colors = np.zeros((n, 4), np.float32)
        part_lo = np.zeros(n, np.int64)
        part_hi = np.zeros(n, np.int64)
        recs, rkinds, rule, newterm, nrec = [], [], [], [], []
        np_ = 0
        for i, op in enumerate(ops):
            if op[0] == "pop":
                kinds[i] = CLIP_END
                part_lo[i] = part_hi[i] = np_
                continue
            kinds[i] = CLIP_DRAW if op[0] == "fill" else CLIP_BEGIN
            if op[0] == "fill":
                r, g, b, al = op[2]
                al /= 255.0
                colors[i] = (r / 255 * al, g / 255 * al, b / 255 * al, al)
            part_lo[i] = np_
            for p in op[1]:
                recs.append(p.rec)
                rkinds.append(p.kind)
                rule.append(p.rule)
                newterm.append(p.new_term)
                nrec.append(len(p.rec))
                np_ += 1
            part_hi[i] = np_
        self.n_elements, self.n_parts = n, np_
        self.kinds, self.colors = kinds, colors
        self.part_lo, self.part_hi = part_lo, part_hi
        self.part_rule = np.asarray(rule, np.uint32)
        self.part_newterm = np.asarray(newterm, bool)
        rec = np.concatenate(recs) if recs else np.zeros((0, 8))
        rkind = np.concatenate(rkinds) if rkinds else np.zeros(0, np.uint8)
        owner = np.repeat(np.arange(np_), np.asarray(nrec, np.int64))
        seg, seg_part = flatten(rec, rkind, owner)
        seg = seg.astype(np.float32)
        self.match = _match_clips(kinds)
        self.max_depth = int(np.max(np.cumsum(np.where(kinds == CLIP_BEGIN, 1, np.where(kinds == CLIP_END, -1, 0))),
                                    initial=0))
        self.elem_of_part = np.repeat(np.arange(n), part_hi - part_lo)
        self.viewport = np.array([0, 0, width, height], np.float32)
        # Segments that can matter anywhere: not horizontal, not right of the canvas.
        #: Parts with segments right of the canvas: their box extends to the right edge.
        self.part_right = np.zeros(np_, bool)
        if len(seg):
            right = np.minimum(seg[:, 0], seg[:, 2]) >= width
            self.part_right[seg_part[right]] = True
            keep = (seg[:, 1] != seg[:, 3]) & ~right
            seg, seg_part = seg[keep], seg_part[keep]
        #: Segments for the GPU layout (which computes bboxes, clip boxes and cells itself).
        self.gpu_segments = np.ascontiguousarray(seg, np.float32)
        self.gpu_seg_part = seg_part.astype(np.uint32)
        self._layout_done = False
        if layout:
            self.layout()

    def layout(self) -> None:
        """Host layout: bounding boxes, clip boxes, tile rectangles, cells, binned segments.

        Bounding boxes come from the segments that can matter, extended to the right edge where
        segments right of the canvas were dropped (a conservative box: which tiles get an element
        never changes the image, as long as every visible sample is inside)."""
        if self._layout_done:
            return
        self._layout_done = True
        n, np_ = self.n_elements, self.n_parts
        kinds, seg, seg_part = self.kinds, self.gpu_segments, self.gpu_seg_part.astype(np.int64)
        elem_of_part = self.elem_of_part
        pbb = np.zeros((np_, 4), np.float64)
        pbb[:, :2], pbb[:, 2:] = np.inf, -np.inf
        if len(seg):
            np.minimum.at(pbb[:, 0], seg_part, np.minimum(seg[:, 0], seg[:, 2]))
            np.minimum.at(pbb[:, 1], seg_part, np.minimum(seg[:, 1], seg[:, 3]))
            np.maximum.at(pbb[:, 2], seg_part, np.maximum(seg[:, 0], seg[:, 2]))
            np.maximum.at(pbb[:, 3], seg_part, np.maximum(seg[:, 1], seg[:, 3]))
        pbb[self.part_right, 2] = np.maximum(pbb[self.part_right, 2], self.width)
        ebb = np.zeros((n, 4), np.float64)
        ebb[:, :2], ebb[:, 2:] = np.inf, -np.inf
        if np_:
            np.minimum.at(ebb[:, 0], elem_of_part, pbb[:, 0])
            np.minimum.at(ebb[:, 1], elem_of_part, pbb[:, 1])
            np.maximum.at(ebb[:, 2], elem_of_part, pbb[:, 2])
            np.maximum.at(ebb[:, 3], elem_of_part, pbb[:, 3])
        bad = ~np.isfinite(ebb).all(axis=1) | (ebb[:, 2] <= ebb[:, 0]) | (ebb[:, 3] <= ebb[:, 1])
        bad |= kinds == CLIP_END
        ebb[bad] = 0
        self.bboxes = ebb.astype(np.float32)
        self.clipped = clip_bboxes(kinds, self.bboxes, self.viewport, self.max_depth)
        self.tile_rect = tile_rects(self.clipped, kinds, self.match, self.tiles_x, self.tiles_y)
        # Cells: one per (part, tile row of its element's rectangle).
        prect = self.tile_rect[elem_of_part] if np_ else np.zeros((0, 4), np.int64)
        self.part_band0 = prect[:, 1]
        self.part_nbands = prect[:, 3] - prect[:, 1]
        self.part_cell = np.cumsum(self.part_nbands) - self.part_nbands
        self.n_cells = int(self.part_nbands.sum())
        # Segments in a used tile row.
        if len(seg):
            ymin = np.minimum(seg[:, 1], seg[:, 3])
            ymax = np.maximum(seg[:, 1], seg[:, 3])
            b0 = self.part_band0[seg_part] * TILE
            b1 = (self.part_band0[seg_part] + self.part_nbands[seg_part]) * TILE
            keep = (ymax >= b0) & (ymin < b1)
            seg, seg_part = seg[keep], seg_part[keep]
        self.segments = np.ascontiguousarray(seg, np.float32)
        self.seg_part = seg_part.astype(np.uint32)


def tile_rects(clipped: np.ndarray, kinds: np.ndarray, match: np.ndarray, tiles_x: int, tiles_y: int
               ) -> np.ndarray:
    """Tile rectangles (tx0, ty0, tx1, ty1; exclusive ends) of clipped boxes; an END gets its BEGIN's."""
    cb = clipped.astype(np.float64)
    bad_cb = ~np.isfinite(cb).all(axis=1)
    cb[bad_cb] = 0
    rect4 = np.stack([np.floor(cb[:, 0] / TILE), np.floor(cb[:, 1] / TILE),
                      np.ceil(cb[:, 2] / TILE), np.ceil(cb[:, 3] / TILE)], axis=1)
    rect4[:, 0::2] = np.clip(rect4[:, 0::2], 0, tiles_x)
    rect4[:, 1::2] = np.clip(rect4[:, 1::2], 0, tiles_y)
    rect4 = rect4.astype(np.int64)
    empty = (rect4[:, 2] <= rect4[:, 0]) | (rect4[:, 3] <= rect4[:, 1]) | (cb[:, 2] <= cb[:, 0]) | (
        cb[:, 3] <= cb[:, 1])
    rect4[empty | bad_cb] = 0
    ends = np.nonzero(kinds == CLIP_END)[0]
    rect4[ends] = rect4[match[ends]]
    return rect4


def _match_clips(kinds: np.ndarray) -> np.ndarray:
    """For each BEGIN the index of its END and vice versa (others: their own index)."""
    n = len(kinds)
    match = np.arange(n)
    opens = kinds == CLIP_BEGIN
    closes = kinds == CLIP_END
    if not opens.any():
        return match
    step = opens.astype(np.int64) - closes.astype(np.int64)
    after = np.cumsum(step)
    level = np.where(opens, after - 1, after)  # a BEGIN's depth before it, an END's depth after it
    idx = np.nonzero(opens | closes)[0]
    order = idx[np.argsort(level[idx], kind="stable")]
    a, b = order[0::2], order[1::2]
    match[a], match[b] = b, a
    return match


def load_svg(source: str):
    """Read an SVG file (path or text) into a Scene: returns ``(scene, width, height)``.

    See :mod:`pywgpuprims._svg` for the supported subset.

    Examples
    --------
    >>> from pywgpuprims.scene import load_svg
    >>> s, w, h = load_svg('<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10">'
    ...                    '<rect width="5" height="5" fill="red"/></svg>')
    >>> (len(s), w, h)
    (1, 20, 10)
    """
    from ._svg import load_svg as _load  # noqa: PLC0415

    return _load(source)

