//! Loop synthesis: scan the schedule tree and build the loop nest from the
//! output inward (Halide's `schedule_functions`). Each stage becomes loops
//! over its band members (outermost first) around a `Provide`; split
//! variables are rebuilt by `let`s inside the innermost loop; producers are
//! injected at their compute level (`produce`/`consume`) and `Realize`d at
//! their store level; inlined funcs are substituted into their consumers.
//! Loop bounds are the symbolic variables `f.s0.x.min`/`.max` that bounds
//! inference binds afterwards.

use crate::arith::simplify;
use crate::error::{LowerBug, LowerError};
use crate::schedule_tree::{Level, ScheduleTree, StageBand, Transform};
use argent_ir::fast_hash::FastHashMap as HashMap;
use argent_ir::visit::{
    Mutator, Visitor, mutate_expr_children, mutate_stmt_children, substitute, walk_expr,
};
use argent_ir::{CallTarget, Expr, ExprKind, ForKind, Func, Pipeline, Stmt, TailStrategy};
use std::collections::BTreeSet;

/// Substitute every inlined func into the definitions of the others.
/// Call arguments that are not plain variables or constants are bound by
/// `let` so that they are computed once.
pub fn inline_funcs(pipeline: &Pipeline, inlined: &BTreeSet<String>) -> Pipeline {
    let mut p = pipeline.clone();
    let order: Vec<String> = p
        .funcs
        .iter()
        .filter(|f| inlined.contains(&f.name))
        .map(|f| f.name.clone())
        .collect();
    let mut counter = 0usize;
    // The funcs each definition calls: a definition that does not call the
    // func being inlined is left as it is without walking it (a pyramid of
    // many inlined funcs would otherwise walk every definition once per
    // inlined func).
    let mut calls: Vec<BTreeSet<String>> = p.funcs.iter().map(funcs_called).collect();
    for name in order {
        let Some(at) = p.funcs.iter().position(|f| f.name == name) else {
            continue;
        };
        let def = p.funcs[at].clone();
        // Kept up to date as callees are inlined into it, like every
        // definition's: walking a definition again after each inlining
        // made a chain of inlined stages quadratic.
        let def_calls = calls[at].clone();
        for (f, called) in p.funcs.iter_mut().zip(calls.iter_mut()) {
            if f.name == name || !called.contains(&name) {
                continue;
            }
            let mut m = Inliner {
                def: &def,
                counter: &mut counter,
            };
            f.value = m.mutate_expr(&f.value);
            for u in f.updates.iter_mut() {
                u.value = m.mutate_expr(&u.value);
                u.args = u.args.iter().map(|a| m.mutate_expr(a)).collect();
                if let Some(r) = u.rdom.as_mut() {
                    if let Some(pred) = r.predicate.as_mut() {
                        *pred = m.mutate_expr(pred);
                    }
                    for d in r.dims.iter_mut() {
                        d.min = m.mutate_expr(&d.min);
                        d.extent = m.mutate_expr(&d.extent);
                    }
                }
            }
            called.remove(&name);
            called.extend(def_calls.iter().cloned());
        }
    }
    p.funcs.retain(|f| !inlined.contains(&f.name));
    p
}

/// The names of the funcs that `f`'s definitions (pure and update) call.
fn funcs_called(f: &Func) -> BTreeSet<String> {
    struct Calls(BTreeSet<String>);
    impl Visitor for Calls {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Call {
                target: CallTarget::Func(n),
                ..
            } = e.kind()
            {
                self.0.insert(n.clone());
            }
            walk_expr(self, e);
        }
    }
    let mut c = Calls(BTreeSet::new());
    c.visit_expr(&f.value);
    for u in &f.updates {
        c.visit_expr(&u.value);
        u.args.iter().for_each(|a| c.visit_expr(a));
        if let Some(r) = &u.rdom {
            if let Some(pred) = &r.predicate {
                c.visit_expr(pred);
            }
            for d in &r.dims {
                c.visit_expr(&d.min);
                c.visit_expr(&d.extent);
            }
        }
    }
    c.0
}

struct Inliner<'a> {
    def: &'a Func,
    counter: &'a mut usize,
}

