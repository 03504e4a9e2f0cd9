// The public runtime: compiles Argent programs in a worker, loads the
// generated modules on the execution pool, and runs them.

import type { CompilerReply, CompilerRequest } from "./compiler-worker.js";
import { ArgentCompileError, ArgentRunError } from "./errors.js";
import {
  TYPE_BYTES,
  arrayTypeFor,
  checkInputType,
  toPlainImage,
  type ImageSource,
  type OutputImage,
  type PixelArray,
  type PlainImage,
} from "./images.js";
import {
  AUTO_POLL_CAP_MS,
  MAX_MEMORY_BYTES,
  PAGE_BYTES,
  TRAP_STATUS,
  buffersStart,
  ensureMemory,
  planLayout,
  resetControl,
  writeArguments,
} from "./layout.js";
import { ResidentRegion, type ResidentBlock } from "./resident.js";
import { defaultThreadCount, sharedMemoryAvailable, simdAvailable, startWorker, type WorkerHandle } from "./platform.js";
import { Pool } from "./pool.js";
import type {
  Abi,
  CheckResponse,
  CompileResponse,
  Diagnostic,
  ExecReply,
  InputDescription,
  OutputDescription,
  ParamDescription,
  PipelineDescription,
  RunBuffer,
  ScalarType,
} from "./protocol.js";

/** Options of `createRuntime`. */
export interface RuntimeOptions {
  /**
   * Threads to run parallel loops on (the driver included). Defaults to
   * the core count. Without shared memory the runtime runs on one thread.
   */
  threads?: number;
  /** Set to false to compile scalar code even where SIMD128 exists. */
  simd?: boolean;
  /**
   * Set to false to run as if SharedArrayBuffer were unavailable (as on a
   * page that is not cross-origin isolated): several threads then run in
   * "tiles" mode. Defaults to whether shared memory can be used.
   */
  sharedMemory?: boolean;
  /**
   * Where the worker scripts live, for bundlers that move them. Defaults to
   * the directory of this module.
   */
  workerBaseUrl?: URL | string;
  /**
   * How the execution workers wait for the next run after a run on shared
   * memory, so that the next run of the same pipeline starts without a
   * message through their event loops (waking a worker by message costs
   * 0.05-0.6 ms on a virtual machine, and more when its core went idle):
   * "auto" (the default), or a number of milliseconds from 0 to 1000 to
   * poll after every run.
   *
   * "auto": each worker sleeps on a word of shared memory (`Atomics.wait`,
   * no CPU) for 50 ms after a run, and the next run wakes it with
   * `Atomics.notify` instead of a message. When runs come back to back the
   * workers poll first (one fewer than the cores, so that the main thread
   * keeps one): each measures the gap between its reply to a run and the
   * call to the next, and after a gap of at most 2 ms polls for three
   * times that gap plus a quarter of a millisecond (at most 2 ms) before
   * it sleeps. Back to back on a 2-core virtual machine a 64x64 blur took
   * 0.080 ms a run instead of 0.106 on 1 thread, and a 3072x2048 u16
   * gaussian 2.44 ms instead of 2.70 on 2 (`bench/poll-ab.mjs`). A caller
   * that runs now and then never makes the workers poll, and the last run
   * of a batch costs at most 2 ms of CPU per polling worker.
   *
   * A number polls that long after every run, whatever the gaps: its cost
   * is up to that much CPU time per worker after every run, taken from
   * whatever else wants the cores. 0 neither polls nor sleeps on shared
   * memory: workers go back to their event loops at once.
   */
  pollBetweenRuns?: number | "auto";
}

/** Options of `Runtime.compile`. */
export interface CompileOptions {
  /** Override the runtime's SIMD choice for this pipeline. */
  simd?: boolean;
  /**
   * Testing aid: replace the program's schedule by the compiler's seeded
   * random valid schedule; its text is then in `pipeline.randomSchedule`.
   */
  randomSchedule?: number;
  /**
   * With `randomSchedule`: draw the schedule as the compiler's random
   * schedule checks do (`seeded_schedule`): mutations of the program's own
   * schedule, or a fully random one for even seeds of small pipelines.
   */
  mutate?: boolean;
  /**
   * Validate the generated module with wasmparser before returning it (a
   * compiler bug then surfaces as an internal compiler error rather than
   * as the engine's compile error). Off by default: the engine validates
   * every module it compiles anyway.
   */
  validate?: boolean;
}

/**
 * How the runtime executes pipelines: "threads" runs parallel loops on
 * workers sharing one memory; "tiles" (no SharedArrayBuffer) splits the
 * output into horizontal strips, each computed by its own worker in its own
 * memory from a copy of the inputs; "single" runs on one worker.
 */
export type ExecutionMode = "threads" | "tiles" | "single";

/** Compile-time measurements in milliseconds. */
export interface CompileTimings {
  /** Inside the compiler: parsing and checking, lowering, code generation. */
  parse: number;
  lower: number;
  codegen: number;
  /** Source to module bytes, as the page sees it (includes the worker round trip). */
  toBytes: number;
  /**
   * Source to module bytes inside the compiler worker: `toBytes` without
   * the messages to and from the worker.
   */
  inCompiler: number;
  /** `WebAssembly.compile` of the generated bytes. */
  engineCompile: number;
  /** Instantiating the module on every execution worker. */
  instantiate: number;
  /** Everything, from the call to a usable pipeline. */
  total: number;
}

/**
 * Run-time measurements in milliseconds. `total = execute + marshal +
 * overhead`: benchmarks report `execute` (the kernel, comparable to a
 * native library call) and `total` (what a caller waits for).
 */
export interface RunTimings {
  /**
   * Laying out the buffers and copying the inputs into the module's memory
   * (on the main thread with shared memory; otherwise the main thread's
   * copy for the transfer plus the driver's copy into its memory).
   */
  copyIn: number;
  /** The generated code itself (`run`, on all threads), timed inside the driver worker. */
  execute: number;
  /** Copying the outputs out of the module's memory into the arrays `run` returns. */
  copyOut: number;
  /** `copyIn + copyOut`: all the copying of pixels between the caller's arrays and the module's memory. */
  marshal: number;
  /**
   * `total - execute - marshal`: checking the request, messages to and
   * from the workers, waking the helpers, and waiting behind earlier runs.
   */
  overhead: number;
  /** From the call to the resolved promise (includes waiting in the queue). */
  total: number;
}

/** Fills in the derived fields of `RunTimings`. */
function runTimings(copyIn: number, execute: number, copyOut: number, total: number): RunTimings {
  const marshal = copyIn + copyOut;
  return { copyIn, execute, copyOut, marshal, overhead: Math.max(0, total - execute - marshal), total };
}

/** How the work of one run was spread over threads. */
export interface RunStats {
  /**
   * Parallel-loop iterations each thread ran: the driver first, then each
   * helper (in tiles mode, one entry per worker that computed a strip).
   */
  iterationsPerThread: number[];
  /**
   * Tiles mode: the input bytes sent to each strip's worker, only the rows
   * its strip reads (from the module's bounds query). Absent otherwise.
   */
  inputBytesPerThread?: number[];
  /**
   * Shared memory: how many of the run's workers were still listening
   * after the previous run (`RuntimeOptions.pollBetweenRuns`; by default
   * asleep on shared memory for 50 ms, or polling after runs back to back)
   * and were called through shared memory rather than by a message.
   * Absent otherwise.
   */
  workersCalled?: number;
}

