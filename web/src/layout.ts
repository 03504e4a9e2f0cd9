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
  words: 16,
} as const;

/** Status reported when a task threw (a trap) on a helper. */
export const TRAP_STATUS = -1;

/** Byte offset of the argument block: after the control block, 16-aligned. */
export const ARGS_OFFSET = 1024;

/** Bytes the generated SIMD code may read past the end of a buffer. */
export const BUFFER_SLACK = 64;

/** Alignment of every buffer the runtime places. */
export const BUFFER_ALIGN = 64;

/** Headroom for intermediate buffers allocated before the first grow. */
export const HEAP_HEADROOM = 1 << 20;

/** The largest memory wasm32 can address. */
export const MAX_MEMORY_BYTES = 2 ** 32;

/** Wasm page size. */
export const PAGE_BYTES = 65536;

/** Rounds `value` up to a multiple of `align` (a power of two). */
export function alignUp(value: number, align: number): number {
  return Math.ceil(value / align) * align;
}

/** Resets the control block before a run (nobody is using it then). */
export function resetControl(memory: WebAssembly.Memory): void {
  const control = new Int32Array(memory.buffer, CONTROL_OFFSET, Control.words);
  for (let i = 0; i < Control.words; i++) Atomics.store(control, i, 0);
}
