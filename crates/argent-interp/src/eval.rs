//! Demand-driven evaluation with memoisation.
//!
//! A func value is computed the first time some consumer asks for it and
//! kept in a dense table per func, grown (with slack) to the bounding box
//! of the points asked for. Funcs with update definitions are computed a
//! slice at a time: the dimensions where every update writes its own pure
//! variable are independent, so a demanded point selects a slice (its
//! coordinates there); within the slice every point touched is
//! materialised, initialised lazily from the pure definition, and every
//! update runs over its whole reduction domain in order.

use crate::buffer::Buffer;
use crate::compile::{self, MAX_DIMS, Node, Program, UpdateCode};
use crate::error::{InputTooSmall, IrBug, RunError};
use crate::scalar;
use crate::value::Value;
use argent_ir::BinOp;
use argent_ir::{Pipeline, Type, TypeKind, buffer_field};
use std::collections::HashMap;

/// Limits that turn runaway evaluations into errors instead of crashes.
#[derive(Clone, Debug)]
pub struct Options {
    /// How deeply evaluation may nest, in expression levels: each time a
    /// stage asks another for a value that is not computed yet, the depth
    /// grows by the nesting depth of the asking definition. One level takes
    /// about 150 bytes of stack in release builds and 210 in debug builds
    /// (measured), so the default stays within half of the 1 MiB stack of
    /// WebAssembly; for deeper pipelines run on a thread with a bigger
    /// stack and raise this.
    pub max_depth: usize,
    /// The most cells one func's table (or one slice) may have.
    pub max_cells: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_depth: 3000,
            max_cells: 1 << 28,
        }
    }
}

type Stop = Box<RunError>;

/// The coordinates of a point, padded with zeros past its dimensions.
type Coords = [i64; MAX_DIMS];

fn bug(msg: &str) -> Stop {
    Box::new(RunError::Bug(IrBug(msg.to_string())))
}

const EMPTY: u8 = 0;
const BUSY: u8 = 1;
const DONE: u8 = 2;

/// A dense table of 32-bit cells over a box that grows on demand.
struct Table {
    dims: usize,
    min: [i64; MAX_DIMS],
    extent: [i64; MAX_DIMS],
    stride: [usize; MAX_DIMS],
    values: Vec<u32>,
    flags: Vec<u8>,
}

impl Table {
    fn new(dims: usize) -> Table {
        Table {
            dims,
            min: [0; MAX_DIMS],
            extent: [0; MAX_DIMS],
            stride: [0; MAX_DIMS],
            values: Vec::new(),
            flags: Vec::new(),
        }
    }

    #[inline]
    fn index(&self, c: &[i64]) -> Option<usize> {
        if self.flags.is_empty() {
            return None;
        }
        let mut i = 0;
        for (d, &x) in c.iter().enumerate().take(self.dims) {
            let r = x - self.min[d];
            if r < 0 || r >= self.extent[d] {
                return None;
            }
            i += r as usize * self.stride[d];
        }
        Some(i)
    }

    #[inline]
    fn locate(&mut self, c: &[i64], max_cells: usize) -> Result<usize, Stop> {
        if let Some(i) = self.index(c) {
            return Ok(i);
        }
        let mut lo = [0; MAX_DIMS];
        let mut hi = [0; MAX_DIMS];
        for d in 0..self.dims {
            if self.flags.is_empty() {
                lo[d] = c[d];
                hi[d] = c[d];
            } else {
                lo[d] = self.min[d];
                hi[d] = self.min[d] + self.extent[d] - 1;
                let slack = (self.extent[d] / 2).max(2);
                if c[d] < lo[d] {
                    lo[d] = c[d].min(lo[d] - slack);
                }
                if c[d] > hi[d] {
                    hi[d] = c[d].max(hi[d] + slack);
                }
            }
        }
        self.reshape(&lo[..self.dims], &hi[..self.dims], max_cells)?;
        self.index(c)
            .ok_or_else(|| bug("table growth missed a point"))
    }

