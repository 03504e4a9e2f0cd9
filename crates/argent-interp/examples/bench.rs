//! Times the reference interpreter on the box blur, unsharp mask and
//! histogram equalisation pipelines over a 512x512 photo, then on every
//! `.ag` file named on the command line:
//! `cargo run --release -p argent-interp --example bench -- examples/*.ag`.

#[path = "../tests/common/mod.rs"]
mod common;

use argent_interp::{Buffer, realize};
use argent_ir::Type;
use common::*;
use std::time::Instant;

fn main() {
    let (w, h, rgb) = load_photo();
    let gray16 = channel_buffer(w, h, &rgb, Type::U16, |v, _, _| v as i64 * 257);
    let gray8 = channel_buffer(w, h, &rgb, Type::U8, |v, _, _| v as i64);
    let photo = Buffer::from_interleaved_u8(w, h, 3, &rgb).expect("photo");
    let time = |name: &str, run: &dyn Fn()| {
        let start = Instant::now();
        run();
        println!(
            "{name:<28} {w}x{h}: {:>7.1} ms",
            start.elapsed().as_secs_f64() * 1000.0
        );
    };
    time("box blur u16", &|| {
        realize(&box_blur(), &[("in", &gray16)], &[], &[(0, w), (0, h)]).expect("blur");
    });
    time("unsharp mask f32 (RGB)", &|| {
        realize(
            &unsharp(),
            &[("photo", &photo)],
            &[],
            &[(0, w), (0, h), (0, 3)],
        )
        .expect("unsharp");
    });
    time("histogram equalisation u8", &|| {
        realize(
            &histogram_equalisation(),
            &[("img", &gray8)],
            &[],
            &[(0, w), (0, h)],
        )
        .expect("histeq");
    });
    for path in std::env::args().skip(1) {
        let source = std::fs::read_to_string(&path).expect("readable pipeline");
        let pipeline = argent_lang::compile(&source).expect("a valid pipeline");
        let (result, seconds) = run_on_photo(&pipeline, w, h, &rgb);
        result.expect("the pipeline runs");
        println!("{path:<28} {w}x{h}: {:>7.1} ms", seconds * 1000.0);
    }
}
