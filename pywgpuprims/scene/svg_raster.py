"""Raster content for :mod:`.svg`: ``image`` (embedded ``data:`` PNG / JPEG, or a file beside the SVG)
and ``filter`` (``feGaussianBlur``, ``feOffset``, ``feFlood``, ``feMerge``, ``feColorMatrix``,
``feComposite``).

Both end as pixels put into the scene: one filled device-pixel rectangle per pixel (through
:meth:`Scene.fill_many`, in bulk), cut to the image's or filter region's exact edges, so they sit
under the clips, masks and layers around them like any fill. Each pixel is one element of the
expansion budget.

- ``image``: the picture is resampled at the device pixel centres (bilinear on premultiplied
  colour; nearest for ``image-rendering: optimizeSpeed | pixelated``) when its transform is a
  scale and a translation; under rotation or skew each picture pixel is drawn as a transformed
  square. ``preserveAspectRatio`` places it in its ``x, y, width, height`` viewport, clipped.
  External files: only a path relative to the SVG file's folder, inside it, at most
  ``MAX_IMAGE_BYTES``; ``http:`` and absolute paths are refused (warned).
- ``filter``: the element is drawn alone (a scene of its own, rendered on the GPU on a canvas
  that is the filter region), the primitives run on the pixels (blur: the library's
  :func:`~pywgpuprims.gaussian_filter`), in linearRGB unless ``color-interpolation-filters: sRGB``,
  and the result is cut to the primitive subregions and the filter region. Other primitives warn
  once and the element is drawn unfiltered.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
from pathlib import Path as FsPath

import numpy as np

from .css import Lengths, parse_color, parse_opacity, parse_url
from .geometry import compose, rect, rect_records

MAX_IMAGE_BYTES = 16 << 20
MAX_IMAGE_PIXELS = 4096 * 4096


# ---------------------------------------------------------------- pixels into the scene
def put_pixels(ld, prem: np.ndarray, x0: int, y0: int, region, alpha: float = 1.0, charged: bool = False) -> None:
    """Fill device pixels from ``prem`` (h, w, 4) premultiplied floats in [0, 1] whose top-left
    pixel is (x0, y0), cut to ``region`` (device x0, y0, x1, y1), times ``alpha``."""
    h, w = prem.shape[:2]
    a = prem[..., 3] * alpha
    ys, xs = np.nonzero(a > 0.5 / 255)
    if not len(xs):
        return
    rx0, ry0, rx1, ry1 = region
    px0 = np.maximum(xs + x0, rx0)
    py0 = np.maximum(ys + y0, ry0)
    px1 = np.minimum(xs + x0 + 1, rx1)
    py1 = np.minimum(ys + y0 + 1, ry1)
    keep = (px1 > px0) & (py1 > py0)
    xs, ys = xs[keep], ys[keep]
    if not len(xs):
        return
    if not charged:
        ld.budget.charge(len(xs))
    c = prem[ys, xs].astype(np.float64)
    al = np.clip(c[:, 3], 1e-12, 1)
    rgba = np.concatenate([np.clip(c[:, :3] / al[:, None], 0, 1) * 255,
                           (np.clip(c[:, 3], 0, 1) * alpha * 255)[:, None]], axis=1)
    recs = rect_records(px0[keep], py0[keep], (px1 - px0)[keep], (py1 - py0)[keep])
    ld.scene.fill_many(recs, rgba, kinds=np.zeros((len(recs), 4), bool))


# ---------------------------------------------------------------- image
def _decode(data: bytes) -> np.ndarray | None:
    try:
        import imageio.v3 as iio  # noqa: PLC0415
    except ImportError:
        return None
    img = iio.imread(io.BytesIO(data))
    img = np.asarray(img)
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    if img.dtype == np.uint16:
        img = (img // 257).astype(np.uint8)
    img = img.astype(np.uint8)
    if img.shape[2] == 3:
        img = np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
    elif img.shape[2] == 2:
        img = np.concatenate([np.repeat(img[..., :1], 3, axis=2), img[..., 1:]], axis=2)
    return img[..., :4]


def _load(ld, href: str, el) -> np.ndarray | None:
    href = href.strip()
    if href.startswith("data:"):
        head, _, payload = href[5:].partition(",")
        mime = head.split(";")[0].strip().lower()
        if mime not in ("image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", ""):
            ld.warn(f"an image of type {mime!r}", "image")
            return None
        try:
            payload = re.sub(r"\s+", "", payload)
            if len(payload) > 4 * MAX_IMAGE_BYTES // 3 + 4:
                ld.warn(f"an image over {MAX_IMAGE_BYTES} bytes", "image", "is not loaded")
                return None
            data = base64.b64decode(payload) if ";base64" in head else payload.encode("latin-1")
        except (binascii.Error, ValueError, UnicodeEncodeError):
            ld.warn("an image with bad data", "image", "is not drawn")
            return None
    else:
        base = getattr(ld, "base_dir", None)
        if base is None or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", href) or href.startswith(("/", "\\")):
            ld.warn("an external image reference", "image", "is not loaded (only data: URLs and files beside the SVG)")
            return None
        p = (FsPath(base) / href).resolve()
        if FsPath(base).resolve() not in p.parents or not p.is_file() or p.stat().st_size > MAX_IMAGE_BYTES:
            ld.warn("an image file outside the SVG's folder, missing or too large", "image", "is not loaded")
            return None
        data = p.read_bytes()
    try:
        img = _decode(data)
    except Exception:  # noqa: BLE001  (any decoder error: a broken image is not drawn, as resvg does)
        ld.warn("an image that cannot be decoded", "image", "is not drawn")
        return None
    if img is None:
        ld.warn("an image (needs imageio to decode PNG / JPEG)", "image")
        return None
    if img.shape[0] * img.shape[1] > MAX_IMAGE_PIXELS or 0 in img.shape[:2]:
        ld.warn(f"an image over {MAX_IMAGE_PIXELS} pixels", "image", "is not drawn")
        return None
    return img


def _sample(src: np.ndarray, u: np.ndarray, v: np.ndarray, smooth: bool, wrap: bool = False) -> np.ndarray:
    """Premultiplied samples of ``src`` (premultiplied floats) at picture coordinates ``u`` (across)
    and ``v`` (down), arrays of one shape (pixel centres at k + 0.5); edges clamped, or the picture
    repeated with ``wrap``."""
    h, w = src.shape[:2]

    def ix(k, n):
        return np.mod(k, n) if wrap else np.clip(k, 0, n - 1)

    if not smooth:
        return src[ix(np.floor(v).astype(np.int64), h), ix(np.floor(u).astype(np.int64), w)]
    fu, fv = u - 0.5, v - 0.5
    u0, v0 = np.floor(fu).astype(np.int64), np.floor(fv).astype(np.int64)
    tu, tv = (fu - u0)[..., None], (fv - v0)[..., None]
    ua, ub = ix(u0, w), ix(u0 + 1, w)
    va, vb = ix(v0, h), ix(v0 + 1, h)
    top = src[va, ua] * (1 - tu) + src[va, ub] * tu
    bot = src[vb, ua] * (1 - tu) + src[vb, ub] * tu
    return top * (1 - tv) + bot * tv


def put_sampled(ld, src: np.ndarray, m: np.ndarray, box, alpha: float, smooth: bool = True, wrap: bool = False,
                charged: bool = False) -> None:
    """Device pixels of ``box`` (device x0, y0, x1, y1, cut to the canvas) coloured by sampling
    ``src`` (premultiplied floats) through the inverse of ``m`` (picture pixels -> device)."""
    full = np.vstack([m, [0, 0, 1]])
    if abs(np.linalg.det(full)) < 1e-12 or not np.isfinite(box).all():
        return
    inv = np.linalg.inv(full)[:2]
    cw, ch = ld.canvas
    X0, Y0 = max(0, math.floor(box[0])), max(0, math.floor(box[1]))
    X1, Y1 = min(cw, math.ceil(box[2])), min(ch, math.ceil(box[3]))
    if not (X1 > X0 and Y1 > Y0):
        return
    if not charged:
        ld.budget.charge((X1 - X0) * (Y1 - Y0))  # before the arrays are made
    cx, cy = np.meshgrid(np.arange(X0, X1) + 0.5, np.arange(Y0, Y1) + 0.5)
    u = inv[0, 0] * cx + inv[0, 1] * cy + inv[0, 2]
    v = inv[1, 0] * cx + inv[1, 1] * cy + inv[1, 2]
    put_pixels(ld, _sample(src, u, v, smooth, wrap), X0, Y0, (X0, Y0, X1, Y1), alpha, charged=True)


def draw_image(ld, el, tr, st, lengths: Lengths, op: float) -> None:
    """An ``image`` element."""
    from .svg import _XLINK, view_box_transform  # noqa: PLC0415

    href = el.get("href") or el.get(_XLINK)
    if not href or st.get("visibility", "visible") != "visible":
        return
    if href.strip().startswith("data:image/svg") or href.strip().lower().endswith((".svg", ".svgz")):
        ld.warn("an SVG image", "image")
        return
    img = _load(ld, href, el)
    if img is None:
        return
    ih, iw = img.shape[:2]
    fs = st["font-size"]
    x = lengths.resolve(el.get("x"), "x", 0.0, font_size=fs)
    y = lengths.resolve(el.get("y"), "y", 0.0, font_size=fs)
    w = lengths.resolve(el.get("width"), "x", None, font_size=fs)
    h = lengths.resolve(el.get("height"), "y", None, font_size=fs)
    if w is None and h is None:
        w, h = float(iw), float(ih)
    elif w is None:
        w = h * iw / ih
    elif h is None:
        h = w * ih / iw
    if not (w > 0 and h > 0):
        return
    place = compose(np.array([[1.0, 0, x], [0, 1.0, y]]),
                    view_box_transform((0, 0, iw, ih), el.get("preserveAspectRatio"), w, h))
    m = compose(tr, place)  # picture pixels -> device
    if m is None:
        m = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    f = img.astype(np.float64) / 255
    prem = np.concatenate([f[..., :3] * f[..., 3:], f[..., 3:]], axis=2)
    smooth = st.get("image-rendering", "auto") not in ("optimizeSpeed", "pixelated", "crisp-edges")
    # Device pixels over the picture, sampled at their centres through the inverse transform;
    # the picture's edges and the viewport come from two clips (exact coverage at the borders).
    pic = np.array([[0, 0], [iw, 0], [0, ih], [iw, ih]]) @ m[:, :2].T + m[:, 2]
    box = (pic[:, 0].min(), pic[:, 1].min(), pic[:, 0].max(), pic[:, 1].max())
    ld.scene.push_clip(rect(0, 0, iw, ih), transform=m)
    ld.scene.push_clip(rect(x, y, w, h), transform=tr)
    try:
        put_sampled(ld, prem, m, box, op, smooth)
    finally:
        ld.scene.pop_clip()
        ld.scene.pop_clip()


# ---------------------------------------------------------------- filter
def _to_linear(prem: np.ndarray) -> np.ndarray:
    a = prem[..., 3:]
    c = np.where(a > 0, prem[..., :3] / np.maximum(a, 1e-12), 0)
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return np.concatenate([lin * a, a], axis=-1)


def _to_srgb(prem: np.ndarray) -> np.ndarray:
    a = prem[..., 3:]
    c = np.clip(np.where(a > 0, prem[..., :3] / np.maximum(a, 1e-12), 0), 0, 1)
    s = np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)
    return np.concatenate([s * a, a], axis=-1)


SUPPORTED = ("feGaussianBlur", "feOffset", "feFlood", "feMerge", "feColorMatrix", "feComposite")


def _color_matrix(c, img: np.ndarray) -> np.ndarray | None:
    """``feColorMatrix`` on premultiplied ``img``; None for an invalid matrix (the primitive then
    passes its input through, as resvg does)."""
    kind = (c.get("type") or "matrix").strip()
    try:
        vals = [float(v) for v in re.split(r"[\s,]+", (c.get("values") or "").strip()) if v]
    except ValueError:
        vals = None
    if kind == "matrix":
        mat = np.array(vals, float).reshape(4, 5) if vals is not None and len(vals) == 20 else np.eye(4, 5)
    elif kind == "saturate":
        k = vals[0] if vals else 1.0
        mat = np.zeros((4, 5))
        mat[:3, :3] = [[0.213 + 0.787 * k, 0.715 - 0.715 * k, 0.072 - 0.072 * k],
                       [0.213 - 0.213 * k, 0.715 + 0.285 * k, 0.072 - 0.072 * k],
                       [0.213 - 0.213 * k, 0.715 - 0.715 * k, 0.072 + 0.928 * k]]
        mat[3, 3] = 1
    elif kind == "hueRotate":
        a = math.radians(vals[0] if vals else 0.0)
        co, si = math.cos(a), math.sin(a)
        mat = np.zeros((4, 5))
        mat[:3, :3] = (np.array([[0.213, 0.715, 0.072]] * 3)
                       + co * np.array([[0.787, -0.715, -0.072], [-0.213, 0.285, -0.072], [-0.213, -0.715, 0.928]])
                       + si * np.array([[-0.213, -0.715, 0.928], [0.143, 0.140, -0.283], [-0.787, 0.715, 0.072]]))
        mat[3, 3] = 1
    elif kind == "luminanceToAlpha":
        mat = np.zeros((4, 5))
        mat[3, :3] = [0.2125, 0.7154, 0.0721]
    else:
        return None
    a = img[..., 3:]
    straight = np.concatenate([np.where(a > 0, img[..., :3] / np.maximum(a, 1e-12), 0), a], axis=-1)
    out = np.clip(straight @ mat[:, :4].T + mat[:, 4], 0, 1)
    return np.concatenate([out[..., :3] * out[..., 3:], out[..., 3:]], axis=-1)


def _composite(c, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``feComposite`` of premultiplied ``a`` (in) over / in / out / atop / xor / arithmetic ``b`` (in2)."""
    op = (c.get("operator") or "over").strip()
    aa, ab = a[..., 3:], b[..., 3:]
    if op == "in":
        return a * ab
    if op == "out":
        return a * (1 - ab)
    if op == "atop":
        return a * ab + b * (1 - aa)
    if op == "xor":
        return a * (1 - ab) + b * (1 - aa)
    if op == "arithmetic":
        k = []
        for name in ("k1", "k2", "k3", "k4"):
            try:
                k.append(float(c.get(name) or 0))
            except ValueError:
                k.append(0.0)
        out = np.clip(k[0] * a * b + k[1] * a + k[2] * b + k[3], 0, 1)
        out[..., :3] = np.minimum(out[..., :3], out[..., 3:])  # premultiplied: colour at most alpha
        return out
    return a + b * (1 - aa)


