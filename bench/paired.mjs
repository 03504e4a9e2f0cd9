// Paired measurements for the bench scripts that compare Argent with a
// baseline (bench/halide-ab.mjs, bench/library-ab.mjs): blocks of the two
// alternate, so each pair of adjacent blocks sees the same phase of a
// machine whose speed drifts, and ratios are taken pair by pair.

import { availableParallelism, loadavg } from "node:os";

/** The median of `values`. */
export function median(values) {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

/** The 25th and 75th percentiles of `values`. */
export function quartiles(values) {
  const v = [...values].sort((a, b) => a - b);
  return [v[Math.floor((v.length - 1) / 4)], v[Math.ceil((3 * (v.length - 1)) / 4)]];
}

/** Median of `runs` calls of `once`, each resolving to a time in ms. */
async function block(once, runs) {
  const times = [];
  for (let i = 0; i < runs; i++) times.push(await once());
  return median(times);
}

/** Times a call of `fn` (sync or async), in ms. */
export async function wallTime(fn) {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/**
 * One warm-up block of each, then `blocks` pairs of blocks of `runs` calls:
 * `first`'s block, then `second`'s. Each function resolves to the time of
 * one call (ms). Returns each side's block medians, in pair order.
 */
export async function pairedBlocks(first, second, { blocks, runs }) {
  await block(first, runs);
  await block(second, runs);
  const medians = { first: [], second: [] };
  for (let b = 0; b < blocks; b++) {
    medians.first.push(await block(first, runs));
    medians.second.push(await block(second, runs));
  }
  return medians;
}

/**
 * Runs this bench script again in `processes` child processes, one after
 * the other (with the same Node flags and the arguments `argv`), and prints
 * one table of the median, over the processes, of each row's paired ratio
 * (the bold `**N.NNx**` cell), with the lowest and highest.
 *
 * Why: the same module runs at different speeds in different processes on
 * this machine (the strip blur's module alone took 2.5 to 4.5 ms from one
 * process to the next, steady within each; where the memory lands seems to
 * decide it), so one process's pairs, however many, measure one draw of
 * both sides' placement. Ratios taken across processes average the draws.
 */
export async function acrossProcesses(script, argv, processes) {
  const { spawnSync } = await import("node:child_process");
  const rows = new Map();
  let header = null;
  for (let p = 0; p < processes; p++) {
    const child = spawnSync(process.execPath, [...process.execArgv, script, ...argv], { encoding: "utf8" });
    if (child.status !== 0) throw new Error(`${script} failed in process ${p + 1}:\n${child.stderr}`);
    for (const line of child.stdout.split("\n")) {
      if (p === 0 && !line.startsWith("|")) console.log(`(process 1) ${line}`);
      const ratio = /\*\*([0-9.]+)x\*\*/.exec(line);
      if (!line.startsWith("|")) continue;
      if (!ratio) {
        if (!line.startsWith("|---")) header ??= line.split("|").slice(1, -1).map((c) => c.trim());
        continue;
      }
      const cells = line.split("|").slice(1, -1).map((c) => c.trim());
      const key = cells.slice(0, cells.findIndex((c) => c.startsWith("**")) - 2).join(" | ");
      if (!rows.has(key)) rows.set(key, []);
      rows.get(key).push(Number(ratio[1]));
    }
  }
  const keyColumns = header ? header.slice(0, [...rows.keys()][0]?.split(" | ").length ?? 1) : ["workload"];
  console.log(`${processes} processes; ratio = median over the processes of each process's paired median`);
  console.log(`| ${keyColumns.join(" | ")} | ratio median | lowest-highest | per process |`);
  console.log(`|${keyColumns.map(() => "---|").join("")}---|---|---|`);
  for (const [key, ratios] of rows) {
    const sorted = [...ratios].sort((a, b) => a - b);
    console.log(
      `| ${key} | **${median(ratios).toFixed(2)}x** | ${sorted[0].toFixed(2)}-${sorted.at(-1).toFixed(2)}x | ${ratios.map((r) => r.toFixed(2)).join(" ")} |`,
    );
  }
}

/**
 * The `--processes N` option of a paired bench script: with N > 1, runs
 * the script (`scriptUrl`, its `import.meta.url`) N times through
 * `acrossProcesses`, without that option, and exits; otherwise returns.
 */
export async function acrossProcessesIfAsked(option, scriptUrl) {
  const processes = Number(option("--processes", "1"));
  if (processes <= 1) return;
  const { fileURLToPath } = await import("node:url");
  const argv = process.argv.slice(2);
  argv.splice(argv.indexOf("--processes"), 2);
  await acrossProcesses(fileURLToPath(scriptUrl), argv, processes);
  process.exit(0);
}

/**
 * A gray pipeline of `source` compiled on `runtime`, its input and output
 * allocated in its own memory (resident, as a library's images live in
 * its heap) with the input set to `pixels`, and a function that runs it
 * once and resolves to the time taken (ms).
 */
export async function residentGrayRun(runtime, source, pixels, width, height) {
  const pipeline = await runtime.compile(source);
  const shape = { width, height, channels: 1 };
  const input = await pipeline.allocateImage(pipeline.inputs[0].name, shape);
  const output = await pipeline.allocateImage(pipeline.outputs[0].name, shape);
  input.data.set(pixels);
  const request = { inputs: { [pipeline.inputs[0].name]: input }, into: { [pipeline.outputs[0].name]: output.data } };
  return { pipeline, run: () => wallTime(() => pipeline.run(request)) };
}

/** The line on the machine and the blocks that heads a paired table. */
export function pairedHeader(blocks, runsPerBlock, ratio) {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  return (
    `node ${process.version}, ${availableParallelism()} cores, load ${load}; ` +
    `${blocks} pairs of blocks of ${runsPerBlock} runs; ratio = ${ratio}`
  );
}
