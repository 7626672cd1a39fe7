"""scipy.ndimage's argument conventions for the image filters: mode names, ``cval``, per-axis
``sigma``, ``axes``, ``output`` and the output dtype of integer images.

One name for one idea: every filter calls the boundary ``mode`` and spells it as scipy.ndimage's
filters do (``constant``, ``nearest``, ``reflect``, ``mirror``, ``wrap`` and the aliases
``grid-constant``, ``grid-mirror``, ``grid-wrap``). Functions map these names to what their
kernels do and refuse (InputError naming the mode and the supported ones) what they cannot honour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._array import GpuArray
from ._device import Binding
from ._errors import DeviceLimitError, InputError

#: scipy.ndimage's filter modes and what each means for a filter (the grid-* names are aliases)
FILTER_MODES = {
    "constant": "constant", "grid-constant": "constant",
    "nearest": "nearest",
    "reflect": "reflect", "grid-mirror": "reflect",
    "mirror": "mirror",
    "wrap": "wrap", "grid-wrap": "wrap",
}

#: scipy.ndimage.spline_filter's modes and the boundary its prefilter actually uses
SPLINE_MODES = {
    "mirror": "mirror", "constant": "mirror", "grid-constant": "mirror", "wrap": "mirror",
    "reflect": "reflect", "grid-mirror": "reflect", "nearest": "reflect",
    "grid-wrap": "wrap",
}

NAN_POLICIES = ("propagate", "omit", "raise")
F32_MAX = float(np.finfo(np.float32).max)


def filter_mode(mode, primitive: str, table: dict | None = None, arg: str = "mode") -> str:
    """The canonical meaning of a scipy mode name (InputError for anything else); ``arg``: the
    argument's name in the caller."""
    table = FILTER_MODES if table is None else table
    if not isinstance(mode, str) or mode not in table:
        raise InputError(primitive, f"{arg} {mode!r} is not supported (supported: {', '.join(table)}; "
                         "scipy.ndimage's mode names)")
    return table[mode]


