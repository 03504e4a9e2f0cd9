//! Expressions: one enum lists every node kind, for the algorithm and for
//! lowered code alike (as in Halide). `Load`, `Ramp`, `Broadcast` and
//! `Shuffle` appear only after lowering; `Call` to funcs and inputs only
//! before flattening. The verifier (`crate::verify`) checks which kinds
//! may appear at each stage.
//!
//! Expressions are immutable trees shared through `Arc`, so cloning is
//! cheap and passes rebuild only what they change.

use crate::types::Type;
use std::fmt;
use std::sync::Arc;

/// A shared, immutable expression node with its type.
#[derive(Clone, PartialEq)]
pub struct Expr(Arc<ExprNode>);

#[derive(Clone, Debug, PartialEq)]
pub struct ExprNode {
    pub ty: Type,
    pub kind: ExprKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Euclidean (floor for positive divisors) on integers; x / 0 == 0.
    Div,
    /// Euclidean: never negative; x % 0 == 0.
    Mod,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    /// Shifts by a negative amount shift the other way (Halide semantics).
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Logical and/or on booleans.
    And,
    Or,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }
    /// The operator as written in the language (`min`/`max` print as calls).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Arithmetic negation (wrapping on integers).
    Neg,
    /// Logical not of a bool.
    Not,
    /// Bitwise complement of an integer.
    BitNot,
}

/// Built-in functions. Their typing rules live in the front end; their
/// semantics in the reference interpreter (`argent-interp`), which every
/// backend must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// `abs(x)`: for signed integers returns the unsigned type of the same width.
    Abs,
    /// `absd(a, b)`: |a - b| without overflow; unsigned result for integers.
    Absd,
    Sqrt,
    Exp,
    Log,
    Pow,
    Sin,
    Cos,
    Tan,
    Atan2,
    Floor,
    Ceil,
    /// Round half to even, as Halide does.
    Round,
    Trunc,
    /// `lerp(a, b, w)`: Halide's lerp. Integer weights are scaled to the
    /// full range of their type; float weights are used as is.
    Lerp,
    /// `likely(e)` == e; tells loop partitioning which side of a
    /// min/max/select is the steady state (boundary conditions use it).
    Likely,
    /// `is_nan(f)`.
    IsNan,
    /// Reinterpret the bits of the argument as the call's type (same width).
    /// Used by the expansions of transcendental functions in `crate::math`.
    Reinterpret,
}

impl Intrinsic {
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Abs => "abs",
            Intrinsic::Absd => "absd",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Exp => "exp",
            Intrinsic::Log => "log",
            Intrinsic::Pow => "pow",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Tan => "tan",
            Intrinsic::Atan2 => "atan2",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Round => "round",
            Intrinsic::Trunc => "trunc",
            Intrinsic::Lerp => "lerp",
            Intrinsic::Likely => "likely",
            Intrinsic::IsNan => "is_nan",
            Intrinsic::Reinterpret => "reinterpret",
        }
    }

    pub fn from_name(name: &str) -> Option<Intrinsic> {
        use Intrinsic::*;
        [
            Abs,
            Absd,
            Sqrt,
            Exp,
            Log,
            Pow,
            Sin,
            Cos,
            Tan,
            Atan2,
            Floor,
            Ceil,
            Round,
            Trunc,
            Lerp,
            Likely,
            IsNan,
            Reinterpret,
        ]
        .into_iter()
        .find(|i| i.name() == name)
    }
}

/// What a `Call` node calls.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CallTarget {
    /// Another stage of the pipeline, by name.
    Func(String),
    /// An input image, by name.
    Input(String),
    Intrinsic(Intrinsic),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// Integer (and bool) constant; the value is already wrapped to the type.
    IntImm(i64),
    /// Float constant (stored as f64, rounded to the type when evaluated).
    FloatImm(f64),
    /// A named scalar: a pure variable, reduction variable (`r.x`), scalar
    /// parameter, let-bound name, loop variable, or a buffer field such as
    /// `in.min.0`, `in.extent.1`, `in.stride.1` (see [`buffer_field`]).
    Var(String),
    /// Conversion. `saturating` clamps to the target range (and floats to
    /// integers round toward zero after clamping; NaN becomes 0).
    Cast {
        value: Expr,
        saturating: bool,
    },
    Unary {
        op: UnaryOp,
        value: Expr,
    },
    Binary {
        op: BinOp,
        a: Expr,
        b: Expr,
    },
    Select {
        cond: Expr,
        then: Expr,
        otherwise: Expr,
    },
    Call {
        target: CallTarget,
        args: Vec<Expr>,
    },
    Let {
        name: String,
        value: Expr,
        body: Expr,
    },
    /// Lowered only: read `buffer[index]` (flat, element units).
    Load {
        buffer: String,
        index: Expr,
    },
    /// Lowered only: `base + stride * [0, 1, .., lanes-1]`.
    Ramp {
        base: Expr,
        stride: Expr,
        lanes: u16,
    },
    /// Lowered only: one scalar in every lane.
    Broadcast {
        value: Expr,
        lanes: u16,
    },
    /// Lowered only: concatenate `vectors`, then pick lanes by `indices`.
    Shuffle {
        vectors: Vec<Expr>,
        indices: Vec<u32>,
    },
}

