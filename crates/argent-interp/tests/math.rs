//! Accuracy of the transcendental expansions in `argent_ir::math`, as the
//! interpreter evaluates them, measured against f64 `std` functions.

mod common;

use argent_interp::{Buffer, Value, realize};
use argent_ir::{Expr, Intrinsic, Type};
use common::*;

/// Evaluate `intrinsic` on each pair `(a, b)` through a pipeline.
fn evaluate(intrinsic: Intrinsic, args: &[(f32, f32)]) -> Vec<f32> {
    let n = args.len() as i64;
    let mut a = Buffer::new(Type::F32, &[n]);
    let mut b = Buffer::new(Type::F32, &[n]);
    for (i, (x, y)) in args.iter().enumerate() {
        a.set(&[i as i64], Value::Float(*x));
        b.set(&[i as i64], Value::Float(*y));
    }
    let read = |name: &str| Expr::call_input(Type::F32, name, vec![x()]);
    let call_args = match intrinsic {
        Intrinsic::Pow | Intrinsic::Atan2 => vec![read("a"), read("b")],
        _ => vec![read("a")],
    };
    let p = pipeline(
        vec![input("a", Type::F32, &["x"]), input("b", Type::F32, &["x"])],
        vec![],
        vec![func(
            "out",
            Type::F32,
            &["x"],
            Expr::intrinsic(Type::F32, intrinsic, call_args),
        )],
        &["out"],
    );
    let out = realize(&p, &[("a", &a), ("b", &b)], &[], &[(0, n)]).unwrap();
    (0..n).map(|i| out[0].get(&[i]).unwrap().as_f32()).collect()
}

/// Deterministic samples uniform in `[lo, hi]`.
fn samples(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            (lo + (hi - lo) * u) as f32
        })
        .collect()
}

/// Error in units of the last place of the correctly rounded result.
fn ulps(got: f32, exact: f64) -> f64 {
    let rounded = exact as f32;
    let ulp = (f32::from_bits(rounded.abs().to_bits() + 1) - rounded.abs()) as f64;
    (got as f64 - exact).abs() / ulp
}

fn max_by(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, f64::max)
}

#[test]
fn exp_is_within_2_ulp() {
    let xs = samples(100_000, -87.0, 88.0, 1);
    let got = evaluate(
        Intrinsic::Exp,
        &xs.iter().map(|&x| (x, 0.0)).collect::<Vec<_>>(),
    );
    let err = max_by(
        xs.iter()
            .zip(&got)
            .map(|(&x, &g)| ulps(g, (x as f64).exp())),
    );
    eprintln!("exp: max error {err:.2} ulp");
    assert!(err <= 2.0, "{err}");
    let special = evaluate(
        Intrinsic::Exp,
        &[
            (f32::NAN, 0.0),
            (f32::INFINITY, 0.0),
            (f32::NEG_INFINITY, 0.0),
            (0.0, 0.0),
            (100.0, 0.0),
            (-95.0, 0.0),
        ],
    );
    assert!(special[0].is_nan());
    assert_eq!(&special[1..5], &[f32::INFINITY, 0.0, 1.0, f32::INFINITY]);
    // A subnormal result: exp(-95) = 5.5e-42.
    assert!(ulps(special[5], (-95f64).exp()) <= 2.0);
}

#[test]
fn log_is_within_2_ulp() {
    let mut xs: Vec<f32> = samples(100_000, -126.0, 127.9, 2)
        .iter()
        .map(|&e| (e as f64).exp2() as f32)
        .collect();
    xs.extend(samples(20_000, 0.5, 2.0, 3));
    xs.extend([1e-40f32, 1.0, 2.0, 0.75]);
    let got = evaluate(
        Intrinsic::Log,
        &xs.iter().map(|&x| (x, 0.0)).collect::<Vec<_>>(),
    );
    // Near 1 the result is tiny, so measure relative to max(|result|, 2^-24).
    let err = max_by(xs.iter().zip(&got).map(|(&x, &g)| {
        let exact = (x as f64).ln();
        if exact.abs() < 1e-3 {
            (g as f64 - exact).abs() / 2f64.powi(-24) * 1e-3
        } else {
            ulps(g, exact)
        }
    }));
    eprintln!("log: max error {err:.2} ulp");
    assert!(err <= 2.0, "{err}");
    let special = evaluate(
        Intrinsic::Log,
        &[
            (0.0, 0.0),
            (-1.0, 0.0),
            (f32::INFINITY, 0.0),
            (f32::NAN, 0.0),
        ],
    );
    assert_eq!(special[0], f32::NEG_INFINITY);
    assert!(special[1].is_nan() && special[3].is_nan());
    assert_eq!(special[2], f32::INFINITY);
}

