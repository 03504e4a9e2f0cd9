//! Executor of lowered (flattened, possibly vectorised) modules: the
//! cross-check for backends and what `argent run` uses.
//!
//! Scalar semantics are the reference interpreter's own
//! (`argent_interp::scalar`, through `argent_arith::eval`), so results
//! agree bit for bit; vector operations apply them lane by lane. The module
//! is compiled once into a tree with variables resolved to frame slots and
//! buffers to storage ids, then run. Besides the outputs, [`run`] reports
//! [`ExecStats`]: how many values were stored into each buffer (lanes
//! counted) and every allocation's size, so tests can prove that a sliding
//! window computes each value once and that storage folding shrinks
//! storage.
//!
//! ```text
//! allocate f: i32[4]              run with out.min.0 = 0, out.extent.0 = 4
//! for (x, 0, 4) { f[x] = x * 2 }  ==>  out = [1, 3, 5, 7]
//! for (x, 0, 4) { out[x] = f[x] + 1 }  stores: f 4, out 4; allocations: f 16 bytes
//! free f
//! ```
//!
//! (`argent-interp` is reached through `argent_arith::interp`; argent-lower
//! could depend on it directly instead.)

use argent_arith::eval::{self, Scalar};
use argent_arith::interp::{Buffer, Value};
use argent_ir::visit::{Mutator, mutate_expr_children};
use argent_ir::{
    AssertKind, BinOp, CallTarget, Expr, ExprKind, Intrinsic, Module, Stmt, Type, UnaryOp,
};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecError {
    /// A run-time check of the program failed (user error: inputs too
    /// small, parameter out of range, ...), with its evaluated arguments.
    AssertFailed { kind: AssertKind, args: Vec<Value> },
    /// The caller did not pass a buffer the module needs.
    MissingBuffer { name: String },
    /// A buffer of the wrong element type or dimensionality was passed.
    BufferMismatch {
        name: String,
        expected: String,
        found: String,
    },
    /// No value for a parameter without a default.
    MissingParam { name: String },
    /// An allocation larger than the executor allows (or negative).
    AllocationTooLarge { buffer: String, elements: i64 },
    /// Compiler bug: a load or store outside its buffer.
    OutOfBounds {
        buffer: String,
        index: i64,
        size: usize,
    },
    /// Compiler bug: the module is not executable (unflattened `Provide`,
    /// a variable or buffer that nothing binds, ...).
    Malformed(String),
    /// The run needed more loop iterations than the caller allowed
    /// ([`run_with_budget`]): the schedule recomputes far more than the
    /// output needs. Not a wrong result, a refusal to spend the time.
    BudgetExceeded { iterations: u64 },
}

impl ExecError {
    /// Whether this error means lowering produced a wrong program (rather
    /// than the user passing inputs the program rejects).
    pub fn is_compiler_bug(&self) -> bool {
        matches!(
            self,
            ExecError::OutOfBounds { .. } | ExecError::Malformed(_)
        )
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::AssertFailed { kind, args } => write!(f, "check failed: {kind:?} {args:?}"),
            ExecError::MissingBuffer { name } => write!(f, "no buffer passed for `{name}`"),
            ExecError::BufferMismatch {
                name,
                expected,
                found,
            } => {
                write!(f, "buffer `{name}` should be {expected}, found {found}")
            }
            ExecError::MissingParam { name } => write!(f, "no value for parameter `{name}`"),
            ExecError::AllocationTooLarge { buffer, elements } => {
                write!(
                    f,
                    "allocation of {elements} elements for `{buffer}` is too large"
                )
            }
            ExecError::OutOfBounds {
                buffer,
                index,
                size,
            } => {
                write!(
                    f,
                    "compiler bug: access to `{buffer}` at {index}, outside 0..{size}"
                )
            }
            ExecError::Malformed(m) => write!(f, "compiler bug: {m}"),
            ExecError::BudgetExceeded { iterations } => write!(
                f,
                "the program needs more than {iterations} loop iterations, the budget of this run"
            ),
        }
    }
}

impl std::error::Error for ExecError {}

/// One buffer's allocations during a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocationStats {
    /// How many times an `Allocate` of this buffer ran.
    pub times: u64,
    /// The largest single allocation, in bytes.
    pub max_bytes: u64,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecStats {
    /// Values stored into each buffer (internal or output), lanes counted:
    /// for a func stored to its own buffer, how many of its values were
    /// computed.
    pub stores: BTreeMap<String, u64>,
    /// Every internal buffer's allocations.
    pub allocations: BTreeMap<String, AllocationStats>,
}

impl ExecStats {
    /// Values stored into `buffer`.
    pub fn stores_to(&self, buffer: &str) -> u64 {
        self.stores.get(buffer).copied().unwrap_or(0)
    }
}

impl fmt::Display for ExecStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, n) in &self.stores {
            writeln!(f, "stores {name}: {n}")?;
        }
        for (name, a) in &self.allocations {
            writeln!(f, "allocate {name}: {} bytes (x{})", a.max_bytes, a.times)?;
        }
        Ok(())
    }
}

/// The largest allocation the executor makes, in elements.
const MAX_ELEMENTS: i64 = 1 << 28;

/// Run `module` with the given input buffers, output buffers (written in
/// place) and parameter values. Buffer fields (`b.min.d`, `b.extent.d`,
/// `b.stride.d`) come from the buffers' layouts; parameters without a value
/// take their declared default.
pub fn run(
    module: &Module,
    inputs: &[(&str, &Buffer)],
    outputs: &mut [(&str, &mut Buffer)],
    params: &[(&str, Value)],
) -> Result<ExecStats, ExecError> {
    run_with_budget(module, inputs, outputs, params, u64::MAX)
}

