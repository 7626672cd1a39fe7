"""End to end, SVG file (or scene) -> pixels in numpy, wall time per file: ours beside resvg-py, skia-python
and the ``vello`` package, in the same run (issue 40's comparison).

    python -m pywgpuprims.bench.svg [--files F.svg ...] [--gallery 24] [--paths 100000] [--size 1920x1080]
                                    [--repeats 5] [--small] [--scene-only] [--json F]

Files: the conformance corpus (``tests/svg_corpus``), the gallery demo's files found on the machine
(``demos/svg_gallery.py``) or ``--files``. Each renderer's time is the median of ``--repeats`` calls
after one warm-up call (for resvg-py and skia-python, a first call over ``SLOW_S`` seconds is the
time: they have nothing to warm up), from the SVG text to an RGBA numpy array:

- ours: :func:`~pywgpuprims.scene.load_svg` + :meth:`Scene.render` (GPU, read back);
- resvg-py: ``svg_to_bytes`` at our canvas size (a PNG) and its decoding (resvg-py returns nothing else);
- skia-python: ``skia.SVGDOM`` rendered on a raster surface (CPU), read into numpy;
- vello (the ``vello`` PyPI package, Python bindings of linebender's vello): it has no SVG document
  loader (only path-data strings), so its file rows say so; on the scene it runs through its own
  scene API (paths, clip layers).

The scene: ``bench.scene.grid_scene`` (10^5 paths under 10^4 nested clips at 1920x1080 by default):
ours through the bulk API (build + flatten + GPU + read back), the others from the same scene as
SVG text (vello through its scene API); ours from that SVG text too when it has at most 20,000 paths
(``load_svg`` walks the elements in Python). ``--small``: 10 files, a 2,000-path scene at 480x270,
2 repeats (for a CPU adapter: lavapipe takes seconds per 10^4-path frame).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


#: A first call slower than this (seconds) is the only one timed (a CPU renderer on the big scene).
SLOW_S = 2.0


def _median_ms(fn, repeats: int, once_if_slow: bool = False) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()  # warm-up (shader compilation, font loading)
    first = time.perf_counter() - t0
    if once_if_slow and first > SLOW_S:  # a CPU renderer has nothing to warm up
        return 1e3 * first, out
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts), out


# ---------------------------------------------------------------- renderers: SVG text -> RGBA uint8
def ours_svg(text: str, size=None) -> np.ndarray:
    from ..scene import load_svg  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, w, h = load_svg(text)
    return s.render(w, h, background=(0, 0, 0, 0))


def resvg_svg(text: str, size=None) -> np.ndarray:
    import imageio.v3 as iio  # noqa: PLC0415
    import resvg_py  # noqa: PLC0415

    size_args = {} if size is None else {"width": int(size[0]), "height": int(size[1])}
    # dpi: resvg-py's default of 0 makes every size in mm, pt, in ... invalid
    return iio.imread(io.BytesIO(bytes(resvg_py.svg_to_bytes(svg_string=text, dpi=96.0, **size_args))))


def skia_svg(text: str, size=None) -> np.ndarray:
    """``size`` (w, h): the canvas when the document gives none (a viewBox only)."""
    import skia  # noqa: PLC0415

    dom = skia.SVGDOM.MakeFromStream(skia.MemoryStream(text.encode()))
    if dom is None:
        raise ValueError("skia cannot parse it")
    cs = dom.containerSize()
    if (cs.width() < 1 or cs.height() < 1) and size is not None:
        dom.setContainerSize(skia.Size(*size))
        cs = dom.containerSize()
    w, h = max(1, int(np.ceil(cs.width()))), max(1, int(np.ceil(cs.height())))
    surface = skia.Surface(w, h)
    with surface as canvas:
        dom.render(canvas)
    return surface.makeImageSnapshot().toarray(colorType=skia.kRGBA_8888_ColorType)


RENDERERS = {"ours": ours_svg, "resvg-py": resvg_svg, "skia-python": skia_svg}


def _available() -> dict:
    out = {}
    for name, mod in (("resvg-py", "resvg_py"), ("skia-python", "skia"), ("vello", "vello")):
        try:
            __import__(mod)
            out[name] = True
        except ImportError:
            out[name] = False
    return out


# ---------------------------------------------------------------- the benchmark scene
def _scene_parts(s) -> tuple:
    """The bulk op of a ``grid_scene`` (ops, records, counts, straight colours 0-255, rules) and its
    background fill."""
    bulk = next(op for op in s._ops if op[0] == "bulk")
    _, ops, rec, _, cnt, prem, rules = bulk
    a = prem[:, 3:4].astype(np.float64)
    rgb = np.where(a > 0, prem[:, :3] / np.maximum(a, 1e-12), 0) * 255
    return ops, rec, cnt, np.concatenate([rgb, a * 255], axis=1), rules


def _d(rec: np.ndarray) -> str:
    """Path data of one closed outline of cubic records."""
    lines = (rec[:, 2:4] == rec[:, 0:2]).all(axis=1) & (rec[:, 4:6] == rec[:, 6:8]).all(axis=1)
    parts = [f"M{rec[0, 0]:.3f} {rec[0, 1]:.3f}"]
    for r, ln in zip(rec, lines, strict=True):
        parts.append(f"L{r[6]:.3f} {r[7]:.3f}" if ln else "C" + " ".join(f"{v:.3f}" for v in r[2:]))
    return "".join(parts) + "Z"


def scene_svg(s, width: int, height: int) -> str:
    """A ``grid_scene`` as SVG text: nested groups with ``clip-path`` for the pushes, paths for the fills."""
    from ..scene import CLIP_BEGIN, CLIP_END  # noqa: PLC0415

    ops, rec, cnt, col, rules = _scene_parts(s)
    start = np.cumsum(cnt) - cnt
    defs, body = [], []
    for i, (o, a, k) in enumerate(zip(ops.tolist(), start.tolist(), cnt.tolist(), strict=True)):
        if o == CLIP_BEGIN:
            rule = "evenodd" if rules[i] else "nonzero"
            defs.append(f'<clipPath id="c{i}"><path clip-rule="{rule}" d="{_d(rec[a:a + k])}"/></clipPath>')
            body.append(f'<g clip-path="url(#c{i})">')
        elif o == CLIP_END:
            body.append("</g>")
        else:
            r, g, b, al = col[i]
            rule = ' fill-rule="evenodd"' if rules[i] else ""
            body.append(f'<path fill="rgb({r:.0f},{g:.0f},{b:.0f})" fill-opacity="{al / 255:.4f}"{rule} '
                        f'd="{_d(rec[a:a + k])}"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
            f'<rect width="{width}" height="{height}" fill="rgb(245,245,240)"/><defs>{"".join(defs)}</defs>'
            + "".join(body) + "</svg>")


def vello_scene(s, width: int, height: int):
    """The scene through the ``vello`` package's scene API: a function returning RGBA uint8."""
    import vello  # noqa: PLC0415

    from ..scene import CLIP_BEGIN, CLIP_END  # noqa: PLC0415

    ops, rec, cnt, col, rules = _scene_parts(s)
    start = np.cumsum(cnt) - cnt

    def path(r):
        p = vello.BezPath()
        p.move_to(float(r[0, 0]), float(r[0, 1]))
        for x in r.tolist():
            p.cubic_to(*x[2:])
        p.close_path()
        return p

    renderer = vello.Renderer()

    def frame():
        sc = vello.Scene()
        sc.fill(vello.Rect(0, 0, width, height), vello.Color.from_rgba8(245, 245, 240, 255))
        for i, (o, a, k) in enumerate(zip(ops.tolist(), start.tolist(), cnt.tolist(), strict=True)):
            if o == CLIP_BEGIN:  # vello's clip layers use the nonzero rule
                sc.push_clip_layer(path(rec[a:a + k]))
            elif o == CLIP_END:
                sc.pop_layer()
            else:
                r, g, b, al = (int(round(v)) for v in col[i])
                sc.fill(path(rec[a:a + k]), vello.Color.from_rgba8(r, g, b, al))
        buf = renderer.render_to_rgba(sc, width, height)
        return np.frombuffer(buf, np.uint8).reshape(height, width, 4)

    return frame


