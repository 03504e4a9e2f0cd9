//! Ranges of `f32` values, so that a conversion to an integer whose
//! operand provably fits compiles to the plain truncation.
//!
//! A float-to-integer cast saturates (NaN gives 0), and
//! `i32.trunc_sat_f32_s` does exactly that, but V8 compiles it to the
//! truncation, a check that it was exact and a flag tested at every use
//! of the result; `i32.trunc_f32_s` is the truncation and one branch to a
//! trap. The bilateral grid's histogram computes a cell index
//! `i32(clamp(gray, 0, 1) * (1 / r_sigma) + 0.5)` for every pixel: with
//! the plain truncation the whole pipeline ran 11% faster. The plain
//! truncation traps where the saturating one saturates (NaN, and values
//! outside the target's range), so it is only chosen when the operand is
//! shown to be neither.
//!
//! The analysis is an interval over the extended reals plus a flag for
//! NaN. Bounds are widened outward at every rounded operation. `min` and
//! `max` follow the IR's definition (`min(a, b) = a < b ? a : b`), so
//! `clamp(x, 0, 1)` is within `[0, 1]` and never NaN, whatever `x` is.
//! Parameters take their declared ranges, which the generated code checks
//! before anything else runs (the `checks` pass of argent-lower).
//!
//! ```text
//! i32(max(min(gray, 1.0), 0.0) * (1.0 / r_sigma) + 0.5)    r_sigma in 0.02 .. 1.0
//!   operand in [0.5, 50.5], never NaN  ==>  i32.trunc_f32_s
//! ```

use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Type, UnaryOp};

/// The values an `f32` expression may take: every non-NaN value lies in
/// `[lo, hi]` (bounds may be infinite), and `nan` says whether NaN may
/// occur.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct FloatRange {
    pub lo: f64,
    pub hi: f64,
    pub nan: bool,
}

impl FloatRange {
    /// Any value at all.
    pub const ANY: FloatRange = FloatRange {
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
        nan: true,
    };

    /// Exactly `v`.
    fn point(v: f64) -> FloatRange {
        if v.is_nan() {
            FloatRange::ANY
        } else {
            FloatRange {
                lo: v,
                hi: v,
                nan: false,
            }
        }
    }

    /// The range of a rounded f32 result whose exact value lies in
    /// `[lo, hi]`: widened by more than the rounding can move it, and
    /// infinite past the largest f32 (where it overflows).
    fn rounded(lo: f64, hi: f64, nan: bool) -> FloatRange {
        let slack = |v: f64| v.abs() * SLACK + f64::from(f32::MIN_POSITIVE);
        let widen_down = |v: f64| {
            let w = v - slack(v);
            if w < -f64::from(f32::MAX) {
                f64::NEG_INFINITY
            } else {
                w
            }
        };
        let widen_up = |v: f64| {
            let w = v + slack(v);
            if w > f64::from(f32::MAX) {
                f64::INFINITY
            } else {
                w
            }
        };
        if lo.is_nan() || hi.is_nan() {
            return FloatRange::ANY;
        }
        FloatRange {
            lo: widen_down(lo),
            hi: widen_up(hi),
            nan,
        }
    }

    fn contains_zero(&self) -> bool {
        self.lo <= 0.0 && self.hi >= 0.0
    }

    fn is_unbounded(&self) -> bool {
        self.lo.is_infinite() || self.hi.is_infinite()
    }

    /// Whether `i32.trunc_f32_s` cannot trap on any value of the range.
    pub fn fits_trunc_i32(&self) -> bool {
        !self.nan && self.lo > -2_147_483_649.0 && self.hi < 2_147_483_648.0
    }

    /// Whether `i32.trunc_f32_u` cannot trap on any value of the range.
    pub fn fits_trunc_u32(&self) -> bool {
        !self.nan && self.lo > -1.0 && self.hi < 4_294_967_296.0
    }
}

/// Relative widening per rounded operation: far more than the f32
/// rounding error (2^-24) plus the f64 rounding of the bounds themselves.
const SLACK: f64 = 1.0 / (1u64 << 20) as f64;

/// The product of two bounds, with `0 * inf` taken as 0 (whether a NaN
/// can come from it is decided separately).
fn bound_mul(a: f64, b: f64) -> f64 {
    if a == 0.0 || b == 0.0 { 0.0 } else { a * b }
}

/// The range of scalar `f32` expression `e`; `var` gives the range of a
/// variable (a parameter or a let-bound float) and `None` for unknown
/// ones. Integer subexpressions converted to float contribute the range
/// of their type (or less, see [`int_range`]).
pub(crate) fn float_range(e: &Expr, var: &dyn Fn(&str) -> Option<FloatRange>) -> FloatRange {
    let mut lets: Vec<(String, FloatRange)> = Vec::new();
    range_in(e, var, &mut lets)
}

