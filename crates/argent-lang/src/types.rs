//! Halide's type rules, shared by the text checker and the builder API.
//!
//! A [`Typed`] value is an IR expression plus, for untyped literals, the
//! literal itself: an integer literal takes the type of the other operand,
//! a float literal makes an integer operand f32, and two literals fold.

use argent_ir::{BinOp, Expr, Intrinsic, Type, TypeKind, UnaryOp};

/// An untyped literal (before it meets a typed operand).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lit {
    Int(i64),
    Float(f64),
}

/// An expression with its type, remembering whether it is still an
/// untyped literal.
#[derive(Clone, Debug, PartialEq)]
pub struct Typed {
    pub expr: Expr,
    pub lit: Option<Lit>,
}

/// A typing error: a code, a message naming the types, and which argument
/// (if any) is at fault so the caller can point at it.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeError {
    pub code: &'static str,
    pub message: String,
    pub arg: Option<usize>,
    pub note: Option<String>,
}

impl TypeError {
    pub fn new(code: &'static str, message: impl Into<String>) -> TypeError {
        TypeError {
            code,
            message: message.into(),
            arg: None,
            note: None,
        }
    }
    pub fn at(mut self, arg: usize) -> TypeError {
        self.arg = Some(arg);
        self
    }
    pub fn note(mut self, note: impl Into<String>) -> TypeError {
        self.note = Some(note.into());
        self
    }
}

type TResult<T> = Result<T, TypeError>;

impl Typed {
    /// A typed (non-literal) value.
    pub fn of(expr: Expr) -> Typed {
        Typed { expr, lit: None }
    }
    /// An integer literal; i32 until it meets another type.
    pub fn int_lit(v: i64) -> Typed {
        Typed {
            expr: Expr::i32(v),
            lit: Some(Lit::Int(v)),
        }
    }
    /// A float literal; f32.
    pub fn float_lit(v: f64) -> Typed {
        Typed {
            expr: Expr::f32(v),
            lit: Some(Lit::Float(v)),
        }
    }
    pub fn ty(&self) -> Type {
        self.expr.ty()
    }

    /// The expression at its default type, checking that an integer
    /// literal fits in i32.
    pub fn finish(self) -> TResult<Expr> {
        if let Some(Lit::Int(v)) = self.lit
            && (v < i32::MIN as i64 || v > i32::MAX as i64)
        {
            return Err(TypeError::new(
                "E0204",
                format!("integer literal {v} does not fit in i32"),
            )
            .note("use it with an operand of type u32, or write u32(...)"));
        }
        Ok(self.expr)
    }
}

/// Whether an integer value fits in an integer type.
fn fits(ty: Type, v: i64) -> bool {
    (v as f64) >= ty.min_value() && (v as f64) <= ty.max_value()
}

/// Converts `t` to type `ty` the way an operand is converted by the type
/// rules: literals must fit (Halide rejects an implicit coercion that
/// changes a constant's value), typed values get a cast.
pub fn coerce(t: &Typed, ty: Type) -> TResult<Expr> {
    match t.lit {
        Some(Lit::Int(v)) if ty.is_integer() => {
            if fits(ty, v) {
                Ok(Expr::int(ty, v))
            } else {
                Err(
                    TypeError::new("E0204", format!("integer literal {v} does not fit in {ty}"))
                        .note(format!(
                            "{ty} holds {} to {}",
                            ty.min_value(),
                            ty.max_value()
                        )),
                )
            }
        }
        Some(Lit::Int(v)) if ty.is_float() => Ok(Expr::float(ty, v as f64)),
        Some(Lit::Float(v)) if ty.is_float() => Ok(Expr::float(ty, v)),
        _ => {
            if t.ty() == ty {
                Ok(t.expr.clone())
            } else if t.ty().is_bool() || ty.is_bool() {
                Err(TypeError::new(
                    "E0202",
                    format!("expected a value of type {ty}, found {}", t.ty()),
                ))
            } else {
                Ok(Expr::cast(ty, t.expr.clone()))
            }
        }
    }
}

