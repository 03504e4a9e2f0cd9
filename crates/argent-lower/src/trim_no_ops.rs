//! Trimming loops to the iterations that do something: a serial loop
//! whose body is guarded, so that from some iteration on every guard
//! fails, stops there (Halide's `trim_no_ops`, for upper ends).
//!
//! The case that matters is the last tile of a split guarded with `if`:
//! in an output tiled by 256 columns, a last tile 8 columns wide still
//! ran its 32 vector iterations per row, 31 of them testing 8 lanes one
//! by one to do nothing. The loop over vectors now stops after the first.
//!
//! ```text
//! for (xi, 0, 32) {                        for (xi, 0, max(min(32, ((w - xo * 256) + 7) / 8), 0)) {
//!   vectorized (v, 0, 8) {                   vectorized (v, 0, 8) {
//!     if (likely(xo * 256 + xi * 8 + v  ==>     if (likely(xo * 256 + xi * 8 + v < w)) { f[..] = .. }
//!                < w)) { f[..] = .. }         }
//!   }                                       }
//! }
//! ```
//!
//! Only loops of constant extent directly around a vectorised loop are
//! trimmed, and only where a bound is found for every statement of the
//! body: a store outside any guard, or a guard that does not bound the loop
//! variable from above, leaves the loop as it is. The bound is the largest
//! over the inner loops' ranges, so it holds whatever they are.

use argent_arith::simplify::split_linear;
use argent_arith::{const_int, simplify};
use argent_ir::visit::{Mutator, expr_uses_var, mutate_stmt_children, substitute};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, ForKind, Intrinsic, Stmt, UnaryOp};

/// Trim every serial loop of `s` to the iterations before all of its
/// body's guards fail.
pub fn trim_no_ops(s: &Stmt) -> Stmt {
    Trimmer.mutate_stmt(s)
}

struct Trimmer;

impl Mutator for Trimmer {
    /// Expressions hold no loops: walking them would only cost time.
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        e.clone()
    }

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
        // Only loops of constant extent over vectors: a tile's loop, whose
        // last tile wastes a lane-by-lane test per empty vector. A loop
        // over a whole row already ends with the row, and other loops
        // keep their constant trip counts, which V8 compiles better.
        if const_int(extent).is_none() || !encloses_vector_loop(body) || !has_guard(body) {
            return s;
        }
        let Some(end) = active_end(body, var, &mut Context::default()) else {
            return s;
        };
        let bound = simplify(&Expr::sub(end, min.clone()));
        // A constant bound no smaller than the extent would only cost a
        // `min`.
        if const_int(&bound).is_some_and(|b| const_int(extent).is_some_and(|n| b >= n)) {
            return s;
        }
        let trimmed = Expr::max(Expr::min(bound, extent.clone()), Expr::i32(0));
        Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: trimmed,
            kind: ForKind::Serial,
            body: body.clone(),
        }
    }
}

/// Whether `s` has an `if` (a steady-state loop has none: only those get
/// past this test cheaply).
fn has_guard(s: &Stmt) -> bool {
    match s {
        Stmt::IfThenElse { .. } => true,
        Stmt::LetStmt { body, .. }
        | Stmt::ProducerConsumer { body, .. }
        | Stmt::For { body, .. }
        | Stmt::Allocate { body, .. }
        | Stmt::Realize { body, .. } => has_guard(body),
        Stmt::Block(stmts) => stmts.iter().any(has_guard),
        _ => false,
    }
}

/// Whether the next loops inside `s` include a vectorised one.
fn encloses_vector_loop(s: &Stmt) -> bool {
    match s {
        Stmt::For { kind, .. } => *kind == ForKind::Vectorized,
        Stmt::LetStmt { body, .. } | Stmt::ProducerConsumer { body, .. } => {
            encloses_vector_loop(body)
        }
        Stmt::IfThenElse {
            then, otherwise, ..
        } => encloses_vector_loop(then) || otherwise.as_deref().is_some_and(encloses_vector_loop),
        Stmt::Block(stmts) => stmts.iter().any(encloses_vector_loop),
        _ => false,
    }
}

