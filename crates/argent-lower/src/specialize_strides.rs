//! Stride specialisation. A buffer argument's descriptor gives a stride
//! per dimension, and vector loads and stores index with
//! `in.stride.0 * ramp(..)`, which a backend can only gather or scatter
//! lane by lane unless the stride is known:
//!
//! - One- and two-dimensional buffers are dense in their first dimension,
//!   as Halide assumes of its buffers by default: the body is checked on
//!   entry (`StrideNotOne`, naming the buffer and the stride given) and
//!   their `stride.0` is 1 everywhere after, so their ramps become dense
//!   vector loads and stores once simplified. The runtime always lays such
//!   buffers out densely (crops keep stride 1 in x and set the row
//!   stride); a general copy of the body for other strides doubled the
//!   code every later pass and the backend work through.
//! - Images with channels (three or more dimensions) are interleaved by the
//!   runtime, so each loop nest that uses them is versioned: copies for
//!   `stride.0` 3 (RGB) and 4 (RGBA), which backends load as windows and
//!   shuffles, and the general body for every other layout (planar data
//!   among them). A copy also takes each such buffer to hold exactly that
//!   many channels from channel 0 (`min.2 == 0`, `extent.2` equal to the
//!   stride), as the runtime passes them: a boundary condition's clamp of
//!   `c` then folds to a constant, so an unrolled channel reads its window
//!   at a constant offset instead of through a versioned, clamped index
//!   (an RGBA 3x3 blur: 10-17% faster). Results never change.
//!
//! ```text
//!                                          assert(out.stride.0 == 1, StrideNotOne { buffer: "out" }, [out.stride.0])
//! out[ramp(out.stride.0 * x, out.stride.0, 8)] = ..   ==>   out[ramp(x, 1, 8)] = ..
//! ```

use argent_arith::{simplify, substitute_stmt};
use argent_ir::visit::{
    Mutator, Visitor, map_child_stmts, mutate_expr_children, mutate_stmt_children, walk_expr,
    walk_stmt,
};
use argent_ir::{AssertKind, BinOp, BufferArg, Expr, ExprKind, ForKind, Stmt};
use std::collections::HashMap;

/// Set the innermost stride of the one- and two-dimensional `buffers` to 1
/// (checked on entry), and version `s` on the innermost strides of the
/// others (the buffers with channels whose `stride.0` it mentions): the
/// interleaved layouts where those buffers' `stride.0` is 3 (RGB) or 4
/// (RGBA), and the general body. `min_channels` gives, for buffers known
/// to hold at least that many channels (an output whose schedule bounds
/// `c` to four), a floor under their interleaved stride: layouts below it
/// are not versioned (the general body would run them anyway), which saves
/// a third of the code and compile time of an RGBA pipeline.
pub fn specialize_strides(
    s: &Stmt,
    buffers: &[BufferArg],
    min_channels: &HashMap<String, i64>,
) -> Stmt {
    let dense: HashMap<String, i64> = buffers
        .iter()
        .filter(|b| (1..3).contains(&b.dims))
        .map(|b| (format!("{}.stride.0", b.name), 1))
        .collect();
    let mut known = KnownStrides::new(dense);
    let body = known.mutate_stmt(s);
    // Per buffer with channels: the fewest channels it can have.
    let strides: Vec<(String, i64)> = buffers
        .iter()
        .filter(|b| b.dims >= 3)
        .map(|b| {
            let channels = min_channels.get(&b.name).copied().unwrap_or(1).max(1);
            (format!("{}.stride.0", b.name), channels)
        })
        .collect();
    // Each loop nest is versioned on its own, on the strides it mentions:
    // versioning the whole body would copy every stage (most only touch
    // internal buffers, whose strides are known) and the passes after this
    // one would work through two or three copies of the whole pipeline.
    let body = version_nests(&body, &strides, &mut Vec::new());
    if known.replaced.is_empty() {
        return body;
    }
    // The checks come first, in the order of the buffer arguments.
    let mut checks: Vec<Stmt> = buffers
        .iter()
        .filter_map(|b| {
            let stride = format!("{}.stride.0", b.name);
            known.replaced.contains(&stride).then(|| Stmt::Assert {
                cond: Expr::eq(Expr::var_i32(stride.clone()), Expr::i32(1)),
                kind: AssertKind::StrideNotOne {
                    buffer: b.name.clone(),
                },
                args: vec![Expr::var_i32(stride)],
            })
        })
        .collect();
    checks.push(body);
    Stmt::Block(checks)
}

