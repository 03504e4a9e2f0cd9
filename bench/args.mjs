// Command lines of the bench scripts: `--name value` options and `--name`
// flags, taken out of the arguments as they are read, so that what is left
// are the positional arguments (pipeline files).

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
