// The compiler worker: loads the Rust compiler (crates/argent-web, built
// with wasm-bindgen into web/pkg) and answers compile and check requests,
// so compiling never blocks the page's main thread.

import init, { check, compile, initSync, version } from "../pkg/argent_web.js";
import { isNode, parentPort } from "./platform.js";

/** Messages to the compiler worker. */
export type CompilerRequest =
  | { type: "compile"; id: number; source: string; options: string }
  | { type: "check"; id: number; source: string }
  | { type: "warm-up"; options: string };

/** Messages from the compiler worker. */
export type CompilerReply =
  | { type: "ready"; version: string; loadMs: number }
  | { type: "init-error"; message: string }
  | { type: "compiled"; id: number; json: string; wasm: Uint8Array; ms: number }
  | { type: "checked"; id: number; json: string }
  | { type: "failed"; id: number; message: string }
  | { type: "warmed-up"; ms: number; compiled: number; rounds: number };

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

// A small scheduled pipeline compiled a few times right after loading, with
// the options the runtime compiles with: engines compile the compiler's Wasm
// functions lazily on first call (the first compile of a session costs
// tens of milliseconds more than the next) and optimise hot ones only after
// they have run, so a worker that warms up while the page is still loading
// answers the user's first compile sooner. It touches the parser, every
// lowering pass and the code generator without being large itself.
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
// A hundred and twenty rounds: V8 optimises the compiler's hot functions
// only after they have run many times, and as compiles got cheaper, forty
// rounds no longer got there. In the page, box_blur's first nine compiles
// after the warm-up had a median of 13.4-14.9 ms after forty rounds and
// 5.0-5.1 ms after a hundred and twenty, where the same runs' steady
// state (compiles 161-240) was 4.7-5.2 ms (`node bench/page-compile.mjs
// --warm box_blur`, alternating). The rounds take about 2 s of the
// worker's idle time on a 2-core machine (forty took 1 s); a request
// waits for the round in progress at most.
const WARM_UP_ROUNDS = 120;

/**
 * Lets the worker's event loop run (and a request arrive) between two
 * warm-up rounds. A message to itself rather than `setTimeout(0)`, which
 * browsers clamp to 4 ms once timeouts nest: the worker would sit idle
 * between rounds (the 120 rounds took 0.1-0.15 s longer in the page).
 */
function yieldToEvents(channel: MessageChannel): Promise<void> {
  return new Promise((resolve) => {
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });
}

/** Set by the first compile or check: the warm-up then stops. */
let asked = false;

async function warmUp(options: string): Promise<void> {
  const started = performance.now();
  let compiled = 0;
  let rounds = 0;
  const channel = new MessageChannel();
  for (; rounds < WARM_UP_ROUNDS; rounds++) {
    // Between rounds the worker answers what has arrived meanwhile, and a
    // request ends the warm-up: it only uses idle time, and a user's
    // compile waits for the round in progress at most.
    await yieldToEvents(channel);
    if (asked) break;
    try {
      const output = compile(WARM_UP_SOURCE, options);
      // A warm-up that the compiler rejects (bad options, say) warms
      // nothing: it is counted so that tests notice.
      if ((JSON.parse(output.json) as { status: string }).status === "ok") compiled++;
      output.free();
    } catch {
      // A failing warm-up only costs speed; the user's own compile reports errors.
    }
  }
  // An open port would keep a Node worker's event loop alive.
  channel.port1.close();
  port.post({ type: "warmed-up", ms: performance.now() - started, compiled, rounds } satisfies CompilerReply);
}

try {
  const started = performance.now();
  await loadCompiler();
  port.post({ type: "ready", version: version(), loadMs: performance.now() - started } satisfies CompilerReply);
} catch (error) {
  port.post({ type: "init-error", message: String(error) } satisfies CompilerReply);
}

port.onMessage((request: CompilerRequest) => {
  if (request.type === "warm-up") {
    void warmUp(request.options);
    return;
  }
  asked = true;
  try {
    if (request.type === "compile") {
      const started = performance.now();
      const output = compile(request.source, request.options);
      const json = output.json;
      const wasm = output.wasm;
      const ms = performance.now() - started;
      port.post({ type: "compiled", id: request.id, json, wasm, ms } satisfies CompilerReply, [wasm.buffer]);
      // Freeing the output frees the compiler's intermediate IR too: done
      // once the answer is on its way (about a twentieth of a compile).
      output.free();
    } else {
      port.post({ type: "checked", id: request.id, json: check(request.source) } satisfies CompilerReply);
    }
  } catch (error) {
    // A panic inside the compiler surfaces as a RuntimeError here; the
    // instance may be poisoned, so report it as an internal error.
    port.post({ type: "failed", id: request.id, message: String(error) } satisfies CompilerReply);
  }
});
