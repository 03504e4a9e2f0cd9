//! Symbolic interval analysis: inclusive bounds of an expression in terms
//! of the bounds of its variables, and the regions of a func or input that
//! a statement reads (what bounds inference needs).
//!
//! Bounds of `i32` expressions are symbolic (`[x.min + 1, x.max + 1]`) and
//! assume, as in Halide, that index arithmetic does not overflow. Bounds of
//! the wrapping types (`u8`, `u16`, `u32`, `i8`, `i16`) are always
//! constants computed exactly, falling back to the type's whole range when
//! a result could wrap. Float bounds use the monotonicity of rounding and
//! assume values are not NaN (a NaN operand can make `max(a, b)` smaller
//! than `a` under Halide's `a > b ? a : b`).
//! For vector expressions the interval covers every lane.
//!
//! ```text
//! bounds of in(x - 1 + r, y)  with x in [0, w - 1], r in [0, 2]
//!   ==> [-1, w], [y, y]
//! ```

use crate::eval::{self, Scalar, const_scalar};
use crate::simplify::Simplifier;
use crate::{const_int, expr_eq};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Stmt, Type, UnaryOp};
use std::fmt;

/// Inclusive bounds; `None` means unbounded on that side.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub min: Option<Expr>,
    pub max: Option<Expr>,
}

impl Interval {
    /// `[min, max]`, both inclusive.
    pub fn new(min: Expr, max: Expr) -> Interval {
        Interval {
            min: Some(min),
            max: Some(max),
        }
    }

    /// The unbounded interval.
    pub fn everything() -> Interval {
        Interval {
            min: None,
            max: None,
        }
    }

    /// `[e, e]`.
    pub fn single_point(e: Expr) -> Interval {
        Interval {
            min: Some(e.clone()),
            max: Some(e),
        }
    }

    /// Both sides bounded.
    pub fn is_bounded(&self) -> bool {
        self.min.is_some() && self.max.is_some()
    }

    /// Whether min and max are the same expression.
    pub fn is_single_point(&self) -> bool {
        matches!((&self.min, &self.max), (Some(a), Some(b)) if expr_eq(a, b))
    }

    /// The range of values of a type: constants for the 8- and 16-bit
    /// integers and bool, `[0, +inf)` for `u32`, unbounded for `i32` and
    /// floats (whose extremes are never useful bounds).
    pub fn type_range(ty: Type) -> Interval {
        let t = ty.element();
        match (t.kind, t.bits) {
            (argent_ir::TypeKind::Float, _) => Interval::everything(),
            (argent_ir::TypeKind::Int, b) if b >= 32 => Interval::everything(),
            (argent_ir::TypeKind::UInt, b) if b >= 32 => Interval {
                min: Some(Expr::int(t, 0)),
                max: None,
            },
            _ => Interval::new(
                Expr::int(t, t.min_value() as i64),
                Expr::int(t, t.max_value() as i64),
            ),
        }
    }

    /// The smallest interval containing both (simplified).
    pub fn union(&self, other: &Interval) -> Interval {
        Interval {
            min: match (&self.min, &other.min) {
                (Some(a), Some(b)) => Some(mk(BinOp::Min, a.clone(), b.clone())),
                _ => None,
            },
            max: match (&self.max, &other.max) {
                (Some(a), Some(b)) => Some(mk(BinOp::Max, a.clone(), b.clone())),
                _ => None,
            },
        }
    }

    /// The intersection of both (simplified); may be empty (min > max).
    pub fn intersection(&self, other: &Interval) -> Interval {
        Interval {
            min: match (&self.min, &other.min) {
                (Some(a), Some(b)) => Some(mk(BinOp::Max, a.clone(), b.clone())),
                (a, b) => a.clone().or(b.clone()),
            },
            max: match (&self.max, &other.max) {
                (Some(a), Some(b)) => Some(mk(BinOp::Min, a.clone(), b.clone())),
                (a, b) => a.clone().or(b.clone()),
            },
        }
    }

