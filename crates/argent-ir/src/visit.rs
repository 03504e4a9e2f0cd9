//! Visitors and mutators whose default methods recurse, so a pass
//! overrides only the node kinds it cares about (as in naga and Halide's
//! `IRVisitor`/`IRMutator`).

use crate::expr::{Expr, ExprKind};
use crate::fast_hash::FastHashSet;
use crate::stmt::{Range, Stmt};

/// Read-only traversal. Override `visit_expr`/`visit_stmt` and call
/// `walk_expr`/`walk_stmt` to keep recursing.
pub trait Visitor {
    fn visit_expr(&mut self, e: &Expr) {
        walk_expr(self, e);
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        walk_stmt(self, s);
    }
}

pub fn walk_expr<V: Visitor + ?Sized>(v: &mut V, e: &Expr) {
    for_each_child(e, |c| v.visit_expr(c));
}

pub fn walk_stmt<V: Visitor + ?Sized>(v: &mut V, s: &Stmt) {
    for_each_part(s, |part| match part {
        StmtPart::Expr(e) => v.visit_expr(e),
        StmtPart::Stmt(s) => v.visit_stmt(s),
    });
}

/// Calls `f` on each direct child of `e`, in evaluation order, borrowed
/// for as long as `e` is: a walk that collects references into the tree
/// (the names it mentions, say) recurses through this, where a
/// [`Visitor`]'s methods only see each node for the length of a call.
// Inlined into each walk: as a call of its own per node, the native
// compiler spent 2% more instructions per compile (the page's build,
// optimised as one unit, inlines it anyway).
#[inline(always)]
pub fn for_each_child<'e>(e: &'e Expr, mut f: impl FnMut(&'e Expr)) {
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_) => {}
        ExprKind::Cast { value, .. }
        | ExprKind::Unary { value, .. }
        | ExprKind::Broadcast { value, .. } => f(value),
        ExprKind::Load { index, .. } => f(index),
        ExprKind::Binary { a, b, .. }
        | ExprKind::Let {
            value: a, body: b, ..
        }
        | ExprKind::Ramp {
            base: a, stride: b, ..
        } => {
            f(a);
            f(b);
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            f(cond);
            f(then);
            f(otherwise);
        }
        ExprKind::Call { args: all, .. } | ExprKind::Shuffle { vectors: all, .. } => {
            all.iter().for_each(f)
        }
    }
}

/// A direct part of a statement (see [`for_each_part`]).
pub enum StmtPart<'s> {
    Expr(&'s Expr),
    Stmt(&'s Stmt),
}

/// Calls `f` on each expression and statement directly inside `s`, in
/// execution order, borrowed for as long as `s` is (see
/// [`for_each_child`]).
#[inline(always)]
pub fn for_each_part<'s>(s: &'s Stmt, mut f: impl FnMut(StmtPart<'s>)) {
    match s {
        Stmt::LetStmt { value, body, .. } => {
            f(StmtPart::Expr(value));
            f(StmtPart::Stmt(body));
        }
        Stmt::Assert { cond, args, .. } => {
            f(StmtPart::Expr(cond));
            args.iter().for_each(|a| f(StmtPart::Expr(a)));
        }
        Stmt::ProducerConsumer { body, .. } => f(StmtPart::Stmt(body)),
        Stmt::For {
            min, extent, body, ..
        } => {
            f(StmtPart::Expr(min));
            f(StmtPart::Expr(extent));
            f(StmtPart::Stmt(body));
        }
        Stmt::Provide { args, value, .. } => {
            args.iter().for_each(|a| f(StmtPart::Expr(a)));
            f(StmtPart::Expr(value));
        }
        Stmt::Realize { bounds, body, .. } => {
            for r in bounds {
                f(StmtPart::Expr(&r.min));
                f(StmtPart::Expr(&r.extent));
            }
            f(StmtPart::Stmt(body));
        }
        Stmt::Store { index, value, .. } => {
            f(StmtPart::Expr(index));
            f(StmtPart::Expr(value));
        }
        Stmt::Allocate { size, body, .. } => {
            f(StmtPart::Expr(size));
            f(StmtPart::Stmt(body));
        }
        Stmt::Block(stmts) => stmts.iter().for_each(|s| f(StmtPart::Stmt(s))),
        Stmt::IfThenElse {
            cond,
            then,
            otherwise,
        } => {
            f(StmtPart::Expr(cond));
            f(StmtPart::Stmt(then));
            if let Some(o) = otherwise {
                f(StmtPart::Stmt(o));
            }
        }
        Stmt::Evaluate(e) => f(StmtPart::Expr(e)),
    }
}

/// Every name bound inside `s`: its loop variables and its `let`s (of
/// statements and of expressions), borrowed from `s`. Passes ask this of
/// a loop's body to tell what varies inside it.
pub fn names_bound_in(s: &Stmt) -> FastHashSet<&str> {
    fn in_stmt<'s>(s: &'s Stmt, names: &mut FastHashSet<&'s str>) {
        if let Stmt::LetStmt { name, .. } | Stmt::For { var: name, .. } = s {
            names.insert(name);
        }
        for_each_part(s, |part| match part {
            StmtPart::Expr(e) => in_expr(e, names),
            StmtPart::Stmt(s) => in_stmt(s, names),
        });
    }
    fn in_expr<'e>(e: &'e Expr, names: &mut FastHashSet<&'e str>) {
        if let ExprKind::Let { name, .. } = e.kind() {
            names.insert(name);
        }
        for_each_child(e, |c| in_expr(c, names));
    }
    let mut names = FastHashSet::default();
    in_stmt(s, &mut names);
    names
}

