//! Loop-invariant code motion: scalar arithmetic inside a serial loop that
//! does not depend on anything the loop binds (its variable, the `let`s
//! and loops inside it) is computed once before the loop instead of once
//! per iteration. The tiles of a scheduled pipeline recompute their bounds
//! and the row part of every index (`buf.min.0 + buf.extent.0 * (y -
//! buf.min.1)`) per vector otherwise, and the engines that compile the
//! generated Wasm do not move such code out of loops themselves.
//!
//! Only pure, non-trapping scalar expressions move (integer division only
//! by a positive constant; no loads, calls or float-to-integer casts), so
//! computing one before a loop that runs zero times, or outside the branch
//! that used it, cannot change a result. Ramps and broadcasts stay where
//! they are, because the backend recognises them in place (dense loads and
//! stores, splats); their scalar operands move. A `let` whose whole value
//! is invariant moves with it. Parallel loops keep their bodies' code: a
//! task function only sees what its loop passes in.
//!
//! ```text
//! for (y, 0, h) {                          let y.invariant0 = (buf.extent.0 * 2)
//!   for (x, 0, w) {                   ==>  for (y, 0, h) {
//!     f[x + y * w] = g[x + buf.extent.0 * 2]     let x.invariant1 = (y * w)
//!   }                                           for (x, 0, w) {
//! }                                               f[x + x.invariant1] = g[x + y.invariant0]
//!                                               }
//!                                             }
//! ```

use argent_arith::fast_hash::{FastHashMap, FastHashSet};
use argent_ir::visit::{
    Mutator, ScopedMutator, mutate_stmt_children, mutate_stmt_scoped, names_bound_in,
};
use argent_ir::{BinOp, Expr, ExprKind, ForKind, Stmt, UnaryOp};

/// Move the loop-invariant scalar arithmetic of every serial loop of `s`
/// to just before that loop.
pub fn hoist_loop_invariants(s: &Stmt) -> Stmt {
    Hoister { next_name: 0 }.mutate_stmt(s)
}

struct Hoister {
    /// Numbers the names of hoisted values, which are unique in the
    /// program.
    next_name: usize,
}

impl Mutator for Hoister {
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        let s = mutate_stmt_children(self, s);
        let Stmt::For {
            var,
            min,
            extent,
            kind: ForKind::Serial,
            body,
        } = &s
        else {
            return s;
        };
        // Inner loops first: what they hoisted now sits in this loop's
        // body, where it may be invariant here too.
        let mut bound = names_bound_in(body);
        bound.insert(var.as_str());
        let mut rewrite = Rewrite {
            loop_var: var,
            variant: &bound,
            renamed: FastHashMap::default(),
            hidden: Vec::new(),
            hoisted: Vec::new(),
            next_name: &mut self.next_name,
        };
        let body = rewrite.stmt(body);
        let hoisted = std::mem::take(&mut rewrite.hoisted);
        let mut out = match body {
            // A loop whose whole body is a guard that every iteration
            // evaluates alike runs under the guard instead, which the
            // engines would otherwise test once per iteration: the
            // predicate of a reduction domain split into strips
            // (`ryo * 32 + ryi < img.extent.1`) around each pixel of a row.
            // The guard is a plain name after hoisting, so evaluating it
            // first can neither trap nor read memory.
            Stmt::IfThenElse {
                cond,
                then,
                otherwise: None,
            } if cond.as_var().is_some_and(|n| !bound.contains(n)) => Stmt::IfThenElse {
                cond,
                then: Box::new(Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: extent.clone(),
                    kind: ForKind::Serial,
                    body: then,
                }),
                otherwise: None,
            },
            body => Stmt::For {
                var: var.clone(),
                min: min.clone(),
                extent: extent.clone(),
                kind: ForKind::Serial,
                body: Box::new(body),
            },
        };
        for (name, value) in hoisted.into_iter().rev() {
            out = Stmt::LetStmt {
                name,
                value,
                body: Box::new(out),
            };
        }
        out
    }
}

