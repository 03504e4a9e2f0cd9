//! Build pipelines from Rust, without text, under the same typing rules
//! as the language (the two share [`crate::types`]).
//!
//! ```
//! use argent_ir::Type;
//! use argent_lang::builder::PipelineBuilder;
//!
//! let mut p = PipelineBuilder::new();
//! let input = p.input("in", Type::U16, &["x", "y"]);
//! let clamped = p.repeat_edge("clamped", &input);
//! let (x, y) = (p.var("x"), p.var("y"));
//! let blur_x = p
//!     .func("blur_x", &["x", "y"],
//!         (clamped.at([&x - 1, y.clone()]) + clamped.at([&x, &y]) + clamped.at([&x + 1, y.clone()])) / 3)
//!     .unwrap();
//! p.output(&blur_x);
//! let pipeline = p.build().unwrap();
//! assert_eq!(pipeline.funcs.len(), 2);
//! ```
//!
//! Type errors do not panic: a [`Value`] carries the error until it is
//! used in a definition, which then returns it as [`Diagnostics`].

use crate::diag::{Diagnostic, Diagnostics};
use crate::types::{self, TypeError, Typed};
use argent_ir::{
    BinOp, Expr, Func, FuncOrigin, Input, Param, Pipeline, RDom, RVar, Span, Type, UnaryOp, Update,
    buffer_field,
};

/// An expression being built: a typed value or the first error in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Value(Result<Typed, TypeError>);

impl Value {
    /// Wraps an already typed IR expression.
    pub fn from_expr(e: Expr) -> Value {
        Value(Ok(Typed::of(e)))
    }
    /// The IR expression (an integer literal gets type i32), or the error.
    pub fn expr(&self) -> Result<Expr, Diagnostics> {
        match &self.0 {
            Ok(t) => t.clone().finish().map_err(to_diags),
            Err(e) => Err(to_diags(e.clone())),
        }
    }
    /// The value's type, if it has no error.
    pub fn ty(&self) -> Option<Type> {
        self.0.as_ref().ok().map(Typed::ty)
    }
    fn binary(self, op: BinOp, other: Value) -> Value {
        match (self.0, other.0) {
            (Ok(a), Ok(b)) => Value(types::binary(op, &a, &b)),
            (Err(e), _) | (_, Err(e)) => Value(Err(e)),
        }
    }
    /// `self < other`.
    pub fn lt(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Lt, other.into())
    }
    /// `self <= other`.
    pub fn le(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Le, other.into())
    }
    /// `self > other`.
    pub fn gt(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Gt, other.into())
    }
    /// `self >= other`.
    pub fn ge(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Ge, other.into())
    }
    /// `self == other`.
    pub fn eq_(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Eq, other.into())
    }
    /// `self != other`.
    pub fn ne_(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Ne, other.into())
    }
    /// `self && other`.
    pub fn and(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::And, other.into())
    }
    /// `self || other`.
    pub fn or(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Or, other.into())
    }
    /// `self << other`.
    pub fn shift_left(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Shl, other.into())
    }
    /// `self >> other`.
    pub fn shift_right(self, other: impl Into<Value>) -> Value {
        self.binary(BinOp::Shr, other.into())
    }
    /// Logical not.
    pub fn logical_not(self) -> Value {
        Value(self.0.and_then(|t| types::unary(UnaryOp::Not, &t)))
    }
}

fn to_diags(e: TypeError) -> Diagnostics {
    let mut d = Diagnostic::error(e.code, Span::DUMMY, e.message);
    if let Some(n) = e.note {
        d.notes.push(n);
    }
    Diagnostics(vec![d])
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value(Ok(Typed::int_lit(v as i64)))
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value(Ok(Typed::float_lit(v as f64)))
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value(Ok(Typed::float_lit(v)))
    }
}
impl From<&Value> for Value {
    fn from(v: &Value) -> Value {
        v.clone()
    }
}

macro_rules! value_op {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<T: Into<Value>> std::ops::$trait<T> for Value {
            type Output = Value;
            fn $method(self, rhs: T) -> Value {
                self.binary($op, rhs.into())
            }
        }
        impl<T: Into<Value>> std::ops::$trait<T> for &Value {
            type Output = Value;
            fn $method(self, rhs: T) -> Value {
                self.clone().binary($op, rhs.into())
            }
        }
        impl std::ops::$trait<Value> for i32 {
            type Output = Value;
            fn $method(self, rhs: Value) -> Value {
                Value::from(self).binary($op, rhs)
            }
        }
        impl std::ops::$trait<Value> for f32 {
            type Output = Value;
            fn $method(self, rhs: Value) -> Value {
                Value::from(self).binary($op, rhs)
            }
        }
    };
}
value_op!(Add, add, BinOp::Add);
value_op!(Sub, sub, BinOp::Sub);
value_op!(Mul, mul, BinOp::Mul);
value_op!(Div, div, BinOp::Div);
value_op!(Rem, rem, BinOp::Mod);
value_op!(BitAnd, bitand, BinOp::BitAnd);
value_op!(BitOr, bitor, BinOp::BitOr);
value_op!(BitXor, bitxor, BinOp::BitXor);