    /// Make the box cover `lo ..= hi` (and what it covers already).
    fn reshape(&mut self, lo: &[i64], hi: &[i64], max_cells: usize) -> Result<(), Stop> {
        let mut new_min = [0; MAX_DIMS];
        let mut new_extent = [0; MAX_DIMS];
        let mut total: u128 = 1;
        for d in 0..self.dims {
            let (mut l, mut h) = (lo[d], hi[d]);
            if !self.flags.is_empty() {
                l = l.min(self.min[d]);
                h = h.max(self.min[d] + self.extent[d] - 1);
            }
            new_min[d] = l;
            new_extent[d] = h - l + 1;
            total = total.saturating_mul((h as i128 - l as i128 + 1) as u128);
        }
        if total > max_cells as u128 {
            return Err(Box::new(RunError::ResourceLimit {
                message: format!(
                    "a stage needs a table of {total} values, more than the limit of {max_cells}"
                ),
            }));
        }
        let total = total as usize;
        let mut stride = [0usize; MAX_DIMS];
        let mut s = 1usize;
        for d in 0..self.dims {
            stride[d] = s;
            s *= new_extent[d] as usize;
        }
        let mut values = vec![0u32; total];
        let mut flags = vec![EMPTY; total];
        if !self.flags.is_empty() {
            // Copy the old box row by row (dimension 0 is contiguous).
            let row = if self.dims == 0 {
                1
            } else {
                self.extent[0] as usize
            };
            let mut pos = [0i64; MAX_DIMS];
            loop {
                let mut old = 0usize;
                let mut new = 0usize;
                for d in 0..self.dims {
                    let c = self.min[d] + pos[d];
                    old += pos[d] as usize * self.stride[d];
                    new += (c - new_min[d]) as usize * stride[d];
                }
                values[new..new + row].copy_from_slice(&self.values[old..old + row]);
                flags[new..new + row].copy_from_slice(&self.flags[old..old + row]);
                let mut d = 1;
                loop {
                    if d >= self.dims {
                        break;
                    }
                    pos[d] += 1;
                    if pos[d] < self.extent[d] {
                        break;
                    }
                    pos[d] = 0;
                    d += 1;
                }
                if d >= self.dims {
                    break;
                }
            }
        }
        self.min = new_min;
        self.extent = new_extent;
        self.stride = stride;
        self.values = values;
        self.flags = flags;
        Ok(())
    }
}

/// The raw value of a 32-bit table cell of type `ty`.
#[inline]
fn decode(ty: Type, cell: u32) -> i64 {
    if ty.kind == TypeKind::Int {
        cell as i32 as i64
    } else {
        cell as i64
    }
}

/// The slices of a func with updates: `table` maps slice coordinates to
/// the final value (when the slice is one point) or to an index in `done`.
struct Slices {
    table: Table,
    done: Vec<Table>,
}

/// A slice whose updates are running.
struct Active {
    func: usize,
    coords: [i64; MAX_DIMS],
    table: Table,
}

/// Bounding box of one stage's reads of one input.
#[derive(Clone)]
struct Reads {
    any: bool,
    outside: bool,
    lo: [i64; MAX_DIMS],
    hi: [i64; MAX_DIMS],
}

pub(crate) struct Machine<'a> {
    prog: &'a Program,
    inputs: Vec<&'a Buffer>,
    memo: Vec<Table>,
    slices: Vec<Slices>,
    active: Vec<Active>,
    current: Option<usize>,
    stack: Vec<i64>,
    /// The first free slot of `stack`.
    top: usize,
    depth: usize,
    reads: Vec<Reads>,
    options: &'a Options,
}

impl<'a> Machine<'a> {
    /// Make frame slots up to `end` addressable. Slots are written before
    /// they are read, so they are never cleared.
    #[inline]
    fn reserve_stack(&mut self, end: usize) {
        if self.stack.len() < end {
            self.stack.resize(end * 2, 0);
        }
    }

    fn enter(&mut self, weight: usize) -> Result<(), Stop> {
        self.depth += weight;
        if self.depth > self.options.max_depth {
            return Err(Box::new(RunError::ResourceLimit {
                message: format!(
                    "evaluation nested more than {} expression levels deep (a very long chain of stages, or an update reading its own func at other positions); raise Options::max_depth and run on a bigger stack",
                    self.options.max_depth
                ),
            }));
        }
        Ok(())
    }

