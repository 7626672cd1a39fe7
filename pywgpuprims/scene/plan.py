"""Scene plans: a recorded :class:`~pywgpuprims.scene.Scene` flattened to flat numpy arrays (elements,
parts, segments) and, on the host when asked, laid out in 16x16 tiles (boxes, clip boxes, cells)."""

from __future__ import annotations

import numpy as np

from .._device import TRANSFER, _parallel_copy
from .geometry import flatten

CLIP_DRAW, CLIP_BEGIN, CLIP_END = 0, 1, 2
TILE = 16

def clip_bboxes(kinds, bboxes, viewport) -> np.ndarray:
    """Clip-stack bounding boxes of a scene's elements (``pywgpuprims.clip_bboxes``), as numpy."""
    import pywgpuprims as pp  # noqa: PLC0415

    kinds = np.ascontiguousarray(kinds, dtype=np.uint32)
    bboxes = np.ascontiguousarray(bboxes, dtype=np.float32).reshape(-1, 4)
    if not len(kinds):
        return np.zeros((0, 4), np.float32)
    vp = tuple(float(v) for v in np.asarray(viewport, np.float64).ravel())
    return np.asarray(pp.clip_bboxes(kinds, bboxes, vp), dtype=np.float32).reshape(-1, 4)


class ScenePlan:
    """Everything the GPU and the CPU reference need, as flat numpy arrays.

    Elements (one per fill, push, pop) carry a kind, a part range, a premultiplied colour and a
    tile rectangle (their clipped bbox in tiles). Parts (the paths: one per fill, one or more per
    clip) carry a rule, a product-term flag and their cell range: one cell per tile row that the
    element's tile rectangle spans. Records are the paths' cubic records (lines and curves), which the
    GPU flattens; :meth:`layout` flattens them on the host (the CPU reference) into segments, filtered
    to those that can cross a sample row in those tile rows left of the canvas' right edge.
    """

    def __init__(self, ops, width: int, height: int, background, layout: bool = True, n_elements: int | None = None):
        self.width, self.height = width, height
        self.tiles_x, self.tiles_y = -(-width // TILE), -(-height // TILE)
        a = background[3] / 255.0
        self.background = np.array([background[0] / 255 * a, background[1] / 255 * a, background[2] / 255 * a, a],
                                   np.float32)
        if n_elements is None:
            n_elements = sum(len(op[4]) if op[0] == "many" else len(op[1]) if op[0] == "bulk" else 1 for op in ops)
        n = n_elements
        kinds = np.zeros(n, np.uint32)
        colors = np.zeros((n, 4), np.float32)
        part_lo = np.zeros(n, np.int64)
        part_hi = np.zeros(n, np.int64)
        paint = np.zeros(n, np.uint32)  # 0: solid; else 1 + the first vec4 of the element's block in `paints`
        layer = np.full(n, -1.0, np.float32)  # a BEGIN that starts a layer: its opacity
        masked = np.zeros(n, bool)  # ... a layer with a mask
        switch = np.zeros(n, bool)  # the element between a mask and what it masks
        blocks: list[np.ndarray] = []
        n_paint = 0
        recs, rkinds, rule, newterm, nrec = [], [], [], [], []  # per-part values: chunks of arrays
        single: tuple[list, list, list] = ([], [], [])  # per-part values of single ops, flushed as a chunk

        def flush():
            if single[0]:
                rule.append(np.asarray(single[0], np.uint32))
                newterm.append(np.asarray(single[1], bool))
                nrec.append(np.asarray(single[2], np.int64))
                for lst in single:
                    lst.clear()

        np_ = 0
        i = 0
        for op in ops:
            if op[0] == "many":  # m fills of k records each, one part each
                flush()
                _, rec, rk, k, prem, rl = op
                m = len(prem)
                kinds[i:i + m] = CLIP_DRAW
                colors[i:i + m] = prem
                part_lo[i:i + m] = np_ + np.arange(m)
                part_hi[i:i + m] = np_ + np.arange(1, m + 1)
                recs.append(rec)
                rkinds.append(rk)
                rule.append(np.full(m, rl, np.uint32))
                newterm.append(np.ones(m, bool))
                nrec.append(np.full(m, k, np.int64))
                np_ += m
                i += m
                continue
            if op[0] == "bulk":  # elements from numpy arrays, one part per fill or push
                flush()
                _, ok, rec, rk, cnt, prem, rl = op
                m = len(ok)
                has = ok != CLIP_END
                lo = np_ + np.cumsum(has) - has
                kinds[i:i + m] = ok
                colors[i:i + m] = prem
                part_lo[i:i + m] = lo
                part_hi[i:i + m] = lo + has
                recs.append(rec)
                rkinds.append(rk)
                rule.append(rl[has])
                newterm.append(np.ones(int(has.sum()), bool))
                nrec.append(cnt[has])
                np_ += int(has.sum())
                i += m
                continue
            if op[0] == "pop":
                kinds[i] = CLIP_END
                part_lo[i] = part_hi[i] = np_
                i += 1
                continue
            kinds[i] = CLIP_DRAW if op[0] in ("fill", "switch") else CLIP_BEGIN
            if op[0] == "push" and len(op) > 2:
                layer[i] = op[2]
                masked[i] = op[3]
            elif op[0] == "switch":
                switch[i] = True
            if op[0] == "fill":
                r, g, b, al = op[2]
                al /= 255.0
                colors[i] = (r / 255 * al, g / 255 * al, b / 255 * al, al)
                if len(op) > 3:
                    paint[i] = 1 + n_paint
                    blocks.append(op[3])
                    n_paint += len(op[3])
            part_lo[i] = np_
            for p in op[1]:
                recs.append(p.rec)
                rkinds.append(p.kind)
                single[0].append(p.rule)
                single[1].append(p.new_term)
                single[2].append(len(p.rec))
                np_ += 1
            part_hi[i] = np_
            i += 1
        flush()
        self.n_elements, self.n_parts = n, np_
        self.kinds, self.colors = kinds, colors
        self.paint = paint
        self.match = _match_clips(kinds)
        ends = np.nonzero(kinds == CLIP_END)[0]
        layer[ends] = layer[self.match[ends]]  # an END closes its BEGIN's layer
        masked[ends] = masked[self.match[ends]]
        #: Per element: a BEGIN / END of a masked layer; the switch from mask to content.
        self.masked, self.switch = masked, switch
        #: Per element: the layer opacity of a BEGIN / END that starts / ends a layer, else -1.
        self.layer = layer
        self.has_layers = bool((layer >= 0).any())
        #: Gradient blocks (see :mod:`.paint`), vec4 rows.
        self.paints = np.concatenate(blocks).astype(np.float32) if blocks else np.zeros((1, 4), np.float32)
        self.part_lo, self.part_hi = part_lo, part_hi
        self.part_rule = np.concatenate(rule).astype(np.uint32) if rule else np.zeros(0, np.uint32)
        self.part_newterm = np.concatenate(newterm).astype(bool) if newterm else np.zeros(0, bool)
        # The records stay in the ops' chunks until asked for: the GPU scene converts them to float32
        # straight into its upload (:meth:`records_into`), with no concatenated copy in between.
        self._record_chunks = recs
        self._records = None
        #: Path records in all (the rows of :attr:`records`).
        self.n_records = sum(len(r) for r in recs)
        rkind = np.concatenate(rkinds) if rkinds else np.zeros(0, np.uint8)
        #: Per path record: its kind (0 line, 1 curve) and its part.
        self.record_kinds = rkind
        self.record_part = np.repeat(np.arange(np_, dtype=np.uint32),
                                     np.concatenate(nrec) if nrec else np.zeros(0, np.int64))
        self.max_depth = int(np.max(np.cumsum(np.where(kinds == CLIP_BEGIN, 1, np.where(kinds == CLIP_END, -1, 0))),
                                    initial=0))
        self.elem_of_part = np.repeat(np.arange(n), part_hi - part_lo)
        self.viewport = np.array([0, 0, width, height], np.float32)
        self._layout_done = False
        if layout:
            self.layout()

    @property
    def records(self) -> np.ndarray:
        """Path records (n_records, 8): cubic, transformed, float32 (what the GPU flattens in
        ``scene/flatten.wgsl``, and :meth:`layout` on the host, in float64 from these values)."""
        if self._records is None:
            self._records = self.records_into(np.empty((self.n_records, 8), np.float32))
        return self._records

    def records_into(self, out: np.ndarray) -> np.ndarray:
        """Write :attr:`records` into ``out``, a C-contiguous float32 (n_records, 8) array (converted
        from the ops' float64 in one pass); returns ``out``."""
        if self._records is not None:
            out[...] = self._records
            return out
        flat = out.reshape(-1)
        at = 0
        small: list[np.ndarray] = []  # runs of small chunks (SVG paths) go in one concatenation
        for chunk in [*self._record_chunks, None]:
            if chunk is not None and chunk.size < 1 << 16:
                small.append(chunk.reshape(-1))
                continue
            if small:
                size = sum(c.size for c in small)
                np.concatenate(small, out=flat[at:at + size])
                at += size
                small.clear()
            if chunk is not None:  # a bulk op's records: converted by several threads
                _parallel_copy(flat[at:at + chunk.size], chunk.reshape(-1), TRANSFER)
                at += chunk.size
        return out

    def layout(self) -> None:
        """Host layout: bounding boxes, clip boxes, tile rectangles, cells, binned segments.

        Bounding boxes come from the segments that can matter, extended to the right edge where
        segments right of the canvas were dropped (a conservative box: which tiles get an element
        never changes the image, as long as every visible sample is inside)."""
        if self._layout_done:
            return
        self._layout_done = True
        n, np_ = self.n_elements, self.n_parts
        seg, seg_part = flatten(self.records, self.record_kinds, self.record_part, dtype=np.float32)
        # Segments that can matter anywhere: not horizontal, not right of the canvas.
        #: Parts with segments right of the canvas: their box extends to the right edge.
        self.part_right = np.zeros(np_, bool)
        if len(seg):
            right = np.minimum(seg[:, 0], seg[:, 2]) >= self.width
            self.part_right[seg_part[right]] = True
            keep = (seg[:, 1] != seg[:, 3]) & ~right
            seg, seg_part = seg[keep], seg_part[keep]
        kinds = self.kinds
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
        self.clipped = clip_bboxes(kinds, self.bboxes, self.viewport)
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
