//! The IR verifier: checks that a lowered statement is well formed, so a
//! pass that breaks an invariant is caught right after it runs (with the
//! pass named) instead of as a wrong picture or a trap in a backend.
//!
//! What is checked depends on how far lowering has gone ([`Stage`]):
//! - Scoping (from [`Stage::Bounded`] on): every variable is defined by an
//!   enclosing `let`, loop, scalar parameter or buffer field (`b.min.d`,
//!   `b.extent.d`, `b.stride.d` for a buffer argument, a realization or an
//!   allocation `b` with more than `d` dimensions), with the type it was
//!   defined with. Before bounds inference the region variables are free.
//! - Buffers: a `Provide` or func `Call` names an enclosing `Realize` or
//!   an output with as many arguments as it has dimensions, and an input
//!   `Call` an input buffer; after flattening none of these remain, and
//!   every `Load`/`Store` names an enclosing `Allocate` or a buffer
//!   argument, with the buffer's element type and an `i32` index.
//! - Types: binary operands have equal types, results have the type their
//!   operator gives; vector lane counts agree across `Ramp`, `Broadcast`,
//!   `Load`, `Store`, `Select` and casts; conditions are booleans.
//! - Loops: bounds are scalar `i32`; vectorized and unrolled loops have
//!   constant extents once flattened; after `unroll` no unrolled loop and
//!   after `vectorize` no vectorized loop is left.
//!
//! ```text
//! for x in [0, 8) {                       error: variable `y` is used
//!   out[x] = y                     ==>      outside any definition of it
//! }                                         (in `out[x] = y`)
//! ```

use crate::error::LowerBug;
use argent_ir::{
    BinOp, BufferArg, BufferRole, CallTarget, Expr, ExprKind, ForKind, Param, Stmt, Type, UnaryOp,
};
use std::collections::HashMap;

/// How far lowering has gone: each stage allows what the passes before it
/// produce and forbids what they remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// After `synthesize`: loops refer to region variables that bounds
    /// inference has not defined yet.
    Synthesized,
    /// After `bounds_inference` and `sliding_window`: every variable is
    /// defined; realizations do not have their bounds yet.
    Bounded,
    /// From `realize_bounds` to `partition_loops`: every realization has
    /// one range per dimension of its func.
    Realized,
    /// After `flatten`: flat `Allocate`/`Load`/`Store` only.
    Flattened,
    /// After `unroll`: no unrolled loops.
    Unrolled,
    /// After `vectorize` (and `simplify`, `cse`): no vectorized loops.
    Vectorized,
}

impl Stage {
    /// The stage the IR is at after the pass `name` (see `lower::PASSES`).
    pub fn after_pass(name: &str) -> Stage {
        match name {
            "synthesize" => Stage::Synthesized,
            "bounds_inference" | "sliding_window" => Stage::Bounded,
            "flatten" => Stage::Flattened,
            "unroll" | "trim_no_ops" => Stage::Unrolled,
            "vectorize" | "specialize_strides" | "simplify" | "interleave_stores" | "cse"
            | "hoist_invariants" => Stage::Vectorized,
            _ => Stage::Realized,
        }
    }
}

/// Check `stmt`, lowered up to `stage`, against the module's `buffers` and
/// scalar `params`. The error describes the first problem found and the
/// statement it is in; it is a compiler bug, never the user's mistake.
pub fn verify(
    stmt: &Stmt,
    buffers: &[BufferArg],
    params: &[Param],
    stage: Stage,
) -> Result<(), LowerBug> {
    let mut v = Verifier {
        stage,
        vars: HashMap::new(),
        buffers: HashMap::new(),
        inputs: HashMap::new(),
        checked: Default::default(),
    };
    for p in params {
        v.define_var(&p.name, p.ty);
    }
    for b in buffers {
        v.define_fields(&b.name, b.dims);
        match b.role {
            BufferRole::Input => {
                v.inputs.insert(b.name.clone(), (b.ty.element(), b.dims));
                // Flattened code reads inputs with `Load`.
                v.define_buffer(&b.name, b.ty.element(), Some(b.dims));
            }
            BufferRole::Output => v.define_buffer(&b.name, b.ty.element(), Some(b.dims)),
        }
    }
    v.stmt(stmt)
}

