//! A small evaluator for lowered statements before flattening (`Realize`,
//! `Provide`, calls to funcs), used to check lowering against the reference
//! interpreter and to count how often each func's values are computed and
//! how much storage each realization takes.

use argent_arith::eval::{Scalar, binary, cast, intrinsic, unary};
use argent_interp::{Buffer, Value};
use argent_ir::*;
use std::collections::HashMap;

pub struct Storage {
    mins: Vec<i64>,
    extents: Vec<i64>,
    data: Vec<Option<Scalar>>,
}

#[derive(Default)]
pub struct Stats {
    /// How many values of each func were computed (Provides executed).
    pub provides: HashMap<String, u64>,
    /// The largest realization of each func, in elements.
    pub max_realization: HashMap<String, i64>,
}

pub struct Machine<'a> {
    pipeline: &'a Pipeline,
    vars: HashMap<String, Vec<Scalar>>,
    storage: HashMap<String, Vec<Storage>>,
    inputs: HashMap<String, &'a Buffer>,
    outputs: HashMap<String, Buffer>,
    pub stats: Stats,
}

impl<'a> Machine<'a> {
    fn push(&mut self, n: &str, v: Scalar) {
        self.vars.entry(n.to_string()).or_default().push(v);
    }
    fn pop(&mut self, n: &str) {
        self.vars.get_mut(n).and_then(|s| s.pop());
    }

    fn eval(&mut self, e: &Expr) -> Result<Scalar, String> {
        Ok(match e.kind() {
            ExprKind::IntImm(v) => Scalar::Int(*v),
            ExprKind::FloatImm(v) => Scalar::Float(*v as f32),
            ExprKind::Var(n) => *self
                .vars
                .get(n)
                .and_then(|s| s.last())
                .ok_or_else(|| format!("unbound variable {n}"))?,
            ExprKind::Cast { value, saturating } => {
                let v = self.eval(value)?;
                cast(e.ty(), value.ty(), v, *saturating)
            }
            ExprKind::Unary { op, value } => {
                let v = self.eval(value)?;
                unary(*op, value.ty(), v)
            }
            ExprKind::Binary { op, a, b } => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                binary(*op, a.ty(), x, y)
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                if self.eval(cond)?.is_true() {
                    self.eval(then)?
                } else {
                    self.eval(otherwise)?
                }
            }
            ExprKind::Let { name, value, body } => {
                let v = self.eval(value)?;
                self.push(name, v);
                let r = self.eval(body);
                self.pop(name);
                r?
            }
            ExprKind::Call { target, args } => {
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.eval(a)?);
                }
                match target {
                    CallTarget::Intrinsic(i) => {
                        let tys: Vec<Type> = args.iter().map(|a| a.ty()).collect();
                        intrinsic(*i, e.ty(), &tys, &vals)
                    }
                    CallTarget::Input(n) => {
                        let coords: Vec<i64> = vals.iter().map(|v| v.as_i64()).collect();
                        let b = self.inputs.get(n).ok_or_else(|| format!("no input {n}"))?;
                        let v = b
                            .get(&coords)
                            .ok_or_else(|| format!("read of {n}{coords:?} outside the input"))?;
                        to_scalar(v)
                    }
                    CallTarget::Func(n) => {
                        let coords: Vec<i64> = vals.iter().map(|v| v.as_i64()).collect();
                        if let Some(s) = self.storage.get(n).and_then(|v| v.last()) {
                            let i = index(s, &coords).ok_or_else(|| {
                                format!(
                                    "read of {n}{coords:?} outside its realization {:?}+{:?}",
                                    s.mins, s.extents
                                )
                            })?;
                            s.data[i].ok_or_else(|| {
                                format!("read of {n}{coords:?} before it was computed")
                            })?
                        } else if let Some(b) = self.outputs.get(n) {
                            to_scalar(b.get(&coords).ok_or_else(|| {
                                format!("read of output {n}{coords:?} outside the buffer")
                            })?)
                        } else {
                            return Err(format!("call to {n} with no realization"));
                        }
                    }
                }
            }
            _ => return Err(format!("unsupported expression {e}")),
        })
    }

    fn exec(&mut self, s: &Stmt) -> Result<(), String> {
        match s {
            Stmt::LetStmt { name, value, body } => {
                let v = self.eval(value)?;
                self.push(name, v);
                let r = self.exec(body);
                self.pop(name);
                r
            }
            Stmt::Assert { cond, kind, args } => {
                if self.eval(cond)?.is_true() {
                    return Ok(());
                }
                let vals: Result<Vec<i64>, String> = args
                    .iter()
                    .map(|a| self.eval(a).map(|v| v.as_i64()))
                    .collect();
                Err(format!("assertion failed: {kind:?} {:?}", vals?))
            }
            Stmt::ProducerConsumer { body, .. } => self.exec(body),
            Stmt::For {
                var,
                min,
                extent,
                body,
                ..
            } => {
                let m = self.eval(min)?.as_i64();
                let e = self.eval(extent)?.as_i64();
                for i in m..m + e {
                    self.push(var, Scalar::Int(i));
                    let r = self.exec(body);
                    self.pop(var);
                    r?;
                }
                Ok(())
            }
            Stmt::Provide { func, args, value } => {
                let v = self.eval(value)?;
                let mut coords = Vec::new();
                for a in args {
                    coords.push(self.eval(a)?.as_i64());
                }
                *self.stats.provides.entry(func.clone()).or_default() += 1;
                if let Some(st) = self.storage.get_mut(func).and_then(|v| v.last_mut()) {
                    let i = index(st, &coords).ok_or_else(|| {
                        format!(
                            "write of {func}{coords:?} outside its realization {:?}+{:?}",
                            st.mins, st.extents
                        )
                    })?;
                    st.data[i] = Some(v);
                    Ok(())
                } else if let Some(b) = self.outputs.get_mut(func) {
                    let ty = b.ty();
                    if !b.set(&coords, from_scalar(ty, v)) {
                        return Err(format!(
                            "write of output {func}{coords:?} outside the buffer"
                        ));
                    }
                    Ok(())
                } else {
                    Err(format!("provide to {func} with no realization"))
                }
            }
            Stmt::Realize {
                func, bounds, body, ..
            } => {
                let mut mins = Vec::new();
                let mut extents = Vec::new();
                for r in bounds {
                    mins.push(self.eval(&r.min)?.as_i64());
                    extents.push(self.eval(&r.extent)?.as_i64().max(0));
                }
                let size: i64 = extents.iter().product();
                if size > 50_000_000 {
                    return Err(format!("realization of {func} too large: {extents:?}"));
                }
                let e = self.stats.max_realization.entry(func.clone()).or_default();
                *e = (*e).max(size);
                self.storage.entry(func.clone()).or_default().push(Storage {
                    mins,
                    extents,
                    data: vec![None; size as usize],
                });
                let r = self.exec(body);
                self.storage.get_mut(func).and_then(|v| v.pop());
                r
            }
            Stmt::Block(v) => v.iter().try_for_each(|s| self.exec(s)),
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                if self.eval(cond)?.is_true() {
                    self.exec(then)
                } else if let Some(o) = otherwise {
                    self.exec(o)
                } else {
                    Ok(())
                }
            }
            Stmt::Evaluate(e) => self.eval(e).map(|_| ()),
            other => Err(format!("unsupported statement {other}")),
        }
    }
}

