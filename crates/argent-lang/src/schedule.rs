//! Checks schedule directives against a pipeline: funcs, stages and
//! variable names (including the ones that earlier split/tile/fuse calls
//! introduce), argument counts and kinds. It gives directives no meaning;
//! lowering does.

use crate::ast::{self, ExprKind};
use crate::diag::Diagnostic;
use argent_ir::fast_hash::{FastHashMap as HashMap, FastHashSet as HashSet};
use argent_ir::visit::{Visitor, walk_expr};
use argent_ir::{
    CallTarget, Directive, DirectiveKind, Expr, ExprKind as IrKind, Pipeline, Schedule, Span,
    StageRef, TailStrategy, Type,
};

/// The directives, with how many arguments each takes (variables first,
/// then expressions) for the error messages.
const DIRECTIVES: [(&str, &str); 23] = [
    ("split", "split(old, outer, inner, factor[, tail])"),
    ("fuse", "fuse(inner, outer, fused)"),
    ("reorder", "reorder(innermost, ..., outermost)"),
    (
        "tile",
        "tile(x, y, xi, yi, xf, yf[, tail]) or tile(x, y, xo, yo, xi, yi, xf, yf[, tail])",
    ),
    ("vectorize", "vectorize(var[, factor])"),
    ("unroll", "unroll(var[, factor])"),
    ("parallel", "parallel(var[, task_size])"),
    ("serial", "serial(var)"),
    ("compute_at", "compute_at(consumer, var)"),
    ("store_at", "store_at(consumer, var)"),
    ("compute_root", "compute_root()"),
    ("store_root", "store_root()"),
    ("compute_inline", "compute_inline()"),
    ("bound", "bound(var, min, extent)"),
    ("align_bounds", "align_bounds(var, modulus[, remainder])"),
    ("fold_storage", "fold_storage(var, extent)"),
    (
        "reorder_storage",
        "reorder_storage(innermost, ..., outermost)",
    ),
    ("rfactor", "rfactor(rvar, new_var, ...)"),
    (
        "specialize",
        "specialize(condition), then the specialization's directives",
    ),
    ("gpu_blocks", "gpu_blocks(x[, y[, z]])"),
    ("gpu_threads", "gpu_threads(x[, y[, z]])"),
    (
        "gpu_tile",
        "gpu_tile(x, y, bx, by, tx, ty, xf, yf) or gpu_tile(x, y, tx, ty, xf, yf)",
    ),
    ("update", "update(index)"),
];

/// Directives that apply to the whole func, not to one stage.
const FUNC_LEVEL: [&str; 9] = [
    "compute_at",
    "store_at",
    "compute_root",
    "store_root",
    "compute_inline",
    "bound",
    "align_bounds",
    "fold_storage",
    "reorder_storage",
];

struct Checker<'a> {
    pipeline: &'a Pipeline,
    diags: &'a mut Vec<Diagnostic>,
    /// The loop variables each stage has right now.
    vars: HashMap<(String, StageRef), Vec<String>>,
    /// Every variable name each func has had, for compute_at checks.
    all_vars: HashMap<String, HashSet<String>>,
    /// The loop variables of each stage that iterate its reduction domain:
    /// its reduction variables and what splits made of them.
    reduction_vars: HashMap<(String, StageRef), HashSet<String>>,
    declared: Option<&'a HashSet<String>>,
    /// The intermediates `rfactor` directives create (`{f}_intm`, with
    /// the new pure variables after `f`'s), which later chains may
    /// schedule like any func.
    intermediates: Vec<argent_ir::Func>,
}

