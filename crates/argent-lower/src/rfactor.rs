//! `rfactor` as a pipeline transform: an associative update over a
//! reduction domain is split into an intermediate func `{f}_intm` whose
//! new pure variables take the place of the factored reduction variables
//! (so its iterations along them are independent and can run in
//! parallel), and a merge update of `f` that combines the partial results.

use crate::error::{ScheduleError, ScheduleErrorCode as Code};
use crate::schedule_tree::is_reassociable_update;
use argent_ir::visit::substitute;
use argent_ir::{
    BinOp, Directive, DirectiveKind, Expr, ExprKind, Func, FuncOrigin, Pipeline, RDom, RVar,
    StageRef, TailStrategy, Type, Update,
};

/// The value `x` such that `x op y == y` for every `y`.
fn identity(op: BinOp, ty: Type) -> Option<Expr> {
    Some(match op {
        BinOp::Add | BinOp::BitOr | BinOp::BitXor => Expr::constant(ty, 0.0),
        BinOp::Mul => Expr::constant(ty, 1.0),
        BinOp::BitAnd => Expr::int(ty, -1),
        BinOp::Min => Expr::constant(ty, ty.max_value()),
        BinOp::Max => Expr::constant(ty, ty.min_value()),
        _ => return None,
    })
}

/// Apply every `rfactor` directive of `pipeline`, in order, and return the
/// transformed pipeline (without the rfactor directives).
///
/// Example: `hist(img(r.x, r.y)) += 1` with `hist.update(0).rfactor(r.y, v)`
/// becomes
/// ```text
/// hist_intm(i, v) = 0
/// hist_intm(img(r.x, v), v) = hist_intm(img(r.x, v), v) + 1   over r.x
/// hist(i) = hist(i) + hist_intm(i, r.y)                        over r.y
/// ```
/// and `hist_intm.update(0)` runs in parallel over `v`, unless the
/// schedule has directives of its own for that stage (`hist_intm` is
/// computed at the root unless the schedule places it).
pub fn apply_rfactors(pipeline: &Pipeline) -> Result<Pipeline, ScheduleError> {
    let mut p = pipeline.clone();
    let mut directives: Vec<Directive> = Vec::new();
    for d in &pipeline.schedule.directives {
        let DirectiveKind::Rfactor { pairs } = &d.kind else {
            directives.push(d.clone());
            continue;
        };
        // What the chain did to the stage before `rfactor` belongs to the
        // intermediate, which iterates the stage's domain; the merge
        // starts with a schedule of its own (as in Halide).
        let (before, rest): (Vec<_>, Vec<_>) = directives
            .into_iter()
            .partition(|x| x.func == d.func && x.stage == d.stage);
        directives = rest;
        let extra = rfactor_one(&mut p, d, pairs, before)?;
        directives.extend(extra);
    }
    p.schedule.directives = directives;
    Ok(p)
}

