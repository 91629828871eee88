#!/usr/bin/env bash
# The GPU check on a device machine (BENCHMARKS.md, "GPU check"): run from the repository root, with .carry/ made here
# by `benchmarks/carry_minilm.py --wheels` and carried; writes $OUT/gpu_check.json and $OUT/gpu_check.log.
set -o pipefail
OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .carry/whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip show torch transformers datasets pyarrow fsspec huggingface_hub tokenizers accelerate 2>/dev/null \
  | grep -E '^(Name|Version)' | paste - - | tee "$OUT/versions.txt"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv | tee -a "$OUT/versions.txt"
python3 benchmarks/gpu_check.py --model .carry/minilm-fp16 --glue-dir .carry/glue --json "$OUT/gpu_check.json" "$@" 2>&1 \
  | tee "$OUT/gpu_check.log"
