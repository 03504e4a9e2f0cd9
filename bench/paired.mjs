// Paired measurements for the bench scripts that compare Argent with a
// baseline (bench/halide-ab.mjs, bench/library-ab.mjs): blocks of the two
// alternate, so each pair of adjacent blocks sees the same phase of a
// machine whose speed drifts, and ratios are taken pair by pair.

/** The median of `values`. */
export function median(values) {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

/** The 25th and 75th percentiles of `values`. */
export function quartiles(values) {
  const v = [...values].sort((a, b) => a - b);
  return [v[Math.floor((v.length - 1) / 4)], v[Math.ceil((3 * (v.length - 1)) / 4)]];
}

/** Median of `runs` calls of `once`, each resolving to a time in ms. */
async function block(once, runs) {
  const times = [];
  for (let i = 0; i < runs; i++) times.push(await once());
  return median(times);
}

/** Times a call of `fn` (sync or async), in ms. */
export async function wallTime(fn) {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/**
 * One warm-up block of each, then `blocks` pairs of blocks of `runs` calls:
 * `first`'s block, then `second`'s. Each function resolves to the time of
 * one call (ms). Returns each side's block medians, in pair order.
 */
export async function pairedBlocks(first, second, { blocks, runs }) {
  await block(first, runs);
  await block(second, runs);
  const medians = { first: [], second: [] };
  for (let b = 0; b < blocks; b++) {
    medians.first.push(await block(first, runs));
    medians.second.push(await block(second, runs));
  }
  return medians;
}
