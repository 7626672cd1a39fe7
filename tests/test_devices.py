"""Several devices: pp.devices(), PYWGPUPRIMS_DEVICE, set_device's checks.

On this machine lavapipe (Vulkan) and llvmpipe (OpenGL) are two real adapters of the same CPU;
each test that needs two devices skips where fewer are listed."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pywgpuprims as pp

ROOT = str(Path(__file__).resolve().parents[1])


def _run(script: str, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=ROOT, **env)
    for k, v in env.items():
        if v is None:
            full.pop(k)
    return subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def two():
    ds = pp.devices()
    if len(ds) < 2:
        pytest.skip("needs two adapters")
    return ds


def test_devices_are_listed_once_in_rank_order():
    ds = pp.devices()
    assert ds and all(isinstance(d, pp.Device) for d in ds)
    assert [d.index for d in ds] == list(range(len(ds)))
    again = pp.devices()
    assert all(a is b for a, b in zip(ds, again, strict=True)), "devices() started a device twice"
    rank = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
    keys = [(rank.get(d.info.get("adapter_type"), 4), d.backend != "Vulkan") for d in ds]
    assert keys == sorted(keys)
    assert len({id(d.raw) for d in ds}) == len(ds)
    for d in ds:
        assert d.name.startswith(f"{d.index}: ") and d.adapter_summary in repr(d)


def test_default_device_is_one_of_the_listed(dev):
    # the session's default (PYWGPUPRIMS_BACKEND may filter the list) is devices()[0] unless set
    assert dev is pp.devices()[0]


def test_a_device_made_directly_has_no_index():
    d = pp.Device(adapter=pp.devices()[0].adapter)
    assert d.index is None and d is not pp.devices()[0] and "0:" not in repr(d)


@pytest.mark.parametrize("index", [0, 1])
def test_env_picks_the_default_by_index(index, two):
    script = ("import numpy as np, pywgpuprims as pp\n"
              f"d = pp.device(); assert d is pp.devices()[{index}], (d, pp.devices())\n"
              "x = np.random.default_rng().integers(0, 1000, 5000).astype(np.uint32)\n"
              "assert np.array_equal(pp.scan(x), np.cumsum(x, dtype=np.uint32))\n"
              "assert pp.asarray(x).device is d\n"
              "print('ok', d.name)")
    r = _run(script, PYWGPUPRIMS_DEVICE=str(index), PYWGPUPRIMS_BACKEND=None)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]
    assert r.stdout.split("ok ", 1)[1].strip() == two[index].name


@pytest.mark.parametrize("value", ["7", "-1", "gpu", "1.0"])
def test_a_bad_env_value_names_the_variable_and_the_choices(value):
    r = _run("import pywgpuprims as pp\npp.device()", PYWGPUPRIMS_DEVICE=value, PYWGPUPRIMS_BACKEND=None)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("pywgpuprims._errors.InputError: device: PYWGPUPRIMS_DEVICE="), last
    assert repr(value) in last and "0: " in last and pp.devices()[0].adapter_summary in last


def test_env_index_counts_in_the_filtered_list():
    # with PYWGPUPRIMS_BACKEND=gl the list holds the OpenGL adapters only: index 0 is one of them
    if not any(d.backend == "OpenGL" for d in pp.devices()) and os.environ.get("PYWGPUPRIMS_BACKEND") != "gl":
        pytest.skip("no OpenGL adapter")
    r = _run("import pywgpuprims as pp\nprint('ok', pp.device().backend, len(pp.devices()))",
             PYWGPUPRIMS_DEVICE="0", PYWGPUPRIMS_BACKEND="gl")
    assert r.returncode == 0 and "ok OpenGL" in r.stdout, r.stderr[-2000:]


@pytest.mark.parametrize("bad", ["gl", 0, 1.5, object(), pp.devices])
def test_set_device_checks_its_argument(bad):
    before = pp.device()
    with pytest.raises(pp.InputError, match="set_device: expected a pywgpuprims.Device or None"):
        pp.set_device(bad)
    assert pp.device() is before


def test_set_device_switches_and_resets(two):
    before = pp.device()
    try:
        pp.set_device(two[1])
        assert pp.device() is two[1]
        x = np.arange(100, dtype=np.uint32)
        assert pp.asarray(x).device is two[1]
        np.testing.assert_array_equal(pp.scan(x), np.cumsum(x))
        pp.set_device(None)
        assert pp.device() is two[0]  # chosen again: the listed device, not a new one
    finally:
        pp.set_device(before)


# ----------------------------------------------------------------------- device= and use_device
def _python_brackets(is_open):
    """link and depth as bracket_match documents them, by a plain Python stack."""
    link, depth, stack = [], [], []
    for o in is_open.tolist():
        if o:
            link.append(stack[-1] if stack else -1)
            depth.append(len(stack))
            stack.append(len(link) - 1)
        elif stack:
            link.append(stack.pop())
            depth.append(len(stack))
        else:
            link.append(-1)
            depth.append(0)
    return np.array(link), np.array(depth)


def _python_clips(kinds, boxes, viewport):
    """clip_bboxes with op="intersect", by a plain Python stack of float boxes."""
    def meet(a, b):
        r = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
        return r if r[0] < r[2] and r[1] < r[3] else (0.0, 0.0, 0.0, 0.0)

    stack, out = [tuple(map(float, viewport))], []
    for k, b in zip(kinds.tolist(), boxes.tolist(), strict=True):
        if k == 1:
            stack.append(meet(b, stack[-1]))
            out.append(stack[-1])
        elif k == 2 and len(stack) > 1:
            out.append(stack.pop())
        else:
            out.append(meet(b, stack[-1]))
    return np.array(out)


def _calls(rng):
    """(name, call(device) -> numpy result, numpy/scipy answer, tolerance) for every public call;
    sizes cross several tiles."""
    from scipy import ndimage, signal

    n = 70_001
    u = rng.integers(0, 1000, n).astype(np.uint32)
    f = rng.standard_normal(n).astype(np.float32)
    mask = rng.random(n) < 0.3
    runs = np.repeat(rng.integers(0, 4, 9000).astype(np.int32), rng.integers(1, 9, 9000))
    change = np.flatnonzero(np.diff(runs)) + 1
    starts = np.concatenate([[0], change])
    counts = np.diff(np.concatenate([starts, [runs.size]]))
    is_open = rng.random(20_000) < 0.5
    kinds = rng.choice(np.array([0, 1, 2], np.uint32), 3000, p=(0.4, 0.3, 0.3))
    boxes = np.sort(rng.uniform(0, 900, (3000, 2, 2)), axis=1).transpose(0, 2, 1).reshape(-1, 4)
    boxes = boxes[:, [0, 2, 1, 3]].astype(np.float32)
    img = rng.random((67, 133), dtype=np.float32)
    vol = rng.standard_normal((5, 9, 37)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    blob = bytes(rng.choice(np.frombuffer(b"abcdefgh", np.uint8), 100_000, p=[.5, .2, .1, .1, .04, .03, .02, .01]))
    sat = np.cumsum(np.cumsum((img * 100).astype(np.uint8), 0, dtype=np.uint64), 1, dtype=np.uint64)
    spline = ndimage.spline_filter(img.astype(np.float64), 3, mode="mirror")
    return [
        ("scan", lambda d: pp.scan(u, device=d), np.cumsum(u), 0),
        ("scan float", lambda d: pp.scan(f, device=d), np.cumsum(f.astype(np.float64)), 2e-6 * np.abs(f).sum()),
        ("reduce", lambda d: pp.reduce(u, device=d), np.sum(u), 0),
        ("compact", lambda d: pp.compact(f, mask, device=d), f[mask], 0),
        ("nonzero", lambda d: pp.nonzero(mask, device=d), np.flatnonzero(mask), 0),
        ("rle_encode", lambda d: np.concatenate(pp.rle_encode(runs, device=d)),
         np.concatenate([runs[starts], counts]), 0),
        ("rle_decode", lambda d: pp.rle_decode(runs[starts], counts.astype(np.uint32), device=d), runs, 0),
        ("bracket_match", lambda d: np.concatenate(pp.bracket_match(is_open, device=d)),
         np.concatenate(_python_brackets(is_open)), 0),
        ("clip_bboxes", lambda d: pp.clip_bboxes(kinds, boxes, (0, 0, 900, 900), device=d),
         _python_clips(kinds, boxes, (0, 0, 900, 900)), 0),
        ("summed_area_table", lambda d: pp.summed_area_table((img * 100).astype(np.uint8), device=d), sat, 0),
        ("box_filter", lambda d: pp.box_filter(img, 3, "constant", device=d),
         ndimage.uniform_filter(img.astype(np.float64), 7, mode="constant"), 1e-6 * img.size),
        ("gaussian_filter", lambda d: pp.gaussian_filter(img, 4.0, device=d),
         ndimage.gaussian_filter(img.astype(np.float64), 4.0, mode="reflect"), 0.01),
        ("recursive_filter", lambda d: pp.recursive_filter(img, 0.5, [-0.5], axes=1, anticausal=False, device=d),
         signal.lfilter([0.5], [1, -0.5], img.astype(np.float64), axis=1), 1e-5),
        ("bspline_prefilter", lambda d: pp.bspline_prefilter(img, device=d), spline, 1e-5),
        ("correlate", lambda d: pp.correlate(vol, w, output_shape="valid", device=d),
         np.stack([signal.correlate(vol.astype(np.float64), k, "valid") for k in w]), 1e-4),
        ("fse", lambda d: np.frombuffer(pp.fse.decompress(pp.fse.compress(blob, device=d), device=d), np.uint8),
         np.frombuffer(blob, np.uint8), 0),
        ("asarray", lambda d: pp.asarray(u, device=d).numpy(), u, 0),
    ]


@pytest.mark.parametrize("index", [0, 1])
def test_every_call_runs_on_the_device_asked_for(index, two, rng, monkeypatch):
    d = two[index]
    other = two[1 - index]
    # count each device's uploads: the asked-for device gets them, the other none
    uploads = {id(two[0]): 0, id(two[1]): 0}
    for dev in two:
        real = dev.upload

        def counted(*a, _dev=dev, _real=real, **k):
            uploads[id(_dev)] += 1
            return _real(*a, **k)

        monkeypatch.setattr(dev, "upload", counted)
    for name, call, want, tol in _calls(rng):
        got = np.asarray(call(d), np.float64)
        np.testing.assert_allclose(got, np.asarray(want, np.float64).reshape(got.shape), rtol=0, atol=tol,
                                   err_msg=f"{name} on {d.name}")
        assert uploads[id(other)] == 0, f"{name} with device={d.name} uploaded to {other.name}"
    assert uploads[id(d)] > 0


@pytest.mark.parametrize("index", [0, 1])
def test_gpuarray_results_stay_on_their_device(index, two, rng):
    d = two[index]
    x = rng.integers(0, 100, 10_000).astype(np.uint32)
    g = pp.asarray(x, device=index)  # an index names the device too
    assert g.device is d
    assert pp.scan(g).device is d  # no device=: the input's device
    assert pp.scan(g, device=d).device is d
    c = pp.compact(g, pp.asarray(x % 3 == 0, device=d))
    assert c.data.device is d
    np.testing.assert_array_equal(c.numpy(), x[x % 3 == 0])
    rl = pp.rle_encode(pp.asarray(np.sort(x), device=d))
    np.testing.assert_array_equal(pp.rle_decode(rl).numpy(), np.sort(x))
    e = pp.GpuArray.empty((7,), np.float32, device=d)
    assert e.device is d
    assert pp.asarray(x, dev=d).device is d  # the older spelling
    with pytest.raises(pp.InputError, match="asarray: two devices asked for"):
        pp.asarray(x, dev=d, device=1 - index)


def test_arrays_of_one_device_are_refused_on_the_other(two, rng):
    a, b = two
    x = rng.integers(0, 100, 1000).astype(np.uint32)
    ga, gb = pp.asarray(x, device=a), pp.asarray(x, device=b)
    img = pp.asarray(rng.random((20, 30), dtype=np.float32), device=a)
    refused = [
        ("scan", lambda: pp.scan(ga, device=b)),
        ("scan", lambda: pp.scan(gb, out=pp.GpuArray.empty(x.shape, x.dtype, device=a))),
        ("reduce", lambda: pp.reduce(ga, device=b)),
        ("compact", lambda: pp.compact(ga, gb)),
        ("compact", lambda: pp.compact(ga, x % 2 == 0, device=b)),
        ("nonzero", lambda: pp.nonzero(ga, device=b)),
        ("rle_encode", lambda: pp.rle_encode(ga, device=b)),
        ("rle_decode", lambda: pp.rle_decode(pp.rle_encode(ga), device=b)),
        ("rle_decode", lambda: pp.rle_decode(ga, gb)),
        ("bracket_match", lambda: pp.bracket_match(ga, device=b)),
        ("box_filter", lambda: pp.box_filter(img, 2, device=b)),
        ("gaussian_filter", lambda: pp.gaussian_filter(img, 2.0, device=b)),
        ("summed_area_table", lambda: pp.summed_area_table(img, device=b)),
        ("asarray", lambda: pp.asarray(ga, device=b)),
        ("fse.compress", lambda: pp.fse.compress(pp.asarray(x.view(np.uint8), device=a), device=b)),
    ]
    for name, call in refused:
        with pytest.raises(pp.InputError) as err:
            call()
        msg = str(err.value)
        assert msg.startswith(f"{name}: "), msg
        assert a.name in msg and b.name in msg, msg
    np.testing.assert_array_equal(pp.scan(ga).numpy(), np.cumsum(x))  # nothing broke on either
    np.testing.assert_array_equal(pp.scan(gb).numpy(), np.cumsum(x))


def test_two_devices_of_one_adapter_are_told_apart(rng):
    mine, yours = (pp.Device(adapter=pp.devices()[0].adapter) for _ in range(2))
    g = pp.asarray(np.arange(10, dtype=np.uint32), device=mine)
    with pytest.raises(pp.InputError, match=re.escape(f"lives on device {mine.name}, not on {pp.devices()[0].name}")):
        pp.scan(g, device=pp.devices()[0])  # the listed one has its index in its name
    with pytest.raises(pp.InputError, match="another Device of the same adapter"):
        pp.scan(g, device=yours)
    np.testing.assert_array_equal(pp.scan(g).numpy(), np.cumsum(np.arange(10)))


@pytest.mark.parametrize("bad", ["gl", 1.0, True, -1, 99, object()])
def test_a_bad_device_argument_is_refused(bad):
    with pytest.raises(pp.InputError, match="^scan: device"):
        pp.scan(np.arange(4, dtype=np.uint32), device=bad)
    with pytest.raises(pp.InputError, match="^use_device: device"):
        with pp.use_device(bad):
            pass


def test_use_device_nests_and_restores(two):
    default = pp.device()
    with pp.use_device(two[1]) as d1:
        assert d1 is two[1] and pp.device() is two[1]
        with pp.use_device(0):
            assert pp.device() is two[0]
            with pp.use_device(None):  # no choice: the enclosing one stays
                assert pp.device() is two[0]
        assert pp.device() is two[1]
        with pytest.raises(KeyError):
            with pp.use_device(two[0]):
                raise KeyError("inside")
        assert pp.device() is two[1]
        assert pp.asarray(np.zeros(3, np.float32)).device is two[1]
    assert pp.device() is default


def test_threads_with_different_defaults_do_not_interfere(two, rng):
    import threading

    barrier = threading.Barrier(len(two))
    errors, done = [], []
    seeds = rng.integers(0, 2**31, len(two))

    def work(i):
        r = np.random.default_rng(seeds[i])
        try:
            with pp.use_device(two[i]):
                barrier.wait(timeout=60)
                for k in range(12):
                    x = r.integers(0, 1000, 5000 + 997 * k).astype(np.uint32)
                    assert pp.device() is two[i]
                    np.testing.assert_array_equal(pp.scan(x), np.cumsum(x))
                    g = pp.asarray(x)
                    assert g.device is two[i]
                    np.testing.assert_array_equal(pp.compact(g, pp.asarray(x % 2 == 1)).numpy(), x[x % 2 == 1])
            done.append(i)
        except BaseException as exc:  # reported by the main thread
            errors.append((i, exc))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(two))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert sorted(done) == list(range(len(two)))
    assert pp.device() is pp.devices()[0]  # the main thread's default never moved


def test_device_keyword_is_in_every_public_signature_and_docstring():
    import inspect

    calls = [pp.scan, pp.reduce, pp.compact, pp.nonzero, pp.rle_encode, pp.rle_decode, pp.bracket_match,
             pp.clip_bboxes, pp.summed_area_table, pp.box_filter, pp.gaussian_filter, pp.recursive_filter,
             pp.bspline_prefilter, pp.correlate, pp.fse.compress, pp.fse.decompress, pp.asarray,
             pp.GpuArray.empty, pp.scene.Scene.render]
    for fn in calls:
        p = inspect.signature(fn).parameters["device"]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is None, fn
        if "Parameters\n" in (fn.__doc__ or ""):
            assert "device : Device or int, optional" in fn.__doc__, fn


def test_scene_renders_on_the_device_asked_for(two):
    from pywgpuprims.scene import Scene, circle

    s = Scene()
    s.fill(circle(16, 16, 10), (255, 0, 0, 255))
    ref = s.render_reference(32, 32)
    for d in two:
        img = s.render(32, 32, device=d)
        assert np.abs(img.astype(int) - ref).max() <= 2, d.name


# Adapters that cannot start, as wgpu lists them beside a GPU's Vulkan adapter (its OpenGL adapter fails
# with "Request device failed ... Parent device is lost"): a real adapter with its start or its compute
# limits replaced. The source runs here and in the subprocess tests.
_FAKES = """
import os
import pywgpuprims._device as D

