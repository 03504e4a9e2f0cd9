//! Exact scalar semantics, shared by the interpreter and any executor of
//! lowered IR that wants to agree with it (see the crate docs for the
//! rules in prose).
//!
//! Values are *raw* `i64`s: an integer or bool holds its mathematical value
//! (already wrapped to its type; bools are 0 or 1; `u64` intermediates of
//! `lerp` hold their bit pattern), an f32 holds its bits zero-extended.

use argent_ir::{BinOp, Intrinsic, Type, TypeKind, UnaryOp};

/// The f32 held in a raw value.
#[inline]
pub fn to_f32(raw: i64) -> f32 {
    f32::from_bits(raw as u32)
}

/// The raw value of an f32.
#[inline]
pub fn from_f32(v: f32) -> i64 {
    v.to_bits() as i64
}

/// The raw value of a float constant of the IR (stored as f64, rounded to
/// f32 to nearest even).
pub fn float_constant(v: f64) -> i64 {
    from_f32(v as f32)
}

/// Whether `ty` is the 64-bit unsigned type of `lerp` intermediates.
#[inline]
pub fn is_u64(ty: Type) -> bool {
    ty.kind == TypeKind::UInt && ty.bits >= 64
}

/// A binary operation on operands of type `ty` (comparisons and logic give
/// 0 or 1).
#[inline]
pub fn binary(op: BinOp, ty: Type, a: i64, b: i64) -> i64 {
    if ty.is_float() {
        float_binary(op, to_f32(a), to_f32(b))
    } else {
        int_binary(op, ty, a, b)
    }
}

/// Binary operations on f32: IEEE single precision, each result rounded;
/// `a % b = a - b * floor(a / b)`; `min(a, b) = a < b ? a : b` and
/// `max(a, b) = a > b ? a : b` (as Halide's code generator does, so NaN
/// and signed-zero cases follow from the comparison).
#[inline]
pub fn float_binary(op: BinOp, a: f32, b: f32) -> i64 {
    let f = |v: f32| from_f32(v);
    match op {
        BinOp::Add => f(a + b),
        BinOp::Sub => f(a - b),
        BinOp::Mul => f(a * b),
        BinOp::Div => f(a / b),
        BinOp::Mod => {
            let q = (a / b).floor();
            f(a - b * q)
        }
        BinOp::Min => f(if a < b { a } else { b }),
        BinOp::Max => f(if a > b { a } else { b }),
        BinOp::Eq => (a == b) as i64,
        BinOp::Ne => (a != b) as i64,
        BinOp::Lt => (a < b) as i64,
        BinOp::Le => (a <= b) as i64,
        BinOp::Gt => (a > b) as i64,
        BinOp::Ge => (a >= b) as i64,
        // Rejected when compiling; defined anyway so evaluation never panics.
        BinOp::And => (a != 0.0 && b != 0.0) as i64,
        BinOp::Or => (a != 0.0 || b != 0.0) as i64,
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => 0,
    }
}

/// Binary operations on integers and bools: computed on the mathematical
/// values in i64 and wrapped to the type.
#[inline]
pub fn int_binary(op: BinOp, ty: Type, a: i64, b: i64) -> i64 {
    let unsigned64 = is_u64(ty);
    let less = |x: i64, y: i64| {
        if unsigned64 {
            (x as u64) < (y as u64)
        } else {
            x < y
        }
    };
    match op {
        BinOp::Add => ty.wrap(a.wrapping_add(b)),
        BinOp::Sub => ty.wrap(a.wrapping_sub(b)),
        BinOp::Mul => ty.wrap(a.wrapping_mul(b)),
        BinOp::Div => {
            if b == 0 {
                0
            } else if unsigned64 {
                ((a as u64) / (b as u64)) as i64
            } else {
                ty.wrap(a.wrapping_div_euclid(b))
            }
        }
        BinOp::Mod => {
            if b == 0 {
                0
            } else if unsigned64 {
                ((a as u64) % (b as u64)) as i64
            } else {
                ty.wrap(a.wrapping_rem_euclid(b))
            }
        }
        BinOp::Min => {
            if less(a, b) {
                a
            } else {
                b
            }
        }
        BinOp::Max => {
            if less(b, a) {
                a
            } else {
                b
            }
        }
        BinOp::BitAnd => ty.wrap(a & b),
        BinOp::BitOr => ty.wrap(a | b),
        BinOp::BitXor => ty.wrap(a ^ b),
        BinOp::Shl => shift(ty, a, b, true),
        BinOp::Shr => shift(ty, a, b, false),
        BinOp::Eq => (a == b) as i64,
        BinOp::Ne => (a != b) as i64,
        BinOp::Lt => less(a, b) as i64,
        BinOp::Le => (!less(b, a)) as i64,
        BinOp::Gt => less(b, a) as i64,
        BinOp::Ge => (!less(a, b)) as i64,
        BinOp::And => (a != 0 && b != 0) as i64,
        BinOp::Or => (a != 0 || b != 0) as i64,
    }
}