fn range_in(
    e: &Expr,
    var: &dyn Fn(&str) -> Option<FloatRange>,
    lets: &mut Vec<(String, FloatRange)>,
) -> FloatRange {
    let ty = e.ty();
    if !ty.is_float() || ty.bits != 32 {
        return FloatRange::ANY;
    }
    match e.kind() {
        ExprKind::FloatImm(v) => FloatRange::point(f64::from(*v as f32)),
        ExprKind::IntImm(v) => FloatRange::point(f64::from(*v as f32)),
        ExprKind::Var(name) => lets
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, r)| *r)
            .or_else(|| var(name))
            .unwrap_or(FloatRange::ANY),
        ExprKind::Let { name, value, body } => {
            let value = range_in(value, var, lets);
            lets.push((name.clone(), value));
            let r = range_in(body, var, lets);
            lets.pop();
            r
        }
        ExprKind::Cast { value, .. } => {
            let from = value.ty();
            if from.is_float() {
                range_in(value, var, lets)
            } else {
                // Integers convert monotonically, to finite values.
                let (lo, hi) = int_range(value);
                FloatRange::rounded(lo, hi, false)
            }
        }
        ExprKind::Unary {
            op: UnaryOp::Neg,
            value,
        } => {
            let r = range_in(value, var, lets);
            FloatRange {
                lo: -r.hi,
                hi: -r.lo,
                nan: r.nan,
            }
        }
        ExprKind::Binary { op, a, b } => {
            let a = range_in(a, var, lets);
            let b = range_in(b, var, lets);
            binary(*op, a, b)
        }
        ExprKind::Select {
            then, otherwise, ..
        } => {
            let t = range_in(then, var, lets);
            let o = range_in(otherwise, var, lets);
            FloatRange {
                lo: t.lo.min(o.lo),
                hi: t.hi.max(o.hi),
                nan: t.nan || o.nan,
            }
        }
        ExprKind::Call {
            target: CallTarget::Intrinsic(intrinsic),
            args,
        } => match (intrinsic, args.as_slice()) {
            (Intrinsic::Likely, [x]) => range_in(x, var, lets),
            (Intrinsic::Abs, [x]) => {
                let r = range_in(x, var, lets);
                let hi = r.lo.abs().max(r.hi.abs());
                let lo = if r.contains_zero() {
                    0.0
                } else {
                    r.lo.abs().min(r.hi.abs())
                };
                FloatRange { lo, hi, nan: r.nan }
            }
            // Rounding to an integer moves a value by less than 1.
            (Intrinsic::Floor | Intrinsic::Ceil | Intrinsic::Round | Intrinsic::Trunc, [x]) => {
                let r = range_in(x, var, lets);
                FloatRange {
                    lo: r.lo - 1.0,
                    hi: r.hi + 1.0,
                    nan: r.nan,
                }
            }
            _ => FloatRange::ANY,
        },
        // Loads of float buffers hold anything; the rest is not scalar.
        _ => FloatRange::ANY,
    }
}

fn binary(op: BinOp, a: FloatRange, b: FloatRange) -> FloatRange {
    match op {
        BinOp::Add => {
            let nan = a.nan
                || b.nan
                || (a.hi == f64::INFINITY && b.lo == f64::NEG_INFINITY)
                || (a.lo == f64::NEG_INFINITY && b.hi == f64::INFINITY);
            FloatRange::rounded(a.lo + b.lo, a.hi + b.hi, nan)
        }
        BinOp::Sub => binary(
            BinOp::Add,
            a,
            FloatRange {
                lo: -b.hi,
                hi: -b.lo,
                nan: b.nan,
            },
        ),
        BinOp::Mul => {
            let nan = a.nan
                || b.nan
                || (a.contains_zero() && b.is_unbounded())
                || (b.contains_zero() && a.is_unbounded());
            let products = [
                bound_mul(a.lo, b.lo),
                bound_mul(a.lo, b.hi),
                bound_mul(a.hi, b.lo),
                bound_mul(a.hi, b.hi),
            ];
            let lo = products.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = products.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            FloatRange::rounded(lo, hi, nan)
        }
        BinOp::Div => {
            // A divisor that may be zero (of either sign) gives infinities.
            if b.contains_zero() || a.nan || b.nan {
                return FloatRange::ANY;
            }
            let nan = a.is_unbounded() && b.is_unbounded();
            let quotients = [a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi];
            if quotients.iter().any(|q| q.is_nan()) {
                return FloatRange::ANY;
            }
            let lo = quotients.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = quotients.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            FloatRange::rounded(lo, hi, nan)
        }
        // `a < b ? a : b`: `a` when it is below `b` (so not NaN), else `b`
        // (also when `a` is NaN).
        BinOp::Min => FloatRange {
            lo: a.lo.min(b.lo),
            hi: if a.nan { b.hi } else { a.hi.min(b.hi) },
            nan: b.nan,
        },
        // `a > b ? a : b`, likewise.
        BinOp::Max => FloatRange {
            lo: if a.nan { b.lo } else { a.lo.max(b.lo) },
            hi: a.hi.max(b.hi),
            nan: b.nan,
        },
        _ => FloatRange::ANY,
    }
}

