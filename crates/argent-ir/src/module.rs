//! A lowered pipeline: what lowering hands to a backend (and to the
//! lowered-IR executor that cross-checks backends).
//!
//! Conventions every producer and consumer of a `Module` follows:
//! - Each input and output is a buffer argument. For a buffer `b` with `n`
//!   dimensions the body may read the `i32` variables `b.min.d`,
//!   `b.extent.d` and `b.stride.d` (d in 0..n, strides in elements), which
//!   the caller binds from the buffer descriptor. Interleaved and planar
//!   images differ only in strides.
//! - Scalar parameters are variables named as declared, of their type.
//! - After flattening, buffers are read with `Load { buffer, index }` and
//!   written with `Store`, where `index` is in elements relative to the
//!   buffer's base (`sum((coord_d - b.min.d) * b.stride.d)`). Internal
//!   buffers come from `Allocate` and are dense.
//! - Vector expressions may have any lane count; backends split them into
//!   registers. Loads and stores with a `Ramp` index of stride 1 are dense.
//! - `Assert` statements describe run-time checks (inputs too small, ...):
//!   a failed assert stops the run with that error.
//! - Scalar semantics are exactly those of the reference interpreter:
//!   integer arithmetic wraps at the type's width, division and modulo are
//!   Euclidean with x/0 == 0 and x%0 == 0, float arithmetic is IEEE single
//!   precision, float to integer casts truncate toward zero after
//!   saturating to the 32-bit range (NaN gives 0) and then wrap.

use crate::pipeline::Param;
use crate::stmt::Stmt;
use crate::types::Type;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferRole {
    Input,
    Output,
}

/// One buffer the caller passes in.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferArg {
    pub name: String,
    pub ty: Type,
    pub dims: usize,
    pub role: BufferRole,
}

/// A lowered, validated pipeline ready for a backend.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub name: String,
    pub buffers: Vec<BufferArg>,
    pub params: Vec<Param>,
    pub body: Stmt,
}
