//! Small pipelines whose results are computed by hand.

mod common;

use argent_interp::{Buffer, RunError, Value, realize};
use argent_ir::{Expr, Intrinsic, Type};
use common::*;
use expect_test::expect;

/// A 1-D buffer of `ty` holding `values` at coordinates `0..`.
fn line(ty: Type, values: &[Value]) -> Buffer {
    let mut b = Buffer::new(ty, &[values.len() as i64]);
    for (i, v) in values.iter().enumerate() {
        b.set(&[i as i64], *v);
    }
    b
}

fn ints(values: &[i64]) -> Vec<Value> {
    values.iter().map(|&v| Value::Int(v)).collect()
}

fn floats(values: &[f32]) -> Vec<Value> {
    values.iter().map(|&v| Value::Float(v)).collect()
}

fn read_line(b: &Buffer) -> Vec<Value> {
    let d = b.dims()[0];
    (d.min..d.min + d.extent)
        .map(|x| b.get(&[x]).unwrap())
        .collect()
}

/// Run a 1-D pipeline `out(x) = value` over `a(x)` (and `b(x)` when given).
fn unary_pipeline(ty: Type, out_ty: Type, value: Expr, a: &[Value]) -> Vec<Value> {
    let p = pipeline(
        vec![input("a", ty, &["x"])],
        vec![],
        vec![func("out", out_ty, &["x"], value)],
        &["out"],
    );
    let a = line(ty, a);
    let out = realize(&p, &[("a", &a)], &[], &[(0, a.dims()[0].extent)]).unwrap();
    read_line(&out[0])
}

fn a_of(ty: Type) -> Expr {
    Expr::call_input(ty, "a", vec![x()])
}

#[test]
fn u8_arithmetic_wraps() {
    let v = a_of(Type::U8) * 3 + 200;
    assert_eq!(
        unary_pipeline(Type::U8, Type::U8, v, &ints(&[0, 50, 100, 255])),
        ints(&[200, 94, 244, 197])
    );
    let v = Expr::unary(argent_ir::UnaryOp::Neg, a_of(Type::U8)) - 1;
    assert_eq!(
        unary_pipeline(Type::U8, Type::U8, v, &ints(&[0, 1, 255])),
        ints(&[255, 254, 0])
    );
    let v = a_of(Type::I8) * 2;
    assert_eq!(
        unary_pipeline(Type::I8, Type::I8, v, &ints(&[64, -65, 100])),
        ints(&[-128, 126, -56])
    );
}

#[test]
fn euclidean_division_and_modulo_with_two_outputs() {
    let a = || Expr::call_input(Type::I32, "a", vec![x()]);
    let b = || Expr::call_input(Type::I32, "b", vec![x()]);
    let p = pipeline(
        vec![input("a", Type::I32, &["x"]), input("b", Type::I32, &["x"])],
        vec![],
        vec![
            func("quotient", Type::I32, &["x"], a() / b()),
            func("remainder", Type::I32, &["x"], a() % b()),
        ],
        &["quotient", "remainder"],
    );
    let av = line(Type::I32, &ints(&[7, -7, 7, -7, 5, -5, i32::MIN as i64]));
    let bv = line(Type::I32, &ints(&[2, 2, -2, -2, 0, 0, -1]));
    let out = realize(&p, &[("a", &av), ("b", &bv)], &[], &[(0, 7)]).unwrap();
    assert_eq!(
        read_line(&out[0]),
        ints(&[3, -4, -3, 4, 0, 0, i32::MIN as i64])
    );
    assert_eq!(read_line(&out[1]), ints(&[1, 1, 1, 1, 0, 0, 0]));
}

