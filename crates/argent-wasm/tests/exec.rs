//! Execution tests: generated modules run in Node (tests/js/run.mjs) and
//! must give exactly the reference semantics (tests/common), with SIMD on
//! and off, and on 1, 2 and 4 threads for parallel loops.

mod common;
mod programs;

use argent_ir::{AssertKind, BinOp, BufferRole, Expr, ForKind, Intrinsic, Module, Stmt, Type};
use argent_wasm::{CodegenOptions, compile};
use common::*;
use programs::*;

const SCALAR: CodegenOptions = CodegenOptions {
    simd: false,
    threads: false,
};
const SIMD: CodegenOptions = CodegenOptions {
    simd: true,
    threads: false,
};

/// One module with its inputs.
struct Case {
    module: Module,
    buffers: Vec<BufData>,
    params: Vec<V>,
}

fn case(module: Module, buffers: Vec<BufData>, params: Vec<V>) -> Case {
    Case {
        module,
        buffers,
        params,
    }
}

/// Runs every case in Node with SIMD on and off (one Node process) and
/// checks every buffer against the reference evaluator; returns the SIMD
/// runs' buffers.
fn check_cases(cases: &[Case]) -> Vec<Vec<Vec<u8>>> {
    let mut compiled = Vec::new();
    let mut words = Vec::new();
    for c in cases {
        for options in [SCALAR, SIMD] {
            compiled.push((compile(&c.module, &options).expect("compiles"), options));
        }
        words.push(
            c.params
                .iter()
                .map(|p| match p {
                    V::I(i) => *i as u32,
                    V::F(f) => f.to_bits(),
                })
                .collect::<Vec<u32>>(),
        );
    }
    let jobs: Vec<Job> = compiled
        .iter()
        .enumerate()
        .map(|(k, (m, _))| Job {
            compiled: m,
            buffers: &cases[k / 2].buffers,
            params: &words[k / 2],
            threads: 0,
            runs: 1,
            query: false,
        })
        .collect();
    let outputs = run_node_batch(&jobs);
    let mut simd_buffers = Vec::new();
    for (k, out) in outputs.into_iter().enumerate() {
        let c = &cases[k / 2];
        let options = compiled[k].1;
        let expected = reference(&c.module, &c.buffers, &c.params).expect("reference run succeeds");
        assert_eq!(out.status, 0, "status with {options:?}");
        for (b, (got, want)) in out.buffers.iter().zip(&expected).enumerate() {
            if got != want {
                let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap();
                panic!(
                    "case {}: buffer {} differs with {options:?} at byte {first}: got {:?}, want {:?}\n{}",
                    k / 2,
                    c.module.buffers[b].name,
                    &got[first..(first + 8).min(got.len())],
                    &want[first..(first + 8).min(want.len())],
                    c.module.body
                );
            }
        }
        assert_eq!(out.heap.0, out.heap.2, "heap top restored");
        if options.simd {
            simd_buffers.push(out.buffers);
        }
    }
    simd_buffers
}

fn check_against_reference(module: &Module, buffers: &[BufData], params: &[V]) -> Vec<Vec<u8>> {
    check_cases(&[case(module.clone(), buffers.to_vec(), params.to_vec())])
        .pop()
        .unwrap()
}

fn zeros(n: usize) -> BufData {
    BufData::one_d(vec![0; n], 1)
}

fn typed(bytes: Vec<u8>, elem: usize) -> BufData {
    BufData::one_d(bytes, elem)
}

#[test]
fn add_u8_wraps_at_16_and_32_lanes() {
    let a = random_bytes(64, 1);
    let b = random_bytes(64, 2);
    for lanes in [16, 32, 8] {
        let out = check_against_reference(
            &add_u8(lanes),
            &[typed(a.clone(), 1), typed(b.clone(), 1), zeros(64)],
            &[],
        );
        // Independent of the reference evaluator: wrapping u8 addition.
        let want: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
        assert_eq!(out[2], want);
    }
}

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i32_values(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn euclidean_div_mod_by_a_parameter_including_zero() {
    let mut a: Vec<i32> = vec![0, 1, -1, 7, -7, 8, -8, i32::MIN, i32::MAX, 13, -13, 100];
    a.extend(random_bytes(20, 3).iter().map(|b| (*b as i32 - 128) * 1000));
    for lanes in [1, 4, 8] {
        for p in [3, -3, 0, 1, -1, 7, i32::MIN] {
            let bufs = [
                typed(i32_bytes(&a), 4),
                typed(vec![0; a.len() * 4], 4),
                typed(vec![0; a.len() * 4], 4),
            ];
            let out = check_against_reference(&divmod_param(lanes), &bufs, &[V::I(p as i64)]);
            let q = i32_values(&out[1]);
            let r = i32_values(&out[2]);
            for (k, &x) in a.iter().enumerate() {
                let (want_q, want_r) = if p == 0 {
                    (0, 0)
                } else {
                    let (x, p) = (x as i64, p as i64);
                    (x.div_euclid(p) as i32, x.rem_euclid(p) as i32)
                };
                assert_eq!((q[k], r[k]), (want_q, want_r), "{x} / {p}");
            }
        }
    }
}

#[test]
fn div_mod_of_32_bit_lanes_by_lanes_including_zero_and_extremes() {
    // SIMD128 has no integer division: 32-bit lanes divide in f64, which
    // must give the scalar code's Euclidean results exactly, `x / 0 == 0`
    // and the wrap of `i32::MIN / -1` included.
    let edges = [
        0,
        1,
        -1,
        2,
        -2,
        3,
        -3,
        7,
        -7,
        i32::MIN,
        i32::MAX,
        i32::MIN + 1,
        65536,
        -65537,
    ];
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in &edges {
        for &y in &edges {
            a.push(x);
            b.push(y);
        }
    }
    let noise = |seed| random_bytes(4 * 64, seed);
    a.extend(i32_values(&noise(21)));
    b.extend(i32_values(&noise(22)).iter().map(|v| v >> (v & 31)));
    let n = a.len() - a.len() % 8;
    let (a, b) = (&a[..n], &b[..n]);
    for ty in [Type::I32, Type::U32] {
        for lanes in [4, 8] {
            let bufs = [
                typed(i32_bytes(a), 4),
                typed(i32_bytes(b), 4),
                typed(vec![0; n * 4], 4),
                typed(vec![0; n * 4], 4),
            ];
            let out = check_against_reference(&divmod_lanes(ty, lanes), &bufs, &[]);
            let (q, r) = (i32_values(&out[2]), i32_values(&out[3]));
            for k in 0..n {
                let want = match (ty == Type::I32, b[k]) {
                    (_, 0) => (0, 0),
                    (true, y) => (a[k].wrapping_div_euclid(y), a[k].wrapping_rem_euclid(y)),
                    (false, y) => {
                        let (x, y) = (a[k] as u32, y as u32);
                        ((x / y) as i32, (x % y) as i32)
                    }
                };
                assert_eq!((q[k], r[k]), want, "{ty:?}: {} / {}", a[k], b[k]);
            }
        }
    }
}

#[test]
fn lanes_divided_by_themselves_give_one_and_zero() {
    // `a / a` reads one register as dividend and divisor; only the divisor
    // may lose its sign (a random expression found `a % a == 2 * a` for
    // negative `a`).
    let values = [0, 1, -1, 7, -7, i32::MIN, i32::MAX, -45999888];
    let mut a: Vec<i32> = values.iter().copied().cycle().take(16).collect();
    a.extend(i32_values(&random_bytes(4 * 16, 23)));
    let n = a.len();
    for ty in [Type::I32, Type::U32] {
        for lanes in [4, 16] {
            let bufs = [
                typed(i32_bytes(&a), 4),
                typed(vec![0; n * 4], 4),
                typed(vec![0; n * 4], 4),
            ];
            let out = check_against_reference(&divmod_self(ty, lanes), &bufs, &[]);
            let (q, r) = (i32_values(&out[1]), i32_values(&out[2]));
            for k in 0..n {
                let want = if a[k] == 0 { (0, 0) } else { (1, 0) };
                assert_eq!((q[k], r[k]), want, "{ty:?}: {0} / {0}", a[k]);
            }
        }
    }
}

#[test]
fn div_mod_by_constants_in_vectors() {
    let mut batch = Vec::new();
    for (ty, lanes) in [
        (Type::U8, 16),
        (Type::I16, 8),
        (Type::U16, 16),
        (Type::I8, 16),
        (Type::I32, 4),
        // Logical vectors of several registers.
        (Type::I32, 8),
        (Type::I32, 16),
        (Type::U32, 16),
        (Type::I16, 32),
        (Type::U8, 32),
    ] {
        for c in [1, 2, 3, 4, 7, 10, 100] {
            let n = 64 * ty.bytes();
            let bufs = [
                typed(random_bytes(n, c as u64), ty.bytes()),
                typed(vec![0; n], ty.bytes()),
                typed(vec![0; n], ty.bytes()),
            ];
            batch.push(case(divmod_const(ty, c, lanes), bufs.to_vec(), vec![]));
        }
    }
    check_cases(&batch);
}

/// `x / (3 * 2^k)` and `x % (3 * 2^k)` take a shortcut through the
/// inverse of 3 modulo 2^16 or 2^32 (`div_mod_unsigned_by_three`): every
/// u8 and u16 value, and u32 values around each place where the three
/// candidates of the shortcut change order, give the exact quotient and
/// remainder.
#[test]
fn unsigned_division_by_three_times_powers_of_two_is_exact_for_every_value() {
    let mut batch = Vec::new();
    let mut expected = Vec::new();
    let u8_values: Vec<u64> = (0..256).collect();
    let u16_values: Vec<u64> = (0..65536).collect();
    let mut u32_values: Vec<u64> = Vec::new();
    for centre in [0u64, 0x5555_5555, 0xAAAA_AAAA, 1 << 31, 0xFFFF_FFFF] {
        for d in 0..48u64 {
            u32_values.push(centre.wrapping_add(d).wrapping_sub(24) & 0xFFFF_FFFF);
        }
    }
    let random = random_bytes(4 * 1024, 31);
    u32_values.extend(
        random
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64),
    );
    for (ty, lanes, values, divisors) in [
        (
            Type::U8,
            16,
            &u8_values,
            &[3i64, 6, 12, 24, 48, 96, 192][..],
        ),
        (Type::U16, 8, &u16_values, &[3, 6, 12, 48, 3 << 14][..]),
        (Type::U16, 16, &u16_values, &[3, 24][..]),
        (Type::U32, 4, &u32_values, &[3, 6, 3 << 20, 3 << 29][..]),
        (Type::U32, 8, &u32_values, &[3, 12][..]),
    ] {
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|&v| v.to_le_bytes()[..ty.bytes()].to_vec())
            .collect();
        for &c in divisors {
            let n = bytes.len();
            let bufs = vec![
                typed(bytes.clone(), ty.bytes()),
                typed(vec![0; n], ty.bytes()),
                typed(vec![0; n], ty.bytes()),
            ];
            batch.push(case(divmod_const(ty, c, lanes), bufs, vec![]));
            expected.push((ty, c, values));
        }
    }
    let outputs = check_cases(&batch);
    for ((ty, c, values), out) in expected.into_iter().zip(outputs) {
        let read = |bytes: &[u8], i: usize| {
            let mut lane = [0u8; 8];
            lane[..ty.bytes()].copy_from_slice(&bytes[i * ty.bytes()..(i + 1) * ty.bytes()]);
            u64::from_le_bytes(lane)
        };
        for (i, &x) in values.iter().enumerate() {
            let c = c as u64;
            assert_eq!(read(&out[1], i), x / c, "{ty:?}: {x} / {c}");
            assert_eq!(read(&out[2], i), x % c, "{ty:?}: {x} % {c}");
        }
    }
}

