// An execution worker. Every worker of a runtime's pool instantiates each
// pipeline's module on that pipeline's memory. For one run, one worker is
// the driver (it calls `run`) and the others are helpers that join the
// parallel loops. On shared memory the main thread writes the inputs and
// arguments straight into the memory and reads the outputs from it, so
// the driver gets a message of a few words ("run-in-place"); on a memory
// of its own the driver also lays out the buffers and copies the
// (transferred) inputs in and the outputs out ("run"). A worker that
// finished a run on shared memory listens on its idle word for a while
// (`RuntimeOptions.pollBetweenRuns`: by default asleep in `Atomics.wait`,
// polling first when runs come back to back), and the next run of the
// same pipeline calls it there instead of by message (see `Idle` and
// `autoPollMs` in layout.ts).
//
// The parallel_for protocol follows argent-wasm's crate docs: the caller
// publishes a job in a control block in shared memory, bumps a generation
// word and notifies; every participant, caller included, claims guided
// chunks of iterations with compare-exchange on a shared counter; the
// caller waits until all iterations are done. A parallel loop reached from
// inside a task runs serially on the calling thread, so nested loops
// cannot deadlock.

import {
  ARGS_OFFSET,
  AUTO_PARK_MS,
  autoPollMs,
  CONTROL_OFFSET,
  Control,
  IDLE_WORKERS,
  Idle,
  TRAP_STATUS,
  ensureMemory,
  idleWords,
  planLayout,
  writeArguments,
} from "./layout.js";
import { parentPort } from "./platform.js";
import type { Abi, ExecReply, ExecRequest } from "./protocol.js";

interface Loaded {
  abi: Abi;
  memory: WebAssembly.Memory;
  instance: WebAssembly.Instance;
  /** `task_N` exports by task index. */
  tasks: ((closure: number, iteration: number) => number)[];
  /** How many helpers join this run's loops (driver only). */
  helpers: number;
  /** The first trap message seen on this thread during a run. */
  trap: string | null;
  /** Parallel-loop iterations this thread ran during the current run. */
  iterations: number;
}

const port = await parentPort();
const pipelines = new Map<number, Loaded>();
/** Depth of task calls on this thread: nested parallel loops run serially. */
let taskDepth = 0;
/** Each claim takes at most `1 / (CHUNK_DIVISOR * participants)` of what is left (see `work`). */
const CHUNK_DIVISOR = 8;
/** How long a thread polls before it parks in `Atomics.wait` (see `waitForChange`). */
const SPIN_MS = 0.5;

function reply(message: ExecReply, transfer?: Transferable[]): void {
  port.post(message, transfer);
}

