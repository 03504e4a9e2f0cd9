// The benchmark harness behind `cargo xtask bench`: every implementation is
// measured side by side in one Node process, medians of repeated runs after
// warm-up, and printed as one table (plus JSON and Markdown in --out).
//
// Usage: node run.mjs --build DIR [--quick] [--out DIR] [--only SUBSTRING[,SUBSTRING...]] [--examples NAME[,NAME...]]
// DIR holds roofline.wasm (written by xtask) and the Halide modules
// (halide_*.wasm, linked by xtask from bench/halide/gen.py's objects).

import { readFileSync, existsSync, writeFileSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
import { loadHalide } from "./halide-module.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const require = createRequire(import.meta.url);
/** The installed version of a bench dependency (some packages do not export package.json). */
const versionOf = (name) => JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8")).version;

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
};
const quick = flag("--quick");
const buildDir = resolve(option("--build", join(here, "build")));
const outDir = option("--out", null);
const only = option("--only", null);
// --examples a,b: only these examples/*.ag in the Argent section.
const onlyExamples = option("--examples", null);
const cores = availableParallelism();

// Repetitions: enough for a stable median on a noisy 2-core machine, few
// enough that the whole run stays within its time budget.
const REPS = quick ? { runs: 5, warmup: 1, seconds: 2 } : { runs: 15, warmup: 3, seconds: 8 };

const W = 3072;
const H = 2048;
const results = [];
const problems = [];

/** Times `fn` (sync or async): warm-up runs, then up to `runs` runs or `seconds`. */
async function measure(fn, { runs = REPS.runs, warmup = REPS.warmup, seconds = REPS.seconds, minRuns = 3 } = {}) {
  for (let i = 0; i < warmup; i++) await fn();
  const times = [];
  const start = performance.now();
  while (times.length < runs && (times.length < minRuns || performance.now() - start < seconds * 1000)) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  return { median, min: times[0], runs: times.length };
}

function record(row) {
  results.push(row);
  const ms = row.median == null ? "-" : row.median.toFixed(2);
  console.error(`  ${row.workload} | ${row.impl} | ${row.threads ?? "-"}t | ${ms} ms ${row.note ?? ""}`);
}

async function section(name, body) {
  if (only && !only.split(",").some((part) => name.includes(part))) return;
  console.error(`[${name}]`);
  try {
    await body();
  } catch (error) {
    problems.push(`${name}: ${error.stack ?? error}`);
    console.error(`  ${name} failed: ${error.stack ?? error}`);
  }
}

// ---------------------------------------------------------------- images

/** A deterministic xorshift generator, so every run sees the same pixels. */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

/** A photo-like test image: smooth gradients plus noise, `bits` significant bits. */
function makeImage(ArrayType, width, height, channels, bits, seed = 7) {
  const next = rng(seed);
  const data = new ArrayType(width * height * channels);
  const max = 2 ** bits - 1;
  let i = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < channels; c++) {
        const smooth = (0.5 + 0.25 * Math.sin(x / 97 + c) + 0.2 * Math.cos(y / 61 - c)) * max;
        const noise = ((next() & 1023) / 1023 - 0.5) * 0.1 * max;
        data[i++] = Math.max(0, Math.min(max, Math.round(smooth + noise)));
      }
    }
  }
  return data;
}

// ------------------------------------------------------ JavaScript references

/** examples/box_blur.ag in plain JavaScript: u16 sums wrap, /3 twice, repeat edge. */
function jsBlur(input, width, height, output, tmp = new Uint16Array(width * height)) {
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) {
      const l = x > 0 ? x - 1 : 0;
      const r = x < width - 1 ? x + 1 : width - 1;
      tmp[row + x] = ((input[row + l] + input[row + x] + input[row + r]) & 0xffff) / 3;
    }
  }
  for (let y = 0; y < height; y++) {
    const up = (y > 0 ? y - 1 : 0) * width;
    const row = y * width;
    const down = (y < height - 1 ? y + 1 : height - 1) * width;
    for (let x = 0; x < width; x++) {
      output[row + x] = ((tmp[up + x] + tmp[row + x] + tmp[down + x]) & 0xffff) / 3;
    }
  }
  return output;
}

/** examples/unsharp_mask.ag on interleaved RGB u8, in f32 arithmetic. */
function jsUnsharp(input, width, height, amount, output) {
  const f = Math.fround;
  const C = 3;
  const at = (x, y, c) => input[(Math.min(Math.max(y, 0), height - 1) * width + Math.min(Math.max(x, 0), width - 1)) * C + c];
  const bx = (x, y, c) => f(f(f(at(x - 1, y, c) + f(2 * at(x, y, c))) + at(x + 1, y, c)) / 4);
  const a = f(amount);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < C; c++) {
        const blur = f(f(f(bx(x, y - 1, c) + f(2 * bx(x, y, c))) + bx(x, y + 1, c)) / 4);
        const v = at(x, y, c);
        const sharp = c === 3 ? v : f(v + f(a * f(v - blur)));
        const s = f(sharp + 0.5);
        output[(y * width + x) * C + c] = s <= 0 ? 0 : s >= 255 ? 255 : Math.trunc(s);
      }
    }
  }
  return output;
}

