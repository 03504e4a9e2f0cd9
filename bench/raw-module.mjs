// A compiled pipeline's generated module run alone, outside the runtime:
// instantiated on a memory of its own, laid out as the runtime lays it out
// (argument block, then one 64-byte-aligned region per buffer), with its
// parallel loops run one iteration after another on this thread. This is
// how the Halide rows of bench/run.mjs run Halide's modules, so the two
// compare in the same state: timed around the module's `run` call only,
// the same input and output buffers from one call to the next ("hot").
//
// Takes 2-D pipelines whose buffers are all W x H (dense rows), such as
// the blurs.

/**
 * Instantiates `pipeline.wasm` and lays out its buffers for a W x H image of
 * `bytesPerPixel` bytes. `call(onTimed)` runs the module once and returns
 * the milliseconds of its `run`; `onTimed(true | false)` is called just
 * before and after the timed call (for perf counters).
 */
export function rawModule(pipeline, W, H, bytesPerPixel) {
  const { abi } = pipeline;
  const ARGS = 1024;
  const memory = new WebAssembly.Memory({ initial: 32, maximum: 65536, shared: abi.sharedMemory });
  let tasks = [];
  const instance = new WebAssembly.Instance(new WebAssembly.Module(pipeline.wasm), {
    env: {
      memory,
      // One thread: the loop runs here, as the runtime's driver runs it without helpers.
      parallel_for(task, closure, min, extent) {
        for (let i = 0; i < extent; i++) {
          const status = tasks[task](closure, min + i);
          if (status) return status;
        }
        return 0;
      },
    },
  });
  tasks = abi.tasks.map((t) => instance.exports[t.export]);
  const align = (v) => Math.ceil(v / 64) * 64;
  const bases = [];
  let cursor = align(ARGS + abi.argsSize);
  for (let i = 0; i < abi.buffers.length; i++) {
    bases.push(cursor);
    cursor = align(cursor + W * H * bytesPerPixel + 64);
  }
  memory.grow(Math.max(0, Math.ceil((cursor + (1 << 20) - memory.buffer.byteLength) / 65536)));
  const view = new DataView(memory.buffer);
  abi.buffers.forEach((b, i) => {
    view.setInt32(ARGS + b.offset, bases[i], true);
    [[W, 1], [H, W]].forEach(([extent, stride], d) => {
      view.setInt32(ARGS + b.offset + 4 + 12 * d, 0, true);
      view.setInt32(ARGS + b.offset + 8 + 12 * d, extent, true);
      view.setInt32(ARGS + b.offset + 12 + 12 * d, stride, true);
    });
  });
  const [inBase, outBase] = ["input", "output"].map((role) => bases[abi.buffers.findIndex((b) => b.role === role)]);
  return {
    memory, inBase, outBase, heapTop: cursor,
    call(onTimed = () => {}) {
      view.setInt32(ARGS + abi.heapTopOffset, cursor, true);
      onTimed(true);
      const t0 = performance.now();
      const status = instance.exports.run(ARGS);
      const ms = performance.now() - t0;
      onTimed(false);
      if (status !== 0) throw new Error(`the generated module returned status ${status}`);
      return ms;
    },
  };
}