/// Checks a schedule block against `pipeline` and returns its directives
/// (only the well-formed ones; errors go to `diags`).
/// `declared` lists funcs that exist in the source even if their
/// definitions failed to check; directives on them are skipped silently.
pub fn check_schedule(
    block: &ast::ScheduleBlock,
    pipeline: &Pipeline,
    declared: Option<&HashSet<String>>,
    conditions: &crate::check::Conditions,
    diags: &mut Vec<Diagnostic>,
) -> Schedule {
    let mut c = Checker {
        pipeline,
        diags,
        vars: HashMap::default(),
        all_vars: HashMap::default(),
        reduction_vars: HashMap::default(),
        declared,
        intermediates: Vec::new(),
    };
    for f in &pipeline.funcs {
        let mut all: HashSet<String> = f.args.iter().cloned().collect();
        c.vars
            .insert((f.name.clone(), StageRef::Pure), f.args.clone());
        for (i, u) in f.updates.iter().enumerate() {
            let mut vs: Vec<String> = u
                .args
                .iter()
                .filter_map(|a| a.as_var().map(str::to_string))
                .collect();
            if let Some(r) = &u.rdom {
                for d in &r.dims {
                    if !vs.contains(&d.name) {
                        vs.push(d.name.clone());
                    }
                }
                c.reduction_vars.insert(
                    (f.name.clone(), StageRef::Update(i)),
                    r.dims.iter().map(|d| d.name.clone()).collect(),
                );
            }
            // Pure variables not used on the left are still loops of the
            // stage in Halide only when they appear there; keep what is used.
            vs.retain(|v| {
                f.args.contains(v)
                    || u.rdom
                        .as_ref()
                        .is_some_and(|r| r.dims.iter().any(|d| &d.name == v))
            });
            all.extend(vs.iter().cloned());
            c.vars.insert((f.name.clone(), StageRef::Update(i)), vs);
        }
        c.all_vars.insert(f.name.clone(), all);
    }
    let mut directives = Vec::new();
    let mut deferred: Vec<(usize, Span, Span)> = Vec::new();
    for chain in &block.chains {
        let Some(func) = c.func(&chain.func.name).cloned() else {
            if declared.is_some_and(|d| d.contains(&chain.func.name)) {
                continue;
            }
            let d = Diagnostic::error(
                "E0601",
                chain.func.span,
                format!("unknown func `{}` in schedule", chain.func.name),
            );
            let factored = argent_ir::rfactor_source(&chain.func.name)
                .filter(|f| pipeline.func(f).is_some_and(|f| !f.updates.is_empty()));
            let suggestion = || {
                suggest(
                    &chain.func.name,
                    pipeline.funcs.iter().map(|f| f.name.as_str()),
                )
            };
            let d = if let Some(from) = factored {
                d.with_note(format!(
                    "`{}` is made by `rfactor`: schedule it after the line with `{from}.update(..).rfactor(..)`",
                    chain.func.name
                ))
            } else if let Some(s) = suggestion() {
                d.with_note(format!("did you mean `{s}`?"))
            } else if pipeline.input(&chain.func.name).is_some() {
                d.with_note("inputs cannot be scheduled; schedule the funcs that read them")
            } else {
                d
            };
            c.diags.push(d);
            continue;
        };
        let func = &func;
        let mut stage = StageRef::Pure;
        for (k, call) in chain.calls.iter().enumerate() {
            if call.name.name == "specialize" {
                if let Some(d) = c.specialize(func, stage, call, &chain.calls[k + 1..], conditions)
                {
                    directives.push(d);
                }
                break;
            }
            if call.name.name == "update" {
                if let Some(s) = c.update(func, call) {
                    stage = s;
                }
                continue;
            }
            let before = c.diags.len();
            if let Some(kind) = c.directive(&func.name, stage, call)
                && c.diags.len() == before
            {
                if let DirectiveKind::ComputeAt { .. } | DirectiveKind::StoreAt { .. } = &kind {
                    let var_span = call.args.get(1).map(|a| a.span).unwrap_or(call.span);
                    let cons_span = call.args.first().map(|a| a.span).unwrap_or(call.span);
                    deferred.push((directives.len(), cons_span, var_span));
                }
                let stage = if FUNC_LEVEL.contains(&kind.name()) {
                    StageRef::Pure
                } else {
                    stage
                };
                directives.push(Directive {
                    func: func.name.clone(),
                    stage,
                    kind,
                    span: call.span,
                });
            }
        }
    }
    // compute_at/store_at name loops of the consumer, which its own
    // directives (anywhere in the block) may introduce.
    let mut callers = callers_of(pipeline);
    for intm in &c.intermediates {
        if let Some(from) = argent_ir::rfactor_source(&intm.name) {
            callers
                .entry(from.to_string())
                .or_default()
                .insert(intm.name.clone());
        }
    }
    let mut bad = HashSet::default();
    for (i, cons_span, var_span) in deferred {
        let d = &directives[i];
        let (consumer, var) = match &d.kind {
            DirectiveKind::ComputeAt { consumer, var }
            | DirectiveKind::StoreAt { consumer, var } => (consumer, var),
            _ => continue,
        };
        if !c.all_vars.get(consumer).is_some_and(|vs| vs.contains(var)) {
            let known: Vec<String> = c
                .all_vars
                .get(consumer)
                .map(|v| {
                    let mut v: Vec<String> = v.iter().cloned().collect();
                    v.sort();
                    v
                })
                .unwrap_or_default();
            c.diags.push(
                Diagnostic::error(
                    "E0607",
                    var_span,
                    format!("`{consumer}` has no loop `{var}`"),
                )
                .with_note(format!("`{consumer}`'s loops are: {}", known.join(", "))),
            );
            bad.insert(i);
        } else if !uses_transitively(&callers, consumer, &d.func) {
            c.diags.push(
                Diagnostic::error("E0607", cons_span, format!("`{consumer}` does not use `{}`, so `{}` cannot be computed inside it", d.func, d.func))
                    .with_note("compute_at and store_at name a func that (directly or indirectly) reads this one"),
            );
            bad.insert(i);
        }
    }
    let directives = directives
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !bad.contains(i))
        .map(|(_, d)| d)
        .collect();
    Schedule { directives }
}

