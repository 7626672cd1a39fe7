"""Summed-area tables and box filters (Nehab, Maximo, Lima and Hoppe 2011, overlapped SAT).

The overlapped algorithm (stages S.1 to S.4 of the paper; kernels in ``wgsl/sat/sat_*.wgsl``) reads
the image twice and writes the table once; the other traffic (per-tile column sums, row prefixes
and tile totals) is 1/32 of the image. ``method="rt"`` is the readable baseline: one thread per
row, then one per column.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtypes as _dt
from . import _ndimage as _nd
from ._array import GpuArray, as_input, asarray, submit_to_host
from ._device import device, takes_device
from ._errors import DeviceLimitError, InputError
from ._typed import record_narrow

_STAGES = ("RT_ROWS", "RT_COLS", "TILE_SUMS", "SCAN_COLS", "SCAN_ROWS", "TILE_FINAL")  # wgsl/sat/sat_<stage>.wgsl
_RT_MAX = 60_000  # lavapipe cuts an invocation's loops at 65,535 trips
_MAX_RADIUS = 1 << 27  # box_filter: image sides (< 2^21) plus the radius fit an i32


_BOX_ACC = {_dt.U8: _dt.U32, _dt.U32: _dt.U32, _dt.I32: _dt.I32, _dt.F32: _dt.F32}  # box_filter's tables
_T32 = {_dt.U32: "u32", _dt.I32: "i32", _dt.F32: "f32"}


def _image_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    h, w = shape[0], shape[1]
    c = shape[2] if len(shape) == 3 else 1
    return h, w, c


def _tile(acc: np.dtype, vec4: bool = False) -> int:
    """The overlapped method's tile side: 64 for 4-byte sums and the vec4 tiles, 32 for 8-byte
    sums in the scalar tiles (a tile of them then fits 16 KiB of workgroup memory)."""
    return 64 if acc.itemsize == 4 or vec4 else 32


def _vec4(dev, acc: np.dtype, C: int, W: int) -> bool:
    """Whether the tile stages move vec4s: one channel, rows a multiple of 4 long, sums of a WGSL
    type (not word pairs)."""
    return C == 1 and W % 4 == 0 and (acc.itemsize == 4 or acc.kind == "f" or _dt.native_int64(dev))


def _defines(dev, in_dtype: np.dtype, acc: np.dtype, primitive: str, vec4: bool = False) -> dict:
    """The defines every SAT stage takes: the typed load and monoid (``wgsl/common/typed_*.wgsl``)
    for ``in_dtype`` summed in ``acc``, its WGSL type T, and the tile constants."""
    d = _dt.typed_defines("add", in_dtype, acc, _dt.native_int64(dev), primitive)
    ts = _tile(acc, vec4)
    d.update(T=d["ACC"], TS=ts, RPT=ts * ts // 256, NG=256 // ts, TILE=ts * (ts + 1))
    return d


@takes_device
def summed_area_table(img: np.ndarray | GpuArray, method: str = "overlapped", *,
                      dtype: np.dtype | type | str | None = None) -> np.ndarray | GpuArray:
    """Summed-area table (integral image) of a 2-D image, per channel for ``H x W x C``.

    ``out[y, x] = img[:y+1, :x+1].sum()``: ``np.cumsum(np.cumsum(img, axis=0), axis=1)`` (and
    ``skimage.transform.integral_image``, per channel), with numpy's result dtype.

    Parameters
    ----------
    img : numpy array, list or GpuArray, ``(H, W)`` or ``(H, W, C)``
        bool, 8- to 64-bit integers, float16, float32 or float64. 8- and 16-bit inputs are read
        packed and widened on the GPU.
    method : {"overlapped", "rt"}
        ``"overlapped"``: the four-stage overlapped algorithm over square tiles (64 x 64; 32 x 32
        for 64-bit sums of several channels, of rows not a multiple of 4 long, or as word pairs;
        image read twice, written once). ``"rt"``: one thread per row then per column (a
        readable baseline; rows and columns up to 60,000 long).
    dtype : dtype, optional
        The table's dtype, as ``np.cumsum``'s ``dtype``. Default numpy's: int64 for bool and
        signed integers (uint64 for unsigned ones) narrower than 64 bits, else the input's dtype.
        ``dtype=np.uint32`` / ``np.int32`` / ``np.float32`` are the 32-bit fast paths.

    Returns
    -------
    numpy array for numpy input, GpuArray for GpuArray input, of the table's dtype.

    Raises
    ------
    InputError
        float64 (input or dtype) on an adapter without ``shader-f64`` (the message names the
        adapter; pass ``dtype=np.float32``), or an input a GpuArray table cannot be read from
        (convert it first).

    Notes
    -----
    Integer tables are exact modulo ``2**bits`` of their dtype (wrapping as numpy's); 64-bit ones
    are summed as WGSL's u64 / i64 where the adapter has ``shader-int64``, else as pairs of 32-bit
    words with carries. Float tables round each sum, so the error grows with the table's values
    (about ``eps * |out|`` times a small factor). A float16 table is summed in float32 and rounded
    once per element. Inputs a kernel does not convert itself (float to integer, 64-bit integers
    to floats, float64 without ``shader-f64`` to float32) are cast on the host first, as numpy
    casts them.

    A table past the device's largest storage binding is computed by bands of rows, each band's
    table alone and then the column carry (the last row of the table above it) added: integer
    tables are the unchunked ones bit for bit, float ones equal them to rounding. A row must
    fit one binding.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.summed_area_table(np.ones((2, 3), np.uint8))
    array([[1, 2, 3],
           [2, 4, 6]], dtype=uint64)
    >>> pp.summed_area_table(np.ones((2, 3), np.uint8), dtype=np.uint32)
    array([[1, 2, 3],
           [2, 4, 6]], dtype=uint32)
    """
    primitive = "summed_area_table"
    x = img if isinstance(img, GpuArray) else _dt.host_array(img, primitive)
    odt = _dt.result_dtype("add", x.dtype, dtype, None, primitive)
    acc = _dt.acc_dtype(odt)
    if odt == _dt.B:  # np.cumsum(..., dtype=bool): any element so far
        if isinstance(x, GpuArray):
            raise InputError(primitive, "dtype=bool is computed on the host: pass a numpy array")
        return summed_area_table(x != 0, method, dtype=_dt.U32) != 0
    dev = x.device if isinstance(x, GpuArray) else device()
    _dt.check_f64(dev, primitive, acc)
    native = _dt.native_int64(dev)
    if (x.dtype == _dt.F64 and acc != _dt.F64 and not _dt.has_feature(dev, "shader-f64")) or \
            not _dt.can_read(x.dtype, acc, native):
        if isinstance(x, GpuArray):
            _dt.check_f64(dev, primitive, x.dtype)
            raise InputError(primitive, f"a GpuArray of {x.dtype} cannot be summed as {acc} on the GPU: "
                             "convert it first (or pass a numpy array, cast on the host)")
        x = x.astype(acc)  # numpy's cast of each element, as np.cumsum(x, dtype=...) makes
    g, host = as_input(x, primitive, _dt.ALL_DTYPES, ndims=(2, 3))
    b = g.device.batch()
    out = _record_sat(b, g, method, acc=acc)
    if odt != acc:  # 8- and 16-bit tables: summed in 32 bits, then packed
        narrow = GpuArray.empty(out.shape, odt, dev)
        record_narrow(b, out, narrow)
        out = narrow
    if host is not None:
        return submit_to_host(b, out)
    b.submit()
    return out


def _sat_gpu(g: GpuArray, method: str = "overlapped", dtype=None) -> GpuArray:
    """The table of GpuArray ``g`` in ``dtype`` (a 32- or 64-bit accumulator; default numpy's)."""
    acc = _dt.acc_dtype(_dt.result_dtype("add", g.dtype, dtype, None, "summed_area_table"))
    b = g.device.batch()
    out = _record_sat(b, g, method, acc=acc)
    b.submit()
    return out


def _record_sat(b, g: GpuArray, method: str = "overlapped", primitive: str = "summed_area_table", *,
                acc: np.dtype, dst: GpuArray | None = None, carry: tuple | None = None) -> GpuArray:
    """Record the summed-area table of ``g`` summed in ``acc`` (a 32- or 64-bit dtype) into batch
    ``b``; returns the table (``dst``, or a new array). ``carry`` = (cin, cout): ``g`` is a band of
    rows of a larger image, cin the column totals above it, cout where its own go
    (:func:`_record_sat_bands`)."""
    dev = g.device
    if not isinstance(method, str) or method not in ("overlapped", "rt"):
        raise InputError("summed_area_table", f"method must be 'overlapped' or 'rt', got {method!r}")
    acc = np.dtype(acc)
    _dt.check_f64(dev, primitive, acc)
    _dt.check_f64(dev, primitive, g.dtype)
    if carry is None and max(acc.itemsize, g.dtype.itemsize) * g.size > dev.binding_limit:
        return _record_sat_bands(b, g, method, primitive, acc)  # the table and the image are bound whole
    out = GpuArray._new(g.shape, acc, dev) if dst is None else dst
    if g.size == 0:
        return out
    native = _dt.native_int64(dev)
    steps, scratch_bytes = dev.plan(("sat", g.shape, g.dtype, acc, native, method, carry is not None),
                                    lambda: _sat_plan(dev, g, method, acc, primitive, carry is not None))
    scratch = [b.scratch(n) for n in scratch_bytes]  # the same buffers call after call
    binds = {"input": _nd.bound(g), "dst": _nd.bound(out), "colsum": scratch[0] if scratch else None,
             "rowpref": scratch[1] if scratch else None, "blocktot": scratch[2] if scratch else None,
             "cin": carry[0] if carry else None, "cout": carry[1] if carry else None}
    for k, groups, packed, names in steps:
        b.dispatch(k, groups, packed, **{n: binds[n] for n in names})
    return out


def _record_sat_bands(b, g: GpuArray, method: str, primitive: str, acc: np.dtype) -> GpuArray:
    """The summed-area table of an image past one storage binding, by bands of rows (row prefixes
    are local to a row). The overlapped method starts each band's column scan (stage S.2) from the
    column totals of the rows above it and hands its own on (``CARRY`` in
    ``wgsl/sat/sat_scan_cols.wgsl``): the image is still read twice and the table written once,
    bands bound in place where their offsets keep the storage alignment (else copied). The RT
    baseline adds the last row of the table above to each row of the band's table
    (``wgsl/sat/sat_band_carry.wgsl``). Integer tables equal the unchunked ones bit for bit (sums
    modulo 2**bits); float ones equal them to rounding."""
    dev = g.device
    H, W, C = _image_shape(g.shape)
    row_in, row_out = g.dtype.itemsize * W * C, acc.itemsize * W * C
    align = dev.storage_align
    view_step = math.lcm(align // math.gcd(row_in, align), align // math.gcd(row_out, align))
    per = _nd.band_rows(dev, max(row_in, row_out), 0, primitive)
    views = method == "overlapped" and g.byte_offset % align == 0 and per >= view_step
    step = view_step if views else _nd.word_rows(row_in)  # 8- and 16-bit bands start on whole words
    per = per // step * step
    if per < 1:
        raise DeviceLimitError(primitive, f"{step} rows of {max(row_in, row_out)} bytes need more than the "
                               f"device's largest storage binding ({dev.binding_limit} bytes)")
    out = GpuArray.empty(g.shape, acc, dev)
    if method == "overlapped":
        carries = [GpuArray.empty((C * (W + -(-W // _tile(acc))),), acc, dev) for _ in range(2)]  # the most tiles
        b.clear(carries[0])
    else:
        row = GpuArray.empty((W * C,), acc, dev)
        kern = dev.kernel("sat/sat_band_carry.wgsl", defines=_defines(dev, acc, acc, primitive))
    for i, y0 in enumerate(range(0, H, per)):
        y1 = min(H, y0 + per)
        shape = (y1 - y0, W, C)
        if views:
            band = GpuArray(dev, g.buffer, shape, g.dtype, g.byte_offset + y0 * row_in)
            dst = GpuArray(dev, out.buffer, shape, acc, y0 * row_out)
        else:
            band, dst = GpuArray.empty(shape, g.dtype, dev), None
            _nd.copy_rows(b, g, row_in, y0, y1, band)
        if method == "overlapped":
            s = _record_sat(b, band, method, primitive, acc=acc, dst=dst,
                            carry=(carries[i % 2], carries[1 - i % 2]))
        else:
            s = _record_sat(b, band, method, primitive, acc=acc)
            n = (y1 - y0) * W * C
            if y0:
                b.dispatch(kern, -(-n // 256), params={"n": n, "rowlen": W * C}, carry=row, dst=s)
            if y1 < H:
                _nd.copy_rows(b, s, row_out, y1 - y0 - 1, y1 - y0, row)
        if dst is None:
            _nd.copy_rows(b, s, row_out, 0, y1 - y0, out, y0)
    return out


def _sat_plan(dev, g: GpuArray, method: str, acc: np.dtype, primitive: str, carry: bool = False):
    """The dispatches of a summed-area table of this shape: (kernel, grid, packed params, bindings)."""
    H, W, C = _image_shape(g.shape)
    vec4 = _vec4(dev, acc, C, W)
    base = {**_defines(dev, g.dtype, acc, primitive, vec4), "SAME": g.dtype == acc}
    ts = base["TS"]

    def step(defines, groups, p, *names):
        stage = next(n for n in _STAGES if defines.get(n))
        k = dev.kernel(f"sat/sat_{stage.lower()}.wgsl", defines={**base, **defines})
        return k, groups, k.pack_params(p), names

    if method == "rt":
        if max(H, W) > _RT_MAX:
            raise InputError("summed_area_table", f"method='rt' handles rows and columns up to {_RT_MAX}; "
                             f"got {H} x {W} (use method='overlapped')")
        p = {"H": H, "W": W, "C": C, "nbx": 0, "nby": 0}
        return [step({"RT_ROWS": True}, (-(-H // 64), C), p, "input", "dst"),
                step({"RT_COLS": True}, (-(-W // 64), C), p, "dst")], ()
    nbx, nby = -(-W // ts), -(-H // ts)
    if max(nbx, nby) > 65535:
        raise InputError("summed_area_table", f"image {H} x {W}: sides up to {ts * 65535} are supported "
                         f"for {acc} tables")
    p = {"H": H, "W": W, "C": C, "nbx": nbx, "nby": nby}
    return [step({"TILE_SUMS": True, "VEC4": vec4}, (nbx, nby, C), p, "input", "colsum", "rowpref", "blocktot"),
            step({"SCAN_COLS": True, "CARRY": carry}, (-(-(W + nbx) // 32), C), p, "colsum", "blocktot",
                 *(("cin", "cout") if carry else ())),
            step({"SCAN_ROWS": True}, (-(-H // 32), C), p, "rowpref", "blocktot"),
            step({"TILE_FINAL": True, "VEC4": vec4}, (nbx, nby, C), p, "input", "colsum", "rowpref", "dst")], \
        tuple(acc.itemsize * n for n in (C * nby * W, C * nbx * H, C * nbx * nby))


_NP_PAD = {"nearest": "edge", "reflect": "symmetric", "mirror": "reflect", "wrap": "wrap"}
_PAD_MAX = 1 << 28  # box_filter: most elements of an image padded on the host for scipy's modes
_EXACT = 1 << 23  # window sums below this survive float32 division and back exactly


def _record_box(b, g: GpuArray, radius: int, clip: bool, shape=None) -> GpuArray:
    """Record the box filter (constant mode, zero outside, or ``clip``) of ``g`` seen as
    ``shape`` = (H, W, C); returns the new float32 result."""
    dev = g.device
    H, W, C = shape or _image_shape(g.shape)
    if g.dtype not in _BOX_ACC:
        raise InputError("box_filter", f"a GpuArray image of {g.dtype} is not supported (uint8, uint32, int32 or "
                         "float32; pass a numpy array or convert it)")
    if 4 * H * W * C > dev.binding_limit:
        return _record_box_bands(b, g, radius, clip, (H, W, C))
    out = GpuArray.empty(g.shape, np.float32, dev)
    if g.size:
        s = _record_sat(b, g.reshape(H, W, C) if shape else g, primitive="box_filter", acc=_BOX_ACC[g.dtype])
        _dispatch_box(b, s, out, (H, W, C), radius, clip, 0, H)
    return out


def _dispatch_box(b, s: GpuArray, dst: GpuArray, shape: tuple, radius: int, clip: bool, y_lo: int, y_n: int) -> None:
    """Record the box kernel over table ``s`` of an image of ``shape``, rows ``y_lo`` to
    ``y_lo + y_n`` written to ``dst`` from its start."""
    H, W, C = shape
    # "clip" sees the same window once it covers the image; "constant" divides by the full
    # window's area, so it keeps the radius (at most _MAX_RADIUS: y + r stays within i32)
    r = int(min(radius, max(H, W))) if clip else int(radius)
    b.dispatch(s.device.kernel("sat/box.wgsl", defines={"T": _T32[s.dtype]}), -(-(y_n * W * C) // 256),
               params={"H": H, "W": W, "C": C, "radius": r, "normalize": int(clip), "y_lo": y_lo, "y_n": y_n},
               sat=_nd.bound(s), dst=_nd.bound(dst))


def _record_box_bands(b, g: GpuArray, radius: int, clip: bool, shape: tuple) -> GpuArray:
    """The box filter of an image past one storage binding, by bands of rows: each band's table
    made from its rows and ``radius`` rows of the image on either side (the window's whole reach;
    none past the image's edges, so the constant and clip boundaries are the image's own), its
    own rows written. Bands are bound in place where offsets keep the storage alignment (else
    copied). Integer images give the unchunked result bit for bit (exact window sums, the same
    division); float32 ones within rounding (each band's table is smaller, so it rounds less)."""
    dev = g.device
    H, W, C = shape
    row_in, row_out = g.dtype.itemsize * W * C, 4 * W * C
    align = dev.storage_align
    h = min(radius, H)
    view_step = math.lcm(align // math.gcd(row_in, align), align // math.gcd(row_out, align))
    fit = _nd.band_rows(dev, row_out, 0, "box_filter")
    views = g.byte_offset % align == 0 and fit - 2 * h - view_step + 1 >= view_step
    step = view_step if views else _nd.word_rows(row_in)  # band starts on whole words (uint8)
    per = _nd.band_rows(dev, row_out, 2 * h + step - 1, "box_filter", f"(the window's reach, radius {radius}) ")
    per = per // step * step if views else per
    out = GpuArray.empty(g.shape, np.float32, dev)
    for y0 in range(0, H, per):
        y1 = min(H, y0 + per)
        a, e = max(0, y0 - h) // step * step, min(H, y1 + h)
        if views:
            band = GpuArray(dev, g.buffer, (e - a, W, C), g.dtype, g.byte_offset + a * row_in)
            dst = GpuArray(dev, out.buffer, (y1 - y0, W, C), np.float32, y0 * row_out)
        else:
            band = GpuArray.empty((e - a, W, C), g.dtype, dev)
            _nd.copy_rows(b, g, row_in, a, e, band)
            dst = GpuArray.empty((y1 - y0, W, C), np.float32, dev)
        s = _record_sat(b, band, primitive="box_filter", acc=_BOX_ACC[g.dtype])
        _dispatch_box(b, s, dst, (e - a, W, C), radius, clip, y0 - a, y1 - y0)
        if not views:
            _nd.copy_rows(b, dst, row_out, 0, y1 - y0, out, y0)
    return out


def _pad(x: np.ndarray, r: int, mode: str, cval: float, axes=(0, 1)) -> np.ndarray:
    """``x`` extended by ``r`` along ``axes`` as scipy.ndimage's ``mode`` extends it."""
    grow = [r if ax in axes else 0 for ax in range(x.ndim)]
    n = int(np.prod([s + 2 * p for s, p in zip(x.shape, grow, strict=True)], dtype=np.float64))
    if n > _PAD_MAX:
        raise InputError("box_filter", f"radius {r} with mode {mode!r} would extend the image to {n} elements "
                         f"(at most {_PAD_MAX}); use a smaller radius or mode='constant'")
    width = [(p, p) for p in grow]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=cval)
    for ax in axes:  # one axis at a time: the mirror of one sample is itself (numpy refuses it)
        pm = "edge" if mode == "mirror" and x.shape[ax] == 1 else _NP_PAD[mode]
        x = np.pad(x, [width[i] if i == ax else (0, 0) for i in range(x.ndim)], mode=pm)
    return x


def _box_host(x: np.ndarray, radius: int, mode: str, cval: float) -> np.ndarray:
    """float32 box filter of a float32 host image in any scipy mode (the image extended on the
    host, then the GPU's constant-mode box on the extended image, cropped)."""
    r = radius
    if mode == "constant" and cval == 0.0:
        xp, crop = x, (slice(None), slice(None))
    else:
        xp = _pad(x, r, mode, cval)
        crop = (slice(r, r + x.shape[0]), slice(r, r + x.shape[1]))
    g = asarray(xp)
    b = g.device.batch()
    return submit_to_host(b, _record_box(b, g, r, False))[crop]


def _box_int(x: np.ndarray, radius: int, mode: str, cval: float, dt: np.dtype) -> np.ndarray | None:
    """scipy.ndimage.uniform_filter's integer result: a 1-D mean down the columns, truncated
    toward zero and cast to ``dt`` (wrapping as scipy's casts), then along the rows, again.
    Window sums are exact: int32 summed-area tables, the float32 quotient turned back into the
    sum. None where that is not exact (values past int32, or window sums of 2^23 or more): the
    caller then uses the float path."""
    d = 2 * radius + 1
    big = max(abs(int(x.max())), abs(int(x.min())), abs(int(cval)))
    if big >= 2**31 or big * d >= _EXACT:
        return None
    cur = x.astype(np.int64)
    for axis in (0, 1):
        a = np.moveaxis(cur, axis, 0)  # the filtered axis first; the rest are channels
        shape = a.shape
        a = a.reshape(shape[0], -1).astype(np.int64)  # so that np.pad keeps a negative cval
        if mode == "constant" and cval == 0.0:
            ap, lo = a, 0
        else:
            ap, lo = _pad(a, radius, mode, cval, axes=(0,)), radius
        g = asarray(np.ascontiguousarray(ap, dtype=np.int32))
        b = g.device.batch()
        v = submit_to_host(b, _record_box(b, g, radius, False, shape=(ap.shape[0], 1, ap.shape[1])))
        sums = np.rint(v[lo:lo + shape[0]].astype(np.float64) * d * d).astype(np.int64)
        q = np.abs(sums) // d * np.sign(sums)
        cur = np.moveaxis(q.reshape(shape).astype(dt), 0, axis)
        if axis == 0:
            big = max(abs(int(cur.max())), abs(int(cur.min())), abs(int(cval)))
            if big >= 2**31 or big * d >= _EXACT:
                return None
    return cur


@takes_device
def box_filter(img: np.ndarray | GpuArray, radius: int, mode: str = "reflect", *, cval: float = 0.0,
               output=None) -> np.ndarray | GpuArray:
    """Mean over a ``(2 radius + 1)``-square window, from the summed-area table.

    ``scipy.ndimage.uniform_filter(img, 2 radius + 1, mode=mode, cval=cval, axes=(0, 1))`` for
    scipy's modes.

    Parameters
    ----------
    img : numpy array (any real dtype) or GpuArray (uint8, uint32, int32 or float32),
        ``(H, W)`` or ``(H, W, C)`` (per channel)
    radius : int
        Window half-width, ``0 <= radius <= 2**27``.
    mode : str
        Boundary handling (default ``"reflect"``, scipy's default; it was ``"constant"`` before
        2026-11): scipy.ndimage's modes (``"constant"``, ``"nearest"``, ``"reflect"``,
        ``"mirror"``, ``"wrap"`` and the ``grid-`` aliases) with scipy's meaning, every sum
        divided by ``(2 radius + 1)**2``; or ``"clip"``: the window is cut at the image border and
        the sum divided by the number of pixels inside it (a normalised box; no scipy
        counterpart). Modes other than constant (and a non-zero ``cval``) extend the image by
        ``radius`` on the host first, so they cost a host round trip for a GpuArray and are
        refused (InputError) where the extended image would pass 2**28 elements.
    cval : float
        The value outside the image in constant mode.
    output : dtype or numpy array, optional
        As scipy.ndimage: default the input's dtype for numpy input (``"clip"``: float32). An
        integer result is scipy's exactly (a mean along each axis in turn, truncated toward
        zero after each) while window sums along one axis stay below 2**23 in magnitude (uint8:
        radius up to 16,000); past that, the float32 mean truncated. That integer result takes
        two passes with host work between them; ``output=np.float32`` is the one-pass GPU path
        (and, for constant mode, exact window sums of integer images). float64 input needs
        ``output=np.float32`` (the GPU computes in float32). GpuArray input gives a float32
        GpuArray.

    Returns
    -------
    numpy array of the input's shape (numpy input), float32 GpuArray (GpuArray input).

    Notes
    -----
    Integer images give exact window sums (the table wraps modulo 2**32, and so does the
    four-corner difference, which is exact while a window's true sum fits 32 bits); only the final
    division rounds. For float32 images each window sum is a difference of table entries, so its
    absolute error is about ``eps * max|table|`` (``eps = 2**-24``), large for big images with a
    large mean: subtract the mean first where that matters.

    An image past the device's largest storage binding is filtered by bands of rows, each read
    with ``radius`` rows around it (the window's reach): integer images give the unchunked
    result bit for bit, float32 ones within the rounding above (each band's smaller table rounds
    less). DeviceLimitError when ``2 radius + 1`` rows do not fit one binding.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.box_filter(np.full((3, 3), 9, np.float32), 1, mode="constant")
    array([[4., 6., 4.],
           [6., 9., 6.],
           [4., 6., 4.]], dtype=float32)
    >>> pp.box_filter(np.full((3, 3), 9, np.uint8), 1, mode="nearest")
    array([[9, 9, 9],
           [9, 9, 9],
           [9, 9, 9]], dtype=uint8)
    """
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or radius < 0:
        raise InputError("box_filter", f"radius must be an integer >= 0, got {radius!r}")
    if radius > _MAX_RADIUS:
        raise InputError("box_filter", f"radius {radius} is too large (at most {_MAX_RADIUS})")
    radius = int(radius)
    clip = isinstance(mode, str) and mode == "clip"
    if not clip:
        mode = _nd.filter_mode(mode, "box_filter", {**_nd.FILTER_MODES, "clip": "clip"})
    cval = _nd.real_scalar(cval, "cval", "box_filter", f32=True)
    if isinstance(img, GpuArray):
        g, _ = as_input(img, "box_filter", ndims=(2, 3))
        if output is not None and (isinstance(output, np.ndarray) or np.dtype(output) != np.float32):
            raise InputError("box_filter", "a GpuArray image gives a float32 GpuArray: output must be None or float32")
        if clip or (mode == "constant" and cval == 0.0):
            b = g.device.batch()
            out = _record_box(b, g, radius, clip)
            b.submit()
            return out
        return asarray(box_filter(g.numpy(), radius, mode, cval=cval, output=np.float32))
    x, host = _nd.float_image(img, "box_filter")
    if host.dtype == np.float64 and output is None:
        raise InputError("box_filter", "float64 images are filtered in float32 on the GPU: pass "
                         "output=np.float32 (or a float32 image) to accept that")
    dt, arr = _nd.output_dtype(output, host.dtype, host.shape, "box_filter", np.float32 if clip else None)
    if x.size == 0:
        return _nd.cast_result(x.copy(), dt, arr)
    if clip:
        g, _ = as_input(host if host.dtype in (np.uint8, np.uint32, np.int32, np.float32) else x, "box_filter",
                        ndims=(2, 3))
        b = g.device.batch()
        return _nd.cast_result(submit_to_host(b, _record_box(b, g, radius, True)), dt, arr)
    if host.dtype.kind in "biu" and dt.kind in "biu" and float(cval).is_integer():
        q = _box_int(host, radius, mode, cval, dt)
        if q is not None:
            if arr is not None:
                arr[...] = q
                return arr
            return q
    if mode == "constant" and cval == 0.0 and host.dtype in (np.uint8, np.uint32, np.int32):
        g, _ = as_input(host, "box_filter", ndims=(2, 3))  # exact integer window sums
        b = g.device.batch()
        return _nd.cast_result(submit_to_host(b, _record_box(b, g, radius, False)), dt, arr)
    return _nd.cast_result(_box_host(x, radius, mode, cval), dt, arr)
