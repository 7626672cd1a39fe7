"""The dtype layer: numpy's result dtypes, and how a kernel reads, accumulates and writes each dtype.

Every primitive that scans or reduces takes bool, int8 to int64, uint8 to uint64, float16, float32
and float64 arrays, Python lists and scalars. What it computes in follows numpy:

- ``scan`` with ``op="add"`` as ``np.cumsum`` and ``reduce`` as ``np.sum``: bool and signed integers
  narrower than 64 bits accumulate in int64, unsigned ones in uint64, floats in their own dtype;
  min / max / bitwise ops keep the input's dtype; ``dtype=`` (or, without it, ``out``'s dtype)
  chooses otherwise, as numpy's ``dtype`` and ``out`` do.
- 64-bit integers are exact: through the adapter's ``shader-int64`` feature where it has one, else
  as pairs of 32-bit words with carries (``wgsl/common/u64.wgsl``).
- float64 needs the adapter's ``shader-f64``; without it the call raises :class:`InputError` naming
  the adapter and the choice (``dtype=np.float32``): never a silent downcast.
- 8- and 16-bit inputs (and float16) are read packed, four or two to a 32-bit word, and widened in
  the kernel; 8- and 16-bit results are computed in 32 bits and packed by a small kernel
  (``wgsl/wide/narrow.wgsl``). A float16 sum is accumulated in float32 and rounded once per
  element, so it may differ from numpy's float16 accumulation by that rounding.

The test hooks ``hide_shader_int64`` / ``hide_shader_f64`` (``device().using(...)``) hide those
features from these kernels, so the word-pair path and the float64 error are tested on adapters
that have both.
"""

from __future__ import annotations

import numpy as np

from ._errors import InputError

B, I8, U8, I16, U16, I32, U32, I64, U64, F16, F32, F64 = (np.dtype(t) for t in (
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64))

#: every dtype a GpuArray and the scanning primitives take
ALL_DTYPES = (B, I8, U8, I16, U16, I32, U32, I64, U64, F16, F32, F64)
#: accumulators the typed kernels compute in; narrower results are computed in their 32-bit sibling
WIDE = (I32, U32, F32, I64, U64, F64)
_SIBLING = {B: U32, I8: I32, U8: U32, I16: I32, U16: U32, F16: F32}

OPS = ("add", "min", "max", "and", "or", "xor", "fmin", "fmax")
_BITWISE = ("and", "or", "xor")

# the element kind a kernel reads: (define, raw WGSL kind of `r`, WGSL type of the input array)
_IN = {B: ("IN_U8", "u", "u32"), U8: ("IN_U8", "u", "u32"), I8: ("IN_I8", "i", "u32"),
       U16: ("IN_U16", "u", "u32"), I16: ("IN_I16", "i", "u32"), F16: ("IN_F16", "f", "u32"),
       U32: ("IN_U32", "u", "u32"), I32: ("IN_I32", "i", "u32"), F32: ("IN_F32", "f", "u32"),
       U64: ("IN_P64", "p", "vec2<u32>"), I64: ("IN_P64", "p", "vec2<u32>"), F64: ("IN_F64", "d", "f64")}
_DTYPE_CLASSES = frozenset(type(d) for d in ALL_DTYPES)
_IN_FLAGS = ("IN_U8", "IN_I8", "IN_U16", "IN_I16", "IN_F16", "IN_U32", "IN_I32", "IN_F32", "IN_P64", "IN_F64")

def has_feature(dev, name: str) -> bool:
    """Whether the typed kernels may use ``name`` on ``dev`` (the hide_* test hooks take it away)."""
    if name not in dev.features:
        return False
    if name == "shader-int64":
        return not dev.hooks.hide_shader_int64
    if name == "shader-f64":
        return not dev.hooks.hide_shader_f64
    return True


