// Loads a module written by `dump_wat PIPELINE.ag OUT` for timing: every
// input and the output are W x H (x C, interleaved), inputs hold
// deterministic pseudo-random pixels, parameters come from `settings`
// (name -> value; others get 0.1 or 1). Resolves to a function that runs
// the module once, one thread, unshared memory, and returns its time in ms.
import { readFileSync } from "node:fs";

export async function loadModule(out, W, H, C, settings, { shared = false } = {}) {
  const abi = readFileSync(out + ".abi", "utf8").trim().split("\n").map((l) => l.split(" "));
  // A threads module (`THREADS=1 dump_wat`) imports a shared memory; its
  // parallel loops then run serially here, as the runtime runs them on one
  // thread.
  const memory = shared
    ? new WebAssembly.Memory({ initial: 256, maximum: 65536, shared: true })
    : new WebAssembly.Memory({ initial: 256 });
  let exports = null;
  const parallel_for = (task, closure, min, extent) => {
    if (!shared) throw new Error("threads");
    const run = exports[`task_${task}`];
    for (let i = 0; i < extent; i++) {
      const status = run(closure, min + i);
      if (status !== 0) return status;
    }
    return 0;
  };
  const { instance } = await WebAssembly.instantiate(readFileSync(out + ".wasm"), { env: { memory, parallel_for } });
  exports = instance.exports;
  const ARGS = 8192;
  const argsSize = Number(abi.find((l) => l[0] === "args")[1]);
  let cursor = (ARGS + argsSize + 15) & ~15;
  // Past the last buffer: 64 KiB the generated code needs free of inputs
  // (SPECULATIVE_GUARD in emit.rs), and room for padding.
  const tail = 65536 + 1024;
  const need = (bytes) => {
    const have = memory.buffer.byteLength;
    if (cursor + bytes + tail > have) memory.grow(Math.ceil((cursor + bytes + tail - have) / 65536));
  };
  let seed = 12345;
  const dv = () => new DataView(memory.buffer);
  for (const [kind, name, a, b, c] of abi) {
    if (kind === "buffer") {
      const elem = Number(a), dims = Number(b), offset = Number(c);
      const extents = [W, H, C].slice(0, dims);
      const strides = dims === 3 ? [C, C * W, 1] : [1, W, W * H];
      const count = extents.reduce((x, y) => x * y, 1);
      need(count * elem + 64);
      const base = cursor;
      const bytes = new Uint8Array(memory.buffer, base, count * elem);
      for (let i = 0; i < bytes.length; i++) {
        seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
        bytes[i] = (seed >>> 8) & 0xff;
      }
      dv().setInt32(ARGS + offset, base, true);
      extents.forEach((e, d) => {
        dv().setInt32(ARGS + offset + 4 + 12 * d, 0, true);
        dv().setInt32(ARGS + offset + 8 + 12 * d, e, true);
        dv().setInt32(ARGS + offset + 12 + 12 * d, strides[d], true);
      });
      cursor = (base + count * elem + 64 + 15) & ~15;
    } else if (kind === "param") {
      const v = settings[name];
      if (v !== undefined) {
        if (a === "F32") dv().setFloat32(ARGS + Number(b), Number(v), true);
        else dv().setInt32(ARGS + Number(b), Number(v), true);
      } else {
        console.error(`param ${name} not set; using 0.1 / 1`);
        if (a === "F32") dv().setFloat32(ARGS + Number(b), 0.1, true);
        else dv().setInt32(ARGS + Number(b), 1, true);
      }
    }
  }
  const heapOffset = Number(abi.find((l) => l[0] === "args")[2]);
  dv().setUint32(ARGS + heapOffset, cursor, true);
  return () => {
    const t0 = performance.now();
    const status = instance.exports.run(ARGS);
    const t = performance.now() - t0;
    if (status !== 0) throw new Error("status " + status);
    return t;
  };
}
