#!/usr/bin/env bash
# One-stop set-up and run for pywgpuprims on Debian (as root) or any machine with Python 3.10+.
#   bash scripts/run.sh demo   -> installs, then runs the main demo (writes out/*.png)
#   bash scripts/run.sh test   -> installs, then ruff check . and the test suite (Vulkan, then OpenGL backend)
#   bash scripts/run.sh bench [args]  -> python -m pywgpuprims.bench [args] (--e2e: the end-to-end run)
# Idempotent: a second run skips what is already installed. Everything goes into ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}" PIP_DISABLE_PIP_VERSION_CHECK=1
what="${1:-test}"; shift || true

apt_install() {  # apt-get install as root (or via sudo), once per set of packages
    local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    if [ ! -f /tmp/.pywgpuprims-apt-updated ]; then $sudo apt-get update -qq && touch /tmp/.pywgpuprims-apt-updated; fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v python3 >/dev/null || ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "== installing python3-venv"; apt_install python3 python3-venv python3-pip
fi
if [ ! -x .venv/bin/python ]; then echo "== creating .venv"; python3 -m venv .venv; fi
PY=.venv/bin/python
stamp=".venv/.installed-$(cat pyproject.toml | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
    echo "== installing pywgpuprims and its extras into .venv"
    $PY -m pip install -q --upgrade pip setuptools wheel
    # setuptools' 'Editable installation' notice (the checkout's folders may shadow the package) is
    # said of every editable install with a package-dir mapping; here the checkout is the package.
    PYTHONWARNINGS="ignore:Editable installation" $PY -m pip install -q -e ".[test,bench,demo,dask,zarr]"
    touch "$stamp"
fi
# A GPU adapter for Vulkan (and llvmpipe's OpenGL for the second backend); lavapipe where there is none.
if ! $PY -c 'import wgpu,sys; sys.exit(0 if any(a.info["backend_type"]=="Vulkan" for a in wgpu.gpu.enumerate_adapters_sync()) else 1)' 2>/dev/null; then
    echo "== no Vulkan adapter: installing lavapipe (mesa-vulkan-drivers libvulkan1) and Mesa EGL"
    apt_install mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri
fi

case "$what" in
    test)
        echo "== ruff check ."
        $PY -m ruff check .
        echo "== tests on the Vulkan backend"
        $PY -m pytest -q "$@"
        if $PY -c 'import wgpu,sys; sys.exit(0 if any(a.info["backend_type"]=="OpenGL" for a in wgpu.gpu.enumerate_adapters_sync()) else 1)' 2>/dev/null; then
            echo "== tests on the OpenGL backend"
            PYWGPUPRIMS_BACKEND=gl $PY -m pytest -q "$@"
        else
            echo "== no OpenGL adapter: OpenGL backend run skipped"
        fi
        ;;
    demo)
        $PY demos/main_demo.py "$@"
        ;;
    bench)
        $PY -m pywgpuprims.bench "$@"
        ;;
    *) echo "usage: bash scripts/run.sh demo|test|bench [args]" >&2; exit 2 ;;
esac
