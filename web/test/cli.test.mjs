// The `argent` command shipped with the package, end to end: real files,
// real compiler, exit codes as documented (0 ok, 1 user error, 2 internal).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { readPhoto } from "../dist/node.js";
import { EXAMPLES, IMAGES, WEB, firstDifference, referenceOutputs } from "./helpers.mjs";

const CLI = join(WEB, "dist", "cli.js");
const scratch = mkdtempSync(join(tmpdir(), "argent-cli-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function argent(...args) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8", timeout: 300_000 });
}

test("--version and --help succeed", () => {
  assert.match(argent("--version").stdout, /^argent \d+\.\d+\.\d+/);
  const help = argent("--help");
  assert.equal(help.status, 0);
  assert.match(help.stdout, /argent run PIPELINE\.ag --input NAME=PHOTO/);
});

test("check reports a broken program with its source line and exits 1", () => {
  const file = join(scratch, "broken.ag");
  writeFileSync(file, "input u8 in(x, y)\nout(x, y) = in(x, y) + nope\noutput out\n");
  const result = argent("check", file);
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stderr, /nope/);
  assert.match(result.stderr, /2 │ out\(x, y\) = in\(x, y\) \+ nope/);
});

test("user mistakes exit 1 with a message", () => {
  const example = join(EXAMPLES, "box_blur.ag");
  const cases = [
    [["run"], /run expects one pipeline file/],
    [["run", join(scratch, "missing.ag")], /cannot read/],
    [["frobnicate"], /unknown command `frobnicate`/],
    [["run", example, "--threads", "0", "--input", "in=x.png"], /--threads expects a positive integer/],
    [["run", example, "--input", "in"], /--input expects NAME=VALUE/],
  ];
  for (const [args, pattern] of cases) {
    const result = argent(...args);
    assert.equal(result.status, 1, `argent ${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, pattern);
  }
});

test("run writes the same PNG as the Rust reference interpreter, on 2 threads", () => {
  const example = join(EXAMPLES, "unsharp_mask.ag");
  const photo = join(IMAGES, "chelsea.png");
  const out = join(scratch, "unsharp.png");
  const result = argent("run", example, "--input", `photo=${photo}`, "-o", out, "--threads", "2");
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /threads mode, 2 thread\(s\), SIMD128/);
  return Promise.all([readPhoto(out), readPhoto(referenceOutputs(example, [["photo", photo]], ["out"])[0])]).then(
    ([got, want]) => {
      assert.deepEqual([got.width, got.height, got.channels], [want.width, want.height, want.channels]);
      assert.equal(firstDifference(got.samples, want.samples), -1);
    },
  );
});

test("run errors from the pipeline are user errors", () => {
  const file = join(scratch, "shift.ag");
  writeFileSync(file, "input u8 in(x, y)\nout(x, y) = in(x + 1, y)\noutput out\n");
  const result = argent("run", file, "--input", `in=${join(IMAGES, "camera.png")}`, "-o", join(scratch, "s.png"));
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stderr, /input `in` is too small/);
});
