"""Several devices: pp.devices(), PYWGPUPRIMS_DEVICE, set_device's checks.

On this machine lavapipe (Vulkan) and llvmpipe (OpenGL) are two real adapters of the same CPU;
each test that needs two devices skips where fewer are listed."""

import os
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
