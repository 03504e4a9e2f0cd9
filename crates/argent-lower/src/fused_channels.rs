//! Vectorised fused channels: `fuse(c, x, cx).vectorize(cx, n)`, with `c`
//! bounded to 2 to 4 channels, runs as `vectorize(x, n).unroll(c)`: the
//! channels of `n` pixels, stored as dense interleaved vectors. Both orders compute every point once and give the
//! same values; the fused one would rebuild `c` and `x` per lane as
//! `cx % k` and `cx / k`, under the clamps that fusing leaves for bounds
//! inference, and every load and store would be a gather or a scatter
//! (45 ms against 4.2 ms for an RGBA point operation at 3072x2048).
//!
//! ```text
//! out.bound(c, 0, 4)                         out.bound(c, 0, 4)
//! out.reorder(c, x, y)                  ==>  out.reorder(c, x, y)
//! out.fuse(c, x, cx).vectorize(cx, 16)       out.vectorize(x, 16).unroll(c)
//! ```

use argent_ir::{Directive, DirectiveKind, Pipeline};

/// Rewrite each `fuse(c, x, cx)` whose fused loop is then vectorised (and
/// named by no other directive) into a vectorisation of `x`, when `c` is
/// bounded by a `bound` directive to a constant extent of 2 to 4.
pub fn vectorize_fused_channels(pipeline: &Pipeline) -> Pipeline {
    let directives = &pipeline.schedule.directives;
    let channel_extent = |func: &str, var: &str| {
        directives.iter().find_map(|d| match &d.kind {
            DirectiveKind::Bound { var: v, extent, .. } if d.func == func && v == var => {
                crate::arith::const_int(extent)
            }
            _ => None,
        })
    };
    let mut out: Vec<Directive> = Vec::with_capacity(directives.len());
    let mut skip = vec![false; directives.len()];
    for (i, d) in directives.iter().enumerate() {
        if skip[i] {
            continue;
        }
        let DirectiveKind::Fuse {
            inner,
            outer,
            fused,
        } = &d.kind
        else {
            out.push(d.clone());
            continue;
        };
        let bounded = channel_extent(&d.func, inner).is_some_and(|k| (2..=4).contains(&k));
        // The directives after the fuse that name the fused loop: exactly
        // one, a vectorisation of it by a constant, on the same stage.
        let naming: Vec<usize> = (i + 1..directives.len())
            .filter(|&j| names_var(&directives[j], fused))
            .collect();
        let vectorized = match naming.as_slice() {
            [j] => match &directives[*j].kind {
                DirectiveKind::Vectorize {
                    var,
                    factor: Some(factor),
                } if directives[*j].func == d.func
                    && directives[*j].stage == d.stage
                    && var == fused
                    && crate::arith::const_int(factor).is_some() =>
                {
                    Some((*j, factor.clone()))
                }
                _ => None,
            },
            _ => None,
        };
        match (bounded, vectorized) {
            (true, Some((j, factor))) => {
                skip[j] = true;
                out.push(Directive {
                    kind: DirectiveKind::Vectorize {
                        var: outer.clone(),
                        factor: Some(factor),
                    },
                    ..directives[j].clone()
                });
                out.push(Directive {
                    kind: DirectiveKind::Unroll {
                        var: inner.clone(),
                        factor: None,
                    },
                    ..directives[j].clone()
                });
            }
            _ => out.push(d.clone()),
        }
    }
    let mut p = pipeline.clone();
    p.schedule.directives = out;
    p
}

/// Whether `d` names the loop `var`, of its own func or as a consumer's
/// loop (`compute_at(f, var)`).
fn names_var(d: &Directive, var: &str) -> bool {
    d.kind.clone().loop_vars_mut().iter().any(|v| *v == var)
}
