//! Argent's reference interpreter.
//!
//! [`realize`] evaluates a [`Pipeline`](argent_ir::Pipeline)'s algorithm
//! directly, ignoring its schedule, for a requested output region, given
//! input [`Buffer`]s and parameter [`Value`]s. It is the oracle every
//! schedule and backend is compared with bit for bit, so it is written for
//! obvious correctness; memoisation in dense per-func tables keeps it fast
//! enough to run every example on a 512x512 photo in seconds.
//!
//! # Scalar semantics (every backend must match these exactly)
//!
//! Implemented in [`scalar`]; values are computed on their mathematical
//! value in i64 and wrapped to their type.
//!
//! - Integer `+ - *`, negation, `~`, `& | ^`: wrap to the type's width
//!   (two's complement).
//! - `/` and `%` on integers are Euclidean: the remainder is never
//!   negative (`-7 / 2 = -4`, `-7 % 2 = 1`, `7 / -2 = -3`, `7 % -2 = 1`);
//!   `x / 0 = 0` and `x % 0 = 0`.
//! - `a << b`, `a >> b`: a negative `b` shifts the other way; an amount of
//!   at least the width gives 0 (or -1 for `>>` of a negative signed
//!   value); `>>` of signed values is arithmetic.
//! - `abs` of a signed integer returns the unsigned type of the same width
//!   (`abs(i8(-128)) = u8(128)`); `absd(a, b) = |a - b|` computed without
//!   overflow, unsigned for integers.
//! - `min`/`max` on integers as expected; on floats `min(a, b) = a < b ? a
//!   : b` and `max(a, b) = a > b ? a : b` (Halide's code generator; NaN and
//!   signed-zero results follow from the comparison).
//! - Floats are IEEE f32: every operation rounds to f32 (never computed in
//!   f64, never fused into a multiply-add). Float constants, stored as f64
//!   in the IR, round to nearest f32. Float `%` is `a - b * floor(a / b)`.
//! - int to float rounds to nearest even. Float to int (plain cast): NaN
//!   gives 0; otherwise saturate to the i32 range (the u32 range for a u32
//!   target), truncate toward zero, then wrap to the target width
//!   (`u8(300.7) = 44`, `u8(-1.5) = 255`). Integer to integer wraps. Any
//!   value to bool is `!= 0`.
//! - Saturating casts `sat_T(e)` clamp to T's range (floats: NaN gives 0,
//!   then clamp and truncate toward zero).
//! - `round` is half to even; `sqrt floor ceil trunc abs` are the exact
//!   IEEE operations.
//! - `exp log pow sin cos tan atan2` and `lerp` are *defined* by their
//!   expansions in [`argent_ir::math`] (see there for formulas and
//!   accuracy); the interpreter evaluates the expansion itself.
//! - `select(c, a, b)` evaluates only the side it picks; `&&` and `||`
//!   evaluate their right side only when needed. This matters only for
//!   reporting out-of-range input reads.
//!
//! - `lerp` of 32-bit integers uses u64 intermediates (`Type::new(UInt,
//!   64)`), the only 64-bit values anywhere; [`scalar`] computes them as
//!   unsigned.
//!
//! # Evaluation
//!
//! Demand-driven, see [`eval`]. Reading an input (without a boundary
//! condition) outside the buffer given reads 0 and is reported after the
//! run as [`RunError::InputTooSmall`], naming the stage, the input, and
//! the bounding box of all its reads against the buffer's bounds. The
//! library starts no threads (it runs in WebAssembly); deep pipelines
//! recurse one level per stage, bounded by [`Options::max_depth`].
//!
//! Limitation: when some update writes a dimension at computed positions
//! (a scatter such as `f(r) = ...`), no other update of that func may use
//! the pure variable of that dimension (`f(x) = f(x) + 1`), because a
//! demand-driven evaluation does not know the region such an update would
//! cover. That is reported as [`RunError::Unsupported`].
//!
//! Speed (release build, 512x512 RGB photo, one core, CPU time measured
//! with `perf stat` on a busy machine): box blur u16, unsharp mask f32
//! and histogram equalisation together about 0.3 s; the 88-stage local
//! Laplacian example about 1.9 s (25 million func values). Measure with
//! `cargo run --release -p argent-interp --example bench -- examples/*.ag`.

pub mod buffer;
mod compile;
pub mod error;
pub mod eval;
pub mod scalar;
pub mod value;

pub use buffer::{Buffer, Dim};
pub use error::{InputTooSmall, IrBug, RunError};
pub use eval::{Options, realize, realize_with};
pub use value::Value;
