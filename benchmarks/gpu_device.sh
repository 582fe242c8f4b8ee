#!/usr/bin/env bash
# Everything that needs a GPU, as one call of the `device` tool, inside one time budget
# (GPU_BUDGET_S, default 540 s; each part also has its own cap and is skipped when less than
# 20 s are left). `graphpe warmup` first compiles the CPU kernels (-> warmup.log). Parts, most
# important first:
#   1. the CUDA tests (every test marked gpu: tests/ops/test_cuda.py, the static-shape GPS with
#      CUDA graphs in tests/nn/test_static.py, mixed precision in tests/*/test_precision.py, ...)
#                                                                         -> gpu_tests.log
#   2. benchmarks/train_step.py: the GPS step and one ZINC epoch against PyG's example,
#      compiled, on static shapes as CUDA graphs, and with OnTheFlyPE (issue 12's GPU target)
#                                                                         -> train_step_gpu.json
#   3. benchmarks/gpu.py: ZINC-12k encodings, the GPS step with OnTheFlyPE, a 1M-node graph
#                                                                         -> gpu.json
#   4. benchmarks/grit_step.py on cuda: GRIT's training step (torch formulation)
#                                                                         -> grit_step_gpu.json
#   5. benchmarks/spe_step.py on cuda: SPE's pair rows against the authors' padded layout
#                                                                         -> spe_step_gpu.json
#   6. benchmarks/papers/spe.py on cuda: SPE, SignNet, no PE on all of ZINC-12k's training set
#      for SPE_EPOCHS epochs (issue 17)                                   -> papers_spe_gpu.json
# Logs of parts 2-6 are in run.log. Every script writes its JSON as it goes, so a part stopped
# by its cap keeps what it finished.
#
# Here, once (the offline data does not travel with the repository by itself):
#   mkdir -p .device_data && cp -r ../shared/data/* .device_data/
#   grep -qx '/.device_data/' .git/info/exclude || echo /.device_data/ >> .git/info/exclude
# Then: run(command="bash benchmarks/gpu_device.sh", carry=[".device_data"], timeout_s=600)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-/tmp/graphpe-gpu-out}"
BUDGET="${GPU_BUDGET_S:-540}"
SPE_EPOCHS="${SPE_EPOCHS:-20}"
ROOT=/tmp/graphpe-data  # one processed ZINC for every part
START=$(date +%s)
mkdir -p "$OUT"

part() {  # part NAME CAP_S COMMAND...: run COMMAND for at most CAP_S and what the budget allows
    local name=$1 cap=$2 left
    shift 2
    left=$((BUDGET - ($(date +%s) - START)))
    ((left < cap)) && cap=$left
    if ((cap < 20)); then
        echo "== $name: skipped, ${left} s of the budget left"
        return
    fi
    echo "== $name (up to ${cap} s, at $(($(date +%s) - START)) s)"
    timeout "$cap" "$@"
    echo "== $name: exit $? at $(($(date +%s) - START)) s"
}

{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import torch, torch_geometric as g; print('torch', torch.__version__, \
'cuda', torch.version.cuda, 'torch_geometric', g.__version__)"
    python3 -c "import cupy; print('cupy', cupy.__version__)" 2>&1 | tail -1
    nproc
} 2>&1 | tee "$OUT/gpu_info.txt"

# the CPU kernels the parts compare against, compiled side by side on the machine's cores
# first, rather than one after another inside the capped parts
part "warmup" 90 python3 -m graphpe.cli warmup 2>&1 | tee "$OUT/warmup.log"
# every test marked gpu, wherever it lives (collecting the rest costs seconds)
part "CUDA tests" 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests \
    2>&1 | tee "$OUT/gpu_tests.log"
{
    # perf_hints: torch.compile logs why it would skip CUDA graphs (mutated inputs, CPU
    # tensors, ...) if the static compiled step falls back to launching kernels one by one
    TORCH_LOGS=perf_hints part "train_step" 320 python3 benchmarks/train_step.py --device cuda --shared .device_data \
        --root "$ROOT" --epoch --compile --static --on-the-fly --precision bf16 \
        --json "$OUT/train_step_gpu.json"
    part "gpu.py" 130 python3 benchmarks/gpu.py --shared .device_data --root "$ROOT" \
        --parts zinc,train,large --large-nodes 1000000 --large-degree 20 --json "$OUT/gpu.json"
    part "grit_step" 60 python3 benchmarks/grit_step.py --device cuda --shared .device_data \
        --root "$ROOT" --json "$OUT/grit_step_gpu.json"
    part "spe_step" 60 python3 benchmarks/spe_step.py --device cuda --shared .device_data \
        --root "$ROOT" --json "$OUT/spe_step_gpu.json"
    part "SPE on ZINC" 600 python3 benchmarks/papers/spe.py --device cuda \
        --shared-data .device_data --root "$ROOT" --pes spe,signnet,none \
        --epochs "$SPE_EPOCHS" --json "$OUT/papers_spe_gpu.json"
} 2>&1 | grep -v "it/s" | tee "$OUT/run.log"
