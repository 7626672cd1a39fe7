"""Scene rendering: GPU against the CPU reference (same 4x4 sampling), SVG subset, errors.

Tolerance: the GPU and the reference compute the same float32 expressions, so images agree to
within 1 (of 255) on all but a handful of pixels, where a sample exactly on an edge may flip
(one sample = 16/255): at most 0.2% of pixels may differ by more than 1, none by more than 17.
"""

import numpy as np
import pytest

import pywgpuprims as pp
from pywgpuprims import scene as sc
from pywgpuprims._scene_gpu import render_plan
from pywgpuprims._scene_ref import render_reference_plan
from pywgpuprims.scene import Path, Scene, circle, ellipse, polygon, rect, rounded_rect, star


def assert_close(img, ref):
    assert img.shape == ref.shape and img.dtype == np.uint8
    d = np.abs(img.astype(np.int32) - ref.astype(np.int32))
    bad = (d.max(axis=-1) > 1).mean()
    assert d.max() <= 17 and bad <= 0.002, f"max diff {d.max()}, {bad:.4%} pixels differ by more than 1"


def random_shape(rng, W, H, big=False):
    s = (W + H) / (2 if big else 8)
    cx, cy = rng.uniform(-0.2 * W, 1.2 * W), rng.uniform(-0.2 * H, 1.2 * H)
    r = rng.uniform(1, 2 + s)
    k = rng.integers(0, 6)
    if k == 0:
        return circle(cx, cy, r)
    if k == 1:
        return star(cx, cy, r, r * rng.uniform(0.2, 0.8), int(rng.integers(3, 9)), rng.uniform(0, 360))
    if k == 2:
        return rounded_rect(cx - r, cy - r / 2, 2 * r, r, r / 4)
    if k == 3:
        return polygon(rng.uniform([cx - r, cy - r], [cx + r, cy + r], (int(rng.integers(3, 9)), 2)))
    if k == 4:
        p = Path().move_to(cx, cy)
        for _ in range(3):
            p.cubic_to(*rng.uniform([cx - r, cy - r] * 3, [cx + r, cy + r] * 3))
        p.quad_to(*rng.uniform([cx - r, cy - r] * 2, [cx + r, cy + r] * 2))
        p.arc_to(r / 2, r / 3, rng.uniform(0, 90), bool(rng.integers(2)), bool(rng.integers(2)), cx, cy + r)
        return p.close()
    return ellipse(cx, cy, r, r / 2)


def random_scene(rng, W, H, n, max_depth=4, p_clip=0.2):
    s = Scene()
    for _ in range(n):
        u = rng.random()
        if u < p_clip and s.depth < max_depth:
            s.push_clip(random_shape(rng, W, H, big=True), fill_rule=str(rng.choice(["nonzero", "evenodd"])))
        elif u < 2 * p_clip and s.depth:
            s.pop_clip()
        else:
            col = tuple(int(v) for v in rng.integers(0, 256, 4))
            s.fill(random_shape(rng, W, H), col, fill_rule=str(rng.choice(["nonzero", "evenodd"])))
    while s.depth:
        s.pop_clip()
    return s


@pytest.mark.parametrize("W,H", [(1, 1), (15, 17), (16, 16), (33, 31), (100, 64)])
def test_random_scenes_small(rng, W, H):
    s = random_scene(rng, W, H, 60)
    assert_close(s.render(W, H), s.render_reference(W, H))


def test_clip_depth_0_to_deep(rng):
    W, H = 48, 40
    for depth in (0, 1, 2, 17, 300):
        s = Scene()
        s.fill(rect(0, 0, W, H), (10, 200, 10, 255))
        for i in range(depth):
            r = 30 - 25 * i / max(depth, 1)
            s.push_clip(circle(W / 2 + rng.uniform(-2, 2), H / 2 + rng.uniform(-2, 2), r))
            if i % 7 == 0:
                s.fill(star(W / 2, H / 2, 20, 8), (200, 0, 0, 60), fill_rule="evenodd")
        s.fill(rect(0, 0, W, H), (0, 0, 255, 200))
        for _ in range(depth):
            s.pop_clip()
        img = s.render(W, H)
        assert_close(img, s.render_reference(W, H))
        if depth == 0:
            assert (img == img[0, 0]).all()


def test_1000_nested_clips_and_small_budget(rng):
    W, H = 40, 36
    s = Scene()
    for i in range(1000):
        s.push_clip(star(20 + rng.uniform(-1, 1), 18, 40 - i * 0.03, 16, 7, i * 0.5))
        if i % 50 == 0:
            s.fill(circle(20, 18, 15 - i * 0.01), tuple(int(v) for v in rng.integers(0, 256, 4)))
    for _ in range(1000):
        s.pop_clip()
    plan = s.plan(W, H)
    assert plan.max_depth == 1000
    ref = render_reference_plan(plan)
    assert_close(render_plan(plan), ref)
    assert_close(render_plan(plan, budget=257), ref)  # many rounds, stops inside the walk