/// What surrounds a statement inside the loop being trimmed: its `let`s
/// and the ranges of its inner loops, outermost first.
#[derive(Default)]
struct Context {
    lets: Vec<(String, Expr)>,
    /// Name, first and last value.
    loops: Vec<(String, Expr, Expr)>,
}

/// An exclusive upper bound on `var` past which `s` does nothing; `None`
/// when none is found.
fn active_end(s: &Stmt, var: &str, cx: &mut Context) -> Option<Expr> {
    match s {
        Stmt::LetStmt { name, value, body } => {
            cx.lets.push((name.clone(), value.clone()));
            let end = active_end(body, var, cx);
            cx.lets.pop();
            end
        }
        Stmt::ProducerConsumer { body, .. } => active_end(body, var, cx),
        Stmt::IfThenElse {
            cond,
            then,
            otherwise,
        } => {
            let cond = with_lets(cond, &cx.lets);
            // Each branch does something only while its condition holds
            // and its body does something: the smaller of the two bounds,
            // when either is known.
            let branch = |cond: Option<Expr>, body: Option<Expr>| match (cond, body) {
                (Some(a), Some(b)) => Some(Expr::min(a, b)),
                (a, b) => a.or(b),
            };
            let then_end = branch(
                condition_end(&cond, var, false, cx),
                active_end(then, var, cx),
            );
            let else_end = match otherwise {
                None => return then_end,
                Some(o) => branch(condition_end(&cond, var, true, cx), active_end(o, var, cx)),
            };
            Some(Expr::max(then_end?, else_end?))
        }
        Stmt::Block(stmts) => {
            let mut end: Option<Expr> = None;
            for st in stmts {
                let e = active_end(st, var, cx)?;
                end = Some(match end {
                    None => e,
                    Some(x) => Expr::max(x, e),
                });
            }
            end
        }
        Stmt::For {
            var: inner,
            min,
            extent,
            body,
            ..
        } => {
            let (min, extent) = (with_lets(min, &cx.lets), with_lets(extent, &cx.lets));
            let last = simplify(&Expr::sub(Expr::add(min.clone(), extent), Expr::i32(1)));
            cx.loops.push((inner.clone(), min, last));
            let end = active_end(body, var, cx);
            cx.loops.pop();
            end
        }
        _ => None,
    }
}

/// `e` with the `let`s around it substituted, innermost first.
fn with_lets(e: &Expr, lets: &[(String, Expr)]) -> Expr {
    lets.iter()
        .rev()
        .fold(e.clone(), |e, (name, value)| substitute(&e, name, value))
}

