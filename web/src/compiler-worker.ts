// The compiler worker: loads the Rust compiler (crates/argent-web, built
// with wasm-bindgen into web/pkg) and answers compile and check requests,
// so compiling never blocks the page's main thread.

import init, { check, compile, initSync, version } from "../pkg/argent_web.js";
import { isNode, parentPort } from "./platform.js";

/** Messages to the compiler worker. */
export type CompilerRequest =
  | { type: "compile"; id: number; source: string; options: string }
  | { type: "check"; id: number; source: string };

/** Messages from the compiler worker. */
export type CompilerReply =
  | { type: "ready"; version: string; loadMs: number }
  | { type: "init-error"; message: string }
  | { type: "compiled"; id: number; json: string; wasm: Uint8Array; ms: number }
  | { type: "checked"; id: number; json: string }
  | { type: "failed"; id: number; message: string };

const port = await parentPort();

async function loadCompiler(): Promise<void> {
  const wasmUrl = new URL("../pkg/argent_web_bg.wasm", import.meta.url);
  if (isNode) {
    // Node's fetch cannot read file: URLs, so read the bytes directly.
    const { readFile } = await import("node:fs/promises");
    initSync({ module: await readFile(wasmUrl) });
  } else {
    await init({ module_or_path: wasmUrl });
  }
}

// A small scheduled pipeline compiled once right after loading: engines
// compile the compiler's Wasm functions lazily on first call (the first
// compile of a session costs hundreds of milliseconds) and optimise hot
// ones only after they have run, so a worker that warms up while the page
// is still loading answers the user's first compile at full speed. It
// touches the parser, every lowering pass and both code generators
// (SIMD128 and scalar) without being large itself.
const WARM_UP_SOURCE = `
input u16 in(x, y)
clamped = repeat_edge(in)
blur_x(x, y) = (clamped(x-1, y) + clamped(x, y) + clamped(x+1, y)) / 3
blur_y(x, y) = (blur_x(x, y-1) + blur_x(x, y) + blur_x(x, y+1)) / 3
output blur_y
schedule {
  blur_y.tile(x, y, xi, yi, 64, 8).vectorize(xi, 8).parallel(y)
  blur_x.compute_at(blur_y, x).vectorize(x, 8)
}`;
const WARM_UP_ROUNDS = 3;

function warmUp(): void {
  for (let round = 0; round < WARM_UP_ROUNDS; round++) {
    for (const simd of [true, false]) {
      try {
        compile(WARM_UP_SOURCE, JSON.stringify({ simd, threads: 2 })).free();
      } catch {
        // A failing warm-up only costs speed; the user's own compile reports errors.
      }
    }
  }
}

try {
  const started = performance.now();
  await loadCompiler();
  port.post({ type: "ready", version: version(), loadMs: performance.now() - started } satisfies CompilerReply);
  // Requests that arrive meanwhile queue until the warm-up is done; the
  // first of them would have paid the lazy compilation anyway.
  setTimeout(warmUp, 0);
} catch (error) {
  port.post({ type: "init-error", message: String(error) } satisfies CompilerReply);
}

port.onMessage((request: CompilerRequest) => {
  try {
    if (request.type === "compile") {
      const started = performance.now();
      const output = compile(request.source, request.options);
      const json = output.json;
      const wasm = output.wasm;
      output.free();
      const ms = performance.now() - started;
      port.post({ type: "compiled", id: request.id, json, wasm, ms } satisfies CompilerReply, [wasm.buffer]);
    } else {
      port.post({ type: "checked", id: request.id, json: check(request.source) } satisfies CompilerReply);
    }
  } catch (error) {
    // A panic inside the compiler surfaces as a RuntimeError here; the
    // instance may be poisoned, so report it as an internal error.
    port.post({ type: "failed", id: request.id, message: String(error) } satisfies CompilerReply);
  }
});