/// Rewrites one loop's body, collecting the invariant values it takes out.
struct Rewrite<'a> {
    loop_var: &'a str,
    /// Names bound inside the loop (and its variable): what varies.
    variant: &'a FastHashSet<&'a str>,
    /// `let`s of the body whose value moved out, by their new names.
    renamed: FastHashMap<String, Expr>,
    /// For each name bound around the current point inside the loop, the
    /// renamed `let` of the same name it hides, if any.
    hidden: Vec<Option<Expr>>,
    /// The values moved out, in order of first use.
    hoisted: Vec<(String, Expr)>,
    next_name: &'a mut usize,
}

impl Rewrite<'_> {
    /// The name for an invariant value, reusing one for an equal value.
    fn hoist(&mut self, e: Expr) -> Expr {
        if let Some((name, _)) = self
            .hoisted
            .iter()
            .find(|(_, v)| argent_arith::expr_eq(v, &e))
        {
            return Expr::var(e.ty(), name.clone());
        }
        let name = format!("{}.invariant{}", self.loop_var, *self.next_name);
        *self.next_name += 1;
        let var = Expr::var(e.ty(), name.clone());
        self.hoisted.push((name, e));
        var
    }

    /// `e` itself when invariant and worth a name, else `e` as rewritten.
    fn finish(&mut self, (e, invariant): (Expr, bool)) -> Expr {
        let trivial = matches!(
            e.kind(),
            ExprKind::Var(_) | ExprKind::IntImm(_) | ExprKind::FloatImm(_)
        );
        if invariant && !trivial && e.ty().lanes == 1 {
            self.hoist(e)
        } else {
            e
        }
    }

    /// A name bound inside the loop hides a renamed one of the same name.
    fn shadow(&mut self, name: &str) -> Option<Expr> {
        self.renamed.remove(name)
    }

    fn unshadow(&mut self, name: &str, saved: Option<Expr>) {
        if let Some(v) = saved {
            self.renamed.insert(name.to_string(), v);
        }
    }

    /// A name bound inside the loop: [`Rewrite::shadow`] until
    /// [`Rewrite::unhide`] at the end of its scope.
    fn hide(&mut self, name: &str) {
        let hidden = self.shadow(name);
        self.hidden.push(hidden);
    }

    fn unhide(&mut self, name: &str) {
        let hidden = self.hidden.pop().flatten();
        self.unshadow(name, hidden);
    }

    /// The rewritten expression and whether it is invariant (in which case
    /// it is returned unchanged, for the caller to hoist whole or in part).
    /// A node whose operands come back as they were is returned itself
    /// rather than rebuilt: most of a body does not change, and copying
    /// it cost an allocation per node.
    fn expr(&mut self, e: &Expr) -> (Expr, bool) {
        match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => (e.clone(), true),
            ExprKind::Var(n) => {
                if let Some(r) = self.renamed.get(n) {
                    (r.clone(), true)
                } else {
                    (e.clone(), !self.variant.contains(n.as_str()))
                }
            }
            ExprKind::Binary { op, a, b } => {
                let (a2, ia) = self.expr(a);
                let (b2, ib) = self.expr(b);
                let safe = match op {
                    BinOp::Div | BinOp::Mod => argent_arith::const_int(&b2).is_some_and(|c| c > 0),
                    _ => true,
                };
                let rebuilt = |a2: Expr, b2: Expr| {
                    if a2.same_as(a) && b2.same_as(b) {
                        e.clone()
                    } else {
                        Expr::binary(*op, a2, b2)
                    }
                };
                if ia && ib && safe && e.ty().lanes == 1 {
                    return (rebuilt(a2, b2), true);
                }
                let (a2, b2) = (self.finish((a2, ia)), self.finish((b2, ib)));
                (rebuilt(a2, b2), false)
            }
            ExprKind::Unary { op, value } => {
                let (v, iv) = self.expr(value);
                let pure = matches!(op, UnaryOp::Not | UnaryOp::Neg);
                let rebuilt = |v: Expr| {
                    if v.same_as(value) {
                        e.clone()
                    } else {
                        Expr::unary(*op, v)
                    }
                };
                if iv && pure && e.ty().lanes == 1 {
                    return (rebuilt(v), true);
                }
                (rebuilt(self.finish((v, iv))), false)
            }
            ExprKind::Cast { value, saturating } => {
                let (v, iv) = self.expr(value);
                let from_int = !value.ty().is_float();
                let rebuilt = |v: Expr| {
                    if v.same_as(value) {
                        return e.clone();
                    }
                    Expr::new(
                        e.ty(),
                        ExprKind::Cast {
                            value: v,
                            saturating: *saturating,
                        },
                    )
                };
                if iv && from_int && e.ty().lanes == 1 {
                    return (rebuilt(v), true);
                }
                (rebuilt(self.finish((v, iv))), false)
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let (c, ic) = self.expr(cond);
                let (t, it) = self.expr(then);
                let (o, io) = self.expr(otherwise);
                let rebuilt = |c: Expr, t: Expr, o: Expr| {
                    if c.same_as(cond) && t.same_as(then) && o.same_as(otherwise) {
                        e.clone()
                    } else {
                        Expr::select(c, t, o)
                    }
                };
                if ic && it && io && e.ty().lanes == 1 {
                    return (rebuilt(c, t, o), true);
                }
                let (c, t, o) = (
                    self.finish((c, ic)),
                    self.finish((t, it)),
                    self.finish((o, io)),
                );
                (rebuilt(c, t, o), false)
            }
            ExprKind::Let { name, value, body } => {
                let (v, iv) = self.expr(value);
                if iv && v.ty().lanes == 1 {
                    // The whole value moves out; the body refers to it by
                    // its new name.
                    let moved = self.finish((v, true));
                    let saved = self.renamed.insert(name.clone(), moved);
                    let result = self.expr(body);
                    self.renamed.remove(name);
                    self.unshadow(name, saved);
                    return result;
                }
                let v = self.finish((v, iv));
                let saved = self.shadow(name);
                let b = self.expr(body);
                let b = self.finish(b);
                self.unshadow(name, saved);
                (Expr::let_in(name.clone(), v, b), false)
            }
            ExprKind::Ramp {
                base: e_base,
                stride,
                lanes,
            } => {
                let base = self.expr(e_base);
                let base = self.finish(base);
                let new_stride = self.expr(stride);
                let new_stride = self.finish(new_stride);
                if base.same_as(&e_base) && new_stride.same_as(stride) {
                    return (e.clone(), false);
                }
                (Expr::ramp(base, new_stride, *lanes), false)
            }
            ExprKind::Broadcast { value, lanes } => {
                let v = self.expr(value);
                let v = self.finish(v);
                if v.same_as(value) {
                    return (e.clone(), false);
                }
                (Expr::broadcast(v, *lanes), false)
            }
            ExprKind::Load { buffer, index } => {
                let i = self.expr(index);
                let i = self.finish(i);
                if i.same_as(index) {
                    return (e.clone(), false);
                }
                (Expr::load(e.ty().element(), buffer.clone(), i), false)
            }
            ExprKind::Call { target, args } => {
                let args = args
                    .iter()
                    .map(|a| {
                        let a = self.expr(a);
                        self.finish(a)
                    })
                    .collect();
                (Expr::call(e.ty(), target.clone(), args), false)
            }
            ExprKind::Shuffle { vectors, indices } => {
                let vectors = vectors
                    .iter()
                    .map(|v| {
                        let v = self.expr(v);
                        self.finish(v)
                    })
                    .collect();
                (
                    Expr::new(
                        e.ty(),
                        ExprKind::Shuffle {
                            vectors,
                            indices: indices.clone(),
                        },
                    ),
                    false,
                )
            }
        }
    }

    fn value(&mut self, e: &Expr) -> Expr {
        let r = self.expr(e);
        self.finish(r)
    }

    fn stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::LetStmt { name, value, body } => {
                let (v, iv) = self.expr(value);
                if iv && v.ty().lanes == 1 {
                    let moved = self.finish((v, true));
                    let saved = self.renamed.insert(name.clone(), moved);
                    let result = self.stmt(body);
                    self.renamed.remove(name);
                    self.unshadow(name, saved);
                    return result;
                }
                let v = self.finish((v, iv));
                self.hide(name);
                let b = self.stmt(body);
                self.unhide(name);
                Stmt::LetStmt {
                    name: name.clone(),
                    value: v,
                    body: Box::new(b),
                }
            }
            // Asserts report their arguments: nothing moves out of them,
            // but they follow the renamed `let`s.
            Stmt::Assert { cond, kind, args } => Stmt::Assert {
                cond: argent_arith::substitute_many(cond, &self.renamed),
                kind: kind.clone(),
                args: args
                    .iter()
                    .map(|a| argent_arith::substitute_many(a, &self.renamed))
                    .collect(),
            },
            // Gone by the time this pass runs.
            Stmt::Provide { .. } | Stmt::Realize { .. } => {
                argent_arith::substitute_many_stmt(s, &self.renamed)
            }
            _ => mutate_stmt_scoped(self, s),
        }
    }
}

