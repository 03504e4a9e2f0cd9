// Images that live in a pipeline's shared memory between runs
// (`Pipeline.allocateImage`), so a run reads and writes them in place.
//
// Why: on shared memory a run otherwise copies every input into the
// module's memory and every output out of it on the main thread. That
// copying does not scale with threads: on a 16-core machine the 3x3 blur
// of a 3072x2048 u16 image executed in 0.6 ms on 16 threads while its two
// copies took 5.4 ms (bench/runtime-threads.mjs, BENCHMARKS.md). A
// caller that keeps its pixels in resident images pays neither copy.
//
// Resident images occupy a region right after the argument block. Each
// run lays out its other buffers, and the module's heap, after the
// region's end, so the module never overwrites a resident image. The
// region is managed first-fit; a freed block at the end shrinks it.

import { BUFFER_OFFSET, MAX_MEMORY_BYTES, slotBytes } from "./layout.js";

/** One resident image's place in memory. */
export interface ResidentBlock {
  /** Byte address of the image's first element. */
  base: number;
  /** Bytes of pixels. */
  bytes: number;
  /** The slot the block occupies, `[slotStart, slotEnd)`: alignment and read slack included. */
  slotStart: number;
  slotEnd: number;
}

/**
 * The region of a memory that holds resident images, in slots like those
 * of the run layout (`slotBytes`), so the generated code sees the same
 * alignment and read slack either way.
 */
export class ResidentRegion {
  /** Live blocks, in address order. */
  private blocks: ResidentBlock[] = [];

  /** `start`: the first byte the region may use (must be `BUFFER_ALIGN`-aligned). */
  constructor(readonly start: number) {}

  /** The first byte after the region: where each run's own layout starts. */
  get end(): number {
    return this.blocks.length ? this.blocks[this.blocks.length - 1].slotEnd : this.start;
  }

  /** Live blocks. */
  get count(): number {
    return this.blocks.length;
  }

  /**
   * Places `bytes` bytes in the first gap that holds them, or after the
   * last block. Null when that would pass the 4 GiB a wasm32 memory holds.
   */
  allocate(bytes: number): ResidentBlock | null {
    const size = slotBytes(bytes);
    let gapStart = this.start;
    let at = 0;
    for (; at < this.blocks.length; at++) {
      if (this.blocks[at].slotStart - gapStart >= size) break;
      gapStart = this.blocks[at].slotEnd;
    }
    if (gapStart + size > MAX_MEMORY_BYTES) return null;
    const block = { base: gapStart + BUFFER_OFFSET, bytes, slotStart: gapStart, slotEnd: gapStart + size };
    this.blocks.splice(at, 0, block);
    return block;
  }

  /** Frees `block`; freeing it again does nothing. */
  release(block: ResidentBlock): void {
    const at = this.blocks.indexOf(block);
    if (at >= 0) this.blocks.splice(at, 1);
  }
}
