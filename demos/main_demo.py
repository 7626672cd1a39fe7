"""The README's main demo: a short benchmark of the scan on the default adapter.

Prints the adapter, then the inclusive add-scan rate beside a WGSL copy over the same bytes,
checked against numpy. Writes ``out/main_demo.png`` (a plot of the rates).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pywgpuprims as pp  # noqa: E402
from pywgpuprims import bench  # noqa: E402


def main() -> int:
    dev = pp.device()
    print(f"adapter: {dev.adapter_summary}")
    names = [n for n in ("copy", "scan") if n in bench.REGISTRY]
    sizes = [1 << 16, 1 << 20] if dev.info.get("adapter_type") == "CPU" else [1 << 20, 1 << 24, 1 << 28]
    rows = bench.run(names, sizes, repeats=5, cpu=True)
    print(bench._fmt_table(rows))
    out = Path("out")
    out.mkdir(exist_ok=True)
    try:
        bench.plot(rows, str(out / "main_demo.png"))
        print(f"plot written to {os.path.abspath(out / 'main_demo.png')}")
    except ImportError:
        print("matplotlib not installed: no plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
