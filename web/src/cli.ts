#!/usr/bin/env node
// `argent`, the command-line runner shipped with the npm package: compiles
// a pipeline with the in-page compiler and runs the generated WebAssembly
// on worker threads, with the same photo conventions as the Rust CLI.

import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { ArgentCompileError, ArgentRunError } from "./errors.js";
import { createRuntime } from "./runtime.js";
import { PhotoRequestError, runOnPhotos } from "./node.js";
import type { PlainImage } from "./images.js";

const USAGE = `usage:
  argent run PIPELINE.ag --input NAME=PHOTO [--input ...] [--param NAME=VALUE ...]
             [--size WxH] [-o OUT.png] [--threads N] [--no-simd] [--quiet]
  argent check PIPELINE.ag
  argent --version

Runs an Argent pipeline on PNG/JPEG photos by compiling it to WebAssembly
and running it on worker threads. Photos map to inputs as in the Rust CLI:
2-D inputs get the luma, 3-D inputs the channels (c innermost); u16 inputs
get v * 257, f32 inputs v / 255. Outputs are written as 8-bit PNG (or JPEG
for .jpg); with several outputs each gets OUT-NAME.png.

Exit codes: 0 ok, 1 user error (bad program, arguments or photos), 2 internal error.`;

class UserError extends Error {}

function parsePairs(values: string[] | undefined, flag: string): [string, string][] {
  return (values ?? []).map((text) => {
    const at = text.indexOf("=");
    if (at <= 0) throw new UserError(`${flag} expects NAME=VALUE, got \`${text}\``);
    return [text.slice(0, at), text.slice(at + 1)];
  });
}

async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      input: { type: "string", multiple: true, short: "i" },
      param: { type: "string", multiple: true, short: "p" },
      size: { type: "string" },
      output: { type: "string", short: "o" },
      threads: { type: "string", short: "t" },
      "no-simd": { type: "boolean" },
      quiet: { type: "boolean", short: "q" },
    },
  });
  if (positionals.length !== 1) throw new UserError(`run expects one pipeline file\n\n${USAGE}`);
  const file = positionals[0];
  const source = await readFile(file, "utf8").catch((error) => {
    throw new UserError(`cannot read \`${file}\`: ${error.message}`);
  });
  const threads = values.threads === undefined ? undefined : Number(values.threads);
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1)) {
    throw new UserError(`--threads expects a positive integer, got \`${values.threads}\``);
  }
  const photos = parsePairs(values.input, "--input");
  const params = parsePairs(values.param, "--param");
  const runtime = await createRuntime({ threads, simd: !values["no-simd"] });
  try {
    const pipeline = await runtime.compile(source);
    const target = values.output ?? "out.png";
    let outcome;
    try {
      outcome = await runOnPhotos(pipeline, {
        inputs: photos,
        params,
        size: values.size,
      }, target);
    } catch (error) {
      throw error instanceof PhotoRequestError ? new UserError(error.message) : error;
    }
    const { result, written } = outcome;
    if (!values.quiet) {
      const first = result.outputs[pipeline.outputs[0].name] as PlainImage;
      const t = pipeline.timings;
      console.log(
        `wrote ${written.join(", ")} (${first.width}x${first.height}); ` +
          `${runtime.mode} mode, ${runtime.threads} thread(s), ${pipeline.simd ? "SIMD128" : "scalar"}; ` +
          `compile ${t.toBytes.toFixed(1)} ms + engine ${t.engineCompile.toFixed(1)} ms, ` +
          `run ${result.timings.total.toFixed(2)} ms (execute ${result.timings.execute.toFixed(2)}, ` +
          `marshal ${result.timings.marshal.toFixed(2)}, overhead ${result.timings.overhead.toFixed(2)})`,
      );
    }
  } finally {
    runtime.dispose();
  }
}

async function check(argv: string[]): Promise<void> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new UserError(`check expects one pipeline file\n\n${USAGE}`);
  const file = positionals[0];
  const source = await readFile(file, "utf8").catch((error) => {
    throw new UserError(`cannot read \`${file}\`: ${error.message}`);
  });
  const runtime = await createRuntime({ threads: 1 });
  try {
    const { diagnostics, rendered } = await runtime.check(source);
    if (rendered) process.stderr.write(rendered);
    if (diagnostics.some((d) => d.severity === "error")) process.exitCode = 1;
    else console.log(`${file}: ok`);
  } finally {
    runtime.dispose();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === "run") await run(rest);
    else if (command === "check") await check(rest);
    else if (command === "--version" || command === "version") {
      const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
      console.log(`argent ${pkg.version}`);
    } else if (command === "--help" || command === "-h" || command === "help") console.log(USAGE);
    else {
      console.error(command ? `unknown command \`${command}\`\n\n${USAGE}` : USAGE);
      return 1;
    }
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof ArgentCompileError) {
      process.stderr.write(error.rendered || `${error.message}\n`);
      // "ICE" diagnostics are compiler bugs, not mistakes in the program.
      return error.diagnostics.some((d) => d.code === "ICE") ? 2 : 1;
    }
    if (error instanceof UserError || (error instanceof ArgentRunError && error.kind !== "worker-failed")) {
      console.error(`error: ${error.message}`);
      return 1;
    }
    if (error instanceof Error && error.name === "TypeError" && /parseArgs|option/i.test(error.message)) {
      console.error(`error: ${error.message}\n\n${USAGE}`);
      return 1;
    }
    console.error(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