    /// The number of points, `max - min + 1`, when bounded.
    pub fn extent(&self) -> Option<Expr> {
        match (&self.min, &self.max) {
            (Some(a), Some(b)) => {
                let d = mk(BinOp::Sub, b.clone(), a.clone());
                let one = Expr::int(d.ty(), 1);
                Some(mk(BinOp::Add, d, one))
            }
            _ => None,
        }
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.min {
            Some(m) => write!(f, "[{m}, ")?,
            None => write!(f, "[-inf, ")?,
        }
        match &self.max {
            Some(m) => write!(f, "{m}]"),
            None => write!(f, "+inf]"),
        }
    }
}

/// Variables with known intervals. Bindings stack: an inner binding of a
/// name hides an outer one until it is popped.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    entries: Vec<(String, Interval)>,
}

impl Scope {
    /// An empty scope.
    pub fn new() -> Scope {
        Scope::default()
    }

    /// Bind `name` to `interval` (hiding any outer binding).
    pub fn push(&mut self, name: impl Into<String>, interval: Interval) {
        self.entries.push((name.into(), interval));
    }

    /// Builder form of [`Scope::push`].
    pub fn with(mut self, name: impl Into<String>, interval: Interval) -> Scope {
        self.push(name, interval);
        self
    }

    /// Remove the innermost binding of `name`.
    pub fn pop(&mut self, name: &str) {
        if let Some(pos) = self.entries.iter().rposition(|(n, _)| n == name) {
            self.entries.remove(pos);
        }
    }

    /// The innermost binding of `name`.
    pub fn get(&self, name: &str) -> Option<&Interval> {
        self.entries
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, i)| i)
    }

    /// Every binding, outermost first.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Interval)> {
        self.entries.iter().map(|(n, i)| (n.as_str(), i))
    }
}

/// Build `a op b` from simplified operands, simplifying the new node.
fn mk(op: BinOp, a: Expr, b: Expr) -> Expr {
    let mut simplifier = Simplifier::fresh();
    let r = simplifier.binary(op, a, b);
    simplifier.recycle();
    r
}

fn const_bounds_of(b: crate::simplify::Bounds, ty: Type) -> Interval {
    let t = ty.element();
    Interval::new(Expr::int(t, b.0), Expr::int(t, b.1))
}

/// Interval of `e` given the intervals of the variables in `scope`.
/// Variables not in `scope` are treated as single points (the result may
/// mention them).
pub fn bounds_of_expr_in_scope(e: &Expr, scope: &Scope) -> Interval {
    let mut b = BoundsBuilder::new(scope);
    b.bounds(e)
}

struct BoundsBuilder<'a> {
    /// The caller's scope, borrowed: the prover bounds many small
    /// expressions in one scope, and copying its names each time showed.
    outer: &'a Scope,
    /// Bindings made while bounding (`let`s, loops), innermost last.
    scope: Scope,
    /// The constant parts of `scope`, for the exact analysis of wrapping
    /// types and for simplifying symbolic bounds.
    simp: Simplifier,
}

impl Drop for BoundsBuilder<'_> {
    fn drop(&mut self) {
        std::mem::take(&mut self.simp).recycle();
    }
}

