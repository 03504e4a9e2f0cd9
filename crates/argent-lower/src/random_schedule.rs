//! Random valid schedules, seeded and reproducible: the mutation engine of
//! the future autotuner. Candidates are proposed one directive at a time
//! and kept only when the schedule tree still builds, so every result is
//! valid by construction (the checks live in one place: `schedule_tree`).

use crate::schedule_tree::{self, Level, ScheduleTree, stage_calls};
use argent_ir::{Directive, DirectiveKind, Expr, Pipeline, Span, StageRef, TailStrategy};

/// SplitMix64: tiny, fast, and identical on every platform, so a seed
/// printed by a failing test reproduces the same schedule anywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn directive(func: &str, stage: StageRef, kind: DirectiveKind) -> Directive {
    Directive {
        func: func.to_string(),
        stage,
        kind,
        span: Span::DUMMY,
    }
}

fn try_push(pipeline: &Pipeline, list: &mut Vec<Directive>, d: Directive) -> Option<ScheduleTree> {
    let mut p = pipeline.clone();
    p.schedule.directives = list.clone();
    p.schedule.directives.push(d.clone());
    let tree = schedule_tree::build(&p).ok()?;
    list.push(d);
    Some(tree)
}

fn current(pipeline: &Pipeline, list: &[Directive]) -> Option<ScheduleTree> {
    let mut p = pipeline.clone();
    p.schedule.directives = list.to_vec();
    schedule_tree::build(&p).ok()
}

/// A random valid schedule for `pipeline` (its own schedule is ignored):
/// call schedules (inline, compute_root, compute_at and store_at some
/// consumer loop) and domain orders (splits, tiles, reorders, vectorize by
/// 4/8/16, unroll, parallel, fuse, rfactor of exact update stages) for every
/// func and update stage, then storage orders (`reorder_storage`) for
/// some of the funcs that are not inlined.
///
/// Example: `random_schedule(&blur, 7)` might give
/// `blur_y.tile(x, y, x_o, y_o, x_i, y_i, 8, 4)`, `blur_y.vectorize(x_i, 4)`,
/// `blur_x.store_root()`, `blur_x.compute_at(blur_y, y_o)`.
pub fn random_schedule(pipeline: &Pipeline, seed: u64) -> Vec<Directive> {
    let mut rng = Rng::new(seed);
    let mut list: Vec<Directive> = Vec::new();
    let mut unscheduled = pipeline.clone();
    unscheduled.schedule = Default::default();
    // Domain order first (consumers' loops must exist before producers are
    // placed in them), for every stage.
    for f in &pipeline.funcs {
        for stage in 0..=f.updates.len() {
            let sref = if stage == 0 {
                StageRef::Pure
            } else {
                StageRef::Update(stage - 1)
            };
            // Sometimes factor one reduction variable of an update out
            // into an intermediate func (kept only where it is legal: an
            // associative update whose variable carries no dependence).
            let rvars: Vec<String> = match stage.checked_sub(1).map(|u| &f.updates[u].rdom) {
                Some(Some(rdom)) => rdom.dims.iter().map(|r| r.name.clone()).collect(),
                _ => Vec::new(),
            };
            if !rvars.is_empty() && rng.chance(0.3) {
                let rvar = rng.pick(&rvars).clone();
                // Exact reductions only: a float sum regrouped rounds
                // differently, and random schedules are checked bit for bit.
                let exact = stage
                    .checked_sub(1)
                    .is_some_and(|u| schedule_tree::is_associative_update(f, &f.updates[u]));
                // Sometimes strips of the variable instead (Halide's
                // `split(r.y, ryo, ryi, 8).rfactor(ryo, v)`), from a random
                // stream of their own so other schedules stay as they were.
                let mut trial = list.clone();
                let rvar = match split_for_rfactor(seed, &f.name, stage, &rvar) {
                    Some((split, piece))
                        if try_push(
                            &unscheduled,
                            &mut trial,
                            directive(&f.name, sref, split.clone()),
                        )
                        .is_some() =>
                    {
                        piece
                    }
                    _ => rvar,
                };
                let kind = DirectiveKind::Rfactor {
                    pairs: vec![(rvar, format!("{}_rf{stage}", f.name))],
                };
                if exact
                    && try_push(&unscheduled, &mut trial, directive(&f.name, sref, kind)).is_some()
                {
                    list = trial;
                    push_random_intermediate_schedule(&unscheduled, seed, &f.name, &mut list);
                }
            }
            for step in 0..rng.below(4) {
                let Some(tree) = current(&unscheduled, &list) else {
                    break;
                };
                let Some(band) = tree.band(&f.name, stage) else {
                    break;
                };
                if band.dims.is_empty() {
                    break;
                }
                let names: Vec<String> = band.dims.iter().map(|d| d.name.clone()).collect();
                let Some(kind) =
                    random_domain_kind(&mut rng, pipeline, &f.name, &names, &step.to_string())
                else {
                    continue;
                };
                let _ = try_push(&unscheduled, &mut list, directive(&f.name, sref, kind));
            }
        }
    }
    // Call schedules, consumers first so their levels are settled.
    for f in pipeline.funcs.iter().rev() {
        if pipeline.outputs.contains(&f.name) {
            continue;
        }
        let Some(tree) = current(&unscheduled, &list) else {
            break;
        };
        push_random_call_schedule(&mut rng, &unscheduled, &mut list, &tree, f);
    }
    push_random_storage_orders(&unscheduled, seed, &mut list);
    push_random_specialization(&unscheduled, seed, &mut list);
    list
}

