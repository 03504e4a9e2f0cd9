//! `rfactor` as a pipeline transform: an associative update over a
//! reduction domain is split into an intermediate func `{f}_intm` whose
//! new pure variables take the place of the factored reduction variables
//! (so its iterations along them are independent and can run in
//! parallel), and a merge update of `f` that combines the partial results.

use crate::error::{ScheduleError, ScheduleErrorCode as Code};
use crate::schedule_tree::is_reassociable_update;
use argent_ir::visit::substitute;
use argent_ir::{
    BinOp, Directive, DirectiveKind, Expr, ExprKind, Func, FuncOrigin, Pipeline, RDom, StageRef,
    Type, Update,
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
    let mut directives = Vec::new();
    for d in &pipeline.schedule.directives {
        let DirectiveKind::Rfactor { pairs } = &d.kind else {
            directives.push(d.clone());
            continue;
        };
        let extra = rfactor_one(&mut p, d, pairs)?;
        directives.extend(extra);
    }
    p.schedule.directives = directives;
    Ok(p)
}

fn rfactor_one(
    p: &mut Pipeline,
    d: &Directive,
    pairs: &[(String, String)],
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
    let Some(u) = func.updates.get(ui).cloned() else {
        return Err(ScheduleError::new(
            Code::UnknownStage,
            d,
            format!("`{}` has no update({ui})", d.func),
        ));
    };
    let Some(rdom) = u.rdom.clone() else {
        return Err(ScheduleError::new(
            Code::InvalidRfactor,
            d,
            "this update has no reduction domain to factor",
        ));
    };
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
        if func.args.contains(v) || pairs.iter().filter(|(_, w)| w == v).count() > 1 {
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
    // Unless the schedule orders the intermediate's update itself, its
    // outermost new variable runs in parallel: what rfactor is for.
    let scheduled = p
        .schedule
        .directives
        .iter()
        .any(|x| x.func == intm_name && x.stage != StageRef::Pure);
    if scheduled {
        return Ok(Vec::new());
    }
    let outermost = factored.last().map(|(_, v)| v.clone()).unwrap_or_default();
    Ok(vec![Directive {
        func: intm_name,
        stage: StageRef::Update(0),
        kind: DirectiveKind::Parallel {
            var: outermost,
            task_size: None,
        },
        span: d.span,
    }])
}

fn unreachable_bug() -> ! {
    // `is_reassociable_update` accepted the value, which guarantees a binary
    // operator with an identity; reaching here is a compiler bug.
    panic!("rfactor: associative update without a binary operator")
}
