#!/usr/bin/env bash
# bench/round2z_gpu.sh: Ctrl-C and SIGTERM during a model tune of gemm_tiled with an
# empty compile cache (background compiles pending, so the wait that reads the compilers
# is where the signal lands): the exit code, the run's last line and its stored status,
# then a resume of the same run to its end; a table last.
cd "$(dirname "$0")/.."
T=$(mktemp -d); export KLOOP_CACHE=$T/cache
for sig in INT TERM; do
  db=$T/$sig.db
  build/kloop tune kernels/gemm_tiled.lua --budget 60 --seed 3 --db "$db" --profile none --promote off > $T/$sig.log 2>&1 &
  pid=$!
  sleep 5
  kill -$sig $pid
  wait $pid; rc=$?
  printf '%-12s %s\n' "SIG$sig" "exit $rc; $(grep -E '^run ' $T/$sig.log | cut -c1-90)"
  printf '%-12s %s\n' "  stored" "$(build/kloop runs --db "$db" 2>&1 | tail -1 | tr -s ' ' | cut -c1-120)"
  rm -rf "$T/cache"
done
build/kloop tune kernels/gemm_tiled.lua --budget 60 --seed 3 --db "$T/INT.db" --resume 1 --profile none --promote off > $T/resume.log 2>&1
printf '%-12s %s\n' "resume" "exit $?; $(grep -E '^run |resum' $T/resume.log | head -2 | cut -c1-100 | tr '\n' ' ')"
printf '%-12s %s\n' "  stored" "$(build/kloop runs --db "$T/INT.db" 2>&1 | tail -1 | tr -s ' ' | cut -c1-120)"
rm -rf "$T"
