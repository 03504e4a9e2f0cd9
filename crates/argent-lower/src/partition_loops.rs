//! Loop partitioning: a loop whose body chooses between a boundary case and
//! a `likely` steady-state case (boundary conditions' clamps and selects,
//! guards of split loops) is split into a prologue, a steady-state loop and
//! an epilogue, so that the steady state runs without the clamps, selects
//! or conditions.
//!
//! A `min`/`max` with a `likely` operand (or an operand that is itself
//! such a `min`/`max`, as in `clamp(likely(x), lo, hi)`), a `select` whose
//! condition or one side is `likely`, and an `if (likely(c))` each give a
//! condition under which the likely side is taken. Each condition that is
//! linear in the loop variable (after substituting `let`s, and holding for
//! every value of inner loop variables) bounds the steady state; the
//! steady-state loop replaces those choices by their likely side.
//! Partitioning never changes results: the prologue and epilogue keep the
//! original body.
//!
//! A loop with inner (serial or parallel) loops is not split: splitting
//! would copy its whole body, every stage computed inside it, into the
//! prologue and epilogue, while its own choices run once per iteration.
//! Only choices inside its inner loops count, and each innermost
//! statement holding one is versioned instead, in place:
//! `if (x.steady.min <= x && x < x.steady.end) { steady form } else {
//! original }`, a branch per iteration of the outer loops.
//!
//! ```text
//! for (x, 0, w) {                           let x.steady.min = min(1, w)
//!   f[x] = in[max(min(likely(x - 1),        let x.steady.end = max(min(w, in.extent.0 + 1), x.steady.min)
//!                 in.extent.0 - 1), 0)]  ==> for (x, 0, x.steady.min) { <original body> }
//! }                                         for (x, x.steady.min, x.steady.end - x.steady.min) { f[x] = in[x - 1] }
//!                                           for (x, x.steady.end, w - x.steady.end) { <original body> }
//! ```

use argent_arith::fast_hash::{FastHashMap, FastHashSet, FastHasher};
use argent_arith::interval::{Interval, Scope, bounds_of_expr_in_scope};
use argent_arith::simplify::split_linear;
use argent_arith::{computes_with_data, const_int, simplify, structural_hash, var_names, vars_of};
use argent_ir::visit::{
    Mutator, ScopedMutator, Visitor, expr_any, expr_uses_var, map_child_stmts,
    mutate_expr_children, mutate_expr_scoped, mutate_stmt_children, mutate_stmt_scoped,
    names_bound_in, substitute, walk_expr, walk_stmt,
};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, ForKind, Intrinsic, Stmt, Type, UnaryOp};
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// Partition every serial or parallel loop of `s` whose body has `likely`
/// boundary cases that depend on the loop variable.
pub fn partition_loops(s: &Stmt) -> Stmt {
    partition_loops_versioning_over(s, VERSIONING_MIN_NODES)
}

/// [`partition_loops`], versioning the bodies over `versioning_min_nodes`
/// nodes that have inner loops.
fn partition_loops_versioning_over(s: &Stmt, versioning_min_nodes: usize) -> Stmt {
    // No simplification here: the `simplify` pass after vectorisation
    // folds constant steady-state bounds and drops empty pieces. Doing it
    // here as well cost a tenth of the blur's lowering, and it inlined
    // let-bound values into the sides of `select`s, where their loads
    // kept `vectorize` from widening the select (camera_pipe's green
    // interpolation stayed scalar).
    Partitioner {
        vector_guards_only: false,
        enclosing: Scope::new(),
        versioning_min_nodes,
        proofs: Rc::default(),
        lane_names: FastHashSet::default(),
    }
    .mutate_stmt(s)
}

struct Partitioner {
    /// Inside a prologue or epilogue: only vectorised loops get a guarded
    /// steady-state copy (see [`Partitioner::guard_vector_loop`]); serial
    /// loops are not partitioned again, which would multiply the code by
    /// three per nesting level.
    vector_guards_only: bool,
    /// Ranges of the loops around the current point, which let a guarded
    /// vector loop drop the clamps that hold for every tile (`max(x_min,
    /// x_min + xo * 8 + xi)` with `xo >= 0`).
    enclosing: Scope,
    /// See [`VERSIONING_MIN_NODES`].
    versioning_min_nodes: usize,
    /// The provers' memo, shared by the whole pass.
    proofs: Rc<RefCell<ProofMemo>>,
    /// Names whose values differ across the lanes of an enclosing
    /// vectorised loop: its variable, and the lets and loop variables
    /// inside it that depend on it.
    lane_names: FastHashSet<String>,
}

impl Partitioner {
    /// The partitioner of a prologue, an epilogue or the original form of
    /// a versioned statement: it only guards vectorised loops.
    fn for_boundary_pieces(&self) -> Partitioner {
        Partitioner {
            vector_guards_only: true,
            enclosing: self.enclosing.clone(),
            versioning_min_nodes: self.versioning_min_nodes,
            proofs: Rc::clone(&self.proofs),
            lane_names: self.lane_names.clone(),
        }
    }

    /// A vectorised loop of constant extent whose body has a `likely`
    /// guard (and perhaps clamps) cannot be split into pieces (its lanes
    /// run as one), but all its lanes are usually in the steady state. It becomes
    /// `if (every lane is steady) { vectorized steady body } else {
    /// original loop }`, so that boundary tiles (the first and last tile
    /// columns, whose consumers keep their guards) still run vector code
    /// for all but their boundary vectors. The steady state is an
    /// interval of the loop variable, so checking its first and last lane
    /// suffices.
    ///
    /// ```text
    /// vectorized (xi, 0, 8) {              if ((x0 + 7) < w) {
    ///   if (likely(x0 + xi < w)) {    ==>    vectorized (xi, 0, 8) { f[x0 + xi] = ... }
    ///     f[x0 + xi] = ...                 } else { <the original loop> }
    ///   }
    /// }
    /// ```
    fn guard_vector_loop(&mut self, s: &Stmt) -> Option<Stmt> {
        let Stmt::For {
            var,
            min,
            extent,
            kind: ForKind::Vectorized,
            body,
        } = s
        else {
            return None;
        };
        let lanes = const_int(&simplify(extent))?;
        if lanes <= 1 || !has_likely_guard(body) {
            return None;
        }
        let mut steady = Steady {
            var,
            inner_names: names_bound_in(body),
            lane_names: self.lane_names.clone(),
            only_inside_loops: false,
            versioning: false,
            in_leaf: false,
            recording_only: false,
            steady_lets: Vec::new(),
            steady_in_scope: Vec::new(),
            dependent: FastHashMap::default(),
            let_dependent: Vec::new(),
            loop_dependent: Vec::new(),
            lets: Vec::new(),
            loops: Vec::new(),
            lower: Vec::new(),
            upper: Vec::new(),
            facts: Vec::new(),
            context: 0,
            outer_contexts: Vec::new(),
            next_context: 0,
            solved: RefCell::default(),
            inner_scopes: RefCell::default(),
            loop_contexts: Vec::new(),
        };
        let steady_body = steady.mutate_stmt(body);
        if steady.lower.is_empty() && steady.upper.is_empty() {
            return None;
        }
        let last = simplify(&Expr::add(min.clone(), Expr::i32(lanes - 1)));
        let scope = self
            .enclosing
            .clone()
            .with(var.clone(), Interval::new(min.clone(), last.clone()));
        let steady_body = Prover::new(&steady.facts, scope, &self.proofs).mutate_stmt(&steady_body);
        let every_lane_steady = steady
            .lower
            .iter()
            .map(|b| Expr::le(b.clone(), min.clone()))
            .chain(
                steady
                    .upper
                    .iter()
                    .map(|b| Expr::le(last.clone(), b.clone())),
            )
            .map(|c| simplify(&c))
            .reduce(Expr::and)?;
        let vector_loop = |body: Stmt| Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: extent.clone(),
            kind: ForKind::Vectorized,
            body: Box::new(body),
        };
        Some(Stmt::IfThenElse {
            cond: every_lane_steady,
            then: Box::new(vector_loop(steady_body)),
            otherwise: Some(Box::new(s.clone())),
        })
    }
}

/// `var.steady.min <= var && var < var.steady.end`: the condition of a
/// statement versioned on the steady state of loop `var`.
fn version_cond(var: &str) -> Expr {
    let v = Expr::var_i32(var);
    Expr::and(
        Expr::le(Expr::var_i32(format!("{var}.steady.min")), v.clone()),
        Expr::lt(v, Expr::var_i32(format!("{var}.steady.end"))),
    )
}

/// The loop variable of a [`version_cond`].
fn version_var(cond: &Expr) -> Option<&str> {
    let ExprKind::Binary {
        op: BinOp::And,
        a,
        b,
    } = cond.kind()
    else {
        return None;
    };
    let (
        ExprKind::Binary {
            op: BinOp::Le,
            a: lo,
            b: v1,
        },
        ExprKind::Binary {
            op: BinOp::Lt,
            a: v2,
            b: hi,
        },
    ) = (a.kind(), b.kind())
    else {
        return None;
    };
    let var = v1.as_var()?;
    (v2.as_var() == Some(var)
        && lo.as_var().and_then(|n| n.strip_prefix(var)) == Some(".steady.min")
        && hi.as_var().and_then(|n| n.strip_prefix(var)) == Some(".steady.end"))
    .then_some(var)
}

/// The smallest loop body (in IR nodes) that is versioned rather than
/// split: splitting a small body costs little code, and its pieces' loop
/// ranges tell the simplifier more (a producer's extent per tile becomes
/// a constant in the steady tiles).
const VERSIONING_MIN_NODES: usize = 2000;

/// Whether `s` has more than `limit` statement and expression nodes.
fn stmt_nodes_over(s: &Stmt, limit: usize) -> bool {
    struct Count(usize, usize);
    impl Visitor for Count {
        fn visit_expr(&mut self, e: &Expr) {
            self.0 += 1;
            if self.0 <= self.1 {
                walk_expr(self, e);
            }
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            self.0 += 1;
            if self.0 <= self.1 {
                walk_stmt(self, s);
            }
        }
    }
    let mut count = Count(0, limit);
    count.visit_stmt(s);
    count.0 > limit
}

