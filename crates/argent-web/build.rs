//! Links the in-page compiler with an 8 MiB stack (wasm-ld's default is 1
//! MiB). Lowering recurses over the statement tree, and some schedules nest
//! thousands of statements (random schedule 251 of local_laplacian: about
//! 3,300 frames deep in partitioning): with 1 MiB the stack ran out and the
//! compile trapped with "memory access out of bounds", where the native
//! build (8 MiB, the main thread's stack) compiled it. The stack is part of
//! the compiler worker's memory, not of the pipelines'.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo::rustc-link-arg-cdylib=-zstack-size=8388608");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
