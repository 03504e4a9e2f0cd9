// Times two modules written by `dump_wat` side by side: `node
// time_ab.mjs [--threads-b] OUT_A OUT_B WIDTH HEIGHT [CHANNELS] [ROUNDS]
// [name=value ...]`. Each round runs A then B once (after warm-up rounds)
// on the same pseudo-random inputs as `time_module.mjs`, so a noisy
// machine's phases hit both alike. Prints both medians and the median of
// the per-round ratios B / A. `--threads-b`: B is a threads module
// (`THREADS=1 dump_wat`), run on a shared memory with its parallel loops'
// iterations in turn, as the runtime runs it on one thread.
import { loadModule } from "./module_setup.mjs";

const args = process.argv.slice(2);
const threadsB = args[0] === "--threads-b";
const [outA, outB, w, h, ch = "3", rounds = "21", ...rest] = threadsB ? args.slice(1) : args;
const settings = Object.fromEntries(rest.map((kv) => kv.split("=")));
const load = (out, shared) => loadModule(out, Number(w), Number(h), Number(ch), settings, { shared });
const [runA, runB] = [await load(outA, false), await load(outB, threadsB)];
const a = [], b = [], ratios = [];
for (let i = 0; i < Number(rounds) + 3; i++) {
  const ta = runA(), tb = runB();
  if (i >= 3) { a.push(ta); b.push(tb); ratios.push(tb / ta); }
}
const median = (xs) => xs.slice().sort((x, y) => x - y)[xs.length >> 1];
console.log(`A median ${median(a).toFixed(2)} ms, B median ${median(b).toFixed(2)} ms, B/A ${median(ratios).toFixed(3)} (${a.length} rounds)`);
