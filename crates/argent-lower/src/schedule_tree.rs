//! The schedule as a polyhedral-style schedule tree (see the schedule-tree
//! seed chapter): a domain (every stage's iteration domain), bands whose
//! members are loop dimensions with a `permutable` flag and per-member
//! `coincident` flags, sequences of filters (one per stage), marks
//! (parallel, vectorize, unroll, gpu, storage) and expansions (inlined
//! stages folded into their consumer's statement).
//!
//! Each Halide directive is a tree operation, applied in the order written:
//! `split` splits a band member in two, `fuse` combines two adjacent members,
//! `reorder` permutes members (legal only where the attributes say so),
//! `tile` is split + split + reorder, `vectorize`/`unroll`/`parallel`/`gpu_*`
//! insert marks, `compute_at` sinks a producer's filter subtree under a band
//! member of its consumer, `store_at` marks the storage level.
//!
//! Example: for `blur_x.compute_at(blur_y, y)`, the tree printed by
//! `argent lower --schedule-tree` is
//! ```text
//! domain { blur_x.s0[x, y], blur_y.s0[x, y] }
//!   filter blur_y.s0
//!     band [y] permutable coincident [1]
//!       sequence
//!         filter blur_x.s0
//!           band [y, x] permutable coincident [1, 1]
//!         band [x] permutable coincident [1]
//! ```

use crate::error::{ScheduleError, ScheduleErrorCode as Code};
use crate::rfactor;
use argent_ir::fast_hash::FastHashMap as HashMap;
use argent_ir::visit::{Visitor, walk_expr};
use argent_ir::{
    BinOp, CallTarget, Directive, DirectiveKind, Expr, ExprKind, ForKind, Pipeline, StageRef,
    TailStrategy,
};
use std::collections::BTreeSet;
use std::fmt;

/// One loop dimension of a stage (a band member).
#[derive(Clone, Debug, PartialEq)]
pub struct Dim {
    /// The name directives use (`xi`, `r.x`).
    pub name: String,
    /// The qualified name: the chain of splits it came from (`x.xi`). The
    /// loop variable is the stage prefix plus this (`f.s0.x.xi`).
    pub full: String,
    pub kind: ForKind,
    /// Whether it iterates over a reduction domain.
    pub reduction: bool,
    /// Whether iterations along it are independent (no dependence carried).
    pub coincident: bool,
}

/// How a split dimension's original variable is rebuilt.
#[derive(Clone, Debug, PartialEq)]
pub enum Transform {
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
}

/// The band of one stage: its dimensions after the domain-order
/// directives, innermost first (Halide's order).
#[derive(Clone, Debug, PartialEq)]
pub struct StageBand {
    pub func: String,
    /// 0 for the pure definition, `k + 1` for update `k`.
    pub stage: usize,
    pub dims: Vec<Dim>,
    pub transforms: Vec<Transform>,
    /// Constant extents of the reduction variables, where known.
    pub rvar_extents: Vec<(String, i64)>,
    /// Whether the reduction dimensions may be permuted (the update is a
    /// recognised associative and commutative reduction, or carries no
    /// dependence at all).
    pub permutable: bool,
}

impl StageBand {
    /// `f.s0.` — the prefix of every loop variable of the stage.
    pub fn prefix(&self) -> String {
        format!("{}.s{}.", self.func, self.stage)
    }
    /// The dims outermost first.
    pub fn dims_outer_first(&self) -> impl Iterator<Item = &Dim> {
        self.dims.iter().rev()
    }
    fn find(&self, name: &str) -> Option<usize> {
        self.dims.iter().position(|d| d.name == name)
    }
}

/// Where a func is computed or stored.
#[derive(Clone, Debug, PartialEq)]
pub enum Level {
    /// Substituted into its consumers.
    Inline,
    /// Outside all loops.
    Root,
    /// Inside the loop `var` (a full dim name) of stage `stage` of `func`.
    At {
        func: String,
        stage: usize,
        var: String,
    },
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Inline => write!(f, "inline"),
            Level::Root => write!(f, "root"),
            Level::At { func, stage, var } => write!(f, "{func}.s{stage}.{var}"),
        }
    }
}

/// The call schedule of a func: when and where it is computed and stored.
#[derive(Clone, Debug, PartialEq)]
pub struct FuncSchedule {
    pub name: String,
    pub compute: Level,
    pub store: Level,
    pub is_output: bool,
    /// `bound(var, min, extent)` per pure dimension index.
    pub bounds: Vec<(usize, Expr, Expr)>,
    /// `align_bounds(var, modulus, remainder)` per pure dimension index.
    pub align: Vec<(usize, Expr, Expr)>,
    /// `fold_storage(var, extent)` per pure dimension index.
    pub fold: Vec<(usize, i64)>,
    /// The pure dimension indices in memory order, innermost first
    /// (`reorder_storage`; `[0, 1, ..]` by default).
    pub storage: Vec<usize>,
}

impl FuncSchedule {
    /// Whether `reorder_storage` moved any dimension.
    pub fn storage_reordered(&self) -> bool {
        self.storage.iter().enumerate().any(|(i, &d)| i != d)
    }
}

/// A node of the schedule tree, as printed.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Domain {
        stages: Vec<String>,
        child: Box<Node>,
    },
    Sequence(Vec<Node>),
    Filter {
        stage: String,
        child: Box<Node>,
    },
    Band {
        members: Vec<String>,
        permutable: bool,
        coincident: Vec<bool>,
        child: Box<Node>,
    },
    Mark {
        mark: String,
        child: Box<Node>,
    },
    /// Stages whose statements are expanded into the child's statement
    /// (inlined funcs).
    Expansion {
        expanded: Vec<String>,
        child: Box<Node>,
    },
    Leaf,
}

/// The whole schedule: the (rfactor-transformed) pipeline, every stage's
/// band, every func's call schedule, and the tree view of them.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleTree {
    pub pipeline: Pipeline,
    pub bands: Vec<StageBand>,
    pub funcs: Vec<FuncSchedule>,
    /// Non-inlined funcs in the order they must be computed (callees first).
    pub realization_order: Vec<String>,
    pub root: Node,
}

impl ScheduleTree {
    /// The band of stage `stage` of `func`.
    pub fn band(&self, func: &str, stage: usize) -> Option<&StageBand> {
        self.bands
            .iter()
            .find(|b| b.func == func && b.stage == stage)
    }
    /// The call schedule of `func`.
    pub fn func(&self, name: &str) -> Option<&FuncSchedule> {
        self.funcs.iter().find(|f| f.name == name)
    }
}

/// The funcs an expression calls directly.
pub fn called_funcs(e: &Expr, out: &mut BTreeSet<String>) {
    struct Calls<'a>(&'a mut BTreeSet<String>);
    impl Visitor for Calls<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Call {
                target: CallTarget::Func(n),
                ..
            } = e.kind()
            {
                self.0.insert(n.clone());
            }
            walk_expr(self, e);
        }
    }
    Calls(out).visit_expr(e);
}

/// The funcs stage `stage` of `f` calls directly (value, args, rdom).
pub fn stage_calls(f: &argent_ir::Func, stage: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if stage == 0 {
        called_funcs(&f.value, &mut out);
    } else if let Some(u) = f.updates.get(stage - 1) {
        called_funcs(&u.value, &mut out);
        u.args.iter().for_each(|a| called_funcs(a, &mut out));
        if let Some(r) = &u.rdom {
            for d in &r.dims {
                called_funcs(&d.min, &mut out);
                called_funcs(&d.extent, &mut out);
            }
            if let Some(p) = &r.predicate {
                called_funcs(p, &mut out);
            }
        }
    }
    out
}