#[test]
fn float_to_integer_casts() {
    let values = floats(&[300.7, -1.5, f32::NAN, 3e10, -3.7, 255.9]);
    let plain = unary_pipeline(
        Type::F32,
        Type::U8,
        Expr::cast(Type::U8, a_of(Type::F32)),
        &values,
    );
    assert_eq!(plain, ints(&[44, 255, 0, 255, 253, 255]));
    let sat = unary_pipeline(
        Type::F32,
        Type::U8,
        Expr::saturating_cast(Type::U8, a_of(Type::F32)),
        &values,
    );
    assert_eq!(sat, ints(&[255, 0, 0, 255, 0, 255]));
    let sat_i8 = unary_pipeline(
        Type::F32,
        Type::I8,
        Expr::saturating_cast(Type::I8, a_of(Type::F32)),
        &values,
    );
    assert_eq!(sat_i8, ints(&[127, -1, 0, 127, -3, 127]));
    let to_i16 = unary_pipeline(
        Type::I32,
        Type::I16,
        Expr::cast(Type::I16, a_of(Type::I32)),
        &ints(&[40000, -40000]),
    );
    assert_eq!(to_i16, ints(&[-25536, 25536]));
    let sat_u16 = unary_pipeline(
        Type::I32,
        Type::U16,
        Expr::saturating_cast(Type::U16, a_of(Type::I32)),
        &ints(&[70000, -5, 7]),
    );
    assert_eq!(sat_u16, ints(&[65535, 0, 7]));
}

#[test]
fn abs_of_signed_is_unsigned_and_absd() {
    let abs = Expr::intrinsic(Type::U8, Intrinsic::Abs, vec![a_of(Type::I8)]);
    assert_eq!(
        unary_pipeline(Type::I8, Type::U8, abs, &ints(&[-128, -5, 7])),
        ints(&[128, 5, 7])
    );
    let absd = Expr::intrinsic(
        Type::U8,
        Intrinsic::Absd,
        vec![a_of(Type::U8), Expr::int(Type::U8, 200)],
    );
    assert_eq!(
        unary_pipeline(Type::U8, Type::U8, absd, &ints(&[0, 255, 200])),
        ints(&[200, 55, 0])
    );
}

#[test]
fn lerp_follows_halide() {
    let lerp = |ty: Type, a: i64, b: i64, w: Expr| {
        Expr::intrinsic(
            ty,
            Intrinsic::Lerp,
            vec![Expr::int(ty, a), Expr::int(ty, b), w],
        )
    };
    let w = || a_of(Type::U8);
    // u8 values: ((p >> 8) + p) >> 8 with p = a (255 - w) + b w + 128.
    let v = unary_pipeline(
        Type::U8,
        Type::U8,
        lerp(Type::U8, 100, 200, w()),
        &ints(&[0, 64, 255, 128]),
    );
    assert_eq!(v, ints(&[100, 125, 200, 150]));
    // u16 values with a u8 weight scaled by 257.
    let v = unary_pipeline(
        Type::U8,
        Type::U16,
        lerp(Type::U16, 0, 1000, w()),
        &ints(&[128, 255]),
    );
    assert_eq!(v, ints(&[502, 1000]));
    // i8 values are biased into u8.
    let v = unary_pipeline(
        Type::U8,
        Type::I8,
        lerp(Type::I8, -128, 127, w()),
        &ints(&[0, 255, 128]),
    );
    assert_eq!(v, ints(&[-128, 127, 0]));
    // u32 values use 64-bit intermediates.
    let v = unary_pipeline(
        Type::U8,
        Type::U32,
        lerp(Type::U32, 0, 4_000_000_000, w()),
        &ints(&[255, 0, 51]),
    );
    assert_eq!(v, ints(&[4_000_000_000, 0, 800_000_000]));
    // f32: a * (1 - w) + b * w.
    let f = Expr::intrinsic(
        Type::F32,
        Intrinsic::Lerp,
        vec![Expr::f32(1.0), Expr::f32(3.0), a_of(Type::F32)],
    );
    assert_eq!(
        unary_pipeline(Type::F32, Type::F32, f, &floats(&[0.25, 1.0])),
        floats(&[1.5, 3.0])
    );
    // f32 values with a u8 weight: w / 255.
    let f = Expr::intrinsic(
        Type::F32,
        Intrinsic::Lerp,
        vec![Expr::f32(0.0), Expr::f32(255.0), a_of(Type::U8)],
    );
    assert_eq!(
        unary_pipeline(Type::U8, Type::F32, f, &ints(&[51])),
        floats(&[(1.0 - 51.0f32 / 255.0) * 0.0 + 255.0 * (51.0f32 / 255.0)])
    );
}

