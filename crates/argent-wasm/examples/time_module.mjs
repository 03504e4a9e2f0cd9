// Times a module written by `cargo run -p argent-wasm --example dump_wat --
// PIPELINE.ag OUT`: `node time_module.mjs OUT WIDTH HEIGHT [CHANNELS] [RUNS]
// [name=value ...]`. Every input and the output are WIDTH x HEIGHT (x
// CHANNELS, interleaved); inputs hold deterministic pseudo-random pixels.
// Prints the median and minimum of `run`, one thread, unshared memory.
import { loadModule } from "./module_setup.mjs";

const [out, w, h, ch = "3", runs = "15", ...rest] = process.argv.slice(2);
const settings = Object.fromEntries(rest.map((kv) => kv.split("=")));
const run = await loadModule(out, Number(w), Number(h), Number(ch), settings);
const times = [];
for (let i = 0; i < Number(runs) + 3; i++) {
  const t = run();
  if (i >= 3) times.push(t);
}
times.sort((a, b) => a - b);
console.log(`median ${times[times.length >> 1].toFixed(2)} ms, min ${times[0].toFixed(2)} ms (${times.length} runs)`);