fn rfactor_one(
    p: &mut Pipeline,
    d: &Directive,
    pairs: &[(String, String)],
    before: Vec<Directive>,
) -> Result<Vec<Directive>, ScheduleError> {
    let Some(func) = p.func(&d.func).cloned() else {
        return Err(ScheduleError::new(
            Code::UnknownFunc,
            d,
            format!("there is no func named `{}`", d.func),
        ));
    };
    let StageRef::Update(ui) = d.stage else {
        return Err(ScheduleError::new(
            Code::InvalidRfactor,
            d,
            "rfactor applies to an update definition (`f.update(0).rfactor(..)`)",
        ));
    };
    let Some(mut u) = func.updates.get(ui).cloned() else {
        return Err(ScheduleError::new(
            Code::UnknownStage,
            d,
            format!("`{}` has no update({ui})", d.func),
        ));
    };
    let Some(mut rdom) = u.rdom.clone() else {
        return Err(ScheduleError::new(
            Code::InvalidRfactor,
            d,
            "this update has no reduction domain to factor",
        ));
    };
    let factored_names: Vec<&str> = pairs.iter().map(|(rv, _)| rv.as_str()).collect();
    let before = absorb_reduction_splits(&mut rdom, &mut u, before, &factored_names)?;
    if !is_reassociable_update(&func, &u) {
        return Err(ScheduleError::new(
            Code::InvalidRfactor,
            d,
            "the update is not a recognised associative and commutative reduction (`f(..) = f(..) + e`, *, min, max, &, |, ^ on integers; +, *, min, max on floats)",
        ));
    }
    let ExprKind::Binary { op, a, b } = u.value.kind() else {
        unreachable_bug()
    };
    let is_self = |e: &Expr| matches!(e.kind(), argent_ir::ExprKind::Call { target: argent_ir::CallTarget::Func(n), .. } if *n == func.name);
    let rest = if is_self(a) { b.clone() } else { a.clone() };
    let Some(id) = identity(*op, func.ty) else {
        unreachable_bug()
    };
    let mut factored = Vec::new();
    for (rv, v) in pairs {
        let Some(r) = rdom.dims.iter().find(|r| r.name == *rv) else {
            return Err(ScheduleError::new(
                Code::UnknownVar,
                d,
                format!(
                    "`{rv}` is not a variable of the reduction domain `{}`",
                    rdom.name
                ),
            ));
        };
        let names_a_reduction_variable = rdom
            .dims
            .iter()
            .any(|r| r.name == *v && !pairs.iter().any(|(f, _)| *f == r.name));
        if func.args.contains(v)
            || names_a_reduction_variable
            || pairs.iter().filter(|(_, w)| w == v).count() > 1
        {
            return Err(ScheduleError::new(
                Code::DuplicateName,
                d,
                format!("`{v}` is already a variable of `{}`", func.name),
            ));
        }
        factored.push((r.clone(), v.clone()));
    }
    let intm_name = argent_ir::rfactor_intermediate(&func.name);
    if p.func(&intm_name).is_some() {
        return Err(ScheduleError::new(
            Code::DuplicateName,
            d,
            format!("`{}` was already factored", func.name),
        ));
    }
    let subst = |e: &Expr| -> Expr {
        let mut e = e.clone();
        for (r, v) in &factored {
            e = substitute(&e, &r.name, &Expr::var_i32(v.clone()));
        }
        e
    };
    let mut intm_args = func.args.clone();
    intm_args.extend(factored.iter().map(|(_, v)| v.clone()));
    let mut write_args: Vec<Expr> = u.args.iter().map(&subst).collect();
    write_args.extend(factored.iter().map(|(_, v)| Expr::var_i32(v.clone())));
    let remaining: Vec<_> = rdom
        .dims
        .iter()
        .filter(|r| !factored.iter().any(|(f, _)| f.name == r.name))
        .cloned()
        .collect();
    let predicate = rdom.predicate.as_ref().map(&subst);
    let intm_rdom = if remaining.is_empty() && predicate.is_none() {
        None
    } else {
        Some(RDom {
            name: rdom.name.clone(),
            dims: remaining,
            predicate,
            span: rdom.span,
        })
    };
    let read = Expr::call_func(func.ty, intm_name.clone(), write_args.clone());
    let intm = Func {
        name: intm_name.clone(),
        ty: func.ty,
        args: intm_args.clone(),
        value: id,
        updates: vec![Update {
            args: write_args,
            value: Expr::binary(*op, read, subst(&rest)),
            rdom: intm_rdom,
            span: u.span,
        }],
        origin: FuncOrigin::Rfactor {
            from: func.name.clone(),
        },
        span: func.span,
    };
    let pure_args: Vec<Expr> = func.args.iter().map(|a| Expr::var_i32(a.clone())).collect();
    let mut merge_read_args = pure_args.clone();
    merge_read_args.extend(factored.iter().map(|(r, _)| Expr::var_i32(r.name.clone())));
    let merge = Update {
        args: pure_args.clone(),
        value: Expr::binary(
            *op,
            Expr::call_func(func.ty, func.name.clone(), pure_args),
            Expr::call_func(func.ty, intm_name.clone(), merge_read_args),
        ),
        rdom: Some(RDom {
            name: rdom.name.clone(),
            dims: factored.iter().map(|(r, _)| r.clone()).collect(),
            predicate: None,
            span: rdom.span,
        }),
        span: u.span,
    };
    let pos = p
        .funcs
        .iter()
        .position(|f| f.name == func.name)
        .unwrap_or(0);
    if let Some(f) = p.func_mut(&func.name) {
        f.updates[ui] = merge;
    }
    p.funcs.insert(pos, intm);
    let renames: Vec<(&str, &str)> = factored
        .iter()
        .map(|(r, v)| (r.name.as_str(), v.as_str()))
        .collect();
    let mut out: Vec<Directive> = before
        .into_iter()
        .map(|mut x| {
            x.func = intm_name.clone();
            x.stage = StageRef::Update(0);
            rename_loop_vars(&mut x.kind, &renames);
            x
        })
        .collect();
    // Unless the schedule orders the intermediate's update itself, its
    // outermost new variable runs in parallel: what rfactor is for.
    let scheduled = p
        .schedule
        .directives
        .iter()
        .any(|x| x.func == intm_name && x.stage != StageRef::Pure);
    if scheduled {
        return Ok(out);
    }
    let outermost = factored.last().map(|(_, v)| v.clone()).unwrap_or_default();
    out.push(Directive {
        func: intm_name,
        stage: StageRef::Update(0),
        kind: DirectiveKind::Parallel {
            var: outermost,
            task_size: None,
        },
        span: d.span,
    });
    Ok(out)
}

