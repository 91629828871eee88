#!/usr/bin/env bash
# The second measured study behind benchmarks/accuracy_model.py, with a recipe that LEARNS (the first,
# benchmarks/accuracy_study.sh, did not: MRPC stayed at its majority class, RTE at chance). The embedded MiniLM, SST-2
# (the pilot's STS-B stayed at Pearson ≈ 0 at this length: BENCHMARKS.md), two methods (houlsby, lora) x four sizes
# (4, 16, 64, 256: wide in ln d_s) x seeds 0, 1 (then 2 while time is left), ONE recipe for both: frozen trunk
# (explicit), 150 steps x batch 16, lr 2e-3, 10 % warm-up, max_len 64, the dev set capped at 500 rows (a fixed random
# subset), one evaluation at the end.
# Each run is a single `pals-train --seed N` run under runs/accuracy_study_2/<method>-<d_s>-seed-<N>/ (gitignored),
# the two methods of one size and seed side by side at 1 thread each; seed-major (every size at seed 0 first:
# smallest, largest, middle, the other middle), so a study cut short still holds all four sizes of each method — the
# hold-out check needs four (three to fit, one to hold out). After each run its small JSON files (summary, config)
# are copied to benchmarks/results/accuracy_study_2/<method>-<d_s>-seed-<N>/.
# Run it again and finished runs are skipped, a started one resumes from its checkpoints. SEEDS=0,1 to stop earlier.
# LR=1e-3 trains the same grid at another learning rate (a second recipe: its own families, never mixed with the
# first), named <method>-<d_s>-lr1e-3-seed-<N>, copied to benchmarks/results/accuracy_study_2-lr1e-3/.
#
#   PALS_GLUE_DIR=/path/to/glue bash benchmarks/accuracy_study_2.sh      # 1–3 min per pair on 2 shared CPU cores (BENCHMARKS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs/accuracy_study_2}
SEEDS=${SEEDS:-0,1,2}
LR=${LR:-2e-3}
TAG=$([[ "$LR" != 2e-3 ]] && echo "-lr$LR" || true)
RESULTS=benchmarks/results/accuracy_study_2$TAG
RECIPE=(--tasks sst2 --freeze-trunk --steps 150 --batch-size 16 --max-len 64 --lr "$LR" --warmup 0.1
        --eval-every 150 --max-eval-examples 500 --threads 1 --no-progress)
SIZES=(4 256 16 64)
NOTE=" lr $LR"
source benchmarks/accuracy_pairs.sh  # the run loop both studies share
