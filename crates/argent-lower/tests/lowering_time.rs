//! Lowering time of the examples (a benchmark, not a test): run with
//! `cargo test --release -p argent-lower --test lowering_time -- --ignored --nocapture`.
//!
//! Each pipeline is lowered twice over, through the core passes only (up to
//! `checks`) and through every pass, repeating until about half a second
//! has passed so that fast examples are measured over many runs and slow
//! ones are not repeated needlessly; the fastest run is shown.

mod common;

use argent_ir::Pipeline;
use argent_lower::{LowerOptions, lower};
use std::time::{Duration, Instant};

/// The fastest of repeated lowerings with `options` (the machine is shared:
/// the minimum is what the code costs, the mean is also the neighbours'
/// load), and whether it succeeded.
fn fastest_time(p: &Pipeline, options: &LowerOptions) -> (Duration, String) {
    let budget = Duration::from_millis(500);
    let start = Instant::now();
    let mut runs = 0u32;
    let mut fastest = Duration::MAX;
    let mut outcome = String::new();
    while runs == 0 || (start.elapsed() < budget && runs < 1000) {
        let run = Instant::now();
        outcome = match lower(p, options) {
            Ok(_) => "ok".into(),
            Err(e) => format!("error: {e}"),
        };
        fastest = fastest.min(run.elapsed());
        runs += 1;
    }
    (fastest, outcome)
}

fn time(name: &str, p: &Pipeline) {
    // `LOWERING_TIME_ONLY=camera` times only the pipelines whose name
    // contains that text (for profiling one example).
    if let Ok(only) = std::env::var("LOWERING_TIME_ONLY") {
        if !name.contains(only.as_str()) {
            return;
        }
    }
    let core = LowerOptions {
        core_only: true,
        ..Default::default()
    };
    let (core_time, core_outcome) = fastest_time(p, &core);
    let (all_time, all_outcome) = fastest_time(p, &LowerOptions::default());
    println!(
        "| {name} | {} | {:.2} ms | {:.2} ms | {} |",
        p.funcs.len(),
        core_time.as_secs_f64() * 1e3,
        all_time.as_secs_f64() * 1e3,
        if core_outcome == all_outcome {
            core_outcome
        } else {
            format!("{core_outcome} / {all_outcome}")
        }
    );
}

#[test]
#[ignore]
fn lowering_time() {
    println!("| pipeline | funcs | core passes | all passes | outcome |");
    println!("|---|---|---|---|---|");
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
    let dir = format!("{}/../../examples", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".ag"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        let Ok(src) = std::fs::read_to_string(format!("{dir}/{name}")) else {
            continue;
        };
        match argent_lang::compile(&src) {
            Ok(p) => time(&name, &p),
            Err(e) => println!("| {name} | - | - | - | compile error: {e} |"),
        }
    }
}