// ------------------------------------------------------------ Wasm helpers

function check(status, what) {
  if (status !== 0) throw new Error(`${what} returned error ${status}`);
}

function compareArrays(a, b) {
  let mismatches = 0;
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) {
      mismatches++;
      maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
    }
  }
  return { mismatches, maxDiff };
}

// ============================================================= the sections

const blurInput = makeImage(Uint16Array, W, H, 1, 12);
const blurReference = jsBlur(blurInput, W, H, new Uint16Array(W * H));
const mp = (w, h) => (w * h) / 1e6;

await section("roofline", async () => {
  const path = join(buildDir, "roofline.wasm");
  const bytes = readFileSync(path);
  const memory = new WebAssembly.Memory({ initial: Math.ceil((2 * W * H * 2 + 65536) / 65536) });
  const { instance } = await WebAssembly.instantiate(bytes, { env: { memory } });
  const n = W * H * 2;
  new Uint16Array(memory.buffer, 0, W * H).set(blurInput);
  const t = await measure(() => instance.exports.copy(0, n, n));
  const same = compareArrays(new Uint16Array(memory.buffer, n, W * H), blurInput);
  if (same.mismatches) throw new Error("the roofline copy is wrong");
  record({ workload: "blur 3072x2048 u16", impl: "stream copy (v128.load/store), roofline", threads: 1, layout: "gray u16", ...t, mpix: mp(W, H) });
  // The same copy over 8 times the bytes, which do not fit in the last-level
  // cache: what the copy costs when the image comes from DRAM.
  const big = 8 * n;
  memory.grow(Math.ceil((2 * big + 65536 - memory.buffer.byteLength) / 65536));
  const tb = await measure(() => instance.exports.copy(0, big, big), { runs: quick ? 3 : 7 });
  record({ workload: "blur 3072x2048 u16", impl: "stream copy of 8x the bytes (DRAM-bound), per image", threads: 1, layout: "gray u16", median: tb.median / 8, min: tb.min / 8, runs: tb.runs, mpix: mp(W, H) });
});

await section("js", async () => {
  const out = new Uint16Array(W * H);
  const tmp = new Uint16Array(W * H);
  const t = await measure(() => jsBlur(blurInput, W, H, out, tmp), { runs: quick ? 5 : 9 });
  record({ workload: "blur 3072x2048 u16", impl: "plain JavaScript", threads: 1, layout: "gray u16", ...t, mpix: mp(W, H) });
});

for (const schedule of ["paper", "strip"]) {
  await section(`halide blur ${schedule}`, async () => {
    const h = await loadHalide(join(buildDir, `halide_blur_${schedule}.wasm`));
    const input = h.buffer(1, 16, [
      { min: 0, extent: W, stride: 1 },
      { min: 0, extent: H, stride: W },
    ]);
    const output = h.buffer(1, 16, [
      { min: 0, extent: W, stride: 1 },
      { min: 0, extent: H, stride: W },
    ]);
    h.pin();
    new Uint16Array(h.memory.buffer, input.host, W * H).set(blurInput);
    const fn = h.exports[`halide_blur_${schedule}`];
    check(fn(input.desc, output.desc), "halide blur");
    const diff = compareArrays(new Uint16Array(h.memory.buffer, output.host, W * H), blurReference);
    if (diff.mismatches) throw new Error(`Halide's blur differs from the JS reference at ${diff.mismatches} pixels`);
    const t = await measure(() => fn(input.desc, output.desc));
    const label = schedule === "paper" ? "Halide 21 wasm-simd128, paper schedule (= box_blur.ag)" : "Halide 21 wasm-simd128, strip schedule";
    record({ workload: "blur 3072x2048 u16", impl: label, threads: 1, layout: "gray u16", ...t, mpix: mp(W, H), note: "bit-exact vs JS", sameScheduleAs: schedule === "paper" ? "box_blur" : "box_blur_strips" });
  });
}

await section("halide unsharp", async () => {
  const h = await loadHalide(join(buildDir, "halide_unsharp.wasm"));
  const C = 3;
  const dims = [
    { min: 0, extent: W, stride: C },
    { min: 0, extent: H, stride: W * C },
    { min: 0, extent: C, stride: 1 },
  ];
  const input = h.buffer(1, 8, dims);
  const output = h.buffer(1, 8, dims);
  h.pin();
  const photo = makeImage(Uint8Array, W, H, C, 8, 11);
  new Uint8Array(h.memory.buffer, input.host, W * H * C).set(photo);
  const fn = h.exports.halide_unsharp;
  const amount = 1.5;
  check(fn(input.desc, amount, output.desc), "halide unsharp");
  const reference = jsUnsharp(photo, W, H, amount, new Uint8Array(W * H * C));
  const diff = compareArrays(new Uint8Array(h.memory.buffer, output.host, W * H * C), reference);
  const t = await measure(() => fn(input.desc, amount, output.desc));
  const note = diff.mismatches ? `differs from JS f32 reference at ${diff.mismatches} samples (max ${diff.maxDiff})` : "bit-exact vs JS";
  record({ workload: "unsharp 3072x2048 RGB u8 (f32 math)", impl: "Halide 21 wasm-simd128, unsharp_mask.ag schedule", threads: 1, layout: "interleaved RGB u8", ...t, mpix: mp(W, H), note, sameScheduleAs: "unsharp_mask" });
});

