//! The interpreter against independent plain-Rust implementations of the
//! same algorithms on a real photograph, compared bit for bit.

mod common;

use argent_interp::{Buffer, Value, realize};
use argent_ir::Type;
use common::*;

fn clamp_at(v: i64, n: i64) -> usize {
    v.clamp(0, n - 1) as usize
}

#[test]
fn box_blur_u16_matches_plain_loops() {
    let (w, h, rgb) = load_photo();
    // Spread values over the whole u16 range so the sums wrap.
    let input = channel_buffer(w, h, &rgb, Type::U16, |v, x, _| {
        v as i64 * 257 + (x & 7) * 13
    });
    let out = realize(&box_blur(), &[("in", &input)], &[], &[(0, w), (0, h)]).unwrap();
    let get = |x: i64, y: i64| -> u16 {
        input
            .get(&[clamp_at(x, w) as i64, clamp_at(y, h) as i64])
            .unwrap()
            .as_i64() as u16
    };
    let blur_x = |x: i64, y: i64| {
        get(x - 1, y)
            .wrapping_add(get(x, y))
            .wrapping_add(get(x + 1, y))
            / 3
    };
    let mut mismatches = 0;
    let mut wrapped = false;
    for y in 0..h {
        for x in 0..w {
            let expected = blur_x(x, y - 1)
                .wrapping_add(blur_x(x, y))
                .wrapping_add(blur_x(x, y + 1))
                / 3;
            wrapped |= get(x - 1, y) as u32 + get(x, y) as u32 + get(x + 1, y) as u32 > 65535;
            if out[0].get(&[x, y]) != Some(Value::Int(expected as i64)) {
                mismatches += 1;
            }
        }
    }
    assert_eq!(mismatches, 0);
    assert!(wrapped, "the test image should exercise wrapping");
}

#[test]
fn unsharp_mask_f32_matches_plain_loops_interleaved_and_planar() {
    let (w, h, rgb) = load_photo();
    let interleaved = Buffer::from_interleaved_u8(w, h, 3, &rgb).unwrap();
    let mut planar = Buffer::new(Type::U8, &[w, h, 3]);
    planar.fill(|p| interleaved.get(p).unwrap());
    let amount = 2.25f32;
    let params = [("amount", Value::Float(amount))];
    let region = [(0, w), (0, h), (0, 3)];
    let out = realize(&unsharp(), &[("photo", &interleaved)], &params, &region).unwrap();
    let out_planar = realize(&unsharp(), &[("photo", &planar)], &params, &region).unwrap();
    assert!(out[0].same_contents(&out_planar[0]));

    let f = |x: i64, y: i64, c: usize| {
        rgb[(clamp_at(y, h) * w as usize + clamp_at(x, w)) * 3 + c] as f32
    };
    let blur_x =
        |x: i64, y: i64, c: usize| (f(x - 1, y, c) + 2.0 * f(x, y, c) + f(x + 1, y, c)) / 4.0;
    let mut mismatches = 0;
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                let blur =
                    (blur_x(x, y - 1, c) + 2.0 * blur_x(x, y, c) + blur_x(x, y + 1, c)) / 4.0;
                let sharp = f(x, y, c) + amount * (f(x, y, c) - blur);
                let expected = (sharp + 0.5) as u8;
                if out[0].get(&[x, y, c as i64]) != Some(Value::Int(expected as i64)) {
                    if mismatches < 5 {
                        eprintln!(
                            "({x}, {y}, {c}): {:?} vs {expected} (sharp {sharp}, blur {blur}, f {})",
                            out[0].get(&[x, y, c as i64]),
                            f(x, y, c)
                        );
                    }
                    mismatches += 1;
                }
            }
        }
    }
    assert_eq!(mismatches, 0);
}

#[test]
fn histogram_equalisation_matches_plain_loops() {
    let (w, h, rgb) = load_photo();
    let img = channel_buffer(w, h, &rgb, Type::U8, |v, _, _| v as i64);
    let out = realize(
        &histogram_equalisation(),
        &[("img", &img)],
        &[],
        &[(0, w), (0, h)],
    )
    .unwrap();
    let red = |x: i64, y: i64| rgb[((y * w + x) * 3) as usize];
    let mut hist = [0u32; 256];
    for y in 0..h {
        for x in 0..w {
            hist[red(x, y) as usize] += 1;
        }
    }
    let mut cdf = [0u32; 256];
    let mut running = 0;
    for i in 0..256 {
        running += hist[i];
        cdf[i] = running;
    }
    let total = (w * h) as u32;
    let mut mismatches = 0;
    for y in 0..h {
        for x in 0..w {
            let expected = (cdf[red(x, y) as usize] * 255 / total) as u8;
            if out[0].get(&[x, y]) != Some(Value::Int(expected as i64)) {
                mismatches += 1;
            }
        }
    }
    assert_eq!(mismatches, 0);
}
