# The run loop the accuracy studies share (sourced by accuracy_study_2.sh and accuracy_study_3.sh, which set PY, RUNS,
# RESULTS, RECIPE, SIZES, SEEDS and optionally TAG, a suffix of each run's name, and NOTE, said with each pair).
# Each run is a single `pals-train --seed N` run under $RUNS/<method>-<d_s>$TAG-seed-<N>/, the two methods (houlsby,
# lora) of one size and seed side by side at 1 thread each, seed-major (every size at the first seed first), so a study
# cut short still holds all four sizes of each method; after each run its summary and config are copied to
# $RESULTS/<name>/. Finished runs are skipped, a started one resumes from its checkpoints.
TAG=${TAG:-}
NOTE=${NOTE:-}
mkdir -p "$RUNS" "$RESULTS"
single() {  # method d_s seed: one run of the recipe, copied when it finishes
  local name="$1-$2$TAG-seed-$3" out="$RUNS/$1-$2$TAG-seed-$3"
  if [[ ! -f "$out/summary.json" ]]; then
    "$PY" -m pals_core.cli.train --method "$1" --d-s "$2" --seed "$3" "${RECIPE[@]}" --out "$out" \
      $([[ -d "$out" ]] && echo --resume) > "$out.log" 2>&1 || { echo "$(date -u +%H:%M:%S) $name failed (see $out.log)"; return; }
  fi
  mkdir -p "$RESULTS/$name"
  cp "$out/summary.json" "$out/config.json" "$RESULTS/$name/"
  echo "$(date -u +%H:%M:%S) $name finished"
}
for seed in ${SEEDS//,/ }; do
  for ds in "${SIZES[@]}"; do
    echo "$(date -u +%H:%M:%S) houlsby and lora d_s=$ds seed $seed$NOTE: training"
    single houlsby "$ds" "$seed" &
    single lora "$ds" "$seed" &
    wait
  done
done
echo "$(date -u +%H:%M:%S) all runs finished"