await section("halide local laplacian", async () => {
  const h = await loadHalide(join(buildDir, "halide_local_laplacian.wasm"));
  const w = 1536;
  const hh = 1024;
  const dims = [
    { min: 0, extent: w, stride: 1 },
    { min: 0, extent: hh, stride: w },
    { min: 0, extent: 3, stride: w * hh },
  ];
  const input = h.buffer(1, 16, dims);
  const output = h.buffer(1, 16, dims);
  h.pin();
  new Uint16Array(h.memory.buffer, input.host, w * hh * 3).set(makeImage(Uint16Array, w, hh, 3, 16, 5));
  const fn = h.exports.halide_local_laplacian;
  check(fn(input.desc, 8, 1.0, 1.0, output.desc), "halide local laplacian");
  const t = await measure(() => fn(input.desc, 8, 1.0, 1.0, output.desc), { runs: quick ? 3 : 9 });
  record({ workload: "local laplacian 1536x1024 RGB u16 (8 levels)", impl: "Halide 21 wasm-simd128, local_laplacian.ag schedule", threads: 1, layout: "planar RGB u16", ...t, mpix: mp(w, hh), sameScheduleAs: "local_laplacian" });
});

await section("halide bilateral grid", async () => {
  const h = await loadHalide(join(buildDir, "halide_bilateral_grid.wasm"));
  const w = 1536;
  const hh = 1024;
  const C = 3;
  const dims = [
    { min: 0, extent: w, stride: C },
    { min: 0, extent: hh, stride: w * C },
    { min: 0, extent: C, stride: 1 },
  ];
  const input = h.buffer(1, 8, dims);
  const output = h.buffer(1, 8, dims);
  h.pin();
  new Uint8Array(h.memory.buffer, input.host, w * hh * C).set(makeImage(Uint8Array, w, hh, C, 8, 13));
  const fn = h.exports.halide_bilateral_grid;
  const rSigma = 0.1;
  check(fn(input.desc, rSigma, output.desc), "halide bilateral grid");
  const t = await measure(() => fn(input.desc, rSigma, output.desc), { runs: quick ? 3 : 9 });
  record({ workload: "bilateral grid 1536x1024 RGB u8", impl: "Halide 21 wasm-simd128, bilateral_grid.ag schedule", threads: 1, layout: "interleaved RGB u8", ...t, mpix: mp(w, hh), sameScheduleAs: "bilateral_grid" });
});

await section("opencv", async () => {
  // The Emscripten module is a thenable that resolves to itself (awaiting
  // it never settles), so wait for its classes to appear instead.
  const cv = require("@techstark/opencv-js");
  for (let waited = 0; !cv.Mat; waited += 10) {
    if (waited > 30000) throw new Error("OpenCV.js did not initialise in 30 s");
    await new Promise((done) => setTimeout(done, 10));
  }
  const version = versionOf("@techstark/opencv-js");
  const src = new cv.Mat(H, W, cv.CV_16UC1);
  src.data16U.set(blurInput);
  const dst = new cv.Mat();
  const anchor = new cv.Point(-1, -1);
  const t1 = await measure(() => cv.blur(src, dst, new cv.Size(3, 3), anchor, cv.BORDER_REPLICATE));
  record({ workload: "blur 3072x2048 u16", impl: `OpenCV.js ${version} cv.blur 3x3`, threads: 1, layout: "gray u16", ...t1, mpix: mp(W, H), note: "normalized box (rounds), not /3/3" });
  const t2 = await measure(() => cv.GaussianBlur(src, dst, new cv.Size(5, 5), 0, 0, cv.BORDER_REPLICATE));
  record({ workload: "gaussian 5x5 3072x2048 u16", impl: `OpenCV.js ${version} cv.GaussianBlur 5x5`, threads: 1, layout: "gray u16", ...t2, mpix: mp(W, H) });
  src.delete();
  dst.delete();
});

