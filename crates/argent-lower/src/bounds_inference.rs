//! Bounds inference: symbolic interval analysis of the region of each func
//! that its consumers need, unioned over consumers and over the func's own
//! update stages. Regions become `let f.sK.v.min/max` statements: for funcs
//! computed at the root they are hoisted to the top of the pipeline (in
//! consumer-before-producer order, so each refers to its consumers' names
//! rather than re-deriving them); for funcs computed inside a loop they sit
//! at the compute level. Then `Realize` bounds are the boxes touched inside
//! each realization, and `Assert`s check inputs and outputs before anything
//! runs.

use crate::arith::{FuncValues, Interval, Scope, bounds_of_expr, simplify};
use crate::error::{LowerBug, LowerError};
use crate::schedule_tree::{Level, ScheduleTree};
use crate::synthesize::stage_dims;
use argent_ir::visit::{Mutator, Visitor, map_child_stmts, mutate_stmt_children};
use argent_ir::{AssertKind, CallTarget, Expr, ExprKind, Pipeline, Range, Stmt, buffer_field};

/// A box: one interval per dimension.
pub type Box_ = Vec<Interval>;

fn union_box(acc: &mut Option<Box_>, b: Box_) {
    match acc {
        None => *acc = Some(b),
        Some(a) => {
            for (x, y) in a.iter_mut().zip(b) {
                *x = x.union(&y);
            }
        }
    }
}

/// Collects the box of `target` read (and optionally written) in a
/// statement, with loop and let variables replaced by their ranges.
struct BoxFinder<'a> {
    target: &'a str,
    include_provides: bool,
    include_calls: bool,
    /// Also collect the reads separately for each func being produced
    /// (to name the stage that reads an input), and for each condition
    /// under which they happen (see [`ReadsOf`]).
    by_reader: Option<Vec<ReadsOf>>,
    producing: Vec<String>,
    scope: Scope,
    result: Option<Box_>,
    /// For each interval [`BoxFinder::narrow`] pushed on the scope, in the
    /// same order: the condition that it is not empty (`true` when that
    /// is known, or when there are no reads per reader to use it).
    nonempty: Vec<Expr>,
    /// The conjunction of `nonempty` for [`BoxFinder::record_read`], once
    /// computed (a select arm's reads share it).
    read_condition: Option<Option<Expr>>,
}

/// The box of an input read by one stage under one condition: the reads
/// happen only where `condition` holds (`None`: always), so an input
/// needs to cover the box only then. A read in a select arm whose
/// condition no point satisfies (`select(x < 0, in(x + 1000, y), 0)` over
/// `x >= 0`) needs nothing, although its box, computed over an empty
/// range of `x`, is not empty: `x * x` over `[0, -1]` is `[0, 1]`.
#[derive(Debug)]
struct ReadsOf {
    reader: String,
    condition: Option<Expr>,
    region: Box_,
}

impl<'a> BoxFinder<'a> {
    fn new(target: &'a str, include_provides: bool, include_calls: bool, scope: Scope) -> Self {
        BoxFinder {
            target,
            include_provides,
            include_calls,
            by_reader: None,
            producing: Vec::new(),
            scope,
            result: None,
            nonempty: Vec::new(),
            read_condition: None,
        }
    }
}

/// Whether `e` reads input `name` (not a func of that name).
fn reads_input(e: &Expr, name: &str) -> bool {
    argent_ir::visit::expr_any(
        e,
        |x: &Expr| matches!(x.kind(), ExprKind::Call { target: CallTarget::Input(n), .. } if n == name),
    )
}

/// The lets among `named` that `used` (and the lets they use) need, in
/// order.
fn needed_lets(named: &[(String, Expr)], used: &[Expr]) -> Vec<(String, Expr)> {
    let mut needed: Vec<bool> = vec![false; named.len()];
    let uses = |e: &Expr, n: &str| argent_ir::visit::expr_uses_var(e, n);
    for i in (0..named.len()).rev() {
        let n = &named[i].0;
        needed[i] = used.iter().any(|v| uses(v, n))
            || (i + 1..named.len()).any(|j| needed[j] && uses(&named[j].1, n));
    }
    named
        .iter()
        .zip(needed)
        .filter(|(_, k)| *k)
        .map(|(l, _)| l.clone())
        .collect()
}

