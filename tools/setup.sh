#!/usr/bin/env bash
# tools/setup.sh: installs what is missing (Debian 12 + CUDA toolkit) and builds kloop into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

# The build, then what the tests use: busted (specs), cram (CLI transcripts), luacheck and
# clang-format (tests/lint), chromium (renders the HTML report headless in its test).
pkgs=(build-essential cmake pkg-config libluajit-5.1-dev lua-cjson-dev libcurl4-openssl-dev
      libsqlite3-dev sqlite3 libedit2 lua-busted python3-cram lua-check clang-format chromium
      openmpi-bin libopenmpi-dev) # Open MPI: the optional kloop-mpi launcher and its tests (docs/SCALE.md)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f "${KLOOP_CUDA_HOME:-/usr/local/cuda}/include/cuda.h" ]; then
  echo "setup: the CUDA toolkit is not in ${KLOOP_CUDA_HOME:-/usr/local/cuda}; install it or set KLOOP_CUDA_HOME" >&2
  exit 1
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKLOOP_CUDA_HOME="${KLOOP_CUDA_HOME:-/usr/local/cuda}" >/dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/kloop"