/// [`run`], stopping with [`ExecError::BudgetExceeded`] once more than
/// `max_iterations` loop iterations (of all loops together) have run, so
/// that a check over random schedules can refuse one that recomputes
/// without bound instead of running for hours.
pub fn run_with_budget(
    module: &Module,
    inputs: &[(&str, &Buffer)],
    outputs: &mut [(&str, &mut Buffer)],
    params: &[(&str, Value)],
    max_iterations: u64,
) -> Result<ExecStats, ExecError> {
    let mut compiler = Compiler::default();
    let mut ex = Executor {
        budget: max_iterations,
        max_iterations,
        ..Executor::default()
    };
    // Buffer arguments.
    let mut output_storage: Vec<(usize, usize)> = Vec::new();
    for arg in &module.buffers {
        let (buffer, output_index): (&Buffer, Option<usize>) =
            match inputs.iter().find(|(n, _)| *n == arg.name) {
                Some((_, b)) => (b, None),
                None => match outputs.iter().position(|(n, _)| *n == arg.name) {
                    Some(i) => (&*outputs[i].1, Some(i)),
                    None => {
                        return Err(ExecError::MissingBuffer {
                            name: arg.name.clone(),
                        });
                    }
                },
            };
        if buffer.ty() != arg.ty.element() || buffer.dimensions() != arg.dims {
            return Err(ExecError::BufferMismatch {
                name: arg.name.clone(),
                expected: format!("{} with {} dimensions", arg.ty, arg.dims),
                found: format!("{} with {} dimensions", buffer.ty(), buffer.dimensions()),
            });
        }
        for (d, dim) in buffer.dims().iter().enumerate() {
            for (field, v) in [
                ("min", dim.min),
                ("extent", dim.extent),
                ("stride", dim.stride),
            ] {
                let slot = compiler.global(&argent_ir::buffer_field(&arg.name, field, d));
                ex.set_global(slot, Val::S(v));
            }
        }
        let id = compiler.buffer_id(&arg.name);
        ex.ensure_buffer(id);
        ex.storage[id] = Some(Storage {
            ty: arg.ty.element(),
            data: load_buffer(buffer),
        });
        if let Some(i) = output_index {
            output_storage.push((i, id));
        }
    }
    // Parameters.
    for p in &module.params {
        let value = match (params.iter().find(|(n, _)| *n == p.name), p.default) {
            (Some((_, v)), _) => v.to_raw(p.ty),
            (None, Some(d)) if p.ty.is_float() => Value::Float(d as f32).to_raw(p.ty),
            (None, Some(d)) => p.ty.wrap(d as i64),
            (None, None) => {
                return Err(ExecError::MissingParam {
                    name: p.name.clone(),
                });
            }
        };
        let slot = compiler.global(&p.name);
        ex.set_global(slot, Val::S(value));
    }
    let body = compiler.stmt(&module.body)?;
    ex.frame.resize(compiler.slots.len(), Val::S(0));
    for (slot, v) in std::mem::take(&mut ex.globals) {
        ex.frame[slot] = v;
    }
    ex.ensure_buffer(compiler.buffers.len().saturating_sub(1));
    ex.buffer_names = compiler.buffer_names.clone();
    ex.exec(&body).map_err(|e| *e)?;
    for (id, n) in ex.store_counts.iter().enumerate() {
        if *n > 0 {
            ex.stats.stores.insert(ex.buffer_names[id].clone(), *n);
        }
    }
    for (i, id) in output_storage {
        let storage = ex.storage[id]
            .take()
            .ok_or_else(|| ExecError::Malformed("output storage vanished".into()))?;
        store_buffer(&storage, outputs[i].1);
    }
    Ok(ex.stats)
}

/// The raw values of every addressable element of `b`, indexed by element
/// offset (`sum((coord_d - min_d) * stride_d)`), decoded straight from its
/// little-endian storage (which covers exactly those offsets).
fn load_buffer(b: &Buffer) -> Vec<i64> {
    let ty = b.ty();
    let n = ty.bytes();
    b.bytes()
        .chunks_exact(n)
        .map(|c| {
            let mut word = [0u8; 8];
            word[..n].copy_from_slice(c);
            let bits = u64::from_le_bytes(word) as i64;
            if ty.is_float() { bits } else { ty.wrap(bits) }
        })
        .collect()
}

/// Write every element of `b` back from `s` (element offsets as above).
fn store_buffer(s: &Storage, b: &mut Buffer) {
    let dims: Vec<argent_arith::interp::Dim> = b.dims().to_vec();
    if dims.iter().any(|d| d.extent <= 0) {
        return;
    }
    // An odometer over the coordinates, dimension 0 fastest, without
    // allocating per element.
    let mut coords: Vec<i64> = dims.iter().map(|d| d.min).collect();
    loop {
        let offset: i64 = coords
            .iter()
            .zip(&dims)
            .map(|(c, d)| (c - d.min) * d.stride)
            .sum();
        if let Some(raw) = usize::try_from(offset).ok().and_then(|o| s.data.get(o)) {
            b.set(&coords, Value::from_raw(s.ty, *raw));
        }
        let mut d = 0;
        loop {
            if d == dims.len() {
                return;
            }
            coords[d] += 1;
            if coords[d] < dims[d].min + dims[d].extent {
                break;
            }
            coords[d] = dims[d].min;
            d += 1;
        }
    }
}

// ---- compiled form ------------------------------------------------------------

#[derive(Clone, Debug)]
enum Val {
    S(i64),
    V(Vec<i64>),
}

impl Val {
    /// Lane `i`; a vector with fewer lanes (only in malformed programs)
    /// repeats its last lane rather than panicking.
    fn lane(&self, i: usize) -> i64 {
        match self {
            Val::S(v) => *v,
            Val::V(v) => v.get(i).or(v.last()).copied().unwrap_or(0),
        }
    }
    fn lanes(&self) -> usize {
        match self {
            Val::S(_) => 1,
            Val::V(v) => v.len(),
        }
    }
}

enum CExpr {
    Const(i64),
    Var(usize),
    Cast {
        from: Type,
        to: Type,
        saturating: bool,
        value: Box<CExpr>,
    },
    Unary {
        op: UnaryOp,
        ty: Type,
        value: Box<CExpr>,
    },
    Binary {
        op: BinOp,
        ty: Type,
        a: Box<CExpr>,
        b: Box<CExpr>,
    },
    Select {
        cond: Box<CExpr>,
        then: Box<CExpr>,
        otherwise: Box<CExpr>,
    },
    Intrinsic {
        which: Intrinsic,
        ty: Type,
        arg_types: Vec<Type>,
        args: Vec<CExpr>,
    },
    Let {
        slot: usize,
        value: Box<CExpr>,
        body: Box<CExpr>,
    },
    Load {
        buffer: usize,
        index: Box<CExpr>,
    },
    Ramp {
        ty: Type,
        base: Box<CExpr>,
        stride: Box<CExpr>,
        lanes: usize,
    },
    Broadcast {
        value: Box<CExpr>,
        lanes: usize,
    },
    Shuffle {
        vectors: Vec<CExpr>,
        indices: Vec<u32>,
    },
    /// A tree without vectors, evaluated on the fast scalar path.
    ScalarTree(Box<CExpr>),
}

/// Whether no node of `e` is a vector.
fn is_scalar_tree(e: &Expr) -> bool {
    struct Finder(bool);
    impl argent_ir::visit::Visitor for Finder {
        fn visit_expr(&mut self, e: &Expr) {
            if e.ty().lanes > 1 {
                self.0 = false;
            } else if self.0 {
                argent_ir::visit::walk_expr(self, e);
            }
        }
    }
    let mut f = Finder(true);
    argent_ir::visit::Visitor::visit_expr(&mut f, e);
    f.0
}

