//! Expansions of the transcendental intrinsics (`exp log pow sin cos tan
//! atan2`) and of `lerp` into plain expression trees.
//!
//! Backends cannot call a platform math library and still agree bit for
//! bit (WebAssembly has no `exp`, WGSL's is implementation-defined), so
//! Argent *defines* these functions as the expressions built here. They
//! use only f32 `+ - * /` (each rounded separately, never fused),
//! `floor`, `abs`, comparisons, `select`, casts, integer bit operations and
//! `Intrinsic::Reinterpret`, all of which every target computes exactly.
//! The reference interpreter evaluates a call to `exp` by evaluating
//! [`expand_exp`] of its argument, so a backend that emits the same
//! expansion matches it exactly.
//!
//! The polynomials are Cephes' single-precision minimax ones with
//! Cody-Waite range reduction. Measured against f64 by
//! `argent-interp/tests/math.rs` (100k samples each): `exp` 0.96 ulp on
//! [-87, 88]; `log` 0.78 ulp over all normal and subnormal floats; `sin`
//! and `cos` 7.5e-8 absolute on [-100, 100]; `tan` 2.8 ulp on [-1.5, 1.5];
//! `atan2` 2.7e-7 absolute; `pow` (computed as `exp(y log x)`, like
//! Halide's `fast_pow`) about `|y log x|` ulp: 39 ulp where `|y log x| <
//! 80`.
//!
//! Names bound by the expansions start with `%`, which the language cannot
//! spell, so they never capture a user variable.

use crate::expr::{BinOp, CallTarget, Expr, ExprKind, Intrinsic};
use crate::types::{Type, TypeKind};
use crate::visit::{Mutator, mutate_expr_children};

fn c(v: f64) -> Expr {
    Expr::f32(v)
}

fn ci(v: i64) -> Expr {
    Expr::i32(v)
}

fn floor(x: Expr) -> Expr {
    Expr::intrinsic(Type::F32, Intrinsic::Floor, vec![x])
}

fn fabs(x: Expr) -> Expr {
    Expr::intrinsic(Type::F32, Intrinsic::Abs, vec![x])
}

fn bits_of(x: Expr) -> Expr {
    Expr::intrinsic(Type::I32, Intrinsic::Reinterpret, vec![x])
}

fn float_from_bits(i: Expr) -> Expr {
    Expr::intrinsic(Type::F32, Intrinsic::Reinterpret, vec![i])
}

fn ne(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Ne, a, b)
}

fn gt(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Gt, a, b)
}

fn is_nan(x: &Expr) -> Expr {
    ne(x.clone(), x.clone())
}

/// Bind `value` to a fresh internal name and build the body from a
/// reference to it, so the value is computed once however often the body
/// uses it.
fn bind(name: &str, value: Expr, body: impl FnOnce(Expr) -> Expr) -> Expr {
    let var = Expr::var(value.ty(), name);
    let body = body(var);
    Expr::let_in(name, value, body)
}

/// Horner evaluation `((c0 * x + c1) * x + c2) ...` with separately rounded
/// multiplies and adds.
fn horner(x: &Expr, coefficients: &[f64]) -> Expr {
    let mut acc = c(coefficients[0]);
    for &k in &coefficients[1..] {
        acc = acc * x.clone() + c(k);
    }
    acc
}

/// Make sure a float intrinsic's argument is f32 (the front end casts, but
/// the expansion must not produce ill-typed trees if it did not).
fn as_f32(x: Expr) -> Expr {
    Expr::cast(Type::F32, x)
}

/// `2^k` for an i32 `k` in the normal exponent range [-126, 127].
fn pow2(k: Expr) -> Expr {
    float_from_bits(Expr::binary(BinOp::Shl, k + 127, ci(23)))
}

