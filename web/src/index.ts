// Argent's TypeScript runtime: compile Argent programs in the page (the
// Rust compiler runs in a worker) and run the generated WebAssembly on a
// pool of workers sharing one memory.

export { createRuntime, argent, Runtime, Pipeline } from "./runtime.js";
export type {
  RuntimeOptions,
  CompileOptions,
  CompileTimings,
  RunTimings,
  RunStats,
  RunRequest,
  RunResult,
  ResidentImage,
  ExecutionMode,
} from "./runtime.js";
export { ArgentCompileError, ArgentRunError } from "./errors.js";
export type { RunErrorKind } from "./errors.js";
export { drawToCanvas, toRgba } from "./images.js";
export type { ImageSource, PlainImage, OutputImage, PixelArray } from "./images.js";
export type {
  Diagnostic,
  DiagnosticLabel,
  SourceSpan,
  SourcePosition,
  InputDescription,
  OutputDescription,
  ParamDescription,
  ScalarType,
  PipelineDescription,
  Abi,
  AssertKind,
} from "./protocol.js";
export { simdAvailable, sharedMemoryAvailable } from "./platform.js";
