//! Outputs that other stages read get a computed twin, as a pipeline
//! transform ahead of the schedule tree.
//!
//! An output is stored in the buffer the caller passes, which covers the
//! requested region only; a stage that reads the output elsewhere (a
//! stencil tap at `x - 2`, a row above the first) would read outside that
//! buffer. The algorithm defines the func everywhere, so the reference
//! interpreter gives such reads their values. The compiled pipeline does
//! the same by computing the func into a buffer of its own, over the region
//! every reader needs, and copying the output region out of it.

use argent_ir::visit::{Mutator, mutate_expr_children};
use argent_ir::{
    CallTarget, Directive, DirectiveKind, Expr, ExprKind, Func, Pipeline, RDom, StageRef, Update,
};

/// For every output `f` that another func calls, add a func `f_computed`
/// with `f`'s definitions and schedule, computed at the root; the other
/// funcs read `f_computed`, and `f` becomes its copy.
///
/// Example: with `output g, f` where `g(x) = f(x - 2)`,
/// ```text
/// f(x) = in(x) * 2              f_computed(x) = in(x) * 2
/// g(x) = f(x - 2)        =>     f(x) = f_computed(x)
///                               g(x) = f_computed(x - 2)
/// ```
/// `f.vectorize(x, 8)` applies to both `f_computed` and the copy;
/// directives on `f`'s updates, and the `compute_at(f, ..)` of other
/// funcs, move to `f_computed`, where that work now happens.
pub fn separate_read_outputs(pipeline: &Pipeline) -> Pipeline {
    let mut p = pipeline.clone();
    for output in &pipeline.outputs {
        let read_by_others = p.funcs.iter().any(|g| {
            g.name != *output && (0..=g.updates.len()).any(|s| calls_in_stage(g, s, output))
        });
        let Some(at) = p.funcs.iter().position(|f| f.name == *output) else {
            continue;
        };
        if !read_by_others {
            continue;
        }
        let twin = fresh_name(&p, &format!("{output}_computed"));
        let mut rename = RenameCalls {
            from: output,
            to: &twin,
        };
        for g in p.funcs.iter_mut() {
            *g = rename.func(g);
        }
        let original = p.funcs[at].clone();
        // The twin's updates read the twin.
        let computed = rename.func(&Func {
            name: twin.clone(),
            ..original.clone()
        });
        let args: Vec<Expr> = original
            .args
            .iter()
            .map(|a| Expr::var(argent_ir::Type::I32, a.clone()))
            .collect();
        p.funcs[at] = Func {
            value: Expr::call_func(original.ty, twin.clone(), args),
            updates: Vec::new(),
            ..original
        };
        p.funcs.insert(at, computed);
        p.schedule.directives = redirect_schedule(&p.schedule.directives, output, &twin);
    }
    p
}

/// The schedule after `output`'s computation moved to `twin`.
fn redirect_schedule(directives: &[Directive], output: &str, twin: &str) -> Vec<Directive> {
    let mut kept = Vec::new();
    let mut for_twin = Vec::new();
    for d in directives {
        let mut d = d.clone();
        match &mut d.kind {
            DirectiveKind::ComputeAt { consumer, .. } | DirectiveKind::StoreAt { consumer, .. }
                if consumer == output =>
            {
                *consumer = twin.to_string();
            }
            _ => {}
        }
        if d.func != output {
            kept.push(d);
            continue;
        }
        let on_twin = Directive {
            func: twin.to_string(),
            ..d.clone()
        };
        match (&d.stage, &d.kind) {
            // The updates are the twin's now.
            (StageRef::Update(_), _) => for_twin.push(on_twin),
            // The copy's loops follow the output's schedule, and so does
            // the computation; a bound or alignment says what the func is
            // computed over.
            (
                StageRef::Pure,
                DirectiveKind::Split { .. }
                | DirectiveKind::Fuse { .. }
                | DirectiveKind::Reorder(_)
                | DirectiveKind::Tile { .. }
                | DirectiveKind::Vectorize { .. }
                | DirectiveKind::Unroll { .. }
                | DirectiveKind::Parallel { .. }
                | DirectiveKind::Serial { .. }
                | DirectiveKind::Bound { .. }
                | DirectiveKind::AlignBounds { .. },
            ) => {
                kept.push(d);
                for_twin.push(on_twin);
            }
            _ => kept.push(d),
        }
    }
    // Outputs are computed at the root; so is the twin, which is stored
    // apart and read by the copy and the other stages.
    for_twin.push(Directive {
        func: twin.to_string(),
        stage: StageRef::Pure,
        kind: DirectiveKind::ComputeRoot,
        span: Default::default(),
    });
    // After the output's own directives: a mistake in one of them is
    // reported against the output first, as written.
    kept.extend(for_twin);
    kept
}

fn fresh_name(p: &Pipeline, wanted: &str) -> String {
    let mut name = wanted.to_string();
    while p.funcs.iter().any(|f| f.name == name) || p.inputs.iter().any(|i| i.name == name) {
        name.push('_');
    }
    name
}

fn calls_in_stage(f: &Func, stage: usize, callee: &str) -> bool {
    crate::schedule_tree::stage_calls(f, stage).contains(callee)
}

struct RenameCalls<'a> {
    from: &'a str,
    to: &'a str,
}

impl RenameCalls<'_> {
    /// `f` with calls to `from` made calls to `to`, except in `from`
    /// itself (it becomes the copy, rebuilt apart).
    fn func(&mut self, f: &Func) -> Func {
        if f.name == self.from {
            return f.clone();
        }
        Func {
            value: self.mutate_expr(&f.value),
            updates: f
                .updates
                .iter()
                .map(|u| Update {
                    args: u.args.iter().map(|a| self.mutate_expr(a)).collect(),
                    value: self.mutate_expr(&u.value),
                    rdom: u.rdom.as_ref().map(|r| RDom {
                        dims: r
                            .dims
                            .iter()
                            .map(|d| argent_ir::RVar {
                                min: self.mutate_expr(&d.min),
                                extent: self.mutate_expr(&d.extent),
                                ..d.clone()
                            })
                            .collect(),
                        predicate: r.predicate.as_ref().map(|e| self.mutate_expr(e)),
                        ..r.clone()
                    }),
                    ..u.clone()
                })
                .collect(),
            ..f.clone()
        }
    }
}

impl Mutator for RenameCalls<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        let e = mutate_expr_children(self, e);
        match e.kind() {
            ExprKind::Call {
                target: CallTarget::Func(name),
                args,
            } if name == self.from => Expr::call_func(e.ty(), self.to, args.clone()),
            _ => e,
        }
    }
}