#[test]
fn vectorised_blur_u16() {
    for lanes in [8, 16, 4] {
        let input = random_bytes(2 * 66, 9);
        let out = check_against_reference(
            &blur3_u16(lanes),
            &[typed(input.clone(), 2), typed(vec![0; 128], 2)],
            &[],
        );
        let v: Vec<u16> = input
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        for x in 0..64 {
            let want = v[x].wrapping_add(v[x + 1]).wrapping_add(v[x + 2]) / 3;
            let got = u16::from_le_bytes([out[1][2 * x], out[1][2 * x + 1]]);
            assert_eq!(got, want, "x = {x}");
        }
    }
}

#[test]
fn stores_sharing_widened_rows_match_reference() {
    // Four rows of u16 in; the later stores read back what earlier ones
    // stored (see `rows_of_taps`).
    let n = N as usize;
    check_against_reference(
        &rows_of_taps(),
        &[
            typed(random_bytes(2 * 4 * n, 21), 2),
            typed(vec![0; 4 * 2 * n], 4),
            typed(vec![0; 4 * n], 4),
        ],
        &[],
    );
}

#[test]
fn regrouped_weighted_sums_match_reference() {
    // Sums weighted by constants are regrouped by the bits of the weights
    // (see `weighted_taps`); on u32 inputs the products wrap, and the
    // regrouped sums must wrap alike.
    let n = N as usize;
    for weights in [
        &[1, 4, 6, 4][..],
        &[3],
        &[6, 6, 5],
        &[1 << 17, 3, 255],
        &[2, 4],
    ] {
        for wide in [false, true] {
            let bytes = if wide { 4 } else { 2 };
            check_against_reference(
                &weighted_taps(weights, wide),
                &[
                    typed(random_bytes(bytes * (n + 8), 31), bytes),
                    typed(vec![0; 4 * n], 4),
                ],
                &[],
            );
        }
    }
}

#[test]
fn clamped_ramp_loads_match_reference_inside_and_at_the_edges() {
    // Images 37 elements wide read by 6 vectors of 8 lanes from x - 1:
    // the first vector reads below 0, the fifth and sixth above 36, the
    // others are inside (dense loads); plain and as channel 2 of 3.
    for (k, c) in [(1, 0), (3, 2), (4, 1)] {
        let w = 37;
        let input = random_bytes(2 * (k * w) as usize, 11);
        let out = check_against_reference(
            &clamped_ramp_load(k, c),
            &[typed(input.clone(), 2), typed(vec![0; 2 * 48], 2)],
            &[V::I(w), V::I(6)],
        );
        let v: Vec<u16> = input
            .chunks(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        for x in 0..48 {
            let at = (x - 1).clamp(0, w - 1);
            let got = u16::from_le_bytes([out[1][2 * x as usize], out[1][2 * x as usize + 1]]);
            assert_eq!(got, v[(k * at + c) as usize], "k = {k}, x = {x}");
        }
    }
}

/// Channels of interleaved u8 data read through a `repeat_edge` clamp and
/// widened to f32 or u32 (versioned: straight from the window inside,
/// gathered and extended at the edges) match the reference, inside and
/// at both edges, for RGB, RGBA and two channels.
#[test]
fn clamped_channels_widened_to_32_bits_match_reference() {
    let mut batch = Vec::new();
    for (k, c) in [(3, 0), (3, 2), (4, 1), (4, 3), (2, 1)] {
        for (to, lanes) in [(Type::F32, 4), (Type::F32, 16), (Type::U32, 8)] {
            let w = 37;
            let input = random_bytes((k * w) as usize, 50 + c as u64);
            let iterations = 48 / i64::from(lanes);
            let module = clamped_ramp_load_as(Type::U8, to, lanes, k, c);
            // Inside, the window is masked (or swizzled, for RGB) into
            // 32-bit lanes; no u8 vector is picked and extended.
            let wat = wasmprinter::print_bytes(compile(&module, &SIMD).unwrap().bytes).unwrap();
            let widened = if k == 3 { "i8x16.swizzle" } else { "v128.and" };
            assert!(wat.contains(widened), "{k} channels:\n{wat}");
            assert!(!wat.contains("i8x16.shuffle"), "{k} channels:\n{wat}");
            batch.push(case(
                module,
                vec![typed(input, 1), typed(vec![0; 4 * 48], 4)],
                vec![V::I(w), V::I(iterations)],
            ));
        }
    }
    for (out, c) in check_cases(&batch).iter().zip(&batch) {
        // The last lane (x = 47) reads pixel 36, the image's last.
        assert!(out[1].iter().any(|&b| b != 0), "{}", c.module.body);
    }
}

#[test]
fn interleaved_rgba_loads_and_stores() {
    let rgba = random_bytes(4 * 64, 5);
    let out = check_against_reference(
        &rgba_roundtrip(),
        &[typed(rgba.clone(), 1), zeros(4 * 64), zeros(4 * 64)],
        &[],
    );
    for x in 0..64 {
        for c in 0..4 {
            assert_eq!(out[1][c * 64 + x], rgba[4 * x + c]);
            assert_eq!(out[2][4 * x + c], rgba[4 * x + c].wrapping_add(1));
        }
    }
}

#[test]
fn interleaved_rgb_u16_loads() {
    let rgb = random_bytes(2 * 3 * 64, 6);
    check_against_reference(
        &rgb_u16_sum(),
        &[typed(rgb, 2), typed(vec![0; 128], 2)],
        &[],
    );
}

/// `out[x * lanes ..] = value(in[ramp(x * lanes * k + offset, k, lanes)])`
/// for x in 0..4: one channel of `k`-channel interleaved data of type
/// `from`, loaded as is (`to == from`) or widened to `to` and tripled.
fn strided_channel_case(from: Type, to: Type, k: i64, lanes: u16, offset: i64) -> Case {
    let group = i64::from(lanes) * k;
    let load = Expr::load(
        from.with_lanes(lanes),
        "in",
        Expr::ramp(x() * group + offset, Expr::i32(k), lanes),
    );
    let three = if to.is_float() {
        Expr::float(to, 3.0)
    } else {
        Expr::int(to, 3)
    };
    let value = if to == from {
        load
    } else {
        Expr::cast(to.with_lanes(lanes), load) * Expr::broadcast(three, lanes)
    };
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::i32(4),
        ForKind::Serial,
        store("out", dense(x() * i64::from(lanes), lanes), value),
    );
    let module = module(
        vec![
            buffer("in", from, 1, BufferRole::Input),
            buffer("out", to, 1, BufferRole::Output),
        ],
        vec![],
        body,
    );
    let (in_bytes, out_bytes) = (from.bits as usize / 8, to.bits as usize / 8);
    let input = random_bytes(4 * group as usize * in_bytes, 17 + offset as u64);
    case(
        module,
        vec![
            typed(input, in_bytes),
            typed(vec![0; 4 * lanes as usize * out_bytes], out_bytes),
        ],
        vec![],
    )
}

/// Strided loads that the backend de-interleaves by masking wide lanes and
/// narrowing (stride 4 of u8, stride 2 of u8 and u16, signed too), with
/// full, half and odd windows, each at every offset within its group; and
/// u8 channels, and u16 channels of pairs, widened to 16 or 32 bits (and
/// converted to f32) straight from the window.
#[test]
fn strided_loads_masked_and_narrowed_match_reference() {
    let shapes = [
        (Type::U8, Type::U8, 4, 16),
        (Type::U8, Type::U8, 4, 8),
        (Type::U8, Type::U8, 4, 12),
        (Type::I8, Type::I8, 4, 16),
        (Type::U8, Type::U8, 2, 16),
        (Type::I8, Type::I8, 2, 8),
        (Type::U16, Type::U16, 2, 8),
        (Type::I16, Type::I16, 2, 4),
        (Type::U16, Type::U16, 4, 8),
        (Type::I16, Type::I16, 4, 8),
        (Type::U16, Type::U16, 4, 12),
        (Type::U16, Type::U16, 4, 4),
        (Type::U16, Type::U32, 4, 8),
        (Type::I16, Type::I32, 4, 8),
        (Type::U16, Type::F32, 4, 12),
        (Type::U8, Type::U16, 4, 16),
        (Type::U8, Type::I16, 4, 8),
        (Type::U8, Type::U16, 4, 12),
        (Type::U8, Type::U16, 2, 16),
        (Type::U8, Type::U16, 2, 8),
        (Type::U8, Type::U32, 4, 16),
        (Type::U8, Type::I32, 4, 4),
        (Type::U8, Type::F32, 4, 16),
        (Type::U8, Type::F32, 4, 12),
        (Type::U8, Type::U32, 2, 16),
        (Type::U8, Type::F32, 2, 8),
        (Type::U16, Type::U32, 2, 8),
        (Type::U16, Type::F32, 2, 4),
        (Type::U16, Type::I32, 2, 12),
        (Type::U8, Type::U8, 3, 16),
        (Type::U8, Type::U8, 3, 8),
        (Type::U8, Type::U16, 3, 16),
        (Type::U16, Type::U16, 3, 8),
        (Type::U8, Type::F32, 3, 4),
        (Type::U8, Type::F32, 3, 12),
        (Type::U8, Type::U32, 3, 16),
        (Type::U8, Type::I32, 3, 8),
    ];
    let cases: Vec<Case> = shapes
        .into_iter()
        .flat_map(|(from, to, k, lanes)| {
            (0..k).map(move |offset| strided_channel_case(from, to, k, lanes, offset))
        })
        .collect();
    check_cases(&cases);
}

#[test]
fn casts_plain_and_saturating() {
    let mut batch = Vec::new();
    let specials_f32: Vec<f32> = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        127.9,
        128.0,
        255.5,
        256.0,
        -129.0,
        40000.0,
        -40000.0,
        3e9,
        -3e9,
        5e9,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    for from in Type::ALL_SCALAR {
        let n = 32;
        let mut bytes = random_bytes(n * from.bytes(), from.bits as u64 + from.kind as u64);
        if from.is_float() {
            bytes = (0..n)
                .flat_map(|k| {
                    let f = specials_f32
                        .get(k)
                        .copied()
                        .unwrap_or((k as f32 - 16.0) * 1234.567);
                    f.to_le_bytes()
                })
                .collect();
        }
        let lanes = 16;
        let module = casts(from, lanes);
        let mut bufs = vec![typed(bytes, from.bytes())];
        for (_, to, _) in cast_outputs() {
            bufs.push(typed(vec![0; n * to.bytes()], to.bytes()));
        }
        batch.push(case(module.clone(), bufs.clone(), vec![]));
        batch.push(case((casts(from, 1)).clone(), bufs.clone(), vec![]));
    }
    check_cases(&batch);
}

