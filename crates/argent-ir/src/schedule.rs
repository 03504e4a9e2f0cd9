//! Schedule directives as the user wrote them (Halide's vocabulary). The
//! front end only checks names; lowering turns the list into a schedule
//! tree and gives each directive its meaning, in order.

use crate::Span;
use crate::expr::Expr;

/// How a split handles an extent that the factor does not divide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TailStrategy {
    /// Pick per Halide's rules: shift inwards for pure stages of funcs that
    /// are not outputs or inputs to scatter, guard with if for updates.
    #[default]
    Auto,
    RoundUp,
    GuardWithIf,
    ShiftInwards,
}

/// Which definition of a func a directive applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum StageRef {
    #[default]
    Pure,
    Update(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub enum DirectiveKind {
    Split {
        old: String,
        outer: String,
        inner: String,
        factor: Expr,
        tail: TailStrategy,
    },
    Fuse {
        inner: String,
        outer: String,
        fused: String,
    },
    /// Innermost first, as in Halide.
    Reorder(Vec<String>),
    Tile {
        x: String,
        y: String,
        xo: String,
        yo: String,
        xi: String,
        yi: String,
        x_factor: Expr,
        y_factor: Expr,
        tail: TailStrategy,
    },
    Vectorize {
        var: String,
        factor: Option<Expr>,
    },
    Unroll {
        var: String,
        factor: Option<Expr>,
    },
    Parallel {
        var: String,
        task_size: Option<Expr>,
    },
    Serial {
        var: String,
    },
    ComputeAt {
        consumer: String,
        var: String,
    },
    StoreAt {
        consumer: String,
        var: String,
    },
    ComputeRoot,
    StoreRoot,
    ComputeInline,
    Bound {
        var: String,
        min: Expr,
        extent: Expr,
    },
    AlignBounds {
        var: String,
        modulus: Expr,
        remainder: Expr,
    },
    FoldStorage {
        var: String,
        extent: Expr,
    },
    /// The order of the func's dimensions in memory, innermost first (as
    /// in Halide); dimensions left out keep their places.
    ReorderStorage(Vec<String>),
    /// Split reduction variables off into an intermediate func with new pure
    /// variables, so the rest can be parallelised and merged.
    Rfactor {
        pairs: Vec<(String, String)>,
    },
    /// A version of the stage for when `cond` holds (Halide's
    /// `specialize`): `directives`, the rest of the chain, apply to that
    /// version only, after the stage's earlier directives; the stage's
    /// later directives apply to the general version only. `cond` is a
    /// `bool` of parameters and input sizes.
    Specialize {
        cond: Expr,
        directives: Vec<Directive>,
    },
    GpuBlocks(Vec<String>),
    GpuThreads(Vec<String>),
    GpuTile {
        x: String,
        y: String,
        bx: String,
        by: String,
        tx: String,
        ty: String,
        x_size: Expr,
        y_size: Expr,
    },
}

impl DirectiveKind {
    /// Every loop variable the directive names (of its own stage, or of a
    /// consumer for `compute_at`/`store_at`), those of a specialisation's
    /// directives included; to rename them or to ask whether one is named.
    pub fn loop_vars_mut(&mut self) -> Vec<&mut String> {
        match self {
            DirectiveKind::Split {
                old, outer, inner, ..
            } => vec![old, outer, inner],
            DirectiveKind::Fuse {
                inner,
                outer,
                fused,
            } => vec![inner, outer, fused],
            DirectiveKind::Tile {
                x,
                y,
                xo,
                yo,
                xi,
                yi,
                ..
            } => vec![x, y, xo, yo, xi, yi],
            DirectiveKind::GpuTile {
                x,
                y,
                bx,
                by,
                tx,
                ty,
                ..
            } => vec![x, y, bx, by, tx, ty],
            DirectiveKind::Reorder(vs)
            | DirectiveKind::ReorderStorage(vs)
            | DirectiveKind::GpuBlocks(vs)
            | DirectiveKind::GpuThreads(vs) => vs.iter_mut().collect(),
            DirectiveKind::Vectorize { var, .. }
            | DirectiveKind::Unroll { var, .. }
            | DirectiveKind::Parallel { var, .. }
            | DirectiveKind::Serial { var }
            | DirectiveKind::ComputeAt { var, .. }
            | DirectiveKind::StoreAt { var, .. }
            | DirectiveKind::Bound { var, .. }
            | DirectiveKind::AlignBounds { var, .. }
            | DirectiveKind::FoldStorage { var, .. } => vec![var],
            DirectiveKind::Rfactor { pairs } => {
                pairs.iter_mut().flat_map(|(a, b)| [a, b]).collect()
            }
            DirectiveKind::Specialize { directives, .. } => directives
                .iter_mut()
                .flat_map(|d| d.kind.loop_vars_mut())
                .collect(),
            DirectiveKind::ComputeRoot
            | DirectiveKind::StoreRoot
            | DirectiveKind::ComputeInline => Vec::new(),
        }
    }

    /// A `tile` as what it stands for (Halide's definition): the split of
    /// `x`, the split of `y`, and the reorder of the four new loops,
    /// innermost first. `None` for any other directive.
    pub fn tile_parts(&self) -> Option<[DirectiveKind; 3]> {
        let DirectiveKind::Tile {
            x,
            y,
            xo,
            yo,
            xi,
            yi,
            x_factor,
            y_factor,
            tail,
        } = self
        else {
            return None;
        };
        let split =
            |old: &String, outer: &String, inner: &String, factor: &Expr| DirectiveKind::Split {
                old: old.clone(),
                outer: outer.clone(),
                inner: inner.clone(),
                factor: factor.clone(),
                tail: *tail,
            };
        Some([
            split(x, xo, xi, x_factor),
            split(y, yo, yi, y_factor),
            DirectiveKind::Reorder(vec![xi.clone(), yi.clone(), xo.clone(), yo.clone()]),
        ])
    }

    /// The directive's name as written, for error messages.
    pub fn name(&self) -> &'static str {
        match self {
            DirectiveKind::Split { .. } => "split",
            DirectiveKind::Fuse { .. } => "fuse",
            DirectiveKind::Reorder(_) => "reorder",
            DirectiveKind::Tile { .. } => "tile",
            DirectiveKind::Vectorize { .. } => "vectorize",
            DirectiveKind::Unroll { .. } => "unroll",
            DirectiveKind::Parallel { .. } => "parallel",
            DirectiveKind::Serial { .. } => "serial",
            DirectiveKind::ComputeAt { .. } => "compute_at",
            DirectiveKind::StoreAt { .. } => "store_at",
            DirectiveKind::ComputeRoot => "compute_root",
            DirectiveKind::StoreRoot => "store_root",
            DirectiveKind::ComputeInline => "compute_inline",
            DirectiveKind::Bound { .. } => "bound",
            DirectiveKind::AlignBounds { .. } => "align_bounds",
            DirectiveKind::FoldStorage { .. } => "fold_storage",
            DirectiveKind::ReorderStorage(_) => "reorder_storage",
            DirectiveKind::Rfactor { .. } => "rfactor",
            DirectiveKind::Specialize { .. } => "specialize",
            DirectiveKind::GpuBlocks(_) => "gpu_blocks",
            DirectiveKind::GpuThreads(_) => "gpu_threads",
            DirectiveKind::GpuTile { .. } => "gpu_tile",
        }
    }
}

/// One directive applied to one stage, with the span of the directive
/// itself (not the whole chain) so errors can point at it.
#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    pub func: String,
    pub stage: StageRef,
    pub kind: DirectiveKind,
    pub span: Span,
}

/// The directives in the order written.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Schedule {
    pub directives: Vec<Directive>,
}

impl Schedule {
    /// The directives that apply to `func` (any stage), in order.
    pub fn for_func<'a>(&'a self, func: &'a str) -> impl Iterator<Item = &'a Directive> + 'a {
        self.directives.iter().filter(move |d| d.func == func)
    }
}
