// How the runtime's time splits on 1 and 2 threads for the two workloads of
// issue 4's scaling target (blur 3072x2048 u16, under the paper's tiles and
// under Halide's strips, and unsharp mask 3072x2048 RGB u8): medians of
// `total` (what a caller of `run` waits for), `execute`
// (the generated code), `marshal` (copying pixels in and out) and
// `overhead` (messages, waking helpers). Runs of the runtimes alternate, so
// the load of a shared machine weighs on every configuration alike and the
// ratios of one run can be compared; the paired speed-up is the median of
// the ratios of runs taken one after the other, steadier still when the
// machine's speed drifts during the run. Medians, the best run (min), and the
// median CPU time of the whole process per run (all threads: on a loaded
// machine two threads may get no more CPU than one, which this shows).
//
// Usage (after scripts/build-web.sh): node bench/runtime-threads.mjs [--runs N]
//   [--configs 1,2,1p] (1: one thread on shared memory, 2: two threads,
//   1p: one thread on a private memory, 2t: two threads in tiles mode, any
//   other number N: N threads) [--into] (write outputs into arrays
//   reused across runs instead of new ones) [--resident] (keep the input and
//   the output in the pipeline's memory, `Pipeline.allocateImage`: no
//   copies; a runtime without shared memory copies them anyway)
//   [--size WxH] (default 3072x2048)
//   [--files A.ag,B.ag] (pipelines of one gray u16 input, run instead of
//   the default workloads unless --workloads is given too)
//   [--workloads blur,gaussian] (the workloads whose names contain one of
//   the words; default: blur, strip blur and unsharp)
//   [--back-to-back K] (each configuration runs K times in a row before the
//   next, the first of each K not counted: a caller running frames or a
//   batch, whose workers poll between runs by default; without it runs of
//   the configurations alternate one by one, the workers never poll, and
//   each run pays their wake-up)
//   [--baseline DIR] (also run every configuration on the runtime built in
//   DIR, a copy of web/ with its dist/ and pkg/, alternating with this
//   build's runs: an A/B of two builds under the same load)
// Prints one table and the machine's load average.
//
// On a machine shared with other users' builds, 2-thread figures mostly
// measure the scheduler (the calibration line shows how much of a second
// core the process got). Running the script in a session of its own with
// a raised autogroup priority (root) gives it both cores most of the time:
//   setsid bash -c 'echo -19 > /proc/$$/autogroup; exec nice -n -19 node bench/runtime-threads.mjs ...'
// (nice alone does not help: the kernel shares the CPU between sessions
// first, whatever the nice values inside them).

import { readFileSync } from "node:fs";
import { loadavg, availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Worker } from "node:worker_threads";
import { noisePixels } from "./pixels.mjs";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
// ARGENT_WEB_DIST points at another build of the runtime (e.g. an older one, to compare).
const argent = await import(pathToFileURL(resolve(process.env.ARGENT_WEB_DIST ?? join(repo, "web/dist"), "index.js")).href);
const baselineAt = process.argv.indexOf("--baseline");
const builds = [{ label: "", argent }];
if (baselineAt > 0) {
  const dir = resolve(process.argv[baselineAt + 1]);
  builds.push({ label: "baseline: ", argent: await import(pathToFileURL(join(dir, "dist", "index.js")).href) });
}
const runsAt = process.argv.indexOf("--runs");
const RUNS = runsAt > 0 ? Number(process.argv[runsAt + 1]) : 21;
const sizeAt = process.argv.indexOf("--size");
const [W, H] = sizeAt > 0 ? process.argv[sizeAt + 1].split("x").map(Number) : [3072, 2048];

/** Deterministic pixels with `bits` significant bits. */
function image(ArrayType, channels, bits) {
  return { data: noisePixels(ArrayType, W * H * channels, bits), width: W, height: H, channels };
}

