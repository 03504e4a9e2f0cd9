//! Argent's CPU backend: turns a lowered [`argent_ir::Module`] into a fresh
//! WebAssembly module (scalar code, or SIMD128 code for vector
//! expressions), and describes the calling convention the runtime follows.
//!
//! # ABI
//!
//! The ABI below is the contract with the TypeScript runtime (and with the
//! reference runtime in `tests/js/runtime.mjs`). Every offset the runtime
//! needs is also given in [`Abi`], so the runtime never hard-codes them.
//!
//! ## Imports and exports
//! - Import `env.memory`: the one linear memory. With
//!   [`CodegenOptions::threads`] it is declared `shared` with a maximum of
//!   65536 pages, so the runtime must create it as
//!   `new WebAssembly.Memory({ initial, maximum, shared: true })`.
//! - Import `env.parallel_for(task, closure, min, extent) -> i32` (only when
//!   threads are on and the module has a parallel loop; see below).
//! - Export `run(args_ptr: i32) -> i32`: runs the pipeline once. Returns 0
//!   on success, or `k > 0` when check `k` failed: [`Abi::asserts`]`[k - 1]`
//!   says which check it was, and the check's argument values were written
//!   as `i32` words (f32 lanes as their bits) at
//!   `args_ptr + `[`Abi::error_args_offset`].
//! - Export `task_N(closure: i32, iteration: i32) -> i32` for each outlined
//!   parallel loop body (`N` = task index, status as for `run`).
//! - Export `query(args_ptr: i32) -> i32` (when [`Abi::region_slots`] is
//!   set): the bounds query. With the same argument block as `run` (no
//!   pixels needed), it writes the region of each input dimension that
//!   `run` would read to its [`RegionSlot`] and returns 0, reading and
//!   writing nothing else (see the `query` module).
//! - Negative statuses are the runtime's own (the reference runtime
//!   reports a trap inside a task as -1); a trap in `run` itself (an
//!   out-of-bounds access the checks did not cover) surfaces as a
//!   `WebAssembly.RuntimeError`.
//!
//! ## The argument block at `args_ptr` (little-endian `i32` words, 16-byte aligned)
//! - `+0` heap top: the first free byte after the caller's data. Intermediate
//!   buffers are carved from `[heap top, memory end)`, growing the memory
//!   with `memory.grow` when needed. `run` restores the word before it
//!   returns (also on errors), so nothing leaks across runs.
//! - `+4` the run counter, owned by the generated code (with threads `run`
//!   increments it, so each thread can tell that its allocation arena is
//!   from an earlier run). The runtime zeroes it once, when it creates the
//!   memory, and leaves it alone afterwards.
//! - then for each buffer in `Module::buffers` order ([`BufferAbi::offset`]):
//!   the byte address of element 0, then for each dimension `min`, `extent`,
//!   `stride` (strides in elements). Index `i` of the flat IR lives at
//!   `base + i * element_size`.
//! - then each scalar parameter in `Module::params` order
//!   ([`ParamAbi::offset`]), one word each: integers as `i32` (narrow types
//!   are wrapped to their type by the generated code), `f32` as its bits,
//!   bool as 0/1.
//! - then the error-argument area ([`Abi::error_args_offset`],
//!   [`Abi::max_error_args`] words), then the query's region slots (two
//!   words each: the smallest and the largest coordinate read).
//!
//! SIMD loads of interleaved data read up to 64 bytes past the last element
//! they need, so the runtime leaves 64 readable bytes after every buffer.
//!
//! Inputs lie at byte addresses from 1024 up to 64 KiB
//! ([`SPECULATIVE_GUARD`]) before the end of the memory. An input read in
//! an arm of a vector `select` is checked only where the arm's condition
//! holds, and the other lanes' addresses may lie anywhere: such a load
//! whose address falls in the last 64 KiB or past the end reads address 0
//! instead, and this layout keeps that from moving any lane that is used.
//!
//! ## Intermediate buffers
//! `Allocate` carves 16-byte-aligned blocks from the heap top word: a bump
//! allocator whose frees follow the `Allocate` nesting (LIFO). A request
//! that does not fit in 4 GiB, or that `memory.grow` cannot satisfy, fails
//! the run with the synthetic check recorded for that `Allocate`
//! ([`AssertInfo`] with kind `AllocationTooLarge`, args: requested bytes low
//! and high words). With threads, the heap top is bumped with atomic
//! compare-exchange, and a block is given back only while it is still the
//! top. Task bodies (which run on many threads at once) allocate instead
//! from their thread's arena: each instance keeps, in non-shared mutable
//! globals, a block taken from the shared heap and carves its task
//! allocations from it LIFO without atomics. When a block does not fit, the
//! thread takes a larger arena (at least twice the old one up to 1 GiB, and
//! room for everything it has live plus the new block), so after a few
//! refills every iteration reuses the same memory; the failure check then
//! reports the arena size that could not be had. Each arena is followed by
//! 1 MiB that nobody uses, so that two threads' arenas are never close in
//! memory (adjacent ones slowed the second thread by a third). Arenas go
//! back with the rest of the heap when `run` returns, and the run counter
//! (word `+4`) marks them stale for the next run.
//!
//! ## Parallel loops (threads on)
//! A `parallel` loop's body becomes `task_N`. The caller stores the loop
//! body's free variables into a closure block carved from the heap
//! (word 0: `args_ptr`; then one word per free scalar variable, in the order
//! of [`TaskInfo::captures`]) and calls
//! `env.parallel_for(N, closure, min, extent)`. The runtime must call
//! `task_N(closure, i)` exactly once for every `i` in `[min, min + extent)`,
//! in any order and on any threads sharing the memory, return only when
//! all calls have returned, and return 0 or the status of a failed call.
//! The reference protocol (tests/js/runtime.mjs): a control block in
//! memory holds the job; the caller publishes it, bumps a generation word
//! and `Atomics.notify`s the workers; every participant (caller included)
//! claims chunks of iterations with `Atomics.add` on a shared counter; the
//! caller then waits with `Atomics.wait` on a done counter (in the page
//! the caller is the pipeline's driver worker, never the main thread).
//! Parallel loops nested inside a task body are compiled as serial loops
//! of that task, so `parallel_for` is only ever called from `run` and
//! nested parallel loops cannot deadlock. A task body that captures a
//! vector or 64-bit value runs serially instead of becoming a task.
//!
//! ## Outlined loops
//! Other functions (neither exported nor part of the ABI) run the large
//! loops of large functions (see the `outline` module): V8 compiles a
//! function of more than 8192 virtual registers with a register allocator
//! that spills far more. Each takes `args_ptr`, the loop's free scalar
//! variables and the bases of the buffers it touches as parameters, and
//! returns a status as `run` does.
//!
//! # Code generation
//! Scalars live in `i32` (integers normalised: narrow unsigned types
//! zero-extended, narrow signed types sign-extended, bools 0/1), `f32`,
//! or `i64` (the u64 intermediates of `lerp`). Division never traps.
//!
//! With [`CodegenOptions::simd`], a vector of `n` lanes of `b` bits lives in
//! `ceil(n * b / 128)` v128 locals (16 x u8, 8 x u16, 4 x i32/f32 per
//! register); bool vectors are lane masks as wide as their use needs.
//! Lowerings (each exact w.r.t. the scalar semantics, each tested):
//! - dense loads/stores of stride-1 ramps (`v128.load/store`, 8/4-byte
//!   `load64_zero`/`store64_lane` for half vectors), constant index
//!   offsets folded into the memarg (unaligned stencil taps);
//! - stride 2-4 loads (interleaved RGB/RGBA) as window loads plus an
//!   `i8x16.shuffle` tree, except where a group of elements is one wider
//!   lane (stride 4 of bytes, stride 2 of bytes or u16): those mask the
//!   wide lanes and narrow (`narrow_*_u`), with no shuffle masks for V8 to
//!   load (a channel of u8 widened to 16 bits narrows once, or not at
//!   all); shuffles in general (the interleaved stores `argent-lower`'s
//!   `interleave_stores` makes) through the same tree;
//!   gathers and scattered stores lane by lane (`v128.load*_lane` and
//!   `v128.store*_lane`, straight between memory and the register; a
//!   load from a clamped
//!   ramp, `repeat_edge` in a boundary piece, checks per vector whether
//!   every lane is inside and loads densely then); broadcasts via `splat`;
//! - `select` via `v128.bitselect`; widening/narrowing casts via
//!   `extend_low/high` and `narrow_*_sat` (saturating casts from signed
//!   sources map onto them directly, others clamp first); a widened dense
//!   load widens as it loads (`v128.load8x8/16x4/32x2`, one `pmovzx` with
//!   a memory operand on x86);
//! - patterns: `sat(wide(a) ± wide(b))` → `add_sat`/`sub_sat`;
//!   `(wide(a) + wide(b) + 1) >> 1` (or `/ 2`) → `avgr_u`;
//!   `sat_i16((i32(a) * i32(b) + 16384) >> 15)` → `q15mulr_sat_s`;
//!   `wide(a) * wide(b)` → `extmul_low/high`; even/odd pair products →
//!   `i32x4.dot_i16x8_s`; `abs`, `absd` (max - min), min/max, float
//!   `pmin/pmax`; sums of 32-bit lanes weighted by constants regrouped
//!   by the bits of their weights (`(((b + c + d) << 1) + c) << 1 + (a +
//!   e)` for 1 4 6 4 1: no `i32x4.mul`, two instructions on x86);
//!   shifts, multiplication by a power of two, and
//!   power-of-two division by constants as shifts/masks; unsigned
//!   division by `3 * 2^k` as a shift, a wrapping multiply by the inverse
//!   of 3 and two `min_u` (`q = min(m, m + s, m + 2s)`: 5 instructions
//!   for the box blur's `/ 3`, against 11 or so on x86 for the next
//!   rule); unsigned 8/16-bit division by other constants as a multiply
//!   by a magic number (`extmul` + shift), signed as an exact f32
//!   division;
//! - anything else lane by lane (`extract_lane`/`replace_lane` around
//!   scalar code), so every vector expression compiles.
//!
//! Within one store, equal subexpressions are computed once (loads
//! included: nothing stores inside an expression). Consecutive vector
//! stores (an unrolled loop's rows) go on sharing, except values that load
//! from a buffer stored in between: buffers of different names never
//! overlap. Besides equal expressions, an instruction applied again to the
//! same registers reuses the first result (registers are not reused within
//! a statement or a run of stores, so they name values): the pair sums of
//! a cascade that each row's CSE bound differently are computed once.
//!
//! # Semantics
//! Generated code follows the reference semantics of `argent_ir::module`
//! exactly; the choices that file leaves open are:
//! - shifts: a negative amount (signed types) shifts the other way; an
//!   amount of at least the type's width gives 0 (`<<`, unsigned `>>`) or
//!   the sign fill (signed `>>`);
//! - float `min(a, b)` is `a < b ? a : b` and `max(a, b)` is `a > b ? a :
//!   b` (as in `argent-interp`; SIMD uses `f32x4.pmin/pmax` with swapped
//!   operands, which is the same); float `%` is `a - b * floor(a / b)`;
//! - float to int saturates to the i32 range (u32 range for a u32 target),
//!   truncates, then wraps; int to bool is `!= 0`, bool to int is 0/1;
//!   `round` is half to even.
//! - `select` with a memory read in a branch evaluates only the branch it
//!   picks (scalar code, and vector code whose condition is a scalar);
//!   vector selects with a vector condition evaluate both sides, so a load
//!   of a func's buffer there must be in bounds in every lane, and a load
//!   of an input there is guarded (see the layout above).
//! - `exp log pow sin cos tan atan2 lerp` are compiled through their
//!   expansions in `argent_ir::math` when they reach the backend
//!   unexpanded.

