//! Error types. A [`ScheduleError`] is the user's mistake (an invalid
//! schedule) and names the directive; a [`LowerBug`] is the compiler's and
//! should never happen; [`LowerError`] is what `lower` returns.

use argent_ir::{Directive, DirectiveKind, Span, StageRef, TailStrategy};
use std::fmt;

/// An invalid schedule, pointing at the directive that made it invalid.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleError {
    /// Stable code, `S001` .. (documented on [`ScheduleErrorCode`]).
    pub code: ScheduleErrorCode,
    /// The directive as written, e.g. `blur_x.compute_at(blur_y, z)`.
    pub directive: String,
    /// Where the directive is in the source (`Span::DUMMY` for builder pipelines).
    pub span: Span,
    /// Why it is invalid, in a full sentence.
    pub message: String,
}

/// The kinds of invalid schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScheduleErrorCode {
    /// S001: the directive names a func that does not exist.
    UnknownFunc,
    /// S002: `update(i)` with no such update definition.
    UnknownStage,
    /// S003: the directive names a variable the stage does not have.
    UnknownVar,
    /// S004: a new loop variable name is already used by the stage.
    DuplicateName,
    /// S005: the variable was already split or fused away.
    AlreadySplit,
    /// S006: fuse of dimensions that are not adjacent (inner directly inside outer).
    FuseNotAdjacent,
    /// S007: reorder or reorder_storage names a variable twice.
    ReorderRepeated,
    /// S008: reorder of reduction dimensions of a non-associative update.
    IllegalReductionReorder,
    /// S009: a factor that must be a positive constant is not.
    NonConstantFactor,
    /// S010: vectorize/unroll without factor of a loop whose extent is not constant.
    NonConstantExtent,
    /// S011: parallel/vectorize/gpu over a dimension that carries a dependence.
    NotCoincident,
    /// S012: compute_at/store_at a func that does not exist.
    UnknownConsumer,
    /// S013: compute_at/store_at a loop the consumer does not have.
    NoSuchLoop,
    /// S014: compute_at a consumer that does not use the func.
    NotAConsumer,
    /// S015: the compute level does not enclose every use of the func.
    LevelDoesNotEncloseUses,
    /// S016: compute_at levels form a cycle.
    ComputeAtCycle,
    /// S017: the store level is inside the compute level.
    StoreInsideCompute,
    /// S018: compute_inline of a func with update definitions.
    InlineWithUpdates,
    /// S019: call-schedule directive (compute_at, inline, store_at) or
    /// reorder_storage on an output.
    OutputCallSchedule,
    /// S020: bound/align_bounds/fold_storage/reorder_storage of something
    /// that is not a pure variable.
    NotPureVar,
    /// S021: directive not allowed on an update stage.
    NotOnUpdate,
    /// S022: rfactor that cannot apply.
    InvalidRfactor,
    /// S023: store_at for a func that is inlined.
    StoreOfInlined,
    /// S024: a func is scheduled relative to itself.
    SelfReference,
    /// S025: too many or repeated GPU dimensions.
    InvalidGpuMapping,
    /// S026: the directive names an input, which has no schedule.
    ScheduleOfInput,
    /// S027: a tail strategy that would change the result (round up or
    /// shift inwards of a reduction dimension).
    InvalidTail,
    /// S028: more `specialize` directives than versions the compiler makes.
    TooManySpecializations,
}

impl ScheduleErrorCode {
    /// The stable code shown in messages.
    pub fn code(self) -> &'static str {
        use ScheduleErrorCode::*;
        match self {
            UnknownFunc => "S001",
            UnknownStage => "S002",
            UnknownVar => "S003",
            DuplicateName => "S004",
            AlreadySplit => "S005",
            FuseNotAdjacent => "S006",
            ReorderRepeated => "S007",
            IllegalReductionReorder => "S008",
            NonConstantFactor => "S009",
            NonConstantExtent => "S010",
            NotCoincident => "S011",
            UnknownConsumer => "S012",
            NoSuchLoop => "S013",
            NotAConsumer => "S014",
            LevelDoesNotEncloseUses => "S015",
            ComputeAtCycle => "S016",
            StoreInsideCompute => "S017",
            InlineWithUpdates => "S018",
            OutputCallSchedule => "S019",
            NotPureVar => "S020",
            NotOnUpdate => "S021",
            InvalidRfactor => "S022",
            StoreOfInlined => "S023",
            SelfReference => "S024",
            InvalidGpuMapping => "S025",
            ScheduleOfInput => "S026",
            InvalidTail => "S027",
            TooManySpecializations => "S028",
        }
    }
}

