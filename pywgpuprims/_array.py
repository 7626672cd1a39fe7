"""GpuArray: a typed, C-contiguous array living in a wgpu storage buffer."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._device import Device, device, takes_device
from ._dtypes import ALL_DTYPES
from ._errors import DeviceLimitError, InputError, PrimitiveError

#: dtypes most primitives take (the default of :func:`as_input`); uint8 is packed four to a 32-bit word.
SUPPORTED_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32))
#: dtypes a GpuArray can hold (``_dtypes.ALL_DTYPES``: bool, 8- to 64-bit integers, float16/32/64),
#: packed little-endian; scan and reduce take them all.
ARRAY_DTYPES = ALL_DTYPES


class GpuArray:
    """An n-dimensional array in GPU memory.

    Made by :func:`asarray` or returned by primitives given GpuArray inputs. ``.numpy()`` (or
    ``np.asarray(g)``) copies it back. The buffer is padded to a multiple of 16 bytes; kernels may
    read that padding but results never depend on it.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> g = pp.asarray(np.arange(5, dtype=np.uint32))
    >>> g.shape, g.dtype
    ((5,), dtype('uint32'))
    >>> g.numpy()
    array([0, 1, 2, 3, 4], dtype=uint32)
    """

    __array_priority__ = 100

    def __init__(self, dev: Device, buffer, shape: tuple[int, ...], dtype, byte_offset: int = 0):
        self.device = dev
        self.buffer = buffer
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.byte_offset = byte_offset

    @classmethod
    @takes_device(name="GpuArray.empty")
    def empty(cls, shape, dtype, dev: Device | None = None) -> GpuArray:
        """An uninitialised GpuArray (contents unspecified)."""
        dev = dev or device()
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        dtype = _check_dtype(dtype, "GpuArray.empty")
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > dev.max_buffer:
            raise DeviceLimitError("GpuArray", f"{nbytes} bytes exceed the device's largest buffer "
                                   f"({dev.max_buffer} bytes)")
        if any(s < 0 for s in shape):
            raise InputError("GpuArray.empty", f"negative dimensions are not allowed: {shape}")
        return cls(dev, dev.alloc(nbytes, label="GpuArray"), shape, dtype)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d GpuArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"GpuArray(shape={self.shape}, dtype={self.dtype}, device={self.device.adapter_summary!r})"

    def reshape(self, *shape) -> GpuArray:
        """A view with another shape (same buffer; one dimension may be -1)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if shape != self.shape:
            known = math.prod(s for s in shape if s != -1)
            if shape.count(-1) == 1 and known and self.size % known == 0:
                shape = tuple(self.size // known if s == -1 else s for s in shape)
            if shape.count(-1) or any(s < 0 for s in shape) or math.prod(shape) != self.size:
                raise InputError("GpuArray.reshape", f"cannot reshape an array of size {self.size} into {shape}")
        return GpuArray(self.device, self.buffer, shape, self.dtype, self.byte_offset)

    def numpy(self, out: np.ndarray | None = None) -> np.ndarray:
        """Copy to a new numpy array (or into ``out``, of the same shape and dtype); waits for the GPU."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif out.shape != self.shape or out.dtype != self.dtype:
            raise InputError("GpuArray.numpy", f"out has shape {out.shape} and dtype {out.dtype}; expected "
                             f"{self.shape} and {self.dtype}")
        elif not out.flags.c_contiguous:
            out[...] = self.numpy()
            return out
        if self.nbytes:
            self.device.download(self.buffer, out, self.byte_offset)
        return out

    def item(self):
        """The one element of a size-1 array as a Python scalar (waits for the GPU: one map round trip)."""
        if self.size != 1:
            raise InputError("GpuArray.item", f"an array of size {self.size} has no single value")
        return self.numpy().reshape(-1)[0].item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)


def _check_dtype(dtype, primitive: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in ARRAY_DTYPES:
        raise InputError(primitive, f"dtype {dtype} is not supported (expected one of "
                         f"{', '.join(str(d) for d in ARRAY_DTYPES)})")
    return dtype


@takes_device
def asarray(a: Any, dtype=None, dev: Device | None = None) -> GpuArray:
    """Upload ``a`` (anything numpy accepts) to the GPU; a GpuArray is returned as is.

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> pp.asarray([1.5, 2.5], dtype="float32").numpy()
    array([1.5, 2.5], dtype=float32)
    """
    if isinstance(a, GpuArray):
        if dtype is not None and np.dtype(dtype) != a.dtype:
            raise InputError("asarray", f"GpuArray of {a.dtype} given where {np.dtype(dtype)} was asked; "
                             "convert on the host")
        return a
    dev = dev or device()
    arr = np.ascontiguousarray(a, dtype=dtype)
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    _check_dtype(arr.dtype, "asarray")
    g = GpuArray.empty(arr.shape, arr.dtype, dev)
    dev.upload(g.buffer, arr)
    return g


def as_input(x: Any, primitive: str, dtypes=None, ndims=None, dev: Device | None = None):
    """Normalise a primitive's input: returns ``(GpuArray, host_array_or_None)``.

    ``host`` is the numpy array when the caller passed host data (so the primitive returns numpy),
    or None when a GpuArray was passed (so it returns a GpuArray).
    """
    dtypes = SUPPORTED_DTYPES if dtypes is None else dtypes
    if isinstance(x, GpuArray):
        g, host = x, None
    else:
        host = np.asarray(x)
        if host.dtype == np.bool_:
            host = host.view(np.uint8)
        g = None
    dtype = (g if g is not None else host).dtype
    ndim = len((g if g is not None else host).shape)
    if np.dtype(dtype) not in [np.dtype(d) for d in dtypes]:
        raise InputError(primitive, f"dtype {dtype} is not supported (expected one of "
                         f"{', '.join(str(np.dtype(d)) for d in dtypes)})")
    if ndims is not None and ndim not in ndims:
        raise InputError(primitive, f"expected an array of {' or '.join(map(str, ndims))} dimensions, "
                         f"got shape {(g if g is not None else host).shape}")
    if g is None:
        g = asarray(host, dev=dev)
    return g, host


def submit_to_host(b, *results: GpuArray, out: np.ndarray | None = None):
    """Submit batch ``b`` and return ``results`` as numpy arrays (one array for one result; the
    first written into ``out`` when given).

    Results of up to ``device.transfer.one_shot`` bytes in all are copied out in the same
    submission (one map round trip in all); larger ones are downloaded in chunks after it.
    """
    dev = b.device
    targets = []
    for i, res in enumerate(results):
        t = out if i == 0 else None
        if t is None or not t.flags.c_contiguous or t.dtype != res.dtype or t.shape != res.shape:
            t = np.empty(res.shape, res.dtype)
        targets.append(t)
    if sum(r.nbytes for r in results) <= dev.transfer.one_shot:
        rb = b.readback(*((r, r.byte_offset, r.nbytes) for r in results))
        b.submit()
        rb.into(*targets, tuning=dev.transfer)
    else:
        b.submit()
        for r, t in zip(results, targets, strict=True):
            dev.download(r, t)
    if out is not None and targets[0] is not out:
        out[...] = targets[0].reshape(out.shape)
        targets[0] = out
    return targets[0] if len(targets) == 1 else tuple(targets)


def submit_counted_to_host(b, count: GpuArray, *parts: GpuArray) -> list[np.ndarray]:
    """Submit batch ``b`` and return the first ``count[0]`` elements of each of ``parts``.

    Small parts travel with the count in one readback (one map round trip); otherwise the count
    comes first and the kept prefixes are downloaded after it.
    """
    dev = b.device
    if sum(p.nbytes for p in parts) <= dev.transfer.one_shot_counted:
        rb = b.readback((count, count.byte_offset, 4), *((p, p.byte_offset, p.nbytes) for p in parts))
        b.submit()
        return rb.counted(*(p.dtype for p in parts))
    rb = b.readback((count, count.byte_offset, 4))
    b.submit()
    k = int(rb.numpy(np.uint32)[0])
    res = []
    for p in parts:
        if k > p.size:
            raise PrimitiveError("readback", f"a count of {k} exceeds the {p.size} elements of the result")
        res.append(GpuArray(p.device, p.buffer, (k,), p.dtype, p.byte_offset).numpy())
    return res
