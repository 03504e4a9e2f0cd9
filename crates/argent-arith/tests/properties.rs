//! Property tests: for random small expressions of every type the
//! simplifier preserves the value, CSE preserves the value, and the
//! intervals from bounds analysis contain every sampled value.

use argent_arith::eval::{self, Scalar};
use argent_arith::interval::{Interval, Scope, bounds_of_expr_in_scope};
use argent_arith::simplify::simplify_in_scope;
use argent_arith::{cse, simplify};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Type, UnaryOp};

/// `ARGENT_SEED_OFFSET=n` reruns every property with other seeds.
fn seed_offset() -> u64 {
    std::env::var("ARGENT_SEED_OFFSET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

const I32_VARS: [&str; 3] = ["x", "y", "z"];
const U8_VARS: [&str; 2] = ["a8", "b8"];
const U16_VARS: [&str; 2] = ["a16", "b16"];
const F32_VARS: [&str; 2] = ["f", "g"];

fn vars_of_type(ty: Type) -> &'static [&'static str] {
    match ty {
        t if t == Type::U8 => &U8_VARS,
        t if t == Type::U16 => &U16_VARS,
        t if t == Type::F32 => &F32_VARS,
        _ => &I32_VARS,
    }
}

struct Gen {
    rng: fastrand::Rng,
    lets: usize,
    small: bool,
}

impl Gen {
    fn constant(&mut self, ty: Type) -> Expr {
        if ty.is_float() {
            let choices = [0.0, 1.0, -1.0, 0.5, 2.0, 3.25, -0.0, 100.0];
            return Expr::f32(choices[self.rng.usize(..choices.len())]);
        }
        if ty == Type::BOOL {
            return Expr::bool(self.rng.bool());
        }
        let v = match self.rng.u32(0..10) {
            _ if self.small && ty == Type::I32 => self.rng.i64(-12..=12),
            0 => ty.max_value() as i64,
            1 => ty.min_value() as i64,
            2 => ty.max_value() as i64 / 2 + 1,
            _ => self.rng.i64(-12..=12),
        };
        Expr::int(ty, v)
    }

    fn leaf(&mut self, ty: Type) -> Expr {
        if self.rng.u32(0..3) == 0 {
            self.constant(ty)
        } else {
            let vars = vars_of_type(ty);
            Expr::var(ty, vars[self.rng.usize(..vars.len())])
        }
    }

    fn boolean(&mut self, depth: u32) -> Expr {
        if depth == 0 {
            return Expr::bool(self.rng.bool());
        }
        match self.rng.u32(0..6) {
            0 => Expr::and(self.boolean(depth - 1), self.boolean(depth - 1)),
            1 => Expr::or(self.boolean(depth - 1), self.boolean(depth - 1)),
            2 => Expr::not(self.boolean(depth - 1)),
            _ => {
                let ty = self.any_type();
                let ops = [
                    BinOp::Eq,
                    BinOp::Ne,
                    BinOp::Lt,
                    BinOp::Le,
                    BinOp::Gt,
                    BinOp::Ge,
                ];
                let op = ops[self.rng.usize(..ops.len())];
                Expr::binary(op, self.expr(ty, depth - 1), self.expr(ty, depth - 1))
            }
        }
    }

    fn any_type(&mut self) -> Type {
        [Type::I32, Type::I32, Type::U8, Type::U16, Type::F32][self.rng.usize(..5)]
    }

    fn expr(&mut self, ty: Type, depth: u32) -> Expr {
        if depth == 0 || self.rng.u32(0..5) == 0 {
            return self.leaf(ty);
        }
        let d = depth - 1;
        let choice = self.rng.u32(0..20);
        match choice {
            0..=2 => Expr::add(self.expr(ty, d), self.expr(ty, d)),
            3..=4 => Expr::sub(self.expr(ty, d), self.expr(ty, d)),
            5 => Expr::mul(self.expr(ty, d), self.expr(ty, d)),
            6 => Expr::mul(self.expr(ty, d), self.constant(ty)),
            7 => Expr::div(
                self.expr(ty, d),
                if self.rng.bool() {
                    self.constant(ty)
                } else {
                    self.expr(ty, d)
                },
            ),
            8 => Expr::modulo(
                self.expr(ty, d),
                if self.rng.bool() {
                    self.constant(ty)
                } else {
                    self.expr(ty, d)
                },
            ),
            9 => Expr::min(self.expr(ty, d), self.expr(ty, d)),
            10 => Expr::max(self.expr(ty, d), self.expr(ty, d)),
            11 => Expr::select(self.boolean(d), self.expr(ty, d), self.expr(ty, d)),
            12 => Expr::unary(UnaryOp::Neg, self.expr(ty, d)),
            13 => {
                let from = self.any_type();
                let inner = self.expr(from, d);
                if self.rng.u32(0..3) == 0 {
                    Expr::saturating_cast(ty, inner)
                } else {
                    Expr::cast(ty, inner)
                }
            }
            14 => {
                self.lets += 1;
                let name = format!("t{}", self.lets);
                let value = self.expr(ty, d);
                let v = Expr::var(ty, name.clone());
                let body = Expr::add(Expr::mul(v.clone(), self.expr(ty, d)), v);
                Expr::let_in(name, value, body)
            }
            15 => Expr::likely(self.expr(ty, d)),
            16 if ty.is_integer() => {
                let ops = [
                    BinOp::BitAnd,
                    BinOp::BitOr,
                    BinOp::BitXor,
                    BinOp::Shl,
                    BinOp::Shr,
                ];
                let op = ops[self.rng.usize(..ops.len())];
                let b = if matches!(op, BinOp::Shl | BinOp::Shr) {
                    Expr::int(ty, self.rng.i64(-3..=9))
                } else {
                    self.expr(ty, d)
                };
                Expr::binary(op, self.expr(ty, d), b)
            }
            16 | 17 if ty.is_float() => {
                let f = [
                    Intrinsic::Floor,
                    Intrinsic::Ceil,
                    Intrinsic::Round,
                    Intrinsic::Trunc,
                    Intrinsic::Abs,
                ];
                Expr::intrinsic(ty, f[self.rng.usize(..f.len())], vec![self.expr(ty, d)])
            }
            17 => Expr::clamp(self.expr(ty, d), self.constant(ty), self.constant(ty)),
            _ => {
                // Sums with repeated atoms exercise the linear normaliser.
                let a = self.expr(ty, d);
                let c = self.constant(ty);
                Expr::sub(Expr::add(a.clone(), c), Expr::add(self.leaf(ty), a))
            }
        }
    }
}

#[derive(Clone)]
struct Env {
    vals: Vec<(String, Scalar)>,
}

impl Env {
    fn random(rng: &mut fastrand::Rng) -> Env {
        let mut vals = Vec::new();
        for v in I32_VARS {
            vals.push((v.to_string(), Scalar::Int(rng.i64(-1000..=1000))));
        }
        for v in U8_VARS {
            vals.push((v.to_string(), Scalar::Int(rng.i64(0..=255))));
        }
        for v in U16_VARS {
            vals.push((v.to_string(), Scalar::Int(rng.i64(0..=65535))));
        }
        for v in F32_VARS {
            let choices = [0.0, -0.0, 1.5, -2.25, 1e10, f32::INFINITY, f32::NAN, 0.1];
            let f = if rng.bool() {
                choices[rng.usize(..choices.len())]
            } else {
                rng.f32() * 200.0 - 100.0
            };
            vals.push((v.to_string(), Scalar::Float(f)));
        }
        Env { vals }
    }
    fn get(&self, n: &str) -> Option<Scalar> {
        self.vals
            .iter()
            .rev()
            .find(|(k, _)| k == n)
            .map(|(_, v)| *v)
    }
    fn set(&mut self, n: &str, v: Scalar) {
        self.vals.push((n.to_string(), v));
    }
}

thread_local! {
    /// When set, a NaN anywhere in an evaluation counts as leaving the
    /// analysis' assumptions (float bounds assume no NaN: with Halide's
    /// `max(a, b) = a > b ? a : b`, a NaN operand can make a max smaller
    /// than its other operand).
    static NAN_IS_OUTSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Evaluate, recording whether any `i32` addition, subtraction,
/// multiplication or negation overflowed (the simplifier, like Halide,
/// assumes `i32` arithmetic does not).
fn eval_checked(e: &Expr, env: &Env, overflow: &mut bool) -> Scalar {
    let v = eval_checked_inner(e, env, overflow);
    if matches!(v, Scalar::Float(f) if f.is_nan()) && NAN_IS_OUTSIDE.with(|n| n.get()) {
        *overflow = true;
    }
    v
}

fn eval_checked_inner(e: &Expr, env: &Env, overflow: &mut bool) -> Scalar {
    let ty = e.ty();
    match e.kind() {
        ExprKind::Binary { op, a, b } => {
            let (x, y) = (
                eval_checked(a, env, overflow),
                eval_checked(b, env, overflow),
            );
            if a.ty() == Type::I32 {
                let (p, q) = (x.as_i64(), y.as_i64());
                let exact = match op {
                    BinOp::Add => Some(p + q),
                    BinOp::Sub => Some(p - q),
                    BinOp::Mul => Some(p * q),
                    BinOp::Div if q == -1 => Some(-p),
                    BinOp::Shl => Some(if q >= 0 {
                        p << q.min(40)
                    } else {
                        p >> (-q).min(63)
                    }),
                    _ => None,
                };
                if let Some(v) = exact
                    && (v < i32::MIN as i64 || v > i32::MAX as i64)
                {
                    *overflow = true;
                }
            }
            eval::binary(*op, a.ty(), x, y)
        }
        ExprKind::Unary { op, value } => {
            let v = eval_checked(value, env, overflow);
            if *op == UnaryOp::Neg && ty == Type::I32 && v.as_i64() == i32::MIN as i64 {
                *overflow = true;
            }
            eval::unary(*op, ty, v)
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            // Both sides are evaluated so overflow anywhere is noticed.
            let c = eval_checked(cond, env, overflow);
            let t = eval_checked(then, env, overflow);
            let o = eval_checked(otherwise, env, overflow);
            if c.is_true() { t } else { o }
        }
        ExprKind::Cast { value, saturating } => {
            let v = eval_checked(value, env, overflow);
            eval::cast(ty, value.ty(), v, *saturating)
        }
        ExprKind::Let { name, value, body } => {
            let v = eval_checked(value, env, overflow);
            let mut inner = env.clone();
            inner.set(name, v);
            eval_checked(body, &inner, overflow)
        }
        ExprKind::Call {
            target: CallTarget::Intrinsic(i),
            args,
        } => {
            let vals: Vec<Scalar> = args
                .iter()
                .map(|a| eval_checked(a, env, overflow))
                .collect();
            let tys: Vec<Type> = args.iter().map(|a| a.ty()).collect();
            eval::intrinsic(*i, ty, &tys, &vals)
        }
        _ => eval::eval_scalar(e, &mut |n| env.get(n)).expect("evaluable"),
    }
}

fn eval(e: &Expr, env: &Env) -> Scalar {
    eval::eval_scalar(e, &mut |n| env.get(n)).expect("evaluable")
}

/// Index-like expressions: `i32` constants stay far from the limits, as
/// the interval analysis assumes (like Halide) that `i32` index arithmetic,
/// including the bound expressions it builds, does not overflow.
fn small_constants(g: &mut Gen) {
    g.small = true;
}

fn check_simplifier_on(ty: Type, seed: u64, cases: usize) {
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(seed + seed_offset()),
        lets: 0,
        small: false,
    };
    let mut checked = 0;
    for case in 0..cases {
        let e = if ty == Type::BOOL {
            g.boolean(4)
        } else {
            g.expr(ty, 4)
        };
        let s = simplify(&e);
        assert_eq!(s.ty(), e.ty(), "type changed: {e} -> {s}");
        for _ in 0..8 {
            let env = Env::random(&mut g.rng);
            let mut overflow = false;
            let want = eval_checked(&e, &env, &mut overflow);
            if overflow {
                continue;
            }
            // The no-overflow assumption covers the simplified form too
            // (moving a constant across a comparison may overflow where
            // the original did not); the count below keeps this honest.
            let got = eval_checked(&s, &env, &mut overflow);
            if overflow {
                continue;
            }
            checked += 1;
            assert!(
                want.same_bits(got),
                "seed {seed} case {case}: {e}\n  simplified to {s}\n  env {:?}\n  want {want:?} got {got:?}",
                env.vals
            );
        }
    }
    assert!(
        checked > cases * 8 / 2,
        "too few samples checked: {checked}"
    );
}

#[test]
fn simplifier_preserves_i32_values() {
    check_simplifier_on(Type::I32, 1, 3000);
}

#[test]
fn simplifier_preserves_u8_values() {
    check_simplifier_on(Type::U8, 2, 3000);
}

#[test]
fn simplifier_preserves_u16_values() {
    check_simplifier_on(Type::U16, 3, 3000);
}

#[test]
fn simplifier_preserves_f32_values() {
    check_simplifier_on(Type::F32, 4, 3000);
}

#[test]
fn simplifier_preserves_bool_values() {
    check_simplifier_on(Type::BOOL, 5, 2000);
}

#[test]
fn simplifier_is_idempotent_enough() {
    // A second pass may still find something, but must keep the value.
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(6 + seed_offset()),
        lets: 0,
        small: false,
    };
    for _ in 0..500 {
        let e = g.expr(Type::I32, 4);
        let once = simplify(&e);
        let twice = simplify(&once);
        let env = Env::random(&mut g.rng);
        let mut overflow = false;
        eval_checked(&e, &env, &mut overflow);
        if !overflow {
            assert!(
                eval(&once, &env).same_bits(eval(&twice, &env)),
                "{once} vs {twice}"
            );
        }
    }
}

