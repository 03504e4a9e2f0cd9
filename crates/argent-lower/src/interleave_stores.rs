//! Interleaved stores: the unrolled channels of an interleaved image (RGBA
//! with `c` unrolled inside a loop vectorised over `x`) store one vector
//! per channel with stride 4, which a backend can only scatter lane by
//! lane. When the `k` stores of stride `k` cover neighbouring offsets,
//! they become one dense store of a vector `k` times as wide whose lanes
//! interleave the `k` values (a shuffle), as Halide's interleaving rewrite
//! does. The copies of the same guard that unrolling and stride
//! versioning left around each store are merged first, so the stores end
//! up next to each other.
//!
//! ```text
//! if (c) { out[ramp(b, 2, 4)] = u }          if (c) {
//! if (c) { out[ramp(b + 1, 2, 4)] = v }  ==>   out[ramp(b, 1, 8)] = shuffle(u, v; 0 4 1 5 2 6 3 7)
//!                                            }
//! ```
//!
//! Merging `if (c) A; if (c) B` into `if (c) { A; B }` keeps the order of
//! every effect because `c` reads no memory (only variables, which nothing
//! rebinds), so it has the same value both times; the same holds for two
//! `let`s binding one name to one memory-free value.

use argent_arith::simplify;
use argent_ir::visit::{Mutator, Visitor, mutate_stmt_children, walk_expr};
use argent_ir::{CallTarget, Expr, ExprKind, Stmt};

/// Merge repeated guards and combine the stores of interleaved channels in `s`.
pub fn interleave_stores(s: &Stmt) -> Stmt {
    Interleaver.mutate_stmt(s)
}

struct Interleaver;

impl Mutator for Interleaver {
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            // Guards are merged only where there are strided stores to
            // bring together: elsewhere the merge gains nothing and would
            // only reshape code that is tuned as it is.
            Stmt::Block(stmts) if has_strided_store(s) => {
                let merged = merge_neighbours(stmts.iter().map(|s| self.mutate_stmt(s)));
                let combined = combine_stores(merged);
                if combined.len() == 1 {
                    combined.into_iter().next().expect("one statement")
                } else {
                    Stmt::Block(combined)
                }
            }
            _ => mutate_stmt_children(self, s),
        }
    }
}

/// Merges each statement into the one before it where both are `if`s on
/// the same memory-free condition, or `let`s of the same name and
/// memory-free value; merged bodies are processed again, since their own
/// statements may now merge.
fn merge_neighbours(stmts: impl Iterator<Item = Stmt>) -> Vec<Stmt> {
    let mut out: Vec<Stmt> = Vec::new();
    for s in stmts {
        let merged = match (out.last(), &s) {
            (
                Some(Stmt::IfThenElse {
                    cond: c1,
                    then: t1,
                    otherwise: o1,
                }),
                Stmt::IfThenElse {
                    cond: c2,
                    then: t2,
                    otherwise: o2,
                },
            ) if c1 == c2 && reads_no_memory(c1) => {
                let otherwise = match (o1, o2) {
                    (None, None) => None,
                    (a, b) => Some(Box::new(merged_block(
                        a.as_deref().cloned(),
                        b.as_deref().cloned(),
                    ))),
                };
                Some(Stmt::IfThenElse {
                    cond: c1.clone(),
                    then: Box::new(merged_block(Some((**t1).clone()), Some((**t2).clone()))),
                    otherwise,
                })
            }
            (
                Some(Stmt::LetStmt {
                    name: n1,
                    value: v1,
                    body: b1,
                }),
                Stmt::LetStmt {
                    name: n2,
                    value: v2,
                    body: b2,
                },
            ) if n1 == n2 && v1 == v2 && reads_no_memory(v1) && !mentions(v1, n1) => {
                Some(Stmt::LetStmt {
                    name: n1.clone(),
                    value: v1.clone(),
                    body: Box::new(merged_block(Some((**b1).clone()), Some((**b2).clone()))),
                })
            }
            _ => None,
        };
        match merged {
            Some(m) => *out.last_mut().expect("merged with the last") = m,
            None => out.push(s),
        }
    }
    out
}

/// The block running `a` then `b` (either may be absent), with its
/// statements merged and combined again.
fn merged_block(a: Option<Stmt>, b: Option<Stmt>) -> Stmt {
    let mut stmts = Vec::new();
    for s in [a, b].into_iter().flatten() {
        match s {
            Stmt::Block(inner) => stmts.extend(inner),
            other => stmts.push(other),
        }
    }
    let combined = combine_stores(merge_neighbours(stmts.into_iter()));
    if combined.len() == 1 {
        combined.into_iter().next().expect("one statement")
    } else {
        Stmt::Block(combined)
    }
}