impl BoxFinder<'_> {
    /// Walk `branch`, which runs only where `guard` holds. A guard whose
    /// variables are all bound outside the statement being walked (a
    /// tile's tail test `x.xo * 8 + x.xi < extent` of a producer computed
    /// at `x.xi`) has one value for the whole walk: where it fails, the
    /// branch touches nothing, and its box is made empty there. This keeps
    /// a producer computed inside a guarded tail from computing the
    /// clamped point for nothing. A guard that names a variable ranging
    /// inside the walk only narrows it (see `narrow`).
    ///
    /// One empty dimension empties the box: the outermost one becomes
    /// `[select(guard, lo, max(lo, hi + 1)), hi]`. Its max is untouched
    /// and its min still grows with a loop whose tail the guard cuts off
    /// (see `arith::monotonic`), so a sliding window along it still slides.
    fn guarded_branch(&mut self, guard: &Expr, positive: bool, branch: &Stmt) {
        let pushed = self.narrow(guard, positive);
        let mut names = Vec::new();
        free_vars(guard, &mut names);
        let outer = names.iter().all(|n| !self.scope.contains(n));
        // The reads per reader (for naming the stage in input checks) stay
        // unguarded, which is sound.
        let before = if outer {
            Some(self.result.take())
        } else {
            None
        };
        self.stmt(branch);
        self.unnarrow(pushed);
        let Some(before) = before else {
            return;
        };
        let guard = if positive {
            guard.clone()
        } else {
            Expr::not(guard.clone())
        };
        self.empty_unless(guard, before);
    }

    /// Replace the box found since `before` was taken by the union of
    /// `before` and that box emptied where `guard` fails (see
    /// `guarded_branch`).
    fn empty_unless(&mut self, guard: Expr, before: Option<Box_>) {
        let Some(mut b) = std::mem::replace(&mut self.result, before) else {
            return;
        };
        if let Some(iv) = b.last_mut()
            && let (Some(lo), Some(hi)) = (&iv.min, &iv.max)
        {
            let empty_min = Expr::max(lo.clone(), Expr::add(hi.clone(), Expr::i32(1)));
            iv.min = Some(simplify(&Expr::select(guard, lo.clone(), empty_min)));
        }
        union_box(&mut self.result, b);
    }

    fn record_read(&mut self, b: Box_) {
        if let (Some(readers), Some(reader)) = (&mut self.by_reader, self.producing.last()) {
            let condition = self
                .read_condition
                .get_or_insert_with(|| {
                    self.nonempty
                        .iter()
                        .filter(|c| c.as_int() != Some(1))
                        .cloned()
                        .reduce(Expr::and)
                        .map(|c| simplify(&c))
                })
                .clone();
            let same = |a: &Option<Expr>, b: &Option<Expr>| match (a, b) {
                (Some(a), Some(b)) => std::ptr::eq(a.node(), b.node()) || a == b,
                (a, b) => a.is_none() && b.is_none(),
            };
            match readers
                .iter_mut()
                .find(|r| &r.reader == reader && same(&r.condition, &condition))
            {
                Some(r) => {
                    let mut u = Some(std::mem::take(&mut r.region));
                    union_box(&mut u, b.clone());
                    r.region = u.unwrap_or_default();
                }
                None => readers.push(ReadsOf {
                    reader: reader.clone(),
                    condition,
                    region: b.clone(),
                }),
            }
        }
        union_box(&mut self.result, b);
    }

    /// Pop what the last `pushed` narrowings pushed.
    fn unnarrow(&mut self, pushed: usize) {
        for _ in 0..pushed {
            self.scope.pop();
            self.nonempty.pop();
            self.read_condition = None;
        }
    }

    fn expr(&mut self, e: &Expr) {
        if !self.include_calls {
            return;
        }
        match e.kind() {
            ExprKind::Let { name, value, body } => {
                self.expr(value);
                self.scope.push_lazy(name, value.clone());
                self.expr(body);
                self.scope.pop();
            }
            ExprKind::Call {
                target: CallTarget::Func(n) | CallTarget::Input(n),
                args,
            } if n == self.target => {
                if self.include_calls {
                    let b = args
                        .iter()
                        .map(|a| bounds_of_expr(a, &mut self.scope))
                        .collect();
                    self.record_read(b);
                }
                args.iter().for_each(|a| self.expr(a));
            }
            // Each branch of a select only counts where its condition
            // holds: narrow the variables the condition compares (this
            // keeps the interior branch of a border rule from "reading"
            // outside). Only for inputs, whose region is checked, not
            // allocated: vector code evaluates both branches of a select
            // in every lane, so a func read in a branch is loaded where
            // the condition fails too, and its buffer must hold those
            // points (narrowed, `select(y <= 255, .., f(x, y))` left `f`
            // an empty buffer that every row below 256 loaded from, far
            // outside the memory: random programs seed 11458).
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                let narrows = reads_input(then, self.target) || reads_input(otherwise, self.target);
                for (branch, positive) in [(then, true), (otherwise, false)] {
                    let pushed = if narrows {
                        self.narrow(cond, positive)
                    } else {
                        0
                    };
                    self.expr(branch);
                    self.unnarrow(pushed);
                }
            }
            _ => {
                struct Children<'b, 'c>(&'b mut BoxFinder<'c>);
                impl argent_ir::visit::Visitor for Children<'_, '_> {
                    fn visit_expr(&mut self, e: &Expr) {
                        self.0.expr(e);
                    }
                }
                argent_ir::visit::walk_expr(&mut Children(self), e);
            }
        }
    }

    /// Push narrowed intervals for the variables `cond` (or its negation)
    /// constrains; returns how many were pushed.
    fn narrow(&mut self, cond: &Expr, positive: bool) -> usize {
        use argent_ir::BinOp::*;
        match cond.kind() {
            ExprKind::Binary { op: And, a, b } if positive => {
                self.narrow(a, true) + self.narrow(b, true)
            }
            ExprKind::Binary { op: Or, a, b } if !positive => {
                self.narrow(a, false) + self.narrow(b, false)
            }
            ExprKind::Unary {
                op: argent_ir::UnaryOp::Not,
                value,
            } => self.narrow(value, !positive),
            ExprKind::Call {
                target: CallTarget::Intrinsic(argent_ir::Intrinsic::Likely),
                args,
            } => self.narrow(&args[0], positive),
            ExprKind::Binary { op, a, b }
                if op.is_comparison() && a.ty() == argent_ir::Type::I32 =>
            {
                // Normalise to `v op e` with `v` a variable in scope.
                let (v, e, op) = match (a.as_var(), b.as_var()) {
                    (Some(v), _) if self.scope.contains(v) => (v, b, *op),
                    (_, Some(v)) if self.scope.contains(v) => {
                        let flipped = match op {
                            Lt => Gt,
                            Le => Ge,
                            Gt => Lt,
                            Ge => Le,
                            o => *o,
                        };
                        (v, a, flipped)
                    }
                    _ => return 0,
                };
                let op = if positive {
                    op
                } else {
                    match op {
                        Lt => Ge,
                        Le => Gt,
                        Gt => Le,
                        Ge => Lt,
                        Eq => Ne,
                        Ne => Eq,
                        o => o,
                    }
                };
                let bound = bounds_of_expr(e, &mut self.scope);
                // Narrowing only sharpens a region, so it may be skipped:
                // against a constant near the ends of the `i32` range,
                // `v < -2147483648` would give `v <= 2147483647` (the
                // bound minus one wraps), and `v < -2147483647` regions
                // whose coordinates `v - 2` wrap at run time.
                let extreme = |b: &Option<Expr>| {
                    b.as_ref()
                        .and_then(|b| b.as_int())
                        .is_some_and(|c| c.unsigned_abs() >= 1 << 30)
                };
                if extreme(&bound.min) || extreme(&bound.max) {
                    return 0;
                }
                let one = Expr::i32(1);
                let (lo, hi) = match op {
                    Lt => (None, bound.max.map(|m| Expr::sub(m, one))),
                    Le => (None, bound.max),
                    Gt => (bound.min.map(|m| Expr::add(m, one)), None),
                    Ge => (bound.min, None),
                    Eq => (bound.min, bound.max),
                    _ => return 0,
                };
                let Some(cur) = self.scope.get(v) else {
                    return 0;
                };
                let join =
                    |a: Option<Expr>, b: Option<Expr>, f: fn(Expr, Expr) -> Expr| match (a, b) {
                        (Some(x), Some(y)) => Some(simplify(&f(x, y))),
                        (x, y) => x.or(y),
                    };
                let narrowed = Interval {
                    min: join(cur.min, lo, Expr::max),
                    max: join(cur.max, hi, Expr::min),
                };
                // Only the reads per reader (input checks) use it.
                let nonempty = match (&narrowed.min, &narrowed.max) {
                    (Some(lo), Some(hi)) if self.by_reader.is_some() => {
                        simplify(&Expr::le(lo.clone(), hi.clone()))
                    }
                    _ => Expr::bool(true),
                };
                self.scope.push(v, narrowed);
                self.nonempty.push(nonempty);
                self.read_condition = None;
                1
            }
            _ => 0,
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::LetStmt { name, value, body } => {
                self.expr(value);
                self.scope.push_lazy(name, value.clone());
                self.stmt(body);
                self.scope.pop();
            }
            Stmt::For {
                var,
                min,
                extent,
                body,
                ..
            } => {
                // Looking only for what is written, a loop that writes none
                // of the target need not be bounded (realize_bounds walks
                // every realization's body, loops of other funcs included).
                if !self.include_calls && !writes(body, self.target) {
                    return;
                }
                self.expr(min);
                self.expr(extent);
                // Nor need a loop whose body does not touch the target be
                // bounded (most loops of a long pipeline belong to other
                // stages).
                if !touches(body, self.target) {
                    return;
                }
                // Simplify `min + extent - 1` before taking its bounds, so that
                // `m + (M - m + 1) - 1` is `M` rather than `max(M) + max(M) - min(m)`.
                let lo = bounds_of_expr(min, &mut self.scope);
                let last = simplify(&Expr::sub(
                    Expr::add(min.clone(), extent.clone()),
                    Expr::i32(1),
                ));
                let hi = bounds_of_expr(&last, &mut self.scope);
                // A fused loop whose extent names only variables bound outside
                // the walk has one trip count for the whole walk: where it
                // is not positive the body touches nothing, as for a guard
                // (see `guarded_branch`). Interval bounds of the loop
                // variable cannot say so: a fused loop over a consumer's
                // region that a sliding window emptied (min above max)
                // rebuilds its variables with clamps, bounded as the
                // point `[min, max(max, min)]`, so the producers' regions
                // grew past the rows their own producers computed
                // (multiscale_interpolation seed 125).
                let mut names = Vec::new();
                free_vars(extent, &mut names);
                // Only fused loops (their extent is the product of the
                // fused extents): a plain loop `for (v, min, max - min + 1)`
                // bounds `v` as `[min, max]`, already empty there, and
                // guarding every loop would bloat every region.
                let fused = matches!(
                    extent.kind(),
                    ExprKind::Binary {
                        op: argent_ir::BinOp::Mul,
                        ..
                    }
                );
                let outer_extent = fused
                    && crate::arith::const_int(extent).is_none()
                    && names.iter().all(|n| !self.scope.contains(n));
                let before = if outer_extent {
                    Some(self.result.take())
                } else {
                    None
                };
                self.scope.push(
                    var,
                    Interval {
                        min: lo.min,
                        max: hi.max,
                    },
                );
                self.stmt(body);
                self.scope.pop();
                if let Some(before) = before {
                    let positive = Expr::binary(argent_ir::BinOp::Gt, extent.clone(), Expr::i32(0));
                    self.empty_unless(positive, before);
                }
            }
            Stmt::Provide { func, args, value } => {
                if self.include_provides && func == self.target {
                    let b = args
                        .iter()
                        .map(|a| bounds_of_expr(a, &mut self.scope))
                        .collect();
                    union_box(&mut self.result, b);
                }
                args.iter().for_each(|a| self.expr(a));
                self.expr(value);
            }
            // A func is only written while producing it: the rest of the
            // pipeline need not be walked to find what it writes.
            Stmt::ProducerConsumer {
                func,
                producing: false,
                ..
            } if !self.include_calls && func == self.target => {}
            Stmt::ProducerConsumer {
                func,
                producing,
                body,
            } => {
                if *producing {
                    self.producing.push(func.clone());
                }
                self.stmt(body);
                if *producing {
                    self.producing.pop();
                }
            }
            Stmt::Realize { bounds, body, .. } => {
                for r in bounds {
                    self.expr(&r.min);
                    self.expr(&r.extent);
                }
                self.stmt(body);
            }
            Stmt::Block(v) => v.iter().for_each(|s| self.stmt(s)),
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                self.guarded_branch(cond, true, then);
                if let Some(o) = otherwise {
                    self.guarded_branch(cond, false, o);
                }
            }
            Stmt::Assert { cond, args, .. } => {
                self.expr(cond);
                args.iter().for_each(|a| self.expr(a));
            }
            Stmt::Evaluate(e) => self.expr(e),
            Stmt::Store { index, value, .. } => {
                self.expr(index);
                self.expr(value);
            }
            Stmt::Allocate { size, body, .. } => {
                self.expr(size);
                self.stmt(body);
            }
        }
    }
}

