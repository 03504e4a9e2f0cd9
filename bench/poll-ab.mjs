// Polling between runs (`RuntimeOptions.pollBetweenRuns`) against not
// polling, on runs back to back with resident images (no copies). Two
// runtimes, one polling, take turns in blocks of consecutive runs; the
// first run of each block follows the other runtime's runs, so it is
// dropped (run by run alternation would never let the polling workers find
// a next run). Prints per runtime the medians of the whole run (what a
// caller of `run` waits for), of `execute`, and of the process's CPU time
// per run (all threads), and checks that both compute the same pixels.
//
// Usage (after scripts/build-web.sh):
//   node bench/poll-ab.mjs [--threads N] [--poll MS|auto] [--blocks N] [--runs N]
//     [--size WxH] [--channels C] [--gap MS] PIPELINE.ag ...
// Defaults: 2 threads, "auto" (the runtime's default), 8 blocks of 10
// runs, 3072x2048, 3 channels (a 2-D input ignores --channels). The
// runtime that does not poll sets pollBetweenRuns: 0. --gap waits that
// many milliseconds before each run: a caller that runs now and then.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { commandLine } from "./args.mjs";
import { noisePixels } from "./pixels.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argent = await import(pathToFileURL(join(repo, "web", "dist", "index.js")).href);
const { option, rest: files } = commandLine();
const threads = Number(option("--threads", "2"));
const pollOption = option("--poll", "auto");
const pollMs = pollOption === "auto" ? "auto" : Number(pollOption);
const blocks = Number(option("--blocks", "8"));
const runsPerBlock = Number(option("--runs", "10"));
const [W, H] = option("--size", "3072x2048").split("x").map(Number);
const channels = Number(option("--channels", "3"));
const gapMs = Number(option("--gap", "0"));
if (files.length === 0) throw new Error("usage: node bench/poll-ab.mjs [options] PIPELINE.ag ...");

const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
console.log(
  `${W}x${H}, ${threads} thread(s), resident images, ${blocks} blocks of ${runsPerBlock} runs ` +
    `${gapMs > 0 ? `${gapMs} ms apart` : "back to back"} (ms, medians):`,
);
for (const file of files) {
  const source = readFileSync(file, "utf8");
  const setups = [];
  for (const poll of [0, pollMs]) {
    const runtime = await argent.createRuntime({ threads, pollBetweenRuns: poll });
    const pipeline = await runtime.compile(source);
    const [input, output] = [pipeline.inputs[0], pipeline.outputs[0]];
    const planes = input.dims.length > 2 ? channels : 1;
    const Array_ = input.type === "u16" ? Uint16Array : Uint8Array;
    const size = { width: W, height: H, ...(output.dims.length > 2 ? { channels: planes } : {}) };
    const residentIn = await pipeline.allocateImage(input.name, { width: W, height: H, channels: planes });
    const residentOut = await pipeline.allocateImage(output.name, size);
    residentIn.data.set(noisePixels(Array_, W * H * planes, 8 * Array_.BYTES_PER_ELEMENT));
    const request = { inputs: { [input.name]: residentIn }, outputSize: size, into: { [output.name]: residentOut.data } };
    for (let i = 0; i < 5; i++) await pipeline.run(request);
    setups.push({ poll, runtime, pipeline, request, out: residentOut.data, whole: [], execute: [], cpu: [] });
  }
  try {
    if (setups[0].out.some((v, i) => v !== setups[1].out[i])) throw new Error(`${file}: polling computes other pixels`);
    for (let block = 0; block < blocks; block++) {
      for (const setup of setups) {
        for (let run = 0; run <= runsPerBlock; run++) {
          if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
          const cpu = process.cpuUsage();
          const started = performance.now();
          const result = await setup.pipeline.run(setup.request);
          const whole = performance.now() - started;
          const used = process.cpuUsage(cpu);
          if (run === 0) continue;
          setup.whole.push(whole);
          setup.execute.push(result.timings.execute);
          setup.cpu.push((used.user + used.system) / 1000);
        }
      }
    }
    console.log(`  ${file}`);
    for (const s of setups) {
      console.log(
        `    ${s.poll === "auto" ? 'polling "auto"' : s.poll ? `polling ${s.poll} ms` : "no polling"}: whole run ${median(s.whole).toFixed(3)} (best ${Math.min(...s.whole).toFixed(3)}), ` +
          `execute ${median(s.execute).toFixed(3)}, CPU ${median(s.cpu).toFixed(3)} per run`,
      );
    }
  } finally {
    for (const s of setups) s.runtime.dispose();
  }
}
