"""The built wheel carries the WGSL sources and runs a kernel from outside the checkout."""

import os
import re
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.vulkan_only(reason="packaging does not depend on the backend: checked once, in the Vulkan run")
def test_every_wgsl_folder_is_a_listed_package():
    """setuptools wants data folders listed as packages: one missing from pyproject's list still ships
    (the package-data glob) but brings back a screenful of build warnings per folder."""
    listed = set(re.findall(r'"pywgpuprims\.wgsl\.([\w.]+)"', (ROOT / "pyproject.toml").read_text()))
    wgsl = ROOT / "wgsl"
    dirs = [d.relative_to(wgsl) for d in wgsl.rglob("*") if d.is_dir()]
    folders = {".".join(d.parts) for d in dirs if "__pycache__" not in d.parts}
    assert folders <= listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(folders - listed)}"


@pytest.mark.vulkan_only(reason="packaging does not depend on the backend: checked once, in the Vulkan run")
def test_wheel_installs_and_runs(tmp_path):
    pip = [sys.executable, "-m", "pip"]
    try:
        subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
                        str(ROOT)], check=True, capture_output=True, text=True, timeout=300)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"building the wheel failed:\n{exc.stdout}\n{exc.stderr}")
    (wheel,) = (tmp_path / "dist").glob("pywgpuprims-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "pywgpuprims/wgsl/bench/copy.wgsl" in names
    shipped = {n.removeprefix("pywgpuprims/wgsl/") for n in names if n.endswith(".wgsl")}
    assert shipped == {p.relative_to(ROOT / "wgsl").as_posix() for p in (ROOT / "wgsl").rglob("*.wgsl")}
    # A fresh venv that sees this interpreter's site-packages (numpy, wgpu: a path file, since
    # --system-site-packages reaches only the base interpreter's, not a venv's) but installs the
    # wheel itself, not editable, and runs from a directory outside the checkout.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    vpy = venv / "bin" / "python"
    child = subprocess.run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    paths = sysconfig.get_paths()
    parent = dict.fromkeys([paths["purelib"], paths["platlib"], *site.getsitepackages()])
    (Path(child) / "parent_site.pth").write_text("\n".join(parent) + "\n")
    subprocess.run([str(vpy), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   timeout=300)
    code = (
        "import numpy as np, pywgpuprims as pp, pywgpuprims.device_copy as c;"
        "from pathlib import Path;"
        "assert 'venv' in pp.__file__, pp.__file__;"
        "x = np.arange(1000, dtype=np.int32);"
        "assert (c.copy(x) == x).all();"
        "print('ran from', Path(pp.__file__).parent)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(vpy), "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "venv" in out.stdout


def test_import_without_the_svg_extra():
    """`import pywgpuprims` works without the optional SVG packages; load_svg names the extra."""
    code = ("import sys\n"
            "for m in ('defusedxml', 'tinycss2', 'cssselect2', 'fontTools'): sys.modules[m] = None\n"
            "import pywgpuprims, pywgpuprims.scene as s\n"
            "try:\n    s.load_svg\nexcept ImportError as e:\n    print('extra' if \"'svg' extra\" in str(e) else e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "extra"
