//! Writes a small hand-built lowered module (out(x, y) = in(x, y) * 2 + k,
//! rows in parallel, with an input bounds check) compiled by argent-wasm,
//! as `<dir>/hand.wasm` and `<dir>/hand.abi.json`. The runtime's tests use
//! it to exercise the worker pool independently of the front end.

use argent_ir::{
    AssertKind, BufferArg, BufferRole, Expr, ForKind, Module, Param, Span, Stmt, Type, buffer_field,
};

fn field(buffer: &str, name: &str, dim: usize) -> Expr {
    Expr::var_i32(buffer_field(buffer, name, dim))
}

fn index(buffer: &str) -> Expr {
    let x = Expr::mul(
        Expr::sub(Expr::var_i32("x"), field(buffer, "min", 0)),
        field(buffer, "stride", 0),
    );
    let y = Expr::mul(
        Expr::sub(Expr::var_i32("y"), field(buffer, "min", 1)),
        field(buffer, "stride", 1),
    );
    Expr::add(x, y)
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".to_string());
    let threads = std::env::args().nth(2).is_some_and(|a| a == "threads");
    let last = |b: &str, d: usize| {
        Expr::sub(
            Expr::add(field(b, "min", d), field(b, "extent", d)),
            Expr::i32(1),
        )
    };
    let mut checks = Vec::new();
    for dim in 0..2 {
        checks.push(Stmt::Assert {
            cond: Expr::and(
                Expr::le(field("in", "min", dim), field("out", "min", dim)),
                Expr::le(last("out", dim), last("in", dim)),
            ),
            kind: AssertKind::InputTooSmall {
                input: "in".into(),
                stage: "out".into(),
                dim,
            },
            args: vec![
                field("out", "min", dim),
                last("out", dim),
                field("in", "min", dim),
                last("in", dim),
            ],
        });
    }
    let value = Expr::add(
        Expr::mul(
            Expr::load(Type::U8, "in", index("in")),
            Expr::int(Type::U8, 2),
        ),
        Expr::var(Type::U8, "k"),
    );
    let inner = Stmt::For {
        var: "x".into(),
        min: field("out", "min", 0),
        extent: field("out", "extent", 0),
        kind: ForKind::Serial,
        body: Box::new(Stmt::Store {
            buffer: "out".into(),
            index: index("out"),
            value,
        }),
    };
    let outer = Stmt::For {
        var: "y".into(),
        min: field("out", "min", 1),
        extent: field("out", "extent", 1),
        kind: ForKind::Parallel,
        body: Box::new(inner),
    };
    checks.push(outer);
    let module = Module {
        name: "hand".into(),
        buffers: vec![
            BufferArg {
                name: "in".into(),
                ty: Type::U8,
                dims: 2,
                role: BufferRole::Input,
            },
            BufferArg {
                name: "out".into(),
                ty: Type::U8,
                dims: 2,
                role: BufferRole::Output,
            },
        ],
        params: vec![Param {
            name: "k".into(),
            ty: Type::U8,
            default: Some(1.0),
            range: None,
            span: Span::DUMMY,
        }],
        body: Stmt::block(checks),
    };
    let compiled = argent_wasm::compile(
        &module,
        &argent_wasm::CodegenOptions {
            simd: true,
            threads,
        },
    )
    .expect("the hand-built module compiles");
    std::fs::write(format!("{dir}/hand.wasm"), &compiled.bytes).unwrap();
    std::fs::write(
        format!("{dir}/hand.abi.json"),
        argent_web::abi::abi_to_json(&compiled.abi).to_string(),
    )
    .unwrap();
}
