"""``python -m pywgpuprims info``: adapters found, the chosen one, its backend, limits, features."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("info",):
        print("usage: python -m pywgpuprims info\n       python -m pywgpuprims.bench --help", file=sys.stderr)
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
