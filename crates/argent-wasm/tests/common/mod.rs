//! Shared test support: a reference evaluator of lowered modules with the
//! exact scalar semantics, and a runner that executes generated modules in
//! Node through `tests/js/run.mjs`.

#![allow(dead_code)]

use argent_ir::{
    AssertKind, BinOp, BufferArg, BufferRole, CallTarget, Expr, ExprKind, Module, Param, Span,
    Stmt, Type, TypeKind,
};
use argent_wasm::CompiledModule;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

// ---- building modules -------------------------------------------------------

pub fn buffer(name: &str, ty: Type, dims: usize, role: BufferRole) -> BufferArg {
    BufferArg {
        name: name.to_string(),
        ty,
        dims,
        role,
    }
}

pub fn param(name: &str, ty: Type) -> Param {
    Param {
        name: name.to_string(),
        ty,
        default: None,
        range: None,
        span: Span::DUMMY,
    }
}

pub fn module(buffers: Vec<BufferArg>, params: Vec<Param>, body: Stmt) -> Module {
    Module {
        name: "test".to_string(),
        buffers,
        params,
        body,
    }
}

pub fn for_loop(var: &str, min: Expr, extent: Expr, kind: argent_ir::ForKind, body: Stmt) -> Stmt {
    Stmt::For {
        var: var.to_string(),
        min,
        extent,
        kind,
        body: Box::new(body),
    }
}

pub fn store(buffer: &str, index: Expr, value: Expr) -> Stmt {
    Stmt::Store {
        buffer: buffer.to_string(),
        index,
        value,
    }
}

pub fn x() -> Expr {
    Expr::var_i32("x")
}

/// A dense ramp of `lanes` lanes starting at `base`.
pub fn dense(base: Expr, lanes: u16) -> Expr {
    Expr::ramp(base, Expr::i32(1), lanes)
}

// ---- data -------------------------------------------------------------------

/// Deterministic pseudo-random bytes.
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u8
        })
        .collect()
}

/// One buffer argument: its bytes and per-dimension (min, extent, stride).
#[derive(Clone, Debug)]
pub struct BufData {
    pub bytes: Vec<u8>,
    pub dims: Vec<(i32, i32, i32)>,
}

impl BufData {
    pub fn one_d(bytes: Vec<u8>, elem_bytes: usize) -> BufData {
        let n = (bytes.len() / elem_bytes) as i32;
        BufData {
            bytes,
            dims: vec![(0, n, 1)],
        }
    }
}

// ---- running in Node ------------------------------------------------------