impl Mutator for Inliner<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        let e = mutate_expr_children(self, e);
        let ExprKind::Call {
            target: CallTarget::Func(n),
            args,
        } = e.kind()
        else {
            return e;
        };
        if *n != self.def.name {
            return e;
        }
        let mut body = self.def.value.clone();
        let mut lets = Vec::new();
        for (param, arg) in self.def.args.iter().zip(args) {
            // The body as it is, shared: `f(x, y)` inside `g(x, y)`.
            if arg.as_var() == Some(param.as_str()) {
                continue;
            }
            if arg.is_const() || arg.as_var().is_some() {
                body = substitute(&body, param, arg);
            } else {
                *self.counter += 1;
                let name = format!("{}.{param}.{}", self.def.name, self.counter);
                body = substitute(&body, param, &Expr::var(arg.ty(), name.clone()));
                lets.push((name, arg.clone()));
            }
        }
        for (name, value) in lets.into_iter().rev() {
            body = Expr::let_in(name, value, body);
        }
        body
    }
}

/// Rename the pure variables and reduction variables of a definition to
/// the stage's loop names (`x` -> `f.s0.x`).
fn rename_vars(e: &Expr, names: &HashMap<String, String>) -> Expr {
    struct Renamer<'a>(&'a HashMap<String, String>);
    impl Mutator for Renamer<'_> {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            if let ExprKind::Var(n) = e.kind() {
                if let Some(new) = self.0.get(n) {
                    return Expr::var(e.ty(), new.clone());
                }
                return e.clone();
            }
            mutate_expr_children(self, e)
        }
    }
    Renamer(names).mutate_expr(e)
}

fn var(name: impl Into<String>) -> Expr {
    Expr::var_i32(name)
}

/// The names of a stage's original dimensions: pure variables it loops
/// over and its reduction variables.
pub fn stage_dims(f: &Func, stage: usize) -> (Vec<String>, Vec<String>) {
    if stage == 0 {
        return (f.args.clone(), Vec::new());
    }
    let u = &f.updates[stage - 1];
    let pure = f
        .args
        .iter()
        .enumerate()
        .filter(|(i, a)| u.args.get(*i).and_then(|e| e.as_var()) == Some(a.as_str()))
        .map(|(_, a)| a.clone())
        .collect();
    let rvars = u
        .rdom
        .as_ref()
        .map(|r| r.dims.iter().map(|d| d.name.clone()).collect())
        .unwrap_or_default();
    (pure, rvars)
}

/// Free variables of an expression.
fn free_vars(e: &Expr, out: &mut BTreeSet<String>) {
    struct Vars<'a>(&'a mut BTreeSet<String>);
    impl Visitor for Vars<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Var(n) = e.kind() {
                self.0.insert(n.clone());
            }
            walk_expr(self, e);
        }
    }
    Vars(out).visit_expr(e);
}