/// Whether `s` contains a serial or parallel loop outside vectorised and
/// unrolled loops (those become straight-line code: a branch inside them
/// would run for every vector).
fn has_loop(s: &Stmt) -> bool {
    struct Find(bool);
    impl Visitor for Find {
        fn visit_expr(&mut self, _: &Expr) {}
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::For {
                    kind: ForKind::Serial | ForKind::Parallel,
                    ..
                } => self.0 = true,
                // A loop inside a vectorised one runs per vector.
                Stmt::For { .. } => {}
                _ => walk_stmt(self, s),
            }
        }
    }
    let mut find = Find(false);
    find.visit_stmt(s);
    find.0
}

/// Whether `s` has an `if (likely(..))`: the guard of a split loop, which
/// keeps a vectorised loop serial (its condition varies across lanes).
/// Clamps alone vectorise as they are (as gathers), so a guarded copy of a
/// loop without a guard would cost compile time (the simplifier's work
/// grows with the code) for little speed.
fn has_likely_guard(s: &Stmt) -> bool {
    struct Find(bool);
    impl Visitor for Find {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::IfThenElse { cond, .. } = s
                && is_likely_call(cond).is_some()
            {
                self.0 = true;
            }
            if !self.0 {
                walk_stmt(self, s);
            }
        }
    }
    let mut find = Find(false);
    find.visit_stmt(s);
    find.0
}

impl Mutator for Partitioner {
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        let (var, min, extent, kind) = match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                ..
            } => (var, min, extent, kind),
            Stmt::LetStmt { name, value, .. } if self.varies_across_lanes(value) => {
                return self.with_lane_name(name, |p| p.partition(s));
            }
            _ => return self.partition(s),
        };
        let last = simplify(&Expr::sub(
            Expr::add(min.clone(), extent.clone()),
            Expr::i32(1),
        ));
        self.enclosing
            .push(var.clone(), Interval::new(min.clone(), last));
        let result = if *kind == ForKind::Vectorized
            || self.varies_across_lanes(min)
            || self.varies_across_lanes(extent)
        {
            self.with_lane_name(var, |p| p.partition(s))
        } else {
            self.partition(s)
        };
        self.enclosing.pop(var);
        result
    }
}

impl Partitioner {
    /// Whether `e` mentions a name that differs across the lanes of an
    /// enclosing vectorised loop.
    fn varies_across_lanes(&self, e: &Expr) -> bool {
        !self.lane_names.is_empty() && var_names(e).iter().any(|n| self.lane_names.contains(*n))
    }

    /// `f` run with `name` counted among the [`Partitioner::lane_names`].
    fn with_lane_name(&mut self, name: &str, f: impl FnOnce(&mut Self) -> Stmt) -> Stmt {
        let added = self.lane_names.insert(name.to_string());
        let result = f(self);
        if added {
            self.lane_names.remove(name);
        }
        result
    }

    /// Partitions `s` when it is a loop with boundary cases; recurses
    /// into it otherwise.
    fn partition(&mut self, s: &Stmt) -> Stmt {
        if let Stmt::IfThenElse {
            cond,
            then,
            otherwise: Some(otherwise),
        } = s
            && version_var(cond).is_some()
        {
            // The original form runs only at the boundary: like a
            // prologue, it gets guarded vector copies only.
            let otherwise = self.for_boundary_pieces().mutate_stmt(otherwise);
            return Stmt::IfThenElse {
                cond: cond.clone(),
                then: Box::new(self.mutate_stmt(then)),
                otherwise: Some(Box::new(otherwise)),
            };
        }
        if let Some(guarded) = self.guard_vector_loop(s) {
            return guarded;
        }
        let Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } = s
        else {
            return mutate_stmt_children(self, s);
        };
        // A loop whose range differs across the lanes of a vectorised loop
        // around it would give its pieces different ranges in different
        // lanes, which `vectorize` cannot widen; left whole, it runs once
        // per lane (a one-point loop) or keeps its clamps as gathers.
        if self.vector_guards_only
            || !matches!(kind, ForKind::Serial | ForKind::Parallel)
            || self.lane_names.contains(var)
        {
            return mutate_stmt_children(self, s);
        }
        // A large body with inner loops (many stages computed inside the
        // loop) is versioned rather than copied into three pieces.
        let versioning = has_loop(body) && stmt_nodes_over(body, self.versioning_min_nodes);
        let mut steady = Steady {
            var,
            inner_names: names_bound_in(body),
            lane_names: self.lane_names.clone(),
            only_inside_loops: versioning,
            versioning,
            in_leaf: false,
            recording_only: false,
            steady_lets: Vec::new(),
            steady_in_scope: Vec::new(),
            dependent: FastHashMap::default(),
            let_dependent: Vec::new(),
            loop_dependent: Vec::new(),
            lets: Vec::new(),
            loops: Vec::new(),
            lower: Vec::new(),
            upper: Vec::new(),
            facts: Vec::new(),
            context: 0,
            outer_contexts: Vec::new(),
            next_context: 0,
            solved: RefCell::default(),
            inner_scopes: RefCell::default(),
            loop_contexts: Vec::new(),
        };
        let steady_body = steady.mutate_stmt(body);
        if steady.lower.is_empty() && steady.upper.is_empty() {
            return mutate_stmt_children(self, s);
        }
        let last = simplify(&Expr::sub(
            Expr::add(min.clone(), extent.clone()),
            Expr::i32(1),
        ));
        let scope = Scope::new().with(var.clone(), Interval::new(min.clone(), last));
        let mut prover = Prover::new(&steady.facts, scope, &self.proofs);
        if steady.versioning {
            prover.versioned = Some(var);
            prover.steady_lets = &steady.steady_lets;
        }
        let steady_body = prover.mutate_stmt(&steady_body);
        // Outer loops first: the steady state's body is partitioned
        // afterwards (on conditions of inner loop variables). The prologue
        // and epilogue keep the original body: they are short, and
        // partitioning them too would multiply the code by three per
        // nesting level; only their vectorised loops get a guarded
        // steady-state copy.
        let end = simplify(&Expr::add(min.clone(), extent.clone()));
        // A side without bounds has no boundary piece: the steady state
        // starts at the loop's start (ends at its end). Clamping the
        // start to the end as well, `min(x.min, x.min + extent)`, would
        // keep a prologue that runs for no extent the loop can have (no
        // extent is negative), with a whole copy of the body: the tiles
        // and strips of a split loop have a ragged end only.
        let lo = if steady.lower.is_empty() {
            min.clone()
        } else {
            let lo = steady
                .lower
                .iter()
                .fold(min.clone(), |acc, b| Expr::max(acc, b.clone()));
            simplify(&Expr::min(lo, end.clone()))
        };
        let (lo_name, hi_name) = (format!("{var}.steady.min"), format!("{var}.steady.end"));
        let (lo_var, hi_var) = (
            Expr::var_i32(lo_name.clone()),
            Expr::var_i32(hi_name.clone()),
        );
        let hi = if steady.upper.is_empty() {
            end.clone()
        } else {
            let hi = steady.upper.iter().fold(end.clone(), |acc, b| {
                Expr::min(acc, Expr::add(b.clone(), Expr::i32(1)))
            });
            simplify(&Expr::max(Expr::min(hi, end.clone()), lo_var.clone()))
        };
        if steady.versioning {
            // One loop whose innermost statements with boundary cases each
            // choose between their steady state and their original form:
            // a loop with inner loops would otherwise copy its whole body
            // (every stage computed inside it) into a prologue and an
            // epilogue, for a branch per iteration saved.
            let body = self.mutate_stmt(&steady_body);
            return Stmt::LetStmt {
                name: lo_name,
                value: lo,
                body: Box::new(Stmt::LetStmt {
                    name: hi_name,
                    value: hi,
                    body: Box::new(Stmt::For {
                        var: var.clone(),
                        min: min.clone(),
                        extent: extent.clone(),
                        kind: *kind,
                        body: Box::new(body),
                    }),
                }),
            };
        }
        let body = self.for_boundary_pieces().mutate_stmt(body);
        let steady_body = self.mutate_stmt(&steady_body);
        let piece = |from: &Expr, to: &Expr, body: Stmt| Stmt::For {
            var: var.clone(),
            min: from.clone(),
            extent: simplify(&Expr::sub(to.clone(), from.clone())),
            kind: *kind,
            body: Box::new(body),
        };
        let mut pieces = Vec::with_capacity(3);
        if !steady.lower.is_empty() {
            pieces.push(piece(min, &lo_var, body.clone()));
        }
        pieces.push(piece(&lo_var, &hi_var, steady_body));
        if !steady.upper.is_empty() {
            pieces.push(piece(&hi_var, &end, body));
        }
        let loops = Stmt::block(pieces);
        Stmt::LetStmt {
            name: lo_name,
            value: lo,
            body: Box::new(Stmt::LetStmt {
                name: hi_name,
                value: hi,
                body: Box::new(loops),
            }),
        }
    }
}

/// Replace the names bound by `lets` (outermost first) by their values,
/// transitively. Only the lets `e` actually mentions are visited, one
/// substitution pass per level of let nesting.
/// `None` when the result would exceed [`MAX_NODES`] (lets that use each
/// other several times grow exponentially when substituted).
fn substitute_lets(lets: &[(String, Expr)], e: &Expr) -> Option<Expr> {
    let mut e = e.clone();
    for _ in 0..=lets.len() {
        // Inner bindings hide outer ones of the same name.
        let used: FastHashMap<String, Expr> = var_names(&e)
            .into_iter()
            .filter_map(|n| {
                lets.iter()
                    .rev()
                    .find(|(name, _)| name == n)
                    .map(|(_, v)| (n.to_string(), v.clone()))
            })
            .collect();
        if used.is_empty() {
            break;
        }
        e = argent_arith::substitute_many(&e, &used);
        if node_count(&e) > MAX_NODES {
            return None;
        }
    }
    Some(e)
}

/// The largest condition (in nodes) that partitioning reasons about.
const MAX_NODES: usize = 400;

fn node_count(e: &Expr) -> usize {
    struct Count(usize);
    impl Visitor for Count {
        fn visit_expr(&mut self, e: &Expr) {
            self.0 += 1;
            if self.0 <= MAX_NODES {
                walk_expr(self, e);
            }
        }
    }
    let mut c = Count(0);
    c.visit_expr(e);
    c.0
}

/// Whether `e` has an integer constant within `2^30` of the ends of the
/// `i32` range: what a difference of two values looks like when it
/// wrapped (see `Prover::order_of_difference`).
fn could_have_wrapped(e: &Expr) -> bool {
    expr_any(e, |e| {
        const_int(e).is_some_and(|v| v.unsigned_abs() >= 1 << 30)
    })
}

