// Deterministic noise images for the bench scripts that only need pixels
// of the right type (bench/run.mjs makes smooth photo-like ones instead).

/**
 * `count` pixels of `ArrayType` from a xorshift sequence, each keeping its
 * `bits` low bits (box_blur.ag expects 12-bit data in u16).
 */
export function noisePixels(ArrayType, count, bits) {
  const data = new ArrayType(count);
  const mask = bits >= 32 ? -1 : (1 << bits) - 1;
  let s = 12345;
  for (let i = 0; i < data.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    data[i] = (s >>> 0) & mask;
  }
  return data;
}