/// The name of a buffer field variable, e.g. `buffer_field("in", "extent", 1)`
/// is `in.extent.1`. Inputs, outputs and allocations are described by
/// `min`, `extent` and `stride` per dimension.
pub fn buffer_field(buffer: &str, field: &str, dim: usize) -> String {
    format!("{buffer}.{field}.{dim}")
}

/// The `i32` constants that [`Expr::int`] hands out shared rather than
/// allocating each time: the simplifier builds small coefficients and
/// offsets by the thousand, and nodes are immutable.
const SHARED_I32_RANGE: std::ops::RangeInclusive<i64> = -64..=1024;

thread_local! {
    static SHARED_I32: std::cell::RefCell<Vec<Option<Expr>>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// `false` and `true`, shared likewise.
    static SHARED_BOOL: [Expr; 2] = [
        Expr::new(Type::BOOL, ExprKind::IntImm(0)),
        Expr::new(Type::BOOL, ExprKind::IntImm(1)),
    ];
}

impl Expr {
    pub fn new(ty: Type, kind: ExprKind) -> Expr {
        Expr(Arc::new(ExprNode { ty, kind }))
    }
    pub fn ty(&self) -> Type {
        self.0.ty
    }
    pub fn kind(&self) -> &ExprKind {
        &self.0.kind
    }
    pub fn node(&self) -> &ExprNode {
        &self.0
    }
    /// Whether two handles point at the same node (cheap identity test used
    /// by mutators to avoid rebuilding unchanged trees).
    pub fn same_as(&self, other: &Expr) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    // ---- constants ------------------------------------------------------

    /// Integer constant of any integer or bool type; wraps to the type.
    pub fn int(ty: Type, value: i64) -> Expr {
        if ty.is_float() {
            return Expr::float(ty, value as f64);
        }
        let value = ty.element().wrap(value);
        if ty == Type::I32 && SHARED_I32_RANGE.contains(&value) {
            return SHARED_I32.with(|shared| {
                let slot = (value - SHARED_I32_RANGE.start()) as usize;
                let mut shared = shared.borrow_mut();
                if shared.is_empty() {
                    shared.resize(SHARED_I32_RANGE.clone().count(), None);
                }
                shared[slot]
                    .get_or_insert_with(|| Expr::new(ty, ExprKind::IntImm(value)))
                    .clone()
            });
        }
        Expr::new(ty, ExprKind::IntImm(value))
    }
    pub fn i32(value: i64) -> Expr {
        Expr::int(Type::I32, value)
    }
    pub fn bool(value: bool) -> Expr {
        SHARED_BOOL.with(|shared| shared[value as usize].clone())
    }
    pub fn f32(value: f64) -> Expr {
        Expr::float(Type::F32, value)
    }
    pub fn float(ty: Type, value: f64) -> Expr {
        Expr::new(ty, ExprKind::FloatImm(value))
    }
    /// A constant of any type: integer types wrap, floats keep the value.
    pub fn constant(ty: Type, value: f64) -> Expr {
        if ty.is_float() {
            Expr::float(ty, value)
        } else {
            Expr::int(ty, value as i64)
        }
    }

    pub fn var(ty: Type, name: impl Into<String>) -> Expr {
        Expr::new(ty, ExprKind::Var(name.into()))
    }
    pub fn var_i32(name: impl Into<String>) -> Expr {
        Expr::var(Type::I32, name)
    }

    // ---- operators --------------------------------------------------------

