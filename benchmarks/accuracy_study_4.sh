#!/usr/bin/env bash
# The fourth measured study of the predicted scores — PRE-REGISTERED: this recipe, grid, the model forms compared, the
# protocol and the analysis (benchmarks/accuracy_study_4_analysis.py) were fixed and committed before any of its runs
# started (git log of this file); the figures are reported whatever they give.
#
# Recipe: the third study's, unchanged (accuracy_study_3.sh; every flag passed explicitly, so no default changed
# elsewhere can alter it): the embedded MiniLM, SST-2 + STS-B + MRPC together, frozen trunk, 600 steps × batch 16 under
# uniform sampling (200 steps a task), lr 1e-3, 10 % warm-up, max_len 64, each dev set capped at 500 rows (a fixed
# random subset), one evaluation at the end, 1 thread a run.
# Grid: houlsby, lora and pals × d_s 4, 8, 16, 32, 64, 128, 256 × seeds 0, 1, 2, then seeds 3 and 4 at d_s 256 for
# each method (where one LoRA seed of the third study collapsed). The third study's runs are reused, not re-run: houlsby
# and lora at d_s 4, 16, 64, 256, seeds 0–2 are read from benchmarks/results/accuracy_study_3 (their config.recipe is
# this recipe's, checked against the pilot's config). 45 new runs: pals 23, houlsby 11, lora 11.
# The third method: pals (projected attention layers, the paper's own method) with --heads 4. Its default, 12 heads
# (the paper's, at d_s 204), divides none of the seven sizes (pals-budget refuses each: "d_s = 64 is not divisible by
# the 12 adapter heads"); 4 = gcd(12, 4) is the largest head count that divides every size, the nearest to the authors'
# setting the grid allows (head width d_s/4: 1 at d_s 4, 16 at 64, 64 at 256). One heads setting for all sizes, so the
# sizes differ in d_s alone.
# The pilot (seed 99, not in the grid; pals --heads 4 at d_s 64, run before this file was committed, under
# /work/runs/accuracy_study_4_pilot): dev average 73.4 — SST-2 accuracy 77.2 and STS-B Pearson 73.5 leave their
# baselines (50, 0); MRPC accuracy 69.6, F1 80.8 (majority class: 68.4, F1 81.2) stays at its majority class, as it does
# in every run of the third study (F1 79.8–81.7) — the recipe is the third study's, not chosen by this pilot, which
# only checks that pals --heads 4 trains under it; its config.recipe equals the third study's runs'. 654 s of training
# (11 min wall) on 2 CPU cores shared with other jobs (load ≈ 4).
#
# Forms compared (named in advance; x = ln d_s, one point per run, least squares):
#   line    y = a_m + b_m·x, fitted per method — what pals-budget uses today (pals_core/score_model.py's own fit);
#   pooled  y = a_m + b·x + c·x², fitted over the three methods at once: a level per method, one slope and one
#           curvature shared. Chosen from the reasoning, not by trying forms here (a form of this kind was among seven
#           tried after the fact on the third study's points: a hint, not a result, which is why it is tested here on
#           sizes no one has seen): the curves peak inside the range (d_s 64 in study 3), so the form must bend, and
#           the simplest bend in ln d_s is its square; what sets where it bends is the recipe (600 steps at lr 1e-3
#           train the same width-d_s path in every method), so the shape is shared and the method sets the level;
#           sharing leaves 5 parameters for 21 method-sizes (18 in a fold), where a curve of three parameters per
#           method would pass exactly through any three sizes and test nothing.
#   Interval (both): the 80 % prediction interval of the mean of k new runs, mean ± t_{0.90, dof}·s·sqrt(1/k +
#   x₀ᵀ(XᵀX)⁻¹x₀), s² the larger of the residual variance (n − p dof) and the pooled variance between the seeds of
#   one size of one method (its dof) — pals-budget's rule, for a design matrix X of p columns.
# Protocol: each measured size d held out in turn (a fold): every method's runs at d leave the fit together, each form
# is fitted on the other sizes and predicts each method at d. Inside the range: d = 8, 16, 32, 64, 128 (15 held-out
# points: 3 methods × 5 sizes); the end sizes 4 and 256 are extrapolation, reported apart. A held-out point is a
# method's dev average at d (the mean over its seeds) against the predicted mean and the interval of the mean of that
# many runs; each run against the interval of one new run is reported too. No run is dropped (a collapsed seed
# counts); a run that failed has no summary and is missing.
# Figures, each form, inside the range: held-out MAE (goal ≤ 1.0 point of dev average) and the share inside the 80 %
# interval (goal ≥ 75 %); regret of ranking by prediction (goal ≤ 0.5 points): in each inside fold, among the three
# held-out designs (the methods at d), the best measured dev average minus the measured dev average of the design the
# form predicts highest, averaged over the five folds (the largest fold's regret is reported beside it; and, once,
# among all 15 inside held-out designs together). A form meets the goals when all three are met; the tools use the
# pooled form only if it meets them, the line otherwise.
# Analysis: `accuracy_study_4_analysis.py` (reads benchmarks/results/accuracy_study_3 and accuracy_study_4; writes
# benchmarks/results/accuracy_study_4.json).
#
# Each run is a single `pals-train --seed N` run under runs/accuracy_study_4/<method>-<d_s>-seed-<N>/ (gitignored; RUNS
# moves it), two at a time at 1 thread each, seed-major (every size of every method at seed 0 first), so a study cut
# short still holds all seven sizes of each method. After each run its small JSON files (summary, config) are copied to
# benchmarks/results/accuracy_study_4/<method>-<d_s>-seed-<N>/. Run it again and finished runs are skipped, a started
# one resumes from its checkpoints.
#
#   PALS_GLUE_DIR=/path/to/glue bash benchmarks/accuracy_study_4.sh     # ≈ 11–15 min per pair on 2 busy CPU cores
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs/accuracy_study_4}
SEEDS=${SEEDS:-0,1,2}
RESULTS=benchmarks/results/accuracy_study_4
RECIPE=(--tasks sst2,stsb,mrpc --freeze-trunk --steps 600 --batch-size 16 --sampling uniform --max-len 64 --lr 1e-3
        --warmup 0.1 --eval-every 600 --max-eval-examples 500 --threads 1 --no-progress)
SIZES=(4 256 16 64 8 32 128)
METHODS="houlsby lora pals"
declare -A METHOD_FLAGS=([pals]="--heads 4")  # pals alone: houlsby and lora have no heads
EXTRA="3:256 4:256"
REUSE=benchmarks/results/accuracy_study_3
source benchmarks/accuracy_pairs.sh  # the run loop the studies share
