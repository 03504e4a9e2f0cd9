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

try {
  const started = performance.now();
  await loadCompiler();
  port.post({ type: "ready", version: version(), loadMs: performance.now() - started } satisfies CompilerReply);
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