/// The variables `e` names (with repeats). A `let` inside `e` counts its
/// own name as used, which only makes a guard look less usable.
fn free_vars(e: &Expr, out: &mut Vec<String>) {
    struct V<'a>(&'a mut Vec<String>);
    impl argent_ir::visit::Visitor for V<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            match e.kind() {
                ExprKind::Var(n) => self.0.push(n.clone()),
                ExprKind::Let { name, .. } => self.0.push(name.clone()),
                _ => {}
            }
            argent_ir::visit::walk_expr(self, e);
        }
    }
    V(out).visit_expr(e);
}

/// The box of `func` (a func or an input) that `s` reads, and also writes
/// when `include_provides`; `None` when `s` does not touch it.
/// Whether `s` writes or reads `func` (a func or an input).
fn touches(s: &Stmt, func: &str) -> bool {
    struct Find<'a>(&'a str, bool);
    impl argent_ir::visit::Visitor for Find<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if self.1 {
                return;
            }
            if let ExprKind::Call {
                target: CallTarget::Func(n) | CallTarget::Input(n),
                ..
            } = e.kind()
                && n == self.0
            {
                self.1 = true;
                return;
            }
            argent_ir::visit::walk_expr(self, e);
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            if self.1 {
                return;
            }
            if let Stmt::Provide { func, .. } = s
                && func == self.0
            {
                self.1 = true;
                return;
            }
            argent_ir::visit::walk_stmt(self, s);
        }
    }
    let mut find = Find(func, false);
    argent_ir::visit::Visitor::visit_stmt(&mut find, s);
    find.1
}

/// Whether `s` contains a `Provide` to `func`.
fn writes(s: &Stmt, func: &str) -> bool {
    match s {
        Stmt::Provide { func: f, .. } => f == func,
        Stmt::For { body, .. }
        | Stmt::LetStmt { body, .. }
        | Stmt::ProducerConsumer { body, .. }
        | Stmt::Realize { body, .. }
        | Stmt::Allocate { body, .. } => writes(body, func),
        Stmt::Block(v) => v.iter().any(|s| writes(s, func)),
        Stmt::IfThenElse {
            then, otherwise, ..
        } => writes(then, func) || otherwise.as_ref().is_some_and(|o| writes(o, func)),
        Stmt::Assert { .. } | Stmt::Evaluate(_) | Stmt::Store { .. } => false,
    }
}

