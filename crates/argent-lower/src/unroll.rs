//! Unrolling: an `unrolled` loop of constant extent becomes one copy of
//! its body per iteration, with the loop variable replaced by its value.
//! An unrolled loop whose extent is not a constant runs as a serial loop.
//!
//! ```text
//! unrolled (x, 0, 2) { f[x] = x * 3 }   ==>   f[0] = 0
//!                                             f[1] = 3
//! ```

use argent_arith::{const_int, simplify, simplify_stmt, substitute_stmt};
use argent_ir::visit::{Mutator, mutate_stmt_children};
use argent_ir::{Expr, ForKind, Stmt};

/// Unroll every `ForKind::Unrolled` loop of `s` (inner ones first).
pub fn unroll(s: &Stmt) -> Stmt {
    Unroller.mutate_stmt(s)
}

/// Loops longer than this stay loops: unrolling them would only bloat the
/// code (the schedule asked for something unreasonable).
const MAX_UNROLL: i64 = 256;

struct Unroller;

impl Mutator for Unroller {
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        let s = mutate_stmt_children(self, s);
        let Stmt::For {
            var,
            min,
            extent,
            kind: ForKind::Unrolled,
            body,
        } = s
        else {
            return s;
        };
        match const_int(&simplify(&extent)) {
            Some(n) if n <= MAX_UNROLL => {
                let copies = (0..n.max(0))
                    .map(|i| {
                        let value = simplify(&Expr::add(min.clone(), Expr::i32(i)));
                        simplify_stmt(&substitute_stmt(&body, &var, &value))
                    })
                    .collect();
                Stmt::block(copies)
            }
            _ => Stmt::For {
                var,
                min,
                extent,
                kind: ForKind::Serial,
                body,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::*;
    use argent_ir::Type;
    use expect_test::expect;

    fn loop_of(kind: ForKind, extent: Expr, body: Stmt) -> Stmt {
        Stmt::For {
            var: "x".into(),
            min: Expr::i32(2),
            extent,
            kind,
            body: Box::new(body),
        }
    }

    #[test]
    fn constant_loops_become_copies() {
        let body = Stmt::Store {
            buffer: "f".into(),
            index: x(),
            value: x() * 3,
        };
        expect![[r#"
            f[2] = 6
            f[3] = 9
            f[4] = 12
        "#]]
        .assert_eq(&unroll(&loop_of(ForKind::Unrolled, Expr::i32(3), body.clone())).to_string());
        expect![[r#"
            for (x, 2, n) {
              f[x] = (x * 3)
            }
        "#]]
        .assert_eq(&unroll(&loop_of(ForKind::Unrolled, Expr::var_i32("n"), body)).to_string());
    }

    #[test]
    fn unrolled_loops_compute_what_serial_loops_do() {
        // Nested: an unrolled loop inside a serial one, reading the input.
        let inner = Stmt::For {
            var: "k".into(),
            min: Expr::i32(0),
            extent: Expr::i32(3),
            kind: ForKind::Unrolled,
            body: Box::new(Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value: Expr::call_func(Type::I32, "out", vec![x()])
                    + Expr::call_input(Type::I32, "in", vec![x() + Expr::var_i32("k")])
                        * (Expr::var_i32("k") + 1),
            }),
        };
        let body = over_output(ForKind::Serial, inner);
        let m = module_1d(body);
        let mut unrolled = m.clone();
        unrolled.body = unroll(&m.body);
        assert!(!unrolled.body.to_string().contains("unrolled"));
        let input = ramp_input(12);
        let want = run_1d(&m, &input, 0, 10).unwrap();
        let got = run_1d(&unrolled, &input, 0, 10).unwrap();
        assert_eq!(want, got);
    }
}
