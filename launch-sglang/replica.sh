#!/bin/sh
# SGLang 0.4+ (replica of 1; 32 GPUs each), written by ridgeline --emit sglang: see README.md.
exec python -m sglang.launch_server \
  --model-path deepseek-ai/DeepSeek-V3 \
  --port "${PORT:-8000}" \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --moe-dense-tp-size 1 \
  --ep-size 32 \
  --dtype bfloat16 \
  --mem-fraction-static 0.835 \
  --chunked-prefill-size 8192 \
  --max-prefill-tokens 16384 \
  --page-size 1 \
  --cuda-graph-max-bs 256