/// `s` with every outermost loop (or `let` whose value mentions a stride)
/// that mentions the innermost stride of a buffer argument versioned.
/// `lets` holds the `let`s around `s`, outermost first.
fn version_nests(s: &Stmt, strides: &[(String, i64)], lets: &mut Vec<(String, Expr)>) -> Stmt {
    match s {
        Stmt::Block(_) | Stmt::ProducerConsumer { .. } => {
            map_child_stmts(s, |s| version_nests(s, strides, lets))
        }
        // Code that does not mention a stride itself is versioned inside.
        Stmt::LetStmt { name, value, body }
            if mentioned(strides, |v| v.visit_expr(value)).is_empty() =>
        {
            lets.push((name.clone(), value.clone()));
            let body = version_nests(body, strides, lets);
            lets.pop();
            Stmt::LetStmt {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(body),
            }
        }
        Stmt::Allocate { size: e, .. } | Stmt::IfThenElse { cond: e, .. }
            if mentioned(strides, |v| v.visit_expr(e)).is_empty() =>
        {
            map_child_stmts(s, |s| version_nests(s, strides, lets))
        }
        // A serial loop around other loops is versioned inside, where
        // its stages are (a tile loop computes many stages of which few
        // touch the buffer arguments); the innermost serial loops are
        // versioned whole, so no element pays a branch.
        Stmt::For {
            var,
            min,
            extent,
            kind: kind @ (ForKind::Serial | ForKind::Parallel),
            body,
        } if argent_ir::visit::has_loop(body)
            && mentioned(strides, |v| {
                v.visit_expr(min);
                v.visit_expr(extent)
            })
            .is_empty() =>
        {
            Stmt::For {
                var: var.clone(),
                min: min.clone(),
                extent: extent.clone(),
                kind: *kind,
                body: Box::new(version_nests(body, strides, lets)),
            }
        }
        _ => {
            let used = mentioned(strides, |v| v.visit_stmt(s));
            version(s, &used, lets)
        }
    }
}

/// The strides (with the fewest channels of their buffers) that `visit` finds.
fn mentioned(strides: &[(String, i64)], visit: impl FnOnce(&mut UsedNames)) -> Vec<(String, i64)> {
    let mut used = UsedNames {
        strides,
        found: vec![false; strides.len()],
    };
    visit(&mut used);
    strides
        .iter()
        .zip(&used.found)
        .filter(|(_, found)| **found)
        .map(|(stride, _)| stride.clone())
        .collect()
}

/// Version `s` on `strides`, the innermost strides it mentions, inside
/// `lets` (outermost first).
fn version(s: &Stmt, strides: &[(String, i64)], lets: &[(String, Expr)]) -> Stmt {
    if strides.is_empty() {
        return s.clone();
    }
    // Images with channels are interleaved (the runtime lays out every
    // three-dimensional buffer with channels innermost in memory), so a
    // planar copy would only cost compile time: planar data runs the
    // general body, which is exact for every layout.
    const INTERLEAVED: [i64; 2] = [3, 4];
    INTERLEAVED
        .iter()
        .filter(|&&layout| strides.iter().all(|(_, channels)| layout >= *channels))
        .rev()
        .fold(s.clone(), |otherwise, &channels| {
            // An interleaved image also has channel stride 1, which makes
            // the channels of a pixel neighbours in the index: the stores
            // of unrolled channels then combine into one dense store
            // (`interleave_stores`).
            let mut values: Vec<(String, i64)> = Vec::new();
            for (name, _) in strides {
                values.push((name.clone(), channels));
                values.push((channel_stride(name), 1));
            }
            // A loop over all the channels of a buffer it stores vectors
            // into (`c` innermost, `x` vectorised) is unrolled in this
            // copy, for images with exactly `channels` channels from
            // channel 0 (what the runtime passes): its `channels` stores
            // of stride `channels` then become one dense store
            // (`interleave_stores`) instead of lane-by-lane scatters, and
            // tests on `c` (an alpha channel passed through) fold away.
            let unrolled = unroll_channel_loops(s, strides, lets, channels);
            // Every interleaved buffer here also holds exactly `channels`
            // channels from channel 0 (what the runtime passes: a
            // three-dimensional image's innermost stride is its channel
            // count), which the unrolled channel loops need, and which
            // folds a boundary condition's clamp of `c` to a constant: the
            // channels of one pixel then sit at constant offsets from each
            // other (loads from one pointer).
            for (name, _) in strides {
                let buffer = name.trim_end_matches(".stride.0");
                values.push((format!("{buffer}.min.2"), 0));
                values.push((format!("{buffer}.extent.2"), channels));
            }
            let cond = values
                .iter()
                .map(|(name, value)| Expr::eq(Expr::var_i32(name.clone()), Expr::i32(*value)))
                .reduce(Expr::and)
                .expect("a stride is used");
            let values: HashMap<String, i64> = values.into_iter().collect();
            let then = KnownStrides::new(values).mutate_stmt(&unrolled);
            Stmt::IfThenElse {
                cond,
                then: Box::new(then),
                otherwise: Some(Box::new(otherwise)),
            }
        })
}

