//! Sliding window: when a producer is stored outside a serial loop but
//! computed inside it, and the region it must compute moves monotonically
//! along that loop in one dimension, every iteration after the first
//! computes only the new part (`prev_max + 1 ..= max`), reusing what earlier
//! iterations stored. Each value is then computed once.

use crate::arith::{Monotonic, monotonic, simplify};
use crate::schedule_tree::{Level, ScheduleTree, Transform};
use argent_arith::simplify::simplify_in_scope;
use argent_arith::{Interval, Scope};
use argent_ir::TailStrategy;
use argent_ir::fast_hash::FastHashMap as HashMap;
use argent_ir::visit::{Mutator, expr_uses_var, mutate_stmt_children, substitute};
use argent_ir::{Expr, ExprKind, ForKind, Stmt};

fn free_vars(e: &Expr, out: &mut Vec<String>) {
    struct V<'a>(&'a mut Vec<String>);
    impl argent_ir::visit::Visitor for V<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Var(n) = e.kind() {
                if !self.0.contains(n) {
                    self.0.push(n.clone());
                }
            }
            argent_ir::visit::walk_expr(self, e);
        }
    }
    argent_ir::visit::Visitor::visit_expr(&mut V(out), e);
}

/// `e` with every variable in `map` replaced at once.
fn substitute_all(e: &Expr, map: &HashMap<String, Expr>) -> Expr {
    struct S<'a>(&'a HashMap<String, Expr>);
    impl Mutator for S<'_> {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            if let ExprKind::Var(n) = e.kind() {
                if let Some(v) = self.0.get(n) {
                    return v.clone();
                }
            }
            argent_ir::visit::mutate_expr_children(self, e)
        }
    }
    S(map).mutate_expr(e)
}

/// Apply sliding windows wherever the schedule stores a func outside its
/// compute loop and the loop is serial.
///
/// Example (`blur_x.store_root().compute_at(blur_y, y)`): inside
/// `for (blur_y.s0.y, ..)` the binding
/// `let blur_x.s0.y.min = blur_y.s0.y - 1` becomes
/// `let blur_x.s0.y.min = select(blur_y.s0.y > blur_y.s0.y.min, max(blur_y.s0.y + 1, blur_y.s0.y - 1), blur_y.s0.y - 1)`
/// (which simplifies to `blur_y.s0.y + 1` in the steady state).
pub fn sliding_window(tree: &ScheduleTree, body: &Stmt) -> Stmt {
    let mut stmt = body.clone();
    for sched in &tree.funcs {
        if sched.store == sched.compute || sched.compute == Level::Inline {
            continue;
        }
        let Level::At { func, stage, var } = &sched.compute else {
            continue;
        };
        let has_updates = tree
            .pipeline
            .func(&sched.name)
            .is_none_or(|f| !f.updates.is_empty());
        if has_updates {
            continue;
        }
        let loop_var = format!("{func}.s{stage}.{var}");
        // A func computed inside the loop with a rounded-up loop has a
        // footprint that sliding can enlarge (see `rounded_up_dims`).
        let loop_level = (func.as_str(), *stage, var.as_str());
        if tree.funcs.iter().any(|g| {
            computed_within(tree, &g.name, loop_level, 0)
                && !rounded_up_dims(tree, &g.name).is_empty()
        }) {
            continue;
        }
        let mut m = Slider {
            func: &sched.name,
            loop_var: &loop_var,
            in_loop: None,
            loop_range: None,
            lets: Vec::new(),
        };
        stmt = m.mutate_stmt(&stmt);
    }
    stmt
}

/// Whether `func` is computed at the loop `level` (func, stage, var) or
/// inside a func computed there, at any depth.
fn computed_within(
    tree: &ScheduleTree,
    func: &str,
    level: (&str, usize, &str),
    depth: usize,
) -> bool {
    let Some(Level::At {
        func: owner,
        stage,
        var,
    }) = tree.func(func).map(|s| &s.compute)
    else {
        return false;
    };
    if (owner.as_str(), *stage, var.as_str()) == level {
        return true;
    }
    depth < tree.funcs.len() && computed_within(tree, owner, level, depth + 1)
}

/// The pure dimensions of `func` whose loops are rounded up: a
/// `round_up` split of the dimension, or of a variable split or fused from
/// it, makes the loop run past the region's max, to
/// `min + factor * ceil(extent / factor) - 1`. That end is not monotonic
/// in the min: raising the min of the region, which sliding does to the
/// slid func and to every func whose region follows from it inside the
/// loop, can raise it past what bounds inference gave the producers
/// computed outside the loop (their regions come from the regions before
/// sliding). No func computed inside such a loop slides
/// (multiscale_interpolation seed 60: `interp_7.split(y, .., 4,
/// round_up)`, whose region follows from the slid `interp_6`, computed
/// rows 1..=4 for the window `[1, 1]` and read `down_6` past its rows).
fn rounded_up_dims(tree: &ScheduleTree, func: &str) -> Vec<String> {
    let Some(band) = tree.band(func, 0) else {
        return Vec::new();
    };
    let Some(f) = tree.pipeline.func(func) else {
        return Vec::new();
    };
    f.args
        .iter()
        .filter(|arg| {
            let mut derived = vec![arg.to_string()];
            let mut rounded = false;
            for t in &band.transforms {
                match t {
                    Transform::Split {
                        old,
                        outer,
                        inner,
                        tail,
                        ..
                    } if derived.contains(old) => {
                        rounded |= *tail == TailStrategy::RoundUp;
                        derived.push(outer.clone());
                        derived.push(inner.clone());
                    }
                    Transform::Fuse {
                        inner,
                        outer,
                        fused,
                    } if derived.contains(inner) || derived.contains(outer) => {
                        derived.push(fused.clone());
                    }
                    _ => {}
                }
            }
            rounded
        })
        .cloned()
        .collect()
}

