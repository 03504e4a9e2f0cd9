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
//!   among them). Results never change.
//!
//! ```text
//!                                          assert(out.stride.0 == 1, StrideNotOne { buffer: "out" }, [out.stride.0])
//! out[ramp(out.stride.0 * x, out.stride.0, 8)] = ..   ==>   out[ramp(x, 1, 8)] = ..
//! ```

use argent_ir::visit::{Mutator, Visitor, map_child_stmts, mutate_expr_children, walk_expr};
use argent_ir::{AssertKind, BufferArg, Expr, ExprKind, ForKind, Stmt};
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
    let body = version_nests(&body, &strides);
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
fn version_nests(s: &Stmt, strides: &[(String, i64)]) -> Stmt {
    match s {
        Stmt::Block(_) | Stmt::ProducerConsumer { .. } => {
            map_child_stmts(s, |s| version_nests(s, strides))
        }
        // Code that does not mention a stride itself is versioned inside.
        Stmt::LetStmt { value: e, .. }
        | Stmt::Allocate { size: e, .. }
        | Stmt::IfThenElse { cond: e, .. }
            if mentioned(strides, |v| v.visit_expr(e)).is_empty() =>
        {
            map_child_stmts(s, |s| version_nests(s, strides))
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
                body: Box::new(version_nests(body, strides)),
            }
        }
        _ => {
            let used = mentioned(strides, |v| v.visit_stmt(s));
            version(s, &used)
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

/// Version `s` on `strides`, the innermost strides it mentions.
fn version(s: &Stmt, strides: &[(String, i64)]) -> Stmt {
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
            let cond = values
                .iter()
                .map(|(name, value)| Expr::eq(Expr::var_i32(name.clone()), Expr::i32(*value)))
                .reduce(Expr::and)
                .expect("a stride is used");
            let values: HashMap<String, i64> = values.into_iter().collect();
            Stmt::IfThenElse {
                cond,
                then: Box::new(KnownStrides::new(values).mutate_stmt(s)),
                otherwise: Some(Box::new(otherwise)),
            }
        })
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
            if (((in.stride.0 == 3) && (in.stride.2 == 1))) {
              out[1] = in[3]
            }
            else {
              if (((in.stride.0 == 4) && (in.stride.2 == 1))) {
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
            if (((out.stride.0 == 4) && (out.stride.2 == 1))) {
              out[4] = u8(7)
            }
            else {
              out[out.stride.0] = u8(7)
            }
        "#]]
        .assert_eq(&specialize_strides(&body, &buffers, &floors).to_string());
    }
}
