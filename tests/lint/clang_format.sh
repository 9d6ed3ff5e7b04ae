#!/bin/sh
# tests/lint/clang_format.sh [SRC_ROOT]: fails, naming the files, when C code differs from .clang-format.
# Exit 77 (skipped) where clang-format is missing.
root=${1:-$(dirname "$0")/../..}
cd "$root" || exit 2
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not found (apt-get install clang-format): skipped"; exit 77; }
bad=""
for f in src/*.c src/*.h tests/unit/*.c tests/unit/*.h; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "not formatted (run clang-format -i on them):$bad"
  exit 1
fi
echo "clang-format: clean"
