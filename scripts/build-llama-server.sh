#!/usr/bin/env bash
# Build llama.cpp's own server (llama-server) from source and install it as DEST.
#
# Usage: build-llama-server.sh DEST
#
# The source is the llama.cpp that the llama-cpp-python source distribution vendors, fetched
# from the package index by pip (the version pinned in pyproject.toml): no other site is reached
# at build time. Only the llama-server target is built, statically linked, with the tests, the
# examples, the web UI (npm or a prebuilt download) and HTTPS off. The binary is kept in the
# user's cache folder, keyed by that version and this CPU's instruction sets (the build tunes
# for the CPU it runs on), so a second install copies it in seconds.
set -euo pipefail

dest=${1:?usage: build-llama-server.sh DEST}
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}

version=$(sed -n 's/.*"llama-cpp-python\(\[[a-z]*\]\)\?==\([0-9.]*\)".*/\2/p' "$root/pyproject.toml")
[ -n "$version" ] || { echo "llama-cpp-python is not pinned in pyproject.toml" >&2; exit 1; }
# The build's own options are part of the key: a changed recipe builds anew.
cpu=$( (uname -m; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true
    sed -n '/^if \[ ! -x/,$p' "$0"; cat "$root/scripts/cpu-cflags.sh") | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/brain-os/llama-server/$version-$cpu
binary=$cache/llama-server

if [ ! -x "$binary" ]; then
    echo "building llama-server from llama-cpp-python $version's llama.cpp (once; a few minutes)"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$python" -m pip download --quiet --no-deps --no-binary :all: \
        "llama-cpp-python==$version" -d "$work"
    tar -xzf "$work"/llama_cpp_python-"$version".tar.gz -C "$work"
    source_dir=$work/llama_cpp_python-$version/vendor/llama.cpp
    cflags=$("$root/scripts/cpu-cflags.sh")
    cmake -S "$source_dir" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
        -DGGML_NATIVE=ON -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags" \
        >"$work/configure.log" 2>&1 ||
        { tail -30 "$work/configure.log" >&2; exit 1; }
    cmake --build "$work/build" --target llama-server -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
    mkdir -p "$cache"
    # Copied under a temporary name, then renamed: an interrupted build leaves no half binary.
    cp "$work/build/bin/llama-server" "$binary.partial"
    mv "$binary.partial" "$binary"
fi

mkdir -p "$(dirname "$dest")"
cp "$binary" "$dest.partial"
mv "$dest.partial" "$dest"
"$dest" --version 2>&1 | head -1