/// Replaces each run of `k` consecutive stores of stride `k` to one buffer
/// whose first elements are `k` neighbours (in any order) by one dense
/// store of their interleaved values.
fn combine_stores(stmts: Vec<Stmt>) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(stmts.len());
    let mut i = 0;
    while i < stmts.len() {
        if let Some((combined, used)) = combine_run(&stmts[i..]) {
            out.push(combined);
            i += used;
        } else {
            out.push(stmts[i].clone());
            i += 1;
        }
    }
    out
}

/// The dense store replacing the stores at the start of `stmts`, and how
/// many it replaces.
fn combine_run(stmts: &[Stmt]) -> Option<(Stmt, usize)> {
    let (buffer, base0, stride, lanes) = strided_store(stmts.first()?)?;
    let k = usize::try_from(stride).ok()?;
    if !(2..=4).contains(&k) || stmts.len() < k {
        return None;
    }
    // Each store's first element relative to the first store's.
    let mut offsets: Vec<(i64, Expr)> = Vec::with_capacity(k);
    for s in &stmts[..k] {
        let (b, base, st, n) = strided_store(s)?;
        let Stmt::Store { value, .. } = s else {
            return None;
        };
        if b != buffer || st != stride || n != lanes || value.ty() != stmt_value(&stmts[0])?.ty() {
            return None;
        }
        // A value that reads the buffer could see an element an earlier
        // store of the run wrote, which the combined store writes last.
        if reads_buffer(value, buffer) {
            return None;
        }
        offsets.push((
            simplify(&(base.clone() - base0.clone())).as_int()?,
            value.clone(),
        ));
    }
    // The offsets must be k neighbours: the channels of one pixel.
    let first = offsets.iter().map(|(o, _)| *o).min()?;
    let mut by_offset: Vec<Option<Expr>> = vec![None; k];
    for (offset, value) in offsets {
        let slot = by_offset.get_mut(usize::try_from(offset - first).ok()?)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(value);
    }
    let vectors: Vec<Expr> = by_offset.into_iter().collect::<Option<_>>()?;
    let start = simplify(&(base0.clone() + Expr::i32(first)));
    let n = lanes as u32;
    let indices: Vec<u32> = (0..n)
        .flat_map(|lane| (0..k as u32).map(move |j| j * n + lane))
        .collect();
    let total = u16::try_from(indices.len()).ok()?;
    Some((
        Stmt::Store {
            buffer: buffer.to_string(),
            index: Expr::ramp(start, Expr::i32(1), total),
            value: Expr::shuffle(vectors, indices),
        },
        k,
    ))
}

/// `(buffer, base, stride, lanes)` of a store to `buffer[ramp(base, stride, lanes)]`
/// with a constant stride.
fn strided_store(s: &Stmt) -> Option<(&str, &Expr, i64, u16)> {
    let Stmt::Store { buffer, index, .. } = s else {
        return None;
    };
    let ExprKind::Ramp {
        base,
        stride,
        lanes,
    } = index.kind()
    else {
        return None;
    };
    Some((buffer, base, stride.as_int()?, *lanes))
}

fn stmt_value(s: &Stmt) -> Option<&Expr> {
    match s {
        Stmt::Store { value, .. } => Some(value),
        _ => None,
    }
}

/// Whether `s` stores with a constant stride of 2 to 4 (an interleaved
/// channel) anywhere.
fn has_strided_store(s: &Stmt) -> bool {
    struct Finds(bool);
    impl Visitor for Finds {
        fn visit_expr(&mut self, _: &Expr) {}
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Some((_, _, 2..=4, _)) = strided_store(s) {
                self.0 = true;
            }
            if !self.0 {
                argent_ir::visit::walk_stmt(self, s);
            }
        }
    }
    let mut v = Finds(false);
    v.visit_stmt(s);
    v.0
}

/// Whether some node of `e` satisfies `found` (stops at the first).
fn any_node(e: &Expr, found: impl Fn(&Expr) -> bool) -> bool {
    struct Search<F>(F, bool);
    impl<F: Fn(&Expr) -> bool> Visitor for Search<F> {
        fn visit_expr(&mut self, e: &Expr) {
            self.1 = self.1 || (self.0)(e);
            if !self.1 {
                walk_expr(self, e);
            }
        }
    }
    let mut v = Search(found, false);
    v.visit_expr(e);
    v.1
}

