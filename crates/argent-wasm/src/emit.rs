//! Module assembly and scalar code generation.
//!
//! Every function body is first collected as a list of instructions so
//! that the SIMD emitter can roll back a statement it cannot vectorise and
//! fall back to lane-by-lane code.

use crate::float_range::{FloatRange, float_range};
use crate::query::RegionSlot;
use crate::scalarize::{lane_of, scalarize_stmt};
use crate::{
    Abi, AssertInfo, BufferAbi, CodegenError, CodegenOptions, CompiledModule, ParamAbi, TaskInfo,
};
use argent_ir::fast_hash::{FastHashMap, FastHashSet};
use argent_ir::visit::{Visitor, walk_expr, walk_stmt};
use argent_ir::{
    AssertKind, BinOp, BufferRole, CallTarget, Expr, ExprKind, ForKind, Intrinsic, Module, Stmt,
    Type, TypeKind, UnaryOp,
};
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, Encode, EntityType, ExportKind, ExportSection, Function,
    FunctionSection, GlobalSection, GlobalType, ImportSection, Instruction as I, MemArg,
    MemArgTarget, MemoryType, TypeSection, ValType,
};

/// Type indices in the type section.
const TYPE_RUN: u32 = 0;
const TYPE_TASK: u32 = 1;
const TYPE_PARALLEL_FOR: u32 = 2;
/// The first type of an outlined loop's function (see `outline.rs`).
const FIRST_OUTLINED_TYPE: u32 = 3;

/// The bytes at the end of the memory where the runtime places no input:
/// a speculative load (see `FnBuilder::guard_speculative`) whose address
/// falls there or beyond reads at address 0 instead. Part of the ABI (see
/// `web/src/layout.ts`, `HEAP_HEADROOM`).
pub const SPECULATIVE_GUARD: u32 = 65536;

/// The most bytes one speculative access may span from its address (see
/// `FnBuilder::guard_speculative`): the runtime places no input in the
/// first 1 KiB of the memory.
const MAX_SPECULATIVE_SPAN: usize = 1024;

/// Bytes of padding after every heap block, so that SIMD loads that read a
/// little past the last element stay inside memory.
const HEAP_PADDING: i64 = 64;

/// With threads, every instance (one per thread) has its own allocation
/// arena in these mutable globals: a block of the shared heap that the
/// thread's task allocations are carved from, LIFO, without atomics.
/// `ARENA_RUN` is the run counter (args word +4) the arena belongs to; an
/// arena from an earlier run is stale, because `run` gave its memory back.
const ARENA_RUN: u32 = 0;
const ARENA_BASE: u32 = 1;
const ARENA_TOP: u32 = 2;
const ARENA_END: u32 = 3;
/// The smallest arena a thread takes from the shared heap.
const ARENA_MIN_BYTES: i64 = 256 << 10;
/// Bytes left unused after every arena, so that two threads' arenas (taken
/// one after the other from the heap) are never close in memory. With
/// adjacent arenas, the thread whose arena came second ran a third slower
/// per iteration than the other (unsharp mask on 2 threads: 0.55 against
/// 0.41 ms per strip, lower IPC at the same clock); gaps of 64 KiB did not
/// help, 1 MiB and more did. The gap is address space only: nothing
/// touches it, so it costs no physical memory.
const ARENA_GAP_BYTES: i64 = 1 << 20;
/// Arenas double while they are smaller than this, then grow by what is
/// needed only, so a large request does not fail just because the doubled
/// arena would not fit in 4 GiB.
const ARENA_DOUBLING_LIMIT: i64 = 1 << 30;

/// State shared by all functions of one module.
pub(crate) struct Ctx {
    pub options: CodegenOptions,
    pub asserts: Vec<AssertInfo>,
    /// The functions after `run` and `body`, in index order: parallel loop
    /// bodies (tasks, with their export) and outlined loops (see
    /// `outline.rs`), each with its type index.
    pub functions: Vec<(Option<TaskInfo>, u32, Function)>,
    /// The index of the first of `functions`.
    pub first_function: u32,
    /// The signatures of outlined loops (type indices from
    /// [`FIRST_OUTLINED_TYPE`] on).
    pub types: Vec<Vec<ValType>>,
    /// The loops to outline, by address (see `outline.rs`).
    pub outlined: FastHashSet<usize>,
    pub error_args_offset: u32,
    /// Function index of the `parallel_for` import.
    pub parallel_for: u32,
    /// The declared ranges of the f32 parameters whose range the body
    /// checks before anything else (see [`checked_param_ranges`]).
    pub param_ranges: Vec<(String, FloatRange)>,
    /// The most locals one function declared (see [`check_engine_limits`]).
    pub most_locals: usize,
}

impl Ctx {
    /// The type index of an outlined loop taking `params` (and returning
    /// a status).
    pub fn function_type(&mut self, params: &[ValType]) -> u32 {
        let k = match self.types.iter().position(|t| t == params) {
            Some(k) => k,
            None => {
                self.types.push(params.to_vec());
                self.types.len() - 1
            }
        };
        FIRST_OUTLINED_TYPE + k as u32
    }

    /// Reserves the next function slot (so functions made while this one
    /// is built get later indices).
    pub fn reserve_function(&mut self, task: Option<TaskInfo>, type_index: u32) -> usize {
        self.functions
            .push((task, type_index, Function::new_with_locals_types([])));
        self.functions.len() - 1
    }

    pub fn fill_function(&mut self, slot: usize, function: Function) {
        self.functions[slot].2 = function;
    }

    /// The function index of a slot.
    pub fn function_index(&self, slot: usize) -> u32 {
        self.first_function + slot as u32
    }

    fn task_count(&self) -> usize {
        self.functions
            .iter()
            .filter(|(t, _, _)| t.is_some())
            .count()
    }
}

/// The largest function body, in bytes, that WebAssembly engines compile
/// (the JS API's implementation limits, which V8 enforces).
pub const MAX_FUNCTION_BYTES: usize = 7_654_321;
/// The most locals one function may declare (the same limits).
pub const MAX_FUNCTION_LOCALS: usize = 50_000;

/// Refuses a module that engines would refuse, as a user error: only a
/// schedule that unrolls or vectorises very large bodies (or scalar code
/// for such vectors, one copy per lane) reaches these limits.
fn check_engine_limits(
    functions: &[(&str, &Function)],
    most_locals: usize,
) -> Result<(), CodegenError> {
    for (name, f) in functions {
        let bytes = f.byte_len();
        if bytes > MAX_FUNCTION_BYTES {
            return Err(CodegenError::TooLarge(format!(
                "the generated function `{name}` takes {bytes} bytes, more than the {MAX_FUNCTION_BYTES} engines compile"
            )));
        }
    }
    if most_locals > MAX_FUNCTION_LOCALS {
        return Err(CodegenError::TooLarge(format!(
            "a generated function needs {most_locals} locals, more than the {MAX_FUNCTION_LOCALS} engines allow"
        )));
    }
    Ok(())
}

/// What a variable name is bound to.
#[derive(Clone, Debug)]
pub(crate) enum Binding {
    Scalar {
        local: u32,
        ty: Type,
    },
    Vector(VecVal),
    /// A vector kept as one scalar local per lane (`ty` is the lane type).
    Lanes {
        locals: Vec<u32>,
    },
}

/// A vector held in v128 locals: `lanes` lanes of `lane_bits` bits each,
/// packed into as many registers as needed (the last one may be partly
/// used). Bool vectors are lane masks (all ones or all zeros).
#[derive(Clone, Debug)]
pub(crate) struct VecVal {
    pub parts: Vec<u32>,
    pub lane_bits: u8,
    pub lanes: u16,
}

#[derive(Clone, Debug)]
pub(crate) struct BufBinding {
    pub name: String,
    pub base: u32,
    pub ty: Type,
    /// Whether this is an input: bounds inference narrows an input's
    /// region by the condition of a `select` that reads it, so vector
    /// code, which evaluates both arms, may load outside the region the
    /// input was checked to cover (see `FnBuilder::guard_speculative`).
    pub input: bool,
}

/// Builds one function.
pub(crate) struct FnBuilder<'c> {
    pub ctx: &'c mut Ctx,
    pub n_params: u32,
    pub locals: Vec<ValType>,
    /// The body's instructions, encoded as they are emitted: an
    /// `Instruction` takes ten times the bytes of its encoding, and a
    /// vector of them spent a tenth of code generation growing. `len` and
    /// `truncate` still mark and undo a try.
    pub code: Vec<u8>,
    pub scopes: Vec<(String, Binding)>,
    pub buffers: Vec<BufBinding>,
    pub args_ptr: u32,
    pub in_task: bool,
    /// Locals free for reuse.
    free: Vec<(ValType, u32)>,
    /// Locals handed out since the current statement started, when it is
    /// one whose temporaries all die at its end (a store).
    temporaries: Option<Vec<(ValType, u32)>>,
    /// Vector values already computed in the current store statement, so a
    /// subexpression that occurs several times (`f32(in[i])` read by both
    /// sides of a `select`, say) is computed once. Nothing stores to memory
    /// inside one expression, so loads may be shared too. `None` outside a
    /// store, and while code runs conditionally (a local set in one branch
    /// would be unset in the other).
    pub(crate) vector_cache: Option<Vec<crate::simd::CachedVector>>,
    /// The 32-bit gathers of the current store statement outside
    /// conditionally run code (see `simd.rs`, `paired_gather`): a gather
    /// whose neighbour one element up is also read loads both at once.
    pub(crate) statement_gathers: Vec<Expr>,
    /// The values of the vector lets in scope, with the binding each got
    /// and the bindings of the variables its value mentions, so a gather
    /// index that is a let-bound sum can be taken apart (see `simd.rs`).
    pub(crate) let_values: Vec<LetValue>,
    /// How many scopes were open when the current statement started: the
    /// caches above only track variables bound inside the statement (the
    /// others do not change while it runs).
    pub(crate) statement_scopes: usize,
    /// Scalar values already computed in the current scalar store, with
    /// the local holding each and the bindings of the variables it
    /// mentions (as `vector_cache`, for scalar code: a histogram's index
    /// and its update value compute the same pixel intensity). `None`
    /// elsewhere and in conditionally run code.
    pub(crate) scalar_cache: Option<Vec<ScalarCached>>,
    /// The ranges of the scalar f32 lets in scope (see `float_range`).
    float_lets: Vec<(String, FloatRange)>,
    /// The i64 locals of the lets in scope of an expression evaluated
    /// exactly (see `exact.rs`).
    pub(crate) exact_lets: Vec<(String, u32)>,
    /// Broadcasts of loop-invariant scalars computed before the loops that
    /// use them: the scalar, the lane width, and the v128 local holding it.
    pub(crate) hoisted_splats: Vec<(Expr, u8, u32)>,
    /// Loop-invariant vector values computed before the innermost loop that
    /// uses them (see `hoist.rs`), with their registers.
    pub(crate) hoisted_vectors: Vec<(Expr, VecVal)>,
    /// Scalar expression nodes computed before the loops that use them
    /// (see `hoist.rs`), by node address: the node (kept alive so the
    /// address stays its own) and its local.
    pub(crate) hoisted_scalars: FastHashMap<usize, (Expr, u32)>,
    /// Accesses whose address is mostly computed before their loop.
    pub(crate) hoisted_addresses: Vec<crate::hoist::HoistedAddress>,
    /// How many arms of vector `select`s that read inputs enclose the code
    /// being emitted: the loads of inputs there are speculative (see
    /// `guard_speculative`).
    pub(crate) speculative: u32,
}

pub(crate) fn mem(offset: u64, align: u32) -> MemArg {
    MemArg {
        offset,
        align,
        target: MemArgTarget::Memory(0),
        ordering: None,
    }
}

/// The value type holding a scalar of type `ty`.
pub(crate) fn val_type(ty: Type) -> Result<ValType, CodegenError> {
    match (ty.kind, ty.bits) {
        (TypeKind::Float, 32) => Ok(ValType::F32),
        (TypeKind::Float, _) => Err(CodegenError::UnsupportedType(ty.to_string())),
        (_, bits) if bits <= 32 => Ok(ValType::I32),
        // The u64 intermediates of `lerp` on 32-bit values.
        (TypeKind::UInt, 64) => Ok(ValType::I64),
        _ => Err(CodegenError::UnsupportedType(ty.to_string())),
    }
}

/// Checks that values of `ty` can live in memory (at most 32 bits).
fn memory_type(ty: Type) -> Result<ValType, CodegenError> {
    if ty.bits > 32 {
        return Err(CodegenError::UnsupportedType(format!("{ty} in memory")));
    }
    val_type(ty)
}

fn log2_bytes(ty: Type) -> u32 {
    match ty.bytes() {
        1 => 0,
        2 => 1,
        _ => 2,
    }
}

/// Whether `e` reads memory (such operands of `select` must not be
/// evaluated speculatively).
/// A vector let in scope: its name, the first register of its binding,
/// its value, and the bindings of the variables the value mentions.
pub(crate) type LetValue = (String, u32, Expr, Vec<(String, Option<u32>)>);

/// A scalar value computed earlier in a store: the expression, its local,
/// and the bindings of the variables it mentions when it was computed.
pub(crate) type ScalarCached = (Expr, u32, Vec<(String, Option<u32>)>);

