// The worker pool and the parallel_for protocol on a module that
// argent-wasm generates from a hand-built lowered IR
// (crates/argent-web/examples/hand_module.rs: out(x, y) = in(x, y) * 2 + k,
// rows in parallel, with input bounds checks). Independent of the front
// end and lowering, so it pins down the runtime itself.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ArgentRunError, createRuntime } from "../dist/index.js";
import { REPO } from "./helpers.mjs";

const DESCRIPTION = {
  inputs: [{ name: "in", type: "u8", dims: ["x", "y"] }],
  outputs: [{ name: "out", type: "u8", dims: ["x", "y"] }],
  params: [{ name: "k", type: "u8", default: 1, range: null }],
};

/** Generates the module with (`threads`) or without shared memory. */
function handModule(threads) {
  const dir = mkdtempSync(join(tmpdir(), "argent-hand-"));
  const args = ["run", "--release", "-j2", "-q", "-p", "argent-web", "--example", "hand_module", "--", dir];
  if (threads) args.push("threads");
  const built = spawnSync("cargo", args, { cwd: process.env.ARGENT_CARGO_DIR ?? REPO, encoding: "utf8" });
  try {
    if (built.status !== 0) throw new Error(`cargo ${args.join(" ")} failed:\n${built.stderr}`);
    return {
      wasm: new Uint8Array(readFileSync(join(dir, "hand.wasm"))),
      abi: JSON.parse(readFileSync(join(dir, "hand.abi.json"), "utf8")),
      pipeline: DESCRIPTION,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function image(width, height) {
  const data = new Uint8Array(width * height);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 7)) & 255;
  return { data, width, height, channels: 1 };
}

function expected(input, k) {
  return Array.from(input.data, (v) => (v * 2 + k) & 255);
}

let threaded;
let serial;
before(() => {
  threaded = handModule(true);
  serial = handModule(false);
});

// One thread runs both kinds of module: the serial one on a memory of the
// driver's own (inputs and outputs travel in messages), the threaded one on
// shared memory (the main thread copies them in and out directly, and the
// driver runs every parallel iteration itself).
for (const [threads, shared] of [[1, false], [1, true], [2, true], [4, true]]) {
  describe(`${threads} thread(s), ${shared ? "shared" : "private"} memory`, () => {
    let runtime;
    let pipeline;
    before(async () => {
      runtime = await createRuntime({ threads });
      pipeline = await runtime.load(shared ? threaded : serial);
    });
    after(() => runtime.dispose());

    test("every row is computed once, by the pool's threads", async () => {
      const input = image(301, 1031);
      const { outputs, stats } = await pipeline.run({ inputs: { in: input }, params: { k: 5 } });
      assert.deepEqual(Array.from(outputs.out.data), expected(input, 5));
      assert.equal(stats.iterationsPerThread.length, threads);
      assert.equal(stats.iterationsPerThread.reduce((a, b) => a + b, 0), shared ? 1031 : 0);
    });

    test("timings split the run into execute, marshal and overhead", async () => {
      const { timings: t } = await pipeline.run({ inputs: { in: image(640, 480) } });
      for (const key of ["copyIn", "execute", "copyOut", "marshal", "overhead", "total"]) {
        assert.ok(Number.isFinite(t[key]) && t[key] >= 0, `${key} = ${t[key]}`);
      }
      assert.equal(t.marshal, t.copyIn + t.copyOut);
      assert.ok(Math.abs(t.execute + t.marshal + t.overhead - t.total) < 1e-6, JSON.stringify(t));
    });

    test("outputs written into the caller's array", async () => {
      const input = image(123, 77);
      const into = new Uint8Array(123 * 77);
      const { outputs } = await pipeline.run({ inputs: { in: input }, params: { k: 3 }, into: { out: into } });
      assert.equal(outputs.out.data, into);
      assert.deepEqual(Array.from(into), expected(input, 3));
    });

    test("the module's bounds check names the input and both regions", async () => {
      const error = await pipeline
        .run({ inputs: { in: image(10, 8) }, outputSize: { width: 10, height: 9 } })
        .then(() => assert.fail("must fail"), (e) => e);
      assert.ok(error instanceof ArgentRunError);
      assert.equal(error.kind, "input-too-small");
      assert.equal(
        error.message,
        "input `in` is too small: stage `out` reads y from 0 to 8, but the input covers y from 0 to 7",
      );
    });

    test("queued concurrent runs and thousands of runs stay correct", async () => {
      const input = image(67, 45);
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, k) => pipeline.run({ inputs: { in: input }, params: { k } })),
      );
      results.forEach((r, k) => assert.deepEqual(Array.from(r.outputs.out.data), expected(input, k)));
      for (let i = 0; i < 1500; i++) await pipeline.run({ inputs: { in: input }, params: { k: i & 255 } });
      const last = await pipeline.run({ inputs: { in: input }, params: { k: 9 } });
      assert.deepEqual(Array.from(last.outputs.out.data), expected(input, 9));
    });

    test("larger images grow the memory", async () => {
      const input = image(2048, 1536);
      const { outputs } = await pipeline.run({ inputs: { in: input }, params: { k: 1 } });
      assert.deepEqual(Array.from(outputs.out.data.subarray(-4096)), expected(input, 1).slice(-4096));
    });
  });
}

