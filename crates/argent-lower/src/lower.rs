//! The lowering pipeline: the passes in order, with optional IR dumps.
//!
//! 1. `schedule_tree`      directives -> schedule tree (and rfactor)
//! 2. `synthesize`         loop nests, producers injected at compute/store levels
//! 3. `bounds_inference`   regions of every func as `let f.sK.v.min/max`
//! 4. `sliding_window`     compute only new rows along serial loops
//! 5. `realize_bounds`     storage bounds of every realization
//! 6. `storage_folding`    circular buffers
//! 7. `checks`             input/output region assertions, root lets
//! 8. `partition_loops`, `flatten`, `unroll`, `vectorize` (the passes engineer's), then
//!    `simplify` and `cse` from argent-arith

use crate::error::{LowerBug, LowerError};
use crate::schedule_tree::{self, Level, ScheduleTree};
use crate::verify::{Stage, verify};
use crate::{bounds_inference, sliding_window, storage_folding, synthesize};
use argent_ir::{BufferArg, BufferRole, Module, Param, Pipeline, Stmt};

/// Names of the passes, in order, as accepted by `print_after`.
pub const PASSES: &[&str] = &[
    "synthesize",
    "bounds_inference",
    "sliding_window",
    "realize_bounds",
    "storage_folding",
    "checks",
    "unswitch_params",
    "partition_loops",
    "flatten",
    "unroll",
    "trim_no_ops",
    "vectorize",
    "specialize_strides",
    "simplify",
    "interleave_stores",
    "cse",
    "hoist_invariants",
];

/// The target's one property that lowering needs, and what to record
/// while lowering.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LowerOptions {
    /// The backend has no vector instructions (WebAssembly without
    /// SIMD128) and computes vectors lane by lane, one copy of each
    /// statement per lane: `vectorize` then makes vectorised loops serial
    /// loops, or 4-lane vectors where the body has loops inside (see
    /// `vectorize::SCALAR_TARGET_LANES`), so that the module does not grow
    /// with the vector width.
    pub scalar_target: bool,
    /// `Some("all")` dumps the IR after every pass that changed it;
    /// `Some(name)` after that pass only. When `None`, the environment
    /// variable `ARGENT_PRINT_AFTER` is consulted (on native targets).
    pub print_after: Option<String>,
    /// Stop after `checks`: the module's body is then the multi-dimensional
    /// loop nest (for `argent lower` and for timing the core alone).
    pub core_only: bool,
    /// Run the IR verifier (`crate::verify`) after every pass; a malformed
    /// result is reported as a compiler bug naming the pass. Always on in
    /// debug builds.
    pub verify: bool,
    /// Record, for every pass, its running time (on native targets only:
    /// `std::time::Instant` is unavailable on wasm32-unknown-unknown) and
    /// the size of the IR it produced, in [`Lowered::pass_stats`].
    pub time_passes: bool,
}

/// What one pass cost and produced, recorded when `time_passes` is set.
#[derive(Clone, Debug, PartialEq)]
pub struct PassStat {
    pub pass: String,
    /// Wall-clock seconds of the pass; `None` where no clock exists (wasm32).
    pub seconds: Option<f64>,
    /// Statement and expression nodes of the result, counting shared
    /// expression nodes once per use (the size later passes walk).
    pub nodes: usize,
}

/// The result of lowering.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The final module: flattened, unrolled, vectorised, simplified.
    pub module: Module,
    /// The loop nest before the optimising passes (after `checks`):
    /// multi-dimensional `Realize`/`Provide`, what `argent lower` shows by default.
    pub loop_nest: Stmt,
    pub schedule_tree: ScheduleTree,
    /// `(pass name, IR text)` for each requested pass that changed the IR.
    pub dumps: Vec<(String, String)>,
    /// Per-pass times and IR sizes, when `LowerOptions::time_passes` is set.
    pub pass_stats: Vec<PassStat>,
    /// The IR between the optimising passes, which no longer serves any
    /// purpose. Freeing it takes a few per cent of a compile, so it is
    /// handed to the caller rather than freed inside `lower`: the page's
    /// compiler worker frees it after it has answered.
    pub retired: Vec<Stmt>,
}