fn is_likely_call(e: &Expr) -> Option<&Expr> {
    match e.kind() {
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } if args.len() == 1 => Some(&args[0]),
        _ => None,
    }
}

/// Whether `e` has a `likely` call anywhere inside.
fn contains_likely(e: &Expr) -> bool {
    expr_any(e, |e| is_likely_call(e).is_some())
}

/// Whether `e` is a `likely` call or a min/max with such an operand.
fn is_likely(e: &Expr) -> bool {
    match e.kind() {
        _ if is_likely_call(e).is_some() => true,
        ExprKind::Binary {
            op: BinOp::Min | BinOp::Max,
            a,
            b,
        } => is_likely(a) || is_likely(b),
        _ => false,
    }
}

/// The logical negation of a condition, pushed through `&&`, `||` and
/// integer comparisons (`!(a < b)` is `b <= a` for integers).
fn negate(c: &Expr) -> Expr {
    match c.kind() {
        ExprKind::Binary { op, a, b } if a.ty().is_integer() => match op {
            BinOp::Lt => Expr::le(b.clone(), a.clone()),
            BinOp::Le => Expr::lt(b.clone(), a.clone()),
            BinOp::Gt => Expr::le(a.clone(), b.clone()),
            BinOp::Ge => Expr::lt(a.clone(), b.clone()),
            BinOp::Eq => Expr::binary(BinOp::Ne, a.clone(), b.clone()),
            BinOp::Ne => Expr::eq(a.clone(), b.clone()),
            _ => Expr::not(c.clone()),
        },
        ExprKind::Binary {
            op: BinOp::And,
            a,
            b,
        } => Expr::or(negate(a), negate(b)),
        ExprKind::Binary {
            op: BinOp::Or,
            a,
            b,
        } => Expr::and(negate(a), negate(b)),
        ExprKind::Unary {
            op: UnaryOp::Not,
            value,
        } => value.clone(),
        _ => Expr::not(c.clone()),
    }
}

/// The name of the hole [`split_first_choice`] leaves.
const CHOICE: &str = "partition.choice";

/// Whether `var` occurs inside a division or a remainder in `e`. Such a
/// condition has no constant slope in `var`, so [`Steady::solve_linear`]
/// cannot solve it; dismissing it first saves the solver's substitutions
/// and simplifications (the tile loop of box_blur has six, the bounds of
/// its shifted-inwards vector loop `(w / 8) * 8` in each: 5% of its
/// lowering). Dismissing a condition is always safe: the steady state
/// keeps its check.
fn divides_var(e: &Expr, var: &str) -> bool {
    struct Find<'a>(&'a str, bool);
    impl Visitor for Find<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if self.1 {
                return;
            }
            match e.kind() {
                ExprKind::Binary {
                    op: BinOp::Div | BinOp::Mod,
                    ..
                } if expr_uses_var(e, self.0) => self.1 = true,
                _ => walk_expr(self, e),
            }
        }
    }
    let mut find = Find(var, false);
    find.visit_expr(e);
    find.1
}

/// How many `min`/`max` choices [`Steady::solve_linear`] splits, nested.
const MAX_CHOICE_SPLITS: usize = 2;

/// The largest number of `min`/`max` nodes above one occurrence of `var`
/// in `e` (0 when it occurs under none, or not at all).
fn choice_depth(e: &Expr, var: &str) -> usize {
    fn walk(e: &Expr, var: &str) -> Option<usize> {
        match e.kind() {
            ExprKind::Var(n) => (n == var).then_some(0),
            ExprKind::Binary {
                op: BinOp::Min | BinOp::Max,
                a,
                b,
            } => Some(walk(a, var).max(walk(b, var))? + 1),
            _ => {
                struct Children<'v> {
                    var: &'v str,
                    deepest: Option<usize>,
                }
                impl Visitor for Children<'_> {
                    fn visit_expr(&mut self, c: &Expr) {
                        self.deepest = self.deepest.max(walk(c, self.var));
                    }
                }
                let mut children = Children { var, deepest: None };
                walk_expr(&mut children, e);
                children.deepest
            }
        }
    }
    walk(e, var).unwrap_or(0)
}

/// `e` with its first `min`/`max` that uses `var` replaced by the variable
/// [`CHOICE`], with that node's operator and operands; `None` when there
/// is none.
fn split_first_choice(e: &Expr, var: &str) -> Option<(Expr, BinOp, Expr, Expr)> {
    struct Choose<'a> {
        var: &'a str,
        found: Option<(BinOp, Expr, Expr)>,
    }
    impl Mutator for Choose<'_> {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            if self.found.is_some() {
                return e.clone();
            }
            if let ExprKind::Binary {
                op: op @ (BinOp::Min | BinOp::Max),
                a,
                b,
            } = e.kind()
                && expr_uses_var(e, self.var)
            {
                self.found = Some((*op, a.clone(), b.clone()));
                return Expr::var_i32(CHOICE);
            }
            mutate_expr_children(self, e)
        }
    }
    let mut choose = Choose { var, found: None };
    let with_hole = choose.mutate_expr(e);
    let (op, a, b) = choose.found?;
    Some((with_hole, op, a, b))
}

/// `e` marked `likely` again when it was (the steady state's rewriting
/// looks through the marks; the loops inside still need them).
fn keep_likely(e: Expr, was_likely: bool) -> Expr {
    if was_likely && !is_likely(&e) {
        Expr::likely(e)
    } else {
        e
    }
}

/// The operands of a chain of `&&`, left to right.
fn split_conjunction(e: &Expr, out: &mut Vec<Expr>) {
    match e.kind() {
        ExprKind::Binary {
            op: BinOp::And,
            a,
            b,
        } => {
            split_conjunction(a, out);
            split_conjunction(b, out);
        }
        _ => out.push(e.clone()),
    }
}

/// Builds the steady-state body of one loop and the bounds of the loop
/// variable under which it is valid.
struct Steady<'a> {
    var: &'a str,
    /// Names bound inside the loop body: a bound mentioning one is useless.
    inner_names: FastHashSet<&'a str>,
    /// Names that differ across the lanes of an enclosing vectorised loop
    /// (see [`Partitioner::lane_names`]): a bound mentioning one would give
    /// the pieces different ranges in different lanes, and `vectorize`
    /// could no longer widen the loop around them.
    lane_names: FastHashSet<String>,
    /// Only choices inside inner loops count (the loop has inner loops).
    /// A choice evaluated once per iteration of an outer loop (the bounds
    /// of a sliding window's producer loops, the guard of a row) costs
    /// next to nothing, while partitioning on it would copy the whole
    /// body, every stage computed inside, into a prologue and epilogue.
    only_inside_loops: bool,
    /// Build the steady state as versions of the innermost statements
    /// (see [`Partitioner::partition`]) rather than as a whole body.
    versioning: bool,
    /// Inside the innermost statement being versioned.
    in_leaf: bool,
    /// Choices are recorded (their bounds and facts) but not replaced.
    recording_only: bool,
    /// Lets kept outside the versions, with their values in the steady
    /// state: (name, value, steady value).
    steady_lets: Vec<(String, Expr, Expr)>,
    /// The lets around the current point with a steady value different
    /// from their own, innermost last.
    steady_in_scope: Vec<(String, Expr)>,
    /// The lets and inner loop variables in scope whose values depend on
    /// the loop variable (with how many bindings of each name do): a
    /// condition mentioning none of them and not the variable itself
    /// cannot bound the steady state, and is dismissed without
    /// substituting and simplifying it.
    dependent: FastHashMap<String, usize>,
    /// For each entry of `lets` and of `loops`, whether it is dependent.
    let_dependent: Vec<bool>,
    loop_dependent: Vec<bool>,
    /// Lets enclosing the current point inside the body, outermost first.
    lets: Vec<(String, Expr)>,
    /// Loops enclosing the current point inside the body: (var, min, extent).
    loops: Vec<(String, Expr, Expr)>,
    /// Inclusive bounds of the loop variable in the steady state.
    lower: Vec<Expr>,
    upper: Vec<Expr>,
    /// What the steady state assumes, each as `d <= 0` (lets substituted).
    facts: Vec<Expr>,
    /// Identifies the lets and loops around the current point: a fresh id
    /// for each one entered, the enclosing id back when it is left.
    context: usize,
    outer_contexts: Vec<usize>,
    next_context: usize,
    /// Conditions already solved, by context and structural hash: the
    /// same clamp recurs in every tap of a stencil, and each solution
    /// substitutes the lets, simplifies and bounds anew.
    solved: RefCell<SolutionMemo>,
    /// The ranges of the inner loops around the current point by the
    /// context id of the innermost one (`None` where a range is too large
    /// to substitute): every condition inside that mentions an inner loop
    /// variable needs them, and each computation substitutes the lets
    /// into every range and bounds it.
    inner_scopes: RefCell<FastHashMap<usize, Option<Scope>>>,
    /// The context id of each enclosing inner loop, innermost last: the
    /// inner loops' ranges change only where a loop is entered, so the
    /// lets inside the innermost one (the taps of a stencil) share its
    /// scope.
    loop_contexts: Vec<usize>,
}

/// Solutions of conditions `d <= 0` by (context id, structural hash of
/// `d`): each `d` with its solution, if it has one.
type SolutionMemo = FastHashMap<(usize, u64), Vec<(Expr, Option<Solution>)>>;

/// Lower bounds, upper bounds and the facts `d <= 0` they come from.
type Solution = (Vec<Expr>, Vec<Expr>, Vec<Expr>);

/// Removes the `min`/`max` choices and `select` conditions of the steady
/// state that its facts decide (such as the clamp of a split loop whose
/// guard the steady state already assumes).
struct Prover<'a> {
    /// The partitioned loop's variable (the last name of the initial
    /// scope, after the enclosing loops of a vector loop's guard).
    var: String,
    facts: &'a [Expr],
    /// The variables of each fact, computed once.
    fact_vars: Vec<Vec<String>>,
    lets: Vec<(String, Expr)>,
    /// Ranges of the partitioned loop's variable and of the loops inside.
    scope: Scope,
    /// The names `scope` binds and the names of `lets` whose values
    /// depend on them (directly or through other lets), with how many
    /// bindings of each there are: a quick test of whether an expression
    /// depends on a loop.
    loop_names: FastHashMap<String, usize>,
    /// For each of `lets`, whether its name was added to `loop_names`:
    /// computed once when the let is entered rather than for every
    /// `min`/`max` inside it.
    let_depends_on_loop: Vec<bool>,
    /// When the steady state is versioned on this loop variable, only the
    /// steady versions are rewritten (everything else also runs outside
    /// the steady state).
    versioned: Option<&'a str>,
    /// Inside the steady version of a statement.
    in_version: bool,
    /// Values of lets outside the versions in the steady state (see
    /// [`Steady::steady_lets`]): proofs inside the versions use them.
    steady_lets: &'a [(String, Expr, Expr)],
    /// Identifies the facts and the current contents of `scope` (see
    /// [`ProofMemo`]), and the ids of the enclosing loops' scopes.
    scope_id: usize,
    scope_ids: Vec<usize>,
    memo: &'a RefCell<ProofMemo>,
}

