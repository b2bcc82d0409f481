#!/usr/bin/env bash
# `make demo`: a tour of ridgeline on seed 000's H200 example, no arguments needed. The
# charts go to build/demo/img; `make docs` draws the README's into docs/img (the second argument).
set -euo pipefail
rl=$1
img=${2:-build/demo/img}
say() { printf '\n\033[1m$ ridgeline %s\033[0m\n' "$*"; "$rl" "$@"; }
say hw show h200
say op matmul --m 256 --k 4096 --n 4096 --hw h200
say threshold matmul --k 4096 --n 4096 --hw h200 --solve m
say op rmsnorm --tokens 4096 --hidden 4096 --hw h200
say op attention --batch 1 --q-len 8192 --heads 32 --kv-heads 8 --head-dim 128 --causal --hw h200
say op alltoall --bytes 33554432 --chips 8 --algo direct --hw h200
say block --hw h200 --seq 4096 --cp 8 --shapes seed
say infer --model llama-3.1-70b --hw h200 --chips 2 --batch 8 --prompt 2048 --gen 256
# The charts the README shows.
mkdir -p build/demo "$img"
say plot roofline --hw h200,tpu-v5e --out "$img"/roofline-h200-tpu-v5e.svg
say search train --model gpt3-175b --hw a100-80gb --gpus 64 --seq 2048 --global-batch 64 --top 3 \
    --plot "$img"/search-train-gpt3.svg
say search infer --model llama-3.1-70b --hw h100-sxm --chips-max 8 --prompt 1024 --gen 256 --ttft-max 2s --tpot-max 50ms \
    --top 3 --plot "$img"/search-infer-llama70b.svg
say serve --model llama-3.1-70b --hw h100-sxm --tp 4 --concurrency 200 --requests 2000 --warmup-requests 200 \
    --prompt lognormal:1000,0.6 --gen lognormal:250,0.6 --slo ttft_p99=1s,tpot_p99=33ms --replicas auto
say serve --model llama-3.1-70b --hw h100-sxm --tp 4 --qps 2,4,6,8,10,11,12 --requests 2000 \
    --prompt lognormal:1000,0.6 --gen lognormal:250,0.6 --plot "$img"/serve-throughput-llama70b.svg
"$rl" serve --model llama-3.1-70b --hw h100-sxm --tp 4 --qps 10 --requests 3000 --prompt lognormal:1000,0.6 \
    --gen lognormal:250,0.6 --plot "$img"/serve-latency-llama70b.svg --json > build/demo/serve.json
say plot timeline build/demo/serve.json --out "$img"/serve-timeline-llama70b.svg
say report --model llama-3.1-8b --hw h200 --batch 8 --prompt 2048 --gen 256 --out build/demo/report.html
say search serve --model llama-3.1-70b --hw a100-80gb,h100-sxm,h200,b200 --weight-dtype bf16,fp8 --qps 10 \
    --prompt lognormal:1000,0.6 --gen lognormal:250,0.6 --requests 2000 --slo ttft_p99=1s,tpot_p99=50ms \
    --price a100-80gb=2.45/h --price h100-sxm=4.76/h --price h200=6.35/h --price b200=10.57/h \
    --top 8 --plot "$img"/search-serve-llama70b.svg
say report --serve --model llama-3.1-8b --hw h100-sxm --qps 8 --requests 2000 --out build/demo/serve.html
echo
echo "charts: $img/*.svg; reports: build/demo/report.html, build/demo/serve.html (open them in a browser)"