pub fn box_touched(s: &Stmt, func: &str, include_provides: bool, params: &Scope) -> Option<Box_> {
    let mut f = BoxFinder::new(func, include_provides, true, params.clone());
    f.stmt(s);
    f.result
}

/// The box of `input` read while producing each func, in order of first
/// read.
fn boxes_read_by_each(s: &Stmt, input: &str, scope: Scope) -> (Vec<ReadsOf>, Scope) {
    let mut f = BoxFinder::new(input, false, true, scope);
    f.by_reader = Some(Vec::new());
    f.stmt(s);
    (f.by_reader.unwrap_or_default(), f.scope)
}

/// [`box_touched`] of the reads, in `scope` (which may name large bounds
/// of lets, see [`Scope::naming`]); returns the scope too.
fn box_read_in(s: &Stmt, func: &str, scope: Scope) -> (Option<Box_>, Scope) {
    let mut f = BoxFinder::new(func, false, true, scope);
    f.stmt(s);
    (f.result, f.scope)
}

/// The declared ranges of the scalar parameters, which bound indices
/// computed from them (a bilateral grid's `i32(gray * (1.0 / r_sigma))`).
pub fn param_scope(pipeline: &Pipeline) -> Scope {
    param_scope_over(pipeline, &FuncValues::of(pipeline))
}

/// [`param_scope`] bounding loads from funcs with `values` (whose memo is
/// then shared).
fn param_scope_over(pipeline: &Pipeline, values: &std::sync::Arc<FuncValues>) -> Scope {
    let mut scope = Scope::default().with_func_values(values);
    for p in &pipeline.params {
        if let Some((lo, hi)) = p.range {
            scope.push(
                &p.name,
                Interval::new(Expr::constant(p.ty, lo), Expr::constant(p.ty, hi)),
            );
        }
    }
    scope
}

/// The box of `func` that `s` writes.
pub fn box_provided(s: &Stmt, func: &str) -> Option<Box_> {
    let mut f = BoxFinder::new(func, true, false, Scope::default());
    f.stmt(s);
    f.result
}

/// The consume body of the `Block[produce f, consume f]` node of `func`
/// (a read-only search: the tree is neither rebuilt nor cloned).
fn consume_body<'s>(s: &'s Stmt, func: &str) -> Option<&'s Stmt> {
    match s {
        Stmt::Block(v) => {
            if let [
                Stmt::ProducerConsumer {
                    func: a,
                    producing: true,
                    ..
                },
                Stmt::ProducerConsumer {
                    func: b,
                    producing: false,
                    body,
                },
            ] = v.as_slice()
                && a == func
                && b == func
            {
                return Some(body);
            }
            v.iter().find_map(|s| consume_body(s, func))
        }
        Stmt::LetStmt { body, .. }
        | Stmt::ProducerConsumer { body, .. }
        | Stmt::For { body, .. }
        | Stmt::Realize { body, .. }
        | Stmt::Allocate { body, .. } => consume_body(body, func),
        Stmt::IfThenElse {
            then, otherwise, ..
        } => consume_body(then, func)
            .or_else(|| otherwise.as_deref().and_then(|o| consume_body(o, func))),
        Stmt::Assert { .. } | Stmt::Provide { .. } | Stmt::Store { .. } | Stmt::Evaluate(_) => None,
    }
}

fn max_of(min: &Expr, extent: &Expr) -> Expr {
    simplify(&Expr::sub(
        Expr::add(min.clone(), extent.clone()),
        Expr::i32(1),
    ))
}

/// The region of `func` that must be computed, given the box its consumers
/// need: apply `bound`/`align_bounds` and grow it by what the func's own
/// update stages write and read of it.
fn func_region(
    tree: &ScheduleTree,
    pipeline: &Pipeline,
    func: &str,
    required: Option<Box_>,
) -> Result<Box_, LowerError> {
    let f = pipeline
        .func(func)
        .ok_or_else(|| LowerBug(format!("unknown func {func}")))?;
    let sched = tree
        .func(func)
        .ok_or_else(|| LowerBug(format!("no schedule for {func}")))?;
    let mut region = if sched.is_output {
        (0..f.args.len())
            .map(|d| {
                let min = Expr::var_i32(buffer_field(func, "min", d));
                let ext = Expr::var_i32(buffer_field(func, "extent", d));
                Interval::new(min.clone(), max_of(&min, &ext))
            })
            .collect()
    } else {
        // A func nobody reads still gets an empty region of the right rank.
        required.unwrap_or_else(|| vec![Interval::new(Expr::i32(0), Expr::i32(-1)); f.args.len()])
    };
    for (i, min, extent) in &sched.bounds {
        region[*i] = Interval::new(min.clone(), max_of(min, extent));
    }
    for (i, modulus, remainder) in &sched.align {
        if let (Some(lo), Some(hi)) = (region[*i].min.clone(), region[*i].max.clone()) {
            let new_min = simplify(&Expr::add(
                Expr::mul(
                    Expr::div(Expr::sub(lo, remainder.clone()), modulus.clone()),
                    modulus.clone(),
                ),
                remainder.clone(),
            ));
            let new_max = simplify(&Expr::sub(
                Expr::add(
                    new_min.clone(),
                    Expr::mul(
                        Expr::div(
                            Expr::add(Expr::sub(hi, new_min.clone()), modulus.clone()),
                            modulus.clone(),
                        ),
                        modulus.clone(),
                    ),
                ),
                Expr::i32(1),
            ));
            region[*i] = Interval::new(new_min, new_max);
        }
    }
    // Updates may write (scatter) and read the func outside what consumers
    // need: the pure stage must initialise all of it.
    for (k, u) in f.updates.iter().enumerate() {
        let (pure, _) = stage_dims(f, k + 1);
        let mut scope = param_scope(pipeline);
        for (i, a) in f.args.iter().enumerate() {
            if pure.contains(a) {
                scope.push(a, region[i].clone());
            }
        }
        if let Some(r) = &u.rdom {
            for d in &r.dims {
                let lo = bounds_of_expr(&d.min, &mut scope);
                let ext = bounds_of_expr(&d.extent, &mut scope);
                let hi = match (&lo.max, &ext.max) {
                    (Some(m), Some(e)) => Some(max_of(m, e)),
                    _ => None,
                };
                scope.push(
                    &d.name,
                    Interval {
                        min: lo.min,
                        max: hi,
                    },
                );
            }
        }
        let mut touched = vec![
            u.args
                .iter()
                .map(|a| bounds_of_expr(a, &mut scope))
                .collect::<Vec<_>>(),
        ];
        let mut reads = Vec::new();
        collect_self_reads(&u.value, func, &mut reads);
        for args in reads {
            touched.push(args.iter().map(|a| bounds_of_expr(a, &mut scope)).collect());
        }
        for b in touched {
            for (x, y) in region.iter_mut().zip(b) {
                *x = x.union(&y);
            }
        }
    }
    for (d, i) in region.iter().enumerate() {
        if !i.is_bounded() {
            let dim = f.args.get(d).cloned().unwrap_or_default();
            return Err(LowerError::Algorithm(format!(
                "cannot infer the region of `{func}` that must be computed in dimension `{dim}`: an index used to read it has no known range; clamp the index or add `{func}.bound({dim}, min, extent)`"
            )));
        }
    }
    Ok(region)
}