await section("vips", async () => {
  const Vips = (await import("wasm-vips")).default;
  const vips = await Vips();
  const version = versionOf("wasm-vips");
  const defaultThreads = vips.concurrency();
  const image = vips.Image.newFromMemory(blurInput, W, H, 1, vips.BandFormat.ushort);
  const box = vips.Image.newFromArray([[1, 1, 1], [1, 1, 1], [1, 1, 1]], 9, 0);
  const gauss = vips.Image.newFromArray([1, 4, 6, 4, 1], 16, 0);
  // writeToMemory forces the lazy pipeline to run; integer masks keep u16.
  // libvips runs on its own thread pool: measured with its default size
  // (what users get) and on one thread (next to the 1-thread baselines).
  for (const threads of [...new Set([defaultThreads, 1])]) {
    vips.concurrency(threads);
    const t1 = await measure(() => image.conv(box, { precision: vips.Precision.integer }).writeToMemory());
    record({ workload: "blur 3072x2048 u16", impl: `wasm-vips ${version} conv 3x3 box`, threads, layout: "gray u16", ...t1, mpix: mp(W, H) });
    const t2 = await measure(() => image.convsep(gauss, { precision: vips.Precision.integer }).writeToMemory());
    record({ workload: "gaussian 5x5 3072x2048 u16", impl: `wasm-vips ${version} convsep [1 4 6 4 1]/16`, threads, layout: "gray u16", ...t2, mpix: mp(W, H) });
  }
  globalThis.__vips = vips;
});

await section("photon", async () => {
  const photon = require("@silvia-odwyer/photon-node");
  const version = versionOf("@silvia-odwyer/photon-node");
  const rgba = makeImage(Uint8Array, W, H, 4, 8, 3);
  // photon's filters work in place on a PhotonImage, so each run starts from
  // a fresh copy; the copy is timed separately and subtracted.
  const copy = await measure(() => new photon.PhotonImage(rgba, W, H).free());
  const t1 = await measure(() => {
    const img = new photon.PhotonImage(rgba, W, H);
    photon.box_blur(img);
    img.free();
  }, { runs: quick ? 3 : 9 });
  const sub = (t) => ({ ...t, median: t.median - copy.median, min: t.min - copy.min });
  record({ workload: "blur 3072x2048 RGBA u8", impl: `photon-node ${version} box_blur (3x3)`, threads: 1, layout: "RGBA u8", ...sub(t1), mpix: mp(W, H), note: `image copy-in (${copy.median.toFixed(1)} ms) subtracted` });
  const t2 = await measure(() => {
    const img = new photon.PhotonImage(rgba, W, H);
    photon.gaussian_blur(img, 2);
    img.free();
  }, { runs: quick ? 3 : 9 });
  record({ workload: "gaussian 5x5 3072x2048 RGBA u8", impl: `photon-node ${version} gaussian_blur(radius 2)`, threads: 1, layout: "RGBA u8", ...sub(t2), mpix: mp(W, H), note: "copy-in subtracted" });
});

// ================================================================= Argent

const webDist = join(repo, "web", "dist", "index.js");
const webPkg = join(repo, "web", "pkg");
const argentBuilt = existsSync(webDist) && existsSync(webPkg);

/** Makes an input image for a pipeline input description. */
function inputFor(description, width, height) {
  const types = { u8: [Uint8Array, 8], bool: [Uint8Array, 1], u16: [Uint16Array, 12], u32: [Uint32Array, 16], i8: [Int8Array, 6], i16: [Int16Array, 12], i32: [Int32Array, 16], f32: [Float32Array, 0] };
  const [ArrayType, bits] = types[description.type];
  const channels = description.dims.length >= 3 ? 3 : 1;
  let data;
  if (ArrayType === Float32Array) {
    data = new Float32Array(makeImage(Uint16Array, width, height, channels, 16).map((v) => v / 65535));
  } else data = makeImage(ArrayType, width, height, channels, bits);
  return { data, width, height, channels };
}