def bench_scene(n_paths: int, width: int, height: int, repeats: int, avail: dict) -> list[dict]:
    from .scene import grid_scene  # noqa: PLC0415

    rows = []
    n_clips = n_paths // 10
    label = f"scene {n_paths} paths, {3 * max(1, n_clips // 3)} clips, {width}x{height}"
    timings: dict = {}

    walls: list = []  # per untimed call: (build, render) seconds

    def ours(timed: bool = False):
        t0 = time.perf_counter()
        s = grid_scene(n_paths, n_clips, width, height)
        timings.clear()
        timings["build"] = time.perf_counter() - t0
        img = s.render(width, height, timings=timings if timed else None)
        if not timed:
            walls.append((timings["build"], time.perf_counter() - t0 - timings["build"]))
        return img

    ms, img = _median_ms(ours, repeats)  # untimed stages: timing each stage waits for the GPU between them
    build, render = (1e3 * statistics.median(v) for v in zip(*walls[1:], strict=True))
    ours(timed=True)
    split = ", ".join(f"{k} {1e3 * v:.1f}" for k, v in timings.items())
    rows.append({"file": label, "renderer": "ours (bulk API)", "ms": ms,
                 "note": f"untimed calls, median ms: build {build:.1f}, render {render:.1f}; a timed run, ms: {split}"})
    s = grid_scene(n_paths, n_clips, width, height)
    text = scene_svg(s, width, height)
    if n_paths <= 20_000:
        rows.append(_file_row(label, "ours", text, repeats, img))
    for name in ("resvg-py", "skia-python"):
        rows.append(_file_row(label, name, text, repeats, img) if avail[name] else
                    {"file": label, "renderer": name, "ms": None, "note": "not installed"})
    if avail["vello"] and _vello_on_cpu():
        rows.append({"file": label, "renderer": "vello (scene API)", "ms": None,
                     "note": f"skipped: vello's adapter is a CPU ({_vello_adapter()}; minutes per first frame)"})
    elif avail["vello"]:
        try:
            ms, vimg = _median_ms(vello_scene(s, width, height), repeats)
            rows.append({"file": label, "renderer": "vello (scene API)", "ms": ms,
                         "note": _agree(vimg, img) + f"; adapter {_vello_adapter()}"})
        except Exception as exc:  # noqa: BLE001  (report, never hide, a competitor's failure)
            rows.append({"file": label, "renderer": "vello (scene API)", "ms": None, "note": f"failed: {exc}"})
    return rows


