#!/usr/bin/env bash
# bench/round14b_gpu.sh (round 2, session 19): choosing ahead on time after a spill (the
# carried candidate counted), against the strategy before (var/prev_tune.lua), alternated
# on one machine, empty compile caches: gemm_tiled model 100 at seeds 7 13 3 17 21 9
# (SEEDS); then one run traced by Nsight Systems, where one is installed, and its GPU
# gaps by the CUDA call beside them (bench/gpu_gaps.py). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
prev_new ${SEEDS:-7 13 3 17 21 9}
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
  use_bin new
  fresh_cache
  timeout 120 "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none --force-overwrite=true -o "$T/prof" \
    $K tune kernels/gemm_tiled.lua --method model --seed 3 --budget 100 --no-store --profile none --timing-budget 0.3 \
    --promote off > "$T/nsys.log" 2>&1
  "$NSYS" stats -r cuda_gpu_trace,cuda_api_trace --format csv -o "$T/st" "$T/prof.nsys-rep" > "$T/stats.log" 2>&1
  ls "$T" >> "$L"
  { echo "== nsys"; tail -5 "$T/nsys.log"; tail -3 "$T/stats.log"; python3 bench/gpu_gaps.py "$T/st" 50 2>&1; } > "$T/gaps.txt"
  cat "$T/gaps.txt" >> "$L"
else
  echo "no nsys here" > "$T/gaps.txt"
fi
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
cat "$T/gaps.txt"
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | grep -E "^model|^  time" | cut -c1-230
