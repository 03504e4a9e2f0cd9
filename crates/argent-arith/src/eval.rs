//! Scalar values and the semantics of every operator, for constant folding
//! in the simplifier, the lowered-IR executor and the property tests.
//!
//! The semantics are not re-implemented here: every operator delegates to
//! the reference interpreter's `argent_interp::scalar` (wrapping integers,
//! Euclidean `/` and `%` with `x / 0 == 0`, IEEE single floats, `min`/`max`
//! on floats following the comparison, float-to-int casts saturating to
//! the 32-bit range), so folding a constant gives exactly what the
//! interpreter computes. This module only converts between its raw `i64`
//! form and [`Scalar`], and evaluates the transcendental intrinsics and
//! `lerp` through their expansions in `argent_ir::math`.

use argent_interp::scalar;
use argent_ir::{BinOp, Expr, ExprKind, Intrinsic, Type, UnaryOp};

/// One lane's value. Bools are `Int(0)` or `Int(1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f32),
}

impl Scalar {
    /// The value as an integer (floats truncate); used where the type
    /// checker guarantees an integer.
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Int(v) => v,
            Scalar::Float(f) => f as i64,
        }
    }
    /// The value as a float (integers convert).
    pub fn as_f32(self) -> f32 {
        match self {
            Scalar::Int(v) => v as f32,
            Scalar::Float(f) => f,
        }
    }
    /// Truth value of a bool lane.
    pub fn is_true(self) -> bool {
        match self {
            Scalar::Int(v) => v != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }
    /// Whether two values are the same bits (so NaN equals NaN); the
    /// comparison differential tests use.
    pub fn same_bits(self, other: Scalar) -> bool {
        match (self, other) {
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            (Scalar::Float(a), Scalar::Float(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            _ => false,
        }
    }
}

/// Build an expression holding `v` as a constant of scalar or vector type
/// `ty` (vectors become broadcasts).
pub fn scalar_to_expr(ty: Type, v: Scalar) -> Expr {
    let elem = ty.element();
    let e = match v {
        Scalar::Int(i) if !elem.is_float() => Expr::int(elem, i),
        Scalar::Int(i) => Expr::float(elem, i as f64),
        Scalar::Float(f) if elem.is_float() => Expr::float(elem, f as f64),
        Scalar::Float(f) => Expr::int(elem, f as i64),
    };
    Expr::broadcast(e, ty.lanes)
}

/// The value of a constant expression (`IntImm`, `FloatImm`, or a
/// broadcast of one), if it is one.
pub fn const_scalar(e: &Expr) -> Option<Scalar> {
    match e.kind() {
        ExprKind::IntImm(v) => Some(Scalar::Int(*v)),
        ExprKind::FloatImm(v) => Some(Scalar::Float(*v as f32)),
        ExprKind::Broadcast { value, .. } => const_scalar(value),
        _ => None,
    }
}

/// The interpreter's raw form of a value (integers as themselves, floats
/// as their bits).
pub fn to_raw(v: Scalar) -> i64 {
    match v {
        Scalar::Int(i) => i,
        Scalar::Float(f) => scalar::from_f32(f),
    }
}

/// A value of element type `ty` from its raw form.
pub fn from_raw(ty: Type, raw: i64) -> Scalar {
    if ty.element().is_float() {
        Scalar::Float(scalar::to_f32(raw))
    } else {
        Scalar::Int(raw)
    }
}

/// Raw form of a value of type `ty`, converting a value of the other
/// representation (so callers may pass `Int` for a float or vice versa).
fn raw_as(ty: Type, v: Scalar) -> i64 {
    match (ty.element().is_float(), v) {
        (true, Scalar::Int(i)) => scalar::from_f32(i as f32),
        (false, Scalar::Float(f)) => f as i64,
        _ => to_raw(v),
    }
}

/// `a op b` where both operands have element type `ty`.
pub fn binary(op: BinOp, ty: Type, a: Scalar, b: Scalar) -> Scalar {
    let ty = ty.element();
    let raw = scalar::binary(op, ty, raw_as(ty, a), raw_as(ty, b));
    let result_ty = if op.is_comparison() || op.is_logical() {
        Type::BOOL
    } else {
        ty
    };
    from_raw(result_ty, raw)
}

/// A unary operator on a value of element type `ty`.
pub fn unary(op: UnaryOp, ty: Type, a: Scalar) -> Scalar {
    let ty = ty.element();
    let result_ty = if op == UnaryOp::Not { Type::BOOL } else { ty };
    from_raw(result_ty, scalar::unary(op, ty, raw_as(ty, a)))
}

/// Convert `v` of element type `from` to element type `to`.
pub fn cast(to: Type, from: Type, v: Scalar, saturating: bool) -> Scalar {
    let (to, from) = (to.element(), from.element());
    from_raw(to, scalar::cast(from, to, saturating, raw_as(from, v)))
}

/// The smallest and largest values of an integer type, as `i64`.
pub fn int_range(ty: Type) -> (i64, i64) {
    (
        ty.element().min_value() as i64,
        ty.element().max_value() as i64,
    )
}

/// An intrinsic applied to lane values. `ty` is the call's element type,
/// `arg_types` the arguments' element types.
///
/// The transcendental functions and `lerp` are *defined* by their
/// expansions in `argent_ir::math`; they are evaluated by building and
/// evaluating that expansion (slow: the executor expands them once, ahead
/// of time, with `argent_ir::math::expand_intrinsics`).
pub fn intrinsic(which: Intrinsic, ty: Type, arg_types: &[Type], args: &[Scalar]) -> Scalar {
    let ty = ty.element();
    let arg_ty = |i: usize| arg_types.get(i).copied().unwrap_or(ty).element();
    let raw = |i: usize| args.get(i).map(|v| raw_as(arg_ty(i), *v)).unwrap_or(0);
    if let Some(r) = scalar::intrinsic(which, ty, arg_ty(0), raw(0), raw(1)) {
        return from_raw(ty, r);
    }
    let arg_exprs: Vec<Expr> = args
        .iter()
        .enumerate()
        .map(|(i, v)| scalar_to_expr(arg_ty(i), *v))
        .collect();
    match argent_ir::math::expand_call(which, &arg_exprs).map(|e| eval_scalar(&e, &mut |_| None)) {
        Some(Ok(v)) => v,
        // Every intrinsic is either exact or expandable; keep evaluation
        // total anyway.
        _ => from_raw(ty, 0),
    }
}

/// Why a scalar evaluation could not finish.
#[derive(Clone, Debug, PartialEq)]
pub enum EvalError {
    /// A variable with no value in the environment.
    UnboundVar(String),
    /// A node the scalar evaluator does not handle (loads, func calls,
    /// vectors): those need the executor.
    Unsupported(String),
}

/// Evaluate a scalar expression with variables from `env`. Handles
/// constants, variables, casts, operators, selects, lets and intrinsics;
/// loads, func/input calls and vector nodes are `Unsupported`.
pub fn eval_scalar(
    e: &Expr,
    env: &mut dyn FnMut(&str) -> Option<Scalar>,
) -> Result<Scalar, EvalError> {
    let mut lets: Vec<(String, Scalar)> = Vec::new();
    eval_inner(e, env, &mut lets)
}

fn eval_inner(
    e: &Expr,
    env: &mut dyn FnMut(&str) -> Option<Scalar>,
    lets: &mut Vec<(String, Scalar)>,
) -> Result<Scalar, EvalError> {
    Ok(match e.kind() {
        ExprKind::IntImm(v) => Scalar::Int(*v),
        ExprKind::FloatImm(v) => Scalar::Float(*v as f32),
        ExprKind::Var(n) => match lets.iter().rev().find(|(name, _)| name == n) {
            Some((_, v)) => *v,
            None => env(n).ok_or_else(|| EvalError::UnboundVar(n.clone()))?,
        },
        ExprKind::Cast { value, saturating } => {
            let v = eval_inner(value, env, lets)?;
            cast(e.ty(), value.ty(), v, *saturating)
        }
        ExprKind::Unary { op, value } => unary(*op, value.ty(), eval_inner(value, env, lets)?),
        ExprKind::Binary { op, a, b } => {
            let x = eval_inner(a, env, lets)?;
            let y = eval_inner(b, env, lets)?;
            binary(*op, a.ty(), x, y)
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            if eval_inner(cond, env, lets)?.is_true() {
                eval_inner(then, env, lets)?
            } else {
                eval_inner(otherwise, env, lets)?
            }
        }
        ExprKind::Let { name, value, body } => {
            let v = eval_inner(value, env, lets)?;
            lets.push((name.clone(), v));
            let r = eval_inner(body, env, lets);
            lets.pop();
            r?
        }
        ExprKind::Call {
            target: argent_ir::CallTarget::Intrinsic(i),
            args,
        } => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(eval_inner(a, env, lets)?);
            }
            let tys: Vec<Type> = args.iter().map(|a| a.ty()).collect();
            intrinsic(*i, e.ty(), &tys, &vals)
        }
        _ => return Err(EvalError::Unsupported(e.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn euclidean_division_and_modulo() {
        let i = |v| Scalar::Int(v);
        assert_eq!(binary(BinOp::Div, Type::I32, i(-7), i(2)), i(-4));
        assert_eq!(binary(BinOp::Mod, Type::I32, i(-7), i(2)), i(1));
        assert_eq!(binary(BinOp::Div, Type::I32, i(-7), i(-2)), i(4));
        assert_eq!(binary(BinOp::Mod, Type::I32, i(-7), i(-2)), i(1));
        assert_eq!(binary(BinOp::Div, Type::I32, i(5), i(0)), i(0));
        assert_eq!(binary(BinOp::Mod, Type::I32, i(5), i(0)), i(0));
        assert_eq!(
            binary(BinOp::Div, Type::I32, i(i32::MIN as i64), i(-1)),
            i(i32::MIN as i64)
        );
    }

    #[test]
    fn narrow_types_wrap() {
        let i = |v| Scalar::Int(v);
        assert_eq!(binary(BinOp::Add, Type::U8, i(250), i(10)), i(4));
        assert_eq!(binary(BinOp::Sub, Type::U16, i(0), i(1)), i(65535));
        assert_eq!(binary(BinOp::Mul, Type::I8, i(100), i(2)), i(-56));
        assert_eq!(unary(UnaryOp::Neg, Type::I8, i(-128)), i(-128));
        assert_eq!(binary(BinOp::Shl, Type::U8, i(0x81), i(1)), i(2));
        assert_eq!(binary(BinOp::Shr, Type::I8, i(-128), i(9)), i(-1));
        assert_eq!(binary(BinOp::Shl, Type::I32, i(8), i(-2)), i(2));
    }

    #[test]
    fn float_to_int_casts_saturate_then_wrap() {
        assert_eq!(
            cast(Type::I32, Type::F32, Scalar::Float(-2.7), false),
            Scalar::Int(-2)
        );
        assert_eq!(
            cast(Type::I32, Type::F32, Scalar::Float(1e20), false),
            Scalar::Int(i32::MAX as i64)
        );
        assert_eq!(
            cast(Type::U8, Type::F32, Scalar::Float(300.0), false),
            Scalar::Int(44)
        );
        assert_eq!(
            cast(Type::U8, Type::F32, Scalar::Float(300.0), true),
            Scalar::Int(255)
        );
        assert_eq!(
            cast(Type::U8, Type::F32, Scalar::Float(f32::NAN), true),
            Scalar::Int(0)
        );
        assert_eq!(
            cast(Type::U8, Type::I32, Scalar::Int(-5), true),
            Scalar::Int(0)
        );
        assert_eq!(
            cast(Type::I8, Type::U16, Scalar::Int(200), false),
            Scalar::Int(-56)
        );
    }

    #[test]
    fn integer_lerp_rounds() {
        let r = intrinsic(
            Intrinsic::Lerp,
            Type::U8,
            &[Type::U8, Type::U8, Type::U8],
            &[Scalar::Int(0), Scalar::Int(255), Scalar::Int(128)],
        );
        assert_eq!(r, Scalar::Int(128));
        let top = intrinsic(
            Intrinsic::Lerp,
            Type::U32,
            &[Type::U32, Type::U32, Type::U32],
            &[
                Scalar::Int(0),
                Scalar::Int(u32::MAX as i64),
                Scalar::Int(u32::MAX as i64),
            ],
        );
        assert_eq!(top, Scalar::Int(u32::MAX as i64));
    }
}
