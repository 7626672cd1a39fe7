"""GPU pipeline for :mod:`pywgpuprims.scene`: band binning, tile binning, depth bounds, fine
rasterisation in bounded rounds, resolve to RGBA8. Each stage is one batch, so it can be timed."""

from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

from ._array import GpuArray, asarray
from ._device import Device, device
from ._errors import DeviceLimitError, ShaderError
from .scan import encode_scan
from .scene import CLIP_BEGIN, CLIP_END, ScenePlan

#: Loop trips one fine invocation may spend per round (lavapipe cuts loops at 65,535).
FINE_BUDGET = 16384


def _u32(a) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.uint32)
    return a if a.size else np.zeros(4, np.uint32)


def _read_u32(dev: Device, g: GpuArray, i: int) -> int:
    return int(np.frombuffer(dev.read(g.buffer, 4 * i, 4), np.uint32)[0])


def _up(dev: Device, a: np.ndarray) -> GpuArray:
    a = np.ascontiguousarray(a)
    if not a.size:
        a = np.zeros(4, a.dtype)
    return asarray(a, dev=dev)


class GpuScene:
    """A scene plan uploaded to the GPU, with one method per stage (each one batch)."""

    def __init__(self, plan: ScenePlan, dev: Device | None = None, budget: int = FINE_BUDGET,
                 stack: bool | None = None):
        self.dev = dev = dev or device()
        self.plan = plan
        self.budget = max(64, int(budget))  # each round must get past a summary word, a word and an element
        #: True: clip levels in a storage buffer (exact); False: no storage, clips rasterised twice;
        #: None: the stack when it fits in memory (see :meth:`depth_bounds`).
        self.stack = stack
        self.no_stack = stack is False
        n, P = plan.n_elements, plan.n_parts
        self.n_tiles = plan.tiles_x * plan.tiles_y
        self.n_words = -(-n // 32)
        flags = plan.part_rule.astype(np.uint32) | (plan.part_newterm.astype(np.uint32) << 1)
        parts = np.stack([plan.part_cell, plan.part_band0, plan.part_nbands, flags], axis=1) if P else np.zeros((0, 4))
        elems = np.zeros((n, 2, 4), np.uint32)
        elems[:, 0, 0] = plan.kinds
        src = np.where(plan.kinds == CLIP_END, plan.match, np.arange(n))  # an END carries its BEGIN's parts
        elems[:, 0, 1] = plan.part_lo[src]
        elems[:, 0, 2] = plan.part_hi[src]
        elems[:, 1, :] = plan.colors.view(np.uint32)
        rect = plan.tile_rect
        rows = (rect[:, 3] - rect[:, 1]).astype(np.int64)
        eid = np.repeat(np.arange(n), rows)
        row = np.arange(int(rows.sum())) - np.repeat(np.cumsum(rows) - rows, rows) + rect[eid, 1]
        self.n_pairs = len(eid)
        pad = self.n_words * 32
        kb = np.zeros((2, pad), bool)
        kb[0, :n] = plan.kinds == CLIP_BEGIN
        kb[1, :n] = plan.kinds == CLIP_END
        kind_bits = np.packbits(kb, axis=1, bitorder="little").view("<u4").T.copy()  # (words, 2)
        self.n_segs = len(plan.segments)
        self.segs = _up(dev, plan.segments)
        self.seg_part = _up(dev, _u32(plan.seg_part))
        self.parts = _up(dev, _u32(parts))
        self.elems = _up(dev, elems)
        self.rects = _up(dev, _u32(rect))
        self.pairs = _up(dev, _u32(np.stack([eid, row], axis=1)))
        self.kind_bits = _up(dev, _u32(kind_bits))
        self.n_cells = plan.n_cells
        self.counts = GpuArray.empty(self.n_cells + 1, np.uint32, dev)
        self.cell_off = GpuArray.empty(self.n_cells + 1, np.uint32, dev)
        mask_bytes = 4 * self.n_tiles * max(self.n_words, 1)
        if mask_bytes > dev.max_binding:
            raise DeviceLimitError("scene", f"tile bitmasks of {mask_bytes} bytes ({n} elements x {self.n_tiles} "
                                   f"tiles) exceed the device's largest storage binding ({dev.max_binding} bytes)")
        self.masks = GpuArray.empty(self.n_tiles * max(self.n_words, 1), np.uint32, dev)
        self.n_sum = -(-max(self.n_words, 1) // 32)
        self.summary = GpuArray.empty(self.n_tiles * self.n_sum, np.uint32, dev)
        self.need = GpuArray.empty(self.n_tiles + 1, np.uint32, dev)
        self.spill_off = GpuArray.empty(self.n_tiles + 1, np.uint32, dev)
        self.pix = GpuArray.empty((self.n_tiles * 256 * 2, 4), np.float32, dev)
        self.state = [GpuArray.empty(2 * self.n_tiles + 4, np.uint32, dev) for _ in range(2)]
        self.image = GpuArray.empty((plan.height, plan.width, 4), np.uint8, dev)
        self.spill = None
        self.binned = None
        self.rounds = 0

    # ---------------------------------------------------------------- stages
    def bin_segments(self) -> None:
        """Count segments per cell, scan, scatter into cells."""
        dev = self.dev
        total = None
        b = dev.batch()
        b.clear(self.counts)
        groups = -(-self.n_segs // 256)
        if groups:
            k = dev.kernel("scene/band.wgsl", defines={"SCATTER": False})
            b.dispatch(k, groups, params={"n_segs": self.n_segs}, segs=self.segs, seg_part=self.seg_part,
                       parts=self.parts, counts=self.counts)
        encode_scan(b, self.counts, self.cell_off, "add", exclusive=True)
        b.submit()
        total = _read_u32(dev, self.cell_off, self.n_cells) if self.n_cells else 0
        nbytes = 16 * max(total, 1)
        if nbytes > dev.max_binding:
            raise DeviceLimitError("scene", f"{total} binned segments exceed the device's largest storage binding")
        if self.binned is None or self.binned.size < 4 * max(total, 1):
            self.binned = GpuArray.empty((max(total, 1), 4), np.float32, dev)
        if groups:
            b = dev.batch()
            b.clear(self.counts)
            k = dev.kernel("scene/band.wgsl", defines={"SCATTER": True})
            b.dispatch(k, groups, params={"n_segs": self.n_segs}, segs=self.segs, seg_part=self.seg_part,
                       parts=self.parts, counts=self.counts, cell_off=self.cell_off, binned=self.binned)
            b.submit()

    def bin_tiles(self) -> None:
        """Set one bit per (tile, element) over each element's tile rectangle."""
        dev = self.dev
        b = dev.batch()
        b.clear(self.masks)
        b.clear(self.summary)
        if self.n_pairs:
            k = dev.kernel("scene/tiles.wgsl")
            b.dispatch(k, -(-self.n_pairs // 256), params={"n_pairs": self.n_pairs, "n_words": self.n_words,
                                                           "tiles_x": self.plan.tiles_x, "n_sum": self.n_sum},
                       pairs=self.pairs, rects=self.rects, masks=self.masks, summary=self.summary)
        b.submit()

    def depth_bounds(self) -> None:
        """Clip depth bound per tile, scanned into the tiles' first stack levels; sizes the stack buffer."""
        dev = self.dev
        b = dev.batch()
        b.clear(self.need)
        k = dev.kernel("scene/depth.wgsl")
        b.dispatch(k, self.n_tiles, params={"n_tiles": self.n_tiles, "n_words": self.n_words,
                                            "chunk": -(-self.n_words // 256)},
                   masks=self.masks, kind_bits=self.kind_bits, need=self.need)
        encode_scan(b, self.need, self.spill_off, "add", exclusive=True)
        b.submit()
        levels = _read_u32(dev, self.spill_off, self.n_tiles)
        nbytes = 4 * 256 * max(levels, 1)
        limit = min(dev.max_binding, dev.max_buffer, int(dev.options.get("scene_stack_bytes", 1 << 30)))
        self.no_stack = self.stack is False or (self.stack is None and nbytes > limit)
        if self.no_stack:
            levels = 0
        elif nbytes > limit:
            raise DeviceLimitError("scene", f"the clip stacks need {nbytes} bytes ({levels} tile levels of 256 "
                                   f"pixels), more than the device's largest storage binding ({dev.max_binding})")
        if self.spill is None or self.spill.size < 256 * max(levels, 1):
            self.spill = GpuArray.empty(256 * max(levels, 1), np.float32, dev)

    def fine(self) -> int:
        """Fine rasterisation in rounds until every tile is done; returns the number of rounds."""
        dev = self.dev
        k = dev.kernel("scene/fine.wgsl", defines={"NO_STACK": self.no_stack,
                                                   "NO_STACK_BOOL": "true" if self.no_stack else "false"})
        bg = self.plan.background
        rounds = 0
        src, dst = self.state
        while True:
            b = dev.batch()
            b.clear(dst, 8 * self.n_tiles, 16)
            b.dispatch(k, self.n_tiles, params={"tiles_x": self.plan.tiles_x, "n_tiles": self.n_tiles,
                                                "n_words": self.n_words, "n_sum": self.n_sum,
                                                "budget": self.budget,
                                                "first": int(rounds == 0), "bg_r": bg[0], "bg_g": bg[1],
                                                "bg_b": bg[2], "bg_a": bg[3]},
                       masks=self.masks, elems=self.elems, parts=self.parts, cell_off=self.cell_off,
                       binned=self.binned, spill_off=self.spill_off, spill=self.spill, pix=self.pix,
                       state_in=src, state_out=dst, summary=self.summary)
            b.submit()
            rounds += 1
            unfinished = int(np.frombuffer(dev.read(dst.buffer, 8 * self.n_tiles, 4), np.uint32)[0])
            src, dst = dst, src
            if unfinished == 0:
                break
            if rounds > self.plan.n_elements + self.n_words + self.n_sum + 2:  # every round makes progress
                raise ShaderError("scene/fine.wgsl", f"no progress after {rounds} rounds")
        self.rounds = rounds
        return rounds

    def resolve(self) -> None:
        dev = self.dev
        p = self.plan
        b = dev.batch()
        b.dispatch(dev.kernel("scene/resolve.wgsl"), -(-p.width * p.height // 256),
                   params={"width": p.width, "height": p.height, "tiles_x": p.tiles_x}, pix=self.pix,
                   image=self.image)
        b.submit()

    STAGES = ("bin_segments", "bin_tiles", "depth_bounds", "fine", "resolve")

    def run(self, timings: dict | None = None) -> np.ndarray:
        for name in self.STAGES:
            with _timed(self.dev, timings, f"gpu: {name}"):
                getattr(self, name)()
        return self.image.numpy()


@contextmanager
def _timed(dev: Device, timings: dict | None, name: str):
    if timings is None:
        yield
        return
    t0 = time.perf_counter()
    if dev.has_timestamps:
        with dev.timer() as t:
            yield
        timings[name] = t.ns * 1e-9
    else:
        yield
        dev.sync()
        timings[name + " (wall)"] = time.perf_counter() - t0


def render_plan(plan: ScenePlan, dev: Device | None = None, timings: dict | None = None,
                budget: int = FINE_BUDGET, stack: bool | None = None) -> np.ndarray:
    """Render a :class:`ScenePlan` on the GPU: (height, width, 4) uint8, straight alpha.

    ``stack``: keep clip levels in a storage buffer (True), recompute clips instead (False), or
    choose by memory (None).
    """
    t0 = time.perf_counter()
    g = GpuScene(plan, dev, budget, stack)
    if timings is not None:
        timings["host: upload"] = time.perf_counter() - t0
    return g.run(timings)
