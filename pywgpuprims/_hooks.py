"""Test hooks: the one typed object of switches that force rare paths (issue 38).

A primitive reads ``device().hooks`` (a frozen :class:`TestHooks`); tests set fields for a block
with ``device().using(name=value, ...)``, which checks every name and type (an unknown name or a
wrong type raises) and restores the previous hooks afterwards. Defaults leave every primitive on
its shipped path: a hook forces a fallback or a repair, withholds tiles, shrinks a budget, a tile
or a binding limit, turns subgroups off, or routes statistics counters to a buffer. Tuning values
live with their families (``ScanTuning``, ``RleTuning``, ...), user choices are function
arguments (``method=``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class TestHooks:
    """Switches for tests (each None or default: the shipped behaviour).

    ``*_stats_buffer`` fields take a buffer (a GpuArray's ``.buffer``) that receives a single
    pass's counter words. See each family's module docstring for what its hooks force.
    """

    __test__ = False  # not a pytest test class

    # every family
    max_binding: int | None = None         # bytes per storage binding (forces chunking past the limit)
    # scan and reduce (pywgpuprims/scan.py)
    scan_subgroups: bool = True            # False: the workgroup-memory path
    scan_withhold_period: int = 0          # every k-th tile withholds its state (forces fallbacks)
    scan_max_steps: int | None = None      # lookback step budget (0: every lookback walks)
    scan_max_self: int | None = None       # tiles that walk may cover (0 with steps 0: the repair)
    scan_spin_limit: int | None = None     # polls of a silent predecessor before its fallback
    scan_lb_stats: Literal["steps", "spins"] | None = None  # state word 3 counts lookback steps / polls
    scan_wg: int | None = None             # other tiles: invocations per workgroup
    scan_vec4_per_thread: int | None = None            # other tiles: vec4 words per invocation
    scan_stats_buffer: Any = None          # receives the single pass's 4 counter words
    reduce_loads: int | None = None        # vec4 loads per invocation of the reduction's first pass
    hide_shader_int64: bool = False        # typed kernels act as if the adapter lacked it: 64-bit word pairs
    hide_shader_f64: bool = False          # typed kernels act as if the adapter lacked it: float64 raises
    # compaction and run-length coding (pywgpuprims/compaction.py)
    rle_subgroups: bool = True             # False: the workgroup-memory paths (staged encoder)
    rle_withhold_period: int = 0
    rle_max_steps: int | None = None
    rle_max_self: int | None = None
    rle_stats_buffer: Any = None
    rle_wg: int | None = None              # other tiles and staging sizes
    rle_vec4_per_thread: int | None = None
    rle_compact_vec4_per_thread: int | None = None
    rle_stage: int | None = None
    rle_decode_vec4_per_thread: int | None = None
    rle_decode_cap: int | None = None      # small: expand tiles search per element
    # bracket matching (pywgpuprims/stack.py)
    stack_wg: int | None = None
    stack_spine_wg: int | None = None
    stack_subgroups: bool = True
    stack_withhold_period: int = 0
    stack_force_repair: bool = False
    stack_max_steps: int | None = None
    stack_max_hops: int | None = None
    stack_chain_cap: int | None = None
    stack_spin_limit: int | None = None
    stack_list_spin: int | None = None
    stack_stale_lists: bool = False        # no list entry carries the epoch: every read rebuilds
    stack_no_sizes: bool = False           # no partition publishes its size
    stack_round_stats: Literal["look", "walk", "rebuild"] | None = None
    stack_stats_buffer: Any = None
    # recursive filters (pywgpuprims/recfilter.py)
    recfilter_regtile: bool = True         # False: every overlapped tile in workgroup memory
    recfilter_fix_seg: tuple[int, int, int] | None = None  # fix-up (lines/workgroup, segments, batch)
    recfilter_fix_reg_max: int | None = None  # 0: every fix-up segment loops over its blocks
    # FSE (pywgpuprims/fse/_codec.py)
    fse_poison_outputs: bool = False       # fill decode outputs with 0xDEADBEEF first
    # scene rendering
    scene_layout: Literal["gpu", "host"] = "gpu"
    scene_stack_bytes: int | None = None


_FIELDS = {f.name: f for f in dataclasses.fields(TestHooks)}
_HINTS = typing.get_type_hints(TestHooks)


def _accepts(hint, value) -> bool:
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(h, value) for h in typing.get_args(hint))
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin is tuple:
        args = typing.get_args(hint)
        return (isinstance(value, tuple) and len(value) == len(args)
                and all(_accepts(h, v) for h, v in zip(args, value, strict=True)))
    if hint is type(None):
        return value is None
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def replace_hooks(hooks: TestHooks, changes: dict) -> TestHooks:
    """``hooks`` with ``changes``, each name and type checked (TypeError otherwise)."""
    for name, value in changes.items():
        if name not in _FIELDS:
            raise TypeError(f"unknown test hook {name!r} (see pywgpuprims._hooks.TestHooks)")
        if not _accepts(_HINTS[name], value):
            raise TypeError(f"test hook {name}={value!r}: expected {_HINTS[name]}")
    return dataclasses.replace(hooks, **changes)
