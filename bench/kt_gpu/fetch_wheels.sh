#!/usr/bin/env bash
# bench/kt_gpu/fetch_wheels.sh: downloads Kernel Tuner and the pure-Python (and small
# binary) packages it imports into build/ktwheels/, for the GPU machine (Python 3.12,
# no network; numpy, scipy, scikit-learn and cupy already installed there).
#
# Why not `pip download kernel_tuner` with its dependencies: KT 1.5.0 declares pandas
# and pymoo (>= 0.6.1.6, whose cp312 wheels are manylinux_2_28 only), which it imports
# only for ATF caches and the pymoo strategies; with the manylinux2014 platform the
# resolver falls back to KT 1.3.3, and with all of them the bundle would be ~85 MB of
# numpy, scipy, pandas, ... the GPU machine has. So: kernel_tuner without its
# dependencies, plus the packages `import kernel_tuner` and tune_kernel (cupy backend,
# brute_force) import, with theirs. Run from anywhere; prints the bundle and its size.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:-$ROOT/build/ktwheels}
KT_VERSION=${KT_VERSION:-1.5.0}
PIP=${PIP:-python3 -m pip}
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64)

rm -rf "$DEST"
mkdir -p "$DEST"
$PIP download -q "${PLAT[@]}" --no-deps -d "$DEST" "kernel_tuner==$KT_VERSION"
# what kernel_tuner imports on our path (interface, core, searchspace, util, file_utils,
# integration, backends.cupy, runners.sequential, strategies.brute_force):
# constraint (python-constraint2), jsonschema, xmltodict, packaging; numpy and scipy are
# the GPU machine's own
$PIP download -q "${PLAT[@]}" -d "$DEST" python-constraint2 jsonschema xmltodict packaging

# the GPU machine's own packages must not travel (they would shadow its builds)
count=0
for w in "$DEST"/*.whl; do
  name=$(basename "$w")
  case "${name,,}" in
    numpy-* | scipy-* | scikit_learn-* | cupy* | pandas-* | pymoo-* | joblib-* | threadpoolctl-* | fastrlock-*)
      echo "fetch_wheels: the bundle holds $name, which the GPU machine has" >&2
      exit 1 ;;
  esac
  echo "$name"
  count=$((count + 1))
done
bytes=$(du -cb "$DEST"/*.whl | tail -1 | cut -f1)
echo "build/ktwheels: $count wheels, $((bytes / 1024)) KiB"
if [ "$bytes" -gt $((20 * 1024 * 1024)) ]; then
  echo "fetch_wheels: the bundle is over 20 MiB" >&2
  exit 1
fi