fn collect_self_reads(e: &Expr, func: &str, out: &mut Vec<Vec<Expr>>) {
    struct R<'a>(&'a str, &'a mut Vec<Vec<Expr>>);
    impl argent_ir::visit::Visitor for R<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Call {
                target: CallTarget::Func(n),
                args,
            } = e.kind()
            {
                if n == self.0 {
                    self.1.push(args.clone());
                }
            }
            argent_ir::visit::walk_expr(self, e);
        }
    }
    R(func, out).visit_expr(e);
}

/// The `let` bindings of every stage's loop bounds for a func with `region`.
fn region_lets(pipeline: &Pipeline, func: &str, region: &Box_) -> Vec<(String, Expr)> {
    let mut lets = Vec::new();
    let Some(f) = pipeline.func(func) else {
        return lets;
    };
    for s in 0..=f.updates.len() {
        let (pure, rvars) = stage_dims(f, s);
        for (i, a) in f.args.iter().enumerate() {
            if pure.contains(a) {
                let iv = &region[i];
                if let (Some(lo), Some(hi)) = (&iv.min, &iv.max) {
                    lets.push((format!("{func}.s{s}.{a}.min"), lo.clone()));
                    lets.push((format!("{func}.s{s}.{a}.max"), hi.clone()));
                }
            }
        }
        if let Some(r) = f
            .updates
            .get(s.wrapping_sub(1))
            .and_then(|u| u.rdom.as_ref())
        {
            for d in &r.dims {
                if rvars.contains(&d.name) {
                    lets.push((format!("{func}.s{s}.{}.min", d.name), d.min.clone()));
                    lets.push((
                        format!("{func}.s{s}.{}.max", d.name),
                        max_of(&d.min, &d.extent),
                    ));
                }
            }
        }
    }
    lets
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    Searching,
    Found,
    Placed,
}

/// Puts a func's region lets at the top of the innermost loop that encloses
/// its production, after the lets already there. Every func computed at
/// that loop binds its region there, consumers first, so a producer's
/// region names its consumers' regions (`let outg_4.s0.x.min =
/// (outg_3.s0.x.min / 2) - 1`) instead of repeating their expansions: each
/// region stays a small expression however long the chain of stages.
struct LetPlacer<'a> {
    func: &'a str,
    lets: &'a [(String, Expr)],
    state: Placement,
}

impl Mutator for LetPlacer<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        e.clone()
    }
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        if self.state != Placement::Searching {
            return s.clone();
        }
        match s {
            Stmt::ProducerConsumer {
                func,
                producing: true,
                ..
            } if func == self.func => {
                self.state = Placement::Found;
                s.clone()
            }
            Stmt::For { .. } => map_child_stmts(s, |body| {
                let body = self.mutate_stmt(body);
                if self.state != Placement::Found {
                    return body;
                }
                self.state = Placement::Placed;
                after_leading_lets(&body, self.func, self.lets)
            }),
            _ => mutate_stmt_children(self, s),
        }
    }
}

/// Wraps the first statement below `s`'s leading lets (and `func`'s own
/// realization, whose storage is then bounded in terms of what encloses
/// it) in `lets`, so that they can use every name bound above them. Other
/// funcs' realizations are not entered: a consumer's region, bound before
/// its producer's, must enclose it.
fn after_leading_lets(s: &Stmt, func: &str, lets: &[(String, Expr)]) -> Stmt {
    match s {
        Stmt::LetStmt { .. } => map_child_stmts(s, |b| after_leading_lets(b, func, lets)),
        Stmt::Realize { func: realized, .. } if realized == func => {
            map_child_stmts(s, |b| after_leading_lets(b, func, lets))
        }
        _ => wrap_lets(lets, s.clone()),
    }
}

fn wrap_lets(lets: &[(String, Expr)], body: Stmt) -> Stmt {
    lets.iter().rev().fold(body, |b, (n, v)| Stmt::LetStmt {
        name: n.clone(),
        value: v.clone(),
        body: Box::new(b),
    })
}

