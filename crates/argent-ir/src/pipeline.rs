//! The algorithm: inputs, parameters, funcs (stages) and outputs. This is
//! what the front end produces, what the reference interpreter evaluates,
//! and what lowering starts from. It says nothing about loop order or
//! storage: that is the schedule's job (`crate::schedule`).

use crate::Span;
use crate::expr::Expr;
use crate::schedule::Schedule;
use crate::types::Type;

/// A typed input image of 1 to 4 dimensions with named dimensions.
/// Memory layout (planar or interleaved) is not part of the algorithm: it
/// comes with the buffer at run time through per-dimension strides.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    pub name: String,
    pub ty: Type,
    pub dims: Vec<String>,
    pub span: Span,
}

/// A scalar parameter. The value may change between runs without
/// recompiling; `range`, when given, is checked before a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: Type,
    pub default: Option<f64>,
    pub range: Option<(f64, f64)>,
    pub span: Span,
}

/// One dimension of a reduction domain: `name` ranges over
/// `min .. min + extent - 1`.
#[derive(Clone, Debug, PartialEq)]
pub struct RVar {
    /// Full name as it appears in expressions, e.g. `r.x`.
    pub name: String,
    pub min: Expr,
    pub extent: Expr,
}

/// A reduction domain: the innermost dimension is `dims[0]`, iterated
/// lexicographically with `dims[0]` fastest, restricted by `predicate`.
#[derive(Clone, Debug, PartialEq)]
pub struct RDom {
    pub name: String,
    pub dims: Vec<RVar>,
    pub predicate: Option<Expr>,
    pub span: Span,
}

/// An update definition `f(args) = value`, evaluated for every point of
/// `rdom` (or once per pure point when there is none), in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// Where to write: any integer expressions of the func's pure variables
    /// and the rdom's variables (scatter when not plain variables).
    pub args: Vec<Expr>,
    pub value: Expr,
    pub rdom: Option<RDom>,
    pub span: Span,
}

/// Why a func exists; lowering and tooling use it (e.g. boundary
/// conditions are partitioned away from the steady state).
#[derive(Clone, Debug, PartialEq)]
pub enum FuncOrigin {
    /// Written by the user.
    User,
    /// `repeat_edge(in)` and friends, wrapping `input`.
    Boundary { input: String, condition: String },
    /// A ParaC border-rule block over `input` with the declared width.
    BorderRule { input: String, width: Vec<i64> },
    /// Made by the front end for an inline reduction or window operator.
    Generated { from: String },
    /// The intermediate that `rfactor` splits off an update of `from`.
    Rfactor { from: String },
}

/// The name of the intermediate that `rfactor` of an update of `func`
/// makes (the front end and lowering must agree on it: schedules name it).
pub fn rfactor_intermediate(func: &str) -> String {
    format!("{func}_intm")
}

/// The func whose rfactor intermediate is called `name`, if `name` has
/// the shape of one.
pub fn rfactor_source(name: &str) -> Option<&str> {
    name.strip_suffix("_intm")
}

/// A stage: a pure definition over an infinite integer domain plus zero or
/// more update definitions.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: String,
    pub ty: Type,
    /// Names of the pure variables, innermost (fastest varying) first.
    pub args: Vec<String>,
    /// The pure definition, an expression of `args`.
    pub value: Expr,
    pub updates: Vec<Update>,
    pub origin: FuncOrigin,
    pub span: Span,
}

/// A whole program: the algorithm plus its schedule.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Pipeline {
    pub inputs: Vec<Input>,
    pub params: Vec<Param>,
    /// Every stage, in an order where callees come before callers.
    pub funcs: Vec<Func>,
    /// Names of output funcs, in declaration order.
    pub outputs: Vec<String>,
    pub schedule: Schedule,
}

impl Pipeline {
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs.iter().find(|f| f.name == name)
    }
    pub fn func_mut(&mut self, name: &str) -> Option<&mut Func> {
        self.funcs.iter_mut().find(|f| f.name == name)
    }
    pub fn input(&self, name: &str) -> Option<&Input> {
        self.inputs.iter().find(|i| i.name == name)
    }
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}