mod emit;
mod exact;
mod float_range;
mod hoist;
mod outline;
mod query;
mod scalarize;
mod simd;

use argent_ir::{AssertKind, BufferRole, Module, Type};
use std::fmt;

pub use emit::SPECULATIVE_GUARD;
pub use query::RegionSlot;
pub use scalarize::{lane_of, scalarize_stmt};

/// What the generated code may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodegenOptions {
    /// Emit SIMD128 instructions for vector expressions. When false, vector
    /// expressions are computed lane by lane with scalar instructions (for
    /// engines where `WebAssembly.validate` of a SIMD probe fails). A module
    /// lowered for such engines (`LowerOptions::scalar_target`, as the page
    /// compiles it) has serial loops or 4-lane vectors instead of the
    /// schedule's widths.
    pub simd: bool,
    /// Shared memory, atomics, and parallel loops through
    /// `env.parallel_for`. When false, parallel loops run serially.
    pub threads: bool,
}

impl Default for CodegenOptions {
    fn default() -> Self {
        CodegenOptions {
            simd: true,
            threads: false,
        }
    }
}

/// Where one buffer's descriptor lives in the argument block.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferAbi {
    pub name: String,
    pub ty: Type,
    pub dims: usize,
    pub role: BufferRole,
    /// Byte offset of the base-pointer word; `min`, `extent`, `stride` of
    /// dimension `d` follow at `offset + 4 + 12 * d`, `+ 8 + 12 * d`,
    /// `+ 12 + 12 * d`.
    pub offset: u32,
}

