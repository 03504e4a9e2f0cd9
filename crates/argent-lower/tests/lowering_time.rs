//! Lowering time of the examples (a benchmark, not a test): run with
//! `cargo test --release -p argent-lower --test lowering_time -- --ignored --nocapture`.

mod common;

use argent_ir::Pipeline;
use argent_lower::{LowerOptions, lower};
use std::time::Instant;

fn time(name: &str, p: &Pipeline) {
    for core_only in [true, false] {
        let options = LowerOptions {
            core_only,
            ..Default::default()
        };
        let runs = 5;
        let start = Instant::now();
        let mut outcome = String::new();
        for _ in 0..runs {
            outcome = match lower(p, &options) {
                Ok(_) => "ok".into(),
                Err(e) => format!("error: {e}"),
            };
        }
        let what = if core_only {
            "core passes"
        } else {
            "all passes"
        };
        println!(
            "{name}: {} funcs, {what}: {:?} per lowering ({outcome})",
            p.funcs.len(),
            start.elapsed() / runs
        );
    }
}

#[test]
#[ignore]
fn lowering_time() {
    time(
        "paper blur (sliding window)",
        &common::with_schedule(common::blur(), "blur_x.store_root().compute_at(blur_y, y)"),
    );
    time(
        "paper blur (tiles)",
        &common::with_schedule(
            common::blur(),
            "blur_y.tile(x, y, xo, yo, xi, yi, 8, 8)\nblur_x.compute_at(blur_y, xo)",
        ),
    );
    for name in [
        "box_blur.ag",
        "gaussian5x5.ag",
        "harris.ag",
        "local_laplacian.ag",
        "camera_pipe.ag",
    ] {
        let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(p) = argent_lang::compile(&src) else {
            continue;
        };
        time(name, &p);
    }
}
