//! The stream-copy roofline: a minimal Wasm SIMD128 module whose only
//! function copies bytes with `v128.load`/`v128.store`, the fastest any
//! pipeline that reads and writes an image once can hope to go in the same
//! engine.

use wasm_encoder::{
    BlockType, CodeSection, EntityType, ExportKind, ExportSection, Function, FunctionSection,
    ImportSection, Instruction, MemArg, MemArgTarget, MemoryType, Module, TypeSection, ValType,
};

/// Bytes copied per loop iteration: four v128 registers, so the loop
/// overhead is amortised as in a well-unrolled generated kernel.
const BYTES_PER_ITERATION: i32 = 64;

/// Builds a module importing `env.memory` and exporting
/// `copy(src: i32, dst: i32, bytes: i32)`, which copies `bytes` (a multiple
/// of 64) from `src` to `dst`.
pub fn stream_copy_module() -> Vec<u8> {
    let mut module = Module::new();

    let mut types = TypeSection::new();
    types
        .ty()
        .function([ValType::I32, ValType::I32, ValType::I32], []);
    module.section(&types);

    let mut imports = ImportSection::new();
    imports.import(
        "env",
        "memory",
        EntityType::Memory(MemoryType {
            minimum: 1,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        }),
    );
    module.section(&imports);

    let mut functions = FunctionSection::new();
    functions.function(0);
    module.section(&functions);

    let mut exports = ExportSection::new();
    exports.export("copy", ExportKind::Func, 0);
    module.section(&exports);

    let (src, dst, bytes, offset) = (0, 1, 2, 3);
    let memarg = |at: u64| MemArg {
        offset: at,
        align: 4,
        target: MemArgTarget::Memory(0),
        ordering: None,
    };
    let mut body = Function::new([(1, ValType::I32)]);
    body.instruction(&Instruction::Block(BlockType::Empty));
    body.instruction(&Instruction::LocalGet(bytes));
    body.instruction(&Instruction::I32Eqz);
    body.instruction(&Instruction::BrIf(0));
    body.instruction(&Instruction::Loop(BlockType::Empty));
    for lane in 0..(BYTES_PER_ITERATION as u64 / 16) {
        body.instruction(&Instruction::LocalGet(dst));
        body.instruction(&Instruction::LocalGet(offset));
        body.instruction(&Instruction::I32Add);
        body.instruction(&Instruction::LocalGet(src));
        body.instruction(&Instruction::LocalGet(offset));
        body.instruction(&Instruction::I32Add);
        body.instruction(&Instruction::V128Load(memarg(16 * lane)));
        body.instruction(&Instruction::V128Store(memarg(16 * lane)));
    }
    body.instruction(&Instruction::LocalGet(offset));
    body.instruction(&Instruction::I32Const(BYTES_PER_ITERATION));
    body.instruction(&Instruction::I32Add);
    body.instruction(&Instruction::LocalTee(offset));
    body.instruction(&Instruction::LocalGet(bytes));
    body.instruction(&Instruction::I32LtU);
    body.instruction(&Instruction::BrIf(0));
    body.instruction(&Instruction::End);
    body.instruction(&Instruction::End);
    body.instruction(&Instruction::End);
    let mut code = CodeSection::new();
    code.function(&body);
    module.section(&code);

    module.finish()
}
