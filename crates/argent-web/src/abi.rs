//! The backend's calling convention ([`argent_wasm::Abi`]) as JSON for the
//! TypeScript runtime (`web/src/protocol.ts`, type `Abi`). Kept here rather
//! than as serde derives in the backend so the backend stays free of
//! serialisation concerns.

use argent_ir::{AssertKind, BufferRole};
use argent_wasm::Abi;
use serde_json::{Value, json};

/// Converts an ABI description to the runtime's JSON shape.
pub fn abi_to_json(abi: &Abi) -> Value {
    json!({
        "buffers": abi.buffers.iter().map(|b| json!({
            "name": b.name,
            "type": b.ty.to_string(),
            "dims": b.dims,
            "role": match b.role { BufferRole::Input => "input", BufferRole::Output => "output" },
            "offset": b.offset,
        })).collect::<Vec<_>>(),
        "params": abi.params.iter().map(|p| json!({
            "name": p.name,
            "type": p.ty.to_string(),
            "offset": p.offset,
        })).collect::<Vec<_>>(),
        "asserts": abi.asserts.iter().map(|a| {
            let mut check = assert_kind_json(&a.kind);
            check["argTypes"] = json!(a.arg_types.iter().map(|t| t.to_string()).collect::<Vec<_>>());
            check
        }).collect::<Vec<_>>(),
        "tasks": abi.tasks.iter().map(|t| json!({
            "export": t.export,
            "loopVar": t.loop_var,
            "captures": t.captures,
        })).collect::<Vec<_>>(),
        "heapTopOffset": abi.heap_top_offset,
        "errorArgsOffset": abi.error_args_offset,
        "maxErrorArgs": abi.max_error_args,
        "argsSize": abi.args_size,
        "sharedMemory": abi.shared_memory,
        "regionSlots": abi.region_slots.as_ref().map(|slots| slots.iter().map(|s| json!({
            "input": s.input,
            "dim": s.dim,
            "offset": s.offset,
        })).collect::<Vec<_>>()),
    })
}

fn assert_kind_json(kind: &AssertKind) -> Value {
    match kind {
        AssertKind::InputTooSmall { input, stage, dim } => {
            json!({ "kind": "inputTooSmall", "input": input, "stage": stage, "dim": dim })
        }
        AssertKind::OutputTooSmall { output, dim } => {
            json!({ "kind": "outputTooSmall", "output": output, "dim": dim })
        }
        AssertKind::AllocationTooLarge { buffer } => {
            json!({ "kind": "allocationTooLarge", "buffer": buffer })
        }
        AssertKind::ParamOutOfRange { param } => {
            json!({ "kind": "paramOutOfRange", "param": param })
        }
        AssertKind::StrideNotOne { buffer } => {
            json!({ "kind": "strideNotOne", "buffer": buffer })
        }
        AssertKind::RegionOverflow { region } => {
            json!({ "kind": "regionOverflow", "region": region })
        }
        AssertKind::Other(message) => json!({ "kind": "other", "message": message }),
    }
}
