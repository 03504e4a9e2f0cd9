//! Lowered statements: the loop nests that lowering synthesises and that
//! backends consume. Before flattening, stages write with `Provide` into
//! multi-dimensional `Realize`d regions; flattening turns those into
//! `Store`s into 1-D `Allocate`d buffers.

use crate::expr::Expr;

/// How a loop's iterations run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForKind {
    Serial,
    /// Iterations may run concurrently on worker threads.
    Parallel,
    /// Constant extent; becomes vector code.
    Vectorized,
    /// Constant extent; becomes straight-line code.
    Unrolled,
    /// GPU workgroup dimension (0 = x, 1 = y, 2 = z).
    GpuBlock(u8),
    /// GPU invocation-within-workgroup dimension.
    GpuThread(u8),
}

impl ForKind {
    pub fn keyword(self) -> &'static str {
        match self {
            ForKind::Serial => "for",
            ForKind::Parallel => "parallel",
            ForKind::Vectorized => "vectorized",
            ForKind::Unrolled => "unrolled",
            ForKind::GpuBlock(_) => "gpu_block",
            ForKind::GpuThread(_) => "gpu_thread",
        }
    }
}

/// A half-open interval given by its minimum and extent.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub min: Expr,
    pub extent: Expr,
}

/// What a [`AssertKind::RegionOverflow`] says after naming the region.
pub const REGION_OVERFLOW: &str = "does not fit in 32-bit coordinates: with these image sizes and the parameters' values (or the ranges they declare), its bounds pass 2^31";

/// What a failed run-time check means; backends turn it into an error code
/// and the runtime into a message. `Stmt::Assert::args` carries the values
/// the message needs, in the order documented on each variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AssertKind {
    /// An input does not cover what the pipeline reads. `stage` is the stage
    /// that reads it. args: needed min, needed max (inclusive), given min,
    /// given max (inclusive), for dimension `dim`.
    InputTooSmall {
        input: String,
        stage: String,
        dim: usize,
    },
    /// The requested output region is not covered by the output buffer.
    /// args: as for `InputTooSmall`.
    OutputTooSmall { output: String, dim: usize },
    /// A buffer would exceed the memory the target can address.
    /// args: requested bytes (as i32-saturated or split hi/lo by backend).
    AllocationTooLarge { buffer: String },
    /// A parameter is outside its declared range. args: the value.
    ParamOutOfRange { param: String },
    /// A one- or two-dimensional buffer argument is not dense in its first
    /// dimension: the generated code reads and writes such buffers as
    /// contiguous rows (as Halide assumes of its buffers by default), and
    /// only images with channels may be interleaved. args: the stride given.
    StrideNotOne { buffer: String },
    /// A region that bounds inference checks passes 2^31 in some
    /// coordinate (computed exactly, see argent-wasm's `exact.rs`):
    /// `region` says which ("the region of input `in` that stage `out`
    /// reads in dimension 0"). No args.
    RegionOverflow { region: String },
    /// Any other check; the string explains it.
    Other(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    LetStmt {
        name: String,
        value: Expr,
        body: Box<Stmt>,
    },
    Assert {
        cond: Expr,
        kind: AssertKind,
        args: Vec<Expr>,
    },
    /// Marks the region that computes (`producing`) or uses a func.
    ProducerConsumer {
        func: String,
        producing: bool,
        body: Box<Stmt>,
    },
    For {
        var: String,
        min: Expr,
        extent: Expr,
        kind: ForKind,
        body: Box<Stmt>,
    },
    /// Multi-dimensional store of one value of `func` (before flattening).
    Provide {
        func: String,
        args: Vec<Expr>,
        value: Expr,
    },
    /// Multi-dimensional storage for `func` over `bounds` (before flattening).
    Realize {
        func: String,
        ty: crate::Type,
        bounds: Vec<Range>,
        body: Box<Stmt>,
    },
    /// Flat store into a buffer (element units).
    Store {
        buffer: String,
        index: Expr,
        value: Expr,
    },
    /// Flat storage of `size` elements.
    Allocate {
        buffer: String,
        ty: crate::Type,
        size: Expr,
        body: Box<Stmt>,
    },
    Block(Vec<Stmt>),
    IfThenElse {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    Evaluate(Expr),
}

impl Stmt {
    /// A block that flattens nested blocks and drops empty ones.
    pub fn block(stmts: Vec<Stmt>) -> Stmt {
        let mut out = Vec::with_capacity(stmts.len());
        for s in stmts {
            match s {
                Stmt::Block(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        if out.len() == 1 {
            out.pop().unwrap()
        } else {
            Stmt::Block(out)
        }
    }

    pub fn no_op() -> Stmt {
        Stmt::Block(Vec::new())
    }

    pub fn is_no_op(&self) -> bool {
        matches!(self, Stmt::Block(v) if v.is_empty())
    }
}

impl AssertKind {
    /// The user-facing message for a failed check, given the values of its
    /// `args` (see each variant for their order). Every executor and
    /// runtime uses this text so errors read the same everywhere.
    ///
    /// ```
    /// use argent_ir::AssertKind;
    /// let kind = AssertKind::InputTooSmall { input: "in".into(), stage: "blur_x".into(), dim: 0 };
    /// assert_eq!(
    ///     kind.message(&[-1, 512, 0, 511]),
    ///     "input `in` is too small for stage `blur_x`: dimension 0 needs [-1, 512] but the input covers [0, 511]"
    /// );
    /// ```
    pub fn message(&self, args: &[i64]) -> String {
        let arg = |i: usize| args.get(i).copied().unwrap_or(0);
        match self {
            AssertKind::InputTooSmall { input, stage, dim } => format!(
                "input `{input}` is too small for stage `{stage}`: dimension {dim} needs [{}, {}] but the input covers [{}, {}]",
                arg(0),
                arg(1),
                arg(2),
                arg(3)
            ),
            AssertKind::OutputTooSmall { output, dim } => format!(
                "output `{output}` does not cover the requested region: dimension {dim} needs [{}, {}] but the buffer covers [{}, {}]",
                arg(0),
                arg(1),
                arg(2),
                arg(3)
            ),
            AssertKind::AllocationTooLarge { buffer } => {
                let bytes = if args.len() >= 2 {
                    (arg(1) << 32) | (arg(0) & 0xffff_ffff)
                } else {
                    arg(0)
                };
                format!(
                    "buffer `{buffer}` would need {bytes} bytes, more than WebAssembly's 4 GiB memory can hold"
                )
            }
            AssertKind::ParamOutOfRange { param } => {
                format!(
                    "parameter `{param}` is outside its declared range (value {})",
                    arg(0)
                )
            }
            AssertKind::StrideNotOne { buffer } => format!(
                "buffer `{buffer}` must have stride 1 in dimension 0 (its rows must be contiguous), but its stride there is {}",
                arg(0)
            ),
            AssertKind::RegionOverflow { region } => format!("{region} {REGION_OVERFLOW}"),
            AssertKind::Other(text) => text.clone(),
        }
    }
}