def _vello_on_cpu() -> bool:
    import vello  # noqa: PLC0415

    return str(vello.get_gpu_info().get("device_type", "")).lower() == "cpu"


def _vello_adapter() -> str:
    import vello  # noqa: PLC0415

    info = vello.get_gpu_info()
    return f"{info.get('name')} ({info.get('backend')})"


def _agree(img: np.ndarray, ref: np.ndarray) -> str:
    """Share of pixels within 32/255 of ``ref`` (straight RGBA, same size), as a note."""
    if img.shape[:2] != ref.shape[:2]:
        return f"size {img.shape[1]}x{img.shape[0]} vs {ref.shape[1]}x{ref.shape[0]}"
    a = img[..., :4].astype(np.int32)
    b = ref[..., :4].astype(np.int32)
    return f"{100 * (np.abs(a - b) <= 32).all(axis=-1).mean():.1f}% pixels agree with ours"


def _file_row(name: str, renderer: str, text: str, repeats: int, ours_img=None) -> dict:
    try:
        size = None if ours_img is None else (ours_img.shape[1], ours_img.shape[0])
        ms, img = _median_ms(lambda: RENDERERS[renderer](text, size), repeats, once_if_slow=renderer != "ours")
    except Exception as exc:  # noqa: BLE001  (a renderer that refuses a file: reported in the table)
        return {"file": name, "renderer": renderer, "ms": None, "note": f"failed: {type(exc).__name__}: {exc}"}
    note = "" if ours_img is None or renderer == "ours" else _agree(_straight(img), ours_img)
    return {"file": name, "renderer": renderer, "ms": ms, "note": note}


