//! Symbolic arithmetic over Argent's IR, used by lowering and backends.
//!
//! - [`eval`]: the scalar semantics of every operator (wrapping integers,
//!   Euclidean division, IEEE single floats), shared by constant folding,
//!   the lowered-IR executor and the tests.
//! - [`simplify`]: a rule-based simplifier for expressions and statements.
//! - [`interval`]: symbolic interval (bounds) analysis and the regions of a
//!   func or input that a statement reads ([`interval::boxes_required`]).
//! - [`cse`]: common-subexpression elimination into `let`s.
//!
//! Everything here is pure computation on IR values (sans-IO), so it
//! builds for `wasm32-unknown-unknown`.

pub mod cse;
pub mod eval;
/// The fast hasher of the compiler's tables, which moved to `argent-ir`
/// (the backend uses it too); re-exported for the passes that name it here.
pub use argent_ir::fast_hash;
pub mod interval;
pub mod simplify;

/// The reference interpreter, whose scalar semantics [`eval`] delegates to;
/// re-exported so the lowered-IR executor can use its `Buffer` and `Value`
/// types (and compare with it directly) through this crate.
pub use argent_interp as interp;

pub use cse::{cse, cse_stmt};
pub use interval::{Interval, Scope, bounds_of_expr_in_scope, boxes_required, boxes_required_expr};
pub use simplify::{simplify, simplify_stmt};

use argent_ir::visit::{
    Mutator, Visitor, mutate_expr_children, mutate_stmt_children, walk_expr, walk_stmt,
};
use argent_ir::{CallTarget, Expr, ExprKind, Stmt};
use fast_hash::FastHasher;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// Whether `e` is a constant: an integer or float immediate, or a
/// broadcast of one.
pub fn is_const(e: &Expr) -> bool {
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) => true,
        ExprKind::Broadcast { value, .. } => is_const(value),
        _ => false,
    }
}

/// Whether `e` computes with values from data: a read of a func or an
/// input, a load, or a conversion. Such values wrap in `i32` as the
/// language defines, where index arithmetic (variables, buffer fields) is
/// assumed not to overflow, as in Halide; order reasoning on differences
/// (the simplifier's, loop partitioning's) tells the two apart by this.
pub fn computes_with_data(e: &Expr) -> bool {
    argent_ir::visit::expr_any(e, |e| match e.kind() {
        ExprKind::Load { .. } | ExprKind::Cast { .. } => true,
        ExprKind::Call { target, .. } => !matches!(target, CallTarget::Intrinsic(_)),
        _ => false,
    })
}

/// The value of an integer (or bool) constant, looking through broadcasts.
pub fn const_int(e: &Expr) -> Option<i64> {
    match e.kind() {
        ExprKind::IntImm(v) => Some(*v),
        ExprKind::Broadcast { value, .. } => const_int(value),
        _ => None,
    }
}

/// Structural equality: same types and same tree. Shared nodes compare in
/// constant time, so this is cheap on the mostly shared trees passes build.
pub fn expr_eq(a: &Expr, b: &Expr) -> bool {
    a.same_as(b) || expr_cmp(a, b) == Ordering::Equal
}

fn kind_rank(k: &ExprKind) -> u8 {
    match k {
        ExprKind::IntImm(_) => 0,
        ExprKind::FloatImm(_) => 1,
        ExprKind::Var(_) => 2,
        ExprKind::Cast { .. } => 3,
        ExprKind::Unary { .. } => 4,
        ExprKind::Binary { .. } => 5,
        ExprKind::Select { .. } => 6,
        ExprKind::Call { .. } => 7,
        ExprKind::Let { .. } => 8,
        ExprKind::Load { .. } => 9,
        ExprKind::Ramp { .. } => 10,
        ExprKind::Broadcast { .. } => 11,
        ExprKind::Shuffle { .. } => 12,
    }
}

