//! Parser snapshots: the syntax tree (pretty-printed with full
//! parentheses) of the issue's example programs and of every construct.

use expect_test::{Expect, expect};

fn check(source: &str, expected: Expect) {
    let (program, diags) = argent_lang::parse(source);
    assert!(
        diags.is_empty(),
        "{}",
        argent_lang::render(&diags, "t.ag", source, false)
    );
    expected.assert_eq(&argent_lang::pretty::program(&program));
}

#[test]
fn box_blur() {
    check(
        include_str!("data/blur.ag"),
        expect![[r#"
            input u16 in(x, y)
            let clamped = repeat_edge(in)
            def blur_x(x, y) = (((clamped((x - 1), y) + clamped(x, y)) + clamped((x + 1), y)) / 3)
            def blur_y(x, y) = (((blur_x(x, (y - 1)) + blur_x(x, y)) + blur_x(x, (y + 1))) / 3)
            output blur_y
            schedule {
              blur_y.tile(x, y, xi, yi, 256, 32).vectorize(xi, 8).parallel(y)
              blur_x.compute_at(blur_y, x).vectorize(x, 8)
            }
        "#]],
    );
}

#[test]
fn histogram_equalisation() {
    check(
        include_str!("data/hist.ag"),
        expect![[r#"
            input u8 img(x, y)
            rdom r = [0 .. img.width, 0 .. img.height]
            def hist(i) = u32(0)
            def hist(img(r.x, r.y)) += 1
            rdom ri = [0 .. 256]
            def cdf(i) = u32(0)
            def cdf(ri) = (cdf((ri - 1)) + hist(ri))
            def out(x, y) = u8(((cdf(img(x, y)) * 255) / u32((img.width * img.height))))
            output out
        "#]],
    );
}

#[test]
fn unsharp_mask() {
    check(
        include_str!("data/unsharp.ag"),
        expect![[r#"
            input u8 photo(x, y, c)
            param f32 amount = 1.5 in 0.0 .. 4.0
            let p = repeat_edge(photo)
            def f(x, y, c) = f32(p(x, y, c))
            def blur_x(x, y, c) = (((f((x - 1), y, c) + (2 * f(x, y, c))) + f((x + 1), y, c)) / 4)
            def blur(x, y, c) = (((blur_x(x, (y - 1), c) + (2 * blur_x(x, y, c))) + blur_x(x, (y + 1), c)) / 4)
            def sharp(x, y, c) = select((c == 3), f(x, y, c), (f(x, y, c) + (amount * (f(x, y, c) - blur(x, y, c)))))
            def out(x, y, c) = sat_u8((sharp(x, y, c) + 0.5))
            output out
        "#]],
    );
}

#[test]
fn every_construct() {
    check(
        include_str!("data/syntax.ag"),
        expect![[r#"
            input u8 photo(x, y, c)
            input u8 img(x, y)
            input u8 src(x, y)
            param f32 amount = 1.5 in 0.0 .. 4.0
            param i32 radius = 2 in 1 .. 8
            let p = repeat_edge(photo)
            let q = constant_exterior(photo, 0)
            let k = 3
            def f(x, y, c) = f32(p(x, y, c))
            def g(x, y) = (let t = (f(x, y, 0) * 2) in (t + t))
            rdom r = [0 .. img.width, 0 .. img.height] where (r.x < r.y)
            def hist(i) = u32(0)
            def hist(img(r.x, r.y)) += 1
            rdom ri = [0 .. 256]
            def cdf(i) = u32(0)
            def cdf(ri) = (cdf((ri - 1)) + hist(ri))
            rdom s3 = [(-1) .. 2, (-1) .. 2]
            def s(x, y) = sum(p((x + s3.x), (y + s3.y), 0))
            def am(x, y) = (argmax(p((x + s3.x), (y + s3.y), 0)).y + k)
            def w(x, y) = mean(p[(x - 1) : 3, (y - 1) : 3, 0])
            def c(x, y) = (convolve(p[(x - 1) : 3, (y - 1) : 3, 0], [1, 2, 1; 2, 4, 2; 1, 2, 1]) / 16)
            border b = src width (2) {
              (-1, *) = ((src(1, *) * 2) - src(3, *))
              (-2, *) = ((((src(3, *) * 4) - (src(1, *) * 4)) + (src(0, *) * 2)) - src(2, *))
              (+1, *) = ((src((src.width - 2), *) * 2) - src((src.width - 4), *))
              (*, -1) = 0
              (-1, -1) = src(0, 0)
            }
            def bb(x, y) = (b((x - 1), y) + b(x, (y - 1)))
            def sharp(x, y, c) = (f(x, y, c) * amount)
            def out(x, y, c) = sat_u8((sharp(x, y, c) + 0.5))
            output out, g, cdf, s, w, c, am, bb
            schedule {
              out.tile(x, y, xi, yi, 256, 32).vectorize(xi, 8).parallel(y)
              f.compute_at(out, x).vectorize(x, 8)
              hist.update(0).parallel(r.y)
              f.split(x, xo, xi, 16, guard_with_if)
              f.reorder(xi, y, xo).fuse(y, xo, t).unroll(xi, 4).serial(t).compute_root().store_root().compute_inline()
              f.store_at(out, y).bound(c, 0, 3).align_bounds(x, 8, 0).fold_storage(y, 4).reorder_storage(c, x)
              hist.update(0).rfactor(r.y, v)
              g.specialize(((img.width >= 64) && (radius == 2))).vectorize(x, 16)
              g.gpu_tile(x, y, bx, by, tx, ty, 16, 16).gpu_blocks(bx, by).gpu_threads(tx, ty)
            }
        "#]],
    );
}

#[test]
fn precedence_and_associativity() {
    check(
        "f(x) = a || b && c == d < e | g ^ h & i << j + k * -l % m - n / o >> p\ng(x) = !~-x - 1 - 2\nh(x) = let t = x in let u = t in t + u\n",
        expect![[r#"
            def f(x) = (a || (b && (c == (d < (e | (g ^ (h & ((i << ((j + ((k * (-l)) % m)) - (n / o))) >> p))))))))
            def g(x) = (((!(~(-x))) - 1) - 2)
            def h(x) = (let t = x in (let u = t in (t + u)))
        "#]],
    );
}

#[test]
fn line_continuation_and_chains() {
    check(
        "f(x, y) = select(x > 0,\n    x,\n    y)\nschedule {\n  f.split(x, xo, xi, 8)\n   .vectorize(xi)\n}\n",
        expect![[r#"
            def f(x, y) = select((x > 0), x, y)
            schedule {
              f.split(x, xo, xi, 8).vectorize(xi)
            }
        "#]],
    );
}

/// Deep nesting is an error, not a stack overflow; long flat chains are
/// bounded too.
#[test]
fn nesting_is_bounded() {
    for source in [
        format!("f(x) = {}x{}\n", "(".repeat(100_000), ")".repeat(100_000)),
        format!("f(x) = {}x\n", "-".repeat(100_000)),
        format!("f(x) = x{}\n", " + 1".repeat(100_000)),
        format!("f(x) = {}x\n", "let a = 1 in ".repeat(10_000)),
        format!("f(x) = {}x{}\n", "g(".repeat(100_000), ")".repeat(100_000)),
        format!("f(x) = {}x{}\n", "a[".repeat(100_000), "]".repeat(100_000)),
    ] {
        let (_, diags) = argent_lang::parse(&source);
        assert!(diags.iter().any(|d| d.code == "E0004"), "{diags:?}");
        assert!(argent_lang::compile(&source).is_err());
    }
}

/// A file with several broken lines reports each of them.
#[test]
fn recovery_reports_several_errors() {
    let source = "input u8 a(x\nf(x) = a(x) +\ng(x) = ) 2\nh(x) = a(x)\noutput h\n";
    let (_, diags) = argent_lang::parse(source);
    let lines: Vec<u32> = diags
        .iter()
        .map(|d| source[..d.span.start as usize].matches('\n').count() as u32 + 1)
        .collect();
    assert_eq!(lines, vec![1, 2, 3]);
}

/// Chains of global lets are bounded by the depth of their substituted
/// value, not only by their count.
#[test]
fn global_let_chains_are_bounded() {
    let mut source = String::from("k0 = 1\n");
    let deep = " + 1".repeat(200);
    for i in 1..50 {
        source.push_str(&format!("k{i} = k{}{deep}\n", i - 1));
    }
    source.push_str("f(x) = x + k49\noutput f\n");
    let err = argent_lang::compile(&source).unwrap_err();
    assert!(err.0.iter().any(|d| d.code == "E0004"), "{err}");
}