def host_array(x, primitive: str) -> np.ndarray:
    """``x`` (array, list or scalar) as a numpy array of a dtype the primitives take."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InputError(primitive, f"cannot make an array of {type(x).__name__}: {exc}") from exc
    if a.dtype not in ALL_DTYPES:
        if a.dtype.kind in "iu" and a.dtype.itemsize == 8:  # longlong and friends
            a = a.astype(I64 if a.dtype.kind == "i" else U64)
        else:
            raise InputError(primitive, f"dtype {a.dtype} is not supported (expected bool, an integer "
                             "type of 8 to 64 bits, float16, float32 or float64)")
    return a


def check_dtype(dtype, primitive: str) -> np.dtype:
    try:
        d = np.dtype(dtype)
    except TypeError as exc:
        raise InputError(primitive, f"{dtype!r} is not a dtype") from exc
    if d not in ALL_DTYPES:
        raise InputError(primitive, f"dtype {d} is not supported (expected one of "
                         f"{', '.join(str(t) for t in ALL_DTYPES)})")
    return d


_RESULT_DTYPES: dict = {}  # (op, in_dtype, dtype, out_dtype) -> result_dtype's answer (valid ones only)


def result_dtype(op: str, in_dtype, dtype=None, out_dtype=None, primitive: str = "scan") -> np.dtype:
    """numpy's result dtype of ``op`` accumulated over ``in_dtype`` (``np.cumsum`` / ``np.sum`` for
    add, the input's for the others), or ``dtype`` / ``out_dtype`` where given."""
    try:
        key = (op, in_dtype, dtype, out_dtype)
        got = _RESULT_DTYPES.get(key)
    except TypeError:  # something unhashable: the checks below say what is wrong with it
        key = got = None
    if got is not None:
        return got
    d = _result_dtype(op, in_dtype, dtype, out_dtype, primitive)
    if key is not None and len(_RESULT_DTYPES) < 4096:
        _RESULT_DTYPES[key] = d
    return d


def _result_dtype(op: str, in_dtype, dtype, out_dtype, primitive: str) -> np.dtype:
    if op not in OPS:
        raise InputError(primitive, f"op {op!r} is not supported (expected one of {', '.join(OPS)})")
    in_dtype = np.dtype(in_dtype)
    if dtype is not None:
        d = check_dtype(dtype, primitive)
    elif out_dtype is not None:
        d = check_dtype(out_dtype, primitive)
    elif op == "add" and (in_dtype == B or (in_dtype.kind in "iu" and in_dtype.itemsize < 8)):
        d = U64 if in_dtype.kind == "u" else I64
    else:
        d = in_dtype
    if op in _BITWISE and d.kind == "f":
        raise InputError(primitive, f"op {op!r} needs an integer or bool dtype, got {d}")
    if op in _BITWISE and in_dtype.kind == "f":
        raise InputError(primitive, f"op {op!r} needs integer input, got {in_dtype}")
    return d


def acc_dtype(d: np.dtype) -> np.dtype:
    """The dtype the kernels accumulate a result of dtype ``d`` in (``d``, or its 32-bit sibling)."""
    got = _SIBLING.get(d) if d.__class__ in _DTYPE_CLASSES else None  # a dtype of ours: no np.dtype() call
    if got is not None:
        return got
    d = np.dtype(d)
    return _SIBLING.get(d, d)


def check_f64(dev, primitive: str, what: np.dtype) -> None:
    if what == F64 and not has_feature(dev, "shader-f64"):
        raise InputError(primitive, f"float64 needs the adapter's shader-f64 feature, which "
                         f"{dev.adapter_summary} does not have; pass dtype=np.float32 to compute in "
                         "float32 (a float32 result), or convert the input on the host")


def native_int64(dev) -> bool:
    return has_feature(dev, "shader-int64")


def _acc_kind(acc: np.dtype, native: bool) -> str:
    """The accumulator as the typed kernels name it: u32, i32, f32, u64, i64, f64, p64u, p64i."""
    if acc.itemsize == 8 and acc.kind in "iu":
        return ("" if native else "p64") + ({"u": "u64", "i": "i64"}[acc.kind] if native else acc.kind)
    return {"u": "u", "i": "i", "f": "f"}[acc.kind] + str(8 * acc.itemsize)


_WGSL_ACC = {"u32": "u32", "i32": "i32", "f32": "f32", "u64": "u64", "i64": "i64", "f64": "f64",
             "p64u": "vec2<u32>", "p64i": "vec2<u32>"}
_F32_INF = "bitcast<f32>(0x7f800000u)"
_F32_NAN = "bitcast<f32>(0x7fc00000u)"
_IDENTITY = {
    "add": {"u32": "0u", "i32": "0i", "f32": "0.0f", "u64": "0lu", "i64": "0li", "f64": "f64(0.0f)",
            "p64u": "vec2<u32>(0u)", "p64i": "vec2<u32>(0u)"},
    "min": {"u32": "0xffffffffu", "i32": "2147483647i", "f32": _F32_INF, "u64": "0xfffffffffffffffflu",
            "i64": "9223372036854775807li", "f64": f"f64({_F32_INF})", "p64u": "vec2<u32>(0xffffffffu)",
            "p64i": "vec2<u32>(0xffffffffu, 0x7fffffffu)"},
    "max": {"u32": "0u", "i32": "(-2147483647i - 1i)", "f32": f"(-{_F32_INF})", "u64": "0lu",
            "i64": "(-9223372036854775807li - 1li)", "f64": f"f64(-{_F32_INF})", "p64u": "vec2<u32>(0u)",
            "p64i": "vec2<u32>(0u, 0x80000000u)"},
    "and": {"u32": "0xffffffffu", "i32": "-1i", "u64": "0xfffffffffffffffflu", "i64": "-1li",
            "p64u": "vec2<u32>(0xffffffffu)", "p64i": "vec2<u32>(0xffffffffu)"},
    "fmin": {"f32": _F32_NAN, "f64": f"f64({_F32_NAN})"},
}
for _op in ("or", "xor"):
    _IDENTITY[_op] = {k: v for k, v in _IDENTITY["add"].items() if k[0] != "f"}
