// Argent against OpenCV.js on the same workloads, measured in pairs: blocks
// of OpenCV.js calls and blocks of Argent runs alternate, and each pair of
// adjacent blocks gives one ratio (OpenCV.js's block median over Argent's).
// The median of those ratios is the figure for issue 4's "10x OpenCV.js"
// target. On a shared virtual machine whose speed drifts by 2x within
// minutes, ratios of medians taken minutes apart (bench/run.mjs measures
// each library in its own section) swing with the drift; adjacent blocks
// see the same phase, so their ratio does not.
//
// Argent runs on resident images (input and output in the pipeline's
// memory: the like-for-like figure, as OpenCV.js's Mats live in its own
// heap), on 1 thread and on all cores, with the runtime's defaults (so
// back-to-back runs inside a block let the workers poll,
// `pollBetweenRuns: "auto"`); the first run of each block follows the
// other library's block and wakes them by message.
//
// Usage (after scripts/build-web.sh and `npm ci` in bench/):
//   node --no-liftoff bench/library-ab.mjs [--blocks N] [--runs N] [--threads 1,2] [--processes N]
// Defaults: 15 blocks of 7 runs each, 1 thread and all cores.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { commandLine, threadCountsOption } from "./args.mjs";
import { acrossProcessesIfAsked, median, pairedBlocks, pairedHeader, quartiles, residentGrayRun, wallTime } from "./paired.mjs";
import { noisePixels } from "./pixels.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const require = createRequire(import.meta.url);
const argent = await import(pathToFileURL(join(repo, "web", "dist", "index.js")).href);
const { option } = commandLine();
// --processes N: the whole measurement in N fresh processes, one table of
// the ratios' median across them (see `acrossProcesses`).
await acrossProcessesIfAsked(option, import.meta.url);
const blocks = Number(option("--blocks", "15"));
const runsPerBlock = Number(option("--runs", "7"));
const threadCounts = threadCountsOption(option);
const W = 3072;
const H = 2048;

// OpenCV.js's Emscripten module is a thenable that resolves to itself
// (awaiting it never settles): wait for its classes instead.
const cv = require("@techstark/opencv-js");
for (let waited = 0; !cv.Mat; waited += 10) {
  if (waited > 30000) throw new Error("OpenCV.js did not initialise in 30 s");
  await new Promise((done) => setTimeout(done, 10));
}
const version = JSON.parse(readFileSync(join(here, "node_modules", "@techstark/opencv-js", "package.json"), "utf8")).version;

const pixels = noisePixels(Uint16Array, W * H, 12);
const src = new cv.Mat(H, W, cv.CV_16UC1);
src.data16U.set(pixels);
const dst = new cv.Mat();
const anchor = new cv.Point(-1, -1);

// The schedules bench/run.mjs gives Argent for these workloads.
const workloads = [
  {
    name: "gaussian 5x5 3072x2048 u16",
    library: `OpenCV.js ${version} cv.GaussianBlur 5x5`,
    call: () => cv.GaussianBlur(src, dst, new cv.Size(5, 5), 0, 0, cv.BORDER_REPLICATE),
    file: "bench/schedules/gaussian_u16_vertical_first_rows4.ag",
  },
  {
    name: "blur 3x3 3072x2048 u16",
    library: `OpenCV.js ${version} cv.blur 3x3`,
    call: () => cv.blur(src, dst, new cv.Size(3, 3), anchor, cv.BORDER_REPLICATE),
    file: "bench/schedules/box_blur_strips.ag",
  },
];

console.log(pairedHeader(blocks, runsPerBlock, "library block median / Argent block median"));
console.log("| workload | library | Argent | library ms | Argent ms | ratio median | ratio quartiles |");
console.log("|---|---|---|---|---|---|---|");
for (const workload of workloads) {
  const source = readFileSync(join(repo, workload.file), "utf8");
  for (const threads of threadCounts) {
    const runtime = await argent.createRuntime({ threads });
    try {
      const { pipeline, run } = await residentGrayRun(runtime, source, pixels, W, H);
      const { first: library, second: ours } = await pairedBlocks(() => wallTime(workload.call), run, {
        blocks,
        runs: runsPerBlock,
      });
      const ratios = library.map((l, b) => l / ours[b]);
      const [q1, q3] = quartiles(ratios);
      console.log(
        `| ${workload.name} | ${workload.library} | Argent ${threads} thread${threads > 1 ? "s" : ""} (${runtime.mode}, resident) | ` +
          `${median(library).toFixed(2)} | ${median(ours).toFixed(2)} | **${median(ratios).toFixed(1)}x** | ${q1.toFixed(1)}-${q3.toFixed(1)}x |`,
      );
      pipeline.dispose();
    } finally {
      runtime.dispose();
    }
  }
}
src.delete();
dst.delete();
process.exit(0);