fn cmp_list(a: &[Expr], b: &[Expr]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| {
        for (x, y) in a.iter().zip(b) {
            let o = expr_cmp(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    })
}

fn target_key(t: &CallTarget) -> (u8, &str) {
    match t {
        CallTarget::Func(n) => (0, n.as_str()),
        CallTarget::Input(n) => (1, n.as_str()),
        CallTarget::Intrinsic(i) => (2, i.name()),
    }
}

/// A total order on expressions, used to put the operands of commutative
/// operators into a canonical order. Variables compare by name, so
/// `y + x` and `x + y` simplify to the same tree.
pub fn expr_cmp(a: &Expr, b: &Expr) -> Ordering {
    if a.same_as(b) {
        return Ordering::Equal;
    }
    let (ka, kb) = (a.kind(), b.kind());
    let o = kind_rank(ka)
        .cmp(&kind_rank(kb))
        .then_with(|| a.ty().cmp(&b.ty()));
    if o != Ordering::Equal {
        return o;
    }
    use ExprKind::*;
    match (ka, kb) {
        (IntImm(x), IntImm(y)) => x.cmp(y),
        (FloatImm(x), FloatImm(y)) => x.total_cmp(y),
        (Var(x), Var(y)) => x.cmp(y),
        (
            Cast {
                value: x,
                saturating: sx,
            },
            Cast {
                value: y,
                saturating: sy,
            },
        ) => sx.cmp(sy).then_with(|| expr_cmp(x, y)),
        (Unary { op: ox, value: x }, Unary { op: oy, value: y }) => {
            (*ox as u8).cmp(&(*oy as u8)).then_with(|| expr_cmp(x, y))
        }
        (
            Binary {
                op: ox,
                a: ax,
                b: bx,
            },
            Binary {
                op: oy,
                a: ay,
                b: by,
            },
        ) => (*ox as u8)
            .cmp(&(*oy as u8))
            .then_with(|| expr_cmp(ax, ay))
            .then_with(|| expr_cmp(bx, by)),
        (
            Select {
                cond: c1,
                then: t1,
                otherwise: o1,
            },
            Select {
                cond: c2,
                then: t2,
                otherwise: o2,
            },
        ) => expr_cmp(c1, c2)
            .then_with(|| expr_cmp(t1, t2))
            .then_with(|| expr_cmp(o1, o2)),
        (
            Call {
                target: t1,
                args: a1,
            },
            Call {
                target: t2,
                args: a2,
            },
        ) => target_key(t1)
            .cmp(&target_key(t2))
            .then_with(|| cmp_list(a1, a2)),
        (
            Let {
                name: n1,
                value: v1,
                body: b1,
            },
            Let {
                name: n2,
                value: v2,
                body: b2,
            },
        ) => n1
            .cmp(n2)
            .then_with(|| expr_cmp(v1, v2))
            .then_with(|| expr_cmp(b1, b2)),
        (
            Load {
                buffer: b1,
                index: i1,
            },
            Load {
                buffer: b2,
                index: i2,
            },
        ) => b1.cmp(b2).then_with(|| expr_cmp(i1, i2)),
        (
            Ramp {
                base: b1,
                stride: s1,
                lanes: l1,
            },
            Ramp {
                base: b2,
                stride: s2,
                lanes: l2,
            },
        ) => l1
            .cmp(l2)
            .then_with(|| expr_cmp(b1, b2))
            .then_with(|| expr_cmp(s1, s2)),
        (
            Broadcast {
                value: v1,
                lanes: l1,
            },
            Broadcast {
                value: v2,
                lanes: l2,
            },
        ) => l1.cmp(l2).then_with(|| expr_cmp(v1, v2)),
        (
            Shuffle {
                vectors: v1,
                indices: i1,
            },
            Shuffle {
                vectors: v2,
                indices: i2,
            },
        ) => i1.cmp(i2).then_with(|| cmp_list(v1, v2)),
        _ => Ordering::Equal,
    }
}

struct SubstituteMany<'a, S> {
    map: &'a HashMap<String, Expr, S>,
    /// Names currently rebound by an inner `Let`/`LetStmt`/`For`, which
    /// hide the outer binding being replaced.
    shadowed: Vec<String>,
}

