// How close a workload runs to a copy of the same bytes through the same
// runtime: Argent's own copy pipeline (`out(x, y) = in(x, y)`, strips of
// 64 rows in parallel, 8 lanes) against the gaussian and the strip blur of
// bench/library-ab.mjs, on 1 thread and on all cores, with resident images
// (input and output in the pipeline's memory). Blocks of the copy and of
// the workload alternate (bench/paired.mjs); the ratio is the workload's
// block median over the copy's. On 2 threads the copy is the bound that
// memory and the runtime's dispatch set together, which the single-thread
// v128 copy of `cargo xtask bench` (no workers) does not show.
//
// Usage (after scripts/build-web.sh):
//   node --no-liftoff bench/copy-ab.mjs [--blocks N] [--runs N] [--threads 1,2] [--processes N]
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { commandLine, threadCountsOption } from "./args.mjs";
import { acrossProcessesIfAsked, median, pairedBlocks, pairedHeader, quartiles, residentGrayRun } from "./paired.mjs";
import { noisePixels } from "./pixels.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const argent = await import(pathToFileURL(join(repo, "web", "dist", "index.js")).href);
const { option } = commandLine();
await acrossProcessesIfAsked(option, import.meta.url);
const blocks = Number(option("--blocks", "11"));
const runsPerBlock = Number(option("--runs", "7"));
const threadCounts = threadCountsOption(option);
const W = 3072;
const H = 2048;
const pixels = noisePixels(Uint16Array, W * H, 12);

const COPY = `input u16 in(x, y)
out(x, y) = in(x, y)
output out
schedule {
  out.split(y, yo, yi, 64).parallel(yo).vectorize(x, 8)
}`;
const workloads = [
  { name: "gaussian 5x5 3072x2048 u16", file: "bench/schedules/gaussian_u16_vertical_first_rows4.ag" },
  { name: "blur 3x3 3072x2048 u16 (strips)", file: "bench/schedules/box_blur_strips.ag" },
];

console.log(pairedHeader(blocks, runsPerBlock, "workload block median / copy block median"));
console.log("| workload | threads | copy ms | workload ms | x copy (median) | x copy quartiles |");
console.log("|---|---|---|---|---|---|");
for (const workload of workloads) {
  const source = readFileSync(join(repo, workload.file), "utf8");
  for (const threads of threadCounts) {
    const runtime = await argent.createRuntime({ threads });
    try {
      const copy = await residentGrayRun(runtime, COPY, pixels, W, H);
      const work = await residentGrayRun(runtime, source, pixels, W, H);
      const { first: copies, second: works } = await pairedBlocks(copy.run, work.run, { blocks, runs: runsPerBlock });
      const ratios = works.map((w, b) => w / copies[b]);
      const [q1, q3] = quartiles(ratios);
      console.log(
        `| ${workload.name} | ${threads} (${runtime.mode}) | ${median(copies).toFixed(2)} | ${median(works).toFixed(2)} | ` +
          `**${median(ratios).toFixed(2)}x** | ${q1.toFixed(2)}-${q3.toFixed(2)}x |`,
      );
      copy.pipeline.dispose();
      work.pipeline.dispose();
    } finally {
      runtime.dispose();
    }
  }
}
process.exit(0);
