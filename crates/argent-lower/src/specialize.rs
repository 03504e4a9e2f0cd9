//! `specialize` (Halide's directive): a stage gets a second schedule for
//! runs where a condition on parameters and input sizes holds. The
//! compiler makes the whole pipeline twice, once with each schedule, and
//! the module chooses between them on entry, so each version is lowered,
//! checked and optimised on its own; where the condition is `p == k` for a
//! parameter `p`, the specialised version has `k` in place of `p`, so its
//! arithmetic folds.
//!
//! ```text
//! out.vectorize(x, 8)                       if (in.extent.0 >= 64) {
//! out.specialize(in.width >= 64)       ==>    <out vectorised by 8, then split in 64-wide tiles in parallel>
//!    .split(x, xo, xi, 64).parallel(xo)     } else {
//!                                             <out vectorised by 8>
//!                                           }
//! ```

use crate::error::{ScheduleError, ScheduleErrorCode as Code};
use argent_ir::visit::{Mutator, expr_uses_var, mutate_expr_children, substitute};
use argent_ir::{BinOp, Directive, DirectiveKind, Expr, ExprKind, Pipeline};

/// At most this many `specialize` directives in one pipeline: each one
/// doubles the versions the compiler lowers (and the module's size).
pub const MAX_SPECIALIZATIONS: usize = 4;

/// The first specialisation of `pipeline`, if it has any: its condition,
/// the pipeline under it and the pipeline without it. Both pipelines may
/// still have other specialisations; the specialised one drops the later
/// specialisations of the same stage (the first condition that holds
/// wins, as in Halide).
pub struct Versions {
    pub cond: Expr,
    pub specialized: Pipeline,
    pub general: Pipeline,
}

/// Splits `pipeline` at its first `specialize` directive (see
/// [`Versions`]), or returns `None` when it has none.
///
/// Example: directives `[out.vectorize(x, 8), out.specialize(w == 1).unroll(y, 2),
/// out.parallel(y)]` give the condition `w == 1`, the specialised
/// directives `[out.vectorize(x, 8), out.unroll(y, 2)]` with `w` replaced by
/// 1, and the general ones `[out.vectorize(x, 8), out.parallel(y)]`.
pub fn first_specialization(pipeline: &Pipeline) -> Result<Option<Versions>, ScheduleError> {
    let directives = &pipeline.schedule.directives;
    let count = directives
        .iter()
        .filter(|d| matches!(d.kind, DirectiveKind::Specialize { .. }))
        .count();
    let Some(at) = directives
        .iter()
        .position(|d| matches!(d.kind, DirectiveKind::Specialize { .. }))
    else {
        return Ok(None);
    };
    let d = &directives[at];
    if count > MAX_SPECIALIZATIONS {
        return Err(ScheduleError::new(
            Code::TooManySpecializations,
            d,
            format!(
                "the schedule has {count} `specialize` directives, but at most {MAX_SPECIALIZATIONS} are allowed: each one doubles the code the compiler makes"
            ),
        ));
    }
    let DirectiveKind::Specialize {
        cond,
        directives: inner,
    } = &d.kind
    else {
        unreachable!("found by its kind")
    };
    let same_stage = |x: &Directive| x.func == d.func && x.stage == d.stage;
    let mut specialized_list: Vec<Directive> = directives[..at].to_vec();
    specialized_list.extend(inner.iter().cloned());
    // The stage's later directives belong to the general version; so do
    // its later specialisations.
    specialized_list.extend(
        directives[at + 1..]
            .iter()
            .filter(|x| !same_stage(x))
            .cloned(),
    );
    let mut general = pipeline.clone();
    general.schedule.directives.remove(at);
    let mut specialized = pipeline.clone();
    specialized.schedule.directives = specialized_list;
    if let Some((param, value)) = param_equality(pipeline, cond) {
        specialized = with_param_value(&specialized, &param, &value);
    }
    Ok(Some(Versions {
        cond: cond.clone(),
        specialized,
        general,
    }))
}