test("a module made for shared memory is refused by a runtime without shared memory", async () => {
  const runtime = await createRuntime({ threads: 1, sharedMemory: false });
  try {
    await assert.rejects(runtime.load(threaded), /shared memory/);
  } finally {
    runtime.dispose();
  }
});

test("a helper that dies mid-run rejects that run; a new pool serves the next one", async () => {
  const dying = await createRuntime({ threads: 2, workerBaseUrl: new URL("./fixtures/dying-helper/", import.meta.url) });
  try {
    const pipeline = await dying.load(threaded);
    await assert.rejects(
      pipeline.run({ inputs: { in: image(64, 64) } }),
      (e) => e instanceof ArgentRunError && e.kind === "worker-failed" && /worker 1 failed/.test(e.message),
    );
  } finally {
    dying.dispose();
  }
  const healthy = await createRuntime({ threads: 2 });
  try {
    const pipeline = await healthy.load(threaded);
    const input = image(64, 64);
    const { outputs } = await pipeline.run({ inputs: { in: input }, params: { k: 2 } });
    assert.deepEqual(Array.from(outputs.out.data), expected(input, 2));
  } finally {
    healthy.dispose();
  }
});

test("runs after dispose are rejected", async () => {
  const runtime = await createRuntime({ threads: 2 });
  const pipeline = await runtime.load(threaded);
  const input = image(8, 8);
  const pending = pipeline.run({ inputs: { in: input } });
  pipeline.dispose();
  await assert.rejects(pipeline.run({ inputs: { in: input } }), (e) => e.kind === "disposed");
  await pending.catch(() => undefined);
  runtime.dispose();
  await assert.rejects(runtime.load(threaded), (e) => e.kind === "disposed");
});

// Two parallel loops in one run (the helpers join one job after the other)
// and a parallel loop inside each of them (run serially inside the task,
// so it cannot deadlock), on as many threads as there are cores and more.
test("parallel loops in sequence and nested in one run give the same pixels on 1, 2 and 4 threads", async () => {
  const source = `input u8 in(x, y)
a(x, y) = in(x, y) + 1
b(x, y) = a(x, y) * 2 + a(x, y + 1)
output b
schedule {
  a.compute_root().parallel(y).parallel(x)
  b.split(y, yo, yi, 4).parallel(yo).parallel(yi)
}`;
  const input = image(37, 29);
  const outputSize = { width: 37, height: 28 };
  const want = [];
  for (let y = 0; y < 28; y++) {
    for (let x = 0; x < 37; x++) {
      const above = (input.data[y * 37 + x] + 1) & 255;
      const below = (input.data[(y + 1) * 37 + x] + 1) & 255;
      want.push((above * 2 + below) & 255);
    }
  }
  const iterations = [];
  for (const threads of [1, 2, 4]) {
    const runtime = await createRuntime({ threads });
    try {
      const pipeline = await runtime.compile(source);
      for (let k = 0; k < 20; k++) {
        const { outputs, stats } = await pipeline.run({ inputs: { in: input }, outputSize });
        assert.deepEqual(Array.from(outputs.b.data), want, `${threads} thread(s), run ${k}`);
        assert.equal(stats.iterationsPerThread.length, threads);
        iterations.push(stats.iterationsPerThread.reduce((a, b) => a + b, 0));
      }
    } finally {
      runtime.dispose();
    }
  }
  // Both loops ran every iteration exactly once, whatever the thread count.
  assert.ok(iterations[0] > 28, `only ${iterations[0]} iterations`);
  assert.ok(iterations.every((n) => n === iterations[0]), iterations.join(", "));
});