/// The loop nest of one stage.
///
/// Example: `blur_y(x, y) = ...` with `split(y, yo, yi, 8)` (shift inwards) gives
/// ```text
/// for (blur_y.s0.y.yo, 0, (blur_y.s0.y.max - blur_y.s0.y.min + 8) / 8) {
///   for (blur_y.s0.y.yi, 0, 8) {
///     for (blur_y.s0.x, blur_y.s0.x.min, blur_y.s0.x.max - blur_y.s0.x.min + 1) {
///       let blur_y.s0.y = min(blur_y.s0.y.yo * 8, blur_y.s0.y.max - blur_y.s0.y.min - 7) + blur_y.s0.y.yi + blur_y.s0.y.min
///       blur_y(blur_y.s0.x, blur_y.s0.y) = ...
/// ```
pub fn stage_loop_nest(f: &Func, band: &StageBand) -> Result<Stmt, LowerError> {
    let prefix = band.prefix();
    let (pure, rvars) = stage_dims(f, band.stage);
    let names: HashMap<String, String> = pure
        .iter()
        .chain(&rvars)
        .map(|v| (v.clone(), format!("{prefix}{v}")))
        .collect();
    let (args, value, predicate) = if band.stage == 0 {
        let args = f
            .args
            .iter()
            .map(|a| var(format!("{prefix}{a}")))
            .collect::<Vec<_>>();
        (args, rename_vars(&f.value, &names), None)
    } else {
        let u = &f.updates[band.stage - 1];
        let mut used = BTreeSet::new();
        free_vars(&u.value, &mut used);
        u.args.iter().for_each(|a| free_vars(a, &mut used));
        if let Some(a) = f
            .args
            .iter()
            .find(|a| used.contains(*a) && !pure.contains(a))
        {
            return Err(LowerError::Algorithm(format!(
                "update {} of `{}` uses the pure variable `{a}` but not as its own argument; pure variables of an update must appear unchanged in their position",
                band.stage - 1,
                f.name
            )));
        }
        let args = u.args.iter().map(|a| rename_vars(a, &names)).collect();
        let pred = u
            .rdom
            .as_ref()
            .and_then(|r| r.predicate.as_ref())
            .map(|p| rename_vars(p, &names));
        (args, rename_vars(&u.value, &names), pred)
    };
    let args = args.iter().map(simplify).collect();
    let mut body = Stmt::Provide {
        func: f.name.clone(),
        args,
        value,
    };
    if let Some(p) = predicate {
        body = Stmt::IfThenElse {
            cond: p,
            then: Box::new(body),
            otherwise: None,
        };
    }
    // (min, extent) of every loop, keyed by full dim name.
    let mut ranges: HashMap<String, (Expr, Expr)> = HashMap::default();
    for v in pure.iter().chain(&rvars) {
        let (lo, hi) = (
            var(format!("{prefix}{v}.min")),
            var(format!("{prefix}{v}.max")),
        );
        ranges.insert(
            v.clone(),
            (
                lo.clone(),
                simplify(&Expr::add(Expr::sub(hi, lo), Expr::i32(1))),
            ),
        );
    }
    let mut lets: Vec<(String, Expr)> = Vec::new();
    let mut guards: Vec<Expr> = Vec::new();
    for t in &band.transforms {
        match t {
            Transform::Split {
                old,
                outer,
                inner,
                factor,
                tail,
            } => {
                let (m, e) = ranges
                    .get(old)
                    .cloned()
                    .ok_or_else(|| LowerBug(format!("split of unknown dim {old}")))?;
                let (o, i) = (
                    var(format!("{prefix}{outer}")),
                    var(format!("{prefix}{inner}")),
                );
                let outer_extent = simplify(&Expr::div(
                    Expr::sub(Expr::add(e.clone(), factor.clone()), Expr::i32(1)),
                    factor.clone(),
                ));
                ranges.insert(outer.clone(), (Expr::i32(0), outer_extent));
                ranges.insert(inner.clone(), (Expr::i32(0), factor.clone()));
                let offset = Expr::add(Expr::mul(o.clone(), factor.clone()), i.clone());
                // A vector loop shifted inwards is its stage's innermost
                // loop: its start is marked `likely` (Halide's
                // `likely_if_innermost`), so partition_loops gives it a
                // steady state without the `min` and a last, shifted
                // iteration. Outer loops are not partitioned for it: that
                // would copy their whole bodies for one iteration. Unrolled
                // loops inside it (`reorder(c, x).vectorize(x, 4).unroll(c)`)
                // become straight-line code, so they leave it innermost, as
                // in Halide, where `likely_if_innermost` is resolved after
                // unrolling.
                let mut dims = band.dims.iter().skip_while(|d| d.kind == ForKind::Unrolled);
                let innermost_vector_loop = dims
                    .next()
                    .is_some_and(|d| d.full == *inner && d.kind == ForKind::Vectorized)
                    && dims.next().is_some_and(|d| d.full == *outer);
                let start = Expr::mul(o, factor.clone());
                let start = if innermost_vector_loop {
                    Expr::likely(start)
                } else {
                    start
                };
                // A factor that divides a constant extent leaves no tail:
                // every point of the split loops is in range, so the value
                // needs neither a guard nor a clamp (Halide treats such
                // splits as exact too). Without the clamp, bounds inference
                // and storage folding see the footprint of one iteration as
                // a constant height (`split(yi, yi, yii, 2)` inside a strip
                // of 128 rows).
                let exact = matches!(
                    (crate::arith::const_int(&e), crate::arith::const_int(factor)),
                    (Some(extent), Some(f)) if f > 0 && extent % f == 0
                );
                let value = match tail {
                    _ if exact => Expr::add(offset, m),
                    TailStrategy::ShiftInwards => Expr::add(
                        Expr::add(Expr::min(start, Expr::sub(e.clone(), factor.clone())), i),
                        m.clone(),
                    ),
                    TailStrategy::GuardWithIf => {
                        guards.push(simplify(&Expr::lt(offset.clone(), e.clone())));
                        // The clamp never changes the value inside the guard;
                        // it tells bounds inference the variable stays in range.
                        Expr::max(
                            Expr::min(
                                Expr::add(offset, m.clone()),
                                simplify(&Expr::add(m.clone(), Expr::sub(e, Expr::i32(1)))),
                            ),
                            m,
                        )
                    }
                    _ => Expr::add(offset, m),
                };
                let value = match value.kind() {
                    // Keep the clamp's shape (the simplifier may fold it when
                    // the bounds are constant, which is fine).
                    ExprKind::Binary {
                        op: argent_ir::BinOp::Max,
                        ..
                    } => value,
                    _ => simplify(&value),
                };
                lets.push((format!("{prefix}{old}"), value));
            }
            Transform::Fuse {
                inner,
                outer,
                fused,
            } => {
                let (mi, ei) = ranges
                    .get(inner)
                    .cloned()
                    .ok_or_else(|| LowerBug(format!("fuse of unknown dim {inner}")))?;
                let (mo, eo) = ranges
                    .get(outer)
                    .cloned()
                    .ok_or_else(|| LowerBug(format!("fuse of unknown dim {outer}")))?;
                // An empty region may give both extents negative; their
                // product must not turn into a positive trip count.
                let nonnegative = |e: &Expr| Expr::max(e.clone(), Expr::i32(0));
                ranges.insert(
                    fused.clone(),
                    (
                        Expr::i32(0),
                        simplify(&Expr::mul(nonnegative(&ei), nonnegative(&eo))),
                    ),
                );
                let fv = var(format!("{prefix}{fused}"));
                // Both definitions go in one group: the inner one is pushed
                // second so that it is bound outside the outer one.
                // Clamped like guarded splits, so bounds inference sees the
                // exact ranges instead of dividing by a symbolic extent.
                let clamp = |v: Expr, m: Expr, e: Expr| {
                    let hi = simplify(&Expr::sub(Expr::add(m.clone(), e), Expr::i32(1)));
                    Expr::max(Expr::min(simplify(&v), hi), m)
                };
                lets.push((
                    format!("{prefix}{outer}"),
                    clamp(
                        Expr::add(Expr::div(fv.clone(), ei.clone()), mo.clone()),
                        mo,
                        eo,
                    ),
                ));
                lets.push((
                    format!("{prefix}{inner}"),
                    clamp(Expr::add(Expr::modulo(fv, ei.clone()), mi.clone()), mi, ei),
                ));
            }
        }
    }
    if let Some(cond) = guards.into_iter().reduce(Expr::and) {
        body = Stmt::IfThenElse {
            cond: Expr::likely(cond),
            then: Box::new(body),
            otherwise: None,
        };
    }
    for (name, value) in lets {
        body = Stmt::LetStmt {
            name,
            value,
            body: Box::new(body),
        };
    }
    for d in &band.dims {
        let (min, extent) = ranges
            .get(&d.full)
            .cloned()
            .ok_or_else(|| LowerBug(format!("no range for dim {}", d.full)))?;
        body = Stmt::For {
            var: format!("{prefix}{}", d.full),
            min,
            extent,
            kind: d.kind,
            body: Box::new(body),
        };
    }
    Ok(body)
}