#[test]
fn sin_cos_tan_are_accurate() {
    let xs = samples(100_000, -100.0, 100.0, 4);
    let pairs: Vec<(f32, f32)> = xs.iter().map(|&x| (x, 0.0)).collect();
    let sin = evaluate(Intrinsic::Sin, &pairs);
    let cos = evaluate(Intrinsic::Cos, &pairs);
    let sin_err = max_by(
        xs.iter()
            .zip(&sin)
            .map(|(&x, &g)| (g as f64 - (x as f64).sin()).abs()),
    );
    let cos_err = max_by(
        xs.iter()
            .zip(&cos)
            .map(|(&x, &g)| (g as f64 - (x as f64).cos()).abs()),
    );
    let ts = samples(50_000, -1.5, 1.5, 5);
    let tan = evaluate(
        Intrinsic::Tan,
        &ts.iter().map(|&x| (x, 0.0)).collect::<Vec<_>>(),
    );
    let tan_err = max_by(
        ts.iter()
            .zip(&tan)
            .map(|(&x, &g)| ulps(g, (x as f64).tan())),
    );
    eprintln!(
        "sin: max abs error {sin_err:.2e}, cos: {cos_err:.2e}, tan on [-1.5, 1.5]: {tan_err:.2} ulp"
    );
    assert!(sin_err < 2e-7 && cos_err < 2e-7);
    assert!(tan_err <= 4.0);
}

#[test]
fn atan2_is_accurate_in_every_quadrant() {
    let ys = samples(100_000, -10.0, 10.0, 6);
    let xs = samples(100_000, -10.0, 10.0, 7);
    let pairs: Vec<(f32, f32)> = ys.iter().zip(&xs).map(|(&y, &x)| (y, x)).collect();
    let got = evaluate(Intrinsic::Atan2, &pairs);
    let err = max_by(
        pairs
            .iter()
            .zip(&got)
            .map(|(&(y, x), &g)| (g as f64 - (y as f64).atan2(x as f64)).abs()),
    );
    eprintln!("atan2: max abs error {err:.2e}");
    assert!(err < 3e-7, "{err}");
    let special = evaluate(
        Intrinsic::Atan2,
        &[
            (0.0, 0.0),
            (0.0, -0.0),
            (-0.0, -1.0),
            (1.0, 0.0),
            (f32::INFINITY, f32::INFINITY),
            (f32::NAN, 1.0),
        ],
    );
    let pi = std::f32::consts::PI;
    assert_eq!(&special[..5], &[0.0, pi, -pi, pi / 2.0, pi / 4.0]);
    assert!(special[5].is_nan());
}

#[test]
fn pow_error_grows_with_the_size_of_y_log_x() {
    let xs = samples(100_000, 0.001, 10.0, 8);
    let ys = samples(100_000, -10.0, 10.0, 9);
    let pairs: Vec<(f32, f32)> = xs.iter().zip(&ys).map(|(&x, &y)| (x, y)).collect();
    let got = evaluate(Intrinsic::Pow, &pairs);
    // exp(y * log(x)) turns the rounding error of y * log(x) into a
    // relative error of the result of about |y log x| * 2^-24.
    let error_below = |limit: f64| {
        max_by(pairs.iter().zip(&got).filter_map(|(&(x, y), &g)| {
            let exact = (x as f64).powf(y as f64);
            ((y as f64 * (x as f64).ln()).abs() < limit).then(|| ulps(g, exact))
        }))
    };
    let (small, large) = (error_below(8.0), error_below(80.0));
    eprintln!("pow: max error {small:.2} ulp where |y log x| < 8, {large:.2} ulp where < 80");
    assert!(small <= 12.0 && large <= 48.0, "{small} {large}");
    let special = evaluate(
        Intrinsic::Pow,
        &[
            (-2.0, 3.0),
            (-2.0, 2.0),
            (-2.0, 0.5),
            (0.0, 2.0),
            (0.0, -1.0),
            (f32::NAN, 0.0),
            (2.0, 10.0),
        ],
    );
    assert_eq!(special[0], -8.0);
    assert_eq!(special[1], 4.0);
    assert!(special[2].is_nan());
    assert_eq!(&special[3..6], &[0.0, f32::INFINITY, 1.0]);
    assert!(ulps(special[6], 1024.0) <= 2.0);
}