fn index(s: &Storage, coords: &[i64]) -> Option<usize> {
    let mut i = 0i64;
    let mut stride = 1i64;
    for ((c, m), e) in coords.iter().zip(&s.mins).zip(&s.extents) {
        let o = c - m;
        if o < 0 || o >= *e {
            return None;
        }
        i += o * stride;
        stride *= e;
    }
    Some(i as usize)
}

fn to_scalar(v: Value) -> Scalar {
    match v {
        Value::Int(i) => Scalar::Int(i),
        Value::Float(f) => Scalar::Float(f),
    }
}

fn from_scalar(ty: Type, v: Scalar) -> Value {
    match v {
        Scalar::Int(i) if ty.is_float() => Value::Float(i as f32),
        Scalar::Int(i) => Value::Int(ty.wrap(i)),
        Scalar::Float(f) => Value::Float(f),
    }
}

/// Run a lowered module over `region` (one `(min, extent)` per output dim).
pub fn run(
    body: &Stmt,
    pipeline: &Pipeline,
    inputs: &[(&str, &Buffer)],
    region: &[(i64, i64)],
) -> Result<(Vec<Buffer>, Stats), String> {
    let mut m = Machine {
        pipeline,
        vars: HashMap::new(),
        storage: HashMap::new(),
        inputs: inputs.iter().map(|(n, b)| (n.to_string(), *b)).collect(),
        outputs: HashMap::new(),
        stats: Stats::default(),
    };
    for (n, b) in inputs {
        for (d, dim) in b.dims().iter().enumerate() {
            m.push(&buffer_field(n, "min", d), Scalar::Int(dim.min));
            m.push(&buffer_field(n, "extent", d), Scalar::Int(dim.extent));
            m.push(&buffer_field(n, "stride", d), Scalar::Int(dim.stride));
        }
    }
    for p in &m.pipeline.params {
        let v = p.default.unwrap_or(0.0);
        let s = if p.ty.is_float() {
            Scalar::Float(v as f32)
        } else {
            Scalar::Int(v as i64)
        };
        m.push(&p.name.clone(), s);
    }
    for o in &pipeline.outputs {
        let f = pipeline.func(o).ok_or("no output func")?;
        let extents: Vec<i64> = region.iter().map(|r| r.1).collect();
        let mins: Vec<i64> = region.iter().map(|r| r.0).collect();
        let b = Buffer::new(f.ty, &extents[..f.args.len()]).with_min(&mins[..f.args.len()]);
        for (d, dim) in b.dims().iter().enumerate() {
            m.push(&buffer_field(o, "min", d), Scalar::Int(dim.min));
            m.push(&buffer_field(o, "extent", d), Scalar::Int(dim.extent));
            m.push(&buffer_field(o, "stride", d), Scalar::Int(dim.stride));
        }
        m.outputs.insert(o.clone(), b);
    }
    m.exec(body)?;
    let outs = pipeline
        .outputs
        .iter()
        .map(|o| m.outputs.remove(o).unwrap())
        .collect();
    Ok((outs, m.stats))
}
