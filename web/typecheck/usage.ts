// Compiled with `tsc --noEmit -p typecheck` against the generated
// dist/index.d.ts: the public API as a consumer sees it.

import {
  ArgentCompileError,
  ArgentRunError,
  createRuntime,
  drawToCanvas,
  type Diagnostic,
  type OutputImage,
  type Pipeline,
  type ResidentImage,
  type RunResult,
} from "../dist/index.js";

export async function demo(canvas: HTMLCanvasElement, photo: ImageData): Promise<number> {
  const runtime = await createRuntime({ threads: 2 });
  const mode: "threads" | "tiles" | "single" = runtime.mode;
  let pipeline: Pipeline;
  try {
    pipeline = await runtime.compile("input u8 photo(x, y, c)\nout(x, y, c) = photo(x, y, c)\noutput out\n", { simd: true });
  } catch (error) {
    if (error instanceof ArgentCompileError) {
      const first: Diagnostic | undefined = error.diagnostics[0];
      return first ? first.span.start.line : -1;
    }
    throw error;
  }
  const names: string[] = pipeline.params.map((p) => `${p.name}: ${p.type} ${p.range?.[0] ?? ""}`);
  const result: RunResult = await pipeline.run({
    inputs: { photo },
    params: { amount: 1.5 },
    outputSize: { width: photo.width, height: photo.height },
  });
  const out: OutputImage = result.outputs.out;
  drawToCanvas(out, canvas);
  // Images kept in the pipeline's memory: runs copy no pixels.
  const frame: ResidentImage = await pipeline.allocateImage("photo", { width: 640, height: 480, channels: 4 });
  const shown: ResidentImage = await pipeline.allocateImage("out", { width: 640, height: 480, channels: 4 });
  frame.data.set(photo.data.subarray(0, frame.data.length));
  await pipeline.run({ inputs: { photo: frame }, into: { out: shown.data } });
  const inPlace: boolean = frame.resident && shown.type === "u8";
  // Workers poll 1 ms after every run, or (the default) only when runs come back to back.
  const frames = await createRuntime({ threads: 2, pollBetweenRuns: 1 });
  const polled: number | "auto" = frames.pollBetweenRuns;
  const adaptive = await createRuntime({ pollBetweenRuns: "auto" });
  adaptive.dispose();
  const called: number | undefined = result.stats.workersCalled;
  frames.dispose();
  await Promise.all([frame.release(), shown.release()]);
  const tagged = await runtime.compile`input u8 in(x, y) ${names.length}`;
  tagged.dispose();
  try {
    await pipeline.run({ inputs: { photo: { data: new Float32Array(4), width: 1, height: 1, channels: 4 } } });
  } catch (error) {
    if (error instanceof ArgentRunError && error.kind === "bad-input") return 0;
  }
  runtime.dispose();
  // total = execute + marshal + overhead: the split benchmarks report.
  const { execute, marshal, overhead }: { execute: number; marshal: number; overhead: number } = result.timings;
  return mode === "threads" && inPlace ? execute + marshal + overhead + pipeline.timings.engineCompile + (polled === "auto" ? 0 : polled) + (called ?? 0) : out.width;
}