_IDENTITY["fmax"] = _IDENTITY["fmin"]

# raw element kind (u: u32, i: i32, f: f32, p: vec2<u32>, d: f64) -> accumulator
_CONVERT = {
    "u": {"u32": "r", "i32": "bitcast<i32>(r)", "f32": "f32(r)", "u64": "u64(r)", "i64": "i64(r)",
          "f64": "f64(r)", "p64u": "vec2<u32>(r, 0u)", "p64i": "vec2<u32>(r, 0u)"},
    "i": {"u32": "bitcast<u32>(r)", "i32": "r", "f32": "f32(r)", "u64": "bitcast<u64>(i64(r))", "i64": "i64(r)",
          "f64": "f64(r)", "p64u": "vec2<u32>(bitcast<u32>(r), select(0u, 0xffffffffu, r < 0i))"},
    "f": {"f32": "r", "f64": "f64(r)", "i32": "i32(r)", "u32": "u32(r)"},
    "p": {"p64u": "r", "p64i": "r", "u64": "((u64(r.y) << 32u) | u64(r.x))",
          "i64": "bitcast<i64>((u64(r.y) << 32u) | u64(r.x))", "u32": "r.x", "i32": "bitcast<i32>(r.x)"},
    "d": {"f64": "r", "f32": "f32(r)"},
}
_CONVERT["i"]["p64i"] = _CONVERT["i"]["p64u"]


def can_read(in_dtype: np.dtype, acc: np.dtype, native: bool) -> bool:
    """Whether the typed kernels convert ``in_dtype`` to the accumulator ``acc`` themselves."""
    key = (in_dtype, acc, native)
    got = _CAN_READ.get(key)
    if got is None:
        got = _CAN_READ[key] = _acc_kind(np.dtype(acc), native) in _CONVERT[_IN[np.dtype(in_dtype)][1]]
    return got


_CAN_READ: dict = {}  # (in_dtype, acc, native) -> can_read's answer


_NONZERO = {"u": "r != 0u", "i": "r != 0i", "f": "!(r == 0.0f)", "p": "any(r != vec2<u32>(0u))",
            "d": "!(r == f64(0.0f))"}  # !(r == 0): NaN counts (naga's != is ordered)
_ONE = {"u32": "1u", "i32": "1i", "u64": "1lu", "i64": "1li", "p64u": "vec2<u32>(1u, 0u)", "p64i": "vec2<u32>(1u, 0u)"}


def typed_defines(op: str, in_dtype, acc: np.dtype, native: bool, primitive: str, result=None,
                  nonzero: bool = False) -> dict:
    """Defines of common/typed_monoid.wgsl and common/typed_load.wgsl for ``op`` over ``acc`` fed
    from ``in_dtype`` (``native``: 64-bit integers as WGSL's u64/i64, else as word pairs). For an
    8- or 16-bit integer ``result`` computed in ``acc``, min / max start from its own extremes (what
    an exclusive scan shows first). ``nonzero``: elements are read as 1 where nonzero, else 0."""
    acc = np.dtype(acc)
    kind = _acc_kind(acc, native)
    if acc.kind in "iu" and op in ("fmin", "fmax"):
        op = op[1:]  # np.fmin of integers is np.minimum
    ident = _IDENTITY[op].get(kind)
    if result is not None and np.dtype(result) in _SIBLING and np.dtype(result).kind in "iub" and op in ("min", "max"):
        ident = f"{int(exclusive_identity(op, result))}{kind[0]}"
    if ident is None:
        raise InputError(primitive, f"op {op!r} does not apply to {acc}")
    if kind.startswith("p64"):
        combine = {"add": "u64_add(a, b)", "min": f"{kind[3]}64_min(a, b)", "max": f"{kind[3]}64_max(a, b)"}.get(op)
    elif acc.kind == "f":
        combine = {"add": "a + b", "min": "nan_min(a, b)", "max": "nan_max(a, b)", "fmin": "fmin(a, b)",
                   "fmax": "fmax(a, b)"}[op]
    else:
        combine = {"add": "a + b", "min": "min(a, b)", "max": "max(a, b)"}.get(op)
    combine = combine or {"and": "a & b", "or": "a | b", "xor": "a ^ b"}[op]
    flag, raw, store = _IN[np.dtype(in_dtype)]
    d = {f: f == flag for f in _IN_FLAGS}
    if nonzero:  # each element counts 1 where it is nonzero (np.count_nonzero)
        cond = _NONZERO[raw]
        if raw == "d":  # float64 read as its two words, so that no shader-f64 is needed: +-0.0 is zero
            flag, raw, store = "IN_P64", "p", "vec2<u32>"
            cond = "any(vec2<u32>(r.x, r.y & 0x7fffffffu) != vec2<u32>(0u))"
        d = {f: f == flag for f in _IN_FLAGS}
        convert = f"select({_IDENTITY['add'][kind]}, {_ONE[kind]}, {cond})"
    else:
        convert = _CONVERT[raw][kind]
    d.update(ACC=_WGSL_ACC[kind], ACC_FLOAT=acc.kind == "f", ACC_F64=acc == F64, IDENTITY=ident, COMBINE=combine,
             CONVERT=convert, IN_STORE=store)
    return d