fn self_calls<'a>(e: &'a Expr, func: &str, out: &mut Vec<Vec<Expr>>) {
    struct Finder<'b> {
        func: &'b str,
        out: &'b mut Vec<Vec<Expr>>,
    }
    impl Visitor for Finder<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Call {
                target: CallTarget::Func(n),
                args,
            } = e.kind()
            {
                if n == self.func {
                    self.out.push(args.clone());
                }
            }
            walk_expr(self, e);
        }
    }
    Finder { func, out }.visit_expr(e);
}

/// Whether update `u` of `f` is `f(args) = f(args) op e` (or `e op f(args)`)
/// for an associative and commutative `op` whose reordering cannot change
/// the result bit for bit (integer add/mul/bitwise, min/max of anything).
pub fn is_associative_update(f: &argent_ir::Func, u: &argent_ir::Update) -> bool {
    let exact = |op: BinOp| match op {
        BinOp::Min | BinOp::Max => true,
        BinOp::Add | BinOp::Mul | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => f.ty.is_integer(),
        _ => false,
    };
    is_reduction_by(f, u, exact)
}

/// Whether update `u` of `f` may be regrouped by `rfactor`: an associative
/// update (see [`is_associative_update`]), or a float sum or product,
/// which in exact arithmetic is one too. Regrouping a float sum rounds
/// differently from summing in the reduction domain's order, as it does
/// in Halide: the result may differ from the interpreter's in its last
/// bits (docs/language.md states the tolerance the tests allow).
pub fn is_reassociable_update(f: &argent_ir::Func, u: &argent_ir::Update) -> bool {
    is_associative_update(f, u)
        || (f.ty.is_float() && is_reduction_by(f, u, |op| matches!(op, BinOp::Add | BinOp::Mul)))
}

/// Whether `u` is `f(args) = f(args) op e` (or `e op f(args)`) with
/// `accepts(op)` and no other read of `f` in `e`.
fn is_reduction_by(
    f: &argent_ir::Func,
    u: &argent_ir::Update,
    accepts: impl Fn(BinOp) -> bool,
) -> bool {
    let ExprKind::Binary { op, a, b } = u.value.kind() else {
        return false;
    };
    if !accepts(*op) {
        return false;
    }
    let is_self = |e: &Expr| matches!(e.kind(), ExprKind::Call { target: CallTarget::Func(n), args } if *n == f.name && *args == u.args);
    let mut other_reads = Vec::new();
    let rest = if is_self(a) {
        b
    } else if is_self(b) {
        a
    } else {
        return false;
    };
    self_calls(rest, &f.name, &mut other_reads);
    other_reads.is_empty()
}

fn initial_band(f: &argent_ir::Func, stage: usize) -> StageBand {
    if stage == 0 {
        let dims = f
            .args
            .iter()
            .map(|a| Dim {
                name: a.clone(),
                full: a.clone(),
                kind: ForKind::Serial,
                reduction: false,
                coincident: true,
            })
            .collect();
        return StageBand {
            func: f.name.clone(),
            stage,
            dims,
            transforms: Vec::new(),
            rvar_extents: Vec::new(),
            permutable: true,
        };
    }
    let u = &f.updates[stage - 1];
    let mut reads = Vec::new();
    self_calls(&u.value, &f.name, &mut reads);
    let reads_only_own_point = reads.iter().all(|r| *r == u.args);
    let mut dims = Vec::new();
    if let Some(r) = &u.rdom {
        for rv in &r.dims {
            let writes_injective = u.args.iter().any(|a| a.as_var() == Some(rv.name.as_str()));
            dims.push(Dim {
                name: rv.name.clone(),
                full: rv.name.clone(),
                kind: ForKind::Serial,
                reduction: true,
                coincident: writes_injective && reads_only_own_point,
            });
        }
    }
    for (i, a) in f.args.iter().enumerate() {
        if u.args.get(i).and_then(|e| e.as_var()) == Some(a.as_str()) {
            let coincident = reads
                .iter()
                .all(|r| r.get(i).and_then(|e| e.as_var()) == Some(a.as_str()));
            dims.push(Dim {
                name: a.clone(),
                full: a.clone(),
                kind: ForKind::Serial,
                reduction: false,
                coincident,
            });
        }
    }
    let permutable = dims.iter().all(|d| d.coincident) || is_associative_update(f, u);
    let rvar_extents = u
        .rdom
        .iter()
        .flat_map(|r| r.dims.iter())
        .filter_map(|r| Some((r.name.clone(), positive_const(&r.extent)?)))
        .collect();
    StageBand {
        func: f.name.clone(),
        stage,
        dims,
        transforms: Vec::new(),
        rvar_extents,
        permutable,
    }
}

fn positive_const(e: &Expr) -> Option<i64> {
    crate::arith::const_int(e).filter(|v| *v > 0)
}

/// The constant extent of dim `full` of a band, when a split made it known.
fn const_extent(band: &StageBand, full: &str, bounds: &HashMap<String, i64>) -> Option<i64> {
    for t in &band.transforms {
        match t {
            Transform::Split { inner, factor, .. } if inner == full => {
                return positive_const(factor);
            }
            Transform::Fuse {
                fused,
                inner,
                outer,
            } if fused == full => {
                return Some(
                    const_extent(band, inner, bounds)? * const_extent(band, outer, bounds)?,
                );
            }
            _ => {}
        }
    }
    if let Some(b) = bounds.get(full) {
        return Some(*b);
    }
    band.rvar_extents
        .iter()
        .find(|(n, _)| n == full)
        .map(|(_, e)| *e)
}

struct Builder<'a> {
    pipeline: &'a Pipeline,
    bands: Vec<StageBand>,
    /// Names each stage has used, so a split cannot reuse a retired name.
    retired: HashMap<(String, usize), Vec<(String, String)>>,
    const_bounds: HashMap<String, HashMap<String, i64>>,
}