    #[inline]
    fn eval(&mut self, code: &Code, base: usize) -> Result<i64, Stop> {
        code(self, base)
    }

    fn read_input(&mut self, input: usize, stage: usize, c: &[i64]) -> i64 {
        let buffer = self.inputs[input];
        let reads = &mut self.reads[stage * self.inputs.len() + input];
        let mut offset = 0i64;
        let mut outside = false;
        for (d, dim) in buffer.dims().iter().enumerate() {
            let x = c[d];
            if reads.any {
                reads.lo[d] = reads.lo[d].min(x);
                reads.hi[d] = reads.hi[d].max(x);
            } else {
                reads.lo[d] = x;
                reads.hi[d] = x;
            }
            let r = x - dim.min;
            if r < 0 || r >= dim.extent {
                outside = true;
            } else {
                offset += r * dim.stride;
            }
        }
        reads.any = true;
        if outside {
            reads.outside = true;
            return 0;
        }
        let raw = buffer.raw_at(offset as usize);
        if buffer.ty().is_bool() {
            (raw != 0) as i64
        } else {
            raw
        }
    }

    /// Evaluate the pure definition of `f` at `c` (no memoisation).
    fn eval_pure(&mut self, f: usize, c: &Coords) -> Result<i64, Stop> {
        let code = &self.prog.funcs[f];
        self.enter(code.pure_depth)?;
        let base = self.top;
        self.reserve_stack(base + code.pure_slots.max(MAX_DIMS));
        // Copy all MAX_DIMS coordinates: a fixed-size copy is a few moves,
        // a variable one a library call. Slots past the func's dimensions
        // belong to no live frame yet.
        self.stack[base..base + MAX_DIMS].copy_from_slice(c);
        self.top = base + code.pure_slots;
        let saved = self.current.take();
        let v = self.eval(&code.pure, base)?;
        self.current = saved;
        self.top = base;
        self.depth -= code.pure_depth;
        Ok(v)
    }

    fn func_value(&mut self, f: usize, c: &Coords) -> Result<i64, Stop> {
        let code = &self.prog.funcs[f];
        if !code.updates.is_empty() {
            return self.update_func_value(f, c);
        }
        let max_cells = self.options.max_cells;
        let t = &mut self.memo[f];
        let i = t.locate(c, max_cells)?;
        match t.flags[i] {
            DONE => return Ok(decode(code.ty, t.values[i])),
            BUSY => return Err(bug(&format!("`{}` depends on itself", code.name))),
            _ => {}
        }
        t.flags[i] = BUSY;
        let v = self.eval_pure(f, c)?;
        let t = &mut self.memo[f];
        let i = t.index(c).ok_or_else(|| bug("memo point vanished"))?;
        t.values[i] = v as u32;
        t.flags[i] = DONE;
        Ok(v)
    }

    fn update_func_value(&mut self, f: usize, c: &Coords) -> Result<i64, Stop> {
        let code = &self.prog.funcs[f];
        let mut sc = [0i64; MAX_DIMS];
        for (k, &d) in code.slice_dims.iter().enumerate() {
            sc[k] = c[d];
        }
        let sc = &sc[..code.slice_dims.len()];
        let point = code.other_dims.is_empty();
        let max_cells = self.options.max_cells;
        let slices = &mut self.slices[f];
        let i = slices.table.locate(sc, max_cells)?;
        match slices.table.flags[i] {
            DONE => {
                if point {
                    return Ok(decode(code.ty, slices.table.values[i]));
                }
                let idx = slices.table.values[i] as usize;
                return self.read_done_slice(f, idx, c);
            }
            BUSY => {
                return Err(Box::new(RunError::Unsupported {
                    message: format!(
                        "`{}` depends on its own value at {c:?} while computing it",
                        code.name
                    ),
                }));
            }
            _ => {}
        }
        slices.table.flags[i] = BUSY;
        let table = self.compute_slice(f, c)?;
        let slices = &mut self.slices[f];
        let i = slices
            .table
            .index(sc)
            .ok_or_else(|| bug("slice vanished"))?;
        slices.table.flags[i] = DONE;
        if point {
            let v = table.values[0];
            slices.table.values[i] = v;
            return Ok(decode(code.ty, v));
        }
        let idx = slices.done.len();
        slices.done.push(table);
        slices.table.values[i] = idx as u32;
        self.read_done_slice(f, idx, c)
    }