/// `s` with each innermost loop over `b.min.2 .. b.min.2 + b.extent.2`
/// (its bounds given by `let`s of `lets` or of `s`) that stores vectors
/// into `b` (one of the buffers of `strides`) unrolled, for `b.min.2 == 0`
/// and `b.extent.2 == channels`. The copies are left for the simplifier
/// that runs after this pass.
fn unroll_channel_loops(
    s: &Stmt,
    strides: &[(String, i64)],
    lets: &[(String, Expr)],
    channels: i64,
) -> Stmt {
    struct Marker<'a> {
        strides: &'a [(String, i64)],
        lets: Vec<(String, Expr)>,
        channels: i64,
    }
    impl Marker<'_> {
        /// `e` with the `let`s around it substituted (those its names
        /// are bound by, again until none is), simplified.
        fn expand(&self, e: &Expr) -> Expr {
            let mut e = e.clone();
            // Bounds are a few lets deep (`c.max` is `c.min + c.extent - 1`);
            // the limit only guards against a let chain gone long.
            for _ in 0..16 {
                let bound: HashMap<String, Expr> = argent_arith::var_names(&e)
                    .into_iter()
                    .filter_map(|name| {
                        let (_, value) = self.lets.iter().rev().find(|(n, _)| n == name)?;
                        Some((name.to_string(), value.clone()))
                    })
                    .collect();
                if bound.is_empty() {
                    break;
                }
                e = argent_arith::substitute_many(&e, &bound);
            }
            simplify(&e)
        }

        /// Whether `min` and `extent` cover the channels of a buffer of
        /// `strides` that `body` stores vectors into.
        fn over_channels(&self, min: &Expr, extent: &Expr, body: &Stmt) -> bool {
            let Some(buffer) = self.strides.iter().find_map(|(stride, _)| {
                let buffer = stride.strip_suffix(".stride.0")?;
                stores_vectors_into(body, buffer).then_some(buffer)
            }) else {
                return false;
            };
            let is_var =
                |e: &Expr, name: String| matches!(e.kind(), ExprKind::Var(n) if *n == name);
            is_var(&self.expand(min), format!("{buffer}.min.2"))
                && is_var(&self.expand(extent), format!("{buffer}.extent.2"))
        }
    }
    impl Mutator for Marker<'_> {
        fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
            match s {
                Stmt::LetStmt { name, value, body } => {
                    self.lets.push((name.clone(), value.clone()));
                    let body = self.mutate_stmt(body);
                    self.lets.pop();
                    Stmt::LetStmt {
                        name: name.clone(),
                        value: value.clone(),
                        body: Box::new(body),
                    }
                }
                Stmt::For {
                    var,
                    min,
                    extent,
                    kind: ForKind::Serial,
                    body,
                } if !argent_ir::visit::has_loop(body) && !gathers(body) => {
                    if self.over_channels(min, extent, body) {
                        Stmt::block(
                            (0..self.channels)
                                .map(|c| substitute_stmt(body, var, &Expr::i32(c)))
                                .collect(),
                        )
                    } else {
                        s.clone()
                    }
                }
                _ => mutate_stmt_children(self, s),
            }
        }
    }
    Marker {
        strides,
        lets: lets.to_vec(),
        channels,
    }
    .mutate_stmt(s)
}

