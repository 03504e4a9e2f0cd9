//! Lowering of Argent pipelines (algorithm + schedule) into loop nests, as
//! in sections 3 and 4 of the Halide paper: the schedule becomes a schedule
//! tree ([`schedule_tree`]), loops are synthesised from it
//! ([`synthesize`]), regions are inferred ([`bounds_inference`]), sliding
//! windows and storage folding save recomputation and memory, and the
//! passes in [`lower`] run in order. The crate is sans-IO and builds for
//! `wasm32-unknown-unknown`.

pub mod arith;
pub mod bounds_inference;
pub mod error;
pub mod fused_channels;
pub mod lower;
pub mod random_schedule;
pub mod rfactor;
pub mod schedule_tree;
pub mod separate_outputs;
pub mod sliding_window;
pub mod specialize;
pub mod storage_folding;
pub mod synthesize;

pub mod exec;
pub mod flatten;
pub mod hoist_invariants;
pub mod interleave_stores;
pub mod partition_loops;
pub mod specialize_strides;
pub mod trim_no_ops;
pub mod unroll;
pub mod unswitch_params;
pub mod vectorize;
pub mod verify;

pub use error::{LowerBug, LowerError, ScheduleError, ScheduleErrorCode};
pub use lower::{LowerOptions, Lowered, PassStat, lower};
pub use schedule_tree::{ScheduleTree, build as build_schedule_tree};
