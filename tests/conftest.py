import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import pywgpuprims as pp  # noqa: E402

POISON_U32 = 0xDEADBEEF


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", help="run the long stress tests")


def pytest_collection_modifyitems(config, items):
    on_gl = pp.device().backend == "OpenGL"
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(pytest.mark.skip(reason="stress test: opt in with --runslow"))
        mark = item.get_closest_marker("vulkan_only")
        if mark is not None and on_gl:
            item.add_marker(pytest.mark.skip(reason=mark.kwargs.get("reason", "runs on the Vulkan backend only")))


def pytest_report_header(config):
    return f"pywgpuprims device: {pp.device().adapter_summary}"


@pytest.fixture(scope="session")
def dev():
    return pp.device()


@pytest.fixture
def rng(request):
    # Fresh random inputs each run; the seed is printed on failure so a case can be replayed.
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


def poisoned(shape, dtype, dev=None):
    """A GpuArray filled with a recognisable poison pattern, so unwritten elements show."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    words = np.full((n * dtype.itemsize + 3) // 4, POISON_U32, dtype=np.uint32)
    g = pp.GpuArray.empty(shape, dtype, dev)
    if n:
        pp.device().write(g.buffer, words.tobytes())
    return g


def run_with_lavapipe_threads(script: str, threads: str) -> None:
    """Run ``script`` in a fresh process with ``LP_NUM_THREADS=threads`` (lavapipe reads it once,
    at start-up); it must print "ok". Skips on adapters other than lavapipe."""
    if "llvmpipe" not in pp.device().adapter_summary:
        pytest.skip("LP_NUM_THREADS only affects lavapipe")
    env = dict(os.environ, LP_NUM_THREADS=threads, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]