#[test]
fn allocation_in_a_loop_does_not_leak() {
    let module = alloc_in_loop(10_000);
    let input = random_bytes(64, 7);
    let bufs = [typed(input.clone(), 1), zeros(10_000)];
    let expected = reference(&module, &bufs, &[]).unwrap();
    for options in [SCALAR, SIMD] {
        let compiled = compile(&module, &options).unwrap();
        let out = run_node(&compiled, &bufs, &[], 0, 20);
        assert_eq!(out.status, 0);
        assert_eq!(out.buffers, expected);
        let (before, after_first, after_last) = out.heap;
        assert_eq!(
            (after_first, after_last),
            (before, before),
            "heap top restored"
        );
        assert_eq!(out.pages.0, out.pages.1, "memory did not grow across runs");
    }
}

#[test]
fn failed_assert_reports_which_and_its_arguments() {
    let module = checked_copy();
    let compiled = compile(&module, &SIMD).unwrap();
    let mut input = typed(random_bytes(50, 8), 1);
    input.dims = vec![(0, 50, 1)];
    let bufs = [input.clone(), zeros(50)];
    let out = run_node(&compiled, &bufs, &[99], 0, 1);
    assert!(out.status > 0);
    let info = &compiled.abi.asserts[out.status as usize - 1];
    assert_eq!(
        info.kind,
        AssertKind::InputTooSmall {
            input: "in".into(),
            stage: "blur_x".into(),
            dim: 0
        }
    );
    let failure = reference(&module, &bufs, &[V::I(99)]).unwrap_err();
    let want: Vec<i32> = failure
        .args
        .iter()
        .map(|v| match v {
            V::I(i) => *i as i32,
            V::F(_) => unreachable!(),
        })
        .collect();
    assert_eq!(&out.error_args[..4], &want[..]);
    assert_eq!(&out.error_args[..4], &[-1, 99, 0, 49]);
    // Output untouched: the check runs before anything else.
    assert_eq!(out.buffers[1], vec![0; 50]);

    // A passing check (input min -1 covers the need) runs the copy.
    let mut ok_input = input;
    ok_input.dims = vec![(-1, 50, 1)];
    let out = run_node(&compiled, &[ok_input, zeros(50)], &[40], 0, 1);
    assert_eq!(out.status, 0);
}

/// `source` lowered under its own schedule.
fn lowered_source(source: &str) -> Module {
    let pipeline = argent_lang::compile(source).expect("the pipeline compiles");
    argent_lower::lower::lower(&pipeline, &Default::default())
        .expect("it lowers")
        .module
}

/// A gray u8 image of `w x h` for `lowered_source` pipelines.
fn gray(w: i32, h: i32, seed: u64) -> BufData {
    BufData {
        bytes: random_bytes((w * h) as usize, seed),
        dims: vec![(0, w, 1), (0, h, w)],
    }
}

/// The region an input must cover is compared exactly: with `k` declared
/// up to 43,383,509, `in(x * k, y)` over 100 columns reaches x =
/// 4,294,967,391, which wraps to 95 in `i32`. The check used to pass on a
/// 1000-column input and the loop then read outside it (a trap); now the
/// run fails before anything runs, naming the input and the stage. Index
/// arithmetic of the program itself still wraps as the language defines:
/// a hash of `x` under `repeat_edge` overflows on purpose, its region is
/// the clamped one, and it runs as the interpreter says.
#[test]
fn region_checks_past_2_pow_31_fail_instead_of_wrapping() {
    let wide = lowered_source(
        "input u8 in(x, y)\nparam i32 k = 1 in 1 .. 43383509\nout(x, y) = in(x * k, y)\noutput out\n",
    );
    let compiled = compile(&wide, &SIMD).unwrap();
    for k in [1u32, 30_000_000] {
        let out = run_node(&compiled, &[gray(1000, 2, 3), gray(100, 2, 0)], &[k], 0, 1);
        assert!(out.status > 0, "k = {k}: the run must fail, not trap");
        match &compiled.abi.asserts[out.status as usize - 1].kind {
            kind @ AssertKind::RegionOverflow { region } => {
                assert_eq!(
                    region,
                    "the region of input `in` that stage `out` reads in dimension 0"
                );
                assert!(
                    kind.message(&[])
                        .contains("does not fit in 32-bit coordinates")
                );
            }
            other => panic!("k = {k}: {other:?}"),
        }
        assert_eq!(out.buffers[1], gray(100, 2, 0).bytes, "nothing ran");
    }

    // The same read where the declared range keeps it inside: runs.
    let narrow = lowered_source(
        "input u8 in(x, y)\nparam i32 k = 1 in 1 .. 10\nout(x, y) = in(x * k, y)\noutput out\n",
    );
    check_cases(&[case(
        narrow,
        vec![gray(1000, 2, 3), gray(100, 2, 0)],
        vec![V::I(7)],
    )]);

    // A hash of the coordinates under a boundary condition wraps on
    // purpose; the region it reads is the clamped one.
    let hashed = lowered_source(
        "input u8 in(x, y)\nb = repeat_edge(in)\nout(x, y) = b(x * 1103515245 + 12345, y)\noutput out\n",
    );
    check_cases(&[case(hashed, vec![gray(64, 3, 5), gray(64, 3, 0)], vec![])]);
}

/// An input read in an arm of a `select` is only checked to cover the
/// region where the arm's condition holds (bounds inference narrows it),
/// but vector code evaluates both arms in every lane: where the condition
/// fails the address may lie anywhere, outside the memory too. Each case
/// here reads so far outside the input there (tens of millions of
/// elements, or below address 0) that it trapped with "memory access out
/// of bounds" before such loads were guarded; the taken lanes read inside
/// the input and must match the interpreter. Dense, strided
/// (interleaved), gathered and broadcast loads; u8, u16 and f32; a scalar
/// condition (a whole row); a producer computed per row of a parallel
/// loop; two loads whose indices differ by a constant, one in an arm (a
/// pointer shared by a stencil's taps must not start at the one that may
/// wrap); arms that no point takes (the input need not cover them); and
/// vectors too wide to guard.
#[test]
fn input_loads_in_untaken_select_arms_never_leave_the_memory() {
    let (w, h) = (37, 5);
    let interleaved = |channels: i32, seed: u64| BufData {
        bytes: random_bytes((w * h * channels) as usize, seed),
        dims: vec![(0, w, channels), (0, h, w * channels), (0, channels, 1)],
    };
    let wide = |elem: usize, seed: u64| BufData {
        bytes: random_bytes(w as usize * h as usize * elem, seed),
        dims: vec![(0, w, 1), (0, h, w)],
    };
    let floats = BufData {
        bytes: (0..w * h)
            .flat_map(|i| (i as f32 * 0.37 - 20.0).to_le_bytes())
            .collect(),
        dims: vec![(0, w, 1), (0, h, w)],
    };
    let cases = vec![
        case(
            lowered_source(
                "input u8 in(x, y)
f(x, y) = select(x > 10000000, in(x - 10000000, y), 7) + select(x < 1, in(x, y + x * 1000000), 9)
output f
schedule { f.vectorize(x, 16) }
",
            ),
            vec![gray(w, h, 1), gray(w, h, 0)],
            vec![],
        ),
        case(
            lowered_source(
                "input u8 in(x, y)
f(x, y) = select(x < 1, in(x * x * 100000, y), u8(x)) + select(x > 100000000, in(x * 3 - 300000000, y), 1)
output f
schedule { f.vectorize(x, 16) }
",
            ),
            vec![gray(w, h, 2), gray(w, h, 0)],
            vec![],
        ),
        case(
            lowered_source(
                "input u8 in(x, y, c)
f(x, y, c) = select(x > 50000000, in(x - 50000000, y, c), in(x, y, c) / 2)
output f
schedule { f.reorder(c, x, y).vectorize(x, 8) }
",
            ),
            vec![interleaved(3, 3), interleaved(3, 0)],
            vec![],
        ),
        case(
            lowered_source(
                "input f32 in(x, y)
f(x, y) = select(x >= 100000000, in(x - 100000000, y), 0.5) + select(x < 1, in(x, y + x * 10000000), 0.25)
output f
schedule { f.vectorize(x, 8) }
",
            ),
            vec![floats, wide(4, 0)],
            vec![],
        ),
        case(
            lowered_source(
                "input u16 in(x, y)
f(x, y) = select(x >= 100000000, in(x - 100000000, y), 5) + select(x < 1, in(x, y - x * 10000000), 3)
g(x, y) = f(x, y) + select(y > 100000, in(x, y - 100000), 1) + in(x, y) + select(x > 3000000, in(x - 3000000, y), 2) + select(x < 1, in(x + 36, y), 4)
output g
schedule {
  g.vectorize(x, 32).parallel(y)
  f.compute_at(g, y).vectorize(x, 16)
}
",
            ),
            vec![wide(2, 4), wide(2, 0)],
            vec![],
        ),
        // Arms that no point takes: the input needs to cover nothing for
        // them, although their regions, computed over empty ranges of `x`
        // or `y`, are not empty.
        case(
            lowered_source(
                "input u8 in(x, y)
f(x, y) = select(x < 0, in(x * x + 1000000, y), u8(x)) + select(x > 100, in(x * 3 + 5000000, y - 60), 1) + select(y > 40, in(x, y * y), 2)
output f
schedule { f.vectorize(x, 16).parallel(y) }
",
            ),
            vec![gray(w, h, 6), gray(w, h, 0)],
            vec![],
        ),
        // Loads wider than `MAX_SPECULATIVE_SPAN`: lane by lane.
        case(
            lowered_source(
                "input u8 in(x, y)
f(x, y) = select(x > 10000000, in(x - 10000000, y), 7) + select(x < 1, in(x, y + x * 1000000), 9)
output f
schedule { f.vectorize(x, 512) }
",
            ),
            vec![gray(1100, 2, 5), gray(1100, 2, 0)],
            vec![],
        ),
    ];
    check_cases(&cases);
}

/// A chain of 300 inlined stages, with a diamond every 100 (a stage that
/// reads the two before it): lowering walked such a chain from every stage
/// (2000 stages took 1.7 s), and `+ 1` on u8 was added once per stage.
#[test]
fn long_chains_of_inlined_stages_lower_and_run() {
    let mut source = "input u8 in(x, y)\nf0(x, y) = in(x, y)\n".to_string();
    for k in 1..300 {
        if k % 100 == 0 {
            source += &format!("f{k}(x, y) = f{}(x, y) + f{}(x + 1, y)\n", k - 1, k - 2);
        } else {
            source += &format!("f{k}(x, y) = f{}(x, y) + 1\n", k - 1);
        }
    }
    source += "output f299\nschedule { f299.vectorize(x, 16) }\n";
    let input = gray(40, 3, 7);
    let module = lowered_source(&source.replace(
        "f0(x, y) = in(x, y)",
        "b = repeat_edge(in)\nf0(x, y) = b(x, y)",
    ));
    check_cases(&[case(module, vec![input, gray(40, 3, 0)], vec![])]);
}