/// For each func, the funcs it calls.
fn callers_of(p: &Pipeline) -> HashMap<String, HashSet<String>> {
    struct Calls(HashSet<String>);
    impl Visitor for Calls {
        fn visit_expr(&mut self, e: &Expr) {
            if let IrKind::Call {
                target: CallTarget::Func(n),
                ..
            } = e.kind()
            {
                self.0.insert(n.clone());
            }
            walk_expr(self, e);
        }
    }
    p.funcs
        .iter()
        .map(|f| {
            let mut v = Calls(HashSet::default());
            v.visit_expr(&f.value);
            for u in &f.updates {
                v.visit_expr(&u.value);
                u.args.iter().for_each(|a| v.visit_expr(a));
            }
            (f.name.clone(), v.0)
        })
        .collect()
}

/// Whether `consumer` reads `producer` directly or through other funcs.
fn uses_transitively(
    calls: &HashMap<String, HashSet<String>>,
    consumer: &str,
    producer: &str,
) -> bool {
    let mut stack = vec![consumer.to_string()];
    let mut seen = HashSet::default();
    while let Some(f) = stack.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        if let Some(cs) = calls.get(&f) {
            if cs.contains(producer) {
                return true;
            }
            stack.extend(cs.iter().cloned());
        }
    }
    false
}

fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = crate::check_edit_distance(name, c);
        if d <= (name.len().max(c.len()) / 3).max(1)
            && d < name.len()
            && c != name
            && best.is_none_or(|b| d < b.0)
        {
            best = Some((d, c));
        }
    }
    best.map(|b| b.1.to_string())
}

/// A variable written in a directive: `x` or `r.x`.
fn var_name(e: &ast::Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => Some(n.clone()),
        ExprKind::Field { base, field } => match &base.kind {
            ExprKind::Name(b) => Some(format!("{b}.{}", field.name)),
            _ => None,
        },
        _ => None,
    }
}

