//! Loop-invariant code motion at code generation: scalar subexpressions
//! that do not change inside a loop (a clamped row offset, `stride * y`)
//! are computed once before it into locals, and the loop body reads the
//! locals. The engines that run the module do little of this themselves.
//!
//! Before (loop over `x`):
//! `out[x * 8 + s * max(0, min(y, h))] = ...` computes `s * max(..)` per
//! iteration. After: `t = s * max(0, min(y, h))` once, then
//! `out[x * 8 + t] = ...`.

use crate::CodegenError;
use crate::emit::{Binding, FnBuilder, VecVal, split_constant_offset, val_type};
use argent_ir::fast_hash::{FastHashMap, FastHashSet};
use argent_ir::visit::{Visitor, walk_expr, walk_stmt};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Stmt};
use wasm_encoder::{Instruction as I, ValType};

/// At most this many values are hoisted out of one loop, so the locals
/// live across the loop stay few.
const MAX_HOISTED: usize = 64;

/// Every name bound inside `body` (by lets and loops), and `var`.
pub(crate) fn names_bound_in<'s>(body: &'s Stmt, var: &'s str) -> FastHashSet<&'s str> {
    let mut names = argent_ir::visit::names_bound_in(body);
    names.insert(var);
    names
}

/// The address that identifies one expression node.
pub(crate) fn node_key(e: &Expr) -> usize {
    e.kind() as *const ExprKind as usize
}

/// Whether hoisting `e` saves work: variables and constants are as cheap to
/// read as a local.
fn nontrivial(e: &Expr) -> bool {
    match e.kind() {
        ExprKind::Var(_) | ExprKind::IntImm(_) | ExprKind::FloatImm(_) => false,
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } => nontrivial(&args[0]),
        _ => true,
    }
}

/// Finds the largest invariant scalar subexpressions of a loop body.
struct Finder<'a, 'c> {
    builder: &'a FnBuilder<'c>,
    bound: &'a FastHashSet<&'a str>,
    /// Whether each free name is a scalar bound outside the loop.
    outside: FastHashMap<String, bool>,
    found: Vec<Expr>,
    seen: FastHashSet<usize>,
}

impl Finder<'_, '_> {
    fn record(&mut self, e: &Expr) {
        if self.found.len() < MAX_HOISTED
            && nontrivial(e)
            && !self.builder.hoisted_scalar(e)
            && self.seen.insert(node_key(e))
        {
            self.found.push(e.clone());
        }
    }

    /// Whether `e` is invariant; records its largest invariant parts when
    /// it is not.
    fn scan(&mut self, e: &Expr) -> bool {
        if self.builder.hoisted_scalar(e) {
            return true;
        }
        let children: Vec<&Expr> = match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => return true,
            ExprKind::Var(n) => {
                if self.bound.contains(n.as_str()) {
                    return false;
                }
                if let Some(&known) = self.outside.get(n) {
                    return known;
                }
                let known = matches!(self.builder.lookup(n), Some(Binding::Scalar { .. }));
                self.outside.insert(n.clone(), known);
                return known;
            }
            _ => operands(e),
        };
        let invariant: Vec<bool> = children.iter().map(|c| self.scan(c)).collect();
        // Loads may see stores of the loop; lets bind names of the body.
        let movable = match e.kind() {
            ExprKind::Load { .. }
            | ExprKind::Let { .. }
            | ExprKind::Ramp { .. }
            | ExprKind::Broadcast { .. }
            | ExprKind::Shuffle { .. } => false,
            ExprKind::Call { target, .. } => matches!(target, CallTarget::Intrinsic(_)),
            _ => true,
        };
        if movable && e.ty().is_scalar() && invariant.iter().all(|&i| i) {
            return true;
        }
        for (c, i) in children.into_iter().zip(invariant) {
            if i {
                self.record(c);
            }
        }
        false
    }
}

impl Visitor for Finder<'_, '_> {
    fn visit_expr(&mut self, e: &Expr) {
        if self.scan(e) {
            self.record(e);
        }
    }
}

