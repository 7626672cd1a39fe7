"""A contact sheet of real SVG files found on this machine: ours (GPU) beside resvg-py's, differences
marked in red, the verdict of the conformance rule under each (at most 1% of pixels off by more than
32/255 in premultiplied RGBA).

    python demos/svg_gallery.py [OUT.png] [--files F.svg ...] [--count 24] [--cell 96]

Without --files, SVGs are picked from where systems and Python packages keep them (icon themes,
matplotlib's and distributed's images, the Rust book's figures), spread over those folders.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from svg_conformance import check  # noqa: E402

import pywgpuprims as pp  # noqa: E402
from pywgpuprims.scene import load_svg  # noqa: E402

PATTERNS = [
    "/usr/share/icons/*/scalable/*/*.svg",
    "/usr/share/pixmaps/*.svg",
    "/usr/share/doc/**/*.svg",
    "{site}/matplotlib/mpl-data/images/*.svg",
    "{site}/distributed/http/static/images/*.svg",
    "{site}/*/**/*.svg",
    os.path.expanduser("~/.rustup/toolchains/*/share/doc/rust/html/book/img/**/*.svg"),
]


def find_svgs(count: int) -> list[Path]:
    """Up to ``count`` SVG files under 200 kB, spread over the folders they were found in."""
    import numpy  # noqa: PLC0415

    site = str(Path(numpy.__file__).resolve().parents[1])
    by_dir: dict[str, list[str]] = {}
    seen = set()
    for pat in PATTERNS:
        for f in sorted(glob.glob(pat.format(site=site), recursive=True)):
            real = os.path.realpath(f)
            key = (os.path.basename(real), os.path.getsize(real))  # the same file in several places
            if key in seen or os.path.getsize(real) > 200_000 or "/tests/" in real:
                continue
            seen.add(key)
            by_dir.setdefault(os.path.dirname(real), []).append(real)
    picked: list[Path] = []
    dirs = sorted(by_dir)
    rng = np.random.default_rng(7)
    queues = {d: list(rng.permutation(by_dir[d])) for d in dirs}
    while len(picked) < count and any(queues.values()):
        for d in dirs:
            if queues[d] and len(picked) < count:
                picked.append(Path(queues[d].pop()))
    return picked


def _over_white(p: np.ndarray) -> np.ndarray:
    a = p[..., 3:4] / 255.0
    return np.clip(p[..., :3] + 255.0 * (1 - a), 0, 255).astype(np.uint8)


def _fit(img: np.ndarray, cell: int) -> np.ndarray:
    out = np.full((cell, cell, 3), 255, np.uint8)
    h, w = min(cell, img.shape[0]), min(cell, img.shape[1])
    y0, x0 = (cell - h) // 2, (cell - w) // 2
    out[y0:y0 + h, x0:x0 + w] = img[:h, :w]
    return out


def _label(text: str, width: int, color: str) -> np.ndarray:
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="16">'
           f'<text x="3" y="12" font-family="DejaVu Sans" font-size="11" fill="{color}">'
           f'{text.replace("&", "&amp;").replace("<", "&lt;")}</text></svg>')
    s, w, h = load_svg(svg)
    return s.render(w, h)[..., :3]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", nargs="?", default="out/svg_gallery.png")
    ap.add_argument("--files", nargs="*")
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--cell", type=int, default=96)
    ap.add_argument("--columns", type=int, default=4)
    args = ap.parse_args()
    files = [Path(f) for f in args.files] if args.files else find_svgs(args.count)
    if not files:
        print("no SVG files found")
        return 1
    print(f"adapter: {pp.device().adapter_summary}; {len(files)} files")
    cell, gap = args.cell, 6
    tiles = []
    n_pass = 0
    t_ours = t_resvg = 0.0
    for f in files:
        r = check(f, cell, fit=True)
        name = f"{f.parent.name}/{f.name}"
        if "ours" not in r:
            print(f"  {name}: {r.get('error')}")
            panels = [np.full((cell, cell, 3), 255, np.uint8)] * 3
            verdict, color = "error", "#b00"
        else:
            ref = _over_white(r["ref"])
            a = r["ours"][..., 3:4].astype(np.float64) / 255
            ours = _over_white(np.concatenate([r["ours"][..., :3] * a, r["ours"][..., 3:4]], axis=2))
            marked = (ours * 0.35 + 165).astype(np.uint8)
            h, w = r["bad"].shape
            marked[:h, :w][r["bad"]] = (220, 0, 0)
            panels = [_fit(ours, cell), _fit(ref, cell), _fit(marked, cell)]
            n_pass += r["ok"]
            t_ours += r["ours_s"]
            t_resvg += r["resvg_s"]
            verdict = f"{'pass' if r['ok'] else 'FAIL'} {r['frac']:.1%}"
            color = "#070" if r["ok"] else "#b00"
            if r.get("warnings"):
                verdict += " (warned)"
            print(f"  {verdict:<18} {f}")
        body = np.concatenate([panels[0], np.full((cell, 2, 3), 200, np.uint8), panels[1],
                               np.full((cell, 2, 3), 200, np.uint8), panels[2]], axis=1)
        lab = _label(f"{name[:38]}", body.shape[1], "#222")
        lab2 = _label(verdict, body.shape[1], color)
        tiles.append(np.concatenate([body, lab, lab2], axis=0))
    cols = args.columns
    th, tw = tiles[0].shape[:2]
    rows = -(-len(tiles) // cols)
    head = _label(f"pywgpuprims (left) | resvg-py (middle) | differences > 32/255 in red (right): "
                  f"{n_pass}/{len(tiles)} pass", cols * (tw + gap), "#000")
    sheet = np.full((rows * (th + gap) + gap, cols * (tw + gap) + gap, 3), 240, np.uint8)
    for i, t in enumerate(tiles):
        y, x = gap + (i // cols) * (th + gap), gap + (i % cols) * (tw + gap)
        sheet[y:y + th, x:x + tw] = t
    sheet = np.concatenate([np.pad(head, ((4, 0), (gap, 0), (0, 0)), constant_values=240)[:, :sheet.shape[1]],
                            sheet], axis=0)
    import imageio.v3 as iio  # noqa: PLC0415

    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(args.output, sheet)
    print(f"{n_pass}/{len(tiles)} pass; load+render {t_ours:.2f} s (ours, GPU), {t_resvg:.2f} s (resvg-py); "
          f"wrote {args.output} ({os.path.getsize(args.output) // 1024} kB)")
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"total {time.perf_counter() - t0:.1f} s")
    sys.exit(rc)
