# tests/unit/cuda_text.sh: sourced by the tests that compile a piece of kloop's CUDA
# source text (a string of lua/kloop/eval/worker_client.lua) on the host as C, to compare
# it with src/kl_buf.c's: sets K, SRC and a scratch folder D (removed on exit), skips
# without a C compiler, and defines cuda_text.
# usage (in a test): . "$(dirname "$0")/cuda_text.sh"; cuda_text FIELD MARK SYMBOL OUT
#   writes the text of worker_client.FIELD between "(begin MARK" and "(end MARK)" to
#   OUT, and fails the test when SYMBOL is not in it.
set -eu
K=$1
SRC=$2
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
command -v cc >/dev/null || { echo "SKIP: no C compiler"; exit 77; }
cuda_text() {
  "$K" -e "io.write(require('kloop.eval.worker_client').$1)" > "$D/$1.cu"
  sed -n "/(begin $2/,/(end $2)/p" "$D/$1.cu" > "$4"
  grep -q "$3" "$4" || { echo "FAIL: $3 not found in worker_client.$1"; exit 1; }
}