impl Mutator for Rewrite<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        self.value(e)
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        self.stmt(s)
    }
}

/// A name bound inside the loop hides a renamed `let` of the same name
/// until its scope ends.
impl ScopedMutator for Rewrite<'_> {
    fn enter_let(&mut self, name: &str, _: &Expr) {
        self.hide(name);
    }

    fn exit_let(&mut self, name: &str) {
        self.unhide(name);
    }

    fn enter_loop(&mut self, var: &str, _: &Expr, _: &Expr) {
        self.hide(var);
    }

    fn exit_loop(&mut self, var: &str) {
        self.unhide(var);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::*;
    use argent_ir::{BufferRole, Type};
    use expect_test::expect;

    /// `let w = out.extent.0 / 2; for (y, 0, 2) { for (x, 0, w) {
    /// out(x + y * w) = in(x + y * w) * (y * 3 + in.min.0 * 2) } }`,
    /// flattened.
    fn two_rows() -> argent_ir::Module {
        let (y, w) = (Expr::var_i32("y"), Expr::var_i32("w"));
        let at = x() + y.clone() * w.clone();
        let value = Expr::call_input(Type::I32, "in", vec![at.clone()])
            * (y * 3 + Expr::var_i32("in.min.0") * 2);
        let inner = Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: w,
            kind: ForKind::Serial,
            body: Box::new(Stmt::Provide {
                func: "out".into(),
                args: vec![at],
                value,
            }),
        };
        let outer = Stmt::For {
            var: "y".into(),
            min: Expr::i32(0),
            extent: Expr::i32(2),
            kind: ForKind::Serial,
            body: Box::new(inner),
        };
        let body = Stmt::LetStmt {
            name: "w".into(),
            value: Expr::var_i32("out.extent.0") / 2,
            body: Box::new(outer),
        };
        let buffers = vec![
            arg("in", Type::I32, 1, BufferRole::Input),
            arg("out", Type::I32, 1, BufferRole::Output),
        ];
        module(
            crate::flatten::flatten(&body, &buffers, &Default::default()),
            buffers,
        )
    }

    #[test]
    fn invariant_arithmetic_moves_before_its_loop() {
        let original = two_rows();
        let hoisted = module(
            hoist_loop_invariants(&original.body),
            original.buffers.clone(),
        );
        expect![[r#"
            let w = (out.extent.0 / 2)
            let y.invariant2 = (in.min.0 * 2)
            for (y, 0, 2) {
              let x.invariant0 = (w * y)
              let x.invariant1 = ((y * 3) + y.invariant2)
              for (x, 0, w) {
                out[(out.stride.0 * ((x + x.invariant0) - out.min.0))] = (in[(in.stride.0 * ((x + x.invariant0) - in.min.0))] * x.invariant1)
              }
            }
        "#]].assert_eq(&hoisted.body.to_string());
        for out_len in [0, 2, 8, 14] {
            let input = ramp_input(out_len as usize);
            let want = run_1d(&original, &input, 0, out_len).unwrap();
            let got = run_1d(&hoisted, &input, 0, out_len).unwrap();
            assert_eq!(want.0, got.0, "output {out_len}");
        }
    }
}
