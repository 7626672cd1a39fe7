"""GPU pipeline for :mod:`pywgpuprims.scene`: band binning, tile binning, depth bounds, fine
rasterisation in bounded rounds, resolve to RGBA8. Each stage is one batch, so it can be timed."""

from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

from .._array import GpuArray, asarray
from .._device import Device, device
from .._errors import DeviceLimitError, InputError, ShaderError
from .._memory import BlockView
from ..scan import record_scan
from .geometry import _MAX_SUBDIV as MAX_PIECES
from .geometry import TOLERANCE
from .plan import CLIP_BEGIN, CLIP_END, ScenePlan

#: Stack bytes allocated from the host's bound (tiles x clip depth) without reading the exact need back.
STACK_BOUND_BYTES = 32 << 20

#: (Element, tile row) pairs and cells sized by the bounds (elements or parts x tile rows) without
#: reading the exact counts back.
LAYOUT_BOUND_BYTES = 16 << 20

#: Frames up to this many bytes resolve in every fine round (a larger frame would read its pixels
#: back after each round of a scene that needs several).
RESOLVE_EACH_ROUND_BYTES = 4 << 20

#: Binned segments sized by the bound (segments x tile rows) without reading the exact count back.
BIN_BOUND_BYTES = 16 << 20

#: Scenes of at most this many path records size their segments by :func:`piece_bound` (no readback).
HOST_BOUND_RECORDS = 1 << 16

#: Loop trips one fine invocation may spend per round (lavapipe cuts loops at 65,535).
FINE_BUDGET = 16384


def piece_bound(records: np.ndarray, kinds: np.ndarray) -> int:
    """An upper bound of the segments ``scene/flatten.wgsl`` writes for ``records``: Wang's count in
    float64 plus one per curve (the GPU's float32 may round a count up at a boundary)."""
    q = np.asarray(records, np.float64).reshape(-1, 8)[np.asarray(kinds).reshape(-1) != 0]
    with np.errstate(invalid="ignore", over="ignore"):
        d1 = (q[:, 0] - 2 * q[:, 2] + q[:, 4]) ** 2 + (q[:, 1] - 2 * q[:, 3] + q[:, 5]) ** 2
        d2 = (q[:, 2] - 2 * q[:, 4] + q[:, 6]) ** 2 + (q[:, 3] - 2 * q[:, 5] + q[:, 7]) ** 2
        nc = np.ceil(np.sqrt(0.75 / TOLERANCE * np.sqrt(np.maximum(d1, d2)))) + 1
    nc = np.clip(np.nan_to_num(nc, nan=MAX_PIECES, posinf=MAX_PIECES), 1, MAX_PIECES)
    return int(nc.sum()) + len(records) - len(q)


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


