//! The static footprint check of border rules: does the declared border
//! width cover what the pipeline reads, and does every border pixel that
//! is read have a rule?
//!
//! The analysis assumes, as ParaC does, that every output covers the same
//! domain as the input (a point operation on the image's grid). It
//! propagates per-dimension offset intervals from the outputs to their
//! callees: a coordinate `v + c` (v a pure variable, c a constant, or an
//! rvar with constant bounds) shifts the interval; anything else (scaling,
//! data-dependent indices, parameters) cannot be proved and yields a
//! warning instead of an error.

use crate::ast::BorderCoord;
use crate::check::BorderInfo;
use crate::diag::Diagnostic;
use argent_ir::fast_hash::{FastHashMap as HashMap, FastHashSet as HashSet};
use argent_ir::visit::{Visitor, walk_expr};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Pipeline};

type Interval = (i64, i64);

/// Intervals of the variables in scope (`None`: not a constant offset).
type Env = HashMap<String, Option<Interval>>;

/// Per dimension: the offsets read, or `None` when not provable.
type Footprint = Vec<Option<Interval>>;

fn join(a: Option<Interval>, b: Option<Interval>) -> Option<Interval> {
    Some((a?.0.min(b?.0), a?.1.max(b?.1)))
}

/// The interval of an index expression given intervals of variables.
fn interval(e: &Expr, env: &HashMap<String, Option<Interval>>) -> Option<Interval> {
    match e.kind() {
        ExprKind::IntImm(v) => Some((*v, *v)),
        ExprKind::Var(n) => env.get(n).copied().flatten(),
        ExprKind::Cast { value, .. } => interval(value, env),
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } => interval(args.first()?, env),
        ExprKind::Binary { op, a, b } => {
            let (x, y) = (interval(a, env)?, interval(b, env)?);
            match op {
                BinOp::Add => Some((x.0.checked_add(y.0)?, x.1.checked_add(y.1)?)),
                BinOp::Sub => Some((x.0.checked_sub(y.1)?, x.1.checked_sub(y.0)?)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Reports border reads the declared width or rules do not cover.
pub(crate) fn check_borders(p: &Pipeline, borders: &[BorderInfo], diags: &mut Vec<Diagnostic>) {
    if borders.is_empty() {
        return;
    }
    // Offsets each func is read at, relative to the output grid, and who
    // read it with an unprovable coordinate.
    let mut reads: HashMap<String, Footprint> = HashMap::default();
    let mut unprovable: HashMap<String, String> = HashMap::default();
    // The exact offsets read, while they are few and all constant: a
    // cross-shaped stencil then needs no corner rules.
    let mut points: HashMap<String, Option<HashSet<Vec<i64>>>> = HashMap::default();
    for o in &p.outputs {
        if let Some(f) = p.func(o) {
            reads.insert(o.clone(), vec![Some((0, 0)); f.args.len()]);
            points.insert(o.clone(), Some(HashSet::from_iter([vec![0; f.args.len()]])));
        }
    }
    // Callers come after callees in `funcs`, so walk it backwards.
    for f in p.funcs.iter().rev() {
        let Some(fp) = reads.get(&f.name).cloned() else {
            continue;
        };
        let f_points = points.get(&f.name).cloned().flatten();
        let mut defs: Vec<(&Expr, Vec<&Expr>, Env)> = Vec::new();
        let mut env: Env = HashMap::default();
        for (a, i) in f.args.iter().zip(&fp) {
            env.insert(a.clone(), *i);
        }
        defs.push((&f.value, Vec::new(), env.clone()));
        for u in &f.updates {
            let mut env = env.clone();
            if let Some(r) = &u.rdom {
                for d in &r.dims {
                    let iv = match (d.min.as_int(), d.extent.as_int()) {
                        (Some(m), Some(e)) if e > 0 => Some((m, m + e - 1)),
                        _ => None,
                    };
                    env.insert(d.name.clone(), iv);
                }
            }
            defs.push((&u.value, u.args.iter().collect(), env));
        }
        for (value, lhs, env) in defs {
            let mut calls = CallCollector(Vec::new());
            calls.visit_expr(value);
            for a in lhs {
                calls.visit_expr(a);
            }
            for (callee, args) in calls.0 {
                let Some(g) = p.func(&callee) else { continue };
                let entry = reads
                    .entry(callee.clone())
                    .or_insert_with(|| vec![Some((i64::MAX, i64::MIN)); g.args.len()]);
                for (j, a) in args.iter().enumerate().take(entry.len()) {
                    let iv = interval(a, &env);
                    if iv.is_none() {
                        unprovable
                            .entry(callee.clone())
                            .or_insert_with(|| f.name.clone());
                    }
                    entry[j] = match (entry[j], iv) {
                        (Some(cur), Some(new)) if cur.0 > cur.1 => Some(new),
                        (cur, new) => join(cur, new),
                    };
                }
                let exact = f_points
                    .as_ref()
                    .and_then(|ps| exact_points(ps, &f.args, &args, &env));
                match exact {
                    Some(new) => {
                        let slot = points
                            .entry(callee.clone())
                            .or_insert_with(|| Some(HashSet::default()));
                        if let Some(set) = slot {
                            set.extend(new);
                            if set.len() > MAX_POINTS {
                                *slot = None;
                            }
                        }
                    }
                    None => {
                        points.insert(callee.clone(), None);
                    }
                }
            }
        }
    }
    for b in borders {
        let Some(fp) = reads.get(&b.func) else {
            continue;
        };
        if let Some(reader) = unprovable.get(&b.func) {
            diags.push(
                Diagnostic::warning("W0505", b.span, format!(
                    "cannot prove that the border of `{}` is wide enough: `{reader}` reads it at a coordinate that is not a constant offset",
                    b.func))
                    .with_note("the check understands coordinates like `x + 1` and rdom variables with constant bounds; reads beyond the width get the clamped edge value"),
            );
        }
        // How far outside each side the pipeline reads, per dimension.
        let mut reach = Vec::new();
        let mut ok = true;
        for (d, iv) in fp.iter().enumerate() {
            let Some((lo, hi)) = iv.filter(|(lo, hi)| lo <= hi) else {
                reach.push((0, 0));
                continue;
            };
            let before = (-lo).max(0);
            let after = hi.max(0);
            let w = b.widths[d];
            for (amount, side) in [(before, "before the first"), (after, "past the last")] {
                if amount > w {
                    diags.push(
                        Diagnostic::error("E0503", b.width_span, format!(
                            "the border of `{}` is {w} wide in dimension {d}, but the pipeline reads {amount} pixels {side} index",
                            b.func))
                            .with_label(b.span, "border rules declared here")
                            .with_note(format!("declare `width {amount}` or more and add rules for the extra pixels")),
                    );
                    ok = false;
                }
            }
            reach.push((before.min(w), after.min(w)));
        }
        if !ok {
            continue;
        }
        let missing = match points.get(&b.func).cloned().flatten() {
            Some(ps) => missing_rules_exact(&ps, &b.widths, &b.rules),
            None => missing_rules(&reach, &b.rules),
        };
        if !missing.is_empty() {
            let shown: Vec<String> = missing.iter().take(8).map(|c| format_coords(c)).collect();
            let more = if missing.len() > 8 {
                format!(" and {} more", missing.len() - 8)
            } else {
                String::new()
            };
            diags.push(
                Diagnostic::error(
                    "E0504",
                    b.span,
                    format!(
                        "the pipeline reads border pixels of `{}` that have no rule: {}{more}",
                        b.func,
                        shown.join(", ")
                    ),
                )
                .with_note("add a rule for each, e.g. corners like `(-1, -1) = src(0, 0)`"),
            );
        }
    }
}

/// How many distinct offsets are tracked per func before falling back to
/// a bounding box.
const MAX_POINTS: usize = 4096;

/// The offsets a call reads for each point its caller is read at, when
/// every coordinate is an exact constant offset.
fn exact_points(
    callers: &HashSet<Vec<i64>>,
    vars: &[String],
    args: &[Expr],
    env: &Env,
) -> Option<Vec<Vec<i64>>> {
    let mut out = Vec::with_capacity(callers.len());
    for p in callers {
        let mut env = env.clone();
        for (v, o) in vars.iter().zip(p) {
            env.insert(v.clone(), Some((*o, *o)));
        }
        let mut q = Vec::with_capacity(args.len());
        for a in args {
            let (lo, hi) = interval(a, &env)?;
            if lo != hi {
                return None;
            }
            q.push(lo);
        }
        out.push(q);
    }
    Some(out)
}

/// The border positions that reads at the given exact offsets reach
/// (each offset applied to every in-image coordinate) and no rule covers.
fn missing_rules_exact(
    points: &HashSet<Vec<i64>>,
    widths: &[i64],
    rules: &[Vec<BorderCoord>],
) -> Vec<Vec<BorderCoord>> {
    let mut missing: Vec<Vec<BorderCoord>> = Vec::new();
    let mut sorted: Vec<&Vec<i64>> = points.iter().collect();
    sorted.sort();
    for p in sorted {
        let reach: Vec<(i64, i64)> = p
            .iter()
            .zip(widths)
            .map(|(o, w)| ((-o).clamp(0, *w), (*o).clamp(0, *w)))
            .collect();
        for m in missing_rules(&reach, rules) {
            if !missing.contains(&m) {
                missing.push(m);
            }
            if missing.len() > 64 {
                return missing;
            }
        }
    }
    missing
}

/// The border positions within `reach` that no rule covers. Positions are
/// per dimension: inside (`Any`), or `k` before/after.
fn missing_rules(reach: &[(i64, i64)], rules: &[Vec<BorderCoord>]) -> Vec<Vec<BorderCoord>> {
    let options: Vec<Vec<BorderCoord>> = reach
        .iter()
        .map(|&(before, after)| {
            let mut o = vec![BorderCoord::Any];
            o.extend((1..=before).map(BorderCoord::Before));
            o.extend((1..=after).map(BorderCoord::After));
            o
        })
        .collect();
    let total: usize = options.iter().map(Vec::len).product();
    let mut missing = Vec::new();
    // Enumerate positions; the widths are small, but cap the work anyway.
    for mut k in 0..total.min(100_000) {
        let mut pos = Vec::with_capacity(options.len());
        for o in &options {
            pos.push(o[k % o.len()]);
            k /= o.len();
        }
        if pos.iter().all(|c| *c == BorderCoord::Any) {
            continue;
        }
        if !rules.iter().any(|r| r == &pos) {
            missing.push(pos);
        }
    }
    missing
}

fn format_coords(c: &[BorderCoord]) -> String {
    let parts: Vec<String> = c
        .iter()
        .map(|x| match x {
            BorderCoord::Any => "*".to_string(),
            BorderCoord::Before(k) => format!("-{k}"),
            BorderCoord::After(k) => format!("+{k}"),
        })
        .collect();
    format!("({})", parts.join(", "))
}

struct CallCollector(Vec<(String, Vec<Expr>)>);

impl Visitor for CallCollector {
    fn visit_expr(&mut self, e: &Expr) {
        if let ExprKind::Call {
            target: CallTarget::Func(n),
            args,
        } = e.kind()
        {
            self.0.push((n.clone(), args.clone()));
        }
        walk_expr(self, e);
    }
}
