"""Compare the scene renderer with resvg (the ``resvg-py`` package, CPU) on SVG files: the rule is
that a file passes when at most 1% of its pixels differ by more than 32/255 in any channel of
premultiplied RGBA. Used by the corpus test (tests/test_svg_corpus.py), ``scripts/svg_conformance.py``
and the gallery demo."""

from __future__ import annotations

import io
import warnings

import numpy as np

THRESHOLD = 32
MAX_BAD_FRACTION = 0.01


def premultiplied(img: np.ndarray) -> np.ndarray:
    """Straight-alpha RGBA uint8 to premultiplied (float 0-255)."""
    f = img.astype(np.float64)
    f[..., :3] *= f[..., 3:4] / 255.0
    return f


def render_resvg(text: str, width: int | None = None, height: int | None = None, zoom: float | None = None
                 ) -> np.ndarray:
    """resvg's rendering (premultiplied RGBA float 0-255) at ``width`` x ``height`` (resvg-py
    derives the height from the width when both are given), or at its own size times ``zoom``."""
    import imageio.v3 as iio  # noqa: PLC0415
    import resvg_py  # noqa: PLC0415

    # Generic families map to the DejaVu faces, as in pywgpuprims.scene.text (the only fonts found
    # on the test machines); resvg's default family is Times New Roman, a serif.
    size = {"zoom": zoom} if zoom is not None else {"width": width, "height": height}
    png = resvg_py.svg_to_bytes(svg_string=text, **size, dpi=96.0, font_family="DejaVu Serif",
                                serif_family="DejaVu Serif", sans_serif_family="DejaVu Sans",
                                monospace_family="DejaVu Sans Mono", cursive_family="DejaVu Sans",
                                fantasy_family="DejaVu Sans")
    img = iio.imread(io.BytesIO(bytes(png)))
    if img.shape[2] == 3:
        img = np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return premultiplied(img)


def render_ours(text: str, reference: bool = False):
    """``(premultiplied RGBA float, warnings)`` from :func:`load_svg` and the GPU (or the CPU reference)."""
    from .svg import load_svg  # noqa: PLC0415

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scene, w, h = load_svg(text)
        img = (scene.render_reference if reference else scene.render)(w, h, background=(0, 0, 0, 0))
    return premultiplied(img), [str(c.message) for c in caught]


def compare(a: np.ndarray, b: np.ndarray) -> tuple[bool, float, np.ndarray]:
    """``(passes, fraction of bad pixels, bad-pixel mask)`` of two premultiplied images. Sizes that
    differ by one pixel (rounding of a scaled canvas) compare on the common area."""
    if a.shape != b.shape:
        if max(abs(a.shape[0] - b.shape[0]), abs(a.shape[1] - b.shape[1])) > 1:
            return False, 1.0, np.ones(a.shape[:2], bool)
        h, w = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
        a, b = a[:h, :w], b[:h, :w]
    bad = (np.abs(a - b) > THRESHOLD).any(axis=2)
    frac = float(bad.mean())
    return frac <= MAX_BAD_FRACTION, frac, bad
