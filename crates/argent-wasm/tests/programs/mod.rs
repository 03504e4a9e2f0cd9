//! Hand-built lowered modules shared by the codegen and execution tests.

#![allow(dead_code)]

use crate::common::*;
use argent_ir::{AssertKind, BufferRole, Expr, ForKind, Stmt, Type};

pub const N: i32 = 64;

/// `out[x] = a[x] + b[x]` on u8 (wrapping), `lanes` lanes per iteration.
pub fn add_u8(lanes: u16) -> argent_ir::Module {
    let idx = dense(x() * lanes as i64, lanes);
    let value = Expr::add(
        Expr::load(Type::U8, "a", idx.clone()),
        Expr::load(Type::U8, "b", idx.clone()),
    );
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("out.extent.0"), Expr::i32(lanes as i64)),
        ForKind::Vectorized,
        store("out", idx, value),
    );
    module(
        vec![
            buffer("a", Type::U8, 1, BufferRole::Input),
            buffer("b", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::U8, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// `q[x] = a[x] / p`, `r[x] = a[x] % p` on i32 with a run-time divisor.
pub fn divmod_param(lanes: u16) -> argent_ir::Module {
    let idx = if lanes == 1 {
        x()
    } else {
        dense(x() * lanes as i64, lanes)
    };
    let a = Expr::load(Type::I32, "a", idx.clone());
    let p = Expr::broadcast(Expr::var(Type::I32, "p"), lanes);
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("a.extent.0"), Expr::i32(lanes as i64)),
        ForKind::Serial,
        Stmt::Block(vec![
            store("q", idx.clone(), Expr::div(a.clone(), p.clone())),
            store("r", idx, Expr::modulo(a, p)),
        ]),
    );
    module(
        vec![
            buffer("a", Type::I32, 1, BufferRole::Input),
            buffer("q", Type::I32, 1, BufferRole::Output),
            buffer("r", Type::I32, 1, BufferRole::Output),
        ],
        vec![param("p", Type::I32)],
        body,
    )
}

/// Division and modulo of `ty` lanes by constant `c`.
pub fn divmod_const(ty: Type, c: i64, lanes: u16) -> argent_ir::Module {
    let divisor = Expr::broadcast(Expr::int(ty, c), lanes);
    divmod_by(ty, lanes, divisor, &["a"])
}

/// Division and modulo of `ty` lanes by lanes: `q = a / b`, `r = a % b`.
pub fn divmod_lanes(ty: Type, lanes: u16) -> argent_ir::Module {
    let divisor = Expr::load(ty, "b", dense(x() * lanes as i64, lanes));
    divmod_by(ty, lanes, divisor, &["a", "b"])
}

/// Lanes divided by themselves: `q = a / a`, `r = a % a` (one load, so
/// both operands are the same register).
pub fn divmod_self(ty: Type, lanes: u16) -> argent_ir::Module {
    let divisor = Expr::load(ty, "a", dense(x() * lanes as i64, lanes));
    divmod_by(ty, lanes, divisor, &["a"])
}

/// `q = a / divisor`, `r = a % divisor` over vectors of `lanes`, with
/// `inputs` (`a` first) as the input buffers.
fn divmod_by(ty: Type, lanes: u16, divisor: Expr, inputs: &[&str]) -> argent_ir::Module {
    let idx = dense(x() * lanes as i64, lanes);
    let a = Expr::load(ty, "a", idx.clone());
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("a.extent.0"), Expr::i32(lanes as i64)),
        ForKind::Vectorized,
        Stmt::Block(vec![
            store("q", idx.clone(), Expr::div(a.clone(), divisor.clone())),
            store("r", idx, Expr::modulo(a, divisor)),
        ]),
    );
    let mut buffers: Vec<_> = inputs
        .iter()
        .map(|name| buffer(name, ty, 1, BufferRole::Input))
        .collect();
    buffers.push(buffer("q", ty, 1, BufferRole::Output));
    buffers.push(buffer("r", ty, 1, BufferRole::Output));
    module(buffers, vec![], body)
}

