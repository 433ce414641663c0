#!/usr/bin/env bash
# Type-check the three packages with mypy. The packages live in top-level folders mapped
# onto the `kernelscope` namespace by setuptools, which mypy cannot follow, so we give it
# a source tree of symlinks (.cache/mypy-src/kernelscope/{daemon,protocol,kernels}).
# Extra arguments go to mypy.
set -euo pipefail
cd "$(dirname "$0")/.."
src=.cache/mypy-src
mkdir -p "$src/kernelscope"
for pkg in daemon protocol kernels; do
  ln -sfn "../../../$pkg" "$src/kernelscope/$pkg"
done
MYPYPATH="$src" exec .venv/bin/mypy -p kernelscope.daemon -p kernelscope.protocol -p kernelscope.kernels "$@"
