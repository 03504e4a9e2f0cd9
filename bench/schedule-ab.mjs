// An A/B of schedules: compiles each pipeline file in one runtime and runs
// them in turn, round after round, on the same deterministic image, so the
// machine's load weighs on all alike. Prints each file's median and best
// `execute` (the generated code on all threads) and checks that every
// output equals the first file's, bit for bit.
//
// Usage (after scripts/build-web.sh):
//   node bench/schedule-ab.mjs [--threads N] [--rounds N] [--size WxH] [--channels C] A.ag B.ag ...
// The image is u8 or u16 after the first file's input; a 2-D input ignores
// --channels. Defaults: 2 threads, 41 rounds, 3072x2048, 3 channels.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { commandLine } from "./args.mjs";
import { noisePixels } from "./pixels.mjs";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argent = await import(pathToFileURL(join(repo, "web", "dist", "index.js")).href);
const { option, flag, rest: files } = commandLine();
const threads = Number(option("--threads", "2"));
const rounds = Number(option("--rounds", "41"));
const [W, H] = option("--size", "3072x2048").split("x").map(Number);
const channels = Number(option("--channels", "3"));
const resident = flag("--resident");
if (files.length === 0) throw new Error("usage: node bench/schedule-ab.mjs [options] A.ag B.ag ...");

const runtime = await argent.createRuntime({ threads });
try {
  const pipelines = [];
  for (const file of files) pipelines.push(await runtime.compile(readFileSync(file, "utf8")));
  const input = pipelines[0].inputs[0];
  const planes = input.dims.length > 2 ? channels : 1;
  const Array_ = input.type === "u16" ? Uint16Array : Uint8Array;
  const data = noisePixels(Array_, W * H * planes, 8 * Array_.BYTES_PER_ELEMENT);
  const image = { data, width: W, height: H, channels: planes };
  const outputSize = (pipeline) =>
    ({ width: W, height: H, ...(pipeline.outputs[0].dims.length > 2 ? { channels: planes } : {}) });
  // Each pipeline's request: the shared image and a fresh output, or, with
  // --resident, images in its own memory (the input filled once).
  const requests = [];
  for (const pipeline of pipelines) {
    const [inputName, outputName] = [pipeline.inputs[0].name, pipeline.outputs[0].name];
    if (!resident) {
      requests.push({ inputs: { [inputName]: image }, outputSize: outputSize(pipeline) });
      continue;
    }
    const residentIn = await pipeline.allocateImage(inputName, { width: W, height: H, channels: planes });
    const residentOut = await pipeline.allocateImage(outputName, outputSize(pipeline));
    residentIn.data.set(data);
    requests.push({ inputs: { [inputName]: residentIn }, outputSize: outputSize(pipeline), into: { [outputName]: residentOut.data } });
  }
  const times = files.map(() => []);
  const wholes = files.map(() => []);
  let reference = null;
  for (let round = 0; round < rounds + 3; round++) {
    for (const [i, pipeline] of pipelines.entries()) {
      const started = performance.now();
      const result = await pipeline.run(requests[i]);
      const whole = performance.now() - started;
      if (round === 0) {
        const pixels = result.outputs[pipeline.outputs[0].name].data;
        if (i === 0) reference = pixels.slice();
        else if (pixels.length !== reference.length || pixels.some((v, k) => v !== reference[k])) {
          throw new Error(`${files[i]} computes another image than ${files[0]}`);
        }
      }
      // The first rounds let V8 tier up and the memory grow.
      if (round >= 3) {
        times[i].push(result.timings.execute);
        wholes[i].push(whole);
      }
    }
  }
  const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
  const images = resident ? "resident images" : "images copied in and out";
  console.log(`${W}x${H}, ${threads} thread(s), ${runtime.mode}, ${images}, medians of ${rounds} alternating runs (ms):`);
  for (const [i, file] of files.entries()) {
    const [execute, whole] = [times[i], wholes[i]];
    console.log(
      `  ${file}: execute ${median(execute).toFixed(3)} (best ${Math.min(...execute).toFixed(3)}), ` +
        `whole run ${median(whole).toFixed(3)} (best ${Math.min(...whole).toFixed(3)})`,
    );
  }
} finally {
  runtime.dispose();
}
