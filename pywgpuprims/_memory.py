"""The caching allocator: every device buffer pywgpuprims uses comes from one pool per device.

Creating a wgpu buffer costs milliseconds at hundreds of MiB (14-19 ms for 400 MiB on an H200), so
buffers are kept and handed out again by size class, as CuPy's memory pool and torch's caching
allocator do. A :class:`Block` is what a caller holds: a wgpu buffer and the size asked for. When
the last reference to a block goes (a GpuArray deleted or collected, a batch submitted), its buffer
returns to the pool.

Reuse is safe under the queue's order: a block is referenced by every batch that records it until
that batch is submitted, and whatever the next owner does with the buffer (a queue write, a copy, a
dispatch) is queued after the work that used it before.
"""

from __future__ import annotations

import collections
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

import wgpu

from ._errors import DeviceLimitError, ShaderError

STORAGE_USAGE = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
                 | wgpu.BufferUsage.INDIRECT)
LIMIT_ENV = "PYWGPUPRIMS_MEMORY_LIMIT"


def size_class(nbytes: int) -> int:
    """The buffer size that serves a request of ``nbytes``: multiples of 256 bytes up to 4 KiB, then
    eight classes per power of two (at most 12.5% unused)."""
    n = max(256, int(nbytes))
    if n <= 4096:
        return -(-n // 256) * 256
    step = 1 << (n.bit_length() - 4)
    return -(-n // step) * step


_CLASSES: dict[int, tuple[int, int]] = {}  # bytes asked -> (size rounded to 16, size_class), for the sizes seen
#: scratch blocks the pool keeps for :meth:`MemoryPool.take_scratch` (per-call scratch of the primitives:
#: tile states, indirect arguments, partials): at most this many bytes in all, blocks up to SCRATCH_BLOCK
SCRATCH_KEPT = 16 << 20
SCRATCH_BLOCK = 1 << 20


def parse_bytes(text: str | int | None) -> int | None:
    """``"2GiB"``, ``"512M"``, ``"1e9"`` or an int as bytes; None or 0 means no limit."""
    if text is None:
        return None
    if isinstance(text, int):
        return text or None
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise ValueError(f"{LIMIT_ENV}: cannot read {text!r} as a byte count (e.g. 2GiB, 512M, 1e9)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale) or None


class _Slot:
    """One wgpu buffer owned by the pool; ``serial`` names it in the bind-group cache."""

    __slots__ = ("raw", "size", "usage", "serial")

    def __init__(self, raw, size: int, usage: int, serial: int):
        self.raw, self.size, self.usage, self.serial = raw, size, usage, serial


class Block:
    """A device buffer on loan from the pool: ``raw`` is the wgpu buffer (at least ``size`` bytes).

    ``size`` is the size asked for, rounded up to 16 bytes; bindings and clears that give no size
    cover exactly that much, whatever the pooled buffer's real size.
    """

    __slots__ = ("raw", "size", "serial", "_slot", "_returned", "__weakref__")
    #: where this block starts in ``raw`` (a :class:`BlockView` starts further in)
    base = 0

    def __init__(self, slot: _Slot, size: int, returned: collections.deque):
        self.raw = slot.raw
        self.size = size
        self.serial = slot.serial
        self._slot = slot
        self._returned = returned

    def __del__(self) -> None:
        # deque.append is atomic: safe from any thread and from the garbage collector
        self._returned.append(self._slot)

    def __repr__(self) -> str:
        return f"<Block {self.size} bytes of buffer #{self.serial}>"


class BlockView:
    """A byte range of a block: what a GpuArray view that starts inside another array's buffer
    holds as its ``buffer``.

    It stands wherever a Block does: offsets given with it count from its start (``base`` bytes
    into ``raw``), ``size`` is its own length, and the device adds ``base`` when it binds, clears,
    copies or transfers (``_device._span``), so a primitive that binds ``g.buffer`` from offset 0
    reads and writes the view, not the start of the block. ``base`` must be a multiple of the
    device's storage-buffer offset alignment (so that the range can be bound); it keeps its block
    alive, so the buffer goes back to the pool only when the block and every view of it have gone.
    """

    __slots__ = ("block", "raw", "size", "serial", "base", "nbytes", "writable_end")

    def __init__(self, block: Block | BlockView, offset: int, nbytes: int, size: int, data_end: int):
        root = block.block if isinstance(block, BlockView) else block
        self.block = root
        self.raw = root.raw
        self.serial = root.serial
        self.base = block.base + int(offset)
        #: the view's own bytes; ``size`` (what a binding without a size covers) may be up to 15 more,
        #: so that kernels reading whole 16-byte words see the last of them
        self.nbytes = int(nbytes)
        self.size = int(size)
        # Where writing must stop, in bytes of ``raw``: the view's end where the array it was taken
        # from (whose data ends at ``data_end``, in bytes of ``block``) goes on after it; else what
        # that array could write (its block's end: padding nobody reads).
        end = self.base + self.nbytes
        self.writable_end = end if end < block.base + data_end else getattr(block, "writable_end", root.size)

    def __repr__(self) -> str:
        return f"<BlockView {self.size} bytes at {self.base} of buffer #{self.serial}>"


@dataclass(frozen=True)
class MemoryStats:
    """Bytes held by the pool: ``in_use`` by live blocks, ``cached`` kept for reuse; ``limit`` (None:
    no limit); ``buffers_created`` counts wgpu buffers made since the device was."""

    in_use: int
    cached: int
    limit: int | None
    buffers_created: int


class MemoryPool:
    """The per-device pool (``device().memory``).

    Parameters
    ----------
    limit : int or str, optional
        Bytes the pool may hold, in use and cached together (``"2GiB"`` and the like are read too).
        Defaults to the ``PYWGPUPRIMS_MEMORY_LIMIT`` environment variable, else no limit beyond the
        device's own.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> mem = pp.device().memory
    >>> g = pp.asarray(np.zeros(1000, np.float32))
    >>> mem.stats().in_use >= 4000
    True
    >>> del g
    >>> mem.free_cache()  # give every cached buffer back to the driver
    """

    def __init__(self, raw_device, on_destroy=None, limit: int | str | None = None):
        self._raw = raw_device
        self._on_destroy = on_destroy  # called with a slot's serial before its buffer is destroyed
        self._lock = threading.Lock()
        self._free: dict[tuple[int, int], list[_Slot]] = {}
        # every buffer the pool owns, in use or cached: so that a buffer is never garbage itself,
        # even when a Block holding it is (a reference cycle's finalizers would release it first)
        self._slots: dict[int, _Slot] = {}
        self._returned: collections.deque = collections.deque()
        self._in_use = 0
        self._cached = 0
        self._serial = 0
        self.buffers_created = 0
        # scratch blocks between the batches that use them (take_scratch / keep_scratch): size -> blocks
        self._kept: dict[int, list[Block]] = {}
        self._kept_bytes = 0  # their buffers' bytes (size classes)
        self.limit = parse_bytes(limit if limit is not None else os.environ.get(LIMIT_ENV))

    # ------------------------------------------------------------------ public
    def stats(self) -> MemoryStats:
        """Bytes in use and cached (scratch kept between calls counts as cached)."""
        with self._lock:
            self._drain()
            kept = self._kept_bytes
            return MemoryStats(self._in_use - kept, self._cached + kept, self.limit, self.buffers_created)

    def set_limit(self, limit: int | str | None) -> None:
        """Set the byte limit (None or 0: none); cached buffers over it are freed at once."""
        with self._lock:
            self.limit = parse_bytes(limit)
            if self.limit is not None:
                self._release_kept()
            self._drain()
            if self.limit is not None:
                self._evict(self._in_use + self._cached - self.limit)

    def free_cache(self) -> None:
        """Destroy every cached (unused) buffer."""
        with self._lock:
            self._release_kept()
            self._drain()
            self._evict(self._cached)

    # ------------------------------------------------------------------ per-call scratch
    def take_scratch(self, nbytes: int, label: str = "scratch") -> Block:
        """A storage block of ``nbytes`` for one batch's scratch, from the blocks earlier batches gave
        back through :meth:`keep_scratch` (else a new one from the pool); contents unspecified.

        Safe under the queue's order as any pooled block is: a block is kept only once the batch
        that used it is submitted, so work recorded with it now runs after that batch's.
        """
        size = max(16, -(-int(nbytes) // 16) * 16)
        blocks = self._kept.get(size)
        if blocks:
            with self._lock:
                if blocks:
                    blk = blocks.pop()
                    self._kept_bytes -= blk._slot.size
                    return blk
        return self.alloc(size, STORAGE_USAGE, label)

    def keep_scratch(self, blocks: list[Block]) -> None:
        """Keep the scratch ``blocks`` of a submitted batch for later batches (:meth:`take_scratch`),
        up to :data:`SCRATCH_KEPT` bytes; the others go back to the pool as usual."""
        with self._lock:
            for blk in blocks:
                cls = blk._slot.size
                if cls <= SCRATCH_BLOCK and self._kept_bytes + cls <= SCRATCH_KEPT:
                    self._kept.setdefault(blk.size, []).append(blk)
                    self._kept_bytes += cls

    def _release_kept(self) -> None:
        """Give the kept scratch blocks back to the free lists (lock held)."""
        if self._kept:
            kept, self._kept = self._kept, {}
            self._kept_bytes = 0
            for blocks in kept.values():  # emptied, not just dropped: a take_scratch may hold a list
                blocks.clear()  # their Blocks go: the slots return through _returned
            self._drain()

    # ------------------------------------------------------------------ allocation
    def alloc(self, nbytes: int, usage: int = STORAGE_USAGE, label: str = "") -> Block:
        sc = _CLASSES.get(nbytes)
        if sc is None:
            size = max(16, -(-int(nbytes) // 16) * 16)
            sc = (size, size_class(size))
            if len(_CLASSES) < 65536:
                _CLASSES[nbytes] = sc
        size, cls = sc
        with self._lock:
            if self._returned:
                self._drain()
            free = self._free.get((usage, cls))
            if free:
                slot = free.pop()
                self._cached -= cls
                self._in_use += cls
                return Block(slot, size, self._returned)
            if self.limit is not None and self._in_use + cls > self.limit and self._kept:
                self._release_kept()  # kept scratch first
            if self.limit is not None and self._in_use + cls > self.limit:
                cls = size  # no rounding up when memory is tight
                if self._in_use + cls > self.limit:
                    raise DeviceLimitError(label or "alloc", f"{nbytes} bytes asked with {self._in_use} in use "
                                           f"exceed the memory limit of {self.limit} bytes ({LIMIT_ENV})")
            if self.limit is not None:
                self._evict(self._in_use + self._cached + cls - self.limit)
            raw = self._create(cls, usage, label)
            if raw is None:  # the driver refused: free the cache and try once more
                self._release_kept()
                self._evict(self._cached)
                raw = self._create(cls, usage, label)
                if raw is None and cls != size:
                    cls = size
                    raw = self._create(cls, usage, label)
                if raw is None:
                    raise DeviceLimitError(label or "alloc", f"the GPU could not allocate {nbytes} bytes with "
                                           f"{self._in_use} in use by pywgpuprims")
            self._serial += 1
            self.buffers_created += 1
            self._in_use += cls
            slot = self._slots[self._serial] = _Slot(raw, cls, usage, self._serial)
            return Block(slot, size, self._returned)

    def _create(self, size: int, usage: int, label: str) -> Any:
        try:
            return self._raw.create_buffer(size=size, usage=usage, label=label)
        except (wgpu.GPUError, MemoryError) as exc:
            if "lost" in str(exc).lower():
                raise ShaderError(label or "alloc", f"the GPU device was lost: {exc}") from exc
            return None

    def _drain(self) -> None:
        """Move the slots of collected blocks to the free lists (lock held)."""
        returned, free = self._returned, self._free
        moved = 0
        while returned:
            slot = returned.popleft()
            moved += slot.size
            lst = free.get((slot.usage, slot.size))
            if lst is None:
                free[(slot.usage, slot.size)] = [slot]
            else:
                lst.append(slot)
        self._in_use -= moved
        self._cached += moved

    def _evict(self, nbytes: int) -> None:
        """Destroy cached buffers, largest first, until ``nbytes`` are freed (lock held)."""
        if nbytes <= 0 or not self._cached:
            return
        for key in sorted(self._free, key=lambda k: -k[1]):
            slots = self._free[key]
            while slots and nbytes > 0:
                slot = slots.pop(0)  # oldest first
                self._cached -= slot.size
                nbytes -= slot.size
                if self._on_destroy is not None:
                    self._on_destroy(slot.serial)
                del self._slots[slot.serial]
                slot.raw.destroy()
            if not slots:
                del self._free[key]
            if nbytes <= 0:
                return
