#!/usr/bin/env bash
# `make demo`: a tour of ridgeline on seed 000's H200 example, no arguments needed.
set -euo pipefail
rl=$1
say() { printf '\n\033[1m$ ridgeline %s\033[0m\n' "$*"; "$rl" "$@"; }
say hw show h200
say op matmul --m 256 --k 4096 --n 4096 --hw h200
say threshold matmul --k 4096 --n 4096 --hw h200 --solve m
say op rmsnorm --tokens 4096 --hidden 4096 --hw h200
say op attention --batch 1 --q-len 8192 --heads 32 --kv-heads 8 --head-dim 128 --causal --hw h200
say op alltoall --bytes 33554432 --chips 8 --algo direct --hw h200
say block --hw h200 --seq 4096 --cp 8 --shapes seed
say infer --model llama-3.1-70b --hw h200 --chips 2 --batch 8 --prompt 2048 --gen 256
mkdir -p build/demo
say plot roofline --hw h200,tpu-v5e --out build/demo/roofline.svg
say search train --model llama-3.1-70b --hw h200 --gpus 64 --seq 8192 --global-batch 128 --top 3 --plot build/demo/train-pareto.svg
