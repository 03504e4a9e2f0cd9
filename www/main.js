// The demo page: loads an example into the editor, compiles it in the
// page (the compiler runs in a worker), runs the generated module on the
// bundled photo with the worker pool, and draws the result.
//
// Query parameters (used by tests/browser): example=NAME (without .ag),
// photo=URL, threads=N, autorun=0 to wait for the button.
// `window.argentDemo` holds the last result for tests.

import { ArgentCompileError, createRuntime, drawToCanvas } from "../web/dist/index.js";

const EXAMPLES = [
  "unsharp_mask", "box_blur", "brighten_contrast", "grayscale", "sepia", "gaussian5x5",
  "sobel", "harris", "median3x3", "histogram_equalize", "bilateral_grid", "local_laplacian",
  "multiscale_interpolation", "camera_pipe", "bicubic_resize", "border_rules", "window_ops",
];

const query = new URLSearchParams(location.search);
const exampleName = query.get("example") ?? "unsharp_mask";
const photoUrl = query.get("photo") ?? "/images/chelsea.png";
const threads = query.has("threads") ? Number(query.get("threads")) : undefined;

const $ = (id) => document.getElementById(id);
const select = $("example");
const sourceArea = $("source");
const diagnosticsBox = $("diagnostics");
const stats = $("stats");
window.argentDemo = { state: "loading" };

for (const name of EXAMPLES) select.add(new Option(name, name, name === exampleName, name === exampleName));

function showStats(entries) {
  stats.replaceChildren();
  for (const [key, value] of entries) {
    const dt = document.createElement("dt");
    dt.textContent = key;
    const dd = document.createElement("dd");
    dd.textContent = value;
    dd.dataset.key = key;
    stats.append(dt, dd);
  }
}

async function loadExample(name) {
  const response = await fetch(`/examples/${name}.ag`);
  sourceArea.value = response.ok ? await response.text() : `# could not load examples/${name}.ag`;
}

/** Reads the photo's exact pixels: no colour-space conversion, no premultiplication. */
async function loadPhoto(url) {
  const blob = await (await fetch(url)).blob();
  const bitmap = await createImageBitmap(blob, { colorSpaceConversion: "none", premultiplyAlpha: "none" });
  const canvas = $("input");
  canvas.width = bitmap.width;
  canvas.height = bitmap.height;
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.drawImage(bitmap, 0, 0);
  return context.getImageData(0, 0, bitmap.width, bitmap.height);
}

const runtime = await createRuntime({ threads });
const photo = await loadPhoto(photoUrl);
await loadExample(exampleName);

/** Gives each input the photo: RGBA for 3-D inputs, luma for 2-D ones. */
function inputsFor(pipeline) {
  const inputs = {};
  for (const input of pipeline.inputs) {
    if (input.type !== "u8") throw new Error(`the demo feeds u8 photos; input \`${input.name}\` is ${input.type}`);
    if (input.dims.length === 3) {
      inputs[input.name] = photo;
    } else {
      const gray = new Uint8Array(photo.width * photo.height);
      for (let p = 0; p < gray.length; p++) {
        const [r, g, b] = photo.data.subarray(p * 4, p * 4 + 3);
        gray[p] = Math.floor((299 * r + 587 * g + 114 * b + 500) / 1000);
      }
      inputs[input.name] = { data: gray, width: photo.width, height: photo.height, channels: 1 };
    }
  }
  return inputs;
}

/** The run in progress, aborted when a newer one starts (a new example, a click on Run). */
let current = null;

async function compileAndRun() {
  current?.abort(new Error("a newer run started"));
  const mine = new AbortController();
  current = mine;
  document.body.dataset.state = "running";
  diagnosticsBox.textContent = "";
  try {
    const pipeline = await runtime.compile(sourceArea.value);
    let result;
    try {
      result = await pipeline.run({ inputs: inputsFor(pipeline), signal: mine.signal });
    } finally {
      if (mine.signal.aborted) pipeline.dispose();
    }
    const output = result.outputs[pipeline.outputs[0].name];
    drawToCanvas(output, $("output"));
    const t = pipeline.timings;
    window.argentDemo = {
      state: "done",
      example: select.value,
      mode: runtime.mode,
      threads: runtime.threads,
      simd: pipeline.simd,
      crossOriginIsolated: globalThis.crossOriginIsolated === true,
      iterationsPerThread: result.stats.iterationsPerThread,
      compile: t,
      run: result.timings,
      width: output.width,
      height: output.height,
      channels: output.channels,
    };
    showStats([
      ["mode", `${runtime.mode} (${runtime.modeReason})`],
      ["code", pipeline.simd ? "SIMD128" : "scalar"],
      ["compile (source to bytes)", `${t.toBytes.toFixed(1)} ms (in the compiler worker ${t.inCompiler.toFixed(1)} ms: parse ${t.parse.toFixed(1)}, lower ${t.lower.toFixed(1)}, codegen ${t.codegen.toFixed(1)})`],
      ["engine compile", `${t.engineCompile.toFixed(1)} ms`],
      ["run", `${result.timings.total.toFixed(2)} ms: execute ${result.timings.execute.toFixed(2)} ms (${result.stats.iterationsPerThread.join(" + ")} parallel iterations per thread), marshal ${result.timings.marshal.toFixed(2)} ms, overhead ${result.timings.overhead.toFixed(2)} ms`],
      ["output", `${output.width}x${output.height}x${output.channels} ${output.type}`],
    ]);
    pipeline.dispose();
    document.body.dataset.state = "done";
  } catch (error) {
    // A superseded run says nothing: the newer one reports.
    if (mine.signal.aborted) return;
    diagnosticsBox.textContent = error instanceof ArgentCompileError ? error.rendered : String(error);
    window.argentDemo = {
      state: "error",
      message: String(error),
      diagnostics: error instanceof ArgentCompileError ? error.diagnostics : [],
    };
    document.body.dataset.state = "error";
  }
}

select.addEventListener("change", async () => {
  await loadExample(select.value);
  await compileAndRun();
});
$("run").addEventListener("click", compileAndRun);
if (query.get("autorun") !== "0") await compileAndRun();
else document.body.dataset.state = "ready";