/// Bounds of an integer expression converted to float: its type's range,
/// narrowed for constants and for `%` by a constant (the IR's `%` is
/// Euclidean, so `x % 8` is in `[0, 7]`).
fn int_range(e: &Expr) -> (f64, f64) {
    let ty: Type = e.ty();
    let whole = (ty.min_value(), ty.max_value());
    match e.kind() {
        ExprKind::IntImm(v) => (*v as f64, *v as f64),
        ExprKind::Binary {
            op: BinOp::Mod, b, ..
        } => match b.kind() {
            ExprKind::IntImm(d) if *d != 0 && (d.unsigned_abs() as f64) <= whole.1 + 1.0 => {
                (0.0, (d.unsigned_abs() - 1) as f64)
            }
            _ => whole,
        },
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } if args.len() == 1 => int_range(&args[0]),
        _ => whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argent_ir::Expr;

    fn param(name: &str) -> Option<FloatRange> {
        (name == "r_sigma").then_some(FloatRange {
            lo: 0.02,
            hi: 1.0,
            nan: false,
        })
    }

    fn f(v: f64) -> Expr {
        Expr::float(Type::F32, v)
    }

    fn gray() -> Expr {
        Expr::cast(Type::F32, Expr::load(Type::U8, "photo", Expr::var_i32("i"))) / f(255.0)
    }

    #[test]
    fn a_clamped_value_scaled_by_a_ranged_parameter_fits_i32() {
        let clamped = Expr::max(Expr::min(gray(), f(1.0)), f(0.0));
        let zv = clamped * (f(1.0) / Expr::var(Type::F32, "r_sigma")) + f(0.5);
        let r = float_range(&zv, &param);
        assert!(r.fits_trunc_i32(), "{r:?}");
        assert!(
            r.lo > 0.49 && r.lo <= 0.5 && r.hi >= 50.5 && r.hi < 50.6,
            "{r:?}"
        );
    }

    #[test]
    fn a_clamp_bounds_any_operand_even_nan() {
        let unknown = Expr::load(Type::F32, "f", Expr::var_i32("i"));
        let clamped = Expr::max(Expr::min(unknown.clone(), f(1.0)), f(0.0));
        assert_eq!(
            float_range(&clamped, &param),
            FloatRange {
                lo: 0.0,
                hi: 1.0,
                nan: false
            }
        );
        // With the operands the other way round, a NaN operand comes out.
        let flipped = Expr::max(f(0.0), Expr::min(f(1.0), unknown));
        assert!(float_range(&flipped, &param).nan);
    }

    #[test]
    fn unknown_or_unbounded_operands_do_not_fit() {
        // An unranged parameter may be 0: 1 / 0 is infinite, 0 * inf NaN.
        let r = float_range(&(gray() / Expr::var(Type::F32, "s")), &param);
        assert!(!r.fits_trunc_i32());
        let load = Expr::load(Type::F32, "f", Expr::var_i32("i"));
        assert!(!float_range(&load, &param).fits_trunc_i32());
        // Too large for i32 (but finite and not NaN).
        let big = Expr::cast(Type::F32, Expr::var(Type::U32, "u")) * f(2.0);
        let r = float_range(&big, &param);
        assert!(!r.nan && !r.fits_trunc_i32(), "{r:?}");
        assert!(!r.fits_trunc_u32(), "{r:?}");
        // Half of it fits u32 but not i32.
        let half = Expr::cast(Type::F32, Expr::var(Type::U32, "u")) * f(0.5);
        let r = float_range(&half, &param);
        assert!(r.fits_trunc_u32() && !r.fits_trunc_i32(), "{r:?}");
    }

    #[test]
    fn lets_and_euclidean_remainders_are_followed() {
        // let xf = f32(x % 8) / 8.0 in i32(xf * 100.0)
        let xf = Expr::cast(Type::F32, Expr::var_i32("x") % Expr::i32(8)) / f(8.0);
        let e = Expr::let_in("xf", xf, Expr::var(Type::F32, "xf") * f(100.0));
        let r = float_range(&e, &param);
        assert!(
            r.fits_trunc_i32() && r.lo < 0.0 + 1e-3 && r.hi > 87.4 && r.hi < 87.6,
            "{r:?}"
        );
    }
}