    fn read_done_slice(&mut self, f: usize, idx: usize, c: &Coords) -> Result<i64, Stop> {
        let code = &self.prog.funcs[f];
        let mut oc = [0i64; MAX_DIMS];
        for (k, &d) in code.other_dims.iter().enumerate() {
            oc[k] = c[d];
        }
        let oc = &oc[..code.other_dims.len()];
        let t = &self.slices[f].done[idx];
        if let Some(i) = t.index(oc)
            && t.flags[i] == DONE
        {
            return Ok(decode(code.ty, t.values[i]));
        }
        // Untouched by every update: the pure definition's value.
        let v = self.eval_pure(f, c)?;
        let max_cells = self.options.max_cells;
        let t = &mut self.slices[f].done[idx];
        let i = t.locate(oc, max_cells)?;
        t.values[i] = v as u32;
        t.flags[i] = DONE;
        Ok(v)
    }

    fn compute_slice(&mut self, f: usize, c: &Coords) -> Result<Table, Stop> {
        let code = &self.prog.funcs[f];
        self.enter(code.update_depth)?;
        let mut coords = [0i64; MAX_DIMS];
        for (slot, &v) in coords.iter_mut().zip(c) {
            *slot = v;
        }
        let mut table = Table::new(code.other_dims.len());
        if code.other_dims.is_empty() {
            let v = self.eval_pure(f, c)?;
            let i = table.locate(&[], 1)?;
            table.values[i] = v as u32;
            table.flags[i] = DONE;
        }
        self.active.push(Active {
            func: f,
            coords,
            table,
        });
        let me = self.active.len() - 1;
        let saved = self.current.replace(me);
        let base = self.top;
        let slots = code.update_slots.max(code.dims);
        self.reserve_stack(base + slots);
        self.top = base + slots;
        for &d in &code.slice_dims {
            self.stack[base + d] = c[d];
        }
        for u in &code.updates {
            self.run_update(f, me, u, base)?;
        }
        self.top = base;
        self.current = saved;
        self.depth -= code.update_depth;
        let active = self
            .active
            .pop()
            .ok_or_else(|| bug("active slice vanished"))?;
        Ok(active.table)
    }

    fn run_update(
        &mut self,
        f: usize,
        me: usize,
        u: &'a UpdateCode,
        base: usize,
    ) -> Result<(), Stop> {
        let code = &self.prog.funcs[f];
        let n = u.rdom.len();
        let mut mins = Vec::with_capacity(n);
        let mut ends = Vec::with_capacity(n);
        for (m, e) in &u.rdom {
            let m = self.eval(m, base)?;
            let e = self.eval(e, base)?;
            if e <= 0 {
                return Ok(());
            }
            mins.push(m);
            ends.push(m + e);
        }
        let mut at = mins.clone();
        for (k, &s) in u.rvar_slots.iter().enumerate() {
            self.stack[base + s as usize] = at[k];
        }
        let max_cells = self.options.max_cells;
        loop {
            let run = match &u.predicate {
                Some(p) => self.eval(p, base)? != 0,
                None => true,
            };
            if run {
                let mut c = [0i64; MAX_DIMS];
                for (d, a) in u.args.iter().enumerate() {
                    c[d] = self.eval(a, base)?;
                }
                let v = self.eval(&u.value, base)?;
                let mut oc = [0i64; MAX_DIMS];
                for (k, &d) in code.other_dims.iter().enumerate() {
                    oc[k] = c[d];
                }
                let t = &mut self.active[me].table;
                let i = t.locate(&oc[..code.other_dims.len()], max_cells)?;
                t.values[i] = v as u32;
                t.flags[i] = DONE;
            }
            // Next point of the domain, dims[0] fastest.
            let mut k = 0;
            while k < n {
                at[k] += 1;
                if at[k] < ends[k] {
                    break;
                }
                at[k] = mins[k];
                k += 1;
            }
            if k == n {
                return Ok(());
            }
            for (j, &s) in u.rvar_slots.iter().enumerate().take(k + 1) {
                self.stack[base + s as usize] = at[j];
            }
        }
    }