/** Rejects when `promise` takes longer than `ms`, so one slow example cannot stall the run. */
function deadline(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what}: over the ${(ms / 1000).toFixed(0)} s budget`), { timedOut: true })), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
const EXAMPLE_BUDGET_MS = quick ? 12000 : 30000;

let peakRss = 0;
const sampleRss = () => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
};

if (!argentBuilt) {
  record({ workload: "blur 3072x2048 u16", impl: "argent: not built (run scripts/build-web.sh)", threads: null, layout: "gray u16", median: null, min: null });
} else {
  await section("argent", async () => {
    const argent = await import(pathToFileURL(webDist).href);
    const examples = readdirSync(join(repo, "examples"))
      .filter((f) => f.endsWith(".ag") && (!onlyExamples || onlyExamples.split(",").includes(f.replace(/\.ag$/, ""))))
      .sort();
    const threadCounts = [...new Set([1, cores])];
    for (const threads of threadCounts) {
      let runtime = await argent.createRuntime({ threads });
      try {
        for (const file of examples) {
          const name = file.replace(/\.ag$/, "");
          const source = readFileSync(join(repo, "examples", file), "utf8");
          // The paper's size for the blur (next to the baselines above);
          // half of it per side for the rest, so the full run stays short.
          const big = name === "box_blur" || name === "unsharp_mask";
          // Examples compared with a Halide row keep that row's size in
          // quick runs too, so the ratio compares the same work.
          const halideSize = name === "local_laplacian" || name === "bilateral_grid";
          const [w, h] = big ? [W, H] : halideSize ? [1536, 1024] : quick ? [768, 512] : [1536, 1024];
          const started = performance.now();
          const left = () => Math.max(1, EXAMPLE_BUDGET_MS - (performance.now() - started));
          try {
            const compileTimes = [];
            let pipeline;
            for (let i = 0; i < (quick ? 2 : 5); i++) {
              pipeline?.dispose();
              pipeline = await deadline(runtime.compile(source), left(), `compiling ${name}`);
              compileTimes.push(pipeline.timings);
            }
            const med = (key) => {
              const v = compileTimes.map((t) => t[key]).sort((a, b) => a - b);
              return v[v.length >> 1];
            };
            const inputs = {};
            for (const d of pipeline.inputs) inputs[d.name] = inputFor(d, w, h);
            const request = { inputs };
            // Pipelines that read a larger region than they write (a
            // downsampler, a filter without a boundary condition) get an
            // output small enough for the input.
            try {
              await deadline(pipeline.run(request), left(), `running ${name}`);
            } catch (error) {
              if (error.kind !== "input-too-small") throw error;
              request.outputSize = { width: (w >> 1) - 8, height: (h >> 1) - 8 };
              await deadline(pipeline.run(request), left(), `running ${name}`);
            }
            // Warm-up: V8 compiles the generated module with its baseline
            // tier first and tiers the big function up later, so the first
            // runs understate the code. A few more warm-up runs (the first
            // one above counts) before timing, like the other rows.
            for (let i = 0; i < (quick ? 2 : 4) && left() > EXAMPLE_BUDGET_MS / 2; i++) {
              await deadline(pipeline.run(request), left(), `running ${name}`);
            }
            let execute = [];
            // Medians over what is left of the budget.
            const t = await measure(async () => {
              const result = await deadline(pipeline.run(request), left(), `running ${name}`);
              execute.push(result.timings.execute);
              sampleRss();
            }, { runs: quick ? 7 : 15, warmup: 0, minRuns: 1, seconds: Math.min(quick ? 3 : 6, left() / 2000) });
            execute.sort((a, b) => a - b);
            const memBytes = pipeline.memory?.buffer?.byteLength ?? null;
            record({
              workload: { box_blur: "blur 3072x2048 u16", unsharp_mask: "unsharp 3072x2048 RGB u8 (f32 math)", local_laplacian: "local laplacian 1536x1024 RGB u16 (8 levels)", bilateral_grid: "bilateral grid 1536x1024 RGB u8" }[name] ?? `${name} ${w}x${h}${request.outputSize ? ` -> ${request.outputSize.width}x${request.outputSize.height}` : ""}`,
              impl: `Argent (${pipeline.simd ? "simd128" : "scalar"}, ${runtime.mode})`,
              threads: runtime.threads,
              layout: pipeline.inputs.map((d) => `${d.name}:${d.type}(${d.dims.join(",")})`).join(" "),
              ...t,
              execute: execute[execute.length >> 1],
              // Megapixels of output computed.
              mpix: request.outputSize ? mp(request.outputSize.width, request.outputSize.height) : mp(w, h),
              argent: true,
              example: name,
              compile: { toBytes: med("toBytes"), parse: med("parse"), lower: med("lower"), codegen: med("codegen"), engineCompile: med("engineCompile"), total: med("total") },
              wasmBytes: pipeline.wasm?.length ?? null,
              memoryBytes: memBytes,
              note: `compile ${med("toBytes").toFixed(1)} ms to bytes + ${med("engineCompile").toFixed(1)} ms engine`,
            });
            pipeline.dispose();
          } catch (error) {
            if (error.timedOut) {
              // The runtime is still busy with the slow run: start afresh.
              runtime.dispose();
              runtime = await argent.createRuntime({ threads });
            }
            problems.push(`argent ${name} (${threads} threads): ${error.message ?? error}`);
            sampleRss();
            record({ workload: `${name}`, impl: `Argent: failed (${String(error.message ?? error).split("\n")[0].slice(0, 80)})`, threads, median: null, min: null });
          }
        }
      } finally {
        runtime.dispose();
      }
    }
  });
}

// ======================================== Argent on the libraries' workloads

// The blurs and gaussians of OpenCV.js, wasm-vips and photon above, written
// in Argent and run on the same images and layouts (gray u16 for OpenCV.js
// and wasm-vips, interleaved RGBA u8 for photon), so each library row has
// an Argent row of the same workload. Each source is the algorithm plus a
// schedule in the style of examples/gaussian5x5.ag (parallel strips, a
// sliding window for the horizontal pass, vectors across x; RGBA with its
// four channels unrolled, so each group of pixels leaves as one
// interleaved store).
/**
 * Times `pipeline` on resident images (`allocateImage`: input and output in
 * its memory, no copies), the input filled with `image`'s pixels, after
 * checking that it computes `withCopies` (what its run with copies gave;
 * `what` names it in the error). Returns `measure`'s figures and the
 * median `execute`.
 */
async function timeResident(pipeline, image, request, withCopies, what) {
  const [input, output] = [pipeline.inputs[0].name, pipeline.outputs[0].name];
  const residentIn = await pipeline.allocateImage(input, { width: W, height: H, channels: image.channels });
  const residentOut = await pipeline.allocateImage(output, request.outputSize);
  residentIn.data.set(image.data);
  const residentRequest = { ...request, inputs: { [input]: residentIn }, into: { [output]: residentOut.data } };
  for (let i = 0; i < 4; i++) await pipeline.run(residentRequest);
  if (compareArrays(residentOut.data, withCopies).mismatches) throw new Error(`${what} differs from its run with copies`);
  const execute = [];
  const t = await measure(async () => {
    const result = await pipeline.run(residentRequest);
    execute.push(result.timings.execute);
  });
  execute.sort((a, b) => a - b);
  return { ...t, execute: execute[execute.length >> 1] };
}

/** `pollBetweenRuns` of the library workloads' polling rows, in ms. */
const POLL_MS = 1;
const LIBRARY_WORKLOADS = [
  // The blur of the rows above under Halide's strip schedule (the paper's
  // tiles are examples/box_blur.ag, in section "argent"): what a user
  // after the fastest blur writes. Its output must equal the JavaScript
  // reference, and its time compares with Halide's module of the same
  // schedule.
  {
    workload: "blur 3072x2048 u16",
    layout: "gray u16",
    example: "box_blur_strips",
    schedule: "strip",
    reference: () => blurReference,
    input: () => ({ data: blurInput, width: W, height: H, channels: 1 }),
    source: readFileSync(join(repo, "bench", "schedules", "box_blur_strips.ag"), "utf8"),
  },
  // The sums are at most 256 * 65535, so the rounded result always fits in
  // u16: `sat_u16` is the same function as `u16` here, and it compiles to
  // one unsigned narrow (the shift clears the sign bit), where a wrapping
  // cast masks each half first. Strips of 128 rows in parallel; the
  // vertical pass first (the sums are exact in u32, so the result is the
  // same bit for bit), four rows per step, unrolled inside the vector loop
  // over x, so the four stores widen the 8 input rows they read once; then
  // the horizontal pass reads those 32-bit sums with plain loads; both in
  // tiles 256 columns wide, so the sums stay in the L1 cache. On the
  // Intel machine of sessions 12-19 this is a quarter faster than the
  // horizontal pass first (gaussian_u16_sliding_rows4.ag, sessions 15-18),
  // which widens each of its five taps (execute, medians of alternating
  // runs, `node bench/schedule-ab.mjs --channels 1
  // bench/schedules/gaussian_u16_*.ag`; BENCHMARKS.md, sessions 10, 15
  // and 19).
  {
    workload: "gaussian 5x5 3072x2048 u16",
    layout: "gray u16",
    input: () => ({ data: blurInput, width: W, height: H, channels: 1 }),
    source: readFileSync(join(repo, "bench", "schedules", "gaussian_u16_vertical_first_rows4.ag"), "utf8"),
  },
  {
    workload: "blur 3072x2048 RGBA u8",
    layout: "RGBA u8",
    input: () => ({ data: makeImage(Uint8Array, W, H, 4, 8, 3), width: W, height: H, channels: 4 }),
    source: readFileSync(join(repo, "web", "test", "fixtures", "rgba_box_blur.ag"), "utf8"),
  },
  {
    workload: "gaussian 5x5 3072x2048 RGBA u8",
    layout: "RGBA u8",
    input: () => ({ data: makeImage(Uint8Array, W, H, 4, 8, 3), width: W, height: H, channels: 4 }),
    // examples/gaussian5x5.ag's algorithm, its schedule with four channels
    // unrolled (the example itself takes any channel count).
    source: `${readFileSync(join(repo, "examples", "gaussian5x5.ag"), "utf8").split("schedule {")[0]}
schedule {
  out.bound(c, 0, 4).split(y, yo, yi, 32).reorder(c, x, yi, yo).unroll(c).vectorize(x, 16).parallel(yo)
  blur_x.bound(c, 0, 4).store_at(out, yo).compute_at(out, yi).reorder(c, x, y).unroll(c).vectorize(x, 8)
}`,
  },
];

