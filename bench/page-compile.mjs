// Compile times inside headless Chromium: the page (www/) loads the npm
// package, and `runtime.compile` of each example runs in its compiler worker;
// medians of 9 after one compile, then, once V8 has optimised the compiler
// (it does so function by function as they run: box_blur's compiles settle
// after about forty), the median of compiles 41-80.
// With --warm, each example's compiles start once the compiler worker's
// warm-up (the runtime compiles a small pipeline while it is idle) is
// over, in a fresh runtime: what a user who opens the page and then
// compiles meets.
// Usage: node bench/page-compile.mjs [--warm] [example...]
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
const listed = args.filter((a) => a !== "--warm");
const names = listed.length ? listed : ["box_blur", "unsharp_mask", "local_laplacian", "camera_pipe"];
const server = await startServer({ port: 0 });
const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "chr-")), {
  executablePath: "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await context.newPage();
await page.goto(`${server.url}/www/index.html?autorun=0`);
const out = await page.evaluate(async ({ names, warm }) => {
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
    for (let i = 0; i < 80; i++) {
      const p = await runtime.compile(src);
      for (const k of Object.keys(t)) t[k].push(p.timings[k]);
      p.dispose();
    }
    const early = (k) => med(t[k].slice(0, 9));
    const late = (k) => med(t[k].slice(40));
    lines.push(
      `${name}: toBytes ${early("toBytes").toFixed(1)} ms (lower ${early("lower").toFixed(1)}, codegen ${early("codegen").toFixed(1)}) median of 9, ` +
        `first ${first.toFixed(0)}; compiles 41-80: toBytes ${late("toBytes").toFixed(2)} ms (in the compiler worker ${late("inCompiler").toFixed(2)}: lower ${late("lower").toFixed(2)}, codegen ${late("codegen").toFixed(2)})`,
    );
    if (warm) await runtime.dispose();
  }
  await shared.dispose();
  return lines.join("\n");
}, { names, warm });
console.log(out);
await context.close();
await server.close();
