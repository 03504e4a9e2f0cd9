// Halide's blur module against Argent's module of the same schedule, both
// run raw (outside the runtime, as the Halide rows of bench/run.mjs and
// bench/raw-module.mjs run them), paired call by call, at any image size:
// small sizes keep both images in the cache and measure the code, 3072x2048
// adds the memory system.
//
// Usage (after `cargo xtask bench`, which links bench/build/halide_*.wasm,
// and scripts/build-web.sh):
//   node --no-liftoff bench/halide-raw-ab.mjs strip|paper WIDTH HEIGHT [ROUNDS] [CALLS]
// Each round times CALLS calls of each (default 41 rounds of 1 call) and
// prints both medians and the median of the per-round ratios Argent/Halide.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const { loadHalide } = await import(pathToFileURL(join(repo, "bench/halide-module.mjs")).href);
const { rawModule } = await import(pathToFileURL(join(repo, "bench/raw-module.mjs")).href);
const argent = await import(pathToFileURL(join(repo, "web/dist/index.js")).href);
const [sched, W, H, rounds = "41", reps = "1"] = process.argv.slice(2);
const file = sched === "strip" ? "bench/schedules/box_blur_strips.ag" : "examples/box_blur.ag";
const runtime = await argent.createRuntime({ threads: 1 });
const pipeline = await runtime.compile(readFileSync(join(repo, file), "utf8"));
const a = rawModule(pipeline, +W, +H, 2);
const h = await loadHalide(join(repo, "bench/build", `halide_blur_${sched}.wasm`));
const dims = [{ min: 0, extent: +W, stride: 1 }, { min: 0, extent: +H, stride: +W }];
const inBuf = h.buffer(1, 16, dims), outBuf = h.buffer(1, 16, dims);
h.pin();
const fill = (mem, base) => { const v = new Uint16Array(mem.buffer, base, W * H); for (let i = 0; i < v.length; i++) v[i] = (i * 2654435761 >>> 20) & 4095; };
fill(a.memory, a.inBase); fill(h.memory, inBuf.host);
const hcall = () => { const t0 = performance.now(); for (let r = 0; r < +reps; r++) h.exports[`halide_blur_${sched}`](inBuf.desc, outBuf.desc); return (performance.now() - t0) / reps; };
const acall = () => { const t0 = performance.now(); for (let r = 0; r < +reps; r++) a.call(); return (performance.now() - t0) / reps; };
const ra = [], rh = [], q = [];
for (let i = 0; i < +rounds + 3; i++) { const th = hcall(), ta = acall(); if (i >= 3) { rh.push(th); ra.push(ta); q.push(ta / th); } }
const med = (xs) => xs.slice().sort((x, y) => x - y)[xs.length >> 1];
console.log(`${sched} ${W}x${H}: Halide ${med(rh).toFixed(3)} ms, Argent ${med(ra).toFixed(3)} ms, A/H ${med(q).toFixed(3)}`);
runtime.dispose(); process.exit(0);
