// Whether a parallel run's threads really ran side by side: runs one
// pipeline back to back on resident images and prints, for each run, the
// generated code's time (`execute`) and how many parallel-loop iterations
// each thread claimed (`stats.iterationsPerThread`, the driver first).
// When the iterations split evenly but `execute` is as long as on one
// thread, the threads took turns on one core: the machine, not the
// runtime, withheld the second core (on this 2-vCPU VM that happens in
// some processes and switches within a process; see BENCHMARKS.md,
// session 33).
//
// Usage (after scripts/build-web.sh):
//   node --no-liftoff bench/parallel-probe.mjs [--threads N] [--runs N] [--size WxH] [FILE.ag]
// Default FILE: the library gaussian (gray u16); 2 threads; 30 runs; 3072x2048.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { commandLine } from "./args.mjs";
import { median } from "./paired.mjs";
import { noisePixels } from "./pixels.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argent = await import(pathToFileURL(join(repo, "web", "dist", "index.js")).href);
const { option, rest } = commandLine();
const threads = Number(option("--threads", "2"));
const runs = Number(option("--runs", "30"));
const [W, H] = option("--size", "3072x2048").split("x").map(Number);
const file = rest[0] ?? join(repo, "bench", "schedules", "gaussian_u16_vertical_first_rows4.ag");

const runtime = await argent.createRuntime({ threads });
const pipeline = await runtime.compile(readFileSync(file, "utf8"));
const described = pipeline.inputs[0];
if (described.dims.length !== 2) throw new Error("parallel-probe takes a pipeline with a 2-D first input");
const input = await pipeline.allocateImage(described.name, { width: W, height: H, channels: 1 });
const output = await pipeline.allocateImage(pipeline.outputs[0].name, { width: W, height: H, channels: 1 });
input.data.set(noisePixels(input.data.constructor, W * H, 8 * input.data.BYTES_PER_ELEMENT));
const request = { inputs: { [described.name]: input }, into: { [pipeline.outputs[0].name]: output.data } };
const executes = [];
const lines = [];
for (let i = 0; i < runs; i++) {
  const result = await pipeline.run(request);
  executes.push(result.timings.execute);
  lines.push(`${result.timings.execute.toFixed(2)} ms [${result.stats.iterationsPerThread.join(" ")}]`);
}
console.log(`${file}, ${W}x${H}, ${threads} thread(s), ${runtime.mode}: execute and iterations per thread, run by run`);
for (let i = 0; i < lines.length; i += 6) console.log(`  ${lines.slice(i, i + 6).join(", ")}`);
console.log(`median execute ${median(executes).toFixed(2)} ms`);
pipeline.dispose();
runtime.dispose();
process.exit(0);