impl<'a> BoundsBuilder<'a> {
    fn new(outer: &'a Scope) -> BoundsBuilder<'a> {
        let mut simp = Simplifier::fresh();
        for (name, i) in outer.iter() {
            simp.push_bounds(name, const_parts(i));
        }
        BoundsBuilder {
            outer,
            scope: Scope::new(),
            simp,
        }
    }

    /// The innermost interval of `name`.
    fn interval_of(&self, name: &str) -> Option<&Interval> {
        self.scope.get(name).or_else(|| self.outer.get(name))
    }

    fn push(&mut self, name: &str, i: Interval) {
        self.simp.push_bounds(name, const_parts(&i));
        self.scope.push(name, i);
    }

    fn pop(&mut self, name: &str) {
        self.simp.pop_bounds(name);
        self.scope.pop(name);
    }

    fn s(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        self.simp.binary(op, a, b)
    }

    /// `a op b`, or `None` when both are `i32` constants whose exact
    /// result leaves the `i32` range (a bound that would wrap is no bound).
    fn checked(&mut self, op: BinOp, a: Expr, b: Expr) -> Option<Expr> {
        if a.ty() == Type::I32
            && let (Some(x), Some(y)) = (const_int(&a), const_int(&b))
        {
            let exact = match op {
                BinOp::Add => x as i128 + y as i128,
                BinOp::Sub => x as i128 - y as i128,
                BinOp::Mul => x as i128 * y as i128,
                _ => 0,
            };
            if exact < i32::MIN as i128 || exact > i32::MAX as i128 {
                return None;
            }
        }
        Some(self.s(op, a, b))
    }

    fn opt2(&mut self, op: BinOp, a: &Option<Expr>, b: &Option<Expr>) -> Option<Expr> {
        match (a, b) {
            (Some(a), Some(b)) => self.checked(op, a.clone(), b.clone()),
            _ => None,
        }
    }

    fn bounds(&mut self, e: &Expr) -> Interval {
        let ty = e.ty().element();
        if ty.is_bool() || (ty.is_integer() && ty != Type::I32) {
            return self.exact_bounds(e);
        }
        match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => Interval::single_point(e.clone()),
            ExprKind::Var(n) => match self.interval_of(n) {
                Some(i) => i.clone(),
                None => Interval::single_point(e.clone()),
            },
            ExprKind::Broadcast { value, .. } => self.bounds(value),
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => {
                let last = Expr::add(
                    base.clone(),
                    Expr::mul(stride.clone(), Expr::int(stride.ty(), *lanes as i64 - 1)),
                );
                let a = self.bounds(base);
                let b = self.bounds(&last);
                a.union(&b)
            }
            ExprKind::Shuffle { vectors, .. } => {
                let mut it = vectors.iter();
                let first = it
                    .next()
                    .map(|v| self.bounds(v))
                    .unwrap_or_else(Interval::everything);
                it.fold(first, |acc, v| {
                    let b = self.bounds(v);
                    acc.union(&b)
                })
            }
            ExprKind::Cast { value, saturating } => self.cast_bounds(e.ty(), value, *saturating),
            ExprKind::Unary {
                op: UnaryOp::Neg,
                value,
            } => {
                let i = self.bounds(value);
                let zero = Expr::constant(ty, 0.0);
                Interval {
                    min: i
                        .max
                        .and_then(|m| self.checked(BinOp::Sub, zero.clone(), m)),
                    max: i
                        .min
                        .and_then(|m| self.checked(BinOp::Sub, zero.clone(), m)),
                }
            }
            ExprKind::Unary {
                op: UnaryOp::BitNot,
                value,
            } => {
                let i = self.bounds(value);
                let m1 = Expr::int(ty, -1);
                Interval {
                    min: i.max.and_then(|m| self.checked(BinOp::Sub, m1.clone(), m)),
                    max: i.min.and_then(|m| self.checked(BinOp::Sub, m1.clone(), m)),
                }
            }
            ExprKind::Unary { .. } => Interval::type_range(ty),
            ExprKind::Binary { op, a, b } => self.binary_bounds(*op, a, b, ty),
            ExprKind::Select {
                then, otherwise, ..
            } => {
                let (a, b) = (self.bounds(then), self.bounds(otherwise));
                a.union(&b)
            }
            ExprKind::Let { name, value, body } => {
                let v = self.bounds(value);
                self.push(name, v);
                let r = self.bounds(body);
                self.pop(name);
                r
            }
            ExprKind::Call {
                target: CallTarget::Intrinsic(i),
                args,
            } => self.intrinsic_bounds(*i, args, e.ty()),
            _ => Interval::type_range(ty),
        }
    }

    /// Bounds of a wrapping-type (or bool) expression: constants from the
    /// exact constant analysis, except that variables bound symbolically
    /// keep their symbolic interval.
    fn exact_bounds(&mut self, e: &Expr) -> Interval {
        let ty = e.ty().element();
        if let ExprKind::Var(n) = e.kind()
            && let Some(i) = self.interval_of(n)
        {
            return i.clone();
        }
        if ty.is_bool()
            && let ExprKind::Binary { op, a, b } = e.kind()
            && op.is_comparison()
            && (a.ty().element() == Type::I32 || a.ty().is_float())
        {
            return self.compare_bounds(*op, a, b);
        }
        let (lo, hi) = self.simp.const_interval(e);
        const_bounds_of((lo, hi), ty)
    }

