#!/usr/bin/env bash
# Builds the dashboard into web/dist (embedded by the Go package web):
# npm ci (when package-lock.json changed), TypeScript from the protos with
# buf + protoc-gen-es and the flame tree's WebAssembly from
# src/flame/tree.wat with wabt (both into web/src/gen), a type check, vite build (the app, then
# the flame graph benchmark page beside it: vite.config.ts), gzip copies.
#
#   web/scripts/build.sh            build into web/dist (and web/src/gen)
#   web/scripts/build.sh --check    build into a temporary directory and fail
#                                   unless it equals the committed web/src/gen
#                                   and web/dist byte for byte
#   web/scripts/build.sh --deps     only install node_modules (also used by
#                                   the Go tests: speedscope's schema)
#
# Needs Node >= 20.19 and npm (the npm registry); installs nothing else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

check=false
deps=false
case "${1:-}" in
  --check) check=true ;;
  --deps) deps=true ;;
  "") ;;
  *) echo "usage: web/scripts/build.sh [--check|--deps]" >&2; exit 2 ;;
esac

say() { printf 'web/build: %s\n' "$*" >&2; }

command -v node >/dev/null || { say "node is not installed (need Node >= 20.19)"; exit 1; }

# Dependencies: npm ci, unless node_modules was installed from this very lock.
stamp=node_modules/.fleetscope-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  say "npm ci"
  if ! npm ci --no-audit --no-fund --loglevel=error 2>npm-ci.log; then
    # A registry that serves only this platform's builds of the optional
    # native packages (rollup, esbuild, buf) leaves them out of the lock,
    # and npm ci then refuses the lock as out of sync. npm install with the
    # same lock installs the same versions; the lock must not change.
    if ! grep -q 'can only install packages when your package.json and package-lock.json' npm-ci.log; then
      cat npm-ci.log >&2
      rm -f npm-ci.log
      exit 1
    fi
    say "npm ci refused the lock (platform-only registry): npm install from the same lock"
    cp package-lock.json npm-lock.bak
    npm install --no-audit --no-fund --loglevel=error
    if ! cmp -s package-lock.json npm-lock.bak; then
      mv npm-lock.bak package-lock.json
      say "npm install wanted to change package-lock.json: refusing (update the lock on purpose)"
      exit 1
    fi
    rm -f npm-lock.bak
  fi
  rm -f npm-ci.log
  echo "$want" > "$stamp"
fi
$deps && exit 0

if $check; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  npx --no-install buf generate --template buf.gen.yaml -o "$tmp"
  node scripts/wasm.mjs "$tmp"
  if ! diff -r src/gen "$tmp/src/gen" >/dev/null; then
    diff -ru src/gen "$tmp/src/gen" | head -40 >&2 || true
    say "web/src/gen is not what the protos and src/flame/tree.wat generate: run web/scripts/build.sh and commit"
    exit 1
  fi
  npx --no-install tsc --noEmit -p .
  npx --no-install vite build --logLevel warn --outDir "$tmp/dist" --emptyOutDir
  npx --no-install vite build --mode bench --logLevel warn --outDir "$tmp/dist"
  node scripts/compress.mjs "$tmp/dist"
  if ! diff -r dist "$tmp/dist" >/dev/null; then
    diff -r dist "$tmp/dist" | head -20 >&2 || true
    say "web/dist is not what the sources build: run web/scripts/build.sh and commit"
    exit 1
  fi
  say "web/src/gen and web/dist are reproduced byte for byte"
  exit 0
fi

say "generate TypeScript from the protos, assemble src/flame/tree.wat"
npx --no-install buf generate --template buf.gen.yaml
node scripts/wasm.mjs
say "type check"
npx --no-install tsc --noEmit -p .
say "vite build"
npx --no-install vite build --logLevel warn
npx --no-install vite build --mode bench --logLevel warn
node scripts/compress.mjs dist
say "built web/dist ($(du -sh dist | cut -f1))"
