# The run loop the accuracy studies share (sourced by accuracy_study_2.sh, accuracy_study_3.sh and accuracy_study_4.sh,
# which set PY, RUNS, RESULTS, RECIPE, SIZES, SEEDS and optionally METHODS (default "houlsby lora"), EXTRA (more runs
# after the grid, "seed:d_s" each, e.g. "3:256 4:256"), REUSE (a folder of finished runs of the same recipe, by the same
# names: a run found there is read from there, never trained again), METHOD_FLAGS (an associative array: flags of one
# method only, e.g. ([pals]="--heads 4")), TAG (a suffix of each run's name) and NOTE (said with each size).
# Each run is a single `pals-train --seed N` run under $RUNS/<method>-<d_s>$TAG-seed-<N>/, two at a time at 1 thread
# each (the next starts as soon as one of the two ends), seed-major (every size of every method at the first seed
# first, then the next seed, then EXTRA), so a study cut short still holds every size of each method; after each run
# its summary and config are copied to $RESULTS/<name>/. Finished runs are skipped, a started one resumes from its
# checkpoints. (Which two runs share the machine changes only when they finish: each run is single-threaded and
# seeded, so its scores do not depend on it.)
TAG=${TAG:-}
NOTE=${NOTE:-}
METHODS=${METHODS:-houlsby lora}
EXTRA=${EXTRA:-}
REUSE=${REUSE:-}
declare -A METHOD_FLAGS  # keeps the study's entries; none by default
mkdir -p "$RUNS" "$RESULTS"
single() {  # method d_s seed: one run of the recipe, copied when it finishes
  local name="$1-$2$TAG-seed-$3" out="$RUNS/$1-$2$TAG-seed-$3"
  if [[ ! -f "$out/summary.json" ]]; then
    "$PY" -m pals_core.cli.train --method "$1" --d-s "$2" --seed "$3" "${RECIPE[@]}" ${METHOD_FLAGS[$1]:-} --out "$out" \
      $([[ -d "$out" ]] && echo --resume) > "$out.log" 2>&1 || { echo "$(date -u +%H:%M:%S) $name failed (see $out.log)"; return; }
  fi
  mkdir -p "$RESULTS/$name"
  cp "$out/summary.json" "$out/config.json" "$RESULTS/$name/"
  echo "$(date -u +%H:%M:%S) $name finished"
}
size() {  # d_s seed: every method's run at this size and seed, at most two running at once
  echo "$(date -u +%H:%M:%S) ${METHODS// / and } d_s=$1 seed $2$NOTE: training"
  local method
  for method in $METHODS; do
    if [[ -n "$REUSE" && -f "$REUSE/$method-$1$TAG-seed-$2/summary.json" ]]; then
      echo "$(date -u +%H:%M:%S) $method-$1$TAG-seed-$2 reused from $REUSE"
      continue
    fi
    while (( $(jobs -rp | wc -l) >= 2 )); do wait -n || true; done
    single "$method" "$1" "$2" &
  done
}
for seed in ${SEEDS//,/ }; do
  for ds in "${SIZES[@]}"; do size "$ds" "$seed"; done
done
for run in $EXTRA; do size "${run#*:}" "${run%%:*}"; done
wait
echo "$(date -u +%H:%M:%S) all runs finished"
