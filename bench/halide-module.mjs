// Loads a Halide 21 `wasm-32-wasmrt-wasm_simd128` module (linked by
// `cargo xtask bench` from bench/halide/gen.py's objects) with the C
// functions Halide's runtime imports, and lays out `halide_buffer_t`s in
// its memory: shared by bench/run.mjs and bench/halide-ab.mjs.
import { readFileSync } from "node:fs";

/**
 * Loads a Halide AOT module (wasm-32-wasmrt) with the C library functions
 * its runtime imports, a bump allocator for `malloc`, and helpers to lay out
 * `halide_buffer_t` descriptors in its memory.
 */
export async function loadHalide(path) {
  const bytes = readFileSync(path);
  const module = await WebAssembly.compile(bytes);
  const memory = new WebAssembly.Memory({ initial: 256, maximum: 65536 });
  const u8 = () => new Uint8Array(memory.buffer);
  let heapStart = 0;
  let top = 0;
  const live = new Map();
  const freeBySize = new Map();
  const ensure = (end) => {
    const have = memory.buffer.byteLength;
    if (end > have) memory.grow(Math.ceil((end - have) / 65536));
  };
  // Halide frees everything it allocates before a pipeline returns, so a
  // bump pointer that resets when nothing is live (plus reuse of freed
  // blocks of the same size within a run) never leaks across runs.
  const malloc = (size) => {
    size = (size + 63) & ~63;
    const reuse = freeBySize.get(size);
    let ptr;
    if (reuse && reuse.length) ptr = reuse.pop();
    else {
      ptr = top;
      top += size;
      ensure(top);
    }
    live.set(ptr, size);
    return ptr;
  };
  const free = (ptr) => {
    if (!ptr) return;
    const size = live.get(ptr);
    live.delete(ptr);
    if (live.size === 0) {
      top = heapStart;
      freeBySize.clear();
    } else {
      if (!freeBySize.has(size)) freeBySize.set(size, []);
      freeBySize.get(size).push(ptr);
    }
  };
  const cstring = (ptr) => {
    const m = u8();
    let end = ptr;
    while (m[end]) end++;
    return Buffer.from(m.subarray(ptr, end)).toString();
  };
  const env = {
    memory,
    malloc,
    free,
    strlen: (p) => {
      const m = u8();
      let e = p;
      while (m[e]) e++;
      return e - p;
    },
    abort: () => {
      throw new Error("halide: abort()");
    },
    write: (fd, ptr, len) => {
      process.stderr.write(Buffer.from(u8().subarray(ptr, ptr + len)));
      return len;
    },
    getenv: () => 0,
    memcpy: (d, s, n) => {
      u8().copyWithin(d, s, s + n);
      return d;
    },
    memset: (d, v, n) => {
      u8().fill(v, d, d + n);
      return d;
    },
    fclose: () => 0,
    strcmp: (a, b) => {
      const x = cstring(a);
      const y = cstring(b);
      return x < y ? -1 : x > y ? 1 : 0;
    },
    strstr: (h, n) => {
      const at = cstring(h).indexOf(cstring(n));
      return at < 0 ? 0 : h + at;
    },
    __cxa_atexit: () => 0,
  };
  const imports = { env: {} };
  for (const { module: m, name } of WebAssembly.Module.imports(module)) {
    if (m !== "env") throw new Error(`${path}: unexpected import ${m}.${name}`);
    if (!(name in env)) {
      imports.env[name] = () => {
        throw new Error(`halide runtime called ${name}, which the harness does not provide`);
      };
    } else imports.env[name] = env[name];
  }
  const instance = await WebAssembly.instantiate(module, imports);
  heapStart = (instance.exports.__heap_base.value + 63) & ~63;
  top = heapStart;
  ensure(top);

  /** Allocates a buffer and its halide_buffer_t (wasm32 layout, 40 bytes). */
  const buffer = (typeCode, bits, dims) => {
    const count = dims.reduce((n, d) => n + (d.extent - 1) * d.stride, 1);
    const host = malloc(count * (bits / 8));
    const dimPtr = malloc(16 * dims.length);
    const desc = malloc(40);
    const view = new DataView(memory.buffer);
    for (let i = 0; i < 40; i++) view.setUint8(desc + i, 0);
    view.setUint32(desc + 12, host, true); // host
    view.setUint8(desc + 24, typeCode); // type.code: 0 int, 1 uint, 2 float
    view.setUint8(desc + 25, bits); // type.bits
    view.setUint16(desc + 26, 1, true); // type.lanes
    view.setInt32(desc + 28, dims.length, true);
    view.setUint32(desc + 32, dimPtr, true);
    dims.forEach((d, i) => {
      view.setInt32(dimPtr + 16 * i, d.min, true);
      view.setInt32(dimPtr + 16 * i + 4, d.extent, true);
      view.setInt32(dimPtr + 16 * i + 8, d.stride, true);
      view.setUint32(dimPtr + 16 * i + 12, 0, true);
    });
    return { desc, host, bytes: count * (bits / 8) };
  };
  /** Marks the current allocations as permanent (the images), so resets keep them. */
  const pin = () => {
    heapStart = top;
    live.clear();
    freeBySize.clear();
  };
  return { module, instance, memory, buffer, pin, exports: instance.exports, bytes: bytes.length };
}