/// Where one scalar parameter lives in the argument block.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamAbi {
    pub name: String,
    pub ty: Type,
    pub offset: u32,
}

/// One run-time check; status `k` means `asserts[k - 1]` failed.
#[derive(Clone, Debug, PartialEq)]
pub struct AssertInfo {
    pub kind: AssertKind,
    /// The types of the values written to the error-argument area.
    pub arg_types: Vec<Type>,
}

/// One outlined parallel loop body.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskInfo {
    /// Export name (`task_N`).
    pub export: String,
    /// The loop variable.
    pub loop_var: String,
    /// Free variables stored in the closure after `args_ptr`, in order.
    pub captures: Vec<String>,
}

/// The calling convention of one compiled module (see the crate docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Abi {
    pub buffers: Vec<BufferAbi>,
    pub params: Vec<ParamAbi>,
    pub asserts: Vec<AssertInfo>,
    pub tasks: Vec<TaskInfo>,
    /// Byte offset of the heap-top word (always 0).
    pub heap_top_offset: u32,
    pub error_args_offset: u32,
    pub max_error_args: u32,
    /// Total size of the argument block in bytes (a multiple of 16).
    pub args_size: u32,
    /// Whether the memory import is shared (threads on).
    pub shared_memory: bool,
    /// Where the exported `query` function leaves the region of each input
    /// dimension a run reads (see [`RegionSlot`]); `None` when the module
    /// has no `query`.
    pub region_slots: Option<Vec<RegionSlot>>,
}