/// The common type of two integer types per Halide: mixed signedness gives
/// the signed type of the wider width, otherwise the wider type.
pub fn integer_join(a: Type, b: Type) -> Type {
    let bits = a.bits.max(b.bits);
    if a.kind != b.kind {
        Type::new(TypeKind::Int, bits)
    } else {
        a.with_bits(bits)
    }
}

/// Brings two operands to one type per Halide's rules; `what` names the
/// operation for messages.
pub fn match_types(a: &Typed, b: &Typed, what: &str) -> TResult<(Expr, Expr)> {
    let (ta, tb) = (a.ty(), b.ty());
    match (a.lit, b.lit) {
        (Some(_), Some(_)) => {
            let ty = if ta.is_float() || tb.is_float() {
                Type::F32
            } else {
                Type::I32
            };
            Ok((coerce(a, ty)?, coerce(b, ty)?))
        }
        (Some(la), None) => {
            let ty = literal_meets(la, tb, what).map_err(|e| e.at(1))?;
            Ok((coerce(a, ty).map_err(|e| e.at(0))?, coerce(b, ty)?))
        }
        (None, Some(lb)) => {
            let ty = literal_meets(lb, ta, what).map_err(|e| e.at(0))?;
            Ok((coerce(a, ty)?, coerce(b, ty).map_err(|e| e.at(1))?))
        }
        (None, None) => {
            if ta == tb {
                return Ok((a.expr.clone(), b.expr.clone()));
            }
            if ta.is_bool() || tb.is_bool() {
                return Err(TypeError::new(
                    "E0202",
                    format!("cannot apply `{what}` to {ta} and {tb}"),
                )
                .note("bool values come from comparisons; use select(c, 1, 0) to get a number"));
            }
            let ty = if ta.is_float() {
                ta
            } else if tb.is_float() {
                tb
            } else {
                integer_join(ta, tb)
            };
            Ok((
                Expr::cast(ty, a.expr.clone()),
                Expr::cast(ty, b.expr.clone()),
            ))
        }
    }
}

/// The type a literal takes next to a typed operand of type `other`.
fn literal_meets(lit: Lit, other: Type, what: &str) -> TResult<Type> {
    if other.is_bool() {
        return Err(TypeError::new(
            "E0202",
            format!("cannot apply `{what}` to bool and a number"),
        ));
    }
    Ok(match lit {
        Lit::Float(_) if other.is_integer() => Type::F32,
        _ => other,
    })
}

/// Folds two literals under an arithmetic operator, as a C++ compiler
/// folds Halide's `2 * 3` before the type rules see it.
fn fold(op: BinOp, a: Lit, b: Lit) -> Option<Lit> {
    use Lit::*;
    match (a, b) {
        (Int(x), Int(y)) => {
            let v = match op {
                BinOp::Add => x.checked_add(y)?,
                BinOp::Sub => x.checked_sub(y)?,
                BinOp::Mul => x.checked_mul(y)?,
                BinOp::Div => {
                    if y == 0 {
                        0
                    } else {
                        x.div_euclid(y)
                    }
                }
                BinOp::Mod => {
                    if y == 0 {
                        0
                    } else {
                        x.rem_euclid(y)
                    }
                }
                _ => return None,
            };
            (v.abs() <= u32::MAX as i64).then_some(Int(v))
        }
        _ => {
            let f = |l: Lit| match l {
                Int(v) => v as f64,
                Float(v) => v,
            };
            let (x, y) = (f(a), f(b));
            let v = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => x / y,
                _ => return None,
            };
            v.is_finite().then_some(Float(v))
        }
    }
}