/// A loop's first line, formatted only when an error shows it.
struct LoopHeader<'a>(ForKind, &'a str, &'a Expr, &'a Expr);

impl std::fmt::Display for LoopHeader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let LoopHeader(kind, var, min, extent) = self;
        write!(f, "{} {var} in [{min}, {extent})", kind.keyword())
    }
}

struct Verifier {
    stage: Stage,
    /// Variables in scope with the types they were defined with; a stack
    /// per name so inner definitions shadow outer ones.
    vars: HashMap<String, Vec<Type>>,
    /// Buffers in scope: element type and, for multi-dimensional storage
    /// (buffer arguments and realizations), the number of dimensions.
    buffers: HashMap<String, Vec<(Type, Option<usize>)>>,
    /// The input buffers, which func calls of the algorithm read.
    inputs: HashMap<String, (Type, usize)>,
    /// Expression nodes already found well formed in the current scope.
    /// Expressions are shared DAGs whose trees can be exponentially large,
    /// so each node is checked once; the set is cleared whenever a
    /// definition goes out of scope.
    checked: std::collections::HashSet<usize>,
}

fn fail<T>(message: String, context: &dyn std::fmt::Display) -> Result<T, LowerBug> {
    let mut text = context.to_string();
    if text.len() > 160 {
        let mut end = 160;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(" ...");
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Err(LowerBug(format!("{message} (in `{text}`)")))
}

impl Verifier {
    fn define_var(&mut self, name: &str, ty: Type) {
        self.vars.entry(name.to_string()).or_default().push(ty);
    }
    fn undefine_var(&mut self, name: &str) {
        self.checked.clear();
        if let Some(stack) = self.vars.get_mut(name) {
            stack.pop();
        }
    }
    fn define_fields(&mut self, buffer: &str, dims: usize) {
        for d in 0..dims {
            for field in ["min", "extent", "stride"] {
                self.define_var(&argent_ir::buffer_field(buffer, field, d), Type::I32);
            }
        }
    }
    fn define_buffer(&mut self, name: &str, ty: Type, dims: Option<usize>) {
        self.buffers
            .entry(name.to_string())
            .or_default()
            .push((ty, dims));
    }
    fn undefine_buffer(&mut self, name: &str) {
        self.checked.clear();
        if let Some(stack) = self.buffers.get_mut(name) {
            stack.pop();
        }
    }
    fn buffer(&self, name: &str) -> Option<(Type, Option<usize>)> {
        self.buffers.get(name).and_then(|s| s.last()).copied()
    }

    /// A scalar `i32`, as loop bounds, sizes and indices' lanes must be.
    fn scalar_i32(
        &mut self,
        e: &Expr,
        what: &str,
        ctx: &dyn std::fmt::Display,
    ) -> Result<(), LowerBug> {
        self.expr(e)?;
        if e.ty() != Type::I32 {
            return fail(format!("{what} `{e}` has type {}, not i32", e.ty()), ctx);
        }
        Ok(())
    }

    fn condition(&mut self, e: &Expr, ctx: &dyn std::fmt::Display) -> Result<(), LowerBug> {
        self.expr(e)?;
        if e.ty() != Type::BOOL {
            return fail(
                format!("condition `{e}` has type {}, not a scalar bool", e.ty()),
                ctx,
            );
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), LowerBug> {
        match s {
            Stmt::LetStmt { name, value, body } => {
                self.expr(value)?;
                self.define_var(name, value.ty());
                let r = self.stmt(body);
                self.undefine_var(name);
                r
            }
            Stmt::Assert { cond, args, .. } => {
                self.condition(cond, s)?;
                args.iter().try_for_each(|a| self.expr(a))
            }
            Stmt::ProducerConsumer { body, .. } => self.stmt(body),
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let header = LoopHeader(*kind, var, min, extent);
                self.scalar_i32(min, "loop minimum", &header)?;
                self.scalar_i32(extent, "loop extent", &header)?;
                match kind {
                    ForKind::Unrolled if self.stage >= Stage::Unrolled => {
                        return fail("an unrolled loop is left after `unroll`".into(), &header);
                    }
                    ForKind::Vectorized if self.stage >= Stage::Vectorized => {
                        return fail(
                            "a vectorized loop is left after `vectorize`".into(),
                            &header,
                        );
                    }
                    // Backends turn these loops into vectors or straight-line
                    // code, which needs their trip count.
                    ForKind::Vectorized | ForKind::Unrolled
                        if self.stage >= Stage::Flattened && extent.as_int().is_none() =>
                    {
                        return fail(
                            format!("a {} loop has a non-constant extent", kind.keyword()),
                            &header,
                        );
                    }
                    _ => {}
                }
                self.define_var(var, Type::I32);
                let r = self.stmt(body);
                self.undefine_var(var);
                r
            }
            Stmt::Provide { func, args, value } => {
                if self.stage >= Stage::Flattened {
                    return fail(format!("`provide {func}` is left after flattening"), s);
                }
                args.iter()
                    .try_for_each(|a| self.scalar_i32(a, "coordinate", s))?;
                self.expr(value)?;
                let Some((ty, dims)) = self.buffer(func) else {
                    return fail(format!("`{func}` is provided outside its realization"), s);
                };
                if dims.is_some_and(|d| d != args.len()) {
                    return fail(
                        format!(
                            "`{func}` is provided with {} coordinates but has {} dimensions",
                            args.len(),
                            dims.unwrap_or(1)
                        ),
                        s,
                    );
                }
                if value.ty() != ty {
                    return fail(
                        format!(
                            "a {} value is provided to `{func}` of type {ty}",
                            value.ty()
                        ),
                        s,
                    );
                }
                Ok(())
            }
            Stmt::Realize {
                func,
                ty,
                bounds,
                body,
            } => {
                if self.stage >= Stage::Flattened {
                    return fail(
                        format!("`realize {func}` is left after flattening"),
                        &format!("realize {func}"),
                    );
                }
                for r in bounds {
                    let header = format!("realize {func}");
                    self.scalar_i32(&r.min, "realization minimum", &header)?;
                    self.scalar_i32(&r.extent, "realization extent", &header)?;
                }
                // Before `realize_bounds` a realization has no bounds yet,
                // so its dimensionality is unknown.
                let dims =
                    (self.stage >= Stage::Realized || !bounds.is_empty()).then_some(bounds.len());
                self.define_buffer(func, ty.element(), dims);
                let r = self.stmt(body);
                self.undefine_buffer(func);
                r
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => {
                if self.stage < Stage::Flattened {
                    return fail(format!("a flat store into `{buffer}` before flattening"), s);
                }
                self.expr(index)?;
                self.expr(value)?;
                self.access(buffer, index, value.ty(), s)
            }
            Stmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => {
                self.scalar_i32(size, "allocation size", &format!("allocate {buffer}"))?;
                self.define_buffer(buffer, ty.element(), None);
                let r = self.stmt(body);
                self.undefine_buffer(buffer);
                r
            }
            Stmt::Block(stmts) => stmts.iter().try_for_each(|s| self.stmt(s)),
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                self.condition(cond, cond)?;
                self.stmt(then)?;
                otherwise.as_ref().map_or(Ok(()), |o| self.stmt(o))
            }
            Stmt::Evaluate(e) => self.expr(e),
        }
    }

    /// A flat `Load` or `Store` of `ty` at `index` into `buffer`.
    fn access(
        &self,
        buffer: &str,
        index: &Expr,
        ty: Type,
        ctx: &dyn std::fmt::Display,
    ) -> Result<(), LowerBug> {
        let Some((elem, _)) = self.buffer(buffer) else {
            return fail(
                format!("`{buffer}` is accessed outside its allocation"),
                ctx,
            );
        };
        if index.ty().element() != Type::I32 {
            return fail(
                format!("the index of `{buffer}` has type {}, not i32", index.ty()),
                ctx,
            );
        }
        if index.ty().lanes != ty.lanes {
            return fail(
                format!(
                    "the index of `{buffer}` has {} lanes but the value {}",
                    index.ty().lanes,
                    ty.lanes
                ),
                ctx,
            );
        }
        if ty.element() != elem {
            return fail(
                format!(
                    "`{buffer}` holds {elem} but is accessed as {}",
                    ty.element()
                ),
                ctx,
            );
        }
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> Result<(), LowerBug> {
        let key = e.node() as *const _ as usize;
        if self.checked.contains(&key) {
            return Ok(());
        }
        self.expr_uncached(e)?;
        self.checked.insert(key);
        Ok(())
    }

    fn expr_uncached(&mut self, e: &Expr) -> Result<(), LowerBug> {
        let ty = e.ty();
        if ty.lanes == 0 {
            return fail("an expression with zero lanes".into(), e);
        }
        match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => {
                if ty.is_float() != matches!(e.kind(), ExprKind::FloatImm(_)) {
                    return fail(format!("a constant of the wrong kind for type {ty}"), e);
                }
                if ty.is_vector() {
                    return fail(format!("a constant of vector type {ty}"), e);
                }
                Ok(())
            }
            ExprKind::Var(name) => {
                let Some(defined) = self.vars.get(name).and_then(|s| s.last()).copied() else {
                    if self.stage == Stage::Synthesized {
                        return Ok(());
                    }
                    return fail(
                        format!("variable `{name}` is used outside any definition of it"),
                        e,
                    );
                };
                if defined != ty {
                    return fail(
                        format!("variable `{name}` is used as {ty} but defined as {defined}"),
                        e,
                    );
                }
                Ok(())
            }
            ExprKind::Cast { value, .. } => {
                self.expr(value)?;
                if value.ty().lanes != ty.lanes {
                    return fail(
                        format!(
                            "a cast changes the lane count from {} to {}",
                            value.ty().lanes,
                            ty.lanes
                        ),
                        e,
                    );
                }
                Ok(())
            }
            ExprKind::Unary { op, value } => {
                self.expr(value)?;
                let ok = value.ty() == ty
                    && match op {
                        UnaryOp::Not => ty.is_bool(),
                        UnaryOp::BitNot => ty.is_integer(),
                        UnaryOp::Neg => !ty.is_bool(),
                    };
                if !ok {
                    return fail(format!("`{op:?}` of a {} gives {ty}", value.ty()), e);
                }
                Ok(())
            }
            ExprKind::Binary { op, a, b } => {
                self.expr(a)?;
                self.expr(b)?;
                if a.ty() != b.ty() {
                    return fail(
                        format!(
                            "the operands of `{}` have different types {} and {}",
                            op.symbol(),
                            a.ty(),
                            b.ty()
                        ),
                        e,
                    );
                }
                let expected = if op.is_comparison() || op.is_logical() {
                    Type::BOOL.with_lanes(a.ty().lanes)
                } else {
                    a.ty()
                };
                if ty != expected {
                    return fail(
                        format!("`{}` of {} gives {ty}, not {expected}", op.symbol(), a.ty()),
                        e,
                    );
                }
                if op.is_logical() && !a.ty().is_bool() {
                    return fail(format!("`{}` of non-booleans", op.symbol()), e);
                }
                if matches!(
                    op,
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
                ) && a.ty().is_float()
                {
                    return fail(format!("`{}` of floats", op.symbol()), e);
                }
                Ok(())
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond)?;
                self.expr(then)?;
                self.expr(otherwise)?;
                if !cond.ty().is_bool() || (cond.ty().lanes != 1 && cond.ty().lanes != ty.lanes) {
                    return fail(format!("a select of {ty} has a {} condition", cond.ty()), e);
                }
                if then.ty() != ty || otherwise.ty() != ty {
                    return fail(
                        format!(
                            "a select of {ty} chooses between {} and {}",
                            then.ty(),
                            otherwise.ty()
                        ),
                        e,
                    );
                }
                Ok(())
            }
            ExprKind::Call { target, args } => {
                args.iter().try_for_each(|a| self.expr(a))?;
                let (what, found) = match target {
                    CallTarget::Intrinsic(_) => return Ok(()),
                    CallTarget::Func(f) => (
                        "func",
                        self.buffer(f).map(|(t, d)| (t, d.unwrap_or(args.len()))),
                    ),
                    CallTarget::Input(i) => ("input", self.inputs.get(i).copied()),
                };
                let name = match target {
                    CallTarget::Func(n) | CallTarget::Input(n) => n,
                    CallTarget::Intrinsic(_) => unreachable!(),
                };
                if self.stage >= Stage::Flattened {
                    return fail(
                        format!("a call of {what} `{name}` is left after flattening"),
                        e,
                    );
                }
                let Some((elem, dims)) = found else {
                    return fail(
                        format!("{what} `{name}` is called outside its realization"),
                        e,
                    );
                };
                if dims != args.len() {
                    return fail(
                        format!(
                            "{what} `{name}` is called with {} arguments but has {dims} dimensions",
                            args.len()
                        ),
                        e,
                    );
                }
                if let Some(a) = args.iter().find(|a| a.ty() != Type::I32) {
                    return fail(format!("coordinate `{a}` has type {}, not i32", a.ty()), e);
                }
                if elem != ty {
                    return fail(
                        format!("{what} `{name}` holds {elem} but is read as {ty}"),
                        e,
                    );
                }
                Ok(())
            }
            ExprKind::Let { name, value, body } => {
                self.expr(value)?;
                self.define_var(name, value.ty());
                let r = self.expr(body);
                self.undefine_var(name);
                r?;
                if body.ty() != ty {
                    return fail(format!("a let of type {ty} has a {} body", body.ty()), e);
                }
                Ok(())
            }
            ExprKind::Load { buffer, index } => {
                if self.stage < Stage::Flattened {
                    return fail(format!("a flat load from `{buffer}` before flattening"), e);
                }
                self.expr(index)?;
                self.access(buffer, index, ty, e)
            }
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => {
                self.expr(base)?;
                self.expr(stride)?;
                if base.ty().is_vector() || stride.ty() != base.ty() {
                    return fail(
                        format!(
                            "a ramp's base ({}) and stride ({}) are not scalars of one type",
                            base.ty(),
                            stride.ty()
                        ),
                        e,
                    );
                }
                if *lanes < 2 || ty != base.ty().with_lanes(*lanes) {
                    return fail(format!("a ramp of {lanes} lanes has type {ty}"), e);
                }
                Ok(())
            }
            ExprKind::Broadcast { value, lanes } => {
                self.expr(value)?;
                if value.ty().is_vector() || *lanes < 2 || ty != value.ty().with_lanes(*lanes) {
                    return fail(
                        format!(
                            "a broadcast of {} to {lanes} lanes has type {ty}",
                            value.ty()
                        ),
                        e,
                    );
                }
                Ok(())
            }
            ExprKind::Shuffle { vectors, indices } => {
                vectors.iter().try_for_each(|v| self.expr(v))?;
                let Some(first) = vectors.first() else {
                    return fail("a shuffle of no vectors".into(), e);
                };
                if vectors
                    .iter()
                    .any(|v| v.ty().element() != first.ty().element())
                {
                    return fail("a shuffle of vectors of different types".into(), e);
                }
                let total: u32 = vectors.iter().map(|v| v.ty().lanes as u32).sum();
                if let Some(i) = indices.iter().find(|&&i| i >= total) {
                    return fail(format!("a shuffle picks lane {i} of {total}"), e);
                }
                if ty != first.ty().with_lanes(indices.len() as u16) {
                    return fail(
                        format!("a shuffle of {} lanes has type {ty}", indices.len()),
                        e,
                    );
                }
                Ok(())
            }
        }
    }
}
