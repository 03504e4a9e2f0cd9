// The runtime's API and error paths, against the real compiler (web/pkg)
// and real generated modules.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  ArgentCompileError,
  ArgentRunError,
  argent,
  createRuntime,
  sharedMemoryAvailable,
  simdAvailable,
} from "../dist/index.js";

const SHIFT = `
input u8 in(x, y)
out(x, y) = in(x + 1, y)
output out
`;

const SCALE = `
input u8 in(x, y)
param u8 k = 3 in 0 .. 200
param f32 gain = 1.0 in 0.0 .. 4.0
out(x, y) = sat_u8(f32(in(x, y)) * gain) + k
output out
schedule {
  out.parallel(y)
}
`;

const COLOR = `
input u8 photo(x, y, c)
out(x, y, c) = photo(x, y, c) / 2
output out
`;

/** A deterministic gray test image. */
function grayImage(width, height) {
  const data = new Uint8Array(width * height);
  for (let i = 0; i < data.length; i++) data[i] = (i * 37 + (i >> 5)) & 255;
  return { data, width, height, channels: 1 };
}

function expectedScale(image, k, gain) {
  return image.data.map((v) => Math.min(255, Math.max(0, Math.trunc(Math.fround(v * gain)))) + k);
}

let runtime;
before(async () => {
  runtime = await createRuntime({ threads: 2 });
});
after(() => runtime.dispose());

describe("environment", () => {
  test("Node has SIMD128 and shared memory, so the runtime uses threads", () => {
    assert.equal(simdAvailable(), true);
    assert.equal(sharedMemoryAvailable(), true);
    assert.equal(runtime.mode, "threads");
    assert.equal(runtime.threads, 2);
    assert.equal(runtime.simd, true);
  });

  test("one thread means single-threaded mode, and simd: false means scalar code", async () => {
    const single = await createRuntime({ threads: 1, simd: false });
    try {
      assert.equal(single.mode, "single");
      assert.match(single.modeReason, /one thread/);
      const pipeline = await single.compile(SCALE);
      assert.equal(pipeline.simd, false);
      // With shared memory available one thread uses it too, so inputs and
      // outputs are copied straight into and out of the module's memory.
      assert.equal(pipeline.abi.sharedMemory, true);
      const image = grayImage(40, 30);
      const { outputs, stats } = await pipeline.run({ inputs: { in: image } });
      assert.deepEqual(Array.from(outputs.out.data), Array.from(expectedScale(image, 3, 1)));
      assert.deepEqual(stats.iterationsPerThread.length, 1);
    } finally {
      single.dispose();
    }
  });
});

const VERTICAL = `
input u8 in(x, y)
clamped = repeat_edge(in)
out(x, y) = clamped(x, y - 1) / 2 + clamped(x, y + 1) / 2
output out
`;

// An input read in a select arm needs to cover only the points where the
// arm is taken; vector code loads the other lanes too, millions of pixels
// away, and must neither trap nor use them.
const FAR_ARMS = `
input u8 in(x, y)
out(x, y) = select(y > 1000, in(x, y - 1000), 3) + select(x < 1, in(x, y + x * 1000000), 9) + select(x > 100, in(x * x, y), 0)
output out
schedule {
  out.vectorize(x, 16).parallel(y)
}
`;

/**
 * Runs FAR_ARMS on `on` (a runtime) and checks every pixel. The input
 * covers only what the taken arms read: no column of the output is past
 * 100, so the `x * x` arm needs nothing (nor does the bounds query that
 * tiles mode asks, which ignores it).
 */
async function checkFarArms(on) {
  const pipeline = await on.compile(FAR_ARMS);
  const image = grayImage(45, 23);
  const { data, width, height } = image;
  const expected = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) expected[y * width + x] = 3 + (x < 1 ? data[y * width] : 9);
  }
  const { outputs } = await pipeline.run({ inputs: { in: image } });
  assert.deepEqual(Array.from(outputs.out.data), Array.from(expected));
  pipeline.dispose();
}

test("input reads in untaken select arms, far outside the input, run without trapping", async () => {
  await checkFarArms(runtime);
});

