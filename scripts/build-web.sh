#!/usr/bin/env bash
# Builds the in-page compiler (crates/argent-web -> web/pkg) and the
# TypeScript runtime (web/src -> web/dist). Idempotent: installs the wasm
# target, wasm-bindgen-cli and the npm dependencies only when missing.
#
# Environment:
#   CARGO_TARGET_DIR   where cargo builds (default: <repo>/target)
#   ARGENT_CARGO_DIR   directory to run cargo in (default: the repo root);
#                      lets a developer build from a reduced workspace.
#   ARGENT_WEB_PROFILE web (default: release with LTO, see the root
#                      Cargo.toml), release or dev
#   ARGENT_WASM_OPT    0 skips wasm-opt -O3 (which runs for the web profile)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cargo_dir="${ARGENT_CARGO_DIR:-$repo}"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
profile="${ARGENT_WEB_PROFILE:-web}"
# Must equal the `wasm-bindgen` version pinned in crates/argent-web/Cargo.toml.
bindgen_version="0.2.130"

step() { printf '==> %s\n' "$*" >&2; }

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $bindgen_version" ]; then
  step "installing wasm-bindgen-cli $bindgen_version (a few minutes, once)"
  # No --locked: the CLI's own lock file pins a crate version the registry
  # mirror lacks (see ../shared/ENVIRONMENT.md).
  cargo install wasm-bindgen-cli --version "$bindgen_version"
fi

step "building crates/argent-web for wasm32 ($profile)"
profile_flag=(--profile "$profile")
profile_dir="$profile"
if [ "$profile" = dev ]; then
  profile_flag=()
  profile_dir=debug
fi
(cd "$cargo_dir" && CARGO_TARGET_DIR="$target_dir" cargo build "${profile_flag[@]}" -j2 \
  --target wasm32-unknown-unknown -p argent-web)

step "generating web/pkg with wasm-bindgen"
wasm-bindgen --target web --out-dir "$repo/web/pkg" \
  "$target_dir/wasm32-unknown-unknown/$profile_dir/argent_web.wasm"

cd "$repo/web"
# wasm-opt comes from the npm package `binaryen` (Debian's is too old for
# wasm-bindgen's output): a checkout installed before it was added
# installs again.
if [ ! -d node_modules ] || [ ! -x node_modules/.bin/wasm-opt ]; then
  step "installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi

if [ "$profile" = web ] && [ "${ARGENT_WASM_OPT:-1}" != 0 ]; then
  # Binaryen's -O3 over rustc's output: the compiler in the page lowers
  # and generates code 7-9% faster once V8 has tiered it up (box_blur
  # 7.1 -> 6.5 ms, local_laplacian 48.8 -> 45.2 ms in Node), and the
  # module shrinks from 2.8 to 2.3 MB. -O4 measured no better. About
  # 30 s; ARGENT_WASM_OPT=0 skips it.
  step "optimizing web/pkg/argent_web_bg.wasm with wasm-opt -O3"
  node_modules/.bin/wasm-opt -O3 \
    --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
    pkg/argent_web_bg.wasm -o pkg/argent_web_bg.wasm
fi


step "compiling the TypeScript runtime into web/dist"
rm -rf dist
npx tsc -p tsconfig.json
chmod +x dist/cli.js 2>/dev/null || true
step "done: web/pkg and web/dist are ready"
