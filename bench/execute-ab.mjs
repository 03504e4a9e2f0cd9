// The runtime's `execute` time (the generated code alone) of one pipeline
// on a pseudo-random image, for comparing two builds of the compiler: run
// it alternately with each build's `web/dist` (ARGENT_DIST), each run in a
// process of its own. Two builds in one process compete for the same
// cores and caches, and the same module bytes were measured 30 and 36 ms
// in two runtimes of one process (BENCHMARKS.md, session 11).
//
//   ARGENT_DIST=/path/to/web/dist/index.js node bench/execute-ab.mjs \
//     [--threads N] [--rounds R] [--size WxH] [--channels C] PIPELINE.ag
//
// Prints the median and the minimum of `timings.execute` over the rounds
// after three warm-up runs (V8 optimises the module meanwhile).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { commandLine } from "./args.mjs";
import { noisePixels } from "./pixels.mjs";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const { option, rest: args } = commandLine();
const threads = Number(option("--threads", "1"));
const rounds = Number(option("--rounds", "80"));
const [width, height] = option("--size", "3072x2048").split("x").map(Number);
const planes = Number(option("--channels", "3"));
const [file] = args;
if (!file) throw new Error("usage: node bench/execute-ab.mjs [--threads N] [--rounds R] [--size WxH] [--channels C] PIPELINE.ag");

const argent = await import(process.env.ARGENT_DIST ?? join(repo, "web", "dist", "index.js"));
const runtime = await argent.createRuntime({ threads });
const pipeline = await runtime.compile(readFileSync(file, "utf8"));
const input = pipeline.inputs[0];
const channels = input.dims.length === 3 ? planes : 1;
// 12 significant bits for u16 (as box_blur.ag expects), [0, 1) for f32.
const data =
  input.type === "f32"
    ? Float32Array.from(noisePixels(Uint16Array, width * height * channels, 12), (v) => v / 4096)
    : noisePixels(input.type === "u16" ? Uint16Array : Uint8Array, width * height * channels, input.type === "u16" ? 12 : 8);
const times = [];
for (let r = 0; r < rounds + 3; r++) {
  const result = await pipeline.run({
    inputs: { [input.name]: { data, width, height, channels } },
    outputSize: { width, height },
  });
  if (r >= 3) times.push(result.timings.execute);
}
times.sort((a, b) => a - b);
console.log(
  `${file.split("/").pop()} ${width}x${height}, ${threads} thread(s), ${runtime.mode}: execute median ${times[times.length >> 1].toFixed(3)} ms, min ${times[0].toFixed(3)} ms (${rounds} runs)`,
);
await runtime.dispose();