describe("tiles mode (no SharedArrayBuffer)", () => {
  let tiles;
  before(async () => {
    tiles = await createRuntime({ threads: 3, sharedMemory: false });
  });
  after(() => tiles.dispose());

  test("several threads without shared memory split the output into strips", async () => {
    assert.equal(tiles.mode, "tiles");
    assert.equal(tiles.threads, 3);
    assert.match(tiles.modeReason, /SharedArrayBuffer/);
    const pipeline = await tiles.compile(SCALE);
    assert.equal(pipeline.abi.sharedMemory, false);
    const image = grayImage(301, 199);
    const { outputs, stats } = await pipeline.run({ inputs: { in: image }, params: { k: 7, gain: 0.5 } });
    assert.deepEqual(Array.from(outputs.out.data), Array.from(expectedScale(image, 7, 0.5)));
    assert.equal(stats.iterationsPerThread.length, 3);
    pipeline.dispose();
  });

  test("each strip reads the input rows around it, and interleaved outputs are reassembled", async () => {
    const vertical = await tiles.compile(VERTICAL);
    const image = grayImage(57, 40);
    const { width, height, data } = image;
    const at = (x, y) => data[Math.min(height - 1, Math.max(0, y)) * width + x];
    const expected = [];
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) expected.push((at(x, y - 1) >> 1) + (at(x, y + 1) >> 1));
    }
    const { outputs, stats } = await vertical.run({ inputs: { in: image } });
    assert.deepEqual(Array.from(outputs.out.data), expected);
    // The strips are rows 0-12, 13-25 and 26-39; each worker got only the
    // rows its strip reads (one more above and below, within the image),
    // as the module's bounds query said.
    assert.deepEqual(stats.inputBytesPerThread, [14 * width, 15 * width, 15 * width]);
    vertical.dispose();

    const color = await tiles.compile(COLOR);
    const photo = { data: new Uint8Array(13 * 7 * 3).map((_, i) => (i * 29) & 255), width: 13, height: 7, channels: 3 };
    const result = await color.run({ inputs: { photo } });
    assert.equal(result.outputs.out.channels, 3);
    assert.deepEqual(Array.from(result.outputs.out.data), Array.from(photo.data, (v) => v >> 1));
    color.dispose();
  });

  test("strips run input reads in untaken select arms without trapping", async () => {
    await checkFarArms(tiles);
  });

  test("strips that read the input only in arms no point takes copy none of it", async () => {
    const pipeline = await tiles.compile(`input u8 in(x, y)
out(x, y) = select(y > 1000, in(x, y - 1000), 3) + select(x > 100, in(x * x, y), 0)
output out
schedule { out.vectorize(x, 16).parallel(y) }
`);
    const { outputs, stats } = await pipeline.run({ inputs: { in: grayImage(45, 23) } });
    assert.deepEqual(Array.from(outputs.out.data), new Array(45 * 23).fill(3));
    assert.deepEqual(stats.inputBytesPerThread, [0, 0, 0]);
    pipeline.dispose();
  });

  test("strips are joined straight into the caller's array", async () => {
    const pipeline = await tiles.compile(SCALE);
    const image = grayImage(31, 23);
    const into = new Uint8ClampedArray(31 * 23);
    const { outputs } = await pipeline.run({ inputs: { in: image }, params: { k: 2 }, into: { out: into } });
    assert.equal(outputs.out.data, into);
    assert.deepEqual(Array.from(into), Array.from(expectedScale(image, 2, 1)));
    pipeline.dispose();
  });

  test("examples with a whole-image reduction and a resampling give the same bytes as one thread", async () => {
    const single = await createRuntime({ threads: 1 });
    try {
      for (const name of ["histogram_equalize", "bicubic_resize", "unsharp_mask"]) {
        const source = readFileSync(fileURLToPath(new URL(`../../examples/${name}.ag`, import.meta.url)), "utf8");
        const one = await single.compile(source);
        const split = await tiles.compile(source);
        const inputs = {};
        for (const input of one.inputs) {
          assert.equal(input.type, "u8", `${name}: this test makes u8 inputs`);
          const channels = input.dims.length === 3 ? 3 : 1;
          const data = new Uint8Array(97 * 61 * channels).map((_, i) => (i * 37 + (i >> 7)) & 255);
          inputs[input.name] = { data, width: 97, height: 61, channels };
        }
        const want = await one.run({ inputs });
        const got = await split.run({ inputs });
        assert.equal(got.stats.iterationsPerThread.length, 3, `${name}: three strips`);
        for (const [output, image] of Object.entries(want.outputs)) {
          assert.deepEqual(Array.from(got.outputs[output].data), Array.from(image.data), `${name}: output \`${output}\``);
        }
        one.dispose();
        split.dispose();
      }
    } finally {
      single.dispose();
    }
  });

  test("a failing strip reports the same error as a single-threaded run", async () => {
    const pipeline = await tiles.compile(SHIFT);
    await assert.rejects(
      pipeline.run({ inputs: { in: grayImage(16, 9) } }),
      (error) => error instanceof ArgentRunError && error.kind === "input-too-small" && /x from 1 to 16/.test(error.message),
    );
    pipeline.dispose();
  });
});

