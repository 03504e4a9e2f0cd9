//! The builder API builds the same pipelines as the text, under the same
//! typing rules.

use argent_ir::Type;
use argent_lang::builder::{PipelineBuilder, Value, builtin, cast, sat_cast, select};

#[test]
fn blur_matches_text() {
    let mut p = PipelineBuilder::new();
    let input = p.input("in", Type::U16, &["x", "y"]);
    let clamped = p.repeat_edge("clamped", &input);
    let (x, y) = (p.var("x"), p.var("y"));
    let blur_x = p
        .func(
            "blur_x",
            &["x", "y"],
            (clamped.at([&x - 1, y.clone()])
                + clamped.at([&x, &y])
                + clamped.at([&x + 1, y.clone()]))
                / 3,
        )
        .expect("blur_x types");
    let blur_y = p
        .func(
            "blur_y",
            &["x", "y"],
            (blur_x.at([x.clone(), &y - 1]) + blur_x.at([&x, &y]) + blur_x.at([x.clone(), &y + 1]))
                / 3,
        )
        .expect("blur_y types");
    p.output(&blur_y);
    p.schedule("schedule {\n  blur_y.tile(x, y, xi, yi, 256, 32).vectorize(xi, 8).parallel(y)\n  blur_x.compute_at(blur_y, x).vectorize(x, 8)\n}\n");
    let mut built = p.build().expect("builds");
    let mut parsed = argent_lang::compile(include_str!("data/blur.ag")).expect("compiles");
    argent_lang::strip_spans(&mut built);
    argent_lang::strip_spans(&mut parsed);
    assert_eq!(built, parsed);
}

#[test]
fn histogram_matches_text() {
    let mut p = PipelineBuilder::new();
    let img = p.input("img", Type::U8, &["x", "y"]);
    let r = p.rdom(
        "r",
        &[(0.into(), img.width()), (0.into(), img.height())],
        None,
    );
    let hist = p.func("hist", &["i"], cast(Type::U32, 0)).expect("hist");
    let bin = img.at([r.x(), r.y()]);
    p.update(&hist, [bin.clone()], hist.at([bin]) + 1, Some(&r))
        .expect("scatter");
    let ri = p.rdom("ri", &[(0.into(), 256.into())], None);
    let cdf = p.func("cdf", &["i"], cast(Type::U32, 0)).expect("cdf");
    p.update(
        &cdf,
        [ri.x()],
        cdf.at([ri.x() - 1]) + hist.at([ri.x()]),
        Some(&ri),
    )
    .expect("scan");
    let (x, y) = (p.var("x"), p.var("y"));
    let out = p
        .func(
            "out",
            &["x", "y"],
            cast(
                Type::U8,
                cdf.at([img.at([&x, &y])]) * 255 / cast(Type::U32, img.width() * img.height()),
            ),
        )
        .expect("out");
    p.output(&out);
    let mut built = p.build().expect("builds");
    let mut parsed = argent_lang::compile(include_str!("data/hist.ag")).expect("compiles");
    argent_lang::strip_spans(&mut built);
    argent_lang::strip_spans(&mut parsed);
    assert_eq!(built, parsed);
}

#[test]
fn unsharp_matches_text() {
    let mut p = PipelineBuilder::new();
    let photo = p.input("photo", Type::U8, &["x", "y", "c"]);
    let amount = p.param("amount", Type::F32, Some(1.5), Some((0.0, 4.0)));
    let rp = p.repeat_edge("p", &photo);
    let (x, y, c) = (p.var("x"), p.var("y"), p.var("c"));
    let xyc = |a: Value, b: Value| [a, b, c.clone()];
    let f = p
        .func(
            "f",
            &["x", "y", "c"],
            cast(Type::F32, rp.at(xyc(x.clone(), y.clone()))),
        )
        .unwrap();
    let blur_x = p
        .func(
            "blur_x",
            &["x", "y", "c"],
            (f.at(xyc(&x - 1, y.clone()))
                + 2 * f.at(xyc(x.clone(), y.clone()))
                + f.at(xyc(&x + 1, y.clone())))
                / 4,
        )
        .unwrap();
    let blur = p
        .func(
            "blur",
            &["x", "y", "c"],
            (blur_x.at(xyc(x.clone(), &y - 1))
                + 2 * blur_x.at(xyc(x.clone(), y.clone()))
                + blur_x.at(xyc(x.clone(), &y + 1)))
                / 4,
        )
        .unwrap();
    let fxy = f.at(xyc(x.clone(), y.clone()));
    let sharp = p
        .func(
            "sharp",
            &["x", "y", "c"],
            select(
                c.clone().eq_(3),
                fxy.clone(),
                fxy.clone() + amount * (fxy - blur.at(xyc(x.clone(), y.clone()))),
            ),
        )
        .unwrap();
    let out = p
        .func(
            "out",
            &["x", "y", "c"],
            sat_cast(Type::U8, sharp.at(xyc(x.clone(), y.clone())) + 0.5),
        )
        .unwrap();
    p.output(&out);
    let mut built = p.build().expect("builds");
    let mut parsed = argent_lang::compile(include_str!("data/unsharp.ag")).expect("compiles");
    argent_lang::strip_spans(&mut built);
    argent_lang::strip_spans(&mut parsed);
    assert_eq!(built, parsed);
}

#[test]
fn builder_reports_type_errors() {
    let mut p = PipelineBuilder::new();
    let a = p.input("a", Type::U8, &["x"]);
    let x = p.var("x");
    let err = p.func("f", &["x"], a.at([&x]) + 300).unwrap_err();
    assert_eq!(err.0[0].code, "E0204");
    let err = p.func("g", &["x"], a.at([&x]).lt(3) + 1).unwrap_err();
    assert_eq!(err.0[0].code, "E0202");
    let err = p.func("h", &["x"], a.at([x.clone() * 0.5])).unwrap_err();
    assert_eq!(err.0[0].code, "E0205");
    let err = p
        .func("k", &["x"], builtin("clamp", [x.clone()]))
        .unwrap_err();
    assert_eq!(err.0[0].code, "E0201");
    assert!(p.build().is_err(), "no output");
}
