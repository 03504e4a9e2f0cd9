//! Median time of every lowering pass for the named programs, lowered many
//! times over: shows which pass to speed up, and is a steady loop to
//! profile with `perf record`.
//!
//! `cargo run --release -p argent-lower --example pass_times -- [-n N] [--print PASS] FILE.ag...`
//!
//! `--print PASS` also prints the IR after that pass (`all`: after each).

use argent_lower::{LowerOptions, lower};

#[path = "common/bench_args.rs"]
mod bench_args;
use bench_args::{BenchArgs, median};

/// As in the `argent` command (crates/argent-cli/src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let BenchArgs {
        iterations,
        files,
        print_after,
    } = BenchArgs::parse(100, true);
    let options = LowerOptions {
        time_passes: true,
        ..Default::default()
    };
    for file in files {
        let source = std::fs::read_to_string(&file).expect("readable source file");
        let (pipeline, diagnostics) = argent_lang::check(&source);
        let Some(pipeline) = pipeline else {
            panic!("{file} does not parse: {diagnostics:?}");
        };
        if let Some(pass) = &print_after {
            let dumped = LowerOptions {
                print_after: Some(pass.clone()),
                ..Default::default()
            };
            for (pass, text) in lower(&pipeline, &dumped).expect("lowers").dumps {
                println!("---- after {pass}\n{text}");
            }
        }
        // Per pass, in order: its name, its times and the IR size after it.
        let mut passes: Vec<(String, Vec<f64>, usize)> = Vec::new();
        let mut totals = Vec::new();
        for _ in 0..iterations {
            let lowered = lower(&pipeline, &options).expect("lowers");
            let mut total = 0.0;
            for (i, stat) in lowered.pass_stats.iter().enumerate() {
                let ms = stat.seconds.unwrap_or(0.0) * 1e3;
                total += ms;
                if passes.len() <= i {
                    passes.push((stat.pass.clone(), Vec::new(), stat.nodes));
                }
                passes[i].1.push(ms);
            }
            totals.push(total);
        }
        println!(
            "{file}: {:.3} ms in passes (median of {iterations})",
            median(totals)
        );
        for (pass, times, nodes) in passes {
            println!("  {pass:<20} {:>8.3} ms  {nodes:>7} nodes", median(times));
        }
    }
}