enum CStmt {
    Let {
        slot: usize,
        value: CExpr,
        body: Box<CStmt>,
    },
    Assert {
        cond: CExpr,
        kind: AssertKind,
        args: Vec<(CExpr, Type)>,
    },
    For {
        slot: usize,
        min: CExpr,
        extent: CExpr,
        body: Box<CStmt>,
    },
    Store {
        buffer: usize,
        index: CExpr,
        value: CExpr,
    },
    Allocate {
        buffer: usize,
        ty: Type,
        size: CExpr,
        body: Box<CStmt>,
    },
    Block(Vec<CStmt>),
    If {
        cond: CExpr,
        then: Box<CStmt>,
        otherwise: Option<Box<CStmt>>,
    },
    Evaluate(CExpr),
}

#[derive(Default)]
struct Compiler {
    /// Every variable name gets one frame slot; rebinding saves and
    /// restores the slot's value at run time.
    slots: HashMap<String, usize>,
    /// Names bound where the expression being compiled is (globals, lets,
    /// loop variables), innermost last.
    bound: Vec<String>,
    globals: usize,
    buffers: HashMap<String, usize>,
    buffer_names: Vec<String>,
    /// Buffers that exist where the statement being compiled is.
    live_buffers: Vec<String>,
}

impl Compiler {
    fn slot(&mut self, name: &str) -> usize {
        let n = self.slots.len();
        *self.slots.entry(name.to_string()).or_insert(n)
    }
    fn global(&mut self, name: &str) -> usize {
        self.globals += 1;
        self.bound.push(name.to_string());
        self.slot(name)
    }
    fn buffer_id(&mut self, name: &str) -> usize {
        self.live_buffers.push(name.to_string());
        let n = self.buffers.len();
        let id = *self.buffers.entry(name.to_string()).or_insert(n);
        if id == self.buffer_names.len() {
            self.buffer_names.push(name.to_string());
        }
        id
    }
    fn live_buffer(&self, name: &str) -> Result<usize, ExecError> {
        if !self.live_buffers.iter().any(|b| b == name) {
            return Err(ExecError::Malformed(format!(
                "access to buffer `{name}` outside its allocation"
            )));
        }
        Ok(self.buffers[name])
    }

    fn expr(&mut self, e: &Expr) -> Result<CExpr, ExecError> {
        let b = |c: CExpr| Box::new(c);
        Ok(match e.kind() {
            ExprKind::IntImm(v) => CExpr::Const(*v),
            ExprKind::FloatImm(v) => CExpr::Const(eval::to_raw(Scalar::Float(*v as f32))),
            ExprKind::Var(n) => {
                if !self.bound.iter().any(|x| x == n) {
                    return Err(ExecError::Malformed(format!("variable `{n}` is not bound")));
                }
                CExpr::Var(self.slot(n))
            }
            ExprKind::Cast { value, saturating } => CExpr::Cast {
                from: value.ty().element(),
                to: e.ty().element(),
                saturating: *saturating,
                value: b(self.expr(value)?),
            },
            ExprKind::Unary { op, value } => CExpr::Unary {
                op: *op,
                ty: value.ty().element(),
                value: b(self.expr(value)?),
            },
            ExprKind::Binary { op, a, b: rhs } => CExpr::Binary {
                op: *op,
                ty: a.ty().element(),
                a: b(self.expr(a)?),
                b: b(self.expr(rhs)?),
            },
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => CExpr::Select {
                cond: b(self.expr(cond)?),
                then: b(self.expr(then)?),
                otherwise: b(self.expr(otherwise)?),
            },
            // `likely(e)` is `e`: a hint for loop partitioning, which
            // boundary conditions leave in every index expression.
            ExprKind::Call {
                target: CallTarget::Intrinsic(Intrinsic::Likely),
                args,
            } if args.len() == 1 && args[0].ty() == e.ty() => self.expr(&args[0])?,
            ExprKind::Call {
                target: CallTarget::Intrinsic(i),
                args,
            } => {
                let mut c = Vec::with_capacity(args.len());
                for a in args {
                    c.push(self.expr(a)?);
                }
                CExpr::Intrinsic {
                    which: *i,
                    ty: e.ty().element(),
                    arg_types: args.iter().map(|a| a.ty().element()).collect(),
                    args: c,
                }
            }
            ExprKind::Call { target, .. } => {
                return Err(ExecError::Malformed(format!(
                    "unflattened call {target:?} in {e}"
                )));
            }
            ExprKind::Let { name, value, body } => {
                let v = self.expr(value)?;
                self.bound.push(name.clone());
                let slot = self.slot(name);
                let body = self.expr(body);
                self.bound.pop();
                CExpr::Let {
                    slot,
                    value: b(v),
                    body: b(body?),
                }
            }
            ExprKind::Load { buffer, index } => CExpr::Load {
                buffer: self.live_buffer(buffer)?,
                index: b(self.expr(index)?),
            },
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => CExpr::Ramp {
                ty: base.ty().element(),
                base: b(self.expr(base)?),
                stride: b(self.expr(stride)?),
                lanes: *lanes as usize,
            },
            ExprKind::Broadcast { value, lanes } => CExpr::Broadcast {
                value: b(self.expr(value)?),
                lanes: *lanes as usize,
            },
            ExprKind::Shuffle { vectors, indices } => {
                let mut v = Vec::with_capacity(vectors.len());
                for x in vectors {
                    v.push(self.expr(x)?);
                }
                CExpr::Shuffle {
                    vectors: v,
                    indices: indices.clone(),
                }
            }
        })
    }

    /// Compile a statement's expression, choosing the scalar path when
    /// it has no vectors.
    fn top(&mut self, e: &Expr) -> Result<CExpr, ExecError> {
        let c = self.expr(e)?;
        Ok(if is_scalar_tree(e) {
            CExpr::ScalarTree(Box::new(c))
        } else {
            c
        })
    }