/// `examples/NAME.ag` lowered under its own schedule.
fn lowered_example(name: &str) -> Module {
    let path = format!("{}/../../examples/{name}.ag", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).expect("the example exists");
    let pipeline = argent_lang::compile(&source).expect("the pipeline compiles");
    argent_lower::lower::lower(&pipeline, &Default::default())
        .expect("it lowers")
        .module
}

/// A two-dimensional input whose rows are not contiguous (every other u16
/// of a wider array, as one channel of interleaved data would be): the
/// lowered box blur reads 2-D buffers as dense rows, so its module refuses
/// the layout by name before touching the output, and runs the dense one.
#[test]
fn a_two_dimensional_buffer_must_be_dense_in_x() {
    let compiled = compile(&lowered_example("box_blur"), &SIMD).unwrap();
    let (w, h) = (40, 12);
    let output = || BufData {
        bytes: vec![0; 2 * w * h],
        dims: vec![(0, w as i32, 1), (0, h as i32, w as i32)],
    };
    let strided = BufData {
        bytes: random_bytes(2 * 2 * w * h, 5),
        dims: vec![(0, w as i32, 2), (0, h as i32, 2 * w as i32)],
    };
    let out = run_node(&compiled, &[strided, output()], &[], 0, 1);
    assert!(out.status > 0);
    let info = &compiled.abi.asserts[out.status as usize - 1];
    assert_eq!(
        info.kind,
        AssertKind::StrideNotOne {
            buffer: "in".into()
        }
    );
    assert_eq!(out.error_args[0], 2);
    assert_eq!(
        info.kind.message(&[2]),
        "buffer `in` must have stride 1 in dimension 0 (its rows must be contiguous), but its stride there is 2"
    );
    assert_eq!(out.buffers[1], vec![0; 2 * w * h], "output untouched");
    let dense = BufData {
        bytes: random_bytes(2 * w * h, 5),
        dims: vec![(0, w as i32, 1), (0, h as i32, w as i32)],
    };
    let out = run_node(&compiled, &[dense, output()], &[], 0, 1);
    assert_eq!(out.status, 0);
}

/// The bounds query of the lowered box blur: for strips of the output
/// (the whole width, some rows), the region of `in` that a run reads is
/// the strip with one more row above and below, clamped to the image
/// (`repeat_edge`), and the whole width. The query needs no pixels.
#[test]
fn bounds_query_reports_the_rows_a_strip_reads() {
    let module = lowered_example("box_blur");
    let (w, h) = (300, 100);
    for options in [SIMD, SCALAR] {
        let compiled = compile(&module, &options).unwrap();
        let slots = compiled
            .abi
            .region_slots
            .clone()
            .expect("box_blur has a query");
        let mut found: Vec<(String, usize)> =
            slots.iter().map(|s| (s.input.clone(), s.dim)).collect();
        found.sort();
        assert_eq!(found, [("in".to_string(), 0), ("in".to_string(), 1)]);
        for (first, rows) in [(0, 10), (10, 37), (h - 10, 10), (0, h), (50, 1)] {
            let input = BufData {
                bytes: vec![],
                dims: vec![(0, w, 1), (0, h, w)],
            };
            let strip = BufData {
                bytes: vec![],
                dims: vec![(0, w, 1), (first, rows, w)],
            };
            let words = query_node(&compiled, &[input, strip], &[]);
            let region = |dim: usize| {
                let slot = slots.iter().find(|s| s.dim == dim).unwrap();
                let k = slot.offset as usize / 4;
                (words[k], words[k + 1])
            };
            assert_eq!(region(0), (0, w - 1), "x of rows {first}+{rows}");
            assert_eq!(
                region(1),
                ((first - 1).max(0), (first + rows).min(h - 1)),
                "y of rows {first}+{rows}"
            );
        }
    }
}

#[test]
fn allocation_beyond_4_gib_is_an_error_status() {
    let module = alloc_param();
    for options in [SCALAR, SIMD] {
        let compiled = compile(&module, &options).unwrap();
        let out = run_node(&compiled, &[typed(vec![0; 4], 4)], &[1 << 30], 0, 1);
        assert!(out.status > 0);
        let info = &compiled.abi.asserts[out.status as usize - 1];
        assert_eq!(
            info.kind,
            AssertKind::AllocationTooLarge {
                buffer: "big".into()
            }
        );
        // Requested bytes, low and high words: 4 GiB.
        assert_eq!(&out.error_args[..2], &[0, 1]);
        assert_eq!(out.heap.0, out.heap.2);
        // A small one works and grows nothing it does not need.
        let out = run_node(&compiled, &[typed(vec![0; 4], 4)], &[1 << 20], 0, 1);
        assert_eq!(out.status, 0);
        assert_eq!(out.buffers[0], 1.5f32.to_le_bytes());
    }
}

#[test]
fn parallel_loop_on_1_2_and_4_threads() {
    parallel_blur_with(64, 37, 3);
}

/// Many small tasks allocating concurrently: the atomic heap protocol
/// under contention, over several runs.
#[test]
fn parallel_loop_stress() {
    parallel_blur_with(16, 2000, 5);
}

fn parallel_blur_with(w: usize, h: usize, runs: u32) {
    let module = parallel_blur();
    let in_stride = w + 2;
    let input = random_bytes(2 * in_stride * h, 11);
    let make = || {
        vec![
            BufData {
                bytes: input.clone(),
                dims: vec![(0, in_stride as i32, 1), (0, h as i32, in_stride as i32)],
            },
            BufData {
                bytes: vec![0; 2 * w * h],
                dims: vec![(0, w as i32, 1), (0, h as i32, w as i32)],
            },
        ]
    };
    let expected = reference(&module, &make(), &[]).unwrap();
    for simd in [false, true] {
        let threaded = CodegenOptions {
            simd,
            threads: true,
        };
        let compiled = compile(&module, &threaded).unwrap();
        assert_eq!(compiled.abi.tasks.len(), 1);
        for threads in [1, 2, 4] {
            let out = run_node(&compiled, &make(), &[], threads, runs);
            assert_eq!(out.status, 0);
            assert_eq!(out.buffers, expected, "simd {simd}, {threads} threads");
            assert_eq!(out.heap.0, out.heap.2);
        }
        // Without threads the same loop runs serially.
        let serial = compile(
            &module,
            &CodegenOptions {
                simd,
                threads: false,
            },
        )
        .unwrap();
        assert!(serial.abi.tasks.is_empty());
        assert_eq!(run_node(&serial, &make(), &[], 0, 1).buffers, expected);
    }
}

/// Elementwise operations over every integer type, 16 bytes per vector
/// and two registers per vector, against the reference.
#[test]
fn elementwise_operators_match_reference() {
    let mut batch = Vec::new();
    let ops = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Min,
        BinOp::Max,
        BinOp::BitAnd,
        BinOp::BitOr,
        BinOp::BitXor,
        BinOp::Div,
        BinOp::Mod,
        BinOp::Shl,
        BinOp::Shr,
    ];
    for ty in Type::ALL_SCALAR {
        let lanes = (128 / ty.bits as u16) * 2;
        let n = 4 * lanes as usize;
        for op in ops {
            if ty.is_float()
                && matches!(
                    op,
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
                )
            {
                continue;
            }
            let mut a = random_bytes(n * ty.bytes(), op as u64);
            let mut b = random_bytes(n * ty.bytes(), 100 + op as u64);
            if ty.is_float() {
                // Finite floats with small exponents.
                for c in a.chunks_mut(4).chain(b.chunks_mut(4)) {
                    c[3] &= 0x43;
                }
            }
            let module = elementwise(ty, ty, lanes, |x, y| Expr::binary(op, x, y));
            batch.push(case(
                module.clone(),
                vec![
                    typed(a, ty.bytes()),
                    typed(b, ty.bytes()),
                    typed(vec![0; n * ty.bytes()], ty.bytes()),
                ],
                vec![],
            ));
        }
        // Comparisons and select.
        let a = random_bytes(n * ty.bytes(), 77);
        let b = random_bytes(n * ty.bytes(), 78);
        for op in [
            BinOp::Lt,
            BinOp::Le,
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Gt,
            BinOp::Ge,
        ] {
            if ty.is_float() {
                break;
            }
            let module = elementwise(ty, ty, lanes, |x, y| {
                Expr::select(Expr::binary(op, x.clone(), y.clone()), x, y)
            });
            batch.push(case(
                module.clone(),
                vec![
                    typed(a.clone(), ty.bytes()),
                    typed(b.clone(), ty.bytes()),
                    typed(vec![0; n * ty.bytes()], ty.bytes()),
                ],
                vec![],
            ));
        }
    }
    check_cases(&batch);
}

/// Shifts by constant amounts in vectors, including negative and
/// oversized amounts.
#[test]
fn vector_shifts_by_constants() {
    let mut batch = Vec::new();
    for ty in [
        Type::U8,
        Type::I8,
        Type::U16,
        Type::I16,
        Type::U32,
        Type::I32,
    ] {
        let lanes = 128 / ty.bits as u16;
        let n = 2 * lanes as usize;
        for amount in [0i64, 1, 3, 7, 8, 15, 16, 31, 40, -1, -9] {
            if ty.is_uint() && amount < 0 {
                continue;
            }
            for op in [BinOp::Shl, BinOp::Shr] {
                let module = elementwise(ty, ty, lanes, |x, _| {
                    Expr::binary(op, x, Expr::broadcast(Expr::int(ty, amount), lanes))
                });
                let a = random_bytes(n * ty.bytes(), (amount + 50) as u64);
                batch.push(case(
                    module.clone(),
                    vec![
                        typed(a.clone(), ty.bytes()),
                        typed(a, ty.bytes()),
                        typed(vec![0; n * ty.bytes()], ty.bytes()),
                    ],
                    vec![],
                ));
            }
        }
    }
    check_cases(&batch);
}

fn run_pattern(module: &Module, ty: Type, out_ty: Type, n: usize, instruction: &str) -> Case {
    let wat = wasmprinter::print_bytes(compile(module, &SIMD).unwrap().bytes).unwrap();
    assert!(
        wat.contains(instruction),
        "expected {instruction} in:\n{wat}"
    );
    let mut bufs = vec![
        typed(random_bytes(n * ty.bytes(), 31), ty.bytes()),
        typed(random_bytes(n * ty.bytes(), 32), ty.bytes()),
        typed(vec![0; n * out_ty.bytes()], out_ty.bytes()),
    ];
    // Include the extremes of the type.
    for k in 0..ty.bytes() {
        bufs[0].bytes[k] = 0xff;
        bufs[1].bytes[k] = 0xff;
        bufs[0].bytes[ty.bytes() + k] = 0;
        bufs[1].bytes[ty.bytes() + k] = 0xff;
    }
    bufs[0].bytes[2 * ty.bytes() + ty.bytes() - 1] = 0x80;
    bufs[1].bytes[2 * ty.bytes() + ty.bytes() - 1] = 0x80;
    case(module.clone(), bufs, vec![])
}