def numpy_identity(op: str, d: np.dtype):
    """What an exclusive scan puts first and an empty reduction gives (None: numpy raises)."""
    d = np.dtype(d)
    if op in ("add", "or", "xor"):
        return np.zeros((), d)[()]
    if op == "and":
        return np.array(-1).astype(d)[()] if d != B else np.True_
    if op in ("fmin", "fmax") and d.kind == "f":
        return d.type(np.nan)
    return None


def exclusive_identity(op: str, d: np.dtype):
    """The value an exclusive scan starts with: the op's identity (min: the dtype's largest value
    or +inf; fmin / fmax of floats: NaN)."""
    d = np.dtype(d)
    v = numpy_identity(op, d)
    if v is not None:
        return v
    small = op in ("min", "fmin")
    if d.kind == "f":
        return d.type(np.inf if small else -np.inf)
    if d == B:
        return np.bool_(small)
    info = np.iinfo(d)
    return d.type(info.max if small else info.min)


# ------------------------------------------------------------------ bit carriers (compaction, RLE)
# Compaction and run-length coding move and compare bits, and their kernels take 8- and 32-bit
# elements. Other dtypes travel as one of those: bool and int8 as uint8 (a view, no copy); 16-bit
# dtypes widened to uint32 on the host (a host pass over the input, and one narrowing the result);
# 64-bit dtypes as pairs of uint32 words where the primitive allows it (compaction: the mask is
# repeated per word on the host).
_CARRIED = (np.dtype(np.uint8), np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32))


def bit_carrier(x, primitive: str, pairs: bool = False):
    """``(carrier, restore, words)``: ``x`` as an array of a dtype the kernels take, a function
    turning a carried result back into ``x``'s dtype, and the words per element (2 for 64-bit
    elements carried as pairs). GpuArrays of other dtypes than uint8/int8/bool and the 32-bit ones
    raise InputError naming the choice (convert on the host)."""
    from ._array import GpuArray  # the array layer imports this module

    if isinstance(x, GpuArray):
        d = x.dtype
        if d in _CARRIED:
            return x, (lambda r: r), 1
        if d in (B, I8):
            def restore_gpu(r, d=d):
                return GpuArray(r.device, r.buffer, r.shape, d, r.byte_offset)
            return GpuArray(x.device, x.buffer, x.shape, U8, x.byte_offset), restore_gpu, 1
        raise InputError(primitive, f"a GpuArray of {d} is not supported here (8- or 32-bit elements); "
                         "pass a numpy array (carried on the host) or convert it")
    a = host_array(x, primitive)
    d = a.dtype
    if d in _CARRIED:
        return a, (lambda r: r), 1
    if d.itemsize == 1:
        return a.view(U8), (lambda r, d=d: r.view(d)), 1
    if d.itemsize == 2:
        return (a.view(U16).astype(U32), (lambda r, d=d: r.astype(U16).view(d)), 1)
    if pairs:
        c = np.ascontiguousarray(a).view(U32)  # (..., 2n) words, low word first
        return c, (lambda r, d=d: np.ascontiguousarray(r).view(d)), 2
    raise InputError(primitive, f"dtype {d} is not supported here (elements of 8, 16 or 32 bits)")


def mask_carrier(mask, primitive: str):
    """A numpy mask of any dtype as bool (``mask != 0``, NaN counting as true, as numpy); the
    kernels' own mask dtypes and GpuArrays pass as they are."""
    from ._array import GpuArray

    if isinstance(mask, GpuArray):
        return mask
    m = host_array(mask, primitive)
    if m.dtype in (B, U8, U32, I32):
        return m
    return m != 0