/// Proofs already attempted, shared by the provers of a whole pass: the
/// same clamp recurs in every copy of a statement, every loop nest and
/// every stage of a pipeline, and each proof simplifies and bounds its
/// expressions anew.
#[derive(Default)]
struct ProofMemo {
    /// Ids of the starting points of provers: facts and initial scope,
    /// by structural hash.
    root_id_of: FastHashMap<u64, Vec<RootScope>>,
    /// Entering a loop moves to the id of (enclosing id, loop variable,
    /// range): the same for every copy of the loop.
    scope_id_of: FastHashMap<(usize, u64), Vec<LoopScope>>,
    next_scope_id: usize,
    /// By scope id and structural hash of the difference `a - b` with the
    /// lets substituted (which, with the facts and the scope, decides the
    /// answer): the difference and its order (see [`Prover::order`]).
    proofs: FastHashMap<(usize, u64), Vec<(Expr, Option<bool>)>>,
}

/// A loop entered from a scope (variable, range), with the id of the
/// scope inside it.
type LoopScope = (String, Interval, usize);

/// A prover's facts and initial scope entries, with their id.
type RootScope = (Vec<Expr>, Vec<(String, Interval)>, usize);

impl ProofMemo {
    fn fresh_id(&mut self) -> usize {
        self.next_scope_id += 1;
        self.next_scope_id
    }

    /// The id of a prover's starting point.
    fn root_id(&mut self, facts: &[Expr], scope: &Scope) -> usize {
        let mut h = FastHasher::default();
        for f in facts {
            structural_hash(f).hash(&mut h);
        }
        let entries: Vec<(String, Interval)> = scope
            .iter()
            .map(|(n, i)| (n.to_string(), i.clone()))
            .collect();
        for (name, interval) in &entries {
            name.hash(&mut h);
            hash_interval(interval, &mut h);
        }
        let hash = h.finish();
        if let Some((_, _, id)) = self
            .root_id_of
            .get(&hash)
            .and_then(|known| known.iter().find(|(f, e, _)| f == facts && *e == entries))
        {
            return *id;
        }
        let id = self.fresh_id();
        self.root_id_of
            .entry(hash)
            .or_default()
            .push((facts.to_vec(), entries, id));
        id
    }

    /// The id of scope `enclosing` with the loop `name` over `interval`.
    fn loop_id(&mut self, enclosing: usize, name: &str, interval: &Interval) -> usize {
        let mut h = FastHasher::default();
        name.hash(&mut h);
        hash_interval(interval, &mut h);
        let key = (enclosing, h.finish());
        if let Some((_, _, id)) = self
            .scope_id_of
            .get(&key)
            .and_then(|known| known.iter().find(|(n, i, _)| n == name && i == interval))
        {
            return *id;
        }
        let id = self.fresh_id();
        self.scope_id_of
            .entry(key)
            .or_default()
            .push((name.to_string(), interval.clone(), id));
        id
    }
}

fn hash_interval(interval: &Interval, h: &mut FastHasher) {
    for bound in [&interval.min, &interval.max] {
        bound.as_ref().map(structural_hash).hash(h);
    }
}

impl<'a> Prover<'a> {
    fn new(facts: &'a [Expr], scope: Scope, memo: &'a RefCell<ProofMemo>) -> Prover<'a> {
        let scope_id = memo.borrow_mut().root_id(facts, &scope);
        let mut loop_names = FastHashMap::default();
        for (name, _) in scope.iter() {
            *loop_names.entry(name.to_string()).or_insert(0) += 1;
        }
        Prover {
            var: scope
                .iter()
                .last()
                .map(|(n, _)| n.to_string())
                .unwrap_or_default(),
            facts,
            fact_vars: facts
                .iter()
                .map(|f| vars_of(f).into_iter().collect())
                .collect(),
            lets: Vec::new(),
            scope,
            loop_names,
            let_depends_on_loop: Vec::new(),
            versioned: None,
            in_version: false,
            steady_lets: &[],
            scope_id,
            scope_ids: Vec::new(),
            memo,
        }
    }

    /// Whether `e` mentions a variable of the loops in scope.
    fn mentions_loop(&self, e: &Expr) -> bool {
        expr_any(
            e,
            |e| matches!(e.kind(), ExprKind::Var(n) if self.loop_names.contains_key(n)),
        )
    }

    fn push_let(&mut self, name: &str, value: &Expr) {
        let value = self
            .steady_lets
            .iter()
            .find(|(n, original, _)| n == name && original.same_as(value))
            .map_or(value, |(_, _, steady)| steady);
        let depends = self.mentions_loop(value);
        if depends {
            *self.loop_names.entry(name.to_string()).or_insert(0) += 1;
        }
        self.let_depends_on_loop.push(depends);
        self.lets.push((name.to_string(), value.clone()));
    }

    fn pop_let(&mut self) {
        let popped = self.lets.pop();
        if self.let_depends_on_loop.pop() == Some(true)
            && let Some((name, _)) = popped
        {
            self.forget_name(&name);
        }
    }

    /// Drops one binding of `name` from `loop_names`.
    fn forget_name(&mut self, name: &str) {
        if let Some(count) = self.loop_names.get_mut(name) {
            *count -= 1;
            if *count == 0 {
                self.loop_names.remove(name);
            }
        }
    }

    fn push_loop(&mut self, name: &str, interval: Interval) {
        let id = self
            .memo
            .borrow_mut()
            .loop_id(self.scope_id, name, &interval);
        self.scope_ids.push(self.scope_id);
        self.scope_id = id;
        self.scope.push(name.to_string(), interval);
        *self.loop_names.entry(name.to_string()).or_insert(0) += 1;
    }

    fn pop_loop(&mut self, name: &str) {
        self.scope.pop(name);
        self.scope_id = self.scope_ids.pop().unwrap_or(self.scope_id);
        self.forget_name(name);
    }

    /// Which operand of a `min`/`max` of `a` and `b` is the smaller one by
    /// the facts or the loop ranges: `Some(true)` when `a <= b` follows
    /// (from `a - b` at most zero over the ranges, or at most a fact
    /// `d <= 0`), else `Some(false)` when `b <= a` does, else `None`.
    fn order(&mut self, a: &Expr, b: &Expr) -> Option<bool> {
        if a.ty() != Type::I32 {
            return None;
        }
        // Only choices that depend on a loop variable (directly or through
        // lets) can be decided by the facts or the loop ranges; the
        // `simplify` pass decides the others. This keeps the pass cheap
        // on min/max-heavy code such as sorting networks.
        if !self.mentions_loop(a) && !self.mentions_loop(b) {
            return None;
        }
        let diff = substitute_lets(&self.lets, &Expr::sub(a.clone(), b.clone()))?;
        // A choice with a `likely` operand left in the steady state is a
        // boundary case of an inner loop (one that `Steady` could not turn
        // into a bound of this loop): that loop's own partitioning removes
        // it. This steady state's facts and ranges decide none of them
        // (none of the examples' and bench schedules' 600-odd), yet trying
        // cost box_blur two thirds of its proofs' time. Only equal operands
        // are still decided.
        if contains_likely(&diff) {
            return match diff.kind() {
                ExprKind::Binary {
                    op: BinOp::Sub,
                    a,
                    b,
                } if a == b => Some(true),
                _ => None,
            };
        }
        let key = (self.scope_id, structural_hash(&diff));
        if let Some(order) = self
            .memo
            .borrow()
            .proofs
            .get(&key)
            .and_then(|known| known.iter().find(|(d, _)| *d == diff))
            .map(|(_, order)| *order)
        {
            return order;
        }
        let order = self.order_of_difference(&diff);
        self.memo
            .borrow_mut()
            .proofs
            .entry(key)
            .or_default()
            .push((diff, order));
        order
    }

    /// [`Prover::order`] of `diff = a - b` (lets substituted), once
    /// memoized. Both directions come from one simplification and one
    /// interval of the difference: `b <= a` is `a - b >= 0`. Proving each
    /// direction on its own simplified and bounded the difference twice,
    /// and most `min`/`max`es of a steady state decide neither way.
    fn order_of_difference(&self, diff: &Expr) -> Option<bool> {
        // The difference is computed in `i32` and may wrap where the
        // operands do not: `min(v, -2147483648)` with `v` in [0, 255] has
        // the difference `v + -2147483648` (the negated constant wraps),
        // which looks at most zero, and `max(min(v, -1623507358),
        // 2147483646)` folds its constants to a small positive one. Index
        // arithmetic is assumed not to overflow (as in Halide) and stays
        // far from the ends of the range; values computed from data do
        // wrap (`min(v, v + 2)` is `v + 2` for `v` = 2147483647). So a
        // choice between data values, or with a constant near the ends of
        // the range in its operands or its folded difference, is left to
        // the `simplify` pass, which decides those by their ranges.
        if could_have_wrapped(diff) || computes_with_data(diff) {
            return None;
        }
        let diff = simplify(diff);
        if could_have_wrapped(&diff) {
            return None;
        }
        if let Some(k) = const_int(&diff) {
            return Some(k <= 0);
        }
        if !self.mentions_loop(&diff) {
            return None;
        }
        let diff_vars = var_names(&diff);
        let relevant: Vec<&Expr> = self
            .facts
            .iter()
            .zip(&self.fact_vars)
            .filter(|(_, vars)| vars.iter().any(|v| diff_vars.contains(&v.as_str())))
            .map(|(f, _)| f)
            .collect();
        // What this steady state knows is its facts and its variable: a
        // difference that shares a variable with neither asks only about
        // the loops inside (the tiles of a strip's steady state), which
        // were just as open before partitioning, and is left as it was.
        // Bounding it over those loops decided nothing in any example.
        if relevant.is_empty() && !diff_vars.contains(&self.var.as_str()) {
            return None;
        }
        let range = bounds_of_expr_in_scope(&diff, &self.scope);
        let constant = |bound: Option<Expr>| bound.and_then(|m| const_int(&m));
        if constant(range.max).is_some_and(|k| k <= 0) {
            return Some(true);
        }
        // `gap <= d` for a fact `d <= 0`, over the loop ranges. Only facts
        // sharing a variable with the difference can bound it.
        let below_a_fact = |gap: &Expr| {
            relevant.iter().any(|f| {
                let slack = simplify(&Expr::sub(gap.clone(), (*f).clone()));
                if could_have_wrapped(&slack) {
                    return false;
                }
                // A constant is its own bound.
                const_int(&slack)
                    .or_else(|| constant(bounds_of_expr_in_scope(&slack, &self.scope).max))
                    .is_some_and(|k| k <= 0)
            })
        };
        if below_a_fact(&diff) {
            return Some(true);
        }
        if constant(range.min).is_some_and(|k| k >= 0) {
            return Some(false);
        }
        // Negating the difference is a simplification of its own: only
        // done when a fact could bound it.
        if !relevant.is_empty() && below_a_fact(&simplify(&Expr::sub(Expr::i32(0), diff.clone()))) {
            return Some(false);
        }
        None
    }
}

