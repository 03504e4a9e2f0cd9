// Shared helpers for the runtime's tests: repository paths, the Rust CLI
// whose reference interpreter gives the expected outputs, a cache of those
// reference outputs, and a small blur pipeline.

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const WEB = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = resolve(WEB, "..");

/**
 * A 3x3 blur with a whole-image intermediate (it lives on the module's
 * heap) and parallel rows. It reads right and down, so a W x H input gives
 * a (W - 2) x (H - 2) output. With inputs of 12 significant bits the u16
 * sums do not wrap.
 */
export const BLUR_U16 = `
input u16 in(x, y)
bx(x, y) = (in(x, y) + in(x + 1, y) + in(x + 2, y)) / 3
out(x, y) = (bx(x, y) + bx(x, y + 1) + bx(x, y + 2)) / 3
output out
schedule {
  bx.compute_root().parallel(y)
  out.parallel(y).vectorize(x, 8)
}
`;
export const EXAMPLES = join(REPO, "examples");
export const IMAGES = join(REPO, "images");

/** The Rust `argent` binary: $ARGENT_CLI, else built in release mode on demand. */
export function rustCli() {
  if (process.env.ARGENT_CLI) return process.env.ARGENT_CLI;
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(REPO, "target");
  const binary = join(targetDir, "release", "argent");
  if (!existsSync(binary)) {
    const built = spawnSync("cargo", ["build", "--release", "-j2", "-p", "argent-cli"], {
      cwd: REPO,
      stdio: ["ignore", "inherit", "inherit"],
    });
    if (built.status !== 0) throw new Error("could not build the Rust CLI (cargo build --release -p argent-cli)");
  }
  return binary;
}

/**
 * Runs the Rust CLI's reference interpreter on `example` with `photos`
 * (`[[input, path], ...]`) and returns the PNG paths it wrote, one per
 * output name. Results are cached under target/web-test-reference by the
 * hash of the program, the photos and the CLI binary.
 */
export function referenceOutputs(examplePath, photos, outputNames, extraArgs = []) {
  const cli = rustCli();
  const hash = createHash("sha256");
  hash.update(readFileSync(examplePath));
  for (const [name, path] of photos) hash.update(name).update(readFileSync(path));
  hash.update(extraArgs.join(" "));
  hash.update(String(statSync(cli).mtimeMs));
  const key = hash.digest("hex").slice(0, 16);
  const dir = join(REPO, "target", "web-test-reference");
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `${key}.png`);
  const paths = outputNames.map((name) =>
    outputNames.length === 1 ? base : join(dir, `${key}-${name}.png`),
  );
  if (!paths.every((p) => existsSync(p))) {
    const args = ["run", examplePath, ...photos.flatMap(([name, path]) => ["--input", `${name}=${path}`]), ...extraArgs, "-o", base];
    const run = spawnSync(cli, args, { encoding: "utf8" });
    if (run.status !== 0) {
      throw new Error(`the reference interpreter failed (exit ${run.status}): argent ${args.join(" ")}\n${run.stderr}`);
    }
  }
  return paths;
}

/** The first position where two sample arrays differ, or -1. */
export function firstDifference(a, b) {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}
