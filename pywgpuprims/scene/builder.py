"""The scene builder: :class:`Scene` records fills and clip pushes/pops in painter's order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._device import takes_device
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
        # ("fill", parts, color[, paint block]) | ("push", parts) | ("pop",)
        # | ("many", records, kinds, records per fill, premultiplied colours, rule)
        self._ops: list[tuple] = []
        self._n = 0  # elements
        self._masks: list = []  # per open push: None (clip), True (mask being drawn), False
        self._depth = 0
        self.max_depth = 0

    def __len__(self) -> int:
        return self._n

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
                self._n += 1
            return
        c = _color(paint)
        if opacity != 1.0:
            if not (0 <= float(opacity) <= 1):
                raise InputError("scene", f"opacity must be in [0, 1], got {opacity!r}")
            c = (*c[:3], c[3] * float(opacity))
        self._ops.append(("fill", self._parts_of(path, fill_rule, transform), c))
        self._n += 1

    def fill_many(self, records, colors, fill_rule: str = "nonzero", transforms=None, kinds=None) -> None:
        """Many fills in one call, from numpy arrays, in painter's order under the current clips.

        Parameters
        ----------
        records : array (m, k, 8)
            Each fill's outline as k cubic records ``(x0, y0, x1, y1, x2, y2, x3, y3)`` (a line is a
            record whose control points are its end points), closed implicitly. Make them with
            :func:`~pywgpuprims.scene.geometry.ellipse_records`, ``rect_records`` or ``line_records``
            (pad shorter outlines with zero-length records).
        colors : array (m, 4) or (4,)
            RGBA 0-255, straight alpha.
        transforms : array (m, 2, 3) or (2, 3), optional
            An affine transform per fill (or one for all).
        kinds : array (m, k) of bool, optional
            True where a record is a curve (default: every record is one when ``records`` holds
            curves; lines flatten to one segment either way).

        Examples
        --------
        >>> import numpy as np
        >>> from pywgpuprims.scene import Scene
        >>> from pywgpuprims.scene.geometry import ellipse_records
        >>> s = Scene()
        >>> s.fill_many(ellipse_records(np.arange(10) * 8.0, 5, 3, 3), (255, 0, 0, 255))
        >>> len(s)
        10
        """
        rec = np.asarray(records, np.float64)
        if rec.ndim != 3 or rec.shape[2] != 8:
            raise InputError("scene", f"records must be an (m, k, 8) array, got shape {rec.shape}")
        m, k = rec.shape[:2]
        col = np.asarray(colors, np.float64)
        col = np.broadcast_to(col if col.shape[-1:] == (4,) else np.concatenate(
            [col, np.full(col.shape[:-1] + (1,), 255.0)], axis=-1), (m, 4))
        if not (np.isfinite(col).all() and col.min(initial=0) >= 0 and col.max(initial=0) <= 255):
            raise InputError("scene", "colours are (r, g, b[, a]) values in 0-255")
        if transforms is not None:
            t = np.asarray(transforms, np.float64)
            if t.shape not in ((2, 3), (m, 2, 3)):
                raise InputError("scene", f"transforms must be (2, 3) or (m, 2, 3), got shape {t.shape}")
            t = np.broadcast_to(t, (m, 2, 3))
            pts = rec.reshape(m, k * 4, 2)
            rec = (np.einsum("mij,mpj->mpi", t[:, :, :2], pts) + t[:, None, :, 2]).reshape(m, k, 8)
        if not np.isfinite(rec).all():
            raise InputError("scene", "path coordinates (after the transform) must be finite")
        if kinds is None:
            p = rec.reshape(m, k, 4, 2)
            curved = ~(np.all(p[:, :, 1] == p[:, :, 0], axis=2) & np.all(p[:, :, 2] == p[:, :, 3], axis=2))
        else:
            curved = np.broadcast_to(np.asarray(kinds, bool), (m, k))
        a = col[:, 3:4] / 255.0
        prem = np.concatenate([col[:, :3] / 255.0 * a, a], axis=1).astype(np.float32)
        if m:
            self._ops.append(("many", rec.reshape(-1, 8), curved.reshape(-1).astype(np.uint8), k, prem,
                              _rule(fill_rule)))
            self._n += m

    def add_many(self, ops, records, counts, colors=None, fill_rules=0, kinds=None) -> None:
        """Fills, clip pushes and pops in bulk, from numpy arrays, in painter's order.

        Parameters
        ----------
        ops : array (n,) of int
            Per element: :data:`CLIP_DRAW` (a fill), :data:`CLIP_BEGIN` (push a clip) or
            :data:`CLIP_END` (pop the innermost clip: pushed here or before, not a layer). Pushes
            left open stay open (pop them later).
        records : array (R, 8)
            Every outline's cubic records ``(x0, y0, x1, y1, x2, y2, x3, y3)`` one after another,
            each outline closed implicitly (see :meth:`fill_many`).
        counts : array (n,) of int
            Records per element (0 for a pop); they sum to R.
        colors : array (n, 4) or (4,), optional
            RGBA 0-255, straight alpha, for the fills (rows of other elements are ignored).
        fill_rules : int or array (n,)
            0 nonzero, 1 evenodd, per element.
        kinds : array (R,) of bool, optional
            True where a record is a curve (default: where its control points are off its ends).

        Examples
        --------
        >>> import numpy as np
        >>> from pywgpuprims.scene import CLIP_BEGIN, CLIP_DRAW, CLIP_END, Scene
        >>> from pywgpuprims.scene.geometry import ellipse_records, rect_records
        >>> rec = np.concatenate([ellipse_records(8, 8, 6, 6)[0], rect_records(0, 0, 16, 16)[0]])
        >>> s = Scene()
        >>> s.add_many([CLIP_BEGIN, CLIP_DRAW, CLIP_END], rec, [4, 4, 0], (255, 0, 0, 255))
        >>> len(s), s.max_depth
        (3, 1)
        """
        from .plan import CLIP_BEGIN, CLIP_DRAW, CLIP_END  # noqa: PLC0415

        op = np.asarray(ops).reshape(-1)
        n = len(op)
        if op.dtype.kind not in "iu" or (n and not (op.min() >= CLIP_DRAW and op.max() <= CLIP_END)):
            raise InputError("Scene.add_many", "ops are CLIP_DRAW, CLIP_BEGIN or CLIP_END codes")
        op = op.astype(np.uint32)
        cnt = np.asarray(counts).reshape(-1)
        if cnt.shape != (n,) or cnt.dtype.kind not in "iu" or (n and cnt.min() < 0):
            raise InputError("Scene.add_many", f"counts must be {n} non-negative integers, got shape {cnt.shape}")
        cnt = cnt.astype(np.int64)
        if ((op == CLIP_END) != (cnt == 0)).any():
            raise InputError("Scene.add_many", "a pop has no records, a fill or push at least one")
        rec = np.asarray(records, np.float64)
        if rec.ndim != 2 or rec.shape[1] != 8 or len(rec) != int(cnt.sum()):
            raise InputError("Scene.add_many", f"records must be ({int(cnt.sum())}, 8), got shape {rec.shape}")
        if not np.isfinite(rec).all():
            raise InputError("Scene.add_many", "path coordinates must be finite")
        step = np.zeros(3, np.int64)
        step[CLIP_BEGIN], step[CLIP_END] = 1, -1
        depth = np.cumsum(step[op])
        need = -int(depth.min(initial=0))  # clips pushed before this call that it pops
        if need > self._depth:
            raise InputError("Scene.add_many", "a pop without a matching push")
        if need and any(m is not None for m in self._masks[-need:]):
            raise InputError("Scene.add_many", "its pops may close clips, not layers (use pop_layer)")
        rules = np.broadcast_to(np.asarray(fill_rules), (n,))
        if rules.dtype.kind not in "iub" or (n and not (rules.min() >= 0 and rules.max() <= 1)):
            raise InputError("Scene.add_many", "fill_rules are 0 (nonzero) or 1 (evenodd)")
        if colors is None:
            colors = (0, 0, 0, 255)
        col = np.asarray(colors, np.float64)
        if col.shape[-1:] == (3,):
            col = np.concatenate([col, np.full(col.shape[:-1] + (1,), 255.0)], axis=-1)
        if col.shape not in ((4,), (n, 4)):
            raise InputError("Scene.add_many", f"colors must be (4,) or ({n}, 4), got shape {col.shape}")
        col = np.broadcast_to(col, (n, 4))
        if not (np.isfinite(col).all() and col.min(initial=0) >= 0 and col.max(initial=0) <= 255):
            raise InputError("Scene.add_many", "colours are (r, g, b[, a]) values in 0-255")
        if kinds is None:
            p = rec.reshape(-1, 4, 2)
            curved = ~(np.all(p[:, 1] == p[:, 0], axis=1) & np.all(p[:, 2] == p[:, 3], axis=1))
        else:
            curved = np.asarray(kinds, bool).reshape(-1)
            if curved.shape != (len(rec),):
                raise InputError("Scene.add_many", f"kinds must have {len(rec)} entries, got {curved.shape}")
        prem = np.empty((n, 4), np.float32)
        a = col[:, 3:4] / 255.0
        prem[:, :3] = col[:, :3] / 255.0 * a
        prem[:, 3:] = a
        prem[op != CLIP_DRAW] = 0
        if not n:
            return
        self._ops.append(("bulk", op, rec, curved.astype(np.uint8), cnt, prem, rules.astype(np.uint32)))
        self._n += n
        self.max_depth = max(self.max_depth, self._depth + int(depth.max()))
        self._depth += int(depth[-1])
        del self._masks[len(self._masks) - need:]
        self._masks.extend([None] * (int(depth[-1]) + need))

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

    def push_layer(self, opacity: float, clip: Path | None = None, fill_rule: str = "nonzero", transform=None,
                   masked: bool = False) -> None:
        """Start a layer (a group drawn apart, then composited with ``opacity``), clipped by ``clip``
        when given, until the matching :meth:`pop_layer`. With ``masked``, what is drawn up to
        :meth:`end_mask` is the layer's luminance mask (SVG's ``mask``), and what follows is masked.

        Examples
        --------
        >>> from pywgpuprims.scene import Scene, rect
        >>> s = Scene()
        >>> s.push_layer(0.5)
        >>> s.fill(rect(0, 0, 8, 8), (255, 0, 0))
        >>> s.fill(rect(4, 4, 8, 8), (0, 0, 255))
        >>> s.pop_layer()
        >>> len(s)
        4
        """
        op = float(opacity)
        if not 0 <= op <= 1:
            raise InputError("scene", f"a layer's opacity is in [0, 1], got {opacity!r}")
        if clip is None:  # a part that covers every pixel
            clip = Path().move_to(-1e6, -1e6).line_to(1e6, -1e6).line_to(1e6, 1e6).line_to(-1e6, 1e6).close()
            transform = None
        self._push(self._parts_of(clip, fill_rule, transform), layer=op, masked=bool(masked))
        self._masks.append(bool(masked))

    def end_mask(self) -> None:
        """In a layer pushed with ``masked=True``: the mask is drawn; what follows is masked by its
        luminance (0.2125 R + 0.7154 G + 0.0721 B of the premultiplied colour)."""
        if not self._masks or self._masks[-1] is not True:
            raise InputError("scene", "end_mask outside a masked layer (or called twice)")
        self._masks[-1] = False
        big = Path().move_to(-1e6, -1e6).line_to(1e6, -1e6).line_to(1e6, 1e6).line_to(-1e6, 1e6).close()
        self._ops.append(("switch", self._parts_of(big, "nonzero", None)))
        self._n += 1

    def pop_layer(self) -> None:
        """End the innermost layer (or clip)."""
        self.pop_clip()

    def _push(self, parts: list[_Part], layer: float | None = None, masked: bool = False) -> None:
        self._ops.append(("push", parts) if layer is None else ("push", parts, layer, masked))
        if layer is None:
            self._masks.append(None)
        self._n += 1
        self._depth += 1
        self.max_depth = max(self.max_depth, self._depth)

    def pop_clip(self) -> None:
        """End the innermost clip."""
        if self._depth == 0:
            raise InputError("scene", "pop_clip without a matching push_clip")
        if self._masks.pop() is True:
            raise InputError("scene", "a masked layer popped before end_mask")
        self._ops.append(("pop",))
        self._n += 1
        self._depth -= 1

    def _check_balanced(self) -> None:
        if self._depth:
            raise InputError("scene", f"{self._depth} push_clip call(s) without a matching pop_clip")

    def plan(self, width: int, height: int, background=(255, 255, 255, 255), layout: bool = True) -> ScenePlan:
        """Flatten (and with ``layout``, lay out on the host) the scene for a ``width`` x ``height`` canvas."""
        self._check_balanced()
        return ScenePlan(self._ops, int(width), int(height), _color(background), layout, n_elements=self._n)

    @takes_device(name="Scene.render")
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
        host_layout = device().hooks.scene_layout != "gpu"
        plan = self.plan(width, height, background, layout=host_layout)
        if timings is not None:
            timings["host: plan" + (" + flatten + layout" if host_layout else "")] = time.perf_counter() - t0
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
