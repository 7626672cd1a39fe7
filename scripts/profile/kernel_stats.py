"""Registers, local memory and workgroup memory of the kernels each primitive compiles, as the Vulkan
driver reports them, and how many workgroups of each an SM can then hold.

    bash scripts/profile/vkstats/build.sh          # once, where gcc is; carry the folder along
    python scripts/profile/kernel_stats.py [PRIMITIVE ...] [--options JSON ...]

PRIMITIVE is any of the names in CASES (default: all). Each ``--options`` set (test hooks,
``device().using(**set)``, e.g. ``'{"rle_vec4_per_thread": 8}'``) runs every primitive again.
The statistics come from the layer in
``scripts/profile/vkstats`` (VK_KHR_pipeline_executable_properties; NVIDIA reports "Register
Count", "Local Memory Size" and "Shared Memory Size"), which this script switches on for its own
process. Only kernels compiled for the first time under an option set are listed (the device
caches the rest).

Residency per SM, H100 (what bounds the workgroups an SM holds at once): 2048 invocations and 32
workgroups; 65536 registers, allocated per invocation in multiples of 8; and workgroup memory. For
the last the column uses a budget of 48 KiB per SM, with 1 KiB more per workgroup: measured here,
not documented (BENCHMARKS.md, "A caveat on workgroup memory per SM"): the driver does not give a
compute pipeline more than that, however little L1 it then needs.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAYER_DIR = HERE / "vkstats"
SMEM_BUDGET = 48 * 1024   # measured (see the docstring)
SMEM_PER_GROUP = 1024     # reserved per workgroup, as CUDA documents for this generation
REGS_PER_SM = 65536
THREADS_PER_SM = 2048
GROUPS_PER_SM = 32
MODE_FLAGS = {"SINGLE_PASS", "RTS_REDUCE", "RTS_DOWNSWEEP", "BITMASK", "STAGED", "REDUCE", "CHAIN", "LEAF",
              "UP", "DOWN", "RLE", "COMPACT", "SUBGROUPS"}
SIZE_DEFINES = {"WG", "VEC4_PER_THREAD", "ROWS", "TILE"}


def _case_inputs():
    import numpy as np

    import pywgpuprims as pp

    rng = np.random.default_rng(0)
    x32 = rng.integers(0, 10, 1 << 20).astype(np.uint32)
    i32 = rng.integers(0, 10, 1 << 20).astype(np.int32)
    img = rng.random((512, 512), dtype=np.float32)
    kinds = rng.choice([pp.CLIP_BEGIN, pp.CLIP_END, pp.CLIP_DRAW], 4096).astype(np.uint32)
    boxes = rng.random((4096, 4), dtype=np.float32)
    boxes[:, 2:] += boxes[:, :2]
    return {
        "scan": lambda: pp.scan(x32),
        "scan64": lambda: pp.scan(x32.astype(np.int64)),  # the single-pass 64-bit scan (wide/scan.wgsl)
        "scanf64": lambda: pp.scan(x32.astype(np.float64)),
        "reduce": lambda: pp.reduce(x32),
        "compact": lambda: pp.compact(i32, i32 > 4),
        "rle_encode": lambda: pp.rle_encode(i32),
        "rle_decode": lambda: pp.rle_decode(*pp.rle_encode(i32)),
        "bracket_match": lambda: pp.bracket_match(rng.random(1 << 20) < 0.5),
        "clip_bboxes": lambda: pp.clip_bboxes(kinds, boxes, (0.0, 0.0, 2.0, 2.0)),
        "summed_area_table": lambda: pp.summed_area_table(img),
        "gaussian_filter": lambda: pp.gaussian_filter(img, 3.0),
        "correlate": lambda: pp.correlate(img, rng.random((4, 5, 5), dtype=np.float32)),
        "fse": lambda: pp.fse.decompress(pp.fse.compress(rng.integers(0, 16, 1 << 18).astype(np.uint8).tobytes(),
                                                         mode="interleaved")),
    }


def residency(wg: int, regs: int, smem: int) -> tuple[int, int, int]:
    """Workgroups of ``wg`` invocations an SM holds, bounded by invocations, registers, memory."""
    by_threads = min(GROUPS_PER_SM, THREADS_PER_SM // max(wg, 1))
    warps = -(-wg // 32)
    by_regs = REGS_PER_SM // max(1, warps * 32 * (-(-regs // 8) * 8)) if regs else by_threads
    by_smem = SMEM_BUDGET // (smem + SMEM_PER_GROUP) if smem else GROUPS_PER_SM
    return by_threads, min(by_regs, GROUPS_PER_SM), min(by_smem, GROUPS_PER_SM)


def parse(line: str) -> dict:
    """One line of the layer: ``wg=X,Y,Z Name=value;...``."""
    head, _, rest = line.partition(" ")
    stats = {"wg": [int(v) for v in head.split("=")[1].split(",")]}
    for item in rest.split(";"):
        if "=" in item:
            k, v = item.strip().rsplit("=", 1)
            stats[k] = float(v) if "." in v or "e" in v else int(v)
    return stats


def main(argv: list[str]) -> None:
    names, option_sets = [], []
    args = iter(argv)
    for a in args:
        if a == "--options":
            option_sets.append(json.loads(next(args)))
        else:
            names.append(a)
    option_sets = option_sets or [{}]
    if not (LAYER_DIR / "build" / "libppstats.so").exists():
        sys.exit(f"build the layer first: bash {LAYER_DIR / 'build.sh'}")
    out = Path(tempfile.mkstemp(prefix="ppstats_", suffix=".txt")[1])
    # before wgpu creates its instance
    os.environ.update(VK_LAYER_PATH=str(LAYER_DIR), VK_INSTANCE_LAYERS="VK_LAYER_PP_stats", PPSTATS_OUT=str(out),
                      __GL_SHADER_DISK_CACHE="0")
    import pywgpuprims as pp

    dev = pp.device()
    print(f"# {dev.adapter_summary}")
    cases = _case_inputs()
    unknown = [n for n in names if n not in cases]
    if unknown:
        sys.exit(f"unknown primitives {unknown}; known: {sorted(cases)}")
    seen = [0]  # characters of the layer's file already read

    def new_lines() -> list[str]:
        text = out.read_text()
        lines, seen[0] = text[seen[0]:].splitlines(), len(text)
        return lines

    compiled: list[tuple[str, dict, list[str]]] = []
    plain_kernel = dev.kernel

    def kernel(path, entry="main", defines=None, constants=None):
        before = len(dev._kernels)
        k = plain_kernel(path, entry, defines, constants)
        if len(dev._kernels) != before:
            compiled.append((path, dict(defines or {}), new_lines()))
        return k

    dev.kernel = kernel
    for line in new_lines():  # the layer's word on the device, if any
        print(f"# {line}")
    rows = 0
    print("| primitive | options | kernel | workgroup | registers | local B | workgroup memory B "
          "| workgroups / SM (invocations, registers, memory) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for opts in option_sets:
        for name in names or list(cases):
            compiled.clear()
            with dev.using(**opts):
                cases[name]()
            for path, defines, lines in compiled:
                # the kernel's mode flags (stage, path) and sizes, in short
                flags = [k for k, v in sorted(defines.items()) if v is True and k in MODE_FLAGS]
                sizes = [f"{k}={v}" for k, v in sorted(defines.items()) if k in SIZE_DEFINES]
                mode = " ".join(flags + sizes)
                for line in lines:
                    if not line.startswith("wg="):
                        print(f"<!-- {line} -->")
                        continue
                    st = parse(line)
                    wg = st["wg"][0] * st["wg"][1] * st["wg"][2]
                    regs = int(st.get("Register Count", 0))
                    # NVIDIA reports local memory with bit 36 set (2^36 = none)
                    local = int(st.get("Local Memory Size", 0)) & 0xFFFFFFFF
                    smem = int(st.get("Shared Memory Size", 0))
                    r = residency(wg, regs, smem)
                    print(f"| {name} | {json.dumps(opts)} | {path} {mode} | {wg} | {regs} | {local} | {smem} "
                          f"| {min(r)} ({r[0]}, {r[1]}, {r[2]}) |")
                    rows += 1
    if not rows:
        print("# no statistics: the layer did not load, or the driver has no VK_KHR_pipeline_executable_properties")


if __name__ == "__main__":
    main(sys.argv[1:])
