//! The bounds query: a second exported function, `query(args_ptr)`, that
//! computes which region of each input a run of the same arguments would
//! read, without reading or writing any pixel. It is the module's own
//! bounds inference: lowering puts a check per input and dimension at the
//! top of the body (`InputTooSmall`, whose first two arguments are the
//! region needed), after the `let`s they use, and the query runs exactly
//! that prefix, keeping the union of the regions instead of checking them.
//!
//! A runtime that gives each worker a strip of the output (no shared
//! memory) asks each strip's query first and sends each worker only the
//! rows of the inputs its strip reads.
//!
//! ```text
//! let out.s0.y.min = out.min.1                  query(args):
//! assert(.., InputTooSmall { in, dim 1 },         let out.s0.y.min = out.min.1
//!        [out.s0.y.min - 1, .., ..])      ==>     region[in, 1].min = min(region[in, 1].min, out.s0.y.min - 1)
//! produce out { .. }                              region[in, 1].max = max(..)
//!                                                 return 0
//! ```
//!
//! The query exists only when every `InputTooSmall` check of the body is
//! in that prefix (so no read escapes it) and the prefix reads no memory.
//! A specialised pipeline's body chooses its version first: the query
//! makes the same choice and runs that version's prefix.

use crate::CodegenError;
use crate::emit::{FnBuilder, has_load};
use argent_ir::visit::{Visitor, walk_stmt};
use argent_ir::{AssertKind, Expr, Stmt};
use wasm_encoder::{Instruction as I, ValType};

/// Where a query leaves the region of one input dimension: the smallest
/// and the largest coordinate read, two `i32`s at `offset` in the argument
/// block (`i32::MAX` and `i32::MIN` when nothing is read).
#[derive(Clone, Debug, PartialEq)]
pub struct RegionSlot {
    pub input: String,
    pub dim: usize,
    pub offset: u32,
}

/// The (input, dimension) pairs whose regions the query of `body` reports,
/// in order of first check; `None` when `body` has no query (a region
/// check outside the prefix of lets and checks, or a prefix that loads).
pub(crate) fn region_checks(body: &Stmt) -> Option<Vec<(String, usize)>> {
    let mut in_prefix = 0;
    let mut slots: Vec<(String, usize)> = Vec::new();
    if !prefix_checks(body, &mut in_prefix, &mut slots) {
        return None;
    }
    if slots.is_empty() || in_prefix != count_region_checks(body) {
        return None;
    }
    Some(slots)
}

/// Walks the prefix of `s` (lets, checks, blocks of them) counting its
/// region checks and collecting their slots; false when the prefix loads
/// from memory (a query must not).
fn prefix_checks(s: &Stmt, count: &mut usize, slots: &mut Vec<(String, usize)>) -> bool {
    match s {
        Stmt::Block(stmts) => {
            for s in stmts {
                if !prefix_checks(s, count, slots) {
                    return false;
                }
                if !continues_prefix(s) {
                    break;
                }
            }
            true
        }
        Stmt::LetStmt { value, body, .. } => {
            !has_load(value) && value.ty().is_scalar() && prefix_checks(body, count, slots)
        }
        Stmt::Assert { kind, args, .. } => {
            if let AssertKind::InputTooSmall { input, dim, .. } = kind {
                if args.len() < 2 || args[..2].iter().any(|a| has_load(a) || !a.ty().is_scalar()) {
                    return false;
                }
                *count += 1;
                if !slots.iter().any(|(i, d)| i == input && d == dim) {
                    slots.push((input.clone(), *dim));
                }
            }
            true
        }
        // The versions of a specialised pipeline: each branch's prefix
        // has its own checks, and the query runs the one the run would.
        Stmt::IfThenElse {
            cond,
            then,
            otherwise: Some(otherwise),
        } => {
            !has_load(cond)
                && prefix_checks(then, count, slots)
                && prefix_checks(otherwise, count, slots)
        }
        _ => true,
    }
}

