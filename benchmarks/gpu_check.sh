#!/usr/bin/env bash
# Every GPU check of the course in one command, for a machine with a CUDA GPU (see benchmarks/README.md):
#
#     bash benchmarks/gpu_check.sh            # from the repository root, or from anywhere
#
# 1. the tests that need a GPU: tests/unit/qkv/test_timing.py (CUDA events, CUDA peak memory) and tests/unit/qkv/test_costlab.py
#    (the sweep in float16 with the fused kernels, out-of-memory handling); they are skipped on machines without
#    one, so this step fails if any of them was skipped here;
# 2. the attention-cost benchmark, benchmarks/attention_cost.py --device cuda (under 5 minutes), which writes
#    benchmarks/results/attention_cost_cuda-<gpu>.csv and .png.
# Everything printed also goes to benchmarks/results/gpu_check_cuda-<gpu>.log, with nvidia-smi's report and the
# versions. Commit the CSV, the PNG and the log. Exit status: 0 if every step passed, else the number that failed
# (2 with a message if PyTorch sees no GPU). Python: $PYTHON, else .venv/bin/python, else python3; the sources in
# lib/ are used if qkv is not installed.
set -u -o pipefail
cd "$(dirname "$0")/.."
has_cuda() { "$1" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; }
PY=""
for candidate in ${PYTHON:-} .venv/bin/python python3 python; do
    if command -v "$candidate" >/dev/null 2>&1 && has_cuda "$candidate"; then
        PY=$candidate
        break
    fi
done
if [ -z "$PY" ]; then
    echo "gpu_check: no Python here has a PyTorch that sees a CUDA GPU (tried: ${PYTHON:-} .venv/bin/python python3 python);" \
        "nothing to check. Set PYTHON to one that does." >&2
    exit 2
fi
export PYTHONPATH="$PWD/lib:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export QKV_OFFLINE=1
mkdir -p benchmarks/results
KIND=$("$PY" -c "import re, torch; print('cuda-' + re.sub(r'[^a-z0-9]+', '-', torch.cuda.get_device_name(0).lower()).strip('-'))")
LOG=benchmarks/results/gpu_check_${KIND}.log
: > "$LOG"
say() { echo "$@" | tee -a "$LOG"; }

say "# gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
"$PY" - <<'EOF' 2>&1 | tee -a "$LOG"
import json, torch
from qkv.timing import device_info
print(json.dumps(device_info(), indent=1))
print("cudnn", torch.backends.cudnn.version(), "flash sdp enabled:", torch.backends.cuda.flash_sdp_enabled())
EOF
(nvidia-smi 2>&1 || echo "nvidia-smi not found") | tee -a "$LOG"

failed=0
say ""
say "## 1. tests that need a GPU"
if "$PY" -c "import pytest, hypothesis" 2>/dev/null; then
    OUT=$(mktemp)
    "$PY" -m pytest -q -rs -p no:cacheprovider tests/unit/qkv/test_timing.py tests/unit/qkv/test_costlab.py 2>&1 | tee "$OUT" | tee -a "$LOG"
    status=${PIPESTATUS[0]}
    if [ "$status" -ne 0 ]; then
        say "gpu_check: the tests failed (exit $status)"; failed=$((failed + 1))
    elif grep -q "needs a CUDA GPU" "$OUT"; then
        say "gpu_check: some CUDA tests were skipped although a GPU is present"; failed=$((failed + 1))
    fi
    rm -f "$OUT"
else
    say "gpu_check: pytest or hypothesis is missing for $PY: install them (pip install pytest hypothesis) to run the tests"
    failed=$((failed + 1))
fi

say ""
say "## 2. the attention-cost benchmark"
if ! timeout 600 "$PY" benchmarks/attention_cost.py --device cuda 2>&1 | tee -a "$LOG"; then
    say "gpu_check: the benchmark failed"; failed=$((failed + 1))
fi

say ""
say "gpu_check: done, $failed step(s) failed; results in benchmarks/results/ (attention_cost_${KIND}.csv/.png, $(basename "$LOG"))"
exit "$failed"