    fn stmt(&mut self, s: &Stmt) -> Result<CStmt, ExecError> {
        Ok(match s {
            Stmt::LetStmt { name, value, body } => {
                let value = self.top(&expand(value))?;
                self.bound.push(name.clone());
                let slot = self.slot(name);
                let body = self.stmt(body);
                self.bound.pop();
                CStmt::Let {
                    slot,
                    value,
                    body: Box::new(body?),
                }
            }
            Stmt::Assert { cond, kind, args } => {
                let mut a = Vec::with_capacity(args.len());
                for x in args {
                    a.push((self.top(&expand(x))?, x.ty().element()));
                }
                CStmt::Assert {
                    cond: self.top(&expand(cond))?,
                    kind: kind.clone(),
                    args: a,
                }
            }
            Stmt::ProducerConsumer { body, .. } => self.stmt(body)?,
            Stmt::For {
                var,
                min,
                extent,
                body,
                ..
            } => {
                let (min, extent) = (self.top(&expand(min))?, self.top(&expand(extent))?);
                self.bound.push(var.clone());
                let slot = self.slot(var);
                let body = self.stmt(body);
                self.bound.pop();
                CStmt::For {
                    slot,
                    min,
                    extent,
                    body: Box::new(body?),
                }
            }
            Stmt::Provide { func, .. } | Stmt::Realize { func, .. } => {
                return Err(ExecError::Malformed(format!(
                    "`{func}` is not flattened (Provide/Realize)"
                )));
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => CStmt::Store {
                buffer: self.live_buffer(buffer)?,
                index: self.top(&expand(index))?,
                value: self.top(&expand(value))?,
            },
            Stmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => {
                let size = self.top(&expand(size))?;
                let id = self.buffer_id(buffer);
                let body = self.stmt(body);
                self.live_buffers.pop();
                CStmt::Allocate {
                    buffer: id,
                    ty: ty.element(),
                    size,
                    body: Box::new(body?),
                }
            }
            Stmt::Block(stmts) => {
                let mut v = Vec::with_capacity(stmts.len());
                for s in stmts {
                    v.push(self.stmt(s)?);
                }
                CStmt::Block(v)
            }
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => CStmt::If {
                cond: self.top(&expand(cond))?,
                then: Box::new(self.stmt(then)?),
                otherwise: match otherwise {
                    Some(o) => Some(Box::new(self.stmt(o)?)),
                    None => None,
                },
            },
            Stmt::Evaluate(e) => CStmt::Evaluate(self.top(&expand(e))?),
        })
    }
}

/// Replace the transcendental intrinsics and `lerp` by their defining
/// expansions (`argent_ir::math`), lane-wise for vector calls.
fn expand(e: &Expr) -> Expr {
    struct Expander;
    impl Mutator for Expander {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            let e = mutate_expr_children(self, e);
            if let ExprKind::Call {
                target: CallTarget::Intrinsic(i),
                args,
            } = e.kind()
                && let Some(x) = argent_ir::math::expand_call(*i, args)
            {
                return x;
            }
            e
        }
    }
    Expander.mutate_expr(e)
}

struct Storage {
    ty: Type,
    data: Vec<i64>,
}

#[derive(Default)]
struct Executor {
    frame: Vec<Val>,
    globals: Vec<(usize, Val)>,
    storage: Vec<Option<Storage>>,
    buffer_names: Vec<String>,
    /// Values stored per buffer id (turned into `stats.stores` at the end).
    store_counts: Vec<u64>,
    stats: ExecStats,
    /// Loop iterations left before the run stops, and the budget it had.
    budget: u64,
    max_iterations: u64,
}

fn lanewise(a: &Val, b: &Val, f: impl Fn(i64, i64) -> i64) -> Val {
    match (a, b) {
        (Val::S(x), Val::S(y)) => Val::S(f(*x, *y)),
        _ => {
            let n = a.lanes().max(b.lanes());
            Val::V((0..n).map(|i| f(a.lane(i), b.lane(i))).collect())
        }
    }
}

fn map(a: &Val, f: impl Fn(i64) -> i64) -> Val {
    match a {
        Val::S(x) => Val::S(f(*x)),
        Val::V(v) => Val::V(v.iter().map(|x| f(*x)).collect()),
    }
}

impl Executor {
    fn set_global(&mut self, slot: usize, v: Val) {
        self.globals.push((slot, v));
    }

    fn ensure_buffer(&mut self, id: usize) {
        if self.storage.len() <= id {
            self.storage.resize_with(id + 1, || None);
        }
    }

    fn name(&self, buffer: usize) -> String {
        self.buffer_names.get(buffer).cloned().unwrap_or_default()
    }

    /// The scalar path: no `Val`s, no allocation.
    fn eval_s(&mut self, e: &CExpr) -> Result<i64, Box<ExecError>> {
        use argent_arith::interp::scalar;
        Ok(match e {
            CExpr::Const(v) => *v,
            CExpr::Var(s) => self.frame[*s].lane(0),
            CExpr::Cast {
                from,
                to,
                saturating,
                value,
            } => scalar::cast(*from, *to, *saturating, self.eval_s(value)?),
            CExpr::Unary { op, ty, value } => scalar::unary(*op, *ty, self.eval_s(value)?),
            CExpr::Binary { op, ty, a, b } => {
                let x = self.eval_s(a)?;
                match op {
                    BinOp::And if x == 0 => return Ok(0),
                    BinOp::Or if x != 0 => return Ok(1),
                    _ => {}
                }
                let y = self.eval_s(b)?;
                scalar::binary(*op, *ty, x, y)
            }
            CExpr::Select {
                cond,
                then,
                otherwise,
            } => {
                if self.eval_s(cond)? != 0 {
                    self.eval_s(then)?
                } else {
                    self.eval_s(otherwise)?
                }
            }
            CExpr::Let { slot, value, body } => {
                let v = Val::S(self.eval_s(value)?);
                let old = std::mem::replace(&mut self.frame[*slot], v);
                let r = self.eval_s(body);
                self.frame[*slot] = old;
                r?
            }
            CExpr::Load { buffer, index } => {
                let i = self.eval_s(index)?;
                let found = self.storage[*buffer].as_ref().map(|st| {
                    (
                        usize::try_from(i)
                            .ok()
                            .and_then(|i| st.data.get(i))
                            .copied(),
                        st.data.len(),
                    )
                });
                match found {
                    Some((Some(v), _)) => v,
                    Some((None, size)) => {
                        return Err(Box::new(ExecError::OutOfBounds {
                            buffer: self.name(*buffer),
                            index: i,
                            size,
                        }));
                    }
                    None => {
                        return Err(Box::new(ExecError::Malformed(format!(
                            "load from unallocated `{}`",
                            self.name(*buffer)
                        ))));
                    }
                }
            }
            CExpr::ScalarTree(inner) => self.eval_s(inner)?,
            // Scalar intrinsics without the vector path's allocations.
            CExpr::Intrinsic {
                which,
                ty,
                arg_types,
                args,
            } if args.len() <= 3 => {
                let mut scalars = [Scalar::Int(0); 3];
                for (i, (a, t)) in args.iter().zip(arg_types).enumerate() {
                    scalars[i] = eval::from_raw(*t, self.eval_s(a)?);
                }
                eval::to_raw(eval::intrinsic(
                    *which,
                    *ty,
                    arg_types,
                    &scalars[..args.len()],
                ))
            }
            other => self.eval(other)?.lane(0),
        })
    }

