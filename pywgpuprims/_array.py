"""GpuArray: a typed, C-contiguous array living in a wgpu storage buffer."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _device
from ._device import Device, device, takes_device
from ._dtypes import ALL_DTYPES
from ._errors import DeviceLimitError, InputError, PrimitiveError
from ._memory import STORAGE_USAGE, BlockView

#: dtypes most primitives take (the default of :func:`as_input`); uint8 is packed four to a 32-bit word.
SUPPORTED_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32))
#: dtypes a GpuArray can hold (``_dtypes.ALL_DTYPES``: bool, 8- to 64-bit integers, float16/32/64),
#: packed little-endian; scan and reduce take them all.
ARRAY_DTYPES = ALL_DTYPES
_DTYPE_SET = frozenset(ARRAY_DTYPES)  # np.dtype instances: a set lookup, not twelve comparisons
_DTYPE_CLASSES = frozenset(type(d) for d in ARRAY_DTYPES)


class GpuArray:
    """An n-dimensional array in GPU memory.

    Made by :func:`asarray` or returned by primitives given GpuArray inputs. ``.numpy()`` (or
    ``np.asarray(g)``) copies it back. The buffer is padded to a multiple of 16 bytes; kernels may
    read that padding but results never depend on it.

    The small ndarray surface: ``shape``, ``dtype``, ``size``, ``ndim``, ``nbytes``,
    ``itemsize``, ``len()``, ``reshape`` (a view), indexing and slicing (``g[:3]``, ``g[64:]``: a
    view where the result is one contiguous run starting on the device's storage alignment, else
    a copy; see :meth:`__getitem__`), ``.T``, ``.astype``, ``.copy()`` (copies), ``float()`` /
    ``int()`` / ``.item()`` of a one-element array, and a numpy-like ``repr`` with the values of
    arrays of up to 1,000 elements (it waits for the GPU).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> g = pp.asarray(np.arange(5, dtype=np.uint32))
    >>> g.shape, g.dtype
    ((5,), dtype('uint32'))
    >>> g.numpy()
    array([0, 1, 2, 3, 4], dtype=uint32)
    >>> int(g[3]), g[1:3].numpy()
    (3, array([1, 2], dtype=uint32))
    """

    __array_priority__ = 100
    #: a small result's bytes, copied for the host in the submission that computed it (see
    #: ``Batch.snapshot``): read by ``numpy()`` while the buffer has not been written since
    _snap = None

    def __init__(self, dev: Device, buffer, shape: tuple[int, ...], dtype, byte_offset: int = 0):
        self.device = dev
        self.buffer = buffer
        self.shape = tuple(map(int, shape))
        self.dtype = dtype if dtype.__class__ in _DTYPE_CLASSES else np.dtype(dtype)
        self.byte_offset = byte_offset

    @classmethod
    @takes_device(name="GpuArray.empty")
    def empty(cls, shape, dtype, dev: Device | None = None) -> GpuArray:
        """An uninitialised GpuArray (contents unspecified)."""
        dev = dev or device()
        if shape.__class__ is not tuple or not all(s.__class__ is int and s >= 0 for s in shape):
            shape = _check_shape(shape, "GpuArray.empty")
        if dtype.__class__ not in _DTYPE_CLASSES or dtype not in _DTYPE_SET:
            dtype = _check_dtype(dtype, "GpuArray.empty")
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > dev.max_buffer:
            raise DeviceLimitError("GpuArray", f"{nbytes} bytes exceed the device's largest buffer "
                                   f"({dev.max_buffer} bytes)")
        return cls(dev, dev.alloc(nbytes, label="GpuArray"), shape, dtype)

    @classmethod
    def _new(cls, shape: tuple[int, ...], dtype, dev: Device) -> GpuArray:
        """:meth:`empty` for the library's own results: ``shape`` a tuple of ints, ``dtype`` one a
        GpuArray holds, ``dev`` given (no argument checks, no ``device=`` handling: a call's
        outputs cost one pool allocation)."""
        if dtype.__class__ not in _DTYPE_CLASSES:
            dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > dev.max_buffer or dev.lost is not None:  # Device.alloc says why
            block = dev.alloc(nbytes, label="GpuArray")
        else:
            block = dev.memory.alloc(nbytes, STORAGE_USAGE, "GpuArray")
        g = object.__new__(cls)
        g.device, g.buffer, g.shape, g.dtype, g.byte_offset = dev, block, shape, dtype, 0
        return g

    @classmethod
    def _wrap(cls, dev: Device, buffer, shape: tuple[int, ...], dtype, byte_offset: int = 0) -> GpuArray:
        """The constructor for the library's own views of a buffer: ``shape`` a tuple of ints,
        ``dtype`` one a GpuArray holds (no conversions)."""
        if dtype.__class__ not in _DTYPE_CLASSES:
            dtype = np.dtype(dtype)
        g = object.__new__(cls)
        g.device, g.buffer, g.shape, g.dtype, g.byte_offset = dev, buffer, shape, dtype, byte_offset
        return g

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
        """numpy's repr with the device for arrays of up to ``REPR_MAX`` elements (a download);
        shape and dtype alone for larger ones."""
        dev = self.device.adapter_summary
        if self.size > REPR_MAX or not _alive(self):
            return f"GpuArray(shape={self.shape}, dtype={self.dtype}, device={dev!r})"
        body = np.array2string(self.numpy(), separator=", ", prefix="GpuArray(", threshold=REPR_MAX)
        return f"GpuArray({body}, dtype={self.dtype}, device={dev!r})"

    def __str__(self) -> str:
        return str(self.numpy()) if self.size <= REPR_MAX else repr(self)

    # ------------------------------------------------------------------ the small ndarray surface
    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def T(self) -> GpuArray:
        """The transpose (numpy's ``.T``, axes reversed). 0-d and 1-D: this array itself; otherwise
        a copy (a GpuArray is C-contiguous, so a transpose cannot be a view), made through the host."""
        if self.ndim < 2:
            return self
        return self._from_host(np.ascontiguousarray(self.numpy().T))

    def copy(self) -> GpuArray:
        """A copy in a new buffer (on the GPU where the data starts on a 4-byte boundary, else
        through the host)."""
        if self.byte_offset % 4:
            return self._from_host(self.numpy())
        out = GpuArray.empty(self.shape, self.dtype, self.device)
        if self.nbytes:
            b = self.device.batch()
            b.copy(self.buffer, self.byte_offset, out.buffer, 0, -(-self.nbytes // 4) * 4)
            b.submit()
        return out

    def astype(self, dtype, copy: bool = True) -> GpuArray:
        """This array in ``dtype`` (a dtype a GpuArray can hold, else InputError). The same dtype
        gives a copy (or this array with ``copy=False``); a conversion runs through the host with
        numpy's casting."""
        dtype = _check_dtype(dtype, "GpuArray.astype")
        if dtype == self.dtype:
            return self.copy() if copy else self
        return self._from_host(self.numpy().astype(dtype))

    def __getitem__(self, key) -> GpuArray:
        """numpy indexing, returning a GpuArray (a 0-d one for a single element).

        Basic indexing (integers, slices, ``...``, ``None``) whose result is one contiguous run
        starting on the device's storage-offset alignment (``dev.storage_align`` bytes: 32 on
        lavapipe, 16-256 on GPUs) is a **view**: ``g[:k]``, ``g[k:]``, ``g[a:b]``, whole rows
        ``g[r]`` / ``g[r0:r1]`` where those start aligned. A view shares the buffer (its
        ``buffer`` is a range of it that every primitive reads and writes from the view's first
        element, and keeps the buffer alive). A contiguous run that starts off the alignment is a
        **copy** made on the GPU (through the host where it starts off a 4-byte boundary);
        strided slices, reversed axes and fancy (integer-array or boolean) indexing go through the
        host (download, numpy indexing, upload).

        Kernels write whole 16-byte words, so a view given as a primitive's output (``out=``) must
        end on a 16-byte word or where its array ends; otherwise the call raises PrimitiveError
        rather than write into the elements after it.
        """
        if isinstance(key, GpuArray):
            key = key.numpy()
        basic = _is_basic_index(key)
        if basic:
            view = self._basic_view(key)
            if view is not None:
                return view
        try:
            return self._from_host(np.asarray(self.numpy()[key]))
        except IndexError as exc:
            raise GpuIndexError("GpuArray.__getitem__", str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise InputError("GpuArray.__getitem__", f"bad index {key!r}: {exc}") from None

    def _basic_view(self, key) -> GpuArray | None:
        """The view (or a GPU copy) for a basic index whose result is contiguous; None otherwise."""
        c_strides = tuple(int(np.prod(self.shape[i + 1:], dtype=np.int64)) * self.itemsize
                          for i in range(self.ndim))
        base = np.zeros(max(self.itemsize, 1), np.uint8)
        proxy = np.lib.stride_tricks.as_strided(base.view(self.dtype)[:1] if self.itemsize else base, self.shape,
                                                c_strides, writeable=False)  # never read: shapes and offsets only
        items = key if isinstance(key, tuple) else (key,)
        if not any(k is Ellipsis for k in items):
            items = (*items, Ellipsis)  # a 0-d array view, never a scalar read from the proxy
        try:
            v = proxy[items]
        except IndexError as exc:
            raise GpuIndexError("GpuArray.__getitem__", str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise InputError("GpuArray.__getitem__", f"bad index {key!r}: {exc}") from None
        if not v.flags.c_contiguous and v.size > 1:
            return None
        offset = self.byte_offset + (v.__array_interface__["data"][0] - base.__array_interface__["data"][0])
        nbytes = v.size * self.itemsize
        if v.size == 0 or nbytes == self.nbytes:
            return GpuArray(self.device, self.buffer, v.shape, self.dtype, self.byte_offset)  # all of it
        if offset % self.device.storage_align == 0:
            # A view: a BlockView of this range (up to the next 16 bytes, within the buffer), which
            # every binding, copy and transfer starts at (Device._span), so primitives read and
            # write the view, not the buffer's start.
            end = min(self.buffer.size, offset + -(-nbytes // 16) * 16)
            view = BlockView(self.buffer, offset, nbytes, end - offset, self.byte_offset + self.nbytes)
            return GpuArray(self.device, view, v.shape, self.dtype)
        # a range that cannot be bound where it starts: a copy (on the GPU from a 4-byte boundary)
        view = GpuArray(self.device, self.buffer, v.shape, self.dtype, offset)
        return view.copy() if offset % 4 == 0 else None

    def _from_host(self, a: np.ndarray) -> GpuArray:
        return asarray(a, dev=self.device).reshape(a.shape)

    def reshape(self, *shape) -> GpuArray:
        """A view with another shape (same buffer; one dimension may be -1)."""
        if len(shape) == 1:
            s0 = shape[0]
            if s0.__class__ is int and (s0 == -1 or s0 == self.size) and len(self.shape) == 1:  # g.reshape(-1)
                return self._view(self.shape)
            if isinstance(s0, (tuple, list)):
                shape = tuple(s0)
        shape = tuple(map(int, shape))
        if shape != self.shape:
            known = math.prod(s for s in shape if s != -1)
            if shape.count(-1) == 1 and known and self.size % known == 0:
                shape = tuple(self.size // known if s == -1 else s for s in shape)
            if shape.count(-1) or any(s < 0 for s in shape) or math.prod(shape) != self.size:
                raise InputError("GpuArray.reshape", f"cannot reshape an array of size {self.size} into {shape}")
        return self._view(shape)

    def _view(self, shape: tuple[int, ...]) -> GpuArray:
        """This array with another shape of the same size (no checks: a known-good shape)."""
        g = object.__new__(GpuArray)
        g.device, g.buffer, g.shape, g.dtype, g.byte_offset = self.device, self.buffer, shape, self.dtype, \
            self.byte_offset
        if self._snap is not None:
            g._snap = self._snap  # the same bytes
        return g

    def numpy(self, out: np.ndarray | None = None) -> np.ndarray:
        """Copy to a new numpy array (or into ``out``, of the same shape and dtype); waits for the GPU."""
        snap = self._snap
        if snap is not None and out is None:
            data = snap.read()
            if data is not None:
                return data.view(self.dtype).reshape(self.shape).copy()
            self._snap = None  # written since: read the buffer
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
        snap = self._snap
        if snap is not None:
            data = snap.read()
            if data is not None:
                return data.view(self.dtype)[0].item()
        return self.numpy().reshape(-1)[0].item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)


#: GpuArray's repr shows the values of arrays up to this size (numpy's summarisation threshold)
REPR_MAX = 1000


_device._GPUARRAY = GpuArray


class GpuIndexError(InputError, IndexError):
    """An index out of range or malformed for a GpuArray (an IndexError too, as numpy's)."""


def _alive(g: GpuArray) -> bool:
    return getattr(g.device, "raw", None) is not None


def _is_basic_index(key) -> bool:
    """Integers, slices, Ellipsis and None (alone or in a tuple): numpy's basic indexing."""
    items = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, slice)
               or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))) for k in items)