#[test]
fn cse_preserves_values() {
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(7 + seed_offset()),
        lets: 0,
        small: false,
    };
    for ty in [Type::I32, Type::U8, Type::F32] {
        for _ in 0..1000 {
            let base = g.expr(ty, 3);
            // Repeat a subexpression on purpose.
            let e = Expr::add(Expr::mul(base.clone(), g.expr(ty, 2)), base);
            let c = cse(&e);
            for _ in 0..4 {
                let env = Env::random(&mut g.rng);
                assert!(eval(&e, &env).same_bits(eval(&c, &env)), "{e}\n  cse: {c}");
            }
        }
    }
}

/// Random constant intervals for the variables, and environments inside
/// them.
fn random_scope(rng: &mut fastrand::Rng) -> (Scope, Vec<(String, i64, i64)>) {
    let mut scope = Scope::new();
    let mut ranges = Vec::new();
    for v in I32_VARS {
        let lo = rng.i64(-50..=50);
        let hi = lo + rng.i64(0..=40);
        scope.push(v, Interval::new(Expr::i32(lo), Expr::i32(hi)));
        ranges.push((v.to_string(), lo, hi));
    }
    for (vars, ty) in [(&U8_VARS[..], Type::U8), (&U16_VARS[..], Type::U16)] {
        for v in vars {
            let lo = rng.i64(0..=200);
            let hi = (lo + rng.i64(0..=100)).min(ty.max_value() as i64);
            scope.push(*v, Interval::new(Expr::int(ty, lo), Expr::int(ty, hi)));
            ranges.push((v.to_string(), lo, hi));
        }
    }
    (scope, ranges)
}