/// Infer the region of every func and bind its stages' loop bounds.
/// Returns the body without the root-level lets and those lets (outermost
/// first); [`finish`] puts them back around the checks.
///
/// Example: for `blur_y(x, y) = blur_x(x, y - 1) + ..` with blur_x at the root,
/// `let blur_x.s0.y.min = blur_y.s0.y.min - 1` and
/// `let blur_x.s0.y.max = blur_y.s0.y.max + 1` are bound before `produce blur_x`.
pub fn bounds_inference(
    tree: &ScheduleTree,
    pipeline: &Pipeline,
    body: &Stmt,
) -> Result<(Stmt, Vec<(String, Expr)>), LowerError> {
    // Each lowering starts with no remembered simplifications: what the
    // last pipeline's bounds simplified to is of no use here, and its
    // expressions need not be kept alive.
    crate::arith::forget_simplifications();
    let mut stmt = body.clone();
    let mut root_lets: Vec<(String, Expr)> = Vec::new();
    let values = FuncValues::of(pipeline);
    let params = param_scope_over(pipeline, &values);
    let ranged_params = pipeline.params.iter().any(|p| p.range.is_some());
    let mut helper_count = 0;
    for name in tree.realization_order.iter().rev() {
        let sched = tree
            .func(name)
            .ok_or_else(|| LowerBug(format!("no schedule for {name}")))?;
        let consume = consume_body(&stmt, name)
            .ok_or_else(|| LowerBug(format!("injection point of {name} not found")))?;
        // Parameters as themselves first, so the region follows their
        // run-time values (local_laplacian's `levels` pyramid levels, not
        // the most its range allows); their declared ranges only bound the
        // dimensions that have no bound otherwise.
        let scope = Scope::default()
            .with_func_values(&values)
            .naming("", helper_count);
        let (mut required, scope) = box_read_in(consume, name, scope);
        let mut named;
        (named, helper_count) = scope.named();
        let unbounded = |b: &Option<Box_>| {
            b.as_ref()
                .is_some_and(|b| b.iter().any(|i| !i.is_bounded()))
        };
        if unbounded(&required) && ranged_params {
            let scope = params.clone().naming("", helper_count);
            let (ranged, scope) = box_read_in(consume, name, scope);
            let (more, count) = scope.named();
            named.extend(more);
            helper_count = count;
            if let (Some(symbolic), Some(ranged)) = (&mut required, ranged) {
                for (s, r) in symbolic.iter_mut().zip(ranged) {
                    if !s.is_bounded() {
                        *s = r;
                    }
                }
            }
        }
        let region = func_region(tree, pipeline, name, required)?;
        let region_lets = region_lets(pipeline, name, &region);
        let used: Vec<Expr> = region_lets.iter().map(|(_, v)| v.clone()).collect();
        let mut lets = needed_lets(&named, &used);
        lets.extend(region_lets);
        if sched.compute == Level::Root {
            root_lets.extend(lets);
            continue;
        }
        let mut placer = LetPlacer {
            func: name,
            lets: &lets,
            state: Placement::Searching,
        };
        stmt = placer.mutate_stmt(&stmt);
        if placer.state != Placement::Placed {
            // No loop encloses the func: its compute level is the root.
            root_lets.extend(lets);
        }
    }
    Ok((stmt, root_lets))
}