/// Whether a scalar `e` costs enough that an equal occurrence later in the
/// same store should read a local instead (variables and constants cost
/// as much as the read; a select whose arms load runs them conditionally).
fn scalar_worth_sharing(e: &Expr) -> bool {
    match e.kind() {
        ExprKind::Load { .. }
        | ExprKind::Cast { .. }
        | ExprKind::Unary { .. }
        | ExprKind::Binary { .. } => true,
        ExprKind::Select {
            then, otherwise, ..
        } => !has_load(then) && !has_load(otherwise),
        ExprKind::Call {
            target: CallTarget::Intrinsic(i),
            ..
        } => *i != Intrinsic::Likely,
        _ => false,
    }
}

/// Whether `e` loads from `buffer`.
pub(crate) fn loads_from(e: &Expr, buffer: &str) -> bool {
    struct Finder<'a>(&'a str, bool);
    impl Visitor for Finder<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            match e.kind() {
                ExprKind::Load { buffer, .. } if buffer == self.0 => self.1 = true,
                _ if !self.1 => walk_expr(self, e),
                _ => {}
            }
        }
    }
    let mut f = Finder(buffer, false);
    f.visit_expr(e);
    f.1
}

/// Whether `e` loads from any buffer.
pub(crate) fn has_load(e: &Expr) -> bool {
    struct Finder(bool);
    impl Visitor for Finder {
        fn visit_expr(&mut self, e: &Expr) {
            if matches!(e.kind(), ExprKind::Load { .. }) {
                self.0 = true;
            } else {
                walk_expr(self, e);
            }
        }
    }
    let mut f = Finder(false);
    f.visit_expr(e);
    f.0
}

/// Splits `index` into a dynamic part and a non-negative constant element
/// offset that can go into the memarg.
pub(crate) fn split_constant_offset(index: &Expr) -> (Expr, i64) {
    if let ExprKind::Binary {
        op: BinOp::Add,
        a,
        b,
    } = index.kind()
        && let Some(c) = b.as_int()
        && c >= 0
    {
        let (inner, c2) = split_constant_offset(a);
        return (inner, c + c2);
    }
    (index.clone(), 0)
}

/// Where the generated code and the caches of computed values stand, so
/// that an abandoned attempt (a vector form that turned out unsupported)
/// is undone with both: a cached value whose code was dropped would name
/// a local that nothing sets on that path.
#[derive(Clone, Copy)]
pub(crate) struct Checkpoint {
    code: usize,
    vectors: usize,
    scalars: usize,
}

