"""Summed-area tables and box filters (Nehab, Maximo, Lima and Hoppe 2011, overlapped SAT).

The overlapped algorithm (stages S.1 to S.4 of the paper; kernels in ``wgsl/sat/sat_*.wgsl``) reads
the image twice and writes the table once; the other traffic (per-tile column sums, row prefixes
and tile totals) is 1/32 of the image. ``method="rt"`` is the readable baseline: one thread per
row, then one per column.
"""

from __future__ import annotations

import numpy as np

from ._array import GpuArray, as_input, submit_to_host
from ._errors import InputError

_TS = 64  # tile side (wgsl/sat/sat_common.wgsl)
_STAGES = ("RT_ROWS", "RT_COLS", "TILE_SUMS", "SCAN_COLS", "SCAN_ROWS", "TILE_FINAL")  # wgsl/sat/sat_<stage>.wgsl
_RT_MAX = 60_000  # lavapipe cuts an invocation's loops at 65,535 trips


def _types(dtype: np.dtype) -> tuple[str, str, bool, np.dtype]:
    """(T, SRC_T, U8, output dtype) for an input dtype."""
    if dtype == np.uint8:
        return "u32", "u32", True, np.dtype(np.uint32)
    if dtype == np.uint32:
        return "u32", "u32", False, np.dtype(np.uint32)
    if dtype == np.int32:
        return "i32", "i32", False, np.dtype(np.int32)
    return "f32", "f32", False, np.dtype(np.float32)


def _image_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    h, w = shape[0], shape[1]
    c = shape[2] if len(shape) == 3 else 1
    return h, w, c


def summed_area_table(img: np.ndarray | GpuArray, method: str = "overlapped") -> np.ndarray | GpuArray:
    """Summed-area table (integral image) of a 2-D image, per channel for ``H x W x C``.

    ``out[y, x] = img[:y+1, :x+1].sum()``: the shape and values of
    ``skimage.transform.integral_image`` (per channel), in 32-bit types that wrap like numpy's
    ``cumsum(dtype=...)``.

    Parameters
    ----------
    img : numpy array or GpuArray, ``(H, W)`` or ``(H, W, C)``
        uint8 or uint32 (result uint32, exact modulo 2**32), int32 (result int32, wrapping), or
        float32 (result float32; each sum is rounded, so the error grows with the table's values:
        about ``eps * |out|`` times a small factor).
    method : {"overlapped", "rt"}
        ``"overlapped"``: the four-stage overlapped algorithm over 64 x 64 tiles (image read
        twice, written once). ``"rt"``: one thread per row then per column (a readable baseline;
        rows and columns up to 60,000 long).

    Returns
    -------
    numpy array for numpy input, GpuArray for GpuArray input.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.summed_area_table(np.ones((2, 3), np.uint8))
    array([[1, 2, 3],
           [2, 4, 6]], dtype=uint32)
    """
    g, host = as_input(img, "summed_area_table", ndims=(2, 3))
    b = g.device.batch()
    out = _record_sat(b, g, method)
    if host is not None:
        return submit_to_host(b, out)
    b.submit()
    return out


def _sat_gpu(g: GpuArray, method: str = "overlapped") -> GpuArray:
    b = g.device.batch()
    out = _record_sat(b, g, method)
    b.submit()
    return out


def _record_sat(b, g: GpuArray, method: str = "overlapped") -> GpuArray:
    """Record the summed-area table of ``g`` into batch ``b``; returns the (new) table."""
    dev = g.device
    if method not in ("overlapped", "rt"):
        raise InputError("summed_area_table", f"method must be 'overlapped' or 'rt', got {method!r}")
    odt = _types(g.dtype)[3]
    out = GpuArray.empty(g.shape, odt, dev)
    if g.size == 0:
        return out
    steps, scratch_bytes = dev.plan(("sat", g.shape, g.dtype, method), lambda: _sat_plan(dev, g, method))
    scratch = [dev.alloc(n) for n in scratch_bytes]
    for k, groups, packed, names in steps:
        binds = {"src": g, "dst": out, "colsum": scratch[0] if scratch else None,
                 "rowpref": scratch[1] if scratch else None, "blocktot": scratch[2] if scratch else None}
        b.dispatch(k, groups, packed, **{n: binds[n] for n in names})
    return out