/** What `Pipeline.run` takes. */
export interface RunRequest {
  /** One image per pipeline input, by name. */
  inputs: Record<string, ImageSource>;
  /** Parameter values by name; missing ones take their declared default. */
  params?: Record<string, number | boolean>;
  /**
   * The region to compute. Defaults to the first input's width and height;
   * 3-D outputs default to the channel count of the first 3-D input, or 3.
   */
  outputSize?: { width: number; height: number; channels?: number };
  /**
   * Arrays to write outputs into, by name, instead of new ones: reuse them
   * across runs, or pass an `ImageData`'s `data` for a u8 RGBA output. Each
   * must be of the output's element type (a `Uint8ClampedArray` also takes
   * a u8 output) and hold exactly `width * height * channels` values. The
   * result's `data` is then that array; a failed run leaves it untouched,
   * except a resident image's (`Pipeline.allocateImage`), which the run
   * writes in place: a failed run may leave some of it written.
   */
  into?: Record<string, PixelArray>;
  /**
   * Cancels the run (for example when a slider moved on, or after a time
   * limit: `AbortSignal.timeout(ms)`). A run that has not started rejects at
   * once; a running one stops where it is: its workers are terminated, so
   * nothing waits for the generated code to reach a check, and the next run
   * starts fresh workers and instantiates its pipeline again (tens of
   * milliseconds, once). Either way the run rejects with an
   * `ArgentRunError` of kind `"aborted"` and writes no output.
   */
  signal?: AbortSignal;
}

/**
 * An image in one pipeline's memory, from `Pipeline.allocateImage`. Runs of
 * that pipeline read it in place when it (or its `data`) is an input, and
 * write an output straight into it when its `data` is in
 * `RunRequest.into`: no pixels are copied. Write its pixels only while no
 * run of the pipeline is in progress; other pipelines copy it as any array.
 */
export interface ResidentImage extends OutputImage {
  /**
   * False where the pipeline has no shared memory (tiles mode, or no
   * SharedArrayBuffer): `data` is then an ordinary array, which runs copy
   * in and out as any other. The image works the same either way.
   */
  readonly resident: boolean;
  /**
   * Gives the image's memory back to the pipeline once the runs queued
   * before this call are done. Runs asked for afterwards reject the image
   * (`bad-input`); do not use `data` after this.
   */
  release(): Promise<void>;
}

/** What `Pipeline.run` resolves to. */
export interface RunResult {
  /** One interleaved image per pipeline output, by name. */
  outputs: Record<string, OutputImage>;
  timings: RunTimings;
  stats: RunStats;
}

let nextPipelineId = 1;
let nextRunId = 1;
let nextCompileId = 1;

/** Joins a tagged template's pieces into source text. */
export function argent(strings: TemplateStringsArray | string[], ...values: unknown[]): string {
  let text = strings[0];
  for (let i = 0; i < values.length; i++) text += String(values[i]) + strings[i + 1];
  return text;
}

function isTemplate(value: unknown): value is TemplateStringsArray {
  return Array.isArray(value) && "raw" in (value as object);
}

/** Creates a runtime: one compiler worker plus a pool of execution workers. */
export async function createRuntime(options: RuntimeOptions = {}): Promise<Runtime> {
  const cores = await defaultThreadCount();
  const requested = options.threads ?? cores;
  if (!Number.isInteger(requested) || requested < 1) {
    throw new RangeError(`threads must be a positive integer, got ${options.threads}`);
  }
  const poll = options.pollBetweenRuns ?? "auto";
  if (poll !== "auto" && (typeof poll !== "number" || !(poll >= 0 && poll <= 1000))) {
    throw new RangeError(
      `pollBetweenRuns must be "auto" or a number of milliseconds from 0 to 1000, got ${options.pollBetweenRuns}`,
    );
  }
  const shared = options.sharedMemory !== false && sharedMemoryAvailable();
  const mode: ExecutionMode = requested === 1 ? "single" : shared ? "threads" : "tiles";
  const reason =
    mode === "threads"
      ? `${requested} threads on shared memory`
      : mode === "single"
        ? "one thread requested"
        : `no SharedArrayBuffer (the page is not cross-origin isolated): the output is split into strips computed by ${requested} workers, each in its own memory`;
  const base = new URL(options.workerBaseUrl?.toString() ?? "./", import.meta.url);
  const runtime = new Runtime(requested, mode, reason, shared, options.simd !== false && simdAvailable(), base, poll, cores);
  // Start loading the compiler now so the first compile does not wait for
  // it; a failure here surfaces from that compile.
  runtime.warmUp();
  return runtime;
}

/** Compiles and runs Argent pipelines. Create with `createRuntime`. */
export class Runtime {
  /** Threads (workers) used per run (1 in single-threaded mode). */
  readonly threads: number;
  readonly mode: ExecutionMode;
  /** Why this mode was chosen. */
  readonly modeReason: string;
  /**
   * Whether generated modules run on a shared memory. Then the main thread
   * writes inputs straight into the module's memory and reads outputs from
   * it (also with one thread); otherwise they travel to the driver worker
   * as transferred copies.
   */
  readonly sharedMemory: boolean;
  /** Whether generated code uses SIMD128. */
  readonly simd: boolean;
  /**
   * `RuntimeOptions.pollBetweenRuns`: milliseconds workers poll after a run
   * on shared memory, or "auto" (only when runs come back to back).
   */
  readonly pollBetweenRuns: number | "auto";
  private readonly baseUrl: URL;
  /** @internal The machine's cores (`pollBetweenRuns: "auto"` polls on one fewer). */
  readonly cores: number;
  private compiler: Promise<WorkerHandle> | null = null;
  private compilerGeneration = 0;
  /** Compile and check requests made so far (a warm-up waits for none). */
  private compilesAsked = 0;
  /**
   * @internal What the compiler worker's warm-up did, once it is done: its
   * milliseconds, the rounds it ran (it stops at the first request) and
   * how many of them compiled.
   */
  compilerWarmUp: { ms: number; compiled: number; rounds: number } | null = null;
  private compilerWaiters = new Map<number, { resolve: (reply: CompilerReply) => void; reject: (error: Error) => void }>();
  private pool: Pool | null = null;
  /** Runs execute one at a time, in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private pipelines = new Set<Pipeline>();

  /** @internal */
  constructor(
    threads: number,
    mode: ExecutionMode,
    modeReason: string,
    sharedMemory: boolean,
    simd: boolean,
    baseUrl: URL,
    pollBetweenRuns: number | "auto" = "auto",
    cores = 1,
  ) {
    this.threads = threads;
    this.cores = cores;
    this.pollBetweenRuns = pollBetweenRuns;
    this.mode = mode;
    this.modeReason = modeReason;
    this.sharedMemory = sharedMemory;
    this.simd = simd;
    this.baseUrl = baseUrl;
  }

  private checkAlive(): void {
    if (this.disposed) throw new ArgentRunError("disposed", "this runtime has been disposed");
  }