def _subregion(c, img, prim_units, bb, lengths, region, m, X0, Y0) -> np.ndarray:
    """``img`` cut to primitive ``c``'s subregion (missing sides: the filter region's)."""
    fx, fy, fw, fh = region

    def val(name, axis, default):
        v = c.get(name)
        if v is None:
            return default
        v = v.strip()
        if prim_units == "objectBoundingBox":
            try:
                k = float(v[:-1]) / 100 if v.endswith("%") else float(v)
            except ValueError:
                return default
            size = (bb[2] - bb[0]) if axis == "x" else (bb[3] - bb[1])
            return k * size + ((bb[0] if axis == "x" else bb[1]) if name in ("x", "y") else 0.0)
        r = lengths.resolve(v, axis, None)
        return default if r is None else r

    x, y = val("x", "x", fx), val("y", "y", fy)
    w, h = val("width", "x", fw), val("height", "y", fh)
    corners = np.array([[x, y], [x + w, y], [x, y + h], [x + w, y + h]]) @ m[:, :2].T + m[:, 2]
    x0, y0 = math.floor(corners[:, 0].min() + 1e-9) - X0, math.floor(corners[:, 1].min() + 1e-9) - Y0
    x1, y1 = math.ceil(corners[:, 0].max() - 1e-9) - X0, math.ceil(corners[:, 1].max() - 1e-9) - Y0
    out = np.zeros_like(img)
    if w > 0 and h > 0:
        ys, xs = slice(max(0, y0), max(0, y1)), slice(max(0, x0), max(0, x1))
        out[ys, xs] = img[ys, xs]
    return out


