// Running pipelines on photo files in Node, with the Rust CLI's rules for
// inputs, parameters and the output size. Shared by the `argent` CLI and
// the tests.

import { outputToRaster, photoToInput, readPhoto, writePhoto, type Raster } from "./photo.js";
import type { ParamDescription } from "./protocol.js";
import type { Pipeline, RunRequest, RunResult } from "./runtime.js";

export { decodePhoto, encodePhoto, outputToRaster, photoToInput, readPhoto, writePhoto } from "./photo.js";
export type { Raster } from "./photo.js";

/** A user mistake in the photos, params or size given for a run. */
export class PhotoRequestError extends Error {
  override name = "PhotoRequestError";
}

/** What to run a pipeline on, as the command line says it. */
export interface PhotoRunOptions {
  /** `[input name, photo path]` pairs. */
  inputs: [string, string][];
  /** `[param name, value text]` pairs. */
  params?: [string, string][];
  /** `WxH`. */
  size?: string;
  /** Cancels the run (see `RunRequest.signal`). */
  signal?: AbortSignal;
}

/** Parses a parameter's text as the Rust CLI does. */
export function parseParam(param: ParamDescription | undefined, name: string, text: string, known: string[]): number | boolean {
  if (!param) {
    throw new PhotoRequestError(
      `the pipeline has no parameter named \`${name}\`; its parameters are: ${known.join(", ") || "none"}`,
    );
  }
  const bad = (what: string) =>
    new PhotoRequestError(`bad value \`${text}\` for parameter \`${name}\`: expected ${what} (it is declared ${param.type})`);
  if (param.type === "bool") {
    if (text === "true" || text === "1") return true;
    if (text === "false" || text === "0") return false;
    throw bad("true or false");
  }
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) throw bad(param.type === "f32" ? "a number" : "an integer");
  if (param.type !== "f32" && !Number.isInteger(value)) throw bad("an integer");
  return value;
}

/** Parses `WxH`. */
export function parseSize(text: string): { width: number; height: number } {
  const match = /^(\d+)[xX](\d+)$/.exec(text);
  const width = Number(match?.[1]);
  const height = Number(match?.[2]);
  if (!match || width <= 0 || height <= 0) {
    throw new PhotoRequestError(`--size expects WxH with positive numbers, got \`${text}\``);
  }
  return { width, height };
}

/** Builds a run request from photo files and command-line values. */
export async function requestFromPhotos(pipeline: Pipeline, options: PhotoRunOptions): Promise<RunRequest> {
  const request: RunRequest = { inputs: {}, params: {} };
  const photos = options.inputs;
  for (const [name] of photos) {
    if (!pipeline.inputs.some((input) => input.name === name)) {
      throw new PhotoRequestError(
        `the pipeline has no input named \`${name}\`; its inputs are: ${pipeline.inputs.map((i) => i.name).join(", ") || "none"}`,
      );
    }
  }
  for (const input of pipeline.inputs) {
    const given = photos.find(([name]) => name === input.name);
    if (!given) {
      throw new PhotoRequestError(`no photo was given for input \`${input.name}\`; pass one with --input ${input.name}=photo.png`);
    }
    const raster = await readPhoto(given[1]).catch((error) => {
      throw new PhotoRequestError(error.message);
    });
    try {
      request.inputs[input.name] = photoToInput(raster, input.name, input.dims.length, input.type);
    } catch (error) {
      throw new PhotoRequestError((error as Error).message);
    }
  }
  const known = pipeline.params.map((p) => p.name);
  for (const [name, text] of options.params ?? []) {
    request.params![name] = parseParam(pipeline.params.find((p) => p.name === name), name, text, known);
  }
  // Pipelines that declare integer params out_width and out_height (e.g. a
  // resize) take their output size from them, as in the Rust CLI.
  const sizeParams = ["out_width", "out_height"].map((n) => pipeline.params.find((p) => p.name === n));
  const declaresSize = sizeParams.every((p) => p && p.type !== "f32" && p.type !== "bool");
  if (options.size) {
    const size = parseSize(options.size);
    request.outputSize = size;
    if (declaresSize) {
      request.params!.out_width ??= size.width;
      request.params!.out_height ??= size.height;
    }
  } else if (declaresSize) {
    const width = request.params!.out_width ?? sizeParams[0]!.default;
    const height = request.params!.out_height ?? sizeParams[1]!.default;
    if (typeof width !== "number" || typeof height !== "number") {
      throw new PhotoRequestError("the output size is unknown: give --size WxH or the params out_width and out_height");
    }
    request.outputSize = { width, height };
  } else if (pipeline.inputs.length === 0) {
    throw new PhotoRequestError("the pipeline has no inputs, so the output size is unknown: give --size WxH");
  }
  return request;
}

/** Runs a pipeline on photos and writes its outputs (`OUT-NAME.png` when there are several). */
export async function runOnPhotos(
  pipeline: Pipeline,
  options: PhotoRunOptions,
  outputPath: string,
): Promise<{ result: RunResult; written: string[]; rasters: Raster[] }> {
  const result = await pipeline.run({ ...(await requestFromPhotos(pipeline, options)), signal: options.signal });
  const written: string[] = [];
  const rasters: Raster[] = [];
  for (const output of pipeline.outputs) {
    let raster: Raster;
    try {
      raster = outputToRaster(result.outputs[output.name], output.name);
    } catch (error) {
      throw new PhotoRequestError((error as Error).message);
    }
    const path = pathForOutput(outputPath, output.name, pipeline.outputs.length);
    await writePhoto(raster, path);
    written.push(path);
    rasters.push(raster);
  }
  return { result, written, rasters };
}

/** The file an output goes to: the path itself, or `STEM-NAME.EXT` with several outputs (as the Rust CLI). */
export function pathForOutput(path: string, output: string, count: number): string {
  if (count === 1) return path;
  const slash = path.lastIndexOf("/") + 1;
  const file = path.slice(slash);
  const dot = file.lastIndexOf(".");
  const stem = dot > 0 ? file.slice(0, dot) : file;
  const extension = dot > 0 ? file.slice(dot) : ".png";
  return `${path.slice(0, slash)}${stem}-${output}${extension}`;
}
