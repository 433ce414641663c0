#!/usr/bin/env bash
# Runs COMMAND... with a fresh, empty home directory and XDG directories of its own (a temporary
# folder, removed afterwards), as on a new machine: nothing that earlier runs left in the real home
# (npm's or node-gyp's caches and settings, a code-server config file, pip's cache, git settings)
# can make the command pass. Installed tools stay reachable: PATH and tool roots such as
# PYENV_ROOT are kept as they are; package downloads still come from the registries.
#   scripts/with-fresh-home.sh scripts/test.sh
set -euo pipefail
root="$(mktemp -d "${TMPDIR:-/tmp}/kernelscope-ci.XXXXXX")"
trap 'rm -rf "$root"' EXIT
export HOME="$root/kernelscope-ci-home"
mkdir -m 700 "$HOME" "$root/runtime"
export XDG_CONFIG_HOME="$HOME/.config" XDG_CACHE_HOME="$HOME/.cache"
export XDG_DATA_HOME="$HOME/.local/share" XDG_STATE_HOME="$HOME/.local/state"
export XDG_RUNTIME_DIR="$root/runtime"
# Settings that would point a tool back at state outside the fresh home.
unset npm_config_cache npm_config_userconfig NPM_CONFIG_CACHE NPM_CONFIG_USERCONFIG PIP_CACHE_DIR \
  PIP_CONFIG_FILE GIT_CONFIG_GLOBAL 2>/dev/null || true
echo "kernelscope: running '$*' with an empty home of its own: $HOME" >&2
"$@"