/// The 3-tap box blur on u16: `out[x] = (in[x] + in[x+1] + in[x+2]) / 3`.
pub fn blur3_u16(lanes: u16) -> argent_ir::Module {
    stencil(Type::U16, lanes, |tap| {
        let sum = Expr::add(Expr::add(tap(0), tap(1)), tap(2));
        Expr::div(sum, Expr::broadcast(Expr::int(Type::U16, 3), lanes))
    })
}

/// The sum of `taps` neighbours: `out[x] = in[x] + in[x+1] + ... + in[x+taps-1]`.
pub fn tap_sum(ty: Type, taps: i64, lanes: u16) -> argent_ir::Module {
    stencil(ty, lanes, |tap| {
        (0..taps)
            .map(tap)
            .reduce(Expr::add)
            .expect("at least one tap")
    })
}

/// A 1-D stencil from `in` to `out` (both `ty`), vectorised by `lanes`:
/// `value` builds the output vector from `tap(k)`, the vector of `in` at
/// `x + k`.
fn stencil(
    ty: Type,
    lanes: u16,
    value: impl Fn(&dyn Fn(i64) -> Expr) -> Expr,
) -> argent_ir::Module {
    let base = x() * lanes as i64;
    let tap = |k: i64| Expr::load(ty, "in", dense(base.clone() + k, lanes));
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("out.extent.0"), Expr::i32(lanes as i64)),
        ForKind::Vectorized,
        store("out", dense(base.clone(), lanes), value(&tap)),
    );
    module(
        vec![
            buffer("in", ty, 1, BufferRole::Input),
            buffer("out", ty, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// Deinterleaves RGBA u8 (stride-4 loads) into planes, then interleaves
/// the planes back (stride-4 stores).
pub fn rgba_roundtrip() -> argent_ir::Module {
    let c = Expr::var_i32("c");
    let n = Expr::div(Expr::var_i32("rgba.extent.0"), Expr::i32(4));
    let load_rgba = Expr::load(
        Type::U8,
        "rgba",
        Expr::ramp(x() * 64 + c.clone(), Expr::i32(4), 16),
    );
    let planar_index = dense(Expr::mul(c.clone(), n.clone()) + x() * 16, 16);
    let deinterleave = for_loop(
        "c",
        Expr::i32(0),
        Expr::i32(4),
        ForKind::Serial,
        for_loop(
            "x",
            Expr::i32(0),
            Expr::div(n.clone(), Expr::i32(16)),
            ForKind::Vectorized,
            store("planes", planar_index.clone(), load_rgba),
        ),
    );
    let interleave = for_loop(
        "c",
        Expr::i32(0),
        Expr::i32(4),
        ForKind::Serial,
        for_loop(
            "x",
            Expr::i32(0),
            Expr::div(n.clone(), Expr::i32(16)),
            ForKind::Vectorized,
            store(
                "back",
                Expr::ramp(x() * 64 + c.clone(), Expr::i32(4), 16),
                Expr::load(Type::U8, "planes", planar_index) + 1,
            ),
        ),
    );
    module(
        vec![
            buffer("rgba", Type::U8, 1, BufferRole::Input),
            buffer("planes", Type::U8, 1, BufferRole::Output),
            buffer("back", Type::U8, 1, BufferRole::Output),
        ],
        vec![],
        Stmt::Block(vec![deinterleave, interleave]),
    )
}

/// RGB u16 (stride 3) to a luma-like sum, 8 lanes.
pub fn rgb_u16_sum() -> argent_ir::Module {
    let ch = |c: i64| Expr::load(Type::U16, "rgb", Expr::ramp(x() * 24 + c, Expr::i32(3), 8));
    let value = Expr::add(Expr::add(ch(0), ch(1) * 2), ch(2));
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("out.extent.0"), Expr::i32(8)),
        ForKind::Vectorized,
        store("out", dense(x() * 8, 8), value),
    );
    module(
        vec![
            buffer("rgb", Type::U16, 1, BufferRole::Input),
            buffer("out", Type::U16, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// Casts of `from` lanes to every scalar type, plain and saturating: one
/// output buffer per (type, saturating) pair, in `cast_outputs` order.
pub fn casts(from: Type, lanes: u16) -> argent_ir::Module {
    let idx = if lanes == 1 {
        x()
    } else {
        dense(x() * lanes as i64, lanes)
    };
    let v = Expr::load(from, "in", idx.clone());
    let mut stores = Vec::new();
    let mut buffers = vec![buffer("in", from, 1, BufferRole::Input)];
    for (name, to, sat) in cast_outputs() {
        let value = if sat {
            Expr::saturating_cast(to, v.clone())
        } else {
            Expr::new(
                to.with_lanes(lanes),
                argent_ir::ExprKind::Cast {
                    value: v.clone(),
                    saturating: false,
                },
            )
        };
        stores.push(store(&name, idx.clone(), value));
        buffers.push(buffer(&name, to, 1, BufferRole::Output));
    }
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("in.extent.0"), Expr::i32(lanes as i64)),
        ForKind::Vectorized,
        Stmt::Block(stores),
    );
    module(buffers, vec![], body)
}

pub fn cast_outputs() -> Vec<(String, Type, bool)> {
    let mut out = Vec::new();
    for to in Type::ALL_SCALAR {
        for sat in [false, true] {
            out.push((format!("{to}{}", if sat { "_sat" } else { "" }), to, sat));
        }
    }
    out
}

/// A scratch buffer allocated inside a loop of `iterations` iterations.
pub fn alloc_in_loop(iterations: i64) -> argent_ir::Module {
    let y = Expr::var_i32("y");
    let fill = for_loop(
        "x",
        Expr::i32(0),
        Expr::i32(64),
        ForKind::Serial,
        store(
            "tmp",
            x(),
            Expr::load(Type::U8, "in", x()) + Expr::cast(Type::U8, y.clone()),
        ),
    );
    let read = store(
        "out",
        y.clone(),
        Expr::load(Type::U8, "tmp", Expr::modulo(y.clone(), Expr::i32(64))),
    );
    let body = for_loop(
        "y",
        Expr::i32(0),
        Expr::i32(iterations),
        ForKind::Serial,
        Stmt::Allocate {
            buffer: "tmp".into(),
            ty: Type::U8,
            size: Expr::i32(64),
            body: Box::new(Stmt::Block(vec![fill, read])),
        },
    );
    module(
        vec![
            buffer("in", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::U8, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// Checks that `in` covers [-1, needed], as lowering does for a blur.
pub fn checked_copy() -> argent_ir::Module {
    let min = Expr::var_i32("in.min.0");
    let max = Expr::add(min.clone(), Expr::var_i32("in.extent.0")) - 1;
    let needed_max = Expr::var_i32("needed");
    let cond = Expr::and(
        Expr::le(min.clone(), Expr::i32(-1)),
        Expr::le(needed_max.clone(), max.clone()),
    );
    let check = Stmt::Assert {
        cond,
        kind: AssertKind::InputTooSmall {
            input: "in".into(),
            stage: "blur_x".into(),
            dim: 0,
        },
        args: vec![Expr::i32(-1), needed_max, min, max],
    };
    let copy = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("out.extent.0"),
        ForKind::Serial,
        store("out", x(), Expr::load(Type::U8, "in", x())),
    );
    module(
        vec![
            buffer("in", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::U8, 1, BufferRole::Output),
        ],
        vec![param("needed", Type::I32)],
        Stmt::Block(vec![check, copy]),
    )
}

/// Allocates `n` f32 values, `n` a parameter.
pub fn alloc_param() -> argent_ir::Module {
    let body = Stmt::Allocate {
        buffer: "big".into(),
        ty: Type::F32,
        size: Expr::var_i32("n"),
        body: Box::new(Stmt::Block(vec![
            store("big", Expr::i32(0), Expr::f32(1.5)),
            store(
                "out",
                Expr::i32(0),
                Expr::load(Type::F32, "big", Expr::i32(0)),
            ),
        ])),
    };
    module(
        vec![buffer("out", Type::F32, 1, BufferRole::Output)],
        vec![param("n", Type::I32)],
        body,
    )
}

/// A 2-D blur: parallel over rows, each row blurred horizontally through
/// a scratch line (so tasks allocate) with 8-lane u16 vectors.
pub fn parallel_blur() -> argent_ir::Module {
    let y = Expr::var_i32("y");
    let w = Expr::var_i32("out.extent.0");
    let in_row = Expr::mul(y.clone(), Expr::var_i32("in.stride.1"));
    let tap = |k: i64| Expr::load(Type::U16, "in", dense(in_row.clone() + x() * 8 + k, 8));
    let line = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(w.clone(), Expr::i32(8)),
        ForKind::Vectorized,
        store(
            "line",
            dense(x() * 8, 8),
            Expr::div(
                Expr::add(Expr::add(tap(0), tap(1)), tap(2)),
                Expr::broadcast(Expr::int(Type::U16, 3), 8),
            ),
        ),
    );
    let copy = for_loop(
        "x",
        Expr::i32(0),
        w.clone(),
        ForKind::Serial,
        store(
            "out",
            Expr::mul(y.clone(), Expr::var_i32("out.stride.1")) + x(),
            Expr::load(Type::U16, "line", x()) + Expr::cast(Type::U16, y.clone()),
        ),
    );
    let body = for_loop(
        "y",
        Expr::i32(0),
        Expr::var_i32("out.extent.1"),
        ForKind::Parallel,
        Stmt::Allocate {
            buffer: "line".into(),
            ty: Type::U16,
            size: w,
            body: Box::new(Stmt::Block(vec![line, copy])),
        },
    );
    module(
        vec![
            buffer("in", Type::U16, 2, BufferRole::Input),
            buffer("out", Type::U16, 2, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// Elementwise `f(a, b)` over `ty` vectors of `lanes` lanes, result type
/// taken from `f`.
pub fn elementwise(
    ty: Type,
    out_ty: Type,
    lanes: u16,
    f: impl Fn(Expr, Expr) -> Expr,
) -> argent_ir::Module {
    let idx = dense(x() * lanes as i64, lanes);
    let a = Expr::load(ty, "a", idx.clone());
    let b = Expr::load(ty, "b", idx.clone());
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("a.extent.0"), Expr::i32(lanes as i64)),
        ForKind::Vectorized,
        store("out", idx, f(a, b)),
    );
    module(
        vec![
            buffer("a", ty, 1, BufferRole::Input),
            buffer("b", ty, 1, BufferRole::Input),
            buffer("out", out_ty, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// `out[i] = a[2i]*b[2i] + a[2i+1]*b[2i+1]` on i16 inputs, i32 output.
pub fn dot_i16() -> argent_ir::Module {
    let a = Expr::load(Type::I16, "a", dense(x() * 16, 16));
    let b = Expr::load(Type::I16, "b", dense(x() * 16, 16));
    let even: Vec<u32> = (0..8).map(|i| 2 * i).collect();
    let odd: Vec<u32> = (0..8).map(|i| 2 * i + 1).collect();
    let wide = |v: &Expr, idx: &Vec<u32>| {
        Expr::cast(Type::I32, Expr::shuffle(vec![v.clone()], idx.clone()))
    };
    let value = Expr::add(
        Expr::mul(wide(&a, &even), wide(&b, &even)),
        Expr::mul(wide(&a, &odd), wide(&b, &odd)),
    );
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("out.extent.0"), Expr::i32(8)),
        ForKind::Vectorized,
        store("out", dense(x() * 8, 8), value),
    );
    module(
        vec![
            buffer("a", Type::I16, 1, BufferRole::Input),
            buffer("b", Type::I16, 1, BufferRole::Input),
            buffer("out", Type::I32, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// Interleaves four u8 planes into RGBA with one dense store of a shuffle
/// (the form lowering gives when channels are unrolled and x vectorised).
pub fn interleave_shuffle() -> argent_ir::Module {
    interleave_planes(Type::U8, 4, 16)
}

/// `out[x * 8 ..] = let v = a[x * 4 ..] in let w = a[64 + x * 4 ..] in
/// shuffle(v + w, v - w, [0, 4, 1, 5, 2, 6, 3, 7])` over 4 x u8 values:
/// lane 1 of the stored vector reads lane 0 of `v` and `w` (the shape CSE
/// leaves when an unrolled vector loop interleaves its halves).
pub fn lets_read_across_lanes() -> argent_ir::Module {
    let quad = Type::U8.with_lanes(4);
    let v = Expr::var(quad, "v");
    let w = Expr::var(quad, "w");
    let body = Expr::shuffle(
        vec![Expr::add(v.clone(), w.clone()), Expr::sub(v, w)],
        vec![0, 4, 1, 5, 2, 6, 3, 7],
    );
    let value = Expr::let_in(
        "v",
        Expr::load(quad, "a", dense(x() * 4, 4)),
        Expr::let_in("w", Expr::load(quad, "a", dense(x() * 4 + 64, 4)), body),
    );
    let loop_body = store("out", dense(x() * 8, 8), value);
    module(
        vec![
            buffer("a", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::U8, 1, BufferRole::Output),
        ],
        vec![],
        for_loop("x", Expr::i32(0), Expr::i32(16), ForKind::Serial, loop_body),
    )
}

/// `rgba[x * k * lanes ..] = shuffle(planes[c * n + x * lanes ..] for c in
/// 0..k)`: `k` planes of `ty` (`n` elements each, `n` = the output's
/// extent over `k`) interleaved, `lanes` elements of each plane per
/// iteration.
pub fn interleave_planes(ty: Type, k: u32, lanes: u16) -> argent_ir::Module {
    let n = Expr::div(Expr::var_i32("rgba.extent.0"), Expr::i32(k.into()));
    let plane = |c: i64| {
        Expr::load(
            ty.with_lanes(lanes),
            "planes",
            dense(
                Expr::mul(n.clone(), Expr::i32(c)) + x() * i64::from(lanes),
                lanes,
            ),
        )
    };
    let total = k * u32::from(lanes);
    let indices: Vec<u32> = (0..total)
        .map(|i| (i % k) * u32::from(lanes) + i / k)
        .collect();
    let value = Expr::shuffle((0..i64::from(k)).map(plane).collect(), indices);
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(n.clone(), Expr::i32(lanes.into())),
        ForKind::Vectorized,
        store("rgba", dense(x() * i64::from(total), total as u16), value),
    );
    module(
        vec![
            buffer("planes", ty, 1, BufferRole::Input),
            buffer("rgba", ty, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// `out[x * 8 ..] = in[k * clamp(ramp(x * 8 - 1, 1, 8), 0, w - 1) + c]`
/// for x in 0..n: a `repeat_edge` load (of channel `c` of `k`-channel
/// interleaved data) left with its clamp, as in a boundary piece of a
/// partitioned loop.
pub fn clamped_ramp_load(k: i64, c: i64) -> argent_ir::Module {
    clamped_ramp_load_as(Type::U16, Type::U16, 8, k, c)
}

/// `clamped_ramp_load` of `lanes` elements of type `elem` at a time,
/// cast to `to` (as `f32(p(x, y, c))` of a `repeat_edge` reads a channel).
pub fn clamped_ramp_load_as(elem: Type, to: Type, lanes: u16, k: i64, c: i64) -> argent_ir::Module {
    let n = i64::from(lanes);
    let ramp = Expr::likely(dense(x() * n - Expr::i32(1), lanes));
    let clamped = Expr::max(
        Expr::broadcast(Expr::i32(0), lanes),
        Expr::min(
            Expr::broadcast(Expr::var_i32("w") - Expr::i32(1), lanes),
            ramp,
        ),
    );
    let index = Expr::add(
        Expr::mul(Expr::broadcast(Expr::i32(k), lanes), clamped),
        Expr::broadcast(Expr::i32(c), lanes),
    );
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        store(
            "out",
            dense(x() * n, lanes),
            Expr::cast(
                to.with_lanes(lanes),
                Expr::load(elem.with_lanes(lanes), "in", index),
            ),
        ),
    );
    module(
        vec![
            buffer("in", elem, 1, BufferRole::Input),
            buffer("out", to, 1, BufferRole::Output),
        ],
        vec![param("w", Type::I32), param("n", Type::I32)],
        body,
    )
}

/// Rows of a vertical stencil on u16 rows `N` apart, widened to u32, as
/// an unrolled loop over two output rows writes it, then stores that
/// read back what the run stored:
/// ```text
/// out[x]     = u32(a[x]) * 4     + u32(a[x + N]) * 6  + u32(a[x + 2N])
/// out[x + N] = u32(a[x + N]) * 4 + u32(a[x + 2N]) * 6 + u32(a[x + 3N])
/// t[x]       = out[x] * 2
/// out[x]     = t[x] + 1
/// t[x]       = out[x] * 2          (the new out[x]: loaded again)
/// ```
/// Eight lanes per store, `N / 8` iterations.
pub fn rows_of_taps() -> argent_ir::Module {
    let row = |k: i64| dense(x() * 8 + k * N as i64, 8);
    let tap = |k: i64| Expr::cast(Type::U32, Expr::load(Type::U16, "a", row(k)));
    let c = |v: i64| Expr::broadcast(Expr::int(Type::U32, v), 8);
    let stencil = |k: i64| {
        Expr::add(
            Expr::add(Expr::mul(tap(k), c(4)), Expr::mul(tap(k + 1), c(6))),
            tap(k + 2),
        )
    };
    let out0 = Expr::load(Type::U32, "out", row(0));
    let doubled = Expr::mul(out0, c(2));
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::i32(i64::from(N / 8)),
        ForKind::Serial,
        Stmt::Block(vec![
            store("out", row(0), stencil(0)),
            store("out", row(1), stencil(1)),
            store("t", row(0), doubled.clone()),
            store(
                "out",
                row(0),
                Expr::add(Expr::load(Type::U32, "t", row(0)), c(1)),
            ),
            store("t", row(0), doubled),
        ]),
    );
    module(
        vec![
            buffer("a", Type::U16, 1, BufferRole::Input),
            buffer("out", Type::U32, 1, BufferRole::Output),
            buffer("t", Type::U32, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}

/// A horizontal stencil on u32 lanes with constant weights, eight lanes
/// per store:
/// ```text
/// out[x] = u32(a[x]) * w0 + u32(a[x + 1]) * w1 + ... + u32(a[x + k])    (no weight: 1)
/// ```
/// over `a` (u16) or, with `wide_input`, over u32 values that wrap when
/// weighted.
pub fn weighted_taps(weights: &[i64], wide_input: bool) -> argent_ir::Module {
    let input_ty = if wide_input { Type::U32 } else { Type::U16 };
    let tap = |k: i64| {
        let load = Expr::load(input_ty, "a", dense(x() * 8 + k, 8));
        if wide_input {
            load
        } else {
            Expr::cast(Type::U32, load)
        }
    };
    let c = |v: i64| Expr::broadcast(Expr::int(Type::U32, v), 8);
    let sum = weights
        .iter()
        .enumerate()
        .map(|(k, w)| Expr::mul(tap(k as i64), c(*w)))
        .chain(std::iter::once(tap(weights.len() as i64)))
        .reduce(Expr::add)
        .expect("one tap at least");
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::i32(i64::from(N / 8)),
        ForKind::Serial,
        store("out", dense(x() * 8, 8), sum),
    );
    module(
        vec![
            buffer("a", input_ty, 1, BufferRole::Input),
            buffer("out", Type::U32, 1, BufferRole::Output),
        ],
        vec![],
        body,
    )
}