describe("compile", () => {
  test("describes inputs, outputs and params, and reports timings", async () => {
    const pipeline = await runtime.compile(SCALE);
    assert.deepEqual(pipeline.inputs, [{ name: "in", type: "u8", dims: ["x", "y"] }]);
    assert.deepEqual(pipeline.outputs, [{ name: "out", type: "u8", dims: ["x", "y"] }]);
    assert.deepEqual(pipeline.params, [
      { name: "k", type: "u8", default: 3, range: [0, 200] },
      { name: "gain", type: "f32", default: 1, range: [0, 4] },
    ]);
    const t = pipeline.timings;
    for (const key of ["parse", "lower", "codegen", "toBytes", "inCompiler", "engineCompile", "instantiate", "total"]) {
      assert.ok(Number.isFinite(t[key]) && t[key] >= 0, `timing ${key} = ${t[key]}`);
    }
    assert.ok(t.total >= t.toBytes);
    // The worker's own time is part of the round trip, and holds the
    // phases (two clocks: a hundredth of a millisecond of slack).
    assert.ok(t.toBytes + 0.01 >= t.inCompiler && t.inCompiler + 0.01 >= t.lower + t.codegen, JSON.stringify(t));
    assert.ok(WebAssembly.validate(pipeline.wasm));
    pipeline.dispose();
  });

  test("a fresh runtime's compiler warms up with the options its compiles use, before any is asked", async () => {
    // The warm-up's compiles must succeed: one the compiler rejects (it
    // once passed `threads: 2` where a boolean is expected) warms nothing.
    for (const simd of [true, false]) {
      const fresh = await createRuntime({ threads: 2, simd });
      try {
        const deadline = Date.now() + 60_000;
        while (!fresh.compilerWarmUp && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        assert.ok(fresh.compilerWarmUp, "the warm-up reported back");
        assert.equal(fresh.compilerWarmUp.compiled, fresh.compilerWarmUp.rounds, `simd ${simd}`);
        assert.ok(fresh.compilerWarmUp.rounds >= 1);
      } finally {
        fresh.dispose();
      }
    }
  });

  test("accepts a tagged template", async () => {
    const factor = 2;
    const pipeline = await runtime.compile`
      input u8 in(x, y)
      out(x, y) = in(x, y) / ${factor}
      output out
    `;
    const image = grayImage(17, 5);
    const { outputs } = await pipeline.run({ inputs: { in: image } });
    assert.deepEqual(Array.from(outputs.out.data), Array.from(image.data.map((v) => v >> 1)));
    assert.equal(argent`a ${1} b ${"c"}`, "a 1 b c");
    pipeline.dispose();
  });

  test("a wrong program throws ArgentCompileError with located diagnostics", async () => {
    const source = "input u8 in(x, y)\nout(x, y) = in(x, y) + nope\noutput out\n";
    const error = await runtime.compile(source).then(
      () => assert.fail("must not compile"),
      (e) => e,
    );
    assert.ok(error instanceof ArgentCompileError, String(error));
    assert.equal(error.phase, "parse");
    const [first] = error.diagnostics;
    assert.equal(first.severity, "error");
    assert.equal(first.span.start.line, 2);
    assert.equal(source.slice(first.span.start.utf16Offset, first.span.end.utf16Offset), "nope");
    assert.match(error.rendered, /nope/);
    assert.match(error.message, /^\w+ at 2:\d+: /);
  });

  test("random schedules: mutations of the program's own schedule when asked, validated modules", async () => {
    const source = readFileSync(fileURLToPath(new URL("../../examples/local_laplacian.ag", import.meta.url)), "utf8");
    // local_laplacian has too many funcs for fully random schedules: its
    // seeded schedules are mutations of its own (`seeded_schedule`).
    const mutated = await runtime.compile(source, { randomSchedule: 1, mutate: true, validate: true });
    const random = await runtime.compile(source, { randomSchedule: 1 });
    assert.notEqual(mutated.randomSchedule, random.randomSchedule);
    mutated.dispose();
    random.dispose();
  });

  test("a schedule whose lowered code nests thousands of statements compiles, as natively", async () => {
    // Seed 251's mutation of local_laplacian's schedule lowers to a
    // statement tree thousands deep: partitioning recursed about 3,300
    // frames, past the 1 MiB stack the in-page compiler once had, and the
    // compile trapped ("memory access out of bounds") where the native
    // build compiled it. The compiler is now linked with 8 MiB.
    const source = readFileSync(fileURLToPath(new URL("../../examples/local_laplacian.ag", import.meta.url)), "utf8");
    const deep = await runtime.compile(source, { randomSchedule: 251, mutate: true });
    assert.ok(deep.wasm.length > 100_000, `a large module (${deep.wasm.length} bytes)`);
    deep.dispose();
    // The compiler worker answers the next compile as usual.
    (await runtime.compile(SCALE)).dispose();
  });

  test("check returns diagnostics without compiling", async () => {
    assert.deepEqual((await runtime.check(SCALE)).diagnostics, []);
    const { diagnostics } = await runtime.check("input u8 in(x, y\n");
    assert.ok(diagnostics.length >= 1);
  });
});

describe("run", () => {
  test("computes on two threads, spreading parallel iterations", async () => {
    const pipeline = await runtime.compile(SCALE);
    const image = grayImage(301, 199);
    const { outputs, timings, stats } = await pipeline.run({ inputs: { in: image }, params: { k: 7, gain: 0.5 } });
    assert.deepEqual(Array.from(outputs.out.data), Array.from(expectedScale(image, 7, 0.5)));
    assert.equal(stats.iterationsPerThread.length, 2);
    assert.equal(stats.iterationsPerThread.reduce((a, b) => a + b, 0), 199);
    assert.ok(timings.execute >= 0 && timings.total >= timings.execute);
    pipeline.dispose();
  });

  test("a scan stored outside the parallel loop that computes it gets storage per iteration, so threads do not share it", async () => {
    // histogram_equalize's algorithm under random schedule 179: every
    // iteration of the parallel y loop recomputes the whole cdf scan. One
    // buffer at the x loop would be reset by one thread while another is
    // halfway through its scan.
    const algorithm = readFileSync(fileURLToPath(new URL("../../examples/histogram_equalize.ag", import.meta.url)), "utf8").split("schedule {")[0];
    const pipeline = await runtime.compile(`${algorithm}
schedule {
  hist.compute_root()
  out.reorder(y, x).parallel(y)
  cdf.compute_at(out, y).store_at(out, x)
}
`);
    const image = grayImage(61, 47);
    const hist = new Array(256).fill(0);
    for (const v of image.data) hist[v]++;
    const cdf = [];
    hist.reduce((sum, n, i) => (cdf[i] = sum + n), 0);
    const expected = Array.from(image.data, (v) => Math.floor((cdf[v] * 255) / (61 * 47)));
    for (let i = 0; i < 5; i++) {
      const { outputs, stats } = await pipeline.run({ inputs: { img: image } });
      assert.deepEqual(Array.from(outputs.out.data), expected);
      assert.equal(stats.iterationsPerThread.reduce((a, b) => a + b, 0), 61 * 47);
    }
    pipeline.dispose();
  });

  test("a run is aborted by its signal, before or while it runs, and the next run works", async () => {
    // Each output value sums a 4096-wide window of its row: seconds for a
    // 1024x1024 image, so the abort lands mid-run.
    const source = `
input u8 in(x, y)
rdom r = [0 .. 4096]
out(x, y) = u8(sum(u32(in((x + r.x) % in.width, y))) % 251)
output out
schedule { out.parallel(y) }
`;
    const large = grayImage(1024, 1024);
    const small = grayImage(37, 5);
    const expected = [];
    for (let y = 0; y < 5; y++) {
      for (let x = 0; x < 37; x++) {
        let sum = 0;
        for (let k = 0; k < 4096; k++) sum += small.data[y * 37 + ((x + k) % 37)];
        expected.push(sum % 251);
      }
    }
    // Shared memory on two threads, and a driver with its own memory.
    const unshared = await createRuntime({ threads: 1, sharedMemory: false });
    for (const rt of [runtime, unshared]) {
      const pipeline = await rt.compile(source);
      const beforeStart = new AbortController();
      beforeStart.abort();
      await assert.rejects(pipeline.run({ inputs: { in: large }, signal: beforeStart.signal }), (e) => e instanceof ArgentRunError && e.kind === "aborted");
      const midRun = new AbortController();
      const running = pipeline.run({ inputs: { in: large }, signal: midRun.signal });
      setTimeout(() => midRun.abort(new Error("the slider moved")), 100);
      await assert.rejects(running, (e) => e instanceof ArgentRunError && e.kind === "aborted" && /the slider moved/.test(e.message));
      // The next runs start fresh workers and compute the right values.
      for (let i = 0; i < 2; i++) {
        const { outputs } = await pipeline.run({ inputs: { in: small } });
        assert.deepEqual(Array.from(outputs.out.data), expected);
      }
      pipeline.dispose();
    }
    unshared.dispose();
  });

  test("an RGBA blur with unrolled channels (one interleaved store per pixel group) matches plain JavaScript", async () => {
    const pipeline = await runtime.compile(readFileSync(new URL("./fixtures/rgba_box_blur.ag", import.meta.url), "utf8"));
    const [w, h] = [53, 29];
    const data = new Uint8Array(w * h * 4).map((_, i) => (i * 131 + (i >> 3)) & 255);
    const at = (x, y, c) => data[(Math.min(h - 1, Math.max(0, y)) * w + Math.min(w - 1, Math.max(0, x))) * 4 + c];
    const expected = [];
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        for (let c = 0; c < 4; c++) {
          let sum = 0;
          for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) sum += at(x + dx, y + dy, c);
          expected.push(Math.floor(sum / 9));
        }
      }
    }
    const { outputs } = await pipeline.run({ inputs: { photo: { data, width: w, height: h, channels: 4 } } });
    assert.deepEqual(Array.from(outputs.out.data), expected);
    pipeline.dispose();
  });

  test("an output that another output reads around each pixel is computed where it is read", async () => {
    // `edges` reads `smooth` a row above and below, outside the region of
    // `smooth`'s own buffer at the first and last rows.
    const source = `
input u8 in(x, y)
b = repeat_edge(in)
smooth(x, y) = u8((u16(b(x - 1, y)) + u16(b(x, y)) * 2 + u16(b(x + 1, y)) + 2) >> 2)
edges(x, y) = absd(smooth(x, y - 1), smooth(x, y + 1))
output edges, smooth
schedule {
  smooth.vectorize(x, 16)
  edges.parallel(y).vectorize(x, 16)
}
`;
    const image = grayImage(45, 23);
    const { width, height, data } = image;
    const clamp = (v, hi) => Math.min(hi, Math.max(0, v));
    const b = (x, y) => data[clamp(y, height - 1) * width + clamp(x, width - 1)];
    const smooth = (x, y) => (b(x - 1, y) + 2 * b(x, y) + b(x + 1, y) + 2) >> 2;
    const expectedSmooth = [];
    const expectedEdges = [];
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        expectedSmooth.push(smooth(x, y));
        expectedEdges.push(Math.abs(smooth(x, y - 1) - smooth(x, y + 1)));
      }
    }
    for (const rt of [runtime, await createRuntime({ threads: 2, sharedMemory: false })]) {
      const pipeline = await rt.compile(source);
      const { outputs } = await pipeline.run({ inputs: { in: image } });
      assert.deepEqual(Array.from(outputs.smooth.data), expectedSmooth, `smooth (${rt.mode})`);
      assert.deepEqual(Array.from(outputs.edges.data), expectedEdges, `edges (${rt.mode})`);
      pipeline.dispose();
      if (rt !== runtime) rt.dispose();
    }
  });

  test("an input smaller than needed is reported with the region needed and given", async () => {
    const pipeline = await runtime.compile(SHIFT);
    const error = await pipeline.run({ inputs: { in: grayImage(20, 10) } }).then(
      () => assert.fail("must fail"),
      (e) => e,
    );
    assert.ok(error instanceof ArgentRunError, String(error));
    assert.equal(error.kind, "input-too-small");
    assert.match(error.message, /input `in`/);
    assert.match(error.message, /x from 1 to 20/);
    assert.match(error.message, /x from 0 to 19/);
    // A smaller output region fits.
    const { outputs } = await pipeline.run({ inputs: { in: grayImage(20, 10) }, outputSize: { width: 19, height: 10 } });
    assert.equal(outputs.out.width, 19);
    pipeline.dispose();
  });

  test("a region that passes 2^31 is reported before anything runs, not wrapped into one that fits", async () => {
    // 99 * 43383509 wraps to 95 in i32: the read region used to pass the
    // check on a 1000-pixel input and the loop then trapped.
    const pipeline = await runtime.compile(`
input u8 in(x, y)
param i32 k = 1 in 1 .. 43383509
out(x, y) = in(x * k, y)
output out
`);
    const input = grayImage(1000, 2);
    await assert.rejects(
      pipeline.run({ inputs: { in: input }, params: { k: 30000000 }, outputSize: { width: 100, height: 2 } }),
      (e) =>
        e instanceof ArgentRunError &&
        e.kind === "region-overflow" &&
        /input `in` that stage `out` reads in dimension 0/.test(e.message) &&
        /32-bit/.test(e.message),
    );
    pipeline.dispose();
  });

  test("a wrong channel count is reported", async () => {
    const gray = await runtime.compile(SCALE);
    const rgba = { data: new Uint8Array(8 * 8 * 4), width: 8, height: 8, channels: 4 };
    await assert.rejects(gray.run({ inputs: { in: rgba } }), (e) => e.kind === "bad-input" && /1-channel/.test(e.message) && /4 channels/.test(e.message));
    const color = await runtime.compile(COLOR);
    // Asking for 3 output channels from a 1-channel photo needs channels it does not have.
    const oneChannel = { data: new Uint8Array(8 * 8), width: 8, height: 8, channels: 1 };
    await assert.rejects(
      color.run({ inputs: { photo: oneChannel }, outputSize: { width: 8, height: 8, channels: 3 } }),
      (e) => e.kind === "input-too-small" && /photo/.test(e.message) && /c from 0 to 2/.test(e.message),
    );
    gray.dispose();
    color.dispose();
  });

  test("wrong parameter and input types are rejected before running", async () => {
    const pipeline = await runtime.compile(SCALE);
    const image = grayImage(8, 8);
    const kinds = async (request) => pipeline.run(request).then(() => "ok", (e) => `${e.kind}: ${e.message}`);
    assert.match(await kinds({ inputs: { in: image }, params: { gain: "2" } }), /^bad-param: param `gain` is f32: expected a finite number/);
    assert.match(await kinds({ inputs: { in: image }, params: { k: 2.5 } }), /^bad-param: param `k` is u8: expected an integer/);
    assert.match(await kinds({ inputs: { in: image }, params: { k: 300 } }), /^bad-param: .*does not fit/);
    assert.match(await kinds({ inputs: { in: image }, params: { nope: 1 } }), /^bad-param: unknown param `nope`/);
    assert.match(await kinds({ inputs: { in: { ...image, data: new Uint16Array(64) } } }), /^bad-input: input `in` is u8/);
    assert.match(await kinds({ inputs: {} }), /^bad-input: missing input `in`/);
    assert.match(await kinds({ inputs: { in: { ...image, width: 9 } } }), /^bad-input: .*needs 72/);
    pipeline.dispose();
  });

  test("a parameter outside its declared range is rejected", async () => {
    const pipeline = await runtime.compile(SCALE);
    await assert.rejects(
      pipeline.run({ inputs: { in: grayImage(8, 8) }, params: { gain: 9 } }),
      (e) => e.kind === "param-out-of-range" && /gain/.test(e.message) && /9/.test(e.message),
    );
    pipeline.dispose();
  });

  test("concurrent runs of one pipeline are queued and each gets its own result", async () => {
    const pipeline = await runtime.compile(SCALE);
    const image = grayImage(64, 48);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, k) => pipeline.run({ inputs: { in: image }, params: { k } })),
    );
    results.forEach(({ outputs }, k) =>
      assert.deepEqual(Array.from(outputs.out.data), Array.from(expectedScale(image, k, 1)), `run ${k}`),
    );
    pipeline.dispose();
  });

  test("thousands of runs do not leak memory", async () => {
    const pipeline = await runtime.compile(SCALE);
    const image = grayImage(32, 32);
    for (let i = 0; i < 2000; i++) await pipeline.run({ inputs: { in: image } });
    const { outputs } = await pipeline.run({ inputs: { in: image }, params: { k: 1 } });
    assert.deepEqual(Array.from(outputs.out.data), Array.from(expectedScale(image, 1, 1)));
    pipeline.dispose();
  });

  test("thousands of runs of a parallel pipeline with per-strip buffers keep the memory size they had once every thread worked", async () => {
    const pipeline = await runtime.compile(`
input u8 in(x, y)
clamped = repeat_edge(in)
blur_x(x, y) = clamped(x - 1, y) / 2 + clamped(x + 1, y) / 2
out(x, y) = blur_x(x, y - 1) / 2 + blur_x(x, y + 1) / 2
output out
schedule {
  out.split(y, yo, yi, 4).parallel(yo)
  blur_x.compute_at(out, yo)
}
`);
    // Wide enough that a run lasts long enough for helpers to wake and
    // claim strips even when other processes keep the cores busy (at 96
    // columns a run took 0.1 ms, and under load no helper woke in 2000).
    const image = grayImage(1536, 256);
    const first = await pipeline.run({ inputs: { in: image } });
    // Every run gives the heap back, and each thread takes a fresh arena
    // (with a 1 MiB gap after it) when it first runs an iteration of that
    // run. A helper that joins late may run none, so the memory may grow
    // until one run has had every thread working at once (every thread
    // working in some run, but never together, holds one arena at a time),
    // and never after.
    let everyThreadWorked = first.stats.iterationsPerThread.every((n) => n > 0);
    for (let i = 0; i < 2000 && !everyThreadWorked; i++) {
      const { stats } = await pipeline.run({ inputs: { in: image } });
      everyThreadWorked = stats.iterationsPerThread.every((n) => n > 0);
    }
    assert.ok(everyThreadWorked, "no run had every thread working");
    const bytesOnceEveryThreadWorked = pipeline.memory.buffer.byteLength;
    for (let i = 0; i < 2000; i++) await pipeline.run({ inputs: { in: image } });
    const last = await pipeline.run({ inputs: { in: image } });
    assert.deepEqual(Array.from(last.outputs.out.data), Array.from(first.outputs.out.data));
    assert.equal(last.stats.iterationsPerThread.reduce((a, b) => a + b, 0), 64);
    assert.equal(pipeline.memory.buffer.byteLength, bytesOnceEveryThreadWorked);
    pipeline.dispose();
  });

  test("outputs can be written into the caller's arrays, checked for type and size", async () => {
    const pipeline = await runtime.compile(SCALE);
    const image = grayImage(40, 30);
    const into = new Uint8Array(40 * 30);
    for (const k of [4, 9]) {
      const { outputs } = await pipeline.run({ inputs: { in: image }, params: { k }, into: { out: into } });
      assert.equal(outputs.out.data, into);
      assert.deepEqual(Array.from(into), Array.from(expectedScale(image, k, 1)));
    }
    // The input's own array may receive the output: the input was copied
    // into the module's memory before the run.
    const copy = { ...image, data: image.data.slice() };
    await pipeline.run({ inputs: { in: copy }, params: { k: 1 }, into: { out: copy.data } });
    assert.deepEqual(Array.from(copy.data), Array.from(expectedScale(image, 1, 1)));

    const bad = async (into, pattern) =>
      assert.rejects(pipeline.run({ inputs: { in: image }, into }), (e) => e.kind === "bad-input" && pattern.test(e.message));
    await bad({ out: new Uint16Array(40 * 30) }, /into\.out must be a Uint8Array \(the output is u8\), got Uint16Array/);
    await bad({ out: new Uint8Array(40 * 30 - 1) }, /into\.out has 1199 values but the 40x30x1 output needs 1200/);
    await bad({ result: new Uint8Array(1200) }, /unknown output `result`/);
    // A run the module refuses leaves the array alone.
    const untouched = new Uint8Array(41 * 30).fill(7);
    await assert.rejects(
      pipeline.run({ inputs: { in: image }, outputSize: { width: 41, height: 30 }, into: { out: untouched } }),
      (e) => e.kind === "input-too-small",
    );
    assert.ok(untouched.every((v) => v === 7));
    pipeline.dispose();
  });

  test("a run whose intermediates grow the memory, then a larger image, give the right pixels", async () => {
    // The intermediate (4 bytes a pixel, computed whole) is larger than the
    // headroom the runtime leaves, so the generated code grows the memory
    // during the run; the second, larger image makes the runtime grow it
    // again before writing the input, after the module's own grow.
    const pipeline = await runtime.compile(`
input u8 in(x, y)
wide(x, y) = f32(in(x, y)) * 0.5
out(x, y) = u8(wide(x, y))
output out
schedule {
  wide.compute_root()
  out.parallel(y)
}
`);
    for (const [width, height] of [[700, 500], [1100, 900], [64, 48]]) {
      const image = grayImage(width, height);
      const { outputs } = await pipeline.run({ inputs: { in: image } });
      assert.deepEqual(Array.from(outputs.out.data), Array.from(image.data, (v) => v >> 1), `${width}x${height}`);
    }
    assert.ok(pipeline.memory.buffer.byteLength > 1100 * 900 * 6);
    pipeline.dispose();
  });

  test("running after dispose is rejected", async () => {
    const own = await createRuntime({ threads: 2 });
    const pipeline = await own.compile(SCALE);
    const image = grayImage(8, 8);
    pipeline.dispose();
    await assert.rejects(pipeline.run({ inputs: { in: image } }), (e) => e.kind === "disposed");
    const other = await own.compile(SCALE);
    own.dispose();
    await assert.rejects(other.run({ inputs: { in: image } }), (e) => e.kind === "disposed");
    await assert.rejects(own.compile(SCALE), (e) => e.kind === "disposed");
  });

  test("a worker that dies during a run fails the run, not the process", async () => {
    const failing = new URL("./fixtures/dying-helper/", import.meta.url);
    const own = await createRuntime({ threads: 2, workerBaseUrl: failing });
    try {
      const pipeline = await own.compile(SCALE);
      await assert.rejects(
        pipeline.run({ inputs: { in: grayImage(64, 64) } }),
        (e) => e instanceof ArgentRunError && e.kind === "worker-failed" && /worker 1/.test(e.message),
      );
    } finally {
      own.dispose();
    }
  });

  test("a worker script that cannot load fails compile with a clear error", async () => {
    const missing = new URL(`file://${fileURLToPath(new URL("./fixtures/missing/", import.meta.url))}`);
    const own = await createRuntime({ threads: 2, workerBaseUrl: missing });
    try {
      await assert.rejects(own.compile(SCALE), /compiler worker failed|Cannot find module|ERR_MODULE_NOT_FOUND/);
    } finally {
      own.dispose();
    }
  });
});