/// `exp(x)` for f32 `x`: `exp(r) * 2^k` with `k = floor(x / ln 2 + 1/2)`,
/// `r = x - k ln 2` in two parts, and Cephes' degree-6 polynomial. The
/// scale is applied in two exact halves so results down into the
/// subnormal range are right; NaN passes through, `+inf` gives `+inf` and
/// `-inf` gives 0.
pub fn expand_exp(x: Expr) -> Expr {
    bind("%exp.x", as_f32(x), |x| {
        let xc = Expr::max(Expr::min(x.clone(), c(89.0)), c(-104.0));
        bind(
            "%exp.k",
            floor(xc.clone() * c(std::f64::consts::LOG2_E) + c(0.5)),
            |k| {
                let r0 = xc - k.clone() * c(0.693359375);
                bind("%exp.r", r0 - k.clone() * c(-2.12194440e-4), |r| {
                    let z = r.clone() * r.clone();
                    let poly = horner(
                        &r,
                        &[
                            1.9875691500E-4,
                            1.3981999507E-3,
                            8.3334519073E-3,
                            4.1665795894E-2,
                            1.6666665459E-1,
                            5.0000001201E-1,
                        ],
                    );
                    let p = poly * z + r + c(1.0);
                    bind("%exp.ki", Expr::cast(Type::I32, k), |ki| {
                        bind(
                            "%exp.k1",
                            Expr::binary(BinOp::Shr, ki.clone(), ci(1)),
                            |k1| {
                                let k2 = ki - k1.clone();
                                let value = p * pow2(k1) * pow2(k2);
                                Expr::select(is_nan(&x), x.clone(), value)
                            },
                        )
                    })
                })
            },
        )
    })
}

/// `log(x)` for f32 `x` (natural logarithm), Cephes' `logf`: split `x`
/// into `m * 2^e` with `m` in `[sqrt(1/2), sqrt(2))` by bit manipulation
/// (subnormals are scaled by 2^23 first) and evaluate a degree-9
/// polynomial in `m - 1`. `log(0) = -inf`, `log(+inf) = +inf`, negative
/// or NaN arguments give NaN.
pub fn expand_log(x: Expr) -> Expr {
    bind("%log.x", as_f32(x), |x| {
        let small = Expr::lt(x.clone(), c(1.17549435e-38));
        let scaled = Expr::select(small.clone(), x.clone() * c(8388608.0), x.clone());
        let adjust = Expr::select(small, c(-23.0), c(0.0));
        bind("%log.bits", bits_of(scaled), |bits| {
            let exponent = (Expr::binary(
                BinOp::BitAnd,
                Expr::binary(BinOp::Shr, bits.clone(), ci(23)),
                ci(255),
            )) - 126;
            let mantissa_bits = Expr::binary(
                BinOp::BitOr,
                Expr::binary(BinOp::BitAnd, bits, Expr::int(Type::I32, 0x807F_FFFF)),
                ci(0x3F00_0000),
            );
            bind("%log.m", float_from_bits(mantissa_bits), |m| {
                bind(
                    "%log.low",
                    Expr::lt(m.clone(), c(std::f64::consts::FRAC_1_SQRT_2)),
                    |low| {
                        let e0 = as_f32(exponent) + adjust;
                        let e = Expr::select(low.clone(), e0.clone() - c(1.0), e0);
                        let t = Expr::select(low, m.clone() + m.clone() - c(1.0), m - c(1.0));
                        bind("%log.e", e, |e| {
                            bind("%log.t", t, |t| {
                                bind("%log.z", t.clone() * t.clone(), |z| {
                                    let poly = horner(
                                        &t,
                                        &[
                                            7.0376836292E-2,
                                            -1.1514610310E-1,
                                            1.1676998740E-1,
                                            -1.2420140846E-1,
                                            1.4249322787E-1,
                                            -1.6668057665E-1,
                                            2.0000714765E-1,
                                            -2.4999993993E-1,
                                            3.3333331174E-1,
                                        ],
                                    );
                                    let y = poly * t.clone() * z.clone();
                                    let y = y + c(-2.12194440e-4) * e.clone();
                                    let y = y + c(-0.5) * z;
                                    let value = t + y + c(0.693359375) * e;
                                    let invalid = Expr::or(Expr::lt(x.clone(), c(0.0)), is_nan(&x));
                                    Expr::select(
                                        Expr::eq(x.clone(), c(f64::INFINITY)),
                                        x.clone(),
                                        Expr::select(
                                            Expr::eq(x.clone(), c(0.0)),
                                            c(f64::NEG_INFINITY),
                                            Expr::select(invalid, c(f64::NAN), value),
                                        ),
                                    )
                                })
                            })
                        })
                    },
                )
            })
        })
    })
}