impl std::ops::Neg for Value {
    type Output = Value;
    fn neg(self) -> Value {
        Value(self.0.and_then(|t| types::unary(UnaryOp::Neg, &t)))
    }
}

/// Calls a builtin by its language name (`"clamp"`, `"sqrt"`, `"u8"`,
/// `"sat_u8"`, `"select"`, ...), with the language's typing.
pub fn builtin(name: &str, args: impl IntoIterator<Item = Value>) -> Value {
    let mut typed = Vec::new();
    for a in args {
        match a.0 {
            Ok(t) => typed.push(t),
            Err(e) => return Value(Err(e)),
        }
    }
    match types::builtin(name, &typed) {
        Some(r) => Value(r),
        None => Value(Err(TypeError::new(
            "E0102",
            format!("unknown function `{name}`"),
        ))),
    }
}

/// `select(cond, then, otherwise)`.
pub fn select(
    cond: impl Into<Value>,
    then: impl Into<Value>,
    otherwise: impl Into<Value>,
) -> Value {
    builtin("select", [cond.into(), then.into(), otherwise.into()])
}
/// `min(a, b)`.
pub fn min(a: impl Into<Value>, b: impl Into<Value>) -> Value {
    builtin("min", [a.into(), b.into()])
}
/// `max(a, b)`.
pub fn max(a: impl Into<Value>, b: impl Into<Value>) -> Value {
    builtin("max", [a.into(), b.into()])
}
/// `clamp(e, lo, hi)`.
pub fn clamp(e: impl Into<Value>, lo: impl Into<Value>, hi: impl Into<Value>) -> Value {
    builtin("clamp", [e.into(), lo.into(), hi.into()])
}
/// A plain cast, `u8(e)` and friends.
pub fn cast(ty: Type, e: impl Into<Value>) -> Value {
    builtin(&ty.to_string(), [e.into()])
}
/// A saturating cast, `sat_u8(e)` and friends.
pub fn sat_cast(ty: Type, e: impl Into<Value>) -> Value {
    builtin(&format!("sat_{ty}"), [e.into()])
}

/// An input image declared in the builder.
#[derive(Clone, Debug)]
pub struct ImageRef {
    pub name: String,
    pub ty: Type,
    pub dims: Vec<String>,
}

/// A func defined in the builder.
#[derive(Clone, Debug)]
pub struct FuncRef {
    pub name: String,
    pub ty: Type,
    pub arity: usize,
}

/// A reduction domain declared in the builder.
#[derive(Clone, Debug)]
pub struct RDomRef {
    pub rdom: RDom,
}

fn coords(callee: &str, arity: usize, args: Vec<Value>) -> Result<Vec<Expr>, TypeError> {
    if args.len() != arity {
        return Err(TypeError::new(
            "E0201",
            format!(
                "`{callee}` has {arity} dimensions, but {} coordinates were given",
                args.len()
            ),
        ));
    }
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let t = a.0?;
            if !t.ty().is_integer() {
                return Err(TypeError::new(
                    "E0205",
                    format!(
                        "coordinate {i} of `{callee}` must be an integer, found {}",
                        t.ty()
                    ),
                ));
            }
            types::coerce(&t, Type::I32)
        })
        .collect()
}

impl ImageRef {
    /// Reads the image at integer coordinates.
    pub fn at<V: Into<Value>>(&self, args: impl IntoIterator<Item = V>) -> Value {
        let args: Vec<Value> = args.into_iter().map(Into::into).collect();
        Value(
            coords(&self.name, self.dims.len(), args)
                .map(|c| Typed::of(Expr::call_input(self.ty, self.name.clone(), c))),
        )
    }
    /// The extent of dimension `d` (`img.extent(d)`).
    pub fn extent(&self, d: usize) -> Value {
        Value::from_expr(Expr::var_i32(buffer_field(&self.name, "extent", d)))
    }
    /// The first coordinate of dimension `d` (`img.min(d)`).
    pub fn min(&self, d: usize) -> Value {
        Value::from_expr(Expr::var_i32(buffer_field(&self.name, "min", d)))
    }
    /// `img.width`.
    pub fn width(&self) -> Value {
        self.extent(0)
    }
    /// `img.height`.
    pub fn height(&self) -> Value {
        self.extent(1)
    }
}