/// For about one schedule in six, a specialisation of the first output
/// on the first input's width (`out.specialize(in.width >= 16)`) with one
/// or two domain-order directives of its own, kept when both versions
/// are valid. Its own random stream. Which version a check runs depends
/// on its image's width, so both are exercised across seeds.
///
/// Example: `out.specialize(in.extent.0 >= 16).split(y, y_s0, y_s1, 4)`.
fn push_random_specialization(pipeline: &Pipeline, seed: u64, list: &mut Vec<Directive>) {
    let mut rng = Rng::new(seed ^ 0x7370_6563_6961_6C);
    if !rng.chance(0.17) {
        return;
    }
    let (Some(output), Some(input)) = (pipeline.outputs.first(), pipeline.inputs.first()) else {
        return;
    };
    let width = Expr::var_i32(argent_ir::buffer_field(&input.name, "extent", 0));
    let cond = Expr::binary(
        argent_ir::BinOp::Ge,
        width,
        Expr::i32(*rng.pick(&[4, 8, 16, 24, 64])),
    );
    let mut inner: Vec<Directive> = Vec::new();
    for step in 0..1 + rng.below(2) {
        // The specialised version's band as it stands, to draw from.
        let mut trial = list.clone();
        trial.extend(inner.iter().cloned());
        let Some(tree) = current(pipeline, &trial) else {
            return;
        };
        let Some(band) = tree.band(output, 0) else {
            return;
        };
        let names: Vec<String> = band.dims.iter().map(|d| d.name.clone()).collect();
        if names.is_empty() {
            return;
        }
        let tag = format!("s{step}");
        if let Some(kind) = random_domain_kind(&mut rng, pipeline, output, &names, &tag) {
            trial.push(directive(output, StageRef::Pure, kind.clone()));
            if current(pipeline, &trial).is_some() {
                inner.push(directive(output, StageRef::Pure, kind));
            }
        }
    }
    if inner.is_empty() {
        return;
    }
    let d = directive(
        output,
        StageRef::Pure,
        DirectiveKind::Specialize {
            cond,
            directives: inner,
        },
    );
    // Both versions must be valid: the specialisation's directives after
    // every later one in the list that the general version keeps.
    let mut p = pipeline.clone();
    p.schedule.directives = list.clone();
    p.schedule.directives.push(d.clone());
    let valid = crate::specialize::first_specialization(&p)
        .ok()
        .flatten()
        .is_some_and(|v| {
            schedule_tree::build(&v.specialized).is_ok() && schedule_tree::build(&v.general).is_ok()
        });
    if valid {
        list.push(d);
    }
}

/// Pipelines up to this many funcs get fully random schedules from
/// `seeded_schedule`; deeper ones only mutations of their own schedule.
/// A fully random schedule inlines or computes at inner loops along whole
/// chains, so recomputation multiplies stage by stage (Halide has the same
/// blow-up with everything inlined): one such schedule of camera_pipe (31
/// funcs) ran for over ten minutes in the executor at 24x16.
pub const FULLY_RANDOM_MAX_FUNCS: usize = 12;

