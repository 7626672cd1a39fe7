"""A/B timing of whole overlapped recursive filters (issue 6) across source trees or option sets.

    python scripts/profile/recfilter_ab.py [--rounds 3] [--side 4096] TREE[:OPTS] [TREE[:OPTS] ...]

Each TREE is a directory holding ``pywgpuprims/`` and ``wgsl/`` (the checkout, or a
``git archive`` of an older commit); OPTS is a JSON object of ``device().options`` to set there,
e.g. ``.:{"recfilter_frame_first":false}``, or of recfilter's module settings, prefixed ``rf.``
(``.:{"rf._FIX_SEG":[32,8,8]}``). Every round runs each entry in its own process, in
turn, so that drift of the GPU's clock or temperature falls on all of them alike; each process
times SIDE^2 float32 order 2 (zero) and Gaussian sigma 16 (reflect) as the in-context profile does
(20 replays after 20 ms of warm replays, median of seven) and saves its outputs, which are
compared with the first entry's (largest difference relative to the largest value).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

FILTERS = ("order 2, zero", "Gaussian 16, reflect")


def worker(out_dir: str, opts: dict, side: int) -> None:
    import numpy as np

    import pywgpuprims as pp
    from pywgpuprims import recfilter as rf
    from pywgpuprims._array import GpuArray
    from pywgpuprims._bench import BenchContext

    dev = pp.device()
    ctx = BenchContext(dev, repeats=7, cpu=False)
    img = np.random.default_rng(1).standard_normal((side, side)).astype(np.float32)
    g = pp.asarray(img)
    out = GpuArray.empty((side, side), np.float32, dev)
    b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")
    gb0, ga = rf._gaussian_coefs(16.0)
    gb0, ga, grho = rf._coefs(gb0, ga, "bench")
    cases = {FILTERS[0]: ([(b0, a, rho, True, True)], "zero"), FILTERS[1]: ([(gb0, ga, grho, True, True)], "reflect")}
    res = {}
    for key in [k for k in opts if k.startswith("rf.")]:  # module settings, e.g. "rf._FIX_SEG": [32, 8, 8]
        value = opts.pop(key)
        setattr(rf, key[3:], tuple(value) if isinstance(value, list) else value)
    with dev.using(**opts):
        for name, (passes, mode) in cases.items():
            def run(i, p=passes, m=mode):
                rf._filter_gpu(g, p, (0, 1), m, "block", "bench", out=out)
            with dev.using(timing_replay=20, timing_warm_ms=20):
                res[name] = ctx.gpu_ns(run) / 1e3
            run(0)
            np.save(os.path.join(out_dir, f"{FILTERS.index(name)}.npy"), out.numpy())
    print(json.dumps(res))


def main() -> None:
    args = sys.argv[1:]
    rounds, side = 3, 4096
    while args[:1] in (["--rounds"], ["--side"]):
        if args[0] == "--rounds":
            rounds = int(args[1])
        else:
            side = int(args[1])
        args = args[2:]
    entries = []
    for a in args:
        tree, _, opts = a.partition(":")
        entries.append((os.path.abspath(tree), json.loads(opts) if opts else {}, a))
    root = tempfile.mkdtemp(prefix="recfilter_ab_")  # each entry's outputs, removed at the end
    try:
        run_and_report(entries, rounds, side, root)
    finally:
        shutil.rmtree(root)


def run_and_report(entries: list, rounds: int, side: int, root: str) -> None:
    here = os.path.abspath(__file__)
    dirs = {e[2]: tempfile.mkdtemp(dir=root) for e in entries}
    times = {e[2]: {f: [] for f in FILTERS} for e in entries}
    for _ in range(rounds):
        for tree, opts, label in entries:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]))
            cmd = [sys.executable, here, "--worker", dirs[label], json.dumps(opts), str(side)]
            r = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
            if r.returncode:
                print(f"{label}: failed\n{r.stderr[-3000:]}")
                sys.exit(1)
            for f, us in json.loads(r.stdout.strip().splitlines()[-1]).items():
                times[label][f].append(us)
    import numpy as np

    first = entries[0][2]
    print(f"{'entry':50s} " + "  ".join(f"{f:>26s}" for f in FILTERS))
    for _, _, label in entries:
        cells = []
        for i, f in enumerate(FILTERS):
            a = np.load(os.path.join(dirs[first], f"{i}.npy"))
            b = np.load(os.path.join(dirs[label], f"{i}.npy"))
            diff = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
            v = times[label][f]
            cells.append(f"{statistics.median(v):7.1f} us ({min(v):.1f}-{max(v):.1f}) d={diff:.1e}")
        print(f"{label[-50:]:50s} " + "  ".join(f"{c:>26s}" for c in cells))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