const workloads = [
  { name: `blur ${W}x${H} u16`, file: "examples/box_blur.ag", input: () => image(Uint16Array, 1, 12) },
  // The same blur under Halide's strip schedule (see bench/run.mjs).
  { name: `blur ${W}x${H} u16, strip schedule`, file: "bench/schedules/box_blur_strips.ag", input: () => image(Uint16Array, 1, 12) },
  { name: `unsharp ${W}x${H} RGB u8`, file: "examples/unsharp_mask.ag", input: () => image(Uint8Array, 3, 8) },
  // The gaussian of the 10x-OpenCV.js target (bench/library-ab.mjs).
  {
    name: `gaussian 5x5 ${W}x${H} u16`,
    file: "bench/schedules/gaussian_u16_vertical_first_rows4.ag",
    input: () => image(Uint16Array, 1, 12),
  },
];
// --files A.ag,B.ag adds pipelines of one gray u16 input (12 significant
// bits), each a workload named after its file: schedule variants of the
// blur or the gaussian, to see which scale.
const filesAt = process.argv.indexOf("--files");
if (filesAt > 0) {
  for (const file of process.argv[filesAt + 1].split(",")) {
    workloads.push({ extra: true, name: `${file} ${W}x${H} u16`, file, input: () => image(Uint16Array, 1, 12) });
  }
}
// --workloads blur,gaussian keeps the workloads whose names contain one of
// the words (default: all but the gaussian, as before it was added).
const workloadsAt = process.argv.indexOf("--workloads");
const chosenWorkloads =
  workloadsAt > 0
    ? workloads.filter((w) => process.argv[workloadsAt + 1].split(",").some((word) => w.name.includes(word)))
    : workloads.filter((w) => !w.name.startsWith("gaussian"));