impl FnBuilder<'_> {
    /// Whether `e` (this very node) was computed before an enclosing loop.
    pub(crate) fn hoisted_scalar(&self, e: &Expr) -> bool {
        self.hoisted_scalars.contains_key(&node_key(e))
    }

    /// Computes, before a loop whose body is `body` (binding `bound`), the
    /// body's largest scalar subexpressions that do not depend on anything
    /// the loop changes, and records their locals for [`FnBuilder::expr`].
    /// Returns how many were hoisted.
    pub(crate) fn hoist_scalars(
        &mut self,
        bound: &FastHashSet<&str>,
        body: &Stmt,
    ) -> Result<Vec<Expr>, CodegenError> {
        let mut finder = Finder {
            builder: self,
            bound,
            outside: FastHashMap::default(),
            found: Vec::new(),
            seen: FastHashSet::default(),
        };
        finder.visit_stmt(body);
        let found = finder.found;
        for e in &found {
            self.expr(e)?;
            let local = self.set_new_local(val_type(e.ty())?);
            self.hoisted_scalars.insert(node_key(e), (e.clone(), local));
        }
        Ok(found)
    }
}

/// An address computed mostly before a loop: `base + (index << shift)`
/// with `index = coefficient * var + invariant` is `start + var *
/// (coefficient << shift)`, `start` hoisted.
#[derive(Clone, Debug)]
pub(crate) struct HoistedAddress {
    /// The index expression node (without its constant offset).
    key: usize,
    buffer: String,
    /// The local holding the address for the current iteration: set to
    /// `base + (invariant << shift) + var * step` before the loop and
    /// advanced by `step` at the end of every iteration (a pointer
    /// increment instead of a multiply and add per access).
    pub(crate) pointer: u32,
    /// The byte step per iteration.
    pub(crate) step: i64,
    /// Bytes from the pointer to this access (the pointer may be shared
    /// with accesses at smaller constant offsets).
    offset: i64,
    /// Keeps the node alive so its address stays its own.
    _node: Expr,
}

/// `e` as a signed sum of terms (`a - (b + c)` is `+a -b -c`). A sum
/// scaled by a constant is distributed (`(x + a - 4) * 3` is `+x*3 +a*3
/// -12`): an interleaved pixel's offset `(x + start) * channels` is then
/// affine in `x`. Exact: i32 arithmetic wraps, and wrapping multiplication
/// distributes over wrapping addition.
fn terms(e: &Expr, negate: bool, out: &mut Vec<(Expr, bool)>) {
    match e.kind() {
        ExprKind::Binary {
            op: op @ (BinOp::Add | BinOp::Sub),
            a,
            b,
        } if e.ty().is_scalar() => {
            terms(a, negate, out);
            terms(b, negate != (*op == BinOp::Sub), out);
        }
        ExprKind::Binary {
            op: BinOp::Mul,
            a,
            b,
        } if e.ty() == argent_ir::Type::I32
            && let Some((sum, c)) = match (a.as_int(), b.as_int()) {
                (_, Some(c)) => Some((a, c)),
                (Some(c), _) => Some((b, c)),
                _ => None,
            }
            && matches!(
                sum.kind(),
                ExprKind::Binary {
                    op: BinOp::Add | BinOp::Sub,
                    ..
                }
            ) =>
        {
            let mut inner = Vec::new();
            terms(sum, negate, &mut inner);
            out.extend(inner.into_iter().map(|(t, n)| (scaled(&t, c), n)));
        }
        _ => out.push((e.clone(), negate)),
    }
}

/// Term `t` (i32) times the constant `c`, constants folded and
/// `(x * k) * c` kept in the `x * (k * c)` shape the affine match knows.
fn scaled(t: &Expr, c: i64) -> Expr {
    let wrap = |v: i64| Expr::i32(v.wrapping_mul(c) as i32 as i64);
    if let Some(k) = t.as_int() {
        return wrap(k);
    }
    if let ExprKind::Binary {
        op: BinOp::Mul,
        a,
        b,
    } = t.kind()
    {
        match (a.as_int(), b.as_int()) {
            (_, Some(k)) => return Expr::mul(a.clone(), wrap(k)),
            (Some(k), _) => return Expr::mul(b.clone(), wrap(k)),
            _ => {}
        }
    }
    Expr::mul(t.clone(), Expr::i32(c))
}