struct Slider<'a> {
    func: &'a str,
    loop_var: &'a str,
    /// The minimum of the loop, once inside it.
    in_loop: Option<Expr>,
    /// The loop variable's first and last values, when constant (an inner
    /// loop of a split): the regions then lose the clamps that hold for
    /// every iteration, which otherwise hide their monotonicity.
    loop_range: Option<Scope>,
    /// Lets seen between the loop and the func's bounds.
    lets: Vec<(String, Expr)>,
}

impl Slider<'_> {
    /// `e` with the lets seen substituted. Regions name the regions of
    /// the funcs computed before them at the same level, in chains (a
    /// pyramid's levels): each let is expanded once and simplified, so
    /// the chain does not grow with every link.
    fn expand(&self, e: &Expr) -> Expr {
        let mut memo = HashMap::default();
        self.expand_below(e, self.lets.len(), &mut memo)
    }

    fn expand_below(&self, e: &Expr, upto: usize, memo: &mut HashMap<usize, Expr>) -> Expr {
        let mut free = Vec::new();
        free_vars(e, &mut free);
        let mut map = HashMap::default();
        for name in free {
            let Some(i) = self.lets[..upto].iter().rposition(|(n, _)| *n == name) else {
                continue;
            };
            let value = match memo.get(&i) {
                Some(v) => v.clone(),
                None => {
                    let v = self.expand_below(&self.lets[i].1, i, memo);
                    memo.insert(i, v.clone());
                    v
                }
            };
            map.insert(name, value);
        }
        if map.is_empty() {
            return e.clone();
        }
        simplify(&substitute_all(e, &map))
    }

    fn monotone(&self, e: &Expr) -> bool {
        matches!(
            monotonic(e, self.loop_var),
            Monotonic::Increasing | Monotonic::Constant
        )
    }
}

impl Mutator for Slider<'_> {
    /// Only statements change: expressions are not walked.
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        e.clone()
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                ..
            } if var == self.loop_var && self.in_loop.is_none() => {
                if *kind != ForKind::Serial {
                    return s.clone();
                }
                self.in_loop = Some(min.clone());
                self.loop_range = match (
                    argent_arith::const_int(min),
                    argent_arith::const_int(extent),
                ) {
                    (Some(lo), Some(n)) if n > 0 => Some(Scope::new().with(
                        var.clone(),
                        Interval::new(Expr::i32(lo), Expr::i32(lo + n - 1)),
                    )),
                    _ => None,
                };
                let out = mutate_stmt_children(self, s);
                self.in_loop = None;
                self.loop_range = None;
                out
            }
            Stmt::LetStmt { name, value, body } if self.in_loop.is_some() => {
                let prefix = format!("{}.s0.", self.func);
                if let Some(dim) = name
                    .strip_prefix(&prefix)
                    .and_then(|r| r.strip_suffix(".min"))
                {
                    if let Stmt::LetStmt {
                        name: max_name,
                        value: max_value,
                        ..
                    } = &**body
                    {
                        if *max_name == format!("{prefix}{dim}.max") {
                            if let Some(new_min) = self.slide(value, max_value) {
                                return Stmt::LetStmt {
                                    name: name.clone(),
                                    value: new_min,
                                    body: body.clone(),
                                };
                            }
                        }
                    }
                }
                self.lets.push((name.clone(), value.clone()));
                let out = mutate_stmt_children(self, s);
                self.lets.pop();
                out
            }
            _ => mutate_stmt_children(self, s),
        }
    }
}

impl Slider<'_> {
    fn slide(&mut self, min: &Expr, max: &Expr) -> Option<Expr> {
        let (mut min_e, mut max_e) = (self.expand(min), self.expand(max));
        if let Some(range) = &self.loop_range {
            min_e = simplify_in_scope(&min_e, range);
            max_e = simplify_in_scope(&max_e, range);
        }
        if !expr_uses_var(&max_e, self.loop_var) || !self.monotone(&min_e) || !self.monotone(&max_e)
        {
            return None;
        }
        // Only one dimension may slide: the region in every other one must
        // not move along the loop, or the new part is not a slab.
        if self.lets.iter().any(|(n, v)| {
            n.starts_with(&format!("{}.s0.", self.func))
                && expr_uses_var(&self.expand(v), self.loop_var)
        }) {
            return None;
        }
        let v = Expr::var_i32(self.loop_var);
        let prev_max = substitute(&max_e, self.loop_var, &Expr::sub(v.clone(), Expr::i32(1)));
        let loop_min = self.in_loop.clone()?;
        // Rows below the current window were computed before or are not
        // needed, so the new part starts at the larger of the two.
        Some(simplify(&Expr::select(
            Expr::binary(argent_ir::BinOp::Gt, v, loop_min),
            Expr::max(Expr::add(prev_max, Expr::i32(1)), min.clone()),
            min.clone(),
        )))
    }
}
