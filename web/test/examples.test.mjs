// Differential tests: every example, under its own hand schedule, compiled
// in the page's compiler and run on the worker pool, gives exactly the
// reference interpreter's output (the Rust CLI), with SIMD on and off and
// on 1, 2 and 4 threads. So does every pipeline of bench/schedules (the
// benchmarks' own schedules, named `bench/NAME`).

import assert from "node:assert/strict";
import { readdirSync, readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createRuntime } from "../dist/index.js";
import { readPhoto, runOnPhotos } from "../dist/node.js";
import { EXAMPLES, firstDifference, referenceOutputs } from "./helpers.mjs";

// A 96x64 crop of images/chelsea.png keeps the reference interpreter fast
// while still covering tiles, tails and borders of every schedule.
const PHOTO = new URL("./fixtures/chelsea-96x64.png", import.meta.url).pathname;
// The same crop with an alpha channel (values varying across the image), as
// a canvas gives: examples on interleaved u8 photos also run on RGBA,
// where the generated code reads and writes channels with stride 4.
const RGBA_PHOTO = new URL("./fixtures/chelsea-rgba-96x64.png", import.meta.url).pathname;
const RGBA_CONFIGS = [
  { threads: 1, simd: true },
  { threads: 2, simd: true },
  { threads: 1, simd: false },
];

// Examples the compiler cannot run yet, each with the reason. They still
// run and are reported as TODO (node:test prints them), so a fix shows up
// as a passing TODO and a new failure anywhere else fails the suite.
const KNOWN_GAPS = {};
// Known to fail only with several threads, intermittently: a bug, not a gap.
const KNOWN_THREADED_BUGS = {};
const CONFIGS = [
  { threads: 1, simd: true },
  { threads: 2, simd: true },
  { threads: 4, simd: true },
  { threads: 1, simd: false },
  { threads: 2, simd: false },
  { threads: 4, simd: false },
  // Tiles mode (no shared memory): three strips, each sent only the input
  // rows the module's bounds query says it reads.
  { threads: 3, simd: true, sharedMemory: false },
];
const only = process.env.ARGENT_EXAMPLES?.split(",");
const BENCH_SCHEDULES = join(EXAMPLES, "..", "bench", "schedules");
/** `[name, path]` of every pipeline to test, examples first. */
const pipelineFiles = (dir, prefix) =>
  readdirSync(dir)
    .filter((file) => file.endsWith(".ag"))
    .sort()
    .map((file) => [prefix + file.slice(0, -3), join(dir, file)])
    .filter(([name]) => !only || only.includes(name));
const examples = [...pipelineFiles(EXAMPLES, ""), ...pipelineFiles(BENCH_SCHEDULES, "bench/")];

const runtimes = new Map();
const scratch = mkdtempSync(join(tmpdir(), "argent-examples-"));

before(async () => {
  for (const config of CONFIGS) runtimes.set(config, await createRuntime(config));
});
after(() => {
  for (const runtime of runtimes.values()) runtime.dispose();
  rmSync(scratch, { recursive: true, force: true });
});

/** Each output raster of `pipeline` has the shape and samples of the reference's. */
function assertRastersMatch(pipeline, rasters, expected) {
  rasters.forEach((raster, i) => {
    const want = expected[i];
    const output = pipeline.outputs[i].name;
    assert.deepEqual(
      [raster.width, raster.height, raster.channels],
      [want.width, want.height, want.channels],
      `output \`${output}\` shape`,
    );
    const at = firstDifference(raster.samples, want.samples);
    if (at >= 0) {
      const pixel = Math.floor(at / raster.channels);
      assert.fail(
        `output \`${output}\` differs from the reference at x=${pixel % raster.width}, ` +
          `y=${Math.floor(pixel / raster.width)}, channel ${at % raster.channels}: ` +
          `got ${raster.samples[at]}, expected ${want.samples[at]}`,
      );
    }
  });
}

test("there are examples to test", () => {
  assert.ok(only || examples.length >= 10, `found ${examples.length} examples in ${EXAMPLES}`);
});