impl FnBuilder<'_> {
    /// Whether scalar `e` is plain arithmetic on scalars bound outside the
    /// loop (not in `bound`).
    fn invariant(&self, e: &Expr, bound: &FastHashSet<&str>) -> bool {
        struct Check<'a, 'b, 'c> {
            builder: &'a FnBuilder<'c>,
            bound: &'b FastHashSet<&'b str>,
            ok: bool,
        }
        impl Visitor for Check<'_, '_, '_> {
            fn visit_expr(&mut self, e: &Expr) {
                if !self.ok {
                    return;
                }
                match e.kind() {
                    ExprKind::Var(n) => {
                        self.ok = !self.bound.contains(n.as_str())
                            && matches!(self.builder.lookup(n), Some(Binding::Scalar { .. }))
                    }
                    ExprKind::Load { .. }
                    | ExprKind::Let { .. }
                    | ExprKind::Ramp { .. }
                    | ExprKind::Broadcast { .. }
                    | ExprKind::Shuffle { .. } => self.ok = false,
                    ExprKind::Call { target, .. }
                        if !matches!(target, CallTarget::Intrinsic(_)) =>
                    {
                        self.ok = false
                    }
                    _ => walk_expr(self, e),
                }
            }
        }
        let mut c = Check {
            builder: self,
            bound,
            ok: e.ty().is_scalar(),
        };
        c.visit_expr(e);
        c.ok
    }

    /// Before a loop over `var` (held in local `var_local`): for every
    /// load and store of the body whose index is `c * var` plus invariant
    /// terms, computes the invariant part of the address once. Returns how
    /// many addresses were hoisted.
    pub(crate) fn hoist_addresses(
        &mut self,
        var: &str,
        var_local: u32,
        bound: &FastHashSet<&str>,
        body: &Stmt,
    ) -> Result<usize, CodegenError> {
        /// The (buffer, index) of every access, and the buffers allocated
        /// inside the body (whose base moves).
        struct Accesses<'b> {
            /// Each access's buffer and index, and whether every
            /// occurrence is speculative (see `arms`).
            found: Vec<(String, Expr, bool)>,
            /// The inputs' names.
            inputs: &'b FastHashSet<String>,
            /// How many arms of `select`s enclose the expression being
            /// visited: a load of an input there is speculative. Bounds
            /// inference narrows the input's region by the arm's
            /// condition, so where the condition fails the address may
            /// lie anywhere (a scalar arm then does not run, a vector one
            /// guards it, see `guard_speculative`).
            arms: u32,
            allocated: FastHashSet<String>,
            /// Scalar lets of the body (an index is often one): the value
            /// of each name, `None` where bindings of the name differ.
            lets: FastHashMap<String, Option<Expr>>,
            /// Whether the body accesses memory with vectors.
            vector: bool,
        }
        impl Accesses<'_> {
            fn add(&mut self, buffer: &str, index: &Expr) {
                let speculative = self.arms > 0 && self.inputs.contains(buffer);
                self.vector |= index.ty().is_vector();
                let index = match index.kind() {
                    ExprKind::Ramp { base, .. } if base.ty().is_scalar() => base,
                    _ if index.ty().is_scalar() => index,
                    _ => return,
                };
                let (dynamic, _) = split_constant_offset(index);
                if let Some(seen) = self
                    .found
                    .iter_mut()
                    .find(|(b, e, _)| b == buffer && node_key(e) == node_key(&dynamic))
                {
                    seen.2 &= speculative;
                } else if self.found.len() < MAX_HOISTED {
                    self.found.push((buffer.to_string(), dynamic, speculative));
                }
            }
            /// Records a binding of `name`. The unrolled channels of one
            /// pixel each bind their own copy of a shared index (`let cse9 =
            /// (x + a) * 3` in every store): equal values are one value.
            fn bind(&mut self, name: &str, value: &Expr) {
                self.lets
                    .entry(name.to_string())
                    .and_modify(|v| {
                        if v.as_ref() != Some(value) {
                            *v = None;
                        }
                    })
                    .or_insert_with(|| Some(value.clone()));
            }
        }
        impl Visitor for Accesses<'_> {
            fn visit_expr(&mut self, e: &Expr) {
                match e.kind() {
                    ExprKind::Load { buffer, index } => self.add(buffer, index),
                    ExprKind::Let { name, value, .. } => self.bind(name, value),
                    ExprKind::Select {
                        cond,
                        then,
                        otherwise,
                    } => {
                        self.visit_expr(cond);
                        self.arms += 1;
                        self.visit_expr(then);
                        self.visit_expr(otherwise);
                        self.arms -= 1;
                        return;
                    }
                    _ => {}
                }
                walk_expr(self, e);
            }
            fn visit_stmt(&mut self, s: &Stmt) {
                match s {
                    Stmt::Store { buffer, index, .. } => self.add(buffer, index),
                    Stmt::LetStmt { name, value, .. } => self.bind(name, value),
                    Stmt::Allocate { buffer, .. } => {
                        self.allocated.insert(buffer.clone());
                    }
                    _ => {}
                }
                walk_stmt(self, s);
            }
        }
        let inputs: FastHashSet<String> = self
            .buffers
            .iter()
            .filter(|b| b.input)
            .map(|b| b.name.clone())
            .collect();
        let mut accesses = Accesses {
            found: Vec::new(),
            inputs: &inputs,
            arms: 0,
            allocated: FastHashSet::default(),
            lets: FastHashMap::default(),
            vector: false,
        };
        accesses.visit_stmt(body);
        // Each access as `coefficient * var + invariant + constant`.
        // Accesses to one buffer that differ only in the constant (a
        // stencil's taps) share one pointer, started at the smallest
        // constant, and reach the others by non-negative memarg offsets.
        // Only an access that runs, and is in bounds, on every iteration
        // may start a pointer: a memarg offset is added without wrapping,
        // so a pointer that wrapped below 0 would put the others past 4
        // GiB. A speculative access joins a pointer at or below it, or
        // keeps its own address arithmetic.
        struct Affine {
            buffer: String,
            speculative: bool,
            index: Expr,
            coefficient: i64,
            invariant: Vec<(Expr, bool)>,
            /// The invariant terms printed and sorted: accesses with equal
            /// keys differ only in the constant.
            key: String,
            constant: i64,
        }
        let mut affine_accesses: Vec<Affine> = Vec::new();
        for (buffer, index, speculative) in accesses.found {
            if accesses.allocated.contains(&buffer) || index.ty() != argent_ir::Type::I32 {
                continue;
            }
            if self.buffer(&buffer).is_err() {
                continue;
            }
            let mut parts = Vec::new();
            terms(&index, false, &mut parts);
            // A let bound in the body to one value (and not outside it, so
            // every use refers to that value) stands for it there. Its
            // terms must then be invariant or the loop variable, so they
            // mean the same at every binding. In scalar loops such lets
            // are followed through several levels: a loop's `let x = xo *
            // 8 + x_vi + min` under a common subexpression `let t = x +
            // row` that the taps of a stencil read. There the address
            // arithmetic is a large part of each iteration's one element
            // (box_blur's scalar code ran 15% faster, sobel's 13%). A
            // vector iteration shares it among its lanes: following more
            // levels there made the SIMD modules of bilateral_grid,
            // local_laplacian and multiscale_interpolation larger and no
            // faster.
            let levels = if accesses.vector { 1 } else { 4 };
            let mut expanded = parts;
            for _ in 0..levels {
                let mut next = Vec::with_capacity(expanded.len());
                let mut changed = false;
                for (term, negate) in expanded {
                    match term.kind() {
                        ExprKind::Var(n)
                            if let Some(Some(value)) = accesses.lets.get(n)
                                && value.ty() == argent_ir::Type::I32
                                && self.lookup(n).is_none() =>
                        {
                            terms(value, negate, &mut next);
                            changed = true;
                        }
                        _ => next.push((term, negate)),
                    }
                }
                expanded = next;
                if !changed {
                    break;
                }
            }
            let mut coefficient = 0i64;
            let mut constant = 0i64;
            let mut invariant = Vec::new();
            let mut affine = true;
            for (term, negate) in expanded {
                let sign = if negate { -1 } else { 1 };
                let linear = match term.kind() {
                    ExprKind::Var(n) if n == var => Some(1),
                    ExprKind::Binary {
                        op: BinOp::Mul,
                        a,
                        b,
                    } => match (a.kind(), b.as_int(), a.as_int(), b.kind()) {
                        (ExprKind::Var(n), Some(c), _, _) if n == var => Some(c),
                        (_, _, Some(c), ExprKind::Var(n)) if n == var => Some(c),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(c) = linear {
                    coefficient += sign * c;
                } else if let Some(c) = term.as_int() {
                    constant += sign * c;
                } else if self.invariant(&term, bound) {
                    invariant.push((term, negate));
                } else {
                    affine = false;
                    break;
                }
            }
            if !affine || coefficient == 0 {
                continue;
            }
            let mut printed: Vec<String> = invariant
                .iter()
                .map(|(t, negate)| format!("{}{t}", if *negate { "-" } else { "+" }))
                .collect();
            printed.sort();
            affine_accesses.push(Affine {
                buffer,
                speculative,
                index,
                coefficient,
                invariant,
                key: printed.join(" "),
                constant,
            });
        }
        let mut hoisted = 0;
        let mut pointers: Vec<(String, i64, String, u32, i64)> = Vec::new();
        for a in &affine_accesses {
            let buf = self.buffer(&a.buffer)?;
            let shift = buf.ty.bytes().trailing_zeros() as i32;
            let same = |b: &Affine| {
                b.buffer == a.buffer && b.coefficient == a.coefficient && b.key == a.key
            };
            let shared = pointers
                .iter()
                .find(|(b, c, k, _, _)| *b == a.buffer && *c == a.coefficient && *k == a.key)
                .map(|&(_, _, _, pointer, start)| (pointer, start));
            let (pointer, start_constant) = match shared {
                Some(found) => found,
                None => {
                    let Some(start_constant) = affine_accesses
                        .iter()
                        .filter(|b| same(b) && !b.speculative)
                        .map(|b| b.constant)
                        .min()
                    else {
                        continue;
                    };
                    let mut invariant: Option<Expr> = None;
                    for (term, negate) in &a.invariant {
                        invariant = Some(match (invariant, negate) {
                            (None, false) => term.clone(),
                            (None, true) => Expr::sub(Expr::i32(0), term.clone()),
                            (Some(s), false) => Expr::add(s, term.clone()),
                            (Some(s), true) => Expr::sub(s, term.clone()),
                        });
                    }
                    if start_constant != 0 {
                        invariant = Some(match invariant {
                            None => Expr::i32(start_constant),
                            Some(s) => Expr::add(s, Expr::i32(start_constant)),
                        });
                    }
                    let start = match &invariant {
                        Some(invariant) => {
                            self.push_byte_address(buf.base, invariant, shift as u32)?;
                            self.set_new_local(ValType::I32)
                        }
                        None => buf.base,
                    };
                    let step = a.coefficient.wrapping_shl(shift as u32);
                    self.emit(I::LocalGet(start));
                    self.emit(I::LocalGet(var_local));
                    if step != 1 {
                        self.emit(I::I32Const(step as i32));
                        self.emit(I::I32Mul);
                    }
                    self.emit(I::I32Add);
                    let pointer = self.set_new_local(ValType::I32);
                    pointers.push((
                        a.buffer.clone(),
                        a.coefficient,
                        a.key.clone(),
                        pointer,
                        start_constant,
                    ));
                    (pointer, start_constant)
                }
            };
            if a.constant < start_constant {
                continue;
            }
            self.hoisted_addresses.push(HoistedAddress {
                key: node_key(&a.index),
                buffer: a.buffer.clone(),
                pointer,
                step: a.coefficient.wrapping_shl(shift as u32),
                offset: (a.constant - start_constant).wrapping_shl(shift as u32),
                _node: a.index.clone(),
            });
            hoisted += 1;
        }
        Ok(hoisted)
    }

    /// The local holding the address of a hoisted access to `buffer` at
    /// index node `dynamic`, if there is one, and the byte offset to add
    /// to it (non-negative: a memarg offset).
    pub(crate) fn hoisted_pointer(&self, buffer: &str, dynamic: &Expr) -> Option<(u32, u64)> {
        let key = node_key(dynamic);
        let h = self
            .hoisted_addresses
            .iter()
            .rev()
            .find(|h| h.key == key && h.buffer == buffer)?;
        Some((h.pointer, h.offset as u64))
    }

    /// Advances the pointers of the addresses hoisted out of the loop
    /// whose accesses are `hoisted_addresses[from..]` to the next
    /// iteration.
    pub(crate) fn advance_hoisted_addresses(&mut self, from: usize) {
        // Accesses that share a pointer advance it once.
        let mut steps: Vec<(u32, i64)> = self.hoisted_addresses[from..]
            .iter()
            .map(|h| (h.pointer, h.step))
            .collect();
        let mut seen = FastHashSet::default();
        steps.retain(|(pointer, _)| seen.insert(*pointer));
        for (pointer, step) in steps {
            self.emit(I::LocalGet(pointer));
            self.emit(I::I32Const(step as i32));
            self.emit(I::I32Add);
            self.emit(I::LocalSet(pointer));
        }
    }
}

