//! Argent's intermediate representation.
//!
//! - [`Pipeline`]: the algorithm (inputs, params, funcs with pure and
//!   update definitions over reduction domains) and its [`Schedule`]
//!   (directives as written).
//! - [`Expr`]: one expression enum for the algorithm and for lowered code.
//! - [`Stmt`]: lowered loop nests.
//! - [`visit`]: visitors and mutators that recurse by default.
//! - [`print`]: the text form used by the CLI and snapshot tests.
//!
//! This crate does no I/O and depends on nothing, so it builds for
//! `wasm32-unknown-unknown` and runs inside the page.

pub mod expr;
pub mod fast_hash;
pub mod math;
pub mod module;
pub mod pipeline;
pub mod print;
pub mod schedule;
pub mod stmt;
pub mod types;
pub mod visit;

pub use expr::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, UnaryOp, buffer_field};
pub use module::{BufferArg, BufferRole, Module};
pub use pipeline::{
    Func, FuncOrigin, Input, Param, Pipeline, RDom, RVar, Update, rfactor_intermediate,
    rfactor_source,
};
pub use schedule::{Directive, DirectiveKind, Schedule, StageRef, TailStrategy};
pub use stmt::{AssertKind, ForKind, Range, Stmt};
pub use types::{Type, TypeKind};

/// A byte range in the source text a construct came from. Items built by
/// the Rust builder API, or by the compiler itself, have `Span::DUMMY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const DUMMY: Span = Span { start: 0, end: 0 };
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}