function control(loaded: Loaded): Int32Array {
  return new Int32Array(loaded.memory.buffer, CONTROL_OFFSET, Control.words);
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Runs one task iteration, turning a trap into a status. */
function runIteration(loaded: Loaded, task: number, closure: number, iteration: number): number {
  taskDepth++;
  loaded.iterations++;
  try {
    return loaded.tasks[task](closure, iteration);
  } catch (error) {
    loaded.trap ??= `parallel task ${loaded.abi.tasks[task]?.export ?? task} trapped: ${describeError(error)}`;
    return TRAP_STATUS;
  } finally {
    taskDepth--;
  }
}

/**
 * Claims and runs chunks of the published job until none are left. Chunks
 * are guided: each claim takes a share of what is left (an eighth of it
 * per participant, at least one iteration), so a loop of many cheap
 * iterations needs few claims while a loop of a few dozen tiles is handed
 * out nearly one tile at a time, as Halide's thread pool does. A thread
 * that starts late or is preempted (the cores are shared with other
 * processes) then delays the end of the loop by at most one small chunk:
 * with a quarter of what was left per claim, a preempted helper could hold
 * a quarter of the loop while the caller ran out of work.
 */
function work(loaded: Loaded, ctl: Int32Array): void {
  const task = Atomics.load(ctl, Control.task);
  const closure = Atomics.load(ctl, Control.closure);
  const min = Atomics.load(ctl, Control.min);
  const extent = Atomics.load(ctl, Control.extent);
  const share = CHUNK_DIVISOR * Math.max(1, Atomics.load(ctl, Control.participants));
  for (;;) {
    let start = Atomics.load(ctl, Control.next);
    let end = start;
    for (;;) {
      if (start >= extent) return;
      end = Math.min(extent, start + Math.max(1, Math.floor((extent - start) / share)));
      const seen = Atomics.compareExchange(ctl, Control.next, start, end);
      if (seen === start) break;
      start = seen;
    }
    for (let i = start; i < end; i++) {
      // After a failure the remaining iterations are counted but skipped:
      // the run is going to fail anyway.
      if (Atomics.load(ctl, Control.status) !== 0) continue;
      const status = runIteration(loaded, task, closure, min + i);
      if (status !== 0) Atomics.compareExchange(ctl, Control.status, 0, status);
    }
    if (Atomics.add(ctl, Control.done, end - start) + (end - start) >= extent) {
      Atomics.notify(ctl, Control.done);
    }
  }
}

/**
 * Waits until word `index` of the control block no longer holds `value`:
 * first by polling for up to `SPIN_MS`, then with `Atomics.wait`. The
 * events waited for (a job being published, the last chunk finishing)
 * usually come within microseconds, and waking a thread parked in
 * `Atomics.wait` costs tens to hundreds of microseconds on a virtual
 * machine (more when the core went idle), which on a loop of a few
 * milliseconds is several percent of the run. Returns the value seen last.
 */
function waitForChange(ctl: Int32Array, index: number, value: number): number {
  let seen = Atomics.load(ctl, index);
  if (seen !== value) return seen;
  const spinUntil = performance.now() + SPIN_MS;
  for (let polls = 1; ; polls++) {
    seen = Atomics.load(ctl, index);
    if (seen !== value) return seen;
    // Reading the clock costs more than a poll: look at it now and then.
    if ((polls & 255) === 0 && performance.now() > spinUntil) break;
  }
  Atomics.wait(ctl, index, value);
  return Atomics.load(ctl, index);
}

/** Waits until no helper is reading the job; the caller holds an odd generation. */
function waitForIdleHelpers(ctl: Int32Array): void {
  for (let active = Atomics.load(ctl, Control.active); active !== 0; ) {
    active = waitForChange(ctl, Control.active, active);
  }
}

/** `env.parallel_for` as the driver (or a nested caller) sees it. */
function parallelFor(loaded: Loaded, task: number, closure: number, min: number, extent: number): number {
  if (extent <= 0) return 0;
  if (taskDepth > 0 || loaded.helpers === 0) {
    for (let i = 0; i < extent; i++) {
      const status = runIteration(loaded, task, closure, min + i);
      if (status !== 0) return status;
    }
    return 0;
  }
  const ctl = control(loaded);
  Atomics.add(ctl, Control.generation, 1);
  waitForIdleHelpers(ctl);
  const participants = loaded.helpers + 1;
  Atomics.store(ctl, Control.task, task);
  Atomics.store(ctl, Control.closure, closure);
  Atomics.store(ctl, Control.min, min);
  Atomics.store(ctl, Control.extent, extent);
  Atomics.store(ctl, Control.participants, participants);
  Atomics.store(ctl, Control.next, 0);
  Atomics.store(ctl, Control.done, 0);
  Atomics.store(ctl, Control.status, 0);
  Atomics.add(ctl, Control.generation, 1);
  Atomics.notify(ctl, Control.generation);
  work(loaded, ctl);
  for (let done = Atomics.load(ctl, Control.done); done < extent; ) {
    done = waitForChange(ctl, Control.done, done);
  }
  return Atomics.load(ctl, Control.status);
}

/**
 * Tells the helpers the run is over. Nothing of the last job is rewritten
 * (a helper still leaving it only finds its counter exhausted), so the
 * driver need not wait for the helpers: it sets `quit` and publishes a new
 * generation, and each helper leaves when it next looks.
 */
function releaseHelpers(loaded: Loaded): void {
  if (loaded.helpers === 0) return;
  const ctl = control(loaded);
  Atomics.store(ctl, Control.quit, 1);
  Atomics.add(ctl, Control.generation, 2);
  Atomics.notify(ctl, Control.generation);
}

/**
 * A helper's loop: join every published job until the driver says quit.
 * Generation 0 (the control block as the runtime reset it before the
 * run) is no job, so the helper does not register for it, which would
 * only make the driver's first `parallel_for` wait for it to leave.
 */
function helpLoop(loaded: Loaded): void {
  const ctl = control(loaded);
  let seen = 0;
  for (;;) {
    const generation = Atomics.load(ctl, Control.generation);
    if (generation !== seen && (generation & 1) === 0) {
      Atomics.add(ctl, Control.active, 1);
      let quit = false;
      // Only a job that was not being rewritten while we registered is
      // safe to read; otherwise look again.
      if (Atomics.load(ctl, Control.generation) === generation) {
        quit = Atomics.load(ctl, Control.quit) !== 0;
        if (!quit) work(loaded, ctl);
        seen = generation;
      }
      if (Atomics.sub(ctl, Control.active, 1) === 1) Atomics.notify(ctl, Control.active);
      if (quit) return;
      continue;
    }
    waitForChange(ctl, Control.generation, generation);
  }
}

function load(request: Extract<ExecRequest, { type: "load" }>): void {
  const started = performance.now();
  try {
    // Without shared memory (single-threaded mode) only the driver runs
    // the pipeline, and it owns a private memory.
    const memory = request.memory ?? new WebAssembly.Memory({ initial: 1 });
    const loaded = {
      abi: request.abi,
      memory,
      tasks: [],
      helpers: 0,
      trap: null,
      iterations: 0,
    } as unknown as Loaded;
    const instance = new WebAssembly.Instance(request.module, {
      env: {
        memory,
        parallel_for: (task: number, closure: number, min: number, extent: number) =>
          parallelFor(loaded, task, closure, min, extent),
      },
    });
    loaded.instance = instance;
    loaded.tasks = request.abi.tasks.map((task) => instance.exports[task.export] as Loaded["tasks"][number]);
    pipelines.set(request.pipelineId, loaded);
    reply({ type: "loaded", pipelineId: request.pipelineId, ms: performance.now() - started });
  } catch (error) {
    reply({ type: "load-error", pipelineId: request.pipelineId, message: describeError(error) });
  }
}

/** The part of `done` that does not depend on where the buffers came from. */
interface Executed {
  status: number;
  errorArgs: number[];
  execute: number;
}

/** Calls `run` on an argument block already in memory, helpers joining its loops. */
function execute(loaded: Loaded, helpers: number): Executed {
  const { abi, memory } = loaded;
  loaded.helpers = helpers;
  loaded.trap = null;
  loaded.iterations = 0;
  const started = performance.now();
  let status: number;
  try {
    status = (loaded.instance.exports.run as (argsPtr: number) => number)(ARGS_OFFSET);
  } catch (error) {
    loaded.trap ??= `the pipeline trapped: ${describeError(error)}`;
    status = TRAP_STATUS;
  } finally {
    releaseHelpers(loaded);
  }
  const executeMs = performance.now() - started;
  const errorArgs: number[] = [];
  if (status > 0) {
    // memory.buffer may have been replaced by a grow during the run.
    const view = new DataView(memory.buffer, ARGS_OFFSET);
    const count = abi.asserts[status - 1]?.argTypes.length ?? 0;
    for (let i = 0; i < Math.min(count, abi.maxErrorArgs); i++) {
      errorArgs.push(view.getInt32(abi.errorArgsOffset + 4 * i, true));
    }
  }
  return { status, errorArgs, execute: executeMs };
}

/** A run on a memory only this worker holds: lay out, copy in, run, copy out. */
function run(request: Extract<ExecRequest, { type: "run" }>): void {
  const loaded = pipelines.get(request.pipelineId);
  if (!loaded) {
    reply({ type: "run-error", runId: request.runId, message: `pipeline ${request.pipelineId} is not loaded` });
    return;
  }
  const { abi, memory } = loaded;
  const t0 = performance.now();
  const layout = planLayout(abi.argsSize, request.buffers);
  if (!layout) {
    const bytes = request.buffers.reduce((sum, b) => sum + b.elements * b.elementBytes, 0);
    reply({
      type: "run-error",
      runId: request.runId,
      message: `the inputs and outputs need ${bytes} bytes, more than the 4 GiB a wasm32 memory can hold`,
    });
    return;
  }
  try {
    ensureMemory(memory, layout.bytesNeeded);
  } catch (error) {
    reply({
      type: "run-error",
      runId: request.runId,
      message: `could not grow memory to ${layout.bytesNeeded} bytes: ${describeError(error)}`,
    });
    return;
  }
  writeArguments(memory, abi, request.buffers, layout, request.params);
  const bytes = new Uint8Array(memory.buffer);
  request.buffers.forEach((buffer, i) => {
    if (buffer.bytes) bytes.set(buffer.bytes, layout.bases[i] + (buffer.byteOffset ?? 0));
  });
  const copyIn = performance.now() - t0;
  const executed = execute(loaded, request.helpers);
  const t2 = performance.now();
  const outputs: Uint8Array[] = [];
  if (executed.status === 0) {
    request.buffers.forEach((buffer, i) => {
      if (abi.buffers[buffer.index].role !== "output") return;
      const size = buffer.elements * buffer.elementBytes;
      // A fresh view: the module may have grown the memory.
      outputs.push(new Uint8Array(memory.buffer, layout.bases[i], size).slice());
    });
  }
  reply(
    {
      type: "done",
      runId: request.runId,
      status: executed.status,
      errorArgs: executed.errorArgs,
      outputs,
      trap: loaded.trap,
      iterations: loaded.iterations,
      timings: { copyIn, execute: executed.execute, copyOut: performance.now() - t2 },
    },
    outputs.map((output) => output.buffer),
  );
}

/**
 * The bounds query: writes the argument block as `run` would see it (the
 * buffers' addresses are never read) and calls the module's `query`.
 */
function query(request: Extract<ExecRequest, { type: "query" }>): void {
  const loaded = pipelines.get(request.pipelineId);
  const slots = loaded?.abi.regionSlots;
  const query = loaded?.instance.exports.query as ((argsPtr: number) => number) | undefined;
  let regions: [number, number][] | null = null;
  if (loaded && slots && query) {
    const layout = planLayout(loaded.abi.argsSize, request.buffers.map((b) => ({ ...b, elements: 0 })));
    if (layout) {
      try {
        ensureMemory(loaded.memory, layout.bytesNeeded);
        writeArguments(loaded.memory, loaded.abi, request.buffers, layout, request.params);
        if (query(ARGS_OFFSET) === 0) {
          const view = new DataView(loaded.memory.buffer, ARGS_OFFSET);
          regions = slots.map((slot) => [view.getInt32(slot.offset, true), view.getInt32(slot.offset + 4, true)]);
        }
      } catch {
        // No regions: the caller sends whole inputs.
        regions = null;
      }
    }
  }
  reply({ type: "regions", runId: request.runId, regions });
}

/**
 * When this worker last replied to a run on shared memory (its
 * `performance.now()`), for the gaps that `pollBetweenRuns: "auto"`
 * measures; -Infinity before its first.
 */
let lastReply = -Infinity;

/** How long a worker listens for the next run after one: spinning, then parked. */
interface Listening {
  spinMs: number;
  /** Until this long after the reply, parked in `Atomics.wait` on the idle word. */
  parkMs: number;
}

/**
 * When the run asked for it, marks this worker as listening for the next
 * run of `loaded` (see `Idle` in layout.ts) and says how; it must be
 * called before the worker replies. `gapMs` is how long this worker waited
 * between its last reply and this run (see `autoPollMs`). Null where it
 * does not listen (no polling asked, a memory that is not shared, or a
 * worker without an idle word).
 */
function listen(loaded: Loaded, worker: number, gapMs: number): Listening | null {
  if (!(loaded.memory.buffer instanceof SharedArrayBuffer) || worker >= IDLE_WORKERS) return null;
  const ctl = control(loaded);
  const capMs = Atomics.load(ctl, Control.pollMicros) / 1000;
  const auto = Atomics.load(ctl, Control.pollAuto) !== 0;
  const spins = worker < Atomics.load(ctl, Control.pollSpinners);
  const listening = auto
    ? { spinMs: spins ? autoPollMs(gapMs, capMs) : 0, parkMs: AUTO_PARK_MS }
    : { spinMs: capMs, parkMs: 0 };
  if (listening.spinMs <= 0 && listening.parkMs <= 0) return null;
  Atomics.store(idleWords(loaded.memory), worker, Idle.listening);
  return listening;
}

/**
 * Listens on this worker's idle word after `listen`: polls it for
 * `spinMs`, then sleeps on it (`Atomics.wait`, no CPU) until `parkMs`
 * after the start; the main thread notifies the word when it changes it.
 * Returns the run the main thread called it to (its id from the control
 * block), or null when the time is up or the main thread released the
 * worker.
 */
function nextRun(loaded: Loaded, worker: number, { spinMs, parkMs }: Listening): number | null {
  const idle = idleWords(loaded.memory);
  const started = performance.now();
  let state: number = Atomics.load(idle, worker);
  for (let polls = 1; state === Idle.listening; polls++) {
    // Reading the clock costs more than a poll: look at it now and then.
    if ((polls & 255) === 0 && performance.now() - started > spinMs) break;
    state = Atomics.load(idle, worker);
  }
  while (state === Idle.listening) {
    const left = started + parkMs - performance.now();
    if (left <= 0) {
      state = Atomics.compareExchange(idle, worker, Idle.listening, Idle.away);
      if (state === Idle.listening) return null;
      break;
    }
    Atomics.wait(idle, worker, Idle.listening, left);
    state = Atomics.load(idle, worker);
  }
  Atomics.store(idle, worker, Idle.away);
  return state === Idle.run ? Atomics.load(control(loaded), Control.runId) : null;
}

/**
 * A run whose arguments and inputs the main thread wrote into shared
 * memory; then, while the main thread calls them, the next runs of the
 * same pipeline, without a message each.
 */
function runInPlace(request: Extract<ExecRequest, { type: "run-in-place" }>): void {
  let runId: number | null = request.runId;
  let helpers = request.helpers;
  let gapMs = performance.now() - lastReply;
  while (runId !== null) {
    const loaded = pipelines.get(request.pipelineId);
    if (!loaded) {
      reply({ type: "run-error", runId, message: `pipeline ${request.pipelineId} is not loaded` });
      return;
    }
    const executed = execute(loaded, helpers);
    const listening = listen(loaded, request.worker, gapMs);
    lastReply = performance.now();
    reply({
      type: "done",
      runId,
      status: executed.status,
      errorArgs: executed.errorArgs,
      outputs: [],
      trap: loaded.trap,
      iterations: loaded.iterations,
      timings: { copyIn: 0, execute: executed.execute, copyOut: 0 },
    });
    runId = listening ? nextRun(loaded, request.worker, listening) : null;
    if (runId !== null) {
      helpers = Atomics.load(control(loaded), Control.helpers);
      gapMs = performance.now() - lastReply;
    }
  }
}

/** A helper's part of a run, and of the next runs it is called to (as `runInPlace`). */
function join(request: Extract<ExecRequest, { type: "join" }>): void {
  let runId: number | null = request.runId;
  let gapMs = performance.now() - lastReply;
  while (runId !== null) {
    const loaded = pipelines.get(request.pipelineId);
    if (loaded) {
      loaded.trap = null;
      loaded.iterations = 0;
      helpLoop(loaded);
    }
    const listening = loaded ? listen(loaded, request.worker, gapMs) : null;
    lastReply = performance.now();
    reply({ type: "left", runId, trap: loaded?.trap ?? null, iterations: loaded?.iterations ?? 0 });
    runId = loaded && listening ? nextRun(loaded, request.worker, listening) : null;
    gapMs = performance.now() - lastReply;
  }
}

port.onMessage((request: ExecRequest) => {
  switch (request.type) {
    case "load":
      return load(request);
    case "unload":
      pipelines.delete(request.pipelineId);
      return;
    case "run":
      return run(request);
    case "run-in-place":
      return runInPlace(request);
    case "join":
      return join(request);
    case "query":
      return query(request);
  }
});
reply({ type: "ready" });
