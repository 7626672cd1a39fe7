"""Multi-kernel 2-D and 3-D correlation with register blocking (``correlate``).

Each invocation of the kernel computes ``U`` adjacent outputs along x (and optionally ``UZ``
output planes) for a block of ``KB`` kernels, so that every input value it reads from workgroup
memory serves every output and kernel it touches; weights are read from workgroup memory as
broadcasts, four kernels per vec4. The WGSL is generated per (kernel size, kernel block, unroll
factor, workgroup shape) from ``wgsl/conv/correlate.wgsl``: the multiply-adds of one kernel plane
are fully unrolled with compile-time indices (or, past ``Config.unroll`` multiply-adds, unrolled
per kernel row inside a runtime loop), and only the multiply-adds that apply are emitted.

The launch configuration comes from ``~/.cache/pywgpuprims/correlate.json`` when :func:`tune` (or
``PYWGPUPRIMS_CORRELATE_SWEEP=1 PYWGPUPRIMS_SAVE_TUNING=1 python -m pywgpuprims.bench correlate``)
stored one for this device, kernel size, K and dtype, else from :func:`default_config`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np

from . import _ndimage as _nd
from ._array import GpuArray, as_input, asarray
from ._device import Binding, Device, takes_device
from ._errors import DeviceLimitError, InputError

_NAME = "correlate"
_BOUNDARIES = ("constant", "nearest", "reflect")  # what the kernels read themselves


@dataclass(frozen=True)
class Config:
    """A launch configuration: ``u`` outputs per invocation along x, ``kb`` kernels per pass,
    workgroup shape ``wgx`` x ``wgy``, ``unroll`` (the most multiply-adds unrolled per
    straight-line block before the kernel rows become a runtime loop) and ``db`` (double-buffered
    staging), ``uz`` (output planes per invocation, 3-D) and ``cs`` (results leave through
    workgroup memory so that global stores are coalesced)."""

    u: int = 8
    kb: int = 8
    wgx: int = 16
    wgy: int = 8
    unroll: int = 1024
    db: bool = False  # double-buffered staging: the next plane is prefetched into registers
    uz: int = 1  # output planes per invocation (3-D): each staged input plane serves up to uz
    cs: bool = True  # coalesced stores through workgroup memory

    @property
    def name(self) -> str:
        return (f"u{self.u}" + (f"x{self.uz}" if self.uz > 1 else "") + f" k{self.kb} wg{self.wgx}x{self.wgy}"
                + (" db" if self.db else "") + ("" if self.cs else " direct-stores"))


# ------------------------------------------------------------------ code generation
@lru_cache(maxsize=64)
def _generate(kd: int, kh: int, kw: int, cfg: Config, split: bool = False) -> dict:
    """Defines (including generated code blocks) for ``wgsl/conv/correlate.wgsl`` (``split``: each
    kernel of the block writes through a binding of its own, ``result0``, ``result1``, ...)."""
    u, kb = cfg.u, cfg.kb
    vec = kb % 4 == 0
    kbq = kb // 4 if vec else kb
    comps = "xyzw"
    nr = -(-(u + kw - 1) // 4)  # vec4 words of one staged row segment an invocation reads
    swz = u // 4  # segments start swz words apart: pad one word after every swz when swz is even
    pad = 1 if swz % 2 == 0 else 0
    uz = cfg.uz
    acc = []
    for z in range(uz):
        for i in range(u):
            for q in range(kbq):
                acc.append(f"    var a{z}_{i}_{q} = {'vec4<f32>(0.0)' if vec else '0.0'};")

    def row_block(dy_expr: str, wrow_expr: str, ind: str, z: int) -> list[str]:
        lines = [f"{ind}let rb = tb + (ty + {dy_expr}) * ROWP + tx * {u // 4 + pad}u;"]
        for j in range(nr):
            lines.append(f"{ind}let r{j} = tile[rb + {j + (j // swz if pad else 0)}u];")
        lines.append(f"{ind}let wr = wb0 + {wrow_expr};")
        for dx in range(kw):
            for q in range(kbq):
                lines.append(f"{ind}let w{dx}_{q} = wsh[wr][{dx * kbq + q}u];")
            for i in range(u):
                e = i + dx
                x = f"r{e // 4}.{comps[e % 4]}"
                for q in range(kbq):
                    xs = f"vec4<f32>({x})" if vec else x
                    lines.append(f"{ind}a{z}_{i}_{q} = fma(w{dx}_{q}, {xs}, a{z}_{i}_{q});")
        return lines

    def plane_block(ind: str, z: int) -> list[str]:
        out = []
        if kh * kw * u * kb <= cfg.unroll:
            for dy in range(kh):
                out.append(ind + "{")
                out += row_block(f"{dy}u", f"{dy}u", ind + "    ", z)
                out.append(ind + "}")
        else:
            out.append(ind + "for (var dy = 0u; dy < KH; dy++) {")
            out += row_block("dy", "dy", ind + "    ", z)
            out.append(ind + "}")
        return out

    body: list[str] = []
    if uz == 1:
        body = plane_block("        ", 0)
    else:
        for z in range(uz):
            body.append(f"        if (pz >= {z}u && pz < KD + {z}u) {{")
            body.append(f"            let wb0 = (pz - {z}u) * KH;")
            body += plane_block("            ", z)
            body.append("        }")

    def res(kk: int) -> str:
        return f"result{kk}" if split else "result"

    store = []
    tx_total = cfg.wgx * u
    if cfg.cs:
        for z in range(uz):
            for q in range(kbq):
                for c in range(4 if vec else 1):
                    kk = q * 4 + c if vec else q
                    store.append("    workgroupBarrier();")
                    for m in range(u // 4):
                        vals = ", ".join((f"a{z}_{4 * m + e}_{q}.{comps[c]}" if vec else f"a{z}_{4 * m + e}_{q}")
                                         for e in range(4))
                        store.append(f"    tile[tphys(ty * ROWV4 + tx * {u // 4}u + {m}u)] = vec4<f32>({vals});")
                    store.append("    workgroupBarrier();")
                    store.append(f"    if (z + {z}u < params.z1 && params.k0 + {kk}u < params.nk) {{")
                    store.append(f"        let ob = obase0 + (params.k0 + {kk}u) * slab + (z + {z}u) * plane"
                                 + (f" - params.ob{kk};" if split else ";"))
                    for m in range(u):
                        store.append("        {")
                        store.append(f"            let i = lid + {m * cfg.wgx * cfg.wgy}u;")
                        store.append(f"            let row = i / {tx_total}u;")
                        store.append(f"            let col = i - row * {tx_total}u;")
                        store.append("            if (y0 + row < params.y_end && x0 + col < params.ox) {")
                        store.append("                let c4 = col / 4u;")
                        store.append(f"                {res(kk)}[ob + row * params.ox + col] = "
                                     "tile[row * ROWP + c4 + c4 / SWZ][col % 4u];")
                        store.append("            }")
                        store.append("        }")
                    store.append("    }")
    for z in range(uz if not cfg.cs else 0):
        store.append(f"    if (z + {z}u < params.z1) {{")
        store.append(f"        let obase = (z + {z}u) * plane + yo * params.ox + xo - params.out_base;")
        for q in range(kbq):
            for c in range(4 if vec else 1):
                kk = q * 4 + c if vec else q
                store.append(f"        if (params.k0 + {kk}u < params.nk) {{")
                store.append(f"            let ob = obase + (params.k0 + {kk}u) * slab"
                             + (f" + params.out_base - params.ob{kk};" if split else ";"))
                for i in range(u):
                    v = f"a{z}_{i}_{q}.{comps[c]}" if vec else f"a{z}_{i}_{q}"
                    store.append(f"            if (xo + {i}u < params.ox) {{ {res(kk)}[ob + {i}u] = {v}; }}")
                store.append("        }")
        store.append("    }")
    rowv4 = -(-(cfg.wgx * u + kw - 1) // 4)
    tile_v4 = (cfg.wgy + kh - 1) * rowv4
    nt = cfg.wgx * cfg.wgy
    wplane = kh * kw * kbq
    # Staging of one plane: with few slots per invocation, every load is issued before any store.
    slots = -(-tile_v4 // nt)
    if slots <= 8:
        stage = [f"        let s{j} = stage_value(min(lid + {j * nt}u, TILE_V4 - 1u), zi, x0, y0);"
                 for j in range(slots)]
        for j in range(slots):
            guard = "" if (j + 1) * nt <= tile_v4 else f"if (lid + {j * nt}u < TILE_V4) "
            stage.append(f"        {guard}{{ tile[tphys(lid + {j * nt}u)] = s{j}; }}")
    else:
        stage = ["        for (var i = lid; i < TILE_V4; i += NT) {",
                 "            tile[tphys(i)] = stage_value(i, zi, x0, y0);",
                 "        }"]
    pre, put = [], []
    if cfg.db:
        for j in range(-(-tile_v4 // nt)):
            guard = "" if (j + 1) * nt <= tile_v4 else f" && lid + {j * nt}u < TILE_V4"
            pre.append(f"        var p{j} = vec4<f32>(0.0);")
            pre.append(f"        if (more{guard}) {{ p{j} = stage_value(lid + {j * nt}u, zn, x0, y0); }}")
            put.append(f"            if (true{guard}) {{ tile[TILE_P - tb + tphys(lid + {j * nt}u)] = p{j}; }}")
        wt = "vec4<f32>" if vec else "f32"
        for j in range(-(-wplane // nt)):
            guard = "" if (j + 1) * nt <= wplane else f" && lid + {j * nt}u < WPLANE"
            pre.append(f"        var q{j} = {wt}(0.0);")
            pre.append(f"        if (more{guard}) {{ q{j} = weights[wn + lid + {j * nt}u]; }}")
            put.append(f"            if (true{guard}) {{ wput(WPLANE - wbe + lid + {j * nt}u, q{j}); }}")
    return {
        "NBUF": 2 if cfg.db else 1, "DB": cfg.db, "CS": cfg.cs, "UZ": uz, "UZ1": uz == 1,
        "WSH_ROWS": (2 if cfg.db else kd if uz > 1 else 1) * kh, "KBQ": kbq,
        "PREFETCH": "\n".join(pre), "STAGE": "\n".join(stage), "PUT": "\n".join(put),
        "WGX": cfg.wgx, "WGY": cfg.wgy, "U": u, "KD": kd, "KH": kh, "KW": kw,
        "ROWV4": rowv4, "TILE_V4": tile_v4, "WPLANE": wplane,
        "ROWP": rowv4 + ((rowv4 - 1) // swz if pad else 0), "SWZ": swz if pad else 1 << 20,
        "TILE_P": (cfg.wgy + kh - 1) * (rowv4 + ((rowv4 - 1) // swz if pad else 0)),
        "WTYPE": "vec4<f32>" if vec else "f32",
        "ACC_DECL": "\n".join(acc), "BODY": "\n".join(body), "STORE": "\n".join(store),
        "SPLIT": split, "RESULT_DECL": "\n".join(f"@group(0) @binding({3 + j}) var<storage, read_write> result{j}: "
                                                "array<f32>;" for j in range(kb if split else 0)),
    }


def _shared_bytes(ksize, cfg: Config) -> int:
    kd, kh, kw = ksize
    rowv4 = -(-(cfg.wgx * cfg.u + kw - 1) // 4)
    swz = cfg.u // 4
    rowp = rowv4 + ((rowv4 - 1) // swz if swz % 2 == 0 else 0)
    tile = (cfg.wgy + kh - 1) * rowp * 16
    wplane = kh * kw * cfg.kb * 4
    if cfg.db:
        return 2 * (tile + wplane)
    return tile + wplane * (kd if cfg.uz > 1 else 1)


# ------------------------------------------------------------------ configuration choice
def _is_cpu(dev: Device) -> bool:
    return dev.info.get("adapter_type") == "CPU"


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pywgpuprims" / "correlate.json"


def _cache_key(ksize: tuple[int, int, int], k: int, dtype) -> str:
    return f"{ksize[0]}x{ksize[1]}x{ksize[2]}:K{k}:{np.dtype(dtype).name}"


def _cached_config(dev: Device, ksize, k: int, dtype) -> Config | None:
    try:
        data = json.loads(_cache_path().read_text())
        c = data[dev.adapter_summary][_cache_key(ksize, k, dtype)]
        return Config(**c)
    except Exception:
        return None


def save_choice(dev: Device, ksize, k: int, dtype, cfg: Config) -> None:
    """Remember ``cfg`` as the best configuration for this device, kernel size, K and dtype."""
    path = _cache_path()
    try:
        data = json.loads(path.read_text())
    except Exception:
        data = {}
    data.setdefault(dev.adapter_summary, {})[_cache_key(ksize, k, dtype)] = cfg.__dict__
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def default_config(dev: Device, ksize, k: int) -> Config:
    """The configuration used without a cached choice: sound on GPUs, quick to compile on CPUs.

    GPUs: 8 kernels x 8 outputs (64 accumulators) per invocation for K >= 5, 4 x 16 for K = 4 and
    K x 16 below; workgroups of 16 x 8; one kernel row of multiply-adds unrolled per loop trip
    (whole planes for small kernels), which keeps the code within instruction caches.
    """
    if k <= 3:
        kb, u = k, 16
    elif k == 4:
        kb, u = 4, 16
    else:
        kb, u = 8, 8
    if _is_cpu(dev):
        # Small unrolled blocks compile quickly on lavapipe.
        return Config(u=4, kb=min(kb, 4), wgx=8, wgy=4, unroll=512)
    return Config(u=u, kb=kb, wgx=16, wgy=8, unroll=1024)


def _fit(dev: Device, ksize, k: int, cfg: Config) -> Config:
    """Shrink ``cfg`` until its workgroup memory fits the device (or raise DeviceLimitError)."""
    kd, kh, kw = ksize
    limit = int(dev.limits.get("max-compute-workgroup-storage-size", 16384))
    lim = dev.limits
    if (cfg.u % 4 or not 4 <= cfg.u <= 64 or not 1 <= cfg.kb <= 32 or cfg.wgx < 1 or cfg.wgy < 1
            or cfg.wgx * cfg.wgy > int(lim.get("max-compute-invocations-per-workgroup", 256))
            or cfg.wgx > int(lim.get("max-compute-workgroup-size-x", 256))
            or cfg.wgy > int(lim.get("max-compute-workgroup-size-y", 256))):
        raise InputError(_NAME, f"bad config {cfg}: u must be a multiple of 4 in 4..64, kb in 1..32, and the "
                         "workgroup within the device's limits")
    kb = min(cfg.kb, max(4, k)) if k >= 4 else min(cfg.kb, k)
    if kb % 4 and kb > 4:
        kb = (kb + 3) // 4 * 4
    cfg = replace(cfg, kb=kb, uz=max(1, min(cfg.uz, 8)) if kd > 1 else 1)
    if cfg.uz > 1:
        cfg = replace(cfg, db=False)
    while _shared_bytes(ksize, cfg) > limit:
        if cfg.uz > 1:
            cfg = replace(cfg, uz=1)
        elif cfg.db:
            cfg = replace(cfg, db=False)
        elif cfg.wgy > 1:
            cfg = replace(cfg, wgy=cfg.wgy // 2)
        elif cfg.kb > 4:
            cfg = replace(cfg, kb=cfg.kb // 2)
        elif cfg.kb > 1:
            cfg = replace(cfg, kb=1)
        elif cfg.wgx > 4:
            cfg = replace(cfg, wgx=cfg.wgx // 2)
        else:
            raise DeviceLimitError(_NAME, f"a {kh}x{kw} kernel plane does not fit the device's "
                                   f"{limit} bytes of workgroup memory")
    return cfg


# ------------------------------------------------------------------ the primitive
def _check(volume, kernels, output_shape: str, mode: str):
    if not isinstance(output_shape, str) or output_shape not in ("valid", "same"):
        raise InputError(_NAME, f"output_shape must be 'valid' or 'same', got {output_shape!r}")
    if not isinstance(mode, str) or mode not in _BOUNDARIES:
        raise InputError(_NAME, f"mode must be one of {', '.join(_BOUNDARIES)}, got {mode!r}")
    g, host = as_input(volume, _NAME, dtypes=(np.uint8, np.float32), ndims=(2, 3))
    if isinstance(kernels, GpuArray):
        kernels = kernels.numpy()
    try:
        w = np.asarray(kernels)
    except (TypeError, ValueError) as exc:
        raise InputError(_NAME, f"cannot read the kernels as an array: {exc}") from None
    if w.dtype != np.float32:
        if w.dtype.kind not in "fiub":
            raise InputError(_NAME, f"kernels must be float32, got {w.dtype}")
        w = w.astype(np.float32)
    if w.ndim != g.ndim + 1:
        raise InputError(_NAME, f"a {g.ndim}-D volume {g.shape} needs kernels of shape (K, "
                         f"{', '.join('k' + a for a in 'dhw'[3 - g.ndim:])}), got shape {w.shape}")
    if w.shape[0] < 1 or min(w.shape) < 1:
        raise InputError(_NAME, f"kernels of shape {w.shape}: K and every kernel size must be >= 1")
    if min(g.shape) < 1:
        raise InputError(_NAME, f"empty volume of shape {g.shape}")
    if not np.all(np.isfinite(w)):
        raise InputError(_NAME, "kernels hold NaN or infinite values")
    if output_shape == "valid" and any(k > n for k, n in zip(w.shape[1:], g.shape, strict=True)):
        raise InputError(_NAME, f"kernel size {w.shape[1:]} exceeds the volume {g.shape} with output_shape='valid'")
    return g, host, w


def check_extension_keywords(name: str, mode, cval, boundary, size_hint: str) -> None:
    """Refuse correlate's old spellings (``boundary=``, ``mode='valid'/'same'``) and a string cval,
    each naming the keyword to use; ``size_hint`` says where the output size is chosen instead."""
    if boundary is not None:
        raise InputError(name, f"boundary= is now mode= (scipy.ndimage.correlate's name), got boundary={boundary!r}")
    if isinstance(mode, str) and mode in ("valid", "same"):
        raise InputError(name, f"mode is the boundary extension (scipy.ndimage's names, default 'reflect'), got "
                         f"{mode!r}; {size_hint}")
    if isinstance(cval, str):
        raise InputError(name, f"cval must be a number, got {cval!r} (the boundary extension is mode=)")

@takes_device
def correlate(volume, kernels, mode: str = "reflect", cval: float = 0.0, origin: int | tuple = 0, *,
              output_shape: Literal["same", "valid"] = "same", config: Config | None = None,
              out: GpuArray | np.ndarray | None = None, boundary=None) -> np.ndarray | GpuArray:
    """Correlate a 2-D or 3-D volume with K kernels at once (``scipy.ndimage.correlate``'s
    arguments, every kernel in one call).

    Parameters
    ----------
    volume : array_like or GpuArray, shape (D, H, W) or (H, W), uint8 or float32
    kernels : array_like, float32, shape (K, kd, kh, kw) or (K, kh, kw)
        Any sizes, odd or even.
    mode : str
        How the volume extends past its edges, scipy.ndimage's names and meanings: ``reflect``
        (default; half-sample symmetric ``d c b a | a b c d | d c b a``), ``constant``
        (``cval``), ``nearest``, ``mirror`` (``d c b | a b c d | c b a``), ``wrap`` and the
        aliases ``grid-constant``, ``grid-mirror`` (reflect), ``grid-wrap`` (wrap). The kernels
        read constant 0, nearest and reflect themselves; ``mirror``, ``wrap`` and a non-zero
        ``cval`` extend the volume on the host first (a host round trip for a GpuArray volume).
        Unused with ``output_shape="valid"``. (Before 2026-11 ``mode`` was the output size and
        ``boundary`` the extension: those spellings raise InputError naming the new ones.)
    cval : float
        The value outside the volume for ``mode="constant"``.
    origin : int or sequence of ints
        scipy.ndimage's ``origin`` per axis of the volume (one value for all): the kernel's tap
        ``k // 2 + origin`` sits on the output position, ``-(k // 2) <= origin <= (k - 1) // 2``.
        Only with ``output_shape="same"``.
    output_shape : {"same", "valid"}
        ``"same"`` (default): ``result[k] == scipy.ndimage.correlate(volume, kernels[k],
        mode=mode, cval=cval, origin=origin, output=np.float64)``, shape ``(K, D, H, W)``.
        ``"valid"``: only the positions where the kernel lies inside the volume,
        ``result[k] == scipy.signal.correlate(volume, kernels[k], "valid")``, shape
        ``(K, D-kd+1, H-kh+1, W-kw+1)``.
    config : Config, optional
        Launch configuration; default: the cached best choice for this device, else
        :func:`default_config`.
    out : GpuArray or numpy.ndarray, optional
        float32 array of the result's shape to write into (and return).
    boundary : None
        The old name of ``mode``: anything but None raises InputError.

    Returns
    -------
    numpy.ndarray or GpuArray
        float32 of shape (K, ...), computed in float32 (numpy in: numpy out; GpuArray: GpuArray).

    Notes
    -----
    Volumes are bound a few planes at a time; where one plane passes the device's largest
    storage binding, by bands of output rows, each read with the ``kh - 1`` rows its window
    reaches: the same sums as unchunked. A 2-D image (one plane) binds each band's input and
    result rows in place, every kernel's through a binding of its own, as few bands as fit; a
    volume of several planes copies a band's rows in and its results out. uint8 3-D volumes
    whose planes are not whole 4-byte words are then read as float32.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> v = np.arange(16, dtype=np.float32).reshape(4, 4)
    >>> pp.correlate(v, np.ones((1, 3, 3), np.float32), output_shape="valid")
    array([[[45., 54.],
            [81., 90.]]], dtype=float32)
    >>> pp.correlate(v, np.ones((1, 3, 3), np.float32), mode="constant")[0, 0]
    array([10., 18., 24., 18.], dtype=float32)
    """
    check_extension_keywords(_NAME, mode, cval, boundary, f"the output size {mode!r} is output_shape={mode!r}")
    if not isinstance(output_shape, str) or output_shape not in ("valid", "same"):
        raise InputError(_NAME, f"output_shape must be 'valid' or 'same', got {output_shape!r}")
    boundary = _nd.filter_mode(mode, _NAME)
    cval = _nd.real_scalar(cval, "cval", _NAME, f32=True)
    mode = output_shape
    if config is not None and not isinstance(config, Config):
        raise InputError(_NAME, f"config must be a Config, got {config!r}")
    host_out = None
    if isinstance(out, np.ndarray):
        host_out, out = out, None
    elif out is not None and not isinstance(out, GpuArray):
        raise InputError(_NAME, f"out must be a GpuArray or a numpy array, got {type(out).__name__}")
    if mode == "same" and (boundary in ("mirror", "wrap") or (boundary == "constant" and cval != 0.0)):
        return _correlate_extended(volume, kernels, boundary, cval, origin, config, out, host_out)
    g, host, w = _check(volume, kernels, mode, boundary)
    dev = g.device
    k = w.shape[0]
    twod = g.ndim == 2
    vol_shape = (1, *g.shape) if twod else g.shape
    ksize = (1, *w.shape[1:]) if twod else tuple(w.shape[1:])
    nz, ny, nx = vol_shape
    kd, kh, kw = ksize
    if mode == "valid":
        if _origin(origin, w.shape[1:]) != (0,) * (w.ndim - 1):
            raise InputError(_NAME, "origin applies to output_shape='same' only")
        oshape = (nz - kd + 1, ny - kh + 1, nx - kw + 1)
        off = (0, 0, 0)
        bdefine = "nearest"  # never reads outside; clamping keeps partial tiles in bounds
    else:
        oshape = (nz, ny, nx)
        org = _origin(origin, w.shape[1:])
        off = tuple(n // 2 + o for n, o in zip(ksize, (0,) * twod + org, strict=True))
        bdefine = boundary
    out_elems = k * math.prod(oshape)
    if out_elems * 4 > dev.max_buffer or out_elems >= 2**32:
        raise DeviceLimitError(_NAME, f"the result of {k} kernel{'s' if k > 1 else ''} over {oshape} "
                               f"({out_elems * 4} bytes) exceeds the device's largest buffer ({dev.max_buffer} "
                               "bytes); " + ("use fewer kernels per call" if k > 1 else "use a smaller volume"))
    cfg = config or _cached_config(dev, ksize, k, g.dtype) or default_config(dev, ksize, k)
    cfg = _fit(dev, ksize, k, cfg)
    max_binding = dev.binding_limit
    plane_bytes = 4 * oshape[1] * oshape[2]
    isz = g.dtype.itemsize
    # One plane whose input or block of results passes a binding: bands of rows bound in place.
    rows = nz == 1 and not (((cfg.kb - 1) * oshape[0] + 1) * plane_bytes + dev.storage_align <= max_binding
                            and _planes_fit(dev, kd + cfg.uz - 1, ny * nx * isz, plane_bytes))
    # A pass over a block of kernels binds one output plane of each at least: shrink the block to fit.
    cfg_rows = cfg
    while cfg.kb > 1 and ((cfg.kb - 1) * oshape[0] + 1) * plane_bytes + dev.storage_align > max_binding:
        cfg = replace(cfg, kb=cfg.kb // 2 if cfg.kb > 4 else 1)
    rshape = (k, *oshape[1:]) if twod else (k, *oshape)
    if host_out is not None and (host_out.shape != rshape or host_out.dtype != np.float32):
        raise InputError(_NAME, f"out must be a float32 array of shape {rshape}, got {host_out.dtype} "
                         f"{host_out.shape}")
    if out is None:
        out = GpuArray.empty((k, *oshape), np.float32, dev)
    elif out.shape != rshape or out.dtype != np.float32:
        raise InputError(_NAME, f"out must be a float32 GpuArray of shape {rshape}, got {out.dtype} {out.shape}")
    fits = _planes_fit(dev, kd + cfg.uz - 1, ny * nx * isz, 4 * oshape[1] * oshape[2])
    if not fits and isz == 1 and nz > 1 and (ny * nx) % 4 and host is not None:
        g = asarray(np.asarray(host, np.float32), dev=dev)  # bands of planes not of whole words: as float32 (exact)
    if rows:
        _run_rows(dev, g, w.reshape(k, kd, kh, kw), vol_shape, ksize, oshape, off, bdefine, out, cfg_rows)
    elif fits:
        _run(dev, g, w.reshape(k, kd, kh, kw), vol_shape, ksize, oshape, off, bdefine, out, cfg)
    else:  # one plane passes a storage binding: bands of rows
        _run_bands(dev, g, w.reshape(k, kd, kh, kw), vol_shape, ksize, oshape, off, bdefine, out, cfg,
                   mode == "valid")
    out = out.reshape(rshape)
    if host_out is not None:
        return out.numpy(out=host_out)
    return out.numpy() if host is not None else out


def _origin(origin, ksize: tuple) -> tuple[int, ...]:
    """scipy.ndimage's ``origin`` (an int or one per axis) checked against the kernel sizes."""
    seq = (origin,) * len(ksize) if isinstance(origin, (int, np.integer)) and not isinstance(origin, bool) else origin
    try:
        org = tuple(seq)
    except TypeError:
        raise InputError(_NAME, f"origin must be an int or a sequence of ints, got {origin!r}") from None
    if len(org) != len(ksize) or any(isinstance(o, bool) or not isinstance(o, (int, np.integer)) for o in org):
        raise InputError(_NAME, f"origin must be an int or {len(ksize)} ints, got {origin!r}")
    for o, n in zip(org, ksize, strict=True):
        if not -(n // 2) <= o <= (n - 1) // 2:
            raise InputError(_NAME, f"origin {int(o)} is out of range for a kernel of size {n} "
                             f"({-(n // 2)} to {(n - 1) // 2})")
    return tuple(int(o) for o in org)


def _correlate_extended(volume, kernels, boundary: str, cval: float, origin, config, out, host_out):
    """``"same"`` for the boundaries the kernels do not read themselves: the volume extended on the
    host as scipy.ndimage extends it, then ``"valid"``."""
    gpu_in = isinstance(volume, GpuArray)
    v = volume.numpy() if gpu_in else np.asarray(volume)
    w = kernels.numpy() if isinstance(kernels, GpuArray) else np.asarray(kernels)
    if v.ndim not in (2, 3) or w.ndim != v.ndim + 1 or min(w.shape, default=0) < 1 or min(v.shape, default=0) < 1:
        _check(volume, kernels, "same", "constant")  # the usual errors for shapes
    org = _origin(origin, w.shape[1:])
    pad = [(n // 2 + o, n - 1 - n // 2 - o) for n, o in zip(w.shape[1:], org, strict=True)]
    if boundary == "constant":
        vp = np.pad(v.astype(np.float32), pad, mode="constant", constant_values=cval)
    else:
        vp = v
        for ax, (lo, hi) in enumerate(pad):  # one axis at a time: numpy refuses to mirror one sample
            pm = "wrap" if boundary == "wrap" else ("edge" if v.shape[ax] == 1 else "reflect")
            vp = np.pad(vp, [(lo, hi) if i == ax else (0, 0) for i in range(v.ndim)], mode=pm)
    if gpu_in and vp.dtype == np.uint8 and vp.ndim == 3 and (vp.shape[1] * vp.shape[2]) % 4:
        vp = vp.astype(np.float32)  # exact; planes of whole words, should they need bands of rows
    res = correlate(asarray(vp) if gpu_in else vp, w, output_shape="valid", config=config,
                    out=out if gpu_in else None)
    if host_out is not None:
        host_out[...] = res.numpy() if gpu_in else res
        return host_out
    return res


def _bmap(i: np.ndarray, n: int, boundary: str) -> np.ndarray:
    if boundary == "reflect":
        m = np.mod(i, 2 * n)
        return np.where(m >= n, 2 * n - 1 - m, m)
    return np.clip(i, 0, n - 1)


def _planes_fit(dev: Device, planes_in: int, plane_in: int, plane_out: int) -> bool:
    """Whether ``planes_in`` input planes and one output plane (bytes each) fit one storage binding
    each, with the alignment slack of :func:`_run`'s binding ranges."""
    lim, align = dev.binding_limit, dev.storage_align
    return planes_in * plane_in + align + 4 <= lim and plane_out + align <= lim


def _run_rows(dev: Device, g: GpuArray, w: np.ndarray, vol_shape, ksize, oshape, off, boundary: str,
              out: GpuArray, cfg: Config) -> None:
    """:func:`_run` for one plane (a 2-D image) whose input, or whose results of a block of
    kernels, pass one storage binding: bands of output rows, as few as the binding allows and of
    even heights, each a dispatch per kernel block that binds its input rows (those its kernel
    window reaches, boundary rows included) and each kernel's result rows in place, as ranges of
    the original buffers (starts rounded down to the storage alignment; the kernel is told the
    element where each range starts). Each kernel of a block writes through a binding of its own
    (``SPLIT``), so the block is as in one binding and every output is the same sum of the same
    products as the unchunked call, bit for bit. Every band goes into one batch: no copies, no
    scratch."""
    _, ny, nx = vol_shape
    kd, kh, kw = ksize
    _, oy, ox = oshape
    k = w.shape[0]
    isz = g.dtype.itemsize
    row_in, row_out = nx * isz, 4 * ox
    lim, align = dev.binding_limit, dev.storage_align
    # a block of kb kernels binds the volume, the weights and kb results
    kb = min(cfg.kb, 8, max(1, int(dev.limits.get("max-storage-buffers-per-shader-stage", 8)) - 2))
    if kb > 4:
        kb = kb // 4 * 4
    cfg = replace(cfg, kb=kb, uz=1)
    # a band's bindings: its output rows of one kernel, and the <= per + kh - 1 input rows they
    # read (each range's start rounded down to the alignment: < align bytes more; uint8: up to a word)
    most = min((lim - align) // row_out, (lim - align - 4) // row_in - (kh - 1))
    if most < 1:
        raise DeviceLimitError(_NAME, f"a band of one output row with the kernel's {kh - 1} rows of overlap needs "
                               f"more than the device's largest storage binding ({lim} bytes)")
    nb = -(-oy // most)
    per = -(-oy // nb)  # as few bands as fit, of even heights
    if -(-per // cfg.wgy) * cfg.wgy <= most:
        per = -(-per // cfg.wgy) * cfg.wgy  # whole rows of workgroups where that costs no band
    kern, wbuf, wblock, nkb = _kernel(dev, g, w, ksize, boundary, cfg, split=True)
    gx = -(-ox // (cfg.wgx * cfg.u))
    b = dev.batch()
    for y0 in range(0, oy, per):
        y1 = min(oy, y0 + per)
        rows = _bmap(np.arange(y0 - off[1], y1 - 1 + kh - off[1]), ny, boundary)
        ilo = g.byte_offset + int(rows.min()) * row_in
        ihi = min(g.buffer.size, -(-(g.byte_offset + (int(rows.max()) + 1) * row_in) // 4) * 4)
        ilo -= ilo % align
        if ihi - ilo > lim:  # cannot happen: the rows read lie within the band's window
            raise DeviceLimitError(_NAME, f"the input rows of a band pass the storage binding ({lim} bytes)")
        for blk in range(nkb):
            k0, k1 = blk * kb, min(k, blk * kb + kb)
            res, obs = {}, {}
            for j in range(kb):
                kk = k0 + min(j, k1 - k0 - 1)  # a block short of kernels binds its last one again (never written)
                olo = out.byte_offset + (kk * oy + y0) * row_out
                ohi = out.byte_offset + (kk * oy + y1) * row_out
                olo -= olo % align
                res[f"result{j}"] = Binding(out.buffer, olo, ohi - olo)
                obs[f"ob{j}"] = (olo - out.byte_offset) // 4
            params = {"nx": nx, "ny": ny, "nz": 1, "in_base": (ilo - g.byte_offset) // isz,
                      "ox": ox, "oy": oy, "oz": 1, "out_base": 0, "z0": 0, "z1": 1,
                      "offx": off[2], "offy": off[1], "offz": off[0], "k0": k0, "nk": k, "w_base": 0,
                      "y_org": y0, "y_end": y1, **_NO_SPLIT, **obs}
            b.dispatch(kern, (gx, -(-(y1 - y0) // cfg.wgy), 1), params=params,
                       volume=Binding(g.buffer, ilo, ihi - ilo), weights=Binding(wbuf, blk * wblock, wblock), **res)
    b.submit()


def _run_bands(dev: Device, g: GpuArray, w: np.ndarray, vol_shape, ksize, oshape, off, boundary: str,
               out: GpuArray, cfg: Config, valid: bool) -> None:
    """:func:`_run` for volumes whose planes pass one storage binding: bands of output rows, each
    read with the rows its kernel window reaches (``kh - 1`` more; none past the volume's own
    edges, where the boundary is read as in the unchunked call) into a sub-volume of its own,
    correlated there by :func:`_run` and its rows copied into ``out``. Each output is the same
    sum of the same products as unchunked (bit for bit where the launch configuration is the
    same)."""
    nz, ny, nx = vol_shape
    kd, kh, kw = ksize
    oz, oy, ox = oshape
    k = w.shape[0]
    isz = g.dtype.itemsize
    row_in, row_out = nx * isz, 4 * ox
    step = _nd.word_rows(row_in)  # uint8 bands start (and, between planes, end) on whole words
    if nz > 1 and ny % step:
        raise DeviceLimitError(_NAME, f"planes of {ny} x {nx} uint8 are not whole 4-byte words and pass the "
                               f"device's largest storage binding ({dev.binding_limit} bytes)")
    lim, align = dev.binding_limit, dev.storage_align
    halo = kh - 1 + 2 * (step - 1)
    kb = cfg.kb
    while True:  # a pass binds one output plane of each of kb kernels: fewer kernels, taller bands
        per = min((lim - align - 4) // (kd * row_in), (lim - align) // (((kb - 1) * oz + 1) * row_out)) - halo
        if kb == 1 or per >= min(oy, 64):
            break
        kb = kb // 2 if kb > 4 else 1
    cfg = replace(cfg, uz=1, kb=kb)
    if per < 1:
        raise DeviceLimitError(_NAME, f"a band of one output row with the kernel's {kh - 1} rows of overlap needs "
                               f"more than the device's largest storage binding ({lim} bytes)")
    for y0 in range(0, oy, per):
        y1 = min(oy, y0 + per)
        if valid:
            lo, hi = y0, y1 + kh - 1
        else:
            lo, hi = max(0, y0 - off[1]), min(ny, y1 + kh - 1 - off[1])
            if hi - lo < kh:  # a band at an edge reads at least kh rows, so that its boundary folds as the volume's
                lo = max(0, min(lo, hi - kh))
                hi = min(ny, max(hi, lo + kh))
        lo, hi = lo // step * step, min(ny, -(-hi // step) * step)
        hs = hi - lo
        oys = hs - kh + 1 if valid else hs
        sub = GpuArray.empty((nz, hs, nx), g.dtype, dev)
        b = dev.batch()
        for z in range(nz):
            _nd.copy_rows(b, g, row_in, z * ny + lo, z * ny + hi, sub, z * hs)
        b.submit()
        res = GpuArray.empty((k, oz, oys, ox), np.float32, dev)
        _run(dev, sub, w, (nz, hs, nx), ksize, (oz, oys, ox), off, boundary, res, cfg)
        b = dev.batch()
        for plane in range(k * oz):
            _nd.copy_rows(b, res, row_out, plane * oys + y0 - lo, plane * oys + y1 - lo, out, plane * oy + y0)
        b.submit()


def _kernel(dev: Device, g: GpuArray, w: np.ndarray, ksize, boundary: str, cfg: Config, split: bool = False):
    """The correlate kernel for this launch configuration and the weights it reads: ``(kernel,
    weights buffer, bytes of one kernel block's weights, kernel blocks)``."""
    kd, kh, kw = ksize
    k = w.shape[0]
    kb = cfg.kb
    nkb = -(-k // kb)
    # Weights as [block][dz][dy][dx][kernel in block], zero-padded to whole blocks.
    wp = np.zeros((nkb * kb, kd, kh, kw), np.float32)
    wp[:k] = w
    wp = wp.reshape(nkb, kb, kd, kh, kw).transpose(0, 2, 3, 4, 1).reshape(nkb, -1)
    # Each block starts at a binding-offset boundary, so a pass binds only its own block.
    wblock = -(-wp.shape[1] * 4 // dev.storage_align) * dev.storage_align
    wpad = np.zeros((nkb, wblock // 4), np.float32)
    wpad[:, :wp.shape[1]] = wp
    wbuf = dev.constant(wpad, label="correlate weights")  # uploaded once per set of kernels
    defines = dict(_generate(kd, kh, kw, cfg, split))
    if _is_cpu(dev):
        # Lavapipe silently ends loops past 65,535 trips per invocation: refuse rather than be wrong.
        nt = cfg.wgx * cfg.wgy
        trips = (kd + cfg.uz - 1) * (-(-defines["TILE_V4"] // nt) + -(-defines["WPLANE"] // nt) + kh * cfg.uz + 2)
        if trips > 60000:
            raise DeviceLimitError(_NAME, f"a {kd}x{kh}x{kw} kernel needs about {trips} loop trips per "
                                   "invocation, past the CPU driver's 65,535 cap")
    defines["U8"] = g.dtype == np.uint8
    defines["BOUNDARY_CONSTANT"] = boundary == "constant"
    defines["BOUNDARY_REFLECT"] = boundary == "reflect"
    return dev.kernel("conv/correlate.wgsl", defines=defines), wbuf, wblock, nkb


_NO_SPLIT = {f"ob{j}": 0 for j in range(8)}


def _run(dev: Device, g: GpuArray, w: np.ndarray, vol_shape, ksize, oshape, off, boundary: str,
         out: GpuArray, cfg: Config) -> None:
    nz, ny, nx = vol_shape
    kd, kh, kw = ksize
    oz, oy, ox = oshape
    k = w.shape[0]
    kb = cfg.kb
    kern, wbuf, wblock, nkb = _kernel(dev, g, w, ksize, boundary, cfg)
    isz = g.dtype.itemsize
    plane_in = ny * nx
    plane_out = ox * oy
    align = dev.storage_align
    max_binding = dev.binding_limit
    tiles = (-(-ox // (cfg.wgx * cfg.u)), -(-oy // cfg.wgy))

    def in_span(zs: int, ze: int) -> tuple[int, int]:
        raw = np.arange(zs - off[0], ze - 1 + kd - off[0])
        m = _bmap(raw, nz, boundary)
        lo = int(m.min()) * plane_in * isz
        hi = (int(m.max()) + 1) * plane_in * isz
        lo = g.byte_offset + lo - (g.byte_offset + lo) % align
        hi = g.byte_offset + (hi + 3) // 4 * 4
        return lo, hi

    def out_span(k0: int, k1: int, zs: int, ze: int) -> tuple[int, int]:
        lo = out.byte_offset + ((k0 * oz + zs) * plane_out) * 4
        hi = out.byte_offset + (((k1 - 1) * oz + ze) * plane_out) * 4
        return lo - lo % align, hi

    b = dev.batch()
    for blk in range(nkb):
        k0, k1 = blk * kb, min(k, blk * kb + kb)
        zs = 0
        while zs < oz:
            zc = min(oz - zs, dev.max_groups)
            while True:
                ilo, ihi = in_span(zs, zs + -(-zc // cfg.uz) * cfg.uz)
                olo, ohi = out_span(k0, k1, zs, zs + zc)
                if ihi - ilo <= max_binding and ohi - olo <= max_binding:
                    break
                if zc == 1:
                    raise DeviceLimitError(_NAME, f"one output plane of {k1 - k0} kernel{'s' if k1 - k0 > 1 else ''} "
                                           f"needs more than the device's largest storage binding ({max_binding} "
                                           "bytes); " + ("pass fewer kernels or a smaller kernel block (Config.kb)"
                                                         if k1 - k0 > 1 else "use a smaller volume"))
                zc = max(1, zc // 2)
            params = {
                "nx": nx, "ny": ny, "nz": nz, "in_base": (ilo - g.byte_offset) // isz,
                "ox": ox, "oy": oy, "oz": oz, "out_base": (olo - out.byte_offset) // 4, "z0": zs,
                "z1": zs + zc,
                "offx": off[2], "offy": off[1], "offz": off[0], "k0": k0, "nk": k,
                "w_base": 0, "y_org": 0, "y_end": oy, **_NO_SPLIT,
            }
            b.dispatch(kern, (tiles[0], tiles[1], -(-zc // cfg.uz)), params=params,
                       volume=Binding(g.buffer, ilo, ihi - ilo), weights=Binding(wbuf, blk * wblock, wblock),
                       result=Binding(out.buffer, olo, ohi - olo))
            zs += zc
    b.submit()


# ------------------------------------------------------------------ tuning and benchmark
def _candidates(k: int, ksize, stage: int, best: Config | None = None) -> list[Config]:
    """Stage 1: outputs per invocation x kernel block x unrolling at 16 x 8; stage 2: workgroup
    shapes; stage 3: double-buffered staging on and off for the best two workgroup shapes, and
    coalesced stores on and off for the best."""
    if stage == 3:
        return [replace(c, db=not c.db) for c in best] + [replace(best[0], cs=not best[0].cs)]
    if stage == 2:
        shapes = ((16, 8), (8, 8), (16, 4), (32, 4), (8, 16), (32, 8), (16, 16), (64, 2))
        return [replace(best, wgx=x, wgy=y) for x, y in shapes]
    if k <= 3:
        sets = [(8, k, 1), (16, k, 1), (24, k, 1), (32, k, 1), (16, k, 2), (16, k, 4), (32, k, 2)]
    elif k <= 7:
        sets = [(8, 4, 1), (16, 4, 1), (24, 4, 1), (8, 8, 1), (8, 4, 2), (16, 4, 2), (8, 8, 2)]
    else:
        sets = [(4, 8, 1), (8, 4, 1), (8, 8, 1), (12, 8, 1), (16, 8, 1), (4, 16, 1), (8, 16, 1), (16, 4, 1),
                (8, 8, 2), (8, 4, 2), (4, 8, 4), (8, 4, 4)]
        if k < 16:
            sets = [p for p in sets if p[1] <= 8]
    if ksize[0] == 1:
        sets = [p for p in sets if p[2] == 1]
    out = []
    for u, kb, uz in sets:
        out.append(Config(u, kb, 16, 8, 1024, uz=uz))
        if ksize[1] * ksize[2] * u * kb > 1024 and uz == 1:
            out.append(Config(u, kb, 16, 8, 1 << 16))
    return out


def tune(volume, kernels, output_shape: Literal["valid", "same"] = "valid",
         mode: Literal["constant", "nearest", "reflect"] = "reflect", save: bool = True,
         repeats: int = 5, on_result=None) -> Config:
    """Time launch configurations of :func:`correlate` on this input and return the fastest.

    Three stages: outputs per invocation, kernel block and unrolling at a 16 x 8 workgroup; then
    workgroup shapes for the best of those; then double-buffered staging and coalesced stores.
    With ``save`` the choice is kept in ``~/.cache/pywgpuprims/correlate.json`` for this device,
    kernel size, K and dtype, and :func:`correlate` uses it from then on.
    ``on_result(config, gpu_ns)`` sees every timing.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> from pywgpuprims.conv import tune
    >>> v = np.zeros((64, 64, 64), np.uint8); w = np.ones((8, 7, 7, 7), np.float32)
    >>> cfg = tune(v, w)  # doctest: +SKIP
    """
    from ._timing import median_gpu_ns  # noqa: PLC0415

    g, _, w = _check(volume, kernels, output_shape, mode)
    dev = g.device
    ksize = (1, *w.shape[1:]) if g.ndim == 2 else tuple(w.shape[1:])
    k = w.shape[0]
    out = correlate(g, w, mode, output_shape=output_shape)
    best: tuple[float, Config] | None = None
    tried: dict = {}
    for stage in (1, 2, 3):
        if stage > 1 and best is None:
            break
        if stage == 3:
            ranked = sorted(tried.items(), key=lambda kv: kv[1])
            b1 = best[1]
            top = [c for c, _ in ranked if (c.u, c.kb, c.unroll, c.uz) == (b1.u, b1.kb, b1.unroll, b1.uz)]
            arg = top[:2]
        else:
            arg = best[1] if best else None
        for cfg in _candidates(k, ksize, stage, arg):
            c = _fit(dev, ksize, k, cfg)
            if c != cfg or c in tried:
                continue  # does not fit this device as asked, or already timed
            try:
                if dev.has_timestamps:
                    ns = median_gpu_ns(dev, lambda i, c=c: correlate(g, w, mode, output_shape=output_shape,
                                                                     config=c, out=out), repeats=repeats)
                else:
                    import time  # noqa: PLC0415

                    correlate(g, w, mode, output_shape=output_shape, config=c, out=out)
                    dev.sync()
                    t0 = time.perf_counter_ns()
                    for _ in range(repeats):
                        correlate(g, w, mode, output_shape=output_shape, config=c, out=out)
                    dev.sync()
                    ns = (time.perf_counter_ns() - t0) / repeats
            except Exception as exc:  # noqa: BLE001  (a variant the device rejects is skipped)
                print(f"correlate {c.name}: {exc}")
                continue
            tried[c] = ns
            if on_result is not None:
                on_result(c, ns)
            if best is None or ns < best[0]:
                best = (ns, c)
    if best is None:
        return default_config(dev, ksize, k)
    if save:
        save_choice(dev, ksize, k, g.dtype, best[1])
    return best[1]
