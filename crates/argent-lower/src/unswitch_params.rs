//! Unswitching on parameters: a stage that chooses between values with a
//! `select` on parameters alone (`select(mode == 0, box(x, y), ..)`, a
//! filter's mode switch) would compute every side of the choice at every
//! point once vectorised, since a vector select evaluates both sides. Its
//! production is versioned instead, `if (cond) { .. } else { .. }` around
//! it, with the condition folded in each version, so that each computes
//! only the side it takes. Halide leaves this to the schedule
//! (`specialize`); here a condition on parameters is enough.
//!
//! Only selects with a side that reads an image or another stage count
//! (choosing between two constants costs nothing). Each production is
//! versioned at most [`MAX_CONDITIONS`] conditions deep, so a stage has
//! at most 8 versions; a chain of selects on one parameter, as in
//! examples/window_ops.ag, gives one version per arm, since each folds
//! the next condition away. Stages computed inside a version that it no
//! longer reads (a window reduction of an arm not taken) are dropped.
//!
//! ```text
//! produce out {                                   if ((mode == 0)) {
//!   for (x, ..) {                                   produce out { for (x, ..) { out(x) = a(x) } }
//!     out(x) = select((mode == 0), a(x), b(x)) ==> } else {
//!   }                                               produce out { for (x, ..) { out(x) = b(x) } }
//! }                                               }
//! ```

use argent_arith::fast_hash::FastHashSet;
use argent_ir::visit::{Mutator, Visitor, mutate_expr_children, mutate_stmt_children, walk_expr};
use argent_ir::{CallTarget, Expr, ExprKind, Param, Stmt, Type};

/// Conditions one production is versioned on, nested.
pub const MAX_CONDITIONS: usize = 3;

/// Version every innermost production of `s` on the conditions over
/// `params` alone that its `select`s choose with.
pub fn unswitch_params(s: &Stmt, params: &[Param]) -> Stmt {
    if params.is_empty() {
        return s.clone();
    }
    let params: FastHashSet<&str> = params.iter().map(|p| p.name.as_str()).collect();
    Unswitcher { params: &params }.mutate_stmt(s)
}

struct Unswitcher<'a> {
    params: &'a FastHashSet<&'a str>,
}

impl Mutator for Unswitcher<'_> {
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::ProducerConsumer {
                producing: true, ..
            } => self.versions(s, MAX_CONDITIONS),
            _ => mutate_stmt_children(self, s),
        }
    }
}

impl Unswitcher<'_> {
    /// `production` versioned on up to `depth` conditions.
    fn versions(&self, production: &Stmt, depth: usize) -> Stmt {
        if depth == 0 {
            return production.clone();
        }
        let Some(cond) = self.first_param_condition(production) else {
            return production.clone();
        };
        let version = |value: bool| {
            let folded = Fold { cond: &cond, value }.mutate_stmt(production);
            self.versions(&DropUnread.mutate_stmt(&folded), depth - 1)
        };
        Stmt::IfThenElse {
            cond: cond.clone(),
            then: Box::new(version(true)),
            otherwise: Some(Box::new(version(false))),
        }
    }

    /// The condition of the first `select` in `s` that depends on
    /// parameters only.
    fn first_param_condition(&self, s: &Stmt) -> Option<Expr> {
        struct Find<'a> {
            params: &'a FastHashSet<&'a str>,
            found: Option<Expr>,
        }
        impl Visitor for Find<'_> {
            fn visit_expr(&mut self, e: &Expr) {
                if self.found.is_some() {
                    return;
                }
                if let ExprKind::Select {
                    cond,
                    then,
                    otherwise,
                } = e.kind()
                    && (reads_memory(then) || reads_memory(otherwise))
                    && on_params_only(cond, self.params)
                {
                    self.found = Some(cond.clone());
                    return;
                }
                walk_expr(self, e);
            }
        }
        let mut find = Find {
            params: self.params,
            found: None,
        };
        find.visit_stmt(s);
        find.found
    }
}

/// Whether `cond` is a scalar condition that reads parameters and nothing
/// else but constants: no loop variable, no call, no load.
fn on_params_only(cond: &Expr, params: &FastHashSet<&str>) -> bool {
    cond.ty() == Type::BOOL
        && arithmetic_on(cond, |n| params.contains(n))
        && argent_ir::visit::expr_any(cond, |e| matches!(e.kind(), ExprKind::Var(_)))
}

/// Whether `e` is arithmetic on constants and on the variables `allowed`
/// accepts, with no call, load, select or let.
fn arithmetic_on(e: &Expr, allowed: impl Fn(&str) -> bool) -> bool {
    !argent_ir::visit::expr_any(e, |e| match e.kind() {
        ExprKind::Var(n) => !allowed(n),
        ExprKind::IntImm(_)
        | ExprKind::FloatImm(_)
        | ExprKind::Cast { .. }
        | ExprKind::Unary { .. }
        | ExprKind::Binary { .. } => false,
        _ => true,
    })
}

/// Whether `e` reads an image or a stage.
fn reads_memory(e: &Expr) -> bool {
    argent_ir::visit::expr_any(e, |e| {
        matches!(
            e.kind(),
            ExprKind::Call {
                target: CallTarget::Func(_) | CallTarget::Input(_),
                ..
            } | ExprKind::Load { .. }
        )
    })
}

/// Drops the realizations whose func nothing reads any more, production
/// and all.
struct DropUnread;

