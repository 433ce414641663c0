#!/usr/bin/env bash
# The main job: set up .venv (with torch/triton: the CPU build of torch when there is no
# NVIDIA GPU) and run `kernelscope demo`: a fresh workspace from examples/vector_add, a
# measured baseline and three improving iterations, a mask-half, and the code-lens texts.
# Extra arguments go to `kernelscope demo` (e.g. --dir /tmp/my-demo).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh "bench"
exec .venv/bin/kernelscope demo "$@"