/// `pow(x, y)` for f32: `exp(y * log(|x|))`, negated for a negative `x`
/// and odd integer `y`, NaN for a negative `x` and non-integer `y`;
/// `pow(x, 0) = pow(1, y) = 1`. `pow(-0, y)` is treated as `pow(+0, y)`.
pub fn expand_pow(x: Expr, y: Expr) -> Expr {
    bind("%pow.x", as_f32(x), |x| {
        bind("%pow.y", as_f32(y), |y| {
            let magnitude = expand_exp(y.clone() * expand_log(fabs(x.clone())));
            bind("%pow.e", magnitude, |e| {
                let integer = Expr::eq(floor(y.clone()), y.clone());
                let half = y.clone() * c(0.5);
                let odd = Expr::and(integer.clone(), ne(floor(half.clone()), half));
                let negative = Expr::select(
                    integer,
                    Expr::select(odd, Expr::unary(crate::UnaryOp::Neg, e.clone()), e.clone()),
                    c(f64::NAN),
                );
                let value = Expr::select(Expr::lt(x.clone(), c(0.0)), negative, e);
                Expr::select(
                    Expr::or(Expr::eq(y, c(0.0)), Expr::eq(x, c(1.0))),
                    c(1.0),
                    value,
                )
            })
        })
    })
}

/// Which of the three trigonometric functions to build from the shared
/// range reduction.
#[derive(Clone, Copy)]
enum Trig {
    Sin,
    Cos,
    Tan,
}

/// Cephes' `sinf`/`cosf`: `k = floor(x * 2/pi + 1/2)`, `r = x - k pi/2` in
/// three parts (exact for |k| < 2^16), then a sine or cosine polynomial on
/// `[-pi/4, pi/4]` chosen by the quadrant `k mod 4`.
fn expand_trig(x: Expr, which: Trig) -> Expr {
    bind("%trig.x", as_f32(x), |x| {
        bind(
            "%trig.k",
            floor(x.clone() * c(std::f64::consts::FRAC_2_PI) + c(0.5)),
            |k| {
                let r = x - k.clone() * c(1.5703125);
                let r = r - k.clone() * c(4.837_512_969_970_703e-4);
                let r = r - k.clone() * c(7.549_789_954_891_882e-8);
                bind("%trig.r", r, |r| {
                    bind("%trig.z", r.clone() * r.clone(), |z| {
                        let s = horner(&z, &[-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1])
                            * z.clone()
                            * r.clone()
                            + r;
                        let cpoly = horner(
                            &z,
                            &[
                                2.443315711809948E-5,
                                -1.388731625493765E-3,
                                4.166664568298827E-2,
                            ],
                        );
                        let cv = cpoly * z.clone() * z.clone() - c(0.5) * z + c(1.0);
                        let quadrant = Expr::binary(BinOp::BitAnd, Expr::cast(Type::I32, k), ci(3));
                        bind("%trig.s", s, |s| {
                            bind("%trig.c", cv, |cv| {
                                bind("%trig.q", quadrant, |q| {
                                    let neg = |e: Expr| Expr::unary(crate::UnaryOp::Neg, e);
                                    let pick = |v0: Expr, v1: Expr, v2: Expr, v3: Expr| {
                                        Expr::select(
                                            Expr::eq(q.clone(), ci(0)),
                                            v0,
                                            Expr::select(
                                                Expr::eq(q.clone(), ci(1)),
                                                v1,
                                                Expr::select(Expr::eq(q.clone(), ci(2)), v2, v3),
                                            ),
                                        )
                                    };
                                    match which {
                                        Trig::Sin => {
                                            pick(s.clone(), cv.clone(), neg(s.clone()), neg(cv))
                                        }
                                        Trig::Cos => {
                                            pick(cv.clone(), neg(s.clone()), neg(cv.clone()), s)
                                        }
                                        Trig::Tan => Expr::select(
                                            Expr::eq(
                                                Expr::binary(BinOp::BitAnd, q.clone(), ci(1)),
                                                ci(0),
                                            ),
                                            s.clone() / cv.clone(),
                                            neg(cv) / s,
                                        ),
                                    }
                                })
                            })
                        })
                    })
                })
            },
        )
    })
}