    /// Decide a comparison from the operands' bounds when possible.
    fn compare_bounds(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Interval {
        let (ia, ib) = (self.bounds(a), self.bounds(b));
        let prove = |this: &mut Self, x: &Option<Expr>, o: BinOp, y: &Option<Expr>| -> bool {
            match (x, y) {
                (Some(x), Some(y)) => const_int(&this.s(o, x.clone(), y.clone())) == Some(1),
                _ => false,
            }
        };
        let (always, never) = match op {
            BinOp::Lt => (
                prove(self, &ia.max, BinOp::Lt, &ib.min),
                prove(self, &ia.min, BinOp::Ge, &ib.max),
            ),
            BinOp::Le => (
                prove(self, &ia.max, BinOp::Le, &ib.min),
                prove(self, &ia.min, BinOp::Gt, &ib.max),
            ),
            BinOp::Gt => (
                prove(self, &ia.min, BinOp::Gt, &ib.max),
                prove(self, &ia.max, BinOp::Le, &ib.min),
            ),
            BinOp::Ge => (
                prove(self, &ia.min, BinOp::Ge, &ib.max),
                prove(self, &ia.max, BinOp::Lt, &ib.min),
            ),
            BinOp::Ne => (
                prove(self, &ia.max, BinOp::Lt, &ib.min)
                    || prove(self, &ia.min, BinOp::Gt, &ib.max),
                false,
            ),
            _ => (
                false,
                prove(self, &ia.max, BinOp::Lt, &ib.min)
                    || prove(self, &ia.min, BinOp::Gt, &ib.max),
            ),
        };
        if always {
            Interval::single_point(Expr::bool(true))
        } else if never {
            Interval::single_point(Expr::bool(false))
        } else {
            Interval::new(Expr::bool(false), Expr::bool(true))
        }
    }

    fn cast_bounds(&mut self, to: Type, value: &Expr, saturating: bool) -> Interval {
        let from = value.ty().element();
        let to = to.element();
        let i = self.bounds(value);
        let cast_bound = |this: &mut Self, b: Expr| this.simp.expr(&Expr::cast(to, b));
        if to.is_float() {
            // Conversions to float round monotonically.
            return Interval {
                min: i.min.map(|b| cast_bound(self, b)),
                max: i.max.map(|b| cast_bound(self, b)),
            };
        }
        // `to` is i32 here (the wrapping types take the exact path).
        if (from.is_integer() || from.is_bool()) && Type::can_represent(to, from) {
            let full = Interval::type_range(from);
            let min = i.min.or(full.min).map(|b| cast_bound(self, b));
            let max = i.max.or(full.max).map(|b| cast_bound(self, b));
            return Interval { min, max };
        }
        if saturating {
            let sat = |this: &mut Self, b: Expr| this.simp.expr(&Expr::saturating_cast(to, b));
            return Interval {
                min: i.min.map(|b| sat(self, b)),
                max: i.max.map(|b| sat(self, b)),
            };
        }
        // Narrowing or float-to-int conversions are monotone only while no
        // value wraps; check that on constant bounds.
        if let (Some(lo), Some(hi)) = (
            i.min.as_ref().and_then(const_scalar),
            i.max.as_ref().and_then(const_scalar),
        ) {
            let in_range = |v: Scalar| {
                let f = match v {
                    Scalar::Int(x) => x as f64,
                    Scalar::Float(x) => x as f64,
                };
                f >= to.min_value() && f <= to.max_value()
            };
            if in_range(lo) && in_range(hi) {
                let c = |v| Expr::int(to, eval::cast(to, from, v, false).as_i64());
                return Interval::new(c(lo), c(hi));
            }
        }
        Interval::type_range(to)
    }

    fn binary_bounds(&mut self, op: BinOp, a: &Expr, b: &Expr, ty: Type) -> Interval {
        let is_float = ty.is_float();
        match op {
            BinOp::Add | BinOp::Sub => {
                let (x, y) = (self.bounds(a), self.bounds(b));
                if op == BinOp::Add {
                    Interval {
                        min: self.opt2(op, &x.min, &y.min),
                        max: self.opt2(op, &x.max, &y.max),
                    }
                } else {
                    Interval {
                        min: self.opt2(op, &x.min, &y.max),
                        max: self.opt2(op, &x.max, &y.min),
                    }
                }
            }
            BinOp::Mul => {
                let (x, y) = (self.bounds(a), self.bounds(b));
                self.mul_bounds(x, y, ty)
            }
            BinOp::Div => {
                let (x, y) = (self.bounds(a), self.bounds(b));
                self.div_bounds(x, y, ty)
            }
            BinOp::Mod => {
                let (x, y) = (self.bounds(a), self.bounds(b));
                if is_float {
                    return match y.min.as_ref().and_then(const_scalar) {
                        Some(c) if y.is_single_point() && c.as_f32() > 0.0 => {
                            Interval::new(Expr::float(ty, 0.0), y.max.clone().unwrap())
                        }
                        _ => Interval::everything(),
                    };
                }
                let zero = Expr::int(ty, 0);
                let one = Expr::int(ty, 1);
                if let (Some(c), true) = (y.min.as_ref().and_then(const_int), y.is_single_point()) {
                    if c == 0 {
                        return Interval::single_point(zero);
                    }
                    let c = c.abs();
                    if let (Some(lo), Some(hi)) = (
                        x.min.as_ref().and_then(const_int),
                        x.max.as_ref().and_then(const_int),
                    ) && lo.div_euclid(c) == hi.div_euclid(c)
                    {
                        return Interval::new(
                            Expr::i32(lo.rem_euclid(c)),
                            Expr::i32(hi.rem_euclid(c)),
                        );
                    }
                    // A non-negative dividend below the modulus is unchanged.
                    if x.min.as_ref().and_then(const_int).is_some_and(|lo| lo >= 0)
                        && let Some(m) = &x.max
                    {
                        let bound = self.s(BinOp::Min, m.clone(), Expr::i32(c - 1));
                        return Interval::new(zero, bound);
                    }
                    return Interval::new(zero, Expr::i32(c - 1));
                }
                let y_positive = y.min.as_ref().and_then(const_int).is_some_and(|v| v > 0);
                match (&y.max, y_positive) {
                    (Some(m), true) => {
                        let bound = self.s(BinOp::Sub, m.clone(), one);
                        Interval::new(zero, bound)
                    }
                    _ => Interval {
                        min: Some(zero),
                        max: None,
                    },
                }
            }
            BinOp::Min | BinOp::Max => {
                let (x, y) = (self.bounds(a), self.bounds(b));
                if op == BinOp::Min {
                    Interval {
                        min: self.opt2(op, &x.min, &y.min),
                        max: match (&x.max, &y.max) {
                            (Some(p), Some(q)) => Some(self.s(op, p.clone(), q.clone())),
                            (p, q) => p.clone().or(q.clone()),
                        },
                    }
                } else {
                    Interval {
                        min: match (&x.min, &y.min) {
                            (Some(p), Some(q)) => Some(self.s(op, p.clone(), q.clone())),
                            (p, q) => p.clone().or(q.clone()),
                        },
                        max: self.opt2(op, &x.max, &y.max),
                    }
                }
            }
            BinOp::BitAnd if !is_float => {
                let (x, y) = (self.bounds(a), self.bounds(b));
                let nonneg =
                    |i: &Interval| i.min.as_ref().and_then(const_int).is_some_and(|v| v >= 0);
                let zero = Expr::int(ty, 0);
                match (nonneg(&x), nonneg(&y)) {
                    (true, true) => Interval {
                        min: Some(zero),
                        max: match (&x.max, &y.max) {
                            (Some(p), Some(q)) => Some(self.s(BinOp::Min, p.clone(), q.clone())),
                            (p, q) => p.clone().or(q.clone()),
                        },
                    },
                    (true, false) => Interval {
                        min: Some(zero),
                        max: x.max,
                    },
                    (false, true) => Interval {
                        min: Some(zero),
                        max: y.max,
                    },
                    _ => Interval::type_range(ty),
                }
            }
            BinOp::Shr | BinOp::Shl if !is_float => {
                let x = self.bounds(a);
                match const_int(b) {
                    Some(k) if (0..31).contains(&k) => {
                        // A left shift is a product, and a bound that would
                        // wrap is no bound (`255 << 24` is negative in i32).
                        let f = |this: &mut Self, v: Expr| match op {
                            BinOp::Shl => this.checked(BinOp::Mul, v, Expr::int(ty, 1 << k)),
                            _ => Some(this.s(op, v, Expr::int(ty, k))),
                        };
                        Interval {
                            min: x.min.and_then(|v| f(self, v)),
                            max: x.max.and_then(|v| f(self, v)),
                        }
                    }
                    _ => Interval::type_range(ty),
                }
            }
            _ => Interval::type_range(ty),
        }
    }

    fn mul_bounds(&mut self, x: Interval, y: Interval, ty: Type) -> Interval {
        // Put a constant factor, if any, in y.
        let (x, y) = if x.is_single_point() && x.min.as_ref().is_some_and(crate::is_const) {
            (y, x)
        } else {
            (x, y)
        };
        if y.is_single_point()
            && let Some(c) = y.min.as_ref().and_then(const_scalar)
        {
            let c_expr = y.min.clone().unwrap();
            let negative = match c {
                Scalar::Int(v) => v < 0,
                Scalar::Float(f) => f < 0.0,
            };
            let zero = match c {
                Scalar::Int(v) => v == 0,
                Scalar::Float(_) => false,
            };
            if zero {
                return Interval::single_point(c_expr);
            }
            let f = |this: &mut Self, v: Option<Expr>| {
                v.and_then(|v| this.checked(BinOp::Mul, v, c_expr.clone()))
            };
            let (lo, hi) = (f(self, x.min), f(self, x.max));
            return if negative {
                Interval { min: hi, max: lo }
            } else {
                Interval { min: lo, max: hi }
            };
        }
        if let (Some(x0), Some(x1), Some(y0), Some(y1)) = (&x.min, &x.max, &y.min, &y.max) {
            let corners = [(x0, y0), (x0, y1), (x1, y0), (x1, y1)];
            let products: Option<Vec<Expr>> = corners
                .iter()
                .map(|(p, q)| self.checked(BinOp::Mul, (*p).clone(), (*q).clone()))
                .collect();
            let Some(products) = products else {
                return Interval::everything();
            };
            let lo = products[1..].iter().fold(products[0].clone(), |acc, p| {
                self.s(BinOp::Min, acc, p.clone())
            });
            let hi = products[1..].iter().fold(products[0].clone(), |acc, p| {
                self.s(BinOp::Max, acc, p.clone())
            });
            return Interval::new(lo, hi);
        }
        let nonneg = |i: &Interval| i.min.as_ref().and_then(const_int).is_some_and(|v| v >= 0);
        if !ty.is_float() && nonneg(&x) && nonneg(&y) {
            let min = self.opt2(BinOp::Mul, &x.min, &y.min);
            return Interval { min, max: None };
        }
        Interval::everything()
    }

    fn div_bounds(&mut self, x: Interval, y: Interval, ty: Type) -> Interval {
        if y.is_single_point()
            && let Some(c) = y.min.as_ref().and_then(const_scalar)
        {
            let c_expr = y.min.clone().unwrap();
            let (zero, negative) = match c {
                Scalar::Int(v) => (v == 0, v < 0),
                Scalar::Float(f) => (f == 0.0, f < 0.0),
            };
            if zero {
                return if ty.is_float() {
                    Interval::everything()
                } else {
                    Interval::single_point(c_expr)
                };
            }
            let f =
                |this: &mut Self, v: Option<Expr>| v.map(|v| this.s(BinOp::Div, v, c_expr.clone()));
            let (lo, hi) = (f(self, x.min), f(self, x.max));
            return if negative {
                Interval { min: hi, max: lo }
            } else {
                Interval { min: lo, max: hi }
            };
        }
        if ty.is_float() {
            return Interval::everything();
        }
        let (ylo, yhi) = (
            y.min.as_ref().and_then(const_int),
            y.max.as_ref().and_then(const_int),
        );
        let excludes_zero = matches!((ylo, yhi), (Some(a), Some(_)) if a > 0)
            || matches!((ylo, yhi), (Some(_), Some(b)) if b < 0);
        if excludes_zero
            && let (Some(x0), Some(x1), Some(y0), Some(y1)) = (&x.min, &x.max, &y.min, &y.max)
        {
            let corners = [(x0, y0), (x0, y1), (x1, y0), (x1, y1)];
            let q: Vec<Expr> = corners
                .iter()
                .map(|(p, d)| self.s(BinOp::Div, (*p).clone(), (*d).clone()))
                .collect();
            let lo = q[1..]
                .iter()
                .fold(q[0].clone(), |acc, p| self.s(BinOp::Min, acc, p.clone()));
            let hi = q[1..]
                .iter()
                .fold(q[0].clone(), |acc, p| self.s(BinOp::Max, acc, p.clone()));
            return Interval::new(lo, hi);
        }
        // |x / y| <= |x| for Euclidean division (and x / 0 == 0).
        if let (Some(x0), Some(x1)) = (&x.min, &x.max) {
            let zero = Expr::int(ty, 0);
            let Some(neg_x0) = self.checked(BinOp::Sub, zero.clone(), x0.clone()) else {
                return Interval::everything();
            };
            let m = self.s(BinOp::Max, x1.clone(), neg_x0);
            let m = self.s(BinOp::Max, m, zero.clone());
            let neg_m = self.s(BinOp::Sub, zero, m.clone());
            return Interval::new(neg_m, m);
        }
        Interval::everything()
    }

    fn intrinsic_bounds(&mut self, which: Intrinsic, args: &[Expr], ty: Type) -> Interval {
        let ty = ty.element();
        match which {
            Intrinsic::Likely if args.len() == 1 => self.bounds(&args[0]),
            Intrinsic::Floor | Intrinsic::Ceil | Intrinsic::Round | Intrinsic::Trunc
                if args.len() == 1 =>
            {
                let i = self.bounds(&args[0]);
                let f =
                    |this: &mut Self, v: Expr| this.simp.expr(&Expr::intrinsic(ty, which, vec![v]));
                Interval {
                    min: i.min.map(|v| f(self, v)),
                    max: i.max.map(|v| f(self, v)),
                }
            }
            Intrinsic::Abs if ty.is_float() && args.len() == 1 => {
                let i = self.bounds(&args[0]);
                let zero = Expr::float(ty, 0.0);
                match (&i.min, &i.max) {
                    (Some(lo), Some(hi)) => {
                        let neg = self.simp.expr(&Expr::unary(UnaryOp::Neg, lo.clone()));
                        let m = self.simp.expr(&Expr::max(hi.clone(), neg));
                        Interval::new(zero, m)
                    }
                    _ => Interval {
                        min: Some(zero),
                        max: None,
                    },
                }
            }
            _ => Interval::type_range(ty),
        }
    }
}

/// The constant parts of an interval, as bounds for the simplifier.
fn const_parts(i: &Interval) -> crate::simplify::Bounds {
    (
        i.min.as_ref().and_then(const_int).unwrap_or(i64::MIN),
        i.max.as_ref().and_then(const_int).unwrap_or(i64::MAX),
    )
}

/// What [`boxes_required`] looks for.
#[derive(Clone, Copy, PartialEq)]
enum Access {
    Calls,
    Provides,
}

struct BoxFinder<'a> {
    func: &'a str,
    access: Access,
    builder: BoundsBuilder<'a>,
    result: Option<Vec<Interval>>,
}