if (argentBuilt) {
  await section("argent library workloads", async () => {
    const argent = await import(pathToFileURL(webDist).href);
    for (const threads of [...new Set([1, cores])]) {
      const runtime = await argent.createRuntime({ threads });
      // Runs back to back, as the libraries' calls are timed, with the
      // workers polling a fixed 1 ms after every run (`pollBetweenRuns`;
      // the rows of `runtime` have the default, "auto", which polls after
      // short gaps between runs on one fewer workers than the cores, and
      // sleeps on shared memory otherwise). Created when first needed: a
      // new runtime's compiler warms up in the background (about 2 s of a
      // core) until its first compile, which would slow what runs meanwhile.
      let polling = null;
      try {
        for (const w of LIBRARY_WORKLOADS) {
          // The first compile in a fresh runtime also compiles the
          // compiler's own Wasm (all of it at once under --no-liftoff):
          // the figure reported is a second compile's.
          (await runtime.compile(w.source)).dispose();
          const pipeline = await runtime.compile(w.source);
          const image = w.input();
          const request = { inputs: { [pipeline.inputs[0].name]: image }, outputSize: { width: W, height: H, channels: image.channels } };
          if (pipeline.outputs[0].dims.length < 3) delete request.outputSize.channels;
          const into = { [pipeline.outputs[0].name]: new image.data.constructor(image.data.length) };
          for (let i = 0; i < 4; i++) await pipeline.run({ ...request, into });
          if (w.reference) {
            const diff = compareArrays(Object.values(into)[0], w.reference());
            if (diff.mismatches) throw new Error(`Argent's ${w.workload} (${w.example}) differs from the JS reference at ${diff.mismatches} pixels`);
          }
          const execute = [];
          const t = await measure(async () => {
            const result = await pipeline.run({ ...request, into });
            execute.push(result.timings.execute);
          });
          execute.sort((a, b) => a - b);
          record({ workload: w.workload, impl: `Argent (${pipeline.simd ? "simd128" : "scalar"}, ${runtime.mode})`, threads, layout: w.layout, ...t, execute: execute[execute.length >> 1], mpix: mp(W, H), argentLibrary: true, example: w.example, schedule: w.schedule, note: `${w.schedule ? `${w.schedule} schedule (${w.example}.ag), ${w.reference ? "bit-exact vs JS, " : ""}` : ""}outputs into a reused array; compile ${pipeline.timings.toBytes.toFixed(1)} ms to bytes` });
          // The libraries' rows time their call on images already in their
          // own heaps (an OpenCV.js Mat, a vips image): the like-for-like
          // Argent figure keeps input and output in the pipeline's memory
          // too (resident images), so a run copies no pixels.
          const withCopies = Object.values(into)[0];
          const tr = await timeResident(pipeline, image, request, withCopies, `Argent's ${w.workload} (${w.example}) on resident images`);
          record({ workload: w.workload, impl: `Argent (${pipeline.simd ? "simd128" : "scalar"}, ${runtime.mode}, resident images)`, threads, layout: w.layout, ...tr, mpix: mp(W, H), argentLibrary: true, resident: true, example: w.example, schedule: w.schedule, note: `${w.schedule ? `${w.schedule} schedule, ` : ""}input and output in the pipeline's memory (allocateImage): no copies` });
          polling ??= await argent.createRuntime({ threads, pollBetweenRuns: POLL_MS });
          const polled = await polling.compile(w.source);
          const tp = await timeResident(polled, image, request, withCopies, `Argent's ${w.workload} (${w.example}) polling between runs`);
          record({ workload: w.workload, impl: `Argent (${polled.simd ? "simd128" : "scalar"}, ${polling.mode}, resident images, polling)`, threads, layout: w.layout, ...tp, mpix: mp(W, H), argentLibrary: true, resident: true, poll: true, example: w.example, schedule: w.schedule, note: `${w.schedule ? `${w.schedule} schedule, ` : ""}resident images; workers poll ${POLL_MS} ms between runs (pollBetweenRuns)` });
          polled.dispose();
          pipeline.dispose();
        }
      } finally {
        polling?.dispose();
        runtime.dispose();
      }
    }
  });
}