impl<S: std::hash::BuildHasher> SubstituteMany<'_, S> {
    fn is_replaced(&self, name: &str) -> Option<&Expr> {
        if self.shadowed.iter().any(|s| s == name) {
            return None;
        }
        self.map.get(name)
    }
}

impl<S: std::hash::BuildHasher> Mutator for SubstituteMany<'_, S> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        match e.kind() {
            ExprKind::Var(n) => match self.is_replaced(n) {
                Some(r) => r.clone(),
                None => e.clone(),
            },
            ExprKind::Let { name, value, body } => {
                let v = self.mutate_expr(value);
                self.shadowed.push(name.clone());
                let b = self.mutate_expr(body);
                self.shadowed.pop();
                if v.same_as(value) && b.same_as(body) {
                    return e.clone();
                }
                Expr::let_in(name.clone(), v, b)
            }
            _ => mutate_expr_children(self, e),
        }
    }
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::LetStmt { name, value, body } => {
                let value = self.mutate_expr(value);
                self.shadowed.push(name.clone());
                let body = Box::new(self.mutate_stmt(body));
                self.shadowed.pop();
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
                let (min, extent) = (self.mutate_expr(min), self.mutate_expr(extent));
                self.shadowed.push(var.clone());
                let body = Box::new(self.mutate_stmt(body));
                self.shadowed.pop();
                Stmt::For {
                    var: var.clone(),
                    min,
                    extent,
                    kind: *kind,
                    body,
                }
            }
            _ => mutate_stmt_children(self, s),
        }
    }
}

/// Replace free occurrences of several variables at once (respecting
/// shadowing by inner `Let`s). The replacements are not themselves
/// searched for further substitutions.
pub fn substitute_many<S: std::hash::BuildHasher>(
    e: &Expr,
    map: &HashMap<String, Expr, S>,
) -> Expr {
    if map.is_empty() {
        return e.clone();
    }
    SubstituteMany {
        map,
        shadowed: Vec::new(),
    }
    .mutate_expr(e)
}

/// [`substitute_many`] on a statement (respecting shadowing by `LetStmt`
/// and `For`).
pub fn substitute_many_stmt<S: std::hash::BuildHasher>(
    s: &Stmt,
    map: &HashMap<String, Expr, S>,
) -> Stmt {
    if map.is_empty() {
        return s.clone();
    }
    SubstituteMany {
        map,
        shadowed: Vec::new(),
    }
    .mutate_stmt(s)
}

/// Replace free occurrences of `name` in a statement by `replacement`.
pub fn substitute_stmt(s: &Stmt, name: &str, replacement: &Expr) -> Stmt {
    let mut map = HashMap::new();
    map.insert(name.to_string(), replacement.clone());
    substitute_many_stmt(s, &map)
}

/// How many times the variable `name` occurs in `e` (bound or free).
pub fn count_var_uses(e: &Expr, name: &str) -> usize {
    struct Counter<'a> {
        name: &'a str,
        count: usize,
    }
    impl Visitor for Counter<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Var(n) = e.kind()
                && n == self.name
            {
                self.count += 1;
            }
            walk_expr(self, e);
        }
    }
    let mut c = Counter { name, count: 0 };
    c.visit_expr(e);
    c.count
}

/// Whether a statement mentions the variable `name` anywhere.
pub fn stmt_uses_var(s: &Stmt, name: &str) -> bool {
    struct Finder<'a> {
        name: &'a str,
        found: bool,
    }
    impl Visitor for Finder<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if !self.found && argent_ir::visit::expr_uses_var(e, self.name) {
                self.found = true;
            }
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            if !self.found {
                walk_stmt(self, s);
            }
        }
    }
    let mut f = Finder { name, found: false };
    f.visit_stmt(s);
    f.found
}

