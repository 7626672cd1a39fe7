"""GPU FSE compression and decompression: the container, chunking and kernel orchestration."""

from __future__ import annotations

import ctypes
import math
import struct
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._array import GpuArray, as_input
from .._device import Binding, Device, Readback, _parallel_copy, device, takes_device
from .._errors import CorruptDataError, InputError, ShaderError
from . import _tables as T

MAGIC = b"FSEP"
VERSION = 2  # 2: each block's stored checksum is tied to its index (version 1 still reads)
READ_VERSIONS = (1, 2)
#: decompress's default ``max_output_size``: larger outputs must be asked for explicitly
DEFAULT_MAX_OUTPUT = 1 << 32
MODES = {"reference": 0, "interleaved": 1}
RAW, RLE, FSE_REF, FSE_IL = 0, 1, 2, 3
HEADER = struct.Struct("<4sBBBBHHIQII")      # 32 bytes
ENTRY = np.dtype([("offset", "<u8"), ("csize", "<u4"), ("kind", "<u4"), ("check", "<u4")])
HDR_WORDS = 128
PLAN_WORDS = 129
LANES_ALLOWED = (32, 64, 128, 256)
DEFAULT_BLOCK = {"reference": 32 << 10, "interleaved": 1 << 20}
MAX_REF_BLOCK = 128 << 10


@dataclass(frozen=True)
class FseTuning:
    """The codec's tuning (H100 80GB HBM3, Vulkan, driver 580, 1 GiB of skewed bytes;
    ``python -m pywgpuprims.bench fse``)."""

    table_wg: int = 64    # invocations building one reference-mode block table: 32 -> 8.6 ms, 64 -> 4.8 ms, 2026-11-21
    ref_coders: int = 32  # reference-mode blocks per coding workgroup (one per invocation), 2026-11-21


TUNING = FseTuning()
TABLE_WG = TUNING.table_wg
REF_CODERS = TUNING.ref_coders
MAX_IL_BLOCK = 4 << 20
MAX_HIST_BLOCK = 1 << 30  # histogram: block offsets stay within u32


def _fmix(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x85EBCA6B)
    x ^= x >> np.uint32(13)
    x *= np.uint32(0xC2B2AE35)
    x ^= x >> np.uint32(16)
    return x


def block_checksum(block: bytes, index: int | None = None) -> int:
    """The per-block checksum (what the GPU computes): with ``w_i`` the little-endian u32 words
    of the block (zero-padded), ``fmix32((sum_i fmix32(w_i ^ (i * 0x9E3779B9))) + len)`` mod
    2**32, fmix32 being MurmurHash3's finaliser. With ``index`` (the block's place in the
    container), the value a version-2 container stores: ``fmix32(c ^ fmix32(index * 0x9E3779B9 +
    0x7F4A7C15))`` (so reordered blocks fail their checks)."""
    b = bytes(block)
    w = np.frombuffer(b + b"\0" * (-len(b) % 4), np.uint32)
    i = np.arange(len(w), dtype=np.uint32)
    with np.errstate(over="ignore"):
        s = int(_fmix(w ^ (i * np.uint32(0x9E3779B9))).sum(dtype=np.uint64)) & 0xFFFFFFFF
        c = _fmix(np.array([(s + len(b)) & 0xFFFFFFFF], np.uint32))
    if index is not None:
        c = _tie(c, np.array([index], np.int64))
    return int(c[0])