/// `sin(x)` for f32 (see the module docs for accuracy).
pub fn expand_sin(x: Expr) -> Expr {
    expand_trig(x, Trig::Sin)
}

/// `cos(x)` for f32.
pub fn expand_cos(x: Expr) -> Expr {
    expand_trig(x, Trig::Cos)
}

/// `tan(x)` for f32: the quotient of the sine and cosine polynomials of
/// the same reduced argument.
pub fn expand_tan(x: Expr) -> Expr {
    expand_trig(x, Trig::Tan)
}

/// `atan2(y, x)` for f32: `atan(min/max)` of the magnitudes with Cephes'
/// `atanf` polynomial (reduced around pi/4 above tan(pi/8)), then mapped
/// to the right octant using the sign bits (so `atan2(0, -0) = pi` and
/// `atan2(-0, -1) = -pi` as in C). `atan2(0, 0) = 0`; either NaN gives NaN.
pub fn expand_atan2(y: Expr, x: Expr) -> Expr {
    bind("%atan2.y", as_f32(y), |y| {
        bind("%atan2.x", as_f32(x), |x| {
            bind("%atan2.ay", fabs(y.clone()), |ay| {
                bind("%atan2.ax", fabs(x.clone()), |ax| {
                    let mx = Expr::max(ax.clone(), ay.clone());
                    let mn = Expr::min(ax.clone(), ay.clone());
                    let ratio = Expr::select(
                        Expr::eq(mx.clone(), c(0.0)),
                        c(0.0),
                        Expr::select(Expr::eq(mn.clone(), mx.clone()), c(1.0), mn / mx),
                    );
                    bind("%atan2.a", ratio, |a| {
                        bind("%atan2.big", gt(a.clone(), c(0.41421356237309503)), |big| {
                            let t = Expr::select(
                                big.clone(),
                                (a.clone() - c(1.0)) / (a.clone() + c(1.0)),
                                a,
                            );
                            let base = Expr::select(big, c(std::f64::consts::FRAC_PI_4), c(0.0));
                            bind("%atan2.t", t, |t| {
                                bind("%atan2.z", t.clone() * t.clone(), |z| {
                                    let poly = horner(
                                        &z,
                                        &[
                                            8.05374449538e-2,
                                            -1.38776856032E-1,
                                            1.99777106478E-1,
                                            -3.33329491539E-1,
                                        ],
                                    );
                                    let p = poly * z * t.clone() + t + base;
                                    bind("%atan2.p", p, |p| {
                                        let r = Expr::select(
                                            gt(ay.clone(), ax.clone()),
                                            c(std::f64::consts::FRAC_PI_2) - p.clone(),
                                            p,
                                        );
                                        let r = Expr::select(
                                            Expr::lt(bits_of(x.clone()), ci(0)),
                                            c(std::f64::consts::PI) - r.clone(),
                                            r,
                                        );
                                        bind("%atan2.r", r, |r| {
                                            let r = Expr::select(
                                                Expr::lt(bits_of(y.clone()), ci(0)),
                                                Expr::unary(crate::UnaryOp::Neg, r.clone()),
                                                r,
                                            );
                                            Expr::select(
                                                Expr::or(is_nan(&x), is_nan(&y)),
                                                x.clone() + y.clone(),
                                                r,
                                            )
                                        })
                                    })
                                })
                            })
                        })
                    })
                })
            })
        })
    })
}