impl<'c> FnBuilder<'c> {
    /// The current [`Checkpoint`].
    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            code: self.code.len(),
            vectors: self.vector_cache.as_ref().map_or(0, Vec::len),
            scalars: self.scalar_cache.as_ref().map_or(0, Vec::len),
        }
    }

    /// Drops the code emitted since `at`, and the cached values it computed.
    pub(crate) fn roll_back(&mut self, at: Checkpoint) {
        self.code.truncate(at.code);
        if let Some(cache) = &mut self.vector_cache {
            cache.truncate(at.vectors);
        }
        if let Some(cache) = &mut self.scalar_cache {
            cache.truncate(at.scalars);
        }
    }

    pub fn new(ctx: &'c mut Ctx, n_params: u32, in_task: bool) -> Self {
        FnBuilder {
            ctx,
            n_params,
            locals: Vec::new(),
            code: Vec::new(),
            scopes: Vec::new(),
            buffers: Vec::new(),
            args_ptr: 0,
            in_task,
            free: Vec::new(),
            temporaries: None,
            vector_cache: None,
            statement_gathers: Vec::new(),
            let_values: Vec::new(),
            statement_scopes: 0,
            scalar_cache: None,
            float_lets: Vec::new(),
            exact_lets: Vec::new(),
            hoisted_splats: Vec::new(),
            hoisted_vectors: Vec::new(),
            hoisted_scalars: FastHashMap::default(),
            hoisted_addresses: Vec::new(),
            speculative: 0,
        }
    }

    /// A local of type `t`: a recycled temporary when one is free, so
    /// large bodies stay within engine limits on locals.
    pub fn local(&mut self, t: ValType) -> u32 {
        let index = match self.free.iter().position(|(ft, _)| *ft == t) {
            Some(k) => self.free.swap_remove(k).1,
            None => {
                self.locals.push(t);
                self.n_params + self.locals.len() as u32 - 1
            }
        };
        if let Some(temps) = &mut self.temporaries {
            temps.push((t, index));
        }
        index
    }

    /// Runs `f` and then frees every local it took: for statements whose
    /// temporaries do not outlive them.
    fn with_temporaries<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let outer = self.temporaries.replace(Vec::new());
        let r = f(self);
        let temps = std::mem::replace(&mut self.temporaries, outer).unwrap_or_default();
        if let Some(outer) = &mut self.temporaries {
            outer.extend(temps.iter().copied());
        } else {
            self.free.extend(temps);
        }
        r
    }

    /// Appends the encoding of `i`.
    #[inline]
    pub fn emit(&mut self, i: I<'static>) {
        if let Err(other) = encode_inline(&mut self.code, i) {
            other.encode(&mut self.code);
        }
    }

    pub fn finish(self) -> Function {
        self.ctx.most_locals = self.ctx.most_locals.max(self.locals.len());
        let mut f = Function::new_with_locals_types(self.locals.iter().copied());
        f.raw(self.code);
        f.instruction(&I::End);
        f
    }

    /// The register identifying the binding of `name` made inside the
    /// current statement, if it has one.
    pub(crate) fn local_binding(&self, name: &str) -> Option<u32> {
        self.scopes[self.statement_scopes.min(self.scopes.len())..]
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, b)| crate::simd::binding_id(b))
    }

    pub fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| same_name(n, name))
            .map(|(_, b)| b)
    }

    pub fn buffer(&self, name: &str) -> Result<BufBinding, CodegenError> {
        self.buffers
            .iter()
            .rev()
            .find(|b| same_name(&b.name, name))
            .cloned()
            .ok_or_else(|| CodegenError::Unbound(name.to_string()))
    }

    /// Re-normalises an `i32` holding a value of integer type `ty` after an
    /// operation that may have left bits outside the type's width.
    pub fn wrap(&mut self, ty: Type) {
        match (ty.kind, ty.bits) {
            (TypeKind::UInt, 8) => {
                self.emit(I::I32Const(0xff));
                self.emit(I::I32And);
            }
            (TypeKind::UInt, 16) => {
                self.emit(I::I32Const(0xffff));
                self.emit(I::I32And);
            }
            (TypeKind::Int, 8) => self.emit(I::I32Extend8S),
            (TypeKind::Int, 16) => self.emit(I::I32Extend16S),
            (TypeKind::Bool, _) => {
                self.emit(I::I32Const(0));
                self.emit(I::I32Ne);
            }
            _ => {}
        }
    }

    /// Stores the value on top of the stack in a fresh local.
    pub fn set_new_local(&mut self, t: ValType) -> u32 {
        let l = self.local(t);
        self.emit(I::LocalSet(l));
        l
    }

    /// Returns `status` from the function.
    pub fn fail(&mut self, status: i32) {
        self.emit(I::I32Const(status));
        self.emit(I::Return);
    }

    // ---- scalar expressions ---------------------------------------------

    /// Pushes the value of scalar expression `e`.
    pub fn expr(&mut self, e: &Expr) -> Result<(), CodegenError> {
        if self.scalar_cache.is_some()
            && e.ty().is_scalar()
            && scalar_worth_sharing(e)
            && !self.hoisted_scalar(e)
            && let Some(local) = self.scalar_in_local(e)?
        {
            self.emit(I::LocalGet(local));
            return Ok(());
        }
        self.expr_node(e)
    }

    /// The local holding scalar `e` in the current store, computing it
    /// there first when it is not yet; `None` (and no code) when `e` is too
    /// big to track its variables.
    fn scalar_in_local(&mut self, e: &Expr) -> Result<Option<u32>, CodegenError> {
        let hit = self.scalar_cache.as_ref().and_then(|cache| {
            cache
                .iter()
                .rev()
                .find(|(k, _, deps)| self.same_value(k, deps, e))
                .map(|(_, local, _)| *local)
        });
        if hit.is_some() {
            return Ok(hit);
        }
        let Some(deps) = self.binding_deps(e) else {
            return Ok(None);
        };
        self.expr_node(e)?;
        let local = self.set_new_local(val_type(e.ty())?);
        if let Some(cache) = &mut self.scalar_cache {
            cache.push((e.clone(), local, deps));
        }
        Ok(Some(local))
    }

    fn expr_node(&mut self, e: &Expr) -> Result<(), CodegenError> {
        let ty = e.ty();
        if ty.is_vector() {
            return Err(CodegenError::NotLowered(format!(
                "vector expression {e} in scalar context"
            )));
        }
        if let Some((_, local)) = self.hoisted_scalars.get(&crate::hoist::node_key(e)) {
            self.emit(I::LocalGet(*local));
            return Ok(());
        }
        match e.kind() {
            ExprKind::IntImm(v) => {
                let v = ty.wrap(*v);
                if ty.bits == 64 {
                    self.emit(I::I64Const(v));
                } else if ty.is_float() {
                    self.emit(I::F32Const((v as f32).into()));
                } else {
                    self.emit(I::I32Const(v as u32 as i32));
                }
            }
            ExprKind::FloatImm(v) => {
                if ty.is_float() {
                    self.emit(I::F32Const((*v as f32).into()));
                } else {
                    self.emit(I::I32Const(ty.wrap(*v as i64) as u32 as i32));
                }
            }
            ExprKind::Var(name) => self.var(name, ty)?,
            ExprKind::Cast { value, saturating } => {
                self.expr(value)?;
                let from = value.ty();
                if from.is_float() && ty.is_integer() && ty.bits <= 32 {
                    let range = self.float_range(value);
                    let fits = if ty.is_uint() && ty.bits == 32 {
                        range.fits_trunc_u32()
                    } else {
                        range.fits_trunc_i32()
                    };
                    if fits {
                        self.float_to_int(ty, *saturating, true);
                        return Ok(());
                    }
                }
                self.cast(from, ty, *saturating);
            }
            ExprKind::Unary { op, value } => {
                self.expr(value)?;
                if ty.bits == 64 {
                    let v = self.set_new_local(ValType::I64);
                    match op {
                        UnaryOp::Neg => {
                            self.emit(I::I64Const(0));
                            self.emit(I::LocalGet(v));
                            self.emit(I::I64Sub);
                        }
                        UnaryOp::BitNot => {
                            self.emit(I::LocalGet(v));
                            self.emit(I::I64Const(-1));
                            self.emit(I::I64Xor);
                        }
                        UnaryOp::Not => {
                            self.emit(I::LocalGet(v));
                            self.emit(I::I64Eqz);
                        }
                    }
                    return Ok(());
                }
                match (op, ty.is_float()) {
                    (UnaryOp::Neg, true) => self.emit(I::F32Neg),
                    (UnaryOp::Neg, false) => {
                        let l = self.set_new_local(ValType::I32);
                        self.emit(I::I32Const(0));
                        self.emit(I::LocalGet(l));
                        self.emit(I::I32Sub);
                        self.wrap(ty);
                    }
                    (UnaryOp::Not, _) => self.emit(I::I32Eqz),
                    (UnaryOp::BitNot, _) => {
                        self.emit(I::I32Const(-1));
                        self.emit(I::I32Xor);
                        self.wrap(ty);
                    }
                }
            }
            ExprKind::Binary { op, a, b } => self.binary(*op, a, b)?,
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                if has_load(then) || has_load(otherwise) {
                    self.expr(cond)?;
                    self.emit(I::If(BlockType::Result(val_type(ty)?)));
                    // Values computed in one branch must not be reused after it.
                    let cache = self.vector_cache.take();
                    let scalars = self.scalar_cache.take();
                    let branches = (|| {
                        self.expr(then)?;
                        self.emit(I::Else);
                        self.expr(otherwise)
                    })();
                    self.vector_cache = cache;
                    self.scalar_cache = scalars;
                    branches?;
                    self.emit(I::End);
                } else {
                    self.expr(then)?;
                    self.expr(otherwise)?;
                    self.expr(cond)?;
                    self.emit(I::Select);
                }
            }
            ExprKind::Call { target, args } => self.call(target, args, ty)?,
            ExprKind::Let { name, value, body } => {
                let binding = self.bind_value(value)?;
                self.scopes.push((name.clone(), binding));
                let ranged = self.push_float_let(name, value);
                let r = self.expr(body);
                if ranged {
                    self.float_lets.pop();
                }
                self.scopes.pop();
                r?;
            }
            ExprKind::Load { buffer, index } => {
                let buf = self.buffer(buffer)?;
                let offset = self.address(&buf, index)?;
                self.load_scalar(buf.ty, offset);
            }
            ExprKind::Ramp { .. } | ExprKind::Broadcast { .. } => {
                return Err(CodegenError::NotLowered(format!("scalar {e}")));
            }
            ExprKind::Shuffle { .. } => self.expr(&lane_of(e, 0))?,
        }
        Ok(())
    }

    /// Evaluates a let value (scalar or vector) into a binding.
    pub(crate) fn bind_value(&mut self, value: &Expr) -> Result<Binding, CodegenError> {
        if value.ty().is_vector() {
            let mark = self.checkpoint();
            match self.vexpr_any(value) {
                Ok(v) => return Ok(Binding::Vector(v)),
                Err(crate::simd::VErr::Fatal(e)) => return Err(e),
                Err(crate::simd::VErr::Unsupported) => self.roll_back(mark),
            }
            // Lane by lane: a vector of scalar locals.
            let lanes = value.ty().lanes;
            let mut locals = Vec::new();
            for lane in 0..lanes {
                let l = lane_of(value, lane);
                self.expr(&l)?;
                let t = val_type(l.ty())?;
                locals.push(self.set_new_local(t));
            }
            return Ok(Binding::Lanes { locals });
        }
        // A value already in a local binds that local, so later values
        // computed from this name are recognised as the same too.
        if self.scalar_cache.is_some()
            && scalar_worth_sharing(value)
            && let Some(local) = self.scalar_in_local(value)?
        {
            return Ok(Binding::Scalar {
                local,
                ty: value.ty(),
            });
        }
        self.expr(value)?;
        let local = self.set_new_local(val_type(value.ty())?);
        Ok(Binding::Scalar {
            local,
            ty: value.ty(),
        })
    }

    fn var(&mut self, name: &str, ty: Type) -> Result<(), CodegenError> {
        match self.lookup(name).cloned() {
            Some(Binding::Scalar { local, .. }) => {
                self.emit(I::LocalGet(local));
                Ok(())
            }
            Some(Binding::Vector(_) | Binding::Lanes { .. }) => Err(CodegenError::NotLowered(
                format!("vector variable {name} used as a scalar"),
            )),
            None => {
                // `v#i`: lane i of vector binding `v`.
                if let Some((base, lane)) = name.rsplit_once('#')
                    && let Ok(lane) = lane.parse::<u16>()
                {
                    match self.lookup(base).cloned() {
                        Some(Binding::Vector(v)) => {
                            self.extract_lane(&v, lane, ty);
                            return Ok(());
                        }
                        Some(Binding::Lanes { locals, .. }) if (lane as usize) < locals.len() => {
                            self.emit(I::LocalGet(locals[lane as usize]));
                            return Ok(());
                        }
                        _ => {}
                    }
                }
                Err(CodegenError::Unbound(name.to_string()))
            }
        }
    }

    /// Pushes the byte address of `buf[index]` minus the returned constant
    /// offset (which the caller puts in the memarg).
    pub fn address(&mut self, buf: &BufBinding, index: &Expr) -> Result<u64, CodegenError> {
        let offset = if let Some((pointer, offset)) = self.hoisted_pointer_address(buf, index) {
            self.emit(I::LocalGet(pointer));
            offset
        } else {
            let (dynamic, offset) = split_constant_offset(index);
            let shift = log2_bytes(buf.ty);
            self.push_byte_address(buf.base, &dynamic, shift)?;
            (offset as u64) << shift
        };
        Ok(self.guard_speculative(buf, offset))
    }

    /// Whether every load of an input in `e` spans at most
    /// [`MAX_SPECULATIVE_SPAN`] bytes: its lanes, 4 elements apart at most
    /// (interleaved channels; a wider stride gathers lane by lane).
    /// Vectors wider than that are computed lane by lane where their loads
    /// would be speculative.
    pub(crate) fn speculative_loads_fit(&self, e: &Expr) -> bool {
        !argent_ir::visit::expr_any(e, |x: &Expr| {
            matches!(x.kind(), ExprKind::Load { buffer, index }
            if self.buffer(buffer).is_ok_and(|b| {
                b.input && index.ty().lanes as usize * b.ty.bytes() * 4 > MAX_SPECULATIVE_SPAN
            }))
        })
    }

    /// Whether `e` loads from an input.
    pub(crate) fn loads_input(&self, e: &Expr) -> bool {
        argent_ir::visit::expr_any(e, |x: &Expr| {
            matches!(x.kind(), ExprKind::Load { buffer, .. }
                if self.buffer(buffer).is_ok_and(|b| b.input))
        })
    }

    /// Makes the address on the stack (to be used with memarg `offset`)
    /// safe to load from when the load is speculative: a load of an input
    /// inside an arm of a vector `select`. Bounds inference narrows an
    /// input's region by the condition of the arm that reads it
    /// (`select(y > 1000, in(x, y - 1000), 0)` needs no rows of `in` below
    /// 1001), so the input is only checked to cover that; vector code evaluates both
    /// arms in every lane, and where the condition fails the address may
    /// lie anywhere, outside the memory too.
    ///
    /// The offset joins the address (wrapping, as the index arithmetic
    /// does), which is replaced by 0 when it is at or past the last
    /// [`SPECULATIVE_GUARD`] bytes of the memory (a negative one wraps past
    /// them). No lane whose value is used moves: the runtime places inputs
    /// only from byte 1024 on and never in those last bytes, and one access
    /// spans at most [`MAX_SPECULATIVE_SPAN`] bytes from its address (see
    /// `speculative_loads_fit`), so an access that starts there cannot
    /// reach an input even by wrapping past 4 GiB. Returns the memarg
    /// offset to use (0 when guarded).
    pub(crate) fn guard_speculative(&mut self, buf: &BufBinding, offset: u64) -> u64 {
        if self.speculative == 0 || !buf.input {
            return offset;
        }
        if offset > 0 {
            self.emit(I::I32Const(offset as i32));
            self.emit(I::I32Add);
        }
        let address = self.local(ValType::I32);
        self.emit(I::LocalTee(address));
        self.emit(I::I32Const(0));
        self.emit(I::LocalGet(address));
        self.emit(I::MemorySize(0));
        self.emit(I::I32Const(16));
        self.emit(I::I32Shl);
        self.emit(I::I32Const(SPECULATIVE_GUARD as i32));
        self.emit(I::I32Sub);
        self.emit(I::I32LtU);
        self.emit(I::Select);
        0
    }

    /// When the address of `buf[index]` is a pointer hoisted out of the
    /// enclosing loop (see `crate::hoist`), that local and the constant
    /// byte offset from it, without emitting anything.
    pub(crate) fn hoisted_pointer_address(
        &self,
        buf: &BufBinding,
        index: &Expr,
    ) -> Option<(u32, u64)> {
        let (dynamic, offset) = split_constant_offset(index);
        let (pointer, extra) = self.hoisted_pointer(&buf.name, &dynamic)?;
        Some((pointer, ((offset as u64) << log2_bytes(buf.ty)) + extra))
    }

    /// Pushes `base + (index << shift)`: the byte address of element
    /// `index` of a buffer whose elements are `1 << shift` bytes.
    pub(crate) fn push_byte_address(
        &mut self,
        base: u32,
        index: &Expr,
        shift: u32,
    ) -> Result<(), CodegenError> {
        self.emit(I::LocalGet(base));
        self.expr(index)?;
        if shift > 0 {
            self.emit(I::I32Const(shift as i32));
            self.emit(I::I32Shl);
        }
        self.emit(I::I32Add);
        Ok(())
    }

    pub fn load_scalar(&mut self, ty: Type, offset: u64) {
        let m = mem(offset, log2_bytes(ty));
        match (ty.kind, ty.bits) {
            (TypeKind::Float, _) => self.emit(I::F32Load(m)),
            (TypeKind::Int, 8) => self.emit(I::I32Load8S(m)),
            (TypeKind::Int, 16) => self.emit(I::I32Load16S(m)),
            (TypeKind::UInt, 16) => self.emit(I::I32Load16U(m)),
            (_, 1) | (_, 8) => {
                self.emit(I::I32Load8U(m));
                if ty.is_bool() {
                    self.wrap(ty);
                }
            }
            _ => self.emit(I::I32Load(m)),
        }
    }

    pub fn store_scalar(&mut self, ty: Type, offset: u64) {
        let m = mem(offset, log2_bytes(ty));
        match (ty.kind, ty.bits) {
            (TypeKind::Float, _) => self.emit(I::F32Store(m)),
            (_, 1) | (_, 8) => self.emit(I::I32Store8(m)),
            (_, 16) => self.emit(I::I32Store16(m)),
            _ => self.emit(I::I32Store(m)),
        }
    }

    /// The range of scalar f32 expression `e` here: the lets in scope and
    /// the checked parameters bound its variables.
    fn float_range(&self, e: &Expr) -> FloatRange {
        float_range(e, &|name| {
            self.float_lets
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .or_else(|| self.ctx.param_ranges.iter().find(|(n, _)| n == name))
                .map(|(_, r)| *r)
        })
    }

    /// Records the range of `value` for let `name` when it is a scalar
    /// f32; says whether it did (the caller pops it at the scope's end).
    fn push_float_let(&mut self, name: &str, value: &Expr) -> bool {
        let ty = value.ty();
        if !(ty.is_float() && ty.is_scalar() && ty.bits == 32) {
            return false;
        }
        let range = self.float_range(value);
        self.float_lets.push((name.to_string(), range));
        true
    }

    /// Converts the f32 on the stack to 32-bit-or-narrower integer type
    /// `to`: truncated to the 32-bit range (unsigned only for u32), then
    /// clamped (saturating) or wrapped to the target. `fits` says that
    /// the value is neither NaN nor outside the truncation's range (see
    /// `float_range`): the plain truncation cannot trap then, gives what
    /// the saturating one gives, and V8 compiles it to much less.
    fn float_to_int(&mut self, to: Type, saturating: bool, fits: bool) {
        if to.is_uint() && to.bits == 32 {
            self.emit(if fits {
                I::I32TruncF32U
            } else {
                I::I32TruncSatF32U
            });
            return;
        }
        self.emit(if fits {
            I::I32TruncF32S
        } else {
            I::I32TruncSatF32S
        });
        if saturating {
            self.clamp_i32(true, to);
        } else {
            self.wrap(to);
        }
    }

    /// Converts the value on the stack from `from` to `to` (scalars).
    pub fn cast(&mut self, from: Type, to: Type, saturating: bool) {
        let (from, to) = (from.element(), to.element());
        if from == to {
            return;
        }
        if from.bits == 64 || to.bits == 64 {
            self.cast64(from, to, saturating);
            return;
        }
        if to.is_bool() {
            if from.is_float() {
                self.emit(I::F32Const(0.0f32.into()));
                self.emit(I::F32Ne);
            } else {
                self.emit(I::I32Const(0));
                self.emit(I::I32Ne);
            }
            return;
        }
        if to.is_float() {
            if from.is_float() {
                return;
            }
            if from.is_uint() && from.bits == 32 {
                self.emit(I::F32ConvertI32U);
            } else {
                self.emit(I::F32ConvertI32S);
            }
            return;
        }
        if from.is_float() {
            self.float_to_int(to, saturating, false);
            return;
        }
        // Integer (or bool) to integer.
        if saturating {
            self.clamp_i32(from.is_int(), to);
        } else {
            self.wrap(to);
        }
    }

    /// Casts to or from u64 (the only 64-bit type).
    fn cast64(&mut self, from: Type, to: Type, saturating: bool) {
        if to.bits == 64 {
            if from.is_float() {
                self.emit(I::I64TruncSatF32U);
            } else if from.is_int() {
                if saturating {
                    // max(v, 0)
                    let v = self.set_new_local(ValType::I32);
                    self.emit(I::LocalGet(v));
                    self.emit(I::I32Const(0));
                    self.emit(I::LocalGet(v));
                    self.emit(I::I32Const(0));
                    self.emit(I::I32GtS);
                    self.emit(I::Select);
                }
                self.emit(I::I64ExtendI32S);
            } else {
                self.emit(I::I64ExtendI32U);
            }
            return;
        }
        if to.is_bool() {
            self.emit(I::I64Const(0));
            self.emit(I::I64Ne);
            return;
        }
        if to.is_float() {
            self.emit(I::F32ConvertI64U);
            return;
        }
        if saturating {
            // min_u(v, max)
            let v = self.set_new_local(ValType::I64);
            let max = to.max_value() as i64;
            self.emit(I::LocalGet(v));
            self.emit(I::I64Const(max));
            self.emit(I::LocalGet(v));
            self.emit(I::I64Const(max));
            self.emit(I::I64LtU);
            self.emit(I::Select);
        }
        self.emit(I::I32WrapI64);
        self.wrap(to);
    }

    /// Binary operations on u64 values.
    fn binary64(&mut self, op: BinOp) -> Result<(), CodegenError> {
        let simple = match op {
            BinOp::Add => Some(I::I64Add),
            BinOp::Sub => Some(I::I64Sub),
            BinOp::Mul => Some(I::I64Mul),
            BinOp::BitAnd => Some(I::I64And),
            BinOp::BitOr => Some(I::I64Or),
            BinOp::BitXor => Some(I::I64Xor),
            BinOp::Eq => Some(I::I64Eq),
            BinOp::Ne => Some(I::I64Ne),
            BinOp::Lt => Some(I::I64LtU),
            BinOp::Le => Some(I::I64LeU),
            BinOp::Gt => Some(I::I64GtU),
            BinOp::Ge => Some(I::I64GeU),
            _ => None,
        };
        if let Some(i) = simple {
            self.emit(i);
            return Ok(());
        }
        let b = self.set_new_local(ValType::I64);
        let a = self.set_new_local(ValType::I64);
        match op {
            BinOp::Min | BinOp::Max => {
                self.emit(I::LocalGet(a));
                self.emit(I::LocalGet(b));
                self.emit(I::LocalGet(a));
                self.emit(I::LocalGet(b));
                self.emit(if op == BinOp::Min {
                    I::I64LtU
                } else {
                    I::I64GtU
                });
                self.emit(I::Select);
            }
            BinOp::Div | BinOp::Mod => {
                // x / 0 == x % 0 == 0
                self.emit(I::LocalGet(a));
                self.emit(I::LocalGet(b));
                self.emit(I::I64Const(1));
                self.emit(I::LocalGet(b));
                self.emit(I::I64Eqz);
                self.emit(I::Select);
                self.emit(if op == BinOp::Div {
                    I::I64DivU
                } else {
                    I::I64RemU
                });
                self.emit(I::I64Const(0));
                self.emit(I::LocalGet(b));
                self.emit(I::I64Eqz);
                self.emit(I::I32Eqz);
                self.emit(I::Select);
            }
            BinOp::Shl | BinOp::Shr => {
                // Amounts of 64 or more give 0.
                self.emit(I::LocalGet(a));
                self.emit(I::LocalGet(b));
                self.emit(if op == BinOp::Shl {
                    I::I64Shl
                } else {
                    I::I64ShrU
                });
                self.emit(I::I64Const(0));
                self.emit(I::LocalGet(b));
                self.emit(I::I64Const(64));
                self.emit(I::I64LtU);
                self.emit(I::Select);
            }
            _ => {
                return Err(CodegenError::NotLowered(format!(
                    "operator {} on u64",
                    op.symbol()
                )));
            }
        }
        Ok(())
    }

    /// Clamps an i32 holding a value (signed or unsigned per `signed`) to
    /// the range of integer type `to`, leaving it normalised.
    fn clamp_i32(&mut self, signed: bool, to: Type) {
        let lo = to.min_value() as i64;
        let hi = to.max_value() as i64;
        self.emit(if signed {
            I::I64ExtendI32S
        } else {
            I::I64ExtendI32U
        });
        let v = self.set_new_local(ValType::I64);
        // max(v, lo)
        self.emit(I::I64Const(lo));
        self.emit(I::LocalGet(v));
        self.emit(I::LocalGet(v));
        self.emit(I::I64Const(lo));
        self.emit(I::I64LtS);
        self.emit(I::Select);
        self.emit(I::LocalSet(v));
        // min(v, hi)
        self.emit(I::I64Const(hi));
        self.emit(I::LocalGet(v));
        self.emit(I::LocalGet(v));
        self.emit(I::I64Const(hi));
        self.emit(I::I64GtS);
        self.emit(I::Select);
        self.emit(I::I32WrapI64);
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Result<(), CodegenError> {
        let ty = a.ty().element();
        let float = ty.is_float();
        let signed = ty.is_int();
        if matches!(op, BinOp::Div | BinOp::Mod)
            && !float
            && ty.bits <= 32
            && let Some(c) = b.as_int()
            && c > 0
            && (c <= i32::MAX as i64)
        {
            self.expr(a)?;
            self.div_mod_by_positive_const(op == BinOp::Div, signed, c as i32);
            self.wrap(ty);
            return Ok(());
        }
        self.expr(a)?;
        self.expr(b)?;
        if ty.bits == 64 {
            return self.binary64(op);
        }
        let simple = |op: BinOp| -> Option<I<'static>> {
            Some(match (op, float) {
                (BinOp::Add, true) => I::F32Add,
                (BinOp::Sub, true) => I::F32Sub,
                (BinOp::Mul, true) => I::F32Mul,
                (BinOp::Div, true) => I::F32Div,
                (BinOp::Eq, true) => I::F32Eq,
                (BinOp::Ne, true) => I::F32Ne,
                (BinOp::Lt, true) => I::F32Lt,
                (BinOp::Le, true) => I::F32Le,
                (BinOp::Gt, true) => I::F32Gt,
                (BinOp::Ge, true) => I::F32Ge,
                (BinOp::Eq, false) => I::I32Eq,
                (BinOp::Ne, false) => I::I32Ne,
                (BinOp::Lt, false) if signed => I::I32LtS,
                (BinOp::Le, false) if signed => I::I32LeS,
                (BinOp::Gt, false) if signed => I::I32GtS,
                (BinOp::Ge, false) if signed => I::I32GeS,
                (BinOp::Lt, false) => I::I32LtU,
                (BinOp::Le, false) => I::I32LeU,
                (BinOp::Gt, false) => I::I32GtU,
                (BinOp::Ge, false) => I::I32GeU,
                (BinOp::BitAnd | BinOp::And, false) => I::I32And,
                (BinOp::BitOr | BinOp::Or, false) => I::I32Or,
                (BinOp::BitXor, false) => I::I32Xor,
                _ => return None,
            })
        };
        if let Some(i) = simple(op) {
            self.emit(i);
            return Ok(());
        }
        match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul if !float => {
                self.emit(match op {
                    BinOp::Add => I::I32Add,
                    BinOp::Sub => I::I32Sub,
                    _ => I::I32Mul,
                });
                self.wrap(ty);
            }
            BinOp::Min | BinOp::Max => {
                // `a < b ? a : b` (and `a > b ? a : b`), also for floats:
                // the reference semantics, not IEEE minimum.
                let t = if float { ValType::F32 } else { ValType::I32 };
                let bl = self.set_new_local(t);
                let al = self.set_new_local(t);
                self.emit(I::LocalGet(al));
                self.emit(I::LocalGet(bl));
                self.emit(I::LocalGet(al));
                self.emit(I::LocalGet(bl));
                self.emit(match (op, signed) {
                    (BinOp::Min, _) if float => I::F32Lt,
                    (_, _) if float => I::F32Gt,
                    (BinOp::Min, true) => I::I32LtS,
                    (BinOp::Min, false) => I::I32LtU,
                    (_, true) => I::I32GtS,
                    (_, false) => I::I32GtU,
                });
                self.emit(I::Select);
            }
            BinOp::Div | BinOp::Mod if float => {
                // a - b * floor(a / b)
                let bl = self.set_new_local(ValType::F32);
                let al = self.set_new_local(ValType::F32);
                self.emit(I::LocalGet(al));
                self.emit(I::LocalGet(bl));
                self.emit(I::LocalGet(al));
                self.emit(I::LocalGet(bl));
                self.emit(I::F32Div);
                self.emit(I::F32Floor);
                self.emit(I::F32Mul);
                self.emit(I::F32Sub);
            }
            BinOp::Div | BinOp::Mod => {
                let bl = self.set_new_local(ValType::I32);
                let al = self.set_new_local(ValType::I32);
                self.int_div_mod(op == BinOp::Div, signed, al, bl);
                self.wrap(ty);
            }
            BinOp::Shl | BinOp::Shr => {
                let bl = self.set_new_local(ValType::I32);
                let al = self.set_new_local(ValType::I32);
                self.shift(op == BinOp::Shl, ty, b.ty().element().is_int(), al, bl);
            }
            _ => {
                return Err(CodegenError::NotLowered(format!(
                    "operator {} on {ty}",
                    op.symbol()
                )));
            }
        }
        Ok(())
    }

    /// Euclidean `a / c` or `a % c` for the value on the stack and a
    /// positive constant `c`: no zero or overflow guards needed.
    fn div_mod_by_positive_const(&mut self, div: bool, signed: bool, c: i32) {
        if c.count_ones() == 1 {
            // Floor division by a power of two is a shift; the Euclidean
            // remainder is the low bits (two's complement).
            if div {
                self.emit(I::I32Const(c.trailing_zeros() as i32));
                self.emit(if signed { I::I32ShrS } else { I::I32ShrU });
            } else {
                self.emit(I::I32Const(c - 1));
                self.emit(I::I32And);
            }
            return;
        }
        if !signed {
            self.emit(I::I32Const(c));
            self.emit(if div { I::I32DivU } else { I::I32RemU });
            return;
        }
        let a = self.set_new_local(ValType::I32);
        let r = self.local(ValType::I32);
        self.emit(I::LocalGet(a));
        self.emit(I::I32Const(c));
        self.emit(I::I32RemS);
        self.emit(I::LocalSet(r));
        if div {
            // a / c rounds toward zero; one less when the remainder is negative.
            self.emit(I::LocalGet(a));
            self.emit(I::I32Const(c));
            self.emit(I::I32DivS);
            self.emit(I::LocalGet(r));
            self.emit(I::I32Const(31));
            self.emit(I::I32ShrS);
            self.emit(I::I32Add);
        } else {
            self.emit(I::LocalGet(r));
            self.emit(I::LocalGet(r));
            self.emit(I::I32Const(31));
            self.emit(I::I32ShrS);
            self.emit(I::I32Const(c));
            self.emit(I::I32And);
            self.emit(I::I32Add);
        }
    }

    /// Euclidean division or modulo with `x / 0 == x % 0 == 0`, never
    /// trapping.
    fn int_div_mod(&mut self, div: bool, signed: bool, a: u32, b: u32) {
        // A divisor that cannot trap: 1 in place of 0 (and of -1, whose
        // quotient is computed by negation to avoid the i32::MIN trap).
        let safe = self.local(ValType::I32);
        self.emit(I::LocalGet(b));
        self.emit(I::I32Const(1));
        self.emit(I::LocalGet(b));
        if signed {
            self.emit(I::I32Const(1));
            self.emit(I::I32Add);
            self.emit(I::I32Const(1));
            self.emit(I::I32GtU); // b + 1 > 1 unsigned: b not in {-1, 0}
        }
        self.emit(I::Select);
        self.emit(I::LocalSet(safe));
        if !signed {
            self.emit(I::LocalGet(a));
            self.emit(I::LocalGet(safe));
            self.emit(if div { I::I32DivU } else { I::I32RemU });
        } else {
            let r = self.local(ValType::I32);
            self.emit(I::LocalGet(a));
            self.emit(I::LocalGet(safe));
            self.emit(I::I32RemS);
            self.emit(I::LocalSet(r));
            if div {
                // q = (b == -1 ? -a : a / safe) - (r < 0 ? sign(b) : 0)
                self.emit(I::I32Const(0));
                self.emit(I::LocalGet(a));
                self.emit(I::I32Sub);
                self.emit(I::LocalGet(a));
                self.emit(I::LocalGet(safe));
                self.emit(I::I32DivS);
                self.emit(I::LocalGet(b));
                self.emit(I::I32Const(-1));
                self.emit(I::I32Eq);
                self.emit(I::Select);
                // sign(b) = b > 0 ? 1 : -1, applied only when r < 0
                self.emit(I::I32Const(1));
                self.emit(I::I32Const(-1));
                self.emit(I::LocalGet(b));
                self.emit(I::I32Const(0));
                self.emit(I::I32GtS);
                self.emit(I::Select);
                self.emit(I::I32Const(0));
                self.emit(I::LocalGet(r));
                self.emit(I::I32Const(0));
                self.emit(I::I32LtS);
                self.emit(I::Select);
                self.emit(I::I32Sub);
            } else {
                // r < 0 ? r + |b| : r
                self.emit(I::LocalGet(r));
                self.emit(I::I32Const(0));
                self.emit(I::LocalGet(b));
                self.emit(I::I32Sub);
                self.emit(I::LocalGet(b));
                self.emit(I::LocalGet(b));
                self.emit(I::I32Const(0));
                self.emit(I::I32LtS);
                self.emit(I::Select);
                self.emit(I::I32Add);
                self.emit(I::LocalGet(r));
                self.emit(I::LocalGet(r));
                self.emit(I::I32Const(0));
                self.emit(I::I32LtS);
                self.emit(I::Select);
            }
        }
        // Zero divisor gives 0.
        self.emit(I::I32Const(0));
        self.emit(I::LocalGet(b));
        self.emit(I::Select);
    }

    /// Shifts with Halide's conventions (see the crate docs), computed in
    /// 64 bits so that large amounts need no special case.
    fn shift(&mut self, left: bool, ty: Type, amount_signed: bool, a: u32, b: u32) {
        let signed = ty.is_int();
        let push_value = |s: &mut Self| {
            s.emit(I::LocalGet(a));
            s.emit(if signed {
                I::I64ExtendI32S
            } else {
                I::I64ExtendI32U
            });
        };
        // amount clamped to 63 (unsigned min)
        let clamp = |s: &mut Self, negate: bool| {
            let t = s.local(ValType::I32);
            if negate {
                s.emit(I::I32Const(0));
                s.emit(I::LocalGet(b));
                s.emit(I::I32Sub);
            } else {
                s.emit(I::LocalGet(b));
            }
            s.emit(I::LocalSet(t));
            s.emit(I::LocalGet(t));
            s.emit(I::I32Const(63));
            s.emit(I::LocalGet(t));
            s.emit(I::I32Const(63));
            s.emit(I::I32LtU);
            s.emit(I::Select);
            s.emit(I::I64ExtendI32U);
        };
        let emit_dir = |s: &mut Self, shl: bool, negate: bool| {
            push_value(s);
            clamp(s, negate);
            s.emit(if shl {
                I::I64Shl
            } else if signed {
                I::I64ShrS
            } else {
                I::I64ShrU
            });
            s.emit(I::I32WrapI64);
        };
        emit_dir(self, left, false);
        if amount_signed {
            emit_dir(self, !left, true);
            self.emit(I::LocalGet(b));
            self.emit(I::I32Const(0));
            self.emit(I::I32GeS);
            self.emit(I::Select);
        }
        self.wrap(ty);
    }

    fn call(&mut self, target: &CallTarget, args: &[Expr], ty: Type) -> Result<(), CodegenError> {
        let CallTarget::Intrinsic(intrinsic) = target else {
            return Err(CodegenError::NotLowered(format!("call to {target:?}")));
        };
        let arg_ty = args.first().map(|a| a.ty().element()).unwrap_or(Type::I32);
        match intrinsic {
            Intrinsic::Likely => self.expr(&args[0])?,
            Intrinsic::Sqrt
            | Intrinsic::Floor
            | Intrinsic::Ceil
            | Intrinsic::Trunc
            | Intrinsic::Round => {
                self.expr(&args[0])?;
                self.emit(match intrinsic {
                    Intrinsic::Sqrt => I::F32Sqrt,
                    Intrinsic::Floor => I::F32Floor,
                    Intrinsic::Ceil => I::F32Ceil,
                    Intrinsic::Trunc => I::F32Trunc,
                    _ => I::F32Nearest,
                });
            }
            Intrinsic::IsNan => {
                self.expr(&args[0])?;
                let l = self.set_new_local(ValType::F32);
                self.emit(I::LocalGet(l));
                self.emit(I::LocalGet(l));
                self.emit(I::F32Ne);
            }
            Intrinsic::Reinterpret => {
                self.expr(&args[0])?;
                match (arg_ty.is_float(), ty.is_float()) {
                    (true, false) => self.emit(I::I32ReinterpretF32),
                    (false, true) => self.emit(I::F32ReinterpretI32),
                    (false, false) => self.wrap(ty),
                    (true, true) => {}
                }
            }
            Intrinsic::Abs => {
                self.expr(&args[0])?;
                if arg_ty.is_float() {
                    self.emit(I::F32Abs);
                } else if arg_ty.is_int() {
                    let l = self.set_new_local(ValType::I32);
                    self.emit(I::I32Const(0));
                    self.emit(I::LocalGet(l));
                    self.emit(I::I32Sub);
                    self.emit(I::LocalGet(l));
                    self.emit(I::LocalGet(l));
                    self.emit(I::I32Const(0));
                    self.emit(I::I32LtS);
                    self.emit(I::Select);
                    self.wrap(ty);
                }
            }
            Intrinsic::Absd => {
                self.expr(&args[0])?;
                self.expr(&args[1])?;
                if arg_ty.is_float() {
                    self.emit(I::F32Sub);
                    self.emit(I::F32Abs);
                } else {
                    let bl = self.set_new_local(ValType::I32);
                    let al = self.set_new_local(ValType::I32);
                    // max(a, b) - min(a, b), exact in 32 bits then wrapped.
                    let lt = if arg_ty.is_int() {
                        I::I32LtS
                    } else {
                        I::I32LtU
                    };
                    self.emit(I::LocalGet(bl));
                    self.emit(I::LocalGet(al));
                    self.emit(I::I32Sub);
                    self.emit(I::LocalGet(al));
                    self.emit(I::LocalGet(bl));
                    self.emit(I::I32Sub);
                    self.emit(I::LocalGet(al));
                    self.emit(I::LocalGet(bl));
                    self.emit(lt);
                    self.emit(I::Select);
                    self.wrap(ty);
                }
            }
            other => {
                // Transcendentals and lerp are defined by their expansions.
                let Some(expanded) = argent_ir::math::expand_call(*other, args) else {
                    return Err(CodegenError::NotLowered(format!(
                        "intrinsic {}",
                        other.name()
                    )));
                };
                self.expr(&expanded)?;
            }
        }
        Ok(())
    }

    // ---- statements -------------------------------------------------------

    pub fn stmt(&mut self, s: &Stmt) -> Result<(), CodegenError> {
        match s {
            Stmt::LetStmt { .. } => {
                // A chain of lets is walked in a loop, not by recursion:
                // unrolled and hoisted code nests thousands of them, which
                // overflowed a 2 MiB thread's stack here.
                let mut current = s;
                let mut bound = Vec::new();
                let mut result = Ok(());
                while let Stmt::LetStmt { name, value, body } = current {
                    // The named parts of checked regions are exact too.
                    let binding = if name.contains(".checked_") && value.ty() == Type::I32 {
                        self.bind_exact_let(name, value)
                    } else {
                        self.bind_value(value)
                    };
                    let binding = match binding {
                        Ok(binding) => binding,
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    };
                    self.scopes.push((name.clone(), binding));
                    bound.push(self.push_float_let(name, value));
                    current = body;
                }
                if result.is_ok() {
                    result = self.stmt(current);
                }
                for ranged in bound.into_iter().rev() {
                    if ranged {
                        self.float_lets.pop();
                    }
                    self.scopes.pop();
                }
                result
            }
            Stmt::Assert { cond, kind, args } => self.assert(cond, kind.clone(), args),
            Stmt::ProducerConsumer { body, .. } => self.stmt(body),
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                if self.ctx.outlined.contains(&(s as *const Stmt as usize))
                    && self.outlined_loop(s)?
                {
                    return Ok(());
                }
                self.loop_stmt(var, min, extent, *kind, body)
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => self.with_temporaries(|s| s.store(buffer, index, value)),
            Stmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => self.allocate(buffer, *ty, size, body),
            Stmt::Block(stmts) => {
                let scalar_store = |s: &Stmt| {
                    matches!(s, Stmt::Store { index, value, .. }
                        if index.ty().is_scalar() && value.ty().is_scalar())
                };
                let vector_store = |s: &Stmt| {
                    matches!(s, Stmt::Store { index, value, .. }
                        if index.ty().is_vector() || value.ty().is_vector())
                };
                let mut k = 0;
                while k < stmts.len() {
                    let vectors = stmts[k..].iter().take_while(|s| vector_store(s)).count();
                    if vectors >= 2 && self.ctx.options.simd {
                        self.with_temporaries(|s| s.vector_store_run(&stmts[k..k + vectors]))?;
                        k += vectors;
                        continue;
                    }
                    let run = stmts[k..].iter().take_while(|s| scalar_store(s)).count();
                    if run < 2 {
                        self.stmt(&stmts[k])?;
                        k += 1;
                        continue;
                    }
                    // Consecutive scalar stores (an unrolled loop's) share
                    // their values, except loads of what they store.
                    self.with_temporaries(|s| {
                        let mut cache = Vec::new();
                        for st in &stmts[k..k + run] {
                            if let Stmt::Store {
                                buffer,
                                index,
                                value,
                            } = st
                            {
                                cache = s.scalar_store(buffer, index, value, cache)?;
                                cache.retain(|(e, _, _)| !loads_from(e, buffer));
                            }
                        }
                        Ok::<(), CodegenError>(())
                    })?;
                    k += run;
                }
                Ok(())
            }
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond)?;
                self.emit(I::If(BlockType::Empty));
                self.stmt(then)?;
                if let Some(o) = otherwise {
                    self.emit(I::Else);
                    self.stmt(o)?;
                }
                self.emit(I::End);
                Ok(())
            }
            // Expressions have no side effects, so there is nothing to run.
            Stmt::Evaluate(_) => Ok(()),
            Stmt::Provide { func, .. } | Stmt::Realize { func, .. } => Err(
                CodegenError::NotLowered(format!("multi-dimensional access to {func}")),
            ),
        }
    }

    /// Consecutive vector stores (the rows of an unrolled loop, say) share
    /// the vectors and scalars they compute, as the values of one store
    /// do, except what loads from a buffer stored in between. Two output
    /// rows of a vertical stencil read mostly the same rows of its input:
    /// each is loaded once. Buffers of different names never overlap, and
    /// locals stay reserved until the run ends.
    fn vector_store_run(&mut self, stores: &[Stmt]) -> Result<(), CodegenError> {
        let outer_vectors = self.vector_cache.replace(Vec::new());
        let outer_scalars = self.scalar_cache.replace(Vec::new());
        let r = (|| {
            for st in stores {
                let Stmt::Store {
                    buffer,
                    index,
                    value,
                } = st
                else {
                    unreachable!("a run of vector stores holds stores only");
                };
                let mark = self.checkpoint();
                match self.vstore_statement(buffer, index, value) {
                    Ok(()) => {}
                    Err(crate::simd::VErr::Fatal(e)) => return Err(e),
                    Err(crate::simd::VErr::Unsupported) => {
                        // What the abandoned attempt computed is gone with
                        // its code.
                        self.roll_back(mark);
                        let cached = (self.vector_cache.take(), self.scalar_cache.take());
                        let r = self.store(buffer, index, value);
                        (self.vector_cache, self.scalar_cache) = cached;
                        r?;
                    }
                }
                if let Some(cache) = &mut self.vector_cache {
                    cache.retain(|c| !c.loads_from(buffer));
                }
                if let Some(cache) = &mut self.scalar_cache {
                    cache.retain(|(e, _, _)| !loads_from(e, buffer));
                }
            }
            Ok(())
        })();
        self.vector_cache = outer_vectors;
        self.scalar_cache = outer_scalars;
        r
    }

    fn store(&mut self, buffer: &str, index: &Expr, value: &Expr) -> Result<(), CodegenError> {
        if value.ty().is_vector() || index.ty().is_vector() {
            if self.ctx.options.simd {
                let mark = self.checkpoint();
                match self.vstore(buffer, index, value) {
                    Ok(()) => return Ok(()),
                    Err(crate::simd::VErr::Fatal(e)) => return Err(e),
                    Err(crate::simd::VErr::Unsupported) => self.roll_back(mark),
                }
            }
            let scalar = scalarize_stmt(&Stmt::Store {
                buffer: buffer.to_string(),
                index: index.clone(),
                value: value.clone(),
            });
            return self.stmt(&scalar);
        }
        self.scalar_store(buffer, index, value, Vec::new())?;
        Ok(())
    }

    /// A scalar store with `cache` holding values computed before it (see
    /// `scalar_cache`); returns the cache with this store's values added.
    fn scalar_store(
        &mut self,
        buffer: &str,
        index: &Expr,
        value: &Expr,
        cache: Vec<ScalarCached>,
    ) -> Result<Vec<ScalarCached>, CodegenError> {
        let buf = self.buffer(buffer)?;
        let outer = self.scalar_cache.replace(cache);
        let outer_scopes = std::mem::replace(&mut self.statement_scopes, self.scopes.len());
        let r = (|| {
            let offset = self.address(&buf, index)?;
            self.expr(value)?;
            self.store_scalar(buf.ty, offset);
            Ok(())
        })();
        self.statement_scopes = outer_scopes;
        let cache = std::mem::replace(&mut self.scalar_cache, outer).unwrap_or_default();
        r.map(|()| cache)
    }

    /// Records a check and returns its status code.
    pub(crate) fn register_assert(&mut self, kind: AssertKind, arg_types: Vec<Type>) -> i32 {
        self.ctx.asserts.push(AssertInfo { kind, arg_types });
        self.ctx.asserts.len() as i32
    }

    fn assert(&mut self, cond: &Expr, kind: AssertKind, args: &[Expr]) -> Result<(), CodegenError> {
        let code = self.register_assert(kind.clone(), args.iter().map(|a| a.ty()).collect());
        // Region checks compare exact values: a region past 2^31 must not
        // wrap into one that passes.
        if matches!(
            kind,
            AssertKind::InputTooSmall { .. } | AssertKind::OutputTooSmall { .. }
        ) && args.iter().all(|a| a.ty() == Type::I32)
        {
            return self.exact_region_check(cond, &kind, args, code);
        }
        self.expr(cond)?;
        self.emit(I::I32Eqz);
        self.emit(I::If(BlockType::Empty));
        for (k, arg) in args.iter().enumerate() {
            self.emit(I::LocalGet(self.args_ptr));
            self.expr(arg)?;
            if arg.ty().is_float() {
                self.emit(I::I32ReinterpretF32);
            }
            let offset = self.ctx.error_args_offset as u64 + 4 * k as u64;
            self.emit(I::I32Store(mem(offset, 2)));
        }
        self.fail(code);
        self.emit(I::End);
        Ok(())
    }

    /// A loop, run here: a task when it is parallel and threads are on
    /// (and this is not a task), else serially.
    pub(crate) fn loop_stmt(
        &mut self,
        var: &str,
        min: &Expr,
        extent: &Expr,
        kind: ForKind,
        body: &Stmt,
    ) -> Result<(), CodegenError> {
        if kind == ForKind::Parallel && self.ctx.options.threads && !self.in_task {
            let mark = self.code.len();
            match self.parallel_for(var, min, extent, body) {
                Ok(true) => return Ok(()),
                Ok(false) => self.code.truncate(mark),
                Err(e) => return Err(e),
            }
        }
        self.serial_for(var, min, extent, body)
    }

    /// The ranges known of those of `names` that are f32 lets in scope.
    pub(crate) fn float_lets_of(&self, names: &[String]) -> Vec<(String, FloatRange)> {
        self.float_lets
            .iter()
            .filter(|(n, _)| names.contains(n))
            .cloned()
            .collect()
    }

    pub(crate) fn set_float_lets(&mut self, lets: Vec<(String, FloatRange)>) {
        self.float_lets = lets;
    }

    fn serial_for(
        &mut self,
        var: &str,
        min: &Expr,
        extent: &Expr,
        body: &Stmt,
    ) -> Result<(), CodegenError> {
        self.expr(min)?;
        let i = self.set_new_local(ValType::I32);
        self.emit(I::LocalGet(i));
        self.expr(extent)?;
        self.emit(I::I32Add);
        let end = self.set_new_local(ValType::I32);
        self.emit(I::Block(BlockType::Empty));
        self.emit(I::LocalGet(i));
        self.emit(I::LocalGet(end));
        self.emit(I::I32GeS);
        self.emit(I::BrIf(0));
        // Only once the loop is known to run: nothing is computed for
        // loops that do not.
        let bound = crate::hoist::names_bound_in(body, var);
        // Only out of innermost loops: values hoisted further out stay live
        // across the inner loops, and the engine then spills them there.
        let innermost = !argent_ir::visit::has_loop(body);
        let scalars = if innermost {
            self.hoist_scalars(&bound, body)?
        } else {
            Vec::new()
        };
        let addresses = self.hoisted_addresses.len();
        self.hoist_addresses(var, i, &bound, body)?;
        let hoisted = self.hoisted_splats.len();
        let vectors = self.hoisted_vectors.len();
        if self.ctx.options.simd && innermost {
            self.hoist_splats(&bound, body)?;
            self.hoist_vectors(&bound, body)?;
        }
        self.emit(I::Loop(BlockType::Empty));
        self.scopes.push((
            var.to_string(),
            Binding::Scalar {
                local: i,
                ty: Type::I32,
            },
        ));
        let r = self.stmt(body);
        self.scopes.pop();
        self.advance_hoisted_addresses(addresses);
        self.hoisted_splats.truncate(hoisted);
        self.hoisted_vectors.truncate(vectors);
        self.hoisted_addresses.truncate(addresses);
        for e in &scalars {
            self.hoisted_scalars.remove(&crate::hoist::node_key(e));
        }
        r?;
        self.emit(I::LocalGet(i));
        self.emit(I::I32Const(1));
        self.emit(I::I32Add);
        self.emit(I::LocalTee(i));
        self.emit(I::LocalGet(end));
        self.emit(I::I32LtS);
        self.emit(I::BrIf(0));
        self.emit(I::End);
        self.emit(I::End);
        Ok(())
    }

    fn heap_load(&mut self) {
        self.emit(I::LocalGet(self.args_ptr));
        if self.ctx.options.threads {
            self.emit(I::I32AtomicLoad(mem(0, 2)));
        } else {
            self.emit(I::I32Load(mem(0, 2)));
        }
    }

    /// Carves `bytes` (an i64 local) from the heap; returns (old top, base,
    /// end) locals. Fails the run with `code` when it cannot.
    fn heap_alloc(&mut self, bytes: u32, code: i32) -> (u32, u32, u32) {
        let threads = self.ctx.options.threads;
        let old = self.local(ValType::I32);
        let base = self.local(ValType::I32);
        let end = self.local(ValType::I32);
        let end64 = self.local(ValType::I64);
        let have = self.local(ValType::I64);
        if threads {
            self.emit(I::Loop(BlockType::Empty));
        }
        self.heap_load();
        self.emit(I::LocalTee(old));
        self.emit(I::I32Const(15));
        self.emit(I::I32Add);
        self.emit(I::I32Const(-16));
        self.emit(I::I32And);
        self.emit(I::LocalSet(base));
        self.emit(I::LocalGet(base));
        self.emit(I::I64ExtendI32U);
        self.emit(I::LocalGet(bytes));
        self.emit(I::I64Add);
        self.emit(I::I64Const(HEAP_PADDING));
        self.emit(I::I64Add);
        self.emit(I::LocalTee(end64));
        // Wasm32 addresses stop at 4 GiB; base < 16 covers a heap top that
        // wrapped when it was aligned.
        self.emit(I::I64Const(1 << 32));
        self.emit(I::I64GeU);
        self.emit(I::LocalGet(base));
        self.emit(I::I32Const(16));
        self.emit(I::I32LtU);
        self.emit(I::I32Or);
        self.emit(I::If(BlockType::Empty));
        self.write_alloc_error_args(bytes);
        self.fail(code);
        self.emit(I::End);
        // Grow the memory until the block fits.
        self.emit(I::MemorySize(0));
        self.emit(I::I64ExtendI32U);
        self.emit(I::I64Const(16));
        self.emit(I::I64Shl);
        self.emit(I::LocalTee(have));
        self.emit(I::LocalGet(end64));
        self.emit(I::I64LtU);
        self.emit(I::If(BlockType::Empty));
        self.emit(I::LocalGet(end64));
        self.emit(I::LocalGet(have));
        self.emit(I::I64Sub);
        self.emit(I::I64Const(0xffff));
        self.emit(I::I64Add);
        self.emit(I::I64Const(16));
        self.emit(I::I64ShrU);
        self.emit(I::I32WrapI64);
        self.emit(I::MemoryGrow(0));
        self.emit(I::I32Const(-1));
        self.emit(I::I32Eq);
        self.emit(I::If(BlockType::Empty));
        // Another thread may have grown the memory in the meantime.
        self.emit(I::MemorySize(0));
        self.emit(I::I64ExtendI32U);
        self.emit(I::I64Const(16));
        self.emit(I::I64Shl);
        self.emit(I::LocalGet(end64));
        self.emit(I::I64LtU);
        self.emit(I::If(BlockType::Empty));
        self.write_alloc_error_args(bytes);
        self.fail(code);
        self.emit(I::End);
        self.emit(I::End);
        self.emit(I::End);
        self.emit(I::LocalGet(end64));
        self.emit(I::I32WrapI64);
        self.emit(I::LocalSet(end));
        if threads {
            self.emit(I::LocalGet(self.args_ptr));
            self.emit(I::LocalGet(old));
            self.emit(I::LocalGet(end));
            self.emit(I::I32AtomicRmwCmpxchg(mem(0, 2)));
            self.emit(I::LocalGet(old));
            self.emit(I::I32Ne);
            self.emit(I::BrIf(0));
            self.emit(I::End);
        } else {
            self.emit(I::LocalGet(self.args_ptr));
            self.emit(I::LocalGet(end));
            self.emit(I::I32Store(mem(0, 2)));
        }
        (old, base, end)
    }

    fn write_alloc_error_args(&mut self, bytes: u32) {
        let offset = self.ctx.error_args_offset as u64;
        self.emit(I::LocalGet(self.args_ptr));
        self.emit(I::LocalGet(bytes));
        self.emit(I::I32WrapI64);
        self.emit(I::I32Store(mem(offset, 2)));
        self.emit(I::LocalGet(self.args_ptr));
        self.emit(I::LocalGet(bytes));
        self.emit(I::I64Const(32));
        self.emit(I::I64ShrU);
        self.emit(I::I32WrapI64);
        self.emit(I::I32Store(mem(offset + 4, 2)));
    }

    /// Gives a heap block back (LIFO; with threads only while it is the top).
    fn heap_free(&mut self, old: u32, end: u32) {
        self.emit(I::LocalGet(self.args_ptr));
        if self.ctx.options.threads {
            self.emit(I::LocalGet(end));
            self.emit(I::LocalGet(old));
            self.emit(I::I32AtomicRmwCmpxchg(mem(0, 2)));
            self.emit(I::Drop);
        } else {
            self.emit(I::LocalGet(old));
            self.emit(I::I32Store(mem(0, 2)));
        }
    }

    fn allocate(
        &mut self,
        buffer: &str,
        ty: Type,
        size: &Expr,
        body: &Stmt,
    ) -> Result<(), CodegenError> {
        let elem = ty.element();
        memory_type(elem)?;
        let code = self.register_assert(
            AssertKind::AllocationTooLarge {
                buffer: buffer.to_string(),
            },
            vec![Type::U32, Type::U32],
        );
        // bytes = max(size, 0) * element size, in 64 bits.
        self.expr(size)?;
        self.emit(I::I64ExtendI32S);
        let s = self.set_new_local(ValType::I64);
        self.emit(I::LocalGet(s));
        self.emit(I::I64Const(0));
        self.emit(I::LocalGet(s));
        self.emit(I::I64Const(0));
        self.emit(I::I64GtS);
        self.emit(I::Select);
        self.emit(I::I64Const(elem.bytes() as i64 * ty.lanes as i64));
        self.emit(I::I64Mul);
        let bytes = self.set_new_local(ValType::I64);
        // Task bodies run on many threads at once: they allocate from their
        // thread's arena, so blocks are reclaimed in order on every thread
        // and one iteration's buffers are reused by the next.
        let arena = self.in_task && self.ctx.options.threads;
        let (old, base, end) = if arena {
            let (saved, base) = self.arena_alloc(bytes, code);
            (saved, base, saved)
        } else {
            self.heap_alloc(bytes, code)
        };
        self.buffers.push(BufBinding {
            name: buffer.to_string(),
            base,
            ty: elem,
            input: false,
        });
        let r = self.stmt(body);
        self.buffers.pop();
        r?;
        if arena {
            self.arena_free(old);
        } else {
            self.heap_free(old, end);
        }
        Ok(())
    }

    /// Carves `bytes` (an i64 local) from this thread's arena, taking a
    /// larger arena from the shared heap when the block does not fit.
    /// Returns (saved arena top, base) locals; fails the run with `code`.
    fn arena_alloc(&mut self, bytes: u32, code: i32) -> (u32, u32) {
        let saved = self.local(ValType::I32);
        let base = self.local(ValType::I32);
        let end64 = self.local(ValType::I64);
        // An arena left from an earlier run points at freed memory.
        self.emit(I::GlobalGet(ARENA_RUN));
        self.emit(I::LocalGet(self.args_ptr));
        self.emit(I::I32Load(mem(4, 2)));
        self.emit(I::I32Ne);
        self.emit(I::If(BlockType::Empty));
        self.emit(I::LocalGet(self.args_ptr));
        self.emit(I::I32Load(mem(4, 2)));
        self.emit(I::GlobalSet(ARENA_RUN));
        for g in [ARENA_BASE, ARENA_TOP, ARENA_END] {
            self.emit(I::I32Const(0));
            self.emit(I::GlobalSet(g));
        }
        self.emit(I::End);
        // end64 = align16(top) + bytes + padding, in 64 bits.
        self.emit(I::GlobalGet(ARENA_TOP));
        self.emit(I::I64ExtendI32U);
        self.emit(I::I64Const(15));
        self.emit(I::I64Add);
        self.emit(I::I64Const(-16));
        self.emit(I::I64And);
        self.emit(I::LocalGet(bytes));
        self.emit(I::I64Add);
        self.emit(I::I64Const(HEAP_PADDING));
        self.emit(I::I64Add);
        self.emit(I::LocalSet(end64));
        self.emit(I::GlobalGet(ARENA_TOP));
        self.emit(I::LocalSet(saved));
        self.emit(I::LocalGet(end64));
        self.emit(I::GlobalGet(ARENA_END));
        self.emit(I::I64ExtendI32U);
        self.emit(I::I64GtU);
        self.emit(I::If(BlockType::Empty));
        {
            // A new arena holds what the thread has live now plus this
            // block, so the same nesting fits without a refill next time;
            // the old arena stays live (its blocks enclose this one) until
            // `run` returns.
            let size = self.local(ValType::I64);
            let doubled = self.local(ValType::I64);
            self.emit(I::GlobalGet(ARENA_TOP));
            self.emit(I::GlobalGet(ARENA_BASE));
            self.emit(I::I32Sub);
            self.emit(I::I64ExtendI32U);
            self.emit(I::LocalGet(bytes));
            self.emit(I::I64Add);
            self.emit(I::I64Const(HEAP_PADDING + 16));
            self.emit(I::I64Add);
            self.emit(I::LocalSet(size));
            self.emit(I::GlobalGet(ARENA_END));
            self.emit(I::GlobalGet(ARENA_BASE));
            self.emit(I::I32Sub);
            self.emit(I::I64ExtendI32U);
            self.emit(I::I64Const(1));
            self.emit(I::I64Shl);
            self.emit(I::I64Const(ARENA_MIN_BYTES));
            self.max_i64_on_stack();
            self.emit(I::I64Const(ARENA_DOUBLING_LIMIT));
            self.min_i64_on_stack();
            self.emit(I::LocalSet(doubled));
            self.emit(I::LocalGet(size));
            self.emit(I::LocalGet(doubled));
            self.max_i64_on_stack();
            self.emit(I::I64Const(ARENA_GAP_BYTES));
            self.emit(I::I64Add);
            self.emit(I::LocalSet(size));
            let (_, chunk_base, chunk_end) = self.heap_alloc(size, code);
            self.emit(I::LocalGet(chunk_base));
            self.emit(I::GlobalSet(ARENA_BASE));
            self.emit(I::LocalGet(chunk_base));
            self.emit(I::GlobalSet(ARENA_TOP));
            // The arena ends before the gap (see ARENA_GAP_BYTES).
            self.emit(I::LocalGet(chunk_end));
            self.emit(I::I32Const(ARENA_GAP_BYTES as i32));
            self.emit(I::I32Sub);
            self.emit(I::GlobalSet(ARENA_END));
            self.emit(I::LocalGet(chunk_base));
            self.emit(I::LocalSet(saved));
            self.emit(I::LocalGet(chunk_base));
            self.emit(I::I64ExtendI32U);
            self.emit(I::LocalGet(bytes));
            self.emit(I::I64Add);
            self.emit(I::I64Const(HEAP_PADDING));
            self.emit(I::I64Add);
            self.emit(I::LocalSet(end64));
        }
        self.emit(I::End);
        self.emit(I::LocalGet(end64));
        self.emit(I::LocalGet(bytes));
        self.emit(I::I64Sub);
        self.emit(I::I64Const(HEAP_PADDING));
        self.emit(I::I64Sub);
        self.emit(I::I32WrapI64);
        self.emit(I::LocalSet(base));
        self.emit(I::LocalGet(end64));
        self.emit(I::I32WrapI64);
        self.emit(I::GlobalSet(ARENA_TOP));
        (saved, base)
    }

    /// Gives an arena block back. When a nested allocation replaced the
    /// arena, `saved` lies in the old one, and everything in the current
    /// arena was nested inside this block, so the whole arena is free.
    fn arena_free(&mut self, saved: u32) {
        self.emit(I::LocalGet(saved));
        self.emit(I::GlobalGet(ARENA_BASE));
        self.emit(I::LocalGet(saved));
        self.emit(I::GlobalGet(ARENA_BASE));
        self.emit(I::I32GeU);
        self.emit(I::LocalGet(saved));
        self.emit(I::GlobalGet(ARENA_END));
        self.emit(I::I32LeU);
        self.emit(I::I32And);
        self.emit(I::Select);
        self.emit(I::GlobalSet(ARENA_TOP));
    }

    /// Replaces the two i64 values on the stack by their unsigned maximum.
    fn max_i64_on_stack(&mut self) {
        let b = self.set_new_local(ValType::I64);
        let a = self.set_new_local(ValType::I64);
        self.emit(I::LocalGet(a));
        self.emit(I::LocalGet(b));
        self.emit(I::LocalGet(a));
        self.emit(I::LocalGet(b));
        self.emit(I::I64GtU);
        self.emit(I::Select);
    }

    /// Replaces the two i64 values on the stack by their unsigned minimum.
    fn min_i64_on_stack(&mut self) {
        let b = self.set_new_local(ValType::I64);
        let a = self.set_new_local(ValType::I64);
        self.emit(I::LocalGet(a));
        self.emit(I::LocalGet(b));
        self.emit(I::LocalGet(a));
        self.emit(I::LocalGet(b));
        self.emit(I::I64LtU);
        self.emit(I::Select);
    }

    /// Outlines a parallel loop body into a task; returns false (emitting
    /// nothing useful) when the body captures something a closure cannot
    /// hold, so the caller runs the loop serially.
    fn parallel_for(
        &mut self,
        var: &str,
        min: &Expr,
        extent: &Expr,
        body: &Stmt,
    ) -> Result<bool, CodegenError> {
        // A closure holds 32-bit words: no 64-bit captures.
        let Some(Captures {
            scalars,
            buffers: bufs,
        }) = self.captures(body, Some(var))
        else {
            return Ok(false);
        };
        if scalars.iter().any(|(_, _, ty)| ty.bits > 32) {
            return Ok(false);
        }
        let task_index = self.ctx.task_count() as u32;
        // Reserve the slot so nested tasks get later indices.
        let captures: Vec<String> = scalars
            .iter()
            .map(|(n, _, _)| n.clone())
            .chain(bufs.iter().map(|b| b.name.clone()))
            .collect();
        let info = TaskInfo {
            export: format!("task_{task_index}"),
            loop_var: var.to_string(),
            captures: captures.clone(),
        };
        let slot = self.ctx.reserve_function(Some(info), TYPE_TASK);

        // The task function.
        let function = {
            let mut task = FnBuilder::new(&mut *self.ctx, 2, true);
            let closure = 0;
            task.args_ptr = task.local(ValType::I32);
            task.emit(I::LocalGet(closure));
            task.emit(I::I32Load(mem(0, 2)));
            task.emit(I::LocalSet(task.args_ptr));
            for (k, (name, _, ty)) in scalars.iter().enumerate() {
                task.emit(I::LocalGet(closure));
                let m = mem(4 + 4 * k as u64, 2);
                let t = val_type(*ty)?;
                task.emit(if t == ValType::F32 {
                    I::F32Load(m)
                } else {
                    I::I32Load(m)
                });
                let local = task.set_new_local(t);
                task.scopes
                    .push((name.clone(), Binding::Scalar { local, ty: *ty }));
            }
            for (k, b) in bufs.iter().enumerate() {
                task.emit(I::LocalGet(closure));
                task.emit(I::I32Load(mem(4 + 4 * (scalars.len() + k) as u64, 2)));
                let base = task.set_new_local(ValType::I32);
                task.buffers.push(BufBinding {
                    name: b.name.clone(),
                    base,
                    ty: b.ty,
                    input: b.input,
                });
            }
            task.scopes.push((
                var.to_string(),
                Binding::Scalar {
                    local: 1,
                    ty: Type::I32,
                },
            ));
            task.stmt(body)?;
            task.emit(I::I32Const(0));
            task.finish()
        };
        self.ctx.fill_function(slot, function);

        // The closure, on the heap.
        let code = self.register_assert(
            AssertKind::AllocationTooLarge {
                buffer: format!("closure of task_{task_index}"),
            },
            vec![Type::U32, Type::U32],
        );
        self.emit(I::I64Const(4 + 4 * captures.len() as i64));
        let bytes = self.set_new_local(ValType::I64);
        let (old, base, end) = self.heap_alloc(bytes, code);
        self.emit(I::LocalGet(base));
        self.emit(I::LocalGet(self.args_ptr));
        self.emit(I::I32Store(mem(0, 2)));
        for (k, (_, local, ty)) in scalars.iter().enumerate() {
            self.emit(I::LocalGet(base));
            self.emit(I::LocalGet(*local));
            let m = mem(4 + 4 * k as u64, 2);
            self.emit(if ty.is_float() {
                I::F32Store(m)
            } else {
                I::I32Store(m)
            });
        }
        for (k, b) in bufs.iter().enumerate() {
            self.emit(I::LocalGet(base));
            self.emit(I::LocalGet(b.base));
            self.emit(I::I32Store(mem(4 + 4 * (scalars.len() + k) as u64, 2)));
        }
        self.emit(I::I32Const(task_index as i32));
        self.emit(I::LocalGet(base));
        self.expr(min)?;
        self.expr(extent)?;
        self.emit(I::Call(self.ctx.parallel_for));
        let status = self.set_new_local(ValType::I32);
        self.heap_free(old, end);
        self.return_if_failed(status);
        Ok(true)
    }

    /// Returns the status in local `status` when it is not 0 (a check
    /// failed in a function called).
    pub(crate) fn return_if_failed(&mut self, status: u32) {
        self.emit(I::LocalGet(status));
        self.emit(I::If(BlockType::Empty));
        self.emit(I::LocalGet(status));
        self.emit(I::Return);
        self.emit(I::End);
    }

    /// What a statement run in another function (a task, an outlined loop)
    /// needs from this one: the scalars in scope it mentions (all but
    /// `bound_there`, the loop variable the callee binds itself) and the
    /// buffers. `None` when it mentions a vector value or an internal
    /// name, which cannot be passed.
    pub(crate) fn captures(&self, s: &Stmt, bound_there: Option<&str>) -> Option<Captures> {
        let (vars, buffers) = names_in(s);
        let mut scalars = Vec::new();
        for name in &vars {
            if Some(name.as_str()) == bound_there {
                continue;
            }
            match self.lookup(name) {
                Some(Binding::Scalar { local, ty }) => scalars.push((name.clone(), *local, *ty)),
                Some(Binding::Vector(_) | Binding::Lanes { .. }) => return None,
                None if name.contains('#') => return None,
                None => {}
            }
        }
        let buffers = buffers.iter().filter_map(|b| self.buffer(b).ok()).collect();
        Some(Captures { scalars, buffers })
    }
}

