//! Loop-invariant code motion at code generation: scalar subexpressions
//! that do not change inside a loop (a clamped row offset, `stride * y`)
//! are computed once before it into locals, and the loop body reads the
//! locals. The engines that run the module do little of this themselves.
//!
//! Before (loop over `x`):
//! `out[x * 8 + s * max(0, min(y, h))] = ...` computes `s * max(..)` per
//! iteration. After: `t = s * max(0, min(y, h))` once, then
//! `out[x * 8 + t] = ...`.

use crate::CodegenError;
use crate::emit::{Binding, FnBuilder, val_type};
use argent_ir::visit::{Visitor, walk_expr, walk_stmt};
use argent_ir::{CallTarget, Expr, ExprKind, Intrinsic, Stmt};
use std::collections::{HashMap, HashSet};

/// At most this many values are hoisted out of one loop, so the locals
/// live across the loop stay few.
const MAX_HOISTED: usize = 64;

/// Every name bound inside `body` (by lets and loops), and `var`.
pub(crate) fn names_bound_in(body: &Stmt, var: &str) -> HashSet<String> {
    struct Names(HashSet<String>);
    impl Visitor for Names {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Let { name, .. } = e.kind() {
                self.0.insert(name.clone());
            }
            walk_expr(self, e);
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::LetStmt { name, .. } => {
                    self.0.insert(name.clone());
                }
                Stmt::For { var, .. } => {
                    self.0.insert(var.clone());
                }
                _ => {}
            }
            walk_stmt(self, s);
        }
    }
    let mut names = Names(HashSet::from([var.to_string()]));
    names.visit_stmt(body);
    names.0
}

/// The address that identifies one expression node.
pub(crate) fn node_key(e: &Expr) -> usize {
    e.kind() as *const ExprKind as usize
}

/// Whether hoisting `e` saves work: variables and constants are as cheap to
/// read as a local.
fn nontrivial(e: &Expr) -> bool {
    match e.kind() {
        ExprKind::Var(_) | ExprKind::IntImm(_) | ExprKind::FloatImm(_) => false,
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } => nontrivial(&args[0]),
        _ => true,
    }
}

/// Finds the largest invariant scalar subexpressions of a loop body.
struct Finder<'a, 'c> {
    builder: &'a FnBuilder<'c>,
    bound: &'a HashSet<String>,
    /// Whether each free name is a scalar bound outside the loop.
    outside: HashMap<String, bool>,
    found: Vec<Expr>,
    seen: HashSet<usize>,
}

impl Finder<'_, '_> {
    fn record(&mut self, e: &Expr) {
        if self.found.len() < MAX_HOISTED
            && nontrivial(e)
            && !self.builder.hoisted_scalar(e)
            && self.seen.insert(node_key(e))
        {
            self.found.push(e.clone());
        }
    }

    /// Whether `e` is invariant; records its largest invariant parts when
    /// it is not.
    fn scan(&mut self, e: &Expr) -> bool {
        if self.builder.hoisted_scalar(e) {
            return true;
        }
        let children: Vec<&Expr> = match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => return true,
            ExprKind::Var(n) => {
                if self.bound.contains(n) {
                    return false;
                }
                if let Some(&known) = self.outside.get(n) {
                    return known;
                }
                let known = matches!(self.builder.lookup(n), Some(Binding::Scalar { .. }));
                self.outside.insert(n.clone(), known);
                return known;
            }
            ExprKind::Cast { value, .. } | ExprKind::Unary { value, .. } => vec![value],
            ExprKind::Binary { a, b, .. } => vec![a, b],
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => vec![cond, then, otherwise],
            ExprKind::Call { args, .. } => args.iter().collect(),
            ExprKind::Let { value, body, .. } => vec![value, body],
            ExprKind::Load { index, .. } => vec![index],
            ExprKind::Ramp { base, stride, .. } => vec![base, stride],
            ExprKind::Broadcast { value, .. } => vec![value],
            ExprKind::Shuffle { vectors, .. } => vectors.iter().collect(),
        };
        let invariant: Vec<bool> = children.iter().map(|c| self.scan(c)).collect();
        // Loads may see stores of the loop; lets bind names of the body.
        let movable = match e.kind() {
            ExprKind::Load { .. }
            | ExprKind::Let { .. }
            | ExprKind::Ramp { .. }
            | ExprKind::Broadcast { .. }
            | ExprKind::Shuffle { .. } => false,
            ExprKind::Call { target, .. } => matches!(target, CallTarget::Intrinsic(_)),
            _ => true,
        };
        if movable && e.ty().is_scalar() && invariant.iter().all(|&i| i) {
            return true;
        }
        for (c, i) in children.into_iter().zip(invariant) {
            if i {
                self.record(c);
            }
        }
        false
    }
}

impl Visitor for Finder<'_, '_> {
    fn visit_expr(&mut self, e: &Expr) {
        if self.scan(e) {
            self.record(e);
        }
    }
}

impl FnBuilder<'_> {
    /// Whether `e` (this very node) was computed before an enclosing loop.
    pub(crate) fn hoisted_scalar(&self, e: &Expr) -> bool {
        self.hoisted_scalars.contains_key(&node_key(e))
    }

    /// Computes, before a loop whose body is `body` (binding `bound`), the
    /// body's largest scalar subexpressions that do not depend on anything
    /// the loop changes, and records their locals for [`FnBuilder::expr`].
    /// Returns how many were hoisted.
    pub(crate) fn hoist_scalars(
        &mut self,
        bound: &HashSet<String>,
        body: &Stmt,
    ) -> Result<Vec<Expr>, CodegenError> {
        let mut finder = Finder {
            builder: self,
            bound,
            outside: HashMap::new(),
            found: Vec::new(),
            seen: HashSet::new(),
        };
        finder.visit_stmt(body);
        let found = finder.found;
        for e in &found {
            self.expr(e)?;
            let local = self.set_new_local(val_type(e.ty())?);
            self.hoisted_scalars.insert(node_key(e), (e.clone(), local));
        }
        Ok(found)
    }
}