/// The statements computing every stage of `f`, in order.
pub fn produce_stmt(tree: &ScheduleTree, f: &Func) -> Result<Stmt, LowerError> {
    let mut stages = Vec::new();
    for s in 0..=f.updates.len() {
        let band = tree
            .band(&f.name, s)
            .ok_or_else(|| LowerBug(format!("no band for {}.s{s}", f.name)))?;
        stages.push(stage_loop_nest(f, band)?);
    }
    Ok(Stmt::block(stages))
}

/// Wrap the body of the loop named `loop_var` with `wrap`; returns whether found.
fn wrap_loop_body(s: &Stmt, loop_var: &str, wrap: &mut dyn FnMut(Stmt) -> Stmt) -> (Stmt, bool) {
    struct Finder<'a> {
        loop_var: &'a str,
        wrap: &'a mut dyn FnMut(Stmt) -> Stmt,
        found: bool,
    }
    impl Mutator for Finder<'_> {
        /// Only statements change: expressions are not walked.
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            e.clone()
        }

        fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
            if self.found {
                return s.clone();
            }
            if let Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } = s
            {
                if var == self.loop_var {
                    self.found = true;
                    return Stmt::For {
                        var: var.clone(),
                        min: min.clone(),
                        extent: extent.clone(),
                        kind: *kind,
                        body: Box::new((self.wrap)((**body).clone())),
                    };
                }
            }
            mutate_stmt_children(self, s)
        }
    }
    let mut f = Finder {
        loop_var,
        wrap,
        found: false,
    };
    let out = f.mutate_stmt(s);
    (out, f.found)
}

