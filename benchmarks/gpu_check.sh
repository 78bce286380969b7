#!/usr/bin/env bash
# The checks this repository runs on a lent GPU machine, as one command (docs/gpu.md, "What ran on a GPU"):
#   1. the transformers adapter's whole test file with every adapter on cuda (VIGNETTE_TEST_DEVICE=cuda):
#      score mode against plain and whole-string forwards, both modes, device_map split over GPU and CPU;
#   2. `vignette run` under torchrun with a tiny LLaVA-NeXT on `device=cuda` (rank -> cuda:$LOCAL_RANK);
#   3. benchmarks/gpu_score_memory.py: score-mode memory and time at LLaVA-1.6-7B shapes (random weights).
# Wheels the machine lacks travel in .whl/ (pure Python or cp312 manylinux; the run on 2026-11-26 carried
# transformers==5.23.0 outlines==1.3.3 outlines_core==0.2.14 diskcache genson jsonschema
# jsonschema-specifications referencing rpds-py pydantic pydantic-core annotated-types typing-inspection
# regex typing_extensions datasets==5.2.0 dill multiprocess webdataset==1.0.2 braceexpand, fetched with
# `pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl`),
# a sample source in .gpu_carry/sample (`vignette build sample --out .gpu_carry/sample`). Logs go to $OUT.
# SECTIONS=13 runs only sections 1 and 3 (default: all).
set -uo pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export VIGNETTE_TINY_DIR=/tmp/tiny
nvidia-smi -L
python3 -c "import torch, transformers, pyarrow; print('torch', torch.__version__, 'transformers', transformers.__version__, 'pyarrow', pyarrow.__version__)"

SECTIONS=${SECTIONS:-123}

if [[ $SECTIONS == *1* ]]; then
echo "== 1. adapter tests on cuda"
VIGNETTE_TEST_DEVICE=cuda timeout 300 python3 -m pytest -q -rs tests/eval/adapters/test_transformers.py \
  -k "not test_specs" 2>&1 | tee "$OUT/adapter_tests_cuda.log" | tail -15
fi

if [[ $SECTIONS == *2* ]]; then
echo "== 2. vignette run under torchrun, device=cuda"
timeout 180 python3 -m torch.distributed.run --nproc-per-node 1 -m vignette_bench run --source .gpu_carry/sample \
  --config identity_contrast --sample 3 --model "tiny:llava_next?device=cuda&mode=score" --out /tmp/gpurun \
  > "$OUT/torchrun.log" 2>&1; echo "exit $?"; tail -3 "$OUT/torchrun.log"
python3 -c "import json; m = json.load(open('/tmp/gpurun/run.json'))['model']; print({k: m.get(k) for k in ('adapter', 'device', 'dtype', 'mode')})"
fi

if [[ $SECTIONS == *3* ]]; then
echo "== 3. score mode at LLaVA-1.6-7B shapes"
WORK=/dev/shm; [ -d "$WORK" ] || WORK=/tmp
timeout 420 python3 benchmarks/gpu_score_memory.py --workdir "$WORK" "$@" 2>&1 | grep -v "it/s\]" | tee "$OUT/gpu_score_memory.log"
fi
