// The memory layout the runtime uses for one run, and the control block
// of the parallel_for protocol. Shared by the main thread (which resets the
// control block between runs) and the execution workers.

/** Byte offset of the parallel_for control block (16 i32 words). */
export const CONTROL_OFFSET = 64;
/** Word indices in the control block. */
export const Control = {
  /** Job generation: odd while the caller rewrites the job, even once published. */
  generation: 0,
  /** Helpers currently reading or working on the published job. */
  active: 1,
  task: 2,
  closure: 3,
  min: 4,
  extent: 5,
  /** Threads taking part in the job (caller included): sizes the chunks. */
  participants: 6,
  /** Next iteration (relative to `min`) to claim. */
  next: 7,
  /** Iterations finished. */
  done: 8,
  /** First non-zero task status (-1: a task trapped). */
  status: 9,
  /** Set with the last job of a run: helpers leave. */
  quit: 10,
  /** The run a worker waiting between runs is called to (see `Idle`). */
  runId: 11,
  /** How many helpers join that run's loops (the driver's `helpers`). */
  helpers: 12,
  /**
   * Microseconds a worker polls its idle word after this run (see `Idle`);
   * 0: it goes back to its event loop at once. With `pollAuto`, the most
   * it may poll.
   */
  pollMicros: 13,
  /**
   * 1: each worker picks how long it polls from the gaps it sees between
   * runs (`pollBetweenRuns: "auto"`, see `autoPollMs`), and sleeps on its
   * idle word for `AUTO_PARK_MS` after the run.
   */
  pollAuto: 14,
  /**
   * With `pollAuto`: workers below this index may poll; the others only
   * sleep on their idle word, so that polling workers leave the main
   * thread a core (see `RunControl.pollSpinners`).
   */
  pollSpinners: 15,
  words: 16,
} as const;

/**
 * Byte offset of the idle words: one i32 per worker of the pool, in the
 * memory of the pipeline it ran last, through which a worker that has just
 * finished a run can be called to the next one without a message (see
 * `Idle`). Between the control block and the argument block.
 */
export const IDLE_OFFSET = 256;
/** Workers with an idle word; larger pools call the others by message. */
export const IDLE_WORKERS = (1024 - IDLE_OFFSET) / 4;

/**
 * The states of a worker's idle word, through which a worker that finished
 * a run on shared memory listens for the next (`RuntimeOptions.
 * pollBetweenRuns`). It sets `listening` before it replies, then polls the
 * word and/or sleeps on it (`Atomics.wait`) for a while: waking a worker
 * whose event loop went idle costs 0.05-0.6 ms on a virtual machine, as
 * much as a small pipeline's whole run. The main thread calls it to the
 * next run of the same pipeline by swapping `listening` for `run` (the
 * run's id and helpers in the control block), or sends it back to its
 * event loop with `released` before posting it any message, and notifies
 * the word either way. A worker that stops listening swaps `listening`
 * for `away`; whoever swaps first wins.
 */
export const Idle = { away: 0, listening: 1, run: 2, released: 3 } as const;

/**
 * With `pollBetweenRuns: "auto"`, the longest gap between runs after which
 * a worker polls for the next, and the longest it polls (milliseconds).
 */
export const AUTO_POLL_CAP_MS = 2;

/**
 * With `pollBetweenRuns: "auto"`, how long after a run a worker listens
 * for the next on its idle word (milliseconds): after its poll, if any, it
 * sleeps there in `Atomics.wait`, which costs no CPU, and the main thread
 * wakes it with `Atomics.notify` (cheaper than a message through its event
 * loop); then it goes back to its event loop. Messages to a parked worker
 * release it first (see `Pool.post`).
 */
export const AUTO_PARK_MS = 50;

/** With `pollBetweenRuns: "auto"`: a gap of g ms polls for 3g + `AUTO_POLL_SLACK_MS`. */
const AUTO_POLL_FACTOR = 3;
const AUTO_POLL_SLACK_MS = 0.25;