#[test]
fn peepholes_match_exact_semantics() {
    let mut batch = Vec::new();
    let wide = |t: Type, e: Expr| Expr::cast(t, e);
    // Saturating add and subtract.
    for (ty, w) in [
        (Type::U8, Type::U16),
        (Type::I8, Type::I16),
        (Type::U16, Type::U32),
        (Type::I16, Type::I32),
    ] {
        let lanes = 128 / ty.bits as u16;
        let add = elementwise(ty, ty, lanes, |a, b| {
            Expr::saturating_cast(ty, Expr::add(wide(w, a), wide(w, b)))
        });
        let name = if ty.is_uint() {
            "add_sat_u"
        } else {
            "add_sat_s"
        };
        batch.push(run_pattern(&add, ty, ty, 4 * lanes as usize, name));
        let sw = w.with_kind(argent_ir::TypeKind::Int);
        let sub = elementwise(ty, ty, lanes, |a, b| {
            Expr::saturating_cast(ty, Expr::sub(wide(sw, a), wide(sw, b)))
        });
        let name = if ty.is_uint() {
            "sub_sat_u"
        } else {
            "sub_sat_s"
        };
        batch.push(run_pattern(&sub, ty, ty, 4 * lanes as usize, name));
    }
    // Rounding average.
    for (ty, w) in [(Type::U8, Type::U16), (Type::U16, Type::U32)] {
        let lanes = 128 / ty.bits as u16;
        let avg = elementwise(ty, ty, lanes, |a, b| {
            let one = Expr::broadcast(Expr::int(w, 1), lanes);
            Expr::cast(
                ty,
                Expr::binary(
                    BinOp::Shr,
                    Expr::add(Expr::add(wide(w, a), wide(w, b)), one.clone()),
                    one,
                ),
            )
        });
        batch.push(run_pattern(&avg, ty, ty, 4 * lanes as usize, "avgr_u"));
    }
    // q15 rounding multiply.
    let q15 = elementwise(Type::I16, Type::I16, 8, |a, b| {
        let prod = Expr::mul(wide(Type::I32, a), wide(Type::I32, b));
        let rounded = Expr::add(prod, Expr::broadcast(Expr::i32(16384), 8));
        Expr::saturating_cast(
            Type::I16,
            Expr::binary(BinOp::Shr, rounded, Expr::broadcast(Expr::i32(15), 8)),
        )
    });
    batch.push(run_pattern(&q15, Type::I16, Type::I16, 32, "q15mulr_sat_s"));
    // A saturating narrow of lanes shifted right: one unsigned narrow
    // (the shift clears the sign bit it reads), for shifts of 1 and of the
    // width less one; and of lanes that may use the top bit, a clamp first.
    for (ty, to, lanes) in [(Type::U32, Type::U16, 4), (Type::U16, Type::U8, 8)] {
        for shift in [1, i64::from(ty.bits) - 1] {
            let shifted = elementwise(ty, to, lanes, |a, b| {
                let k = Expr::broadcast(Expr::int(ty, shift), lanes);
                Expr::saturating_cast(to, Expr::binary(BinOp::Shr, Expr::add(a, b), k))
            });
            let narrow = if to == Type::U16 {
                "i16x8.narrow_i32x4_u"
            } else {
                "i8x16.narrow_i16x8_u"
            };
            batch.push(run_pattern(&shifted, ty, to, 4 * lanes as usize, narrow));
        }
        let unshifted = elementwise(ty, to, lanes, |a, b| {
            Expr::saturating_cast(to, Expr::add(a, b))
        });
        batch.push(run_pattern(&unshifted, ty, to, 4 * lanes as usize, "min_u"));
        // Wrapping: a shift that leaves only `to`'s bits needs no mask; one
        // bit less keeps the mask.
        let half = i64::from(ty.bits - to.bits);
        for (shift, instruction) in [(half, "narrow"), (half - 1, "v128.and")] {
            let wrapped = elementwise(ty, to, lanes, |a, b| {
                let k = Expr::broadcast(Expr::int(ty, shift), lanes);
                Expr::cast(to, Expr::binary(BinOp::Shr, Expr::add(a, b), k))
            });
            batch.push(run_pattern(
                &wrapped,
                ty,
                to,
                4 * lanes as usize,
                instruction,
            ));
        }
    }
    // Saturating to a signed type: lanes that fit in its width but not
    // below its sign bit still need the clamp.
    for (ty, to, lanes, shifts) in [
        (Type::U32, Type::I16, 4, [1, 16, 17]),
        (Type::U16, Type::I8, 8, [1, 8, 9]),
    ] {
        for shift in shifts {
            let signed = elementwise(ty, to, lanes, |a, b| {
                let k = Expr::broadcast(Expr::int(ty, shift), lanes);
                Expr::saturating_cast(to, Expr::binary(BinOp::Shr, Expr::add(a, b), k))
            });
            batch.push(run_pattern(&signed, ty, to, 4 * lanes as usize, "narrow"));
        }
    }
    let twice = elementwise(Type::U32, Type::U8, 4, |a, b| {
        let k = Expr::broadcast(Expr::int(Type::U32, 4), 4);
        Expr::saturating_cast(Type::U8, Expr::binary(BinOp::Shr, Expr::add(a, b), k))
    });
    batch.push(run_pattern(
        &twice,
        Type::U32,
        Type::U8,
        16,
        "i8x16.narrow_i16x8_u",
    ));
    // Widening multiplies.
    let extmul = elementwise(Type::U8, Type::U16, 16, |a, b| {
        Expr::mul(wide(Type::U16, a), wide(Type::U16, b))
    });
    batch.push(run_pattern(
        &extmul,
        Type::U8,
        Type::U16,
        64,
        "extmul_low_i8x16_u",
    ));
    let extmul_s = elementwise(Type::I16, Type::I32, 8, |a, b| {
        Expr::mul(wide(Type::I32, a), wide(Type::I32, b))
    });
    batch.push(run_pattern(
        &extmul_s,
        Type::I16,
        Type::I32,
        32,
        "extmul_high_i16x8_s",
    ));
    // abs, absd, min/max.
    for ty in [Type::I8, Type::I16, Type::I32] {
        let lanes = 128 / ty.bits as u16;
        let ut = ty.with_kind(argent_ir::TypeKind::UInt);
        let abs = elementwise(ty, ut, lanes, |a, _| {
            Expr::intrinsic(ut.with_lanes(lanes), Intrinsic::Abs, vec![a])
        });
        batch.push(run_pattern(&abs, ty, ut, 4 * lanes as usize, ".abs"));
        let absd = elementwise(ty, ut, lanes, |a, b| {
            Expr::intrinsic(ut.with_lanes(lanes), Intrinsic::Absd, vec![a, b])
        });
        batch.push(run_pattern(&absd, ty, ut, 4 * lanes as usize, ".max_s"));
    }
    // Dot product.
    let n = 64;
    let module = dot_i16();
    let wat = wasmprinter::print_bytes(compile(&module, &SIMD).unwrap().bytes).unwrap();
    assert!(wat.contains("i32x4.dot_i16x8_s"));
    let mut a = random_bytes(2 * n, 41);
    let mut b = random_bytes(2 * n, 42);
    // -32768 * -32768 twice: the one case where the sum wraps.
    a[..4].copy_from_slice(&[0, 0x80, 0, 0x80]);
    b[..4].copy_from_slice(&[0, 0x80, 0, 0x80]);
    batch.push(case(
        module,
        vec![typed(a, 2), typed(b, 2), typed(vec![0; 2 * n], 4)],
        vec![],
    ));
    check_cases(&batch);
}

/// Float operations and intrinsics in vectors.
#[test]
fn float_vectors_and_intrinsics() {
    let mut batch = Vec::new();
    let lanes = 8;
    let n = 32;
    let floats: Vec<u8> = (0..n)
        .flat_map(|k| {
            let f = match k {
                0 => f32::NAN,
                1 => -0.0,
                2 => 0.5,
                3 => 1.5,
                4 => 2.5,
                5 => -2.5,
                _ => (k as f32 - 15.3) * 7.77,
            };
            f.to_le_bytes()
        })
        .collect();
    let others: Vec<u8> = (0..n)
        .flat_map(|k| match k {
            1 => 0.0f32.to_le_bytes(),
            2 => f32::NAN.to_le_bytes(),
            _ => ((k as f32) * 0.37 - 3.0).to_le_bytes(),
        })
        .collect();
    for intrinsic in [
        Intrinsic::Sqrt,
        Intrinsic::Floor,
        Intrinsic::Ceil,
        Intrinsic::Round,
        Intrinsic::Trunc,
        Intrinsic::Abs,
    ] {
        let module = elementwise(Type::F32, Type::F32, lanes, |a, _| {
            Expr::intrinsic(Type::F32.with_lanes(lanes), intrinsic, vec![a])
        });
        batch.push(case(
            module.clone(),
            vec![
                typed(floats.clone(), 4),
                typed(others.clone(), 4),
                typed(vec![0; 4 * n], 4),
            ],
            vec![],
        ));
    }
    // min/max with NaN and signed zeros on either side.
    for op in [BinOp::Min, BinOp::Max] {
        for (x, y) in [(&floats, &others), (&others, &floats)] {
            let module = elementwise(Type::F32, Type::F32, lanes, |a, b| Expr::binary(op, a, b));
            batch.push(case(
                module.clone(),
                vec![
                    typed(x.clone(), 4),
                    typed(y.clone(), 4),
                    typed(vec![0; 4 * n], 4),
                ],
                vec![],
            ));
        }
    }
    let module = elementwise(Type::F32, Type::U8, lanes, |a, b| {
        Expr::cast(
            Type::U8,
            Expr::select(
                Expr::intrinsic(
                    Type::BOOL.with_lanes(lanes),
                    Intrinsic::IsNan,
                    vec![a.clone()],
                ),
                Expr::broadcast(Expr::f32(200.0), lanes),
                Expr::binary(BinOp::Mod, a, b),
            ),
        )
    });
    batch.push(case(
        module.clone(),
        vec![typed(floats, 4), typed(others, 4), typed(vec![0; n], 1)],
        vec![],
    ));
    check_cases(&batch);
}

/// Consecutive scalar stores share computed values but re-read what an
/// earlier one stored: `b[x] = a[x] + 1; b[x] = b[x] * 3 + (a[x] + 1)`, and
/// a histogram-like update of two cells at an index computed from `a`.
#[test]
fn consecutive_scalar_stores_reread_what_they_store() {
    let n = 24usize;
    let a = || Expr::load(Type::I32, "a", x());
    let a1 = || Expr::add(a(), Expr::i32(1));
    let cell = || Expr::binary(BinOp::BitAnd, Expr::mul(a(), Expr::i32(5)), Expr::i32(7));
    let h = |index: Expr| Expr::load(Type::I32, "h", index);
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::i32(n as i64),
        ForKind::Serial,
        Stmt::Block(vec![
            store("b", x(), a1()),
            store(
                "b",
                x(),
                Expr::add(
                    Expr::mul(Expr::load(Type::I32, "b", x()), Expr::i32(3)),
                    a1(),
                ),
            ),
            store("h", cell(), Expr::add(h(cell()), Expr::i32(1))),
            store(
                "h",
                Expr::add(cell(), Expr::i32(8)),
                Expr::add(h(Expr::add(cell(), Expr::i32(8))), a()),
            ),
            store(
                "h",
                cell(),
                Expr::add(h(cell()), h(Expr::add(cell(), Expr::i32(8)))),
            ),
        ]),
    );
    let module = module(
        vec![
            buffer("a", Type::I32, 1, BufferRole::Input),
            buffer("b", Type::I32, 1, BufferRole::Output),
            buffer("h", Type::I32, 1, BufferRole::Output),
        ],
        vec![],
        body,
    );
    let values: Vec<u8> = (0..n)
        .flat_map(|j| (((j * 13 + 5) % 17) as i32).to_le_bytes())
        .collect();
    check_cases(&[case(
        module,
        vec![
            typed(values, 4),
            typed(vec![0; 4 * n], 4),
            typed(vec![0; 4 * 16], 4),
        ],
        vec![],
    )]);
}