  private startCompiler(): Promise<WorkerHandle> {
    this.compiler ??= (async () => {
      // Errors from a worker that has since been replaced must not touch
      // its successor's state.
      const generation = ++this.compilerGeneration;
      const worker = await startWorker(new URL("compiler-worker.js", this.baseUrl));
      const ready = new Promise<void>((resolve, reject) => {
        worker.onError((error) => {
          if (generation !== this.compilerGeneration) return;
          const failure = new Error(`the compiler worker failed: ${error.message}`);
          reject(failure);
          for (const waiter of this.compilerWaiters.values()) waiter.reject(failure);
          this.compilerWaiters.clear();
          this.compiler = null;
        });
        worker.onMessage((reply: CompilerReply) => {
          if (reply.type === "ready") resolve();
          else if (reply.type === "init-error") reject(new Error(`could not load the compiler: ${reply.message}`));
          else if (reply.type === "warmed-up") this.compilerWarmUp = { ms: reply.ms, compiled: reply.compiled, rounds: reply.rounds };
          else {
            const waiter = this.compilerWaiters.get(reply.id);
            this.compilerWaiters.delete(reply.id);
            waiter?.resolve(reply);
          }
        });
      });
      worker.setBusy(true);
      try {
        await ready;
      } finally {
        worker.setBusy(false);
      }
      // Nobody is waiting for a compile yet: warm the compiler up with the
      // options compiles will use (a compile asked for meanwhile goes
      // first, and waits for one warm-up round at most after that).
      if (this.compilesAsked === 0) {
        worker.post({
          type: "warm-up",
          options: JSON.stringify({ simd: this.simd, threads: this.sharedMemory }),
        } satisfies CompilerRequest);
      }
      return worker;
    })();
    return this.compiler;
  }

  /** @internal Starts the compiler worker without waiting for it. */
  warmUp(): void {
    this.startCompiler().catch(() => undefined);
  }

  private async askCompiler(request: Exclude<CompilerRequest, { type: "warm-up" }>): Promise<CompilerReply> {
    this.compilesAsked++;
    const worker = await this.startCompiler();
    const reply = await new Promise<CompilerReply>((resolve, reject) => {
      this.compilerWaiters.set(request.id, { resolve, reject });
      worker.setBusy(true);
      worker.post(request);
    }).finally(() => {
      if (this.compilerWaiters.size === 0) worker.setBusy(false);
    });
    if (reply.type === "failed") {
      // A panic leaves the compiler's instance in an unknown state: start a
      // fresh worker for the next request.
      if (this.compiler) {
        this.compiler = null;
        this.compilerGeneration++;
        worker.terminate();
      }
    }
    return reply;
  }

  /** The execution pool, started (or restarted after a failure) on demand. */
  /** @internal */
  async ensurePool(): Promise<Pool> {
    this.checkAlive();
    if (!this.pool || this.pool.broken) {
      this.pool = new Pool(this.threads, new URL("exec-worker.js", this.baseUrl));
    }
    const pool = this.pool;
    await pool.ready;
    return pool;
  }

  /**
   * Compiles a program: `compile(source, options)` or as a tagged template,
   * ``compile`input u8 in(x, y) ...` ``. Rejects with `ArgentCompileError`
   * (with structured diagnostics) when the program is wrong.
   */
  async compile(source: string | TemplateStringsArray, ...rest: unknown[]): Promise<Pipeline> {
    this.checkAlive();
    // Loading the compiler happens once per runtime; it is not part of
    // the time to compile a program.
    await this.startCompiler();
    const started = performance.now();
    const text = isTemplate(source) ? argent(source, ...rest) : source;
    const options = (isTemplate(source) ? {} : (rest[0] ?? {})) as CompileOptions;
    const simd = this.simd && options.simd !== false;
    // Single-threaded runs use shared memory too where it exists: the
    // generated code is the same (its parallel loops run serially), and
    // inputs and outputs then need no copy through a message.
    const threads = this.sharedMemory;
    const reply = await this.askCompiler({
      type: "compile",
      id: nextCompileId++,
      source: text,
      // Only the options set are sent (the compiler rejects unknown ones).
      options: JSON.stringify({
        simd,
        threads,
        ...(options.randomSchedule === undefined ? {} : { randomSchedule: options.randomSchedule }),
        ...(options.mutate ? { mutate: true } : {}),
        ...(options.validate ? { validate: true } : {}),
      }),
    });
    const toBytes = performance.now() - started;
    if (reply.type === "failed") throw new Error(`internal compiler error: ${reply.message}`);
    if (reply.type !== "compiled") throw new Error(`unexpected compiler reply ${reply.type}`);
    const response = JSON.parse(reply.json) as CompileResponse;
    if (response.status === "error") {
      throw new ArgentCompileError(response.phase, response.diagnostics, response.rendered);
    }
    const pipeline = await this.load({ wasm: reply.wasm, abi: response.abi as Abi, pipeline: response.pipeline, simd });
    pipeline.randomSchedule = response.schedule;
    pipeline.timings = {
      ...pipeline.timings,
      parse: response.timings.parse,
      lower: response.timings.lower,
      codegen: response.timings.codegen,
      toBytes,
      inCompiler: reply.ms,
      total: performance.now() - started,
    };
    return pipeline;
  }

  /**
   * Loads an already generated module (e.g. one cached from an earlier
   * `compile`: `pipeline.wasm` and `pipeline.abi`). The ABI must have been
   * generated with shared memory only if the runtime has it
   * (`runtime.sharedMemory`); a module without shared memory runs on one
   * worker.
   */
  async load(compiled: { wasm: Uint8Array; abi: Abi; pipeline: PipelineDescription; simd?: boolean }): Promise<Pipeline> {
    this.checkAlive();
    const started = performance.now();
    if (compiled.abi.sharedMemory && !this.sharedMemory) {
      throw new Error("this module needs shared memory, but the runtime runs without it");
    }
    const module = await WebAssembly.compile(compiled.wasm as Uint8Array<ArrayBuffer>);
    const engineCompile = performance.now() - started;
    this.checkAlive();
    const pipeline = new Pipeline(this, compiled.abi, compiled.pipeline, module, compiled.wasm, compiled.simd ?? this.simd);
    const instantiate = await pipeline.load();
    this.pipelines.add(pipeline);
    pipeline.timings = { parse: 0, lower: 0, codegen: 0, toBytes: 0, inCompiler: 0, engineCompile, instantiate, total: performance.now() - started };
    return pipeline;
  }

  /** Parses and checks a program, resolving to its diagnostics (empty when fine). */
  async check(source: string): Promise<{ diagnostics: Diagnostic[]; rendered: string }> {
    this.checkAlive();
    const reply = await this.askCompiler({ type: "check", id: nextCompileId++, source });
    if (reply.type === "failed") throw new Error(`internal compiler error: ${reply.message}`);
    if (reply.type !== "checked") throw new Error(`unexpected compiler reply ${reply.type}`);
    return JSON.parse(reply.json) as CheckResponse;
  }