impl Mutator for DropUnread {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        e.clone()
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        let s = mutate_stmt_children(self, s);
        let Stmt::Realize { func, body, .. } = &s else {
            return s;
        };
        if read_outside_its_production(body, func) {
            return s;
        }
        struct Unproduce<'a>(&'a str);
        impl Mutator for Unproduce<'_> {
            fn mutate_expr(&mut self, e: &Expr) -> Expr {
                e.clone()
            }
            fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
                match s {
                    Stmt::ProducerConsumer {
                        func,
                        producing: true,
                        ..
                    } if func == self.0 => Stmt::no_op(),
                    _ => mutate_stmt_children(self, s),
                }
            }
        }
        Unproduce(func).mutate_stmt(body)
    }
}

/// Whether `s` reads `func` anywhere but in `func`'s own production.
fn read_outside_its_production(s: &Stmt, func: &str) -> bool {
    struct Find<'a> {
        func: &'a str,
        found: bool,
    }
    impl Visitor for Find<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if self.found {
                return;
            }
            if let ExprKind::Call {
                target: CallTarget::Func(f),
                ..
            } = e.kind()
                && f == self.func
            {
                self.found = true;
                return;
            }
            walk_expr(self, e);
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                _ if self.found => {}
                Stmt::ProducerConsumer {
                    func,
                    producing: true,
                    ..
                } if func == self.func => {}
                _ => argent_ir::visit::walk_stmt(self, s),
            }
        }
    }
    let mut find = Find { func, found: false };
    find.visit_stmt(s);
    find.found
}

/// Replaces `cond` by `value` and folds the selects it decides.
struct Fold<'a> {
    cond: &'a Expr,
    value: bool,
}

impl Mutator for Fold<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        if argent_arith::expr_eq(e, self.cond) {
            return Expr::bool(self.value);
        }
        let e = mutate_expr_children(self, e);
        if let ExprKind::Select {
            cond,
            then,
            otherwise,
        } = e.kind()
            // A condition left without variables, `!(true)` or `(false ||
            // (2 < 3))`: only those are worth simplifying here.
            && arithmetic_on(cond, |_| false)
            && let Some(c) = argent_arith::const_int(&argent_arith::simplify(cond))
        {
            return if c != 0 {
                then.clone()
            } else {
                otherwise.clone()
            };
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argent_ir::Span;

    fn param(name: &str) -> Param {
        Param {
            name: name.into(),
            ty: Type::I32,
            default: Some(0.0),
            range: None,
            span: Span::DUMMY,
        }
    }

    fn produce(value: Expr) -> Stmt {
        Stmt::ProducerConsumer {
            func: "out".into(),
            producing: true,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: Expr::var_i32("x"),
                value,
            }),
        }
    }

    fn input(at: Expr) -> Expr {
        Expr::call_input(Type::I32, "in", vec![at])
    }

    #[test]
    fn a_chain_of_selects_on_a_parameter_gets_one_version_per_arm() {
        let mode = Expr::var_i32("mode");
        let x = Expr::var_i32("x");
        let value = Expr::select(
            Expr::eq(mode.clone(), Expr::i32(0)),
            input(x.clone()),
            Expr::select(
                Expr::eq(mode.clone(), Expr::i32(1)),
                input(x.clone() + 1),
                x.clone() + 3,
            ),
        );
        let s = unswitch_params(&produce(value), &[param("mode")]);
        expect_test::expect![[r#"
            if ((mode == 0)) {
              produce out {
                out[x] = in(x)
              }
            }
            else {
              if ((mode == 1)) {
                produce out {
                  out[x] = in((x + 1))
                }
              }
              else {
                produce out {
                  out[x] = (x + 3)
                }
              }
            }
        "#]]
        .assert_eq(&s.to_string());
    }

    /// A stage computed inside the production for one side only (a
    /// window reduction) is dropped from the versions that do not read it.
    #[test]
    fn stages_a_version_no_longer_reads_are_dropped() {
        let x = Expr::var_i32("x");
        let reduction = Stmt::Realize {
            func: "sum0".into(),
            ty: Type::I32,
            bounds: Vec::new(),
            body: Box::new(Stmt::Block(vec![
                Stmt::ProducerConsumer {
                    func: "sum0".into(),
                    producing: true,
                    body: Box::new(Stmt::Store {
                        buffer: "sum0".into(),
                        index: Expr::i32(0),
                        value: input(x.clone()),
                    }),
                },
                Stmt::Store {
                    buffer: "out".into(),
                    index: x.clone(),
                    value: Expr::select(
                        Expr::eq(Expr::var_i32("mode"), Expr::i32(0)),
                        Expr::call_func(Type::I32, "sum0", vec![]),
                        input(x.clone()),
                    ),
                },
            ])),
        };
        let s = Stmt::ProducerConsumer {
            func: "out".into(),
            producing: true,
            body: Box::new(reduction),
        };
        let text = unswitch_params(&s, &[param("mode")]).to_string();
        let (taken, other) = text.split_once("else").expect("two versions");
        assert!(taken.contains("produce sum0"), "{text}");
        assert!(
            !other.contains("produce sum0") && !other.contains("realize"),
            "{text}"
        );
    }

    #[test]
    fn choices_between_values_that_read_nothing_stay() {
        let value = Expr::select(
            Expr::eq(Expr::var_i32("mode"), Expr::i32(0)),
            Expr::var_i32("x"),
            Expr::i32(7),
        );
        let s = produce(value);
        assert_eq!(unswitch_params(&s, &[param("mode")]), s);
    }

    #[test]
    fn conditions_on_anything_else_stay() {
        let x = Expr::var_i32("x");
        let value = Expr::select(
            Expr::lt(x.clone(), Expr::var_i32("mode")),
            input(x.clone()),
            x.clone() + 1,
        );
        let s = produce(value);
        assert_eq!(unswitch_params(&s, &[param("mode")]), s);
    }
}