/**
 * How long to poll after a run under `pollBetweenRuns: "auto"`, given the
 * gap in milliseconds between this worker's reply to the previous run and
 * the call (or message) that started this one, and the cap. Runs back to
 * back leave gaps of a few tenths of a millisecond (the main thread
 * taking the reply and starting the next run), so three times the gap
 * catches the next call with room for jitter; a gap longer than the cap
 * means the caller runs now and then, and waking the worker from its
 * sleep on the idle word (or by message) then costs less than the CPU a
 * poll would burn. A poll that misses costs one wake, and the gap that
 * wake measures sets the next poll: the length adapts from run to run.
 */
export function autoPollMs(gapMs: number, capMs: number): number {
  if (!(gapMs <= capMs)) return 0;
  return Math.min(capMs, AUTO_POLL_FACTOR * gapMs + AUTO_POLL_SLACK_MS);
}

/** The idle words of `memory` (see `Idle`), indexed by worker. */
export function idleWords(memory: WebAssembly.Memory): Int32Array {
  return new Int32Array(memory.buffer, IDLE_OFFSET, IDLE_WORKERS);
}

/** Status reported when a task threw (a trap) on a helper. */
export const TRAP_STATUS = -1;

/** Byte offset of the argument block: after the control block, 16-aligned. */
export const ARGS_OFFSET = 1024;

/** Bytes the generated SIMD code may read past the end of a buffer. */
export const BUFFER_SLACK = 64;

/** Alignment of the slot of every buffer the runtime places. */
export const BUFFER_ALIGN = 64;

/**
 * Where each buffer starts inside its 64-byte-aligned slot. Buffers that
 * start 16 bytes past a cache line ran faster than cache-line-aligned
 * ones: the 3x3 blur (3072x2048 u16, 1 thread) took 0.26-0.30 ms (6-7%)
 * less in the runtime's `execute` (4.28 -> 4.00, 4.36 -> 4.06, 4.41 ->
 * 4.15 ms, two runtimes interleaved in one process), and the raw module
 * 0.2-1 ms less, with either module (threads on or off); unsharp mask did
 * not change. Why is not known (the generated code assumes no alignment,
 * so this is a measured preference, not a requirement); the multiple of 16
 * keeps every element type's views aligned.
 */
export const BUFFER_OFFSET = 16;

/**
 * Headroom for intermediate buffers allocated before the first grow. It
 * also keeps every input out of the last 64 KiB of the memory, which the
 * generated code relies on: a speculative load (an input read in an arm of
 * a vector `select`, where the arm's condition fails) whose address falls
 * there or past the end reads address 0 instead (`SPECULATIVE_GUARD` in
 * crates/argent-wasm/src/emit.rs). Inputs never start in the first 1 KiB
 * either (`ARGS_OFFSET`).
 */
export const HEAP_HEADROOM = 1 << 20;

/** The largest memory wasm32 can address. */
export const MAX_MEMORY_BYTES = 2 ** 32;

/** Wasm page size. */
export const PAGE_BYTES = 65536;

/** Rounds `value` up to a multiple of `align` (a power of two). */
export function alignUp(value: number, align: number): number {
  return Math.ceil(value / align) * align;
}

/** What a run tells its workers through the control block. */
export interface RunControl {
  runId: number;
  helpers: number;
  /** How long the workers poll for the next run afterwards (see `Idle`); with `pollAuto`, at most. */
  pollMicros: number;
  /** Whether each worker adapts its polling to the gaps between runs. */
  pollAuto: boolean;
  /**
   * With `pollAuto`, how many workers may poll (the first ones): one fewer
   * than the cores, since the main thread needs one to start the next
   * run, and a pool as large as the machine polling on every core would
   * take it.
   */
  pollSpinners: number;
}

/**
 * Resets the control block before a run (nobody is using it then) and
 * records what workers called without a message need to know.
 */
export function resetControl(memory: WebAssembly.Memory, run: RunControl): void {
  const control = new Int32Array(memory.buffer, CONTROL_OFFSET, Control.words);
  for (let i = 0; i < Control.words; i++) Atomics.store(control, i, 0);
  Atomics.store(control, Control.runId, run.runId);
  Atomics.store(control, Control.helpers, run.helpers);
  Atomics.store(control, Control.pollMicros, run.pollMicros);
  Atomics.store(control, Control.pollAuto, run.pollAuto ? 1 : 0);
  Atomics.store(control, Control.pollSpinners, run.pollSpinners);
}

