"""The README's main demo: render a clipped 2-D scene on the default adapter.

Runs ``demos/clipped_scene.py`` (a grid of shapes under three nested levels of clip circles and
stars), prints the time per stage, checks it against the CPU reference and says where the PNG is
(``out/clipped_scene.png``). Quick on lavapipe (a few seconds).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import clipped_scene  # noqa: E402


def main() -> int:
    size = "480x360"
    try:
        import pywgpuprims as pp  # noqa: PLC0415

        if pp.device().info.get("adapter_type") != "CPU":
            size = "1600x1200"
    except Exception:
        pass
    sys.argv = [sys.argv[0], "out/clipped_scene.png", "--size", size, "--check"]
    return clipped_scene.main()


if __name__ == "__main__":
    sys.exit(main())
