"""Monoids over 32-bit element types, as WGSL defines for ``wgsl/common/monoid.wgsl``.

Shared by every family that scans or reduces (scan, compaction, stack monoid, ...).
"""

from __future__ import annotations

import numpy as np

from ._errors import InputError

WGSL_TYPE = {np.dtype(np.uint32): "u32", np.dtype(np.int32): "i32", np.dtype(np.float32): "f32"}
OPS = ("add", "min", "max", "and", "or", "xor")

_IDENTITY = {
    "add": {"u32": "0u", "i32": "0i", "f32": "0.0f"},
    "min": {"u32": "0xffffffffu", "i32": "2147483647i", "f32": "bitcast<f32>(0x7f800000u)"},
    "max": {"u32": "0u", "i32": "(-2147483647i - 1i)", "f32": "bitcast<f32>(0xff800000u)"},
    "and": {"u32": "0xffffffffu", "i32": "-1i"},
    "or": {"u32": "0u", "i32": "0i"},
    "xor": {"u32": "0u", "i32": "0i"},
}
_COMBINE = {"add": "a + b", "min": "min(a, b)", "max": "max(a, b)", "and": "a & b", "or": "a | b", "xor": "a ^ b"}
_SG = {"add": "subgroupAdd", "min": "subgroupMin", "max": "subgroupMax", "and": "subgroupAnd",
       "or": "subgroupOr", "xor": "subgroupXor"}
_NUMPY_IDENTITY = {"add": 0, "or": 0, "xor": 0, "and": -1}


def monoid_defines(op: str, dtype, primitive: str) -> dict:
    """WGSL defines for ``op`` over ``dtype``; raises InputError for unsupported pairs."""
    dtype = np.dtype(dtype)
    if op not in OPS:
        raise InputError(primitive, f"op {op!r} is not supported (expected one of {', '.join(OPS)})")
    t = WGSL_TYPE.get(dtype)
    if t is None:
        raise InputError(primitive, f"dtype {dtype} is not supported (expected uint32, int32 or float32)")
    if t not in _IDENTITY[op]:
        raise InputError(primitive, f"op {op!r} needs an integer dtype, got {dtype}")
    return {"T": t, "IDENTITY": _IDENTITY[op][t], "COMBINE": _COMBINE[op], "SG_REDUCE": _SG[op],
            "OP_ADD": op == "add"}


def numpy_ufunc(op: str):
    return {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
            "or": np.bitwise_or, "xor": np.bitwise_xor}[op]


def numpy_identity(op: str, dtype):
    """numpy's value for an empty reduction, or None where numpy raises."""
    if op not in _NUMPY_IDENTITY:
        return None
    return np.array(_NUMPY_IDENTITY[op]).astype(dtype)
