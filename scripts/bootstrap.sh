#!/usr/bin/env bash
# Creates .venv (if needed) and installs kernelscope with the given extras.
# Used by scripts/demo.sh and scripts/test.sh; safe to re-run (skips when up to date).
#
#   scripts/bootstrap.sh [EXTRAS]      e.g. scripts/bootstrap.sh dev,bench
#
# Without an NVIDIA GPU, torch is the CPU build: on Linux `torch==2.13.0+cpu` (PyPI's own
# torch==2.13.0 for Linux is the CUDA build, ~2.7 GB with its nvidia-* wheels), taken from the
# indexes pip is configured with and, when they have none, from PyTorch's CPU index
# (TORCH_CPU_INDEX); on macOS PyPI's torch==2.13.0, which is the CPU build there. Set
# KERNELSCOPE_TORCH to override the spec (it is then installed as given, from pip's indexes).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
venv="${KERNELSCOPE_VENV:-.venv}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
fi

torch_cpu_index="${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  torch_spec="${KERNELSCOPE_TORCH:-torch}"
elif [ "$(uname -s)" = Linux ]; then
  torch_spec="${KERNELSCOPE_TORCH:-torch==2.13.0+cpu}"
else
  torch_spec="${KERNELSCOPE_TORCH:-torch==2.13.0}"
fi

spec="."
[ -n "$extras" ] && spec=".[$extras]"
# With the dev extra: FlashInfer-Bench, whose Trace model tests/cli/test_traces.py validates
# `kernelscope bench --trace` output with. Installed without its declared dependencies, which
# include flashinfer-python and apache-tvm-ffi (CUDA JIT libraries, not needed to read and write
# Trace records); what its import does need (pydantic, safetensors, docstring-parser, and torch
# and numpy from the bench extra) is in pyproject.toml's extras.
flashinfer_bench_spec="flashinfer-bench==0.1.2"
stamp="$venv/.kernelscope-installed"
want="$(cat pyproject.toml | sha256sum | cut -c1-16) $extras $torch_spec $flashinfer_bench_spec"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
pkgs=(-e "$spec")
case ",$extras," in *,bench,*) pkgs=("$torch_spec" "${pkgs[@]}") ;; esac
log="$venv/pip-install.log"
echo "kernelscope: installing ${pkgs[*]} into $venv (log: $log)" >&2
install() { "$venv/bin/python" -m pip install "$@" "${pkgs[@]}" >"$log" 2>&1; }
# pip's two ways of saying that no index it asked has the CPU build (the second with a constraint)
no_cpu_build() {
  grep -qE "No matching distribution found for torch(==|\$)" "$log" \
    || grep -A4 "no matching distributions available" "$log" | grep -qx " *torch"
}
if ! install; then
  if [ -z "${KERNELSCOPE_TORCH:-}" ] && [[ "$torch_spec" == *+cpu ]] \
    && no_cpu_build; then
    # pip's own indexes have no CPU build (PyPI has none): PyTorch's CPU index has it. Asked only
    # then, so that a machine which cannot reach it (a mirror, no network) never waits on it.
    echo "kernelscope: $torch_spec is not on pip's indexes: taking it from $torch_cpu_index" >&2
    install --extra-index-url "$torch_cpu_index" || failed=1
  else
    failed=1
  fi
fi
if [ -n "${failed:-}" ]; then
  grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -40 >&2
  echo "kernelscope: pip install failed (full log: $log)" >&2
  exit 1
fi
case ",$extras," in
  *,dev,*)
    if ! "$venv/bin/python" -m pip install --no-deps "$flashinfer_bench_spec" >>"$log" 2>&1; then
      grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -20 >&2
      echo "kernelscope: pip install --no-deps $flashinfer_bench_spec failed (full log: $log)" >&2
      exit 1
    fi
    ;;
esac
"$venv/bin/python" -c "import kernelscope.daemon, kernelscope.protocol, kernelscope.kernels" 
echo "$want" > "$stamp"
