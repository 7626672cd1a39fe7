"""``python -m pywgpuprims info``: adapters found, the chosen one, its backend, limits, features."""

from __future__ import annotations

import sys

USAGE = """\
usage: python -m pywgpuprims [-h] [--version] {info}

pywgpuprims: GPU parallel primitives (scan, reduce, compaction, run lengths, summed-area tables,
recursive filters, correlation, FSE compression, 2-D scenes) as WGSL compute shaders.

commands:
  info           list the adapters wgpu finds and describe the one pywgpuprims uses
                 (backend, limits, features)

options:
  -h, --help     show this help and exit
  --version      show the version and exit

related commands:
  python -m pywgpuprims.bench --help    benchmarks
  python -m pywgpuprims.fse --help      FSE compression of files

environment:
  PYWGPUPRIMS_BACKEND=vulkan|gl|metal|d3d12   choose the wgpu backend
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    if argv and argv[0] == "--version":
        from . import __version__
        print(f"pywgpuprims {__version__}")
        return 0
    if len(argv) != 1 or argv[0] != "info":
        what = f"unknown arguments: {' '.join(argv)}\n" if argv else ""
        print(what + USAGE.split("\n\n")[0], file=sys.stderr)
        return 2
    import os

    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    import wgpu

    import pywgpuprims as pp

    print("adapters found:")
    for a in wgpu.gpu.enumerate_adapters_sync():
        print(f"  - {a.summary} [{a.info.get('backend_type')}, {a.info.get('adapter_type')}]")
    try:
        dev = pp.device()
    except RuntimeError as exc:
        print(f"no usable adapter: {exc}")
        return 1
    print("chosen:")
    print("  " + dev.describe().replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
