//! Compiles each named program many times with the page's driver
//! (`api::compile`, the same code the wasm-bindgen export runs) and prints
//! the median time of each phase: a native stand-in for the compile time
//! in the page, and a steady loop to profile with `perf record`.
//!
//! `cargo run --release -p argent-web --example compile_bench -- [-n N] FILE.ag...`
//! (`COMPILE_OPTIONS='{"simd": false}'` passes the page's compile options).

use argent_web::api::{CompileResponse, compile, to_json};
use std::time::Instant;

/// As in the `argent` command (crates/argent-cli/src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../../argent-lower/examples/common/bench_args.rs"]
mod bench_args;
use bench_args::{BenchArgs, median};

fn main() {
    let BenchArgs {
        iterations, files, ..
    } = BenchArgs::parse(50, false);
    let start = Instant::now();
    let now_ms = move || start.elapsed().as_secs_f64() * 1000.0;
    let options = std::env::var("COMPILE_OPTIONS").unwrap_or_default();
    for file in files {
        let source = std::fs::read_to_string(&file).expect("readable source file");
        let (mut parse, mut lower, mut codegen, mut total) = (vec![], vec![], vec![], vec![]);
        let mut whole = vec![];
        let mut bytes = 0;
        for _ in 0..iterations {
            let called = now_ms();
            let (response, wasm) = compile(&source, &options, &now_ms);
            let json = to_json(&response);
            drop(json);
            let CompileResponse::Ok { timings, .. } = response else {
                panic!("{file} does not compile: {response:?}");
            };
            parse.push(timings.parse);
            lower.push(timings.lower);
            codegen.push(timings.codegen);
            total.push(timings.total);
            bytes = wasm.len();
            drop(wasm);
            whole.push(now_ms() - called);
        }
        println!(
            "{file}: total {:.2} ms (parse {:.2}, lower {:.2}, codegen {:.2}), whole call {:.2} ms, {bytes} bytes, median of {iterations}",
            median(total),
            median(parse),
            median(lower),
            median(codegen),
            median(whole),
        );
    }
}