impl Mutator for Prover<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        if self.versioned.is_some() && !self.in_version {
            return e.clone();
        }
        if let ExprKind::Let { .. } = e.kind() {
            return mutate_expr_scoped(self, e);
        }
        let e = mutate_expr_children(self, e);
        match e.kind() {
            ExprKind::Binary {
                op: op @ (BinOp::Min | BinOp::Max),
                a,
                b,
            } => {
                let (small, large) = match self.order(a, b) {
                    Some(true) => (a, b),
                    Some(false) => (b, a),
                    None => return e.clone(),
                };
                if *op == BinOp::Min {
                    small.clone()
                } else {
                    large.clone()
                }
            }
            _ => e,
        }
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        if let (Some(var), false) = (self.versioned, self.in_version)
            && let Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } = s
            && version_var(cond) == Some(var)
        {
            self.in_version = true;
            let then = self.mutate_stmt(then);
            self.in_version = false;
            return Stmt::IfThenElse {
                cond: cond.clone(),
                then: Box::new(then),
                otherwise: otherwise.clone(),
            };
        }
        mutate_stmt_scoped(self, s)
    }
}

impl ScopedMutator for Prover<'_> {
    fn enter_let(&mut self, name: &str, value: &Expr) {
        self.push_let(name, value);
    }

    fn exit_let(&mut self, _: &str) {
        self.pop_let();
    }

    fn enter_loop(&mut self, var: &str, min: &Expr, extent: &Expr) {
        let last = simplify(&Expr::sub(
            Expr::add(min.clone(), extent.clone()),
            Expr::i32(1),
        ));
        self.push_loop(var, Interval::new(min.clone(), last));
    }

    fn exit_loop(&mut self, var: &str) {
        self.pop_loop(var);
    }
}

