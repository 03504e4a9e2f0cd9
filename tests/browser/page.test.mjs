// The demo page in headless Chromium: it compiles an example in the page,
// runs it on the worker pool over shared memory, and draws the result; the
// canvas must equal the reference interpreter's output bit for bit.
//
// Needs: web/pkg and web/dist (scripts/build-web.sh), Chromium at
// /usr/bin/chromium (apt-get install chromium), and the Rust CLI (built on
// demand by web/test/helpers.mjs). Run: node --test tests/browser/

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { REPO, WEB, firstDifference, referenceOutputs } from "../../web/test/helpers.mjs";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = [
  "--no-sandbox",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const EXAMPLE = "unsharp_mask";
const SCREENSHOTS = join(REPO, "target", "screenshots");

for (const [path, hint] of [
  [join(WEB, "dist", "index.js"), "run scripts/build-web.sh"],
  [join(WEB, "pkg", "argent_web_bg.wasm"), "run scripts/build-web.sh"],
  [CHROMIUM, "apt-get install -y chromium"],
]) {
  if (!existsSync(path)) throw new Error(`missing ${path}: ${hint}`);
}

const { chromium } = createRequire(join(WEB, "package.json"))("playwright-core");
const { startServer } = await import(pathToFileURL(join(REPO, "www", "serve.mjs")).href);
const { decodePhoto, encodePhoto, readPhoto } = await import(pathToFileURL(join(WEB, "dist", "node.js")).href);

let server;
let context;
let userDataDir;
let photoPath;

before(async () => {
  // The canvas holds RGBA, so the reference runs on an RGBA copy of the
  // photo (opaque alpha): both then see exactly the same samples.
  const photo = await readPhoto(join(REPO, "images", "chelsea.png"));
  const rgba = new Uint8Array(photo.width * photo.height * 4);
  for (let p = 0; p < photo.width * photo.height; p++) {
    for (let c = 0; c < 3; c++) rgba[p * 4 + c] = photo.samples[p * photo.channels + (photo.channels === 1 ? 0 : c)];
    rgba[p * 4 + 3] = 255;
  }
  const fixtures = join(REPO, "target", "browser-fixtures");
  mkdirSync(fixtures, { recursive: true });
  photoPath = join(fixtures, "chelsea-rgba.png");
  writeFileSync(photoPath, encodePhoto({ width: photo.width, height: photo.height, channels: 4, samples: rgba }, photoPath));
  server = await startServer({ port: 0 });
  userDataDir = mkdtempSync(join(tmpdir(), "argent-chromium-"));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    env: { ...process.env, XDG_RUNTIME_DIR: userDataDir },
  });
});