/// Rebuilding traversal. The defaults rebuild a node only when a child
/// changed (checked with `Expr::same_as`), so untouched subtrees stay shared.
pub trait Mutator {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        mutate_expr_children(self, e)
    }
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        mutate_stmt_children(self, s)
    }
}

fn all_same(a: &[Expr], b: &[Expr]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.same_as(y))
}

// Inlined into each mutator's `mutate_expr` for the same reason as
// `for_each_child` (0.8% of a native compile).
#[inline(always)]
pub fn mutate_expr_children<M: Mutator + ?Sized>(m: &mut M, e: &Expr) -> Expr {
    let ty = e.ty();
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_) => e.clone(),
        ExprKind::Cast { value, saturating } => {
            let v = m.mutate_expr(value);
            if v.same_as(value) {
                return e.clone();
            }
            Expr::new(
                ty.with_lanes(v.ty().lanes),
                ExprKind::Cast {
                    value: v,
                    saturating: *saturating,
                },
            )
        }
        ExprKind::Unary { op, value } => {
            let v = m.mutate_expr(value);
            if v.same_as(value) {
                return e.clone();
            }
            Expr::unary(*op, v)
        }
        ExprKind::Binary { op, a, b } => {
            let (na, nb) = (m.mutate_expr(a), m.mutate_expr(b));
            if na.same_as(a) && nb.same_as(b) {
                return e.clone();
            }
            Expr::binary(*op, na, nb)
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            let (c, t, o) = (
                m.mutate_expr(cond),
                m.mutate_expr(then),
                m.mutate_expr(otherwise),
            );
            if c.same_as(cond) && t.same_as(then) && o.same_as(otherwise) {
                return e.clone();
            }
            Expr::select(c, t, o)
        }
        ExprKind::Call { target, args } => {
            let new: Vec<Expr> = args.iter().map(|a| m.mutate_expr(a)).collect();
            if all_same(&new, args) {
                return e.clone();
            }
            let lanes = new.iter().map(|a| a.ty().lanes).max().unwrap_or(1);
            Expr::call(ty.with_lanes(lanes.max(ty.lanes)), target.clone(), new)
        }
        ExprKind::Let { name, value, body } => {
            let (v, b) = (m.mutate_expr(value), m.mutate_expr(body));
            if v.same_as(value) && b.same_as(body) {
                return e.clone();
            }
            Expr::let_in(name.clone(), v, b)
        }
        ExprKind::Load { buffer, index } => {
            let i = m.mutate_expr(index);
            if i.same_as(index) {
                return e.clone();
            }
            Expr::load(ty.element(), buffer.clone(), i)
        }
        ExprKind::Ramp {
            base,
            stride,
            lanes,
        } => {
            let (b, s) = (m.mutate_expr(base), m.mutate_expr(stride));
            if b.same_as(base) && s.same_as(stride) {
                return e.clone();
            }
            Expr::ramp(b, s, *lanes)
        }
        ExprKind::Broadcast { value, lanes } => {
            let v = m.mutate_expr(value);
            if v.same_as(value) {
                return e.clone();
            }
            Expr::broadcast(v, *lanes)
        }
        ExprKind::Shuffle { vectors, indices } => {
            let new: Vec<Expr> = vectors.iter().map(|a| m.mutate_expr(a)).collect();
            if all_same(&new, vectors) {
                return e.clone();
            }
            Expr::shuffle(new, indices.clone())
        }
    }
}

