# tests/mpi/common.sh: what the MPI tests share: skip (77) without Open MPI or kloop-mpi,
# and the mpirun line (one host, oversubscribed, a dead rank survived: docs/SCALE.md).
# usage (sourced): . tests/mpi/common.sh BUILD_DIR SRC_DIR
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
if ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$BUILD/kloop-mpi" ]; then
  echo "skipped: mpirun or $BUILD/kloop-mpi missing (apt-get install openmpi-bin libopenmpi-dev, then re-run cmake)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --oversubscribe --mca orte_enable_recovery 1"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kloop-mpi-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$SRC"
# mpirun's recovery mode prints a harmless PMIx line per lost rank; the rest is ours
quiet_pmix() { grep -v "PMIX ERROR: BAD-PARAM" || true; }
fail() { echo "FAIL: $*"; exit 1; }
