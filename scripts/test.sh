#!/usr/bin/env bash
# Installs what the tests need (skipping what is there) and runs every test:
# Rust unit, snapshot, differential and CLI tests; the wasm32 build of the
# compiler crates; the Node tests of the npm package; the Chromium test.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
start=$SECONDS

ensure_wasm_target

log "cargo fmt --check"
cargo fmt --all -- --check

log "Rust tests (release: the differential tests run real photos)"
cargo test --release --workspace --locked

# Every crate below the CLI must build for the browser.
wasm_crates=()
for dir in crates/*/; do
  name=$(basename "$dir")
  case "$name" in argent-cli) continue ;; esac
  wasm_crates+=(-p "$name")
done
log "the compiler crates build for wasm32-unknown-unknown: ${wasm_crates[*]}"
cargo build --release --locked --target wasm32-unknown-unknown "${wasm_crates[@]}"

ensure_wasm_bindgen
ensure_chromium
ensure_node_modules
log "building the page's compiler and the TypeScript runtime"
bash scripts/build-web.sh

log "Node tests of the npm package (every example compiled in the page's compiler, run on workers, SIMD on/off, 1/2/4 threads)"
(cd web && npm run typecheck && npm test)

log "Chromium test (the page compiles, runs on workers, the canvas matches the reference)"
node --test tests/browser/

log "all tests passed in $((SECONDS - start)) s"