/// `lerp(a, b, w)`, Halide's definition (`lower_lerp`), the result having
/// the type of `a` and `b`:
///
/// - Float values: `w` as f32 (an integer weight of `n` bits is first
///   divided by `2^n - 1` in f32); result `a * (1 - w) + b * w`.
/// - Bool values: `select(w > half, b, a)` with half = 0.5, or `max / 2`
///   of an integer weight type.
/// - Integer values of `n` bits: signed values are biased by the type's
///   minimum into unsigned `u_n`. The weight becomes a `u_n` weight `W`:
///   a float weight as `u_n(f32(2^n - 1) * w)` (plain cast), an unsigned
///   weight rescaled from its width (multiplied by `(2^m+1)(2^2m+1)...`
///   when narrower, divided by the same product when wider). Then, in
///   `u_2n` arithmetic, `p = a * (max - W) + b * W + 2^(n-1)` and the
///   result is `u_n(((p >> n) + p) >> n)`, un-biased. 32-bit values use
///   u64 intermediates. Signed integer weights are read as unsigned.
pub fn expand_lerp(a: Expr, b: Expr, w: Expr) -> Expr {
    let ty = a.ty().element();
    let wty = w.ty().element();
    if ty.is_float() {
        let weight = if wty.is_float() {
            as_f32(w)
        } else if wty.is_bool() {
            Expr::select(w, c(1.0), c(0.0))
        } else {
            as_f32(Expr::cast(wty.with_kind(TypeKind::UInt), w))
                / c(2f64.powi(wty.bits as i32) - 1.0)
        };
        return bind("%lerp.w", weight, |w| a * (c(1.0) - w.clone()) + b * w);
    }
    if ty.is_bool() {
        let half = if wty.is_float() {
            c(0.5)
        } else {
            let u = wty.with_kind(TypeKind::UInt);
            return Expr::select(
                gt(Expr::cast(u, w), Expr::int(u, (u.max_value() as i64) / 2)),
                b,
                a,
            );
        };
        return Expr::select(gt(as_f32(w), half), b, a);
    }
    let bits = ty.bits;
    let unsigned = ty.with_kind(TypeKind::UInt);
    let wide = Type::new(TypeKind::UInt, bits * 2);
    let bias = ty.min_value() as i64;
    let (a, b) = if ty.is_int() {
        (
            Expr::cast(unsigned, a - Expr::int(ty, bias)),
            Expr::cast(unsigned, b - Expr::int(ty, bias)),
        )
    } else {
        (a, b)
    };
    let typed_weight = if wty.is_float() {
        Expr::cast(unsigned, c(unsigned.max_value()) * as_f32(w))
    } else {
        let wu = wty.with_kind(TypeKind::UInt);
        let w = Expr::cast(wu, w);
        let wbits = if wty.is_bool() { 1 } else { wty.bits as i32 };
        let difference = wbits - bits as i32;
        if difference == 0 {
            w
        } else {
            let mut bits_left = difference.abs();
            let mut shift = (bits as i32).min(wbits);
            let mut scale: u64 = 1;
            while bits_left > 0 {
                scale = scale.wrapping_add(scale << shift);
                bits_left -= shift;
                shift *= 2;
            }
            if difference < 0 {
                Expr::cast(unsigned, w) * Expr::int(unsigned, scale as i64)
            } else {
                Expr::cast(unsigned, w / Expr::int(wu, scale as i64))
            }
        }
    };
    let result = bind("%lerp.w", typed_weight, |w| {
        let inverse = Expr::int(unsigned, unsigned.max_value() as i64) - w.clone();
        let sum = Expr::cast(wide, a) * Expr::cast(wide, inverse)
            + Expr::cast(wide, b) * Expr::cast(wide, w)
            + Expr::int(wide, 1i64 << (bits - 1));
        bind("%lerp.p", sum, |p| {
            let shift = Expr::int(wide, bits as i64);
            let divided = Expr::binary(
                BinOp::Shr,
                Expr::binary(BinOp::Shr, p.clone(), shift.clone()) + p,
                shift,
            );
            Expr::cast(unsigned, divided)
        })
    });
    if ty.is_int() {
        Expr::cast(ty, result) + Expr::int(ty, bias)
    } else {
        result
    }
}

