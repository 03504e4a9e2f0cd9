//! Code generation tests: every module validates with every option set,
//! and WAT snapshots of small pipelines show the SIMD instructions chosen.

mod common;
mod programs;

use argent_ir::{BinOp, BufferRole, Expr, ForKind, Intrinsic, Stmt, Type};
use argent_wasm::{CodegenError, CodegenOptions, compile};
use common::*;
use expect_test::{Expect, expect};
use programs::*;

const ALL_OPTIONS: [CodegenOptions; 4] = [
    CodegenOptions {
        simd: false,
        threads: false,
    },
    CodegenOptions {
        simd: true,
        threads: false,
    },
    CodegenOptions {
        simd: false,
        threads: true,
    },
    CodegenOptions {
        simd: true,
        threads: true,
    },
];

fn wat(module: &argent_ir::Module, options: CodegenOptions) -> String {
    let compiled = compile(module, &options).expect("compiles");
    wasmparser::validate(&compiled.bytes).expect("valid");
    wasmprinter::print_bytes(&compiled.bytes).unwrap()
}

/// The instructions of the first innermost loop of the pipeline body,
/// without the loop counter increment.
fn inner_loop(wat: &str) -> String {
    let lines: Vec<&str> = wat.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with("loop"))
        .collect();
    // The innermost loop is one without another loop before its end.
    for &start in &starts {
        let indent = lines[start].len() - lines[start].trim_start().len();
        let end = (start + 1..lines.len())
            .find(|&i| {
                lines[i].trim() == "end" && lines[i].len() - lines[i].trim_start().len() == indent
            })
            .unwrap();
        if !lines[start + 1..end]
            .iter()
            .any(|l| l.trim_start().starts_with("loop"))
        {
            return lines[start + 1..end]
                .iter()
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join("\n");
        }
    }
    panic!("no loop in\n{wat}");
}

fn check_inner_loop(module: &argent_ir::Module, expected: Expect) {
    expected.assert_eq(&inner_loop(&wat(module, CodegenOptions::default())));
}

#[test]
fn every_program_validates_with_every_option_set() {
    let programs = [
        add_u8(16),
        add_u8(32),
        add_u8(8),
        divmod_param(1),
        divmod_param(4),
        divmod_const(Type::U16, 3, 8),
        blur3_u16(8),
        rgba_roundtrip(),
        rgb_u16_sum(),
        casts(Type::F32, 16),
        casts(Type::U8, 16),
        alloc_in_loop(10),
        checked_copy(),
        alloc_param(),
        parallel_blur(),
        dot_i16(),
        rows_of_taps(),
    ];
    for program in &programs {
        for options in ALL_OPTIONS {
            let compiled = compile(program, &options).expect("compiles");
            wasmparser::validate(&compiled.bytes).expect("valid");
            let text = wasmprinter::print_bytes(&compiled.bytes).unwrap();
            assert_eq!(text.contains("v128"), options.simd && text.contains("v128"));
            if !options.simd {
                assert!(!text.contains("v128"), "scalar code uses SIMD:\n{text}");
            }
            assert_eq!(
                text.contains("(memory (;0;) 1 65536 shared)"),
                options.threads
            );
        }
    }
}