    fn eval(&mut self, e: &CExpr) -> Result<Val, Box<ExecError>> {
        Ok(match e {
            CExpr::ScalarTree(inner) => Val::S(self.eval_s(inner)?),
            CExpr::Const(v) => Val::S(*v),
            CExpr::Var(s) => self.frame[*s].clone(),
            CExpr::Cast {
                from,
                to,
                saturating,
                value,
            } => {
                let v = self.eval(value)?;
                let (from, to, sat) = (*from, *to, *saturating);
                map(&v, |x| argent_arith::interp::scalar::cast(from, to, sat, x))
            }
            CExpr::Unary { op, ty, value } => {
                let v = self.eval(value)?;
                let (op, ty) = (*op, *ty);
                map(&v, |x| argent_arith::interp::scalar::unary(op, ty, x))
            }
            CExpr::Binary { op, ty, a, b } => {
                let x = self.eval(a)?;
                // `&&` and `||` on scalars evaluate their right side only
                // when needed, as the interpreter does.
                if let (Val::S(xv), BinOp::And | BinOp::Or) = (&x, op) {
                    let decided = (*op == BinOp::And && *xv == 0) || (*op == BinOp::Or && *xv != 0);
                    if decided {
                        return Ok(Val::S((*op == BinOp::Or) as i64));
                    }
                }
                let y = self.eval(b)?;
                let (op, ty) = (*op, *ty);
                lanewise(&x, &y, |p, q| {
                    argent_arith::interp::scalar::binary(op, ty, p, q)
                })
            }
            CExpr::Select {
                cond,
                then,
                otherwise,
            } => match self.eval(cond)? {
                Val::S(c) => {
                    if c != 0 {
                        self.eval(then)?
                    } else {
                        self.eval(otherwise)?
                    }
                }
                Val::V(c) => {
                    let (t, o) = (self.eval(then)?, self.eval(otherwise)?);
                    Val::V(
                        (0..c.len())
                            .map(|i| if c[i] != 0 { t.lane(i) } else { o.lane(i) })
                            .collect(),
                    )
                }
            },
            CExpr::Intrinsic {
                which,
                ty,
                arg_types,
                args,
            } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let lanes = vals.iter().map(|v| v.lanes()).max().unwrap_or(1);
                let lane = |i: usize| -> i64 {
                    let scalars: Vec<Scalar> = vals
                        .iter()
                        .zip(arg_types)
                        .map(|(v, t)| eval::from_raw(*t, v.lane(i)))
                        .collect();
                    eval::to_raw(eval::intrinsic(*which, *ty, arg_types, &scalars))
                };
                if vals.iter().all(|v| matches!(v, Val::S(_))) {
                    Val::S(lane(0))
                } else {
                    Val::V((0..lanes).map(lane).collect())
                }
            }
            CExpr::Let { slot, value, body } => {
                let v = self.eval(value)?;
                let old = std::mem::replace(&mut self.frame[*slot], v);
                let r = self.eval(body);
                self.frame[*slot] = old;
                r?
            }
            CExpr::Load { buffer, index } => {
                let idx = self.eval(index)?;
                let Some(storage) = self.storage[*buffer].as_ref() else {
                    return Err(Box::new(ExecError::Malformed(format!(
                        "load from unallocated `{}`",
                        self.name(*buffer)
                    ))));
                };
                let get = |i: i64| -> Option<i64> {
                    usize::try_from(i)
                        .ok()
                        .and_then(|i| storage.data.get(i))
                        .copied()
                };
                let size = storage.data.len();
                match idx {
                    Val::S(i) => match get(i) {
                        Some(v) => Val::S(v),
                        None => {
                            return Err(Box::new(ExecError::OutOfBounds {
                                buffer: self.name(*buffer),
                                index: i,
                                size,
                            }));
                        }
                    },
                    Val::V(is) => {
                        let mut out = Vec::with_capacity(is.len());
                        for i in is {
                            match get(i) {
                                Some(v) => out.push(v),
                                None => {
                                    return Err(Box::new(ExecError::OutOfBounds {
                                        buffer: self.name(*buffer),
                                        index: i,
                                        size,
                                    }));
                                }
                            }
                        }
                        Val::V(out)
                    }
                }
            }
            CExpr::Ramp {
                ty,
                base,
                stride,
                lanes,
            } => {
                let (b, s) = (self.eval(base)?.lane(0), self.eval(stride)?.lane(0));
                // Lane i is base + i * stride in the element type's own
                // arithmetic, as the scalar code it replaces computes it.
                let ty = *ty;
                let mut lane = b;
                let mut out = Vec::with_capacity(*lanes);
                for _ in 0..*lanes {
                    out.push(lane);
                    lane = argent_arith::interp::scalar::binary(BinOp::Add, ty, lane, s);
                }
                Val::V(out)
            }
            CExpr::Broadcast { value, lanes } => {
                let v = self.eval(value)?;
                match v {
                    Val::S(x) => Val::V(vec![x; *lanes]),
                    Val::V(inner) => {
                        Val::V((0..*lanes).flat_map(|_| inner.iter().copied()).collect())
                    }
                }
            }
            CExpr::Shuffle { vectors, indices } => {
                let mut all = Vec::new();
                for v in vectors {
                    match self.eval(v)? {
                        Val::S(x) => all.push(x),
                        Val::V(xs) => all.extend(xs),
                    }
                }
                let mut out = Vec::with_capacity(indices.len());
                for &i in indices {
                    match all.get(i as usize) {
                        Some(v) => out.push(*v),
                        None => {
                            return Err(Box::new(ExecError::Malformed(format!(
                                "shuffle index {i} out of range"
                            ))));
                        }
                    }
                }
                if out.len() == 1 {
                    Val::S(out[0])
                } else {
                    Val::V(out)
                }
            }
        })
    }

    fn exec(&mut self, s: &CStmt) -> Result<(), Box<ExecError>> {
        match s {
            CStmt::Let { slot, value, body } => {
                let v = self.eval(value)?;
                let old = std::mem::replace(&mut self.frame[*slot], v);
                let r = self.exec(body);
                self.frame[*slot] = old;
                r
            }
            CStmt::Assert { cond, kind, args } => {
                let ok = self.eval(cond)?;
                if (0..ok.lanes()).all(|i| ok.lane(i) != 0) {
                    return Ok(());
                }
                let mut values = Vec::with_capacity(args.len());
                for (a, ty) in args {
                    let v = self.eval(a)?;
                    values.push(Value::from_raw(*ty, v.lane(0)));
                }
                Err(Box::new(ExecError::AssertFailed {
                    kind: kind.clone(),
                    args: values,
                }))
            }
            CStmt::For {
                slot,
                min,
                extent,
                body,
            } => {
                let (m, n) = (self.eval(min)?.lane(0), self.eval(extent)?.lane(0));
                let trips = n.max(0) as u64;
                if trips > self.budget {
                    return Err(Box::new(ExecError::BudgetExceeded {
                        iterations: self.max_iterations,
                    }));
                }
                self.budget -= trips;
                let old = self.frame[*slot].clone();
                let mut r = Ok(());
                for i in 0..n.max(0) {
                    self.frame[*slot] = Val::S(Type::I32.wrap(m + i));
                    r = self.exec(body);
                    if r.is_err() {
                        break;
                    }
                }
                self.frame[*slot] = old;
                r
            }
            CStmt::Store {
                buffer,
                index,
                value,
            } => {
                let idx = self.eval(index)?;
                let v = self.eval(value)?;
                let name_of = |this: &Self| this.name(*buffer);
                let lanes = idx.lanes().max(v.lanes());
                let Some(storage) = self.storage[*buffer].as_mut() else {
                    return Err(Box::new(ExecError::Malformed(format!(
                        "store to unallocated `{}`",
                        name_of(self)
                    ))));
                };
                let size = storage.data.len();
                let ty = storage.ty;
                let mut bad = None;
                for lane in 0..lanes {
                    let i = idx.lane(lane);
                    match usize::try_from(i).ok().filter(|&i| i < size) {
                        Some(i) => storage.data[i] = store_raw(ty, v.lane(lane)),
                        None => {
                            bad = Some(i);
                            break;
                        }
                    }
                }
                if let Some(i) = bad {
                    return Err(Box::new(ExecError::OutOfBounds {
                        buffer: name_of(self),
                        index: i,
                        size,
                    }));
                }
                if self.store_counts.len() <= *buffer {
                    self.store_counts.resize(*buffer + 1, 0);
                }
                self.store_counts[*buffer] += lanes as u64;
                Ok(())
            }
            CStmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => {
                let n = self.eval(size)?.lane(0);
                if !(0..=MAX_ELEMENTS).contains(&n) {
                    return Err(Box::new(ExecError::AllocationTooLarge {
                        buffer: self.name(*buffer),
                        elements: n,
                    }));
                }
                let stats = self
                    .stats
                    .allocations
                    .entry(self.name(*buffer))
                    .or_default();
                stats.times += 1;
                stats.max_bytes = stats.max_bytes.max(n as u64 * ty.bytes() as u64);
                let fresh = Some(Storage {
                    ty: *ty,
                    data: vec![0; n as usize],
                });
                let old = std::mem::replace(&mut self.storage[*buffer], fresh);
                let r = self.exec(body);
                self.storage[*buffer] = old;
                r
            }
            CStmt::Block(stmts) => {
                for s in stmts {
                    self.exec(s)?;
                }
                Ok(())
            }
            CStmt::If {
                cond,
                then,
                otherwise,
            } => {
                if self.eval(cond)?.lane(0) != 0 {
                    self.exec(then)
                } else if let Some(o) = otherwise {
                    self.exec(o)
                } else {
                    Ok(())
                }
            }
            CStmt::Evaluate(e) => self.eval(e).map(|_| ()),
        }
    }
}

