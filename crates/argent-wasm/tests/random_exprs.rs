//! Differential test over random vector expressions: scalar code, SIMD
//! code and the reference evaluator must agree bit for bit (any NaN equals
//! any NaN: WebAssembly leaves NaN payloads unspecified).

mod common;

use argent_ir::{BinOp, BufferRole, Expr, ForKind, Intrinsic, Type, UnaryOp};
use argent_wasm::{CodegenOptions, compile};
use common::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const TYPES: [Type; 7] = Type::ALL_SCALAR;
const ROWS: i64 = 3;

fn input_name(ty: Type) -> String {
    format!("in_{ty}")
}

/// A random expression of `ty` with `lanes` lanes.
fn random_expr(rng: &mut Rng, ty: Type, lanes: u16, depth: u32) -> Expr {
    let vt = ty.with_lanes(lanes);
    let leaf = depth == 0 || rng.below(4) == 0;
    if leaf {
        return match rng.below(3) {
            0 => {
                let c = if ty.is_float() {
                    Expr::f32((rng.below(2000) as f64 - 1000.0) / 8.0)
                } else {
                    Expr::int(ty, rng.next() as i64 - (1 << 30))
                };
                Expr::broadcast(c, lanes)
            }
            _ => {
                let offset = rng.below(3) as i64;
                let x = Expr::var_i32("x");
                Expr::load(
                    ty,
                    input_name(ty),
                    Expr::ramp(x * lanes as i64 + offset, Expr::i32(1), lanes),
                )
            }
        };
    }
    let sub = |rng: &mut Rng, t: Type| random_expr(rng, t, lanes, depth - 1);
    match rng.below(10) {
        0..=3 => {
            let mut ops = vec![
                BinOp::Add,
                BinOp::Sub,
                BinOp::Mul,
                BinOp::Min,
                BinOp::Max,
                BinOp::Div,
                BinOp::Mod,
            ];
            if !ty.is_float() {
                ops.extend([BinOp::BitAnd, BinOp::BitOr, BinOp::BitXor]);
            }
            let op = rng.pick(&ops);
            let a = sub(rng, ty);
            // Divisors: mostly constants (the SIMD paths), sometimes vectors.
            let b = if matches!(op, BinOp::Div | BinOp::Mod) && rng.below(3) > 0 {
                let c = if ty.is_float() {
                    Expr::f32(rng.below(9) as f64 - 4.0)
                } else {
                    Expr::int(ty, rng.pick(&[0, 1, 2, 3, 4, 7, 16, 100, -1, -3]))
                };
                Expr::broadcast(c, lanes)
            } else {
                sub(rng, ty)
            };
            Expr::binary(op, a, b)
        }
        4 if !ty.is_float() => {
            let op = rng.pick(&[BinOp::Shl, BinOp::Shr]);
            let amount = rng.below(ty.bits as usize + 3) as i64 - if ty.is_int() { 2 } else { 0 };
            Expr::binary(
                op,
                sub(rng, ty),
                Expr::broadcast(Expr::int(ty, amount), lanes),
            )
        }
        5 | 6 => {
            let from = rng.pick(&TYPES);
            let v = sub(rng, from);
            if rng.below(2) == 0 {
                Expr::saturating_cast(ty, v)
            } else {
                Expr::new(
                    vt,
                    argent_ir::ExprKind::Cast {
                        value: v,
                        saturating: false,
                    },
                )
            }
        }
        7 => {
            let ct = rng.pick(&TYPES);
            let op = rng.pick(&[
                BinOp::Lt,
                BinOp::Le,
                BinOp::Eq,
                BinOp::Ne,
                BinOp::Gt,
                BinOp::Ge,
            ]);
            let cond = Expr::binary(op, sub(rng, ct), sub(rng, ct));
            Expr::select(cond, sub(rng, ty), sub(rng, ty))
        }
        8 => {
            if ty.is_float() {
                let i = rng.pick(&[
                    Intrinsic::Floor,
                    Intrinsic::Ceil,
                    Intrinsic::Round,
                    Intrinsic::Trunc,
                    Intrinsic::Abs,
                    Intrinsic::Sqrt,
                ]);
                Expr::intrinsic(vt, i, vec![sub(rng, ty)])
            } else if ty.is_uint() {
                let st = ty.with_kind(argent_ir::TypeKind::Int);
                if rng.below(2) == 0 {
                    Expr::intrinsic(vt, Intrinsic::Abs, vec![sub(rng, st)])
                } else {
                    let at = rng.pick(&[st, ty]);
                    Expr::intrinsic(vt, Intrinsic::Absd, vec![sub(rng, at), sub(rng, at)])
                }
            } else {
                Expr::unary(rng.pick(&[UnaryOp::Neg, UnaryOp::BitNot]), sub(rng, ty))
            }
        }
        _ => {
            // Widening arithmetic and the peephole shapes.
            let narrow = rng.pick(&[Type::U8, Type::I8, Type::U16, Type::I16]);
            if ty.bits < 2 * narrow.bits || ty.is_float() {
                return Expr::binary(BinOp::Add, sub(rng, ty), sub(rng, ty));
            }
            let wa = Expr::cast(ty, sub(rng, narrow));
            let wb = Expr::cast(ty, sub(rng, narrow));
            let op = rng.pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul]);
            let e = Expr::binary(op, wa, wb);
            if rng.below(2) == 0 {
                let one = Expr::broadcast(Expr::int(ty, 1), lanes);
                Expr::binary(BinOp::Shr, Expr::binary(BinOp::Add, e, one.clone()), one)
            } else {
                e
            }
        }
    }
}

