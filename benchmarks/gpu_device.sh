#!/usr/bin/env bash
# Everything that needs a GPU, as one call of the `device` tool (about 8 minutes on the H200):
# the CUDA tests, benchmarks/gpu.py, then benchmarks/train_step.py (the GPS step and one ZINC
# epoch against PyG's example, compiled and with OnTheFlyPE). Results land in $OUT
# (gpu_tests.log, gpu.json, gpu_bench.log, train_step_gpu.json, train_step.log).
#
# Here, once (the offline ZINC copy does not travel with the repository by itself):
#   mkdir -p .device_data && cp ../shared/data/zinc12k-subset-raw.tar.xz .device_data/
#   grep -qx '/.device_data/' .git/info/exclude || echo /.device_data/ >> .git/info/exclude
# Then: run(command="bash benchmarks/gpu_device.sh", carry=[".device_data"], timeout_s=540)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-/tmp/graphpe-gpu-out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu_info.txt"
python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__)" \
    | tee -a "$OUT/gpu_info.txt"
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/ops/test_cuda.py 2>&1 \
    | tee "$OUT/gpu_tests.log"
timeout 220 python3 benchmarks/gpu.py --shared .device_data --json "$OUT/gpu.json" 2>&1 \
    | grep -v "it/s" | tee "$OUT/gpu_bench.log"
timeout 190 python3 benchmarks/train_step.py --device cuda --shared .device_data --epoch \
    --compile --on-the-fly --json "$OUT/train_step_gpu.json" 2>&1 | tee "$OUT/train_step.log"
