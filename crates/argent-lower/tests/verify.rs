//! The IR verifier accepts what every pass produces for every example (own
//! schedule, no schedule and random schedules) and rejects broken IR with
//! messages that say what is wrong.

use argent_ir::{BufferArg, BufferRole, Expr, ForKind, Range, Stmt, Type};
use argent_lower::random_schedule::random_schedule;
use argent_lower::verify::{Stage, verify};
use argent_lower::{LowerError, LowerOptions, lower};
use expect_test::{Expect, expect};

fn examples() -> Vec<(String, argent_ir::Pipeline)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ag"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let src = std::fs::read_to_string(format!("{dir}/{n}")).unwrap();
            let p = argent_lang::compile(&src).unwrap_or_else(|e| panic!("{n}: {e:?}"));
            (n, p)
        })
        .collect()
}

/// Every pass's output verifies, for every example's own schedule and a
/// few random ones (tests/random_schedules.rs verifies 200 per example),
/// lowered for SIMD and for a scalar target. Errors other than compiler
/// bugs (the known bounds-inference failures) are not this test's concern.
#[test]
fn every_pass_of_every_example_verifies() {
    for scalar_target in [false, true] {
        every_pass_verifies(&LowerOptions {
            verify: true,
            scalar_target,
            ..Default::default()
        });
    }
}

fn every_pass_verifies(options: &LowerOptions) {
    let mut bugs = Vec::new();
    let mut lowered = 0;
    for (name, p) in examples() {
        let mut cases = vec![("own schedule".to_string(), p.clone())];
        for seed in 0..4 {
            let mut q = p.clone();
            q.schedule.directives = random_schedule(&p, seed);
            cases.push((format!("seed {seed}"), q));
        }
        for (label, q) in cases {
            match lower(&q, options) {
                Ok(_) => lowered += 1,
                Err(LowerError::Bug(b)) => bugs.push(format!("{name} ({label}): {b}")),
                Err(_) => {}
            }
        }
    }
    assert!(bugs.is_empty(), "{}", bugs.join("\n"));
    assert!(lowered > 40, "only {lowered} lowered");
}

fn out_buffer() -> Vec<BufferArg> {
    vec![BufferArg {
        name: "out".into(),
        ty: Type::I32,
        dims: 1,
        role: BufferRole::Output,
    }]
}

fn x() -> Expr {
    Expr::var_i32("x")
}

fn in_loop(kind: ForKind, body: Stmt) -> Stmt {
    Stmt::For {
        var: "x".into(),
        min: Expr::i32(0),
        extent: Expr::i32(8),
        kind,
        body: Box::new(body),
    }
}

fn check(s: &Stmt, stage: Stage, expected: Expect) {
    let message = match verify(s, &out_buffer(), &[], stage) {
        Ok(()) => "ok".to_string(),
        Err(e) => e.to_string(),
    };
    expected.assert_eq(&message);
}

#[test]
fn well_formed_flat_code_verifies() {
    let index = Expr::sub(x(), Expr::var_i32("out.min.0"));
    let s = in_loop(
        ForKind::Serial,
        Stmt::Store {
            buffer: "out".into(),
            index: index.clone(),
            value: Expr::add(Expr::load(Type::I32, "out", index), x()),
        },
    );
    check(&s, Stage::Vectorized, expect!["ok"]);
}

#[test]
fn undefined_variables_are_reported() {
    let s = in_loop(
        ForKind::Serial,
        Stmt::Store {
            buffer: "out".into(),
            index: x(),
            value: Expr::var_i32("y"),
        },
    );
    check(
        &s,
        Stage::Vectorized,
        expect![
            "internal compiler error in lowering: variable `y` is used outside any definition of it (in `y`)"
        ],
    );
    // A loop variable is not visible after its loop.
    let after = Stmt::Block(vec![
        in_loop(ForKind::Serial, Stmt::no_op()),
        Stmt::Evaluate(x()),
    ]);
    check(
        &after,
        Stage::Realized,
        expect![
            "internal compiler error in lowering: variable `x` is used outside any definition of it (in `x`)"
        ],
    );
}

#[test]
fn operand_types_must_agree() {
    let s = in_loop(
        ForKind::Serial,
        Stmt::Store {
            buffer: "out".into(),
            index: x(),
            value: Expr::binary(argent_ir::BinOp::Add, x(), Expr::int(Type::U8, 1)),
        },
    );
    check(
        &s,
        Stage::Vectorized,
        expect![
            "internal compiler error in lowering: the operands of `+` have different types i32 and u8 (in `(x + u8(1))`)"
        ],
    );
}

