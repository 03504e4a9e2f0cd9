//! Storage folding: a func stored outside a serial loop but computed inside
//! it only needs, at any time, the rows (in one dimension) that the current
//! iteration touches. Its storage becomes a circular buffer of that many
//! rows (rounded up to a power of two), indexed modulo the fold.

use crate::arith::{
    Monotonic, Scope, bounds_of_expr, const_upper_bound, monotonic, simplify,
    simplify_cancelling_min_max,
};
use crate::bounds_inference::box_touched;
use crate::error::LowerError;
use crate::schedule_tree::{Level, ScheduleTree};
use argent_ir::visit::{Mutator, expr_uses_var, mutate_expr_children, mutate_stmt_children};
use argent_ir::{CallTarget, Expr, ExprKind, ForKind, Range, Stmt};

/// Fold the storage of funcs whose per-iteration footprint has a constant
/// height, automatically where legal and as forced by `fold_storage`.
///
/// Example (sliding-window blur): `realize blur_x: u16([..], [blur_x.s0.y.min, blur_x.s0.y.max - blur_x.s0.y.min + 1])`
/// becomes `realize blur_x: u16([..], [0, 4])` and every access
/// `blur_x(x, y)` becomes `blur_x(x, y % 4)`.
pub fn storage_folding(tree: &ScheduleTree, body: &Stmt) -> Result<Stmt, LowerError> {
    let mut stmt = body.clone();
    for sched in &tree.funcs {
        let Level::At { func, stage, var } = &sched.compute else {
            continue;
        };
        if sched.store == sched.compute {
            continue;
        }
        if tree
            .pipeline
            .func(&sched.name)
            .is_none_or(|f| !f.updates.is_empty())
        {
            continue;
        }
        let loop_var = format!("{func}.s{stage}.{var}");
        let mut folder = Folder {
            func: &sched.name,
            loop_var: &loop_var,
            forced: &sched.fold,
            err: None,
            inside_realize: false,
        };
        stmt = folder.mutate_stmt(&stmt);
        if let Some(e) = folder.err {
            return Err(e);
        }
    }
    Ok(stmt)
}

struct Folder<'a> {
    func: &'a str,
    loop_var: &'a str,
    forced: &'a [(usize, i64)],
    err: Option<LowerError>,
    inside_realize: bool,
}

fn find_loop<'s>(s: &'s Stmt, var: &str) -> Option<&'s Stmt> {
    match s {
        Stmt::For { var: v, body, .. } => {
            if v == var {
                Some(s)
            } else {
                find_loop(body, var)
            }
        }
        Stmt::LetStmt { body, .. }
        | Stmt::ProducerConsumer { body, .. }
        | Stmt::Realize { body, .. }
        | Stmt::Allocate { body, .. } => find_loop(body, var),
        Stmt::Block(v) => v.iter().find_map(|s| find_loop(s, var)),
        Stmt::IfThenElse {
            then, otherwise, ..
        } => find_loop(then, var).or_else(|| otherwise.as_ref().and_then(|o| find_loop(o, var))),
        _ => None,
    }
}

impl Folder<'_> {
    /// The dimension to fold and the fold factor, if folding is legal.
    fn plan(&mut self, bounds: &[Range], body: &Stmt) -> Option<(usize, i64)> {
        let Some(Stmt::For {
            kind: ForKind::Serial,
            body: loop_body,
            ..
        }) = find_loop(body, self.loop_var)
        else {
            return None;
        };
        let footprint = box_touched(loop_body, self.func, true, &Scope::default())?;
        for (d, iv) in footprint.iter().enumerate() {
            let (Some(lo), Some(hi)) = (&iv.min, &iv.max) else {
                continue;
            };
            if !expr_uses_var(lo, self.loop_var) && !expr_uses_var(hi, self.loop_var) {
                continue;
            }
            let extent = simplify_cancelling_min_max(&Expr::add(
                Expr::sub(hi.clone(), lo.clone()),
                Expr::i32(1),
            ));
            let height = bounds_of_expr(&extent, &mut Scope::default())
                .max
                .and_then(|m| const_upper_bound(&m))
                .or_else(|| const_upper_bound(&extent))?;
            let advances = matches!(
                monotonic(hi, self.loop_var),
                Monotonic::Increasing | Monotonic::Constant
            ) && matches!(
                monotonic(lo, self.loop_var),
                Monotonic::Increasing | Monotonic::Constant
            );
            if !advances {
                return None;
            }
            let factor = match self.forced.iter().find(|(i, _)| *i == d) {
                Some((_, f)) if *f < height => {
                    self.err = Some(LowerError::Algorithm(format!(
                        "fold_storage of `{}` to {f} is too small: each iteration of {} touches {height} values of that dimension",
                        self.func, self.loop_var
                    )));
                    return None;
                }
                Some((_, f)) => *f,
                None => (height.max(1) as u64).next_power_of_two() as i64,
            };
            let realized = bounds.get(d).and_then(|r| simplify(&r.extent).as_int());
            if realized.is_some_and(|r| r <= factor) {
                return None;
            }
            return Some((d, factor));
        }
        None
    }
}

impl Mutator for Folder<'_> {
    /// Expressions hold no `Realize`: walking them would only cost time
    /// (once per folded func, over the whole pipeline).
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
            if func == self.func && !self.inside_realize {
                self.inside_realize = true;
                let out = match self.plan(bounds, body) {
                    Some((d, factor)) => {
                        let mut bounds = bounds.clone();
                        bounds[d] = Range {
                            min: Expr::i32(0),
                            extent: Expr::i32(factor),
                        };
                        let mut r = Refold {
                            func: self.func,
                            dim: d,
                            factor,
                        };
                        Stmt::Realize {
                            func: func.clone(),
                            ty: *ty,
                            bounds,
                            body: Box::new(r.mutate_stmt(body)),
                        }
                    }
                    None => s.clone(),
                };
                self.inside_realize = false;
                return out;
            }
        }
        mutate_stmt_children(self, s)
    }
}

struct Refold<'a> {
    func: &'a str,
    dim: usize,
    factor: i64,
}

impl Refold<'_> {
    fn fold_args(&self, args: &[Expr]) -> Vec<Expr> {
        args.iter()
            .enumerate()
            .map(|(i, a)| {
                if i == self.dim {
                    Expr::modulo(a.clone(), Expr::i32(self.factor))
                } else {
                    a.clone()
                }
            })
            .collect()
    }
}

impl Mutator for Refold<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        let e = mutate_expr_children(self, e);
        if let ExprKind::Call {
            target: CallTarget::Func(n),
            args,
        } = e.kind()
        {
            if n == self.func {
                return Expr::call_func(e.ty(), n.clone(), self.fold_args(args));
            }
        }
        e
    }
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        let s = mutate_stmt_children(self, s);
        if let Stmt::Provide { func, args, value } = &s {
            if func == self.func {
                return Stmt::Provide {
                    func: func.clone(),
                    args: self.fold_args(args),
                    value: value.clone(),
                };
            }
        }
        s
    }
}
