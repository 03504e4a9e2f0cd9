//! Whole programs: the issue's three examples compile to the expected IR,
//! and every `examples/*.ag` in the repository compiles without errors.

use expect_test::{Expect, expect};

fn check(source: &str, expected: Expect) {
    match argent_lang::compile(source) {
        Ok(p) => expected.assert_eq(&p.to_string()),
        Err(d) => panic!("{}", argent_lang::render(&d.0, "t.ag", source, false)),
    }
}

#[test]
fn box_blur_ir() {
    check(
        include_str!("data/blur.ag"),
        expect![[r#"
            input u16 in(x, y)
            clamped: u16 (x, y) = in(max(min(likely(x), ((in.min.0 + in.extent.0) - 1)), in.min.0), max(min(likely(y), ((in.min.1 + in.extent.1) - 1)), in.min.1))  # repeat_edge(in)
            blur_x: u16 (x, y) = (((clamped((x - 1), y) + clamped(x, y)) + clamped((x + 1), y)) / u16(3))
            blur_y: u16 (x, y) = (((blur_x(x, (y - 1)) + blur_x(x, y)) + blur_x(x, (y + 1))) / u16(3))
            output blur_y
            schedule {
              blur_y.tile(x, y, x, y, xi, yi, 256, 32)
              blur_y.vectorize(xi, 8)
              blur_y.parallel(y)
              blur_x.compute_at(blur_y, x)
              blur_x.vectorize(x, 8)
            }
        "#]],
    );
}

#[test]
fn histogram_ir() {
    check(
        include_str!("data/hist.ag"),
        expect![[r#"
        input u8 img(x, y)
        hist: u32 (i) = u32(0)
        hist(i32(img(r.x, r.y))) = (hist(i32(img(r.x, r.y))) + u32(1))  over r.x in [0, +img.extent.0], r.y in [0, +img.extent.1]
        cdf: u32 (i) = u32(0)
        cdf(ri.x) = (cdf((ri.x - 1)) + hist(ri.x))  over ri.x in [0, +256]
        out: u8 (x, y) = u8(((cdf(i32(img(x, y))) * u32(255)) / u32((img.extent.0 * img.extent.1))))
        output out
    "#]],
    );
}

#[test]
fn unsharp_ir() {
    check(
        include_str!("data/unsharp.ag"),
        expect![[r#"
        input u8 photo(x, y, c)
        param f32 amount = 1.5 in 0 .. 4
        p: u8 (x, y, c) = photo(max(min(likely(x), ((photo.min.0 + photo.extent.0) - 1)), photo.min.0), max(min(likely(y), ((photo.min.1 + photo.extent.1) - 1)), photo.min.1), max(min(likely(c), ((photo.min.2 + photo.extent.2) - 1)), photo.min.2))  # repeat_edge(photo)
        f: f32 (x, y, c) = f32(p(x, y, c))
        blur_x: f32 (x, y, c) = (((f((x - 1), y, c) + (2.0 * f(x, y, c))) + f((x + 1), y, c)) / 4.0)
        blur: f32 (x, y, c) = (((blur_x(x, (y - 1), c) + (2.0 * blur_x(x, y, c))) + blur_x(x, (y + 1), c)) / 4.0)
        sharp: f32 (x, y, c) = select((c == 3), f(x, y, c), (f(x, y, c) + (amount * (f(x, y, c) - blur(x, y, c)))))
        out: u8 (x, y, c) = sat_u8((sharp(x, y, c) + 0.5))
        output out
    "#]],
    );
}

#[test]
fn every_construct_ir() {
    check(
        include_str!("data/syntax.ag"),
        expect![[r#"
            input u8 photo(x, y, c)
            input u8 img(x, y)
            input u8 src(x, y)
            param f32 amount = 1.5 in 0 .. 4
            param i32 radius = 2 in 1 .. 8
            p: u8 (x, y, c) = photo(max(min(likely(x), ((photo.min.0 + photo.extent.0) - 1)), photo.min.0), max(min(likely(y), ((photo.min.1 + photo.extent.1) - 1)), photo.min.1), max(min(likely(c), ((photo.min.2 + photo.extent.2) - 1)), photo.min.2))  # repeat_edge(photo)
            q: u8 (x, y, c) = select(((((x < photo.min.0) || ((photo.min.0 + photo.extent.0) <= x)) || ((y < photo.min.1) || ((photo.min.1 + photo.extent.1) <= y))) || ((c < photo.min.2) || ((photo.min.2 + photo.extent.2) <= c))), u8(0), likely(photo(max(min(likely(x), ((photo.min.0 + photo.extent.0) - 1)), photo.min.0), max(min(likely(y), ((photo.min.1 + photo.extent.1) - 1)), photo.min.1), max(min(likely(c), ((photo.min.2 + photo.extent.2) - 1)), photo.min.2))))  # constant_exterior(photo)
            f: f32 (x, y, c) = f32(p(x, y, c))
            g: f32 (x, y) = (let t = (f(x, y, 0) * 2.0) in (t + t))
            hist: u32 (i) = u32(0)
            hist(i32(img(r.x, r.y))) = (hist(i32(img(r.x, r.y))) + u32(1))  over r.x in [0, +img.extent.0], r.y in [0, +img.extent.1] where (r.x < r.y)
            cdf: u32 (i) = u32(0)
            cdf(ri.x) = (cdf((ri.x - 1)) + hist(ri.x))  over ri.x in [0, +256]
            s_sum0: u8 (x, y) = u8(0)  # from s
            s_sum0(x, y) = (s_sum0(x, y) + p((x + s3.x), (y + s3.y), 0))  over s3.x in [-1, +3], s3.y in [-1, +3]
            s: u8 (x, y) = s_sum0(x, y)
            am_maximum0: u8 (x, y) = u8(0)  # from am
            am_maximum0(x, y) = max(am_maximum0(x, y), p((x + s3.x), (y + s3.y), 0))  over s3.x in [-1, +3], s3.y in [-1, +3]
            am_argmax1: i32 (x, y) = 2147483647  # from am
            am_argmax1(x, y) = min(am_argmax1(x, y), select((p((x + s3.x), (y + s3.y), 0) == am_maximum0(x, y)), ((0 + ((s3.x - -1) * 1)) + ((s3.y - -1) * (1 * 3))), 2147483647))  over s3.x in [-1, +3], s3.y in [-1, +3]
            am: i32 (x, y) = ((((am_argmax1(x, y) / (1 * 3)) % 3) + -1) + 3)
            w_mean0: i32 (x, y) = 0  # from w
            w_mean0(x, y) = (w_mean0(x, y) + i32(p(((x - 1) + w_mean0_r.x), ((y - 1) + w_mean0_r.y), 0)))  over w_mean0_r.x in [0, +3], w_mean0_r.y in [0, +3]
            w: u8 (x, y) = u8(select((w_mean0(x, y) < 0), -(-w_mean0(x, y) / 9), (w_mean0(x, y) / 9)))
            c_convolve0: i32 (x, y) = ((((i32(p(((x - 1) + 0), ((y - 1) + 0), 0)) + (i32(p(((x - 1) + 1), ((y - 1) + 0), 0)) * 2)) + (i32(p(((x - 1) + 2), ((y - 1) + 0), 0)) + (i32(p(((x - 1) + 0), ((y - 1) + 1), 0)) * 2))) + (((i32(p(((x - 1) + 1), ((y - 1) + 1), 0)) * 4) + (i32(p(((x - 1) + 2), ((y - 1) + 1), 0)) * 2)) + (i32(p(((x - 1) + 0), ((y - 1) + 2), 0)) + (i32(p(((x - 1) + 1), ((y - 1) + 2), 0)) * 2)))) + i32(p(((x - 1) + 2), ((y - 1) + 2), 0)))  # from c
            c: i32 (x, y) = (c_convolve0(x, y) / 16)
            b: u8 (x, y) = select(likely((((src.min.0 <= x) && (x < (src.min.0 + src.extent.0))) && ((src.min.1 <= y) && (y < (src.min.1 + src.extent.1))))), src(max(min(likely(x), ((src.min.0 + src.extent.0) - 1)), src.min.0), max(min(likely(y), ((src.min.1 + src.extent.1) - 1)), src.min.1)), select(((x == (src.min.0 - 1)) && (y == (src.min.1 - 1))), src((src.min.0 + 0), (src.min.1 + 0)), select(((x == (src.min.0 - 1)) && ((src.min.1 <= y) && (y < (src.min.1 + src.extent.1)))), ((src((src.min.0 + 1), y) * u8(2)) - src((src.min.0 + 3), y)), select(((x == (src.min.0 - 2)) && ((src.min.1 <= y) && (y < (src.min.1 + src.extent.1)))), ((((src((src.min.0 + 3), y) * u8(4)) - (src((src.min.0 + 1), y) * u8(4))) + (src((src.min.0 + 0), y) * u8(2))) - src((src.min.0 + 2), y)), select(((x == ((src.min.0 + src.extent.0) + 0)) && ((src.min.1 <= y) && (y < (src.min.1 + src.extent.1)))), ((src((src.min.0 + (src.extent.0 - 2)), y) * u8(2)) - src((src.min.0 + (src.extent.0 - 4)), y)), select((((src.min.0 <= x) && (x < (src.min.0 + src.extent.0))) && (y == (src.min.1 - 1))), u8(0), src(max(min(likely(x), ((src.min.0 + src.extent.0) - 1)), src.min.0), max(min(likely(y), ((src.min.1 + src.extent.1) - 1)), src.min.1))))))))  # border rules of src, width [2, 2]
            bb: u8 (x, y) = (b((x - 1), y) + b(x, (y - 1)))
            sharp: f32 (x, y, c) = (f(x, y, c) * amount)
            out: u8 (x, y, c) = sat_u8((sharp(x, y, c) + 0.5))
            output out, g, cdf, s, w, c, am, bb
            schedule {
              out.tile(x, y, x, y, xi, yi, 256, 32)
              out.vectorize(xi, 8)
              out.parallel(y)
              f.compute_at(out, x)
              f.vectorize(x, 8)
              hist.update(0).parallel(r.y)
              f.split(x, xo, xi, 16, guard_with_if)
              f.reorder(xi, y, xo)
              f.fuse(y, xo, t)
              f.unroll(xi, 4)
              f.serial(t)
              f.compute_root()
              f.store_root()
              f.compute_inline()
              f.store_at(out, y)
              f.bound(c, 0, 3)
              f.align_bounds(x, 8, 0)
              f.fold_storage(y, 4)
              f.reorder_storage(c, x)
              hist.update(0).rfactor(r.y, v)
              g.specialize((img.extent.0 >= 64) && (radius == 2)).vectorize(x, 16)
              g.gpu_tile(x, y, bx, by, tx, ty, 16, 16)
              g.gpu_blocks(bx, by)
              g.gpu_threads(tx, ty)
            }
        "#]],
    );
}

#[test]
fn repository_examples_compile() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut count = 0;
    let mut failures = String::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "ag") {
            count += 1;
            let source = std::fs::read_to_string(&path).expect("readable example");
            let (pipeline, diags) = argent_lang::check(&source);
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            if pipeline.is_none() || !diags.is_empty() {
                failures.push_str(&argent_lang::render(&diags, &name, &source, false));
            }
            // A separate schedule file replaces the inline one and checks the same way.
            if let Some(p) = pipeline {
                assert!(p.funcs.iter().all(|f| !f.name.is_empty()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");
    eprintln!("{count} examples compiled");
}

#[test]
fn separate_schedule_file() {
    let pipeline = argent_lang::compile(include_str!("data/blur.ag")).expect("compiles");
    let schedule = argent_lang::parse_schedule(
        "# another schedule\nschedule {\n  blur_y.split(y, yo, yi, 8).parallel(yo)\n  blur_x.compute_at(blur_y, yi)\n}\n",
        &pipeline,
    )
    .expect("valid schedule");
    expect![[r#"
        [
            (
                "blur_y",
                "split",
            ),
            (
                "blur_y",
                "parallel",
            ),
            (
                "blur_x",
                "compute_at",
            ),
        ]
    "#]]
    .assert_debug_eq(
        &schedule
            .directives
            .iter()
            .map(|d| (d.func.as_str(), d.kind.name()))
            .collect::<Vec<_>>(),
    );
    let err = argent_lang::parse_schedule("schedule {\n  blur_y.vectorize(q)\n}\n", &pipeline)
        .unwrap_err();
    expect![[r#"
        error[E0603]: `blur_y` has no loop variable `q`
          ┌─ s.ag:2:20
          │
        2 │   blur_y.vectorize(q)
          │                    ^
          │
          = its loops are now: x, y

    "#]]
    .assert_eq(&argent_lang::render(
        &err.0,
        "s.ag",
        "schedule {\n  blur_y.vectorize(q)\n}\n",
        false,
    ));
    assert!(argent_lang::parse_schedule("f(x) = 1\n", &pipeline).is_err());
}

/// Each directive gets its own span.
#[test]
fn directive_spans() {
    let source = include_str!("data/blur.ag");
    let p = argent_lang::compile(source).expect("compiles");
    let texts: Vec<&str> = p
        .schedule
        .directives
        .iter()
        .map(|d| &source[d.span.range()])
        .collect();
    expect![[r#"
        [
            ".tile(x, y, xi, yi, 256, 32)",
            ".vectorize(xi, 8)",
            ".parallel(y)",
            ".compute_at(blur_y, x)",
            ".vectorize(x, 8)",
        ]
    "#]]
    .assert_debug_eq(&texts);
}