    /// An update of the active slice reading its own func.
    fn self_read(&mut self, c: &Coords) -> Result<i64, Stop> {
        let me = self
            .current
            .ok_or_else(|| bug("self read outside an update"))?;
        let f = self.active[me].func;
        let code = &self.prog.funcs[f];
        if code
            .slice_dims
            .iter()
            .any(|&d| c[d] != self.active[me].coords[d])
        {
            return self.func_value(f, c);
        }
        let mut oc = [0i64; MAX_DIMS];
        for (k, &d) in code.other_dims.iter().enumerate() {
            oc[k] = c[d];
        }
        let oc = &oc[..code.other_dims.len()];
        let t = &self.active[me].table;
        if let Some(i) = t.index(oc)
            && t.flags[i] == DONE
        {
            return Ok(decode(code.ty, t.values[i]));
        }
        let v = self.eval_pure(f, c)?;
        let max_cells = self.options.max_cells;
        let t = &mut self.active[me].table;
        let i = t.locate(oc, max_cells)?;
        t.values[i] = v as u32;
        t.flags[i] = DONE;
        Ok(v)
    }
}

/// Evaluate every output of `pipeline` over `region` (one `(min, extent)`
/// per dimension, shared by all outputs), with [`Options::default`].
/// Returns one dense buffer per output, in `pipeline.outputs` order, whose
/// minimums are the region's. Parameters not given take their defaults.
pub fn realize(
    pipeline: &Pipeline,
    inputs: &[(&str, &Buffer)],
    params: &[(&str, Value)],
    region: &[(i64, i64)],
) -> Result<Vec<Buffer>, RunError> {
    realize_with(pipeline, inputs, params, region, &Options::default())
}

