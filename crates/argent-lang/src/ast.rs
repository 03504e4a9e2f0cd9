//! The syntax tree the parser produces: close to the text, with a span on
//! every node. The checker turns it into `argent_ir::Pipeline`.

use argent_ir::Span;

/// A name with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitOr,
    BitXor,
    BitAnd,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
    BitNot,
}

/// One dimension of a window view `f[start : count, index]`.
#[derive(Clone, Debug, PartialEq)]
pub enum WindowDim {
    Index(Expr),
    Range { start: Expr, count: Expr },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Name(String),
    /// `*` in a border rule: any in-range coordinate.
    Star,
    /// `base.field`, e.g. `r.x`, `img.width`, `argmax(e).x`.
    Field {
        base: Box<Expr>,
        field: Ident,
    },
    /// `callee(args)`: funcs, inputs, builtins, casts, `img.extent(d)`.
    Call {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    /// `base[dims]`: a window view.
    Window {
        base: Box<Expr>,
        dims: Vec<WindowDim>,
    },
    /// `[1, 2, 1; 2, 4, 2]`: a constant kernel, rows separated by `;`.
    Kernel(Vec<Vec<Expr>>),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Let {
        name: Ident,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    /// Stands for a part that failed to parse (already reported).
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    /// Height of this tree; bounded so later passes cannot overflow the stack.
    pub depth: u32,
}

/// How an update combines with the current value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Min,
    Max,
}

/// A range `min .. end` (half-open) of an rdom dimension or param range.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeAst {
    pub min: Expr,
    pub end: Expr,
    pub span: Span,
}

/// One coordinate in a border rule's left-hand side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BorderCoord {
    /// `-k`: k pixels before the first index.
    Before(i64),
    /// `+k`: k pixels past the last index.
    After(i64),
    /// `*`: any in-range coordinate.
    Any,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BorderRule {
    pub coords: Vec<BorderCoord>,
    pub lhs_span: Span,
    pub value: Expr,
    pub span: Span,
}

/// One directive call in a chain, e.g. `.split(x, xo, xi, 8)`.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectiveCall {
    pub name: Ident,
    pub args: Vec<Expr>,
    pub span: Span,
}

/// One line of a schedule block: `func.d1(..).d2(..)`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleChain {
    pub func: Ident,
    pub calls: Vec<DirectiveCall>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleBlock {
    pub chains: Vec<ScheduleChain>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Input {
        ty: Ident,
        name: Ident,
        dims: Vec<Ident>,
        span: Span,
    },
    Param {
        ty: Ident,
        name: Ident,
        default: Option<Expr>,
        range: Option<RangeAst>,
        span: Span,
    },
    RDom {
        name: Ident,
        ranges: Vec<RangeAst>,
        predicate: Option<Expr>,
        span: Span,
    },
    /// `name = expr`: a global let, or a boundary condition func.
    Let {
        name: Ident,
        value: Expr,
        span: Span,
    },
    /// `name(args) op= value`.
    Define {
        name: Ident,
        args: Vec<Expr>,
        op: AssignOp,
        op_span: Span,
        value: Expr,
        span: Span,
    },
    Border {
        name: Ident,
        source: Ident,
        widths: Vec<(i64, Span)>,
        rules: Vec<BorderRule>,
        span: Span,
    },
    Output {
        names: Vec<Ident>,
        span: Span,
    },
    Schedule(ScheduleBlock),
}

/// A parsed source file.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub stmts: Vec<Stmt>,
    /// Names at the start of statements that failed to parse (`f(...) =`
    /// or `k =`), so the checker does not report them as unknown.
    pub broken: Vec<(Ident, bool)>,
    /// Whether the parser reported any error.
    pub syntax_errors: bool,
    /// An empty span at the end of the file.
    pub end: Span,
}