pub fn mutate_stmt_children<M: Mutator + ?Sized>(m: &mut M, s: &Stmt) -> Stmt {
    match s {
        Stmt::LetStmt { name, value, body } => Stmt::LetStmt {
            name: name.clone(),
            value: m.mutate_expr(value),
            body: Box::new(m.mutate_stmt(body)),
        },
        Stmt::Assert { cond, kind, args } => Stmt::Assert {
            cond: m.mutate_expr(cond),
            kind: kind.clone(),
            args: args.iter().map(|a| m.mutate_expr(a)).collect(),
        },
        Stmt::ProducerConsumer {
            func,
            producing,
            body,
        } => Stmt::ProducerConsumer {
            func: func.clone(),
            producing: *producing,
            body: Box::new(m.mutate_stmt(body)),
        },
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => Stmt::For {
            var: var.clone(),
            min: m.mutate_expr(min),
            extent: m.mutate_expr(extent),
            kind: *kind,
            body: Box::new(m.mutate_stmt(body)),
        },
        Stmt::Provide { func, args, value } => Stmt::Provide {
            func: func.clone(),
            args: args.iter().map(|a| m.mutate_expr(a)).collect(),
            value: m.mutate_expr(value),
        },
        Stmt::Realize {
            func,
            ty,
            bounds,
            body,
        } => Stmt::Realize {
            func: func.clone(),
            ty: *ty,
            bounds: bounds
                .iter()
                .map(|r| Range {
                    min: m.mutate_expr(&r.min),
                    extent: m.mutate_expr(&r.extent),
                })
                .collect(),
            body: Box::new(m.mutate_stmt(body)),
        },
        Stmt::Store {
            buffer,
            index,
            value,
        } => Stmt::Store {
            buffer: buffer.clone(),
            index: m.mutate_expr(index),
            value: m.mutate_expr(value),
        },
        Stmt::Allocate {
            buffer,
            ty,
            size,
            body,
        } => Stmt::Allocate {
            buffer: buffer.clone(),
            ty: *ty,
            size: m.mutate_expr(size),
            body: Box::new(m.mutate_stmt(body)),
        },
        Stmt::Block(stmts) => Stmt::block(stmts.iter().map(|s| m.mutate_stmt(s)).collect()),
        Stmt::IfThenElse {
            cond,
            then,
            otherwise,
        } => Stmt::IfThenElse {
            cond: m.mutate_expr(cond),
            then: Box::new(m.mutate_stmt(then)),
            otherwise: otherwise.as_ref().map(|o| Box::new(m.mutate_stmt(o))),
        },
        Stmt::Evaluate(e) => Stmt::Evaluate(m.mutate_expr(e)),
    }
}