/// Whether the prefix goes on after `s` (a block of lets and checks does;
/// anything that computes ends it).
fn continues_prefix(s: &Stmt) -> bool {
    match s {
        Stmt::Assert { .. } => true,
        Stmt::Block(stmts) => stmts.iter().all(continues_prefix),
        _ => false,
    }
}

fn count_region_checks(s: &Stmt) -> usize {
    struct Count(usize);
    impl Visitor for Count {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Assert {
                kind: AssertKind::InputTooSmall { .. },
                ..
            } = s
            {
                self.0 += 1;
            }
            walk_stmt(self, s);
        }
    }
    let mut c = Count(0);
    c.visit_stmt(s);
    c.0
}

impl FnBuilder<'_> {
    /// The query's body: every slot emptied, then the prefix of `s` with
    /// each region check widening its slot.
    pub(crate) fn query(&mut self, s: &Stmt, slots: &[RegionSlot]) -> Result<(), CodegenError> {
        for slot in slots {
            for (k, value) in [i32::MAX, i32::MIN].into_iter().enumerate() {
                self.emit(I::LocalGet(self.args_ptr));
                self.emit(I::I32Const(value));
                self.emit(I::I32Store(crate::emit::mem(
                    slot.offset as u64 + 4 * k as u64,
                    2,
                )));
            }
        }
        self.query_prefix(s, slots)?;
        Ok(())
    }

    /// Returns whether the prefix goes on after `s`.
    fn query_prefix(&mut self, s: &Stmt, slots: &[RegionSlot]) -> Result<bool, CodegenError> {
        match s {
            Stmt::Block(stmts) => {
                for s in stmts {
                    if !self.query_prefix(s, slots)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Stmt::LetStmt { name, value, body } => {
                let binding = self.bind_value(value)?;
                self.scopes.push((name.clone(), binding));
                let r = self.query_prefix(body, slots);
                self.scopes.pop();
                r?;
                Ok(false)
            }
            Stmt::Assert { kind, args, .. } => {
                if let AssertKind::InputTooSmall { input, dim, .. } = kind {
                    // `region_checks` walked the same prefix, so every
                    // check here has its slot; a miss is a backend bug.
                    let slot = slots
                        .iter()
                        .find(|slot| slot.input == *input && slot.dim == *dim)
                        .ok_or_else(|| {
                            CodegenError::Invalid(format!(
                                "the bounds query has no slot for {input} dimension {dim}"
                            ))
                        })?;
                    self.widen_slot(slot.offset, &args[0], true)?;
                    self.widen_slot(slot.offset + 4, &args[1], false)?;
                }
                Ok(true)
            }
            // Only a specialised pipeline's choice of version has checks
            // in its branches; any other `if` ends the prefix.
            Stmt::IfThenElse {
                cond,
                then,
                otherwise: Some(otherwise),
            } if count_region_checks(s) > 0 => {
                self.expr(cond)?;
                self.emit(I::If(wasm_encoder::BlockType::Empty));
                self.query_prefix(then, slots)?;
                self.emit(I::Else);
                self.query_prefix(otherwise, slots)?;
                self.emit(I::End);
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// `slot = min(slot, value)` (or `max`), in the argument block.
    fn widen_slot(&mut self, offset: u32, value: &Expr, is_min: bool) -> Result<(), CodegenError> {
        self.expr(value)?;
        let v = self.set_new_local(ValType::I32);
        self.emit(I::LocalGet(self.args_ptr));
        self.emit(I::I32Load(crate::emit::mem(offset as u64, 2)));
        let old = self.set_new_local(ValType::I32);
        self.emit(I::LocalGet(self.args_ptr));
        self.emit(I::LocalGet(v));
        self.emit(I::LocalGet(old));
        self.emit(I::LocalGet(v));
        self.emit(I::LocalGet(old));
        self.emit(if is_min { I::I32LtS } else { I::I32GtS });
        self.emit(I::Select);
        self.emit(I::I32Store(crate::emit::mem(offset as u64, 2)));
        Ok(())
    }
}
