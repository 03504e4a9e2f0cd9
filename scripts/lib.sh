# Shared helpers for the set-up scripts: each installer checks first and
# skips what is already there, so re-running is cheap.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_BINDGEN_VERSION=0.2.130

log() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

ensure_wasm_target() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    log "installing the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}

# wasm-bindgen's CLI must equal the crate version exactly. No --locked: its
# lock file pins a crate version the registry here lacks.
ensure_wasm_bindgen() {
  if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
    log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
  fi
}

# Debian's Chromium for the browser tests (never a downloaded browser).
ensure_chromium() {
  if ! [ -x /usr/bin/chromium ] || ! [ -x /usr/bin/chromedriver ]; then
    log "installing Debian's chromium"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
}

ensure_node_modules() {
  if [ ! -d "$ROOT/web/node_modules" ] || [ "$ROOT/web/package-lock.json" -nt "$ROOT/web/node_modules/.package-lock.json" ]; then
    log "installing npm packages (web/package-lock.json)"
    (cd "$ROOT/web" && npm ci --no-audit --no-fund)
  fi
}