/// A generated WebAssembly module and how to call it.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledModule {
    pub bytes: Vec<u8>,
    pub abi: Abi,
}

/// Why code generation failed. Lowering produces only modules this backend
/// accepts, so every variant but `TooLarge` is a compiler bug.
#[derive(Clone, Debug, PartialEq)]
pub enum CodegenError {
    /// A node that must not survive lowering (`Provide`, `Realize`, calls
    /// to funcs or inputs, unexpanded transcendental intrinsics).
    NotLowered(String),
    /// A variable or buffer used outside its scope.
    Unbound(String),
    /// A type this backend does not support (e.g. 64-bit values).
    UnsupportedType(String),
    /// The emitted module failed validation (a backend bug).
    Invalid(String),
    /// The module would exceed what engines compile (a function's size or
    /// its locals). The one variant that is the user's doing: the schedule
    /// unrolls or vectorises more code than an engine accepts.
    TooLarge(String),
}

impl CodegenError {
    /// Whether the error is the program's (its schedule's), not a bug.
    pub fn is_user_error(&self) -> bool {
        matches!(self, CodegenError::TooLarge(_))
    }
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodegenError::NotLowered(what) => write!(f, "not lowered: {what}"),
            CodegenError::Unbound(name) => write!(f, "unbound name `{name}`"),
            CodegenError::UnsupportedType(what) => write!(f, "unsupported type: {what}"),
            CodegenError::Invalid(msg) => write!(f, "generated module is invalid: {msg}"),
            CodegenError::TooLarge(msg) => write!(
                f,
                "{msg}: the schedule unrolls or vectorises more code than a WebAssembly engine accepts; use smaller unroll or vector factors, or compute large stages at the root"
            ),
        }
    }
}

impl std::error::Error for CodegenError {}

/// Compiles a lowered module to WebAssembly and validates the result.
pub fn compile(module: &Module, options: &CodegenOptions) -> Result<CompiledModule, CodegenError> {
    let compiled = emit::compile_module(module, options, outline::Outlining::Large)?;
    validate(&compiled.bytes)?;
    Ok(compiled)
}

/// [`compile`], with every loop outlined into a function of its own
/// (normally only large loops of large functions are, see the `outline`
/// module), so that tests run the outlining on every program.
#[doc(hidden)]
pub fn compile_outlining_every_loop(
    module: &Module,
    options: &CodegenOptions,
) -> Result<CompiledModule, CodegenError> {
    let compiled = emit::compile_module(module, options, outline::Outlining::Every)?;
    validate(&compiled.bytes)?;
    Ok(compiled)
}

/// Compiles a lowered module to WebAssembly without validating it, for a
/// caller whose engine validates the module anyway when it compiles it
/// (the page: `WebAssembly.compile` rejects an invalid module). Tests use
/// [`compile`], which validates every module it emits.
pub fn compile_unvalidated(
    module: &Module,
    options: &CodegenOptions,
) -> Result<CompiledModule, CodegenError> {
    emit::compile_module(module, options, outline::Outlining::Large)
}

/// Validates module bytes with the features this backend emits (SIMD128
/// and threads); an invalid module is a backend bug.
pub fn validate(bytes: &[u8]) -> Result<(), CodegenError> {
    let mut features = wasmparser::WasmFeatures::default();
    features.set(wasmparser::WasmFeatures::SIMD, true);
    features.set(wasmparser::WasmFeatures::THREADS, true);
    wasmparser::Validator::new_with_features(features)
        .validate_all(bytes)
        .map_err(|e| CodegenError::Invalid(e.to_string()))?;
    Ok(())
}
