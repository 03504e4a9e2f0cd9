// The errors the runtime throws. Compile errors carry structured
// diagnostics for editors; run errors carry a machine-readable kind.

import type { Diagnostic } from "./protocol.js";

/** The program did not compile. `diagnostics` has spans for an editor. */
export class ArgentCompileError extends Error {
  override name = "ArgentCompileError";
  /** Which phase failed (`parse`, `lower`, `codegen`, `options`, ...). */
  readonly phase: string;
  readonly diagnostics: Diagnostic[];
  /** The diagnostics as the terminal shows them, with source excerpts. */
  readonly rendered: string;

  constructor(phase: string, diagnostics: Diagnostic[], rendered: string) {
    const first = diagnostics[0];
    super(
      first
        ? `${first.code} at ${first.span.start.line}:${first.span.start.column}: ${first.message}` +
            (diagnostics.length > 1 ? ` (and ${diagnostics.length - 1} more)` : "")
        : `compilation failed in ${phase}`,
    );
    this.phase = phase;
    this.diagnostics = diagnostics;
    this.rendered = rendered;
  }
}

/** Why a run failed. */
export type RunErrorKind =
  | "input-too-small"
  | "output-too-small"
  | "allocation-too-large"
  | "param-out-of-range"
  | "bad-layout"
  | "region-overflow"
  | "assertion"
  | "bad-input"
  | "bad-param"
  | "disposed"
  | "busy"
  | "worker-failed"
  | "aborted"
  | "trap";

/** A run did not complete; nothing was written to the outputs. */
export class ArgentRunError extends Error {
  override name = "ArgentRunError";
  readonly kind: RunErrorKind;

  constructor(kind: RunErrorKind, message: string) {
    super(message);
    this.kind = kind;
  }
}
