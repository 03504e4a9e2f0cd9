// Compile times inside headless Chromium: the page (www/) loads the npm
// package, and `runtime.compile` of each example runs in its compiler worker;
// medians of 9 after one compile, of compiles 41-80 (V8 optimises the
// compiler function by function as they run), and of the last 80 of 240
// compiles: the steady state, which box_blur reaches after about a hundred
// compiles (3.7 ms in the compiler worker where compiles 41-80 took 4.0).
// With --warm, each example's compiles start once the compiler worker's
// warm-up (the runtime compiles a small pipeline while it is idle) is
// over, in a fresh runtime: what a user who opens the page and then
// compiles meets; the warm-up's rounds and time are printed too.
// Usage: node bench/page-compile.mjs [--warm] [--compiles N] [example...]
import { createRequire } from "node:module";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
const REPO = join(dirname(fileURLToPath(import.meta.url)), "..");
const { chromium } = createRequire(join(REPO, "web", "package.json"))("playwright-core");
const { startServer } = await import(join(REPO, "www", "serve.mjs"));
const args = process.argv.slice(2);
const warm = args.includes("--warm");
const at = args.indexOf("--compiles");
const compiles = at >= 0 ? Number(args.splice(at, 2)[1]) : 240;
if (!(compiles >= 80)) throw new Error("--compiles takes a number of at least 80");
const listed = args.filter((a) => a !== "--warm");
const names = listed.length ? listed : ["box_blur", "unsharp_mask", "local_laplacian", "camera_pipe"];
const server = await startServer({ port: 0 });
const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "chr-")), {
  executablePath: "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await context.newPage();
await page.goto(`${server.url}/www/index.html?autorun=0`);
const out = await page.evaluate(async ({ names, warm, compiles }) => {
  const { createRuntime } = await import("/web/dist/index.js");
  const shared = await createRuntime({ threads: 1 });
  const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
  const lines = [navigator.userAgent + (warm ? " (each example in a fresh runtime, after its warm-up)" : "")];
  for (const name of names) {
    const src = await (await fetch(`/examples/${name}.ag`)).text();
    const runtime = warm ? await createRuntime({ threads: 1 }) : shared;
    while (warm && !runtime.compilerWarmUp) await new Promise((resolve) => setTimeout(resolve, 20));
    const first = (await runtime.compile(src)).timings.toBytes;
    const t = { toBytes: [], inCompiler: [], lower: [], codegen: [] };
    for (let i = 0; i < compiles; i++) {
      const p = await runtime.compile(src);
      for (const k of Object.keys(t)) t[k].push(p.timings[k]);
      p.dispose();
    }
    const early = (k) => med(t[k].slice(0, 9));
    const phases = (from, to) => {
      const m = (k) => med(t[k].slice(from, to)).toFixed(2);
      return `toBytes ${m("toBytes")} ms (in the compiler worker ${m("inCompiler")}: lower ${m("lower")}, codegen ${m("codegen")})`;
    };
    const warmUp = warm ? ` after a warm-up of ${runtime.compilerWarmUp.rounds} rounds in ${runtime.compilerWarmUp.ms.toFixed(0)} ms` : "";
    lines.push(
      `${name}${warmUp}: toBytes ${early("toBytes").toFixed(1)} ms (lower ${early("lower").toFixed(1)}, codegen ${early("codegen").toFixed(1)}) median of 9, ` +
        `first ${first.toFixed(0)}; compiles 41-80: ${phases(40, 80)}; compiles ${compiles - 79}-${compiles}: ${phases(compiles - 80, compiles)}`,
    );
    if (warm) await runtime.dispose();
  }
  await shared.dispose();
  return lines.join("\n");
}, { names, warm, compiles });
console.log(out);
await context.close();
await server.close();