/// Gathers of neighbouring elements (`a[i]`, `a[i + 1]`, as trilinear
/// interpolation reads them) are loaded as pairs and split with shuffles;
/// the values must be those of separate gathers, for 4 and 8 lanes, with
/// a third neighbour `a[i + 2]` and an index offset by a parameter.
#[test]
fn paired_gathers_match_separate_loads() {
    let n = 32usize;
    let m = 40usize;
    let mut batch = Vec::new();
    for lanes in [4u16, 8] {
        let idx = Expr::load(
            Type::I32.with_lanes(lanes),
            "idx",
            dense(x() * lanes as i64, lanes),
        );
        let i = Expr::var(Type::I32.with_lanes(lanes), "i");
        let k = |c: i64| Expr::broadcast(Expr::i32(c), lanes);
        let at = |index: Expr| Expr::load(Type::F32.with_lanes(lanes), "a", index);
        let shifted = Expr::add(i.clone(), Expr::broadcast(Expr::var_i32("p"), lanes));
        let value = Expr::add(
            Expr::sub(
                Expr::mul(at(i.clone()), Expr::broadcast(Expr::f32(0.25), lanes)),
                Expr::add(
                    at(Expr::add(i.clone(), k(1))),
                    at(Expr::add(i.clone(), k(2))),
                ),
            ),
            Expr::sub(at(Expr::add(shifted.clone(), k(1))), at(shifted)),
        );
        let body = for_loop(
            "x",
            Expr::i32(0),
            Expr::i32((n / lanes as usize) as i64),
            ForKind::Serial,
            store(
                "out",
                dense(x() * lanes as i64, lanes),
                Expr::let_in("i", idx, value),
            ),
        );
        let module = module(
            vec![
                buffer("idx", Type::I32, 1, BufferRole::Input),
                buffer("a", Type::F32, 1, BufferRole::Input),
                buffer("out", Type::F32, 1, BufferRole::Output),
            ],
            vec![param("p", Type::I32)],
            body,
        );
        let indices: Vec<u8> = (0..n)
            .flat_map(|j| (((j * 7 + 3) % (m - 5)) as i32).to_le_bytes())
            .collect();
        let values: Vec<u8> = (0..m)
            .flat_map(|j| ((j as f32) * 1.37 - 11.0).to_le_bytes())
            .collect();
        batch.push(case(
            module,
            vec![
                typed(indices, 4),
                typed(values, 4),
                typed(vec![0; 4 * n], 4),
            ],
            vec![V::I(2)],
        ));
    }
    check_cases(&batch);
}

/// `exp`, `sin`, `pow` and `lerp` reach the backend unexpanded and are
/// compiled through their `argent_ir::math` expansions (u64
/// intermediates for 32-bit lerp included).
#[test]
fn transcendentals_and_lerp_via_expansions() {
    let mut batch = Vec::new();
    let n = 16;
    let floats: Vec<u8> = (0..n)
        .flat_map(|k| ((k as f32) * 0.61 - 4.0).to_le_bytes())
        .collect();
    for intrinsic in [Intrinsic::Exp, Intrinsic::Sin, Intrinsic::Log] {
        let module = elementwise(Type::F32, Type::F32, 4, |a, _| {
            Expr::intrinsic(Type::F32.with_lanes(4), intrinsic, vec![a])
        });
        batch.push(case(
            module.clone(),
            vec![
                typed(floats.clone(), 4),
                typed(floats.clone(), 4),
                typed(vec![0; 4 * n], 4),
            ],
            vec![],
        ));
    }
    let module = elementwise(Type::F32, Type::F32, 4, |a, b| {
        Expr::intrinsic(
            Type::F32.with_lanes(4),
            Intrinsic::Pow,
            vec![
                Expr::intrinsic(Type::F32.with_lanes(4), Intrinsic::Abs, vec![a]),
                b,
            ],
        )
    });
    batch.push(case(
        module.clone(),
        vec![
            typed(floats.clone(), 4),
            typed(floats, 4),
            typed(vec![0; 4 * n], 4),
        ],
        vec![],
    ));
    // f32 lerp with a float weight is computed as whole vectors (4 and 8
    // lanes); each lane must equal the scalar expansion bit for bit.
    for lanes in [4, 8] {
        let module = elementwise(Type::F32, Type::F32, lanes, |a, b| {
            let w = Expr::mul(b.clone(), Expr::broadcast(Expr::f32(0.37), lanes));
            Expr::intrinsic(Type::F32.with_lanes(lanes), Intrinsic::Lerp, vec![a, b, w])
        });
        let values: Vec<u8> = (0..n)
            .flat_map(|k| ((k as f32) * 0.77 - 5.3).to_le_bytes())
            .collect();
        batch.push(case(
            module.clone(),
            vec![
                typed(values.clone(), 4),
                typed(values.iter().rev().copied().collect(), 4),
                typed(vec![0; 4 * n], 4),
            ],
            vec![],
        ));
    }
    for ty in [Type::U8, Type::I16, Type::U32, Type::I32] {
        let lanes = 4;
        let module = elementwise(ty, ty, lanes, |a, b| {
            let w = Expr::cast(Type::U8, Expr::binary(BinOp::BitXor, a.clone(), b.clone()));
            Expr::intrinsic(ty.with_lanes(lanes), Intrinsic::Lerp, vec![a, b, w])
        });
        let bytes = n * ty.bytes();
        batch.push(case(
            module.clone(),
            vec![
                typed(random_bytes(bytes, 61), ty.bytes()),
                typed(random_bytes(bytes, 62), ty.bytes()),
                typed(vec![0; bytes], ty.bytes()),
            ],
            vec![],
        ));
    }
    check_cases(&batch);
}

/// Unsigned division by every constant up to 40 and a sample above, over
/// every 16-bit value: the multiply-by-magic-number path must be exact.
#[test]
fn unsigned_division_by_constants_is_exact_for_every_input() {
    let all_u16: Vec<u8> = (0..=u16::MAX).flat_map(|v| v.to_le_bytes()).collect();
    let all_u8: Vec<u8> = (0..=255u8).collect();
    let mut divisors: Vec<i64> = (1..=40).collect();
    divisors.extend([
        49, 63, 100, 127, 129, 255, 641, 1000, 4097, 10007, 32767, 32768, 40000, 65535,
    ]);
    let mut batch = Vec::new();
    for &c in &divisors {
        let n = all_u16.len();
        batch.push(case(
            divmod_const(Type::U16, c, 16),
            vec![
                typed(all_u16.clone(), 2),
                typed(vec![0; n], 2),
                typed(vec![0; n], 2),
            ],
            vec![],
        ));
        if c < 256 {
            batch.push(case(
                divmod_const(Type::U8, c, 16),
                vec![typed(all_u8.clone(), 1), zeros(256), zeros(256)],
                vec![],
            ));
        }
    }
    check_cases(&batch);
}

/// Scalar code computes each stored lane by itself: a vector `let` whose
/// body mixes lanes binds every lane of it that the lane reads (random
/// schedule 229 of box_blur, compiled without SIMD, met an unbound
/// `cse19#0`).
#[test]
fn lets_read_across_lanes_are_bound_for_each_lane() {
    let a = random_bytes(128, 29);
    let out = check_against_reference(
        &lets_read_across_lanes(),
        &[typed(a.clone(), 1), zeros(128)],
        &[],
    );
    for i in 0..64 {
        assert_eq!(
            out[1][2 * i],
            a[i].wrapping_add(a[64 + i]),
            "lane {i}: v + w"
        );
        assert_eq!(
            out[1][2 * i + 1],
            a[i].wrapping_sub(a[64 + i]),
            "lane {i}: v - w"
        );
    }
}

#[test]
fn interleaving_shuffle_is_a_dense_store() {
    let module = interleave_shuffle();
    let wat = wasmprinter::print_bytes(compile(&module, &SIMD).unwrap().bytes).unwrap();
    // A tree of unpacks: bytes of the planes zipped in pairs, then
    // 16-bit pairs of those zipped.
    let zips = [
        "i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23",
        "i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31",
        "i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23",
        "i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31",
    ];
    assert_eq!(wat.matches("i8x16.shuffle").count(), 8, "{wat}");
    for zip in zips {
        assert_eq!(wat.matches(zip).count(), 2, "{zip}\n{wat}");
    }
    assert_eq!(wat.matches("v128.store").count(), 4);
    assert!(!wat.contains("extract_lane"));
    let planes = random_bytes(4 * 64, 12);
    let out = check_against_reference(&module, &[typed(planes.clone(), 1), zeros(4 * 64)], &[]);
    for x in 0..64 {
        for c in 0..4 {
            assert_eq!(out[1][4 * x + c], planes[c * 64 + x]);
        }
    }
}

/// Two and four planes of 8-, 16- and 32-bit lanes, one and two registers
/// of each per iteration, interleave as the reference does (and as the
/// layout says: element `i` of the output is element `i / k` of plane
/// `i % k`), with one shuffle per output register for pairs and two for
/// fours, no lane extracts.
#[test]
fn planes_of_every_lane_width_interleave_by_unpacking() {
    let mut batch = Vec::new();
    let mut shapes = Vec::new();
    for (ty, elem) in [
        (Type::U8, 1usize),
        (Type::U16, 2),
        (Type::F32, 4),
        (Type::I32, 4),
    ] {
        for k in [2usize, 4] {
            for registers in [1usize, 2] {
                let lanes = 16 / elem * registers;
                let module = interleave_planes(ty, k as u32, lanes as u16);
                let wat = wasmprinter::print_bytes(compile(&module, &SIMD).unwrap().bytes).unwrap();
                let shuffles_per_output = if k == 2 { 1 } else { 2 };
                assert_eq!(
                    wat.matches("i8x16.shuffle").count(),
                    k * registers * shuffles_per_output,
                    "{ty} x {k}, {registers} register(s):\n{wat}"
                );
                assert!(!wat.contains("extract_lane"), "{wat}");
                // Three iterations of the vector loop.
                let elements = 3 * k * lanes;
                let planes = random_bytes(elements * elem, 40 + k as u64);
                batch.push(case(
                    module,
                    vec![typed(planes, elem), typed(vec![0; elements * elem], elem)],
                    vec![],
                ));
                shapes.push((elem, k));
            }
        }
    }
    // Random f32 bits may be NaNs; outputs compare as bytes.
    for (out, (elem, k)) in check_cases(&batch).iter().zip(shapes) {
        assert_interleaved(out, elem, k);
    }
}