#[test]
fn boundary_condition_formulas() {
    let inp = input("a", Type::U8, &["x"]);
    let a = |e: Expr| Expr::call_input(Type::U8, "a", vec![e]);
    let min = || field("a", "min", 0);
    let ext = || field("a", "extent", 0);
    let clamped = || Expr::clamp(x(), min(), min() + ext() - 1);
    let outside = Expr::or(Expr::lt(x(), min()), Expr::le(min() + ext(), x()));
    let rel = || x() - min();
    let mirror = {
        let m = rel() % (ext() * 2);
        Expr::let_in(
            "m",
            m,
            Expr::select(
                Expr::lt(var("m"), ext()),
                var("m"),
                ext() * 2 - 1 - var("m"),
            ) + min(),
        )
    };
    let interior = {
        let m = rel() % (ext() * 2 - 2);
        Expr::let_in(
            "m",
            m,
            Expr::select(
                Expr::lt(var("m"), ext()),
                var("m"),
                ext() * 2 - 2 - var("m"),
            ) + min(),
        )
    };
    let funcs = vec![
        func("repeat_edge", Type::U8, &["x"], a(clamped())),
        func(
            "constant_exterior",
            Type::U8,
            &["x"],
            Expr::select(outside, Expr::int(Type::U8, 7), a(clamped())),
        ),
        func("repeat_image", Type::U8, &["x"], a(rel() % ext() + min())),
        func("mirror_image", Type::U8, &["x"], a(mirror)),
        func("mirror_interior", Type::U8, &["x"], a(interior)),
    ];
    let p = pipeline(
        vec![inp],
        vec![],
        funcs,
        &[
            "repeat_edge",
            "constant_exterior",
            "repeat_image",
            "mirror_image",
            "mirror_interior",
        ],
    );
    let data = line(Type::U8, &ints(&[10, 20, 30, 40])).with_min(&[5]);
    let out = realize(&p, &[("a", &data)], &[], &[(1, 13)]).unwrap();
    let got: Vec<Vec<i64>> = out
        .iter()
        .map(|b| read_line(b).iter().map(|v| v.as_i64()).collect())
        .collect();
    // x:            1   2   3   4 | 5   6   7   8 | 9  10  11  12  13
    assert_eq!(got[0], [10, 10, 10, 10, 10, 20, 30, 40, 40, 40, 40, 40, 40]);
    assert_eq!(got[1], [7, 7, 7, 7, 10, 20, 30, 40, 7, 7, 7, 7, 7]);
    assert_eq!(got[2], [10, 20, 30, 40, 10, 20, 30, 40, 10, 20, 30, 40, 10]);
    assert_eq!(got[3], [40, 30, 20, 10, 10, 20, 30, 40, 40, 30, 20, 10, 10]);
    assert_eq!(got[4], [30, 40, 30, 20, 10, 20, 30, 40, 30, 20, 10, 20, 30]);
}

#[test]
fn histogram_and_scan_by_hand() {
    let mut img = Buffer::new(Type::U8, &[3, 2]);
    for (i, v) in [0, 2, 2, 3, 0, 2].iter().enumerate() {
        img.set(&[i as i64 % 3, i as i64 / 3], Value::Int(*v));
    }
    let mut p = histogram_equalisation();
    let mut hist_out = func(
        "hist_out",
        Type::U32,
        &["x"],
        Expr::call_func(Type::U32, "hist", vec![x()]),
    );
    hist_out.origin = argent_ir::FuncOrigin::User;
    let cdf_out = func(
        "cdf_out",
        Type::U32,
        &["x"],
        Expr::call_func(Type::U32, "cdf", vec![x()]),
    );
    p.funcs.push(hist_out);
    p.funcs.push(cdf_out);
    p.outputs = vec!["hist_out".into(), "cdf_out".into()];
    let out = realize(&p, &[("img", &img)], &[], &[(-1, 6)]).unwrap();
    assert_eq!(read_line(&out[0]), ints(&[0, 2, 0, 3, 1, 0]));
    assert_eq!(read_line(&out[1]), ints(&[0, 2, 2, 5, 6, 6]));
    p.outputs = vec!["out".into()];
    let out = realize(&p, &[("img", &img)], &[], &[(0, 3), (0, 2)]).unwrap();
    // cdf * 255 / 6 for levels [0, 2, 2, 3, 0, 2].
    let expected = [85, 212, 212, 255, 85, 212];
    for (i, e) in expected.iter().enumerate() {
        assert_eq!(
            out[0].get(&[i as i64 % 3, i as i64 / 3]),
            Some(Value::Int(*e))
        );
    }
}

