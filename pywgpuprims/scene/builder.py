"""The scene builder: :class:`Scene` records fills and clip pushes/pops in painter's order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InputError
from .geometry import Path, as_transform
from .paint import Gradient, gradient_block
from .plan import ScenePlan

_RULES = {"nonzero": 0, "evenodd": 1}


def _rule(fill_rule: str) -> int:
    if fill_rule not in _RULES:
        raise InputError("scene", f"fill_rule must be 'nonzero' or 'evenodd', got {fill_rule!r}")
    return _RULES[fill_rule]


def _color(rgba) -> tuple[float, float, float, float]:
    c = np.asarray(rgba, dtype=np.float64).ravel()
    if c.shape == (3,):
        c = np.append(c, 255.0)
    if c.shape != (4,) or not np.all(np.isfinite(c)) or c.min() < 0 or c.max() > 255:
        raise InputError("scene", f"a colour is an (r, g, b[, a]) tuple of 0-255 values, got {rgba!r}")
    return tuple(float(v) for v in c)

@dataclass
class _Part:
    rec: np.ndarray
    kind: np.ndarray
    rule: int
    new_term: bool  # starts a new product term: a clip is the union of products of parts


class Scene:
    """A list of fills and clips in painter's order; see the module docs.

    Examples
    --------
    >>> from pywgpuprims.scene import Scene, circle
    >>> s = Scene()
    >>> s.fill(circle(8, 8, 6), (255, 0, 0, 128))
    >>> len(s)
    1
    """

    def __init__(self):
        self._ops: list[tuple] = []  # ("fill", parts, color) | ("push", parts) | ("pop",)
        self._depth = 0
        self.max_depth = 0

    def __len__(self) -> int:
        return len(self._ops)

    @property
    def depth(self) -> int:
        """Clips pushed and not yet popped."""
        return self._depth

    @staticmethod
    def _parts_of(path: Path, fill_rule: str, transform) -> list[_Part]:
        if not isinstance(path, Path):
            raise InputError("scene", f"expected a Path, got {type(path).__name__}")
        rec, kind = path.records(as_transform(transform))
        if not np.isfinite(rec).all():
            raise InputError("scene", "path coordinates (after the transform) must be finite")
        return [_Part(rec, kind, _rule(fill_rule), True)]

    def fill(self, path: Path, paint, fill_rule: str = "nonzero", transform=None, opacity: float = 1.0,
             bbox=None) -> None:
        """Fill ``path`` under the current clips with ``paint``: an (r, g, b[, a]) colour (0-255,
        straight alpha) or a :class:`Gradient` (its ``objectBoundingBox`` units refer to ``bbox``,
        default the path's bounding box in user space), times ``opacity``."""
        if isinstance(paint, Gradient):
            if not (0 <= float(opacity) <= 1):
                raise InputError("scene", f"opacity must be in [0, 1], got {opacity!r}")
            parts = self._parts_of(path, fill_rule, transform)
            block = gradient_block(paint, path.bbox() if bbox is None else bbox, as_transform(transform),
                                   float(opacity))
            if block is not None:
                self._ops.append(("fill", parts, (255.0, 255.0, 255.0, 255.0), block))
            return
        c = _color(paint)
        if opacity != 1.0:
            if not (0 <= float(opacity) <= 1):
                raise InputError("scene", f"opacity must be in [0, 1], got {opacity!r}")
            c = (*c[:3], c[3] * float(opacity))
        self._ops.append(("fill", self._parts_of(path, fill_rule, transform), c))

    def push_clip(self, path: Path, fill_rule: str = "nonzero", transform=None) -> None:
        """Intersect the clip with ``path`` until the matching :meth:`pop_clip`."""
        self._push(self._parts_of(path, fill_rule, transform))

    def push_clip_union(self, terms: list[list[tuple[Path, str, object]]]) -> None:
        """Push a clip that is a union of intersections: ``terms`` is a list of products, each a list
        of ``(path, fill_rule, transform)``. (SVG ``clipPath`` with several children and nested
        ``clip-path`` references is expressed this way.) An empty list clips everything away."""
        parts: list[_Part] = []
        for term in terms:
            for j, (path, rule, tr) in enumerate(term):
                p = self._parts_of(path, rule, tr)[0]
                p.new_term = j == 0
                parts.append(p)
        self._push(parts)

    def _push(self, parts: list[_Part]) -> None:
        self._ops.append(("push", parts))
        self._depth += 1
        self.max_depth = max(self.max_depth, self._depth)

    def pop_clip(self) -> None:
        """End the innermost clip."""
        if self._depth == 0:
            raise InputError("scene", "pop_clip without a matching push_clip")
        self._ops.append(("pop",))
        self._depth -= 1

    def _check_balanced(self) -> None:
        if self._depth:
            raise InputError("scene", f"{self._depth} push_clip call(s) without a matching pop_clip")

    def plan(self, width: int, height: int, background=(255, 255, 255, 255), layout: bool = True) -> ScenePlan:
        """Flatten (and with ``layout``, lay out on the host) the scene for a ``width`` x ``height`` canvas."""
        self._check_balanced()
        return ScenePlan(self._ops, int(width), int(height), _color(background), layout)

    def render(self, width: int, height: int, background=(255, 255, 255, 255), timings: dict | None = None
               ) -> np.ndarray:
        """Render on the GPU: an (height, width, 4) uint8 array, sRGB values, straight alpha.

        ``timings`` (a dict), when given, receives host and GPU seconds per stage.
        """
        from .gpu import render_plan  # noqa: PLC0415

        _check_size(width, height)
        import time  # noqa: PLC0415

        from .._device import device  # noqa: PLC0415

        t0 = time.perf_counter()
        host_layout = device().options.get("scene_layout", "gpu") != "gpu"
        plan = self.plan(width, height, background, layout=host_layout)
        if timings is not None:
            timings["host: flatten" + (" + layout" if host_layout else "")] = time.perf_counter() - t0
        return render_plan(plan, timings=timings)

    def render_reference(self, width: int, height: int, background=(255, 255, 255, 255)) -> np.ndarray:
        """The same image from the CPU reference renderer (numpy, same sampling)."""
        from .reference import render_reference_plan  # noqa: PLC0415

        _check_size(width, height)
        return render_reference_plan(self.plan(width, height, background))

    def save(self, filename: str, width: int, height: int, background=(255, 255, 255, 255)) -> np.ndarray:
        """Render and write a PNG (with imageio); returns the image."""
        import imageio.v3 as iio  # noqa: PLC0415

        img = self.render(width, height, background)
        iio.imwrite(filename, img)
        return img


def _check_size(width, height) -> None:
    if int(width) != width or int(height) != height or width < 1 or height < 1 or width > 16384 or height > 16384:
        raise InputError("scene", f"canvas size must be 1..16384 pixels per side, got {width}x{height}")


def render_reference(scene: Scene, width: int, height: int, background=(255, 255, 255, 255)) -> np.ndarray:
    """CPU reference rendering of ``scene`` (see :meth:`Scene.render_reference`)."""
    return scene.render_reference(width, height, background)
