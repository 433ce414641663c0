#!/usr/bin/env bash
# The main job: set up .venv and show kernelscope on the shipped example workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh ""
ws="$(mktemp -d)/kernel_opt_vector_add"
cp -r examples/vector_add "$ws"
echo "== kernelscope workspace -w $ws"
.venv/bin/kernelscope workspace -w "$ws"
echo
echo "== kernelscope memory summary -w $ws"
.venv/bin/kernelscope memory summary -w "$ws"
echo
echo "== kernelscope memory mask-half --dry-run --seed 7 -w $ws"
.venv/bin/kernelscope memory mask-half --dry-run --seed 7 -w "$ws"