#[derive(Debug)]
pub struct NodeOutput {
    pub status: i32,
    pub error_args: Vec<i32>,
    pub heap: (u32, u32, u32),
    pub pages: (u32, u32),
    pub buffers: Vec<Vec<u8>>,
    /// The argument block's words after the last call.
    pub args_words: Vec<i32>,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn scratch_dir() -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("argent-wasm-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One module run: what `run_node_batch` executes.
pub struct Job<'a> {
    pub compiled: &'a CompiledModule,
    pub buffers: &'a [BufData],
    pub params: &'a [u32],
    /// Threads (0 = unshared memory, no workers).
    pub threads: usize,
    /// How many times `run` is called (to check for leaks).
    pub runs: u32,
    /// Call the module's `query` (the bounds query) before the runs.
    pub query: bool,
}

/// Runs `compiled` in Node `runs` times with `threads` threads (0 = no
/// shared memory) and returns the final state.
pub fn run_node(
    compiled: &CompiledModule,
    buffers: &[BufData],
    params: &[u32],
    threads: usize,
    runs: u32,
) -> NodeOutput {
    run_node_batch(&[Job {
        compiled,
        buffers,
        params,
        threads,
        runs,
        query: false,
    }])
    .pop()
    .unwrap()
}

/// Calls `compiled`'s bounds query in Node with these arguments (the
/// buffers' bytes are not needed) and returns the argument block after it.
pub fn query_node(compiled: &CompiledModule, buffers: &[BufData], params: &[u32]) -> Vec<i32> {
    run_node_batch(&[Job {
        compiled,
        buffers,
        params,
        threads: 0,
        runs: 0,
        query: true,
    }])
    .pop()
    .unwrap()
    .args_words
}

/// Runs several jobs in one Node process (starting Node dominates the
/// cost of small tests).
pub fn run_node_batch(jobs: &[Job]) -> Vec<NodeOutput> {
    let dir = scratch_dir();
    let mut job_paths = Vec::new();
    for (n, job_spec) in jobs.iter().enumerate() {
        let wasm = dir.join(format!("module{n}.wasm"));
        std::fs::write(&wasm, &job_spec.compiled.bytes).unwrap();
        let abi = &job_spec.compiled.abi;
        let mut job = format!(
            "wasm {}\nthreads {}\nruns {}\nquery {}\nargs {} {} {}\n",
            wasm.display(),
            job_spec.threads,
            job_spec.runs,
            u8::from(job_spec.query),
            abi.args_size,
            abi.error_args_offset,
            abi.max_error_args
        );
        for (b, data) in abi.buffers.iter().zip(job_spec.buffers) {
            let hex: String = data.bytes.iter().map(|x| format!("{x:02x}")).collect();
            job += &format!(
                "buffer {} {} {} {hex}\n",
                b.offset,
                b.ty.bytes(),
                data.bytes.len()
            );
            for (min, extent, stride) in &data.dims {
                job += &format!("dim {min} {extent} {stride}\n");
            }
        }
        for (p, word) in abi.params.iter().zip(job_spec.params) {
            job += &format!("param {} {}\n", p.offset, *word as i32);
        }
        let job_path = dir.join(format!("job{n}.txt"));
        std::fs::write(&job_path, job).unwrap();
        job_paths.push(job_path);
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js/run.mjs");
    let out = Command::new("node")
        .arg(&script)
        .args(&job_paths)
        .output()
        .expect("node is installed");
    assert!(
        out.status.success(),
        "node failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let mut stdout = String::new();
    for path in &job_paths {
        let mut out_path = path.clone().into_os_string();
        out_path.push(".out");
        stdout += &std::fs::read_to_string(&out_path).expect("node wrote the results");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let empty = || NodeOutput {
        status: 0,
        error_args: vec![],
        heap: (0, 0, 0),
        pages: (0, 0),
        buffers: vec![],
        args_words: vec![],
    };
    let mut results = Vec::new();
    let mut result = empty();
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        let nums =
            |w: std::str::SplitWhitespace| -> Vec<i64> { w.map(|x| x.parse().unwrap()).collect() };
        match words.next() {
            Some("status") => result.status = nums(words)[0] as i32,
            Some("error_args") => {
                result.error_args = nums(words).iter().map(|&v| v as i32).collect()
            }
            Some("heap") => {
                let v = nums(words);
                result.heap = (v[0] as u32, v[1] as u32, v[2] as u32);
            }
            Some("pages") => {
                let v = nums(words);
                result.pages = (v[0] as u32, v[1] as u32);
            }
            Some("buffer") => {
                let hex = words.next().unwrap_or("");
                result.buffers.push(
                    (0..hex.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                        .collect(),
                );
            }
            Some("args_words") => {
                result.args_words = nums(words).iter().map(|&v| v as i32).collect()
            }
            Some("end") => results.push(std::mem::replace(&mut result, empty())),
            _ => panic!("unexpected output line {line}"),
        }
    }
    assert_eq!(results.len(), jobs.len());
    results
}

// ---- reference evaluator ----------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum V {
    I(i64),
    F(f32),
}

impl V {
    fn i(self) -> i64 {
        match self {
            V::I(v) => v,
            V::F(f) => panic!("expected an integer, got {f}"),
        }
    }
    fn f(self) -> f32 {
        match self {
            V::F(v) => v,
            V::I(i) => panic!("expected a float, got {i}"),
        }
    }
}

/// A failed check: its kind and argument values.
#[derive(Debug, PartialEq)]
pub struct Failure {
    pub kind: AssertKind,
    pub args: Vec<V>,
}

struct Eval<'a> {
    env: Vec<(String, Vec<V>)>,
    buffers: HashMap<String, (Vec<u8>, Type)>,
    _m: std::marker::PhantomData<&'a ()>,
}

/// Evaluates `module` on `buffers` (in `Module::buffers` order) and
/// returns their final contents, or the first failed check.
pub fn reference(
    module: &Module,
    buffers: &[BufData],
    params: &[V],
) -> Result<Vec<Vec<u8>>, Failure> {
    let mut ev = Eval {
        env: Vec::new(),
        buffers: HashMap::new(),
        _m: Default::default(),
    };
    for (b, data) in module.buffers.iter().zip(buffers) {
        for (d, (min, extent, stride)) in data.dims.iter().enumerate() {
            for (field, v) in [("min", min), ("extent", extent), ("stride", stride)] {
                ev.env.push((
                    argent_ir::buffer_field(&b.name, field, d),
                    vec![V::I(*v as i64)],
                ));
            }
        }
        ev.buffers
            .insert(b.name.clone(), (data.bytes.clone(), b.ty.element()));
    }
    for (p, v) in module.params.iter().zip(params) {
        ev.env.push((p.name.clone(), vec![*v]));
    }
    ev.stmt(&module.body)?;
    Ok(module
        .buffers
        .iter()
        .map(|b| ev.buffers[&b.name].0.clone())
        .collect())
}

pub fn wrap(ty: Type, v: i64) -> i64 {
    ty.element().wrap(v)
}

// Lane semantics come from the reference interpreter itself, so these
// tests check the backend against the oracle, not against a copy of it.
use argent_interp::scalar;

fn raw(v: V) -> i64 {
    match v {
        V::I(i) => i,
        V::F(f) => scalar::from_f32(f),
    }
}

fn cooked(ty: Type, raw: i64) -> V {
    if ty.is_float() {
        V::F(scalar::to_f32(raw))
    } else {
        V::I(raw)
    }
}

pub fn cast(from: Type, to: Type, saturating: bool, v: V) -> V {
    cooked(
        to,
        scalar::cast(from.element(), to.element(), saturating, raw(v)),
    )
}

pub fn binary(op: BinOp, ty: Type, a: V, b: V) -> V {
    let ty = ty.element();
    let result = scalar::binary(op, ty, raw(a), raw(b));
    if ty.is_float() && !(op.is_comparison() || op.is_logical()) {
        V::F(scalar::to_f32(result))
    } else {
        V::I(result)
    }
}

fn read(bytes: &[u8], ty: Type, index: i64) -> V {
    let n = ty.bytes();
    let at = index as usize * n;
    let b = &bytes[at..at + n];
    match (ty.kind, ty.bits) {
        (TypeKind::Float, _) => V::F(f32::from_le_bytes(b.try_into().unwrap())),
        (TypeKind::Bool, _) => V::I((b[0] != 0) as i64),
        (TypeKind::UInt, 8) => V::I(b[0] as i64),
        (TypeKind::Int, 8) => V::I(b[0] as i8 as i64),
        (TypeKind::UInt, 16) => V::I(u16::from_le_bytes(b.try_into().unwrap()) as i64),
        (TypeKind::Int, 16) => V::I(i16::from_le_bytes(b.try_into().unwrap()) as i64),
        (TypeKind::UInt, _) => V::I(u32::from_le_bytes(b.try_into().unwrap()) as i64),
        _ => V::I(i32::from_le_bytes(b.try_into().unwrap()) as i64),
    }
}

fn write(bytes: &mut [u8], ty: Type, index: i64, v: V) {
    let n = ty.bytes();
    let at = index as usize * n;
    let raw: [u8; 4] = match v {
        V::F(f) => f.to_le_bytes(),
        V::I(i) => (i as u32).to_le_bytes(),
    };
    bytes[at..at + n].copy_from_slice(&raw[..n]);
}

impl Eval<'_> {
    fn lookup(&self, name: &str) -> Vec<V> {
        if let Some((_, v)) = self.env.iter().rev().find(|(n, _)| n == name) {
            return v.clone();
        }
        // `v#i`, lane `i` of vector `v` (see `argent_wasm::lane_of`).
        if let Some((base, lane)) = name.rsplit_once('#')
            && let Ok(lane) = lane.parse::<usize>()
            && let Some((_, v)) = self.env.iter().rev().find(|(n, _)| n == base)
        {
            return vec![v[lane]];
        }
        panic!("unbound {name}")
    }

    fn expr(&mut self, e: &Expr) -> Vec<V> {
        let ty = e.ty();
        let lanes = ty.lanes as usize;
        let bcast = |v: Vec<V>| -> Vec<V> {
            if v.len() == 1 && lanes > 1 {
                vec![v[0]; lanes]
            } else {
                v
            }
        };
        match e.kind() {
            ExprKind::IntImm(v) => vec![V::I(wrap(ty, *v)); lanes],
            ExprKind::FloatImm(v) => vec![V::F(*v as f32); lanes],
            ExprKind::Var(n) => self.lookup(n),
            ExprKind::Cast { value, saturating } => {
                let from = value.ty();
                self.expr(value)
                    .into_iter()
                    .map(|v| cast(from, ty, *saturating, v))
                    .collect()
            }
            ExprKind::Unary { op, value } => self
                .expr(value)
                .into_iter()
                .map(|v| cooked(ty, scalar::unary(*op, ty.element(), raw(v))))
                .collect(),
            ExprKind::Binary { op, a, b } => {
                let at = a.ty();
                let av = bcast(self.expr(a));
                let bv = bcast(self.expr(b));
                av.into_iter()
                    .zip(bv)
                    .map(|(x, y)| binary(*op, at, x, y))
                    .collect()
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                // Only the arm each lane takes is evaluated: an input read
                // in an arm is only checked where its condition holds.
                let c = bcast(self.expr(cond));
                if c.iter().all(|c| c.i() != 0) {
                    return bcast(self.expr(then));
                }
                if c.iter().all(|c| c.i() == 0) {
                    return bcast(self.expr(otherwise));
                }
                (0..lanes)
                    .map(|i| {
                        let arm = if c[i].i() != 0 { then } else { otherwise };
                        self.expr(&argent_wasm::lane_of(arm, i as u16))[0]
                    })
                    .collect()
            }
            ExprKind::Call {
                target: CallTarget::Intrinsic(intr),
                args,
            } => {
                let vals: Vec<Vec<V>> = args.iter().map(|a| bcast(self.expr(a))).collect();
                let at = args[0].ty().element();
                (0..lanes)
                    .map(|i| {
                        let a = raw(vals[0][i]);
                        let b = vals.get(1).map(|v| raw(v[i])).unwrap_or(0);
                        match scalar::intrinsic(*intr, ty.element(), at, a, b) {
                            Some(r) => cooked(ty, r),
                            None => {
                                // Defined by its expansion.
                                let lane_args: Vec<Expr> = args
                                    .iter()
                                    .map(|e| argent_wasm::lane_of(e, i as u16))
                                    .collect();
                                let expanded = argent_ir::math::expand_call(*intr, &lane_args)
                                    .unwrap_or_else(|| panic!("intrinsic {intr:?}"));
                                self.expr(&expanded)[0]
                            }
                        }
                    })
                    .collect()
            }
            ExprKind::Call { .. } => panic!("call in lowered code"),
            ExprKind::Let { name, value, body } => {
                let v = self.expr(value);
                self.env.push((name.clone(), v));
                let r = self.expr(body);
                self.env.pop();
                r
            }
            ExprKind::Load { buffer, index } => {
                let idx = self.expr(index);
                let (bytes, bty) = &self.buffers[buffer];
                idx.iter().map(|i| read(bytes, *bty, i.i())).collect()
            }
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => {
                let b = self.expr(base);
                let s = self.expr(stride);
                let bl = b.len();
                (0..*lanes as usize * bl)
                    .map(|k| {
                        let step = (k / bl) as i64;
                        match (b[k % bl], s[k % bl]) {
                            (V::I(b), V::I(s)) => V::I(wrap(ty, b + s * step)),
                            (V::F(b), V::F(s)) => {
                                if step == 0 {
                                    V::F(b)
                                } else {
                                    V::F(b + s * step as f32)
                                }
                            }
                            other => panic!("bad ramp {other:?}"),
                        }
                    })
                    .collect()
            }
            ExprKind::Broadcast { value, lanes } => {
                let v = self.expr(value);
                (0..*lanes as usize * v.len())
                    .map(|k| v[k % v.len()])
                    .collect()
            }
            ExprKind::Shuffle { vectors, indices } => {
                let all: Vec<V> = vectors.iter().flat_map(|v| self.expr(v)).collect();
                indices.iter().map(|&i| all[i as usize]).collect()
            }
        }
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Failure> {
        match s {
            Stmt::LetStmt { name, value, body } => {
                let v = self.expr(value);
                self.env.push((name.clone(), v));
                let r = self.stmt(body);
                self.env.pop();
                r
            }
            Stmt::Assert { cond, kind, args } => {
                if self.expr(cond)[0].i() == 0 {
                    let args = args.iter().map(|a| self.expr(a)[0]).collect();
                    return Err(Failure {
                        kind: kind.clone(),
                        args,
                    });
                }
                Ok(())
            }
            Stmt::ProducerConsumer { body, .. } => self.stmt(body),
            Stmt::For {
                var,
                min,
                extent,
                body,
                ..
            } => {
                let min = self.expr(min)[0].i();
                let extent = self.expr(extent)[0].i();
                for i in min..min + extent {
                    self.env.push((var.clone(), vec![V::I(i)]));
                    let r = self.stmt(body);
                    self.env.pop();
                    r?;
                }
                Ok(())
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => {
                let lanes = value.ty().lanes.max(index.ty().lanes) as usize;
                let mut idx = self.expr(index);
                let mut val = self.expr(value);
                if idx.len() == 1 {
                    idx = vec![idx[0]; lanes];
                }
                if val.len() == 1 {
                    val = vec![val[0]; lanes];
                }
                let (bytes, bty) = self.buffers.get_mut(buffer).unwrap();
                for (i, v) in idx.iter().zip(val) {
                    write(bytes, *bty, i.i(), v);
                }
                Ok(())
            }
            Stmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => {
                let n = self.expr(size)[0].i().max(0) as usize;
                let old = self
                    .buffers
                    .insert(buffer.clone(), (vec![0; n * ty.bytes()], ty.element()));
                let r = self.stmt(body);
                match old {
                    Some(o) => self.buffers.insert(buffer.clone(), o),
                    None => self.buffers.remove(buffer),
                };
                r
            }
            Stmt::Block(stmts) => stmts.iter().try_for_each(|s| self.stmt(s)),
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                if self.expr(cond)[0].i() != 0 {
                    self.stmt(then)
                } else if let Some(o) = otherwise {
                    self.stmt(o)
                } else {
                    Ok(())
                }
            }
            Stmt::Evaluate(_) => Ok(()),
            other => panic!("not lowered: {other:?}"),
        }
    }
}