/// `out[1]` holds the `k` planes of `out[0]` (`elem`-byte elements)
/// interleaved: element `i` is element `i / k` of plane `i % k`.
fn assert_interleaved(out: &[Vec<u8>], elem: usize, k: usize) {
    let n = out[1].len() / elem / k;
    for i in 0..n * k {
        let from = (i % k) * n + i / k;
        assert_eq!(
            out[1][i * elem..(i + 1) * elem],
            out[0][from * elem..(from + 1) * elem],
            "element {i} of {k} planes of {elem}-byte elements"
        );
    }
}

/// Three planes of u8 or u16 interleave (RGB) as the layout says, each
/// output register put together from its three sources by swizzles and
/// ors, with no two-register shuffles.
#[test]
fn rgb_planes_interleave_by_swizzles() {
    let mut batch = Vec::new();
    for (ty, elem, lanes) in [
        (Type::U8, 1usize, 16u16),
        (Type::U8, 1, 32),
        (Type::U16, 2, 8),
    ] {
        let module = interleave_planes(ty, 3, lanes);
        let wat = wasmprinter::print_bytes(compile(&module, &SIMD).unwrap().bytes).unwrap();
        assert!(!wat.contains("i8x16.shuffle"), "{ty}:\n{wat}");
        assert!(wat.contains("i8x16.swizzle"), "{ty}:\n{wat}");
        let elements = 3 * 3 * lanes as usize;
        batch.push(case(
            module,
            vec![
                typed(random_bytes(elements * elem, 60), elem),
                typed(vec![0; elements * elem], elem),
            ],
            vec![],
        ));
    }
    for (out, elem) in check_cases(&batch).iter().zip([1, 1, 2]) {
        assert_interleaved(out, elem, 3);
    }
}

/// Vector and scalar lets (statement and expression), bool buffers,
/// if/else, and a parallel loop capturing an f32 parameter.
#[test]
fn lets_bools_branches_and_captures() {
    use argent_ir::{BufferRole, ForKind, Stmt};
    let lanes = 16;
    let idx = dense(x() * lanes as i64, lanes);
    let a = Expr::load(Type::U8, "a", idx.clone());
    let b = Expr::load(Type::U8, "b", idx.clone());
    let v = Expr::var(Type::U8.with_lanes(lanes), "v");
    let scale = Expr::var(Type::F32, "scale");
    let lt = Expr::lt(a.clone(), b.clone());
    let body = for_loop(
        "x",
        Expr::i32(0),
        Expr::i32(4),
        ForKind::Parallel,
        Stmt::LetStmt {
            name: "v".into(),
            value: Expr::add(a.clone(), b.clone()),
            body: Box::new(Stmt::Block(vec![
                store("flags", idx.clone(), lt.clone()),
                store(
                    "out",
                    idx.clone(),
                    Expr::select(
                        Expr::load(Type::BOOL, "flags", idx.clone()),
                        Expr::let_in(
                            "w",
                            Expr::binary(
                                BinOp::Shr,
                                v.clone(),
                                Expr::broadcast(Expr::int(Type::U8, 1), lanes),
                            ),
                            Expr::var(Type::U8.with_lanes(lanes), "w") * 3,
                        ),
                        Expr::saturating_cast(
                            Type::U8,
                            Expr::mul(
                                Expr::cast(Type::F32, v.clone()),
                                Expr::broadcast(scale.clone(), lanes),
                            ),
                        ),
                    ),
                ),
                Stmt::IfThenElse {
                    cond: Expr::lt(x(), Expr::i32(2)),
                    then: Box::new(store("scalar", x(), Expr::load(Type::U8, "a", x()) + 1)),
                    otherwise: Some(Box::new(store(
                        "scalar",
                        x(),
                        Expr::cast(Type::U8, scale.clone()),
                    ))),
                },
            ])),
        },
    );
    let module = module(
        vec![
            buffer("a", Type::U8, 1, BufferRole::Input),
            buffer("b", Type::U8, 1, BufferRole::Input),
            buffer("flags", Type::BOOL, 1, BufferRole::Output),
            buffer("out", Type::U8, 1, BufferRole::Output),
            buffer("scalar", Type::U8, 1, BufferRole::Output),
        ],
        vec![param("scale", Type::F32)],
        body,
    );
    let bufs = vec![
        typed(random_bytes(64, 90), 1),
        typed(random_bytes(64, 91), 1),
        zeros(64),
        zeros(64),
        zeros(4),
    ];
    let params = [V::F(1.7)];
    let out = check_against_reference(&module, &bufs, &params);
    // Bools are stored as 0/1 bytes.
    assert!(out[2].iter().all(|&f| f <= 1) && out[2].contains(&1));
    let expected = reference(&module, &bufs, &params).unwrap();
    let threaded = compile(
        &module,
        &CodegenOptions {
            simd: true,
            threads: true,
        },
    )
    .unwrap();
    assert_eq!(
        threaded.abi.tasks[0].captures,
        ["scale", "a", "b", "flags", "out", "scalar"]
    );
    for threads in [1, 2, 4] {
        let run = run_node(&threaded, &bufs, &[1.7f32.to_bits()], threads, 2);
        assert_eq!(run.status, 0);
        assert_eq!(run.buffers, expected);
    }
}

/// A parallel loop whose iterations allocate nested scratch buffers of
/// `scratch` and `2 * scratch` bytes, write every 16th byte of the first
/// (so iterations on different threads overlap in time) and touch the
/// last bytes of both.
fn parallel_nested_scratch() -> Module {
    use argent_ir::{BufferRole, ForKind, Stmt};
    let y = Expr::var_i32("y");
    let scratch = Expr::var_i32("scratch");
    let last_a = scratch.clone() - 1;
    let last_b = scratch.clone() * 2 - 1;
    let a = |i: Expr| Expr::load(Type::U8, "a", i);
    let b = |i: Expr| Expr::load(Type::U8, "b", i);
    let inner = Stmt::Allocate {
        buffer: "b".into(),
        ty: Type::U8,
        size: scratch.clone() * 2,
        body: Box::new(Stmt::Block(vec![
            store("b", Expr::i32(0), a(Expr::i32(0)) + a(last_a.clone())),
            store("b", last_b.clone(), b(Expr::i32(0)) + 1),
            store("out", y.clone(), b(Expr::i32(0)) + b(last_b.clone())),
        ])),
    };
    let body = for_loop(
        "y",
        Expr::i32(0),
        Expr::var_i32("out.extent.0"),
        ForKind::Parallel,
        Stmt::Allocate {
            buffer: "a".into(),
            ty: Type::U8,
            size: scratch.clone(),
            body: Box::new(Stmt::Block(vec![
                for_loop(
                    "x",
                    Expr::i32(0),
                    Expr::div(scratch.clone(), Expr::i32(16)),
                    ForKind::Serial,
                    store(
                        "a",
                        x() * 16,
                        Expr::load(Type::U8, "in", y.clone()) + Expr::cast(Type::U8, x()),
                    ),
                ),
                store("a", last_a, Expr::load(Type::U8, "in", y.clone()) + 1),
                inner,
            ])),
        },
    );
    module(
        vec![
            buffer("in", Type::U8, 1, BufferRole::Input),
            buffer("out", Type::U8, 1, BufferRole::Output),
        ],
        vec![param("scratch", Type::I32)],
        body,
    )
}

/// Every thread allocates from its own arena, so the 64 iterations of a
/// parallel loop reuse the same memory (together they would need 48 MiB,
/// three times the reference runtime's initial 16 MiB memory) and
/// thousands of runs leave the memory as the first run left it.
#[test]
fn parallel_iterations_reuse_scratch_memory_across_runs() {
    let module = parallel_nested_scratch();
    let scratch = 256 * 1024;
    let bufs = [typed(random_bytes(64, 5), 1), zeros(64)];
    let expected = reference(&module, &bufs, &[V::I(scratch)]).unwrap();
    let initial_bytes = 256 * 65536;
    for simd in [false, true] {
        let compiled = compile(
            &module,
            &CodegenOptions {
                simd,
                threads: true,
            },
        )
        .unwrap();
        for threads in [1, 2, 4] {
            let out = run_node(&compiled, &bufs, &[scratch as u32], threads, 2000);
            assert_eq!(out.status, 0);
            assert_eq!(out.buffers, expected, "simd {simd}, {threads} threads");
            assert_eq!(out.heap.0, out.heap.2, "heap top restored");
            assert_eq!(out.pages.0, out.pages.1, "memory did not grow across runs");
            assert_eq!(
                out.pages.1 as u64 * 65536,
                initial_bytes,
                "iterations reused their scratch memory ({threads} threads)"
            );
        }
    }
}

/// A parameter's declared range is checked by the module itself before
/// anything runs, so code generation may rely on it: the histogram-style
/// cell index below is shown to lie in `[0.5, 50.5]` and truncates with
/// the plain `i32.trunc_f32_s`. A value outside the range, or NaN, fails
/// that check by name instead of trapping, and the range's own ends run.
#[test]
fn parameters_outside_their_declared_range_fail_the_modules_own_check() {
    let source = "input u8 in(x)\n\
                  param f32 s = 0.1 in 0.02 .. 1.0\n\
                  cell(x) = i32(clamp(f32(in(x)) / 255.0, 0.0, 1.0) * (1.0 / s) + 0.5)\n\
                  output cell\n";
    let pipeline = argent_lang::compile(source).expect("the pipeline compiles");
    let module = argent_lower::lower::lower(&pipeline, &Default::default())
        .expect("it lowers")
        .module;
    let compiled = compile(&module, &CodegenOptions::default()).unwrap();
    let wat = wasmprinter::print_bytes(&compiled.bytes).unwrap();
    assert!(wat.contains("i32.trunc_f32_s"), "{wat}");
    assert!(!wat.contains("i32.trunc_sat_f32_s"), "{wat}");
    let n = 256;
    let input = BufData::one_d((0..=255).collect(), 1);
    let output = || BufData::one_d(vec![0; 4 * n], 4);
    for s in [0.02f32, 0.1, 0.7, 1.0] {
        let out = run_node(&compiled, &[input.clone(), output()], &[s.to_bits()], 0, 1);
        assert_eq!(out.status, 0, "s = {s}");
        let want = reference(&module, &[input.clone(), output()], &[V::F(s)]).unwrap();
        assert_eq!(out.buffers[1], want[1], "s = {s}");
    }
    for s in [0.01f32, 5.0, -1.0, f32::NAN, f32::INFINITY] {
        let out = run_node(&compiled, &[input.clone(), output()], &[s.to_bits()], 0, 1);
        assert!(out.status > 0, "s = {s}");
        let info = &compiled.abi.asserts[out.status as usize - 1];
        assert_eq!(info.kind, AssertKind::ParamOutOfRange { param: "s".into() });
        assert_eq!(out.error_args[0] as u32, s.to_bits());
        assert_eq!(
            out.buffers[1],
            vec![0; 4 * n],
            "output untouched for s = {s}"
        );
    }
}