impl Builder<'_> {
    fn band_index(&self, d: &Directive) -> Result<usize, ScheduleError> {
        let stage = match d.stage {
            StageRef::Pure => 0,
            StageRef::Update(i) => i + 1,
        };
        if self.pipeline.func(&d.func).is_none() {
            if self.pipeline.input(&d.func).is_some() {
                return Err(ScheduleError::new(
                    Code::ScheduleOfInput,
                    d,
                    format!(
                        "`{}` is an input; inputs have no schedule (schedule a func that reads it instead)",
                        d.func
                    ),
                ));
            }
            return Err(ScheduleError::new(
                Code::UnknownFunc,
                d,
                format!("there is no func named `{}`", d.func),
            ));
        }
        self.bands
            .iter()
            .position(|b| b.func == d.func && b.stage == stage)
            .ok_or_else(|| {
                let n = self.pipeline.func(&d.func).map_or(0, |f| f.updates.len());
                ScheduleError::new(
                    Code::UnknownStage,
                    d,
                    format!(
                        "`{}` has {n} update definition(s), so there is no update({})",
                        d.func,
                        stage - 1
                    ),
                )
            })
    }

    fn dim_of(&self, bi: usize, d: &Directive, var: &str) -> Result<usize, ScheduleError> {
        let band = &self.bands[bi];
        if let Some(i) = band.find(var) {
            return Ok(i);
        }
        if let Some(retired) = self.retired.get(&(band.func.clone(), band.stage)) {
            if let Some((_, into)) = retired.iter().find(|(n, _)| n == var) {
                return Err(ScheduleError::new(
                    Code::AlreadySplit,
                    d,
                    format!(
                        "`{var}` was already {into}; it is no longer a loop of {}",
                        stage_name(band)
                    ),
                ));
            }
        }
        Err(ScheduleError::new(
            Code::UnknownVar,
            d,
            format!(
                "{} has no loop variable `{var}`; its loops are {}",
                stage_name(band),
                loops_list(band)
            ),
        ))
    }

    fn check_fresh(
        &self,
        bi: usize,
        d: &Directive,
        name: &str,
        allowed: &str,
    ) -> Result<(), ScheduleError> {
        let band = &self.bands[bi];
        if name != allowed && band.find(name).is_some() {
            return Err(ScheduleError::new(
                Code::DuplicateName,
                d,
                format!(
                    "{} already has a loop variable named `{name}`",
                    stage_name(band)
                ),
            ));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn split(
        &mut self,
        bi: usize,
        d: &Directive,
        old: &str,
        outer: &str,
        inner: &str,
        factor: &Expr,
        tail: TailStrategy,
    ) -> Result<(), ScheduleError> {
        let i = self.dim_of(bi, d, old)?;
        if outer == inner {
            return Err(ScheduleError::new(
                Code::DuplicateName,
                d,
                format!("the outer and inner variables are both named `{outer}`"),
            ));
        }
        self.check_fresh(bi, d, outer, old)?;
        self.check_fresh(bi, d, inner, old)?;
        if let Some(v) = crate::arith::const_int(factor) {
            if v <= 0 {
                return Err(ScheduleError::new(
                    Code::NonConstantFactor,
                    d,
                    format!("the split factor must be positive, but it is {v}"),
                ));
            }
        }
        let band = &self.bands[bi];
        let dim = band.dims[i].clone();
        let is_output = self.pipeline.outputs.contains(&band.func);
        let tail = match tail {
            TailStrategy::Auto if dim.reduction || band.stage > 0 || is_output => {
                TailStrategy::GuardWithIf
            }
            TailStrategy::Auto => TailStrategy::ShiftInwards,
            TailStrategy::RoundUp | TailStrategy::ShiftInwards
                if band.stage > 0 && !dim.reduction =>
            {
                return Err(ScheduleError::new(
                    Code::InvalidTail,
                    d,
                    format!(
                        "{} is an update: rounding up or shifting inwards would update points outside the func's region, or some points twice; use guard_with_if",
                        stage_name(band)
                    ),
                ));
            }
            TailStrategy::RoundUp | TailStrategy::ShiftInwards if dim.reduction => {
                return Err(ScheduleError::new(
                    Code::InvalidTail,
                    d,
                    format!(
                        "`{old}` is a reduction variable: rounding up or shifting inwards would reduce some points twice; use guard_with_if"
                    ),
                ));
            }
            t => t,
        };
        let outer_full = format!("{}.{outer}", dim.full);
        let inner_full = format!("{}.{inner}", dim.full);
        let band = &mut self.bands[bi];
        band.transforms.push(Transform::Split {
            old: dim.full.clone(),
            outer: outer_full.clone(),
            inner: inner_full.clone(),
            factor: crate::arith::simplify(factor),
            tail,
        });
        band.dims[i] = Dim {
            name: outer.to_string(),
            full: outer_full,
            ..dim.clone()
        };
        band.dims.insert(
            i,
            Dim {
                name: inner.to_string(),
                full: inner_full,
                ..dim
            },
        );
        if old != outer && old != inner {
            self.retired
                .entry((band.func.clone(), band.stage))
                .or_default()
                .push((
                    old.to_string(),
                    format!("split into `{outer}` and `{inner}`"),
                ));
        }
        Ok(())
    }

    fn mark(
        &mut self,
        bi: usize,
        d: &Directive,
        var: &str,
        kind: ForKind,
    ) -> Result<(), ScheduleError> {
        let i = self.dim_of(bi, d, var)?;
        let band = &self.bands[bi];
        let dim = &band.dims[i];
        let needs_coincidence = !matches!(kind, ForKind::Serial | ForKind::Unrolled);
        if needs_coincidence && !dim.coincident {
            let what = if dim.reduction {
                "reduction variable"
            } else {
                "variable"
            };
            return Err(ScheduleError::new(
                Code::NotCoincident,
                d,
                format!(
                    "iterations of {what} `{var}` of {} depend on each other (the update reads values other iterations write); use rfactor to make it parallel",
                    stage_name(band)
                ),
            ));
        }
        if matches!(kind, ForKind::Vectorized | ForKind::Unrolled) {
            let bounds = self
                .const_bounds
                .get(&band.func)
                .cloned()
                .unwrap_or_default();
            // An unsplit pure dimension of a func that is not an output may
            // still get a constant extent from bounds inference (which
            // checks it then); anything else must be constant now.
            let may_become_constant = !dim.reduction
                && !self.pipeline.outputs.contains(&band.func)
                && self
                    .pipeline
                    .func(&band.func)
                    .is_some_and(|f| f.args.contains(&dim.full));
            if const_extent(band, &dim.full, &bounds).is_none() && !may_become_constant {
                return Err(ScheduleError::new(
                    Code::NonConstantExtent,
                    d,
                    format!(
                        "the extent of `{var}` is not a known constant; give a factor (`{}({var}, 8)`) or split it first",
                        d.kind.name()
                    ),
                ));
            }
        }
        self.bands[bi].dims[i].kind = kind;
        Ok(())
    }

    fn split_and_mark(
        &mut self,
        bi: usize,
        d: &Directive,
        var: &str,
        factor: &Option<Expr>,
        suffix: &str,
        kind: ForKind,
    ) -> Result<(), ScheduleError> {
        match factor {
            None => self.mark(bi, d, var, kind),
            Some(f) => {
                if positive_const(f).is_none() {
                    return Err(ScheduleError::new(
                        Code::NonConstantFactor,
                        d,
                        format!(
                            "the factor of {} must be a positive constant, but it is `{f}`",
                            d.kind.name()
                        ),
                    ));
                }
                // Check the mark's legality before splitting, so the error
                // names the variable the user wrote.
                let i = self.dim_of(bi, d, var)?;
                if kind != ForKind::Unrolled && !self.bands[bi].dims[i].coincident {
                    return self.mark(bi, d, var, kind);
                }
                let inner = format!("{var}{suffix}");
                self.split(bi, d, var, var, &inner, f, TailStrategy::Auto)?;
                self.mark(bi, d, &inner, kind)
            }
        }
    }

    fn reorder(&mut self, bi: usize, d: &Directive, vars: &[String]) -> Result<(), ScheduleError> {
        let mut idx = Vec::new();
        for v in vars {
            let i = self.dim_of(bi, d, v)?;
            if idx.contains(&i) {
                return Err(ScheduleError::new(
                    Code::ReorderRepeated,
                    d,
                    format!("`{v}` appears more than once"),
                ));
            }
            idx.push(i);
        }
        let band = &self.bands[bi];
        let mut slots = idx.clone();
        slots.sort_unstable();
        let mut dims = band.dims.clone();
        for (slot, src) in slots.iter().zip(&idx) {
            dims[*slot] = band.dims[*src].clone();
        }
        if !band.permutable {
            let order = |ds: &[Dim]| -> Vec<String> {
                ds.iter()
                    .filter(|d| !d.coincident)
                    .map(|d| d.full.clone())
                    .collect()
            };
            if order(&dims) != order(&band.dims) {
                return Err(ScheduleError::new(
                    Code::IllegalReductionReorder,
                    d,
                    format!(
                        "{} is not a recognised associative reduction (`f(..) = f(..) op e` with op +, *, &, |, ^ on integers, or min, max), so the order of its dependent loops ({}) must stay as written",
                        stage_name(band),
                        band.dims_outer_first()
                            .filter(|d| !d.coincident)
                            .map(|d| d.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        self.bands[bi].dims = dims;
        Ok(())
    }

    fn fuse(
        &mut self,
        bi: usize,
        d: &Directive,
        inner: &str,
        outer: &str,
        fused: &str,
    ) -> Result<(), ScheduleError> {
        let i = self.dim_of(bi, d, inner)?;
        let o = self.dim_of(bi, d, outer)?;
        if o != i + 1 {
            let band = &self.bands[bi];
            return Err(ScheduleError::new(
                Code::FuseNotAdjacent,
                d,
                format!(
                    "`{inner}` must be the loop directly inside `{outer}`, but the loops of {} are {}",
                    stage_name(band),
                    loops_list(band)
                ),
            ));
        }
        self.check_fresh(bi, d, fused, inner)?;
        if fused != outer {
            self.check_fresh(bi, d, fused, inner)?;
        }
        let band = &mut self.bands[bi];
        let (di, dout) = (band.dims[i].clone(), band.dims[o].clone());
        if di.reduction != dout.reduction {
            return Err(ScheduleError::new(
                Code::FuseNotAdjacent,
                d,
                "a reduction variable cannot be fused with a pure variable",
            ));
        }
        band.transforms.push(Transform::Fuse {
            inner: di.full.clone(),
            outer: dout.full.clone(),
            fused: format!("{}.{fused}", dout.full),
        });
        band.dims[o] = Dim {
            name: fused.to_string(),
            full: format!("{}.{fused}", dout.full),
            kind: ForKind::Serial,
            reduction: di.reduction,
            coincident: di.coincident && dout.coincident,
        };
        band.dims.remove(i);
        let key = (band.func.clone(), band.stage);
        for n in [inner, outer] {
            if n != fused {
                self.retired
                    .entry(key.clone())
                    .or_default()
                    .push((n.to_string(), format!("fused into `{fused}`")));
            }
        }
        Ok(())
    }

    fn apply(&mut self, d: &Directive) -> Result<(), ScheduleError> {
        let bi = self.band_index(d)?;
        match &d.kind {
            DirectiveKind::Split {
                old,
                outer,
                inner,
                factor,
                tail,
            } => self.split(bi, d, old, outer, inner, factor, *tail),
            DirectiveKind::Fuse {
                inner,
                outer,
                fused,
            } => self.fuse(bi, d, inner, outer, fused),
            DirectiveKind::Reorder(vars) => self.reorder(bi, d, vars),
            // Its parts, each reported as the tile written.
            DirectiveKind::Tile { .. } => {
                for part in d.kind.tile_parts().into_iter().flatten() {
                    match &part {
                        DirectiveKind::Split {
                            old,
                            outer,
                            inner,
                            factor,
                            tail,
                        } => self.split(bi, d, old, outer, inner, factor, *tail)?,
                        DirectiveKind::Reorder(vars) => self.reorder(bi, d, vars)?,
                        _ => {}
                    }
                }
                Ok(())
            }
            DirectiveKind::Vectorize { var, factor } => {
                self.split_and_mark(bi, d, var, factor, "_vi", ForKind::Vectorized)
            }
            DirectiveKind::Unroll { var, factor } => {
                self.split_and_mark(bi, d, var, factor, "_ui", ForKind::Unrolled)
            }
            DirectiveKind::Parallel { var, task_size } => match task_size {
                None => self.mark(bi, d, var, ForKind::Parallel),
                Some(t) => {
                    if positive_const(t).is_none() {
                        return Err(ScheduleError::new(
                            Code::NonConstantFactor,
                            d,
                            format!("the task size must be a positive constant, but it is `{t}`"),
                        ));
                    }
                    let inner = format!("{var}_pi");
                    self.mark(bi, d, var, ForKind::Parallel)?;
                    self.split(bi, d, var, var, &inner, t, TailStrategy::Auto)?;
                    let i = self.dim_of(bi, d, &inner)?;
                    self.bands[bi].dims[i].kind = ForKind::Serial;
                    Ok(())
                }
            },
            DirectiveKind::Serial { var } => self.mark(bi, d, var, ForKind::Serial),
            DirectiveKind::GpuBlocks(vars) | DirectiveKind::GpuThreads(vars) => {
                let blocks = matches!(d.kind, DirectiveKind::GpuBlocks(_));
                self.gpu(bi, d, vars, blocks)
            }
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
                self.split(bi, d, x, bx, tx, x_size, TailStrategy::Auto)?;
                self.split(bi, d, y, by, ty, y_size, TailStrategy::Auto)?;
                self.reorder(bi, d, &[tx.clone(), ty.clone(), bx.clone(), by.clone()])?;
                self.gpu(bi, d, &[bx.clone(), by.clone()], true)?;
                self.gpu(bi, d, &[tx.clone(), ty.clone()], false)
            }
            // Call-schedule directives are resolved after every band is final.
            _ => Ok(()),
        }
    }

    fn gpu(
        &mut self,
        bi: usize,
        d: &Directive,
        vars: &[String],
        blocks: bool,
    ) -> Result<(), ScheduleError> {
        if vars.is_empty() || vars.len() > 3 {
            return Err(ScheduleError::new(
                Code::InvalidGpuMapping,
                d,
                format!(
                    "GPU mappings take one to three variables, not {}",
                    vars.len()
                ),
            ));
        }
        for (k, v) in vars.iter().enumerate() {
            let kind = if blocks {
                ForKind::GpuBlock(k as u8)
            } else {
                ForKind::GpuThread(k as u8)
            };
            self.mark(bi, d, v, kind)?;
        }
        Ok(())
    }
}

fn stage_name(b: &StageBand) -> String {
    if b.stage == 0 {
        b.func.clone()
    } else {
        format!("{}.update({})", b.func, b.stage - 1)
    }
}

fn loops_list(b: &StageBand) -> String {
    if b.dims.is_empty() {
        return "none".into();
    }
    b.dims_outer_first()
        .map(|d| format!("`{}`", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Build the schedule tree of `pipeline`, applying its directives in
/// order; the first invalid directive is reported.
///
/// Example: `blur_y.split(y, yo, yi, 8)` turns the band `[y, x]` of
/// `blur_y.s0` into `[y.yo, y.yi, x]`, and `blur_x.compute_at(blur_y, yo)`
/// sinks the filter of `blur_x.s0` under member `y.yo`.
pub fn build(pipeline: &Pipeline) -> Result<ScheduleTree, ScheduleError> {
    // A specialised pipeline's tree is that of its general version; `lower`
    // builds each version's tree itself.
    let pipeline = crate::specialize::general_version(pipeline);
    let pipeline = crate::fused_channels::vectorize_fused_channels(&pipeline);
    let pipeline = crate::separate_outputs::separate_read_outputs(&pipeline);
    let pipeline = rfactor::apply_rfactors(&pipeline)?;
    let pipeline = without_unused_funcs(&pipeline);
    let mut const_bounds: HashMap<String, HashMap<String, i64>> = HashMap::default();
    for d in &pipeline.schedule.directives {
        if let DirectiveKind::Bound { var, extent, .. } = &d.kind {
            if let Some(e) = crate::arith::const_int(extent) {
                const_bounds
                    .entry(d.func.clone())
                    .or_default()
                    .insert(var.clone(), e);
            }
        }
    }
    let mut builder = Builder {
        pipeline: &pipeline,
        bands: Vec::new(),
        retired: HashMap::default(),
        const_bounds,
    };
    for f in &pipeline.funcs {
        for s in 0..=f.updates.len() {
            builder.bands.push(initial_band(f, s));
        }
    }
    for d in &pipeline.schedule.directives {
        builder.apply(d)?;
    }
    let bands = builder.bands;
    let funcs = resolve_call_schedule(&pipeline, &bands)?;
    let realization_order: Vec<String> = pipeline
        .funcs
        .iter()
        .filter(|f| {
            funcs
                .iter()
                .any(|s| s.name == f.name && s.compute != Level::Inline)
        })
        .map(|f| f.name.clone())
        .collect();
    let mut tree = ScheduleTree {
        pipeline: pipeline.clone(),
        bands,
        funcs,
        realization_order,
        root: Node::Leaf,
    };
    tree.root = tree_view(&tree);
    Ok(tree)
}

/// `pipeline` without the funcs that no output reads, directly or through
/// other funcs, and without their directives: as in Halide, only what the
/// outputs need is computed. (A func defined and never read used to be
/// computed anyway, over a region no consumer bounded.) A func named as
/// the `compute_at`/`store_at` consumer of a needed func stays, with what
/// it reads; directives naming no func are left for `apply` to refuse.
///
/// Example: with `output f3`, `f2(x, y) = f1(x + 1, y)` and its directive
/// `f2.vectorize(x, 8)` go; `f1` stays when `f3` reads it.
fn without_unused_funcs(pipeline: &Pipeline) -> Pipeline {
    let mut needed: BTreeSet<String> = pipeline.outputs.iter().cloned().collect();
    loop {
        // Callees come before callers, so one pass from the end finds
        // every func the needed ones read.
        for f in pipeline.funcs.iter().rev() {
            if needed.contains(&f.name) {
                for stage in 0..=f.updates.len() {
                    needed.extend(stage_calls(f, stage));
                }
            }
        }
        let consumers: Vec<String> = pipeline
            .schedule
            .directives
            .iter()
            .filter(|d| needed.contains(&d.func))
            .filter_map(|d| match &d.kind {
                DirectiveKind::ComputeAt { consumer, .. }
                | DirectiveKind::StoreAt { consumer, .. } => Some(consumer.clone()),
                _ => None,
            })
            .filter(|c| !needed.contains(c))
            .collect();
        if consumers.is_empty() {
            break;
        }
        needed.extend(consumers);
    }
    if pipeline.funcs.iter().all(|f| needed.contains(&f.name)) {
        return pipeline.clone();
    }
    let mut out = pipeline.clone();
    out.funcs.retain(|f| needed.contains(&f.name));
    out.schedule
        .directives
        .retain(|d| needed.contains(&d.func) || pipeline.func(&d.func).is_none());
    out
}

/// For each non-inlined stage, the funcs it reads (directly or through
/// inlined funcs).
fn effective_calls(
    pipeline: &Pipeline,
    inlined: &BTreeSet<String>,
) -> HashMap<(String, usize), BTreeSet<String>> {
    let mut direct_of_func: HashMap<String, BTreeSet<String>> = HashMap::default();
    for f in &pipeline.funcs {
        let mut all = BTreeSet::new();
        for s in 0..=f.updates.len() {
            all.extend(stage_calls(f, s));
        }
        direct_of_func.insert(f.name.clone(), all);
    }
    // The funcs an inlined func reaches through inlined funcs, each found
    // once: walking every chain from every caller was quadratic in the
    // length of a chain of inlined stages.
    let mut through_inlined: HashMap<String, BTreeSet<String>> = HashMap::default();
    let mut out = HashMap::default();
    for f in &pipeline.funcs {
        for s in 0..=f.updates.len() {
            let mut reached = BTreeSet::new();
            for g in stage_calls(f, s) {
                if inlined.contains(&g) {
                    reached.extend(
                        reached_through(&g, inlined, &direct_of_func, &mut through_inlined)
                            .iter()
                            .cloned(),
                    );
                } else {
                    reached.insert(g);
                }
            }
            out.insert((f.name.clone(), s), reached);
        }
    }
    out
}

/// The funcs that are not inlined which inlined func `g` calls, directly
/// or through other inlined funcs, remembered in `memo` (which holds only
/// finished sets).
fn reached_through<'m>(
    g: &str,
    inlined: &BTreeSet<String>,
    direct_of_func: &HashMap<String, BTreeSet<String>>,
    memo: &'m mut HashMap<String, BTreeSet<String>>,
) -> &'m BTreeSet<String> {
    // Depth first without recursion (a chain may be thousands of funcs
    // long): a func is finished once every inlined func it calls is.
    let mut expanding: BTreeSet<String> = BTreeSet::new();
    let mut stack = vec![(g.to_string(), false)];
    while let Some((h, expanded)) = stack.pop() {
        let callees = direct_of_func.get(&h).cloned().unwrap_or_default();
        if !expanded {
            if memo.contains_key(&h) || !expanding.insert(h.clone()) {
                continue;
            }
            stack.push((h, true));
            for c in callees {
                // A func still expanding would be a cycle, which the
                // checks reject before this.
                if inlined.contains(&c) && !memo.contains_key(&c) && !expanding.contains(&c) {
                    stack.push((c, false));
                }
            }
            continue;
        }
        let mut reached = BTreeSet::new();
        for c in callees {
            if inlined.contains(&c) {
                reached.extend(memo.get(&c).into_iter().flatten().cloned());
            } else {
                reached.insert(c);
            }
        }
        expanding.remove(&h);
        memo.insert(h, reached);
    }
    &memo[g]
}

fn resolve_call_schedule(
    pipeline: &Pipeline,
    bands: &[StageBand],
) -> Result<Vec<FuncSchedule>, ScheduleError> {
    let mut scheds: Vec<FuncSchedule> = pipeline
        .funcs
        .iter()
        .map(|f| {
            let is_output = pipeline.outputs.contains(&f.name);
            // Halide's defaults: pure funcs are inlined; outputs are computed
            // at the root; funcs with updates are computed at the root too
            // (Halide would compute them at the innermost loop of each use,
            // which recomputes a whole reduction per point).
            let compute = if is_output || !f.updates.is_empty() {
                Level::Root
            } else {
                Level::Inline
            };
            FuncSchedule {
                name: f.name.clone(),
                store: compute.clone(),
                compute,
                is_output,
                bounds: Vec::new(),
                align: Vec::new(),
                fold: Vec::new(),
                storage: (0..f.args.len()).collect(),
            }
        })
        .collect();
    let mut store_set: HashMap<String, &Directive> = HashMap::default();
    let mut compute_dir: HashMap<String, &Directive> = HashMap::default();
    let band_of = |f: &str, s: usize| bands.iter().find(|b| b.func == f && b.stage == s);
    for d in &pipeline.schedule.directives {
        let Some(fi) = pipeline.funcs.iter().position(|f| f.name == d.func) else {
            continue;
        };
        let func = &pipeline.funcs[fi];
        let call_directive = matches!(
            d.kind,
            DirectiveKind::ComputeAt { .. }
                | DirectiveKind::StoreAt { .. }
                | DirectiveKind::ComputeRoot
                | DirectiveKind::StoreRoot
                | DirectiveKind::ComputeInline
                | DirectiveKind::Bound { .. }
                | DirectiveKind::AlignBounds { .. }
                | DirectiveKind::FoldStorage { .. }
                | DirectiveKind::ReorderStorage(_)
        );
        if !call_directive {
            continue;
        }
        if d.stage != StageRef::Pure {
            return Err(ScheduleError::new(
                Code::NotOnUpdate,
                d,
                format!(
                    "`{}` applies to the whole func; write it without `.update(..)`",
                    d.kind.name()
                ),
            ));
        }
        let is_output = scheds[fi].is_output;
        let level_of = |consumer: &str, var: &str| -> Result<Level, ScheduleError> {
            if consumer == d.func {
                return Err(ScheduleError::new(
                    Code::SelfReference,
                    d,
                    format!("`{consumer}` cannot be scheduled inside its own loops"),
                ));
            }
            let Some(c) = pipeline.func(consumer) else {
                return Err(ScheduleError::new(
                    Code::UnknownConsumer,
                    d,
                    format!("there is no func named `{consumer}`"),
                ));
            };
            let stages: Vec<&StageBand> = (0..=c.updates.len())
                .filter_map(|s| band_of(consumer, s))
                .collect();
            let with_var: Vec<&&StageBand> =
                stages.iter().filter(|b| b.find(var).is_some()).collect();
            match with_var.first() {
                Some(b) => Ok(Level::At {
                    func: consumer.to_string(),
                    stage: b.stage,
                    var: b.dims[b.find(var).unwrap_or(0)].full.clone(),
                }),
                None => Err(ScheduleError::new(
                    Code::NoSuchLoop,
                    d,
                    format!(
                        "{consumer} has no loop variable `{var}`; its loops are {}",
                        loops_list(stages[0])
                    ),
                )),
            }
        };
        match &d.kind {
            DirectiveKind::ComputeAt { consumer, var } => {
                if is_output {
                    return Err(ScheduleError::new(
                        Code::OutputCallSchedule,
                        d,
                        format!(
                            "`{}` is an output: it is always computed at the root, into its output buffer",
                            d.func
                        ),
                    ));
                }
                scheds[fi].compute = level_of(consumer, var)?;
                compute_dir.insert(d.func.clone(), d);
            }
            DirectiveKind::StoreAt { consumer, var } => {
                if is_output {
                    return Err(ScheduleError::new(
                        Code::OutputCallSchedule,
                        d,
                        format!(
                            "`{}` is an output: it is stored in its output buffer",
                            d.func
                        ),
                    ));
                }
                scheds[fi].store = level_of(consumer, var)?;
                store_set.insert(d.func.clone(), d);
            }
            DirectiveKind::ComputeRoot => {
                scheds[fi].compute = Level::Root;
                compute_dir.insert(d.func.clone(), d);
            }
            DirectiveKind::StoreRoot => {
                scheds[fi].store = Level::Root;
                store_set.insert(d.func.clone(), d);
            }
            DirectiveKind::ComputeInline => {
                if is_output {
                    return Err(ScheduleError::new(
                        Code::OutputCallSchedule,
                        d,
                        format!("`{}` is an output and cannot be inlined", d.func),
                    ));
                }
                if !func.updates.is_empty() {
                    return Err(ScheduleError::new(
                        Code::InlineWithUpdates,
                        d,
                        format!(
                            "`{}` has update definitions, so it cannot be inlined",
                            d.func
                        ),
                    ));
                }
                scheds[fi].compute = Level::Inline;
                compute_dir.insert(d.func.clone(), d);
            }
            DirectiveKind::Bound { var, min, extent } => {
                let i = pure_index(func, d, var)?;
                scheds[fi].bounds.push((i, min.clone(), extent.clone()));
            }
            DirectiveKind::AlignBounds {
                var,
                modulus,
                remainder,
            } => {
                let i = pure_index(func, d, var)?;
                if positive_const(modulus).is_none() {
                    return Err(ScheduleError::new(
                        Code::NonConstantFactor,
                        d,
                        format!("the modulus must be a positive constant, but it is `{modulus}`"),
                    ));
                }
                scheds[fi]
                    .align
                    .push((i, modulus.clone(), remainder.clone()));
            }
            DirectiveKind::FoldStorage { var, extent } => {
                let i = pure_index(func, d, var)?;
                let Some(e) = positive_const(extent) else {
                    return Err(ScheduleError::new(
                        Code::NonConstantFactor,
                        d,
                        format!(
                            "the fold extent must be a positive constant, but it is `{extent}`"
                        ),
                    ));
                };
                scheds[fi].fold.push((i, e));
            }
            DirectiveKind::ReorderStorage(vars) => {
                if is_output {
                    return Err(ScheduleError::new(
                        Code::OutputCallSchedule,
                        d,
                        format!(
                            "`{}` is an output: its layout in memory is its output buffer's (the caller's strides)",
                            d.func
                        ),
                    ));
                }
                let mut dims = Vec::with_capacity(vars.len());
                for v in vars {
                    let i = pure_index(func, d, v)?;
                    if dims.contains(&i) {
                        return Err(ScheduleError::new(
                            Code::ReorderRepeated,
                            d,
                            format!("`{v}` appears twice"),
                        ));
                    }
                    dims.push(i);
                }
                // As `reorder` does for loops: the listed dimensions take
                // the places they held among themselves, in the order
                // given; the others stay where they are.
                let storage = &mut scheds[fi].storage;
                let mut places: Vec<usize> = dims
                    .iter()
                    .filter_map(|dim| storage.iter().position(|s| s == dim))
                    .collect();
                places.sort_unstable();
                for (place, dim) in places.into_iter().zip(dims) {
                    storage[place] = dim;
                }
            }
            _ => {}
        }
    }
    // Storage defaults to the compute level unless set explicitly.
    for s in &mut scheds {
        if !store_set.contains_key(&s.name) {
            s.store = s.compute.clone();
        } else if s.compute == Level::Inline {
            return Err(ScheduleError::new(
                Code::StoreOfInlined,
                store_set[&s.name],
                format!(
                    "`{}` is inlined, so it has no storage; add compute_at or compute_root",
                    s.name
                ),
            ));
        }
    }
    let inlined: BTreeSet<String> = scheds
        .iter()
        .filter(|s| s.compute == Level::Inline)
        .map(|s| s.name.clone())
        .collect();
    let calls = effective_calls(pipeline, &inlined);
    // Halide computes an unscheduled func with updates at the innermost loop
    // of its use. We do that for the funcs the front end generates for
    // inline reductions (`sum(..)` per point), and compute user-written
    // reductions at the root, which is what histogram-like code needs.
    for s in scheds.iter_mut() {
        let generated = pipeline.func(&s.name).is_some_and(|f| {
            matches!(f.origin, argent_ir::FuncOrigin::Generated { .. }) && !f.updates.is_empty()
        });
        if !generated
            || compute_dir.contains_key(&s.name)
            || store_set.contains_key(&s.name)
            || s.is_output
        {
            continue;
        }
        let users: Vec<&(String, usize)> = calls
            .iter()
            .filter(|(k, callees)| {
                callees.contains(&s.name) && k.0 != s.name && !inlined.contains(&k.0)
            })
            .map(|(k, _)| k)
            .collect();
        if let [(user, stage)] = users.as_slice() {
            if let Some(b) = band_of(user, *stage).filter(|b| !b.dims.is_empty()) {
                s.compute = Level::At {
                    func: user.clone(),
                    stage: *stage,
                    var: b.dims[0].full.clone(),
                };
                s.store = s.compute.clone();
            }
        }
    }
    let level_of_func: HashMap<String, Level> = scheds
        .iter()
        .map(|s| (s.name.clone(), s.compute.clone()))
        .collect();
    // Cycles: follow compute levels through consumers.
    let implicit: HashMap<String, Directive> = scheds
        .iter()
        .map(|s| {
            let d = Directive {
                func: s.name.clone(),
                stage: StageRef::Pure,
                kind: DirectiveKind::ComputeRoot,
                span: argent_ir::Span::DUMMY,
            };
            (s.name.clone(), d)
        })
        .collect();
    let compute_dir: HashMap<String, &Directive> = scheds
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                compute_dir
                    .get(&s.name)
                    .copied()
                    .unwrap_or(&implicit[&s.name]),
            )
        })
        .collect();
    for s in &scheds {
        let mut seen = vec![s.name.clone()];
        let mut cur = s.compute.clone();
        while let Level::At { func, .. } = cur {
            if seen.contains(&func) {
                let d = compute_dir[&s.name];
                seen.push(func);
                return Err(ScheduleError::new(
                    Code::ComputeAtCycle,
                    d,
                    format!("compute levels form a cycle: {}", seen.join(" -> ")),
                ));
            }
            seen.push(func.clone());
            cur = level_of_func.get(&func).cloned().unwrap_or(Level::Root);
        }
        if cur == Level::Inline && seen.len() > 1 {
            let d = compute_dir[&s.name];
            let last = seen.last().cloned().unwrap_or_default();
            return Err(ScheduleError::new(
                Code::NoSuchLoop,
                d,
                format!(
                    "`{last}` is inlined, so it has no loops to compute `{}` in",
                    s.name
                ),
            ));
        }
    }
    // Every use must run inside the compute level, which must run inside the store level.
    for s in &scheds {
        if let level @ Level::At { func: consumer, .. } = &s.compute {
            let d = compute_dir[&s.name];
            let mut users: Vec<(String, usize)> = calls
                .iter()
                .filter(|(_, callees)| callees.contains(&s.name))
                .map(|(k, _)| k.clone())
                .filter(|(f, _)| !inlined.contains(f) && *f != s.name)
                .collect();
            users.sort();
            if users.is_empty()
                || !users
                    .iter()
                    .any(|(f, _)| runs_inside(f, consumer, &level_of_func))
            {
                return Err(ScheduleError::new(
                    Code::NotAConsumer,
                    d,
                    format!("`{consumer}` does not use `{}`", s.name),
                ));
            }
            for (uf, us) in &users {
                if !stage_inside(uf, *us, level, &level_of_func, bands) {
                    let who = if *us == 0 {
                        uf.clone()
                    } else {
                        format!("{uf}.update({})", us - 1)
                    };
                    return Err(ScheduleError::new(
                        Code::LevelDoesNotEncloseUses,
                        d,
                        format!(
                            "`{}` is also used by {who}, which does not run inside the loop {level}",
                            s.name
                        ),
                    ));
                }
            }
        }
        if let Level::At { .. } = &s.store {
            let inside = match &s.compute {
                Level::At { func, stage, var } => {
                    level_inside(func, *stage, var, &s.store, &level_of_func, bands)
                }
                _ => false,
            };
            if !inside {
                let d = store_set[&s.name];
                return Err(ScheduleError::new(
                    Code::StoreInsideCompute,
                    d,
                    format!(
                        "the store level {} is not the compute level {} nor a loop around it; storage must be at or outside the compute level",
                        s.store, s.compute
                    ),
                ));
            }
        }
    }
    for s in &mut scheds {
        if let Some(level) = private_store_level(&s.compute, &s.store, &level_of_func, bands) {
            s.store = level;
        }
    }
    Ok(scheds)
}

/// The store level that keeps a func's storage private to each iteration of
/// the parallel loops between its store and compute levels, or `None` when
/// no parallel loop lies between them.
///
/// Storage outside a parallel loop whose iterations each compute the func
/// would be one buffer that concurrent iterations write at once: a scan
/// (`cdf.compute_at(out, y).store_at(out, x)` with `out.parallel(y)`)
/// would see another iteration's partial sums. Nothing carries values
/// from one parallel iteration to the next (the sliding window never
/// slides over a parallel loop), so storage inside the innermost such loop
/// gives the same values:
///
/// ```text
/// store at out.s0.x, compute at out.s0.y, y parallel
///   => store at out.s0.y, compute at out.s0.y
/// ```
fn private_store_level(
    compute: &Level,
    store: &Level,
    levels: &HashMap<String, Level>,
    bands: &[StageBand],
) -> Option<Level> {
    if compute == store {
        return None;
    }
    let mut cur = compute.clone();
    // Each step moves out to the consumer's compute level, so a chain
    // longer than the number of funcs would be a cycle (rejected before).
    for _ in 0..=levels.len() {
        let Level::At { func, stage, var } = &cur else {
            return None;
        };
        let band = bands
            .iter()
            .find(|b| b.func == *func && b.stage == *stage)?;
        let start = band.dims.iter().position(|d| d.full == *var)?;
        let store_here = match store {
            Level::At {
                func: sf,
                stage: ss,
                var: sv,
            } if sf == func && ss == stage => Some(band.dims.iter().position(|d| d.full == *sv)?),
            _ => None,
        };
        let end = store_here.unwrap_or(band.dims.len());
        // dims are innermost first: the first parallel one is the innermost.
        if let Some(d) = band.dims[start..end.max(start)]
            .iter()
            .find(|d| d.kind == ForKind::Parallel)
        {
            return Some(Level::At {
                func: func.clone(),
                stage: *stage,
                var: d.full.clone(),
            });
        }
        if store_here.is_some() {
            return None;
        }
        cur = levels.get(func).cloned().unwrap_or(Level::Root);
    }
    None
}

fn runs_inside(f: &str, consumer: &str, levels: &HashMap<String, Level>) -> bool {
    let mut cur = f.to_string();
    for _ in 0..levels.len() + 1 {
        if cur == consumer {
            return true;
        }
        match levels.get(&cur) {
            Some(Level::At { func, .. }) => cur = func.clone(),
            _ => return false,
        }
    }
    false
}

/// Whether the loop `var` of stage `stage` of `func` is at or inside `level`.
fn level_inside(
    func: &str,
    stage: usize,
    var: &str,
    level: &Level,
    levels: &HashMap<String, Level>,
    bands: &[StageBand],
) -> bool {
    let Level::At {
        func: lf,
        stage: ls,
        var: lv,
    } = level
    else {
        return matches!(level, Level::Root);
    };
    if func == lf && stage == *ls {
        let Some(b) = bands.iter().find(|b| b.func == func && b.stage == stage) else {
            return false;
        };
        let pos = |v: &str| b.dims.iter().position(|d| d.full == v);
        return matches!((pos(var), pos(lv)), (Some(a), Some(l)) if a <= l);
    }
    match levels.get(func) {
        Some(Level::At {
            func: f2,
            stage: s2,
            var: v2,
        }) => level_inside(f2, *s2, v2, level, levels, bands),
        _ => false,
    }
}

/// Whether the body of stage `stage` of `func` runs inside `level`.
fn stage_inside(
    func: &str,
    stage: usize,
    level: &Level,
    levels: &HashMap<String, Level>,
    bands: &[StageBand],
) -> bool {
    let Level::At {
        func: lf,
        stage: ls,
        ..
    } = level
    else {
        return true;
    };
    if func == lf {
        return stage == *ls;
    }
    match levels.get(func) {
        Some(Level::At {
            func: f2,
            stage: s2,
            var: v2,
        }) => level_inside(f2, *s2, v2, level, levels, bands),
        _ => false,
    }
}

fn pure_index(func: &argent_ir::Func, d: &Directive, var: &str) -> Result<usize, ScheduleError> {
    func.args.iter().position(|a| a == var).ok_or_else(|| {
        ScheduleError::new(
            Code::NotPureVar,
            d,
            format!(
                "`{var}` is not a pure variable of `{}` (its pure variables are {})",
                func.name,
                func.args.join(", ")
            ),
        )
    })
}

fn stage_label(b: &StageBand) -> String {
    format!("{}.s{}", b.func, b.stage)
}

/// Build the tree view: root funcs in realization order under a sequence,
/// producers sunk under the band member of their compute level.
fn tree_view(tree: &ScheduleTree) -> Node {
    let stages: Vec<String> = tree
        .bands
        .iter()
        .filter(|b| {
            tree.func(&b.func)
                .is_some_and(|f| f.compute != Level::Inline)
        })
        .map(|b| {
            let dims: Vec<&str> = b.dims_outer_first().map(|d| d.full.as_str()).collect();
            format!("{}[{}]", stage_label(b), dims.join(", "))
        })
        .collect();
    let roots: Vec<Node> = tree
        .realization_order
        .iter()
        .filter(|f| tree.func(f).is_some_and(|s| s.compute == Level::Root))
        .map(|f| func_node(tree, f))
        .collect();
    Node::Domain {
        stages,
        child: Box::new(sequence(roots)),
    }
}

fn sequence(mut nodes: Vec<Node>) -> Node {
    match nodes.len() {
        0 => Node::Leaf,
        1 => nodes.pop().unwrap_or(Node::Leaf),
        _ => Node::Sequence(nodes),
    }
}

fn func_node(tree: &ScheduleTree, func: &str) -> Node {
    let stages: Vec<Node> = tree
        .bands
        .iter()
        .filter(|b| b.func == func)
        .map(|b| {
            let inlined: Vec<String> = tree
                .pipeline
                .func(func)
                .map(|f| stage_calls(f, b.stage))
                .unwrap_or_default()
                .into_iter()
                .filter(|g| tree.func(g).is_some_and(|s| s.compute == Level::Inline))
                .map(|g| format!("{g}.s0"))
                .collect();
            let body = band_chain(tree, b, 0);
            let body = if inlined.is_empty() {
                body
            } else {
                Node::Expansion {
                    expanded: inlined,
                    child: Box::new(body),
                }
            };
            Node::Filter {
                stage: stage_label(b),
                child: Box::new(body),
            }
        })
        .collect();
    sequence(stages)
}

/// The band members of `b` from outer position `from` inwards, split where
/// marks or sunk producers interrupt them.
fn band_chain(tree: &ScheduleTree, b: &StageBand, from: usize) -> Node {
    let dims: Vec<&Dim> = b.dims_outer_first().collect();
    if from >= dims.len() {
        return Node::Leaf;
    }
    let sunk = |d: &Dim| -> Vec<String> {
        tree.realization_order
            .iter()
            .filter(|f| {
                matches!(tree.func(f).map(|s| &s.compute), Some(Level::At { func, stage, var }) if *func == b.func && *stage == b.stage && *var == d.full)
            })
            .cloned()
            .collect()
    };
    let stored = |d: &Dim| -> Vec<String> {
        tree.funcs
            .iter()
            .filter(|s| s.store != s.compute && matches!(&s.store, Level::At { func, stage, var } if *func == b.func && *stage == b.stage && *var == d.full))
            .map(|s| s.name.clone())
            .collect()
    };
    // A band runs from `from` while members stay serial and nothing is sunk.
    let mut end = from;
    while end < dims.len() {
        let d = dims[end];
        if end > from && (d.kind != ForKind::Serial || !stored(d).is_empty()) {
            break;
        }
        end += 1;
        if !sunk(d).is_empty() || d.kind != ForKind::Serial {
            break;
        }
    }
    let members = &dims[from..end];
    let last = members[members.len() - 1];
    let producers = sunk(last);
    let rest = band_chain(tree, b, end);
    let child = if producers.is_empty() {
        rest
    } else {
        let mut children: Vec<Node> = producers.iter().rev().map(|p| func_node(tree, p)).collect();
        children.reverse();
        if rest != Node::Leaf {
            children.push(rest);
        }
        sequence(children)
    };
    let mut node = Node::Band {
        members: members.iter().map(|d| d.full.clone()).collect(),
        permutable: b.permutable || members.iter().all(|d| d.coincident),
        coincident: members.iter().map(|d| d.coincident).collect(),
        child: Box::new(child),
    };
    let first = members[0];
    if first.kind != ForKind::Serial {
        let mark = match first.kind {
            ForKind::GpuBlock(i) => format!("gpu_block.{i}"),
            ForKind::GpuThread(i) => format!("gpu_thread.{i}"),
            k => k.keyword().to_string(),
        };
        node = Node::Mark {
            mark,
            child: Box::new(node),
        };
    }
    for f in stored(first) {
        node = Node::Mark {
            mark: format!("store {f}"),
            child: Box::new(node),
        };
    }
    node
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn go(n: &Node, depth: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let pad = "  ".repeat(depth);
            match n {
                Node::Domain { stages, child } => {
                    writeln!(f, "{pad}domain {{ {} }}", stages.join(", "))?;
                    go(child, depth + 1, f)
                }
                Node::Sequence(children) => {
                    writeln!(f, "{pad}sequence")?;
                    children.iter().try_for_each(|c| go(c, depth + 1, f))
                }
                Node::Filter { stage, child } => {
                    writeln!(f, "{pad}filter {stage}")?;
                    go(child, depth + 1, f)
                }
                Node::Band {
                    members,
                    permutable,
                    coincident,
                    child,
                } => {
                    let c: Vec<&str> = coincident
                        .iter()
                        .map(|c| if *c { "1" } else { "0" })
                        .collect();
                    let p = if *permutable { " permutable" } else { "" };
                    writeln!(
                        f,
                        "{pad}band [{}]{p} coincident [{}]",
                        members.join(", "),
                        c.join(", ")
                    )?;
                    go(child, depth + 1, f)
                }
                Node::Mark { mark, child } => {
                    writeln!(f, "{pad}mark {mark}")?;
                    go(child, depth + 1, f)
                }
                Node::Expansion { expanded, child } => {
                    writeln!(f, "{pad}expansion {{ {} }}", expanded.join(", "))?;
                    go(child, depth + 1, f)
                }
                Node::Leaf => Ok(()),
            }
        }
        go(self, 0, f)
    }
}

impl fmt::Display for ScheduleTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)?;
        for s in &self.funcs {
            if s.compute != Level::Inline && (s.compute != Level::Root || s.store != s.compute) {
                writeln!(
                    f,
                    "# {}: compute at {}, store at {}",
                    s.name, s.compute, s.store
                )?;
            }
        }
        Ok(())
    }
}