    /// Binary operation; operands must already have equal types (the front
    /// end inserts the casts that Halide's type-coercion rules call for).
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        let ty = if op.is_comparison() || op.is_logical() {
            Type::BOOL.with_lanes(a.ty().lanes)
        } else {
            a.ty()
        };
        Expr::new(ty, ExprKind::Binary { op, a, b })
    }
    pub fn add(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Add, a, b)
    }
    pub fn sub(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Sub, a, b)
    }
    pub fn mul(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Mul, a, b)
    }
    pub fn div(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Div, a, b)
    }
    pub fn modulo(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Mod, a, b)
    }
    pub fn min(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Min, a, b)
    }
    pub fn max(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Max, a, b)
    }
    pub fn clamp(e: Expr, lo: Expr, hi: Expr) -> Expr {
        Expr::max(Expr::min(e, hi), lo)
    }
    pub fn eq(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Eq, a, b)
    }
    pub fn lt(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Lt, a, b)
    }
    pub fn le(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Le, a, b)
    }
    pub fn and(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::And, a, b)
    }
    pub fn or(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Or, a, b)
    }
    pub fn unary(op: UnaryOp, value: Expr) -> Expr {
        Expr::new(value.ty(), ExprKind::Unary { op, value })
    }
    pub fn not(value: Expr) -> Expr {
        Expr::unary(UnaryOp::Not, value)
    }
    pub fn cast(ty: Type, value: Expr) -> Expr {
        let ty = ty.with_lanes(value.ty().lanes);
        if value.ty() == ty {
            return value;
        }
        Expr::new(
            ty,
            ExprKind::Cast {
                value,
                saturating: false,
            },
        )
    }
    pub fn saturating_cast(ty: Type, value: Expr) -> Expr {
        let ty = ty.with_lanes(value.ty().lanes);
        Expr::new(
            ty,
            ExprKind::Cast {
                value,
                saturating: true,
            },
        )
    }
    pub fn select(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
        Expr::new(
            then.ty(),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            },
        )
    }
    pub fn call(ty: Type, target: CallTarget, args: Vec<Expr>) -> Expr {
        Expr::new(ty, ExprKind::Call { target, args })
    }
    pub fn call_func(ty: Type, name: impl Into<String>, args: Vec<Expr>) -> Expr {
        Expr::call(ty, CallTarget::Func(name.into()), args)
    }
    pub fn call_input(ty: Type, name: impl Into<String>, args: Vec<Expr>) -> Expr {
        Expr::call(ty, CallTarget::Input(name.into()), args)
    }
    pub fn intrinsic(ty: Type, intrinsic: Intrinsic, args: Vec<Expr>) -> Expr {
        Expr::call(ty, CallTarget::Intrinsic(intrinsic), args)
    }
    pub fn likely(e: Expr) -> Expr {
        Expr::intrinsic(e.ty(), Intrinsic::Likely, vec![e])
    }
    pub fn let_in(name: impl Into<String>, value: Expr, body: Expr) -> Expr {
        Expr::new(
            body.ty(),
            ExprKind::Let {
                name: name.into(),
                value,
                body,
            },
        )
    }
    pub fn load(ty: Type, buffer: impl Into<String>, index: Expr) -> Expr {
        let ty = ty.with_lanes(index.ty().lanes);
        Expr::new(
            ty,
            ExprKind::Load {
                buffer: buffer.into(),
                index,
            },
        )
    }
    pub fn ramp(base: Expr, stride: Expr, lanes: u16) -> Expr {
        let ty = base.ty().with_lanes(lanes);
        Expr::new(
            ty,
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            },
        )
    }
    pub fn broadcast(value: Expr, lanes: u16) -> Expr {
        if lanes == 1 {
            return value;
        }
        let ty = value.ty().with_lanes(lanes);
        Expr::new(ty, ExprKind::Broadcast { value, lanes })
    }
    pub fn shuffle(vectors: Vec<Expr>, indices: Vec<u32>) -> Expr {
        let ty = vectors[0].ty().with_lanes(indices.len() as u16);
        Expr::new(ty, ExprKind::Shuffle { vectors, indices })
    }

    // ---- queries ------------------------------------------------------------

    pub fn as_int(&self) -> Option<i64> {
        match self.kind() {
            ExprKind::IntImm(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_float(&self) -> Option<f64> {
        match self.kind() {
            ExprKind::FloatImm(v) => Some(*v),
            _ => None,
        }
    }
    pub fn is_const(&self) -> bool {
        matches!(self.kind(), ExprKind::IntImm(_) | ExprKind::FloatImm(_))
    }
    pub fn as_var(&self) -> Option<&str> {
        match self.kind() {
            ExprKind::Var(n) => Some(n),
            _ => None,
        }
    }
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

macro_rules! impl_op {
    ($trait:ident, $method:ident, $op:expr) => {
        impl std::ops::$trait for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::binary($op, self, rhs)
            }
        }
        impl std::ops::$trait<i64> for Expr {
            type Output = Expr;
            fn $method(self, rhs: i64) -> Expr {
                let ty = self.ty();
                Expr::binary($op, self, Expr::constant(ty, rhs as f64))
            }
        }
    };
}
impl_op!(Add, add, BinOp::Add);
impl_op!(Sub, sub, BinOp::Sub);
impl_op!(Mul, mul, BinOp::Mul);
impl_op!(Div, div, BinOp::Div);
impl_op!(Rem, rem, BinOp::Mod);