/// `s` rebuilt with each statement directly inside it replaced by `f` of
/// that statement; its own expressions are kept as they are (shared, not
/// copied), and a block keeps its shape (no flattening). For passes that
/// rewrite some statements and only recurse through the others.
///
/// ```text
/// for (x, 0, n) { body }      ==>  for (x, 0, n) { f(body) }
/// if (c) { a } else { b }     ==>  if (c) { f(a) } else { f(b) }
/// store, provide, evaluate    ==>  unchanged
/// ```
pub fn map_child_stmts(s: &Stmt, mut f: impl FnMut(&Stmt) -> Stmt) -> Stmt {
    match s {
        Stmt::LetStmt { name, value, body } => Stmt::LetStmt {
            name: name.clone(),
            value: value.clone(),
            body: Box::new(f(body)),
        },
        Stmt::ProducerConsumer {
            func,
            producing,
            body,
        } => Stmt::ProducerConsumer {
            func: func.clone(),
            producing: *producing,
            body: Box::new(f(body)),
        },
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: extent.clone(),
            kind: *kind,
            body: Box::new(f(body)),
        },
        Stmt::Realize {
            func,
            ty,
            bounds,
            body,
        } => Stmt::Realize {
            func: func.clone(),
            ty: *ty,
            bounds: bounds.clone(),
            body: Box::new(f(body)),
        },
        Stmt::Allocate {
            buffer,
            ty,
            size,
            body,
        } => Stmt::Allocate {
            buffer: buffer.clone(),
            ty: *ty,
            size: size.clone(),
            body: Box::new(f(body)),
        },
        Stmt::Block(stmts) => Stmt::Block(stmts.iter().map(f).collect()),
        Stmt::IfThenElse {
            cond,
            then,
            otherwise,
        } => Stmt::IfThenElse {
            cond: cond.clone(),
            then: Box::new(f(then)),
            otherwise: otherwise.as_ref().map(|o| Box::new(f(o))),
        },
        Stmt::Assert { .. } | Stmt::Provide { .. } | Stmt::Store { .. } | Stmt::Evaluate(_) => {
            s.clone()
        }
    }
}

/// A [`Mutator`] that keeps track of the names bound around the code it
/// rewrites (a pass's own scope: known values of `let`s, ranges of loops,
/// names that hide others). [`mutate_expr_scoped`] and
/// [`mutate_stmt_scoped`] rewrite a `Let`, `LetStmt` or `For` by
/// mutating its value or bounds, calling `enter_*` with the results,
/// mutating the body, and calling `exit_*`; the pass's `mutate_expr` and
/// `mutate_stmt` call them for the nodes they do not rewrite themselves.
///
/// ```text
/// let t = a + 1 in t * 2    enter_let("t", <a + 1 mutated>), mutate `t * 2`, exit_let("t")
/// for (x, 0, w) { ... }     enter_loop("x", 0, w), mutate the body, exit_loop("x")
/// ```
pub trait ScopedMutator: Mutator {
    /// `name` is bound to `value` (already mutated) in the body about to
    /// be mutated.
    fn enter_let(&mut self, _name: &str, _value: &Expr) {}
    /// The body of the innermost `let` of `name` is done.
    fn exit_let(&mut self, _name: &str) {}
    /// The body of loop `var` over `[min, min + extent)` (both already
    /// mutated) is about to be mutated.
    fn enter_loop(&mut self, _var: &str, _min: &Expr, _extent: &Expr) {}
    /// The body of the innermost loop of `var` is done.
    fn exit_loop(&mut self, _var: &str) {}
}

/// Rewrites a `Let` with the scope hooks of [`ScopedMutator`]; other
/// expressions as [`mutate_expr_children`] does.
pub fn mutate_expr_scoped<M: ScopedMutator + ?Sized>(m: &mut M, e: &Expr) -> Expr {
    let ExprKind::Let { name, value, body } = e.kind() else {
        return mutate_expr_children(m, e);
    };
    let v = m.mutate_expr(value);
    m.enter_let(name, &v);
    let b = m.mutate_expr(body);
    m.exit_let(name);
    if v.same_as(value) && b.same_as(body) {
        return e.clone();
    }
    Expr::let_in(name.clone(), v, b)
}

/// Rewrites a `LetStmt` or a `For` with the scope hooks of
/// [`ScopedMutator`]; other statements as [`mutate_stmt_children`] does.
pub fn mutate_stmt_scoped<M: ScopedMutator + ?Sized>(m: &mut M, s: &Stmt) -> Stmt {
    match s {
        Stmt::LetStmt { name, value, body } => {
            let value = m.mutate_expr(value);
            m.enter_let(name, &value);
            let body = Box::new(m.mutate_stmt(body));
            m.exit_let(name);
            Stmt::LetStmt {
                name: name.clone(),
                value,
                body,
            }
        }
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => {
            let (min, extent) = (m.mutate_expr(min), m.mutate_expr(extent));
            m.enter_loop(var, &min, &extent);
            let body = Box::new(m.mutate_stmt(body));
            m.exit_loop(var);
            Stmt::For {
                var: var.clone(),
                min,
                extent,
                kind: *kind,
                body,
            }
        }
        _ => mutate_stmt_children(m, s),
    }
}

