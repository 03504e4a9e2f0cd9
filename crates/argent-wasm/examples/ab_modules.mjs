// Times several modules written by `dump_wat PIPELINE.ag OUT` (from
// different compilers, say) in one process, round by round in turn, so a
// machine whose speed drifts weighs on all alike:
// `node --no-liftoff ab_modules.mjs WIDTH HEIGHT CHANNELS ROUNDS OUT_A OUT_B ...`.
// Prints each module's median and minimum `run` time (one thread,
// unshared memory; inputs as in `time_module.mjs`).
import { loadModule } from "./module_setup.mjs";

const [w, h, ch, rounds, ...outs] = process.argv.slice(2);
if (outs.length === 0) throw new Error("usage: ab_modules.mjs WIDTH HEIGHT CHANNELS ROUNDS OUT_A [OUT_B ...]");
const runs = [];
for (const out of outs) runs.push(await loadModule(out, Number(w), Number(h), Number(ch), {}));
const times = outs.map(() => []);
for (let round = 0; round < Number(rounds) + 3; round++) {
  runs.forEach((run, i) => {
    const t = run();
    if (round >= 3) times[i].push(t);
  });
}
outs.forEach((out, i) => {
  const sorted = times[i].sort((a, b) => a - b);
  console.log(`${out}: median ${sorted[sorted.length >> 1].toFixed(2)} ms, min ${sorted[0].toFixed(2)} ms`);
});