if (filesAt > 0 && workloadsAt < 0) chosenWorkloads.splice(0, chosenWorkloads.length, ...workloads.filter((w) => w.extra));
const allConfigs = {
  1: { label: "1 thread", options: { threads: 1 } },
  2: { label: "2 threads", options: { threads: 2 } },
  "1p": { label: "1 thread, sharedMemory: false", options: { threads: 1, sharedMemory: false } },
  "2t": { label: "2 threads, tiles mode (sharedMemory: false)", options: { threads: 2, sharedMemory: false } },
};
const configsAt = process.argv.indexOf("--configs");
// Any other whole number N is N threads on shared memory (for machines with more cores).
function configFor(key) {
  if (allConfigs[key]) return allConfigs[key];
  if (/^\d+$/.test(key)) return { label: `${key} threads`, options: { threads: Number(key) } };
  throw new Error(`unknown configuration in --configs: ${key}`);
}
const configs = (configsAt > 0 ? process.argv[configsAt + 1] : "1,2,1p").split(",").map(configFor);
const KEYS = ["total", "execute", "marshal", "copyIn", "copyOut", "overhead"];
const reuseOutputs = process.argv.includes("--into");
const resident = process.argv.includes("--resident");
const backToBackAt = process.argv.indexOf("--back-to-back");
const backToBack = backToBackAt > 0 ? Number(process.argv[backToBackAt + 1]) : 1;
const median = (values) => {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

/**
 * What two threads can get from this machine right now: the same integer
 * loop on one worker, then split over two, as a speed-up. On a machine
 * whose cores other processes keep busy it stays well under 2, and no
 * pipeline can scale better than it.
 */
async function calibrate() {
  const code = `const { parentPort } = require("node:worker_threads");
parentPort.on("message", (n) => { let x = 0; for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345) | 0; parentPort.postMessage(x); });`;
  const workers = [new Worker(code, { eval: true }), new Worker(code, { eval: true })];
  const job = (worker, n) => new Promise((done) => (worker.once("message", done), worker.postMessage(n)));
  const N = 6e7;
  await Promise.all(workers.map((w) => job(w, 1e6)));
  const ratios = [];
  for (let i = 0; i < 3; i++) {
    let t = performance.now();
    await job(workers[0], N);
    const one = performance.now() - t;
    t = performance.now();
    await Promise.all([job(workers[0], N / 2), job(workers[1], N / 2)]);
    ratios.push(one / (performance.now() - t));
  }
  await Promise.all(workers.map((w) => w.terminate()));
  return median(ratios);
}

const loadBefore = loadavg();
const calibrationBefore = await calibrate();
const rows = [];
for (const workload of chosenWorkloads) {
  const source = readFileSync(resolve(repo, workload.file), "utf8");
  const input = workload.input();
  const setups = [];
  for (const build of builds) for (const config of configs) {
    const runtime = await build.argent.createRuntime(config.options);
    const pipeline = await runtime.compile(source);
    const request = { inputs: { [pipeline.inputs[0].name]: input } };
    if (resident) {
      const [inputName, output] = [pipeline.inputs[0].name, pipeline.outputs[0]];
      const residentInput = await pipeline.allocateImage(inputName, { width: W, height: H, channels: input.channels });
      residentInput.data.set(input.data);
      const channels = output.dims.length === 3 ? input.channels : 1;
      const residentOutput = await pipeline.allocateImage(output.name, { width: W, height: H, channels });
      request.inputs = { [inputName]: residentInput };
      request.into = { [output.name]: residentOutput.data };
    } else if (reuseOutputs) {
      const first = await pipeline.run(request);
      request.into = Object.fromEntries(Object.entries(first.outputs).map(([name, image]) => [name, image.data]));
    }
    for (let i = 0; i < 3; i++) await pipeline.run(request); // warm-up
    setups.push({ build, config, runtime, pipeline, request, times: Object.fromEntries(KEYS.map((k) => [k, []])), cpu: [] });
  }
  for (let r = 0; r < RUNS; r++) {
    for (const setup of setups) for (let k = 0; k < backToBack; k++) {
      const cpuBefore = process.cpuUsage();
      const { timings } = await setup.pipeline.run(setup.request);
      const cpu = process.cpuUsage(cpuBefore);
      // In a block of runs back to back the first follows the other
      // configurations' runs, as every run does without --back-to-back.
      if (backToBack > 1 && k === 0) continue;
      setup.cpu.push((cpu.user + cpu.system) / 1000);
      // Builds before marshal and overhead existed: derive them.
      const marshal = timings.marshal ?? timings.copyIn + timings.copyOut;
      const t = { ...timings, marshal, overhead: timings.overhead ?? timings.total - timings.execute - marshal };
      for (const key of KEYS) setup.times[key].push(t[key]);
    }
  }
  for (const setup of setups) {
    // Speed-ups are against the first configuration of the same build.
    const base = setups.find((s) => s.build === setup.build);
    const m = Object.fromEntries(KEYS.map((k) => [k, median(setup.times[k])]));
    rows.push({
      workload: workload.name,
      config: `${setup.build.label}${setup.config.label} (${setup.runtime.mode}, ${setup.pipeline.abi.sharedMemory ? "shared" : "private"} memory)`,
      ...m,
      minTotal: Math.min(...setup.times.total),
      minExecute: Math.min(...setup.times.execute),
      cpu: median(setup.cpu),
      speedupTotal: median(base.times.total) / m.total,
      speedupExecute: median(base.times.execute) / m.execute,
      // Runs of all configurations alternate, so run r of each saw the
      // same phase of a machine whose speed drifts: the median of the
      // per-run ratios is steadier than the ratio of the medians.
      pairedTotal: median(base.times.total.map((t, r) => t / setup.times.total[r])),
      pairedExecute: median(base.times.execute.map((t, r) => t / setup.times.execute[r])),
    });
    setup.runtime.dispose();
  }
}

const f = (x) => x.toFixed(2);
console.log(
  `node ${process.version}, ${availableParallelism()} cores, ${RUNS} alternating runs per configuration, ` +
    (backToBack > 1 ? `blocks of ${backToBack} runs back to back (the first not counted), ` : "") +
    (resident
      ? "input and output resident in the pipeline's memory (no copies)"
      : reuseOutputs
        ? "outputs into reused arrays"
        : "new output arrays each run"),
);
console.log(`load average before: ${loadBefore.map(f).join(" ")}, after: ${loadavg().map(f).join(" ")}`);
console.log(
  `2-thread speed-up of a plain integer loop on this machine (calibration): ${f(calibrationBefore)} before, ${f(await calibrate())} after`,
);
console.log(
  "| workload | configuration | total ms | execute ms | marshal ms (in + out) | overhead ms | min total | min execute | CPU ms (all threads) | x 1 thread (total) | x 1 thread (execute) | x 1 thread, paired (total / execute) |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.workload} | ${r.config} | ${f(r.total)} | ${f(r.execute)} | ${f(r.marshal)} (${f(r.copyIn)} + ${f(r.copyOut)}) | ${f(r.overhead)} | ${f(r.minTotal)} | ${f(r.minExecute)} | ${f(r.cpu)} | ${f(r.speedupTotal)} | ${f(r.speedupExecute)} | ${f(r.pairedTotal)} / ${f(r.pairedExecute)} |`,
  );
}