#[test]
fn vector_lanes_must_agree() {
    let s = Stmt::Store {
        buffer: "out".into(),
        index: Expr::ramp(Expr::i32(0), Expr::i32(1), 8),
        value: Expr::broadcast(Expr::i32(7), 4),
    };
    check(
        &s,
        Stage::Vectorized,
        expect![
            "internal compiler error in lowering: the index of `out` has 8 lanes but the value 4 (in `out[ramp(0, 1, 8)] = x4(7)`)"
        ],
    );
    let select = Stmt::Evaluate(Expr::select(
        Expr::broadcast(Expr::bool(true), 4),
        Expr::broadcast(Expr::i32(1), 8),
        Expr::broadcast(Expr::i32(2), 8),
    ));
    check(
        &select,
        Stage::Vectorized,
        expect![
            "internal compiler error in lowering: a select of i32x8 has a boolx4 condition (in `select(x4(true), x8(1), x8(2))`)"
        ],
    );
}

#[test]
fn buffers_must_be_in_scope_with_their_type() {
    let s = Stmt::Evaluate(Expr::load(Type::I32, "tmp", Expr::i32(0)));
    check(
        &s,
        Stage::Vectorized,
        expect![
            "internal compiler error in lowering: `tmp` is accessed outside its allocation (in `tmp[0]`)"
        ],
    );
    let s = Stmt::Evaluate(Expr::load(Type::F32, "out", Expr::i32(0)));
    check(
        &s,
        Stage::Vectorized,
        expect![
            "internal compiler error in lowering: `out` holds i32 but is accessed as f32 (in `out[0]`)"
        ],
    );
}

#[test]
fn multi_dimensional_storage_must_be_gone_after_flattening() {
    let realize = Stmt::Realize {
        func: "f".into(),
        ty: Type::I32,
        bounds: vec![
            Range {
                min: Expr::i32(0),
                extent: Expr::i32(8),
            };
            2
        ],
        body: Box::new(in_loop(
            ForKind::Serial,
            Stmt::Provide {
                func: "f".into(),
                args: vec![x()],
                value: x(),
            },
        )),
    };
    check(
        &realize,
        Stage::Realized,
        expect![
            "internal compiler error in lowering: `f` is provided with 1 coordinates but has 2 dimensions (in `f(x) = x`)"
        ],
    );
    check(
        &realize,
        Stage::Flattened,
        expect![
            "internal compiler error in lowering: `realize f` is left after flattening (in `realize f`)"
        ],
    );
}

#[test]
fn loops_that_a_pass_should_remove_are_reported() {
    let s = in_loop(ForKind::Vectorized, Stmt::no_op());
    check(&s, Stage::Unrolled, expect!["ok"]);
    check(
        &s,
        Stage::Vectorized,
        expect![
            "internal compiler error in lowering: a vectorized loop is left after `vectorize` (in `vectorized x in [0, 8)`)"
        ],
    );
    let s = in_loop(ForKind::Unrolled, Stmt::no_op());
    check(
        &s,
        Stage::Unrolled,
        expect![
            "internal compiler error in lowering: an unrolled loop is left after `unroll` (in `unrolled x in [0, 8)`)"
        ],
    );
}

/// `lower` names the pass after which the IR was malformed. No pass
/// produces malformed IR on purpose, so this runs the same check `lower`
/// does on a pass's real output with one definition removed.
#[test]
fn lowering_output_with_a_dropped_definition_is_rejected() {
    let (_, p) = examples()
        .into_iter()
        .find(|(n, _)| n == "brighten_contrast.ag")
        .unwrap();
    let options = LowerOptions {
        verify: true,
        ..Default::default()
    };
    let lowered = lower(&p, &options).unwrap();
    let body = &lowered.module.body;
    verify(
        body,
        &lowered.module.buffers,
        &lowered.module.params,
        Stage::Vectorized,
    )
    .unwrap();
    // Without its parameters the body uses undefined variables.
    let e = verify(body, &lowered.module.buffers, &[], Stage::Vectorized).unwrap_err();
    assert!(e.0.contains("is used outside any definition"), "{e}");
}