/// A binary operator with Halide's typing.
pub fn binary(op: BinOp, a: &Typed, b: &Typed) -> TResult<Typed> {
    let sym = op.symbol();
    if let (Some(la), Some(lb)) = (a.lit, b.lit)
        && let Some(l) = fold(op, la, lb)
    {
        return Ok(match l {
            Lit::Int(v) => Typed::int_lit(v),
            Lit::Float(v) => Typed::float_lit(v),
        });
    }
    match op {
        BinOp::And | BinOp::Or => {
            for (i, t) in [a, b].into_iter().enumerate() {
                if !t.ty().is_bool() || t.lit.is_some() {
                    return Err(TypeError::new(
                        "E0202",
                        format!("`{sym}` needs bool operands, found {}", t.ty()),
                    )
                    .at(i)
                    .note("compare with a value first, e.g. `x != 0`"));
                }
            }
            return Ok(Typed::of(Expr::binary(op, a.expr.clone(), b.expr.clone())));
        }
        BinOp::Shl | BinOp::Shr => {
            // The shifted value keeps its type; the amount follows it.
            let base_ty = if a.lit.is_some() && b.lit.is_none() {
                b.ty()
            } else {
                a.ty()
            };
            for (i, t) in [a, b].into_iter().enumerate() {
                if !t.ty().is_integer() {
                    return Err(TypeError::new(
                        "E0207",
                        format!("`{sym}` needs integer operands, found {}", t.ty()),
                    )
                    .at(i));
                }
            }
            let base = if a.lit.is_some() {
                coerce(a, base_ty).map_err(|e| e.at(0))?
            } else {
                a.expr.clone()
            };
            let amount = match b.lit {
                Some(Lit::Int(v)) if fits(base_ty, v) => Expr::int(base_ty, v),
                Some(Lit::Int(v)) => {
                    return Err(TypeError::new(
                        "E0204",
                        format!("shift amount {v} does not fit in {base_ty}"),
                    )
                    .at(1));
                }
                _ => Expr::cast(base_ty, b.expr.clone()),
            };
            return Ok(Typed::of(Expr::binary(op, base, amount)));
        }
        _ => {}
    }
    let (ea, eb) = match_types(a, b, sym)?;
    let ty = ea.ty();
    match op {
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor if ty.is_float() => {
            return Err(TypeError::new(
                "E0207",
                format!("`{sym}` needs integer or bool operands, found {ty}"),
            )
            .at(if a.ty().is_float() { 0 } else { 1 }));
        }
        BinOp::Add
        | BinOp::Sub
        | BinOp::Mul
        | BinOp::Div
        | BinOp::Mod
        | BinOp::Min
        | BinOp::Max
        | BinOp::Lt
        | BinOp::Le
        | BinOp::Gt
        | BinOp::Ge
            if ty.is_bool() =>
        {
            return Err(TypeError::new(
                "E0202",
                format!("cannot apply `{sym}` to bool operands"),
            ));
        }
        _ => {}
    }
    Ok(Typed::of(Expr::binary(op, ea, eb)))
}

/// A unary operator with Halide's typing.
pub fn unary(op: UnaryOp, a: &Typed) -> TResult<Typed> {
    match (op, a.lit) {
        (UnaryOp::Neg, Some(Lit::Int(v))) => return Ok(Typed::int_lit(-v)),
        (UnaryOp::Neg, Some(Lit::Float(v))) => return Ok(Typed::float_lit(-v)),
        _ => {}
    }
    let ty = a.ty();
    match op {
        UnaryOp::Neg if ty.is_bool() => {
            Err(TypeError::new("E0202", "cannot negate a bool; use `!`"))
        }
        UnaryOp::Not if !ty.is_bool() || a.lit.is_some() => Err(TypeError::new(
            "E0202",
            format!("`!` needs a bool operand, found {ty}"),
        )
        .note("for a bitwise complement use `~`")),
        UnaryOp::BitNot if !ty.is_integer() => Err(TypeError::new(
            "E0207",
            format!("`~` needs an integer operand, found {ty}"),
        )),
        _ => {
            let value = a.clone().finish()?;
            Ok(Typed::of(Expr::unary(op, value)))
        }
    }
}

/// Converts to f32 for the float-only math functions (integers are
/// converted, as Halide does).
fn to_float(t: &Typed, name: &str, i: usize) -> TResult<Expr> {
    if t.ty().is_bool() {
        return Err(TypeError::new("E0202", format!("`{name}` needs a number, found bool")).at(i));
    }
    coerce(t, Type::F32)
}

fn arity(name: &str, args: &[Typed], n: usize) -> TResult<()> {
    if args.len() != n {
        return Err(TypeError::new(
            "E0201",
            format!(
                "`{name}` takes {n} argument{}, but {} {} given",
                if n == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { "was" } else { "were" }
            ),
        ));
    }
    Ok(())
}