/// The values a statement run in another function takes from its caller
/// (see [`FnBuilder::captures`]).
pub(crate) struct Captures {
    /// Name, local and type of each scalar, in name order.
    pub scalars: Vec<(String, u32, Type)>,
    /// The buffers, in name order.
    pub buffers: Vec<BufBinding>,
}

/// Whether two names are equal, looking at their last bytes before
/// comparing them whole: the names in scope share long prefixes and
/// mostly differ at the end (`f.s0.x.x.invariant61` and `..62`), and in
/// the page a whole comparison is a call.
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().last() == b.as_bytes().last() && a == b
}

/// The variable and buffer names `s` mentions, each in name order.
pub(crate) fn names_in(s: &Stmt) -> (Vec<String>, Vec<String>) {
    let mut names = NameCollector::default();
    names.visit_stmt(s);
    names.sorted()
}

/// Variable and buffer names a statement mentions.
#[derive(Default)]
struct NameCollector {
    /// Hash sets, sorted once at the end: a parallel loop's body is most
    /// of the pipeline, and ordering every use against a tree of long
    /// names with a shared prefix cost a few per cent of a compile.
    vars: FastHashSet<String>,
    buffers: FastHashSet<String>,
}

impl NameCollector {
    /// The variables and the buffers, each in name order (the order of a
    /// task's captures, so the module does not depend on hashing).
    fn sorted(self) -> (Vec<String>, Vec<String>) {
        let sort = |set: FastHashSet<String>| {
            let mut v: Vec<String> = set.into_iter().collect();
            v.sort_unstable();
            v
        };
        (sort(self.vars), sort(self.buffers))
    }
}