/// A monotonic clock where the target has one.
#[derive(Clone, Copy)]
struct Clock(#[cfg(not(target_arch = "wasm32"))] std::time::Instant);

impl Clock {
    fn now() -> Clock {
        Clock(
            #[cfg(not(target_arch = "wasm32"))]
            std::time::Instant::now(),
        )
    }

    fn seconds_since(self) -> Option<f64> {
        #[cfg(not(target_arch = "wasm32"))]
        return Some(self.0.elapsed().as_secs_f64());
        #[cfg(target_arch = "wasm32")]
        None
    }
}

/// Counts statement and expression nodes.
#[derive(Default)]
struct NodeCounter(usize);

impl argent_ir::visit::Visitor for NodeCounter {
    fn visit_expr(&mut self, e: &argent_ir::Expr) {
        self.0 += 1;
        argent_ir::visit::walk_expr(self, e);
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        self.0 += 1;
        argent_ir::visit::walk_stmt(self, s);
    }
}

fn count_nodes(s: &Stmt) -> usize {
    let mut counter = NodeCounter::default();
    argent_ir::visit::Visitor::visit_stmt(&mut counter, s);
    counter.0
}

struct Recorder {
    wanted: Option<String>,
    last: String,
    dumps: Vec<(String, String)>,
    /// The module's buffers and parameters, when every pass's result is verified.
    verify: Option<(Vec<BufferArg>, Vec<Param>)>,
    /// Present when passes are timed: the stats so far and when the
    /// current pass began.
    timing: Option<(Vec<PassStat>, Clock)>,
    /// See [`Lowered::retired`].
    retired: Vec<Stmt>,
}

impl Recorder {
    /// `pass` applied to `s`; `s` itself is kept in `retired` (see
    /// [`Lowered::retired`]).
    fn retire(&mut self, s: Stmt, pass: impl FnOnce(&Stmt) -> Stmt) -> Stmt {
        let next = pass(&s);
        self.retired.push(s);
        next
    }

    /// Verify (when asked) and dump (when asked) the IR after `pass`.
    fn record(&mut self, pass: &str, s: &Stmt) -> Result<(), LowerError> {
        if let Some((stats, started)) = &mut self.timing {
            stats.push(PassStat {
                pass: pass.to_string(),
                seconds: started.seconds_since(),
                nodes: count_nodes(s),
            });
        }
        if let Some((buffers, params)) = &self.verify {
            verify(s, buffers, params, Stage::after_pass(pass))
                .map_err(|e| LowerBug(format!("the IR after `{pass}` is malformed: {}", e.0)))?;
        }
        self.dump(pass, s);
        // The next pass's time starts after this bookkeeping.
        if let Some((_, started)) = &mut self.timing {
            *started = Clock::now();
        }
        Ok(())
    }

    fn dump(&mut self, pass: &str, s: &Stmt) {
        let Some(w) = &self.wanted else { return };
        if w != "all" && w != pass {
            return;
        }
        let text = s.to_string();
        if text != self.last {
            self.dumps.push((pass.to_string(), text.clone()));
            self.last = text;
        }
    }
}

/// Lower `pipeline` (algorithm + schedule) into a [`Module`] for backends.
///
/// Example: `blur_y(x, y) = blur_x(x, y - 1) + ..` with `blur_x.compute_root()`
/// lowers to a body with input checks, `realize blur_x`, `produce blur_x`
/// loops and then `produce blur_y` loops over the output buffer's region.
pub fn lower(pipeline: &Pipeline, options: &LowerOptions) -> Result<Lowered, LowerError> {
    let Some(versions) = crate::specialize::first_specialization(pipeline)? else {
        return lower_version(pipeline, options);
    };
    // Each version on its own, through every pass; the module then
    // chooses on entry (`specialize`).
    // A schedule error says which version it is in: a directive valid in
    // one (a loop that only the specialisation splits) may not be in the
    // other.
    let in_version = |holds: bool| {
        let cond = versions.cond.clone();
        move |e: LowerError| match e {
            LowerError::Schedule(mut e) => {
                e.message = format!(
                    "{} (in the version where `{cond}` {})",
                    e.message,
                    if holds { "holds" } else { "does not hold" }
                );
                LowerError::Schedule(e)
            }
            e => e,
        }
    };
    let specialized = lower(&versions.specialized, options).map_err(in_version(true))?;
    let general = lower(&versions.general, options).map_err(in_version(false))?;
    let choose = |a: Stmt, b: Stmt| Stmt::IfThenElse {
        cond: versions.cond.clone(),
        then: Box::new(a),
        otherwise: Some(Box::new(b)),
    };
    let mut dumps = Vec::new();
    for (label, version) in [("specialized", &specialized), ("general", &general)] {
        for (pass, text) in &version.dumps {
            dumps.push((format!("{pass} ({label}: {})", versions.cond), text.clone()));
        }
    }
    let mut pass_stats = specialized.pass_stats;
    pass_stats.extend(general.pass_stats);
    let mut retired = specialized.retired;
    retired.extend(general.retired);
    Ok(Lowered {
        module: Module {
            body: choose(specialized.module.body, general.module.body),
            ..general.module
        },
        loop_nest: choose(specialized.loop_nest, general.loop_nest),
        schedule_tree: general.schedule_tree,
        dumps,
        pass_stats,
        retired,
    })
}

/// [`lower`] for a pipeline without specialisations.
fn lower_version(pipeline: &Pipeline, options: &LowerOptions) -> Result<Lowered, LowerError> {
    // The simplifier's memo holds the previous compile's expressions.
    argent_arith::simplify::forget_simplified();
    let timing = options.time_passes.then(|| (Vec::new(), Clock::now()));
    let tree = schedule_tree::build(pipeline)?;
    let wanted = options
        .print_after
        .clone()
        .or_else(|| std::env::var("ARGENT_PRINT_AFTER").ok());
    let mut buffers: Vec<BufferArg> = pipeline
        .inputs
        .iter()
        .map(|i| BufferArg {
            name: i.name.clone(),
            ty: i.ty,
            dims: i.dims.len(),
            role: BufferRole::Input,
        })
        .collect();
    for o in &pipeline.outputs {
        if let Some(f) = pipeline.func(o) {
            buffers.push(BufferArg {
                name: o.clone(),
                ty: f.ty,
                dims: f.args.len(),
                role: BufferRole::Output,
            });
        }
    }
    let mut rec = Recorder {
        wanted,
        last: String::new(),
        dumps: Vec::new(),
        verify: (options.verify || cfg!(debug_assertions))
            .then(|| (buffers.clone(), pipeline.params.clone())),
        timing,
        retired: Vec::new(),
    };
    let inlined = tree
        .funcs
        .iter()
        .filter(|s| s.compute == Level::Inline)
        .map(|s| s.name.clone())
        .collect();
    let algorithm = synthesize::inline_funcs(&tree.pipeline, &inlined);

    let s = synthesize::synthesize(&tree)?;
    rec.record("synthesize", &s)?;
    let (s, root_lets) = bounds_inference::bounds_inference(&tree, &algorithm, &s)?;
    // Root-level region bindings are kept apart until `checks`; show them.
    let shown = |s: &Stmt| {
        root_lets
            .iter()
            .rev()
            .fold(s.clone(), |b, (n, v)| Stmt::LetStmt {
                name: n.clone(),
                value: v.clone(),
                body: Box::new(b),
            })
    };
    rec.record("bounds_inference", &shown(&s))?;
    let s = sliding_window::sliding_window(&tree, &s);
    rec.record("sliding_window", &shown(&s))?;
    let s = bounds_inference::realize_bounds(&algorithm, &s)?;
    rec.record("realize_bounds", &shown(&s))?;
    let s = storage_folding::storage_folding(&tree, &s)?;
    rec.record("storage_folding", &shown(&s))?;
    let s = bounds_inference::finish(&algorithm, s, &root_lets)?;
    rec.record("checks", &s)?;
    let loop_nest = s.clone();
    let name = pipeline
        .outputs
        .first()
        .cloned()
        .unwrap_or_else(|| "pipeline".into());
    if options.core_only {
        let module = Module {
            name,
            buffers,
            params: pipeline.params.clone(),
            body: s,
        };
        return Ok(Lowered {
            module,
            loop_nest,
            schedule_tree: tree,
            dumps: rec.dumps,
            pass_stats: rec.timing.map(|t| t.0).unwrap_or_default(),
            retired: rec.retired,
        });
    }
    // The passes engineer's passes, in order.
    let s = if pipeline.params.is_empty() {
        s
    } else {
        rec.retire(s, |s| {
            crate::unswitch_params::unswitch_params(s, &pipeline.params)
        })
    };
    rec.record("unswitch_params", &s)?;
    let s = rec.retire(s, crate::partition_loops::partition_loops);
    rec.record("partition_loops", &s)?;

    let storage_orders: argent_arith::fast_hash::FastHashMap<String, Vec<usize>> = tree
        .funcs
        .iter()
        .filter(|f| f.storage_reordered())
        .map(|f| (f.name.clone(), f.storage.clone()))
        .collect();
    let s = rec.retire(s, |s| crate::flatten::flatten(s, &buffers, &storage_orders));
    rec.record("flatten", &s)?;
    let s = rec.retire(s, crate::unroll::unroll);
    rec.record("unroll", &s)?;
    let s = rec.retire(s, crate::trim_no_ops::trim_no_ops);
    rec.record("trim_no_ops", &s)?;
    let s = rec.retire(s, |s| {
        crate::vectorize::vectorize(s, !options.scalar_target)
    });
    rec.record("vectorize", &s)?;
    // Dense-innermost-stride version of the body (vec engineer's pass).
    // An output whose schedule bounds its channels to a constant count has
    // at least that many (see `specialize_strides`).
    let min_channels: std::collections::HashMap<String, i64> = tree
        .funcs
        .iter()
        .filter(|f| f.is_output)
        .filter_map(|f| {
            let (_, _, extent) = f.bounds.iter().find(|(dim, _, _)| *dim == 2)?;
            Some((f.name.clone(), argent_arith::const_int(extent)?))
        })
        .collect();
    let s = rec.retire(s, |s| {
        crate::specialize_strides::specialize_strides(s, &buffers, &min_channels)
    });
    rec.record("specialize_strides", &s)?;
    let s = rec.retire(s, argent_arith::simplify_stmt);
    rec.record("simplify", &s)?;
    let s = rec.retire(s, crate::interleave_stores::interleave_stores);
    rec.record("interleave_stores", &s)?;
    let s = rec.retire(s, argent_arith::cse_stmt);
    rec.record("cse", &s)?;
    // Loop-invariant scalar arithmetic moves out of serial loops.
    let s = rec.retire(s, crate::hoist_invariants::hoist_loop_invariants);
    rec.record("hoist_invariants", &s)?;
    let module = Module {
        name: pipeline
            .outputs
            .first()
            .cloned()
            .unwrap_or_else(|| "pipeline".into()),
        buffers,
        params: pipeline.params.clone(),
        body: s,
    };
    Ok(Lowered {
        module,
        loop_nest,
        schedule_tree: tree,
        dumps: rec.dumps,
        pass_stats: rec.timing.map(|t| t.0).unwrap_or_default(),
        retired: rec.retired,
    })
}