/// Joins several operands to one type (left to right).
fn join_all(args: &[Typed], what: &str) -> TResult<(Vec<Expr>, Type)> {
    let mut acc = args[0].clone();
    for (i, b) in args.iter().enumerate().skip(1) {
        let (ea, _) = match_types(&acc, b, what)
            .map_err(|e| if e.arg == Some(1) { e.at(i) } else { e.at(0) })?;
        acc = Typed {
            expr: ea.clone(),
            lit: if acc.lit.is_some() && b.lit.is_some() {
                acc.lit
            } else {
                None
            },
        };
        if acc.lit.is_some() {
            // Two literals: keep the wider kind.
            if b.ty().is_float() {
                acc = b.clone();
            }
        }
    }
    let ty = if acc.lit.is_some() {
        if args.iter().any(|a| a.ty().is_float()) {
            Type::F32
        } else {
            Type::I32
        }
    } else {
        acc.ty()
    };
    let exprs = args
        .iter()
        .enumerate()
        .map(|(i, a)| coerce(a, ty).map_err(|e| e.at(i)))
        .collect::<TResult<Vec<_>>>()?;
    Ok((exprs, ty))
}

/// The builtin functions and casts, by name. `None` when `name` is not one.
pub fn builtin(name: &str, args: &[Typed]) -> Option<TResult<Typed>> {
    builtin_inner(name, args)
}

fn cast_target(name: &str) -> Option<(Type, bool)> {
    if let Some(rest) = name.strip_prefix("sat_") {
        let ty = Type::from_name(rest)?;
        return (!ty.is_bool()).then_some((ty, true));
    }
    let ty = Type::from_name(name)?;
    (!ty.is_bool()).then_some((ty, false))
}