/// A raw value as stored in memory of element type `ty` (integers wrap,
/// as a store to a narrower buffer would).
fn store_raw(ty: Type, raw: i64) -> i64 {
    if ty.is_float() { raw } else { ty.wrap(raw) }
}

/// Helpers for the passes' tests: tiny modules over 1-D `i32` buffers and
/// a way to run them.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use argent_ir::{BufferArg, BufferRole, ForKind};

    pub fn x() -> Expr {
        Expr::var_i32("x")
    }

    pub fn arg(name: &str, ty: Type, dims: usize, role: BufferRole) -> BufferArg {
        BufferArg {
            name: name.into(),
            ty,
            dims,
            role,
        }
    }

    /// `for (x, out.min.0, out.extent.0) { body }`.
    pub fn over_output(kind: ForKind, body: Stmt) -> Stmt {
        Stmt::For {
            var: "x".into(),
            min: Expr::var_i32("out.min.0"),
            extent: Expr::var_i32("out.extent.0"),
            kind,
            body: Box::new(body),
        }
    }

    pub fn module(body: Stmt, buffers: Vec<BufferArg>) -> Module {
        Module {
            name: "test".into(),
            buffers,
            params: Vec::new(),
            body,
        }
    }

    /// The standard 1-D test module: input `in` (i32) and output `out` (i32).
    pub fn module_1d(body: Stmt) -> Module {
        let buffers = vec![
            arg("in", Type::I32, 1, BufferRole::Input),
            arg("out", Type::I32, 1, BufferRole::Output),
        ];
        let body = crate::flatten::flatten(&body, &buffers, &Default::default());
        module(body, buffers)
    }

    /// Run a 1-D module on `input` (coordinates starting at `input_min`),
    /// producing `out_len` values from coordinate 0.
    pub fn run_1d(
        m: &Module,
        input: &[i64],
        input_min: i64,
        out_len: i64,
    ) -> Result<(Vec<i64>, ExecStats), ExecError> {
        let mut inb = Buffer::new(Type::I32, &[input.len() as i64]).with_min(&[input_min]);
        inb.fill(|c| Value::Int(input[(c[0] - input_min) as usize]));
        let mut out = Buffer::new(Type::I32, &[out_len]);
        let stats = run(m, &[("in", &inb)], &mut [("out", &mut out)], &[])?;
        let values = (0..out_len)
            .map(|i| out.get(&[i]).map(|v| v.as_i64()).unwrap_or(-1))
            .collect();
        Ok((values, stats))
    }

    /// A deterministic test input.
    pub fn ramp_input(n: usize) -> Vec<i64> {
        (0..n as i64).map(|i| (i * 37 + 11) % 101 - 50).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use argent_ir::{BufferRole, ForKind, Range};
    use expect_test::expect;

    fn input(e: Expr) -> Expr {
        Expr::call_input(Type::I32, "in", vec![e])
    }

    #[test]
    fn computes_and_counts_stores_and_allocations() {
        // f(x) = in(x) * 2 over the output region, then out(x) = f(x) + f(x).
        let produce_f = Stmt::For {
            var: "x".into(),
            min: Expr::var_i32("out.min.0"),
            extent: Expr::var_i32("out.extent.0"),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Provide {
                func: "f".into(),
                args: vec![x()],
                value: input(x()) * 2,
            }),
        };
        let consume = over_output(
            ForKind::Serial,
            Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value: Expr::call_func(Type::I32, "f", vec![x()])
                    + Expr::call_func(Type::I32, "f", vec![x()]),
            },
        );
        let body = Stmt::Realize {
            func: "f".into(),
            ty: Type::I32,
            bounds: vec![Range {
                min: Expr::var_i32("out.min.0"),
                extent: Expr::var_i32("out.extent.0"),
            }],
            body: Box::new(Stmt::block(vec![produce_f, consume])),
        };
        let m = module_1d(body);
        let (values, stats) = run_1d(&m, &[1, 2, 3, 4, 5], 0, 5).unwrap();
        assert_eq!(values, vec![4, 8, 12, 16, 20]);
        expect![[r#"
            stores f: 5
            stores out: 5
            allocate f: 20 bytes (x1)
        "#]]
        .assert_eq(&stats.to_string());
    }

    #[test]
    fn failed_asserts_report_kind_and_arguments() {
        let body = Stmt::Assert {
            cond: Expr::le(Expr::var_i32("out.extent.0"), Expr::var_i32("in.extent.0")),
            kind: AssertKind::InputTooSmall {
                input: "in".into(),
                stage: "out".into(),
                dim: 0,
            },
            args: vec![Expr::var_i32("out.extent.0"), Expr::var_i32("in.extent.0")],
        };
        let m = module_1d(body);
        let err = run_1d(&m, &[1, 2], 0, 3).unwrap_err();
        assert!(!err.is_compiler_bug());
        expect![[
            r#"AssertFailed { kind: InputTooSmall { input: "in", stage: "out", dim: 0 }, args: [Int(3), Int(2)] }"#
        ]]
        .assert_eq(&format!("{err:?}"));
        assert!(run_1d(&m, &[1, 2, 3], 0, 3).is_ok());
    }

    #[test]
    fn out_of_bounds_accesses_are_compiler_bugs() {
        let body = over_output(
            ForKind::Serial,
            Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value: input(x() + 1),
            },
        );
        let m = module_1d(body);
        let err = run_1d(&m, &[1, 2, 3], 0, 3).unwrap_err();
        assert!(err.is_compiler_bug());
        expect!["compiler bug: access to `in` at 3, outside 0..3"].assert_eq(&err.to_string());
        let unflattened = module(
            Stmt::Provide {
                func: "out".into(),
                args: vec![Expr::i32(0)],
                value: Expr::i32(1),
            },
            vec![arg("out", Type::I32, 1, BufferRole::Output)],
        );
        let mut out = Buffer::new(Type::I32, &[1]);
        let err = run(&unflattened, &[], &mut [("out", &mut out)], &[]).unwrap_err();
        expect!["compiler bug: `out` is not flattened (Provide/Realize)"]
            .assert_eq(&err.to_string());
    }

    #[test]
    fn vector_code_runs_lane_by_lane() {
        // out[ramp(0, 1, 4)] = in[ramp(1, 1, 4)] * x4(3), written directly.
        let body = Stmt::Store {
            buffer: "out".into(),
            index: Expr::ramp(Expr::i32(0), Expr::i32(1), 4),
            value: Expr::load(Type::I32, "in", Expr::ramp(Expr::i32(1), Expr::i32(1), 4))
                * Expr::broadcast(Expr::i32(3), 4),
        };
        let m = module(
            body,
            vec![
                arg("in", Type::I32, 1, BufferRole::Input),
                arg("out", Type::I32, 1, BufferRole::Output),
            ],
        );
        let (values, stats) = run_1d(&m, &[10, 20, 30, 40, 50], 0, 4).unwrap();
        assert_eq!(values, vec![60, 90, 120, 150]);
        assert_eq!(stats.stores_to("out"), 4);
    }

    #[test]
    fn interleaved_and_planar_outputs_agree() {
        // out(x, y, c) = u8(x + 10 * y + 100 * c), through flattening.
        let (x, y, c) = (Expr::var_i32("x"), Expr::var_i32("y"), Expr::var_i32("c"));
        let value = Expr::cast(Type::U8, x.clone() + y.clone() * 10 + c.clone() * 100);
        let mut body = Stmt::Provide {
            func: "out".into(),
            args: vec![x, y, c],
            value,
        };
        for (v, d) in [("x", 0), ("y", 1), ("c", 2)] {
            body = Stmt::For {
                var: v.into(),
                min: Expr::var_i32(format!("out.min.{d}")),
                extent: Expr::var_i32(format!("out.extent.{d}")),
                kind: ForKind::Serial,
                body: Box::new(body),
            };
        }
        let buffers = vec![arg("out", Type::U8, 3, BufferRole::Output)];
        let m = module(
            crate::flatten::flatten(&body, &buffers, &Default::default()),
            buffers,
        );
        let mut planar = Buffer::new(Type::U8, &[4, 3, 4]);
        let mut interleaved = Buffer::interleaved(Type::U8, &[4, 3, 4]);
        run(&m, &[], &mut [("out", &mut planar)], &[]).unwrap();
        run(&m, &[], &mut [("out", &mut interleaved)], &[]).unwrap();
        assert!(planar.same_contents(&interleaved));
        assert_eq!(interleaved.get(&[3, 2, 1]), Some(Value::Int(123)));
        assert_eq!(
            &interleaved.bytes()[..8],
            &[0, 100, 200, 44, 1, 101, 201, 45]
        );
    }

    #[test]
    fn parameters_take_values_or_defaults() {
        let body = over_output(
            ForKind::Serial,
            Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value: x() * Expr::var_i32("k"),
            },
        );
        let mut m = module_1d(body);
        m.params.push(argent_ir::Param {
            name: "k".into(),
            ty: Type::I32,
            default: Some(3.0),
            range: None,
            span: argent_ir::Span::DUMMY,
        });
        let inb = Buffer::new(Type::I32, &[1]);
        let mut out = Buffer::new(Type::I32, &[3]);
        run(&m, &[("in", &inb)], &mut [("out", &mut out)], &[]).unwrap();
        assert_eq!(out.get(&[2]), Some(Value::Int(6)));
        run(
            &m,
            &[("in", &inb)],
            &mut [("out", &mut out)],
            &[("k", Value::Int(5))],
        )
        .unwrap();
        assert_eq!(out.get(&[2]), Some(Value::Int(10)));
    }
}

