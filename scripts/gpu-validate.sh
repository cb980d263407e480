#!/usr/bin/env bash
# Validate perfkit's GPU paths on one H100 / H200 in a few minutes (docs/gpu-validation.md).
# Each step has its own time limit and the whole script a deadline, so one hung step costs
# only its slot. Logs and result files go to $OUT (default ./gpu-validate-out).
# Run from the repository root:  scripts/gpu-validate.sh [STEP ...]   (default: every step)
# Steps: env doctor tests timer gemm calib decode ncu triton.
# Wheels for missing dependencies in .whl/ are installed first when present.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-validate-out}; mkdir -p "$OUT"
DEADLINE_S=${DEADLINE_S:-360}
start=$(date +%s)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=.:${PYTHONPATH:-} PYTHONUNBUFFERED=1 PERFKIT_HOME=/tmp/perfkit-home
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(env tests timer gemm decode doctor calib ncu triton)
summary="$OUT/summary.txt"; : > "$summary"

step() {  # step NAME LIMIT_S CMD...
  local name=$1 limit=$2; shift 2
  local left=$((DEADLINE_S - ($(date +%s) - start)))
  [ "$left" -lt 10 ] && { echo "$name: skipped (deadline)" | tee -a "$summary"; return; }
  [ "$limit" -gt "$left" ] && limit=$left
  local t0; t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name: rc=$rc in $(( $(date +%s) - t0 )) s (limit $limit s)" | tee -a "$summary"
  tail -n 25 "$OUT/$name.log"
}

for s in "${steps[@]}"; do
  case $s in
    env) step env 30 bash -c 'nvidia-smi; python3 -c "import torch,triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"; which ncu nsys || true' ;;
    doctor) step doctor 60 bash -c "python3 -m perfkit doctor --selftest --format json > '$OUT/doctor.json'; python3 -m perfkit doctor" ;;
    tests) step tests 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests ;;
    timer) step timer 45 python3 -m benchmarks.timer_vs_do_bench --rounds 4 --out "$OUT/timer_vs_do_bench.json" ;;
    gemm) step gemm 60 python3 -m perfkit profile examples/gemm-gpu-validate.yaml --no-store --quiet --out /tmp/pk-runs ;;
    calib) step calib 60 python3 -m benchmarks.calibrate_repeat --device cuda --runs 2 --out "$OUT/calibrate_repeat_cuda.json" ;;
    decode) step decode 90 python3 -m benchmarks.decode_gpu --out "$OUT/decode_gpu.json" ;;
    ncu) step ncu 50 python3 -m perfkit profile examples/gemm-gpu-ncu.yaml --ncu --no-store --out /tmp/pk-ncu ;;
    triton) step triton 100 python3 -m perfkit profile examples/triton-rmsnorm-gpu.yaml --quick --no-store --quiet --out /tmp/pk-triton ;;
    *) echo "unknown step $s" ;;
  esac
done
# the gemm run's summary numbers, for the record
python3 - "$OUT" <<'PY' 2>/dev/null || true
import json, sys, glob
for f in glob.glob("/tmp/pk-runs/*/run.json"):
    run = json.load(open(f))
    with open(f"{sys.argv[1]}/gemm_points.txt", "w") as out:
        for p in run.get("points", []):
            s = (p.get("measurement") or {}).get("stats") or {}
            a = p.get("achieved") or {}
            print(p.get("key"), p.get("status"), s.get("median_s"), a.get("flop_per_s"),
                  (p.get("numerics") or {}).get("rel_err"), p.get("error") or "", file=out)
PY
cat "$summary"
# at most 8 files come back from a lent machine: the logs travel as one archive
tar -czf "$OUT/logs.tar.gz" -C "$OUT" $(cd "$OUT" && ls *.log) 2>/dev/null && rm -f "$OUT"/*.log