fn env_in(rng: &mut fastrand::Rng, ranges: &[(String, i64, i64)]) -> Env {
    let mut env = Env::random(rng);
    for (n, lo, hi) in ranges {
        let v = match rng.u32(0..4) {
            0 => *lo,
            1 => *hi,
            _ => rng.i64(*lo..=*hi),
        };
        env.set(n, Scalar::Int(v));
    }
    // Float bounds assume finite values.
    for v in F32_VARS {
        env.set(v, Scalar::Float(rng.f32() * 200.0 - 100.0));
    }
    env
}

#[test]
fn intervals_contain_sampled_values() {
    NAN_IS_OUTSIDE.with(|n| n.set(true));
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(8 + seed_offset()),
        lets: 0,
        small: false,
    };
    small_constants(&mut g);
    for ty in [Type::I32, Type::U8, Type::U16, Type::F32] {
        for case in 0..1500 {
            let (scope, ranges) = random_scope(&mut g.rng);
            let e = g.expr(ty, 3);
            let b = bounds_of_expr_in_scope(&e, &scope);
            for _ in 0..8 {
                let env = env_in(&mut g.rng, &ranges);
                let mut overflow = false;
                let v = eval_checked(&e, &env, &mut overflow);
                if overflow {
                    continue;
                }
                let mut bound_overflow = false;
                let bound_values = [&b.min, &b.max].map(|m| {
                    m.as_ref()
                        .map(|m| eval_checked(m, &env, &mut bound_overflow))
                });
                if bound_overflow {
                    continue;
                }
                let inside = |bound: &Option<Scalar>, below: bool| match bound {
                    None => true,
                    Some(bv) => {
                        let bv = *bv;
                        match (v, bv) {
                            // Float bounds assume finite values: infinities
                            // can make a bound expression NaN.
                            (Scalar::Float(x), Scalar::Float(y)) => {
                                x.is_nan()
                                    || y.is_nan()
                                    || x.is_infinite()
                                    || if below { y <= x } else { x <= y }
                            }
                            (x, y) => {
                                if below {
                                    y.as_i64() <= x.as_i64()
                                } else {
                                    x.as_i64() <= y.as_i64()
                                }
                            }
                        }
                    }
                };
                assert!(
                    inside(&bound_values[0], true) && inside(&bound_values[1], false),
                    "case {case}: {e} has bounds {b}, but value {v:?} with {:?}",
                    &env.vals[env.vals.len() - ranges.len()..]
                );
            }
        }
    }
}