def _check_shape(shape, primitive: str) -> tuple[int, ...]:
    """A shape (an int or a sequence of ints, each >= 0) as a tuple; InputError otherwise."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if isinstance(shape, (str, bytes, dict)):
        raise InputError(primitive, f"shape must be an int or a sequence of ints, got {shape!r}")
    try:
        dims = tuple(shape)
    except TypeError:
        raise InputError(primitive, f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) for s in dims):
        raise InputError(primitive, f"shape must hold integers, got {shape!r}")
    if any(s < 0 for s in dims):
        raise InputError(primitive, f"negative dimensions are not allowed: {shape}")
    return tuple(int(s) for s in dims)


def _check_dtype(dtype, primitive: str) -> np.dtype:
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise InputError(primitive, f"{dtype!r} is not a dtype") from None
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
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise InputError("asarray", f"{dtype!r} is not a dtype") from None
    arr = np.ascontiguousarray(a, dtype=dtype)
    if arr.ndim != np.ndim(a):  # ascontiguousarray makes 0-d input 1-d
        arr = arr.reshape(())
    _check_dtype(arr.dtype, "asarray")  # bool stays bool (one byte each), as numpy's
    g = GpuArray.empty(arr.shape, arr.dtype, dev)
    dev.upload(g.buffer, arr)
    return g


def _bool_as_uint8(g: GpuArray) -> GpuArray:
    """A bool GpuArray read as its bytes (0 or 1): the uint8 view the primitives take masks as."""
    if g.dtype is not _BOOL and g.dtype != _BOOL:
        return g
    return GpuArray._wrap(g.device, g.buffer, g.shape, _U8, g.byte_offset)


_BOOL, _U8 = np.dtype(np.bool_), np.dtype(np.uint8)


def as_input(x: Any, primitive: str, dtypes=None, ndims=None, dev: Device | None = None):
    """Normalise a primitive's input: returns ``(GpuArray, host_array_or_None)``.

    ``host`` is the numpy array when the caller passed host data (so the primitive returns numpy),
    or None when a GpuArray was passed (so it returns a GpuArray).
    """
    dtypes = SUPPORTED_DTYPES if dtypes is None else dtypes
    if x.__class__ is GpuArray or isinstance(x, GpuArray):
        g, host = _bool_as_uint8(x), None
    else:
        host = np.asarray(x)
        if host.dtype == np.bool_:
            host = host.view(np.uint8)
        g = None
    dtype = (g if g is not None else host).dtype
    ndim = len((g if g is not None else host).shape)
    if dtype not in _dtype_set(dtypes):
        raise InputError(primitive, f"dtype {dtype} is not supported (expected one of "
                         f"{', '.join(str(np.dtype(d)) for d in dtypes)})")
    if ndims is not None and ndim not in ndims:
        raise InputError(primitive, f"expected an array of {' or '.join(map(str, ndims))} dimensions, "
                         f"got shape {(g if g is not None else host).shape}")
    if g is None:
        g = asarray(host, dev=dev)
    return g, host


_DTYPE_SETS: dict = {}


def _dtype_set(dtypes) -> frozenset:
    """``dtypes`` (a tuple or list of dtype-likes) as a set of np.dtype, made once per tuple."""
    key = tuple(dtypes)
    got = _DTYPE_SETS.get(key)
    if got is None:
        got = _DTYPE_SETS[key] = frozenset(np.dtype(d) for d in key)
    return got


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
    if not b.commands and count._snap is not None:  # a result's count, copied out by its own submission
        k = int(count.numpy().reshape(-1)[0])
    else:
        rb = b.readback((count, count.byte_offset, 4))
        b.submit()
        k = int(rb.numpy(np.uint32)[0])
    res = []
    for p in parts:
        if k > p.size:
            raise PrimitiveError("readback", f"a count of {k} exceeds the {p.size} elements of the result")
        res.append(GpuArray(p.device, p.buffer, (k,), p.dtype, p.byte_offset).numpy())
    return res
