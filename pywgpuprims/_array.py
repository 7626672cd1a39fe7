"""GpuArray: a typed, C-contiguous array living in a wgpu storage buffer."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._device import Device, device
from ._errors import DeviceLimitError, InputError

#: dtypes a GpuArray can hold; uint8 is packed four to a 32-bit word (little-endian).
SUPPORTED_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32))


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
    def empty(cls, shape, dtype, dev: Device | None = None) -> GpuArray:
        """An uninitialised GpuArray (contents unspecified)."""
        dev = dev or device()
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        dtype = _check_dtype(dtype, "GpuArray.empty")
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > dev.max_buffer:
            raise DeviceLimitError("GpuArray", f"{nbytes} bytes exceed the device's largest buffer "
                                   f"({dev.max_buffer} bytes)")
        return cls(dev, dev.create_buffer(nbytes, label="GpuArray"), shape, dtype)

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
        shape = tuple(np.empty(self.size, dtype=np.uint8).reshape(shape).shape)
        return GpuArray(self.device, self.buffer, shape, self.dtype, self.byte_offset)

    def numpy(self) -> np.ndarray:
        """Copy to a new numpy array."""
        if self.nbytes == 0:
            return np.empty(self.shape, self.dtype)
        size = (self.nbytes + 3) // 4 * 4
        raw = self.device.read(self.buffer, self.byte_offset, size)
        return np.frombuffer(raw, dtype=self.dtype, count=self.size).reshape(self.shape).copy()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)


def _check_dtype(dtype, primitive: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED_DTYPES:
        raise InputError(primitive, f"dtype {dtype} is not supported (expected one of "
                         f"{', '.join(str(d) for d in SUPPORTED_DTYPES)})")
    return dtype


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
    if arr.nbytes:
        data = arr.tobytes()
        data += b"\0" * (-len(data) % 4)
        dev.write(g.buffer, data)
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