/// Fill in every `Realize`'s bounds with the box touched inside it.
///
/// Example: `realize blur_x: u16() { .. }` becomes
/// `realize blur_x: u16([blur_x.s0.x.min, blur_x.s0.x.max - blur_x.s0.x.min + 1], ..)`.
pub fn realize_bounds(pipeline: &Pipeline, body: &Stmt) -> Result<Stmt, LowerError> {
    struct R {
        err: Option<LowerError>,
        helper_count: usize,
        values: std::sync::Arc<FuncValues>,
    }
    impl Mutator for R {
        /// Only statements change: expressions are not walked.
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            e.clone()
        }

        fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
            if let Stmt::Realize {
                func,
                ty,
                bounds,
                body,
            } = s
            {
                let body = self.mutate_stmt(body);
                if !bounds.is_empty() {
                    return Stmt::Realize {
                        func: func.clone(),
                        ty: *ty,
                        bounds: bounds.clone(),
                        body: Box::new(body),
                    };
                }
                // Consumers only read what bounds inference made the stages
                // write, so the written box is the storage needed.
                let mut f = BoxFinder::new(
                    func,
                    true,
                    false,
                    Scope::default()
                        .with_func_values(&self.values)
                        .naming("storage_", self.helper_count),
                );
                f.stmt(&body);
                let b = f.result.unwrap_or_default();
                let named;
                (named, self.helper_count) = f.scope.named();
                let mut ranges = Vec::new();
                for iv in b {
                    match (iv.min, iv.max) {
                        (Some(lo), Some(hi)) => {
                            let mut extent =
                                simplify(&Expr::add(Expr::sub(hi, lo.clone()), Expr::i32(1)));
                            // A region computed for iterations that a guard
                            // skips (the rows of a tile past the image's
                            // edge) is empty, and its max may lie below its
                            // min: allocate nothing for it.
                            if extent.as_int().is_none() {
                                extent = Expr::max(extent, Expr::i32(0));
                            }
                            ranges.push(Range { min: lo, extent });
                        }
                        _ => {
                            self.err = Some(LowerError::Algorithm(format!(
                                "cannot bound the storage of `{func}`; add a bound() directive"
                            )));
                        }
                    }
                }
                let used: Vec<Expr> = ranges
                    .iter()
                    .flat_map(|r| [r.min.clone(), r.extent.clone()])
                    .collect();
                let lets = needed_lets(&named, &used);
                return wrap_lets(
                    &lets,
                    Stmt::Realize {
                        func: func.clone(),
                        ty: *ty,
                        bounds: ranges,
                        body: Box::new(body),
                    },
                );
            }
            mutate_stmt_children(self, s)
        }
    }
    let mut r = R {
        err: None,
        helper_count: 0,
        values: FuncValues::of(pipeline),
    };
    let out = r.mutate_stmt(body);
    match r.err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Add the run-time checks (inputs cover what each stage reads, outputs
/// cover what is written) at the top of `body`, then wrap it in the
/// root-level region lets.
///
/// Example: `assert(((blur_x.s0.x.min - 1) >= in.min.0) && .., InputTooSmall { input: "in", stage: "blur_x", dim: 0 }, [..])`.
pub fn finish(
    pipeline: &Pipeline,
    body: Stmt,
    root_lets: &[(String, Expr)],
) -> Result<Stmt, LowerError> {
    let mut checks = Vec::new();
    let params = param_scope(pipeline);
    let readers: Vec<String> = pipeline.funcs.iter().map(|f| f.name.clone()).collect();
    let mut named = Vec::new();
    let mut count = 0;
    for input in &pipeline.inputs {
        let scope = params.clone().naming("checked_", count);
        let (by_reader, scope) = boxes_read_by_each(&body, &input.name, scope);
        let (more, next) = scope.named();
        named.extend(more);
        count = next;
        for reader in &readers {
            let groups: Vec<&ReadsOf> = by_reader.iter().filter(|r| &r.reader == reader).collect();
            if groups.is_empty() {
                continue;
            }
            for (d, (lo, hi)) in checked_region(&input.name, reader, &groups)?
                .into_iter()
                .enumerate()
            {
                checks.push(region_check(
                    &input.name,
                    d,
                    (&lo, &hi),
                    AssertKind::InputTooSmall {
                        input: input.name.clone(),
                        stage: reader.clone(),
                        dim: d,
                    },
                ));
            }
        }
    }
    for out in &pipeline.outputs {
        if let Some(b) = box_provided(&body, out) {
            // Only writes matter for outputs; reads are of values written.
            for (d, iv) in b.iter().enumerate() {
                if let (Some(lo), Some(hi)) = (&iv.min, &iv.max) {
                    checks.push(region_check(
                        out,
                        d,
                        (lo, hi),
                        AssertKind::OutputTooSmall {
                            output: out.clone(),
                            dim: d,
                        },
                    ));
                }
            }
        }
    }
    let checked: Vec<Expr> = checks
        .iter()
        .filter_map(|c| match c {
            Stmt::Assert { cond, .. } => Some(cond.clone()),
            _ => None,
        })
        .collect();
    let check_lets = needed_lets(&named, &checked);
    let mut all = checks;
    all.push(DropEmptyConsumes.mutate_stmt(&body));
    let body = wrap_lets(root_lets, wrap_lets(&check_lets, Stmt::block(all)));
    let body = with_param_checks(pipeline, body);
    let mut c = ConstantExtents {
        lets: Vec::new(),
        err: None,
    };
    let body = c.mutate_stmt(&body);
    match c.err {
        Some(e) => Err(e),
        None => Ok(body),
    }
}

/// `body` after a check of each parameter's declared range, first of all:
/// bounds inference assumes the ranges (see [`param_scope`]), and so may
/// code generation (argent-wasm's plain float truncations), so nothing
/// may run before they hold. The comparisons fail for NaN.
///
/// ```text
/// param f32 r_sigma in 0.02 .. 1.0
///   ==>  assert(((0.02 <= r_sigma) && (r_sigma <= 1.0)), ParamOutOfRange { param: "r_sigma" }, [r_sigma])
///        <body>
/// ```
fn with_param_checks(pipeline: &Pipeline, body: Stmt) -> Stmt {
    let mut stmts: Vec<Stmt> = pipeline
        .params
        .iter()
        .filter_map(|p| {
            let (lo, hi) = p.range?;
            let value = Expr::var(p.ty, p.name.clone());
            Some(Stmt::Assert {
                cond: Expr::and(
                    Expr::le(Expr::constant(p.ty, lo), value.clone()),
                    Expr::le(value.clone(), Expr::constant(p.ty, hi)),
                ),
                kind: AssertKind::ParamOutOfRange {
                    param: p.name.clone(),
                },
                args: vec![value],
            })
        })
        .collect();
    if stmts.is_empty() {
        return body;
    }
    stmts.push(body);
    Stmt::block(stmts)
}

/// At most this many regions under distinct conditions per stage and
/// input: each adds a `select` to the check, so past the limit the rest
/// are checked as one region, read where any of their conditions holds
/// (which may then ask for more than is read). Examples have none left
/// once [`covered_anyway`] and [`within`] have dropped what cannot matter;
/// random programs have up to a dozen.
const MAX_CONDITIONAL_REGIONS: usize = 32;

/// The region of `input` that `reader` needs, per dimension, from the
/// regions it reads under each condition (`groups`). A region read under
/// a condition counts only where the condition holds: when it fails, the
/// region contributes the empty interval `[i32::MAX, i32::MIN]`, which the
/// check passes and the bounds query ignores. Conditions that cannot
/// change the outcome are left out: where the region lies within what
/// `reader` reads anyway, or within the input itself.
///
/// ```text
/// out(x, y) = select(x < 0, in(x * x + 1000, y), 0) + in(x, y)
///   x needed: [min(out.min.0, select(c, lo, 2147483647)), max(out.max.0, select(c, hi, -2147483648))]
///   where c = (out.min.0 <= min(out.max.0, -1)): some x is below 0
/// ```
fn checked_region(
    input: &str,
    reader: &str,
    groups: &[&ReadsOf],
) -> Result<Vec<(Expr, Expr)>, LowerError> {
    let dims = groups[0].region.len();
    let mut bounded = Vec::with_capacity(groups.len());
    for group in groups {
        let mut region = Vec::with_capacity(dims);
        for (d, iv) in group.region.iter().enumerate() {
            let (Some(lo), Some(hi)) = (&iv.min, &iv.max) else {
                return Err(LowerError::Algorithm(format!(
                    "cannot bound the region of input `{input}` that `{reader}` reads in dimension {d}; clamp the index or use a boundary condition such as repeat_edge"
                )));
            };
            region.push((lo.clone(), hi.clone()));
        }
        bounded.push((group.condition.as_ref(), region));
    }
    let always = union_of(bounded.iter().filter(|(c, _)| c.is_none()).map(|(_, r)| r)).map(|r| {
        r.iter()
            .map(|(l, h)| (simplify(l), simplify(h)))
            .collect::<Vec<_>>()
    });
    // Arms read the same intervals in some dimensions (a border rule's
    // rows): each fact is proved once.
    let mut proofs = Proofs::default();
    let mut needs_condition = |region: &Vec<(Expr, Expr)>| {
        !covered_anyway(input, region, &mut proofs)
            && always
                .as_ref()
                .is_none_or(|a| !within(region, a, &mut proofs))
    };
    let mut conditional: Vec<(Expr, Vec<(Expr, Expr)>)> = Vec::new();
    let mut plain: Vec<Vec<(Expr, Expr)>> = Vec::new();
    for (condition, region) in bounded {
        match condition {
            Some(c) if needs_condition(&region) => conditional.push((c.clone(), region)),
            _ => plain.push(region),
        }
    }
    if conditional.len() > MAX_CONDITIONAL_REGIONS {
        // The rest as one region, read where any of their conditions holds.
        let rest = conditional.split_off(MAX_CONDITIONAL_REGIONS - 1);
        let any = rest
            .iter()
            .map(|(c, _)| c.clone())
            .reduce(Expr::or)
            .expect("not empty");
        let region = union_of(rest.iter().map(|(_, r)| r)).expect("not empty");
        conditional.push((simplify(&any), region));
    }
    let counted = conditional.into_iter().map(|(c, region)| {
        region
            .into_iter()
            .map(|(lo, hi)| {
                (
                    Expr::select(c.clone(), lo, Expr::i32(i32::MAX.into())),
                    Expr::select(c.clone(), hi, Expr::i32(i32::MIN.into())),
                )
            })
            .collect::<Vec<_>>()
    });
    let counted: Vec<Vec<(Expr, Expr)>> = plain.into_iter().chain(counted).collect();
    let region = union_of(&counted).unwrap_or_default();
    Ok(region
        .iter()
        .map(|(lo, hi)| (simplify(lo), simplify(hi)))
        .collect())
}

/// The smallest region containing each of `regions` (unsimplified);
/// `None` if there are none.
fn union_of<'r>(
    regions: impl IntoIterator<Item = &'r Vec<(Expr, Expr)>>,
) -> Option<Vec<(Expr, Expr)>> {
    regions.into_iter().fold(None, |acc, r| {
        Some(match acc {
            None => r.clone(),
            Some(acc) => acc
                .into_iter()
                .zip(r)
                .map(|((l, h), (lo, hi))| (Expr::min(l, lo.clone()), Expr::max(h, hi.clone())))
                .collect(),
        })
    })
}

