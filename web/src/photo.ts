// Photos in Node: PNG (pngjs) and JPEG (jpeg-js) files to typed input
// images and outputs back to 8-bit files, following exactly the Rust CLI's
// conventions (crates/argent-cli/src/images.rs) so both give the same
// pixels:
// - a 2-D input gets the photo's BT.601 luma, rounded, in integer
//   arithmetic; a 3-D input gets the channels as decoded, gray expanded to
//   RGB and gray+alpha to RGBA;
// - an 8-bit sample v becomes v (u8, i16, u32, i32), v * 257 (u16),
//   v >> 1 (i8), v / 255 (f32), v >= 128 (bool);
// - outputs map back to 8 bits with `sampleOf`.
// JPEG decoders differ in their IDCT, so JPEG inputs are not guaranteed to
// decode to the same samples as the Rust CLI; PNG inputs are.

import { readFile, writeFile } from "node:fs/promises";
import { extname } from "node:path";
import jpeg from "jpeg-js";
import { PNG } from "pngjs";
import { arrayTypeFor, sampleOf, type OutputImage, type PlainImage } from "./images.js";
import type { ScalarType } from "./protocol.js";

/** A decoded 8-bit photo: 1 (gray), 3 (RGB) or 4 (RGBA) interleaved channels. */
export interface Raster {
  width: number;
  height: number;
  channels: number;
  samples: Uint8Array;
}

/** Decodes PNG or JPEG bytes. */
export function decodePhoto(bytes: Uint8Array): Raster {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    const png = PNG.sync.read(buffer);
    const rgba = png.data;
    const pixels = png.width * png.height;
    // pngjs always expands to RGBA; keep the channels the file has.
    const channels = png.alpha ? 4 : png.color ? 3 : 1;
    const samples = new Uint8Array(pixels * channels);
    for (let p = 0; p < pixels; p++) {
      for (let c = 0; c < channels; c++) samples[p * channels + c] = rgba[p * 4 + c];
    }
    return { width: png.width, height: png.height, channels, samples };
  }
  if (buffer[0] === 0xff && buffer[1] === 0xd8) {
    const image = jpeg.decode(buffer, { useTArray: true, formatAsRGBA: false });
    return { width: image.width, height: image.height, channels: 3, samples: new Uint8Array(image.data) };
  }
  throw new Error("not a PNG or JPEG file");
}

/** Reads and decodes a photo file; the error names the file. */
export async function readPhoto(path: string): Promise<Raster> {
  const bytes = await readFile(path).catch((error) => {
    throw new Error(`cannot read \`${path}\`: ${error.message}`);
  });
  try {
    return decodePhoto(bytes);
  } catch (error) {
    throw new Error(`cannot decode \`${path}\`: ${(error as Error).message}`);
  }
}

function luma(r: number, g: number, b: number): number {
  return Math.floor((299 * r + 587 * g + 114 * b + 500) / 1000);
}

function valueOf(sample: number, type: ScalarType): number {
  switch (type) {
    case "f32":
      return Math.fround(sample / 255);
    case "bool":
      return sample >= 128 ? 1 : 0;
    case "u16":
      return sample * 257;
    case "i8":
      return sample >> 1;
    default:
      return sample;
  }
}

/** Fills an input declared with `dims` dimensions of `type` from a photo. */
export function photoToInput(raster: Raster, name: string, dims: number, type: ScalarType): PlainImage {
  const { width, height } = raster;
  const ArrayType = arrayTypeFor(type);
  if (dims === 2) {
    const data = new ArrayType(width * height);
    for (let p = 0; p < width * height; p++) {
      const s = raster.samples;
      const base = p * raster.channels;
      const sample = raster.channels === 1 ? s[base] : luma(s[base], s[base + 1], s[base + 2]);
      data[p] = valueOf(sample, type);
    }
    return { data, width, height, channels: 1 };
  }
  if (dims === 3) {
    const channels = raster.channels === 1 ? 3 : raster.channels;
    const data = new ArrayType(width * height * channels);
    for (let p = 0; p < width * height; p++) {
      for (let c = 0; c < channels; c++) {
        const sample = raster.samples[p * raster.channels + (raster.channels === 1 ? 0 : c)];
        data[p * channels + c] = valueOf(sample, type);
      }
    }
    return { data, width, height, channels };
  }
  throw new Error(
    `input \`${name}\` has ${dims} dimension(s), but a photo can only fill an input with 2 dimensions (x, y) or 3 (x, y, c)`,
  );
}

/** Converts an output to an 8-bit raster. */
export function outputToRaster(output: OutputImage, name: string): Raster {
  if (output.channels < 1 || output.channels > 4) {
    throw new Error(`output \`${name}\` has ${output.channels} channels; an image needs 1 to 4`);
  }
  const samples = new Uint8Array(output.data.length);
  for (let i = 0; i < samples.length; i++) samples[i] = sampleOf(output.data[i], output.type);
  return { width: output.width, height: output.height, channels: output.channels, samples };
}

/** Encodes a raster as PNG, or as JPEG (quality 90) for `.jpg`/`.jpeg` paths. */
export function encodePhoto(raster: Raster, path: string): Uint8Array {
  const { width, height, channels, samples } = raster;
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < width * height; p++) {
    const base = p * channels;
    const gray = channels <= 2;
    rgba[p * 4] = samples[base];
    rgba[p * 4 + 1] = gray ? samples[base] : samples[base + 1];
    rgba[p * 4 + 2] = gray ? samples[base] : samples[base + 2];
    rgba[p * 4 + 3] = channels === 2 ? samples[base + 1] : channels === 4 ? samples[base + 3] : 255;
  }
  const extension = extname(path).toLowerCase();
  if (extension === ".jpg" || extension === ".jpeg") {
    return jpeg.encode({ data: rgba, width, height }, 90).data;
  }
  const colorType = channels === 1 ? 0 : channels === 2 ? 4 : channels === 3 ? 2 : 6;
  return PNG.sync.write(Object.assign(new PNG({ width, height }), { data: Buffer.from(rgba.buffer) }), {
    colorType,
    inputColorType: 6,
  });
}

/** Writes a raster to `path` (PNG, or JPEG by extension). */
export async function writePhoto(raster: Raster, path: string): Promise<void> {
  await writeFile(path, encodePhoto(raster, path));
}
