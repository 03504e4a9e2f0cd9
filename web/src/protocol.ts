// The JSON the compiler (crates/argent-web) answers with, and the messages
// the runtime's workers exchange. Field names mirror the Rust structs in
// crates/argent-web/src/{api,describe}.rs exactly.

import type { BufferShape } from "./layout.js";

/** A position in the source text. */
export interface SourcePosition {
  /** Byte offset in the UTF-8 source. */
  offset: number;
  /** Offset in UTF-16 code units: use this to slice a JavaScript string. */
  utf16Offset: number;
  /** 1-based line. */
  line: number;
  /** 1-based column in UTF-16 code units. */
  column: number;
}

/** A source range. */
export interface SourceSpan {
  start: SourcePosition;
  end: SourcePosition;
}

/** A secondary location of a diagnostic. */
export interface DiagnosticLabel {
  span: SourceSpan;
  message: string;
}

/** One problem found in a program. */
export interface Diagnostic {
  /** Short stable code, e.g. `E0101`. */
  code: string;
  severity: "error" | "warning";
  message: string;
  span: SourceSpan;
  labels: DiagnosticLabel[];
  notes: string[];
}

/** Element types of the language. */
export type ScalarType = "u8" | "u16" | "u32" | "i8" | "i16" | "i32" | "f32" | "bool";

/** An input image of a pipeline. */
export interface InputDescription {
  name: string;
  type: ScalarType;
  /** Dimension names, innermost first, e.g. `["x", "y", "c"]`. */
  dims: string[];
}

/** An output image of a pipeline. */
export interface OutputDescription {
  name: string;
  type: ScalarType;
  dims: string[];
}

/** A scalar parameter: what a slider needs. */
export interface ParamDescription {
  name: string;
  type: ScalarType;
  default: number | null;
  /** Inclusive `[min, max]` when declared. */
  range: [number, number] | null;
}

/** The interface of a compiled pipeline. */
export interface PipelineDescription {
  inputs: InputDescription[];
  outputs: OutputDescription[];
  params: ParamDescription[];
}

/** Milliseconds spent in each compiler phase (inside the compiler). */
export interface CompilerTimings {
  parse: number;
  lower: number;
  codegen: number;
  total: number;
}

/** Options the compiler accepts. */
export interface CompilerOptions {
  simd: boolean;
  threads: boolean;
}

/** The compiler's answer to `compile`, as JSON. */
export type CompileResponse =
  | {
      status: "ok";
      abi: unknown;
      pipeline: PipelineDescription;
      timings: CompilerTimings;
      options: CompilerOptions;
      diagnostics: Diagnostic[];
      /** The random schedule used, when the options asked for one. */
      schedule?: string;
    }
  | {
      status: "error";
      phase: string;
      diagnostics: Diagnostic[];
      rendered: string;
    };

/** The compiler's answer to `check`. */
export interface CheckResponse {
  diagnostics: Diagnostic[];
  rendered: string;
}

/** A run-time check of a generated module (argent-wasm's `AssertInfo`). */
export type AssertKind =
  | { kind: "inputTooSmall"; input: string; stage: string; dim: number }
  | { kind: "outputTooSmall"; output: string; dim: number }
  | { kind: "allocationTooLarge"; buffer: string }
  | { kind: "paramOutOfRange"; param: string }
  | { kind: "strideNotOne"; buffer: string }
  | { kind: "regionOverflow"; region: string }
  | { kind: "other"; message: string };

/** How to call a generated module (argent-wasm's `Abi`, see its crate docs). */
export interface Abi {
  buffers: { name: string; type: ScalarType; dims: number; role: "input" | "output"; offset: number }[];
  params: { name: string; type: ScalarType; offset: number }[];
  asserts: (AssertKind & { argTypes: ScalarType[] })[];
  tasks: { export: string; loopVar: string; captures: string[] }[];
  heapTopOffset: number;
  errorArgsOffset: number;
  maxErrorArgs: number;
  argsSize: number;
  sharedMemory: boolean;
  /**
   * Where the module's bounds query (export `query`) leaves the region of
   * each input dimension a run reads: two words at `offset` in the argument
   * block, the smallest and the largest coordinate. Null without a query.
   */
  regionSlots: { input: string; dim: number; offset: number }[] | null;
}

/**
 * One buffer of a run, as the main thread hands it to a driver that owns
 * its memory (single-threaded and tiles modes).
 */
export interface RunBuffer extends BufferShape {
  /** Input pixels (inputs only), as bytes; transferred, not cloned. */
  bytes?: Uint8Array;
  /**
   * Where `bytes` start in the buffer, in bytes (0 when absent): a strip in
   * tiles mode gets only the rows of an input it reads, while the
   * descriptor keeps the whole image's size, which the algorithm sees.
   */
  byteOffset?: number;
}

/** Messages from the main thread to an execution worker. */
export type ExecRequest =
  | { type: "load"; pipelineId: number; module: WebAssembly.Module; memory: WebAssembly.Memory | null; abi: Abi }
  | { type: "unload"; pipelineId: number }
  | {
      type: "run";
      runId: number;
      pipelineId: number;
      buffers: RunBuffer[];
      /** `[byte offset in the argument block, i32 word]` per parameter. */
      params: [number, number][];
      helpers: number;
    }
  | {
      /**
       * Shared memory: the main thread has already laid out the buffers,
       * copied the inputs in and written the argument block, so the driver
       * only calls `run`; the main thread reads the outputs itself.
       */
      type: "run-in-place";
      runId: number;
      pipelineId: number;
      helpers: number;
      /** The worker's index in the pool: its idle word (see `Idle` in layout.ts). */
      worker: number;
    }
  | { type: "join"; runId: number; pipelineId: number; worker: number }
  | {
      /** The bounds query: which region of each input a run of these arguments reads. */
      type: "query";
      runId: number;
      pipelineId: number;
      /** Shapes only: no bytes are needed. */
      buffers: RunBuffer[];
      params: [number, number][];
    };

/** Messages from an execution worker to the main thread. */
export type ExecReply =
  | { type: "ready" }
  | { type: "loaded"; pipelineId: number; ms: number }
  | { type: "load-error"; pipelineId: number; message: string }
  | {
      type: "done";
      runId: number;
      status: number;
      errorArgs: number[];
      /** Output bytes in `RunBuffer` order of the outputs (empty after `run-in-place`). */
      outputs: Uint8Array[];
      trap: string | null;
      /** Parallel-loop iterations the driver ran itself. */
      iterations: number;
      timings: { copyIn: number; execute: number; copyOut: number };
    }
  | { type: "run-error"; runId: number; message: string }
  | {
      type: "regions";
      runId: number;
      /** `[min, max]` per `Abi.regionSlots` entry; null when the query failed. */
      regions: [number, number][] | null;
    }
  | { type: "left"; runId: number; trap: string | null; iterations: number };