/// `(p, k)` when `cond` is `p == k` (either way round) for a parameter
/// `p` and a constant `k`.
fn param_equality(pipeline: &Pipeline, cond: &Expr) -> Option<(String, Expr)> {
    let ExprKind::Binary {
        op: BinOp::Eq,
        a,
        b,
    } = cond.kind()
    else {
        return None;
    };
    let is_param = |e: &Expr| {
        e.as_var()
            .filter(|n| pipeline.param(n).is_some())
            .map(str::to_string)
    };
    let constant = |e: &Expr| Some(crate::arith::simplify(e)).filter(Expr::is_const);
    match (is_param(a), is_param(b)) {
        (Some(p), _) => constant(b).map(|k| (p, k)),
        (_, Some(p)) => constant(a).map(|k| (p, k)),
        _ => None,
    }
}

/// `pipeline` with `value` in place of the parameter `param` in every
/// expression of the algorithm and of the schedule.
fn with_param_value(pipeline: &Pipeline, param: &str, value: &Expr) -> Pipeline {
    let sub = |e: &mut Expr| {
        if expr_uses_var(e, param) {
            *e = FoldConstantSelects.mutate_expr(&substitute(e, param, value));
        }
    };
    let mut p = pipeline.clone();
    for f in &mut p.funcs {
        sub(&mut f.value);
        for u in &mut f.updates {
            u.args.iter_mut().for_each(sub);
            sub(&mut u.value);
            if let Some(r) = &mut u.rdom {
                for d in &mut r.dims {
                    sub(&mut d.min);
                    sub(&mut d.extent);
                }
                if let Some(pred) = &mut r.predicate {
                    sub(pred);
                }
            }
        }
    }
    for d in &mut p.schedule.directives {
        for_each_directive_expr(&mut d.kind, &sub);
    }
    p
}

fn for_each_directive_expr(kind: &mut DirectiveKind, f: &impl Fn(&mut Expr)) {
    match kind {
        DirectiveKind::Split { factor, .. } => f(factor),
        DirectiveKind::Tile {
            x_factor, y_factor, ..
        } => {
            f(x_factor);
            f(y_factor);
        }
        DirectiveKind::Vectorize { factor, .. } | DirectiveKind::Unroll { factor, .. } => {
            factor.iter_mut().for_each(f)
        }
        DirectiveKind::Parallel { task_size, .. } => task_size.iter_mut().for_each(f),
        DirectiveKind::Bound { min, extent, .. } => {
            f(min);
            f(extent);
        }
        DirectiveKind::AlignBounds {
            modulus, remainder, ..
        } => {
            f(modulus);
            f(remainder);
        }
        DirectiveKind::FoldStorage { extent, .. } => f(extent),
        DirectiveKind::Specialize { cond, directives } => {
            f(cond);
            for d in directives {
                for_each_directive_expr(&mut d.kind, f);
            }
        }
        DirectiveKind::GpuTile { x_size, y_size, .. } => {
            f(x_size);
            f(y_size);
        }
        _ => {}
    }
}

/// `pipeline`'s directives without its specialisations: the general
/// version, which is what the schedule tree of a specialised pipeline
/// shows.
pub fn general_version(pipeline: &Pipeline) -> Pipeline {
    let mut p = pipeline.clone();
    p.schedule
        .directives
        .retain(|d| !matches!(d.kind, DirectiveKind::Specialize { .. }));
    p
}

/// Replaces each `select` whose condition folds to a constant by the side
/// it takes, so that bounds inference sees only what the specialised
/// version reads (`select(1 == 1, p(x, y - 1), p(x, y + 1))` reads one row).
/// Nothing else is simplified: the algorithm keeps its shape.
struct FoldConstantSelects;

impl Mutator for FoldConstantSelects {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        if let ExprKind::Select {
            cond,
            then,
            otherwise,
        } = e.kind()
            && let Some(c) = crate::arith::const_int(&crate::arith::simplify(cond))
        {
            return self.mutate_expr(if c != 0 { then } else { otherwise });
        }
        mutate_expr_children(self, e)
    }
}