/** What the layout needs to know about one buffer of a run. */
export interface BufferShape {
  /** Index in `Abi.buffers`. */
  index: number;
  elementBytes: number;
  mins: number[];
  extents: number[];
  /** In elements. */
  strides: number[];
  /** Number of elements (the dense interleaved size). */
  elements: number;
}

/** Where a run's buffers go in memory. */
export interface Layout {
  /** Byte address of each buffer, in the order they were given. */
  bases: number[];
  /** The first free byte after them: the heap top the module starts from. */
  heapTop: number;
  /** The memory size the run needs before it starts (heap top plus headroom). */
  bytesNeeded: number;
}

/**
 * Bytes of the slot that holds a buffer of `bytes` bytes: it starts
 * `BUFFER_OFFSET` into a `BUFFER_ALIGN`-aligned slot and is followed by the
 * `BUFFER_SLACK` bytes SIMD loads may read. Run layouts and resident images
 * (resident.ts) both place buffers this way.
 */
export function slotBytes(bytes: number): number {
  return alignUp(BUFFER_OFFSET + bytes + BUFFER_SLACK, BUFFER_ALIGN);
}

/** The first byte after the argument block where buffers may go. */
export function buffersStart(argsSize: number): number {
  return alignUp(ARGS_OFFSET + argsSize, BUFFER_ALIGN);
}

/**
 * Places the buffers after the argument block, each `BUFFER_OFFSET` bytes
 * into a `BUFFER_ALIGN`-aligned slot and followed by the slack SIMD loads
 * may touch. Returns null when they do not fit in a wasm32 memory.
 *
 * `resident` describes buffers that already have a place (resident
 * images, see resident.ts): the address of each such buffer (null for the
 * others), and the end of the region that holds them, after which the
 * other buffers and the heap go.
 */
export function planLayout(
  argsSize: number,
  buffers: readonly BufferShape[],
  resident?: { bases: readonly (number | null)[]; end: number },
): Layout | null {
  let cursor = Math.max(buffersStart(argsSize), resident?.end ?? 0);
  const bases: number[] = [];
  for (const [i, buffer] of buffers.entries()) {
    const fixed = resident?.bases[i];
    if (fixed != null) {
      bases.push(fixed);
      continue;
    }
    bases.push(cursor + BUFFER_OFFSET);
    cursor += slotBytes(buffer.elements * buffer.elementBytes);
  }
  const bytesNeeded = cursor + HEAP_HEADROOM;
  return bytesNeeded > MAX_MEMORY_BYTES ? null : { bases, heapTop: cursor, bytesNeeded };
}

/** Grows `memory` to at least `bytes`; throws when the engine refuses. */
export function ensureMemory(memory: WebAssembly.Memory, bytes: number): void {
  const have = memory.buffer.byteLength;
  if (bytes > have) memory.grow(Math.ceil((bytes - have) / PAGE_BYTES));
}

/**
 * Writes the argument block (heap top, buffer descriptors, parameters) of
 * one run into `memory`, which must already hold `layout.bytesNeeded`
 * bytes. The run counter word is the module's and is left alone.
 */
export function writeArguments(
  memory: WebAssembly.Memory,
  abi: { heapTopOffset: number; argsSize: number; buffers: { offset: number; dims: number }[] },
  buffers: readonly BufferShape[],
  layout: Layout,
  params: readonly (readonly [number, number])[],
): void {
  // A fresh view: a grow (ours, or the module's in an earlier run) replaces
  // the buffer object of a memory.
  const words = new DataView(memory.buffer, ARGS_OFFSET, abi.argsSize);
  words.setInt32(abi.heapTopOffset, layout.heapTop, true);
  buffers.forEach((buffer, i) => {
    const descriptor = abi.buffers[buffer.index];
    words.setInt32(descriptor.offset, layout.bases[i], true);
    for (let d = 0; d < descriptor.dims; d++) {
      words.setInt32(descriptor.offset + 4 + 12 * d, buffer.mins[d], true);
      words.setInt32(descriptor.offset + 8 + 12 * d, buffer.extents[d], true);
      words.setInt32(descriptor.offset + 12 + 12 * d, buffer.strides[d], true);
    }
  });
  for (const [offset, word] of params) words.setInt32(offset, word, true);
}