impl ScheduleError {
    /// An error about directive `d`.
    pub fn new(
        code: ScheduleErrorCode,
        d: &Directive,
        message: impl Into<String>,
    ) -> ScheduleError {
        ScheduleError {
            code,
            directive: directive_text(d),
            span: d.span,
            message: message.into(),
        }
    }
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: in `{}`", self.code.code(), self.directive)?;
        if self.span != Span::DUMMY {
            write!(f, " (at {}..{})", self.span.start, self.span.end)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScheduleError {}

/// An internal inconsistency found during lowering: a compiler bug, never
/// the user's fault.
#[derive(Clone, Debug, PartialEq)]
pub struct LowerBug(pub String);

impl fmt::Display for LowerBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "internal compiler error in lowering: {}", self.0)
    }
}

/// Why lowering failed.
#[derive(Clone, Debug, PartialEq)]
pub enum LowerError {
    /// The schedule is invalid.
    Schedule(ScheduleError),
    /// The algorithm cannot be lowered as written (e.g. a region that
    /// bounds inference cannot bound); the message says what to change.
    Algorithm(String),
    /// A compiler bug.
    Bug(LowerBug),
}

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LowerError::Schedule(e) => e.fmt(f),
            LowerError::Algorithm(m) => write!(f, "error: {m}"),
            LowerError::Bug(b) => b.fmt(f),
        }
    }
}

impl std::error::Error for LowerError {}

impl From<ScheduleError> for LowerError {
    fn from(e: ScheduleError) -> Self {
        LowerError::Schedule(e)
    }
}

impl From<LowerBug> for LowerError {
    fn from(e: LowerBug) -> Self {
        LowerError::Bug(e)
    }
}

/// The directive in the language's own syntax, e.g. `f.update(0).split(x, xo, xi, 8)`.
pub fn directive_text(d: &Directive) -> String {
    let stage = match d.stage {
        StageRef::Pure => String::new(),
        StageRef::Update(i) => format!(".update({i})"),
    };
    let opt =
        |e: &Option<argent_ir::Expr>| e.as_ref().map(|e| format!(", {e}")).unwrap_or_default();
    // The tail strategy is part of the directive: a printed schedule that
    // dropped it would not reproduce what ran (round_up changes bounds).
    let tail_text = |tail: &TailStrategy| match tail {
        TailStrategy::Auto => "",
        TailStrategy::RoundUp => ", round_up",
        TailStrategy::GuardWithIf => ", guard_with_if",
        TailStrategy::ShiftInwards => ", shift_inwards",
    };
    let args = match &d.kind {
        DirectiveKind::Split {
            old,
            outer,
            inner,
            factor,
            tail,
        } => format!("{old}, {outer}, {inner}, {factor}{}", tail_text(tail)),
        DirectiveKind::Fuse {
            inner,
            outer,
            fused,
        } => format!("{inner}, {outer}, {fused}"),
        DirectiveKind::Reorder(v)
        | DirectiveKind::ReorderStorage(v)
        | DirectiveKind::GpuBlocks(v)
        | DirectiveKind::GpuThreads(v) => v.join(", "),
        DirectiveKind::Tile {
            x,
            y,
            xo,
            yo,
            xi,
            yi,
            x_factor,
            y_factor,
            tail,
        } => {
            let tail = tail_text(tail);
            format!("{x}, {y}, {xo}, {yo}, {xi}, {yi}, {x_factor}, {y_factor}{tail}")
        }
        DirectiveKind::Vectorize { var, factor } | DirectiveKind::Unroll { var, factor } => {
            format!("{var}{}", opt(factor))
        }
        DirectiveKind::Parallel { var, task_size } => format!("{var}{}", opt(task_size)),
        DirectiveKind::Serial { var } => var.clone(),
        DirectiveKind::ComputeAt { consumer, var } | DirectiveKind::StoreAt { consumer, var } => {
            format!("{consumer}, {var}")
        }
        DirectiveKind::ComputeRoot | DirectiveKind::StoreRoot | DirectiveKind::ComputeInline => {
            String::new()
        }
        DirectiveKind::Bound { var, min, extent } => format!("{var}, {min}, {extent}"),
        DirectiveKind::AlignBounds {
            var,
            modulus,
            remainder,
        } => format!("{var}, {modulus}, {remainder}"),
        DirectiveKind::FoldStorage { var, extent } => format!("{var}, {extent}"),
        DirectiveKind::Rfactor { pairs } => pairs
            .iter()
            .map(|(a, b)| format!("{a}, {b}"))
            .collect::<Vec<_>>()
            .join(", "),
        DirectiveKind::GpuTile {
            x,
            y,
            bx,
            by,
            tx,
            ty,
            x_size,
            y_size,
        } => {
            format!("{x}, {y}, {bx}, {by}, {tx}, {ty}, {x_size}, {y_size}")
        }
        // The rest of the chain follows, as written.
        DirectiveKind::Specialize { .. } => return format!("{}{stage}.{}", d.func, d.kind),
    };
    format!("{}{stage}.{}({args})", d.func, d.kind.name())
}