impl Visitor for NameCollector {
    fn visit_expr(&mut self, e: &Expr) {
        // A name recurs at every use: look it up before copying it.
        match e.kind() {
            ExprKind::Var(n) if !self.vars.contains(n.as_str()) => {
                self.vars.insert(n.clone());
            }
            ExprKind::Load { buffer, .. } if !self.buffers.contains(buffer.as_str()) => {
                self.buffers.insert(buffer.clone());
            }
            _ => {}
        }
        walk_expr(self, e);
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        if let Stmt::Store { buffer, .. } = s
            && !self.buffers.contains(buffer.as_str())
        {
            self.buffers.insert(buffer.clone());
        }
        walk_stmt(self, s);
    }
}

/// The largest number of arguments any check writes.
fn max_assert_args(s: &Stmt) -> usize {
    struct Max(usize);
    impl Visitor for Max {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Assert { args, .. } = s {
                self.0 = self.0.max(args.len());
            }
            walk_stmt(self, s);
        }
    }
    let mut m = Max(2);
    m.visit_stmt(s);
    m.0
}

/// The declared ranges of the f32 parameters that `module`'s body checks
/// (`ParamOutOfRange`) before it runs anything else: in the leading
/// asserts of its outermost blocks, before any let. Code generation may
/// assume those ranges everywhere; a module built without the checks
/// gets no ranges.
fn checked_param_ranges(module: &Module) -> Vec<(String, FloatRange)> {
    let mut checked = Vec::new();
    let mut s = &module.body;
    while let Stmt::Block(stmts) = s {
        let mut rest = stmts.iter();
        let mut next = None;
        for st in rest.by_ref() {
            match st {
                Stmt::Assert {
                    kind: AssertKind::ParamOutOfRange { param },
                    ..
                } => checked.push(param.clone()),
                Stmt::Assert { .. } => {}
                other => {
                    next = Some(other);
                    break;
                }
            }
        }
        // Only a block whose first statements are all checks goes on.
        match (next, rest.next()) {
            (Some(inner), None) => s = inner,
            _ => break,
        }
    }
    module
        .params
        .iter()
        .filter(|p| p.ty == Type::F32 && checked.contains(&p.name))
        .filter_map(|p| {
            let (lo, hi) = p.range?;
            // The bounds as the f32 values the check compares with.
            let (lo, hi) = (f64::from(lo as f32), f64::from(hi as f32));
            (lo <= hi).then(|| (p.name.clone(), FloatRange { lo, hi, nan: false }))
        })
        .collect()
}