/// At most this many vector values are computed before one loop, and at
/// most this many v128 registers hold them, so they stay in machine
/// registers across the loop.
const MAX_HOISTED_VECTORS: usize = 6;
const MAX_HOISTED_PARTS: usize = 8;

/// Finds the largest loop-invariant vector subexpressions of the stores of
/// an innermost loop body: arithmetic on loads of buffers the loop does not
/// write, at indices that do not change in the loop.
struct VectorFinder<'a, 'c> {
    builder: &'a FnBuilder<'c>,
    bound: &'a FastHashSet<&'a str>,
    /// Buffers the body stores to (their loads may change).
    written: FastHashSet<String>,
    /// The values to hoist, each with whether it lies in an arm of a
    /// select that reads an input (its loads of inputs are then
    /// speculative, see `guard_speculative`).
    found: Vec<(Expr, bool)>,
    parts: usize,
    /// How many arms of selects that read inputs enclose the expression
    /// being scanned.
    arms: u32,
}

impl VectorFinder<'_, '_> {
    fn record(&mut self, e: &Expr) {
        let ty = e.ty();
        let worth = matches!(
            e.kind(),
            ExprKind::Load { .. }
                | ExprKind::Cast { .. }
                | ExprKind::Unary { .. }
                | ExprKind::Binary { .. }
                | ExprKind::Select { .. }
                | ExprKind::Call { .. }
                | ExprKind::Shuffle { .. }
        );
        let parts = (ty.lanes as usize * ty.bits as usize).div_ceil(128);
        if worth
            && ty.is_vector()
            && !ty.is_bool()
            && self.found.len() < MAX_HOISTED_VECTORS
            && self.parts + parts <= MAX_HOISTED_PARTS
            && !self.found.iter().any(|(f, _)| f == e)
        {
            self.parts += parts;
            self.found.push((e.clone(), self.arms > 0));
        }
    }

