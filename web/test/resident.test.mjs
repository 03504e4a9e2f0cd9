// Resident images (`Pipeline.allocateImage`): images in a pipeline's
// shared memory that runs read and write in place. The pixels must be the
// ones a run with copies gives, and the runs' own buffers and heap must
// never touch a resident image.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ArgentRunError, createRuntime } from "../dist/index.js";
import { BLUR_U16 } from "./helpers.mjs";

// The blur of helpers.mjs: a (W - 2) x (H - 2) output, inputs of 12 bits.
const BLUR = BLUR_U16;

const COLOR = `
input u8 photo(x, y, c)
out(x, y, c) = photo(x, y, c) / 2 + c
output out
schedule { out.parallel(y) }
`;

/** Deterministic pixels: `seed` changes every value. */
function fillPixels(data, seed) {
  for (let i = 0; i < data.length; i++) data[i] = (Math.imul(i + seed, 2654435761) >>> 20) & 4095;
  return data;
}

/** The blur's output for an input of `width` x `height`. */
function expectedBlur(data, width, height) {
  const at = (x, y) => data[y * width + x];
  const bx = (x, y) => Math.floor((at(x - 1, y) + at(x, y) + at(x + 1, y)) / 3);
  const out = [];
  for (let y = 1; y < height - 1; y++) {
    for (let x = 1; x < width - 1; x++) out.push(Math.floor((bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) / 3) & 0xffff);
  }
  return out;
}

/** Runs the blur on `input` (an image or a resident image), into `into` if given. */
function runBlur(pipeline, input, into) {
  return pipeline.run({
    inputs: { in: input },
    outputSize: { width: input.width - 2, height: input.height - 2 },
    into: into ? { out: into } : undefined,
  });
}

/** Each value sums a `window`-wide window of its row (wrapping): slow enough a run to interrupt. */
function windowSums(window) {
  return `
input u16 in(x, y)
rdom r = [0 .. ${window}]
out(x, y) = u16(sum(u32(in((x + r.x) % in.width, y))) % 65521)
output out
schedule { out.parallel(y) }
`;
}

let runtime;
before(async () => {
  runtime = await createRuntime({ threads: 2 });
});
after(() => runtime.dispose());