/// The bounds query runs the prefix of the body without the parameter
/// checks, so it assumes no parameter ranges: the bilateral grid's query
/// with `r_sigma` far outside `0.02 .. 1.0` (its grid would have 10^30
/// cells) reports the same regions as with a valid value, without
/// trapping, while `run` with that value fails the range check.
#[test]
fn the_bounds_query_assumes_no_parameter_ranges() {
    let compiled = compile(&lowered_example("bilateral_grid"), &SIMD).unwrap();
    let (w, h) = (64, 40);
    let buffers = || {
        let image = |rows: (i32, i32)| BufData {
            bytes: vec![0; (3 * w * h) as usize],
            dims: vec![(0, w, 3), (rows.0, rows.1, 3 * w), (0, 3, 1)],
        };
        [image((0, h)), image((8, 16))]
    };
    let slots = compiled.abi.region_slots.as_ref().expect("a query");
    let regions = |r_sigma: f32| {
        let words = query_node(&compiled, &buffers(), &[r_sigma.to_bits()]);
        slots
            .iter()
            .map(|s| {
                (
                    s.dim,
                    words[s.offset as usize / 4],
                    words[s.offset as usize / 4 + 1],
                )
            })
            .collect::<Vec<_>>()
    };
    let valid = regions(0.1);
    assert_eq!(valid, regions(1e-30));
    // Rows 8..23 of the output read the grid cells around them: all rows.
    assert!(valid.contains(&(1, 0, h - 1)), "{valid:?}");
    let out = run_node(&compiled, &buffers(), &[1e-30f32.to_bits()], 0, 1);
    let info = &compiled.abi.asserts[out.status as usize - 1];
    assert_eq!(
        info.kind,
        AssertKind::ParamOutOfRange {
            param: "r_sigma".into()
        }
    );
}

/// `reorder_storage(c, x, y)` lays an intermediate out with the channels
/// of a pixel together: with its four channels unrolled inside a vector
/// loop over x, each group of pixels is stored as dense interleaved
/// vectors, and the consumer reads each channel with a stride of 4. Both
/// orders, on 1 and 2 rows per task, interleaved RGBA in and out, give the
/// interpreter's pixels; only the reordered one stores 32 lanes at once.
#[test]
fn reordered_storage_keeps_the_channels_of_a_pixel_together() {
    let algorithm = "input u8 in(x, y, c)\n\
        p = repeat_edge(in)\n\
        bx(x, y, c) = u16(p(x - 1, y, c)) + u16(p(x, y, c)) + u16(p(x + 1, y, c))\n\
        out(x, y, c) = u8((bx(x, y - 1, c) + bx(x, y, c) + bx(x, y + 1, c)) / 9)\n\
        output out\n";
    let (w, h) = (45, 7);
    let rgba = |seed: u64| BufData {
        bytes: random_bytes((4 * w * h) as usize, seed),
        dims: vec![(0, w, 4), (0, h, 4 * w), (0, 4, 1)],
    };
    for storage in ["", ".reorder_storage(c, x, y)"] {
        for rows in [1, 2] {
            let source = format!(
                "{algorithm}schedule {{\n  out.bound(c, 0, 4).reorder(c, x, y).unroll(c).vectorize(x, 8).parallel(y, {rows})\n  bx.bound(c, 0, 4).compute_at(out, y){storage}.reorder(c, x, y).unroll(c).vectorize(x, 8)\n}}\n"
            );
            let module = lowered_source(&source);
            let printed = module.body.to_string();
            let dense_groups = printed.split("bx[ramp(").skip(1).any(|rest| {
                rest.split(']')
                    .next()
                    .is_some_and(|i| i.ends_with(", 1, 32)"))
            });
            assert_eq!(dense_groups, !storage.is_empty(), "{source}{printed}");
            check_cases(&[case(module, vec![rgba(11), rgba(0)], vec![])]);
        }
    }
}

/// A float sum split by `rfactor` into column sums, the intermediate
/// scheduled by name (columns adjacent in memory, 8 per vector, rows of
/// the image in order), runs as the lowered program says bit for bit
/// (SIMD and scalar), and stays within the rounding bound of the exact
/// sum (n * 2^-23 times the sum of the terms' magnitudes; see
/// docs/language.md). The integer sum regrouped alike is exact.
#[test]
fn float_sums_regrouped_by_rfactor_run_as_vectors() {
    let module = lowered_source(
        "input u8 img(x, y)\n\
         rdom r = [0 .. img.width, 0 .. img.height]\n\
         total(i) = f32(0)\n\
         total(0) += f32(img(r.x, r.y)) * 0.37 - 20.0\n\
         count(i) = u32(0)\n\
         count(0) += u32(img(r.x, r.y))\n\
         output total, count\n\
         schedule {\n\
           total.update(0).rfactor(r.x, u)\n\
           total_intm.reorder_storage(u, i).update(0).reorder(u, r.y).vectorize(u, 8)\n\
           count.update(0).rfactor(r.x, u)\n\
           count_intm.reorder_storage(u, i).update(0).reorder(u, r.y).vectorize(u, 16)\n\
         }\n",
    );
    let printed = module.body.to_string();
    assert!(printed.contains("total_intm[ramp("), "{printed}");
    let (w, h) = (53, 19);
    let image = gray(w, h, 21);
    let pixels = image.bytes.clone();
    let out = check_against_reference(
        &module,
        &[image, typed(vec![0; 4], 4), typed(vec![0; 4], 4)],
        &[],
    );
    let total = f32::from_le_bytes(out[1][..4].try_into().unwrap());
    let count = u32::from_le_bytes(out[2][..4].try_into().unwrap());
    let terms: Vec<f64> = pixels
        .iter()
        .map(|&p| f64::from(f32::from(p) * 0.37 - 20.0))
        .collect();
    let exact: f64 = terms.iter().sum();
    let bound =
        terms.len() as f64 * f64::from(f32::EPSILON) * terms.iter().map(|t| t.abs()).sum::<f64>();
    assert!(
        (f64::from(total) - exact).abs() <= bound,
        "{total} against {exact}, bound {bound}"
    );
    assert_eq!(count, pixels.iter().map(|&p| u32::from(p)).sum::<u32>());
}

/// `specialize`: one module holds a version per condition and chooses on
/// entry. Under `mode == 1` the select folds away (the parameter is a
/// constant there); images at least 64 wide get parallel strips. Every
/// combination runs, SIMD and scalar, and gives the algorithm's values.
#[test]
fn specialized_versions_run_as_their_conditions_say() {
    let module = lowered_source(
        "input u8 img(x, y)\n\
         param i32 mode = 0 in 0 .. 2\n\
         out(x, y) = select(mode == 1, img(x, y) / 2, img(x, y) + u8(mode))\n\
         output out\n\
         schedule {\n\
           out.vectorize(x, 16).specialize(mode == 1).parallel(y)\n\
           out.specialize(img.width >= 64).split(y, yo, yi, 4).parallel(yo).unroll(yi, 2)\n\
           out.unroll(y, 2)\n\
         }\n",
    );
    argent_lower::verify::verify(
        &module.body,
        &module.buffers,
        &module.params,
        argent_lower::verify::Stage::Vectorized,
    )
    .expect("the module verifies");
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    for (w, h) in [(70, 9), (40, 5)] {
        for mode in 0..=2i64 {
            let img = gray(w, h, 7 + w as u64);
            let want: Vec<u8> = img
                .bytes
                .iter()
                .map(|&v| {
                    if mode == 1 {
                        v / 2
                    } else {
                        v.wrapping_add(mode as u8)
                    }
                })
                .collect();
            let out = BufData {
                bytes: vec![0; (w * h) as usize],
                dims: img.dims.clone(),
            };
            cases.push(case(module.clone(), vec![img, out], vec![V::I(mode)]));
            expected.push(want);
        }
    }
    let outputs = check_cases(&cases);
    for (k, (got, want)) in outputs.iter().zip(&expected).enumerate() {
        assert_eq!(&got[1], want, "case {k}");
    }
}

/// The bounds query of a specialised pipeline makes the run's choice of
/// version: under `k == 1` the select folds and only the row above is
/// read; the general version reads the rows above and below.
#[test]
fn bounds_query_of_a_specialized_pipeline_follows_its_version() {
    let module = lowered_source(
        "input u8 in(x, y)\n\
         param i32 k = 0 in 0 .. 1\n\
         p = repeat_edge(in)\n\
         out(x, y) = select(k == 1, p(x, y - 1), p(x, y + 1))\n\
         output out\n\
         schedule {\n\
           out.specialize(k == 1).vectorize(x, 16)\n\
         }\n",
    );
    let (w, h) = (64, 50);
    for options in [SIMD, SCALAR] {
        let compiled = compile(&module, &options).unwrap();
        let slots = compiled
            .abi
            .region_slots
            .clone()
            .expect("a specialised pipeline has a query");
        for (k, (first, rows)) in [(0, (10, 5)), (1, (10, 5)), (1, (0, 3)), (0, (47, 3))] {
            let input = BufData {
                bytes: vec![],
                dims: vec![(0, w, 1), (0, h, w)],
            };
            let strip = BufData {
                bytes: vec![],
                dims: vec![(0, w, 1), (first, rows, w)],
            };
            let words = query_node(&compiled, &[input, strip], &[k as u32]);
            let slot = slots.iter().find(|s| s.dim == 1).unwrap();
            let at = slot.offset as usize / 4;
            let last = if k == 1 {
                first + rows - 2
            } else {
                first + rows
            };
            assert_eq!(
                (words[at], words[at + 1]),
                ((first - 1).max(0), last.clamp(0, h - 1)),
                "k = {k}, rows {first}+{rows}"
            );
        }
    }
}

/// A vector attempt that turns out unsupported is undone with the values
/// it cached: random program 110514 (RGB i8 with a padding byte per pixel,
/// 4 lanes, channels unrolled, an `i16` division per lane) computed a
/// lane's index into a local inside a vector form it then abandoned, and
/// the lane-by-lane code read that local where nothing had set it: wrong
/// addresses, and a trap.
#[test]
fn abandoned_vector_attempts_leave_no_cached_values_behind() {
    let module = lowered_source(
        "input i8 in(x, y, c)\n\
         b = mirror_image(in)\n\
         f0(x, y, c) = i16(clamp(max(i16(u16(b(x+1, y-1, 0))), sat_i16((i32(i16(b(x-2, y-1, 0))) * i32((i16(b(x-1, y+1, c)) / i16(-32766)))))), i16(32214), i16(32767)))\n\
         output f0\n\
         schedule {\n\
           f0.bound(c, 0, 3).reorder(c, x, y).unroll(c).vectorize(x, 4)\n\
         }\n",
    );
    // Padded pixels: 4 elements per pixel, 3 of them channels.
    let padded = |w: i32, h: i32, min: (i32, i32), elem: usize, seed: u64| BufData {
        bytes: random_bytes((w * h * 4) as usize * elem, seed),
        dims: vec![(min.0, w, 4), (min.1, h, 4 * w), (0, 3, 1)],
    };
    let input = padded(32, 14, (2, -2), 1, 11);
    let output = padded(37, 11, (0, 0), 2, 12);
    check_against_reference(&module, &[input, output], &[]);
}
