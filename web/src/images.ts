// Turning what callers hand us (ImageData, ImageBitmap, canvases, plain
// interleaved arrays) into typed, interleaved pixel arrays, and outputs
// back into canvas pixels.

import { ArgentRunError } from "./errors.js";
import type { ScalarType } from "./protocol.js";

/** A typed array of one of the language's element types. */
export type PixelArray =
  | Uint8Array
  | Uint8ClampedArray
  | Uint16Array
  | Uint32Array
  | Int8Array
  | Int16Array
  | Int32Array
  | Float32Array;

/**
 * A plain image: `channels` values per pixel, interleaved (`c` fastest),
 * rows of `width` pixels, no padding. `data.length` must be
 * `width * height * channels`.
 */
export interface PlainImage {
  data: PixelArray;
  width: number;
  height: number;
  channels: number;
}

/** Anything `Pipeline.run` accepts as an input image. */
export type ImageSource =
  | PlainImage
  | ImageData
  | ImageBitmap
  | HTMLCanvasElement
  | OffscreenCanvas
  | HTMLImageElement;

/** Bytes per element of each type (bool is stored as one byte). */
export const TYPE_BYTES: Record<ScalarType, number> = {
  u8: 1,
  i8: 1,
  bool: 1,
  u16: 2,
  i16: 2,
  u32: 4,
  i32: 4,
  f32: 4,
};

/** The typed array constructor that holds a type's values. */
export function arrayTypeFor(type: ScalarType) {
  switch (type) {
    case "u8":
    case "bool":
      return Uint8Array;
    case "i8":
      return Int8Array;
    case "u16":
      return Uint16Array;
    case "i16":
      return Int16Array;
    case "u32":
      return Uint32Array;
    case "i32":
      return Int32Array;
    case "f32":
      return Float32Array;
  }
}

function isPlainImage(source: ImageSource): source is PlainImage {
  return (
    typeof source === "object" &&
    source !== null &&
    "data" in source &&
    "width" in source &&
    "height" in source &&
    "channels" in source
  );
}

function pixelsOfDrawable(source: CanvasImageSource & { width: number; height: number }): ImageData {
  const width = source.width;
  const height = source.height;
  if (typeof OffscreenCanvas === "undefined") {
    throw new ArgentRunError("bad-input", "this environment cannot read pixels from an ImageBitmap or canvas");
  }
  const canvas = new OffscreenCanvas(width, height);
  const context = canvas.getContext("2d");
  if (!context) throw new ArgentRunError("bad-input", "could not create a 2D context to read pixels");
  context.drawImage(source, 0, 0);
  return context.getImageData(0, 0, width, height);
}

/**
 * Reads any accepted image source into a plain interleaved image. Browser
 * sources become 4-channel u8 (RGBA), as the canvas stores them.
 */
export function toPlainImage(source: ImageSource, name: string): PlainImage {
  if (isPlainImage(source)) {
    const { data, width, height, channels } = source;
    for (const [field, value] of [["width", width], ["height", height], ["channels", channels]] as const) {
      if (!Number.isInteger(value) || value <= 0) {
        throw new ArgentRunError("bad-input", `input \`${name}\`: ${field} must be a positive integer, got ${value}`);
      }
    }
    if (!ArrayBuffer.isView(data)) {
      throw new ArgentRunError("bad-input", `input \`${name}\`: data must be a typed array`);
    }
    if (data.length !== width * height * channels) {
      throw new ArgentRunError(
        "bad-input",
        `input \`${name}\`: data has ${data.length} values but ${width}x${height}x${channels} needs ${width * height * channels}`,
      );
    }
    return source;
  }
  if (typeof ImageData !== "undefined" && source instanceof ImageData) {
    return { data: source.data, width: source.width, height: source.height, channels: 4 };
  }
  if (typeof HTMLCanvasElement !== "undefined" && source instanceof HTMLCanvasElement) {
    const context = source.getContext("2d");
    if (context) {
      const pixels = context.getImageData(0, 0, source.width, source.height);
      return { data: pixels.data, width: pixels.width, height: pixels.height, channels: 4 };
    }
  }
  if (
    (typeof ImageBitmap !== "undefined" && source instanceof ImageBitmap) ||
    (typeof OffscreenCanvas !== "undefined" && source instanceof OffscreenCanvas) ||
    (typeof HTMLCanvasElement !== "undefined" && source instanceof HTMLCanvasElement) ||
    (typeof HTMLImageElement !== "undefined" && source instanceof HTMLImageElement)
  ) {
    const drawable = source as CanvasImageSource & { width: number; height: number };
    const pixels = pixelsOfDrawable(drawable);
    return { data: pixels.data, width: pixels.width, height: pixels.height, channels: 4 };
  }
  throw new ArgentRunError(
    "bad-input",
    `input \`${name}\`: expected ImageData, ImageBitmap, a canvas, or { data, width, height, channels }`,
  );
}