impl Steady<'_> {
    /// For a guard of several split loops, `likely(x < w && y < h)`: the
    /// conjuncts this loop's variable decides leave the steady state (they
    /// bound it), and the guard of the others is returned, for the loops
    /// that decide them (inside or outside this one). `None` when no
    /// conjunct is decided here.
    fn take_decided_conjuncts(&mut self, guard: &Expr) -> Option<Expr> {
        if !self.worth_partitioning() {
            return None;
        }
        let mut conjuncts = Vec::new();
        split_conjunction(is_likely_call(guard).unwrap_or(guard), &mut conjuncts);
        if conjuncts.len() < 2 {
            return None;
        }
        let (decided, rest): (Vec<Expr>, Vec<Expr>) = conjuncts
            .into_iter()
            .partition(|conjunct| self.solve(conjunct).is_some());
        if decided.is_empty() {
            return None;
        }
        for conjunct in &decided {
            self.take(conjunct);
        }
        let rest = rest.into_iter().reduce(Expr::and)?;
        Some(Expr::likely(rest))
    }

    /// Whether a bound of the steady state may not mention `name`.
    fn is_unusable_in_bound(&self, name: &str) -> bool {
        self.inner_names.contains(name) || self.lane_names.contains(name)
    }

    fn substitute_lets(&self, e: &Expr) -> Option<Expr> {
        substitute_lets(&self.lets, e)
    }

    /// Bounds on the loop variable that make `cond` true, or `None` when
    /// they cannot be found exactly. All of them must hold.
    fn solve(&self, cond: &Expr) -> Option<Solution> {
        match cond.kind() {
            ExprKind::Binary {
                op: BinOp::And,
                a,
                b,
            } => {
                let (mut l1, mut u1, mut f1) = self.solve(a)?;
                let (l2, u2, f2) = self.solve(b)?;
                l1.extend(l2);
                u1.extend(u2);
                f1.extend(f2);
                Some((l1, u1, f1))
            }
            ExprKind::Unary {
                op: UnaryOp::Not,
                value,
            } => {
                let n = negate(value);
                if matches!(
                    n.kind(),
                    ExprKind::Unary {
                        op: UnaryOp::Not,
                        ..
                    }
                ) {
                    return None;
                }
                self.solve(&n)
            }
            _ if is_likely_call(cond).is_some() => self.solve(is_likely_call(cond)?),
            ExprKind::Binary { op, a, b } if a.ty() == Type::I32 => {
                // The condition as `d <= 0`.
                let one = Expr::i32(1);
                let d = match op {
                    BinOp::Lt => Expr::add(Expr::sub(a.clone(), b.clone()), one),
                    BinOp::Le => Expr::sub(a.clone(), b.clone()),
                    BinOp::Gt => Expr::add(Expr::sub(b.clone(), a.clone()), one),
                    BinOp::Ge => Expr::sub(b.clone(), a.clone()),
                    _ => return None,
                };
                self.solve_nonpositive(&d)
            }
            _ => None,
        }
    }

    fn solve_nonpositive(&self, d: &Expr) -> Option<Solution> {
        if !self.depends_on_var(d) {
            return None;
        }
        let key = (self.context, structural_hash(d));
        if let Some((_, known)) = self
            .solved
            .borrow()
            .get(&key)
            .and_then(|known| known.iter().find(|(e, _)| e == d))
        {
            return known.clone();
        }
        let solution = self.solve_nonpositive_in_context(d);
        self.solved
            .borrow_mut()
            .entry(key)
            .or_default()
            .push((d.clone(), solution.clone()));
        solution
    }

    /// [`Steady::solve_nonpositive`] once memoized.
    fn solve_nonpositive_in_context(&self, d: &Expr) -> Option<Solution> {
        let mut d = simplify(&self.substitute_lets(d)?);
        if !argent_ir::visit::expr_uses_var(&d, self.var) {
            return None;
        }
        // The condition must hold for every value of inner loop variables:
        // take the largest value of d over them.
        if self
            .loops
            .iter()
            .any(|(v, _, _)| argent_ir::visit::expr_uses_var(&d, v))
        {
            let loop_context = self.loop_contexts.last().copied().unwrap_or(0);
            let known = self.inner_scopes.borrow().get(&loop_context).cloned();
            let scope = match known {
                Some(scope) => scope,
                None => {
                    let scope = self.inner_loop_scope();
                    self.inner_scopes
                        .borrow_mut()
                        .insert(loop_context, scope.clone());
                    scope
                }
            }?;
            // The largest value over an inner loop whose range divides the
            // loop variable (the vector loop of a tile shifted inwards,
            // `(w / 8) * 8`) or nests more choices of it than
            // `solve_linear` splits has the same shape: it cannot be
            // solved. Bounding and simplifying it first cost box_blur a
            // quarter of its partitioning (the clamps inside its tiles).
            if scope.iter().any(|(v, range)| {
                expr_uses_var(&d, v)
                    && [&range.min, &range.max].into_iter().flatten().any(|bound| {
                        divides_var(bound, self.var)
                            || choice_depth(bound, self.var) > MAX_CHOICE_SPLITS
                    })
            }) {
                return None;
            }
            d = simplify(&bounds_of_expr_in_scope(&d, &scope).max?);
        }
        if divides_var(&d, self.var) {
            return None;
        }
        self.solve_linear(&d, 0)
    }

    /// The ranges of the inner loops around the current point with the
    /// lets substituted, outermost first (so each range is in terms of
    /// outer names); `None` when a substitution grows too large.
    fn inner_loop_scope(&self) -> Option<Scope> {
        let mut scope = Scope::new();
        for (v, min, extent) in &self.loops {
            let (min, extent) = (self.substitute_lets(min)?, self.substitute_lets(extent)?);
            let last = Expr::sub(Expr::add(min.clone(), extent), Expr::i32(1));
            let lo = bounds_of_expr_in_scope(&min, &scope).min;
            let hi = bounds_of_expr_in_scope(&last, &scope).max;
            scope.push(v.clone(), Interval { min: lo, max: hi });
        }
        Some(scope)
    }

    /// Bounds on the loop variable under which `d <= 0`, for `d` linear in
    /// it. A `min`/`max` of the variable (the clamp of a loop split with
    /// `shift_inwards`, `min(w - 8, xo * 8)`) is one of its operands, so
    /// `d <= 0` holds when it holds with both operands in its place, and
    /// with either one when `d` is monotone in the choice the right way (a
    /// case free of the variable becomes a condition on the whole steady
    /// state).
    fn solve_linear(&self, d: &Expr, depth: usize) -> Option<Solution> {
        let v = self.var;
        if !argent_ir::visit::expr_uses_var(d, v) {
            if depth == 0 || var_names(d).iter().any(|n| self.is_unusable_in_bound(n)) {
                return None;
            }
            // A loop-invariant condition: when it fails, the steady state
            // is empty (its lower bound is past any loop end).
            let never = Expr::i32(i64::from(i32::MAX / 2));
            let lower = simplify(&Expr::select(
                Expr::le(d.clone(), Expr::i32(0)),
                Expr::i32(i64::from(i32::MIN / 2)),
                never,
            ));
            return Some((vec![lower], Vec::new(), vec![d.clone()]));
        }
        // Each level below splits one `min`/`max`, and what is left must be
        // linear in the variable: an occurrence under more choices than
        // levels remain cannot be solved, and trying splits and simplifies
        // the whole condition again at every level.
        if choice_depth(d, v) > MAX_CHOICE_SPLITS - depth {
            return None;
        }
        if depth < MAX_CHOICE_SPLITS
            && let Some((with_hole, op, a, b)) = split_first_choice(d, v)
        {
            let fill = |x: &Expr| simplify(&substitute(&with_hole, CHOICE, x));
            // How `d` changes when the choice grows by one.
            let filled = simplify(&with_hole);
            let slope = if expr_uses_var(&filled, CHOICE) {
                split_linear(&filled, CHOICE).map(|(k, _)| k)
            } else {
                Some(0)
            };
            // `d` grows with a `min` (or shrinks with a `max`): it is at most
            // its value with either operand in place, so one suffices (the
            // one that depends on the loop variable first).
            let one_suffices = match (op, slope) {
                (BinOp::Min, Some(k)) => k >= 0,
                (BinOp::Max, Some(k)) => k <= 0,
                _ => false,
            };
            if one_suffices {
                let mut operands = [a, b];
                operands.sort_by_key(|o| !expr_uses_var(o, v));
                return operands
                    .iter()
                    .find_map(|o| self.solve_linear(&fill(o), depth + 1));
            }
            let (mut l1, mut u1, mut f1) = self.solve_linear(&fill(&a), depth + 1)?;
            let (l2, u2, f2) = self.solve_linear(&fill(&b), depth + 1)?;
            l1.extend(l2);
            u1.extend(u2);
            f1.extend(f2);
            return Some((l1, u1, f1));
        }
        let fact = d.clone();
        // d must be c * var + rest with a constant c.
        let (c, rest) = split_linear(d, v)?;
        if var_names(&rest)
            .iter()
            .any(|n| self.is_unusable_in_bound(n) || *n == v)
        {
            return None;
        }
        let neg_rest = Expr::sub(Expr::i32(0), rest.clone());
        if c > 0 {
            // c * v <= -rest  <=>  v <= floor(-rest / c).
            Some((
                Vec::new(),
                vec![simplify(&Expr::div(neg_rest, Expr::i32(c)))],
                vec![fact],
            ))
        } else {
            // |c| * v >= rest  <=>  v >= ceil(rest / |c|).
            let k = -c;
            Some((
                vec![simplify(&Expr::div(
                    Expr::add(rest, Expr::i32(k - 1)),
                    Expr::i32(k),
                ))],
                Vec::new(),
                vec![fact],
            ))
        }
    }

    /// `s` with each innermost statement (a loop without inner loops or
    /// any statement other than a block, a `let`, a produce/consume mark,
    /// an allocation or a loop around loops) that has a boundary case
    /// versioned: `if (steady) { steady form } else { original }`. The
    /// statements around them are kept as they are (and their
    /// expressions untouched: they also run outside the steady state).
    fn version(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::Block(_) => map_child_stmts(s, |s| self.version(s)),
            Stmt::LetStmt { name, value, body } => {
                // The binding stays as it is (it also runs outside the
                // steady state), but inside the versions its value is the
                // steady one: proofs there use that.
                let only_inside_loops = std::mem::replace(&mut self.only_inside_loops, false);
                let steady = self.mutate_expr(value);
                self.only_inside_loops = only_inside_loops;
                let changed = steady != *value;
                if changed {
                    self.steady_lets
                        .push((name.clone(), value.clone(), steady.clone()));
                    self.steady_in_scope.push((name.clone(), steady.clone()));
                }
                self.push_let(name, &steady);
                let body = self.version(body);
                if changed {
                    self.steady_in_scope.pop();
                }
                self.pop_let();
                Stmt::LetStmt {
                    name: name.clone(),
                    value: value.clone(),
                    body: Box::new(body),
                }
            }
            Stmt::ProducerConsumer { .. } | Stmt::Realize { .. } | Stmt::Allocate { .. } => {
                map_child_stmts(s, |body| self.version(body))
            }
            Stmt::For {
                var,
                min,
                extent,
                kind: kind @ (ForKind::Serial | ForKind::Parallel),
                body,
            } if has_loop(body) => {
                self.record_choices(min);
                self.record_choices(extent);
                self.push_loop(var, min, extent);
                let body = self.version(body);
                self.pop_loop();
                Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: extent.clone(),
                    kind: *kind,
                    body: Box::new(body),
                }
            }
            _ => {
                let before = (self.lower.len(), self.upper.len());
                self.in_leaf = true;
                let steady = self.mutate_stmt(s);
                self.in_leaf = false;
                if (self.lower.len(), self.upper.len()) == before {
                    return s.clone();
                }
                // Inside the version the lets around it have their steady
                // values: substituting them lets the simplifier fold what
                // they bound (a producer's extent per tile becomes constant).
                let steady = if self.steady_in_scope.is_empty() {
                    steady
                } else {
                    let values: FastHashMap<String, Expr> =
                        self.steady_in_scope.iter().cloned().collect();
                    argent_arith::substitute_many_stmt(&steady, &values)
                };
                Stmt::IfThenElse {
                    cond: version_cond(self.var),
                    then: Box::new(steady),
                    otherwise: Some(Box::new(s.clone())),
                }
            }
        }
    }

    /// Whether `e` mentions the loop variable or a dependent binding.
    fn depends_on_var(&self, e: &Expr) -> bool {
        struct Find<'a>(&'a str, &'a FastHashMap<String, usize>, bool);
        impl Visitor for Find<'_> {
            fn visit_expr(&mut self, e: &Expr) {
                if self.2 {
                    return;
                }
                if let ExprKind::Var(n) = e.kind() {
                    self.2 = n == self.0 || self.1.contains_key(n);
                } else {
                    walk_expr(self, e);
                }
            }
        }
        let mut find = Find(self.var, &self.dependent, false);
        find.visit_expr(e);
        find.2
    }

    fn mark(&mut self, name: &str, dependent: bool) {
        if dependent {
            *self.dependent.entry(name.to_string()).or_insert(0) += 1;
        }
    }

    fn unmark(&mut self, name: &str, dependent: bool) {
        if dependent && let Some(count) = self.dependent.get_mut(name) {
            *count -= 1;
            if *count == 0 {
                self.dependent.remove(name);
            }
        }
    }

    /// Entering a let or a loop: solutions found outside may not hold.
    fn enter_context(&mut self) {
        self.next_context += 1;
        self.outer_contexts.push(self.context);
        self.context = self.next_context;
    }

    fn leave_context(&mut self) {
        self.context = self.outer_contexts.pop().unwrap_or(0);
    }

    fn push_let(&mut self, name: &str, value: &Expr) {
        self.enter_context();
        let dependent = self.depends_on_var(value);
        self.mark(name, dependent);
        self.let_dependent.push(dependent);
        self.lets.push((name.to_string(), value.clone()));
    }

    fn pop_let(&mut self) {
        self.leave_context();
        if let (Some((name, _)), Some(dependent)) = (self.lets.pop(), self.let_dependent.pop()) {
            self.unmark(&name, dependent);
        }
    }

    fn push_loop(&mut self, var: &str, min: &Expr, extent: &Expr) {
        self.enter_context();
        self.loop_contexts.push(self.context);
        let dependent = self.depends_on_var(min) || self.depends_on_var(extent);
        self.mark(var, dependent);
        self.loop_dependent.push(dependent);
        self.loops
            .push((var.to_string(), min.clone(), extent.clone()));
    }

    fn pop_loop(&mut self) {
        self.leave_context();
        self.loop_contexts.pop();
        if let (Some((var, _, _)), Some(dependent)) = (self.loops.pop(), self.loop_dependent.pop())
        {
            self.unmark(&var, dependent);
        }
    }

    /// Record the bounds and facts of the choices in `e`, an expression
    /// that stays as it is (it also runs outside the steady state).
    fn record_choices(&mut self, e: &Expr) {
        let recording_only = std::mem::replace(&mut self.recording_only, true);
        let _ = self.mutate_expr(e);
        self.recording_only = recording_only;
    }

    /// Whether a choice at the current point may bound the steady state.
    fn worth_partitioning(&self) -> bool {
        !self.recording_only && (!self.only_inside_loops || !self.loops.is_empty())
    }

    fn take(&mut self, cond: &Expr) -> bool {
        if !self.worth_partitioning() {
            // Not worth versioning on, but its bounds and facts still
            // narrow the steady state, where the facts decide other
            // choices (the clamp of a producer's split loop, whose extent
            // this choice bounds).
            if let Some((l, u, f)) = self.solve(cond) {
                self.lower.extend(l);
                self.upper.extend(u);
                self.facts.extend(f);
            }
            return false;
        }
        match self.solve(cond) {
            Some((l, u, f)) => {
                self.lower.extend(l);
                self.upper.extend(u);
                self.facts.extend(f);
                true
            }
            None => false,
        }
    }
}

impl Mutator for Steady<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        if let Some(inner) = is_likely_call(e) {
            return self.mutate_expr(inner);
        }
        match e.kind() {
            ExprKind::Binary {
                op: op @ (BinOp::Min | BinOp::Max),
                a,
                b,
            } => {
                let (la, lb) = (is_likely(a), is_likely(b));
                let (sa, sb) = (self.mutate_expr(a), self.mutate_expr(b));
                if la != lb {
                    let (likely, other) = if la { (&sa, &sb) } else { (&sb, &sa) };
                    let cond = if *op == BinOp::Min {
                        Expr::le(likely.clone(), other.clone())
                    } else {
                        Expr::binary(BinOp::Ge, likely.clone(), other.clone())
                    };
                    if self.take(&cond) {
                        return likely.clone();
                    }
                }
                // Undecided here: keep the marks for the loops inside.
                Expr::binary(*op, keep_likely(sa, la), keep_likely(sb, lb))
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = self.mutate_expr(cond);
                let (t, o) = (self.mutate_expr(then), self.mutate_expr(otherwise));
                let then_likely =
                    is_likely_call(cond).is_some() || (is_likely(then) && !is_likely(otherwise));
                if then_likely && self.take(&c) {
                    return t;
                }
                // As for an `if`: the bounds of a stage computed under
                // the guard of several split loops choose on the whole
                // guard, `select(likely(y < h && x < w), c, c + 1)`.
                if then_likely
                    && is_likely_call(cond).is_some()
                    && let Some(rest) = self.take_decided_conjuncts(&c)
                {
                    return Expr::select(rest, t, o);
                }
                if is_likely(otherwise) && !is_likely(then) && self.take(&negate(&c)) {
                    return o;
                }
                Expr::select(
                    keep_likely(c, is_likely_call(cond).is_some()),
                    keep_likely(t, is_likely(then)),
                    keep_likely(o, is_likely(otherwise)),
                )
            }
            _ => mutate_expr_scoped(self, e),
        }
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        if self.versioning && !self.in_leaf {
            return self.version(s);
        }
        match s {
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } if is_likely_call(cond).is_some() => {
                let c = self.mutate_expr(cond);
                let t = self.mutate_stmt(then);
                let o = otherwise.as_ref().map(|o| Box::new(self.mutate_stmt(o)));
                if self.take(&c) {
                    return t;
                }
                // A guard of several split loops, `likely(x < w && y < h)`:
                // the conjuncts this loop's variable decides leave the
                // steady state, the others stay for the loops that decide
                // them (inside or outside this one).
                if o.is_none()
                    && let Some(rest) = self.take_decided_conjuncts(&c)
                {
                    return Stmt::IfThenElse {
                        cond: rest,
                        then: Box::new(t),
                        otherwise: None,
                    };
                }
                Stmt::IfThenElse {
                    cond: Expr::likely(c),
                    then: Box::new(t),
                    otherwise: o,
                }
            }
            _ => mutate_stmt_scoped(self, s),
        }
    }
}