/// Shifts: a negative amount shifts the other way; an amount of at least
/// the type's width gives 0, or -1 for a right shift of a negative signed
/// value. Right shifts of signed values are arithmetic.
#[inline]
pub fn shift(ty: Type, a: i64, b: i64, left: bool) -> i64 {
    let (left, amount) = if b < 0 && !is_u64(ty) {
        (!left, b.unsigned_abs())
    } else {
        (left, b as u64)
    };
    let bits = ty.bits as u64;
    if left {
        if amount >= bits || amount >= 64 {
            0
        } else {
            ty.wrap(((a as u64) << amount) as i64)
        }
    } else if ty.is_int() {
        if amount >= bits || amount >= 64 {
            if a < 0 { -1 } else { 0 }
        } else {
            a >> amount
        }
    } else if amount >= bits || amount >= 64 {
        0
    } else {
        ((a as u64) >> amount) as i64
    }
}

/// Unary operations: integer negation and complement wrap; float negation
/// flips the sign bit; `!` of a bool.
#[inline]
pub fn unary(op: UnaryOp, ty: Type, v: i64) -> i64 {
    match op {
        UnaryOp::Neg => {
            if ty.is_float() {
                from_f32(-to_f32(v))
            } else {
                ty.wrap(v.wrapping_neg())
            }
        }
        UnaryOp::Not => (v == 0) as i64,
        UnaryOp::BitNot => ty.wrap(!v),
    }
}

/// Conversion from `from` to `to`.
///
/// - integer to integer: wrap (saturating: clamp to the target range);
/// - integer to float: round to nearest even;
/// - float to integer: NaN gives 0; otherwise saturate to the i32 range
///   (the u32 range for a u32 target), truncate toward zero, then wrap to
///   the target width. Saturating casts clamp to the target's own range
///   instead (NaN still gives 0);
/// - anything to bool: `!= 0`.
#[inline]
pub fn cast(from: Type, to: Type, saturating: bool, v: i64) -> i64 {
    if to.is_bool() {
        return if from.is_float() {
            (to_f32(v) != 0.0) as i64
        } else {
            (v != 0) as i64
        };
    }
    if from.is_float() {
        let x = to_f32(v);
        if to.is_float() {
            return v;
        }
        if saturating || to.bits >= 64 {
            if x.is_nan() {
                return 0;
            }
            let t = (x as f64).trunc().clamp(to.min_value(), to.max_value());
            return if is_u64(to) {
                t as u64 as i64
            } else {
                t as i64
            };
        }
        let t = if to.kind == TypeKind::UInt && to.bits == 32 {
            x as u32 as i64
        } else {
            x as i32 as i64
        };
        return to.wrap(t);
    }
    if to.is_float() {
        let x = if is_u64(from) {
            (v as u64) as f32
        } else {
            v as f32
        };
        return from_f32(x);
    }
    if saturating {
        if is_u64(from) && v < 0 {
            return if is_u64(to) { v } else { to.max_value() as i64 };
        }
        if is_u64(to) {
            return v.max(0);
        }
        return v.clamp(to.min_value() as i64, to.max_value() as i64);
    }
    to.wrap(v)
}

/// Bit reinterpretation between same-width types (`Intrinsic::Reinterpret`).
#[inline]
pub fn reinterpret(from: Type, to: Type, v: i64) -> i64 {
    let bits = from.bits.min(64) as u32;
    let pattern = if bits >= 64 {
        v as u64
    } else {
        (v as u64) & ((1u64 << bits) - 1)
    };
    if to.is_float() {
        pattern as i64
    } else {
        to.wrap(pattern as i64)
    }
}