def _index_key(index: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        k = (index.astype(np.uint64) * np.uint64(0x9E3779B9) + np.uint64(0x7F4A7C15)) & np.uint64(0xFFFFFFFF)
        return _fmix(k.astype(np.uint32))


def _tie(checks: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Block checksums tied to the blocks' indices (version 2 containers)."""
    with np.errstate(over="ignore"):
        return _fmix(checks.astype(np.uint32) ^ _index_key(index))


_INV_C1 = pow(0x85EBCA6B, -1, 1 << 32)
_INV_C2 = pow(0xC2B2AE35, -1, 1 << 32)


def _unfmix(x: np.ndarray) -> np.ndarray:
    """The inverse of fmix32 (a bijection)."""
    x = x.astype(np.uint32)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint32(16)
        x *= np.uint32(_INV_C2)
        x ^= (x >> np.uint32(13)) ^ (x >> np.uint32(26))
        x *= np.uint32(_INV_C1)
        x ^= x >> np.uint32(16)
    return x


def retie(checks: np.ndarray, old_index: np.ndarray, new_index: np.ndarray) -> np.ndarray:
    """Stored (tied) checksums of blocks moved from ``old_index`` to ``new_index``: for tools that
    split or join containers (``pywgpuprims.stream``)."""
    with np.errstate(over="ignore"):
        return _tie(_unfmix(checks) ^ _index_key(old_index), new_index)


# ----------------------------------------------------------------------------- helpers
def _lane_cap(block_size: int, lanes: int, table_log: int) -> int:
    table_log = _max_block_log(table_log)
    words_per_lane = -(-(block_size // 4) // lanes)
    return -(-(4 * words_per_lane * table_log + table_log + 1) // 32) + 1


def _stage_words(mode: str, block_size: int, lanes: int, table_log: int) -> int:
    if mode == "reference":
        return (block_size + T.NCOUNT_BOUND) // 4 + 4
    return HDR_WORDS + lanes + lanes * _lane_cap(block_size, lanes, table_log)


def _max_block_log(table_log: int) -> int:
    """Largest table log a block may use: the reference raises small requests to what the
    alphabet needs (up to highbit(255) + 2 = 9)."""
    return min(T.MAX_TABLELOG, max(table_log, 9))


def _chunk_blocks(dev: Device, block_size: int, per_block_bytes: int, n_blocks: int) -> int:
    """Blocks per chunk: as many as keep every per-chunk binding (``per_block_bytes`` a block, at
    least the block itself) within ``dev.binding_limit``, a multiple of the count that keeps the
    chunk's byte offset in its input aligned for binding; at least that count."""
    # chunks of up to 2 GiB: the reference-mode coders are latency-bound, and every block of a chunk
    # is a coder in flight
    limit = min(dev.binding_limit, dev.max_buffer, 2 << 30)
    step = dev.storage_align // math.gcd(block_size, dev.storage_align)
    cb = max(step, (limit // max(per_block_bytes, block_size)) // step * step)
    return min(cb, max(step, -(-n_blocks // step) * step))


def _byte_view(data) -> bytes | memoryview:
    """Bytes-like ``data`` as bytes or a flat byte memoryview (no copy unless it is not contiguous)."""
    if isinstance(data, bytes):
        return data
    m = memoryview(data)
    return m.cast("B") if m.c_contiguous else bytes(m)


def _buffer(dev: Device, nbytes: int):
    return dev.alloc(max(16, nbytes), label="fse")


def _upload(dev: Device, data) -> Any:
    """A buffer holding ``data`` (bytes or an array), its last partial word zero-padded."""
    arr = data if isinstance(data, np.ndarray) else np.frombuffer(memoryview(data).cast("B"), np.uint8)
    buf = _buffer(dev, -(-arr.nbytes // 4) * 4)
    dev.upload(buf, arr)  # straight from the caller's memory
    return buf


def _slices(nbytes: int, block_size: int, n_blocks: int) -> dict:
    """hist.wgsl's and gather.wgsl's split of each block over workgroups: about 512 workgroups in
    all when blocks are few (one 1 MiB block is not one workgroup's latency), a slice at least 32
    KiB, one workgroup a block when there are many blocks."""
    words = -(-min(block_size, nbytes) // 4)
    slices = max(1, min(-(-words // 8192), 512 // n_blocks))
    return {"slices": slices, "slice_words": -(-words // slices)}


def _finish_checks(sums: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Block checksums from hist.wgsl's sums: fmix32(sum + block bytes)."""
    with np.errstate(over="ignore"):
        return _fmix((sums.astype(np.uint64) + lens.astype(np.uint64)) & np.uint64(0xFFFFFFFF))


def block_histograms(dev: Device, src: Binding, n_bytes: int, block_size: int, n_blocks: int) -> np.ndarray:
    """(n_blocks, 257) uint32: byte counts per block and the block checksum in column 256."""
    out = _buffer(dev, 4 * 257 * n_blocks)
    sl = _slices(n_bytes, block_size, n_blocks)
    b = dev.batch()
    b.clear(out, 0, 4 * 257 * n_blocks)
    b.dispatch(dev.kernel("fse/hist.wgsl", defines={"HIST": True}), n_blocks * sl["slices"],
               params={"n_bytes": n_bytes, "block_size": block_size, "n_blocks": n_blocks, **sl}, src=src, hist=out)
    rb = b.readback((out, 0, 4 * 257 * n_blocks))
    b.submit()
    h = rb.numpy(np.uint32).reshape(n_blocks, 257).copy()
    lens = np.minimum(block_size, n_bytes - np.arange(n_blocks, dtype=np.int64) * block_size)
    h[:, 256] = _finish_checks(h[:, 256], lens)
    return h


def histogram(x, block_size: int = 1 << 16) -> np.ndarray:
    """Byte histogram of a uint8 array on the GPU (per-block workgroup-memory atomics, summed).

    Parameters
    ----------
    x : bytes, numpy uint8 array or GpuArray of uint8
    block_size : int
        Bytes per workgroup (a multiple of 64).

    Returns
    -------
    numpy.ndarray of uint64, shape (256,)

    Examples
    --------
    >>> import numpy as np
    >>> from pywgpuprims.fse import histogram
    >>> histogram(np.array([1, 1, 7], np.uint8))[[1, 7]].tolist()
    [2, 1]
    """
    if isinstance(x, (bytes, bytearray, memoryview)):
        x = np.frombuffer(bytes(x), np.uint8)
    g, _ = as_input(x, "fse.histogram", dtypes=(np.uint8,))
    block_size = _int_arg(block_size, "block_size", "fse.histogram")
    if block_size <= 0 or block_size % 64 or block_size > MAX_HIST_BLOCK:
        raise InputError("fse.histogram", f"block_size must be a positive multiple of 64 up to {MAX_HIST_BLOCK}, "
                         f"got {block_size}")
    n = g.nbytes
    total = np.zeros(256, np.uint64)
    if n == 0:
        return total
    dev = g.device
    nb = -(-n // block_size)
    cb = _chunk_blocks(dev, block_size, block_size, nb)
    for c0 in range(0, nb, cb):
        c1 = min(nb, c0 + cb)
        start = c0 * block_size
        nbytes = min(n, c1 * block_size) - start
        src = Binding(g.buffer, g.byte_offset + start, (nbytes + 3) // 4 * 4)
        h = block_histograms(dev, src, nbytes, block_size, c1 - c0)
        total += h[:, :256].sum(axis=0, dtype=np.uint64)
    return total


def _int_arg(value, name: str, primitive: str = "fse.compress") -> int:
    """An integer argument (Python or numpy integer; not bool, not float)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(primitive, f"{name} must be an integer, got {value!r}")
    return int(value)


def _check_block_size(mode: str, block_size: int, lanes: int, primitive: str = "fse.compress") -> None:
    if block_size <= 0 or block_size % 64:
        raise InputError(primitive, f"block_size must be a positive multiple of 64, got {block_size}")
    if mode == "reference" and block_size > MAX_REF_BLOCK:
        raise InputError(primitive, f"reference-mode blocks are at most {MAX_REF_BLOCK} bytes")
    if mode == "interleaved":
        if block_size > MAX_IL_BLOCK:
            raise InputError(primitive, f"interleaved blocks are at most {MAX_IL_BLOCK} bytes")
        if block_size // 4 > 8192 * lanes:
            raise InputError(primitive, f"block_size too large for {lanes} lanes (at most 8192 words a lane, "
                             "to keep each invocation's loop trips well under lavapipe's 65,535 cap)")


# ----------------------------------------------------------------------------- compress
@takes_device(name="fse.compress")
def compress(data, table_log: int = T.DEFAULT_TABLELOG, block_size: int | None = None,
             mode: str = "reference", lanes: int = 256, progress=None) -> bytes:
    """Compress bytes with FSE (tANS) on the GPU into the container of ``docs/fse-format.md``.

    Parameters
    ----------
    data : bytes, numpy uint8 array or GpuArray of uint8
    table_log : int
        Largest table log (5..12); each block uses the reference's optimal log up to this.
    block_size : int, optional
        Bytes per block (multiple of 64). Defaults: 32 KiB (reference), 1 MiB (interleaved).
        Reference blocks are at most 128 KiB (one invocation codes one block, so its loop trip
        count stays under lavapipe's 65,535 cap); interleaved blocks at most 4 MiB.
    mode : {"reference", "interleaved"}
        "reference": every FSE block is byte-identical to the reference FSE block compressor's
        output. "interleaved": ``lanes`` states per block coded in lockstep (faster; this library's
        format).
    lanes : int
        States per interleaved block: 32, 64, 128 or 256.
    progress : callable, optional
        Called as ``progress(bytes_done, bytes_total)`` after each chunk.

    Returns
    -------
    bytes

    Examples
    --------
    >>> import numpy as np
    >>> from pywgpuprims import fse
    >>> x = np.random.default_rng(0).geometric(0.3, 100_000).astype(np.uint8)
    >>> blob = fse.compress(x)
    >>> len(blob) < len(x) // 2, fse.decompress(blob) == x.tobytes()
    (True, True)
    """
    mode, table_log, block_size, lanes = check_args(mode, table_log, block_size, lanes, "fse.compress")
    _check_progress(progress, "fse.compress")
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = np.frombuffer(_byte_view(data), np.uint8)
    if isinstance(data, GpuArray):
        if data.dtype != np.uint8:
            raise InputError("fse.compress", f"expected uint8 data, got {data.dtype}")
        g, host = data, None
    else:
        host = np.ascontiguousarray(np.asarray(data))
        if host.dtype != np.uint8:
            raise InputError("fse.compress", f"expected uint8 data, got {host.dtype}")
        host = host.reshape(-1)
        g = None
    dev = g.device if g is not None else device()
    return run_steps(compress_steps(dev, g, host, table_log, block_size, mode, lanes, progress))


class _Wait:
    """What a step generator yields right before it waits for the GPU (see :func:`run_steps`)."""

    def __repr__(self) -> str:
        return "WAIT"


#: yielded by step generators (``compress_steps``, ``decompress_steps``) before each wait for the GPU
WAIT = _Wait()


def run_steps(steps):
    """Run a step generator to its end and return its value (its waits in turn, nothing between)."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def compress_steps(dev: Device, g: GpuArray | None, host: np.ndarray | None, table_log: int, block_size: int,
                   mode: str, lanes: int, progress=None):
    """:func:`compress` of checked arguments (the GpuArray ``g`` or the flat uint8 array ``host``) as
    a generator that yields :data:`WAIT` right before each wait for the GPU and returns the
    container. Between its steps the caller may record and submit other work on ``dev`` (another
    call's steps: several chunks in flight, one's waits covered by the others' GPU work)."""
    n = g.nbytes if g is not None else host.nbytes
    nb = -(-n // block_size)
    entries = np.zeros(nb, ENTRY)

    def source(start: int, nbytes: int) -> Binding:
        if g is not None:
            return Binding(g.buffer, g.byte_offset + start, (nbytes + 3) // 4 * 4)
        return Binding(_upload(dev, host[start:start + nbytes]))

    steps = encode_steps(dev, source, n, mode, table_log, block_size, lanes)
    done: list[EncodedGroup] = []  # groups read, their payloads copied out (or left on the GPU)
    last = None  # the group submitted last, not read yet
    offset = HEADER.size + ENTRY.itemsize * nb

    def place(grp: EncodedGroup) -> None:
        nonlocal offset
        e = entries[grp.first:grp.first + len(grp.csize)]
        e["offset"] = offset + grp.rel
        e["csize"], e["kind"], e["check"] = grp.csize, grp.kind, grp.check
        offset += grp.size
        if progress is not None:
            progress(grp.end, n)

    try:
        for item in steps:
            last = item
            yield WAIT
            if not item.last:  # several groups: this one read while the next one runs
                last = None
                done.append(item.resolve())
                place(done[-1])
        head_end = offset
        if last is None:
            blob, view = _new_bytes(head_end)
        else:  # the last (often the only) group: record and payloads read in one mapping
            p, last = last, None
            with _mapped(p.rb) as mapped:
                grp = p.read(mapped)
                at = offset
                place(grp)
                blob, view = _new_bytes(offset)
                if p.out_buf is None:
                    _parallel_copy(view[at:offset], mapped[p.at:p.at + grp.size], dev.transfer)
            if p.out_buf is not None:
                dev.download(p.out_buf, view[at:offset], p.at)
        head = header(MODES[mode], table_log, lanes if mode == "interleaved" else 0, block_size, n, entries)
        view[:len(head)] = np.frombuffer(head, np.uint8)
        at = len(head)
        for grp in done:
            copy_payload(dev, grp.payload, view[at:at + grp.size])
            at += grp.size
        del view
    finally:  # stopped early: no mapping left pending (read ones hold none)
        steps.close()
        if last is not None:
            last.rb.discard()
    return blob if isinstance(blob, bytes) else bytes(blob)


def check_args(mode, table_log, block_size, lanes, primitive: str) -> tuple[str, int, int, int]:
    """compress's arguments checked; ``block_size`` None becomes the mode's default."""
    if not isinstance(mode, str) or mode not in MODES:
        raise InputError(primitive, f"mode must be 'reference' or 'interleaved', got {mode!r}")
    table_log = _int_arg(table_log, "table_log", primitive)
    lanes = _int_arg(lanes, "lanes", primitive)
    if block_size is not None:
        block_size = _int_arg(block_size, "block_size", primitive)
    if not T.MIN_TABLELOG <= table_log <= T.MAX_TABLELOG:
        raise InputError(primitive, f"table_log must be in {T.MIN_TABLELOG}..{T.MAX_TABLELOG}")
    if lanes not in LANES_ALLOWED:
        raise InputError(primitive, f"lanes must be one of {LANES_ALLOWED}")
    block_size = DEFAULT_BLOCK[mode] if block_size is None else block_size
    _check_block_size(mode, block_size, lanes, primitive)
    return mode, table_log, block_size, lanes


def header(mode: int, table_log: int, lanes: int, block_size: int, n: int, entries: np.ndarray) -> bytes:
    """The container's header and block table (its checksum filled in)."""
    head = HEADER.pack(MAGIC, VERSION, mode, table_log, 0, lanes, 0, block_size, n, len(entries), 0)
    table = entries.tobytes()
    return head[:-4] + struct.pack("<I", zlib.crc32(table, zlib.crc32(head[:-4]))) + table


def copy_payload(dev: Device, src, dst: np.ndarray) -> None:
    """A group's payload (``EncodedGroup.payload``) into the uint8 array ``dst`` (its size)."""
    if isinstance(src, np.ndarray):
        dst[...] = src
    elif dst.size:
        dev.download(src[0], dst, src[1])


@dataclass
class EncodedGroup:
    """What :func:`encode_groups` yields for a group of blocks: their table fields (``rel``: payload
    offsets from the group's first, padded to 4 bytes; ``check``: tied to the global indices), the
    payload's size (no padding after the input's last block) and where it is: a uint8 array (read
    with the record) or ``(Block, byte offset)`` (downloaded by :func:`copy_payload`)."""

    first: int
    end: int  # input bytes done
    rel: np.ndarray
    csize: np.ndarray
    kind: np.ndarray
    check: np.ndarray
    size: int
    payload: Any


@contextmanager
def _mapped(rb: Readback):
    """The bytes of a one-part readback, mapped for the block (one map round trip): the record
    and payloads are read in place, straight into the container."""
    with rb._mapped() as view:
        yield view


@dataclass
class PlacedGroup:
    """What :func:`encode_steps` yields for a group of blocks, submitted: ``rb`` (prefetched) holds
    the record written by ``place.wgsl`` (kind, payload bytes and checksum per block) and, unless
    they stay in ``out_buf`` (their worst case over ``one_shot_counted`` bytes), the payloads, from
    byte ``at`` (of the readback and of ``out_buf``)."""

    first: int
    end: int  # input bytes done
    lens: np.ndarray
    last: bool  # the input's last group: no padding after its last block
    at: int
    rb: Readback
    out_buf: Any

    def read(self, view: np.ndarray) -> EncodedGroup:
        """The group's table fields from the mapped readback ``view`` (payload: None)."""
        ncb = len(self.lens)
        rec = view[:12 * ncb].view(np.uint32).reshape(ncb, 3)
        kind, csize = rec[:, 0].copy(), rec[:, 1].astype(np.int64)
        if (kind > FSE_IL).any() or (csize > self.lens).any() or (csize < 1).any():
            raise ShaderError("fse.compress", "the placement record is inconsistent")
        rel = np.zeros(ncb + 1, np.int64)
        np.cumsum((csize + 3) // 4 * 4, out=rel[1:])
        size = int(rel[-2] + csize[-1]) if self.last else int(rel[-1])
        check = _tie(rec[:, 2], np.arange(self.first, self.first + ncb))
        return EncodedGroup(self.first, self.end, rel[:-1], csize, kind, check, size, None)

    def resolve(self) -> EncodedGroup:
        """Wait for the group and read it (the payload copied out, or left on the GPU when large)."""
        with _mapped(self.rb) as view:
            grp = self.read(view)
            grp.payload = ((self.out_buf, self.at) if self.out_buf is not None
                           else view[self.at:self.at + grp.size].copy())
        return grp


def encode_groups(dev: Device, source, n: int, mode: str, table_log: int, block_size: int, lanes: int,
                  max_blocks: int | None = None):
    """Code ``n`` input bytes group by group of blocks (as many as the bindings allow, at most
    ``max_blocks``), yielding an :class:`EncodedGroup` for each, in order.

    ``source(start, nbytes)`` gives the Binding of input bytes ``[start, start + nbytes)`` (start
    aligned for binding). Group k+1 is uploaded and submitted before group k is read, so its upload
    and GPU work overlap the caller's copy of group k's payload.
    """
    steps = encode_steps(dev, source, n, mode, table_log, block_size, lanes, max_blocks)
    try:
        for item in steps:
            yield item.resolve()
    finally:
        steps.close()


def encode_steps(dev: Device, source, n: int, mode: str, table_log: int, block_size: int, lanes: int,
                 max_blocks: int | None = None):
    """Code ``n`` input bytes group by group of blocks (see :func:`encode_groups`), each group in
    one submission (histograms, kinds and tables, coding, placement, compaction) and one readback
    (:class:`PlacedGroup`), yielding each group submitted once the next one is."""
    nb = -(-n // block_size)
    tsize = 1 << _max_block_log(table_log)
    tw = 256 + tsize // 2
    per_block = max(4 * _stage_words(mode, block_size, lanes, table_log), 4 * tw if mode == "reference" else 0,
                    4 * max(257, PLAN_WORDS), block_size + 8)
    cb = _chunk_blocks(dev, block_size, per_block, nb)
    if max_blocks is not None:
        step = dev.storage_align // math.gcd(block_size, dev.storage_align)
        cb = min(cb, max(step, max_blocks // step * step))
    k_hist = dev.kernel("fse/hist.wgsl", defines={"HIST": True})
    k_norm = dev.kernel("fse/norm.wgsl")
    if mode == "reference":
        k_tab = dev.kernel("fse/reftab.wgsl", defines={"WG": TABLE_WG, "TSIZE": tsize, "CTABLE_OUT": True})
        k_enc = dev.kernel("fse/refenc.wgsl", defines={"WG": REF_CODERS, "TSIZE": tsize, "WRITER_ONLY": True})
    else:
        k_enc = dev.kernel("fse/encode.wgsl", defines={"WG": lanes, "TSIZE": tsize})
    k_place = dev.kernel("fse/place.wgsl")
    k_gat = dev.kernel("fse/gather.wgsl")

    def submit(c0: int) -> PlacedGroup:
        c1 = min(nb, c0 + cb)
        ncb = c1 - c0
        start = c0 * block_size
        nbytes = min(n, c1 * block_size) - start
        src = source(start, nbytes)
        # slots sized to the group's largest block (a small input: its own size, not block_size's)
        big = min(block_size, -(-nbytes // 64) * 64)
        stage_words = _stage_words(mode, big, lanes, table_log)
        lane_cap = _lane_cap(big, lanes, table_log) if mode == "interleaved" else 0
        lens = np.minimum(block_size, nbytes - np.arange(ncb, dtype=np.int64) * block_size)
        blocks = {"n_bytes": nbytes, "block_size": block_size, "n_blocks": ncb}
        hist = _buffer(dev, 4 * 257 * ncb)
        plan = _buffer(dev, 4 * PLAN_WORDS * ncb)
        info = _buffer(dev, 12 * ncb)
        stage = _buffer(dev, 4 * stage_words * ncb)
        status = _buffer(dev, 8 * ncb)
        # the payload buffer: the record (kind, size, checksum a block), then the payloads (each at
        # most its block's size, word-padded)
        base = -(-3 * ncb // 4) * 4
        bound = 4 * base + int(((lens + 3) // 4 * 4).sum())
        out = _buffer(dev, bound)
        if dev.hooks.fse_poison_outputs:  # tests: unwritten words show
            dev.write(out, np.full(out.size // 4, 0xDEADBEEF, np.uint32).tobytes())
        gplan = _buffer(dev, 12 * ncb)
        b = dev.batch()
        sl = _slices(nbytes, block_size, ncb)
        b.clear(hist, 0, 4 * 257 * ncb)
        b.dispatch(k_hist, ncb * sl["slices"], params={**blocks, **sl}, src=src, hist=hist)
        b.dispatch(k_norm, ncb, params={**blocks, "table_log": table_log,
                                        "fse_kind": FSE_REF if mode == "reference" else FSE_IL},
                   hist=hist, plan=plan, info=info)
        if mode == "reference":
            tabs = _buffer(dev, 4 * tw * ncb)
            b.dispatch(k_tab, ncb, params={"n_blocks": ncb, "stage_words": stage_words},
                       plan=plan, stage=stage, status=status, tabs=tabs)
            b.dispatch(k_enc, -(-ncb // REF_CODERS), params={**blocks, "stage_words": stage_words},
                       src=src, plan=plan, tabs=tabs, stage=stage, status=status)
        else:
            b.dispatch(k_enc, ncb, params={**blocks, "stage_words": stage_words, "lane_cap": lane_cap},
                       src=src, plan=plan, stage=stage, status=status)
        b.dispatch(k_place, 1, params={"n_blocks": ncb, "base": base}, info=info, status=status, hist=hist,
                   gplan=gplan, rec=Binding(out, 0, 12 * ncb))
        b.dispatch(k_gat, ncb * sl["slices"], params={**blocks, "stage_words": stage_words, "lane_cap": lane_cap,
                                                       "lanes": lanes, "slices": sl["slices"]},
                   src=src, stage=stage, gplan=gplan, dst=out)
        small = bound <= dev.transfer.one_shot_counted  # else the record first, then just the payloads
        rb = b.readback((out, 0, bound if small else 12 * ncb))
        b.submit()
        rb.prefetch()
        return PlacedGroup(c0, start + nbytes, lens, c1 >= nb, 4 * base, rb, None if small else out)

    ahead = None  # submitted, not yet handed out
    try:
        for c0 in range(0, nb, cb):
            grp = submit(c0)
            if ahead is not None:
                grp, ahead = ahead, grp
                yield grp  # the caller's now (its readback too)
            else:
                ahead = grp
        if ahead is not None:
            grp, ahead = ahead, None
            yield grp
    finally:  # closed early (an error downstream): no mapping left pending
        if ahead is not None:
            ahead.rb.discard()


def _new_bytes(n: int) -> tuple[bytes | np.ndarray, np.ndarray]:
    """A new ``bytes`` object of ``n`` (> 0) uninitialised bytes and a writable uint8 view of it, to
    be filled before the object is handed out (what C code does with
    ``PyBytes_FromStringAndSize(NULL, n)``): the container is written once, straight from the GPU's
    mappings, instead of assembled and copied. Without CPython's C API: a numpy array (copied to
    bytes once filled)."""
    if _CAPI is None:
        arr = np.empty(n, np.uint8)
        return arr, arr
    obj = _CAPI.PyBytes_FromStringAndSize(None, n)
    return obj, np.frombuffer(_CAPI.PyMemoryView_FromMemory(_CAPI.PyBytes_AsString(obj), n, _PYBUF_WRITE), np.uint8)


def _new_bytearray(n: int) -> bytearray:
    """A new bytearray of ``n`` bytes, not zero-filled (``bytearray(n)`` writes every byte once
    more, on one thread, before the download fills it)."""
    return bytearray(n) if _CAPI is None else _CAPI.PyByteArray_FromStringAndSize(None, n)


_PYBUF_WRITE = 0x200


def _c_api():
    try:
        api = ctypes.PyDLL(None)  # the interpreter's own symbols (CPython), apart from ctypes.pythonapi
        sized = (ctypes.c_char_p, ctypes.c_ssize_t)
        for name, res, args in (("PyBytes_FromStringAndSize", ctypes.py_object, sized),
                                ("PyBytes_AsString", ctypes.c_void_p, (ctypes.py_object,)),
                                ("PyByteArray_FromStringAndSize", ctypes.py_object, sized),
                                ("PyMemoryView_FromMemory", ctypes.py_object,
                                 (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int))):
            f = getattr(api, name)
            f.restype, f.argtypes = res, args
        return api
    except (AttributeError, OSError, TypeError):  # not CPython, or no process symbol table
        return None


_CAPI = _c_api()


# ----------------------------------------------------------------------------- decompress
def parse(blob) -> tuple[dict, np.ndarray]:
    """Validate a container's header and block table; returns ``(header, entries)``.

    Raises CorruptDataError on anything malformed (checked on the host before any dispatch).
    """
    blob = memoryview(blob).cast("B") if not isinstance(blob, bytes) else blob
    if len(blob) < HEADER.size:
        raise CorruptDataError("fse", "truncated container header")
    magic, ver, mode, tl, _r0, lanes, _r1, bs, n, nb, crc = HEADER.unpack_from(blob, 0)
    if magic != MAGIC:
        raise CorruptDataError("fse", "bad magic: not an FSE container")
    if ver not in READ_VERSIONS:
        raise CorruptDataError("fse", f"unsupported container version {ver} (this reader knows "
                               f"{', '.join(map(str, READ_VERSIONS))})")
    if mode not in (0, 1):
        raise CorruptDataError("fse", f"unknown mode {mode}")
    if not T.MIN_TABLELOG <= tl <= T.MAX_TABLELOG:
        raise CorruptDataError("fse", f"table log {tl} out of range")
    if bs <= 0 or bs % 64 or bs > MAX_IL_BLOCK or (mode == 0 and bs > MAX_REF_BLOCK):
        raise CorruptDataError("fse", f"bad block size {bs}")
    if mode == 1 and (lanes not in LANES_ALLOWED or bs // 4 > 8192 * lanes):
        raise CorruptDataError("fse", f"bad lane count {lanes}")
    if nb != -(-n // bs):
        raise CorruptDataError("fse", "block count does not match the original size")
    tend = HEADER.size + ENTRY.itemsize * nb
    if len(blob) < tend:
        raise CorruptDataError("fse", "truncated block table")
    table = bytes(blob[HEADER.size:tend])
    if zlib.crc32(table, zlib.crc32(bytes(blob[:HEADER.size - 4]))) != crc:
        raise CorruptDataError("fse", "header checksum mismatch")
    e = np.frombuffer(table, ENTRY)
    lens = np.minimum(bs, n - np.arange(nb, dtype=np.int64) * bs)
    off = e["offset"].astype(np.uint64)
    cs = e["csize"].astype(np.int64)
    kind = e["kind"]
    fse_kind = FSE_REF if mode == 0 else FSE_IL
    bad = (off % 4 != 0) | (off < tend) | (off > len(blob)) | (cs > len(blob))
    bad |= (off.astype(np.int64) + cs) > len(blob)
    bad |= ~np.isin(kind, [RAW, RLE, fse_kind])
    bad |= (kind == RAW) & (cs != lens)
    bad |= (kind == RLE) & (cs != 1)
    if mode == 0:
        bad |= (kind == FSE_REF) & ((cs < 2) | (cs >= lens))
    else:
        bad |= (kind == FSE_IL) & ((cs % 4 != 0) | (cs < 4 * (lanes // 2 + 1)) | (cs > 4 * (lanes // 2 + 129)
                                                                                + lanes * 4 * _lane_cap(bs, lanes, tl)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CorruptDataError("fse", f"block {i}: bad table entry (offset {int(off[i])}, size {int(cs[i])}, "
                               f"kind {int(kind[i])})")
    return {"version": ver, "mode": mode, "table_log": tl, "lanes": lanes, "block_size": bs, "size": n, "blocks": nb}, e


@takes_device(name="fse.decompress")
def decompress(blob, progress=None, *, max_output_size: int | None = DEFAULT_MAX_OUTPUT) -> bytearray:
    """Decompress a container made by :func:`compress` (either mode) on the GPU.

    Raises CorruptDataError for any malformed, truncated or tampered input (container fields are
    checked on the host first; the kernels bound every read and report bad streams; per-block
    checksums, tied to the blocks' places, are verified, so reordered blocks are caught).

    Parameters
    ----------
    blob : bytes-like or GpuArray of uint8
    progress : callable, optional
        Called as ``progress(bytes_done, bytes_total)`` after each chunk.
    max_output_size : int or None
        Refuse (InputError, before allocating anything) a container whose header claims more
        output bytes than this (default 4 GiB; a few KB of single-symbol blocks can claim
        gigabytes). None: no limit (an allocation failure is then an InputError too).

    Returns
    -------
    bytearray
        The original bytes. Each chunk is downloaded straight into it (no second copy of the
        output is made; ``bytes(result)`` makes one if an immutable object is needed).

    Examples
    --------
    >>> from pywgpuprims import fse
    >>> fse.decompress(fse.compress(b"abracadabra" * 100)) == b"abracadabra" * 100
    True
    """
    limit = _check_max_output(max_output_size)
    _check_progress(progress, "fse.decompress")
    if isinstance(blob, GpuArray):
        blob = blob.numpy().tobytes()
    elif not isinstance(blob, (bytes, bytearray, memoryview)):
        raise InputError("fse.decompress", f"expected a bytes-like container, got {type(blob).__name__}")
    return run_steps(decompress_steps(device(), _byte_view(blob), limit, progress))


def decompress_steps(dev: Device, blob, limit: int | None, progress=None):
    """:func:`decompress` of a bytes-like ``blob`` as a step generator (see :func:`compress_steps`)."""
    hdr, e = parse(blob)
    n = hdr["size"]
    if limit is not None and n > limit:
        raise InputError("fse.decompress", f"the container claims {n} bytes of output, more than "
                         f"max_output_size={limit} (pass a larger max_output_size, or None, to allow it)")
    if n == 0:
        return bytearray()
    try:
        out = _new_bytearray(n)
    except MemoryError:
        raise InputError("fse.decompress", f"cannot allocate the {n} bytes of output the container claims") from None
    yield from decode_steps(dev, hdr, e, np.frombuffer(blob, np.uint8), np.frombuffer(out, np.uint8),
                            progress=progress)
    return out


def decode_groups(dev: Device, hdr: dict, e: np.ndarray, whole: np.ndarray, result: np.ndarray,
                  max_blocks: int | None = None, progress=None) -> None:
    """Decode every block of a container checked by :func:`parse` (``whole``: its bytes, uint8)
    into ``result`` (uint8, the original size; a memmap is fine), group by group of blocks (as
    many as the bindings allow, at most ``max_blocks``). Group k+1 is uploaded and submitted
    before group k's status and checksums are checked and its bytes copied out."""
    run_steps(decode_steps(dev, hdr, e, whole, result, max_blocks, progress))


def decode_steps(dev: Device, hdr: dict, e: np.ndarray, whole: np.ndarray, result: np.ndarray,
                 max_blocks: int | None = None, progress=None):
    """:func:`decode_groups` as a step generator, yielding :data:`WAIT` before each wait."""
    n, bs, nb, tl = hdr["size"], hdr["block_size"], hdr["blocks"], hdr["table_log"]
    mode, lanes = hdr["mode"], hdr["lanes"]
    wg = REF_CODERS if mode == 0 else lanes
    mtl = _max_block_log(tl)
    # TABLES: the entry builds tables (interleaved: main; reference: ref_tables, not main)
    defs = {"REF": mode == 0, "TABLES": mode != 0, "WG": wg, "TSIZE": 1 << mtl, "MAXTL": mtl}
    if mode == 0:
        k_tab = dev.kernel("fse/decode.wgsl", entry="ref_tables", defines={**defs, "WG": TABLE_WG, "TABLES": True})
    k_dec = dev.kernel("fse/decode.wgsl", defines=defs)
    k_raw = dev.kernel("fse/decode.wgsl", entry="copy", defines=defs)
    k_check = dev.kernel("fse/hist.wgsl", defines={"HIST": False})
    lens = np.minimum(bs, n - np.arange(nb, dtype=np.int64) * bs)
    # every per-group binding within the limit: output, compressed input (raw blocks: as large as
    # their output; interleaved ones may exceed it a little), reference-mode tables
    comp_cap = bs if mode == 0 else max(bs, 4 * (lanes // 2 + 129) + lanes * 4 * _lane_cap(bs, lanes, tl))
    cb = _chunk_blocks(dev, bs, max(comp_cap, 4 << mtl if mode == 0 else 0), nb)
    if max_blocks is not None:
        step = dev.storage_align // math.gcd(bs, dev.storage_align)
        cb = min(cb, max(step, max_blocks // step * step))

    def submit(c0: int):
        c1 = min(nb, c0 + cb)
        ncb = c1 - c0
        ce = e[c0:c1]
        offs = ce["offset"].astype(np.int64)
        ends = offs + ce["csize"].astype(np.int64)
        lo, hi = int(offs.min()), int(ends.max())
        if hi - lo <= max(2 * int(ce["csize"].sum()) + 4096, 1 << 20):
            comp = whole[lo:hi]  # a view: uploaded straight from the caller's bytes
            rel = offs - lo
        else:  # scattered offsets (legal but odd): gather the payloads on the host
            padded = (ends - offs + 3) // 4 * 4
            rel = np.zeros(ncb, np.int64)
            np.cumsum(padded[:-1], out=rel[1:])
            comp = np.zeros(int(rel[-1] + padded[-1]), np.uint8)
            for i in range(ncb):
                comp[rel[i]:rel[i] + ends[i] - offs[i]] = whole[offs[i]:ends[i]]
        plan = np.stack([ce["kind"].astype(np.int64), rel // 4, ce["csize"].astype(np.int64)], axis=1).astype(np.uint32)
        start = c0 * bs
        nbytes = int(lens[c0:c1].sum())
        comp_buf = _upload(dev, comp)
        plan_buf = _upload(dev, plan)
        out_buf = _buffer(dev, (nbytes + 3) // 4 * 4)
        if dev.hooks.fse_poison_outputs:  # tests: unwritten words show
            dev.write(out_buf, np.full(out_buf.size // 4, 0xDEADBEEF, np.uint32).tobytes())
        # status words and output checksums side by side: one map round trip decides the group
        at = -(-4 * ncb // dev.storage_align) * dev.storage_align
        flags = _buffer(dev, at + 4 * ncb)
        params = {"n_bytes": nbytes, "block_size": bs, "n_blocks": ncb, "comp_words": len(comp) // 4 + 1}
        b = dev.batch()
        b.clear(flags, 0, at + 4 * ncb)
        io = {"params": params, "comp": comp_buf, "plan": plan_buf, "dst": out_buf,
              "status": Binding(flags, 0, 4 * ncb)}
        if mode == 0:
            io.update(rec=_buffer(dev, 16 * ncb), dtabs=_buffer(dev, 4 * (1 << mtl) * ncb))
            b.dispatch(k_tab, ncb, **io)
            b.dispatch(k_dec, -(-ncb // wg), **io)
        else:
            b.dispatch(k_dec, ncb, **io)
        b.dispatch(k_raw, ncb, **io)
        sl = _slices(nbytes, bs, ncb)
        b.dispatch(k_check, ncb * sl["slices"], params={"n_bytes": nbytes, "block_size": bs, "n_blocks": ncb, **sl},
                   src=out_buf, hist=Binding(flags, at, 4 * ncb))
        small = nbytes <= dev.transfer.one_shot
        rb = b.readback((flags, 0, at + 4 * ncb), *([(out_buf, 0, nbytes)] if small else []))
        b.submit()
        return c0, c1, start, nbytes, at, out_buf if not small else None, rb.prefetch()

    def finish(c0, c1, start, nbytes, at, out_buf, rb) -> None:
        words = np.empty((at + 4 * (c1 - c0)) // 4, np.uint32)
        dst = result[start:start + nbytes]
        rb.into(words, *([dst] if out_buf is None else []), tuning=dev.transfer)  # small: straight into the result
        status, checks = words[:c1 - c0], words[at // 4:]
        bad = np.flatnonzero(status != 0)
        if len(bad):
            i = int(bad[0])
            raise CorruptDataError("fse", f"block {c0 + i}: corrupt stream (code {int(status[i])})")
        checks = _finish_checks(checks, lens[c0:c1])
        checks = checks if hdr["version"] == 1 else _tie(checks, np.arange(c0, c1))
        badc = np.flatnonzero(checks != e["check"][c0:c1])
        if len(badc):
            raise CorruptDataError("fse", f"block {c0 + int(badc[0])}: checksum mismatch")
        if out_buf is not None:
            dev.download(out_buf, dst)  # straight into the result
        if progress is not None:
            progress(start + nbytes, n)

    pending: list = []
    try:
        for c0 in range(0, nb, cb):
            pending.append(submit(c0))
            if len(pending) > 1:
                yield WAIT
                finish(*pending.pop(0))
        while pending:
            yield WAIT
            finish(*pending.pop(0))
    finally:  # an error: mappings still pending are dropped unread
        for p in pending:
            p[-1].discard()


def _check_progress(progress, primitive: str) -> None:
    if progress is not None and not callable(progress):
        raise InputError(primitive, f"progress must be callable (or None), got {progress!r}")


def _check_max_output(limit) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise InputError("fse.decompress", f"max_output_size must be a non-negative integer or None, got {limit!r}")
    return int(limit)