/// The schedule that random-schedule checks use for `seed`: for even
/// seeds of pipelines of at most `FULLY_RANDOM_MAX_FUNCS` funcs a fully
/// random one (`random_schedule`), otherwise 1 to 4 mutations of the
/// pipeline's own schedule (`mutate_schedule`).
///
/// Example: `seeded_schedule(&blur, 4)` is `random_schedule(&blur, 4)`;
/// `seeded_schedule(&local_laplacian, 4)` is `mutate_schedule(.., 4, 3)`.
pub fn seeded_schedule(pipeline: &Pipeline, seed: u64) -> Vec<Directive> {
    if seed % 2 == 0 && pipeline.funcs.len() <= FULLY_RANDOM_MAX_FUNCS {
        random_schedule(pipeline, seed)
    } else {
        mutate_schedule(pipeline, seed, 1 + (seed / 2 % 4) as usize)
    }
}

/// For about two in five rfactors, a split of the reduction variable
/// `rvar` of stage `stage` of `func` by 2 to 5 and the piece to factor
/// (the outer one three times in four: strips of rows). Its own random
/// stream.
///
/// Example: `(hist.update(0).split(r.y, hist_ro1, hist_ri1, 3), hist_ro1)`.
fn split_for_rfactor(
    seed: u64,
    func: &str,
    stage: usize,
    rvar: &str,
) -> Option<(DirectiveKind, String)> {
    let salt = func.bytes().fold(0x7370_6C69u64 ^ stage as u64, |h, b| {
        h.rotate_left(5) ^ u64::from(b)
    });
    let mut rng = Rng::new(seed ^ salt);
    if !rng.chance(0.4) {
        return None;
    }
    let outer = format!("{func}_ro{stage}");
    let inner = format!("{func}_ri{stage}");
    let factor = 2 + rng.below(4) as i64;
    let piece = if rng.chance(0.75) {
        outer.clone()
    } else {
        inner.clone()
    };
    let split = DirectiveKind::Split {
        old: rvar.to_string(),
        outer,
        inner,
        factor: Expr::i32(factor),
        tail: TailStrategy::Auto,
    };
    Some((split, piece))
}

/// Half the time, schedule the update of the intermediate that an
/// rfactor of `func` just made (`{func}_intm`, as a user may): one or two
/// domain-order directives, which replace its automatic `parallel`. Its
/// own random stream, so the rest of the schedule for a seed is what it
/// was before intermediates were scheduled.
///
/// Example: `hist_intm.update(0).vectorize(v, 8)`.
fn push_random_intermediate_schedule(
    pipeline: &Pipeline,
    seed: u64,
    func: &str,
    list: &mut Vec<Directive>,
) {
    let salt = func
        .bytes()
        .fold(0x696E_746Du64, |h, b| h.rotate_left(5) ^ u64::from(b));
    let mut rng = Rng::new(seed ^ salt);
    if !rng.chance(0.5) {
        return;
    }
    let intm = argent_ir::rfactor_intermediate(func);
    for step in 0..1 + rng.below(2) {
        let Some(tree) = current(pipeline, list) else {
            return;
        };
        let Some(band) = tree.band(&intm, 1) else {
            return;
        };
        let names: Vec<String> = band.dims.iter().map(|d| d.name.clone()).collect();
        if names.is_empty() {
            return;
        }
        let tag = format!("i{step}");
        if let Some(kind) = random_domain_kind(&mut rng, pipeline, &intm, &names, &tag) {
            let _ = try_push(pipeline, list, directive(&intm, StageRef::Update(0), kind));
        }
    }
}

/// Append `reorder_storage` with a random order to about a quarter of the
/// non-output funcs (rfactor intermediates included) of two or more
/// dimensions that `list` computes somewhere (inlined funcs have no
/// storage). Its own random stream, so
/// the rest of the schedule for a seed is what it was before storage
/// orders were drawn.
///
/// Example: `blur_x.reorder_storage(y, x)` after blur_x's `compute_root()`.
fn push_random_storage_orders(pipeline: &Pipeline, seed: u64, list: &mut Vec<Directive>) {
    let mut rng = Rng::new(seed ^ 0x7374_6F72_6167_65);
    let Some(tree) = current(pipeline, list) else {
        return;
    };
    // The user's funcs and the intermediates of rfactors.
    let funcs = tree.pipeline.funcs.iter().filter(|f| {
        pipeline.func(&f.name).is_some()
            || matches!(f.origin, argent_ir::FuncOrigin::Rfactor { .. })
    });
    for f in funcs {
        let stored = tree
            .func(&f.name)
            .is_some_and(|s| s.compute != Level::Inline);
        if pipeline.outputs.contains(&f.name) || f.args.len() < 2 || !stored {
            continue;
        }
        if !rng.chance(0.25) {
            continue;
        }
        let mut order = f.args.clone();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let kind = DirectiveKind::ReorderStorage(order);
        let _ = try_push(pipeline, list, directive(&f.name, StageRef::Pure, kind));
    }
}