    /// Whether `e` is invariant; records its largest invariant vector parts
    /// when it is not.
    fn scan(&mut self, e: &Expr) -> bool {
        let children: Vec<&Expr> = match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => return true,
            ExprKind::Var(n) => {
                return !self.bound.contains(n.as_str())
                    && matches!(self.builder.lookup(n), Some(Binding::Scalar { .. }));
            }
            // The arms of a scalar select run conditionally: nothing in
            // them may run before the loop.
            ExprKind::Select { cond, .. } if e.ty().is_scalar() => {
                self.scan(cond);
                return false;
            }
            // An input read in an arm of a vector select may be read
            // where the arm's condition fails, outside the region checked
            // (see `guard_speculative`): what moves out of an arm is
            // computed with such loads guarded.
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } if self.builder.loads_input(then) || self.builder.loads_input(otherwise) => {
                let invariant_cond = self.scan(cond);
                self.arms += 1;
                let invariant_then = self.scan(then);
                let invariant_otherwise = self.scan(otherwise);
                self.arms -= 1;
                if invariant_cond && invariant_then && invariant_otherwise {
                    return true;
                }
                if invariant_cond {
                    self.record(cond);
                }
                self.arms += 1;
                for (arm, invariant) in [(then, invariant_then), (otherwise, invariant_otherwise)] {
                    if invariant {
                        self.record(arm);
                    }
                }
                self.arms -= 1;
                return false;
            }
            _ => operands(e),
        };
        let invariant: Vec<bool> = children.iter().map(|c| self.scan(c)).collect();
        let movable = match e.kind() {
            ExprKind::Load { buffer, .. } => !self.written.contains(buffer),
            ExprKind::Let { .. } => false,
            ExprKind::Call { target, .. } => matches!(target, CallTarget::Intrinsic(_)),
            _ => true,
        };
        if movable && invariant.iter().all(|&i| i) {
            return true;
        }
        for (c, i) in children.into_iter().zip(invariant) {
            if i {
                self.record(c);
            }
        }
        false
    }

    /// Scans the stores that run on every iteration (not those under an
    /// `if`).
    fn visit(&mut self, s: &Stmt) {
        match s {
            Stmt::Store { index, value, .. } => {
                for e in [index, value] {
                    if self.scan(e) {
                        self.record(e);
                    }
                }
            }
            Stmt::Block(stmts) => stmts.iter().for_each(|s| self.visit(s)),
            Stmt::LetStmt { value, body, .. } => {
                if self.scan(value) {
                    self.record(value);
                }
                self.visit(body);
            }
            _ => {}
        }
    }
}