/// The whole chain: lowering, the passes, this executor, compared with the
/// reference interpreter on odd sizes.
#[cfg(test)]
mod end_to_end {
    use super::*;
    use argent_ir::{
        Directive, DirectiveKind, Func, FuncOrigin, Input, Pipeline, Schedule, Span, StageRef,
        TailStrategy,
    };

    /// The paper's two-stage blur over a u16 input.
    fn blur(directives: Vec<(&str, DirectiveKind)>) -> Pipeline {
        let t = Type::U16;
        let v = Expr::var_i32;
        let inp = |dx: i64, dy: i64| Expr::call_input(t, "in", vec![v("x") + dx, v("y") + dy]);
        let bx = |dx: i64, dy: i64| Expr::call_func(t, "blur_x", vec![v("x") + dx, v("y") + dy]);
        let three = Expr::int(t, 3);
        let func = |name: &str, value: Expr| Func {
            name: name.into(),
            ty: t,
            args: vec!["x".into(), "y".into()],
            value,
            updates: vec![],
            origin: FuncOrigin::User,
            span: Span::DUMMY,
        };
        Pipeline {
            inputs: vec![Input {
                name: "in".into(),
                ty: t,
                dims: vec!["x".into(), "y".into()],
                span: Span::DUMMY,
            }],
            params: vec![],
            funcs: vec![
                func(
                    "blur_x",
                    Expr::div(inp(-1, 0) + inp(0, 0) + inp(1, 0), three.clone()),
                ),
                func("blur_y", Expr::div(bx(0, -1) + bx(0, 0) + bx(0, 1), three)),
            ],
            outputs: vec!["blur_y".into()],
            schedule: Schedule {
                directives: directives
                    .into_iter()
                    .map(|(func, kind)| Directive {
                        func: func.into(),
                        stage: StageRef::Pure,
                        kind,
                        span: Span::DUMMY,
                    })
                    .collect(),
            },
        }
    }

    fn vectorize(var: &str, n: i64) -> DirectiveKind {
        DirectiveKind::Vectorize {
            var: var.into(),
            factor: Some(Expr::i32(n)),
        }
    }