/// Whether `kind` sets where a func is computed or stored.
fn is_call_schedule(kind: &DirectiveKind) -> bool {
    matches!(
        kind,
        DirectiveKind::ComputeAt { .. }
            | DirectiveKind::StoreAt { .. }
            | DirectiveKind::ComputeRoot
            | DirectiveKind::StoreRoot
            | DirectiveKind::ComputeInline
    )
}

/// The autotuner's mutation step: `pipeline`'s own schedule with
/// `mutations` random changes, each kept only when the schedule tree still
/// builds. A change either appends one domain-order directive to a random
/// stage (split, tile, reorder, vectorize, unroll, parallel, fuse) or
/// replaces a random func's call schedule (inline, compute_root, or
/// compute_at a consumer loop, maybe stored further out). Storage orders
/// are drawn last, as in `random_schedule`.
///
/// Why next to `random_schedule`: a fully random schedule of a deep
/// pipeline (local_laplacian's 88 funcs) inlines or computes at inner
/// loops along whole chains, so recomputation multiplies level by level
/// (Halide has the same blow-up with everything inlined) and a single
/// schedule can take hours to run. A few changes to a schedule that was
/// reasonable bound the extra work by the few stages changed, which is
/// also how an autotuner explores.
///
/// Example: `mutate_schedule(&blur, 3, 2)` might give blur's own
/// directives plus `blur_y.split(y, y_om1, y_im1, 4)`, with
/// `blur_x.compute_at(blur_y, y_om1)` in place of `blur_x.compute_root()`.
pub fn mutate_schedule(pipeline: &Pipeline, seed: u64, mutations: usize) -> Vec<Directive> {
    // A stream apart from `random_schedule`'s for the same seed.
    let mut rng = Rng::new(seed ^ 0x6D75_7461_7465);
    let mut list = pipeline.schedule.directives.clone();
    let mut done = 0;
    for attempt in 0..mutations * 8 {
        if done == mutations {
            break;
        }
        let Some(tree) = current(pipeline, &list) else {
            break;
        };
        let f = rng.pick(&pipeline.funcs);
        if !pipeline.outputs.contains(&f.name) && rng.chance(0.5) {
            let mut candidate: Vec<Directive> = list
                .iter()
                .filter(|d| !(d.func == f.name && is_call_schedule(&d.kind)))
                .cloned()
                .collect();
            let Some(tree) = current(pipeline, &candidate) else {
                continue;
            };
            push_random_call_schedule(&mut rng, pipeline, &mut candidate, &tree, f);
            if current(pipeline, &candidate).is_some() {
                list = candidate;
                done += 1;
            }
        } else {
            let stage = rng.below(f.updates.len() + 1);
            let Some(band) = tree.band(&f.name, stage) else {
                continue;
            };
            let names: Vec<String> = band.dims.iter().map(|d| d.name.clone()).collect();
            if names.is_empty() {
                continue;
            }
            let tag = format!("m{attempt}");
            let Some(kind) = random_domain_kind(&mut rng, pipeline, &f.name, &names, &tag) else {
                continue;
            };
            let sref = if stage == 0 {
                StageRef::Pure
            } else {
                StageRef::Update(stage - 1)
            };
            if try_push(pipeline, &mut list, directive(&f.name, sref, kind)).is_some() {
                done += 1;
            }
        }
    }
    push_random_storage_orders(pipeline, seed, &mut list);
    list
}