/// [`realize`] with explicit limits.
pub fn realize_with(
    pipeline: &Pipeline,
    inputs: &[(&str, &Buffer)],
    params: &[(&str, Value)],
    region: &[(i64, i64)],
    options: &Options,
) -> Result<Vec<Buffer>, RunError> {
    let mut constants: HashMap<String, i64> = HashMap::new();
    for (name, _) in inputs {
        if pipeline.input(name).is_none() {
            return Err(RunError::UnknownInput {
                input: name.to_string(),
            });
        }
    }
    let mut buffers = Vec::with_capacity(pipeline.inputs.len());
    for input in &pipeline.inputs {
        let Some((_, b)) = inputs.iter().find(|(n, _)| *n == input.name) else {
            return Err(RunError::MissingInput {
                input: input.name.clone(),
            });
        };
        if b.ty() != input.ty.element() {
            return Err(RunError::InputType {
                input: input.name.clone(),
                expected: input.ty.to_string(),
                found: b.ty().to_string(),
            });
        }
        if b.dimensions() != input.dims.len() {
            return Err(RunError::InputDimensions {
                input: input.name.clone(),
                expected: input.dims.len(),
                found: b.dimensions(),
            });
        }
        for (d, dim) in b.dims().iter().enumerate() {
            constants.insert(buffer_field(&input.name, "min", d), Type::I32.wrap(dim.min));
            constants.insert(
                buffer_field(&input.name, "extent", d),
                Type::I32.wrap(dim.extent),
            );
            constants.insert(
                buffer_field(&input.name, "stride", d),
                Type::I32.wrap(dim.stride),
            );
        }
        buffers.push(*b);
    }
    for (name, _) in params {
        if pipeline.param(name).is_none() {
            return Err(RunError::UnknownParam {
                param: name.to_string(),
            });
        }
    }
    for p in &pipeline.params {
        let given = params.iter().find(|(n, _)| *n == p.name).map(|(_, v)| *v);
        let value = match (given, p.default) {
            (Some(v), _) => v,
            (None, Some(d)) => {
                if p.ty.is_float() {
                    Value::Float(d as f32)
                } else {
                    Value::Int(d as i64)
                }
            }
            (None, None) => {
                return Err(RunError::MissingParam {
                    param: p.name.clone(),
                });
            }
        };
        let bad = |message: String| RunError::BadParam {
            param: p.name.clone(),
            message,
        };
        if !p.ty.is_float() {
            let Value::Int(v) = value else {
                return Err(bad(format!(
                    "{value} is not an integer, and `{}` is {}",
                    p.name, p.ty
                )));
            };
            if (v as f64) < p.ty.min_value() || (v as f64) > p.ty.max_value() {
                return Err(bad(format!("{v} does not fit in {}", p.ty)));
            }
        } else if value.as_f32().is_nan() {
            return Err(bad("NaN is not a valid value".to_string()));
        }
        if let Some((lo, hi)) = p.range {
            // Compare float parameters in f32, so that a default or bound
            // such as 0.1 is not out of range by its rounding.
            let outside = match value {
                Value::Int(v) => (v as f64) < lo || (v as f64) > hi,
                Value::Float(f) => f < lo as f32 || f > hi as f32,
            };
            if outside {
                return Err(bad(format!("{value} is outside the range {lo} .. {hi}")));
            }
        }
        constants.insert(p.name.clone(), value.to_raw(p.ty));
    }
    let prog = compile::compile(pipeline, &constants)?;
    for &o in &prog.outputs {
        let f = &prog.funcs[o];
        if f.dims != region.len() {
            return Err(RunError::BadRegion {
                message: format!(
                    "output `{}` has {} dimension(s) but the region has {}",
                    f.name,
                    f.dims,
                    region.len()
                ),
            });
        }
    }
    let cells = region
        .iter()
        .fold(1u128, |n, (_, e)| n.saturating_mul((*e).max(0) as u128));
    if cells > options.max_cells as u128 {
        return Err(RunError::ResourceLimit {
            message: format!(
                "the output region has {cells} points, more than the limit of {}",
                options.max_cells
            ),
        });
    }
    if let Some((_, e)) = region.iter().find(|(_, e)| *e < 0) {
        return Err(RunError::BadRegion {
            message: format!("negative extent {e}"),
        });
    }
    let mut machine = Machine {
        prog: &prog,
        memo: prog
            .funcs
            .iter()
            .map(|f| Table::new(if f.updates.is_empty() { f.dims } else { 0 }))
            .collect(),
        slices: prog
            .funcs
            .iter()
            .map(|f| Slices {
                table: Table::new(f.slice_dims.len()),
                done: Vec::new(),
            })
            .collect(),
        active: Vec::new(),
        current: None,
        stack: vec![0; 4096],
        top: 0,
        depth: 0,
        reads: vec![
            Reads {
                any: false,
                outside: false,
                lo: [0; MAX_DIMS],
                hi: [0; MAX_DIMS]
            };
            prog.funcs.len() * buffers.len()
        ],
        inputs: buffers,
        options,
    };
    let mut outputs = Vec::with_capacity(prog.outputs.len());
    for &o in &prog.outputs {
        let f = &prog.funcs[o];
        let extents: Vec<i64> = region.iter().map(|r| r.1).collect();
        let mins: Vec<i64> = region.iter().map(|r| r.0).collect();
        let mut out = Buffer::new(f.ty, &extents).with_min(&mins);
        if extents.iter().all(|&e| e > 0) {
            let hi: Vec<i64> = region.iter().map(|(m, e)| m + e - 1).collect();
            if f.updates.is_empty() {
                machine.memo[o]
                    .reshape(&mins, &hi, options.max_cells)
                    .map_err(|e| *e)?;
            } else {
                let lo: Vec<i64> = f.slice_dims.iter().map(|&d| mins[d]).collect();
                let hi: Vec<i64> = f.slice_dims.iter().map(|&d| hi[d]).collect();
                machine.slices[o]
                    .table
                    .reshape(&lo, &hi, options.max_cells)
                    .map_err(|e| *e)?;
            }
            let mut c = [0i64; MAX_DIMS];
            c[..mins.len()].copy_from_slice(&mins);
            'points: loop {
                let v = machine.func_value(o, &c).map_err(|e| *e)?;
                let offset = out
                    .offset_of(&c[..mins.len()])
                    .ok_or_else(|| RunError::Bug(IrBug("output point outside".into())))?;
                out.set_raw_at(offset, v);
                let mut d = 0;
                loop {
                    if d == mins.len() {
                        break 'points;
                    }
                    c[d] += 1;
                    if c[d] < mins[d] + extents[d] {
                        break;
                    }
                    c[d] = mins[d];
                    d += 1;
                }
            }
        }
        outputs.push(out);
    }
    let mut too_small = Vec::new();
    for (s, f) in prog.funcs.iter().enumerate() {
        for (i, input) in pipeline.inputs.iter().enumerate() {
            let r = &machine.reads[s * machine.inputs.len() + i];
            if !r.outside {
                continue;
            }
            let b = machine.inputs[i];
            too_small.push(InputTooSmall {
                stage: f.name.clone(),
                input: input.name.clone(),
                dim_names: input.dims.clone(),
                needed: (0..input.dims.len()).map(|d| (r.lo[d], r.hi[d])).collect(),
                available: b
                    .dims()
                    .iter()
                    .map(|d| (d.min, d.min + d.extent - 1))
                    .collect(),
            });
        }
    }
    if !too_small.is_empty() {
        return Err(RunError::InputTooSmall(too_small));
    }
    Ok(outputs)
}