/// Binds every descriptor field (`in.min.0`, ...) and parameter of the
/// argument block at `args_ptr` (local 0) to a local of `f`.
fn bind_arguments(
    f: &mut FnBuilder,
    buffers: &[BufferAbi],
    params: &[ParamAbi],
) -> Result<(), CodegenError> {
    for b in buffers {
        f.emit(I::LocalGet(0));
        f.emit(I::I32Load(mem(b.offset as u64, 2)));
        let base = f.set_new_local(ValType::I32);
        f.buffers.push(BufBinding {
            name: b.name.clone(),
            base,
            ty: b.ty.element(),
            input: b.role == BufferRole::Input,
        });
        for d in 0..b.dims {
            for (k, field) in ["min", "extent", "stride"].into_iter().enumerate() {
                f.emit(I::LocalGet(0));
                f.emit(I::I32Load(mem(
                    (b.offset + 4 + 12 * d as u32 + 4 * k as u32) as u64,
                    2,
                )));
                let local = f.set_new_local(ValType::I32);
                f.scopes.push((
                    argent_ir::buffer_field(&b.name, field, d),
                    Binding::Scalar {
                        local,
                        ty: Type::I32,
                    },
                ));
            }
        }
    }
    for p in params {
        f.emit(I::LocalGet(0));
        let m = mem(p.offset as u64, 2);
        if p.ty.is_float() {
            f.emit(I::F32Load(m));
        } else {
            f.emit(I::I32Load(m));
            f.wrap(p.ty);
        }
        let local = f.set_new_local(val_type(p.ty)?);
        f.scopes
            .push((p.name.clone(), Binding::Scalar { local, ty: p.ty }));
    }
    Ok(())
}