    /// Lower, apply the passes in order, run on a `w` x `h` output and
    /// compare with the interpreter; returns the statistics.
    fn check(p: &Pipeline, w: i64, h: i64) -> ExecStats {
        let lowered =
            crate::lower(p, &crate::LowerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let mut m = lowered.module;
        let s = crate::partition_loops::partition_loops(&m.body);
        let s = crate::flatten::flatten(&s, &m.buffers, &Default::default());
        let s = crate::unroll::unroll(&s);
        let s = crate::vectorize::vectorize(&s, true);
        m.body = argent_arith::cse_stmt(&argent_arith::simplify_stmt(&s));
        let mut input = Buffer::new(Type::U16, &[w + 10, h + 2]).with_min(&[-5, -1]);
        input.fill(|c| Value::Int((c[0] * 7919 + c[1] * 104_729).rem_euclid(65_536)));
        let want =
            argent_arith::interp::realize(p, &[("in", &input)], &[], &[(0, w), (0, h)]).unwrap();
        let mut out = Buffer::new(Type::U16, &[w, h]);
        let stats = run(&m, &[("in", &input)], &mut [("blur_y", &mut out)], &[])
            .unwrap_or_else(|e| panic!("{e}\n{}", m.body));
        assert!(
            out.same_contents(&want[0]),
            "{w}x{h}: output differs from the interpreter\n{}",
            m.body
        );
        stats
    }

    #[test]
    fn blur_schedules_match_the_interpreter() {
        let schedules = vec![
            vec![],
            vec![("blur_x", DirectiveKind::ComputeRoot)],
            vec![
                ("blur_x", DirectiveKind::ComputeRoot),
                ("blur_x", vectorize("x", 4)),
                ("blur_y", vectorize("x", 8)),
            ],
            vec![
                (
                    "blur_y",
                    DirectiveKind::Split {
                        old: "x".into(),
                        outer: "xo".into(),
                        inner: "xi".into(),
                        factor: Expr::i32(8),
                        tail: TailStrategy::GuardWithIf,
                    },
                ),
                ("blur_y", vectorize("xi", 8)),
                (
                    "blur_x",
                    DirectiveKind::ComputeAt {
                        consumer: "blur_y".into(),
                        var: "y".into(),
                    },
                ),
            ],
        ];
        for directives in schedules {
            let p = blur(directives);
            for (w, h) in [(17, 3), (33, 9)] {
                check(&p, w, h);
            }
        }
    }

    #[test]
    fn sliding_window_computes_each_value_once() {
        // blur_x stored at the root, computed per scanline of blur_y.
        let p = blur(vec![
            ("blur_x", DirectiveKind::StoreRoot),
            (
                "blur_x",
                DirectiveKind::ComputeAt {
                    consumer: "blur_y".into(),
                    var: "y".into(),
                },
            ),
        ]);
        let (w, h) = (31, 7);
        let stats = check(&p, w, h);
        // Each of the (h + 2) rows of blur_x once, and each output once.
        assert_eq!(stats.stores_to("blur_x"), (w * (h + 2)) as u64);
        assert_eq!(stats.stores_to("blur_y"), (w * h) as u64);
        // Full fusion at y instead recomputes three rows per output row.
        let fused = blur(vec![(
            "blur_x",
            DirectiveKind::ComputeAt {
                consumer: "blur_y".into(),
                var: "y".into(),
            },
        )]);
        assert_eq!(check(&fused, w, h).stores_to("blur_x"), (w * 3 * h) as u64);
    }
}

/// The shipped examples (those whose schedules lower today), through the
/// whole chain, compared with the interpreter on an odd size. This caught
/// CSE hoisting a boundary condition's load out of its `select`.
#[cfg(test)]
mod examples {
    use super::*;

    fn check_example(name: &str, source: &str) {
        let p = argent_lang::compile(source).unwrap_or_else(|e| panic!("{name}: {e}"));
        let lowered = crate::lower(&p, &crate::LowerOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut m = lowered.module;
        let s = crate::partition_loops::partition_loops(&m.body);
        let s = crate::flatten::flatten(&s, &m.buffers, &Default::default());
        let s = crate::vectorize::vectorize(&crate::unroll::unroll(&s), true);
        m.body = argent_arith::cse_stmt(&argent_arith::simplify_stmt(&s));
        let (w, h) = (37, 23);
        let inputs: Vec<(String, Buffer)> = p
            .inputs
            .iter()
            .map(|inp| {
                let mut extents = vec![w, h, 3, 2];
                extents.truncate(inp.dims.len());
                let mut b = Buffer::new(inp.ty, &extents);
                let ty = inp.ty;
                b.fill(|c| {
                    let v: i64 = c
                        .iter()
                        .zip([7919, 104_729, 31, 17])
                        .map(|(x, k)| x * k)
                        .sum();
                    if ty.is_float() {
                        Value::Float((v % 1000) as f32 / 1000.0)
                    } else {
                        Value::Int(v.rem_euclid(if ty.bits <= 8 { 256 } else { 4096 }))
                    }
                });
                (inp.name.clone(), b)
            })
            .collect();
        let in_refs: Vec<(&str, &Buffer)> = inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
        let dims = p.func(&p.outputs[0]).map_or(2, |f| f.args.len());
        let region: Vec<(i64, i64)> = [(0, w), (0, h), (0, 3)].into_iter().take(dims).collect();
        let want = argent_arith::interp::realize(&p, &in_refs, &[], &region).unwrap();
        let extents: Vec<i64> = region.iter().map(|r| r.1).collect();
        let mut outs: Vec<(String, Buffer)> = p
            .outputs
            .iter()
            .map(|o| {
                (
                    o.clone(),
                    Buffer::new(p.func(o).map_or(Type::U8, |f| f.ty), &extents),
                )
            })
            .collect();
        let mut out_refs: Vec<(&str, &mut Buffer)> =
            outs.iter_mut().map(|(n, b)| (n.as_str(), b)).collect();
        run(&m, &in_refs, &mut out_refs, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        for ((o, got), want) in outs.iter().zip(&want) {
            assert!(
                got.same_contents(want),
                "{name}: output {o} differs from the interpreter"
            );
        }
    }

    #[test]
    fn examples_match_the_interpreter() {
        let examples = [
            ("box_blur", include_str!("../../../examples/box_blur.ag")),
            (
                "border_rules",
                include_str!("../../../examples/border_rules.ag"),
            ),
            ("sobel", include_str!("../../../examples/sobel.ag")),
            (
                "unsharp_mask",
                include_str!("../../../examples/unsharp_mask.ag"),
            ),
            (
                "histogram_equalize",
                include_str!("../../../examples/histogram_equalize.ag"),
            ),
            ("grayscale", include_str!("../../../examples/grayscale.ag")),
            ("median3x3", include_str!("../../../examples/median3x3.ag")),
            ("sepia", include_str!("../../../examples/sepia.ag")),
        ];
        for (name, source) in examples {
            check_example(name, source);
        }
    }
}