describe("resident images", () => {
  test("runs read a resident input and write a resident output in place, with the pixels a run with copies gives", async () => {
    const single = await createRuntime({ threads: 1 });
    for (const rt of [runtime, single]) {
      const pipeline = await rt.compile(BLUR);
      const [width, height] = [301, 203];
      const input = await pipeline.allocateImage("in", { width, height });
      const output = await pipeline.allocateImage("out", { width: width - 2, height: height - 2 });
      assert.equal(input.resident, true);
      assert.equal(input.type, "u16");
      assert.equal(input.channels, 1);
      assert.ok(input.data instanceof Uint16Array && input.data.buffer instanceof SharedArrayBuffer);
      assert.ok(input.data.every((v) => v === 0), "a new image is zeroed");
      for (const seed of [1, 77]) {
        fillPixels(input.data, seed);
        const original = input.data.slice();
        const { outputs } = await runBlur(pipeline, input, output.data);
        assert.equal(outputs.out.data, output.data);
        const copied = await runBlur(pipeline, { data: original, width, height, channels: 1 });
        assert.deepEqual(Array.from(output.data), Array.from(copied.outputs.out.data), `${rt.mode}, seed ${seed}`);
        assert.deepEqual(Array.from(output.data), expectedBlur(original, width, height));
        assert.deepEqual(input.data, original, "the run left its input alone");
      }
      pipeline.dispose();
    }
    single.dispose();
  });

  test("an interleaved 3-channel image defaults to 3 channels and runs in place", async () => {
    const pipeline = await runtime.compile(COLOR);
    const photo = await pipeline.allocateImage("photo", { width: 64, height: 33 });
    const out = await pipeline.allocateImage("out", { width: 64, height: 33 });
    assert.equal(photo.channels, 3);
    fillPixels(photo.data, 5);
    await pipeline.run({ inputs: { photo }, into: { out: out.data } });
    assert.deepEqual(Array.from(out.data), Array.from(photo.data, (v, i) => (v >> 1) + (i % 3)));
    pipeline.dispose();
  });

  test("runs with larger copied images, whose buffers and heap go after the resident images, leave them intact", async () => {
    const pipeline = await runtime.compile(BLUR);
    const kept = await pipeline.allocateImage("in", { width: 40, height: 30 });
    fillPixels(kept.data, 3);
    const original = kept.data.slice();
    for (const [width, height] of [[700, 500], [1200, 900]]) {
      const image = { data: fillPixels(new Uint16Array(width * height), width), width, height, channels: 1 };
      const { outputs } = await runBlur(pipeline, image);
      assert.deepEqual(Array.from(outputs.out.data.subarray(0, 2000)), expectedBlur(image.data, width, height).slice(0, 2000));
      assert.deepEqual(kept.data, original);
    }
    // An image allocated after those runs goes after the first one.
    const later = await pipeline.allocateImage("out", { width: 38, height: 28 });
    assert.ok(later.data.byteOffset >= kept.data.byteOffset + kept.data.byteLength);
    await runBlur(pipeline, kept, later.data);
    assert.deepEqual(Array.from(later.data), expectedBlur(original, 40, 30));
    pipeline.dispose();
  });

  test("an allocation asked for during a run waits for it, so the run's buffers are not overwritten", async () => {
    // Long enough a run (a 1024-wide window per value) that the allocation
    // is asked for while it executes.
    const pipeline = await runtime.compile(windowSums(1024));
    const [width, height] = [512, 512];
    const image = { data: fillPixels(new Uint16Array(width * height), 9), width, height, channels: 1 };
    const running = pipeline.run({ inputs: { in: image } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const allocated = pipeline.allocateImage("in", { width, height }).then((resident) => {
      // Written as soon as the allocation resolves: after the run.
      resident.data.fill(0xffff);
      return resident;
    });
    const [{ outputs }, resident] = await Promise.all([running, allocated]);
    const again = await pipeline.run({ inputs: { in: { ...image, data: image.data.slice() } } });
    assert.deepEqual(outputs.out.data, again.outputs.out.data);
    assert.ok(resident.data.every((v) => v === 0xffff));
    pipeline.dispose();
  });

  test("released memory is reused: thousands of allocations keep the memory's size", async () => {
    const pipeline = await runtime.compile(BLUR);
    const first = await pipeline.allocateImage("in", { width: 256, height: 256 });
    const offset = first.data.byteOffset;
    await first.release();
    await first.release();
    const size = pipeline.memory.buffer.byteLength;
    for (let i = 0; i < 2000; i++) {
      const image = await pipeline.allocateImage("in", { width: 256, height: 256 });
      assert.equal(image.data.byteOffset, offset);
      await image.release();
    }
    assert.equal(pipeline.memory.buffer.byteLength, size);
    // A gap left by a released image takes a smaller one.
    const a = await pipeline.allocateImage("in", { width: 100, height: 100 });
    const b = await pipeline.allocateImage("in", { width: 100, height: 100 });
    await a.release();
    const c = await pipeline.allocateImage("out", { width: 50, height: 50 });
    assert.equal(c.data.byteOffset, a.data.byteOffset);
    assert.ok(b.data.byteOffset > c.data.byteOffset);
    pipeline.dispose();
  });

  test("misuse is rejected with errors that name the image", async () => {
    const pipeline = await runtime.compile(BLUR);
    const bad = (promise, kind, pattern) =>
      assert.rejects(promise, (e) => e instanceof ArgentRunError && e.kind === kind && pattern.test(e.message));
    await bad(pipeline.allocateImage("photo", { width: 8, height: 8 }), "bad-input", /unknown image `photo`.*`in`, `out`/);
    await bad(pipeline.allocateImage("in", { width: 0, height: 8 }), "bad-input", /width must be a positive integer, got 0/);
    await bad(pipeline.allocateImage("in", { width: 8, height: 8, channels: 3 }), "bad-input", /`in` is 2-D, so its images have 1 channel, not 3/);
    await bad(pipeline.allocateImage("in", { width: 70000, height: 70000 }), "allocation-too-large", /70000x70000x1 u16 image does not fit in the 4 GiB/);

    const image = await pipeline.allocateImage("in", { width: 20, height: 20 });
    // Same size in and out, so only the aliasing is wrong.
    const sameSize = { data: image.data, width: 20, height: 20, channels: 1 };
    await bad(
      pipeline.run({ inputs: { in: sameSize }, outputSize: { width: 20, height: 20 }, into: { out: image.data } }),
      "bad-input",
      /into\.out is the same resident image as input `in`/,
    );
    await image.release();
    await bad(runBlur(pipeline, image), "bad-input", /input `in` is a resident image that was released/);
    const out = await pipeline.allocateImage("out", { width: 18, height: 18 });
    const released = out.release();
    // Asked for after the release: rejected, even before the release ran.
    await bad(runBlur(pipeline, { data: new Uint16Array(400), width: 20, height: 20, channels: 1 }, out.data), "bad-input", /into\.out is a resident image that was released/);
    await released;
    pipeline.dispose();
    await bad(pipeline.allocateImage("in", { width: 8, height: 8 }), "disposed", /disposed/);
  });

  test("after an aborted run (its workers are replaced) resident images keep their place and pixels", async () => {
    const pipeline = await runtime.compile(windowSums(4096));
    const small = await pipeline.allocateImage("in", { width: 37, height: 5 });
    fillPixels(small.data, 11);
    const expected = [];
    for (let y = 0; y < 5; y++) {
      for (let x = 0; x < 37; x++) {
        let sum = 0;
        for (let k = 0; k < 4096; k++) sum += small.data[y * 37 + ((x + k) % 37)];
        expected.push(sum % 65521);
      }
    }
    const out = await pipeline.allocateImage("out", { width: 37, height: 5 });
    const large = { data: fillPixels(new Uint16Array(1024 * 1024), 2), width: 1024, height: 1024, channels: 1 };
    const abort = new AbortController();
    const running = pipeline.run({ inputs: { in: large }, signal: abort.signal });
    setTimeout(() => abort.abort(), 100);
    await assert.rejects(running, (e) => e.kind === "aborted");
    const { outputs } = await pipeline.run({ inputs: { in: small }, into: { out: out.data } });
    assert.equal(outputs.out.data, out.data);
    assert.deepEqual(Array.from(out.data), expected);
    pipeline.dispose();
  });

  test("without shared memory, allocateImage gives an ordinary array that runs copy", async () => {
    for (const options of [{ threads: 1, sharedMemory: false }, { threads: 3, sharedMemory: false }]) {
      const rt = await createRuntime(options);
      const pipeline = await rt.compile(BLUR);
      const input = await pipeline.allocateImage("in", { width: 90, height: 70 });
      const output = await pipeline.allocateImage("out", { width: 88, height: 68 });
      assert.equal(input.resident, false);
      assert.ok(!(input.data.buffer instanceof SharedArrayBuffer));
      fillPixels(input.data, 4);
      const { outputs } = await runBlur(pipeline, input, output.data);
      assert.equal(outputs.out.data, output.data);
      assert.deepEqual(Array.from(output.data), expectedBlur(input.data, 90, 70), rt.mode);
      await input.release();
      rt.dispose();
    }
  });
});