/// The expansion of one intrinsic call, or `None` for intrinsics that stay
/// calls (the exact IEEE operations and the rest).
pub fn expand_call(intrinsic: Intrinsic, args: &[Expr]) -> Option<Expr> {
    let arg = |i: usize| args.get(i).cloned();
    Some(match intrinsic {
        Intrinsic::Exp => expand_exp(arg(0)?),
        Intrinsic::Log => expand_log(arg(0)?),
        Intrinsic::Pow => expand_pow(arg(0)?, arg(1)?),
        Intrinsic::Sin => expand_sin(arg(0)?),
        Intrinsic::Cos => expand_cos(arg(0)?),
        Intrinsic::Tan => expand_tan(arg(0)?),
        Intrinsic::Atan2 => expand_atan2(arg(0)?, arg(1)?),
        Intrinsic::Lerp => expand_lerp(arg(0)?, arg(1)?, arg(2)?),
        _ => return None,
    })
}

/// Rewrite every call to `exp log pow sin cos tan atan2 lerp` in `e` into
/// its expansion (scalar expressions only: vectorise after expanding).
pub fn expand_intrinsics(e: &Expr) -> Expr {
    struct Expander;
    impl Mutator for Expander {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            let e = mutate_expr_children(self, e);
            if let ExprKind::Call {
                target: CallTarget::Intrinsic(i),
                args,
            } = e.kind()
                && let Some(expanded) = expand_call(*i, args)
            {
                return expanded;
            }
            e
        }
    }
    Expander.mutate_expr(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visit::{Visitor, walk_expr};

    /// The intrinsics left in `e`.
    fn intrinsics(e: &Expr) -> Vec<Intrinsic> {
        struct Collect(Vec<Intrinsic>);
        impl Visitor for Collect {
            fn visit_expr(&mut self, e: &Expr) {
                if let ExprKind::Call {
                    target: CallTarget::Intrinsic(i),
                    ..
                } = e.kind()
                {
                    self.0.push(*i);
                }
                walk_expr(self, e);
            }
        }
        let mut c = Collect(Vec::new());
        c.visit_expr(e);
        c.0
    }

    #[test]
    fn expansion_leaves_only_exact_operations() {
        let x = Expr::var(Type::F32, "x");
        let nested = Expr::intrinsic(
            Type::F32,
            Intrinsic::Exp,
            vec![Expr::intrinsic(Type::F32, Intrinsic::Sin, vec![x.clone()])],
        );
        let e = Expr::intrinsic(
            Type::F32,
            Intrinsic::Lerp,
            vec![
                nested,
                Expr::intrinsic(Type::F32, Intrinsic::Sqrt, vec![x.clone()]),
                x,
            ],
        );
        let expanded = expand_intrinsics(&e);
        let mut left = intrinsics(&expanded);
        left.sort_by_key(|i| i.name());
        left.dedup();
        assert_eq!(
            left,
            [Intrinsic::Floor, Intrinsic::Reinterpret, Intrinsic::Sqrt]
        );
        assert_eq!(expanded.ty(), Type::F32);
    }

    #[test]
    fn integer_arguments_are_converted_to_f32() {
        let e = expand_log(Expr::var_i32("n"));
        assert_eq!(e.ty(), Type::F32);
        let ExprKind::Let { value, .. } = e.kind() else {
            panic!("expected a let, got {e}")
        };
        assert_eq!(value.to_string(), "f32(n)");
    }
}
