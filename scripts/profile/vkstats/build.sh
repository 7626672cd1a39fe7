#!/usr/bin/env bash
# Builds the statistics layer (scripts/profile/vkstats/build/libppstats.so) for kernel_stats.py, with
# gcc and the Vulkan headers of Debian's libvulkan-dev (fetched into the build folder, not installed).
# Build it where gcc is (this machine) and carry the folder to the GPU machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/build"
cd "$here/build"
if [ ! -f include/vulkan/vk_layer.h ]; then
    apt-get download libvulkan-dev
    dpkg -x libvulkan-dev_*.deb headers
    rm -rf include && cp -r headers/usr/include include
fi
gcc -shared -fPIC -O2 -fvisibility=hidden -Wall -Wextra -I include -o libppstats.so "$here/ppstats.c"
echo "built $here/build/libppstats.so"
