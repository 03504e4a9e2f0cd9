// Polling between runs (`RuntimeOptions.pollBetweenRuns`): workers that
// finished a run on shared memory poll for the next one, and the next run
// of the same pipeline calls them through shared memory instead of by
// message. Runs must give the pixels they give without polling, whatever
// comes between them: another pipeline, a compile, a failed run, an abort.
// By default ("auto") a worker sleeps on shared memory for a while after a
// run (no CPU), and polls first only after a short gap between runs.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createRuntime } from "../dist/index.js";
import { AUTO_POLL_CAP_MS, autoPollMs } from "../dist/layout.js";
import { BLUR_U16 } from "./helpers.mjs";

// The blur of helpers.mjs: a W x H input gives (W - 2) x (H - 2).
const BLUR = BLUR_U16;

// Another pipeline, to alternate with the blur.
const SCALE = `
input u16 in(x, y)
param u16 k = 3
out(x, y) = in(x, y) * k + u16(x)
output out
schedule { out.parallel(y).vectorize(x, 8) }
`;

/** Deterministic 12-bit pixels: `seed` changes every value. */
function image(width, height, seed) {
  const data = new Uint16Array(width * height);
  for (let i = 0; i < data.length; i++) data[i] = (Math.imul(i + seed, 2654435761) >>> 20) & 4095;
  return { data, width, height, channels: 1 };
}

function runBlur(pipeline, input) {
  return pipeline.run({ inputs: { in: input }, outputSize: { width: input.width - 2, height: input.height - 2 } });
}

/** `body(runtime)` with a runtime of `options`, disposed afterwards. */
async function withRuntime(options, body) {
  const runtime = await createRuntime(options);
  try {
    return await body(runtime);
  } finally {
    runtime.dispose();
  }
}

/** What a runtime that does not poll computes for `source` on `input`. */
async function reference(source, input, params) {
  return withRuntime({ threads: 1 }, async (rt) => {
    const pipeline = await rt.compile(source);
    const size = source === BLUR ? { width: input.width - 2, height: input.height - 2 } : undefined;
    const { outputs } = await pipeline.run({ inputs: { in: input }, params, outputSize: size });
    return Array.from(outputs.out.data);
  });
}

