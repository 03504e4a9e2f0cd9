//! Developer probe for reading and timing generated code by hand.
//!
//! `dump_wat PIPELINE.ag` prints the WAT of the default (SIMD, no threads)
//! module; `dump_wat PIPELINE.ag OUT` instead writes `OUT.wasm` and
//! `OUT.abi` (one line per buffer `buffer NAME ELEM_BYTES DIMS OFFSET`, per
//! parameter `param NAME TYPE OFFSET`, then `args SIZE HEAP_TOP_OFFSET`),
//! which `examples/time_module.mjs` runs and times. `SCALAR=1` generates the
//! scalar fallback instead of SIMD128 code.

use argent_wasm::{CodegenOptions, compile};
use std::fmt::Write as _;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: dump_wat PIPELINE.ag [OUT]");
    // Any other module (a Halide baseline, say) is just printed.
    if path.ends_with(".wasm") {
        let bytes = std::fs::read(&path).expect("the module is readable");
        // With ARGENT_WAT_OFFSETS, each line starts with its byte offset:
        // how a trap's `wasm-function[n]:0x...` is found.
        let mut text = String::new();
        wasmprinter::Config::new()
            .print_offsets(std::env::var_os("ARGENT_WAT_OFFSETS").is_some())
            .print(&bytes, &mut wasmprinter::PrintFmtWrite(&mut text))
            .expect("valid module");
        print!("{text}");
        return;
    }
    let source = std::fs::read_to_string(&path).expect("the pipeline file is readable");
    let pipeline = argent_lang::compile(&source).expect("the pipeline compiles");
    let scalar = std::env::var("SCALAR").is_ok();
    let lower_options = argent_lower::LowerOptions {
        scalar_target: scalar,
        ..Default::default()
    };
    let lowered = argent_lower::lower::lower(&pipeline, &lower_options).expect("it lowers");
    if std::env::var("DUMP_IR").is_ok() {
        eprintln!("{}", lowered.module.body);
    }
    // ARGENT_PRINT_AFTER=PASS (or `all`) prints the IR after that pass.
    for (pass, text) in &lowered.dumps {
        eprintln!("// after {pass}\n{text}");
    }
    let start = std::time::Instant::now();
    // THREADS=1 generates the module the runtime uses (shared memory,
    // `env.parallel_for`), as it does on every thread count.
    let options = CodegenOptions {
        threads: std::env::var("THREADS").is_ok(),
        // SCALAR=1 generates the fallback for engines without SIMD128.
        simd: !scalar,
        ..CodegenOptions::default()
    };
    let compiled = compile(&lowered.module, &options).expect("it compiles");
    if std::env::var("TIME_CODEGEN").is_ok() {
        eprintln!("codegen {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
    }
    let Some(out) = args.next() else {
        print!(
            "{}",
            wasmprinter::print_bytes(&compiled.bytes).expect("valid module")
        );
        return;
    };
    std::fs::write(format!("{out}.wasm"), &compiled.bytes).expect("writable");
    let mut abi = String::new();
    for b in &compiled.abi.buffers {
        let bytes = b.ty.bits.div_ceil(8);
        writeln!(abi, "buffer {} {} {} {}", b.name, bytes, b.dims, b.offset).unwrap();
    }
    for p in &compiled.abi.params {
        let kind = if p.ty.is_float() { "F32" } else { "I32" };
        writeln!(abi, "param {} {kind} {}", p.name, p.offset).unwrap();
    }
    writeln!(
        abi,
        "args {} {}",
        compiled.abi.args_size, compiled.abi.heap_top_offset
    )
    .unwrap();
    std::fs::write(format!("{out}.abi"), abi).expect("writable");
}