#[test]
fn scatter_with_predicate_and_multiple_updates() {
    // f(i) = -1; f(r) = r * 10 where r % 2 == 0 (r in 0 .. 6); f(1) = f(2) + 1
    let r = rdom(
        "r",
        &[(Expr::i32(0), Expr::i32(6))],
        Some(Expr::eq(var("r.x") % 2, Expr::i32(0))),
    );
    let mut f = func("f", Type::I32, &["i"], Expr::i32(-1));
    f.updates
        .push(update(vec![var("r.x")], var("r.x") * 10, Some(r)));
    f.updates.push(update(
        vec![Expr::i32(1)],
        Expr::call_func(Type::I32, "f", vec![Expr::i32(2)]) + 1,
        None,
    ));
    // g(x) = x; g(x) += x * r (r in 0 .. 3); g(x) = g(x) * 10: every update is pure in x.
    let r = rdom("r", &[(Expr::i32(0), Expr::i32(3))], None);
    let mut g = func("g", Type::I32, &["x"], x());
    g.updates.push(update(
        vec![x()],
        Expr::call_func(Type::I32, "g", vec![x()]) + x() * var("r.x"),
        Some(r),
    ));
    g.updates.push(update(
        vec![x()],
        Expr::call_func(Type::I32, "g", vec![x()]) * 10,
        None,
    ));
    let p = pipeline(vec![], vec![], vec![f, g], &["f", "g"]);
    let out = realize(&p, &[], &[], &[(-1, 8)]).unwrap();
    assert_eq!(read_line(&out[0]), ints(&[-1, 0, 21, 20, -1, 40, -1, -1]));
    assert_eq!(
        read_line(&out[1]),
        ints(&[-40, 0, 40, 80, 120, 160, 200, 240])
    );
}

#[test]
fn rdom_bounds_may_use_pure_variables() {
    // prefix(x) = sum of a(r) for r in 0 .. x + 1: a triangular reduction.
    let r = rdom("r", &[(Expr::i32(0), x() + 1)], None);
    let mut prefix = func("prefix", Type::I32, &["x"], Expr::i32(0));
    prefix.updates.push(update(
        vec![x()],
        Expr::call_func(Type::I32, "prefix", vec![x()])
            + Expr::call_input(Type::I32, "a", vec![var("r.x")]),
        Some(r),
    ));
    let p = pipeline(
        vec![input("a", Type::I32, &["x"])],
        vec![],
        vec![prefix],
        &["prefix"],
    );
    let a = line(Type::I32, &ints(&[1, 2, 3, 4]));
    let out = realize(&p, &[("a", &a)], &[], &[(0, 4)]).unwrap();
    assert_eq!(read_line(&out[0]), ints(&[1, 3, 6, 10]));
}

#[test]
fn crop_with_non_zero_minimum() {
    let inp = input("in", Type::U16, &["x", "y"]);
    let value =
        Expr::call_input(Type::U16, "in", vec![x(), y()]) * 2 + Expr::cast(Type::U16, x() - y());
    let p = pipeline(
        vec![inp],
        vec![],
        vec![func("out", Type::U16, &["x", "y"], value)],
        &["out"],
    );
    let mut b = Buffer::new(Type::U16, &[3, 2]).with_min(&[10, 20]);
    b.fill(|c| Value::Int(c[0] * 100 + c[1]));
    let out = realize(&p, &[("in", &b)], &[], &[(11, 2), (20, 2)]).unwrap();
    assert_eq!(out[0].dims()[0].min, 11);
    assert_eq!(out[0].get(&[11, 20]), Some(Value::Int((1100 + 20) * 2 - 9)));
    assert_eq!(out[0].get(&[12, 21]), Some(Value::Int((1200 + 21) * 2 - 9)));
}