fn level_loop(level: &Level) -> Option<String> {
    match level {
        Level::At { func, stage, var } => Some(format!("{func}.s{stage}.{var}")),
        _ => None,
    }
}

/// Synthesise the loop nest of the whole pipeline from the schedule tree:
/// outputs first, then each producer injected at its compute level (in
/// reverse realization order), `Realize`d at its store level. Realize
/// bounds are left empty for bounds inference to fill.
///
/// Example (blur_x computed at the root, blur_y the output):
/// ```text
/// realize blur_x: u16() {
///   produce blur_x { for (blur_x.s0.y, ..) { for (blur_x.s0.x, ..) { blur_x(..) = .. } } }
///   consume blur_x { produce blur_y { for (blur_y.s0.y, ..) { .. } } }
/// }
/// ```
pub fn synthesize(tree: &ScheduleTree) -> Result<Stmt, LowerError> {
    let inlined: BTreeSet<String> = tree
        .funcs
        .iter()
        .filter(|s| s.compute == Level::Inline)
        .map(|s| s.name.clone())
        .collect();
    let pipeline = inline_funcs(&tree.pipeline, &inlined);
    let mut stmt = Stmt::no_op();
    for name in tree.realization_order.iter().rev() {
        let f = pipeline
            .func(name)
            .ok_or_else(|| LowerBug(format!("func {name} vanished")))?;
        let sched = tree
            .func(name)
            .ok_or_else(|| LowerBug(format!("no schedule for {name}")))?;
        let produce = produce_stmt(tree, f)?;
        let inject = |body: Stmt| -> Stmt {
            Stmt::Block(vec![
                Stmt::ProducerConsumer {
                    func: name.clone(),
                    producing: true,
                    body: Box::new(produce.clone()),
                },
                Stmt::ProducerConsumer {
                    func: name.clone(),
                    producing: false,
                    body: Box::new(body),
                },
            ])
        };
        let realize = |body: Stmt| -> Stmt {
            Stmt::Realize {
                func: name.clone(),
                ty: f.ty,
                bounds: Vec::new(),
                body: Box::new(body),
            }
        };
        let same_level = sched.store == sched.compute;
        stmt = match level_loop(&sched.compute) {
            None => inject(stmt),
            Some(l) => {
                let mut wrap = |b: Stmt| {
                    if same_level && !sched.is_output {
                        realize(inject(b))
                    } else {
                        inject(b)
                    }
                };
                let (s, found) = wrap_loop_body(&stmt, &l, &mut wrap);
                if !found {
                    return Err(LowerBug(format!("compute loop {l} of {name} not found")).into());
                }
                s
            }
        };
        if sched.is_output || (same_level && sched.compute != Level::Root) {
            continue;
        }
        stmt = match level_loop(&sched.store) {
            None => realize(stmt),
            Some(l) => {
                let mut wrap = |b: Stmt| realize(b);
                let (s, found) = wrap_loop_body(&stmt, &l, &mut wrap);
                if !found {
                    return Err(LowerBug(format!("store loop {l} of {name} not found")).into());
                }
                s
            }
        };
    }
    let _ = ForKind::Serial;
    Ok(stmt)
}