  /** @internal Runs `job` after every earlier run has finished. */
  enqueue<T>(job: () => Promise<T>): Promise<T> {
    const result = this.queue.then(job, job);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** @internal */
  forget(pipeline: Pipeline): void {
    this.pipelines.delete(pipeline);
  }

  /** Stops every worker. Later calls on the runtime or its pipelines reject. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const pipeline of this.pipelines) pipeline.markDisposed();
    this.pipelines.clear();
    this.pool?.fail(new ArgentRunError("disposed", "this runtime has been disposed"));
    this.pool = null;
    const compiler = this.compiler;
    this.compiler = null;
    this.compilerGeneration++;
    for (const waiter of this.compilerWaiters.values()) waiter.reject(new Error("this runtime has been disposed"));
    this.compilerWaiters.clear();
    void compiler?.then((worker) => worker.terminate(), () => undefined);
  }

  /** @internal */
  get isDisposed(): boolean {
    return this.disposed;
  }
}

function dimName(dims: string[], dim: number): string {
  return dims[dim] ?? `dimension ${dim}`;
}

function decodeArg(word: number, type: ScalarType | undefined): number {
  if (type === "f32") return new Float32Array(new Int32Array([word]).buffer)[0];
  if (type === "u32") return word >>> 0;
  return word;
}

/** Checks a parameter value against its declared type and encodes it as an i32 word. */
function encodeParam(param: ParamDescription, value: unknown): number {
  const fail = (why: string) => new ArgentRunError("bad-param", `param \`${param.name}\` is ${param.type}: ${why}`);
  if (param.type === "bool") {
    if (typeof value !== "boolean") throw fail(`expected true or false, got ${typeof value} ${String(value)}`);
    return value ? 1 : 0;
  }
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw fail(`expected a finite number, got ${typeof value} ${String(value)}`);
  }
  if (param.type === "f32") return new Int32Array(new Float32Array([value]).buffer)[0];
  if (!Number.isInteger(value)) throw fail(`expected an integer, got ${value}`);
  const bits = TYPE_BYTES[param.type] * 8;
  const signed = param.type.startsWith("i");
  const lo = signed ? -(2 ** (bits - 1)) : 0;
  const hi = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
  if (value < lo || value > hi) throw fail(`${value} does not fit (${lo} .. ${hi})`);
  return value | 0;
}

/**
 * Copies each input's bytes into an ArrayBuffer of its own, so the run
 * message can transfer it (a structured clone would copy twice, and the
 * caller's arrays must stay usable).
 */
function transferableBuffers(buffers: RunBuffer[]): { buffers: RunBuffer[]; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const copies = buffers.map((buffer) => {
    if (!buffer.bytes) return buffer;
    const bytes = buffer.bytes.slice();
    transfer.push(bytes.buffer);
    return { ...buffer, bytes };
  });
  return { buffers: copies, transfer };
}

/** The bytes of the caller's output array, or a new array of `size` bytes. */
function outputBytesFor(into: PixelArray | null, size: number): Uint8Array {
  return into ? new Uint8Array(into.buffer, into.byteOffset, size) : new Uint8Array(size);
}

/** A compiled pipeline. Runs are queued: one at a time per runtime, in call order. */
export class Pipeline {
  readonly inputs: InputDescription[];
  readonly outputs: OutputDescription[];
  readonly params: ParamDescription[];
  /** The generated WebAssembly module's bytes. */
  readonly wasm: Uint8Array;
  /** Whether this pipeline's code uses SIMD128. */
  readonly simd: boolean;
  /** Compile-time measurements. */
  timings!: CompileTimings;
  /** The random schedule it was compiled with (`CompileOptions.randomSchedule`), one directive a line. */
  randomSchedule?: string;
  private readonly runtime: Runtime;
  /** How to call the generated module (argent-wasm's ABI). */
  readonly abi: Abi;
  private readonly module: WebAssembly.Module;
  private readonly id = nextPipelineId++;
  private memory: WebAssembly.Memory | null = null;
  private loadedIn: Pool | null = null;
  private disposed = false;
  /** Where resident images live in `memory` (created with the first one). */
  private residentRegion: ResidentRegion | null = null;
  /** The block of each live resident image, by its `data`. */
  private residentBlocks = new WeakMap<PixelArray, ResidentBlock>();
  /** The `data` of released resident images, so that runs can name the mistake. */
  private releasedArrays = new WeakSet<PixelArray>();

  /** @internal */
  constructor(
    runtime: Runtime,
    abi: Abi,
    description: PipelineDescription,
    module: WebAssembly.Module,
    wasm: Uint8Array,
    simd: boolean,
  ) {
    this.runtime = runtime;
    this.inputs = description.inputs;
    this.outputs = description.outputs;
    this.params = description.params;
    this.abi = abi;
    this.module = module;
    this.wasm = wasm;
    this.simd = simd;
  }

  /** The execution mode of the runtime that compiled this pipeline. */
  get mode(): ExecutionMode {
    return this.runtime.mode;
  }

  /** The number of threads a run uses. */
  get threads(): number {
    return this.runtime.threads;
  }

  /** The workers this pipeline is instantiated on. */
  private workerCount(pool: Pool): number {
    return this.abi.sharedMemory || this.runtime.mode === "tiles" ? pool.size : 1;
  }

  /** @internal Instantiates the module on every worker; resolves to the slowest time. */
  async load(): Promise<number> {
    const pool = await this.runtime.ensurePool();
    if (this.loadedIn === pool) return 0;
    // Shared memory: the main thread creates it and every worker uses it.
    // It outlives a pool (new workers after an aborted run load the module
    // on the same memory), so resident images stay where they are. Without
    // shared memory the driver makes its own.
    this.memory = this.abi.sharedMemory
      ? (this.memory ?? new WebAssembly.Memory({ initial: 32, maximum: MAX_MEMORY_BYTES / PAGE_BYTES, shared: true }))
      : null;
    const workers = this.workerCount(pool);
    const replies = await Promise.all(
      Array.from({ length: workers }, (_, worker) => {
        const reply = pool.expect(
          worker,
          (r) => (r.type === "loaded" || r.type === "load-error") && r.pipelineId === this.id,
        );
        pool.post(worker, { type: "load", pipelineId: this.id, module: this.module, memory: this.memory, abi: this.abi });
        return reply;
      }),
    );
    let slowest = 0;
    for (const reply of replies) {
      if (reply.type === "load-error") throw new Error(`could not instantiate the generated module: ${reply.message}`);
      if (reply.type === "loaded") slowest = Math.max(slowest, reply.ms);
    }
    this.loadedIn = pool;
    return slowest;
  }

  private prepare(request: RunRequest): {
    buffers: RunBuffer[];
    params: [number, number][];
    outputs: PlainImage[];
    /** Per output (in `outputs` order), the caller's array from `into`, if any. */
    into: (PixelArray | null)[];
    /** Per buffer (in `buffers` order): the input's array, or the output's `into` array. */
    sources: (PixelArray | null)[];
  } {
    if (!request || typeof request !== "object" || typeof request.inputs !== "object") {
      throw new ArgentRunError("bad-input", "run expects { inputs: { name: image, ... }, params?, outputSize? }");
    }
    for (const name of Object.keys(request.inputs)) {
      if (!this.inputs.some((input) => input.name === name)) {
        throw new ArgentRunError(
          "bad-input",
          `unknown input \`${name}\`; this pipeline's inputs are ${this.inputs.map((i) => `\`${i.name}\``).join(", ") || "none"}`,
        );
      }
    }
    const images = new Map<string, PlainImage>();
    for (const input of this.inputs) {
      const source = request.inputs[input.name];
      if (source === undefined) throw new ArgentRunError("bad-input", `missing input \`${input.name}\``);
      const image = toPlainImage(source, input.name);
      checkInputType(image, input.type, input.name);
      if (input.dims.length === 2 && image.channels !== 1) {
        throw new ArgentRunError(
          "bad-input",
          `input \`${input.name}\` has dimensions (${input.dims.join(", ")}) and takes 1-channel images, ` +
            `but the image has ${image.channels} channels`,
        );
      }
      if (input.dims.length > 3) {
        throw new ArgentRunError(
          "bad-input",
          `input \`${input.name}\` has ${input.dims.length} dimensions; images map only to 1 to 3`,
        );
      }
      images.set(input.name, image);
    }
    const first = images.values().next().value as PlainImage | undefined;
    const size = request.outputSize ?? (first ? { width: first.width, height: first.height } : undefined);
    if (!size) throw new ArgentRunError("bad-input", "this pipeline has no inputs, so run needs an outputSize");
    for (const [field, value] of [["width", size.width], ["height", size.height], ["channels", size.channels ?? 1]] as const) {
      if (!Number.isInteger(value) || value <= 0) {
        throw new ArgentRunError("bad-input", `outputSize.${field} must be a positive integer, got ${value}`);
      }
    }
    const firstMultiChannel = this.inputs.find((input) => input.dims.length === 3);
    // As in the Rust CLI: a 3-D output gets the channel count of the first
    // 3-D input, or 3 (RGB) when every input is 2-D.
    const defaultChannels = size.channels ?? (firstMultiChannel ? images.get(firstMultiChannel.name)!.channels : 3);

