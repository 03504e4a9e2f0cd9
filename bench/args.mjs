// Command lines of the bench scripts: `--name value` options and `--name`
// flags, taken out of the arguments as they are read, so that what is left
// are the positional arguments (pipeline files).

import { availableParallelism } from "node:os";

/** Reads options and flags out of `argv` (default: this process's arguments). */
export function commandLine(argv = process.argv.slice(2)) {
  const rest = [...argv];
  return {
    /** The value after `name`, or `fallback` when `name` is absent. */
    option(name, fallback) {
      const at = rest.indexOf(name);
      if (at < 0) return fallback;
      const [, value] = rest.splice(at, 2);
      return value;
    },
    /** Whether `name` is present. */
    flag(name) {
      const at = rest.indexOf(name);
      if (at >= 0) rest.splice(at, 1);
      return at >= 0;
    },
    /** The arguments not read as options or flags. */
    rest,
  };
}

/**
 * The thread counts of `--threads A,B,...` read with `option` (from
 * `commandLine`), each once, in order; by default 1 and all cores.
 */
export function threadCountsOption(option) {
  return option("--threads", `1,${availableParallelism()}`)
    .split(",")
    .map(Number)
    .filter((n, i, all) => all.indexOf(n) === i);
}
