#!/usr/bin/env bash
# The measured study behind benchmarks/accuracy_model.py: the embedded MiniLM, three small GLUE
# tasks (RTE, MRPC, STS-B), two methods (houlsby, pals) x five sizes x three seeds, ONE recipe (frozen trunk, 150 steps
# x batch 8, uniform sampling, lr 2e-3, 10 % warm-up, max_len 64, full dev sets, one evaluation at the end).
# Each design is an ordinary `pals-train --seeds 0,1 --jobs 2` folder under runs/accuracy_study/ (gitignored; its
# two seeds train side by side at 1 thread each); the designs run one after another, sizes interleaved between the
# methods (smallest, largest, then the middle, then one size more each) so a study cut short still holds three sizes
# of each method. After each
# design its small JSON files (summary, seeds; never a checkpoint) are copied to benchmarks/results/accuracy_study/.
# Then a third seed (2) of every design, as single runs of the same recipe, two side by side.
# Run it again and finished designs are skipped, a started one resumes from its checkpoints.
#
#   PALS_GLUE_DIR=/path/to/glue bash benchmarks/accuracy_study.sh        # 53 min on 2 shared CPU cores (BENCHMARKS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs/accuracy_study}
RESULTS=benchmarks/results/accuracy_study
RECIPE=(--tasks rte,mrpc,stsb --freeze-trunk --steps 150 --batch-size 8 --max-len 64 --lr 2e-3 --warmup 0.1
        --sampling uniform --eval-every 150 --seeds 0,1 --jobs 2 --threads 1 --no-progress)
DESIGNS=(houlsby:8 pals:12 houlsby:64 pals:96 houlsby:16 pals:24 houlsby:32 pals:48 houlsby:128 pals:192)
mkdir -p "$RUNS" "$RESULTS"
for d in "${DESIGNS[@]}"; do
  method=${d%%:*}; ds=${d##*:}; out="$RUNS/$method-$ds"
  if [[ -f "$out/summary.json" ]]; then
    echo "$(date -u +%H:%M:%S) $method d_s=$ds: finished before, skipped"
  elif [[ -f "$out/seeds.json" ]]; then
    echo "$(date -u +%H:%M:%S) $method d_s=$ds: resuming"
    "$PY" -m pals_core.cli.train --resume --out "$out" --jobs 2 --threads 1 --no-progress
  else
    echo "$(date -u +%H:%M:%S) $method d_s=$ds: training"
    "$PY" -m pals_core.cli.train --method "$method" --d-s "$ds" "${RECIPE[@]}" --out "$out"
  fi
  mkdir -p "$RESULTS/$method-$ds"
  (cd "$out" && find . -name '*.json' -not -path '*/checkpoints/*' -not -name progress.json) | while read -r f; do
    mkdir -p "$RESULTS/$method-$ds/$(dirname "$f")"; cp "$out/$f" "$RESULTS/$method-$ds/$f"
  done
done
echo "$(date -u +%H:%M:%S) all designs finished"
# A third seed of every design: single runs (seed 2) of the same recipe, two side by side at 1 thread each, each
# copied to benchmarks/results/accuracy_study/<method>-<d_s>-seed-2/ when it finishes.
SEED2=(--tasks rte,mrpc,stsb --freeze-trunk --steps 150 --batch-size 8 --max-len 64 --lr 2e-3 --warmup 0.1
       --sampling uniform --eval-every 150 --seed 2 --threads 1 --no-progress)
seed2() {  # method d_s
  local out="$RUNS/$1-$2-seed-2"
  if [[ ! -f "$out/summary.json" ]]; then
    "$PY" -m pals_core.cli.train --method "$1" --d-s "$2" "${SEED2[@]}" --out "$out" $([[ -d "$out" ]] && echo --resume) \
      > "$out.log" 2>&1 || { echo "$(date -u +%H:%M:%S) $1 d_s=$2 seed 2 failed (see $out.log)"; return; }
  fi
  mkdir -p "$RESULTS/$1-$2-seed-2"
  cp "$out/summary.json" "$out/config.json" "$RESULTS/$1-$2-seed-2/"
  echo "$(date -u +%H:%M:%S) $1 d_s=$2 seed 2 finished"
}
for ((i = 0; i < ${#DESIGNS[@]}; i += 2)); do
  a=${DESIGNS[i]}; b=${DESIGNS[i+1]:-}
  seed2 "${a%%:*}" "${a##*:}" &
  [[ -n "$b" ]] && seed2 "${b%%:*}" "${b##*:}" &
  wait
done
echo "$(date -u +%H:%M:%S) third seed finished"