#[test]
fn symbolic_intervals_contain_sampled_values() {
    NAN_IS_OUTSIDE.with(|n| n.set(true));
    // x ranges over [y, y + 10] where y is free: bounds mention y.
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(9 + seed_offset()),
        lets: 0,
        small: false,
    };
    small_constants(&mut g);
    let y = Expr::var_i32("y");
    let scope = Scope::new().with(
        "x",
        Interval::new(y.clone(), Expr::add(y.clone(), Expr::i32(10))),
    );
    for case in 0..2000 {
        let e = g.expr(Type::I32, 3);
        let b = bounds_of_expr_in_scope(&e, &scope);
        for _ in 0..6 {
            let mut env = env_in(&mut g.rng, &[]);
            let yv = env.get("y").unwrap().as_i64();
            env.set("x", Scalar::Int(yv + g.rng.i64(0..=10)));
            let mut overflow = false;
            let v = eval_checked(&e, &env, &mut overflow).as_i64();
            let mut bound_overflow = false;
            let lo = b
                .min
                .as_ref()
                .map(|m| eval_checked(m, &env, &mut bound_overflow).as_i64());
            let hi = b
                .max
                .as_ref()
                .map(|m| eval_checked(m, &env, &mut bound_overflow).as_i64());
            if overflow || bound_overflow {
                continue;
            }
            assert!(
                lo.is_none_or(|lo| lo <= v) && hi.is_none_or(|hi| v <= hi),
                "case {case}: {e} has bounds {b}, value {v} at x={:?} y={yv}",
                env.get("x")
            );
        }
    }
}

#[test]
fn simplification_in_scope_preserves_values_inside_the_scope() {
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(10 + seed_offset()),
        lets: 0,
        small: false,
    };
    for ty in [Type::I32, Type::U8, Type::BOOL] {
        for case in 0..1500 {
            let (scope, ranges) = random_scope(&mut g.rng);
            let e = if ty == Type::BOOL {
                g.boolean(3)
            } else {
                g.expr(ty, 4)
            };
            let s = simplify_in_scope(&e, &scope);
            for _ in 0..6 {
                let env = env_in(&mut g.rng, &ranges);
                let mut overflow = false;
                let want = eval_checked(&e, &env, &mut overflow);
                if overflow {
                    continue;
                }
                let got = eval_checked(&s, &env, &mut overflow);
                if overflow {
                    continue;
                }
                assert!(
                    want.same_bits(got),
                    "case {case}: {e}\n  in scope simplified to {s}\n  want {want:?} got {got:?}"
                );
            }
        }
    }
}