describe("polling between runs", () => {
  test('pollBetweenRuns must be "auto" (the default) or a number of milliseconds from 0 to 1000', async () => {
    for (const bad of [-1, 1001, Number.NaN, "1", "Auto", Infinity]) {
      await assert.rejects(createRuntime({ threads: 1, pollBetweenRuns: bad }), (e) => {
        assert.ok(e instanceof RangeError, String(e));
        assert.match(e.message, /pollBetweenRuns must be "auto" or a number of milliseconds from 0 to 1000/);
        return true;
      });
    }
    await withRuntime({ threads: 1 }, async (runtime) => assert.equal(runtime.pollBetweenRuns, "auto"));
    await withRuntime({ threads: 1, pollBetweenRuns: 0 }, async (runtime) => assert.equal(runtime.pollBetweenRuns, 0));
  });

  test('"auto" polls three times the gap between runs plus a quarter millisecond, up to the cap, and not at all after a longer gap', () => {
    assert.equal(AUTO_POLL_CAP_MS, 2);
    assert.equal(autoPollMs(0, 2), 0.25);
    assert.equal(autoPollMs(0.1, 2), 0.55);
    assert.equal(autoPollMs(0.5, 2), 1.75);
    assert.equal(autoPollMs(1, 2), 2);
    assert.equal(autoPollMs(2, 2), 2);
    // The caller runs now and then, or this is the worker's first run.
    assert.equal(autoPollMs(2.01, 2), 0);
    assert.equal(autoPollMs(Infinity, 2), 0);
    assert.equal(autoPollMs(Number.NaN, 2), 0);
  });

  for (const threads of [1, 2]) {
    test(`${threads} thread(s), "auto": runs back to back call the workers through shared memory, so does a run after a short pause, a run after a long one wakes them by message, and every run is right`, async () => {
      await withRuntime({ threads }, async (runtime) => {
        const pipeline = await runtime.compile(BLUR);
        const input = image(160, 96, 8);
        const want = await reference(BLUR, input);
        const called = [];
        for (let i = 0; i < 40; i++) {
          const result = await runBlur(pipeline, input);
          assert.deepEqual(Array.from(result.outputs.out.data), want);
          called.push(result.stats.workersCalled);
        }
        // The first run woke the workers by message and measured no gap.
        assert.equal(called[0], 0);
        // Back to back the gaps are far below the cap: on a loaded machine
        // a poll may miss now and then, but not forty times over.
        assert.ok(called.some((n) => n === threads), `workers called: ${called.join(" ")}`);
        // A pause longer than any poll but within the sleep on shared
        // memory: the next run wakes them there. A loaded machine may
        // delay the timer past the sleep now and then, not five times.
        const afterShortPause = [];
        for (let i = 0; i < 5; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          const result = await runBlur(pipeline, input);
          assert.deepEqual(Array.from(result.outputs.out.data), want);
          afterShortPause.push(result.stats.workersCalled);
        }
        assert.ok(afterShortPause.includes(threads), `workers called after 10 ms: ${afterShortPause.join(" ")}`);
        // A pause far longer than the sleep: the workers went back to
        // their event loops and take a message.
        await new Promise((resolve) => setTimeout(resolve, 200));
        const later = await runBlur(pipeline, input);
        assert.equal(later.stats.workersCalled, 0);
        assert.deepEqual(Array.from(later.outputs.out.data), want);
      });
    });
  }

  test("pollBetweenRuns: 0 never polls", async () => {
    await withRuntime({ threads: 2, pollBetweenRuns: 0 }, async (runtime) => {
      const pipeline = await runtime.compile(BLUR);
      const input = image(100, 60, 9);
      for (let i = 0; i < 10; i++) assert.equal((await runBlur(pipeline, input)).stats.workersCalled, 0);
    });
  });

  for (const threads of [1, 2, 3]) {
    test(`${threads} thread(s): back to back, the next run calls every worker through shared memory, with the same pixels`, async () => {
      // A whole second: the workers are still polling when the next run
      // comes, however slow the machine.
      await withRuntime({ threads, pollBetweenRuns: 1000 }, async (runtime) => {
        assert.equal(runtime.pollBetweenRuns, 1000);
        const pipeline = await runtime.compile(BLUR);
        const inputs = [image(203, 101, 1), image(203, 101, 2), image(97, 230, 3)];
        const wanted = [];
        for (const input of inputs) wanted.push(await reference(BLUR, input));
        const results = [];
        for (const input of inputs) results.push(await runBlur(pipeline, input));
        results.forEach((result, i) => {
          assert.deepEqual(Array.from(result.outputs.out.data), wanted[i]);
          assert.equal(result.stats.iterationsPerThread.length, threads);
        });
        // The first run woke the workers by message; the next ones found
        // them polling.
        assert.deepEqual(
          results.map((r) => r.stats.workersCalled),
          [0, threads, threads],
        );
      });
    });
  }

  test("alternating pipelines, compiles in between, a failed run: each run is right, and the workers are released, not waited for", async () => {
    await withRuntime({ threads: 2, pollBetweenRuns: 1000 }, async (runtime) => {
      const blur = await runtime.compile(BLUR);
      const scale = await runtime.compile(SCALE);
      const input = image(130, 70, 4);
      const blurred = await reference(BLUR, input);
      const scaled = await reference(SCALE, input, { k: 5 });
      await runBlur(blur, input);
      for (let round = 0; round < 3; round++) {
        // The workers poll on the blur's memory: the other pipeline's run
        // sends them back to their event loops and posts its messages. Were
        // they not released, it would wait for their second of polling.
        const started = performance.now();
        const other = await scale.run({ inputs: { in: input }, params: { k: 5 } });
        assert.ok(performance.now() - started < 500, "the polling workers were released");
        assert.equal(other.stats.workersCalled, 0);
        assert.deepEqual(Array.from(other.outputs.out.data), scaled);
        const again = await scale.run({ inputs: { in: input }, params: { k: 5 } });
        assert.equal(again.stats.workersCalled, 2);
        assert.deepEqual(Array.from(again.outputs.out.data), scaled);
        const back = await runBlur(blur, input);
        assert.equal(back.stats.workersCalled, 0);
        assert.deepEqual(Array.from(back.outputs.out.data), blurred);
      }
      // A compile loads the new module on the polling workers (a message).
      const third = await runtime.compile(SCALE);
      const fresh = await third.run({ inputs: { in: input }, params: { k: 5 } });
      assert.deepEqual(Array.from(fresh.outputs.out.data), scaled);
      // A run that fails its input check, then runs that work.
      await assert.rejects(
        third.run({ inputs: { in: image(4, 4, 5) }, outputSize: { width: 8, height: 8 } }),
        (e) => e.kind === "input-too-small",
      );
      for (let i = 0; i < 2; i++) {
        const ok = await third.run({ inputs: { in: input }, params: { k: 5 } });
        assert.deepEqual(Array.from(ok.outputs.out.data), scaled);
      }
    });
  });

  test("an abort replaces the polling workers and the next runs are right", async () => {
    await withRuntime({ threads: 2, pollBetweenRuns: 1000 }, async (runtime) => {
      const pipeline = await runtime.compile(BLUR);
      const input = image(150, 90, 6);
      const want = await reference(BLUR, input);
      await runBlur(pipeline, input);
      const abort = new AbortController();
      abort.abort();
      await assert.rejects(
        pipeline.run({ inputs: { in: input }, outputSize: { width: 148, height: 88 }, signal: abort.signal }),
        (e) => e.kind === "aborted",
      );
      for (let i = 0; i < 3; i++) {
        const { outputs } = await runBlur(pipeline, input);
        assert.deepEqual(Array.from(outputs.out.data), want);
      }
    });
  });

  test("without shared memory (tiles mode) nothing polls", async () => {
    await withRuntime({ threads: 2, sharedMemory: false, pollBetweenRuns: 1000 }, async (runtime) => {
      assert.equal(runtime.mode, "tiles");
      const pipeline = await runtime.compile(BLUR);
      const input = image(120, 80, 7);
      const want = await reference(BLUR, input);
      for (let i = 0; i < 2; i++) {
        const result = await runBlur(pipeline, input);
        assert.equal(result.stats.workersCalled, undefined);
        assert.deepEqual(Array.from(result.outputs.out.data), want);
      }
    });
  });
});