impl FuncRef {
    /// Calls the func at integer coordinates.
    pub fn at<V: Into<Value>>(&self, args: impl IntoIterator<Item = V>) -> Value {
        let args: Vec<Value> = args.into_iter().map(Into::into).collect();
        Value(
            coords(&self.name, self.arity, args)
                .map(|c| Typed::of(Expr::call_func(self.ty, self.name.clone(), c))),
        )
    }
}

impl RDomRef {
    /// The rvar of dimension `d` (0 is `.x`).
    pub fn dim(&self, d: usize) -> Value {
        match self.rdom.dims.get(d) {
            Some(r) => Value::from_expr(Expr::var_i32(r.name.clone())),
            None => Value(Err(TypeError::new(
                "E0106",
                format!("rdom `{}` has no dimension {d}", self.rdom.name),
            ))),
        }
    }
    /// `r.x`.
    pub fn x(&self) -> Value {
        self.dim(0)
    }
    /// `r.y`.
    pub fn y(&self) -> Value {
        self.dim(1)
    }
}

/// Builds a [`Pipeline`] step by step. Definitions must come after what
/// they call, so funcs end up ordered callees first.
#[derive(Default)]
pub struct PipelineBuilder {
    pipeline: Pipeline,
    schedule_source: Option<String>,
    errors: Vec<Diagnostic>,
}

impl PipelineBuilder {
    /// An empty pipeline.
    pub fn new() -> PipelineBuilder {
        PipelineBuilder::default()
    }

    fn taken(&mut self, name: &str) -> bool {
        let taken = self.pipeline.input(name).is_some()
            || self.pipeline.param(name).is_some()
            || self.pipeline.func(name).is_some();
        if taken {
            self.errors.push(Diagnostic::error(
                "E0103",
                Span::DUMMY,
                format!("`{name}` is defined twice"),
            ));
        }
        taken
    }

    /// Declares an input image with named dimensions (innermost first).
    pub fn input(&mut self, name: &str, ty: Type, dims: &[&str]) -> ImageRef {
        let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        if dims.is_empty() || dims.len() > 4 {
            self.errors.push(Diagnostic::error(
                "E0307",
                Span::DUMMY,
                format!(
                    "an input has 1 to 4 dimensions, `{name}` has {}",
                    dims.len()
                ),
            ));
        }
        if !self.taken(name) {
            self.pipeline.inputs.push(Input {
                name: name.to_string(),
                ty,
                dims: dims.clone(),
                span: Span::DUMMY,
            });
        }
        ImageRef {
            name: name.to_string(),
            ty,
            dims,
        }
    }

    /// Declares a scalar parameter.
    pub fn param(
        &mut self,
        name: &str,
        ty: Type,
        default: Option<f64>,
        range: Option<(f64, f64)>,
    ) -> Value {
        if let (Some(d), Some((lo, hi))) = (default, range)
            && (d < lo || d > hi || lo > hi)
        {
            self.errors.push(Diagnostic::error(
                "E0401",
                Span::DUMMY,
                format!("the default value {d} is outside the range {lo} .. {hi}"),
            ));
        }
        if !self.taken(name) {
            self.pipeline.params.push(Param {
                name: name.to_string(),
                ty,
                default,
                range,
                span: Span::DUMMY,
            });
        }
        Value::from_expr(Expr::var(ty, name))
    }

    /// A pure variable (i32).
    pub fn var(&self, name: &str) -> Value {
        Value::from_expr(Expr::var_i32(name))
    }

    /// A reduction domain over half-open ranges `min .. end`.
    pub fn rdom(
        &mut self,
        name: &str,
        ranges: &[(Value, Value)],
        predicate: Option<Value>,
    ) -> RDomRef {
        let mut dims = Vec::new();
        for (i, (min, end)) in ranges.iter().enumerate() {
            match (min.expr(), end.expr()) {
                (Ok(m), Ok(e)) => {
                    let extent = match (e.as_int(), m.as_int()) {
                        (Some(a), Some(b)) => Expr::i32(a - b),
                        _ if m.as_int() == Some(0) => e,
                        _ => Expr::sub(e, m.clone()),
                    };
                    let dim = ["x", "y", "z", "w"].get(i).copied().unwrap_or("v");
                    dims.push(RVar {
                        name: format!("{name}.{dim}"),
                        min: m,
                        extent,
                    });
                }
                (Err(d), _) | (_, Err(d)) => self.errors.extend(d.0),
            }
        }
        let predicate = predicate.and_then(|p| match p.expr() {
            Ok(e) => Some(e),
            Err(d) => {
                self.errors.extend(d.0);
                None
            }
        });
        RDomRef {
            rdom: RDom {
                name: name.to_string(),
                dims,
                predicate,
                span: Span::DUMMY,
            },
        }
    }