#[test]
fn interleaved_and_planar_inputs_agree() {
    let inp = input("im", Type::U8, &["x", "y", "c"]);
    let im = |dx: i64| Expr::call_input(Type::U8, "im", vec![x() + dx, y(), c()]);
    let value = im(0) / 2 + im(1) / 2 + Expr::cast(Type::U8, c());
    let p = pipeline(
        vec![inp],
        vec![],
        vec![func("out", Type::U8, &["x", "y", "c"], value)],
        &["out"],
    );
    let mut planar = Buffer::new(Type::U8, &[5, 3, 4]);
    planar.fill(|p| Value::Int(p[0] * 31 + p[1] * 7 + p[2] * 50));
    let mut interleaved = Buffer::interleaved(Type::U8, &[5, 3, 4]);
    interleaved.fill(|p| planar.get(p).unwrap());
    assert_eq!(interleaved.dims()[2].stride, 1);
    assert_eq!(interleaved.dims()[0].stride, 4);
    let region = [(0, 4), (0, 3), (0, 4)];
    let a = realize(&p, &[("im", &planar)], &[], &region).unwrap();
    let b = realize(&p, &[("im", &interleaved)], &[], &region).unwrap();
    assert!(a[0].same_contents(&b[0]));
    assert_eq!(
        a[0].get(&[1, 2, 3]),
        Some(Value::Int((31 + 14 + 150) / 2 + (62 + 14 + 150) / 2 + 3))
    );
}

#[test]
fn select_evaluates_only_the_side_taken() {
    // Reads of `a` outside its bounds are guarded, so no error is reported.
    let inside = Expr::and(Expr::le(Expr::i32(0), x()), Expr::lt(x(), Expr::i32(3)));
    let value = Expr::select(inside, a_of(Type::U8), Expr::int(Type::U8, 9));
    let p = pipeline(
        vec![input("a", Type::U8, &["x"])],
        vec![],
        vec![func("out", Type::U8, &["x"], value)],
        &["out"],
    );
    let a = line(Type::U8, &ints(&[1, 2, 3]));
    let out = realize(&p, &[("a", &a)], &[], &[(-2, 7)]).unwrap();
    assert_eq!(read_line(&out[0]), ints(&[9, 9, 1, 2, 3, 9, 9]));
}

