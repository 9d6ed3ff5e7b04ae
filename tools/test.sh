#!/usr/bin/env bash
# tools/test.sh: builds (incrementally) and runs the whole test suite; GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