    /// A boundary condition func (`repeat_edge`, `constant_exterior`,
    /// `mirror_image`, `mirror_interior`, `repeat_image`) over an input.
    pub fn boundary(
        &mut self,
        name: &str,
        condition: &str,
        input: &ImageRef,
        value: Option<Value>,
    ) -> Result<FuncRef, Diagnostics> {
        let value = match value {
            Some(v) => match &v.0 {
                Ok(t) => Some(types::coerce(t, input.ty).map_err(to_diags)?),
                Err(e) => return Err(to_diags(e.clone())),
            },
            None => None,
        };
        let f = crate::boundary::boundary_func(
            name,
            condition,
            &input.name,
            input.ty,
            &input.dims,
            value,
            Span::DUMMY,
        )
        .ok_or_else(|| {
            Diagnostics(vec![Diagnostic::error(
                "E0102",
                Span::DUMMY,
                format!("unknown boundary condition `{condition}`"),
            )])
        })?;
        self.push_func(f)
    }

    /// `repeat_edge(input)` as a func named `name`.
    pub fn repeat_edge(&mut self, name: &str, input: &ImageRef) -> FuncRef {
        match self.boundary(name, "repeat_edge", input, None) {
            Ok(f) => f,
            Err(d) => {
                self.errors.extend(d.0);
                FuncRef {
                    name: name.to_string(),
                    ty: input.ty,
                    arity: input.dims.len(),
                }
            }
        }
    }

    fn push_func(&mut self, f: Func) -> Result<FuncRef, Diagnostics> {
        if self.taken(&f.name) {
            return Err(Diagnostics(vec![Diagnostic::error(
                "E0103",
                Span::DUMMY,
                format!("`{}` is defined twice", f.name),
            )]));
        }
        let r = FuncRef {
            name: f.name.clone(),
            ty: f.ty,
            arity: f.args.len(),
        };
        self.pipeline.funcs.push(f);
        Ok(r)
    }

    /// A func's pure definition `name(args) = value`.
    pub fn func(
        &mut self,
        name: &str,
        args: &[&str],
        value: impl Into<Value>,
    ) -> Result<FuncRef, Diagnostics> {
        let value = value.into().expr()?;
        self.push_func(Func {
            name: name.to_string(),
            ty: value.ty(),
            args: args.iter().map(|a| a.to_string()).collect(),
            value,
            updates: Vec::new(),
            origin: FuncOrigin::User,
            span: Span::DUMMY,
        })
    }

    /// An update definition `f(args) = value`, over `rdom` if given. The
    /// value must have the func's type (literals adapt).
    pub fn update<V: Into<Value>>(
        &mut self,
        f: &FuncRef,
        args: impl IntoIterator<Item = V>,
        value: impl Into<Value>,
        rdom: Option<&RDomRef>,
    ) -> Result<(), Diagnostics> {
        let args: Vec<Value> = args.into_iter().map(Into::into).collect();
        let args = coords(&f.name, f.arity, args).map_err(to_diags)?;
        let value = match value.into().0 {
            Ok(t) if t.lit.is_some() => types::coerce(&t, f.ty).map_err(to_diags)?,
            Ok(t) if t.ty() == f.ty => t.expr,
            Ok(t) => {
                return Err(Diagnostics(vec![Diagnostic::error(
                    "E0206",
                    Span::DUMMY,
                    format!(
                        "this update produces {}, but `{}` holds {}",
                        t.ty(),
                        f.name,
                        f.ty
                    ),
                )]));
            }
            Err(e) => return Err(to_diags(e)),
        };
        let Some(func) = self.pipeline.func_mut(&f.name) else {
            return Err(Diagnostics(vec![Diagnostic::error(
                "E0102",
                Span::DUMMY,
                format!("unknown func `{}`", f.name),
            )]));
        };
        func.updates.push(Update {
            args,
            value,
            rdom: rdom.map(|r| r.rdom.clone()),
            span: Span::DUMMY,
        });
        Ok(())
    }

    /// Marks a func as an output.
    pub fn output(&mut self, f: &FuncRef) {
        self.pipeline.outputs.push(f.name.clone());
    }

    /// Sets the schedule from a `schedule { ... }` block, checked at build.
    pub fn schedule(&mut self, source: &str) {
        self.schedule_source = Some(source.to_string());
    }

    /// Finishes the pipeline, reporting every error collected.
    pub fn build(mut self) -> Result<Pipeline, Diagnostics> {
        if self.pipeline.outputs.is_empty() {
            self.errors.push(Diagnostic::error(
                "E0108",
                Span::DUMMY,
                "the pipeline has no output",
            ));
        }
        if !self.errors.is_empty() {
            return Err(Diagnostics(self.errors));
        }
        if let Some(src) = &self.schedule_source {
            self.pipeline.schedule = crate::parse_schedule(src, &self.pipeline)?;
        }
        Ok(self.pipeline)
    }
}