impl Checker<'_> {
    /// The func or rfactor intermediate named `name`.
    fn func(&self, name: &str) -> Option<&argent_ir::Func> {
        self.pipeline
            .func(name)
            .or_else(|| self.intermediates.iter().find(|f| f.name == name))
    }

    /// Registers `{func}_intm`, the intermediate that `rfactor` of the
    /// stage `key` with `pairs` (reduction variable, new pure variable)
    /// makes, as lowering builds it (`argent_lower::rfactor`): its pure
    /// variables are `func`'s and the new ones; its update loops over
    /// the stage's loops with each factored reduction variable replaced
    /// by its new variable. The stage itself becomes the merge, over
    /// `func`'s pure variables and the factored reduction variables.
    fn add_intermediate(
        &mut self,
        func: &str,
        key: &(String, StageRef),
        pairs: &[(String, String)],
    ) {
        let Some(f) = self.func(func).cloned() else {
            return;
        };
        let name = argent_ir::rfactor_intermediate(func);
        if self.func(&name).is_some() {
            return;
        }
        let mut args = f.args.clone();
        args.extend(pairs.iter().map(|(_, v)| v.clone()));
        let mut update_vars = self.vars.get(key).cloned().unwrap_or_default();
        for (rv, v) in pairs {
            for u in update_vars.iter_mut() {
                if u == rv {
                    *u = v.clone();
                }
            }
        }
        let mut merge_vars = f.args.clone();
        merge_vars.extend(pairs.iter().map(|(rv, _)| rv.clone()));
        let mut reduction = self.reduction_vars.remove(key).unwrap_or_default();
        self.reduction_vars.insert(
            key.clone(),
            pairs.iter().map(|(rv, _)| rv.clone()).collect(),
        );
        reduction.retain(|r| !pairs.iter().any(|(rv, _)| rv == r));
        self.reduction_vars
            .insert((name.clone(), StageRef::Update(0)), reduction);
        self.vars.insert(key.clone(), merge_vars.clone());
        if let Some(all) = self.all_vars.get_mut(func) {
            all.extend(merge_vars);
        }
        self.vars
            .insert((name.clone(), StageRef::Pure), args.clone());
        self.vars
            .insert((name.clone(), StageRef::Update(0)), update_vars.clone());
        let mut all: HashSet<String> = args.iter().cloned().collect();
        all.extend(update_vars);
        self.all_vars.insert(name.clone(), all);
        let stage = match key.1 {
            StageRef::Update(i) => f.updates.get(i).cloned(),
            StageRef::Pure => None,
        };
        self.intermediates.push(argent_ir::Func {
            name,
            args,
            updates: stage.into_iter().collect(),
            origin: argent_ir::FuncOrigin::Rfactor {
                from: func.to_string(),
            },
            ..f
        });
    }

    /// `specialize(cond)` and the rest of its chain, `rest`: directives
    /// for the version of `stage` of `func` that runs when `cond` holds.
    /// They are checked against a copy of the stage's loops; the general
    /// version keeps the loops it had.
    fn specialize(
        &mut self,
        func: &argent_ir::Func,
        stage: StageRef,
        call: &ast::DirectiveCall,
        rest: &[ast::DirectiveCall],
        conditions: &crate::check::Conditions,
    ) -> Option<Directive> {
        let cond = match call.args.as_slice() {
            // A condition that did not type has its error already.
            [a] => conditions.get(&(a.span.start, a.span.end)).cloned(),
            _ => {
                self.err("E0606", call.span, "wrong arguments to `specialize`")
                    .notes
                    .push(
                        "usage: specialize(condition), then the specialization's directives".into(),
                    );
                None
            }
        };
        let key = (func.name.clone(), stage);
        let saved_vars = self.vars.get(&key).cloned();
        let saved_reduction = self.reduction_vars.get(&key).cloned();
        let mut inner = Vec::new();
        for call in rest {
            let name = call.name.name.as_str();
            if name == "update" || name == "specialize" {
                self.err(
                    "E0610",
                    call.name.span,
                    format!("`{name}` cannot follow `specialize` in a chain: a specialization is of one stage"),
                )
                .notes
                .push("start a new line for another stage or another specialization".into());
                break;
            }
            if FUNC_LEVEL.contains(&name) || name == "rfactor" {
                self.err(
                    "E0610",
                    call.name.span,
                    format!("`{name}` cannot differ between specializations"),
                )
                .notes
                .push(format!(
                    "write it before `.specialize(..)`, on `{}` itself",
                    func.name
                ));
                continue;
            }
            let before = self.diags.len();
            if let Some(kind) = self.directive(&func.name, stage, call)
                && self.diags.len() == before
            {
                inner.push(Directive {
                    func: func.name.clone(),
                    stage,
                    kind,
                    span: call.span,
                });
            }
        }
        if let Some(v) = saved_vars {
            self.vars.insert(key.clone(), v);
        }
        if let Some(r) = saved_reduction {
            self.reduction_vars.insert(key, r);
        }
        Some(Directive {
            func: func.name.clone(),
            stage,
            kind: DirectiveKind::Specialize {
                cond: cond?,
                directives: inner,
            },
            span: call.span,
        })
    }

    fn err(&mut self, code: &'static str, span: Span, msg: impl Into<String>) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(code, span, msg));
        self.diags.last_mut().expect("just pushed")
    }

    fn update(&mut self, func: &argent_ir::Func, call: &ast::DirectiveCall) -> Option<StageRef> {
        let index = match call.args.as_slice() {
            [] => 0,
            [a] => match a.kind {
                ExprKind::Int(i) => i,
                _ => {
                    self.err(
                        "E0606",
                        a.span,
                        "the update index must be an integer literal",
                    );
                    return None;
                }
            },
            _ => {
                self.err(
                    "E0606",
                    call.span,
                    "`update` takes one argument, the index of the update definition",
                );
                return None;
            }
        };
        if index < 0 || index as usize >= func.updates.len() {
            let d = self.err(
                "E0604",
                call.span,
                format!(
                    "`{}` has {} update definition{}, so update({index}) does not exist",
                    func.name,
                    func.updates.len(),
                    if func.updates.len() == 1 { "" } else { "s" }
                ),
            );
            if !func.updates.is_empty() {
                d.notes
                    .push(format!("valid indices are 0 to {}", func.updates.len() - 1));
            }
            return None;
        }
        Some(StageRef::Update(index as usize))
    }

    /// Checks one directive and updates the stage's variable list.
    fn directive(
        &mut self,
        func: &str,
        stage: StageRef,
        call: &ast::DirectiveCall,
    ) -> Option<DirectiveKind> {
        let name = call.name.name.as_str();
        let Some(&(_, usage)) = DIRECTIVES.iter().find(|(n, _)| *n == name) else {
            let d = self.err(
                "E0602",
                call.name.span,
                format!("unknown schedule directive `{name}`"),
            );
            if let Some(s) = suggest(name, DIRECTIVES.iter().map(|d| d.0)) {
                d.notes.push(format!("did you mean `{s}`?"));
            }
            return None;
        };
        if FUNC_LEVEL.contains(&name) && stage != StageRef::Pure {
            self.err(
                "E0606",
                call.name.span,
                format!("`{name}` applies to the whole func, not to an update stage"),
            )
            .notes
            .push(format!(
                "write it before `.update(..)`: `{func}.{name}(...)`"
            ));
            return None;
        }
        let args = &call.args;
        let key = (func.to_string(), stage);
        let arity = |c: &mut Self, ok: bool| -> Option<()> {
            if ok {
                Some(())
            } else {
                c.err("E0606", call.span, format!("wrong arguments to `{name}`"))
                    .notes
                    .push(format!("usage: {usage}"));
                None
            }
        };
        Some(match name {
            "split" => {
                arity(self, args.len() == 4 || args.len() == 5)?;
                let old = self.existing(&key, &args[0])?;
                let outer = self.fresh_or_same(&key, &args[1], &old)?;
                let inner = self.fresh_or_same(&key, &args[2], &old)?;
                let factor = self.factor(&args[3])?;
                let tail = self.tail(args.get(4))?;
                self.replace(&key, &old, &[outer.clone(), inner.clone()]);
                DirectiveKind::Split {
                    old,
                    outer,
                    inner,
                    factor,
                    tail,
                }
            }
            "fuse" => {
                arity(self, args.len() == 3)?;
                let inner = self.existing(&key, &args[0])?;
                let outer = self.existing(&key, &args[1])?;
                let fused = self.fresh_or_same(&key, &args[2], &inner)?;
                self.replace(&key, &outer, &[]);
                self.replace(&key, &inner, std::slice::from_ref(&fused));
                DirectiveKind::Fuse {
                    inner,
                    outer,
                    fused,
                }
            }
            "reorder" => {
                arity(self, args.len() >= 2)?;
                let mut vs = Vec::new();
                for a in args {
                    let v = self.existing(&key, a)?;
                    if vs.contains(&v) {
                        self.err("E0606", a.span, format!("`{v}` appears twice in reorder"));
                        return None;
                    }
                    vs.push(v);
                }
                DirectiveKind::Reorder(vs)
            }
            "tile" => {
                let (n_vars, has_tail) = match args.len() {
                    6 => (4, false),
                    7 if self.is_tail(&args[6]) => (4, true),
                    7 => {
                        arity(self, false)?;
                        unreachable_none()?
                    }
                    8 => (6, false),
                    9 => (6, true),
                    _ => {
                        arity(self, false)?;
                        unreachable_none()?
                    }
                };
                let x = self.existing(&key, &args[0])?;
                let y = self.existing(&key, &args[1])?;
                let (xo, yo, xi, yi) = if n_vars == 4 {
                    let xi = self.fresh_or_same(&key, &args[2], &x)?;
                    let yi = self.fresh_or_same(&key, &args[3], &y)?;
                    (x.clone(), y.clone(), xi, yi)
                } else {
                    let xo = self.fresh_or_same(&key, &args[2], &x)?;
                    let yo = self.fresh_or_same(&key, &args[3], &y)?;
                    let xi = self.fresh_or_same(&key, &args[4], &x)?;
                    let yi = self.fresh_or_same(&key, &args[5], &y)?;
                    (xo, yo, xi, yi)
                };
                let x_factor = self.factor(&args[n_vars])?;
                let y_factor = self.factor(&args[n_vars + 1])?;
                let tail = if has_tail {
                    self.tail(args.last())?
                } else {
                    TailStrategy::Auto
                };
                self.replace(&key, &x, &[xo.clone(), xi.clone()]);
                self.replace(&key, &y, &[yo.clone(), yi.clone()]);
                DirectiveKind::Tile {
                    x,
                    y,
                    xo,
                    yo,
                    xi,
                    yi,
                    x_factor,
                    y_factor,
                    tail,
                }
            }
            "gpu_tile" => {
                arity(self, args.len() == 6 || args.len() == 8)?;
                let x = self.existing(&key, &args[0])?;
                let y = self.existing(&key, &args[1])?;
                let (bx, by, tx, ty, k) = if args.len() == 6 {
                    let tx = self.fresh_or_same(&key, &args[2], &x)?;
                    let ty = self.fresh_or_same(&key, &args[3], &y)?;
                    (x.clone(), y.clone(), tx, ty, 4)
                } else {
                    let bx = self.fresh_or_same(&key, &args[2], &x)?;
                    let by = self.fresh_or_same(&key, &args[3], &y)?;
                    let tx = self.fresh_or_same(&key, &args[4], &x)?;
                    let ty = self.fresh_or_same(&key, &args[5], &y)?;
                    (bx, by, tx, ty, 6)
                };
                let x_size = self.factor(&args[k])?;
                let y_size = self.factor(&args[k + 1])?;
                self.replace(&key, &x, &[bx.clone(), tx.clone()]);
                self.replace(&key, &y, &[by.clone(), ty.clone()]);
                DirectiveKind::GpuTile {
                    x,
                    y,
                    bx,
                    by,
                    tx,
                    ty,
                    x_size,
                    y_size,
                }
            }
            "vectorize" | "unroll" | "parallel" => {
                arity(self, args.len() == 1 || args.len() == 2)?;
                let var = self.existing(&key, &args[0])?;
                let factor = match args.get(1) {
                    Some(a) => Some(self.factor(a)?),
                    None => None,
                };
                match name {
                    "vectorize" => DirectiveKind::Vectorize { var, factor },
                    "unroll" => DirectiveKind::Unroll { var, factor },
                    _ => DirectiveKind::Parallel {
                        var,
                        task_size: factor,
                    },
                }
            }
            "serial" => {
                arity(self, args.len() == 1)?;
                DirectiveKind::Serial {
                    var: self.existing(&key, &args[0])?,
                }
            }
            "compute_at" | "store_at" => {
                arity(self, args.len() == 2)?;
                let consumer = match &args[0].kind {
                    ExprKind::Name(n) if self.func(n).is_some() => n.clone(),
                    ExprKind::Name(n) if self.declared.is_some_and(|d| d.contains(n)) => {
                        return None;
                    }
                    _ => {
                        let what = var_name(&args[0]).unwrap_or_default();
                        let s = suggest(&what, self.pipeline.funcs.iter().map(|f| f.name.as_str()));
                        let d = self.err(
                            "E0607",
                            args[0].span,
                            format!("`{what}` is not a func of this pipeline"),
                        );
                        if let Some(s) = s {
                            d.notes.push(format!("did you mean `{s}`?"));
                        }
                        return None;
                    }
                };
                if consumer == func {
                    self.err(
                        "E0607",
                        args[0].span,
                        format!("`{func}` cannot be computed inside itself"),
                    );
                    return None;
                }
                let Some(var) = var_name(&args[1]) else {
                    self.err("E0606", args[1].span, "expected a loop variable name");
                    return None;
                };
                if name == "compute_at" {
                    DirectiveKind::ComputeAt { consumer, var }
                } else {
                    DirectiveKind::StoreAt { consumer, var }
                }
            }
            "compute_root" | "store_root" | "compute_inline" => {
                arity(self, args.is_empty())?;
                match name {
                    "compute_root" => DirectiveKind::ComputeRoot,
                    "store_root" => DirectiveKind::StoreRoot,
                    _ => DirectiveKind::ComputeInline,
                }
            }
            "bound" => {
                arity(self, args.len() == 3)?;
                let var = self.pure_var(func, &args[0])?;
                DirectiveKind::Bound {
                    var,
                    min: self.factor_any(&args[1])?,
                    extent: self.factor(&args[2])?,
                }
            }
            "align_bounds" => {
                arity(self, args.len() == 2 || args.len() == 3)?;
                let var = self.pure_var(func, &args[0])?;
                let modulus = self.factor(&args[1])?;
                let remainder = match args.get(2) {
                    Some(a) => self.factor_any(a)?,
                    None => Expr::i32(0),
                };
                DirectiveKind::AlignBounds {
                    var,
                    modulus,
                    remainder,
                }
            }
            "fold_storage" => {
                arity(self, args.len() == 2)?;
                let var = self.pure_var(func, &args[0])?;
                DirectiveKind::FoldStorage {
                    var,
                    extent: self.factor(&args[1])?,
                }
            }
            "reorder_storage" => {
                arity(self, args.len() >= 2)?;
                let mut vs = Vec::new();
                for a in args {
                    let v = self.pure_var(func, a)?;
                    if vs.contains(&v) {
                        self.err(
                            "E0606",
                            a.span,
                            format!("`{v}` appears twice in reorder_storage"),
                        );
                        return None;
                    }
                    vs.push(v);
                }
                DirectiveKind::ReorderStorage(vs)
            }
            "rfactor" => {
                arity(self, !args.is_empty() && args.len().is_multiple_of(2))?;
                if stage == StageRef::Pure {
                    self.err(
                        "E0608",
                        call.name.span,
                        "`rfactor` applies to an update stage",
                    )
                    .notes
                    .push(format!("select one first: `{func}.update(0).rfactor(...)`"));
                    return None;
                }
                let mut pairs = Vec::new();
                for pair in args.chunks(2) {
                    let rv = self.existing(&key, &pair[0])?;
                    if !self
                        .reduction_vars
                        .get(&key)
                        .is_some_and(|r| r.contains(&rv))
                    {
                        self.err(
                            "E0608",
                            pair[0].span,
                            format!("`{rv}` is not a reduction variable"),
                        );
                        return None;
                    }
                    let Some(v) = var_name(&pair[1]) else {
                        self.err("E0606", pair[1].span, "expected a new variable name");
                        return None;
                    };
                    pairs.push((rv, v));
                }
                self.add_intermediate(func, &key, &pairs);
                DirectiveKind::Rfactor { pairs }
            }
            "gpu_blocks" | "gpu_threads" => {
                arity(self, (1..=3).contains(&args.len()))?;
                let mut vs = Vec::new();
                for a in args {
                    vs.push(self.existing(&key, a)?);
                }
                if name == "gpu_blocks" {
                    DirectiveKind::GpuBlocks(vs)
                } else {
                    DirectiveKind::GpuThreads(vs)
                }
            }
            _ => return None,
        })
    }

    fn stage_desc(key: &(String, StageRef)) -> String {
        match key.1 {
            StageRef::Pure => format!("`{}`", key.0),
            StageRef::Update(i) => format!("update {i} of `{}`", key.0),
        }
    }

    /// A variable that must exist in the stage now.
    fn existing(&mut self, key: &(String, StageRef), e: &ast::Expr) -> Option<String> {
        let Some(v) = var_name(e) else {
            self.err("E0606", e.span, "expected a loop variable name");
            return None;
        };
        let vars = self.vars.get(key).cloned().unwrap_or_default();
        if vars.contains(&v) {
            return Some(v);
        }
        let d = self.err(
            "E0603",
            e.span,
            format!("{} has no loop variable `{v}`", Self::stage_desc(key)),
        );
        d.notes
            .push(format!("its loops are now: {}", vars.join(", ")));
        if let Some(s) = suggest(&v, vars.iter().map(String::as_str)) {
            d.notes.push(format!("did you mean `{s}`?"));
        }
        Some(v).filter(|_| false)
    }

    /// A new variable name (or the variable being split, reused as Halide allows).
    fn fresh_or_same(
        &mut self,
        key: &(String, StageRef),
        e: &ast::Expr,
        old: &str,
    ) -> Option<String> {
        let Some(v) = var_name(e) else {
            self.err("E0606", e.span, "expected a new loop variable name");
            return None;
        };
        if v.contains('.') {
            self.err(
                "E0606",
                e.span,
                "new loop variables are plain names (no `.`)",
            );
            return None;
        }
        let vars = self.vars.get(key).cloned().unwrap_or_default();
        if v != old && vars.contains(&v) {
            self.err(
                "E0605",
                e.span,
                format!(
                    "{} already has a loop variable `{v}`",
                    Self::stage_desc(key)
                ),
            )
            .notes
            .push("the new loops of split, tile and fuse need new names".into());
            return None;
        }
        Some(v)
    }

    fn replace(&mut self, key: &(String, StageRef), old: &str, new: &[String]) {
        if let Some(reduction) = self.reduction_vars.get_mut(key)
            && reduction.contains(old)
        {
            reduction.extend(new.iter().cloned());
        }
        if let Some(vars) = self.vars.get_mut(key)
            && let Some(pos) = vars.iter().position(|v| v == old)
        {
            vars.remove(pos);
            for (k, n) in new.iter().enumerate() {
                vars.insert(pos + k, n.clone());
            }
        }
        self.all_vars
            .entry(key.0.clone())
            .or_default()
            .extend(new.iter().cloned());
    }

    fn pure_var(&mut self, func: &str, e: &ast::Expr) -> Option<String> {
        let v = var_name(e);
        let args = self.func(func)?.args.clone();
        match v {
            Some(v) if args.contains(&v) => Some(v),
            _ => {
                self.err(
                    "E0603",
                    e.span,
                    format!("`{func}` has no pure variable `{}`", v.unwrap_or_default()),
                )
                .notes
                .push(format!("its pure variables are: {}", args.join(", ")));
                None
            }
        }
    }

    fn is_tail(&self, e: &ast::Expr) -> bool {
        matches!(&e.kind, ExprKind::Name(n) if ["round_up", "guard_with_if", "shift_inwards", "auto"].contains(&n.as_str()))
    }

    fn tail(&mut self, e: Option<&ast::Expr>) -> Option<TailStrategy> {
        let Some(e) = e else {
            return Some(TailStrategy::Auto);
        };
        match &e.kind {
            ExprKind::Name(n) => match n.as_str() {
                "round_up" => Some(TailStrategy::RoundUp),
                "guard_with_if" => Some(TailStrategy::GuardWithIf),
                "shift_inwards" => Some(TailStrategy::ShiftInwards),
                "auto" => Some(TailStrategy::Auto),
                _ => {
                    self.err("E0606", e.span, format!("unknown tail strategy `{n}`"))
                        .notes
                        .push(
                            "tail strategies: round_up, guard_with_if, shift_inwards, auto".into(),
                        );
                    None
                }
            },
            _ => {
                self.err(
                    "E0606",
                    e.span,
                    "expected a tail strategy (round_up, guard_with_if, shift_inwards)",
                );
                None
            }
        }
    }

    /// A positive factor: an integer constant or an i32 parameter expression.
    fn factor(&mut self, e: &ast::Expr) -> Option<Expr> {
        let v = self.factor_any(e)?;
        if let Some(k) = v.as_int()
            && k < 1
        {
            self.err(
                "E0606",
                e.span,
                format!("this factor must be positive, found {k}"),
            );
            return None;
        }
        Some(v)
    }

    fn factor_any(&mut self, e: &ast::Expr) -> Option<Expr> {
        match &e.kind {
            ExprKind::Int(v) => Some(Expr::i32(*v)),
            ExprKind::Unary {
                op: ast::UnaryOp::Neg,
                operand,
            } => match operand.kind {
                ExprKind::Int(v) => Some(Expr::i32(-v)),
                _ => {
                    self.err("E0606", e.span, "expected an integer");
                    None
                }
            },
            ExprKind::Name(n) => match self.pipeline.param(n) {
                Some(p) if p.ty == Type::I32 => Some(Expr::var_i32(n.clone())),
                Some(p) => {
                    self.err(
                        "E0606",
                        e.span,
                        format!("`{n}` is {}, but a schedule factor must be i32", p.ty),
                    );
                    None
                }
                None => {
                    self.err("E0606", e.span, format!("expected an integer, found `{n}`"))
                        .notes
                        .push("schedule factors are integer literals or i32 parameters".into());
                    None
                }
            },
            _ => {
                self.err(
                    "E0606",
                    e.span,
                    "expected an integer literal or an i32 parameter",
                );
                None
            }
        }
    }
}

fn unreachable_none<T>() -> Option<T> {
    None
}