fn builtin_inner(name: &str, args: &[Typed]) -> Option<TResult<Typed>> {
    if let Some((ty, saturating)) = cast_target(name) {
        return Some((|| {
            arity(name, args, 1)?;
            let a = &args[0];
            if a.ty().is_bool() {
                return Ok(Typed::of(Expr::select(
                    a.expr.clone(),
                    Expr::constant(ty, 1.0),
                    Expr::constant(ty, 0.0),
                )));
            }
            Ok(Typed::of(match (a.lit, saturating) {
                (Some(Lit::Int(v)), false) => Expr::int(ty, v),
                (Some(Lit::Int(v)), true) => {
                    Expr::int(ty, (v as f64).clamp(ty.min_value(), ty.max_value()) as i64)
                }
                (_, false) => Expr::cast(ty, a.expr.clone()),
                (_, true) => {
                    if a.ty() == ty {
                        a.expr.clone()
                    } else {
                        Expr::saturating_cast(ty, a.expr.clone())
                    }
                }
            }))
        })());
    }
    let float1 = |intr: Intrinsic| -> TResult<Typed> {
        arity(name, args, 1)?;
        let a = to_float(&args[0], name, 0)?;
        Ok(Typed::of(Expr::intrinsic(Type::F32, intr, vec![a])))
    };
    let float2 = |intr: Intrinsic| -> TResult<Typed> {
        arity(name, args, 2)?;
        let a = to_float(&args[0], name, 0)?;
        let b = to_float(&args[1], name, 1)?;
        Ok(Typed::of(Expr::intrinsic(Type::F32, intr, vec![a, b])))
    };
    Some(match name {
        "sqrt" => float1(Intrinsic::Sqrt),
        "exp" => float1(Intrinsic::Exp),
        "log" => float1(Intrinsic::Log),
        "sin" => float1(Intrinsic::Sin),
        "cos" => float1(Intrinsic::Cos),
        "tan" => float1(Intrinsic::Tan),
        "floor" => float1(Intrinsic::Floor),
        "ceil" => float1(Intrinsic::Ceil),
        "round" => float1(Intrinsic::Round),
        "trunc" => float1(Intrinsic::Trunc),
        "pow" => float2(Intrinsic::Pow),
        "atan2" => float2(Intrinsic::Atan2),
        "is_nan" => (|| {
            arity(name, args, 1)?;
            let a = to_float(&args[0], name, 0)?;
            Ok(Typed::of(Expr::intrinsic(
                Type::BOOL,
                Intrinsic::IsNan,
                vec![a],
            )))
        })(),
        "select" => (|| {
            arity(name, args, 3)?;
            let c = &args[0];
            if !c.ty().is_bool() || c.lit.is_some() {
                return Err(TypeError::new(
                    "E0203",
                    format!("the condition of `select` must be bool, found {}", c.ty()),
                )
                .at(0)
                .note("compare it with something, e.g. `c != 0`"));
            }
            let (a, b) = match_types(&args[1], &args[2], "select").map_err(|e| match e.arg {
                Some(i) => e.at(i + 1),
                None => e,
            })?;
            Ok(Typed::of(Expr::select(c.expr.clone(), a, b)))
        })(),
        "min" | "max" => (|| {
            if args.len() < 2 {
                return Err(TypeError::new(
                    "E0201",
                    format!(
                        "`{name}` takes at least 2 arguments, but {} {} given",
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" }
                    ),
                )
                .note(format!(
                    "`{name}` of a window view, e.g. `{name}(f[x-1:3])`, takes one"
                )));
            }
            let op = if name == "min" {
                BinOp::Min
            } else {
                BinOp::Max
            };
            let mut acc = args[0].clone();
            for (i, b) in args.iter().enumerate().skip(1) {
                acc = binary(op, &acc, b).map_err(|e| match e.arg {
                    Some(1) => e.at(i),
                    Some(_) => e,
                    None => e,
                })?;
            }
            // min/max of literals is not folded; give it its default type.
            if acc.lit.is_some() {
                acc = Typed::of(acc.finish()?);
            }
            Ok(acc)
        })(),
        "clamp" => (|| {
            arity(name, args, 3)?;
            let (exprs, _) = join_all(args, "clamp")?;
            Ok(Typed::of(Expr::clamp(
                exprs[0].clone(),
                exprs[1].clone(),
                exprs[2].clone(),
            )))
        })(),
        "abs" => (|| {
            arity(name, args, 1)?;
            let a = args[0].clone();
            if a.ty().is_bool() {
                return Err(TypeError::new("E0202", "`abs` needs a number, found bool").at(0));
            }
            if let Some(Lit::Int(v)) = a.lit {
                return Ok(Typed::int_lit(v.abs()));
            }
            if let Some(Lit::Float(v)) = a.lit {
                return Ok(Typed::float_lit(v.abs()));
            }
            let ty = a.ty();
            let out = if ty.is_int() {
                ty.with_kind(TypeKind::UInt)
            } else {
                ty
            };
            Ok(Typed::of(Expr::intrinsic(
                out,
                Intrinsic::Abs,
                vec![a.expr],
            )))
        })(),
        "absd" => (|| {
            arity(name, args, 2)?;
            let (a, b) = match_types(&args[0], &args[1], "absd")?;
            let ty = a.ty();
            if ty.is_bool() {
                return Err(TypeError::new("E0202", "`absd` needs numbers, found bool"));
            }
            let out = if ty.is_int() {
                ty.with_kind(TypeKind::UInt)
            } else {
                ty
            };
            Ok(Typed::of(Expr::intrinsic(out, Intrinsic::Absd, vec![a, b])))
        })(),
        "lerp" => (|| {
            arity(name, args, 3)?;
            let (a, b) = match_types(&args[0], &args[1], "lerp")?;
            if a.ty().is_bool() {
                return Err(TypeError::new("E0202", "`lerp` needs numbers, found bool"));
            }
            let w = &args[2];
            let weight = match w.lit {
                Some(Lit::Float(v)) => Expr::f32(v),
                Some(Lit::Int(_)) if a.ty().is_uint() => coerce(w, a.ty()).map_err(|e| e.at(2))?,
                Some(Lit::Int(v)) => Expr::f32(v as f64),
                None if w.ty().is_float() || w.ty().is_uint() => w.expr.clone(),
                None => {
                    return Err(TypeError::new(
                        "E0202",
                        format!(
                            "the weight of `lerp` must be f32 or an unsigned integer, found {}",
                            w.ty()
                        ),
                    )
                    .at(2));
                }
            };
            Ok(Typed::of(Expr::intrinsic(
                a.ty(),
                Intrinsic::Lerp,
                vec![a, b, weight],
            )))
        })(),
        _ => return None,
    })
}