/// A hash of `e`'s structure: expressions equal by [`expr_eq`] hash
/// equally. The key of the memos of passes that meet the same expression
/// many times (a stencil's taps): partitioning's proofs, flattening's
/// indices.
pub fn structural_hash(e: &Expr) -> u64 {
    fn walk(e: &Expr, h: &mut FastHasher) {
        e.ty().hash(h);
        std::mem::discriminant(e.kind()).hash(h);
        match e.kind() {
            ExprKind::IntImm(v) => v.hash(h),
            ExprKind::FloatImm(v) => v.to_bits().hash(h),
            ExprKind::Var(n) => n.hash(h),
            ExprKind::Cast { value, saturating } => {
                saturating.hash(h);
                walk(value, h);
            }
            ExprKind::Unary { op, value } => {
                op.hash(h);
                walk(value, h);
            }
            ExprKind::Binary { op, a, b } => {
                op.hash(h);
                walk(a, h);
                walk(b, h);
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                walk(cond, h);
                walk(then, h);
                walk(otherwise, h);
            }
            ExprKind::Call { target, args } => {
                target.hash(h);
                args.iter().for_each(|a| walk(a, h));
            }
            ExprKind::Let { name, value, body } => {
                name.hash(h);
                walk(value, h);
                walk(body, h);
            }
            ExprKind::Load { buffer, index } => {
                buffer.hash(h);
                walk(index, h);
            }
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => {
                lanes.hash(h);
                walk(base, h);
                walk(stride, h);
            }
            ExprKind::Broadcast { value, lanes } => {
                lanes.hash(h);
                walk(value, h);
            }
            ExprKind::Shuffle { vectors, indices } => {
                indices.hash(h);
                vectors.iter().for_each(|v| walk(v, h));
            }
        }
    }
    let mut h = FastHasher::default();
    walk(e, &mut h);
    h.finish()
}

/// The names of all variables occurring in `e`, without duplicates.
pub fn vars_of(e: &Expr) -> Vec<String> {
    var_names(e).into_iter().map(str::to_string).collect()
}

/// [`vars_of`] borrowing the names from `e`: most callers only look them
/// up, and copying each one cost partitioning a tenth of its
/// substitutions.
pub fn var_names(e: &Expr) -> Vec<&str> {
    fn collect<'e>(e: &'e Expr, names: &mut Vec<&'e str>) {
        if let ExprKind::Var(n) = e.kind() {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        } else {
            argent_ir::visit::for_each_child(e, |c| collect(c, names));
        }
    }
    let mut names = Vec::new();
    collect(e, &mut names);
    names
}

/// Whether a statement binds (with `LetStmt`, `For` or an expression
/// `Let`) any of `names`; substituting an expression mentioning such a
/// name into the statement would capture it.
pub fn stmt_binds_any<N: AsRef<str>>(s: &Stmt, names: &[N]) -> bool {
    struct Binds<'a, N> {
        names: &'a [N],
        found: bool,
    }
    impl<N: AsRef<str>> Binds<'_, N> {
        fn binds(&self, name: &str) -> bool {
            self.names.iter().any(|n| n.as_ref() == name)
        }
    }
    impl<N: AsRef<str>> Visitor for Binds<'_, N> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Let { name, .. } = e.kind()
                && self.binds(name)
            {
                self.found = true;
            }
            if !self.found {
                walk_expr(self, e);
            }
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::LetStmt { name, .. } | Stmt::For { var: name, .. } if self.binds(name) => {
                    self.found = true;
                }
                _ => {}
            }
            if !self.found {
                walk_stmt(self, s);
            }
        }
    }
    let mut b = Binds {
        names,
        found: false,
    };
    b.visit_stmt(s);
    b.found
}

/// Whether an expression binds (with `Let`) any of `names`.
pub fn expr_binds_any<N: AsRef<str>>(e: &Expr, names: &[N]) -> bool {
    stmt_binds_any(&Stmt::Evaluate(e.clone()), names)
}