after(async () => {
  await context?.close();
  await server?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

/** A new page of the playground, loaded with its compiler ready and nothing run. */
async function readyPage() {
  const page = await context.newPage();
  await page.goto(`${server.url}/www/index.html?example=${EXAMPLE}&autorun=0`);
  await page.waitForSelector("body[data-state=ready]", { timeout: 60_000, state: "attached" });
  return page;
}

/** An RGBA 2x2 box filter (u8), for the tests that drive the runtime from the page. */
const RGBA_BLUR = `
input u8 photo(x, y, c)
blur(x, y, c) = u8((u16(photo(x, y, c)) + u16(photo(x + 1, y, c)) + u16(photo(x, y + 1, c)) + u16(photo(x + 1, y + 1, c))) / 4)
output blur
schedule { blur.reorder(c, x, y).parallel(y).vectorize(x, 16) }
`;

test(`the page compiles and runs ${EXAMPLE} on workers, matching the reference bit for bit`, async () => {
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console error: ${message.text()}`);
  });
  const photoUrl = "/target/browser-fixtures/chelsea-rgba.png";
  await page.goto(`${server.url}/www/index.html?example=${EXAMPLE}&photo=${photoUrl}&threads=2`);
  await page.waitForSelector("body[data-state=done], body[data-state=error]", { timeout: 180_000, state: "attached" });
  const demo = await page.evaluate(() => window.argentDemo);
  assert.equal(demo.state, "done", `page failed: ${demo.message}\n${problems.join("\n")}`);
  assert.equal(demo.crossOriginIsolated, true, "the page must be cross-origin isolated");
  assert.equal(demo.mode, "threads");
  assert.equal(demo.threads, 2);
  assert.equal(demo.iterationsPerThread.length, 2, "the run used the two-worker pool");
  assert.ok(demo.iterationsPerThread.reduce((a, b) => a + b, 0) > 0, "parallel loops ran on the workers");
  assert.equal(demo.simd, true);
  assert.ok(demo.compile.toBytes > 0 && demo.compile.engineCompile >= 0);

  const pixels = await page.evaluate(() => {
    const canvas = document.getElementById("output");
    const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let binary = "";
    for (let i = 0; i < data.length; i += 0x8000) binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
    return { width: canvas.width, height: canvas.height, base64: btoa(binary) };
  });
  const canvas = new Uint8Array(Buffer.from(pixels.base64, "base64"));

  const [referencePath] = referenceOutputs(join(REPO, "examples", `${EXAMPLE}.ag`), [["photo", photoPath]], ["out"]);
  const reference = await readPhoto(referencePath);
  assert.deepEqual([pixels.width, pixels.height], [reference.width, reference.height]);
  assert.equal(reference.channels, 4);
  const at = firstDifference(canvas, reference.samples);
  assert.equal(at, -1, at < 0 ? "" : `pixel ${Math.floor(at / 4)} channel ${at % 4}: canvas ${canvas[at]}, reference ${reference.samples[at]}`);

  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `www-${EXAMPLE}.png`), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test("compile errors are shown with their diagnostics", async () => {
  const page = await readyPage();
  await page.fill("#source", "input u8 in(x, y)\nout(x, y) = in(x, y) + nope\noutput out\n");
  await page.click("#run");
  await page.waitForSelector("body[data-state=error]", { timeout: 60_000, state: "attached" });
  const demo = await page.evaluate(() => window.argentDemo);
  assert.ok(demo.diagnostics.length >= 1);
  assert.equal(demo.diagnostics[0].span.start.line, 2);
  assert.match(await page.textContent("#diagnostics"), /nope/);
  await page.close();
});

test("resident images run in place in the page (real Web Workers, shared memory) and draw to a canvas", async () => {
  const page = await readyPage();
  const result = await page.evaluate(async (source) => {
    const { createRuntime, drawToCanvas } = await import("/web/dist/index.js");
    const runtime = await createRuntime({ threads: 2 });
    const pipeline = await runtime.compile(source);
    const [width, height] = [321, 200];
    const frame = await pipeline.allocateImage("photo", { width: width + 1, height: height + 1, channels: 4 });
    const shown = await pipeline.allocateImage("blur", { width, height, channels: 4 });
    // Opaque alpha, so that the canvas (which premultiplies) keeps every sample.
    for (let i = 0; i < frame.data.length; i++) frame.data[i] = i % 4 === 3 ? 255 : (Math.imul(i, 2654435761) >>> 24);
    const copy = { data: frame.data.slice(), width: width + 1, height: height + 1, channels: 4 };
    const size = { width, height, channels: 4 };
    const inPlace = await pipeline.run({ inputs: { photo: frame }, outputSize: size, into: { blur: shown.data } });
    const copied = await pipeline.run({ inputs: { photo: copy }, outputSize: size });
    let differences = 0;
    for (let i = 0; i < shown.data.length; i++) differences += shown.data[i] !== copied.outputs.blur.data[i] ? 1 : 0;
    const canvas = document.createElement("canvas");
    drawToCanvas(inPlace.outputs.blur, canvas);
    const drawn = canvas.getContext("2d").getImageData(0, 0, width, height).data;
    let drawnDifferences = 0;
    for (let i = 0; i < drawn.length; i++) drawnDifferences += drawn[i] !== shown.data[i] ? 1 : 0;
    const answer = {
      resident: frame.resident && shown.resident,
      shared: shown.data.buffer instanceof SharedArrayBuffer,
      sameArray: inPlace.outputs.blur.data === shown.data,
      differences,
      drawnDifferences,
      marshal: inPlace.timings.marshal,
      iterations: inPlace.stats.iterationsPerThread.length,
    };
    runtime.dispose();
    return answer;
  }, RGBA_BLUR);
  assert.equal(result.resident, true);
  assert.equal(result.shared, true);
  assert.equal(result.sameArray, true);
  assert.equal(result.iterations, 2);
  assert.equal(result.differences, 0, "in place and copied runs differ");
  assert.equal(result.drawnDifferences, 0, "the canvas differs from the resident output");
  await page.close();
});

test("polling between runs: back-to-back runs call the page's Web Workers through shared memory, with the same pixels", async () => {
  const page = await readyPage();
  const result = await page.evaluate(async (source) => {
    const { createRuntime } = await import("/web/dist/index.js");
    const [width, height] = [300, 180];
    const data = new Uint8Array((width + 1) * (height + 1) * 4);
    for (let i = 0; i < data.length; i++) data[i] = Math.imul(i, 2654435761) >>> 24;
    const request = { inputs: { photo: { data, width: width + 1, height: height + 1, channels: 4 } }, outputSize: { width, height, channels: 4 } };
    const plain = await createRuntime({ threads: 2 });
    const want = (await (await plain.compile(source)).run(request)).outputs.blur.data;
    plain.dispose();
    const polling = await createRuntime({ threads: 2, pollBetweenRuns: 1000 });
    const pipeline = await polling.compile(source);
    const called = [];
    let differences = 0;
    for (let run = 0; run < 3; run++) {
      const { outputs, stats } = await pipeline.run(request);
      called.push(stats.workersCalled);
      for (let i = 0; i < want.length; i++) differences += outputs.blur.data[i] !== want[i] ? 1 : 0;
    }
    polling.dispose();
    return { called, differences };
  }, RGBA_BLUR);
  assert.deepEqual(result.called, [0, 2, 2]);
  assert.equal(result.differences, 0, "runs called through shared memory compute other pixels");
  await page.close();
});