/// The exact intrinsics of one argument or two (`abs absd sqrt floor ceil
/// round trunc is_nan likely reinterpret`); `None` for the others, which
/// are defined by their expansion in `argent_ir::math`. `arg_ty` is the
/// type of the (first) argument, `ty` the call's type.
#[inline]
pub fn intrinsic(which: Intrinsic, ty: Type, arg_ty: Type, a: i64, b: i64) -> Option<i64> {
    let float = |f: fn(f32) -> f32| from_f32(f(to_f32(a)));
    Some(match which {
        Intrinsic::Abs => {
            if arg_ty.is_float() {
                float(f32::abs)
            } else if is_u64(arg_ty) {
                a
            } else {
                ty.wrap(a.wrapping_abs())
            }
        }
        Intrinsic::Absd => {
            if arg_ty.is_float() {
                from_f32((to_f32(a) - to_f32(b)).abs())
            } else if is_u64(arg_ty) {
                ((a as u64).abs_diff(b as u64)) as i64
            } else {
                ty.wrap(a.wrapping_sub(b).wrapping_abs())
            }
        }
        Intrinsic::Sqrt => float(f32::sqrt),
        Intrinsic::Floor => float(f32::floor),
        Intrinsic::Ceil => float(f32::ceil),
        Intrinsic::Round => float(f32::round_ties_even),
        Intrinsic::Trunc => float(f32::trunc),
        Intrinsic::IsNan => to_f32(a).is_nan() as i64,
        Intrinsic::Likely => a,
        Intrinsic::Reinterpret => reinterpret(arg_ty, ty, a),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn euclidean_division_and_modulo() {
        let t = Type::I32;
        let cases = [
            (7, 2, 3, 1),
            (-7, 2, -4, 1),
            (7, -2, -3, 1),
            (-7, -2, 4, 1),
            (5, 0, 0, 0),
            (-5, 0, 0, 0),
        ];
        for (a, b, q, r) in cases {
            assert_eq!(int_binary(BinOp::Div, t, a, b), q, "{a} / {b}");
            assert_eq!(int_binary(BinOp::Mod, t, a, b), r, "{a} % {b}");
        }
        assert_eq!(
            int_binary(BinOp::Div, t, i32::MIN as i64, -1),
            i32::MIN as i64
        );
    }

    #[test]
    fn shifts() {
        assert_eq!(shift(Type::U8, 0x81, 1, true), 0x02);
        assert_eq!(shift(Type::U8, 0x81, -1, true), 0x40);
        assert_eq!(shift(Type::U8, 0x81, 8, true), 0);
        assert_eq!(shift(Type::I8, -128, 3, false), -16);
        assert_eq!(shift(Type::I8, -128, 9, false), -1);
        assert_eq!(shift(Type::I8, 64, 9, false), 0);
        assert_eq!(shift(Type::I8, 1, -3, false), 8);
        assert_eq!(shift(Type::I32, 1, 31, true), i32::MIN as i64);
    }

    #[test]
    fn casts() {
        let f = |v: f32| from_f32(v);
        assert_eq!(cast(Type::F32, Type::U8, false, f(300.7)), 44);
        assert_eq!(cast(Type::F32, Type::U8, false, f(-1.5)), 255);
        assert_eq!(cast(Type::F32, Type::I32, false, f(3e10)), i32::MAX as i64);
        assert_eq!(cast(Type::F32, Type::U32, false, f(3e9)), 3_000_000_000);
        assert_eq!(cast(Type::F32, Type::U32, false, f(-3.0)), 0);
        assert_eq!(cast(Type::F32, Type::U16, false, f(f32::NAN)), 0);
        assert_eq!(cast(Type::F32, Type::I16, false, f(-40000.9)), 25536);
        assert_eq!(cast(Type::F32, Type::U8, true, f(300.7)), 255);
        assert_eq!(cast(Type::F32, Type::U8, true, f(-3.7)), 0);
        assert_eq!(cast(Type::F32, Type::I8, true, f(-3.7)), -3);
        assert_eq!(cast(Type::F32, Type::I8, true, f(f32::NAN)), 0);
        assert_eq!(cast(Type::I32, Type::U8, false, -1), 255);
        assert_eq!(cast(Type::I32, Type::U8, true, -1), 0);
        assert_eq!(cast(Type::I32, Type::I8, true, 1000), 127);
        assert_eq!(
            cast(Type::U32, Type::I32, false, 4_000_000_000),
            4_000_000_000 - (1 << 32)
        );
        assert_eq!(
            cast(Type::U32, Type::I32, true, 4_000_000_000),
            i32::MAX as i64
        );
        assert_eq!(
            to_f32(cast(Type::I32, Type::F32, false, 16_777_217)),
            16_777_216.0
        );
        assert_eq!(
            to_f32(cast(Type::I32, Type::F32, false, 16_777_219)),
            16_777_220.0
        );
        assert_eq!(cast(Type::F32, Type::BOOL, false, f(0.5)), 1);
    }

    #[test]
    fn float_min_max_follow_the_comparison() {
        let nan = f32::NAN;
        assert!(to_f32(float_binary(BinOp::Min, 1.0, nan)).is_nan());
        assert_eq!(to_f32(float_binary(BinOp::Min, nan, 1.0)), 1.0);
        assert_eq!(
            to_f32(float_binary(BinOp::Max, -0.0, 0.0)).to_bits(),
            0.0f32.to_bits()
        );
        assert_eq!(to_f32(float_binary(BinOp::Mod, -1.0, 3.0)), 2.0);
    }

    #[test]
    fn abs_absd_round() {
        assert_eq!(
            intrinsic(Intrinsic::Abs, Type::U8, Type::I8, -128, 0),
            Some(128)
        );
        assert_eq!(
            intrinsic(Intrinsic::Absd, Type::U8, Type::U8, 3, 250,),
            Some(247)
        );
        assert_eq!(
            intrinsic(
                Intrinsic::Absd,
                Type::U32,
                Type::I32,
                i32::MIN as i64,
                i32::MAX as i64
            ),
            Some(u32::MAX as i64)
        );
        let r = |v: f32| {
            to_f32(intrinsic(Intrinsic::Round, Type::F32, Type::F32, from_f32(v), 0).unwrap())
        };
        assert_eq!((r(0.5), r(1.5), r(2.5), r(-2.5)), (0.0, 2.0, 2.0, -2.0));
    }
}
