// Times the no-threads module and the threads module of one pipeline side
// by side on one thread: `node time_threads_ab.mjs OUT_NT OUT_T W H [CH]
// [ROUNDS] [name=value ...]` (OUT_T written by `THREADS=1 dump_wat`). The
// threads module runs on a shared memory with an `env.parallel_for` that
// calls each iteration's task in turn, which is what the runtime does on
// one thread. Prints both medians and the median of per-round ratios T/NT.
import { loadModule } from "./module_setup.mjs";

const [outA, outB, w, h, ch = "3", rounds = "21", ...rest] = process.argv.slice(2);
const settings = Object.fromEntries(rest.map((kv) => kv.split("=")));
const runA = await loadModule(outA, Number(w), Number(h), Number(ch), settings);
const runB = await loadModule(outB, Number(w), Number(h), Number(ch), settings, { shared: true });
const a = [], b = [], ratios = [];
for (let i = 0; i < Number(rounds) + 3; i++) {
  const ta = runA(), tb = runB();
  if (i >= 3) { a.push(ta); b.push(tb); ratios.push(tb / ta); }
}
const median = (xs) => xs.slice().sort((x, y) => x - y)[xs.length >> 1];
console.log(`no threads ${median(a).toFixed(2)} ms, threads module ${median(b).toFixed(2)} ms, T/NT ${median(ratios).toFixed(3)} (${a.length} rounds)`);
