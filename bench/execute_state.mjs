// Why the runtime's `execute` timing of the blur (1 thread) reads 1-2 ms
// more than the raw module (crates/argent-wasm/examples/time_module.mjs)
// and the Halide row of bench/run.mjs: a probe, not part of the bench.
//
//   node --no-liftoff bench/execute_state.mjs [ROUNDS]
//   V="runtime,worker" node --no-liftoff bench/execute_state.mjs 61
//   BLUR=FILE.ag HALIDE=strip node --no-liftoff bench/execute_state.mjs 31
//
// BLUR names another schedule of the blur (default examples/box_blur.ag),
// HALIDE the Halide module to compare with (`paper`, the default, or
// `strip`: bench/halide/gen.py's schedules).
//
// Needs web/dist built from the current compiler (scripts/build-web.sh;
// a stale web/pkg generates different code) and bench/build (the Halide
// modules). In one process, interleaved round by round (BLOCK=N: N runs
// of each in a row), it times the same module in the states the
// different harnesses run it in:
//   - "runtime execute": `pipeline.run` (1 thread), its `timings.execute`,
//     with a fresh output array per run (as bench/run.mjs does) or
//     writing into one reused array (`into`);
//   - "raw Argent ...": the runtime's own module (`pipeline.wasm`, threads
//     on, shared memory) on a memory of its own laid out as the runtime
//     does, timed around `run` only, after the runtime's copies (input
//     in, output out) or right after a run ("hot", as time_module.mjs and
//     the Halide row measure);
//   - "worker ...": the same module driven from a worker thread, as the
//     runtime's driver runs it, with the copies made by this thread (as
//     the runtime does) or by the worker;
//   - Halide's module (paper schedule) after the same copies and hot.
// Measured 2026-11-22 (2 shared cores, load 2.4-4): the runtime's execute
// equals the worker row (4.70/4.72/4.76 against 4.59/4.72/4.77 ms, 61
// rounds); see the report of branch h-gap for the rest.
import { openSync, readFileSync, readSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { loadHalide } from "./halide-module.mjs";
import { rawModule } from "./raw-module.mjs";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const argent = await import(pathToFileURL(join(repo, "web", "dist", "index.js")).href);
const W = 3072, H = 2048, ROUNDS = Number(process.argv[2] ?? 41);
const input = new Uint16Array(W * H);
for (let i = 0, s = 7; i < input.length; i++) {
  s = (Math.imul(s, 1103515245) + 12345) >>> 0;
  input[i] = s >>> 20;
}

const runtime = await argent.createRuntime({ threads: 1 });
const pipeline = await runtime.compile(readFileSync(process.env.BLUR ?? join(repo, "examples", "box_blur.ag"), "utf8"));
const halideSchedule = process.env.HALIDE ?? "paper";
const request = { inputs: { in: { data: input, width: W, height: H, channels: 1 } } };
const reusing = { ...request, into: { blur_y: new Uint16Array(W * H) } };

// Under `perf stat --control fifo:CTL,ACK -D -1` with CTL and ACK set, the
// counters run only inside the timed calls of the measured rounds (in a
// worker: from posting the call to its answer), so cycles and instructions
// can be compared where the machine is too busy for clocks. V=NAME keeps
// the variants whose name starts with NAME (a comma-separated list; nothing of the other
// modules runs, so compare only variants of one module that way).
const perfControl = process.env.CTL ? openSync(process.env.CTL, "w") : null;
const perfAck = process.env.ACK ? openSync(process.env.ACK, "r") : null;
let counting = false;
function counters(command) {
  if (perfControl === null || !counting) return;
  writeSync(perfControl, `${command}\n`);
  readSync(perfAck, Buffer.alloc(5));
}

/** The runtime's module on a memory of its own, laid out as the runtime does. */
const rawArgent = () => rawModule(pipeline, W, H, 2);
const counted = (on) => counters(on ? "enable" : "disable");

/** Halide's blur (schedule `halideSchedule`) with bench/run.mjs's loader. */
async function rawHalide() {
  const h = await loadHalide(join(repo, "bench", "build", `halide_blur_${halideSchedule}.wasm`));
  const dims = [{ min: 0, extent: W, stride: 1 }, { min: 0, extent: H, stride: W }];
  const inBuf = h.buffer(1, 16, dims);
  const outBuf = h.buffer(1, 16, dims);
  h.pin();
  return {
    memory: h.memory, inBase: inBuf.host, outBase: outBuf.host,
    call() {
      counters("enable");
      const t0 = performance.now();
      const status = h.exports[`halide_blur_${halideSchedule}`](inBuf.desc, outBuf.desc);
      const ms = performance.now() - t0;
      counters("disable");
      if (status !== 0) throw new Error(`status ${status}`);
      return ms;
    },
  };
}

/**
 * The raw module of `rawArgent` driven from a worker thread, as the
 * runtime's driver runs it; the copies are made by this thread
 * (`copyHere`, as the runtime does) or by the worker itself.
 */
function inWorker(m) {
  const code = `
    const { parentPort, workerData } = require("node:worker_threads");
    const { module, memory, tasks: names, args, heapTopOffset, heapTop, inBase, outBase, input, count } = workerData;
    let tasks = [];
    const instance = new WebAssembly.Instance(module, { env: { memory, parallel_for(task, closure, min, extent) {
      for (let i = 0; i < extent; i++) { const s = tasks[task](closure, min + i); if (s) return s; } return 0; } } });
    tasks = names.map((n) => instance.exports[n]);
    parentPort.on("message", (copy) => {
      if (copy) new Uint16Array(memory.buffer, inBase, count).set(input);
      new DataView(memory.buffer).setInt32(args + heapTopOffset, heapTop, true);
      const t0 = performance.now();
      const status = instance.exports.run(args);
      const ms = performance.now() - t0;
      if (copy) globalThis.kept = new Uint16Array(memory.buffer, outBase, count).slice();
      parentPort.postMessage({ status, ms });
    });`;
  const worker = new Worker(code, {
    eval: true,
    workerData: { module: new WebAssembly.Module(pipeline.wasm), memory: m.memory, tasks: pipeline.abi.tasks.map((t) => t.export), args: 1024, heapTopOffset: pipeline.abi.heapTopOffset, heapTop: m.heapTop, inBase: m.inBase, outBase: m.outBase, input, count: W * H },
  });
  const call = (copy) => new Promise((resolve, reject) => {
    worker.once("message", ({ status, ms }) => {
      if (!copy) counters("disable");
      return status === 0 ? resolve(ms) : reject(new Error(`status ${status}`));
    });
    if (!copy) counters("enable");
    worker.postMessage(copy);
  });
  return {
    copyHere: async () => {
      new Uint16Array(m.memory.buffer, m.inBase, W * H).set(input);
      const ms = await call(false);
      globalThis.kept = new Uint16Array(m.memory.buffer, m.outBase, W * H).slice();
      return ms;
    },
    copyThere: () => call(true),
    raw: m,
    terminate: () => worker.terminate(),
  };
}

const afterCopies = (m) => () => {
  new Uint16Array(m.memory.buffer, m.inBase, W * H).set(input);
  const ms = m.call(counted);
  globalThis.kept = new Uint16Array(m.memory.buffer, m.outBase, W * H).slice();
  return ms;
};
const ra = rawArgent(), rh = await rawHalide(), rw = inWorker(rawArgent());
// Every input holds the image from the start: untouched memory reads as
// the kernel's shared zero page, which is always in cache, so a "hot" run
// on a never-written input times compute only (2.5 ms instead of 3.5-4).
for (const m of [ra, rh, rw.raw]) new Uint16Array(m.memory.buffer, m.inBase, W * H).set(input);
const variants = {
  "runtime execute": async () => (await pipeline.run(request)).timings.execute,
  // The output written into one reused array: no 12 MiB allocation per run.
  "runtime execute, into": async () => (await pipeline.run(reusing)).timings.execute,
  "raw Argent after copies": afterCopies(ra),
  "raw Argent hot": () => ra.call(counted),
  "worker, copies by main": rw.copyHere,
  "worker, copies by worker": rw.copyThere,
  "raw Halide after copies": afterCopies(rh),
  "raw Halide hot": () => rh.call(),
};
if (process.env.V) for (const k of Object.keys(variants)) if (!process.env.V.split(",").some((v) => k.startsWith(v))) delete variants[k];
const times = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let i = 0; i < 5; i++) for (const f of Object.values(variants)) await f();
counting = true;
// BLOCK=N runs each variant N times in a row per round (keeping the last
// N - 2): then "hot" is a loop of runs with nothing in between, as in
// time_module.mjs and the Halide row, whose input and output (24 MiB)
// can stay in the 32 MiB L3; the rows "after copies" move 48 MiB per run.
const block = Number(process.env.BLOCK ?? 1);
for (let r = 0; r < ROUNDS; r++) {
  for (const [k, f] of Object.entries(variants)) {
    for (let i = 0; i < block; i++) {
      const ms = await f();
      if (block === 1 || i >= 2) times[k].push(ms);
    }
  }
}
for (const [k, t] of Object.entries(times)) {
  t.sort((a, b) => a - b);
  console.log(`${k.padEnd(24)} median ${t[t.length >> 1].toFixed(2)} ms  q1 ${t[t.length >> 2].toFixed(2)}  min ${t[0].toFixed(2)}  (${t.length} runs)`);
}
pipeline.dispose();
await rw.terminate();
process.exit(0);