for (const [name, path] of examples) {
  describe(name, () => {
    const source = readFileSync(path, "utf8");
    let expected;
    /** Raw output bytes of the first configuration, which every other must equal exactly. */
    let firstRaw;

    for (const config of CONFIGS) {
      const todo = KNOWN_GAPS[name] ?? (config.threads > 1 && KNOWN_THREADED_BUGS[name]) ?? false;
      const tiles = config.sharedMemory === false;
      const label = `${config.threads} thread(s)${tiles ? " in tiles mode" : ""}, ${config.simd ? "SIMD128" : "scalar"}`;
      test(`${label}: matches the reference interpreter`, { todo }, async () => {
        const runtime = runtimes.get(config);
        assert.equal(runtime.mode, tiles ? "tiles" : config.threads > 1 ? "threads" : "single");
        const pipeline = await runtime.compile(source, { validate: true });
        try {
          assert.equal(pipeline.simd, config.simd);
          const photos = pipeline.inputs.map((input) => [input.name, PHOTO]);
          expected ??= await Promise.all(
            referenceOutputs(path, photos, pipeline.outputs.map((o) => o.name)).map((p) => readPhoto(p)),
          );
          const out = join(scratch, `${name.replace("/", "-")}-${config.threads}-${config.simd}-${tiles}.png`);
          const { rasters, result } = await runOnPhotos(pipeline, { inputs: photos }, out);
          assert.equal(result.stats.iterationsPerThread.length, config.threads);
          if (tiles) assert.equal(result.stats.inputBytesPerThread.length, config.threads);
          // The 8-bit reference comparison cannot see low bits of u16 or
          // f32 outputs, so every configuration must also agree exactly.
          const raw = pipeline.outputs.map((o) => {
            const data = result.outputs[o.name].data;
            return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
          });
          if (firstRaw) {
            raw.forEach((bytes, i) =>
              assert.equal(firstDifference(bytes, firstRaw[i]), -1, `raw output \`${pipeline.outputs[i].name}\` differs between configurations`),
            );
          } else {
            firstRaw = raw;
          }
          assertRastersMatch(pipeline, rasters, expected);
        } finally {
          pipeline.dispose();
        }
      });
    }
  });
}

// Examples whose inputs are all interleaved u8 photos, on the RGBA crop.
for (const [name, path] of examples) {
  describe(`${name} on RGBA`, () => {
    const source = readFileSync(path, "utf8");
    let expected;
    for (const config of RGBA_CONFIGS) {
      const label = `${config.threads} thread(s), ${config.simd ? "SIMD128" : "scalar"}`;
      test(`${label}: matches the reference interpreter`, async (t) => {
        const runtime = runtimes.get(CONFIGS.find((c) => c.threads === config.threads && c.simd === config.simd && c.sharedMemory === undefined));
        const pipeline = await runtime.compile(source, { validate: true });
        try {
          if (!pipeline.inputs.every((input) => input.type === "u8" && input.dims.length === 3)) {
            t.skip("not a pipeline of interleaved u8 photos");
            return;
          }
          const photos = pipeline.inputs.map((input) => [input.name, RGBA_PHOTO]);
          expected ??= await Promise.all(
            referenceOutputs(path, photos, pipeline.outputs.map((o) => o.name)).map((p) => readPhoto(p)),
          );
          const out = join(scratch, `${name.replace("/", "-")}-rgba-${config.threads}-${config.simd}.png`);
          const { rasters } = await runOnPhotos(pipeline, { inputs: photos }, out);
          assertRastersMatch(pipeline, rasters, expected);
        } finally {
          pipeline.dispose();
        }
      });
    }
  });
}

// A select on parameters alone is unswitched: each mode of window_ops runs
// its own version of the stage, which must give the reference's picture.
describe("window_ops in every mode", () => {
  const path = join(EXAMPLES, "window_ops.ag");
  const source = readFileSync(path, "utf8");
  for (const mode of ["0", "1", "2", "3"]) {
    for (const config of [CONFIGS[0], CONFIGS[1], CONFIGS[3]]) {
      const label = `mode ${mode}, ${config.threads} thread(s), ${config.simd ? "SIMD128" : "scalar"}`;
      test(`${label}: matches the reference interpreter`, { skip: only && !only.includes("window_ops") }, async () => {
        const pipeline = await runtimes.get(config).compile(source, { validate: true });
        try {
          const photos = pipeline.inputs.map((input) => [input.name, PHOTO]);
          const expected = await Promise.all(
            referenceOutputs(path, photos, pipeline.outputs.map((o) => o.name), ["--param", `mode=${mode}`]).map((p) => readPhoto(p)),
          );
          const out = join(scratch, `window_ops-mode${mode}-${config.threads}-${config.simd}.png`);
          const { rasters } = await runOnPhotos(pipeline, { inputs: photos, params: [["mode", mode]] }, out);
          assertRastersMatch(pipeline, rasters, expected);
        } finally {
          pipeline.dispose();
        }
      });
    }
  }
});