impl BoxFinder<'_> {
    fn add_site(&mut self, args: &[Expr]) {
        let intervals: Vec<Interval> = args.iter().map(|a| self.builder.bounds(a)).collect();
        self.result = Some(match self.result.take() {
            None => intervals,
            Some(prev) => prev
                .iter()
                .zip(intervals.iter())
                .map(|(p, q)| p.union(q))
                .chain(prev.iter().skip(intervals.len()).cloned())
                .collect(),
        });
    }

    fn expr(&mut self, e: &Expr) {
        match e.kind() {
            ExprKind::Call { target, args } => {
                args.iter().for_each(|a| self.expr(a));
                let hit = match target {
                    CallTarget::Func(n) | CallTarget::Input(n) => n == self.func,
                    CallTarget::Intrinsic(_) => false,
                };
                if hit && self.access == Access::Calls {
                    self.add_site(args);
                }
            }
            ExprKind::Let { name, value, body } => {
                self.expr(value);
                let v = self.builder.bounds(value);
                self.builder.push(name, v);
                self.expr(body);
                self.builder.pop(name);
            }
            _ => {
                struct Children<'b, 'c>(&'b mut BoxFinder<'c>);
                impl argent_ir::visit::Visitor for Children<'_, '_> {
                    fn visit_expr(&mut self, e: &Expr) {
                        self.0.expr(e);
                    }
                }
                argent_ir::visit::walk_expr(&mut Children(self), e);
            }
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::LetStmt { name, value, body } => {
                self.expr(value);
                let v = self.builder.bounds(value);
                self.builder.push(name, v);
                self.stmt(body);
                self.builder.pop(name);
            }
            Stmt::For {
                var,
                min,
                extent,
                body,
                ..
            } => {
                self.expr(min);
                self.expr(extent);
                let (m, ext) = (self.builder.bounds(min), self.builder.bounds(extent));
                let max = match (&m.max, &ext.max) {
                    (Some(a), Some(b)) => {
                        let last = self.builder.checked(BinOp::Add, a.clone(), b.clone());
                        last.and_then(|l| {
                            self.builder.checked(BinOp::Sub, l, Expr::int(min.ty(), 1))
                        })
                    }
                    _ => None,
                };
                self.builder.push(var, Interval { min: m.min, max });
                self.stmt(body);
                self.builder.pop(var);
            }
            Stmt::Provide { func, args, value } => {
                args.iter().for_each(|a| self.expr(a));
                self.expr(value);
                if func == self.func && self.access == Access::Provides {
                    self.add_site(args);
                }
            }
            _ => {
                struct Children<'b, 'c>(&'b mut BoxFinder<'c>);
                impl argent_ir::visit::Visitor for Children<'_, '_> {
                    fn visit_expr(&mut self, e: &Expr) {
                        self.0.expr(e);
                    }
                    fn visit_stmt(&mut self, s: &Stmt) {
                        self.0.stmt(s);
                    }
                }
                argent_ir::visit::walk_stmt(&mut Children(self), s);
            }
        }
    }
}