/** Whether `data` can hold values of `type` without conversion. */
export function arrayMatchesType(data: PixelArray, type: ScalarType): boolean {
  const expected = arrayTypeFor(type);
  if (data instanceof expected) return true;
  return expected === Uint8Array && data instanceof Uint8ClampedArray;
}

function typeNameOf(data: PixelArray): string {
  return data.constructor.name;
}

/** Checks an input's element type, explaining the mismatch. */
export function checkInputType(image: PlainImage, type: ScalarType, name: string): void {
  if (!arrayMatchesType(image.data, type)) {
    throw new ArgentRunError(
      "bad-input",
      `input \`${name}\` is ${type} but the image data is a ${typeNameOf(image.data)}; ` +
        `pass a ${arrayTypeFor(type).name}`,
    );
  }
}

/** An output image: interleaved, typed, with its element type named. */
export interface OutputImage extends PlainImage {
  type: ScalarType;
}

/**
 * The 8-bit sample shown for an output value, the same rule as the Rust
 * CLI (crates/argent-cli/src/images.rs): u16 keeps its high byte, i8 is
 * clamped to 0..127 and doubled, other integers are clamped to 0..255,
 * f32 is taken to lie in 0..1 (scaled by 255 and rounded half away from
 * zero; NaN gives 0), bool gives 0 or 255.
 */
export function sampleOf(value: number, type: ScalarType): number {
  switch (type) {
    case "u16":
      return Math.min(65535, Math.max(0, value)) >> 8;
    case "i8":
      return Math.min(127, Math.max(0, value)) * 2;
    case "bool":
      return value !== 0 ? 255 : 0;
    case "f32": {
      if (Number.isNaN(value)) return 0;
      const scaled = Math.min(1, Math.max(0, value)) * 255;
      // Rust's f32::round rounds half away from zero; scaled is never negative.
      return Math.floor(Math.fround(scaled) + 0.5);
    }
    default:
      return Math.min(255, Math.max(0, value));
  }
}

/**
 * Converts an output to canvas RGBA bytes: 1 channel is grey, 2 is grey
 * plus alpha, 3 is RGB (opaque), 4 is RGBA; values map with `sampleOf`.
 */
export function toRgba(output: PlainImage & { type?: ScalarType }): Uint8ClampedArray {
  const { data, width, height, channels } = output;
  const type = output.type ?? "u8";
  const rgba = new Uint8ClampedArray(width * height * 4);
  for (let pixel = 0; pixel < width * height; pixel++) {
    const base = pixel * channels;
    let r: number, g: number, b: number, a: number;
    if (channels === 1) {
      r = g = b = sampleOf(data[base], type);
      a = 255;
    } else if (channels === 2) {
      r = g = b = sampleOf(data[base], type);
      a = sampleOf(data[base + 1], type);
    } else {
      r = sampleOf(data[base], type);
      g = sampleOf(data[base + 1], type);
      b = sampleOf(data[base + 2], type);
      a = channels >= 4 ? sampleOf(data[base + 3], type) : 255;
    }
    rgba[pixel * 4] = r;
    rgba[pixel * 4 + 1] = g;
    rgba[pixel * 4 + 2] = b;
    rgba[pixel * 4 + 3] = a;
  }
  return rgba;
}

/** Draws an output into a canvas, resizing the canvas to fit. */
export function drawToCanvas(
  output: PlainImage & { type?: ScalarType },
  canvas: HTMLCanvasElement | OffscreenCanvas,
): void {
  canvas.width = output.width;
  canvas.height = output.height;
  const context = canvas.getContext("2d") as CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D | null;
  if (!context) throw new Error("drawToCanvas: the canvas has no 2D context");
  const rgba = toRgba(output);
  const pixels = new ImageData(rgba as Uint8ClampedArray<ArrayBuffer>, output.width, output.height);
  context.putImageData(pixels, 0, 0);
}