def real_scalar(value, name: str, primitive: str, finite: bool = True, f32: bool = False) -> float:
    """A real number argument (Python or numpy scalar; not bool, not a string), as float
    (``f32``: within float32's range, as the kernels see it)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(primitive, f"{name} must be a real number, got {value!r}")
    try:
        v = float(value)
    except OverflowError:
        raise InputError(primitive, f"{name} is too large, got {value!r}") from None
    if finite and not math.isfinite(v):
        raise InputError(primitive, f"{name} must be finite, got {value!r}")
    if f32 and math.isfinite(v) and abs(v) > F32_MAX:
        raise InputError(primitive, f"{name} must fit float32 (|{name}| <= {F32_MAX:.4g}), got {value!r}")
    return v


def image_axes(axes, ndim: int, primitive: str) -> tuple[int, ...]:
    """``axes`` (int, sequence or None = both image axes) as distinct values among 0 and 1.

    Negative values count from the end as numpy's do; on an ``(H, W, C)`` image the channel axis
    cannot be filtered along."""
    if axes is None:
        return (0, 1)
    seq = (axes,) if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool) else axes
    if isinstance(seq, (str, bytes, dict)):
        raise InputError(primitive, f"axes must be an int or a sequence of ints, got {axes!r}")
    try:
        seq = tuple(seq)
    except TypeError:
        raise InputError(primitive, f"axes must be an int or a sequence of ints, got {axes!r}") from None
    out = []
    for ax in seq:
        if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, (int, np.integer)):
            raise InputError(primitive, f"axes must hold integers, got {axes!r}")
        a = int(ax) + ndim if ax < 0 else int(ax)
        if a not in (0, 1):
            raise InputError(primitive, f"axis {int(ax)} cannot be filtered along: axes are 0 (down the columns) "
                             f"and 1 (along the rows) of a {ndim}-D image")
        out.append(a)
    if len(set(out)) != len(out):
        raise InputError(primitive, f"axes must be distinct, got {axes!r}")
    return tuple(out)


def per_axis(value, naxes: int, name: str, primitive: str) -> tuple[float, ...]:
    """A scalar or a sequence of one value per filtered axis (scipy's ``sigma`` convention)."""
    if isinstance(value, (str, bytes)):
        raise InputError(primitive, f"{name} must be a number or a sequence of numbers, got {value!r}")
    if isinstance(value, (Sequence, np.ndarray)):
        vals = list(np.asarray(value, dtype=object).reshape(-1)) if isinstance(value, np.ndarray) else list(value)
        if len(vals) != naxes:
            raise InputError(primitive, f"{name} has {len(vals)} values for {naxes} filtered axes")
        return tuple(real_scalar(v, name, primitive) for v in vals)
    return (real_scalar(value, name, primitive),) * naxes


def output_dtype(output, in_dtype: np.dtype, shape: tuple, primitive: str, default=None):
    """``(dtype, array or None)`` from scipy's ``output`` argument: None (the input's dtype, or
    ``default`` where given), a dtype, or a numpy array of the result's shape to fill."""
    if output is None:
        dt = np.dtype(default) if default is not None else np.dtype(in_dtype)
        return dt, None
    if isinstance(output, GpuArray):
        raise InputError(primitive, "output must be a dtype or a numpy array (a GpuArray input returns a new "
                         "GpuArray)")
    if isinstance(output, np.ndarray):
        if output.shape != tuple(shape):
            raise InputError(primitive, f"output has shape {output.shape}; expected {tuple(shape)}")
        dt = output.dtype
        arr = output
    else:
        try:
            dt = np.dtype(output)
        except TypeError:
            raise InputError(primitive, f"output must be a dtype or a numpy array, got {output!r}") from None
        arr = None
    if dt.kind not in "iuf" or dt.itemsize > 8:
        raise InputError(primitive, f"output dtype {dt} is not supported (an integer or float dtype)")
    return dt, arr


def cast_result(y: np.ndarray, dt: np.dtype, arr: np.ndarray | None) -> np.ndarray:
    """The float32 result ``y`` in dtype ``dt`` as scipy.ndimage casts (integers: truncated
    toward zero), written into ``arr`` when given."""
    if dt.kind in "iub" and y.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            y = np.trunc(y)
    if arr is not None:
        with np.errstate(invalid="ignore"):
            arr[...] = y
        return arr
    if y.dtype == dt:
        return y
    with np.errstate(invalid="ignore"):
        return y.astype(dt)


def float_image(img, primitive: str):
    """``(float32 host array or GpuArray, host input or None)``: numpy input of any real dtype
    (and lists) as float32; a float32 GpuArray as is (other GpuArray dtypes are refused)."""
    if isinstance(img, GpuArray):
        if img.dtype != np.float32:
            raise InputError(primitive, f"a GpuArray image must be float32, got {img.dtype}")
        if img.ndim not in (2, 3):
            raise InputError(primitive, f"expected an array of 2 or 3 dimensions, got shape {img.shape}")
        return img, None
    try:
        host = np.asarray(img)
    except (TypeError, ValueError) as exc:
        raise InputError(primitive, f"cannot read the image as an array: {exc}") from None
    if host.dtype.kind not in "biuf":
        raise InputError(primitive, f"dtype {host.dtype} is not supported (a real numeric image)")
    if host.ndim not in (2, 3):
        raise InputError(primitive, f"expected an array of 2 or 3 dimensions, got shape {host.shape}")
    return np.ascontiguousarray(host, dtype=np.float32), host


def check_nan_policy(policy, primitive: str, allowed=NAN_POLICIES) -> str:
    if not isinstance(policy, str) or policy not in allowed:
        raise InputError(primitive, f"nan_policy must be one of {', '.join(allowed)}, got {policy!r}")
    return policy


def bound(a: GpuArray) -> Binding:
    """The bytes of ``a`` (whole 16-byte words, within its buffer) as a binding: a view of a band
    of rows binds that band, not the rest of its buffer."""
    return Binding(a.buffer, a.byte_offset, min(a.buffer.size - a.byte_offset, -(-a.nbytes // 16) * 16))


def band_rows(dev, row_bytes: int, halo: int, primitive: str, what: str = "") -> int:
    """Rows of output per band when an image of rows of ``row_bytes`` bytes is cut into bands of
    rows that each fit one storage binding with ``halo`` more rows (both sides together) read
    around them; DeviceLimitError when not even one row fits."""
    limit = min(dev.binding_limit, dev.max_binding // 16 * 16)  # blocks round their size up to 16 bytes
    per = limit // max(row_bytes, 1) - halo
    if per < 1:
        raise DeviceLimitError(primitive, f"a band of one row of {row_bytes} bytes with {halo} rows of overlap "
                               f"{what}needs more than the device's largest storage binding ({dev.binding_limit} "
                               "bytes)")
    return per


def copy_rows(b, src: GpuArray, row_bytes: int, r0: int, r1: int, dst: GpuArray, dst_row: int = 0) -> None:
    """Record the copy of rows ``r0:r1`` of ``src`` (rows of ``row_bytes`` bytes) into ``dst`` from
    its row ``dst_row``. Offsets must be multiples of 4 bytes; the size is rounded up to whole
    words within both buffers (the bytes past the rows are never read as data)."""
    so = src.byte_offset + r0 * row_bytes
    do = dst.byte_offset + dst_row * row_bytes
    n = (r1 - r0) * row_bytes
    if n <= 0:
        return
    assert so % 4 == 0 and do % 4 == 0, (so, do)
    n = min(-(-n // 4) * 4, src.buffer.size - so, dst.buffer.size - do)
    b.copy(src.buffer, so, dst.buffer, do, n)


def word_rows(row_bytes: int) -> int:
    """The smallest number of rows of ``row_bytes`` bytes that is a whole number of 4-byte words
    (band starts at multiples of it keep copy offsets aligned)."""
    return 4 // math.gcd(row_bytes, 4)