    const buffers: RunBuffer[] = [];
    const outputs: PlainImage[] = [];
    let totalBytes = 0;
    this.abi.buffers.forEach((descriptor, index) => {
      const elementBytes = TYPE_BYTES[descriptor.type];
      let width: number, height: number, channels: number, bytes: Uint8Array | undefined;
      if (descriptor.role === "input") {
        const image = images.get(descriptor.name);
        if (!image) throw new ArgentRunError("bad-input", `missing input \`${descriptor.name}\``);
        ({ width, height, channels } = image);
        bytes = new Uint8Array(image.data.buffer, image.data.byteOffset, image.data.byteLength);
      } else {
        width = size.width;
        height = size.height;
        channels = descriptor.dims === 3 ? defaultChannels : 1;
        outputs.push({ data: new Uint8Array(0), width, height, channels });
      }
      let extents: number[], strides: number[];
      if (descriptor.dims === 1) {
        extents = [width * height * channels];
        strides = [1];
      } else if (descriptor.dims === 2) {
        extents = [width, height];
        strides = [1, width];
      } else {
        extents = [width, height, channels];
        strides = [channels, width * channels, 1];
      }
      const elements = width * height * channels;
      totalBytes += elements * elementBytes;
      buffers.push({ index, elementBytes, mins: extents.map(() => 0), extents, strides, elements, bytes });
    });
    if (totalBytes > MAX_MEMORY_BYTES) {
      throw new ArgentRunError(
        "allocation-too-large",
        `the inputs and outputs need ${totalBytes} bytes, more than the 4 GiB a wasm32 memory can address`,
      );
    }

