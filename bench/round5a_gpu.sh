#!/usr/bin/env bash
# bench/round5a_gpu.sh (round 2, session 9, first call): round4g's kills and resumes
# (the cuBLAS-cache fix and session 8's refactors on the GPU), the start's costs on the
# microsecond tasks, and Kernel Tuner on saxpy and stencil with every log kept in $OUT.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
echo "== round4g"; OUT=$O bash bench/round4g_gpu.sh 2>&1 | tee $O/round4g.txt
echo "== start costs (empty cache)"
C=$(mktemp -d); KLOOP_CACHE=$C build/kloop bench/start_costs.lua kernels/saxpy.lua kernels/stencil.lua 2>&1 | tee $O/start_costs.txt
echo "== start costs (warm cache)"
KLOOP_CACHE=$C build/kloop bench/start_costs.lua kernels/saxpy.lua kernels/stencil.lua 2>&1 | tee -a $O/start_costs.txt
echo "== KT micro"; OUT=$O/kt TASKS=saxpy,stencil bash bench/kt_gpu/run.sh > $O/kt.txt 2>&1
grep -h -E '^(run |time:)' $O/kt/kloop_*.log
echo "== table"; cat $O/round4g.txt | grep -E 'kill|resumed|store|best'; tail -5 $O/kt.txt