def _sat_plan(dev, g: GpuArray, method: str):
    """The dispatches of a summed-area table of this shape: (kernel, grid, packed params, bindings)."""
    H, W, C = _image_shape(g.shape)
    T, SRC_T, U8, _ = _types(g.dtype)
    base = {"T": T, "SRC_T": SRC_T, "U8": U8}

    def step(defines, groups, p, *names):
        stage = next(n for n in _STAGES if defines.get(n))
        k = dev.kernel(f"sat/sat_{stage.lower()}.wgsl", defines={**base, **defines})
        return k, groups, k.pack_params(p), names

    if method == "rt":
        if max(H, W) > _RT_MAX:
            raise InputError("summed_area_table", f"method='rt' handles rows and columns up to {_RT_MAX}; "
                             f"got {H} x {W} (use method='overlapped')")
        p = {"H": H, "W": W, "C": C, "nbx": 0, "nby": 0}
        return [step({"RT_ROWS": True}, (-(-H // 64), C), p, "src", "dst"),
                step({"RT_COLS": True}, (-(-W // 64), C), p, "dst")], ()
    nbx, nby = -(-W // _TS), -(-H // _TS)
    if max(H, W) > 32 * 65535:
        raise InputError("summed_area_table", f"image {H} x {W}: sides up to {32 * 65535} are supported")
    p = {"H": H, "W": W, "C": C, "nbx": nbx, "nby": nby}
    # One channel of 32-bit words with rows a multiple of 4 long: the tile kernels move vec4s.
    vec4 = C == 1 and not U8 and W % 4 == 0
    return [step({"TILE_SUMS": True, "VEC4": vec4}, (nbx, nby, C), p, "src", "colsum", "rowpref", "blocktot"),
            step({"SCAN_COLS": True}, (-(-(W + nbx) // 32), C), p, "colsum", "blocktot"),
            step({"SCAN_ROWS": True}, (-(-H // 32), C), p, "rowpref", "blocktot"),
            step({"TILE_FINAL": True, "VEC4": vec4}, (nbx, nby, C), p, "src", "colsum", "rowpref", "dst")], \
        (4 * C * nby * W, 4 * C * nbx * H, 4 * C * nbx * nby)


def box_filter(img: np.ndarray | GpuArray, radius: int, mode: str = "constant") -> np.ndarray | GpuArray:
    """Mean over a ``(2 radius + 1)``-square window, from the summed-area table.

    Parameters
    ----------
    img : numpy array or GpuArray, ``(H, W)`` or ``(H, W, C)`` (per channel)
        uint8, uint32, int32 or float32.
    radius : int
        Window half-width, ``>= 0``.
    mode : {"constant", "clip"}
        Boundary handling. ``"constant"``: pixels outside the image count as zero and every sum
        is divided by ``(2 radius + 1)**2``, as ``scipy.ndimage.uniform_filter(img, 2 radius + 1,
        mode="constant", cval=0)``. ``"clip"``: the window is cut at the image border and the sum
        divided by the number of pixels inside it (a normalised box).

    Returns
    -------
    float32 array of the input's shape (numpy for numpy input, GpuArray for GpuArray input).

    Notes
    -----
    Integer images give exact window sums (the table wraps modulo 2**32, and so does the
    four-corner difference, which is exact while a window's true sum fits 32 bits); only the final
    division rounds. For float32 images each window sum is a difference of table entries, so its
    absolute error is about ``eps * max|table|`` (``eps = 2**-24``), large for big images with a
    large mean: subtract the mean first where that matters.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.box_filter(np.full((3, 3), 9, np.uint8), 1)
    array([[4., 6., 4.],
           [6., 9., 6.],
           [4., 6., 4.]], dtype=float32)
    """
    g, host = as_input(img, "box_filter", ndims=(2, 3))
    if not isinstance(radius, (int, np.integer)) or radius < 0:
        raise InputError("box_filter", f"radius must be an integer >= 0, got {radius!r}")
    if mode not in ("constant", "clip"):
        raise InputError("box_filter", f"mode must be 'constant' or 'clip', got {mode!r}")
    dev = g.device
    H, W, C = _image_shape(g.shape)
    out = GpuArray.empty(g.shape, np.float32, dev)
    b = dev.batch()
    if g.size:
        s = _record_sat(b, g)
        T = _types(g.dtype)[0]
        radius = int(min(radius, max(H, W)))
        b.dispatch(dev.kernel("sat/box.wgsl", defines={"T": T}), -(-(H * W * C) // 256),
                   params={"H": H, "W": W, "C": C, "radius": radius, "normalize": int(mode == "clip")},
                   sat=s, dst=out)
    if host is not None:
        return submit_to_host(b, out)
    b.submit()
    return out
