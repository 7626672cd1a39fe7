"""Package layout: ``import pywgpuprims`` leaves the benchmarks (``pywgpuprims.bench``) unloaded, no
module outside that package imports it, and the package's module-level imports have no cycle."""

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "pywgpuprims"


def test_import_pywgpuprims_loads_no_bench_module():
    code = "import sys, pywgpuprims; print([m for m in sys.modules if 'bench' in m])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return mods


def _imports(mods: dict) -> dict[str, list[tuple[str, bool]]]:
    """Each module's imports of pywgpuprims modules: (target, at module level)."""
    out: dict[str, list[tuple[str, bool]]] = {}
    for name, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text())
        top = {id(n) for n in tree.body}
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if is_pkg else name.split(".")[:-1]
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                targets = subs + ([base] if len(subs) < len(node.names) else [])
            else:
                continue
            found += [(t, id(node) in top) for t in targets if t in mods and t != name]
        out[name] = found
    return out


def test_no_module_outside_bench_imports_bench():
    mods = _modules()
    bad = [(m, t) for m, imps in _imports(mods).items() if not m.startswith("pywgpuprims.bench")
           for t, _ in imps if t.startswith("pywgpuprims.bench")]
    assert not bad, bad


def test_no_import_cycle_at_module_level():
    mods = _modules()
    graph = {m: sorted({t for t, top in imps if top}) for m, imps in _imports(mods).items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(m, path):
        state[m] = 1
        for t in graph[m]:
            if state.get(t) == 1:
                cycles.append(path[path.index(t):] + [t])
            elif t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles


def test_wgsl_files_are_small_and_include_what_exists():
    """One stage per WGSL file (issue 38): none over 600 lines, and every #include names a file."""
    import re

    root = PKG.parent / "wgsl"
    for f in root.rglob("*.wgsl"):
        text = f.read_text()
        assert text.count("\n") <= 600, f"{f.relative_to(root)}: {text.count(chr(10))} lines"
        for inc in re.findall(r'^\s*#include\s+"([^"]+)"', text, re.M):
            assert (root / inc).is_file(), f"{f.relative_to(root)} includes missing {inc}"