pub(crate) fn compile_module(
    module: &Module,
    options: &CodegenOptions,
    outlining: crate::outline::Outlining,
) -> Result<CompiledModule, CodegenError> {
    // Layout of the argument block.
    let mut offset = 8u32;
    let mut buffers = Vec::new();
    for b in &module.buffers {
        memory_type(b.ty.element())?;
        buffers.push(BufferAbi {
            name: b.name.clone(),
            ty: b.ty,
            dims: b.dims,
            role: b.role,
            offset,
        });
        offset += 4 + 12 * b.dims as u32;
    }
    let mut params = Vec::new();
    for p in &module.params {
        memory_type(p.ty)?;
        params.push(ParamAbi {
            name: p.name.clone(),
            ty: p.ty,
            offset,
        });
        offset += 4;
    }
    let error_args_offset = offset;
    let max_error_args = max_assert_args(&module.body) as u32;
    let body = if options.simd {
        module.body.clone()
    } else {
        scalarize_stmt(&module.body)
    };
    // The bounds query's regions follow the error arguments.
    let region_slots: Option<Vec<RegionSlot>> = crate::query::region_checks(&body).map(|checks| {
        checks
            .into_iter()
            .enumerate()
            .map(|(k, (input, dim))| RegionSlot {
                input,
                dim,
                offset: error_args_offset + 4 * max_error_args + 8 * k as u32,
            })
            .collect()
    });
    let slots_bytes = 8 * region_slots.as_ref().map_or(0, Vec::len) as u32;
    let args_size = (error_args_offset + 4 * max_error_args + slots_bytes).div_ceil(16) * 16;
    let n_imports = if options.threads { 1 } else { 0 };
    let mut ctx = Ctx {
        options: *options,
        asserts: Vec::new(),
        functions: Vec::new(),
        first_function: n_imports + 2,
        types: Vec::new(),
        outlined: crate::outline::loops_to_outline(&body, options.threads, outlining),
        error_args_offset,
        parallel_for: 0,
        param_ranges: checked_param_ranges(module),
        most_locals: 0,
    };

    // `body(args_ptr)`: binds the descriptor fields and runs the pipeline.
    let body_fn = {
        let mut f = FnBuilder::new(&mut ctx, 1, false);
        f.args_ptr = 0;
        bind_arguments(&mut f, &buffers, &params)?;
        f.stmt(&body)?;
        f.emit(I::I32Const(0));
        f.finish()
    };
    // `query(args_ptr)`: the regions of the inputs a run would read.
    let query_fn = match &region_slots {
        Some(slots) => {
            // The query skips the parameter checks, so its code may not
            // assume their ranges: a value outside one must not trap.
            ctx.param_ranges.clear();
            ctx.outlined.clear();
            let mut f = FnBuilder::new(&mut ctx, 1, false);
            f.args_ptr = 0;
            bind_arguments(&mut f, &buffers, &params)?;
            f.query(&body, slots)?;
            f.emit(I::I32Const(0));
            Some(f.finish())
        }
        None => None,
    };
    let run_index = n_imports;
    let body_index = n_imports + 1;
    let query_index = n_imports + 2 + ctx.functions.len() as u32;
    // `run(args_ptr)`: restores the heap top whatever happens.
    let run_fn = {
        let mut f = Function::new_with_locals_types([ValType::I32, ValType::I32]);
        f.instruction(&I::LocalGet(0));
        f.instruction(&I::I32Load(mem(0, 2)));
        f.instruction(&I::LocalSet(1));
        if options.threads {
            // A new run number makes every thread's arena from earlier
            // runs stale (their memory is given back below).
            f.instruction(&I::LocalGet(0));
            f.instruction(&I::LocalGet(0));
            f.instruction(&I::I32Load(mem(4, 2)));
            f.instruction(&I::I32Const(1));
            f.instruction(&I::I32Add);
            f.instruction(&I::I32Store(mem(4, 2)));
        }
        f.instruction(&I::LocalGet(0));
        f.instruction(&I::Call(body_index));
        f.instruction(&I::LocalSet(2));
        f.instruction(&I::LocalGet(0));
        f.instruction(&I::LocalGet(1));
        f.instruction(&I::I32Store(mem(0, 2)));
        f.instruction(&I::LocalGet(2));
        f.instruction(&I::End);
        f
    };
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32], [ValType::I32]);
    types
        .ty()
        .function([ValType::I32, ValType::I32], [ValType::I32]);
    types.ty().function([ValType::I32; 4], [ValType::I32]);
    for params in &ctx.types {
        types.ty().function(params.iter().copied(), [ValType::I32]);
    }
    let mut imports = ImportSection::new();
    imports.import(
        "env",
        "memory",
        EntityType::Memory(MemoryType {
            minimum: 1,
            maximum: options.threads.then_some(65536),
            memory64: false,
            shared: options.threads,
            page_size_log2: None,
        }),
    );
    if options.threads {
        imports.import(
            "env",
            "parallel_for",
            EntityType::Function(TYPE_PARALLEL_FOR),
        );
    }
    let mut functions = FunctionSection::new();
    functions.function(TYPE_RUN);
    functions.function(TYPE_RUN);
    for (_, type_index, _) in &ctx.functions {
        functions.function(*type_index);
    }
    if query_fn.is_some() {
        functions.function(TYPE_RUN);
    }
    let mut globals = GlobalSection::new();
    if options.threads {
        for _ in [ARENA_RUN, ARENA_BASE, ARENA_TOP, ARENA_END] {
            globals.global(
                GlobalType {
                    val_type: ValType::I32,
                    mutable: true,
                    shared: false,
                },
                &ConstExpr::i32_const(0),
            );
        }
    }
    let mut exports = ExportSection::new();
    exports.export("run", ExportKind::Func, run_index);
    for (k, (task, _, _)) in ctx.functions.iter().enumerate() {
        if let Some(info) = task {
            exports.export(&info.export, ExportKind::Func, n_imports + 2 + k as u32);
        }
    }
    if query_fn.is_some() {
        exports.export("query", ExportKind::Func, query_index);
    }
    let mut functions_by_name = vec![("run", &run_fn), ("body", &body_fn)];
    for (task, _, f) in &ctx.functions {
        let name = task
            .as_ref()
            .map_or("an outlined loop", |info| info.export.as_str());
        functions_by_name.push((name, f));
    }
    if let Some(f) = &query_fn {
        functions_by_name.push(("query", f));
    }
    check_engine_limits(&functions_by_name, ctx.most_locals)?;
    let mut code = CodeSection::new();
    code.function(&run_fn);
    code.function(&body_fn);
    for (_, _, f) in &ctx.functions {
        code.function(f);
    }
    if let Some(f) = &query_fn {
        code.function(f);
    }
    let mut wasm = wasm_encoder::Module::new();
    wasm.section(&types);
    wasm.section(&imports);
    wasm.section(&functions);
    if options.threads {
        wasm.section(&globals);
    }
    wasm.section(&exports);
    wasm.section(&code);

    Ok(CompiledModule {
        bytes: wasm.finish(),
        abi: Abi {
            buffers,
            params,
            asserts: ctx.asserts,
            tasks: ctx
                .functions
                .into_iter()
                .filter_map(|(task, _, _)| task)
                .collect(),
            heap_top_offset: 0,
            error_args_offset,
            max_error_args,
            args_size,
            shared_memory: options.threads,
            region_slots,
        },
    })
}