def test_empty_and_offscreen_clips(rng):
    W, H = 64, 48
    s = Scene()
    s.fill(rect(0, 0, W, H), (255, 255, 0, 255))
    s.push_clip(rect(10, 10, 0, 20))  # zero width
    s.fill(rect(0, 0, W, H), (255, 0, 0, 255))
    s.pop_clip()
    s.push_clip(Path())  # no geometry at all
    s.fill(rect(0, 0, W, H), (255, 0, 0, 255))
    s.pop_clip()
    s.push_clip(circle(-100, -100, 50))  # outside the viewport
    s.fill(rect(0, 0, W, H), (255, 0, 0, 255))
    s.pop_clip()
    s.push_clip(circle(1000, 20, 950))  # mostly outside, covers the right part
    s.push_clip(rect(30, -10, 100, 100))
    s.fill(rect(-50, -50, 500, 500), (0, 0, 255, 255))
    s.pop_clip()
    s.pop_clip()
    img = s.render(W, H)
    assert_close(img, s.render_reference(W, H))
    assert (img[:, :20, :3] == (255, 255, 0)).all()


def test_fill_rules():
    W = H = 40
    p = star(20, 20, 18, 6, 5)
    five = Path()  # a pentagram drawn through its points: the centre has winding 2
    pts = [(20 + 18 * np.cos(np.radians(-90 + 144 * k)), 20 + 18 * np.sin(np.radians(-90 + 144 * k))) for k in range(5)]
    five.move_to(*pts[0])
    for q in pts[1:]:
        five.line_to(*q)
    five.close()
    for rule, centre in (("nonzero", 0), ("evenodd", 255)):
        s = Scene()
        s.fill(five, (0, 0, 0, 255), fill_rule=rule)
        img = s.render(W, H)
        assert img[20, 20, 0] == centre
        assert_close(img, s.render_reference(W, H))
    s = Scene()
    s.push_clip(five, fill_rule="evenodd")
    s.fill(p, (255, 0, 0, 255))
    s.pop_clip()
    assert_close(s.render(W, H), s.render_reference(W, H))


def test_ten_thousand_elements(rng):
    W, H = 96, 80
    s = random_scene(rng, W, H, 10_000, max_depth=3, p_clip=0.05)
    assert len(s) >= 10_000
    assert_close(s.render(W, H), s.render_reference(W, H))


def test_transforms_and_union_clip(rng):
    W = H = 50
    s = Scene()
    s.push_clip_union([[(circle(15, 25, 12), "nonzero", None)],
                       [(rect(0, 0, 20, 20), "nonzero", (1, 0.2, -0.2, 1, 25, 5)),
                        (circle(35, 20, 12), "evenodd", None)]])
    s.fill(rect(0, 0, W, H), (200, 0, 100, 255), transform=(0.5, 0, 0, 0.5, 10, 10))
    s.fill(rect(0, 0, W, H), (0, 100, 0, 128))
    s.pop_clip()
    s.fill(circle(0, 0, 10), (0, 0, 0, 255), transform=(2, 0, 0, 1, 25, 45))
    assert_close(s.render(W, H), s.render_reference(W, H))


def test_unbalanced_and_bad_input():
    s = Scene()
    with pytest.raises(pp.InputError, match="pop_clip"):
        s.pop_clip()
    s.push_clip(circle(5, 5, 5))
    with pytest.raises(pp.InputError, match="push_clip"):
        s.render(8, 8)
    with pytest.raises(pp.InputError):
        Scene().fill(circle(1, 1, 1), (300, 0, 0))
    with pytest.raises(pp.InputError):
        Scene().fill(circle(1, 1, 1), (3, 0, 0), fill_rule="odd")
    with pytest.raises(pp.InputError):
        Scene().render(0, 5)
    with pytest.raises(pp.InputError):
        Path().line_to(1, 1)


def test_clip_bboxes_fallback():
    kinds = np.array([0, 1, 0, 1, 0, 2, 2, 0], np.uint32)
    bb = np.array([[0, 0, 5, 5], [2, 2, 8, 8], [0, 0, 9, 9], [9, 9, 12, 12], [0, 0, 20, 20], [0, 0, 0, 0],
                   [0, 0, 0, 0], [1, 1, 30, 30]], np.float32)
    out = sc._clip_bboxes_fallback(kinds, bb, (0, 0, 10, 10))
    assert out[2].tolist() == [2, 2, 8, 8]
    assert out[3].tolist() == [0, 0, 0, 0] and out[4].tolist() == [0, 0, 0, 0]  # empty, not negative
    assert out[7].tolist() == [1, 1, 10, 10]