def _straight(img: np.ndarray) -> np.ndarray:
    if img.shape[-1] == 3:
        return np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return img


def corpus_files() -> list[Path]:
    return sorted((ROOT / "tests" / "svg_corpus").rglob("*.svg"))


def gallery_files(count: int) -> list[Path]:
    import importlib.util  # noqa: PLC0415

    demo = ROOT / "demos" / "svg_gallery.py"
    if not demo.exists() or count <= 0:
        return []
    spec = importlib.util.spec_from_file_location("_svg_gallery", demo)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.find_svgs(count))


def bench_files(files: list[Path], repeats: int, avail: dict) -> list[dict]:
    rows = []
    for f in files:
        text = f.read_text(errors="replace")
        name = os.path.relpath(f, ROOT) if str(f).startswith(str(ROOT)) else f.name
        rows.append(_file_row(name, "ours", text, repeats))
        try:
            ours_img = ours_svg(text)
        except Exception:  # noqa: BLE001  (its row says why)
            ours_img = None
        for other in ("resvg-py", "skia-python"):
            rows.append(_file_row(name, other, text, repeats, ours_img) if avail[other] else
                        {"file": name, "renderer": other, "ms": None, "note": "not installed"})
    return rows


def summary(rows: list[dict]) -> list[str]:
    """Per renderer: files timed, total and geometric-mean ms over the files every renderer drew."""
    files = sorted({r["file"] for r in rows if not r["file"].startswith("scene ")})
    by = {(r["file"], r["renderer"]): r["ms"] for r in rows}
    names = sorted({r["renderer"] for r in rows if not r["file"].startswith("scene ")})
    common = [f for f in files if all(by.get((f, n)) is not None for n in names)]
    out = [f"files drawn by every renderer: {len(common)} of {len(files)}"]
    for n in names:
        v = np.array([by[(f, n)] for f in common])
        if len(v):
            out.append(f"  {n:12s} total {v.sum():9.1f} ms   geometric mean {np.exp(np.log(v).mean()):7.2f} ms/file")
    out.append("  vello        no SVG document loader in the vello package (path-data strings only): no file rows")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pywgpuprims.bench.svg", description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", help="SVG files (default: the corpus and the gallery's files)")
    ap.add_argument("--gallery", type=int, default=24, help="gallery files to add to the corpus (0: none)")
    ap.add_argument("--paths", type=int, default=100_000, help="paths in the benchmark scene (0: no scene)")
    ap.add_argument("--scene-only", action="store_true", help="no file rows, the scene only")
    ap.add_argument("--size", default="1920x1080", help="the scene's canvas, WxH")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per file and renderer (median)")
    ap.add_argument("--small", action="store_true", help="10 files, a 2,000-path scene at 480x270, 2 repeats")
    ap.add_argument("--json", help="write the rows as JSON to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    from .._device import device  # noqa: PLC0415

    W, H = (int(v) for v in args.size.lower().split("x"))
    files = [Path(f) for f in args.files] if args.files else corpus_files() + gallery_files(args.gallery)
    repeats, n_paths = max(1, args.repeats), args.paths
    if args.small:
        files = files[:: max(1, len(files) // 10)][:10]
        n_paths, W, H, repeats = min(n_paths, 2_000), 480, 270, 2
    avail = _available()
    print(f"device: {device().adapter_summary}; host: {os.cpu_count()} cores", flush=True)
    rows = [] if args.scene_only else bench_files(files, repeats, avail)
    if n_paths > 0:
        rows += bench_scene(n_paths, W, H, repeats, avail)
    if not rows:
        print("nothing to time")
        return 0
    width = max(len(r["file"]) for r in rows)
    print(f"{'file':{width}s}  {'renderer':18s}  {'ms':>9s}  note")
    for r in rows:
        ms = f"{r['ms']:9.2f}" if r["ms"] is not None else "        -"
        print(f"{r['file']:{width}s}  {r['renderer']:18s}  {ms}  {r['note']}")
    print("\n".join(summary(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device().adapter_summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
