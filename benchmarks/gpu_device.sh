#!/usr/bin/env bash
# Everything that needs a GPU, as one call of the `device` tool (about 5 minutes on the H200):
# the CUDA tests, then benchmarks/gpu.py. Results land in $OUT (gpu_tests.log, gpu.json,
# gpu_bench.log).
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
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/ops/test_cuda.py 2>&1 \
    | tee "$OUT/gpu_tests.log"
timeout 330 python3 benchmarks/gpu.py --shared .device_data --json "$OUT/gpu.json" 2>&1 \
    | grep -v "it/s" | tee "$OUT/gpu_bench.log"
