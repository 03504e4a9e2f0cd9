#!/usr/bin/env bash
# Builds everything, runs the CLI demo on a sample photo, then serves the
# playground on http://127.0.0.1:8080 (Ctrl-C to stop).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

log "building the argent CLI (release)"
cargo build --release -p argent-cli

log "CLI demo: unsharp mask on a bundled photo"
./target/release/argent

ensure_wasm_target
ensure_wasm_bindgen
ensure_node_modules
log "building the compiler for the page and the TypeScript runtime"
bash scripts/build-web.sh

log "serving the playground"
exec node www/serve.mjs --port "${PORT:-8080}"