impl FnBuilder<'_> {
    /// Computes, before an innermost loop whose body is `body` (binding
    /// `bound`), the vector values its stores compute identically on every
    /// iteration (`gray(x, y)` inside a loop over channels), and records
    /// their registers for [`FnBuilder::vexpr`]. Only once the loop is known
    /// to run: the loads then happen anyway. Returns how many there are.
    pub(crate) fn hoist_vectors(
        &mut self,
        bound: &FastHashSet<&str>,
        body: &Stmt,
    ) -> Result<usize, CodegenError> {
        struct Written(FastHashSet<String>);
        impl Visitor for Written {
            fn visit_expr(&mut self, _: &Expr) {}
            fn visit_stmt(&mut self, s: &Stmt) {
                match s {
                    Stmt::Store { buffer, .. } | Stmt::Allocate { buffer, .. } => {
                        self.0.insert(buffer.clone());
                    }
                    _ => {}
                }
                walk_stmt(self, s);
            }
        }
        let mut written = Written(FastHashSet::default());
        written.visit_stmt(body);
        // Calls that are not intrinsics may write memory: leave such
        // bodies alone.
        struct Impure(bool);
        impl Visitor for Impure {
            fn visit_expr(&mut self, e: &Expr) {
                if let ExprKind::Call { target, .. } = e.kind()
                    && !matches!(target, CallTarget::Intrinsic(_))
                {
                    self.0 = true;
                }
                walk_expr(self, e);
            }
        }
        let mut impure = Impure(false);
        impure.visit_stmt(body);
        if impure.0 {
            return Ok(0);
        }
        let mut finder = VectorFinder {
            builder: self,
            bound,
            written: written.0,
            found: Vec::new(),
            parts: 0,
            arms: 0,
        };
        finder.visit(body);
        let found = finder.found;
        let mut count = 0;
        for (e, speculative) in found {
            if speculative && !self.speculative_loads_fit(&e) {
                continue;
            }
            let outer = self.vector_cache.replace(Vec::new());
            let outer_gathers = std::mem::take(&mut self.statement_gathers);
            let outer_scopes = std::mem::replace(&mut self.statement_scopes, self.scopes.len());
            self.speculative += u32::from(speculative);
            let v = self.vexpr_any(&e);
            self.speculative -= u32::from(speculative);
            self.vector_cache = outer;
            self.statement_gathers = outer_gathers;
            self.statement_scopes = outer_scopes;
            match v {
                Ok(v) => {
                    self.hoisted_vectors.push((e, v));
                    count += 1;
                }
                Err(crate::simd::VErr::Fatal(err)) => return Err(err),
                Err(crate::simd::VErr::Unsupported) => {}
            }
        }
        Ok(count)
    }

    /// The registers of `e` when it was computed before the loop.
    pub(crate) fn hoisted_vector(&self, e: &Expr) -> Option<VecVal> {
        self.hoisted_vectors
            .iter()
            .rev()
            .find(|(k, _)| std::ptr::eq(k.kind(), e.kind()) || k == e)
            .map(|(_, v)| v.clone())
    }
}

/// The operands of an expression that is not a leaf (leaves have none), in
/// the order both invariance scans visit them.
fn operands(e: &Expr) -> Vec<&Expr> {
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_) => Vec::new(),
        ExprKind::Cast { value, .. } | ExprKind::Unary { value, .. } => vec![value],
        ExprKind::Binary { a, b, .. } => vec![a, b],
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => vec![cond, then, otherwise],
        ExprKind::Call { args, .. } => args.iter().collect(),
        ExprKind::Let { value, body, .. } => vec![value, body],
        ExprKind::Load { index, .. } => vec![index],
        ExprKind::Ramp { base, stride, .. } => vec![base, stride],
        ExprKind::Broadcast { value, .. } => vec![value],
        ExprKind::Shuffle { vectors, .. } => vectors.iter().collect(),
    }
}