/// Whether each interval of `inner` is known to lie within the same
/// dimension's interval of `outer` (its min at least the other's, its max
/// at most), so that a union with `outer` is `outer`.
fn within(inner: &[(Expr, Expr)], outer: &[(Expr, Expr)], proofs: &mut Proofs) -> bool {
    inner
        .iter()
        .zip(outer)
        .all(|((lo, hi), (outer_lo, outer_hi))| {
            proofs.nonpositive(Expr::sub(outer_lo.clone(), lo.clone()))
                && proofs.nonpositive(Expr::sub(hi.clone(), outer_hi.clone()))
        })
}

/// [`crate::arith::provably_nonpositive`], remembered.
#[derive(Default)]
struct Proofs(Vec<(Expr, bool)>);

impl Proofs {
    fn nonpositive(&mut self, e: Expr) -> bool {
        if let Some((_, known)) = self.0.iter().find(|(f, _)| *f == e) {
            return *known;
        }
        let known = crate::arith::provably_nonpositive(&e, 4);
        self.0.push((e, known));
        known
    }
}

/// Whether `buffer` is known to cover `region` wherever that is not empty,
/// if the buffer is at least [`ASSUMED_EXTENT`] wide in each dimension, so
/// that a read of it needs no condition: a border rule's `src(1, *)`,
/// narrowed to the rows of `src`, reads `[src.min.0 + 1, src.min.0 + 1]`
/// in x and `[max(lo, src.min.1), min(hi, src.max.1)]` in y. Leaving a condition
/// out only makes a check stricter (smaller buffers are checked as before
/// conditions were tracked).
fn covered_anyway(buffer: &str, region: &[(Expr, Expr)], proofs: &mut Proofs) -> bool {
    let assumed: std::collections::HashMap<String, Expr> = (0..region.len())
        .map(|d| {
            let extent = buffer_field(buffer, "extent", d);
            let at_least = Expr::max(Expr::var_i32(extent.clone()), Expr::i32(ASSUMED_EXTENT));
            (extent, at_least)
        })
        .collect();
    let mut at_most_zero =
        |e: Expr| proofs.nonpositive(argent_arith::substitute_many(&e, &assumed));
    region.iter().enumerate().all(|(d, (lo, hi))| {
        let given_min = Expr::var_i32(buffer_field(buffer, "min", d));
        let given_max = max_of(
            &given_min,
            &Expr::var_i32(buffer_field(buffer, "extent", d)),
        );
        at_most_zero(Expr::sub(given_min, lo.clone()))
            && at_most_zero(Expr::sub(hi.clone(), given_max))
    })
}

/// See [`covered_anyway`].
const ASSUMED_EXTENT: i64 = 16;

/// The check that `buffer` covers `[lo, hi]` in dimension `d`.
fn region_check(buffer: &str, d: usize, (lo, hi): (&Expr, &Expr), kind: AssertKind) -> Stmt {
    let given_min = Expr::var_i32(buffer_field(buffer, "min", d));
    let given_max = max_of(
        &given_min,
        &Expr::var_i32(buffer_field(buffer, "extent", d)),
    );
    let cond = simplify(&Expr::and(
        Expr::binary(argent_ir::BinOp::Ge, lo.clone(), given_min.clone()),
        Expr::le(hi.clone(), given_max.clone()),
    ));
    Stmt::Assert {
        cond,
        kind,
        args: vec![lo.clone(), hi.clone(), given_min, given_max],
    }
}

/// Removes `consume f {}` blocks left where nothing follows a producer.
struct DropEmptyConsumes;

impl Mutator for DropEmptyConsumes {
    /// Only statements change: expressions are not walked.
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        e.clone()
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::ProducerConsumer {
                producing: false,
                body,
                ..
            } if body.is_no_op() => Stmt::no_op(),
            _ => mutate_stmt_children(self, s),
        }
    }
}

/// Vectorized and unrolled loops need constant extents; where the schedule
/// left that to bounds inference (`vectorize(c)` of a func whose consumers
/// read `c` in `0..3`), substitute the enclosing bindings to find it.
struct ConstantExtents {
    lets: Vec<(String, Expr)>,
    err: Option<LowerError>,
}

impl Mutator for ConstantExtents {
    /// Only statements change: expressions are not walked.
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        e.clone()
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::LetStmt { name, value, .. } => {
                self.lets.push((name.clone(), value.clone()));
                let out = mutate_stmt_children(self, s);
                self.lets.pop();
                out
            }
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } if matches!(
                kind,
                argent_ir::ForKind::Vectorized | argent_ir::ForKind::Unrolled
            ) && extent.as_int().is_none() =>
            {
                let mut e = extent.clone();
                for (n, v) in self.lets.iter().rev() {
                    e = argent_ir::visit::substitute(&e, n, v);
                }
                let e = simplify(&e);
                // An unrolled loop whose extent varies (the last rows of a
                // tile clamped to the image) runs its largest extent, each
                // copy guarded to the iterations the loop really has.
                if *kind == argent_ir::ForKind::Unrolled && e.as_int().is_none() {
                    if let Some(k) = crate::arith::const_upper_bound(&e).filter(|k| *k > 0) {
                        let inside = Expr::lt(
                            Expr::var_i32(var.clone()),
                            Expr::add(min.clone(), extent.clone()),
                        );
                        return Stmt::For {
                            var: var.clone(),
                            min: min.clone(),
                            extent: Expr::i32(k),
                            kind: *kind,
                            body: Box::new(Stmt::IfThenElse {
                                cond: inside,
                                then: Box::new(self.mutate_stmt(body)),
                                otherwise: None,
                            }),
                        };
                    }
                    // Its extent has no constant bound (a channel range
                    // taken from the output buffer): unrolling is only a
                    // hint, so the loop stays serial rather than failing.
                    return Stmt::For {
                        var: var.clone(),
                        min: min.clone(),
                        extent: extent.clone(),
                        kind: argent_ir::ForKind::Serial,
                        body: Box::new(self.mutate_stmt(body)),
                    };
                }
                if e.as_int().is_none() && self.err.is_none() {
                    self.err = Some(LowerError::Algorithm(format!(
                        "the loop `{var}` is {} but its extent `{extent}` is not a constant; give the directive a factor or add a bound()",
                        kind.keyword()
                    )));
                }
                Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: e,
                    kind: *kind,
                    body: Box::new(self.mutate_stmt(body)),
                }
            }
            _ => mutate_stmt_children(self, s),
        }
    }
}