/// Replace free occurrences of variables by expressions (respecting
/// shadowing by `Let`/`LetStmt`/`For`).
pub fn substitute(e: &Expr, name: &str, replacement: &Expr) -> Expr {
    struct Subst<'a> {
        name: &'a str,
        replacement: &'a Expr,
    }
    impl Mutator for Subst<'_> {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            match e.kind() {
                ExprKind::Var(n) if n == self.name => self.replacement.clone(),
                ExprKind::Let { name, value, body } if name == self.name => {
                    let v = self.mutate_expr(value);
                    Expr::let_in(name.clone(), v, body.clone())
                }
                _ => mutate_expr_children(self, e),
            }
        }
        fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
            match s {
                Stmt::LetStmt { name, value, body } if name == self.name => Stmt::LetStmt {
                    name: name.clone(),
                    value: self.mutate_expr(value),
                    body: body.clone(),
                },
                Stmt::For {
                    var,
                    min,
                    extent,
                    kind,
                    body,
                } if var == self.name => Stmt::For {
                    var: var.clone(),
                    min: self.mutate_expr(min),
                    extent: self.mutate_expr(extent),
                    kind: *kind,
                    body: body.clone(),
                },
                _ => mutate_stmt_children(self, s),
            }
        }
    }
    Subst { name, replacement }.mutate_expr(e)
}

/// Whether some subexpression of `e` (`e` included) satisfies `pred`,
/// searched outermost first and stopping at the first one: the shared
/// form of the many "does it mention ..." questions passes ask.
pub fn expr_any(e: &Expr, pred: impl FnMut(&Expr) -> bool) -> bool {
    struct Search<P> {
        pred: P,
        found: bool,
    }
    impl<P: FnMut(&Expr) -> bool> Visitor for Search<P> {
        fn visit_expr(&mut self, e: &Expr) {
            if self.found {
                return;
            }
            if (self.pred)(e) {
                self.found = true;
                return;
            }
            walk_expr(self, e);
        }
    }
    let mut search = Search { pred, found: false };
    search.visit_expr(e);
    search.found
}

/// Whether `s` is or contains a loop of any kind.
pub fn has_loop(s: &Stmt) -> bool {
    struct Find(bool);
    impl Visitor for Find {
        fn visit_expr(&mut self, _: &Expr) {}
        fn visit_stmt(&mut self, s: &Stmt) {
            if matches!(s, Stmt::For { .. }) {
                self.0 = true;
            } else if !self.0 {
                walk_stmt(self, s);
            }
        }
    }
    let mut find = Find(false);
    find.visit_stmt(s);
    find.0
}

/// Whether `e` mentions the variable `name` (free or not).
pub fn expr_uses_var(e: &Expr, name: &str) -> bool {
    expr_any(e, |e| matches!(e.kind(), ExprKind::Var(n) if n == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ForKind, Type};

    fn store(buffer: &str, value: Expr) -> Stmt {
        Stmt::Store {
            buffer: buffer.into(),
            index: Expr::var_i32("x"),
            value,
        }
    }

    #[test]
    fn map_child_stmts_rewrites_only_the_enclosed_statements() {
        let extent = Expr::add(Expr::var_i32("w"), Expr::i32(1));
        let inner = Stmt::Block(vec![store("a", Expr::i32(1)), store("b", Expr::i32(2))]);
        let for_loop = Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: extent.clone(),
            kind: ForKind::Serial,
            body: Box::new(inner),
        };
        let renamed = |s: &Stmt| match s {
            Stmt::Store { index, value, .. } => Stmt::Store {
                buffer: "c".into(),
                index: index.clone(),
                value: value.clone(),
            },
            other => other.clone(),
        };
        // The loop's body (a block) is handed over whole; its bounds are
        // the same expressions, not copies.
        let Stmt::For {
            extent: e, body, ..
        } = map_child_stmts(&for_loop, |b| map_child_stmts(b, renamed))
        else {
            panic!("a loop stays a loop");
        };
        assert!(e.same_as(&extent));
        assert_eq!(body.to_string(), "c[x] = 1\nc[x] = 2\n");
        // Statements with nothing inside come back as they are.
        let leaf = store("a", Expr::var(Type::I32, "v"));
        assert_eq!(map_child_stmts(&leaf, |_| unreachable!()), leaf);
    }
}
