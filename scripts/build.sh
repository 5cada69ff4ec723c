#!/usr/bin/env bash
# Configures and builds seam into ./build (CUDA backend on where nvcc exists).
set -euo pipefail
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