/// Appends the encoding of the instructions most code is made of (locals,
/// `i32` constants, arithmetic and comparisons, blocks and branches,
/// `i32` loads and stores: nine in ten of box_blur's), or gives the
/// instruction back. Inlined where the instruction is known, this is a
/// few stores: `Instruction::encode` copies each immediate through a
/// temporary buffer and a copy of run-time length (a `memory.copy` call
/// in the page's build), and the enum's drop glue runs after it, which
/// cost a twentieth of code generation.
#[inline]
fn encode_inline<'a>(code: &mut Vec<u8>, i: I<'a>) -> Result<(), I<'a>> {
    let (opcode, index) = match i {
        I::LocalGet(index) => (0x20, index),
        I::LocalSet(index) => (0x21, index),
        I::LocalTee(index) => (0x22, index),
        I::I32Const(value) => {
            code.push(0x41);
            push_signed_leb128(code, value.into());
            return Ok(());
        }
        I::Br(depth) => (0x0c, depth),
        I::BrIf(depth) => (0x0d, depth),
        I::Block(BlockType::Empty) | I::Loop(BlockType::Empty) | I::If(BlockType::Empty) => {
            let opcode = match i {
                I::Block(_) => 0x02,
                I::Loop(_) => 0x03,
                _ => 0x04,
            };
            // 0x40: the empty block type.
            code.extend_from_slice(&[opcode, 0x40]);
            return Ok(());
        }
        I::I32Load(memarg) | I::I32Store(memarg)
            if memarg.target == MemArgTarget::Memory(0) && memarg.ordering.is_none() =>
        {
            code.push(if matches!(i, I::I32Load(_)) {
                0x28
            } else {
                0x36
            });
            push_unsigned_leb128(code, memarg.align);
            push_unsigned_leb128_u64(code, memarg.offset);
            return Ok(());
        }
        other => {
            let opcode = match other {
                I::Else => 0x05,
                I::End => 0x0b,
                I::Select => 0x1b,
                I::I32Eqz => 0x45,
                I::I32Eq => 0x46,
                I::I32Ne => 0x47,
                I::I32LtS => 0x48,
                I::I32LtU => 0x49,
                I::I32GtS => 0x4a,
                I::I32GtU => 0x4b,
                I::I32LeS => 0x4c,
                I::I32LeU => 0x4d,
                I::I32GeS => 0x4e,
                I::I32GeU => 0x4f,
                I::I32Add => 0x6a,
                I::I32Sub => 0x6b,
                I::I32Mul => 0x6c,
                I::I32And => 0x71,
                I::I32Or => 0x72,
                I::I32Shl => 0x74,
                I::I32ShrS => 0x75,
                I::I32ShrU => 0x76,
                other => return Err(other),
            };
            code.push(opcode);
            return Ok(());
        }
    };
    code.push(opcode);
    push_unsigned_leb128(code, index);
    Ok(())
}

/// Appends `value` in unsigned LEB128, as wasm-encoder writes it (no padding).
fn push_unsigned_leb128(code: &mut Vec<u8>, value: u32) {
    push_unsigned_leb128_u64(code, value.into());
}

/// [`push_unsigned_leb128`] of a 64-bit value (a memory offset).
fn push_unsigned_leb128_u64(code: &mut Vec<u8>, mut value: u64) {
    loop {
        let low = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            code.push(low);
            return;
        }
        code.push(low | 0x80);
    }
}

/// Appends `value` in signed LEB128, as wasm-encoder writes it (the
/// shortest form).
fn push_signed_leb128(code: &mut Vec<u8>, mut value: i64) {
    loop {
        let low = (value & 0x7f) as u8;
        value >>= 7;
        let sign_bit_clear = low & 0x40 == 0;
        if (value == 0 && sign_bit_clear) || (value == -1 && !sign_bit_clear) {
            code.push(low);
            return;
        }
        code.push(low | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline encodings of [`FnBuilder::emit`] are byte for byte
    /// wasm-encoder's, at the edges of every LEB128 length.
    #[test]
    fn inline_encodings_match_wasm_encoder() {
        let check = |instruction: I<'static>| {
            let mut theirs = Vec::new();
            instruction.encode(&mut theirs);
            let mut ours = Vec::new();
            assert!(
                encode_inline(&mut ours, instruction.clone()).is_ok(),
                "{instruction:?} is encoded inline"
            );
            assert_eq!(ours, theirs, "{instruction:?}");
        };
        let mut values: Vec<i64> =
            vec![0, 1, -1, i32::MIN.into(), i32::MAX.into(), u32::MAX.into()];
        for bits in [6, 7, 13, 14, 20, 21, 27, 28] {
            let edge = 1i64 << bits;
            values.extend([edge - 1, edge, edge + 1, -edge - 1, -edge, -edge + 1]);
        }
        for value in values {
            if let Ok(small) = i32::try_from(value) {
                check(I::I32Const(small));
            }
            if let Ok(index) = u32::try_from(value) {
                check(I::LocalGet(index));
                check(I::LocalSet(index));
                check(I::LocalTee(index));
                check(I::Br(index));
                check(I::BrIf(index));
                for align in [0, 2] {
                    let memarg = mem(index.into(), align);
                    check(I::I32Load(memarg));
                    check(I::I32Store(memarg));
                }
            }
        }
        for instruction in [
            I::Block(BlockType::Empty),
            I::Loop(BlockType::Empty),
            I::If(BlockType::Empty),
            I::Else,
            I::I32GtU,
            I::I32LeU,
            I::I32GeU,
            I::End,
            I::Select,
            I::I32Eqz,
            I::I32Eq,
            I::I32Ne,
            I::I32LtS,
            I::I32LtU,
            I::I32GtS,
            I::I32LeS,
            I::I32GeS,
            I::I32Add,
            I::I32Sub,
            I::I32Mul,
            I::I32And,
            I::I32Or,
            I::I32Shl,
            I::I32ShrS,
            I::I32ShrU,
        ] {
            check(instruction);
        }
        let mut ours = Vec::new();
        assert!(encode_inline(&mut ours, I::I64Const(1)).is_err());
        // A block with a result type, and memory 1, go to wasm-encoder.
        assert!(encode_inline(&mut ours, I::Block(BlockType::Result(ValType::I32))).is_err());
        let other_memory = MemArg {
            target: MemArgTarget::Memory(1),
            ..mem(0, 2)
        };
        assert!(encode_inline(&mut ours, I::I32Load(other_memory)).is_err());
        assert!(ours.is_empty());
    }
}
