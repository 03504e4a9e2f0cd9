//! Before/after snapshots of the simplifier, interval analysis and CSE on
//! small hand-built expressions and statements. Update with
//! `UPDATE_EXPECT=1 cargo test -p argent-arith`.

use argent_arith::interval::{
    Interval, Scope, bounds_of_expr_in_scope, boxes_provided, boxes_required,
};
use argent_arith::{cse, cse_stmt, simplify, simplify_stmt};
use argent_ir::{Expr, ForKind, Intrinsic, Stmt, Type};
use expect_test::{Expect, expect};

fn x() -> Expr {
    Expr::var_i32("x")
}
fn y() -> Expr {
    Expr::var_i32("y")
}
fn i(v: i64) -> Expr {
    Expr::i32(v)
}

/// One line per case: `before  ==>  after`.
fn check_simplify(cases: &[Expr], want: Expect) {
    let out: Vec<String> = cases
        .iter()
        .map(|e| format!("{e}  ==>  {}", simplify(e)))
        .collect();
    want.assert_eq(&(out.join("\n") + "\n"));
}

#[test]
fn linear_arithmetic_on_i32() {
    check_simplify(
        &[
            (x() + 3) + 2,
            (x() + 2) - (x() + 7),
            (y() + x()) - y(),
            x() * 1 + 0,
            (x() + 1) * 4,
            x() - x() * 3,
            i(5) - (x() + 2),
            y() + x() + x(),
            Expr::unary(argent_ir::UnaryOp::Neg, x() - y()),
        ],
        expect![[r#"
            ((x + 3) + 2)  ==>  (x + 5)
            ((x + 2) - (x + 7))  ==>  -5
            ((y + x) - y)  ==>  x
            ((x * 1) + 0)  ==>  x
            ((x + 1) * 4)  ==>  ((x * 4) + 4)
            (x - (x * 3))  ==>  (0 - (x * 2))
            (5 - (x + 2))  ==>  (3 - x)
            ((y + x) + x)  ==>  ((x * 2) + y)
            -(x - y)  ==>  (y - x)
        "#]],
    );
}

#[test]
fn order_rules_apply_to_i32_only() {
    let a8 = Expr::var(Type::U8, "a");
    check_simplify(
        &[
            Expr::lt(x() + 1, x() + 2),
            Expr::min(x() + 1, x()),
            Expr::max(x() - 4, x() + 3),
            Expr::lt(a8.clone() + 1, a8.clone() + 2),
            Expr::min(a8.clone() + 1, a8.clone()),
            Expr::eq(a8.clone() + 1, a8.clone() + 2),
            Expr::lt(x() + 3, y()),
            Expr::binary(argent_ir::BinOp::Ge, x(), y() - 2),
            Expr::min(Expr::min(x(), i(8)), i(3)),
            Expr::min(Expr::max(x(), i(8)), i(3)),
            Expr::lt(a8.clone(), Expr::int(Type::U8, 0)),
            Expr::min(a8.clone(), Expr::int(Type::U8, 255)),
            Expr::min(y(), Expr::min(x(), y())),
            Expr::max(a8.clone(), Expr::min(a8.clone(), Expr::var(Type::U8, "b"))),
            // Values computed from data wrap: the order of two sums and a
            // constant moved across a comparison hold for index
            // arithmetic (above), or where the ranges show nothing wraps.
            Expr::binary(
                argent_ir::BinOp::Ge,
                Expr::cast(Type::I32, Expr::var(Type::U32, "v")),
                Expr::cast(Type::I32, a8.clone()) - 4,
            ),
            Expr::min(
                Expr::cast(Type::I32, Expr::var(Type::U32, "v")),
                Expr::cast(Type::I32, Expr::var(Type::U32, "v")) + 2,
            ),
            Expr::lt(
                Expr::cast(Type::I32, a8.clone()) + 3,
                Expr::cast(Type::I32, Expr::var(Type::U8, "b")),
            ),
        ],
        expect![[r#"
            ((x + 1) < (x + 2))  ==>  true
            min((x + 1), x)  ==>  x
            max((x - 4), (x + 3))  ==>  (x + 3)
            ((a + u8(1)) < (a + u8(2)))  ==>  ((a + u8(1)) < (a + u8(2)))
            min((a + u8(1)), a)  ==>  min(a, (a + u8(1)))
            ((a + u8(1)) == (a + u8(2)))  ==>  false
            ((x + 3) < y)  ==>  (x < (y - 3))
            (x >= (y - 2))  ==>  (y <= (x + 2))
            min(min(x, 8), 3)  ==>  min(x, 3)
            min(max(x, 8), 3)  ==>  3
            (a < u8(0))  ==>  false
            min(a, u8(255))  ==>  a
            min(y, min(x, y))  ==>  min(x, y)
            max(a, min(a, b))  ==>  a
            (i32(v) >= (i32(a) - 4))  ==>  ((i32(a) - 4) <= i32(v))
            min(i32(v), (i32(v) + 2))  ==>  min(i32(v), (i32(v) + 2))
            ((i32(a) + 3) < i32(b))  ==>  (i32(a) < (i32(b) - 3))
        "#]],
    );
}

#[test]
fn value_sums_keep_their_grouping_index_sums_are_linear() {
    // A cascade of pair sums of pixel values, as a program writes a
    // gaussian as repeated [1 1] filters, stays a cascade (unrolled rows
    // then share its pairs); the same shape in i32 index arithmetic is
    // collected into a linear form.
    let v = |name: &str| Expr::var(Type::U32, name);
    let h = |name: &str| Expr::var(Type::U16, name);
    let z = Expr::var_i32("z");
    check_simplify(
        &[
            (v("a") + v("b")) + (v("b") + v("c")),
            (h("a") + h("b")) * Expr::int(Type::U16, 1) + Expr::int(Type::U16, 0),
            h("a") - h("a"),
            (x() + y()) + (y() + z),
        ],
        expect![[r#"
            ((a + b) + (b + c))  ==>  ((a + b) + (b + c))
            (((a + b) * u16(1)) + u16(0))  ==>  (a + b)
            (a - a)  ==>  u16(0)
            ((x + y) + (y + z))  ==>  ((x + (y * 2)) + z)
        "#]],
    );
}

#[test]
fn lets_of_small_affine_values_are_substituted() {
    // Inlining binds a func's arguments to lets; substituted, the loads'
    // indices fold, so equal loads look equal (here they become one `t`).
    let t = Expr::var_i32("t");
    let load = |index: Expr| Expr::load(Type::U16, "f", index);
    check_simplify(
        &[
            Expr::let_in("t", x() + 1, load(t.clone() + 6) + load(t.clone() - 1)),
            Expr::let_in("t", x() * y(), load(t.clone()) + load(t.clone() + 1)),
        ],
        expect![[r#"
            (let t = (x + 1) in (f[(t + 6)] + f[(t - 1)]))  ==>  (f[(x + 7)] + f[x])
            (let t = (x * y) in (f[t] + f[(t + 1)]))  ==>  (let t = (x * y) in (f[t] + f[(t + 1)]))
        "#]],
    );
}

#[test]
fn division_and_modulo() {
    check_simplify(
        &[
            (x() * 8 + 3) / 8,
            (x() * 8 + y()) / 4,
            (x() * 6 + 2) % 3,
            (x() / 4) / 2,
            i(-7) / i(2),
            i(-7) % i(2),
            x() / 0,
            Expr::modulo(x(), i(1)),
            (x() % 16) % 4,
            Expr::int(Type::U8, 200) + Expr::int(Type::U8, 100),
        ],
        expect![[r#"
            (((x * 8) + 3) / 8)  ==>  x
            (((x * 8) + y) / 4)  ==>  ((x * 2) + (y / 4))
            (((x * 6) + 2) % 3)  ==>  2
            ((x / 4) / 2)  ==>  (x / 8)
            (-7 / 2)  ==>  -4
            (-7 % 2)  ==>  1
            (x / 0)  ==>  0
            (x % 1)  ==>  0
            ((x % 16) % 4)  ==>  (x % 4)
            (u8(200) + u8(100))  ==>  u8(44)
        "#]],
    );
}

#[test]
fn floats_are_never_reassociated() {
    let f = Expr::var(Type::F32, "f");
    check_simplify(
        &[
            (f.clone() + Expr::f32(1.0)) + Expr::f32(2.0),
            Expr::f32(2.0) * f.clone(),
            f.clone() * Expr::f32(1.0),
            f.clone() + Expr::f32(0.0),
            f.clone() - Expr::f32(0.0),
            Expr::f32(0.1) + Expr::f32(0.2),
            Expr::lt(f.clone(), f.clone()),
        ],
        expect![[r#"
            ((f + 1.0) + 2.0)  ==>  ((f + 1.0) + 2.0)
            (2.0 * f)  ==>  (f * 2.0)
            (f * 1.0)  ==>  f
            (f + 0.0)  ==>  (f + 0.0)
            (f - 0.0)  ==>  f
            (0.1 + 0.2)  ==>  0.30000001192092896
            (f < f)  ==>  (f < f)
        "#]],
    );
}

#[test]
fn selects_lets_casts_and_vectors() {
    let a8 = Expr::var(Type::U8, "a");
    check_simplify(
        &[
            Expr::select(Expr::bool(true), x(), y()),
            Expr::select(Expr::lt(x(), y()), x() + 1, x() + 1),
            Expr::select(Expr::not(Expr::lt(x(), y())), x(), y()),
            Expr::let_in("t", x() + 1, Expr::var_i32("t") * 2),
            Expr::let_in("t", x() * y(), Expr::var_i32("t") * Expr::var_i32("t")),
            Expr::cast(Type::U8, Expr::cast(Type::I32, a8.clone())),
            Expr::saturating_cast(Type::U8, Expr::cast(Type::I32, a8.clone())),
            Expr::cast(Type::U8, i(300)),
            Expr::ramp(x(), i(1), 4) + Expr::broadcast(i(2), 4),
            Expr::ramp(x(), i(1), 4) * Expr::broadcast(i(3), 4),
            Expr::broadcast(x(), 4) - Expr::ramp(y(), i(2), 4),
            Expr::ramp(x(), i(0), 8),
            Expr::likely(i(3) + i(4)),
            Expr::intrinsic(Type::F32, Intrinsic::Floor, vec![Expr::f32(-2.5)]),
        ],
        expect![[r#"
            select(true, x, y)  ==>  x
            select((x < y), (x + 1), (x + 1))  ==>  (x + 1)
            select(!(x < y), x, y)  ==>  select((y <= x), x, y)
            (let t = (x + 1) in (t * 2))  ==>  ((x * 2) + 2)
            (let t = (x * y) in (t * t))  ==>  (let t = (x * y) in (t * t))
            u8(i32(a))  ==>  a
            sat_u8(i32(a))  ==>  a
            u8(300)  ==>  u8(44)
            (ramp(x, 1, 4) + x4(2))  ==>  ramp((x + 2), 1, 4)
            (ramp(x, 1, 4) * x4(3))  ==>  ramp((x * 3), 3, 4)
            (x4(x) - ramp(y, 2, 4))  ==>  ramp((x - y), -2, 4)
            ramp(x, 0, 8)  ==>  x8(x)
            likely((3 + 4))  ==>  7
            floor(-2.5)  ==>  -3.0
        "#]],
    );
}

fn store(buffer: &str, index: Expr, value: Expr) -> Stmt {
    Stmt::Store {
        buffer: buffer.into(),
        index,
        value,
    }
}

fn for_loop(var: &str, min: Expr, extent: Expr, body: Stmt) -> Stmt {
    Stmt::For {
        var: var.into(),
        min,
        extent,
        kind: ForKind::Serial,
        body: Box::new(body),
    }
}

#[test]
fn statements() {
    let s = Stmt::block(vec![
        // Extent 1: the loop variable becomes its minimum.
        for_loop(
            "x",
            i(0),
            i(1),
            store("f", (x() + 2) - 1, Expr::min(x(), i(7))),
        ),
        // Extent 0: gone.
        for_loop("y", i(0), i(0), store("f", y(), i(1))),
        // Loop bounds decide min/max and conditions inside the body.
        for_loop(
            "x",
            i(0),
            i(16),
            Stmt::block(vec![
                store("g", x(), Expr::min(x(), i(100))),
                Stmt::IfThenElse {
                    cond: Expr::lt(x(), i(20)),
                    then: Box::new(store("h", x(), i(1))),
                    otherwise: Some(Box::new(store("h", x(), i(2)))),
                },
                store("k", x() % 16, Expr::max(x() - 20, i(0))),
            ]),
        ),
        // Trivial lets are substituted; others stay.
        Stmt::LetStmt {
            name: "a".into(),
            value: y(),
            body: Box::new(Stmt::LetStmt {
                name: "b".into(),
                value: y() * y(),
                body: Box::new(store("m", Expr::var_i32("a") + 1, Expr::var_i32("b"))),
            }),
        },
        Stmt::IfThenElse {
            cond: Expr::bool(false),
            then: Box::new(store("n", i(0), i(0))),
            otherwise: None,
        },
    ]);
    expect![[r#"
        f[1] = 0
        for (x, 0, 16) {
          g[x] = x
          h[x] = 1
          k[x] = 0
        }
        let b = (y * y)
        m[(y + 1)] = b
    "#]]
    .assert_eq(&simplify_stmt(&s).to_string());
}

#[test]
fn intervals() {
    let w = Expr::var_i32("w");
    let scope = Scope::new()
        .with("x", Interval::new(i(0), w.clone() - 1))
        .with("r", Interval::new(i(0), i(2)))
        .with("c", Interval::new(i(0), i(2)));
    let a8 = Expr::var(Type::U8, "a");
    let cases = [
        x() - 1 + Expr::var_i32("r"),
        x() * 2 + 1,
        x() / 2,
        Expr::var_i32("c") * (x() - 3),
        x() % 8,
        Expr::min(x(), i(10)),
        Expr::clamp(x() + 5, i(0), w.clone() - 1),
        Expr::select(Expr::lt(x(), i(3)), y(), y() + 4),
        Expr::cast(Type::I32, a8.clone()) + 1,
        a8.clone() + Expr::int(Type::U8, 10),
        Expr::load(Type::U16, "buf", x()),
        Expr::let_in("t", x() * 2, Expr::var_i32("t") + 1),
        Expr::ramp(x(), i(1), 4),
        Expr::lt(Expr::var_i32("r"), i(3)),
        // A left shift that would wrap has no upper bound (a random
        // program's `min(i32(v) << 24, w)` was decided by `255 << 24`
        // wrapped to a negative bound).
        Expr::binary(
            argent_ir::BinOp::Shl,
            Expr::cast(Type::I32, a8.clone()),
            i(4),
        ),
        Expr::binary(
            argent_ir::BinOp::Shl,
            Expr::cast(Type::I32, a8.clone()),
            i(24),
        ),
    ];
    let out: Vec<String> = cases
        .iter()
        .map(|e| format!("{e}  in  {}", bounds_of_expr_in_scope(e, &scope)))
        .collect();
    expect![[r#"
        ((x - 1) + r)  in  [-1, w]
        ((x * 2) + 1)  in  [1, ((w * 2) - 1)]
        (x / 2)  in  [0, ((w - 1) / 2)]
        (c * (x - 3))  in  [min(((w * 2) - 8), -6), max(((w * 2) - 8), 0)]
        (x % 8)  in  [0, min((w - 1), 7)]
        min(x, 10)  in  [0, min((w - 1), 10)]
        max(min((x + 5), (w - 1)), 0)  in  [max(min((w - 1), 5), 0), max((w - 1), 0)]
        select((x < 3), y, (y + 4))  in  [y, (y + 4)]
        (i32(a) + 1)  in  [1, 256]
        (a + u8(10))  in  [u8(0), u8(255)]
        buf[x]  in  [u16(0), u16(65535)]
        (let t = (x * 2) in (t + 1))  in  [1, ((w * 2) - 1)]
        ramp(x, 1, 4)  in  [0, (w + 2)]
        (r < 3)  in  [true, true]
        (i32(a) << 4)  in  [0, 4080]
        (i32(a) << 24)  in  [0, +inf]
    "#]]
    .assert_eq(&(out.join("\n") + "\n"));
}

#[test]
fn regions_required_and_provided() {
    // for (y, 0, h) { for (x, 0, w) { out(x, y) = in(x - 1, y) + in(x + 1, y * 2) } }
    let (w, h) = (Expr::var_i32("w"), Expr::var_i32("h"));
    let body = Stmt::Provide {
        func: "out".into(),
        args: vec![x(), y()],
        value: Expr::call_input(Type::I32, "in", vec![x() - 1, y()])
            + Expr::call_input(Type::I32, "in", vec![x() + 1, y() * 2]),
    };
    let nest = for_loop("y", i(0), h.clone(), for_loop("x", i(0), w.clone(), body));
    let show = |boxes: Vec<Interval>| {
        boxes
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(" x ")
    };
    expect!["[-1, w] x [0, max((h - 1), ((h * 2) - 2))]"].assert_eq(&show(boxes_required(
        &nest,
        "in",
        &Scope::new(),
    )));
    expect!["[0, (w - 1)] x [0, (h - 1)]"].assert_eq(&show(boxes_provided(
        &nest,
        "out",
        &Scope::new(),
    )));
    expect![""].assert_eq(&show(boxes_required(&nest, "other", &Scope::new())));
    // A loop with a symbolic minimum, seen from a scope that bounds it.
    let scope = Scope::new().with("y", Interval::new(i(4), i(7)));
    let inner = for_loop(
        "x",
        y(),
        i(3),
        Stmt::Evaluate(Expr::call_func(Type::I32, "f", vec![x() * 2])),
    );
    expect!["[8, 18]"].assert_eq(&show(boxes_required(&inner, "f", &scope)));
}

#[test]
fn common_subexpressions() {
    let a = x() + y();
    let cases = [
        Expr::mul(a.clone(), a.clone()) + Expr::var_i32("c"),
        (a.clone() * 2) * (a.clone() * 2) + a.clone(),
        Expr::select(Expr::lt(a.clone(), i(0)), a.clone() * 3, i(0)),
        x() + y(),
        Expr::let_in("t", a.clone(), Expr::var_i32("t") + (a.clone() * a.clone())),
        // Loads only a branch evaluates stay in the branch.
        Expr::select(
            Expr::lt(x(), i(0)),
            i(0),
            Expr::load(Type::I32, "in", x()) * Expr::load(Type::I32, "in", x()),
        ),
        Expr::load(Type::I32, "in", x()) * Expr::load(Type::I32, "in", x())
            + Expr::select(Expr::lt(x(), i(0)), i(0), Expr::load(Type::I32, "in", x())),
    ];
    let out: Vec<String> = cases
        .iter()
        .map(|e| format!("{e}  ==>  {}", cse(e)))
        .collect();
    expect![[r#"
        (((x + y) * (x + y)) + c)  ==>  (let cse0 = (x + y) in ((cse0 * cse0) + c))
        ((((x + y) * 2) * ((x + y) * 2)) + (x + y))  ==>  (let cse0 = (x + y) in (let cse1 = (cse0 * 2) in ((cse1 * cse1) + cse0)))
        select(((x + y) < 0), ((x + y) * 3), 0)  ==>  (let cse0 = (x + y) in select((cse0 < 0), (cse0 * 3), 0))
        (x + y)  ==>  (x + y)
        (let t = (x + y) in (t + ((x + y) * (x + y))))  ==>  (let cse0 = (x + y) in (cse0 + (cse0 * cse0)))
        select((x < 0), 0, (in[x] * in[x]))  ==>  select((x < 0), 0, (in[x] * in[x]))
        ((in[x] * in[x]) + select((x < 0), 0, in[x]))  ==>  (let cse0 = in[x] in ((cse0 * cse0) + select((x < 0), 0, cse0)))
    "#]]
    .assert_eq(&(out.join("\n") + "\n"));
    let s = Stmt::Store {
        buffer: "f".into(),
        index: x(),
        value: a.clone() * a.clone(),
    };
    expect![[r#"
        f[x] = (let cse0 = (x + y) in (cse0 * cse0))
    "#]]
    .assert_eq(&cse_stmt(&s).to_string());
}

#[test]
fn cse_computes_each_shuffled_vector_s_own_values_inside_it() {
    // The channels of an interleaved store: each channel's load, used
    // twice, is bound inside its channel, so it is live only while that
    // channel is computed; the address both share stays outside.
    let f32x4 = Type::F32.with_lanes(4);
    let load = |offset: i64| {
        Expr::cast(
            f32x4,
            Expr::load(
                Type::U8.with_lanes(4),
                "in",
                Expr::ramp(x() * 3 + i(offset), i(3), 4),
            ),
        )
    };
    let channel = |offset: i64| load(offset) * load(offset);
    let e = Expr::shuffle(vec![channel(0), channel(1)], vec![0, 4, 1, 5, 2, 6, 3, 7]);
    expect![[r#"
        (let cse0 = (x * 3) in shuffle((let cse4 = f32x4(in[ramp((cse0 + 0), 3, 4)]) in (cse4 * cse4)), (let cse8 = f32x4(in[ramp((cse0 + 1), 3, 4)]) in (cse8 * cse8)), [0, 4, 1, 5, 2, 6, 3, 7]))
    "#]]
    .assert_eq(&format!("{}\n", cse(&e)));
    // Values all channels use stay shared while they fit in registers:
    // here one f32x4.
    let shared = load(0);
    let e = Expr::shuffle(
        vec![shared.clone() * load(1), shared * load(2)],
        vec![0, 4, 1, 5, 2, 6, 3, 7],
    );
    expect![[r#"
        (let cse0 = (x * 3) in (let cse4 = f32x4(in[ramp((cse0 + 0), 3, 4)]) in shuffle((cse4 * f32x4(in[ramp((cse0 + 1), 3, 4)])), (cse4 * f32x4(in[ramp((cse0 + 2), 3, 4)])), [0, 4, 1, 5, 2, 6, 3, 7])))
    "#]]
    .assert_eq(&format!("{}\n", cse(&e)));
    // Four shared f32x16 values would fill 16 registers: each channel
    // computes them itself.
    let wide = |offset: i64| {
        Expr::cast(
            Type::F32.with_lanes(16),
            Expr::load(
                Type::U8.with_lanes(16),
                "in",
                Expr::ramp(x() + i(offset), i(1), 16),
            ),
        )
    };
    let sum = wide(0) + wide(16) + wide(32) + wide(48);
    let product = wide(0) * wide(16) * wide(32) * wide(48);
    let e = Expr::shuffle(
        vec![sum, product],
        (0..16).flat_map(|k| [k, k + 16]).collect(),
    );
    let out = cse(&e).to_string();
    assert!(out.starts_with("shuffle("), "{out}");
    assert_eq!(out.matches("in[ramp((x + 0), 1, 16)]").count(), 2, "{out}");
}

#[test]
fn cse_keeps_lets_whose_substitution_would_grow_exponentially() {
    // let v0 = x + y in let v1 = v0 * v0 in ... let v40 = v39 * v39 in v40:
    // substituted, 2^40 nodes. CSE must see that before substituting
    // (the nested lets of vectorised `pow` expansions are like this) and
    // keep the lets.
    let mut e = Expr::var_i32("v40");
    for k in (1..=40).rev() {
        let prev = Expr::var_i32(format!("v{}", k - 1));
        e = Expr::let_in(format!("v{k}"), prev.clone() * prev, e);
    }
    e = Expr::let_in("v0", x() + y(), e);
    let out = cse(&e);
    assert!(out.to_string().contains("let v40"), "{out}");
}