/// One random domain-order directive (split, tile, reorder, vectorize,
/// unroll, parallel or fuse) for a stage of `func` whose loops are `names`
/// (innermost first); new loop names end in `tag`. None when the drawn
/// kind does not apply (a fuse or tile of a single loop).
fn random_domain_kind(
    rng: &mut Rng,
    pipeline: &Pipeline,
    func: &str,
    names: &[String],
    tag: &str,
) -> Option<DirectiveKind> {
    let v = rng.pick(&names).clone();
    let fresh = |s: &str| format!("{v}_{s}{tag}");
    let factor = Expr::i32(*rng.pick(&[2, 3, 4, 8, 16]));
    let tail = *rng.pick(&[
        TailStrategy::Auto,
        TailStrategy::Auto,
        TailStrategy::GuardWithIf,
        TailStrategy::RoundUp,
        TailStrategy::ShiftInwards,
    ]);
    let is_output = pipeline.outputs.contains(&func.to_string());
    let tail = if is_output && tail != TailStrategy::GuardWithIf {
        TailStrategy::Auto
    } else {
        tail
    };
    let kind = match rng.below(8) {
        0 | 1 => DirectiveKind::Split {
            old: v.clone(),
            outer: fresh("o"),
            inner: fresh("i"),
            factor,
            tail,
        },
        2 if names.len() >= 2 => {
            let w = rng.pick(&names).clone();
            DirectiveKind::Tile {
                x: v.clone(),
                y: w.clone(),
                xo: fresh("xo"),
                yo: fresh("yo"),
                xi: fresh("xi"),
                yi: fresh("yi"),
                x_factor: factor,
                y_factor: Expr::i32(*rng.pick(&[2, 4, 8])),
                tail,
            }
        }
        3 if names.len() >= 2 => {
            let mut order = names.to_vec();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i + 1));
            }
            DirectiveKind::Reorder(order)
        }
        4 => DirectiveKind::Vectorize {
            var: v.clone(),
            factor: Some(Expr::i32(*rng.pick(&[4, 8, 16]))),
        },
        5 => DirectiveKind::Unroll {
            var: v.clone(),
            factor: Some(Expr::i32(*rng.pick(&[2, 3, 4]))),
        },
        6 => DirectiveKind::Parallel {
            var: names[names.len() - 1].clone(),
            task_size: None,
        },
        _ if names.len() >= 2 => {
            // Fuse the two outermost loops.
            let (inner, outer) = (
                names[names.len() - 2].clone(),
                names[names.len() - 1].clone(),
            );
            DirectiveKind::Fuse {
                inner,
                outer,
                fused: fresh("f"),
            }
        }
        _ => return None,
    };
    Some(kind)
}

/// Give the non-output func `f` a random call schedule in `list`: inline
/// (pure funcs only), compute_root, or compute_at a random loop of a
/// non-inlined consumer (in `tree`, the schedule so far), sometimes with a
/// store level further out. Falls back to compute_root when the drawn
/// level is not legal.
fn push_random_call_schedule(
    rng: &mut Rng,
    base: &Pipeline,
    list: &mut Vec<Directive>,
    tree: &ScheduleTree,
    f: &argent_ir::Func,
) {
    let pipeline = base;
    let consumers: Vec<&argent_ir::Func> = pipeline
        .funcs
        .iter()
        .filter(|g| (0..=g.updates.len()).any(|s| stage_calls(g, s).contains(&f.name)))
        .filter(|g| {
            tree.func(&g.name)
                .is_some_and(|s| s.compute != Level::Inline)
        })
        .collect();
    let mut choice = rng.below(4);
    if f.updates.is_empty() && choice == 0 {
        let _ = try_push(
            base,
            list,
            directive(&f.name, StageRef::Pure, DirectiveKind::ComputeInline),
        );
        return;
    }
    if consumers.is_empty() {
        choice = 1;
    }
    if choice == 1 {
        let _ = try_push(
            base,
            list,
            directive(&f.name, StageRef::Pure, DirectiveKind::ComputeRoot),
        );
        return;
    }
    // compute_at some loop of a consumer, maybe stored further out.
    let g = *rng.pick(&consumers);
    let Some(band) = tree.band(&g.name, 0) else {
        return;
    };
    let loops: Vec<String> = band.dims_outer_first().map(|d| d.name.clone()).collect();
    if loops.is_empty() {
        return;
    }
    let at = rng.below(loops.len());
    let pushed = try_push(
        base,
        list,
        directive(
            &f.name,
            StageRef::Pure,
            DirectiveKind::ComputeAt {
                consumer: g.name.clone(),
                var: loops[at].clone(),
            },
        ),
    );
    if pushed.is_some() && rng.chance(0.5) {
        let kind = if at == 0 || rng.chance(0.3) {
            DirectiveKind::StoreRoot
        } else {
            DirectiveKind::StoreAt {
                consumer: g.name.clone(),
                var: loops[rng.below(at)].clone(),
            }
        };
        let _ = try_push(base, list, directive(&f.name, StageRef::Pure, kind));
    } else if pushed.is_none() {
        let _ = try_push(
            base,
            list,
            directive(&f.name, StageRef::Pure, DirectiveKind::ComputeRoot),
        );
    }
}