#[test]
fn input_too_small_names_stage_input_and_regions() {
    let mut p = box_blur();
    // Read the input directly, without the boundary condition.
    let read = |dx: i64| Expr::call_input(Type::U16, "in", vec![x() + dx, y()]);
    p.funcs[1].value = (read(-1) + read(0) + read(1)) / Expr::int(Type::U16, 3);
    let b = Buffer::new(Type::U16, &[8, 6]);
    let err = realize(&p, &[("in", &b)], &[], &[(0, 8), (0, 6)]).unwrap_err();
    expect![[r#"stage `blur_x` reads input `in` outside the region provided: it needs x from -1 to 8, y from -1 to 6, but the input covers x from 0 to 7, y from 0 to 5 (add a boundary condition such as repeat_edge(in), or pass a larger input)"#]]
    .assert_eq(&err.to_string());
}

#[test]
fn user_errors_have_clear_messages() {
    let p = unsharp();
    let photo = Buffer::new(Type::U8, &[4, 4, 3]);
    let region = [(0, 4), (0, 4), (0, 3)];
    let messages: Vec<String> = [
        realize(
            &p,
            &[("photo", &photo)],
            &[("amount", Value::Float(5.0))],
            &region,
        ),
        realize(
            &p,
            &[("photo", &photo)],
            &[("amout", Value::Float(1.0))],
            &region,
        ),
        realize(&p, &[], &[], &region),
        realize(
            &p,
            &[("photo", &Buffer::new(Type::U16, &[4, 4, 3]))],
            &[],
            &region,
        ),
        realize(
            &p,
            &[("photo", &Buffer::new(Type::U8, &[4, 4]))],
            &[],
            &region,
        ),
        realize(&p, &[("photo", &photo)], &[], &region[..2]),
    ]
    .into_iter()
    .map(|r| r.unwrap_err().to_string())
    .collect();
    expect![[r#"
        bad value for parameter `amount`: 5 is outside the range 0 .. 4
        the pipeline has no parameter named `amout`
        no image was given for input `photo`
        input `photo` is declared u8 but the image given is u16
        input `photo` is declared with 3 dimension(s) but the image given has 2
        bad output region: output `out` has 3 dimension(s) but the region has 2"#]]
    .assert_eq(&messages.join("\n"));
}

#[test]
fn malformed_ir_is_a_bug_not_a_user_error() {
    let p = pipeline(
        vec![],
        vec![],
        vec![func("out", Type::I32, &["x"], x() + var("nowhere"))],
        &["out"],
    );
    let err = realize(&p, &[], &[], &[(0, 1)]).unwrap_err();
    assert!(matches!(err, RunError::Bug(_)), "{err:?}");
    let p = pipeline(
        vec![],
        vec![],
        vec![func(
            "out",
            Type::I32,
            &["x"],
            Expr::call_func(Type::I32, "ghost", vec![x()]),
        )],
        &["out"],
    );
    assert!(matches!(
        realize(&p, &[], &[], &[(0, 1)]),
        Err(RunError::Bug(_))
    ));
}

#[test]
fn deep_chains_give_an_error_not_a_stack_overflow() {
    // f0(x) = x; f_i(x) = f_{i-1}(x) + 1, 5000 stages deep.
    let mut funcs = vec![func("f0", Type::I32, &["x"], x())];
    for i in 1..5000 {
        funcs.push(func(
            &format!("f{i}"),
            Type::I32,
            &["x"],
            Expr::call_func(Type::I32, format!("f{}", i - 1), vec![x()]) + 1,
        ));
    }
    let p = pipeline(vec![], vec![], funcs, &["f4999"]);
    let err = realize(&p, &[], &[], &[(0, 2)]).unwrap_err();
    assert!(matches!(err, RunError::ResourceLimit { .. }), "{err}");
}

#[test]
fn float_parameters_are_range_checked_in_f32() {
    let p = pipeline(
        vec![],
        vec![param("t", Type::F32, Some(0.1), Some((0.0, 0.1)))],
        vec![func("out", Type::F32, &["x"], Expr::var(Type::F32, "t"))],
        &["out"],
    );
    let out = realize(&p, &[], &[], &[(0, 1)]).unwrap();
    assert_eq!(out[0].get(&[0]), Some(Value::Float(0.1)));
    let err = realize(&p, &[], &[("t", Value::Float(0.11))], &[(0, 1)]).unwrap_err();
    assert!(matches!(err, RunError::BadParam { .. }), "{err}");
}

#[test]
fn pure_variables_in_updates_of_scattered_dimensions_are_reported() {
    // f(x) = 0; f(r) = 1; f(x) = f(x) + 1: the last update needs every x of
    // the (unknown) required region, which demand-driven slices cannot give.
    let r = rdom("r", &[(Expr::i32(0), Expr::i32(3))], None);
    let mut f = func("f", Type::I32, &["x"], Expr::i32(0));
    f.updates
        .push(update(vec![var("r.x")], Expr::i32(1), Some(r)));
    f.updates.push(update(
        vec![x()],
        Expr::call_func(Type::I32, "f", vec![x()]) + 1,
        None,
    ));
    let p = pipeline(vec![], vec![], vec![f], &["f"]);
    let err = realize(&p, &[], &[], &[(0, 4)]).unwrap_err();
    expect![[r#"not supported by the reference interpreter: update 1 of `f` uses the pure variable `x`, but another update writes dimension 0 at computed positions"#]]
    .assert_eq(&err.to_string());
}

#[test]
fn buffers_over_existing_bytes() {
    // Two RGBA pixels as a canvas would hold them.
    let data = vec![1, 2, 3, 255, 10, 20, 30, 255];
    let dims = vec![
        argent_interp::Dim {
            min: 0,
            extent: 2,
            stride: 4,
        },
        argent_interp::Dim {
            min: 0,
            extent: 1,
            stride: 8,
        },
        argent_interp::Dim {
            min: 0,
            extent: 4,
            stride: 1,
        },
    ];
    let b = Buffer::from_bytes(Type::U8, dims.clone(), data.clone()).unwrap();
    assert_eq!(b.get(&[1, 0, 2]), Some(Value::Int(30)));
    assert_eq!(b.to_interleaved_u8().unwrap(), data);
    assert!(Buffer::from_bytes(Type::U16, dims, data).is_none());
}