/// The region of `func` (a func or an input, by name) that `s` calls, one
/// interval per dimension, in terms of the variables free in `s` (those in
/// `scope` replaced by their intervals). Loop variables of `For` loops
/// inside `s` range over `[min, min + extent - 1]`; `LetStmt`/`Let` names
/// over their values' bounds. Empty when `s` never calls `func`.
pub fn boxes_required<'a>(s: &Stmt, func: &'a str, scope: &'a Scope) -> Vec<Interval> {
    let mut f = BoxFinder {
        func,
        access: Access::Calls,
        builder: BoundsBuilder::new(scope),
        result: None,
    };
    f.stmt(s);
    f.result.unwrap_or_default()
}

/// [`boxes_required`] for an expression.
pub fn boxes_required_expr<'a>(e: &Expr, func: &'a str, scope: &'a Scope) -> Vec<Interval> {
    let mut f = BoxFinder {
        func,
        access: Access::Calls,
        builder: BoundsBuilder::new(scope),
        result: None,
    };
    f.expr(e);
    f.result.unwrap_or_default()
}

/// The region of `func` that `s` writes with `Provide`, per dimension
/// (the counterpart of [`boxes_required`] for update definitions).
pub fn boxes_provided<'a>(s: &Stmt, func: &'a str, scope: &'a Scope) -> Vec<Interval> {
    let mut f = BoxFinder {
        func,
        access: Access::Provides,
        builder: BoundsBuilder::new(scope),
        result: None,
    };
    f.stmt(s);
    f.result.unwrap_or_default()
}