/// Whether `e` loads from no buffer. Intrinsics (`likely` around a guard,
/// `abs`, ...) are pure functions of their arguments; calls of stages or
/// inputs, which flattening has already replaced, count as reads.
fn reads_no_memory(e: &Expr) -> bool {
    !any_node(e, |e| match e.kind() {
        ExprKind::Load { .. } => true,
        ExprKind::Call { target, .. } => !matches!(target, CallTarget::Intrinsic(_)),
        _ => false,
    })
}

/// Whether `e` loads from `buffer` (or calls a stage or input, which
/// flattening has already replaced).
fn reads_buffer(e: &Expr, buffer: &str) -> bool {
    any_node(e, |e| match e.kind() {
        ExprKind::Load { buffer: b, .. } => b == buffer,
        ExprKind::Call { target, .. } => !matches!(target, CallTarget::Intrinsic(_)),
        _ => false,
    })
}

/// Whether `e` mentions the variable `name`.
fn mentions(e: &Expr, name: &str) -> bool {
    any_node(e, |e| matches!(e.kind(), ExprKind::Var(n) if n == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::*;
    use argent_ir::{ForKind, Type};
    use expect_test::expect;

    /// `for x in 0..4`: two guarded stores of stride 2 at offsets 1 and 0
    /// (the channels of a two-channel interleaved image, in reverse order).
    fn two_channels(second_offset: i64) -> argent_ir::Module {
        two_channels_with(second_offset, |e| e)
    }

    /// `two_channels`, with `wrap` applied to the guard and to the loaded
    /// index (as boundary conditions leave `likely` in both).
    fn two_channels_with(second_offset: i64, wrap: fn(Expr) -> Expr) -> argent_ir::Module {
        let guard = wrap(Expr::lt(Expr::i32(0), Expr::var_i32("out.extent.0")));
        let load = Expr::load(
            Type::I32.with_lanes(4),
            "in",
            Expr::ramp(wrap(x()) * 4, Expr::i32(1), 4),
        );
        let store = |offset: i64, value: Expr| Stmt::IfThenElse {
            cond: guard.clone(),
            then: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: Expr::ramp(x() * 8 + offset, Expr::i32(2), 4),
                value,
            }),
            otherwise: None,
        };
        let body = Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: Expr::i32(4),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Block(vec![
                store(1, load.clone() * Expr::broadcast(Expr::i32(2), 4)),
                store(second_offset, load),
            ])),
        };
        module(body, module_1d(Stmt::Block(vec![])).buffers)
    }

    /// `body` (a rewrite of `m`'s body) writes what `m` writes.
    fn assert_same_output(m: &argent_ir::Module, body: Stmt) {
        let input = ramp_input(16);
        let rewritten = module(body, m.buffers.clone());
        assert_eq!(
            run_1d(m, &input, 0, 32).unwrap().0,
            run_1d(&rewritten, &input, 0, 32).unwrap().0
        );
    }

    #[test]
    fn neighbouring_strided_stores_become_one_interleaved_store() {
        let m = two_channels(0);
        let s = interleave_stores(&m.body);
        expect![[r#"
            for (x, 0, 4) {
              if ((0 < out.extent.0)) {
                out[ramp((x * 8), 1, 8)] = shuffle(in[ramp((x * 4), 1, 4)], (in[ramp((x * 4), 1, 4)] * x4(2)), [0, 4, 1, 5, 2, 6, 3, 7])
              }
            }
        "#]]
        .assert_eq(&s.to_string());
        assert_same_output(&m, s);
    }

    #[test]
    fn intrinsics_in_guards_and_values_do_not_keep_stores_apart() {
        // `likely` is a pure intrinsic call: guards and lets that contain
        // it still merge, and values that contain it still combine (they
        // read no memory through it).
        let m = two_channels_with(0, Expr::likely);
        let s = interleave_stores(&m.body);
        expect![[r#"
            for (x, 0, 4) {
              if (likely((0 < out.extent.0))) {
                out[ramp((x * 8), 1, 8)] = shuffle(in[ramp((likely(x) * 4), 1, 4)], (in[ramp((likely(x) * 4), 1, 4)] * x4(2)), [0, 4, 1, 5, 2, 6, 3, 7])
              }
            }
        "#]]
        .assert_eq(&s.to_string());
        assert_same_output(&m, s);
    }

    #[test]
    fn strided_stores_that_do_not_tile_the_pixel_stay_apart() {
        // Offsets 1 and 3 of stride 2 write the same channel, interleaving
        // nothing.
        let m = two_channels(3);
        let s = interleave_stores(&m.body);
        assert!(!s.to_string().contains("shuffle"), "{s}");
        // The guards still merge.
        assert_eq!(s.to_string().matches("if (").count(), 1, "{s}");
    }
}