// ================================================ Argent's module alone, hot

// The Halide rows time the module's call alone, on the same input and
// output buffers run after run; the runtime's `execute` above runs after
// the runtime has copied the input in and the previous output out (48 MiB
// through the caches per run), which costs the blur 1-5 ms here. For a
// like-for-like "x Halide same schedule", the blur's generated module is
// also run the Halide way (bench/raw-module.mjs), under both schedules,
// its output checked against the JavaScript reference.
if (argentBuilt) {
  await section("argent hot", async () => {
    const argent = await import(pathToFileURL(webDist).href);
    const { rawModule } = await import("./raw-module.mjs");
    const runtime = await argent.createRuntime({ threads: 1 });
    try {
      for (const [example, file] of [["box_blur", join(repo, "examples", "box_blur.ag")], ["box_blur_strips", join(repo, "bench", "schedules", "box_blur_strips.ag")]]) {
        const pipeline = await runtime.compile(readFileSync(file, "utf8"));
        const m = rawModule(pipeline, W, H, 2);
        new Uint16Array(m.memory.buffer, m.inBase, W * H).set(blurInput);
        m.call();
        const diff = compareArrays(new Uint16Array(m.memory.buffer, m.outBase, W * H), blurReference);
        if (diff.mismatches) throw new Error(`Argent's ${example} differs from the JS reference at ${diff.mismatches} pixels`);
        const t = await measure(() => m.call());
        const schedule = example === "box_blur" ? "paper" : "strip";
        record({ workload: "blur 3072x2048 u16", impl: `Argent's module alone, hot (as the Halide rows), ${schedule} schedule`, threads: 1, layout: "gray u16", ...t, mpix: mp(W, H), argentHot: true, example, note: "bit-exact vs JS" });
        pipeline.dispose();
      }
    } finally {
      runtime.dispose();
    }
  });
}

