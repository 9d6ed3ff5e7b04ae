#!/bin/sh
# tests/loader/hidden_cache.sh: kloop where the CUDA toolkit is not on the loader path.
# Usage: hidden_cache.sh KLOOP SOURCE_DIR
#
# A fresh Debian 12 root with the toolkit in /usr/local/cuda has no loader config entry
# for it; the build machines do (/etc/ld.so.conf.d/*cuda*), which hid the bug. The
# loader reads only /etc/ld.so.cache (ld.so.conf is ldconfig's input), so a private
# mount namespace with /dev/null bound over the cache, LD_LIBRARY_PATH unset, is that
# fresh machine: kloop must still compile with NVRTC (whose libnvrtc-builtins is
# loaded by name), initialise CUPTI's Profiler Host API (libnvperf_host, by name) and
# say so in `kloop doctor`. As root: unshare -m; otherwise a user namespace
# (unshare -Urm); exits 77 (skipped) where neither is permitted.
set -u
KLOOP=${1:?usage: hidden_cache.sh KLOOP SOURCE_DIR}
SRC=${2:?usage: hidden_cache.sh KLOOP SOURCE_DIR}
case $KLOOP in /*) ;; *) KLOOP=$PWD/$KLOOP ;; esac

if [ "${KL_HIDDEN:-}" != 1 ]; then
  [ -d "${KLOOP_CUDA_HOME:-/usr/local/cuda}/lib64" ] || { echo "skip: no CUDA toolkit"; exit 77; }
  for how in "unshare -m" "unshare -Urm"; do
    if $how true 2>/dev/null; then
      # shellcheck disable=SC2086
      exec env -u LD_LIBRARY_PATH KL_HIDDEN=1 $how sh -c \
        'mount --bind /dev/null /etc/ld.so.cache || exit 99; exec sh "$0" "$@"' "$0" "$KLOOP" "$SRC"
    fi
  done
  echo "skip: no private mount namespace here (neither unshare -m nor unshare -Urm)"
  exit 77
fi

fail=0
check() { # name, then the command; its output is shown when it fails
  name=$1
  shift
  if out=$("$@" 2>&1); then
    echo "ok   $name"
  else
    echo "FAIL $name"
    printf '%s\n' "$out" | sed 's/^/     /'
    fail=1
  fi
}

cd "$SRC" || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export KLOOP_CACHE="$tmp/cache" HOME="$tmp"

# the setup is what it claims: the loader finds no toolkit library by name
if "$KLOOP" -e 'local ffi = require("ffi"); for _, n in ipairs({"libnvrtc.so.13", "libnvrtc.so.12", "libcupti.so.13", "libnvperf_host.so", "libnvrtc-builtins.so.13.0"}) do if pcall(ffi.load, n) then print(n .. " is on the loader path") os.exit(1) end end' ; then
  echo "ok   the toolkit is not on the loader path"
else
  echo "FAIL the loader cache is not hidden"
  exit 1
fi

check "kloop compile kernels/gemm.cu" "$KLOOP" compile kernels/gemm.cu
doctor=$("$KLOOP" doctor 2>&1)
printf '%s\n' "$doctor" | sed 's/^/     doctor: /'
check "doctor: ok NVRTC" sh -c 'printf "%s\n" "$0" | grep -q "^ok  *NVRTC"' "$doctor"
check "doctor: ok CUPTI" sh -c 'printf "%s\n" "$0" | grep -q "^ok  *CUPTI"' "$doctor"
# profiling without a GPU: the Profiler Host API schedules kloop's default metrics
check "CUPTI Profiler Host API: passes for the default metrics" "$KLOOP" -e '
  local core, prof = require("kloop.core.ffi"), require("kloop.eval.profile")
  local ffi, C = core.ffi, core.C
  local err = ffi.new("kl_err")
  assert(C.kl_cupti_load(err) == 0, ffi.string(err.msg))
  local names = prof.metric_list()
  local pp = ffi.new("kl_prof*[1]")
  assert(C.kl_prof_new("GH100", ffi.new("const char*[?]", #names, names), #names, pp, err) == 0, ffi.string(err.msg))
  local passes = C.kl_prof_passes(pp[0])
  C.kl_prof_free(pp[0])
  assert(passes >= 1, "no passes")
  print(passes .. " passes")'

# doctor reports what works, not what opens: a toolkit folder holding libnvrtc and
# libcupti without their companions opens, but cannot compile nor plan passes
home=${KLOOP_CUDA_HOME:-/usr/local/cuda}
mkdir -p "$tmp/bare/lib64"
for f in libnvrtc.so.13 libcupti.so.13; do
  [ -e "$home/lib64/$f" ] && ln -s "$home/lib64/$f" "$tmp/bare/lib64/$f"
done
bare=$(KLOOP_CUDA_HOME="$tmp/bare" "$KLOOP" doctor 2>&1)
printf '%s\n' "$bare" | grep -E "NVRTC|CUPTI" | sed 's/^/     doctor (no companions): /'
check "doctor without libnvrtc-builtins: NVRTC missing" sh -c \
  'printf "%s\n" "$0" | grep -q "^missing  *NVRTC .*opens but does not compile"' "$bare"
check "doctor without libnvperf_host: CUPTI missing" sh -c \
  'printf "%s\n" "$0" | grep -q "^missing  *CUPTI .*opens but its Profiler Host API fails"' "$bare"
exit $fail
