//! The Argent compiler for the page.
//!
//! This is the only crate that depends on wasm-bindgen. It runs the front
//! end, lowering and the Wasm backend inside a Web Worker (or a Node
//! `worker_threads` worker) and answers in JSON so the TypeScript runtime
//! (`web/src`) needs no generated glue beyond strings and one byte array:
//!
//! - [`compile`] returns a [`CompileOutput`]: `json` holds either
//!   `{"status":"ok", abi, pipeline, timings}` or
//!   `{"status":"error", diagnostics, rendered}`, and `wasm` holds the
//!   generated module's bytes (empty on error).
//! - [`check`] returns the diagnostics JSON only.
//! - [`version`] returns the crate version.
//!
//! The JSON shapes are the structs in [`describe`] and [`api`]; the
//! TypeScript mirror is `web/src/protocol.ts`.

pub mod abi;
pub mod api;
pub mod describe;
#[cfg(any(target_arch = "wasm32", test))]
mod fast_memcmp;
pub mod small_blocks;

/// In the page, small blocks come from size-class free lists (see
/// [`small_blocks`]): the compiler allocates millions of them.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: small_blocks::SizeClassAllocator = small_blocks::SizeClassAllocator::new();

use wasm_bindgen::prelude::*;

/// What one `compile` call produced. Two fields rather than one JSON blob
/// so the module bytes cross into JavaScript as a `Uint8Array` without
/// base64.
///
/// It also holds what the compile built and no longer needs (see
/// [`api::Leftovers`]), freed with the output: the compiler worker frees
/// the output after posting its answer, so the page does not wait for it.
#[wasm_bindgen]
pub struct CompileOutput {
    json: String,
    wasm: Vec<u8>,
    _leftovers: api::Leftovers,
}

#[wasm_bindgen]
impl CompileOutput {
    /// The response as JSON (see [`api::CompileResponse`]).
    #[wasm_bindgen(getter)]
    pub fn json(&self) -> String {
        self.json.clone()
    }

    /// The generated WebAssembly module; empty when compiling failed.
    #[wasm_bindgen(getter)]
    pub fn wasm(&self) -> Vec<u8> {
        self.wasm.clone()
    }
}

/// Compiles `source` with the options in `options_json` (see
/// [`api::CompileOptions`]; `""` means defaults). Never throws for user
/// errors: they come back as diagnostics in the JSON.
#[wasm_bindgen]
pub fn compile(source: &str, options_json: &str) -> CompileOutput {
    let (response, wasm, leftovers) = api::compile_leaving_cleanup(source, options_json, &now_ms);
    CompileOutput {
        json: api::to_json(&response),
        wasm,
        _leftovers: leftovers,
    }
}

/// Parses and checks `source`, returning `{"diagnostics": [...],
/// "rendered": "..."}` as JSON (an empty list when the program is fine).
#[wasm_bindgen]
pub fn check(source: &str) -> String {
    api::to_json(&api::check(source))
}

/// The compiler's version, e.g. `"0.1.0"`.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Milliseconds from a monotonic clock. `std::time::Instant` panics on
/// `wasm32-unknown-unknown`, so in the page the clock is JavaScript's
/// `performance.now()` (present in browsers, workers and Node).
#[cfg(target_arch = "wasm32")]
fn now_ms() -> f64 {
    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        fn performance_now() -> f64;
    }
    performance_now()
}

#[cfg(not(target_arch = "wasm32"))]
fn now_ms() -> f64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
}