/// A compiled expression: evaluates in a machine with the frame starting
/// at the given slot. Closures instead of a `match` over nodes: each call
/// site predicts its own branch target, about twice as fast.
pub(crate) type Code = Box<dyn for<'m> Fn(&mut Machine<'m>, usize) -> Result<i64, Stop>>;

/// Compile a node tree into nested closures, specialising the common
/// arithmetic on constants.
pub(crate) fn build(n: Node) -> Code {
    use scalar::{from_f32, to_f32};
    match n {
        Node::Const(v) => Box::new(move |_, _| Ok(v)),
        Node::Var(s) => {
            let s = s as usize;
            Box::new(move |m, b| Ok(m.stack[b + s]))
        }
        Node::VarPlus { slot, k, ty } => {
            let s = slot as usize;
            Box::new(move |m, b| Ok(ty.wrap(m.stack[b + s].wrapping_add(k))))
        }
        Node::Cast {
            from,
            to,
            saturating,
            value,
        } => {
            let v = build(*value);
            Box::new(move |m, b| Ok(scalar::cast(from, to, saturating, v(m, b)?)))
        }
        Node::Unary { op, ty, value } => {
            let v = build(*value);
            Box::new(move |m, b| Ok(scalar::unary(op, ty, v(m, b)?)))
        }
        Node::IntBinary { op, ty, a, b } => {
            let (x, y) = (build(*a), build(*b));
            match op {
                BinOp::Add => Box::new(move |m, b| Ok(ty.wrap(x(m, b)?.wrapping_add(y(m, b)?)))),
                BinOp::Sub => Box::new(move |m, b| Ok(ty.wrap(x(m, b)?.wrapping_sub(y(m, b)?)))),
                _ => Box::new(move |m, b| {
                    let l = x(m, b)?;
                    Ok(scalar::int_binary(op, ty, l, y(m, b)?))
                }),
            }
        }
        Node::FloatBinary { op, a, b } => {
            let (x, y) = (build(*a), build(*b));
            let f = |v: i64| to_f32(v);
            match op {
                BinOp::Add => Box::new(move |m, b| Ok(from_f32(f(x(m, b)?) + f(y(m, b)?)))),
                BinOp::Sub => Box::new(move |m, b| Ok(from_f32(f(x(m, b)?) - f(y(m, b)?)))),
                BinOp::Mul => Box::new(move |m, b| Ok(from_f32(f(x(m, b)?) * f(y(m, b)?)))),
                _ => Box::new(move |m, b| {
                    let l = f(x(m, b)?);
                    Ok(scalar::float_binary(op, l, f(y(m, b)?)))
                }),
            }
        }
        Node::IntBinaryK {
            op,
            ty,
            value,
            k,
            swapped,
        } => {
            let v = build(*value);
            match (op, swapped) {
                (BinOp::Add, _) => Box::new(move |m, b| Ok(ty.wrap(v(m, b)?.wrapping_add(k)))),
                (BinOp::Mul, _) => Box::new(move |m, b| Ok(ty.wrap(v(m, b)?.wrapping_mul(k)))),
                (_, false) => Box::new(move |m, b| Ok(scalar::int_binary(op, ty, v(m, b)?, k))),
                (_, true) => Box::new(move |m, b| Ok(scalar::int_binary(op, ty, k, v(m, b)?))),
            }
        }
        Node::FloatBinaryK {
            op,
            value,
            k,
            swapped,
        } => {
            let v = build(*value);
            match (op, swapped) {
                (BinOp::Add, false) => Box::new(move |m, b| Ok(from_f32(to_f32(v(m, b)?) + k))),
                (BinOp::Add, true) => Box::new(move |m, b| Ok(from_f32(k + to_f32(v(m, b)?)))),
                (BinOp::Mul, false) => Box::new(move |m, b| Ok(from_f32(to_f32(v(m, b)?) * k))),
                (BinOp::Mul, true) => Box::new(move |m, b| Ok(from_f32(k * to_f32(v(m, b)?)))),
                (BinOp::Div, false) => Box::new(move |m, b| Ok(from_f32(to_f32(v(m, b)?) / k))),
                (_, false) => {
                    Box::new(move |m, b| Ok(scalar::float_binary(op, to_f32(v(m, b)?), k)))
                }
                (_, true) => {
                    Box::new(move |m, b| Ok(scalar::float_binary(op, k, to_f32(v(m, b)?))))
                }
            }
        }
        Node::And(a, b) => {
            let (x, y) = (build(*a), build(*b));
            Box::new(move |m, b| Ok((x(m, b)? != 0 && y(m, b)? != 0) as i64))
        }
        Node::Or(a, b) => {
            let (x, y) = (build(*a), build(*b));
            Box::new(move |m, b| Ok((x(m, b)? != 0 || y(m, b)? != 0) as i64))
        }
        Node::Select {
            cond,
            then,
            otherwise,
        } => {
            let (c, t, o) = (build(*cond), build(*then), build(*otherwise));
            Box::new(move |m, b| if c(m, b)? != 0 { t(m, b) } else { o(m, b) })
        }
        Node::CallFunc { func, args } => {
            let args: Vec<Code> = args.into_iter().map(build).collect();
            let f = func as usize;
            Box::new(move |m, b| {
                let mut c = [0i64; MAX_DIMS];
                for (slot, a) in c.iter_mut().zip(&args) {
                    *slot = a(m, b)?;
                }
                m.func_value(f, &c)
            })
        }
        Node::SelfRead { args } => {
            let args: Vec<Code> = args.into_iter().map(build).collect();
            Box::new(move |m, b| {
                let mut c = [0i64; MAX_DIMS];
                for (slot, a) in c.iter_mut().zip(&args) {
                    *slot = a(m, b)?;
                }
                m.self_read(&c)
            })
        }
        Node::CallInput { input, stage, args } => {
            let args: Vec<Code> = args.into_iter().map(build).collect();
            let (input, stage) = (input as usize, stage as usize);
            Box::new(move |m, b| {
                let mut c = [0i64; MAX_DIMS];
                for (slot, a) in c.iter_mut().zip(&args) {
                    *slot = a(m, b)?;
                }
                Ok(m.read_input(input, stage, &c[..args.len()]))
            })
        }
        Node::Intrinsic {
            which,
            ty,
            arg_ty,
            args,
        } => {
            let mut args = args.into_iter().map(build);
            let first = args.next();
            let second = args.next();
            Box::new(move |m, b| {
                let x = match &first {
                    Some(a) => a(m, b)?,
                    None => 0,
                };
                let y = match &second {
                    Some(a) => a(m, b)?,
                    None => 0,
                };
                scalar::intrinsic(which, ty, arg_ty, x, y)
                    .ok_or_else(|| bug(&format!("`{}` without semantics", which.name())))
            })
        }
        Node::Let { slot, value, body } => {
            let (v, body) = (build(*value), build(*body));
            let s = slot as usize;
            Box::new(move |m, b| {
                let x = v(m, b)?;
                m.stack[b + s] = x;
                body(m, b)
            })
        }
    }
}