    for (const name of Object.keys(request.params ?? {})) {
      if (!this.params.some((param) => param.name === name)) {
        throw new ArgentRunError(
          "bad-param",
          `unknown param \`${name}\`; this pipeline's params are ${this.params.map((p) => `\`${p.name}\``).join(", ") || "none"}`,
        );
      }
    }
    const params: [number, number][] = this.abi.params.map((slot) => {
      const param = this.params.find((p) => p.name === slot.name)!;
      const value = request.params?.[slot.name] ?? param?.default ?? undefined;
      if (value === undefined || value === null) {
        throw new ArgentRunError("bad-param", `param \`${slot.name}\` has no default, so run needs a value for it`);
      }
      const described = param ?? { name: slot.name, type: slot.type, default: null, range: null };
      const coerced = described.type === "bool" && typeof value === "number" && param?.default === value ? value !== 0 : value;
      const word = encodeParam(described, coerced);
      // A declared range is checked before the run (the generated code
      // checks it too when lowering emits the check).
      if (typeof value === "number" && described.range && (value < described.range[0] || value > described.range[1])) {
        throw new ArgentRunError(
          "param-out-of-range",
          `param \`${slot.name}\` = ${value} is outside its range ${described.range[0]} .. ${described.range[1]}`,
        );
      }
      return [slot.offset, word];
    });
    const into = this.checkInto(request.into, outputs);
    let output = 0;
    const sources = this.abi.buffers.map((descriptor) =>
      descriptor.role === "input" ? images.get(descriptor.name)!.data : into[output++],
    );
    return { buffers, params, outputs, into, sources };
  }

  /**
   * Allocates an image in this pipeline's memory for the input or output
   * `name`, of its element type, zeroed: runs read it in place as an input
   * and write into it in place through `RunRequest.into`, with no copies
   * (see `ResidentImage`). `channels` defaults to 3 for a 3-D input or
   * output and must be 1 for a 2-D one. The allocation waits for the runs
   * queued before it.
   */
  allocateImage(name: string, size: { width: number; height: number; channels?: number }): Promise<ResidentImage> {
    if (this.disposed || this.runtime.isDisposed) {
      return Promise.reject(new ArgentRunError("disposed", "this pipeline has been disposed"));
    }
    const descriptor = this.abi.buffers.find((b) => b.name === name);
    if (!descriptor) {
      const names = this.abi.buffers.map((b) => `\`${b.name}\``).join(", ");
      return Promise.reject(
        new ArgentRunError("bad-input", `allocateImage: unknown image \`${name}\`; this pipeline's inputs and outputs are ${names}`),
      );
    }
    const channels = size?.channels ?? (descriptor.dims === 3 ? 3 : 1);
    for (const [field, value] of [["width", size?.width], ["height", size?.height], ["channels", channels]] as const) {
      if (!Number.isInteger(value) || (value as number) <= 0) {
        return Promise.reject(new ArgentRunError("bad-input", `allocateImage: ${field} must be a positive integer, got ${value}`));
      }
    }
    if (descriptor.dims === 2 && channels !== 1) {
      return Promise.reject(
        new ArgentRunError("bad-input", `allocateImage: \`${name}\` is 2-D, so its images have 1 channel, not ${channels}`),
      );
    }
    const { width, height } = size;
    const elements = width * height * channels;
    const bytes = elements * TYPE_BYTES[descriptor.type];
    const type = descriptor.type;
    const ArrayType = arrayTypeFor(type);
    return this.runtime.enqueue(async () => {
      if (this.disposed || this.runtime.isDisposed) throw new ArgentRunError("disposed", "this pipeline has been disposed");
      await this.load();
      const memory = this.memory;
      if (!memory) {
        return { data: new ArrayType(elements), width, height, channels, type, resident: false, release: async () => {} };
      }
      const region = (this.residentRegion ??= new ResidentRegion(buffersStart(this.abi.argsSize)));
      const block = region.allocate(bytes);
      const tooLarge = (why: string) =>
        new ArgentRunError("allocation-too-large", `allocateImage: a ${width}x${height}x${channels} ${type} image ${why}`);
      if (!block) throw tooLarge(`does not fit in the 4 GiB a wasm32 memory can hold, with the images already allocated`);
      try {
        ensureMemory(memory, block.slotEnd);
      } catch (error) {
        region.release(block);
        throw tooLarge(`could not be allocated: ${error instanceof Error ? error.message : String(error)}`);
      }
      // Views of a shared memory stay valid when it grows later.
      const data = new ArrayType(memory.buffer as unknown as ArrayBuffer, block.base, elements);
      // A block that an earlier image or run used holds its bytes.
      data.fill(0);
      this.residentBlocks.set(data, block);
      const release = () =>
        this.runtime.enqueue(async () => {
          if (this.residentBlocks.get(data) !== block) return;
          this.residentBlocks.delete(data);
          this.releasedArrays.add(data);
          region.release(block);
        });
      return { data, width, height, channels, type, resident: true, release };
    });
  }

  /**
   * The address of each buffer of a run that is a resident image of this
   * pipeline (null for the others, which are copied in or out). Rejects
   * released images, and an output that is also another buffer of the
   * run: the generated code assumes that what it writes overlaps nothing
   * it reads.
   */
  private residentBases(prepared: ReturnType<Pipeline["prepare"]>): (number | null)[] {
    const describe = (i: number) => {
      const descriptor = this.abi.buffers[prepared.buffers[i].index];
      return descriptor.role === "input" ? `input \`${descriptor.name}\`` : `into.${descriptor.name}`;
    };
    const bases = prepared.sources.map((array, i) => {
      if (!array) return null;
      if (this.releasedArrays.has(array)) {
        throw new ArgentRunError("bad-input", `${describe(i)} is a resident image that was released; allocate another`);
      }
      return this.residentBlocks.get(array)?.base ?? null;
    });
    bases.forEach((base, i) => {
      if (base === null || this.abi.buffers[prepared.buffers[i].index].role !== "output") return;
      const other = bases.findIndex((b, j) => j !== i && b === base);
      if (other >= 0) {
        throw new ArgentRunError(
          "bad-input",
          `${describe(i)} is the same resident image as ${describe(other)}: a run cannot write an image it also reads or writes elsewhere`,
        );
      }
    });
    return bases;
  }

  /** Checks `RunRequest.into` against the outputs' types and shapes. */
  private checkInto(into: Record<string, PixelArray> | undefined, shapes: PlainImage[]): (PixelArray | null)[] {
    const descriptors = this.abi.buffers.filter((b) => b.role === "output");
    if (into === undefined) return descriptors.map(() => null);
    if (!into || typeof into !== "object") throw new ArgentRunError("bad-input", "into must map output names to typed arrays");
    for (const name of Object.keys(into)) {
      if (!descriptors.some((d) => d.name === name)) {
        throw new ArgentRunError(
          "bad-input",
          `into names unknown output \`${name}\`; this pipeline's outputs are ${descriptors.map((d) => `\`${d.name}\``).join(", ")}`,
        );
      }
    }
    return descriptors.map((descriptor, i) => {
      const array = into[descriptor.name];
      if (array === undefined) return null;
      const ArrayType = arrayTypeFor(descriptor.type);
      const typeFits = array instanceof ArrayType || (ArrayType === Uint8Array && array instanceof Uint8ClampedArray);
      if (!typeFits) {
        throw new ArgentRunError(
          "bad-input",
          `into.${descriptor.name} must be a ${ArrayType.name} (the output is ${descriptor.type}), got ${Object.prototype.toString.call(array).slice(8, -1)}`,
        );
      }
      const { width, height, channels } = shapes[i];
      if (array.length !== width * height * channels) {
        throw new ArgentRunError(
          "bad-input",
          `into.${descriptor.name} has ${array.length} values but the ${width}x${height}x${channels} output needs ${width * height * channels}`,
        );
      }
      return array;
    });
  }

  /** Runs the pipeline. Rejects with `ArgentRunError` (see its `kind`). */
  run(request: RunRequest): Promise<RunResult> {
    if (this.disposed || this.runtime.isDisposed) {
      return Promise.reject(new ArgentRunError("disposed", "this pipeline has been disposed"));
    }
    const called = performance.now();
    let prepared: ReturnType<Pipeline["prepare"]>;
    try {
      prepared = this.prepare(request);
    } catch (error) {
      return Promise.reject(error);
    }
    const { signal } = request;
    if (signal?.aborted) return Promise.reject(abortedError(signal));
    return this.runtime.enqueue(async () => {
      if (this.disposed || this.runtime.isDisposed) {
        throw new ArgentRunError("disposed", "this pipeline was disposed before its run started");
      }
      if (signal?.aborted) throw abortedError(signal);
      await this.load();
      const pool = this.loadedIn!;
      if (signal?.aborted) throw abortedError(signal);
      // Runs are queued, so the pool runs nothing but this run: breaking
      // it stops exactly this run, wherever its workers are.
      const abort = () => pool.fail(abortedError(signal!));
      signal?.addEventListener("abort", abort, { once: true });
      try {
        if (this.runtime.mode === "tiles") {
          const tiled = await this.runTiles(pool, prepared, called);
          if (tiled) return tiled;
        }
        return await (this.memory
          ? this.runInPlace(pool, this.memory, prepared, called)
          : this.runOnDriver(pool, prepared, called));
      } finally {
        signal?.removeEventListener("abort", abort);
      }
    });
  }

  /**
   * Shared memory: lays out the run in the module's memory from this
   * thread, copies the inputs straight into it, asks the driver to call
   * `run` (a message of a few words), and copies the outputs out. One copy
   * of each image, no pixels in any message; none at all for resident
   * images, which the module reads and writes where they are.
   */
  private async runInPlace(
    pool: Pool,
    memory: WebAssembly.Memory,
    prepared: ReturnType<Pipeline["prepare"]>,
    called: number,
  ): Promise<RunResult> {
    const t0 = performance.now();
    const residentBases = this.residentBases(prepared);
    const layout = planLayout(this.abi.argsSize, prepared.buffers, {
      bases: residentBases,
      end: this.residentRegion?.end ?? 0,
    });
    if (!layout) {
      throw new ArgentRunError(
        "allocation-too-large",
        `the inputs and outputs need more than the ${MAX_MEMORY_BYTES} bytes (4 GiB) a wasm32 memory can hold`,
      );
    }
    try {
      ensureMemory(memory, layout.bytesNeeded);
    } catch (error) {
      throw new ArgentRunError(
        "allocation-too-large",
        `could not grow memory to ${layout.bytesNeeded} bytes: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    // Nobody uses the memory between runs (runs are queued), so this
    // thread may write the control block, arguments and inputs.
    const runId = nextRunId++;
    const helpers = pool.size - 1;
    const poll = this.runtime.pollBetweenRuns;
    resetControl(memory, {
      runId,
      helpers,
      pollMicros: Math.round((poll === "auto" ? AUTO_POLL_CAP_MS : poll) * 1000),
      pollAuto: poll === "auto",
      pollSpinners: Math.max(0, this.runtime.cores - 1),
    });
    writeArguments(memory, this.abi, prepared.buffers, layout, prepared.params);
    const bytes = new Uint8Array(memory.buffer);
    prepared.buffers.forEach((buffer, i) => {
      if (buffer.bytes && residentBases[i] === null) bytes.set(buffer.bytes, layout.bases[i]);
    });
    const copyIn = performance.now() - t0;

    const done = pool.expect(0, (r) => (r.type === "done" || r.type === "run-error") && r.runId === runId);
    const left = Array.from({ length: helpers }, (_, i) =>
      pool.expect(i + 1, (r) => r.type === "left" && r.runId === runId),
    );
    // Workers still polling after this pipeline's last run (see
    // `RuntimeOptions.pollBetweenRuns`) are called through shared memory;
    // the others get a message.
    let workersCalled = 0;
    for (let i = 1; i <= helpers; i++) {
      if (pool.call(i, memory)) workersCalled++;
      else pool.post(i, { type: "join", runId, pipelineId: this.id, worker: i });
    }
    if (pool.call(0, memory)) workersCalled++;
    else pool.post(0, { type: "run-in-place", runId, pipelineId: this.id, helpers, worker: 0 });
    const [reply, ...helperReplies] = await Promise.all([done, ...left]);
    if (poll !== 0) {
      for (let i = 0; i <= helpers; i++) pool.mayListen(i, memory);
    }
    const executed = this.checkReply(reply, helperReplies);

    const t2 = performance.now();
    // A fresh view: the module may have grown the memory during the run.
    const after = memory.buffer;
    let output = 0;
    const outputBytes: Uint8Array[] = [];
    prepared.buffers.forEach((buffer, i) => {
      if (this.abi.buffers[buffer.index].role !== "output") return;
      const size = buffer.elements * buffer.elementBytes;
      const into = prepared.into[output++];
      if (residentBases[i] !== null) {
        // Written in place: `wrapOutputs` hands back the resident array.
        outputBytes.push(new Uint8Array(0));
        return;
      }
      const bytes = outputBytesFor(into, size);
      bytes.set(new Uint8Array(after, layout.bases[i], size));
      outputBytes.push(bytes);
    });
    const outputs = this.wrapOutputs(prepared, outputBytes);
    const copyOut = performance.now() - t2;
    return {
      outputs,
      timings: runTimings(copyIn, executed.timings.execute, copyOut, performance.now() - called),
      stats: { iterationsPerThread: this.iterationsPerThread(executed, helperReplies), workersCalled },
    };
  }

  /**
   * A memory of the driver's own: the inputs travel in the run message as
   * transferred copies (one copy here, one into the module's memory),
   * and the outputs come back transferred.
   */
  private async runOnDriver(
    pool: Pool,
    prepared: ReturnType<Pipeline["prepare"]>,
    called: number,
  ): Promise<RunResult> {
    const t0 = performance.now();
    const { buffers, transfer } = transferableBuffers(prepared.buffers);
    const copied = performance.now() - t0;
    const runId = nextRunId++;
    const done = pool.expect(0, (r) => (r.type === "done" || r.type === "run-error") && r.runId === runId);
    pool.post(0, { type: "run", runId, pipelineId: this.id, buffers, params: prepared.params, helpers: 0 }, transfer);
    const executed = this.checkReply(await done, []);
    const t2 = performance.now();
    const outputBytes = executed.outputs.map((bytes, i) => {
      const into = prepared.into[i];
      if (!into) return bytes;
      const target = outputBytesFor(into, bytes.byteLength);
      target.set(bytes);
      return target;
    });
    const outputs = this.wrapOutputs(prepared, outputBytes);
    const { copyIn, execute, copyOut } = executed.timings;
    return {
      outputs,
      timings: runTimings(copied + copyIn, execute, copyOut + (performance.now() - t2), performance.now() - called),
      stats: { iterationsPerThread: [executed.iterations] },
    };
  }

  /** Turns the driver's reply into the `done` message, or throws the run's error. */
  private checkReply(reply: ExecReply, helperReplies: ExecReply[]): Extract<ExecReply, { type: "done" }> {
    if (reply.type === "run-error") throw new ArgentRunError("allocation-too-large", reply.message);
    if (reply.type !== "done") throw new Error(`unexpected reply ${reply.type}`);
    if (reply.status !== 0) {
      const trap = reply.trap ?? helperReplies.map((r) => (r.type === "left" ? r.trap : null)).find((t) => t) ?? null;
      throw this.statusError(reply.status, reply.errorArgs, trap);
    }
    return reply;
  }

  private iterationsPerThread(reply: Extract<ExecReply, { type: "done" }>, helperReplies: ExecReply[]): number[] {
    return [reply.iterations, ...helperReplies.map((r) => (r.type === "left" ? r.iterations : 0))];
  }

  /** Views each output's bytes as its element type, with the shape `prepare` computed. */
  private wrapOutputs(prepared: ReturnType<Pipeline["prepare"]>, bytesPerOutput: Uint8Array[]): Record<string, OutputImage> {
    const outputs: Record<string, OutputImage> = {};
    this.abi.buffers
      .filter((b) => b.role === "output")
      .forEach((descriptor, i) => {
        const bytes = bytesPerOutput[i];
        const ArrayType = arrayTypeFor(descriptor.type);
        const data =
          prepared.into[i] ??
          new ArrayType(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength / TYPE_BYTES[descriptor.type]);
        outputs[descriptor.name] = { ...prepared.outputs[i], data, type: descriptor.type };
      });
    return outputs;
  }

  /**
   * Tiles mode: splits every output into horizontal strips (the outermost
   * dimension in memory: y for images, the only one for 1-D outputs) and
   * runs the pipeline for each strip on its own worker, with the whole
   * inputs. Each strip is an output buffer whose `min` is the strip's first
   * row, so the generated code computes exactly those rows. Resolves to
   * null when the run must go to one worker instead: a single strip, or a
   * strip that failed (e.g. an update that scatters outside its strip), so
   * errors are reported exactly as in single-threaded mode.
   */
  private async runTiles(
    pool: Pool,
    prepared: ReturnType<Pipeline["prepare"]>,
    called: number,
  ): Promise<RunResult | null> {
    const outputIndices = prepared.buffers.filter((b) => this.abi.buffers[b.index].role === "output");
    if (outputIndices.length === 0) return null;
    const splitDim = (b: RunBuffer) => (b.extents.length === 1 ? 0 : 1);
    const rows = outputIndices[0].extents[splitDim(outputIndices[0])];
    if (outputIndices.some((b) => b.extents[splitDim(b)] !== rows)) return null;
    const strips = Math.min(pool.size, rows);
    if (strips < 2) return null;
    /** Milliseconds this thread spent copying each strip's inputs for the transfer. */
    const copied: number[] = [];
    /** Input bytes sent to each strip's worker. */
    const inputBytes: number[] = [];
    const shapes = Array.from({ length: strips }, (_, k) => {
      const first = Math.floor((rows * k) / strips);
      const count = Math.floor((rows * (k + 1)) / strips) - first;
      return prepared.buffers.map((b): RunBuffer => {
        if (this.abi.buffers[b.index].role !== "output") return { ...b, bytes: undefined };
        const d = splitDim(b);
        const mins = b.mins.slice();
        const extents = b.extents.slice();
        mins[d] = first;
        extents[d] = count;
        return { ...b, mins, extents, elements: (b.elements / rows) * count, bytes: undefined };
      });
    });
    // The module's bounds query says which rows of each input a strip
    // reads: only those travel (the descriptor keeps the whole image's
    // size, which the algorithm sees). Every strip is asked before any is
    // sent, so this thread's copies do not compete with a strip that is
    // already computing.
    const rowsRead = await Promise.all(shapes.map((strip, k) => this.queryRows(pool, k, strip, prepared.params)));
    const replies = await Promise.all(
      shapes.map((strip, k) => {
        const copyStarted = performance.now();
        const transfer: ArrayBuffer[] = [];
        let sent = 0;
        const buffers: RunBuffer[] = prepared.buffers.map((b, i) => {
          if (!b.bytes) return strip[i];
          const [from, to] = rowsRead[k]?.get(b.index) ?? [0, b.bytes.byteLength];
          const bytes = b.bytes.slice(from, to);
          transfer.push(bytes.buffer);
          sent += bytes.byteLength;
          return { ...strip[i], bytes, byteOffset: from };
        });
        copied[k] = performance.now() - copyStarted;
        inputBytes[k] = sent;
        const runId = nextRunId++;
        const done = pool.expect(k, (r) => (r.type === "done" || r.type === "run-error") && r.runId === runId);
        pool.post(k, { type: "run", runId, pipelineId: this.id, buffers, params: prepared.params, helpers: 0 }, transfer);
        return done;
      }),
    );
    if (replies.some((r) => r.type !== "done" || r.status !== 0)) return null;
    const copyStarted = performance.now();
    const outputBytes = this.abi.buffers
      .filter((b) => b.role === "output")
      .map((_, i) => {
        const total = replies.reduce((sum, r) => sum + (r.type === "done" ? r.outputs[i].byteLength : 0), 0);
        const bytes = outputBytesFor(prepared.into[i], total);
        let at = 0;
        for (const reply of replies) {
          if (reply.type !== "done") continue;
          bytes.set(reply.outputs[i], at);
          at += reply.outputs[i].byteLength;
        }
        return bytes;
      });
    const outputs = this.wrapOutputs(prepared, outputBytes);
    const joined = performance.now() - copyStarted;
    // The strips run side by side: the slowest worker's figures are the
    // ones the run waited for; this thread's copies add to them.
    const slowest = (key: "copyIn" | "execute" | "copyOut") =>
      Math.max(...replies.map((r) => (r.type === "done" ? r.timings[key] : 0)));
    const copiedHere = copied.reduce((a, b) => a + b, 0);
    return {
      outputs,
      timings: runTimings(copiedHere + slowest("copyIn"), slowest("execute"), slowest("copyOut") + joined, performance.now() - called),
      stats: {
        iterationsPerThread: replies.map((r) => (r.type === "done" ? r.iterations : 0)),
        inputBytesPerThread: inputBytes,
      },
    };
  }

  /**
   * Tiles mode: the byte range `[from, to)` of each input (by ABI index)
   * that one strip reads, from the module's bounds query on that strip's
   * worker: whole rows, from the first row read to the last. Null when the
   * module has no query (every input then travels whole); an input whose
   * rows cannot be cut (one dimension) is left out of the map.
   */
  private async queryRows(
    pool: Pool,
    worker: number,
    shapes: RunBuffer[],
    params: [number, number][],
  ): Promise<Map<number, [number, number]> | null> {
    const slots = this.abi.regionSlots;
    if (!slots) return null;
    const runId = nextRunId++;
    const reply = pool.expect(worker, (r) => r.type === "regions" && r.runId === runId);
    pool.post(worker, { type: "query", runId, pipelineId: this.id, buffers: shapes, params });
    const answer = await reply;
    if (answer.type !== "regions" || !answer.regions) return null;
    const rowsRead = new Map<number, [number, number]>();
    shapes.forEach((shape) => {
      const descriptor = this.abi.buffers[shape.index];
      if (descriptor.role !== "input" || shape.extents.length < 2) return;
      const slot = slots.findIndex((s) => s.input === descriptor.name && s.dim === 1);
      if (slot < 0) return;
      const [lo, hi] = answer.regions![slot];
      const rowBytes = shape.strides[1] * shape.elementBytes;
      const firstRow = Math.max(lo, shape.mins[1]) - shape.mins[1];
      const lastRow = Math.min(hi, shape.mins[1] + shape.extents[1] - 1) - shape.mins[1];
      // Nothing read (an empty strip, or an input only other strips use).
      if (lastRow < firstRow) rowsRead.set(shape.index, [0, 0]);
      else rowsRead.set(shape.index, [firstRow * rowBytes, (lastRow + 1) * rowBytes]);
    });
    return rowsRead;
  }

  /** Turns a failed run's status into an error naming what went wrong. */
  private statusError(status: number, args: number[], trap: string | null): ArgentRunError {
    if (status === TRAP_STATUS || status < 0) {
      return new ArgentRunError("trap", trap ?? `the pipeline failed with status ${status}`);
    }
    const check = this.abi.asserts[status - 1];
    if (!check) return new ArgentRunError("assertion", `the pipeline failed check ${status}, which the ABI does not describe`);
    const values = args.map((word, i) => decodeArg(word, check.argTypes[i]));
    switch (check.kind) {
      case "inputTooSmall": {
        const dims = this.inputs.find((i) => i.name === check.input)?.dims ?? [];
        const dim = dimName(dims, check.dim);
        const [needMin, needMax, haveMin, haveMax] = values;
        return new ArgentRunError(
          "input-too-small",
          `input \`${check.input}\` is too small: stage \`${check.stage}\` reads ${dim} from ${needMin} to ${needMax}, ` +
            `but the input covers ${dim} from ${haveMin} to ${haveMax}` +
            (dim === "c" ? ` (it has ${haveMax - haveMin + 1} channel${haveMax === haveMin ? "" : "s"})` : ""),
        );
      }
      case "outputTooSmall": {
        const dims = this.outputs.find((o) => o.name === check.output)?.dims ?? [];
        const dim = dimName(dims, check.dim);
        const [needMin, needMax, haveMin, haveMax] = values;
        return new ArgentRunError(
          "output-too-small",
          `output \`${check.output}\` is too small: the pipeline writes ${dim} from ${needMin} to ${needMax}, ` +
            `but the output buffer covers ${haveMin} to ${haveMax}`,
        );
      }
      case "allocationTooLarge": {
        const [lo = 0, hi = 0] = args;
        const bytes = (hi >>> 0) * 2 ** 32 + (lo >>> 0);
        return new ArgentRunError(
          "allocation-too-large",
          `intermediate buffer \`${check.buffer}\` needs ${bytes} bytes, more than the memory can grow to (4 GiB)`,
        );
      }
      case "paramOutOfRange": {
        const range = this.params.find((p) => p.name === check.param)?.range;
        return new ArgentRunError(
          "param-out-of-range",
          `param \`${check.param}\` = ${values[0]} is outside its range` + (range ? ` ${range[0]} .. ${range[1]}` : ""),
        );
      }
      case "strideNotOne":
        return new ArgentRunError(
          "bad-layout",
          `buffer \`${check.buffer}\` must have stride 1 in x (its rows must be contiguous), but its stride there is ${values[0]}`,
        );
      case "regionOverflow":
        // A region computed exactly (not wrapped) that passes 2^31: the
        // image sizes or the parameters' ranges are too large for it.
        return new ArgentRunError(
          "region-overflow",
          `${check.region} does not fit in 32-bit coordinates: with these image sizes and the parameters' values (or the ranges they declare), its bounds pass 2^31`,
        );
      case "other":
        return new ArgentRunError("assertion", check.message);
    }
  }

  /** @internal */
  markDisposed(): void {
    this.disposed = true;
  }

  /** Frees the pipeline's memory on the workers. Later runs reject. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.runtime.forget(this);
    const pool = this.loadedIn;
    if (pool && !pool.broken) {
      const workers = this.workerCount(pool);
      for (let worker = 0; worker < workers; worker++) pool.post(worker, { type: "unload", pipelineId: this.id });
    }
    this.loadedIn = null;
    this.memory = null;
  }
}

/** The error a run rejects with when its signal aborts it. */
function abortedError(signal: AbortSignal): ArgentRunError {
  const reason = signal.reason instanceof Error ? `: ${signal.reason.message}` : "";
  return new ArgentRunError("aborted", `the run was aborted${reason}`);
}