/// Whether `s` loads a vector from lane positions it computes other than
/// affinely (a gather: an index divided, clamped or chosen per lane).
/// Its channels then gather lane by lane whatever their stores do, and
/// unrolled they made one large loop body: multiscale_interpolation's
/// output (gathering from upsampled levels) ran 7-13% slower unrolled.
fn gathers(s: &Stmt) -> bool {
    struct Find(bool);
    impl Visitor for Find {
        fn visit_expr(&mut self, e: &Expr) {
            if self.0 {
                return;
            }
            if let ExprKind::Load { index, .. } = e.kind() {
                // A table lookup (an index computed from loaded data) loads
                // lane by lane in every layout, and camera_pipe's curve
                // lookups ran 4-10% faster unrolled: only lane positions
                // computed from the coordinates count.
                if index.ty().is_vector()
                    && !affine_in_lanes(index)
                    && !argent_ir::visit::expr_any(index, |e| {
                        matches!(e.kind(), ExprKind::Load { .. })
                    })
                {
                    self.0 = true;
                    return;
                }
            }
            walk_expr(self, e);
        }
    }
    /// Sums, differences and products of ramps, broadcasts and variables.
    fn affine_in_lanes(e: &Expr) -> bool {
        match e.kind() {
            ExprKind::Var(_) | ExprKind::IntImm(_) => true,
            ExprKind::Broadcast { value, .. } => value.ty().is_scalar() && !has_vector(value),
            ExprKind::Ramp { base, stride, .. } => base.ty().is_scalar() && stride.ty().is_scalar(),
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub | BinOp::Mul,
                a,
                b,
            } => affine_in_lanes(a) && affine_in_lanes(b),
            _ if e.ty().is_scalar() => true,
            _ => false,
        }
    }
    fn has_vector(e: &Expr) -> bool {
        argent_ir::visit::expr_any(e, |e| e.ty().is_vector())
    }
    let mut find = Find(false);
    find.visit_stmt(s);
    find.0
}

/// Whether `s` stores a vector into `buffer`.
fn stores_vectors_into(s: &Stmt, buffer: &str) -> bool {
    struct Find<'a> {
        buffer: &'a str,
        found: bool,
    }
    impl Visitor for Find<'_> {
        fn visit_expr(&mut self, _: &Expr) {}
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::Store { buffer, index, .. }
                    if buffer == self.buffer && index.ty().is_vector() =>
                {
                    self.found = true
                }
                _ if !self.found => walk_stmt(self, s),
                _ => {}
            }
        }
    }
    let mut find = Find {
        buffer,
        found: false,
    };
    find.visit_stmt(s);
    find.found
}

/// `in.stride.2` for `in.stride.0`: the stride of the channel dimension.
fn channel_stride(x_stride: &str) -> String {
    format!("{}2", x_stride.trim_end_matches('0'))
}

/// Marks which of a few stride names a statement mentions (a short list:
/// comparing against it costs less than collecting every name met).
struct UsedNames<'a> {
    strides: &'a [(String, i64)],
    found: Vec<bool>,
}

impl Visitor for UsedNames<'_> {
    fn visit_expr(&mut self, e: &Expr) {
        if let ExprKind::Var(n) = e.kind() {
            if let Some(i) = self.strides.iter().position(|(name, _)| name == n) {
                self.found[i] = true;
            }
        }
        walk_expr(self, e);
    }
}

/// Replaces the named strides by their values (buffer fields are never
/// rebound), noting which it met.
struct KnownStrides {
    values: HashMap<String, i64>,
    replaced: Vec<String>,
}

impl KnownStrides {
    fn new(values: HashMap<String, i64>) -> KnownStrides {
        KnownStrides {
            values,
            replaced: Vec::new(),
        }
    }
}

impl Mutator for KnownStrides {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        match e.kind() {
            ExprKind::Var(n) if self.values.contains_key(n) => {
                if !self.replaced.contains(n) {
                    self.replaced.push(n.clone());
                }
                Expr::i32(self.values[n])
            }
            _ => mutate_expr_children(self, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::*;
    use argent_ir::{BufferRole, ForKind, Type};
    use expect_test::expect;

    /// `out(x) = in(x) + 1` over the output, flattened.
    fn copy_plus_one() -> argent_ir::Module {
        module_1d(over_output(
            ForKind::Serial,
            Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value: Expr::call_input(Type::I32, "in", vec![x()]) + 1,
            },
        ))
    }

