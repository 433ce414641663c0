#!/usr/bin/env bash
# Installs code-server 4.100.3 from npm into $1 (default .cache/code-server) for the
# end-to-end test, on a machine that reaches only package registries:
# - native modules need build-essential, pkg-config and a few -dev packages (Debian);
# - @vscode/ripgrep downloads a binary from GitHub at install time, which cannot work here,
#   so Debian's ripgrep is put in the download cache that package looks in first.
set -euo pipefail
prefix="$(realpath -m "${1:-.cache/code-server}")"
if [ -x "$prefix/node_modules/.bin/code-server" ] && [ -e "$prefix/.complete" ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential pkg-config \
    libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep chromium) >/dev/null
fi
export npm_config_unsafe_perm=true
# npm 11 runs no dependency install scripts unless approved; code-server's native modules and
# its ripgrep need them (this is code-server's own, pinned dependency tree).
export npm_config_dangerously_allow_all_scripts=true
export npm_config_yes=true  # node-pty runs `npx node-gyp` in its post-install
mkdir -p "$prefix"
npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund code-server@4.100.3 >/dev/null
# code-server's own native dependency (argon2): built from source, its prebuilt download fails here
(cd "$prefix" && npm rebuild argon2 >/dev/null)
cs="$prefix/node_modules/code-server"
(cd "$cs/lib/vscode" && npm install --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
# Seed @vscode/ripgrep's download cache with Debian's rg, for every copy npm installed.
tmp="$(node -e 'console.log(require("os").tmpdir())')"
find "$cs" -path '*/@vscode/ripgrep/package.json' | while read -r manifest; do
  dir="$(dirname "$manifest")"
  version="$(node -p "require('$manifest').version")"
  rgver="$(sed -n "s/^const VERSION = '\(.*\)';/\1/p" "$dir/lib/postinstall.js")"
  cache="$tmp/vscode-ripgrep-cache-$version"
  mkdir -p "$cache" "$cache/stage"
  cp "$(command -v rg)" "$cache/stage/rg"
  tar -C "$cache/stage" -czf "$cache/ripgrep-$rgver-x86_64-unknown-linux-musl.tar.gz" rg
done
# Build the native modules and unpack ripgrep (from the seeded cache), then the rest of
# code-server's own post-install (symlinks, built-in extensions).
(cd "$cs/lib/vscode" && npm rebuild >/dev/null)
(cd "$cs" && npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" sh ./postinstall.sh >/dev/null)
test -x "$cs/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
touch "$prefix/.complete"
