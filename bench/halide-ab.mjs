// Argent against Halide 21's wasm-simd128 output for the same algorithm and
// schedule, measured in pairs: blocks of Halide calls and blocks of Argent
// runs alternate, and each pair of adjacent blocks gives one ratio
// (Argent's block median over Halide's; under 1 is faster). The median of
// those ratios is the figure for issue 4's "faster than Halide's wasm
// output for the same schedule" target. bench/run.mjs measures Halide's
// modules in their own sections, minutes before Argent's rows, and on a
// shared virtual machine whose speed drifts by 2x within minutes that
// ratio swings with the drift; adjacent blocks see the same phase.
//
// One thread on both sides (Halide's wasm runtime has no threads). Halide's
// figure is its module's call on buffers in its memory; Argent's is the
// runtime's `execute` (the generated module's `run`, on the driver worker)
// on resident images (input and output in the pipeline's memory: no
// copies), with the runtime's defaults.
//
// Usage (after `cargo xtask bench`, which links bench/build/halide_*.wasm,
// and scripts/build-web.sh):
//   node --no-liftoff bench/halide-ab.mjs [--blocks N] [--runs N] [--only NAME,...] [--processes N]
// Defaults: 9 pairs of blocks of 5 runs (3 for local Laplacian).
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { commandLine } from "./args.mjs";
import { loadHalide } from "./halide-module.mjs";
import { acrossProcessesIfAsked, median, pairedBlocks, quartiles } from "./paired.mjs";
import { noisePixels } from "./pixels.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const argent = await import(pathToFileURL(join(repo, "web", "dist", "index.js")).href);
const { option } = commandLine();
// --processes N: the whole measurement in N fresh processes, one table of
// the ratios' median across them (see `acrossProcesses`).
await acrossProcessesIfAsked(option, import.meta.url);
const blocks = Number(option("--blocks", "9"));
const runsPerBlock = Number(option("--runs", "5"));
const only = option("--only", null)?.split(",");
const buildDir = join(here, "build");

const plane = (w, h) => [
  { min: 0, extent: w, stride: 1 },
  { min: 0, extent: h, stride: w },
];
const interleaved = (w, h, c) => [
  { min: 0, extent: w, stride: c },
  { min: 0, extent: h, stride: w * c },
  { min: 0, extent: c, stride: 1 },
];
const planar = (w, h, c) => [
  { min: 0, extent: w, stride: 1 },
  { min: 0, extent: h, stride: w },
  { min: 0, extent: c, stride: w * h },
];

// The workloads of bench/run.mjs's Halide sections, with the Argent program
// whose schedule bench/halide/gen.py copies.
const workloads = [
  { name: "blur paper", module: "halide_blur_paper", file: "examples/box_blur.ag", size: [3072, 2048, 1], bits: 16, halideDims: plane, ArrayType: Uint16Array, pixelBits: 12, args: [] },
  { name: "blur strip", module: "halide_blur_strip", file: "bench/schedules/box_blur_strips.ag", size: [3072, 2048, 1], bits: 16, halideDims: plane, ArrayType: Uint16Array, pixelBits: 12, args: [] },
  { name: "unsharp", module: "halide_unsharp", file: "examples/unsharp_mask.ag", size: [3072, 2048, 3], bits: 8, halideDims: interleaved, ArrayType: Uint8Array, pixelBits: 8, args: [1.5], params: { amount: 1.5 } },
  { name: "local laplacian", module: "halide_local_laplacian", file: "examples/local_laplacian.ag", size: [1536, 1024, 3], bits: 16, halideDims: planar, ArrayType: Uint16Array, pixelBits: 16, args: [8, 1.0, 1.0], params: { levels: 8, alpha: 1.0, beta: 1.0 }, runs: 3 },
  { name: "bilateral grid", module: "halide_bilateral_grid", file: "examples/bilateral_grid.ag", size: [1536, 1024, 3], bits: 8, halideDims: interleaved, ArrayType: Uint8Array, pixelBits: 8, args: [0.1], params: { r_sigma: 0.1 } },
].filter((w) => !only || only.includes(w.name));

console.log(`node ${process.version}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}; ${blocks} pairs of blocks; ratio = Argent execute / Halide call, block medians`);
console.log("| workload | Halide ms | Argent ms | ratio median | ratio quartiles |");
console.log("|---|---|---|---|---|");
const runtime = await argent.createRuntime({ threads: 1 });
try {
  for (const w of workloads) {
    const path = join(buildDir, `${w.module}.wasm`);
    if (!existsSync(path)) throw new Error(`${path} is missing: run cargo xtask bench first`);
    const [width, height, channels] = w.size;
    const pixels = noisePixels(w.ArrayType, width * height * channels, w.pixelBits);

    const h = await loadHalide(path);
    const dims = w.halideDims(width, height, channels);
    const input = h.buffer(1, w.bits, dims);
    const output = h.buffer(1, w.bits, dims);
    h.pin();
    new w.ArrayType(h.memory.buffer, input.host, pixels.length).set(pixels);
    const fn = h.exports[w.module];
    const halideOnce = () => {
      const started = performance.now();
      const status = fn(input.desc, ...w.args, output.desc);
      if (status !== 0) throw new Error(`${w.module} returned error ${status}`);
      return performance.now() - started;
    };

    const pipeline = await runtime.compile(readFileSync(join(repo, w.file), "utf8"));
    const shape = { width, height, channels };
    const residentIn = await pipeline.allocateImage(pipeline.inputs[0].name, shape);
    const outputDescription = pipeline.outputs[0];
    const residentOut = await pipeline.allocateImage(outputDescription.name, outputDescription.dims.length === 3 ? shape : { width, height });
    residentIn.data.set(pixels);
    const request = { inputs: { [pipeline.inputs[0].name]: residentIn }, params: w.params, into: { [outputDescription.name]: residentOut.data } };
    const argentOnce = async () => (await pipeline.run(request)).timings.execute;

    const { first: halide, second: ours } = await pairedBlocks(halideOnce, argentOnce, { blocks, runs: w.runs ?? runsPerBlock });
    const ratios = ours.map((o, b) => o / halide[b]);
    const [q1, q3] = quartiles(ratios);
    console.log(`| ${w.name} | ${median(halide).toFixed(2)} | ${median(ours).toFixed(2)} | **${median(ratios).toFixed(2)}x** | ${q1.toFixed(2)}-${q3.toFixed(2)}x |`);
    pipeline.dispose();
  }
} finally {
  runtime.dispose();
}
process.exit(0);