/// An exclusive upper bound on `var` past which `cond` (or its negation,
/// with `negated`) is false; `None` when it has none.
fn condition_end(cond: &Expr, var: &str, negated: bool, cx: &Context) -> Option<Expr> {
    match cond.kind() {
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } => condition_end(&args[0], var, negated, cx),
        ExprKind::Unary {
            op: UnaryOp::Not,
            value,
        } => condition_end(value, var, !negated, cx),
        // Either side of a conjunction bounds it; both sides of a
        // disjunction must (and the reverse for their negations).
        ExprKind::Binary {
            op: op @ (BinOp::And | BinOp::Or),
            a,
            b,
        } => {
            let (ea, eb) = (
                condition_end(a, var, negated, cx),
                condition_end(b, var, negated, cx),
            );
            if (*op == BinOp::And) != negated {
                match (ea, eb) {
                    (Some(x), Some(y)) => Some(Expr::min(x, y)),
                    (x, y) => x.or(y),
                }
            } else {
                Some(Expr::max(ea?, eb?))
            }
        }
        ExprKind::Binary {
            op: op @ (BinOp::Lt | BinOp::Le),
            a,
            b,
        } if a.ty() == argent_ir::Type::I32 => {
            // `a < b` is `a - b < 0`, `a <= b` is `a - b - 1 < 0`; negated,
            // `b - a <= 0` and `b - a < 0`.
            let (x, y, strict) = if negated {
                (b, a, *op == BinOp::Le)
            } else {
                (a, b, *op == BinOp::Lt)
            };
            let diff = Expr::sub(x.clone(), y.clone());
            let diff = simplify(&if strict {
                diff
            } else {
                Expr::sub(diff, Expr::i32(1))
            });
            // `c * var + rest < 0` with `c > 0` first fails at
            // `var = ceil(-rest / c) = floor((c - 1 - rest) / c)` (`/`
            // rounds down).
            let (c, mut rest) = split_linear(&diff, var)?;
            if c <= 0 {
                return None;
            }
            // The bound must hold for every iteration of the inner loops:
            // take each inner variable at the end of its range that makes
            // `rest` smallest (the bound largest). One it does not occur
            // in linearly leaves no bound.
            for (name, first, last) in cx.loops.iter().rev() {
                if !expr_uses_var(&rest, name) {
                    continue;
                }
                let (k, _) = split_linear(&rest, name)?;
                let worst = if k > 0 { first } else { last };
                rest = simplify(&substitute(&rest, name, worst));
            }
            if cx.loops.iter().any(|(name, ..)| expr_uses_var(&rest, name)) {
                return None;
            }
            Some(simplify(&Expr::div(
                Expr::sub(Expr::i32(c - 1), rest),
                Expr::i32(c),
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn guarded_tile() -> Stmt {
        let v = |n: &str| Expr::var_i32(n);
        let x = Expr::add(
            Expr::add(
                Expr::mul(v("xo"), Expr::i32(256)),
                Expr::mul(v("xi"), Expr::i32(8)),
            ),
            v("lane"),
        );
        let store = Stmt::Store {
            buffer: "f".into(),
            index: x.clone(),
            value: Expr::i32(1),
        };
        let guarded = Stmt::IfThenElse {
            cond: Expr::likely(Expr::lt(x, v("w"))),
            then: Box::new(store),
            otherwise: None,
        };
        Stmt::For {
            var: "xi".into(),
            min: Expr::i32(0),
            extent: Expr::i32(32),
            kind: ForKind::Serial,
            body: Box::new(Stmt::For {
                var: "lane".into(),
                min: Expr::i32(0),
                extent: Expr::i32(8),
                kind: ForKind::Vectorized,
                body: Box::new(guarded),
            }),
        }
    }

    #[test]
    fn a_guarded_tile_stops_at_its_last_vector() {
        let trimmed = trim_no_ops(&guarded_tile());
        let Stmt::For { extent, .. } = &trimmed else {
            panic!("not a loop");
        };
        expect!["max(min((((w + 7) / 8) - (xo * 32)), 32), 0)"].assert_eq(&extent.to_string());
        // Every iteration dropped did nothing, and every one kept may.
        for (w, xo, iterations) in [
            (2048, 7, 32),
            (1800, 7, 1),
            (1793, 7, 1),
            (1792, 7, 0),
            (1, 0, 1),
        ] {
            let e = argent_arith::substitute_many(
                extent,
                &[
                    ("w".to_string(), Expr::i32(w)),
                    ("xo".to_string(), Expr::i32(xo)),
                ]
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>(),
            );
            assert_eq!(const_int(&simplify(&e)), Some(iterations), "w {w}, xo {xo}");
        }
    }

    #[test]
    fn an_unguarded_store_keeps_the_loop() {
        let Stmt::For { body, .. } = guarded_tile() else {
            unreachable!()
        };
        let with_store = Stmt::For {
            var: "xi".into(),
            min: Expr::i32(0),
            extent: Expr::i32(32),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Block(vec![
                *body,
                Stmt::Store {
                    buffer: "g".into(),
                    index: Expr::var_i32("xi"),
                    value: Expr::i32(0),
                },
            ])),
        };
        assert_eq!(trim_no_ops(&with_store), with_store);
    }
}