#[test]
fn add_u8_is_one_i8x16_add_per_16_lanes() {
    check_inner_loop(
        &add_u8(16),
        expect![[r#"
            local.get 16
            v128.load align=1
            local.set 18
            local.get 17
            v128.load align=1
            local.set 19
            local.get 18
            local.get 19
            i8x16.add
            local.set 20
            local.get 15
            local.get 20
            v128.store align=1
            local.get 15
            i32.const 16
            i32.add
            local.set 15
            local.get 16
            i32.const 16
            i32.add
            local.set 16
            local.get 17
            i32.const 16
            i32.add
            local.set 17
            local.get 13
            i32.const 1
            i32.add
            local.tee 13
            local.get 14
            i32.lt_s
            br_if 0 (;@2;)"#]],
    );
}

#[test]
fn blur_uses_unaligned_loads_at_constant_offsets() {
    check_inner_loop(
        &blur3_u16(8),
        expect![[r#"
            local.get 12
            v128.load align=1
            local.set 16
            local.get 12
            v128.load offset=2 align=1
            local.set 17
            local.get 16
            local.get 17
            i16x8.add
            local.set 18
            local.get 12
            v128.load offset=4 align=1
            local.set 19
            local.get 18
            local.get 19
            i16x8.add
            local.set 20
            local.get 20
            local.get 13
            i16x8.mul
            local.tee 21
            local.get 14
            i16x8.add
            local.tee 22
            local.get 14
            i16x8.add
            local.get 22
            i16x8.min_u
            local.get 21
            i16x8.min_u
            local.set 23
            local.get 11
            local.get 23
            v128.store align=1
            local.get 11
            i32.const 16
            i32.add
            local.set 11
            local.get 12
            i32.const 16
            i32.add
            local.set 12
            local.get 9
            i32.const 1
            i32.add
            local.tee 9
            local.get 10
            i32.lt_s
            br_if 0 (;@2;)"#]],
    );
}

/// An RGBA channel of 16 pixels converted to f32 (as `f32(photo(x, y, c))`
/// in the unsharp mask) is four loads, masked: each masked pixel already
/// is the channel's value in an i32 lane, so the conversion follows with
/// no narrow to bytes and no extends back.
#[test]
fn rgba_channel_converted_to_f32_is_masked_pixels_converted() {
    let load = Expr::load(
        Type::U8.with_lanes(16),
        "rgba",
        Expr::ramp(x() * 64 + 2, Expr::i32(4), 16),
    );
    let value = Expr::cast(Type::F32.with_lanes(16), load);
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::div(Expr::var_i32("out.extent.0"), Expr::i32(16)),
        ForKind::Vectorized,
        store("out", dense(x() * 16, 16), value),
    );
    let module = module(
        vec![
            buffer("rgba", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::F32, 1, BufferRole::Output),
        ],
        vec![],
        body,
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.trim().starts_with(op)).count();
    assert_eq!(count("v128.load "), 4, "{body}");
    assert_eq!(count("v128.and"), 4, "{body}");
    assert_eq!(count("f32x4.convert_i32x4_s"), 4, "{body}");
    assert_eq!(count("v128.store"), 4, "{body}");
    assert_eq!(count("i16x8.narrow") + count("i8x16.narrow"), 0, "{body}");
    assert_eq!(count("i16x8.extend") + count("i32x4.extend"), 0, "{body}");
}

/// `out[x * lanes ..] = in[ramp(x * lanes * k, k, lanes)]`: the WAT of
/// its SIMD module.
fn strided_copy_wat(ty: Type, k: i64, lanes: u16) -> String {
    let load = Expr::load(
        ty.with_lanes(lanes),
        "in",
        Expr::ramp(x() * (i64::from(lanes) * k), Expr::i32(k), lanes),
    );
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("out.extent.0") / Expr::i32(lanes.into()),
        ForKind::Vectorized,
        store("out", dense(x() * i64::from(lanes), lanes), load),
    );
    let module = module(
        vec![
            buffer("in", ty, 1, BufferRole::Input),
            buffer("out", ty, 1, BufferRole::Output),
        ],
        vec![],
        body,
    );
    wat(&module, CodegenOptions::default())
}

/// Picking bytes out of two registers is a swizzle of each (zeros where
/// the other supplies the byte) and an `or`: V8 compiles a two-register
/// `i8x16.shuffle` that fits none of its patterns to two `pshufb`s with
/// their masks rebuilt in the loop. Shuffles of whole 32-bit words stay
/// shuffles (V8 has `shufps` for them).
#[test]
fn byte_picks_from_two_registers_are_swizzles_and_words_stay_shuffles() {
    // A channel of 8 RGB pixels: a window of 22 bytes, two registers.
    let rgb = strided_copy_wat(Type::U8, 3, 8);
    assert_eq!(rgb.matches("i8x16.shuffle").count(), 0, "{rgb}");
    assert_eq!(rgb.matches("i8x16.swizzle").count(), 2, "{rgb}");
    assert_eq!(rgb.matches("v128.or").count(), 1, "{rgb}");
    // Every other f32 of two registers: words 0 and 2 of each.
    let words = strided_copy_wat(Type::F32, 2, 4);
    assert_eq!(
        words
            .matches("i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27")
            .count(),
        1,
        "{words}"
    );
    assert_eq!(words.matches("i8x16.swizzle").count(), 0, "{words}");
}

#[test]
fn rgba_channel_load_is_four_loads_masked_and_narrowed() {
    check_inner_loop(
        &rgba_roundtrip(),
        expect![[r#"
            local.get 21
            local.set 22
            local.get 22
            v128.load align=1
            local.set 23
            local.get 22
            v128.load offset=16 align=1
            local.set 24
            local.get 22
            v128.load offset=32 align=1
            local.set 25
            local.get 22
            v128.load offset=48 align=1
            local.set 26
            v128.const i32x4 0x000000ff 0x000000ff 0x000000ff 0x000000ff
            local.set 27
            local.get 23
            local.get 27
            v128.and
            local.set 28
            local.get 24
            local.get 27
            v128.and
            local.set 29
            local.get 25
            local.get 27
            v128.and
            local.set 30
            local.get 26
            local.get 27
            v128.and
            local.set 31
            local.get 28
            local.get 29
            i16x8.narrow_i32x4_u
            local.set 32
            local.get 30
            local.get 31
            i16x8.narrow_i32x4_u
            local.set 33
            local.get 32
            local.get 33
            i8x16.narrow_i16x8_u
            local.set 34
            local.get 19
            local.get 34
            v128.store align=1
            local.get 19
            i32.const 16
            i32.add
            local.set 19
            local.get 21
            i32.const 64
            i32.add
            local.set 21
            local.get 15
            i32.const 1
            i32.add
            local.tee 15
            local.get 16
            i32.lt_s
            br_if 0 (;@4;)"#]],
    );
}

/// A 5-tap stencil over 8 x u32 (two registers per vector): the taps at
/// x and x+4 overlap in a whole register (the second of one is the first
/// of the other), which is loaded once. Ten registers' worth of taps, nine
/// loads, each at its own offset.
#[test]
fn overlapping_registers_of_wide_taps_are_loaded_once() {
    let module = tap_sum(Type::U32, 5, 8);
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let loads: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("v128.load"))
        .collect();
    expect![[r#"
        v128.load align=1
        v128.load offset=16 align=1
        v128.load offset=4 align=1
        v128.load offset=20 align=1
        v128.load offset=8 align=1
        v128.load offset=24 align=1
        v128.load offset=12 align=1
        v128.load offset=28 align=1
        v128.load offset=32 align=1"#]]
    .assert_eq(&loads.join("\n"));
}

#[test]
fn saturating_narrow_of_a_shifted_value_is_one_narrow() {
    // `sat_u16(x >> 8)` on u32 lanes: the shift leaves the sign bit clear,
    // so the unsigned narrow of signed lanes is exactly the saturating
    // cast (no clamp, no mask).
    let module = elementwise(Type::U32, Type::U16, 8, |a, b| {
        Expr::saturating_cast(
            Type::U16,
            Expr::binary(
                BinOp::Shr,
                Expr::add(a, b),
                Expr::broadcast(Expr::int(Type::U32, 8), 8),
            ),
        )
    });
    check_inner_loop(
        &module,
        expect![[r#"
            local.get 16
            v128.load align=1
            local.set 19
            local.get 16
            v128.load offset=16 align=1
            local.set 20
            local.get 17
            v128.load align=1
            local.set 21
            local.get 17
            v128.load offset=16 align=1
            local.set 22
            local.get 19
            local.get 21
            i32x4.add
            local.set 23
            local.get 20
            local.get 22
            i32x4.add
            local.set 24
            local.get 23
            i32.const 8
            i32x4.shr_u
            local.set 25
            local.get 24
            i32.const 8
            i32x4.shr_u
            local.set 26
            local.get 25
            local.get 26
            i16x8.narrow_i32x4_u
            local.set 27
            local.get 15
            local.get 27
            v128.store align=1
            local.get 15
            i32.const 16
            i32.add
            local.set 15
            local.get 16
            i32.const 32
            i32.add
            local.set 16
            local.get 17
            i32.const 32
            i32.add
            local.set 17
            local.get 13
            i32.const 1
            i32.add
            local.tee 13
            local.get 14
            i32.lt_s
            br_if 0 (;@2;)"#]],
    );
}

#[test]
fn saturating_add_becomes_add_sat_u() {
    let module = elementwise(Type::U8, Type::U8, 16, |a, b| {
        Expr::saturating_cast(
            Type::U8,
            Expr::add(Expr::cast(Type::U16, a), Expr::cast(Type::U16, b)),
        )
    });
    check_inner_loop(
        &module,
        expect![[r#"
            local.get 16
            v128.load align=1
            local.set 18
            local.get 17
            v128.load align=1
            local.set 19
            local.get 18
            local.get 19
            i8x16.add_sat_u
            local.set 20
            local.get 15
            local.get 20
            v128.store align=1
            local.get 15
            i32.const 16
            i32.add
            local.set 15
            local.get 16
            i32.const 16
            i32.add
            local.set 16
            local.get 17
            i32.const 16
            i32.add
            local.set 17
            local.get 13
            i32.const 1
            i32.add
            local.tee 13
            local.get 14
            i32.lt_s
            br_if 0 (;@2;)"#]],
    );
}

#[test]
fn repeated_subexpressions_are_computed_once() {
    // `(a + b) * (a + b) - a` reads each input once and adds once.
    let module = elementwise(Type::U16, Type::U16, 8, |a, b| {
        let sum = Expr::add(a.clone(), b);
        Expr::sub(Expr::mul(sum.clone(), sum), a)
    });
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| *l == op).count();
    assert_eq!(
        (
            count("v128.load align=1"),
            count("i16x8.add"),
            count("i16x8.mul")
        ),
        (2, 1, 1),
        "{body}"
    );
}

#[test]
fn loop_invariant_scalars_and_broadcasts_are_computed_before_the_loop() {
    // out[x*8 + p*q ..] = a[x*8 ..] + x8(u16(p*q)): `p*q` and its splat do
    // not change with `x`, so the loop body has neither.
    let pq = Expr::mul(Expr::var_i32("p"), Expr::var_i32("q"));
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        store(
            "out",
            dense(Expr::add(x() * 8, pq.clone()), 8),
            Expr::add(
                Expr::load(Type::U16.with_lanes(8), "a", dense(x() * 8, 8)),
                Expr::broadcast(Expr::cast(Type::U16, pq), 8),
            ),
        ),
    );
    let module = module(
        vec![
            buffer("a", Type::U16, 1, BufferRole::Input),
            buffer("out", Type::U16, 1, BufferRole::Output),
        ],
        vec![
            param("p", Type::I32),
            param("q", Type::I32),
            param("n", Type::I32),
        ],
        body,
    );
    let text = wat(&module, CodegenOptions::default());
    let body = inner_loop(&text);
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    // No `p * q` and no `x * 8` (both addresses are pointers advanced by
    // 16 bytes); the add, and no splat.
    assert_eq!(
        (count("i32.mul"), count("i16x8.splat"), count("i16x8.add")),
        (0, 0, 1),
        "{body}"
    );
    assert_eq!(body.matches("i32.const 16\ni32.add").count(), 2, "{body}");
    assert_eq!(text.matches("i16x8.splat").count(), 1, "{text}");
}

#[test]
fn interleaved_offsets_bound_per_store_are_pointers() {
    // Two unrolled channels, each binding its own copy of the pixel's
    // offset `i = (x + p) * 3` (as CSE leaves them), read a[i + q] and
    // a[i + r]: `(x + p) * 3` is distributed into `x * 3 + p * 3`, so both
    // loads read pointers advanced by 3 bytes (the let's own value, now
    // unused, is left to the engine's dead-code elimination).
    let offset = || Expr::mul(Expr::add(x(), Expr::var_i32("p")), Expr::i32(3));
    let channel = |k: i64, at: &str| {
        store(
            "out",
            Expr::add(x() * 2, Expr::i32(k)),
            Expr::let_in(
                "i",
                offset(),
                Expr::load(
                    Type::U8,
                    "a",
                    Expr::add(Expr::var_i32("i"), Expr::var_i32(at)),
                ),
            ),
        )
    };
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        Stmt::block(vec![channel(0, "q"), channel(1, "r")]),
    );
    let module = module(
        vec![
            buffer("a", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::U8, 1, BufferRole::Output),
        ],
        vec![
            param("p", Type::I32),
            param("q", Type::I32),
            param("r", Type::I32),
            param("n", Type::I32),
        ],
        body,
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    assert_eq!(body.matches("i32.const 3\ni32.add").count(), 2, "{body}");
    assert_eq!(body.matches("i32.add\ni32.load8_u").count(), 0, "{body}");
}

#[test]
fn f32_division_by_a_power_of_two_is_a_multiply() {
    let by = |c: f64| {
        let module = elementwise(Type::F32, Type::F32, 4, |a, _| {
            Expr::div(a, Expr::broadcast(Expr::f32(c), 4))
        });
        let body = inner_loop(&wat(&module, CodegenOptions::default()));
        (
            body.lines().filter(|l| *l == "f32x4.div").count(),
            body.lines().filter(|l| *l == "f32x4.mul").count(),
        )
    };
    assert_eq!(by(4.0), (0, 1));
    assert_eq!(by(0.5), (0, 1));
    // 3 has no exact reciprocal.
    assert_eq!(by(3.0), (1, 0));
}

#[test]
fn f32_lerp_is_whole_vectors_not_lanes() {
    // lerp(a, b, w) = a * (1 - w) + b * w on f32x8: two registers, each one
    // sub, two muls and an add; the `1` is splat once, before the loop.
    let module = elementwise(Type::F32, Type::F32, 8, |a, b| {
        let w = Expr::mul(b.clone(), Expr::broadcast(Expr::f32(0.5), 8));
        Expr::intrinsic(Type::F32.with_lanes(8), Intrinsic::Lerp, vec![a, b, w])
    });
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!(
        (
            count("f32x4.sub"),
            count("f32x4.mul"),
            count("f32x4.add"),
            count("f32x4.extract_lane"),
            count("f32x4.splat"),
        ),
        (2, 6, 2, 0, 0),
        "{body}"
    );
}

#[test]
fn strided_store_computes_its_address_once() {
    // out[3x + 1 + 3i] = a[x..] for 16 u8 lanes: one address, the lanes at
    // byte offsets 1, 4, .., 46.
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        store(
            "out",
            Expr::ramp(Expr::add(x() * 48, Expr::i32(1)), Expr::i32(3), 16),
            Expr::load(Type::U8.with_lanes(16), "a", dense(x() * 16, 16)),
        ),
    );
    let module = module(
        vec![
            buffer("a", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::U8, 1, BufferRole::Output),
        ],
        vec![param("n", Type::I32)],
        body,
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let offsets: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("v128.store8_lane"))
        .map(|l| l.split_whitespace().nth(1).unwrap_or(""))
        .collect();
    let expected: Vec<String> = (0..16).map(|i| format!("offset={}", 1 + 3 * i)).collect();
    assert_eq!(offsets, expected, "{body}");
    assert_eq!(
        (
            body.lines().filter(|l| *l == "i32.mul").count(),
            body.matches("i32.const 48\ni32.add").count(),
            body.matches("i32.const 16\ni32.add").count(),
        ),
        (0, 1, 1),
        "the store's address advances by 48 bytes, the load's by 16:\n{body}"
    );
}

#[test]
fn gather_loads_lanes_in_place_and_adds_broadcast_terms_once() {
    // out[x..] = a[idx[x..] + x4(p)]: `p` goes into the base address, each
    // lane is loaded straight into its place.
    let index = Expr::add(
        Expr::load(Type::I32.with_lanes(4), "idx", dense(x() * 4, 4)),
        Expr::broadcast(Expr::var_i32("p"), 4),
    );
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        store(
            "out",
            dense(x() * 4, 4),
            Expr::load(Type::F32.with_lanes(4), "a", index),
        ),
    );
    let module = module(
        vec![
            buffer("idx", Type::I32, 1, BufferRole::Input),
            buffer("a", Type::F32, 1, BufferRole::Input),
            buffer("out", Type::F32, 1, BufferRole::Output),
        ],
        vec![param("p", Type::I32), param("n", Type::I32)],
        body,
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!(
        (
            count("v128.load32_splat"),
            count("v128.load32_lane"),
            count("i32x4.add"),
            count("f32.load")
        ),
        (1, 3, 0, 0),
        "{body}"
    );
}

#[test]
fn clamped_ramp_loads_densely_when_every_lane_is_inside() {
    // out[x..] = in[clamp(x - 1 .., 0, w - 1)] (repeat_edge left in a
    // boundary piece): one dense load when the vector is inside the image,
    // the gather (a lane at a time) only at its edges. The results are
    // checked in exec.rs.
    let module = clamped_ramp_load(1, 0);
    check_inner_loop(
        &module,
        expect![[r#"
            i32.const 0
            local.get 11
            i32.const 8
            i32.mul
            i32.const 1
            i32.sub
            i32.le_s
            local.get 11
            i32.const 8
            i32.mul
            i32.const 1
            i32.sub
            i32.const 7
            i32.add
            local.get 13
            i32.le_s
            i32.and
            if ;; label = @3
            local.get 1
            local.get 11
            i32.const 8
            i32.mul
            i32.const 1
            i32.sub
            i32.const 1
            i32.shl
            i32.add
            v128.load align=1
            local.set 18
            local.get 18
            local.set 19
            else
            local.get 11
            i32.const 8
            i32.mul
            i32.const 1
            i32.sub
            i32x4.splat
            local.set 20
            local.get 20
            v128.const i32x4 0x00000000 0x00000001 0x00000002 0x00000003
            i32x4.add
            local.set 21
            local.get 20
            v128.const i32x4 0x00000004 0x00000005 0x00000006 0x00000007
            i32x4.add
            local.set 22
            local.get 17
            local.get 21
            i32x4.min_s
            local.set 23
            local.get 17
            local.get 22
            i32x4.min_s
            local.set 24
            local.get 16
            local.get 23
            i32x4.max_s
            local.set 25
            local.get 16
            local.get 24
            i32x4.max_s
            local.set 26
            local.get 1
            i32.const 0
            i32.const 1
            i32.shl
            i32.add
            local.set 27
            local.get 27
            local.get 25
            i32x4.extract_lane 0
            i32.const 1
            i32.shl
            local.tee 29
            i32.add
            v128.load16_splat
            local.set 28
            local.get 27
            local.get 25
            i32x4.extract_lane 1
            i32.const 1
            i32.shl
            local.tee 30
            i32.add
            local.get 28
            v128.load16_lane 1
            local.set 28
            local.get 27
            local.get 25
            i32x4.extract_lane 2
            i32.const 1
            i32.shl
            local.tee 31
            i32.add
            local.get 28
            v128.load16_lane 2
            local.set 28
            local.get 27
            local.get 25
            i32x4.extract_lane 3
            i32.const 1
            i32.shl
            local.tee 32
            i32.add
            local.get 28
            v128.load16_lane 3
            local.set 28
            local.get 27
            local.get 26
            i32x4.extract_lane 0
            i32.const 1
            i32.shl
            local.tee 33
            i32.add
            local.get 28
            v128.load16_lane 4
            local.set 28
            local.get 27
            local.get 26
            i32x4.extract_lane 1
            i32.const 1
            i32.shl
            local.tee 34
            i32.add
            local.get 28
            v128.load16_lane 5
            local.set 28
            local.get 27
            local.get 26
            i32x4.extract_lane 2
            i32.const 1
            i32.shl
            local.tee 35
            i32.add
            local.get 28
            v128.load16_lane 6
            local.set 28
            local.get 27
            local.get 26
            i32x4.extract_lane 3
            i32.const 1
            i32.shl
            local.tee 36
            i32.add
            local.get 28
            v128.load16_lane 7
            local.set 28
            local.get 28
            local.set 19
            end
            local.get 14
            local.get 19
            v128.store align=1
            local.get 14
            i32.const 16
            i32.add
            local.set 14
            local.get 11
            i32.const 1
            i32.add
            local.tee 11
            local.get 12
            i32.lt_s
            br_if 0 (;@2;)"#]],
    );
}

#[test]
fn neighbouring_gathers_load_pairs() {
    // out[x..] = a[i] + a[i + 1] with i = idx[x..]: one 64-bit load per
    // lane (four in all) and two shuffles, instead of eight 32-bit loads.
    let i = Expr::load(Type::I32.with_lanes(4), "idx", dense(x() * 4, 4));
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        store(
            "out",
            dense(x() * 4, 4),
            Expr::add(
                Expr::load(Type::F32.with_lanes(4), "a", i.clone()),
                Expr::load(
                    Type::F32.with_lanes(4),
                    "a",
                    Expr::add(i, Expr::broadcast(Expr::i32(1), 4)),
                ),
            ),
        ),
    );
    let module = module(
        vec![
            buffer("idx", Type::I32, 1, BufferRole::Input),
            buffer("a", Type::F32, 1, BufferRole::Input),
            buffer("out", Type::F32, 1, BufferRole::Output),
        ],
        vec![param("n", Type::I32)],
        body,
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!(
        (
            count("v128.load64_zero"),
            count("v128.load64_lane"),
            count("i8x16.shuffle"),
            count("v128.load32"),
            count("i32x4.extract_lane"),
        ),
        (2, 2, 2, 0, 4),
        "{body}"
    );
}

#[test]
fn invariant_vectors_are_computed_before_the_innermost_loop() {
    // for x { for c in 0..n { out[(x*n + c)*4 ..] = a[x*4 ..] * a[x*4 ..] + b[c*4 ..] } }:
    // the product does not change with `c`, so the inner loop only loads
    // `b` and adds.
    let c = Expr::var_i32("c");
    let ax = Expr::load(Type::F32.with_lanes(4), "a", dense(x() * 4, 4));
    let inner = for_loop(
        "c",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        store(
            "out",
            dense(
                Expr::mul(Expr::add(x() * Expr::var_i32("n"), c.clone()), Expr::i32(4)),
                4,
            ),
            Expr::add(
                Expr::mul(ax.clone(), ax),
                Expr::load(Type::F32.with_lanes(4), "b", dense(c * 4, 4)),
            ),
        ),
    );
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("m"),
        ForKind::Serial,
        inner,
    );
    let module = module(
        vec![
            buffer("a", Type::F32, 1, BufferRole::Input),
            buffer("b", Type::F32, 1, BufferRole::Input),
            buffer("out", Type::F32, 1, BufferRole::Output),
        ],
        vec![param("n", Type::I32), param("m", Type::I32)],
        body,
    );
    let text = wat(&module, CodegenOptions::default());
    let body = inner_loop(&text);
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!(
        (count("f32x4.mul"), count("f32x4.add"), count("v128.load")),
        (0, 1, 1),
        "{body}"
    );
    assert_eq!(text.matches("f32x4.mul").count(), 1, "{text}");
}

#[test]
fn consecutive_scalar_stores_share_values() {
    // out[2x] = a[x] * 3 / 7; out[2x + 1] = a[x] * 3 / 7 + 1: one load of
    // `a` and one division per iteration.
    let v = Expr::div(
        Expr::mul(Expr::load(Type::F32, "a", x()), Expr::f32(3.0)),
        Expr::f32(7.0),
    );
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::var_i32("n"),
        ForKind::Serial,
        Stmt::Block(vec![
            store("out", x() * 2, v.clone()),
            store(
                "out",
                Expr::add(x() * 2, Expr::i32(1)),
                Expr::add(v, Expr::f32(1.0)),
            ),
        ]),
    );
    let module = module(
        vec![
            buffer("a", Type::F32, 1, BufferRole::Input),
            buffer("out", Type::F32, 1, BufferRole::Output),
        ],
        vec![param("n", Type::I32)],
        body,
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!(
        (count("f32.load"), count("f32.div"), count("f32.store")),
        (1, 1, 2),
        "{body}"
    );
}

#[test]
fn widened_rows_load_widening_once_across_stores() {
    // Two output rows of a u16 stencil widened to u32 read four input
    // rows, each loaded once, widening as it loads (two
    // `v128.load16x4_u`); the weights 4 and 6 regroup into shifts and
    // adds, `* 2` is a shift; the buffer read by later stores after a
    // store to it is loaded again (see `rows_of_taps`).
    let body = inner_loop(&wat(&rows_of_taps(), CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!(
        (
            count("v128.load16x4_u"),
            count("i32x4.extend"),
            count("i32x4.shl"),
            count("i32x4.mul"),
            count("v128.load "),
            count("v128.store"),
        ),
        // Loads: out[x] for t (twice: before and after out[x] is stored)
        // and t[x] once, two registers each.
        (8, 0, 12, 0, 6, 10),
        "{body}"
    );
}

#[test]
fn weighted_sums_of_u32_lanes_regroup_without_multiplies() {
    // `(((b + c + d) << 1) + c) << 1 + (a + e)` for the gaussian's 1 4 6 4
    // 1, per register: 5 adds, 2 shifts. Weights that are distinct powers
    // of two stay as they are (one shift each); a weight over 2^16 keeps
    // its multiply.
    let counts = |weights: &[i64]| {
        let body = inner_loop(&wat(
            &weighted_taps(weights, false),
            CodegenOptions::default(),
        ));
        let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
        (count("i32x4.add"), count("i32x4.shl"), count("i32x4.mul"))
    };
    assert_eq!(counts(&[1, 4, 6, 4]), (10, 4, 0));
    assert_eq!(counts(&[2, 4]), (4, 4, 0));
    assert_eq!(counts(&[3]), (4, 2, 0));
    assert_eq!(counts(&[(1 << 17) + 1, 3]), (6, 2, 2));
}

#[test]
fn inlined_copies_with_renamed_lets_compute_once() {
    // (let a = i * 3 in a * a + a) + (let b = i * 3 in b * b + b), i32x4:
    // the second copy's `b` binds the registers of `a`, so `b * b + b` is
    // recognised as `a * a + a`: two multiplies in all, not four.
    let i = Expr::load(Type::I32.with_lanes(4), "a", dense(x() * 4, 4));
    let copy = |name: &str| {
        let v = Expr::var(Type::I32.with_lanes(4), name);
        Expr::let_in(
            name,
            Expr::mul(i.clone(), Expr::broadcast(Expr::i32(3), 4)),
            Expr::add(Expr::mul(v.clone(), v.clone()), v),
        )
    };
    let module = module(
        vec![
            buffer("a", Type::I32, 1, BufferRole::Input),
            buffer("out", Type::I32, 1, BufferRole::Output),
        ],
        vec![param("n", Type::I32)],
        for_loop(
            "x",
            Expr::i32(0),
            Expr::var_i32("n"),
            ForKind::Serial,
            store("out", dense(x() * 4, 4), Expr::add(copy("a1"), copy("b1"))),
        ),
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!((count("i32x4.mul"), count("i32x4.add")), (2, 2), "{body}");
}

#[test]
fn gathers_at_one_index_from_several_bases_extract_each_lane_once() {
    // out[x..] = g[c0] + g[c1] with c0 = idx[x..], c1 = idx[x..] + x4(p):
    // the lanes of `idx` are extracted once; `c1` reads from a base moved
    // by `p` (the let still computes `c1` itself, the one add, which the
    // engine drops as unused).
    let idx = Expr::load(Type::I32.with_lanes(4), "idx", dense(x() * 4, 4));
    let var = |n: &str| Expr::var(Type::I32.with_lanes(4), n);
    let g = |index: Expr| Expr::load(Type::F32.with_lanes(4), "g", index);
    let value = Expr::let_in(
        "c0",
        idx.clone(),
        Expr::let_in(
            "c1",
            Expr::add(idx, Expr::broadcast(Expr::var_i32("p"), 4)),
            Expr::add(g(var("c0")), g(var("c1"))),
        ),
    );
    let module = module(
        vec![
            buffer("idx", Type::I32, 1, BufferRole::Input),
            buffer("g", Type::F32, 1, BufferRole::Input),
            buffer("out", Type::F32, 1, BufferRole::Output),
        ],
        vec![param("p", Type::I32), param("n", Type::I32)],
        for_loop(
            "x",
            Expr::i32(0),
            Expr::var_i32("n"),
            ForKind::Serial,
            store("out", dense(x() * 4, 4), value),
        ),
    );
    let body = inner_loop(&wat(&module, CodegenOptions::default()));
    let count = |op: &str| body.lines().filter(|l| l.starts_with(op)).count();
    assert_eq!(
        (
            count("i32x4.extract_lane"),
            count("v128.load32_lane"),
            count("i32x4.add")
        ),
        (4, 6, 1),
        "{body}"
    );
}

#[test]
fn scalar_code_has_no_simd_and_wraps() {
    let text = wat(
        &add_u8(16),
        CodegenOptions {
            simd: false,
            threads: false,
        },
    );
    assert!(!text.contains("v128"));
    // 16 lane loads, adds and stores, each add wrapped to 8 bits.
    assert_eq!(text.matches("i32.load8_u").count(), 32);
    assert_eq!(text.matches("i32.store8").count(), 16);
    assert_eq!(text.matches("i32.const 255").count(), 16);
}

#[test]
fn parallel_loop_becomes_a_task() {
    let compiled = compile(
        &parallel_blur(),
        &CodegenOptions {
            simd: true,
            threads: true,
        },
    )
    .unwrap();
    let task = &compiled.abi.tasks[0];
    assert_eq!(task.export, "task_0");
    assert_eq!(task.loop_var, "y");
    assert_eq!(
        task.captures,
        ["in.stride.1", "out.extent.0", "out.stride.1", "in", "out"]
    );
    let text = wasmprinter::print_bytes(&compiled.bytes).unwrap();
    assert!(text.contains(r#"(import "env" "parallel_for" (func (;0;) (type 2)"#));
    assert!(text.contains(r#"(export "task_0" (func 3))"#));
    assert!(text.contains("i32.atomic.rmw.cmpxchg"));
}

#[test]
fn abi_layout() {
    let compiled = compile(&checked_copy(), &CodegenOptions::default()).unwrap();
    let abi = &compiled.abi;
    assert_eq!(
        abi.buffers
            .iter()
            .map(|b| (b.name.as_str(), b.offset))
            .collect::<Vec<_>>(),
        [("in", 8), ("out", 24)]
    );
    assert_eq!(abi.params[0].offset, 40);
    assert_eq!(abi.error_args_offset, 44);
    assert_eq!(abi.max_error_args, 4);
    // The bounds query's region of `in` follows the four error words.
    assert_eq!(
        abi.region_slots,
        Some(vec![argent_wasm::RegionSlot {
            input: "in".into(),
            dim: 0,
            offset: 60
        }])
    );
    assert_eq!(abi.args_size, 80);
}

#[test]
fn unlowered_and_unbound_are_errors() {
    let provide = module(
        vec![],
        vec![],
        Stmt::Provide {
            func: "f".into(),
            args: vec![Expr::i32(0)],
            value: Expr::i32(1),
        },
    );
    assert!(matches!(
        compile(&provide, &CodegenOptions::default()),
        Err(CodegenError::NotLowered(_))
    ));
    let unbound = module(vec![], vec![], Stmt::Evaluate(Expr::i32(0)));
    assert!(compile(&unbound, &CodegenOptions::default()).is_ok());
    let unbound = module(
        vec![buffer("out", Type::I32, 1, argent_ir::BufferRole::Output)],
        vec![],
        store(
            "out",
            Expr::i32(0),
            Expr::binary(BinOp::Add, Expr::var_i32("nope"), Expr::i32(1)),
        ),
    );
    assert_eq!(
        compile(&unbound, &CodegenOptions::default()),
        Err(CodegenError::Unbound("nope".into()))
    );
}

/// A function larger than engines compile (V8 refuses bodies over
/// 7,654,321 bytes) is refused before any engine sees it, as the user's
/// error (a schedule that unrolls or vectorises too much), not as a
/// compiler bug. A random program vectorised 32 wide with four unrolled
/// channels, compiled as scalar code (one copy per lane), reached it.
#[test]
fn functions_larger_than_engines_accept_are_a_user_error() {
    let stores: Vec<Stmt> = (0..1_000_000)
        .map(|k| store("out", Expr::i32(k & 15), Expr::i32(k)))
        .collect();
    let huge = module(
        vec![buffer("out", Type::I32, 1, argent_ir::BufferRole::Output)],
        vec![],
        Stmt::Block(stores),
    );
    let error = compile(&huge, &CodegenOptions::default()).expect_err("too large");
    assert!(matches!(error, CodegenError::TooLarge(_)), "{error:?}");
    assert!(error.is_user_error());
    let message = error.to_string();
    assert!(
        message.contains("`body`") && message.contains("7654321"),
        "{message}"
    );
    assert!(message.contains("unroll or vector factors"), "{message}");
}

/// A float-to-int cast truncates with the plain `i32.trunc_f32_s` only
/// where its operand is shown to be neither NaN nor outside the i32
/// range (see `float_range.rs`); a parameter's declared range counts only
/// when the module checks it before anything else.
#[test]
fn float_to_int_casts_truncate_plainly_only_when_the_operand_fits() {
    let s = Expr::var(Type::F32, "s");
    let a = Expr::load(Type::F32, "a", x());
    // i32(clamp(a[x], 0, 1) * (1 / s) + 0.5) and i32(a[x] * 2)
    let clamped = Expr::max(Expr::min(a.clone(), Expr::f32(1.0)), Expr::f32(0.0));
    let cell = Expr::add(
        Expr::mul(clamped, Expr::div(Expr::f32(1.0), s.clone())),
        Expr::f32(0.5),
    );
    let stores = Stmt::Block(vec![
        store("out", x() * 2, Expr::cast(Type::I32, cell)),
        store(
            "out",
            Expr::add(x() * 2, Expr::i32(1)),
            Expr::cast(Type::I32, Expr::mul(a, Expr::f32(2.0))),
        ),
    ]);
    let body = for_loop("x", Expr::i32(0), Expr::i32(64), ForKind::Serial, stores);
    let check = Stmt::Assert {
        cond: Expr::and(
            Expr::le(Expr::f32(0.02), s.clone()),
            Expr::le(s.clone(), Expr::f32(1.0)),
        ),
        kind: argent_ir::AssertKind::ParamOutOfRange { param: "s".into() },
        args: vec![s],
    };
    let ranged = argent_ir::Param {
        range: Some((0.02, 1.0)),
        ..param("s", Type::F32)
    };
    let buffers = || {
        vec![
            buffer("a", Type::F32, 1, BufferRole::Input),
            buffer("out", Type::I32, 1, BufferRole::Output),
        ]
    };
    let truncations = |m: &argent_ir::Module| {
        let body = inner_loop(&wat(m, CodegenOptions::default()));
        let count = |op: &str| body.lines().filter(|l| *l == op).count();
        (count("i32.trunc_f32_s"), count("i32.trunc_sat_f32_s"))
    };
    let checked = module(
        buffers(),
        vec![ranged.clone()],
        Stmt::Block(vec![check, body.clone()]),
    );
    assert_eq!(truncations(&checked), (1, 1));
    let unchecked = module(buffers(), vec![ranged], body);
    assert_eq!(truncations(&unchecked), (0, 2));
}