impl ScopedMutator for Steady<'_> {
    fn enter_let(&mut self, name: &str, value: &Expr) {
        self.push_let(name, value);
    }

    fn exit_let(&mut self, _: &str) {
        self.pop_let();
    }

    fn enter_loop(&mut self, var: &str, min: &Expr, extent: &Expr) {
        self.push_loop(var, min, extent);
    }

    fn exit_loop(&mut self, _: &str) {
        self.pop_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pass followed by the simplification the pipeline runs after
    /// vectorising: what the tests read.
    fn partitioned(s: &Stmt) -> Stmt {
        argent_arith::simplify_stmt(&partition_loops(s))
    }
    use crate::exec::testing::*;
    use expect_test::expect;

    fn field(name: &str) -> Expr {
        Expr::var_i32(name)
    }

    /// `in(clamp(likely(e), in.min.0, in.min.0 + in.extent.0 - 1))`, the
    /// form `repeat_edge` produces.
    fn repeat_edge(e: Expr) -> Expr {
        let lo = field("in.min.0");
        let hi = field("in.min.0") + field("in.extent.0") - 1;
        Expr::call_input(Type::I32, "in", vec![Expr::clamp(Expr::likely(e), lo, hi)])
    }

    /// `select(out of bounds, 0, likely(in(clamped)))`, as `constant_exterior`.
    fn constant_exterior(e: Expr) -> Expr {
        let lo = field("in.min.0");
        let end = field("in.min.0") + field("in.extent.0");
        let oob = Expr::or(Expr::lt(e.clone(), lo), Expr::le(end, e.clone()));
        Expr::select(oob, Expr::i32(0), Expr::likely(repeat_edge(e)))
    }

    fn blur(value: Expr) -> Stmt {
        over_output(
            ForKind::Serial,
            Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value,
            },
        )
    }

    fn steady_loop(s: &Stmt) -> String {
        let text = s.to_string();
        let start = text
            .find("for (x, x.steady.min")
            .expect("a steady-state loop");
        let rest = &text[start..];
        rest[..rest.find("\n}").unwrap() + 2].to_string()
    }

    #[test]
    fn boundary_clamps_leave_the_steady_state() {
        let s = partitioned(&blur(repeat_edge(x() - 1) + repeat_edge(x() + 1)));
        expect![[r#"
            for (x, x.steady.min, (x.steady.end - x.steady.min)) {
              out(x) = (in((x + 1)) + in((x - 1)))
            }"#]]
        .assert_eq(&steady_loop(&s));
        let s = partitioned(&blur(constant_exterior(x() - 2)));
        expect![[r#"
            for (x, x.steady.min, (x.steady.end - x.steady.min)) {
              out(x) = in((x - 2))
            }"#]]
        .assert_eq(&steady_loop(&s));
    }

    #[test]
    fn steady_states_do_not_decide_choices_by_wrapped_differences() {
        // `min(v, -2147483648)` is -2147483648 for every `v`, but the
        // difference `v - -2147483648` wraps to `v + -2147483648`, which
        // looks at most zero for a byte `v`: the steady state kept `v`
        // (found by a random program).
        let byte = Expr::cast(Type::I32, Expr::cast(Type::U8, repeat_edge(x() + 2)));
        let s = partitioned(&blur(Expr::max(
            Expr::min(byte, Expr::i32(i32::MIN as i64)),
            Expr::i32(4),
        )));
        expect![[r#"
            for (x, x.steady.min, (x.steady.end - x.steady.min)) {
              out(x) = 4
            }"#]]
        .assert_eq(&steady_loop(&s));
        // A clamp whose low end is above its high end is its low end; the
        // difference for the outer `max` folds `-1623507358 - 2147483646`
        // to a positive constant.
        let byte = Expr::cast(Type::I32, Expr::cast(Type::U8, repeat_edge(x() + 2)));
        let s = partitioned(&blur(Expr::max(
            Expr::min(byte, Expr::i32(-1623507358)),
            Expr::i32(2147483646),
        )));
        expect![[r#"
            for (x, x.steady.min, (x.steady.end - x.steady.min)) {
              out(x) = 2147483646
            }"#]]
        .assert_eq(&steady_loop(&s));
        // Values read from data wrap without any large constant:
        // `min(v, v + 2)` is `v + 2` for `v` = 2147483647.
        let v = repeat_edge(x() + 2);
        let s = partitioned(&blur(Expr::min(v.clone(), v + 2)));
        expect![[r#"
            for (x, x.steady.min, (x.steady.end - x.steady.min)) {
              out(x) = min((in((x + 2)) + 2), in((x + 2)))
            }"#]]
        .assert_eq(&steady_loop(&s));
    }

    #[test]
    fn guards_leave_the_steady_state() {
        // if (likely(x < n)) out(x) = x, the guard of a split loop.
        let guarded = Stmt::IfThenElse {
            cond: Expr::likely(Expr::lt(x(), field("n"))),
            then: Box::new(Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value: x(),
            }),
            otherwise: None,
        };
        let s = partitioned(&over_output(ForKind::Serial, guarded));
        expect![[r#"
            let x.steady.end = max(out.min.0, min(n, (out.extent.0 + out.min.0)))
            for (x, out.min.0, (x.steady.end - out.min.0)) {
              out(x) = x
            }
            for (x, x.steady.end, ((out.extent.0 + out.min.0) - x.steady.end)) {
              if (likely((x < n))) {
                out(x) = x
              }
            }
        "#]]
        .assert_eq(&s.to_string());
    }

    /// `for (xo, 0, (w + 7) / 8) { for (xi, 0, 8) { let x = max(0, min(w - 1, xo * 8 + xi));
    /// if (likely(xo * 8 + xi < w)) out(x) = in(x) * 2 } }`: a split with a guard.
    fn guarded_split() -> Stmt {
        let (xo, xi, w) = (field("xo"), field("xi"), field("w"));
        let pos = xo.clone() * 8 + xi.clone();
        let clamp = Expr::max(Expr::i32(0), Expr::min(w.clone() - 1, pos.clone()));
        let body = Stmt::LetStmt {
            name: "x".into(),
            value: clamp,
            body: Box::new(Stmt::IfThenElse {
                cond: Expr::likely(Expr::lt(pos, w.clone())),
                then: Box::new(Stmt::Provide {
                    func: "out".into(),
                    args: vec![x()],
                    value: Expr::call_input(Type::I32, "in", vec![x()]) * 2,
                }),
                otherwise: None,
            }),
        };
        let inner = Stmt::For {
            var: "xi".into(),
            min: Expr::i32(0),
            extent: Expr::i32(8),
            kind: ForKind::Serial,
            body: Box::new(body),
        };
        let outer = Stmt::For {
            var: "xo".into(),
            min: Expr::i32(0),
            extent: (w.clone() + 7) / 8,
            kind: ForKind::Serial,
            body: Box::new(inner),
        };
        Stmt::LetStmt {
            name: "w".into(),
            value: field("out.extent.0"),
            body: Box::new(outer),
        }
    }

    #[test]
    fn assumed_guards_remove_clamps() {
        let text = partitioned(&guarded_split()).to_string();
        // The tiles have a ragged end only: the steady state starts with
        // the first tile, without a prologue.
        assert!(!text.contains("xo.steady.min"), "{text}");
        let start = text
            .find("for (xo, 0, xo.steady.end")
            .expect("a steady-state loop");
        let steady = &text[start..];
        let steady = &steady[..steady.find("\n}").unwrap() + 2];
        expect![[r#"
            for (xo, 0, xo.steady.end) {
              for (xi, 0, 8) {
                out((xi + (xo * 8))) = (in((xi + (xo * 8))) * 2)
              }
            }"#]]
        .assert_eq(steady);
        let original = module_1d(guarded_split());
        let partitioned = module_1d(partitioned(&guarded_split()));
        for n in [1, 7, 8, 9, 23, 24] {
            let input = ramp_input(n as usize);
            let want = run_1d(&original, &input, 0, n).unwrap();
            let got = run_1d(&partitioned, &input, 0, n).unwrap();
            assert_eq!(want, got, "output of {n}");
        }
    }

    #[test]
    fn inner_loop_variables_are_bounded() {
        // for (xo, 0, 4) { for (xi, 0, 4) { let x = xo * 4 + xi; out(x) = clamp(likely(x), 0, 9) } }
        let inner = Stmt::For {
            var: "xi".into(),
            min: Expr::i32(0),
            extent: Expr::i32(4),
            kind: ForKind::Serial,
            body: Box::new(Stmt::LetStmt {
                name: "x".into(),
                value: Expr::var_i32("xo") * 4 + Expr::var_i32("xi"),
                body: Box::new(Stmt::Provide {
                    func: "out".into(),
                    args: vec![x()],
                    value: Expr::clamp(Expr::likely(x()), Expr::i32(0), Expr::i32(9)),
                }),
            }),
        };
        let s = Stmt::For {
            var: "xo".into(),
            min: Expr::i32(0),
            extent: Expr::i32(4),
            kind: ForKind::Serial,
            body: Box::new(inner),
        };
        let text = partitioned(&s).to_string();
        // The steady state of the outer loop covers xo in [0, 1]: all of
        // x = 4 * xo + xi <= 9 there.
        assert!(text.starts_with("for (xo, 0, 2) {"), "{text}");
    }

    /// [`guarded_split`] with its inner loop vectorised.
    fn vectorized_guarded_split() -> Stmt {
        struct Vectorize;
        impl Mutator for Vectorize {
            fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
                match mutate_stmt_children(self, s) {
                    Stmt::For {
                        var,
                        min,
                        extent,
                        body,
                        ..
                    } if var == "xi" => Stmt::For {
                        var,
                        min,
                        extent,
                        kind: ForKind::Vectorized,
                        body,
                    },
                    other => other,
                }
            }
        }
        Vectorize.mutate_stmt(&guarded_split())
    }

    #[test]
    fn vector_loops_of_boundary_pieces_get_a_guarded_steady_copy() {
        let s = partitioned(&vectorized_guarded_split());
        // The last tile (the epilogue piece) is usually full: its vector
        // loop runs without the clamp and guard when every lane is inside.
        let text = s.to_string();
        let epilogue = &text[text.find("for (xo, xo.steady.end").expect("an epilogue")..];
        expect![[r#"
            for (xo, xo.steady.end, (((out.extent.0 + 7) / 8) - xo.steady.end)) {
              if ((8 <= (out.extent.0 - (xo * 8)))) {
                vectorized (xi, 0, 8) {
                  out((xi + (xo * 8))) = (in((xi + (xo * 8))) * 2)
                }
              }
              else {
                vectorized (xi, 0, 8) {
                  let x = max(min((xi + (xo * 8)), (out.extent.0 - 1)), 0)
                  if (likely(((xi + (xo * 8)) < out.extent.0))) {
                    out(x) = (in(x) * 2)
                  }
                }
              }
            }
        "#]]
        .assert_eq(epilogue);
        let original = module_1d(vectorized_guarded_split());
        let partitioned = module_1d(s);
        for out_len in [1, 7, 8, 9, 16, 21] {
            let input = ramp_input(out_len as usize);
            let want = run_1d(&original, &input, 0, out_len).unwrap();
            let got = run_1d(&partitioned, &input, 0, out_len).unwrap();
            assert_eq!(want.0, got.0, "output {out_len}");
        }
    }

    #[test]
    fn partitioned_loops_compute_what_the_original_does() {
        let bodies = [
            repeat_edge(x() - 1) + repeat_edge(x() + 1) * 2,
            constant_exterior(x() - 2) + constant_exterior(x() + 3),
            repeat_edge(x() * 2 - 3),
            Expr::min(Expr::likely(x()), field("in.extent.0") - 1) + repeat_edge(x() / 2),
        ];
        for (i, value) in bodies.iter().enumerate() {
            let original = module_1d(blur(value.clone()));
            let partitioned = module_1d(partitioned(&blur(value.clone())));
            for (input_len, input_min, out_len) in
                [(5, 0, 12), (1, 0, 3), (12, -2, 4), (3, 5, 9), (20, 0, 20)]
            {
                let input = ramp_input(input_len);
                let want = run_1d(&original, &input, input_min, out_len).unwrap();
                let got = run_1d(&partitioned, &input, input_min, out_len).unwrap();
                assert_eq!(
                    want.0, got.0,
                    "body {i}: {value}, input {input_len}@{input_min}, output {out_len}"
                );
            }
        }
    }

    /// `for (xo, 0, 4) { for (xi, 0, 4) { body } }`.
    fn tiles_of_four(body: Stmt) -> Stmt {
        let serial = |var: &str, body: Stmt| Stmt::For {
            var: var.into(),
            min: Expr::i32(0),
            extent: Expr::i32(4),
            kind: ForKind::Serial,
            body: Box::new(body),
        };
        serial("xo", serial("xi", body))
    }

    #[test]
    fn guards_of_two_split_loops_leave_by_conjunct() {
        // for (xo, 0, 4) { for (xi, 0, 4) { if (likely(xo * 4 + xi < w && y < h)) out(xo * 4 + xi) = y } }:
        // the outer loop decides the first conjunct, `y < h` stays.
        let pos = field("xo") * 4 + field("xi");
        let guarded = Stmt::IfThenElse {
            cond: Expr::likely(Expr::and(
                Expr::lt(pos.clone(), field("w")),
                Expr::lt(field("y"), field("h")),
            )),
            then: Box::new(Stmt::Provide {
                func: "out".into(),
                args: vec![pos],
                value: field("y"),
            }),
            otherwise: None,
        };
        let s = tiles_of_four(guarded);
        // The prologue is empty (xo starts at 0): the steady state comes first.
        let text = partitioned(&s).to_string();
        let steady = text.as_str();
        expect![[r#"
            let xo.steady.end = max(min((w / 4), 4), 0)
            for (xo, 0, xo.steady.end) {
              for (xi, 0, 4) {
                if (likely((y < h))) {
                  out((xi + (xo * 4))) = y
                }
              }
            }"#]]
        .assert_eq(&steady[..steady.find("\n}").unwrap() + 2]);
    }

    #[test]
    fn selects_on_guards_of_two_split_loops_leave_by_conjunct() {
        // The bounds of a stage computed under both guards choose on them:
        // out(xo * 4 + xi) = select(likely(xo * 4 + xi < w && y < h), y, 0).
        let pos = field("xo") * 4 + field("xi");
        let chosen = Expr::select(
            Expr::likely(Expr::and(
                Expr::lt(pos.clone(), field("w")),
                Expr::lt(field("y"), field("h")),
            )),
            field("y"),
            Expr::i32(0),
        );
        let s = tiles_of_four(Stmt::Provide {
            func: "out".into(),
            args: vec![pos],
            value: chosen,
        });
        let text = partitioned(&s).to_string();
        expect![[r#"
            let xo.steady.end = max(min((w / 4), 4), 0)
            for (xo, 0, xo.steady.end) {
              for (xi, 0, 4) {
                out((xi + (xo * 4))) = select(likely((y < h)), y, 0)
              }
            }"#]]
        .assert_eq(&text[..text.find("\n}").unwrap() + 2]);
    }

    #[test]
    fn loops_whose_range_varies_across_lanes_stay_whole() {
        // vectorized (x, 0, 8) { for (t, x, 3) { out(x) = in(clamp(likely(t - 1))) } }:
        // pieces of t would have different ranges in different lanes, which
        // `vectorize` cannot widen, so the loop over t is not split.
        let per_lane = |kind| Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: Expr::i32(8),
            kind,
            body: Box::new(Stmt::For {
                var: "t".into(),
                min: x(),
                extent: Expr::i32(3),
                kind: ForKind::Serial,
                body: Box::new(Stmt::Provide {
                    func: "out".into(),
                    args: vec![x()],
                    value: repeat_edge(field("t") - 1),
                }),
            }),
        };
        let text = partitioned(&per_lane(ForKind::Vectorized)).to_string();
        assert!(!text.contains("t.steady"), "{text}");
        // Without the vectorised loop around it, the same loop is split.
        let text = partitioned(&per_lane(ForKind::Serial)).to_string();
        assert!(text.contains("t.steady"), "{text}");
    }

    /// `for (xo, 0, (n + 7) / 8) { for (xi, 0, 8) { let x = min(n - 8, xo * 8) + xi;
    /// out(x) = value } }` with `n = out.extent.0`: a `shift_inwards` split.
    fn shifted_split(value: Expr) -> Stmt {
        let n = field("out.extent.0");
        let inner = Stmt::For {
            var: "xi".into(),
            min: Expr::i32(0),
            extent: Expr::i32(8),
            kind: ForKind::Serial,
            body: Box::new(Stmt::LetStmt {
                name: "x".into(),
                value: Expr::min(n.clone() - 8, field("xo") * 8) + field("xi"),
                body: Box::new(Stmt::Provide {
                    func: "out".into(),
                    args: vec![x()],
                    value,
                }),
            }),
        };
        Stmt::For {
            var: "xo".into(),
            min: Expr::i32(0),
            extent: (n + 7) / 8,
            kind: ForKind::Serial,
            body: Box::new(inner),
        }
    }

    #[test]
    fn shift_inwards_splits_are_partitioned() {
        let value = repeat_edge(x() - 1) + repeat_edge(x() + 1);
        let text = partitioned(&shifted_split(value.clone())).to_string();
        let start = text.find("for (xo, xo.steady.min").expect("a steady state");
        let steady = &text[start..];
        expect![[r#"
            for (xo, xo.steady.min, (xo.steady.end - xo.steady.min)) {
              for (xi, 0, 8) {
                let x = (xi + min((out.extent.0 - 8), (xo * 8)))
                out(x) = (in((x + 1)) + in((x - 1)))
              }
            }"#]]
        .assert_eq(&steady[..steady.find("\n}").unwrap() + 2]);
        let original = module_1d(shifted_split(value.clone()));
        let partitioned = module_1d(partitioned(&shifted_split(value)));
        for (input_len, input_min, out_len) in
            [(8, 0, 8), (9, 0, 9), (30, 0, 23), (40, -3, 32), (5, 2, 16)]
        {
            let input = ramp_input(input_len);
            let want = run_1d(&original, &input, input_min, out_len).unwrap();
            let got = run_1d(&partitioned, &input, input_min, out_len).unwrap();
            assert_eq!(
                want.0, got.0,
                "input {input_len}@{input_min}, output {out_len}"
            );
        }
    }

    #[test]
    fn large_bodies_with_inner_loops_are_versioned() {
        // As if the body were large: the steady state is a version of the
        // inner loop, without the clamp or the guard, and the loop is not
        // split.
        let s = argent_arith::simplify_stmt(&partition_loops_versioning_over(&guarded_split(), 0));
        expect![[r#"
            let xo.steady.end = max(min((out.extent.0 / 8), ((out.extent.0 + 7) / 8)), 0)
            for (xo, 0, ((out.extent.0 + 7) / 8)) {
              if ((xo < xo.steady.end)) {
                for (xi, 0, 8) {
                  out((xi + (xo * 8))) = (in((xi + (xo * 8))) * 2)
                }
              }
              else {
                for (xi, 0, 8) {
                  let x = max(min((xi + (xo * 8)), (out.extent.0 - 1)), 0)
                  if (likely(((xi + (xo * 8)) < out.extent.0))) {
                    out(x) = (in(x) * 2)
                  }
                }
              }
            }
        "#]]
        .assert_eq(&s.to_string());
        let original = module_1d(guarded_split());
        let versioned = module_1d(s);
        for n in [1, 7, 8, 9, 23, 24] {
            let input = ramp_input(n as usize);
            let want = run_1d(&original, &input, 0, n).unwrap();
            let got = run_1d(&versioned, &input, 0, n).unwrap();
            assert_eq!(want, got, "output of {n}");
        }
    }
}