    #[test]
    fn dense_buffers_are_checked_once_and_lose_their_stride() {
        let m = copy_plus_one();
        let s = specialize_strides(&m.body, &m.buffers, &HashMap::new());
        expect![[r#"
            assert((in.stride.0 == 1), StrideNotOne { buffer: "in" }, [in.stride.0])
            assert((out.stride.0 == 1), StrideNotOne { buffer: "out" }, [out.stride.0])
            for (x, out.min.0, out.extent.0) {
              out[(1 * (x - out.min.0))] = (in[(1 * (x - in.min.0))] + 1)
            }
        "#]]
        .assert_eq(&s.to_string());
        let specialized = module(s, m.buffers.clone());
        let input = ramp_input(12);
        assert_eq!(
            run_1d(&m, &input, 0, 12).unwrap().0,
            run_1d(&specialized, &input, 0, 12).unwrap().0
        );
        // Every other element of a longer array: the original body reads it,
        // the specialised one names the buffer and the stride instead.
        let strided = argent_arith::interp::Buffer::from_bytes(
            Type::I32,
            vec![argent_arith::interp::Dim {
                min: 0,
                extent: 12,
                stride: 2,
            }],
            input
                .iter()
                .flat_map(|&v| [v as i32, 0])
                .flat_map(i32::to_le_bytes)
                .collect(),
        )
        .expect("a valid layout");
        let run = |m: &argent_ir::Module| {
            let mut out = argent_arith::interp::Buffer::new(Type::I32, &[12]);
            crate::exec::run(m, &[("in", &strided)], &mut [("out", &mut out)], &[]).map(|_| {
                (0..12)
                    .map(|i| out.get(&[i]).unwrap().as_i64())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            run(&m).unwrap(),
            input.iter().map(|v| v + 1).collect::<Vec<_>>()
        );
        let err = run(&specialized).unwrap_err();
        assert!(!err.is_compiler_bug());
        expect![[r#"AssertFailed { kind: StrideNotOne { buffer: "in" }, args: [Int(2)] }"#]]
            .assert_eq(&format!("{err:?}"));
    }

    #[test]
    fn channels_get_interleaved_copies() {
        let buffers = vec![
            arg("in", Type::U8, 3, BufferRole::Input),
            arg("out", Type::U8, 2, BufferRole::Output),
        ];
        let body = Stmt::Store {
            buffer: "out".into(),
            index: Expr::var_i32("out.stride.0"),
            value: Expr::load(Type::U8, "in", Expr::var_i32("in.stride.0")),
        };
        expect![[r#"
            assert((out.stride.0 == 1), StrideNotOne { buffer: "out" }, [out.stride.0])
            if (((((in.stride.0 == 3) && (in.stride.2 == 1)) && (in.min.2 == 0)) && (in.extent.2 == 3))) {
              out[1] = in[3]
            }
            else {
              if (((((in.stride.0 == 4) && (in.stride.2 == 1)) && (in.min.2 == 0)) && (in.extent.2 == 4))) {
                out[1] = in[4]
              }
              else {
                out[1] = in[in.stride.0]
              }
            }
        "#]]
        .assert_eq(&specialize_strides(&body, &buffers, &HashMap::new()).to_string());
    }

    #[test]
    fn channel_loops_storing_vectors_are_unrolled_for_interleaved_images() {
        // `out(x, y, c) = select(c == 3, in(..), in(..) + 1)` vectorised
        // over four pixels with the channel loop innermost, its bounds
        // given by lets as lowering leaves them: the interleaved copies run
        // the channels one after the other, tests on `c` folded, for
        // images of exactly 3 or 4 channels from channel 0.
        let buffers = vec![
            arg("in", Type::U8, 3, BufferRole::Input),
            arg("out", Type::U8, 3, BufferRole::Output),
        ];
        let c = Expr::var_i32("c");
        let index = |b: &str| {
            Expr::ramp(
                Expr::var_i32(format!("{b}.stride.2"))
                    * (c.clone() - Expr::var_i32(format!("{b}.min.2"))),
                Expr::var_i32(format!("{b}.stride.0")),
                4,
            )
        };
        let pixel = Expr::load(Type::U8.with_lanes(4), "in", index("in"));
        let channel_loop = Stmt::For {
            var: "c".into(),
            min: Expr::var_i32("c.min"),
            extent: Expr::var_i32("c.max") - Expr::var_i32("c.min") + 1,
            kind: ForKind::Serial,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: index("out"),
                value: Expr::select(
                    Expr::broadcast(Expr::eq(c.clone(), Expr::i32(3)), 4),
                    pixel.clone(),
                    pixel + Expr::broadcast(Expr::int(Type::U8, 1), 4),
                ),
            }),
        };
        let body = Stmt::LetStmt {
            name: "c.min".into(),
            value: Expr::var_i32("out.min.2"),
            body: Box::new(Stmt::LetStmt {
                name: "c.max".into(),
                value: Expr::var_i32("out.min.2") + Expr::var_i32("out.extent.2") - 1,
                body: Box::new(channel_loop),
            }),
        };
        let s = argent_arith::simplify_stmt(&specialize_strides(&body, &buffers, &HashMap::new()));
        expect![[r#"
            if (((((((((in.stride.0 == 3) && (in.stride.2 == 1)) && (out.stride.0 == 3)) && (out.stride.2 == 1)) && (in.min.2 == 0)) && (in.extent.2 == 3)) && (out.min.2 == 0)) && (out.extent.2 == 3))) {
              out[ramp(0, 3, 4)] = (in[ramp(0, 3, 4)] + x4(u8(1)))
              out[ramp(1, 3, 4)] = (in[ramp(1, 3, 4)] + x4(u8(1)))
              out[ramp(2, 3, 4)] = (in[ramp(2, 3, 4)] + x4(u8(1)))
            }
            else {
              if (((((((((in.stride.0 == 4) && (in.stride.2 == 1)) && (out.stride.0 == 4)) && (out.stride.2 == 1)) && (in.min.2 == 0)) && (in.extent.2 == 4)) && (out.min.2 == 0)) && (out.extent.2 == 4))) {
                out[ramp(0, 4, 4)] = (in[ramp(0, 4, 4)] + x4(u8(1)))
                out[ramp(1, 4, 4)] = (in[ramp(1, 4, 4)] + x4(u8(1)))
                out[ramp(2, 4, 4)] = (in[ramp(2, 4, 4)] + x4(u8(1)))
                out[ramp(3, 4, 4)] = in[ramp(3, 4, 4)]
              }
              else {
                for (c, out.min.2, out.extent.2) {
                  out[ramp((out.stride.2 * (c - out.min.2)), out.stride.0, 4)] = select(x4((c == 3)), in[ramp((in.stride.2 * (c - in.min.2)), in.stride.0, 4)], (in[ramp((in.stride.2 * (c - in.min.2)), in.stride.0, 4)] + x4(u8(1))))
                }
              }
            }
        "#]]
        .assert_eq(&s.to_string());
        // A channel loop that gathers (reads lane positions it computes,
        // here an image upsampled by 2) keeps its loop.
        let upsampled = Expr::load(
            Type::U8.with_lanes(4),
            "in",
            Expr::broadcast(Expr::var_i32("in.stride.2") * c.clone(), 4)
                + Expr::ramp(Expr::i32(0), Expr::i32(1), 4) / Expr::broadcast(Expr::i32(2), 4),
        );
        let gathering = Stmt::For {
            var: "c".into(),
            min: Expr::var_i32("out.min.2"),
            extent: Expr::var_i32("out.extent.2"),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: index("out"),
                value: upsampled,
            }),
        };
        let s = specialize_strides(&gathering, &buffers, &HashMap::new()).to_string();
        assert!(
            s.contains("for (c, 0, 3)") && !s.contains("out[ramp(0, 3, 4)]"),
            "{s}"
        );
    }

    #[test]
    fn a_channel_floor_drops_the_narrower_layouts() {
        // `out` has at least four channels (its schedule bounds c to 4), so
        // it is never RGB-interleaved: only the RGBA copy and the general body.
        let buffers = vec![arg("out", Type::U8, 3, BufferRole::Output)];
        let body = Stmt::Store {
            buffer: "out".into(),
            index: Expr::var_i32("out.stride.0"),
            value: Expr::int(Type::U8, 7),
        };
        let floors = HashMap::from([("out".to_string(), 4)]);
        expect![[r#"
            if (((((out.stride.0 == 4) && (out.stride.2 == 1)) && (out.min.2 == 0)) && (out.extent.2 == 4))) {
              out[4] = u8(7)
            }
            else {
              out[out.stride.0] = u8(7)
            }
        "#]]
        .assert_eq(&specialize_strides(&body, &buffers, &floors).to_string());
    }
}