class Fake:
    def __init__(self, real, summary, no_compute=False):
        self._real, self.summary = real, summary
        self.limits = dict(real.limits)
        if no_compute:
            self.limits["max-compute-invocations-per-workgroup"] = 0
        self.starts = 0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def request_device_sync(self, **kwargs):
        self.starts += 1
        raise RuntimeError("Request device failed (3): Validation Error: Parent device is lost")

KEY = (os.environ.get("PYWGPUPRIMS_BACKEND") or None, os.environ.get("PYWGPUPRIMS_ADAPTER") or None)
REAL = list(D._ranked_adapters())
BROKEN = Fake(REAL[0], "Broken GPU (DiscreteGPU) via OpenGL")
FLAT = Fake(REAL[0], "Flat GPU (DiscreteGPU) via OpenGL", no_compute=True)
"""


def _fakes() -> dict:
    ns: dict = {}
    exec(_FAKES, ns)
    return ns


def test_an_adapter_that_cannot_start_is_left_out_with_one_warning(monkeypatch):
    import warnings

    import pywgpuprims._device as D

    before = pp.devices()
    f = _fakes()
    # one that fails first, one without compute between the real ones: the real ones keep their indices
    monkeypatch.setitem(D._RANKED, f["KEY"], [f["BROKEN"], f["REAL"][0], f["FLAT"], *f["REAL"][1:]])
    monkeypatch.setattr(D, "_left_out", {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = pp.devices()
        again = pp.devices()
        assert pp.devices()[0] is ds[0] and pp._device._shared_device(len(ds)) is None
    assert ds == again and all(a is b for a, b in zip(ds, before, strict=True)), "the list changed"
    assert [d.index for d in ds] == list(range(len(ds)))
    assert [d.adapter for d in ds] == f["REAL"]
    texts = sorted(str(w.message) for w in caught)
    assert [w.category for w in caught] == [RuntimeWarning] * 2, texts
    assert texts[0].startswith("pywgpuprims.devices: left out Broken GPU (DiscreteGPU) via OpenGL: starting it "
                               "failed: Request device failed (3)"), texts
    assert texts[1].startswith("pywgpuprims.devices: left out Flat GPU (DiscreteGPU) via OpenGL: it has no "
                               "compute shaders"), texts
    assert f["BROKEN"].starts == 1, "a failed adapter was tried again"
    assert f["FLAT"].starts == 0, "an adapter without compute was started"
    for i, d in enumerate(ds):  # an index names the listed device everywhere
        assert pp.asarray(np.arange(3, dtype=np.uint32), device=i).device is d


@pytest.mark.vulkan_only(reason="the parent lists what PYWGPUPRIMS_BACKEND=gl leaves, the subprocess every adapter")
@pytest.mark.parametrize("index", [0, 1])
def test_env_index_skips_an_adapter_that_cannot_start(index):
    # the broken adapter ranks first; PYWGPUPRIMS_DEVICE counts the listed devices, not the adapters
    if len(_fakes()["REAL"]) <= index:
        pytest.skip("needs two adapters")
    script = _FAKES + (
        "D._RANKED[KEY] = [BROKEN, *REAL]\n"
        "import numpy as np, pywgpuprims as pp\n"
        "d = pp.device()\n"
        f"assert d.adapter is REAL[{index}] and d.index == {index}, d\n"
        f"assert d is pp.devices()[{index}] and [x.adapter for x in pp.devices()] == REAL\n"
        "x = np.random.default_rng().integers(0, 1000, 5000).astype(np.uint32)\n"
        "assert np.array_equal(pp.scan(x), np.cumsum(x, dtype=np.uint32))\n"
        "assert BROKEN.starts == 1\n"
        "print('ok', d.name)")
    r = _run(script, PYWGPUPRIMS_DEVICE=str(index), PYWGPUPRIMS_BACKEND=None)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]
    assert r.stdout.split("ok ", 1)[1].strip() == f"{index}: {_fakes()['REAL'][index].summary}"
    assert r.stderr.count("left out Broken GPU") == 1, r.stderr[-2000:]


@pytest.mark.vulkan_only(reason="the parent lists what PYWGPUPRIMS_BACKEND=gl leaves, the subprocess every adapter")
def test_env_index_past_the_started_devices_is_refused():
    n = len(_fakes()["REAL"])
    script = _FAKES + "D._RANKED[KEY] = [*REAL, BROKEN]\nimport pywgpuprims as pp\npp.device()"
    r = _run(script, PYWGPUPRIMS_DEVICE=str(n), PYWGPUPRIMS_BACKEND=None)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"pywgpuprims._errors.InputError: device: PYWGPUPRIMS_DEVICE='{n}' is not the "
                           f"index of a device; choose one of 0..{n - 1} (0: "), last
    assert "Broken" not in last and "left out Broken GPU" in r.stderr


def test_no_adapter_that_starts_is_a_clear_error():
    script = _FAKES + "D._RANKED[KEY] = [BROKEN, FLAT]\nimport pywgpuprims as pp\nassert pp.devices() == []\n" \
        "pp.device()"
    r = _run(script, PYWGPUPRIMS_BACKEND=None)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("pywgpuprims._errors.ShaderError: devices: no adapter could be started "
                           "(Broken GPU (DiscreteGPU) via OpenGL: starting it failed"), last
    assert "Flat GPU (DiscreteGPU) via OpenGL: it has no compute shaders" in last
