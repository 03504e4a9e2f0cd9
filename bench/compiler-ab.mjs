// A/B of two builds of the in-page compiler, in one Node process: each
// round compiles an example 200 times with build A, then with build B, and
// keeps the median of the last 100 (V8 has optimised the compiler by then).
// Alternating rounds put any load on the machine on both builds alike.
//
// Build each side with (at the commit to measure):
//   cargo build --profile web --target wasm32-unknown-unknown -p argent-web
//   wasm-bindgen --target web --out-dir DIR target/wasm32-unknown-unknown/web/argent_web.wasm
// Usage: node bench/compiler-ab.mjs DIR_A DIR_B [ROUNDS] [EXAMPLE]
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const [a, b] = process.argv.slice(2, 4).map((d) => resolve(d));
if (!a || !b) throw new Error("usage: node bench/compiler-ab.mjs DIR_A DIR_B [ROUNDS] [EXAMPLE]");
const rounds = Number(process.argv[4] ?? 5);
const source = readFileSync(join(repo, "examples", `${process.argv[5] ?? "box_blur"}.ag`), "utf8");
const builds = [];
for (const dir of [a, b]) {
  const compiler = await import(pathToFileURL(join(dir, "argent_web.js")).href);
  compiler.initSync({ module: readFileSync(join(dir, "argent_web_bg.wasm")) });
  builds.push(compiler);
}
const median = (values) => [...values].sort((x, y) => x - y)[values.length >> 1];
const results = [[], []];
for (let round = 0; round < rounds; round++) {
  builds.forEach((compiler, k) => {
    const times = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      compiler.compile(source, "").free();
      times.push(performance.now() - started);
    }
    results[k].push(median(times.slice(100)));
  });
}
const show = (values) => values.map((v) => v.toFixed(3)).join(" ");
console.log(`A ${show(results[0])} ms | B ${show(results[1])} ms | B/A ${(median(results[1]) / median(results[0])).toFixed(3)}`);