fn same(ty: Type, got: &[u8], want: &[u8]) -> bool {
    if !ty.is_float() {
        return got == want;
    }
    got.chunks(4).zip(want.chunks(4)).all(|(g, w)| {
        let (g, w) = (
            f32::from_le_bytes(g.try_into().unwrap()),
            f32::from_le_bytes(w.try_into().unwrap()),
        );
        (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits()
    })
}

#[test]
fn random_vector_expressions_agree() {
    // Longer explorations: ARGENT_WASM_RANDOM_SEED / ARGENT_WASM_RANDOM_CASES.
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let mut rng = Rng(env("ARGENT_WASM_RANDOM_SEED", 20261121));
    let mut cases = Vec::new();
    for _ in 0..env("ARGENT_WASM_RANDOM_CASES", 120) {
        let ty = rng.pick(&TYPES);
        let lanes = rng.pick(&[4u16, 8, 16, 32]);
        let value = random_expr(&mut rng, ty, lanes, 4);
        let n = lanes as usize * ROWS as usize + 2;
        let mut buffers = Vec::new();
        let mut data = Vec::new();
        for (k, t) in TYPES.iter().enumerate() {
            buffers.push(buffer(&input_name(*t), *t, 1, BufferRole::Input));
            let mut bytes = random_bytes(n * t.bytes(), rng.next() + k as u64);
            if t.is_float() {
                // Mostly moderate finite values, with a few specials.
                for (j, c) in bytes.chunks_mut(4).enumerate() {
                    let f = match j % 11 {
                        0 => -0.0,
                        5 => 255.5,
                        _ => (u16::from_le_bytes([c[0], c[1]]) as f32 - 32768.0) / 64.0,
                    };
                    c.copy_from_slice(&f.to_le_bytes());
                }
            }
            data.push(BufData::one_d(bytes, t.bytes()));
        }
        buffers.push(buffer("out", ty, 1, BufferRole::Output));
        data.push(BufData::one_d(vec![0; n * ty.bytes()], ty.bytes()));
        let body = for_loop(
            "x",
            Expr::i32(0),
            Expr::i32(ROWS),
            ForKind::Vectorized,
            store(
                "out",
                dense(Expr::var_i32("x") * lanes as i64, lanes),
                value,
            ),
        );
        cases.push((module(buffers, vec![], body), data, ty));
    }
    let mut compiled = Vec::new();
    for (m, _, _) in &cases {
        for simd in [false, true] {
            compiled.push(
                compile(
                    m,
                    &CodegenOptions {
                        simd,
                        threads: false,
                    },
                )
                .expect("compiles"),
            );
        }
    }
    let jobs: Vec<Job> = compiled
        .iter()
        .enumerate()
        .map(|(k, c)| Job {
            compiled: c,
            buffers: &cases[k / 2].1,
            params: &[],
            threads: 0,
            runs: 1,
            query: false,
        })
        .collect();
    let outputs = run_node_batch(&jobs);
    for (k, out) in outputs.iter().enumerate() {
        let (m, data, ty) = &cases[k / 2];
        let want = reference(m, data, &[]).unwrap();
        let out_index = want.len() - 1;
        assert_eq!(out.status, 0);
        assert!(
            same(*ty, &out.buffers[out_index], &want[out_index]),
            "case {} (simd {}): got {:?}\nwant {:?}\n{}",
            k / 2,
            k % 2 == 1,
            &out.buffers[out_index],
            &want[out_index],
            m.body
        );
    }
}