class _Upload:
    """Host arrays sent to the GPU in one transfer: :meth:`reserve` lays them out in one host buffer
    (each at a binding-aligned offset), the caller fills them in place, :meth:`send` uploads the
    buffer once and returns a GpuArray view of each. An empty array is sent as 16 zero bytes (a
    binding is never empty), as :func:`_up` does. Only for inputs no kernel writes: a dispatch
    cannot bind one buffer both read-only and written."""

    def __init__(self, dev: Device):
        self.dev = dev
        self.align = max(16, dev.storage_align)
        self.layout: dict = {}
        self.host = np.zeros(0, np.uint8)

    def reserve(self, spec: dict) -> dict:
        """``spec``: name -> (shape, dtype). Returns name -> host array (zeros) to fill."""
        off = 0
        for name, (shape, dtype) in spec.items():
            dtype = np.dtype(dtype)
            shape = tuple(int(v) for v in shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            self.layout[name] = (off, shape, dtype, nbytes)
            off += -(-max(nbytes, 16) // self.align) * self.align
        self.host = np.zeros(off, np.uint8)
        return {name: self.host[o:o + nb].view(dt).reshape(sh) for name, (o, sh, dt, nb) in self.layout.items()}

    def send(self) -> dict:
        total = len(self.host)
        block = self.dev.alloc(total, label="scene inputs")
        self.dev.upload(block, self.host)
        out = {}
        for name, (o, shape, dtype, nbytes) in self.layout.items():
            if not nbytes:  # 16 zero bytes
                shape, nbytes = (16 // dtype.itemsize,), 16
            view = BlockView(block, o, nbytes, min(block.size, o + -(-nbytes // 16) * 16) - o, total)
            out[name] = GpuArray(self.dev, view, shape, dtype)
        return out


class GpuScene:
    """A scene plan uploaded to the GPU, with one method per stage (each one batch)."""

    def __init__(self, plan: ScenePlan, dev: Device | None = None, budget: int = FINE_BUDGET,
                 stack: bool | None = None, gpu_layout: bool | None = None):
        self.dev = dev = dev or device()
        self.plan = plan
        self.budget = max(64, int(budget))  # each round must get past a summary word, a word and an element
        #: True: clip levels in a storage buffer (exact); False: no storage, clips rasterised twice;
        #: None: the stack when it fits in memory (see :meth:`depth_bounds`).
        self.stack = stack
        self.no_stack = stack is False
        #: Boxes, clip boxes, tile rectangles and cells computed on the GPU (else taken from the host plan).
        self.gpu_layout = (dev.hooks.scene_layout == "gpu") if gpu_layout is None else gpu_layout
        n, P = plan.n_elements, plan.n_parts
        self.n_elements, self.n_parts = n, P
        self.n_tiles = plan.tiles_x * plan.tiles_y
        self.n_words = -(-n // 32)
        flags = plan.part_rule.astype(np.uint32) | (plan.part_newterm.astype(np.uint32) << 1)
        #: Floats per stack level: the clip coverage, plus the colour under a layer when there are layers.
        self.stride = 6 if plan.has_layers else 1
        R = self.n_records = plan.n_records
        # Every input the GPU only reads goes in one transfer: one host buffer, filled in place, one upload.
        up = _Upload(dev)
        spec = {"elems": ((n, 2, 4), np.uint32), "paints": (plan.paints.shape, np.float32),
                "kind_bits": ((self.n_words, 2), np.uint32)}
        if self.gpu_layout:
            if 32 * R > dev.binding_limit or P >= 1 << 31:
                raise DeviceLimitError("scene", f"{R} path records ({32 * R} bytes) exceed the device's largest "
                                       f"storage binding ({dev.binding_limit} bytes)")
            spec.update(recs=((R, 8), np.float32), rec_info=((R,), np.uint32), elem_head=((n, 4), np.uint32),
                        kinds=((n,), np.uint32))
        host = up.reserve(spec)
        elems = host["elems"]
        elems[:, 0, 0] = plan.kinds
        src = np.where(plan.kinds == CLIP_END, plan.match, np.arange(n))  # an END carries its BEGIN's parts
        elems[:, 0, 1] = plan.part_lo[src]
        elems[:, 0, 2] = plan.part_hi[src]
        elems[:, 0, 3] = plan.paint
        elems[:, 1, :] = plan.colors.view(np.uint32)
        lay = plan.layer >= 0  # layers: a flag in the head's w, the opacity in the colour's w
        if lay.any():
            elems[lay, 0, 3] = 0x80000000 | (plan.masked[lay].astype(np.uint32) << 30)
            elems[lay, 1, :3] = 0
            elems[lay, 1, 3] = plan.layer[lay].view(np.uint32)
        elems[plan.switch, 0, 3] = 0x40000000
        host["paints"][...] = plan.paints
        pad = self.n_words * 32
        kb = np.zeros((2, pad), bool)
        kb[0, :n] = plan.kinds == CLIP_BEGIN
        kb[1, :n] = plan.kinds == CLIP_END
        host["kind_bits"][...] = np.packbits(kb, axis=1, bitorder="little").view("<u4").T  # (words, 2)
        if self.gpu_layout:
            plan.records_into(host["recs"])
            #: The float32 records of a scene whose segments a host bound sizes (see :meth:`flatten_stage`).
            self._small_records = host["recs"] if R <= HOST_BOUND_RECORDS else None
            curve = np.left_shift(np.asarray(plan.record_kinds) != 0, 31, dtype=np.uint32)
            np.bitwise_or(plan.record_part, curve, out=host["rec_info"])
            head = host["elem_head"]
            head[:, 0] = plan.kinds
            head[:, 1] = plan.part_lo
            head[:, 2] = plan.part_hi
            head[:, 3] = plan.match
            host["kinds"][...] = plan.kinds
        gpu = up.send()
        self.elems, self.paints, self.kind_bits = gpu["elems"], gpu["paints"], gpu["kind_bits"]
        if self.gpu_layout:
            self.recs, self.rec_info, self.elem_head = gpu["recs"], gpu["rec_info"], gpu["elem_head"]
            self.kinds_gpu = gpu["kinds"]
            self.rec_count = GpuArray.empty(R + 1, np.uint32, dev)
            self.rec_off = GpuArray.empty(R + 1, np.uint32, dev)
            self.n_segs = 0  # segments written, or (HOST_BOUND_RECORDS) a bound: seg_count holds the count
            self.seg_count = GpuArray.empty(1, np.uint32, dev)
            self.segs = self.seg_part = None
            self.part_info = _up(dev, _u32(flags))  # the flatten stage sets the "right" flags (not in `up`: written)
            self.pbb = GpuArray.empty(4 * max(P, 1), np.uint32, dev)
            self.bboxes = GpuArray.empty((max(n, 1), 4), np.float32, dev)
            self.clipped = None
            self.rects = GpuArray.empty(4 * max(n, 1), np.uint32, dev)
            self.rows = GpuArray.empty(n + 1, np.uint32, dev)
            self.pair_off = GpuArray.empty(n + 1, np.uint32, dev)
            self.part_rows = GpuArray.empty(P + 1, np.uint32, dev)
            self.part_cell = GpuArray.empty(P + 1, np.uint32, dev)
            self.part_band0 = GpuArray.empty(max(P, 1), np.uint32, dev)
            self.parts = GpuArray.empty(4 * max(P, 1), np.uint32, dev)
            self.pairs = None
            self.n_pairs = self.n_cells = 0
            self.totals = GpuArray.empty(2, np.uint32, dev)
        else:
            plan.layout()
            parts = np.stack([plan.part_cell, plan.part_band0, plan.part_nbands, flags], axis=1) if P else np.zeros(
                (0, 4))
            rect = plan.tile_rect
            rows = (rect[:, 3] - rect[:, 1]).astype(np.int64)
            eid = np.repeat(np.arange(n), rows)
            row = np.arange(int(rows.sum())) - np.repeat(np.cumsum(rows) - rows, rows) + rect[eid, 1]
            self.n_pairs = len(eid)
            self.n_segs = len(plan.segments)
            self.seg_count = _up(dev, np.array([self.n_segs], np.uint32))
            self.segs = _up(dev, plan.segments)
            self.seg_part = _up(dev, _u32(plan.seg_part))
            self.parts = _up(dev, _u32(parts))
            self.rects = _up(dev, _u32(rect))
            self.pairs = _up(dev, _u32(np.stack([eid, row], axis=1)))
            self.n_cells = plan.n_cells
            self.totals = _up(dev, np.array([self.n_pairs, self.n_cells], np.uint32))
            self._alloc_cells()
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
        # The pixels, then one word: fine's progress word, copied there when a round resolves too
        self.n_pixel_bytes = 4 * plan.width * plan.height
        self.image = GpuArray(dev, dev.alloc(self.n_pixel_bytes + 4), (plan.height, plan.width, 4), np.uint8)
        self.pixels = None
        self.spill = None
        self.binned = None
        self.rounds = 0
        self._open = None  # the batch the stages record into, when untimed (see run)

    # Untimed, the stages record into one open batch (:meth:`run`): a stage submits only where the host
    # must read a result (or another primitive submits its own work), so a small scene is a few submissions.
    def _batch(self):
        return self._open if self._open is not None else self.dev.batch()

    def _end(self, b) -> None:
        """A stage's batch is recorded: submit it, unless it is the open batch."""
        if b is not self._open:
            b.submit()

    def _flush(self) -> None:
        """Submit what the open batch holds (before the host reads, or another primitive submits)."""
        if self._open is not None:
            self._open.submit()

    def _alloc_cells(self) -> None:
        self.counts = GpuArray.empty(self.n_cells + 1, np.uint32, self.dev)
        self.cell_off = GpuArray.empty(self.n_cells + 1, np.uint32, self.dev)

    def _layout_kernel(self, name: str):
        return self.dev.kernel("scene/layout.wgsl", defines={name: True})

    def _lparams(self, count: int) -> dict:
        p = self.plan
        return {"n": count, "width": float(p.width), "tiles_x": p.tiles_x, "tiles_y": p.tiles_y}

    # ---------------------------------------------------------------- GPU layout stages
    def flatten_stage(self) -> None:
        """Path records to line segments (``scene/flatten.wgsl``): pieces per record, a scan into
        offsets, then each record writes its pieces. Up to ``HOST_BOUND_RECORDS`` records the
        segments are sized by a host bound and all is one batch; above, the total is read back."""
        if not self.gpu_layout:
            return
        dev, R = self.dev, self.n_records
        params = {"n": R, "width": float(self.plan.width), "scale": 0.75 / TOLERANCE, "max_pieces": MAX_PIECES}
        b = self._batch()
        b.clear(self.rec_count)
        if R:
            b.dispatch(dev.kernel("scene/flatten.wgsl", defines={"COUNT": True}), -(-R // 256), params=params,
                       recs=self.recs, info=self.rec_info, counts=self.rec_count, part_info=self.part_info)
        record_scan(b, self.rec_count, self.rec_off, "add", exclusive=True)
        b.copy(self.rec_off, 4 * R, self.seg_count, 0, 4)
        if R <= HOST_BOUND_RECORDS:
            total = piece_bound(self._small_records, self.plan.record_kinds)
        else:
            b.submit()  # what the host reads next
            total = _read_u32(dev, self.seg_count, 0)
        if 16 * total > dev.binding_limit:
            raise DeviceLimitError("scene", f"{total} line segments after flattening ({16 * total} bytes) exceed "
                                   f"the device's largest storage binding ({dev.binding_limit} bytes)")
        self.n_segs = total
        if self.segs is None or self.segs.size < 4 * max(total, 1):
            self.segs = GpuArray.empty((max(total, 1), 4), np.float32, dev)
            self.seg_part = GpuArray.empty(max(total, 1), np.uint32, dev)
        if total:
            b.dispatch(dev.kernel("scene/flatten.wgsl", defines={"COUNT": False}), -(-R // 256), params=params,
                       recs=self.recs, info=self.rec_info, offsets=self.rec_off, segs=self.segs,
                       seg_part=self.seg_part)
        self._end(b)
        if dev.info.get("adapter_type") == "CPU" and R:
            self._flush()
            counts = np.frombuffer(dev.read(self.rec_count.buffer, 0, 4 * R), np.uint32)
            _check_loop_cap(self.plan, dev, np.bincount(self.plan.record_part, weights=counts,
                                                        minlength=self.n_parts))

    def bboxes_stage(self) -> None:
        """Part boxes from the segments (atomics on ordered keys), element boxes as their union."""
        if not self.gpu_layout:
            return
        P, n = self.n_parts, self.n_elements
        b = self._batch()
        if P:
            b.dispatch(self._layout_kernel("PART_BBOX_INIT"), -(-P // 256), params=self._lparams(P), pbb=self.pbb)
        if self.n_segs:
            b.dispatch(self._layout_kernel("PART_BBOX"), -(-self.n_segs // 256), params=self._lparams(self.n_segs),
                       pbb=self.pbb, segs=self.segs, seg_part=self.seg_part, seg_count=self.seg_count)
        if n:
            b.dispatch(self._layout_kernel("ELEM_BBOX"), -(-n // 256), params=self._lparams(n), pbb=self.pbb,
                       elems=self.elem_head, part_info=self.part_info, bboxes=self.bboxes)
        self._end(b)

    def clip_stage(self) -> None:
        """Clip boxes through ``pywgpuprims.clip_bboxes``, on the GPU with no readback (the plan knows
        the clip depth)."""
        if not self.gpu_layout:
            return
        from ..stack import clip_bboxes  # noqa: PLC0415

        n = self.n_elements
        if not n:
            self.clipped = self.bboxes
            return
        self._flush()  # clip_bboxes submits its own work: ours before it goes first
        boxes = GpuArray(self.dev, self.bboxes.buffer, (n, 4), np.float32)
        vp = tuple(float(v) for v in self.plan.viewport)
        self.clipped = clip_bboxes(self.kinds_gpu, boxes, vp)

    def layout_stage(self) -> None:
        """Tile rectangles, cells and (element, tile row) pairs from the clip boxes; sized by host
        bounds (``LAYOUT_BOUND_BYTES``) or by the totals read back."""
        if not self.gpu_layout:
            return
        dev, P, n = self.dev, self.n_parts, self.n_elements
        b = self._batch()
        b.clear(self.rows)
        b.clear(self.part_rows)
        if n:
            b.dispatch(self._layout_kernel("ELEM_RECT"), -(-n // 256), params=self._lparams(n), clipped=self.clipped,
                       elems=self.elem_head, rects=self.rects, rows=self.rows, part_rows=self.part_rows,
                       part_band0=self.part_band0)
        record_scan(b, self.rows, self.pair_off, "add", exclusive=True)
        self._end(b)
        # A second scan in its own batch when timed: _device.Batch gives a timed batch of 3+ compute
        # passes timestamp writes without indices for the middle passes, which wgpu rejects.
        b = self._batch()
        record_scan(b, self.part_rows, self.part_cell, "add", exclusive=True)
        b.copy(self.pair_off, 4 * n, self.totals, 0, 4)  # both totals, for the GPU and for one readback
        b.copy(self.part_cell, 4 * P, self.totals, 4, 4)
        # An element has at most every tile row: when those bounds fit, they size the pairs and cells
        self.n_pairs, n_cells = n * self.plan.tiles_y, P * self.plan.tiles_y
        if 8 * (self.n_pairs + n_cells) > LAYOUT_BOUND_BYTES:
            b.submit()  # what the host reads next
            self.n_pairs, n_cells = (int(v) for v in np.frombuffer(dev.read(self.totals.buffer, 0, 8), np.uint32))
        if n_cells != self.n_cells or not hasattr(self, "counts"):
            self.n_cells = n_cells
            self._alloc_cells()
        if self.pairs is None or self.pairs.size < 2 * max(self.n_pairs, 1):
            self.pairs = GpuArray.empty(2 * max(self.n_pairs, 1), np.uint32, dev)
        if P:
            b.dispatch(self._layout_kernel("PARTS_OUT"), -(-P // 256), params=self._lparams(P),
                       part_cell=self.part_cell, part_rows=self.part_rows, part_band0=self.part_band0,
                       part_info=self.part_info, parts=self.parts)
        if n:
            b.dispatch(self._layout_kernel("PAIRS_OUT"), -(-n // 256), params=self._lparams(n), rects=self.rects,
                       pair_off=self.pair_off, pairs=self.pairs)
        self._end(b)

    # ---------------------------------------------------------------- stages
    def bin_segments(self) -> None:
        """Count segments per cell, scan, scatter into cells. A segment lands in at most every tile
        row: when that bound fits in ``BIN_BOUND_BYTES`` it sizes the cells' buffer and all is one
        batch; else the total is read back first."""
        dev = self.dev
        b = self._batch()
        b.clear(self.counts)
        groups = -(-self.n_segs // 256)
        if groups:
            k = dev.kernel("scene/band.wgsl", defines={"SCATTER": False})
            b.dispatch(k, groups, params={"n_segs": self.n_segs}, segs=self.segs, seg_part=self.seg_part,
                       seg_count=self.seg_count, parts=self.parts, counts=self.counts)
        record_scan(b, self.counts, self.cell_off, "add", exclusive=True)
        total = self.n_segs * self.plan.tiles_y
        if 16 * total > BIN_BOUND_BYTES:
            b.submit()  # what the host reads next
            total = _read_u32(dev, self.cell_off, self.n_cells) if self.n_cells else 0
        nbytes = 16 * max(total, 1)
        if nbytes > dev.max_binding:
            raise DeviceLimitError("scene", f"{total} binned segments exceed the device's largest storage binding")
        if self.binned is None or self.binned.size < 4 * max(total, 1):
            self.binned = GpuArray.empty((max(total, 1), 4), np.float32, dev)
        if groups:
            b.clear(self.counts)
            k = dev.kernel("scene/band.wgsl", defines={"SCATTER": True})
            b.dispatch(k, groups, params={"n_segs": self.n_segs}, segs=self.segs, seg_part=self.seg_part,
                       seg_count=self.seg_count, parts=self.parts, counts=self.counts, cell_off=self.cell_off,
                       binned=self.binned)
        self._end(b)

    def bin_tiles(self) -> None:
        """Set one bit per (tile, element) over each element's tile rectangle."""
        dev = self.dev
        b = self._batch()
        b.clear(self.masks)
        b.clear(self.summary)
        if self.n_pairs:
            k = dev.kernel("scene/tiles.wgsl")
            b.dispatch(k, -(-self.n_pairs // 256), params={"n_pairs": self.n_pairs, "n_words": self.n_words,
                                                           "tiles_x": self.plan.tiles_x, "n_sum": self.n_sum},
                       pairs=self.pairs, rects=self.rects, masks=self.masks, summary=self.summary,
                       totals=self.totals)
        self._end(b)

    def depth_bounds(self) -> None:
        """Clip depth bound per tile, scanned into the tiles' first stack levels; sizes the stack buffer."""
        dev = self.dev
        b = self._batch()
        b.clear(self.need)
        k = dev.kernel("scene/depth.wgsl")
        b.dispatch(k, self.n_tiles, params={"n_tiles": self.n_tiles, "n_words": self.n_words,
                                            "chunk": -(-self.n_words // 256)},
                   masks=self.masks, kind_bits=self.kind_bits, need=self.need)
        record_scan(b, self.need, self.spill_off, "add", exclusive=True)
        self._end(b)
        limit = min(dev.max_binding, dev.max_buffer, dev.hooks.scene_stack_bytes or 1 << 30)
        # A tile needs at most the scene's clip depth: when that bound fits, it sizes the stacks
        # with no readback (no clips: no levels at all); else the exact count is read back.
        levels = self.n_tiles * self.plan.max_depth
        if 4 * 256 * max(levels, 1) * self.stride > min(limit, STACK_BOUND_BYTES):
            self._flush()
            levels = _read_u32(dev, self.spill_off, self.n_tiles)
        nbytes = 4 * 256 * max(levels, 1) * self.stride
        self.no_stack = self.stack is False or (self.stack is None and nbytes > limit)
        if self.no_stack and self.plan.has_layers:
            raise DeviceLimitError("scene", f"the layer stacks need {nbytes} bytes, more than the device's largest "
                                   f"storage binding ({dev.max_binding}); layers cannot be drawn without them")
        if self.no_stack:
            levels = 0
        elif nbytes > limit:
            raise DeviceLimitError("scene", f"the clip stacks need {nbytes} bytes ({levels} tile levels of 256 "
                                   f"pixels), more than the device's largest storage binding ({dev.max_binding})")
        if self.spill is None or self.spill.size < 256 * max(levels, 1) * self.stride:
            self.spill = GpuArray.empty(256 * max(levels, 1) * self.stride, np.float32, dev)

    def fine(self, resolve: bool = False) -> int:
        """Fine rasterisation in rounds until every tile is done; returns the number of rounds.

        With ``resolve``, every round also resolves the image and the pixels come back with the
        progress word (one wait for a scene done in one round): :attr:`pixels` holds them."""
        dev = self.dev
        k = dev.kernel("scene/fine.wgsl", defines={"NO_STACK": self.no_stack,
                                                   "NO_STACK_BOOL": "true" if self.no_stack else "false",
                                                   "LAYERS": self.stride == 6})
        bg = self.plan.background
        rounds = 0
        src, dst = self.state
        self.pixels = None
        first, self._open = self._open, None  # the stages recorded before, submitted with the first round
        while True:
            b = first or dev.batch()
            first = None
            b.clear(dst, 8 * self.n_tiles, 16)
            b.dispatch(k, self.n_tiles, params={"tiles_x": self.plan.tiles_x, "n_tiles": self.n_tiles,
                                                "n_words": self.n_words, "n_sum": self.n_sum,
                                                "budget": self.budget,
                                                "first": int(rounds == 0), "bg_r": bg[0], "bg_g": bg[1],
                                                "bg_b": bg[2], "bg_a": bg[3]},
                       masks=self.masks, elems=self.elems, parts=self.parts, cell_off=self.cell_off,
                       binned=self.binned, spill_off=self.spill_off, spill=self.spill, pix=self.pix,
                       state_in=src, state_out=dst, summary=self.summary, paints=self.paints)
            if resolve:
                self._record_resolve(b)
                b.copy(dst, 8 * self.n_tiles, self.image, self.n_pixel_bytes, 4)
                rb = b.readback((self.image, 0, self.n_pixel_bytes + 4))
            else:
                rb = b.readback((dst, 8 * self.n_tiles, 4))
            b.submit()
            rounds += 1
            out = rb.numpy()
            unfinished = int(out[len(out) - 4:].view(np.uint32)[0])
            src, dst = dst, src
            if unfinished == 0:
                if resolve:
                    self.pixels = out[:self.n_pixel_bytes].reshape(self.plan.height, self.plan.width, 4)
                break
            if rounds > self.plan.n_elements + self.n_words + self.n_sum + 2:  # every round makes progress
                raise ShaderError("scene/fine.wgsl", f"no progress after {rounds} rounds")
        self.rounds = rounds
        return rounds

    def _record_resolve(self, b) -> None:
        p = self.plan
        b.dispatch(self.dev.kernel("scene/resolve.wgsl"), -(-p.width * p.height // 256),
                   params={"width": p.width, "height": p.height, "tiles_x": p.tiles_x}, pix=self.pix,
                   image=self.image)

    def resolve(self) -> None:
        b = self._batch()
        self._record_resolve(b)
        self._end(b)

    STAGES = ("flatten_stage", "bboxes_stage", "clip_stage", "layout_stage", "bin_segments", "bin_tiles",
              "depth_bounds", "fine", "resolve")

    def run(self, timings: dict | None = None) -> np.ndarray:
        """All stages. Untimed, they record into one open batch, submitted where the host must read;
        up to ``RESOLVE_EACH_ROUND_BYTES`` of pixels each fine round resolves too and the pixels come
        back with the progress word (one wait when one round is enough); a larger frame resolves and
        comes back in one submission after fine. Timed: each stage in its own batches, then the pixels."""
        self._open = self.dev.batch() if timings is None else None
        try:
            for name in self.STAGES:
                if name.endswith("_stage") and not self.gpu_layout:
                    continue
                if timings is None and name == "fine" and self.n_pixel_bytes <= RESOLVE_EACH_ROUND_BYTES:
                    self.fine(resolve=True)
                    return self.pixels
                if timings is None and name == "resolve":  # resolved and read back in one submission
                    b = self.dev.batch()
                    self._record_resolve(b)
                    rb = b.readback((self.image, 0, self.n_pixel_bytes))
                    b.submit()
                    out = np.empty((self.plan.height, self.plan.width, 4), np.uint8)
                    rb.into(out)
                    return out
                with _timed(self.dev, timings, f"gpu: {name}"):
                    getattr(self, name)()
            self._flush()
        finally:
            self._open = None
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


#: Segments one element may have on a CPU adapter: fine walks one element's segments of a tile row
#: without a stop inside it, and lavapipe cuts an invocation's loops past 65,535 trips silently.
CPU_MAX_SEGMENTS_PER_ELEMENT = 48_000


def _check_loop_cap(plan: ScenePlan, dev: Device, part_segments: np.ndarray) -> None:
    """Refuse, on a CPU adapter, an element with more segments than one loop may walk
    (``part_segments``: segments per part)."""
    if dev.info.get("adapter_type") != "CPU" or not plan.n_parts:
        return
    per_element = np.bincount(plan.elem_of_part, weights=part_segments, minlength=plan.n_elements)
    worst = int(per_element.argmax())
    if per_element[worst] > CPU_MAX_SEGMENTS_PER_ELEMENT:
        raise InputError("scene.render", f"element {worst} has {int(per_element[worst])} line segments after "
                         f"flattening; on a CPU adapter ({dev.adapter_summary}) one element may have at most "
                         f"{CPU_MAX_SEGMENTS_PER_ELEMENT}, or a shader loop could be cut short (a wrong picture). "
                         "Split the path into several fills, or render on a GPU")


def render_plan(plan: ScenePlan, dev: Device | None = None, timings: dict | None = None,
                budget: int = FINE_BUDGET, stack: bool | None = None, gpu_layout: bool | None = None) -> np.ndarray:
    """Render a :class:`ScenePlan` on the GPU: (height, width, 4) uint8, straight alpha.

    ``stack``: keep clip levels in a storage buffer (True), recompute clips instead (False), or
    choose by memory (None).
    """
    t0 = time.perf_counter()
    g = GpuScene(plan, dev, budget, stack, gpu_layout)
    if not g.gpu_layout:  # else the flatten stage checks
        _check_loop_cap(plan, g.dev, np.bincount(plan.seg_part, minlength=plan.n_parts))
    if timings is not None:
        timings["host: upload"] = time.perf_counter() - t0
    return g.run(timings)