def filter_of(ld, st, el):
    """The ``filter`` element referenced by ``st``; None for no filter; False when the element must
    not be drawn (a reference to nothing, as the spec says)."""
    from .svg import _local  # noqa: PLC0415

    v = st.get("filter")
    if v in (None, "none", ""):
        return None
    ref = parse_url(v)
    if ref is None:
        ld.warn(f"filter {v!r} (CSS filter functions)", _local(el.tag))
        return None
    f = ld.ids.get(ref[0])
    if f is None or _local(f.tag) != "filter":
        return False
    prims = [c for c in f if isinstance(c.tag, str)]
    for c in prims:
        t = _local(c.tag)
        if t not in SUPPORTED and t not in ("title", "desc"):
            ld.warn(f"<{t}> (a filter primitive)", "filter", "is not supported; the element is drawn unfiltered")
            return None
    return f


def draw_filtered(ld, f, el, tr, st, lengths: Lengths, op: float, content) -> None:
    """Draw ``el`` through filter ``f``: ``content(shift)`` draws the element into ``ld.scene`` with
    the 2x3 matrix ``shift`` applied after its transform (the filter region moved to the origin)."""
    from .builder import Scene  # noqa: PLC0415
    from .svg import _local  # noqa: PLC0415

    g = f.get
    units = (g("filterUnits") or "objectBoundingBox").strip()
    prim_units = (g("primitiveUnits") or "userSpaceOnUse").strip()
    bb = ld.bbox(el, lengths, st) if units != "userSpaceOnUse" or prim_units == "objectBoundingBox" else None
    if bb is not None and not (bb[2] > bb[0] and bb[3] > bb[1]):
        bb = None
    if bb is None and (units != "userSpaceOnUse" or prim_units == "objectBoundingBox"):
        return  # no box to measure the region by: nothing is drawn, as resvg does

    def frac(name, default, axis):
        v = (g(name) or default).strip()
        if units != "userSpaceOnUse":
            try:
                k = float(v[:-1]) / 100 if v.endswith("%") else float(v)
            except ValueError:
                k = float(default[:-1]) / 100
            return (bb[0] if axis == "x" else bb[1]) * (name in ("x", "y")) + k * (
                (bb[2] - bb[0]) if axis == "x" else (bb[3] - bb[1]))
        return lengths.resolve(v, axis, 0.0)

    fx, fy = frac("x", "-10%", "x"), frac("y", "-10%", "y")
    fw, fh = frac("width", "120%", "x"), frac("height", "120%", "y")
    if not (fw > 0 and fh > 0):
        return
    m = tr if tr is not None else np.array([[1.0, 0, 0], [0, 1.0, 0]])
    corners = np.array([[fx, fy], [fx + fw, fy], [fx, fy + fh], [fx + fw, fy + fh]]) @ m[:, :2].T + m[:, 2]
    cw, ch = ld.canvas
    X0, Y0 = max(0, math.floor(corners[:, 0].min())), max(0, math.floor(corners[:, 1].min()))
    X1, Y1 = min(cw, math.ceil(corners[:, 0].max())), min(ch, math.ceil(corners[:, 1].max()))
    if not (X1 > X0 and Y1 > Y0):
        return
    sx, sy = math.hypot(m[0, 0], m[1, 0]), math.hypot(m[0, 1], m[1, 1])
    ld.budget.charge(1)
    ld.budget.charge((X1 - X0) * (Y1 - Y0))  # the region's pixels, before anything is rendered
    sub, main, canvas = Scene(), ld.scene, ld.canvas
    ld.scene, ld.canvas = sub, (X1 - X0, Y1 - Y0)
    try:  # the element alone, on a canvas that is the filter region
        content(np.array([[1.0, 0, -X0], [0, 1.0, -Y0]]))
    finally:
        ld.scene, ld.canvas = main, canvas
    src = sub.render(X1 - X0, Y1 - Y0, background=(0, 0, 0, 0)).astype(np.float64) / 255
    source = np.concatenate([src[..., :3] * src[..., 3:], src[..., 3:]], axis=2)
    H, W = source.shape[:2]
    results: dict[str, tuple[np.ndarray, bool]] = {}  # name -> (premultiplied pixels, linear)
    last = (source, False)

    def inp(name):
        name = (name or "").strip()
        if name == "SourceGraphic":
            return source, False
        if name == "SourceAlpha":
            a = np.zeros_like(source)
            a[..., 3] = source[..., 3]
            return a, False
        if name in results:
            return results[name]
        return last

    def as_space(img, lin, want_lin):
        if lin == want_lin:
            return img
        return _to_linear(img) if want_lin else _to_srgb(img)

    def num(c, name, default, axis):
        try:
            vals = [float(v) for v in re.split(r"[\s,]+", (c.get(name) or "").strip()) if v]
        except ValueError:
            vals = []
        vals = vals or [default]
        v = vals[0] if axis == "x" or len(vals) < 2 else vals[1]
        if prim_units == "objectBoundingBox":
            v *= (bb[2] - bb[0]) if axis == "x" else (bb[3] - bb[1])
        return v

    for c in f:
        t = _local(c.tag)
        if t not in SUPPORTED:
            continue
        cst = ld.style(c, ld.doc_style(f))
        lin = cst.get("color-interpolation-filters", "linearRGB").strip() != "sRGB"
        if t == "feGaussianBlur":
            img = as_space(*inp(c.get("in")), lin)
            sdx, sdy = num(c, "stdDeviation", 0.0, "x"), num(c, "stdDeviation", 0.0, "y")
            if sdx < 0 or sdy < 0:
                return  # an error: the element is not drawn
            sig = (sdy * sy, sdx * sx)
            if max(sig) > 0:
                from ..recfilter import gaussian_filter  # noqa: PLC0415

                sig = tuple(0.0 if s <= 0 else max(0.5, min(s, 1000.0)) for s in sig)
                img = np.asarray(gaussian_filter(img.astype(np.float32), sig, mode="constant"), np.float64)
            out = (np.clip(img, 0, 1), lin)
        elif t == "feOffset":
            img, il = inp(c.get("in"))
            dx = int(round(num(c, "dx", 0.0, "x") * sx))
            dy = int(round(num(c, "dy", 0.0, "x") * sy))
            shifted = np.zeros_like(img)
            ys, yd = (slice(0, max(0, H - dy)), slice(dy, H)) if dy >= 0 else (slice(-dy, H), slice(0, H + dy))
            xs, xd = (slice(0, max(0, W - dx)), slice(dx, W)) if dx >= 0 else (slice(-dx, W), slice(0, W + dx))
            if abs(dx) < W and abs(dy) < H:
                shifted[yd, xd] = img[ys, xs]
            out = (shifted, il)
        elif t == "feFlood":
            col = parse_color(cst.get("flood-color", "black"))
            if col == "currentColor":
                col = parse_color(cst.get("color", "black"))
            if col is None or col == "currentColor":
                col = (0.0, 0.0, 0.0, 1.0)
            a = col[3] * parse_opacity(cst.get("flood-opacity"), 1.0)
            px = np.array([col[0] * a, col[1] * a, col[2] * a, a])
            img = np.broadcast_to(px, source.shape).copy()
            out = (as_space(img, False, lin), lin)
        elif t == "feColorMatrix":
            img = as_space(*inp(c.get("in")), lin)
            cm = _color_matrix(c, img)
            out = (img if cm is None else cm, lin)
        elif t == "feComposite":
            a = as_space(*inp(c.get("in")), lin)
            b = as_space(*inp(c.get("in2")), lin)
            out = (_composite(c, a, b), lin)
        else:  # feMerge: source-over of its nodes in order
            acc = np.zeros_like(source)
            for node in c:
                if _local(node.tag) != "feMergeNode":
                    continue
                img = as_space(*inp(node.get("in")), lin)
                acc = img + acc * (1 - img[..., 3:])
            out = (acc, lin)
        if any(c.get(k) is not None for k in ("x", "y", "width", "height")):  # a primitive subregion
            out = (_subregion(c, out[0], prim_units, bb, lengths, (fx, fy, fw, fh), m, X0, Y0), out[1])
        last = out
        name = (c.get("result") or "").strip()
        if name:
            results[name] = out
    img = as_space(*last, False)
    put_pixels(ld, img, X0, Y0, (X0, Y0, X1, Y1), op, charged=True)
