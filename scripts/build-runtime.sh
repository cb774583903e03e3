#!/usr/bin/env bash
# Builds a GPU runtime for superfluid: ggml backend shared libraries compiled with CMake from the
# pinned ollama module's ggml sources, installed as <data>/runtimes/NAME/lib/ollama/ with a
# manifest.json. The worker of a model loads the runtime picked for it through OLLAMA_LIBRARY_PATH
# (the engine only loads backends from a directory whose path contains lib/ollama).
#
#   scripts/build-runtime.sh vulkan [DATA_DIR]   # Debian: libvulkan-dev glslc (installed here)
#   scripts/build-runtime.sh cuda   [DATA_DIR]   # needs nvcc (the CUDA toolkit) on PATH
#
# It takes long on 2 cores (the Vulkan shaders alone are minutes); it is run by hand, not by
# make test. Tests that need a runtime skip, saying why, when it is absent.
set -euo pipefail
name="${1:?usage: build-runtime.sh vulkan|cuda [DATA_DIR]}"
data="${2:-${XDG_DATA_HOME:-$HOME/.local/share}/superfluid}"
cd "$(dirname "$0")/.."

. scripts/lib/apt.sh

case "$name" in
  vulkan)
    apt_install cmake g++ libvulkan-dev glslc spirv-headers mesa-vulkan-drivers
    preset=Vulkan target=ggml-vulkan ;;
  cuda)
    apt_install cmake g++
    command -v nvcc > /dev/null || { echo "build-runtime: nvcc not found; install the CUDA toolkit first" >&2; exit 2; }
    preset="CUDA 12" target=ggml-cuda ;;
  *) echo "build-runtime: unknown runtime $name (vulkan or cuda)" >&2; exit 2 ;;
esac

src=$(go mod download -json github.com/ollama/ollama | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] || { echo "build-runtime: cannot find the ollama module" >&2; exit 1; }
work="${BUILD_DIR:-$HOME/.cache/superfluid/runtime-build}/$name"
mkdir -p "$work"
# The module cache is read-only: build from a copy of what CMake needs.
rsync -a --delete --chmod=u+w "$src/CMakeLists.txt" "$src/CMakePresets.json" "$src/ml" "$work/src/" 2>/dev/null ||
  { rm -rf "$work/src"; mkdir -p "$work/src"; cp -r "$src/CMakeLists.txt" "$src/CMakePresets.json" "$src/ml" "$work/src/"; chmod -R u+w "$work/src"; }

# ggml's shader feature tests count a glslc failure as support unless the message names the
# extension; Debian 12's glslc fails the cooperative-matrix-2 test another way and the build then
# breaks. Count any failure as "not supported".
perl -0pi -e 's/(execute_process\(\s*COMMAND \$\{Vulkan_GLSLC_EXECUTABLE\}[^)]*?)\)/$1 RESULT_VARIABLE glslc_status)/s; s/if \(\$\{glslc_error\} MATCHES/if (NOT glslc_status EQUAL 0 OR \${glslc_error} MATCHES/' \
  "$work/src/ml/backend/ggml/ggml/src/ggml-vulkan/CMakeLists.txt"

extra=()
if [ "$name" = vulkan ]; then
  # Debian 12's Vulkan headers (1.3.239) predate VK_EXT_layer_settings, which ggml-vulkan uses;
  # the Go module proxy serves Khronos' header repository, so take newer headers from there
  # (the loader and drivers stay Debian's).
  hdr=$(cd "$work" && { [ -f go.mod ] || go mod init runtimebuild > /dev/null 2>&1; } &&
    GOFLAGS=-mod=mod go mod download -json github.com/KhronosGroup/Vulkan-Headers@v1.3.280 |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$hdr/include/vulkan" ] || { echo "build-runtime: could not fetch the Vulkan headers" >&2; exit 1; }
  extra+=("-DVulkan_INCLUDE_DIR=$hdr/include")
fi
cmake -S "$work/src" -B "$work/build" --preset "$preset" -DCMAKE_BUILD_TYPE=Release -DGGML_CCACHE=OFF "${extra[@]}" > "$work/configure.log"
cmake --build "$work/build" --target "$target" -j "$(nproc)"

dest="$data/runtimes/$name/lib/ollama"
mkdir -p "$dest"
cp -a "$work"/build/lib/ollama/libggml-"$name"*.so* "$work"/build/lib/ollama/libggml-base.so* "$dest/"
cat > "$data/runtimes/$name/manifest.json" <<JSON
{"name": "$name", "backend": "$target", "ollama_module": "$(basename "$src")", "built_at": "$(date -u +%FT%TZ)"}
JSON
echo "build-runtime: installed $name in $dest"
ls -la "$dest"