/// Takes into the reduction domain the splits, among `before` (the
/// stage's directives written before `rfactor`), that make a factored
/// variable, and returns the other directives. A split of `r.y` into
/// `ryo` and `ryi` by `f` becomes two reduction variables, `ryi` over
/// `0 .. f` and `ryo` over `0 .. ceil(extent / f)`, with `r.y` replaced
/// by `min + ryo * f + ryi` and, unless `f` divides a constant extent,
/// the predicate `ryo * f + ryi < extent` (the guard of Halide's
/// `guard_with_if`, the only tail a reduction allows). Tiles of
/// reduction variables count as their two splits and a reorder.
///
/// Example: `hist.update(0).split(r.y, ryo, ryi, 32).rfactor(ryo, v)`
/// over `rdom r = [0 .. 768, 0 .. img.height]` factors
/// ```text
/// rdom r = [0 .. 768, 0 .. 32, 0 .. (img.height + 31) / 32]   (r.x, ryi, ryo)
///     where ryo * 32 + ryi < img.height
/// ```
/// with `r.y` read as `ryo * 32 + ryi`.
fn absorb_reduction_splits(
    rdom: &mut RDom,
    u: &mut Update,
    before: Vec<Directive>,
    factored: &[&str],
) -> Result<Vec<Directive>, ScheduleError> {
    // Tiles of reduction variables, as the splits they are.
    let mut reduction_names: Vec<String> = rdom.dims.iter().map(|r| r.name.clone()).collect();
    let mut expanded = Vec::new();
    for x in before {
        let parts = x.kind.tile_parts();
        match &x.kind {
            DirectiveKind::Tile { x: tx, y: ty, .. }
                if reduction_names.contains(tx) || reduction_names.contains(ty) =>
            {
                for part in parts.into_iter().flatten() {
                    if let DirectiveKind::Split {
                        old, outer, inner, ..
                    } = &part
                        && reduction_names.contains(old)
                    {
                        reduction_names.extend([outer.clone(), inner.clone()]);
                    }
                    expanded.push(Directive {
                        kind: part,
                        ..x.clone()
                    });
                }
            }
            DirectiveKind::Split {
                old, outer, inner, ..
            } => {
                if reduction_names.contains(old) {
                    reduction_names.extend([outer.clone(), inner.clone()]);
                }
                expanded.push(x);
            }
            _ => expanded.push(x),
        }
    }
    // The splits a factored variable comes from, latest first.
    let mut needed: Vec<String> = factored.iter().map(|s| s.to_string()).collect();
    let mut absorbed = vec![false; expanded.len()];
    for (i, x) in expanded.iter().enumerate().rev() {
        match &x.kind {
            DirectiveKind::Split {
                old, outer, inner, ..
            } if needed.contains(outer) || needed.contains(inner) => {
                absorbed[i] = true;
                needed.push(old.clone());
            }
            DirectiveKind::Fuse { fused, .. } if needed.contains(fused) => {
                return Err(ScheduleError::new(
                    Code::InvalidRfactor,
                    x,
                    format!(
                        "rfactor cannot factor `{fused}`, which fuses two loops; split reduction variables instead"
                    ),
                ));
            }
            _ => {}
        }
    }
    let mut rest = Vec::new();
    let mut guards: Vec<Expr> = Vec::new();
    for (x, absorb) in expanded.into_iter().zip(absorbed) {
        if !absorb {
            rest.push(x);
            continue;
        }
        let DirectiveKind::Split {
            old,
            outer,
            inner,
            factor,
            tail,
        } = &x.kind
        else {
            unreachable!("only splits are absorbed")
        };
        let Some(pos) = rdom.dims.iter().position(|r| r.name == *old) else {
            return Err(ScheduleError::new(
                Code::InvalidRfactor,
                &x,
                format!("`{old}` is not a reduction variable, so its pieces cannot be factored"),
            ));
        };
        if matches!(tail, TailStrategy::RoundUp | TailStrategy::ShiftInwards) {
            return Err(ScheduleError::new(
                Code::InvalidTail,
                &x,
                format!(
                    "`{old}` is a reduction variable: rounding up or shifting inwards would reduce some points twice; use guard_with_if"
                ),
            ));
        }
        if crate::arith::const_int(factor).is_some_and(|f| f <= 0) {
            return Err(ScheduleError::new(
                Code::NonConstantFactor,
                &x,
                format!("the split factor must be positive, but it is {factor}"),
            ));
        }
        let dim = rdom.dims[pos].clone();
        let inner_var = Expr::var_i32(inner.clone());
        let outer_var = Expr::var_i32(outer.clone());
        let offset = Expr::add(Expr::mul(outer_var, factor.clone()), inner_var);
        let exact = matches!(
            (crate::arith::const_int(&dim.extent), crate::arith::const_int(factor)),
            (Some(e), Some(f)) if e % f == 0
        );
        let mut at = crate::arith::simplify(&Expr::add(dim.min.clone(), offset.clone()));
        if !exact {
            // The clamp never changes the value under the guard; it tells
            // bounds inference that the variable stays in its range (as for
            // the guard of any split).
            let last = crate::arith::simplify(&Expr::add(
                dim.min.clone(),
                Expr::add(dim.extent.clone(), Expr::i32(-1)),
            ));
            at = Expr::max(Expr::min(at, last), dim.min.clone());
        }
        let outer_extent = crate::arith::simplify(&Expr::div(
            Expr::add(dim.extent.clone(), Expr::add(factor.clone(), Expr::i32(-1))),
            factor.clone(),
        ));
        let replace = |e: &Expr| substitute(e, old, &at);
        u.args = u.args.iter().map(replace).collect();
        u.value = replace(&u.value);
        rdom.predicate = rdom.predicate.as_ref().map(replace);
        guards = guards.iter().map(replace).collect();
        if !exact {
            guards.push(Expr::lt(offset, dim.extent.clone()));
        }
        rdom.dims.splice(
            pos..=pos,
            [
                RVar {
                    name: inner.clone(),
                    min: Expr::i32(0),
                    extent: factor.clone(),
                },
                RVar {
                    name: outer.clone(),
                    min: Expr::i32(0),
                    extent: outer_extent,
                },
            ],
        );
    }
    // One `likely` around all the guards, as for the guards of any split,
    // so that loop partitioning runs the steady state without them.
    if let Some(guard) = guards.into_iter().reduce(Expr::and) {
        let guard = Expr::likely(guard);
        rdom.predicate = Some(match rdom.predicate.take() {
            Some(p) => Expr::and(p, guard),
            None => guard,
        });
    }
    u.rdom = Some(rdom.clone());
    Ok(rest)
}

/// Renames the loop variables a stage directive names.
fn rename_loop_vars(kind: &mut DirectiveKind, renames: &[(&str, &str)]) {
    for v in kind.loop_vars_mut() {
        if let Some((_, to)) = renames.iter().find(|(from, _)| *from == v.as_str()) {
            *v = to.to_string();
        }
    }
}

fn unreachable_bug() -> ! {
    // `is_reassociable_update` accepted the value, which guarantees a binary
    // operator with an identity; reaching here is a compiler bug.
    panic!("rfactor: associative update without a binary operator")
}