// ================================================================= report

const roofline = results.find((r) => r.impl.startsWith("stream copy"))?.median ?? null;
const halideStrip = results.find((r) => r.impl.includes("strip schedule"))?.median ?? null;

const sameSchedule = Object.fromEntries(results.filter((r) => r.sameScheduleAs && r.median != null).map((r) => [r.sameScheduleAs, r.median]));

function table() {
  // Ratios use the kernel time: for Argent the runtime's `execute` timing
  // (the generated code on all threads), which excludes copying images in
  // and out of the module's memory, as the Halide and roofline calls do.
  const header = ["workload", "implementation", "threads", "layout", "median ms", "min ms", "Argent execute ms", "MP/s", "x roofline", "x Halide strip", "x Halide same schedule"];
  const rows = results.map((r) => {
    const blur = r.workload.startsWith("blur 3072x2048");
    const kernel = r.execute ?? r.median;
    return [
      r.workload,
      r.impl + (r.note ? ` (${r.note})` : ""),
      r.threads == null ? "-" : String(r.threads),
      r.layout ?? "-",
      r.median == null ? "-" : r.median.toFixed(2),
      r.min == null ? "-" : r.min.toFixed(2),
      r.execute == null ? "" : r.execute.toFixed(2),
      kernel == null || !r.mpix ? "-" : (r.mpix / (kernel / 1000)).toFixed(0),
      blur && roofline && kernel != null ? (kernel / roofline).toFixed(2) : "",
      blur && halideStrip && kernel != null ? (kernel / halideStrip).toFixed(2) : "",
      (r.argent || r.argentLibrary || r.argentHot) && sameSchedule[r.example] && kernel != null ? (kernel / sameSchedule[r.example]).toFixed(2) : "",
    ];
  });
  return { header, rows };
}

const { header, rows } = table();
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const r of rows) console.log(line(r));

// Each library row against Argent on the same workload and layout: the
// library's median over Argent's median (both what a caller waits for,
// copies included) and over Argent's execute time, per Argent thread count.
const libraryRows = results.filter((r) => /OpenCV|wasm-vips|photon/.test(r.impl) && r.median != null);
const argentSame = (workload) => results.filter((r) => r.workload === workload && r.impl.startsWith("Argent") && !r.argentHot && r.median != null);
if (libraryRows.some((r) => argentSame(r.workload).length)) {
  console.log("\nLibraries against Argent on the same workload (library median / Argent median, and / Argent execute):");
  for (const lib of libraryRows) {
    const versus = argentSame(lib.workload)
      .map((a) => `Argent ${a.threads}t${a.schedule ? ` (${a.schedule} schedule)` : a.example === "box_blur" ? " (paper schedule)" : ""}${a.resident ? " resident" : ""}${a.poll ? " polling" : ""}: ${(lib.median / a.median).toFixed(1)}x (${(lib.median / (a.execute ?? a.median)).toFixed(1)}x execute)`)
      .join(", ");
    if (versus) console.log(`  ${lib.workload} | ${lib.impl} ${lib.threads}t ${lib.median.toFixed(1)} ms | ${versus}`);
  }
}

const argentRows = results.filter((r) => r.argent);
if (argentRows.length) {
  console.log("\nArgent compile (medians, ms) and memory:");
  for (const r of argentRows) {
    console.log(`  ${r.example.padEnd(26)} ${r.threads}t  parse ${r.compile.parse?.toFixed(2)}  lower ${r.compile.lower?.toFixed(2)}  codegen ${r.compile.codegen?.toFixed(2)}  toBytes ${r.compile.toBytes?.toFixed(2)}  engine ${r.compile.engineCompile?.toFixed(2)}  module ${r.wasmBytes} B  memory ${r.memoryBytes == null ? "?" : (r.memoryBytes / 2 ** 20).toFixed(1) + " MiB"}`);
  }
}
sampleRss();
console.log(`\npeak RSS of the Node process: ${(peakRss / 2 ** 20).toFixed(0)} MiB; cores: ${cores}; node ${process.version}; ${quick ? "quick" : "full"} run`);
if (problems.length) {
  console.log("\nproblems:");
  for (const p of problems) console.log("  " + p.split("\n")[0]);
}

if (outDir) {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, "results.json"), JSON.stringify({ node: process.version, cores, quick, results, problems }, null, 2));
  const md = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
  writeFileSync(join(outDir, "results.md"), md + "\n");
}
// Argent's own failures are results (rows above); only a baseline that
// could not run makes the harness fail.
process.exit(problems.some((p) => !p.startsWith("argent")) ? 1 : 0);
