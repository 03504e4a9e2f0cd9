//! Vectorisation: a `vectorized` loop of constant extent `n` becomes
//! straight-line vector code. The loop variable becomes `ramp(min, 1, n)`,
//! scalars that meet vectors are broadcast, and loads and stores with ramp
//! indices become vector loads and stores (dense when the ramp's stride is
//! 1). Lane counts are logical: backends split them into 128-bit registers.
//! Scratch allocated inside the loop (an inline reduction's accumulator,
//! computed per output element) is widened so that each lane has its own
//! copy, interleaved, as in Halide; a loop inside over the one point of
//! the lane binds its variable per lane. Calls to `exp`, `log`, `pow` and
//! the trigonometric functions become their expansions (`argent_ir::math`,
//! which defines them), so they run on whole vectors too.
//!
//! Loops that cannot be vectorised exactly (a condition or loop bound that
//! varies across lanes, a select whose unselected lanes could read out of
//! bounds, a store whose address does not vary with the lanes, or a buffer
//! both written and read at different places in one iteration) run as
//! serial loops instead: the result never changes.
//!
//! ```text
//! vectorized (x, 0, 4) { f[x] = in[x] + 1 }   ==>   f[ramp(0, 1, 4)] = (in[ramp(0, 1, 4)] + x4(1))
//! ```

use argent_arith::expr_eq;
use argent_ir::fast_hash::FastHashMap as HashMap;
use argent_ir::visit::{Mutator, Visitor, mutate_stmt_children, walk_expr, walk_stmt};
use argent_ir::{CallTarget, Expr, ExprKind, ForKind, Intrinsic, Stmt};

/// Vectorise every `ForKind::Vectorized` loop of `s` whose extent is a
/// constant; the others become serial loops.
///
/// Without `simd` (a backend with no vector instructions, which computes
/// vectors lane by lane) a vectorised loop whose body is straight-line
/// code becomes a serial loop; one with loops inside (a channel loop, an
/// inline reduction over a window) runs [`SCALAR_TARGET_LANES`] lanes at a
/// time in a serial loop, so the inner loops' overhead is still shared by
/// several pixels while the code no longer grows with the vector width:
///
/// ```text
/// vectorized (x, 0, 4) { f[x] = in[x] + 1 }   ==>   for (x, 0, 4) { f[x] = in[x] + 1 }
/// vectorized (x, 0, 16) { for (r, 0, 3) { .. } }
///     ==>   for (x_chunk, 0, 4) { <vectorized (x, x_chunk * 4, 4) { for (r, 0, 3) { .. } }> }
/// ```
pub fn vectorize(s: &Stmt, simd: bool) -> Stmt {
    if simd {
        Vectorizer.mutate_stmt(s)
    } else {
        ScalarTarget.mutate_stmt(s)
    }
}

/// Lanes per vector for a backend without SIMD. Serial loops ran
/// examples/window_ops.ag (3x3 windows reduced per pixel) 2.2x and
/// bicubic_resize 2.5x slower than lane-by-lane vector code at the
/// schedule's width (16); 4 lanes at a time run them within 15% of it, in
/// modules a third (window_ops) to two thirds (bicubic_resize) the size.
pub const SCALAR_TARGET_LANES: i64 = 4;

struct ScalarTarget;

impl Mutator for ScalarTarget {
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        let Stmt::For {
            var,
            min,
            extent,
            kind: ForKind::Vectorized,
            body,
        } = s
        else {
            return mutate_stmt_children(self, s);
        };
        if !argent_ir::visit::has_loop(body) {
            return demote_vectorized(s);
        }
        let lanes = SCALAR_TARGET_LANES;
        match argent_arith::const_int(&argent_arith::simplify(extent)) {
            Some(n) if n > lanes && n % lanes == 0 => {
                let chunk = format!("{var}_chunk");
                let vector = Stmt::For {
                    var: var.clone(),
                    min: Expr::add(
                        min.clone(),
                        Expr::mul(Expr::var_i32(chunk.clone()), Expr::i32(lanes)),
                    ),
                    extent: Expr::i32(lanes),
                    kind: ForKind::Vectorized,
                    body: body.clone(),
                };
                Stmt::For {
                    var: chunk,
                    min: Expr::i32(0),
                    extent: Expr::i32(n / lanes),
                    kind: ForKind::Serial,
                    body: Box::new(Vectorizer.mutate_stmt(&vector)),
                }
            }
            _ => Vectorizer.mutate_stmt(s),
        }
    }
}

struct Vectorizer;

impl Mutator for Vectorizer {
    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        let Stmt::For {
            var,
            min,
            extent,
            kind: ForKind::Vectorized,
            body,
        } = s
        else {
            return mutate_stmt_children(self, s);
        };
        // One level of vectorisation: inner vectorised loops run serially.
        let body = demote_vectorized(body);
        let serial = || Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: extent.clone(),
            kind: ForKind::Serial,
            body: Box::new(body.clone()),
        };
        let Some(lanes) = argent_arith::const_int(&argent_arith::simplify(extent)) else {
            return serial();
        };
        if lanes <= 0 {
            return Stmt::no_op();
        }
        if lanes == 1 || lanes > u16::MAX as i64 {
            return if lanes == 1 {
                Stmt::LetStmt {
                    name: var.clone(),
                    value: min.clone(),
                    body: Box::new(body),
                }
            } else {
                serial()
            };
        }
        if !independent_iterations(&body) {
            return serial();
        }
        let mut w = Widen {
            var: var.clone(),
            ramp: Expr::ramp(min.clone(), argent_ir::Expr::i32(1), lanes as u16),
            lanes: lanes as u16,
            vector_names: HashMap::default(),
            widened: Vec::new(),
            vector_values: HashMap::default(),
        };
        match w.stmt(&body) {
            // Left for the `simplify` pass after `specialize_strides`, which
            // folds the ramps and broadcasts of every loop at once (the
            // module came out the same for every example).
            Some(v) => v,
            None => serial(),
        }
    }
}

fn demote_vectorized(s: &Stmt) -> Stmt {
    struct Demote;
    impl Mutator for Demote {
        fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
            match mutate_stmt_children(self, s) {
                Stmt::For {
                    var,
                    min,
                    extent,
                    kind: ForKind::Vectorized,
                    body,
                } => Stmt::For {
                    var,
                    min,
                    extent,
                    kind: ForKind::Serial,
                    body,
                },
                other => other,
            }
        }
    }
    Demote.mutate_stmt(s)
}

/// Whether the lanes of one iteration may run as one: the body loads a
/// buffer it stores to only at an index expression it also stores at.
///
/// The schedule tree admits a vectorised dimension only when it is
/// coincident (no iteration reads what another writes), so lanes never
/// meet at one address; this check guards against the one thing that
/// running statement by statement across lanes could still change, a
/// lane reading a neighbour's value through a buffer the body writes.
/// Several stores at different indices (a channel loop unrolled inside a
/// vectorised `x`, as in `blurz.reorder(c, z, x, y).unroll(c)`) are fine,
/// and so is any access to a buffer allocated inside the body, which
/// vectorisation gives each lane a copy of.
fn independent_iterations(body: &Stmt) -> bool {
    #[derive(Default)]
    struct Accesses {
        stores: Vec<(String, Expr)>,
        loads: Vec<(String, Expr)>,
        /// Allocated inside the body: each lane gets its own copy.
        private: Vec<String>,
    }
    impl Visitor for Accesses {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Load { buffer, index } = e.kind() {
                self.loads.push((buffer.clone(), index.clone()));
            }
            walk_expr(self, e);
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Store { buffer, index, .. } = s {
                self.stores.push((buffer.clone(), index.clone()));
            }
            if let Stmt::Allocate { buffer, .. } = s {
                self.private.push(buffer.clone());
            }
            walk_stmt(self, s);
        }
    }
    let mut a = Accesses::default();
    a.visit_stmt(body);
    a.loads.iter().all(|(buffer, index)| {
        if a.private.contains(buffer) {
            return true;
        }
        let mut stores = a.stores.iter().filter(|(b, _)| b == buffer).peekable();
        stores.peek().is_none() || stores.any(|(_, i)| expr_eq(i, index))
    })
}

/// Whether `e` has a comparison with a variable on one side.
fn compares_a_variable(e: &Expr) -> bool {
    struct Finder(bool);
    impl Visitor for Finder {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Binary { op, a, b } = e.kind()
                && op.is_comparison()
                && (a.as_var().is_some() || b.as_var().is_some())
            {
                self.0 = true;
            } else if !self.0 {
                walk_expr(self, e);
            }
        }
    }
    let mut f = Finder(false);
    f.visit_expr(e);
    f.0
}

/// Whether `a` and `b` load the same elements of every buffer other than
/// the `private` ones: each such load of one has a load of the same
/// buffer at the same index in the other.
fn same_loads(a: &Expr, b: &Expr, private: &[String]) -> bool {
    struct Loads<'a>(Vec<Expr>, &'a [String]);
    impl Visitor for Loads<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Load { buffer, .. } = e.kind()
                && !self.1.contains(buffer)
            {
                self.0.push(e.clone());
            }
            walk_expr(self, e);
        }
    }
    let loads = |e: &Expr| {
        let mut l = Loads(Vec::new(), private);
        l.visit_expr(e);
        l.0
    };
    let (la, lb) = (loads(a), loads(b));
    let same = |x: &Expr, y: &Expr| match (x.kind(), y.kind()) {
        (
            ExprKind::Load { buffer, index },
            ExprKind::Load {
                buffer: other,
                index: other_index,
            },
        ) => buffer == other && expr_eq(index, other_index),
        _ => false,
    };
    la.iter().all(|x| lb.iter().any(|y| same(x, y)))
        && lb.iter().all(|y| la.iter().any(|x| same(x, y)))
}

/// Rewrites a loop body for all lanes at once; `None` when that would not
/// be exact.
struct Widen {
    var: String,
    ramp: Expr,
    lanes: u16,
    /// Let-bound names whose values became vectors, with their types.
    vector_names: HashMap<String, Vec<argent_ir::Type>>,
    /// Buffers allocated inside the loop, which every lane gets a copy of.
    widened: Vec<String>,
    /// The vector values of the let-bound names in `vector_names`.
    vector_values: HashMap<String, Vec<Expr>>,
}

impl Widen {
    fn to_lanes(&self, e: Expr) -> Expr {
        if e.ty().lanes == self.lanes {
            e
        } else {
            Expr::broadcast(e, self.lanes)
        }
    }

    fn is_vector(&self, e: &Expr) -> bool {
        e.ty().lanes > 1
    }

    fn bind_vector(&mut self, name: &str, value: &Expr) {
        self.vector_names
            .entry(name.to_string())
            .or_default()
            .push(value.ty());
        self.vector_values
            .entry(name.to_string())
            .or_default()
            .push(value.clone());
    }

    fn unbind_vector(&mut self, name: &str) {
        self.vector_names.get_mut(name).map(|s| s.pop());
        self.vector_values.get_mut(name).map(|s| s.pop());
    }

    /// The value the vector `e` has in every lane, once the vector lets it
    /// mentions are replaced by their values, when it is the same in all
    /// (the extent of a loop over one point whose position differs per
    /// lane: `(x.max - x.min) + 1` with `x.min` and `x.max` both the lane's
    /// `x`).
    fn lane_invariant(&self, e: &Expr) -> Option<Expr> {
        let map: HashMap<String, Expr> = self
            .vector_values
            .iter()
            .filter_map(|(n, v)| Some((n.clone(), v.last()?.clone())))
            .collect();
        let mut e = e.clone();
        for _ in 0..4 {
            let next = argent_arith::substitute_many(&e, &map);
            if expr_eq(&next, &e) {
                break;
            }
            e = next;
        }
        let e = argent_arith::simplify(&e);
        match e.kind() {
            ExprKind::Broadcast { value, .. } if value.ty().is_scalar() => Some(value.clone()),
            _ if !self.is_vector(&e) => Some(e),
            _ => None,
        }
    }

    /// `index` into `buffer` as the lanes see it: a buffer allocated inside
    /// the loop holds `lanes` interleaved copies, lane `k` using element
    /// `index * lanes + k` (a dense ramp when `index` is the same for all).
    fn lane_index(&self, buffer: &str, index: Expr) -> Expr {
        if !self.widened.iter().any(|b| b == buffer) {
            return index;
        }
        let lanes = Expr::i32(self.lanes as i64);
        if self.is_vector(&index) {
            Expr::add(
                Expr::mul(index, Expr::broadcast(lanes, self.lanes)),
                Expr::ramp(Expr::i32(0), Expr::i32(1), self.lanes),
            )
        } else {
            Expr::ramp(Expr::mul(index, lanes), Expr::i32(1), self.lanes)
        }
    }

    fn expr(&mut self, e: &Expr) -> Option<Expr> {
        Some(match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => e.clone(),
            ExprKind::Var(n) => {
                if *n == self.var {
                    self.ramp.clone()
                } else if let Some(ty) = self.vector_names.get(n).and_then(|v| v.last()) {
                    Expr::var(*ty, n.clone())
                } else {
                    e.clone()
                }
            }
            ExprKind::Cast { value, saturating } => {
                let v = self.expr(value)?;
                let ty = e.ty().with_lanes(v.ty().lanes);
                Expr::new(
                    ty,
                    ExprKind::Cast {
                        value: v,
                        saturating: *saturating,
                    },
                )
            }
            ExprKind::Unary { op, value } => Expr::unary(*op, self.expr(value)?),
            ExprKind::Binary { op, a, b } => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                if self.is_vector(&a) || self.is_vector(&b) {
                    Expr::binary(*op, self.to_lanes(a), self.to_lanes(b))
                } else {
                    Expr::binary(*op, a, b)
                }
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let (c, t, o) = (self.expr(cond)?, self.expr(then)?, self.expr(otherwise)?);
                if self.is_vector(&c) {
                    // Every lane evaluates both sides, so a load on the
                    // side a lane does not select must be in bounds too:
                    // - both sides load the same elements (an alpha
                    //   channel passed through, `select(c == 3, p(x, c),
                    //   f(p(x, c)))`);
                    // - or the load is from scratch allocated inside the
                    //   loop and the condition compares no variable. Bounds
                    //   inference narrows a side's region only by such
                    //   comparisons (`x < w` in a border rule), so the
                    //   scratch covers both sides' loads: the rounding of
                    //   a `mean`'s accumulator, `select(sum < 0, (sum - 4)
                    //   / 9, (sum + 4) / 9)`.
                    // Other selects stay scalar.
                    let private = if compares_a_variable(cond) {
                        &[][..]
                    } else {
                        &self.widened[..]
                    };
                    if !same_loads(&t, &o, private) {
                        return None;
                    }
                    Expr::select(c, self.to_lanes(t), self.to_lanes(o))
                } else if self.is_vector(&t) || self.is_vector(&o) {
                    Expr::select(c, self.to_lanes(t), self.to_lanes(o))
                } else {
                    Expr::select(c, t, o)
                }
            }
            // The transcendental functions are defined as their expansions
            // (`argent_ir::math`), which backends compute with plain
            // arithmetic: widened, they run on whole vectors rather than
            // lane by lane.
            ExprKind::Call {
                target:
                    CallTarget::Intrinsic(
                        i @ (Intrinsic::Exp
                        | Intrinsic::Log
                        | Intrinsic::Pow
                        | Intrinsic::Sin
                        | Intrinsic::Cos
                        | Intrinsic::Tan
                        | Intrinsic::Atan2),
                    ),
                args,
            } if let Some(expanded) = argent_ir::math::expand_call(*i, args) => {
                return self.expr(&expanded);
            }
            ExprKind::Call {
                target: CallTarget::Intrinsic(i),
                args,
            } => {
                let mut new = Vec::with_capacity(args.len());
                for a in args {
                    new.push(self.expr(a)?);
                }
                if new.iter().any(|a| self.is_vector(a)) {
                    let new = new.into_iter().map(|a| self.to_lanes(a)).collect();
                    Expr::call(
                        e.ty().with_lanes(self.lanes),
                        CallTarget::Intrinsic(*i),
                        new,
                    )
                } else {
                    Expr::call(e.ty(), CallTarget::Intrinsic(*i), new)
                }
            }
            ExprKind::Call { .. } => return None,
            ExprKind::Let { name, value, body } => {
                let v = self.expr(value)?;
                let vector = self.is_vector(&v);
                if vector {
                    self.bind_vector(name, &v);
                }
                let b = self.expr(body);
                if vector {
                    self.unbind_vector(name);
                }
                Expr::let_in(name.clone(), v, b?)
            }
            ExprKind::Load { buffer, index } => {
                let index = self.expr(index)?;
                Expr::load(
                    e.ty().element(),
                    buffer.clone(),
                    self.lane_index(buffer, index),
                )
            }
            ExprKind::Ramp { .. } | ExprKind::Broadcast { .. } | ExprKind::Shuffle { .. } => {
                if argent_ir::visit::expr_uses_var(e, &self.var) {
                    return None;
                }
                e.clone()
            }
        })
    }

    fn stmt(&mut self, s: &Stmt) -> Option<Stmt> {
        Some(match s {
            Stmt::Store {
                buffer,
                index,
                value,
            } => {
                let (i, v) = (self.expr(index)?, self.expr(value)?);
                let i = self.lane_index(buffer, i);
                if !self.is_vector(&i) && self.is_vector(&v) {
                    // All lanes would write one address.
                    return None;
                }
                if self.is_vector(&i) {
                    Stmt::Store {
                        buffer: buffer.clone(),
                        index: i,
                        value: self.to_lanes(v),
                    }
                } else {
                    Stmt::Store {
                        buffer: buffer.clone(),
                        index: i,
                        value: v,
                    }
                }
            }
            Stmt::LetStmt { name, value, body } => {
                let v = self.expr(value)?;
                let vector = self.is_vector(&v);
                if vector {
                    self.bind_vector(name, &v);
                }
                let b = self.stmt(body);
                if vector {
                    self.unbind_vector(name);
                }
                Stmt::LetStmt {
                    name: name.clone(),
                    value: v,
                    body: Box::new(b?),
                }
            }
            Stmt::Block(stmts) => {
                let mut out = Vec::with_capacity(stmts.len());
                for s in stmts {
                    out.push(self.stmt(s)?);
                }
                Stmt::Block(out)
            }
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                if self.is_vector(&c) {
                    return None;
                }
                let t = self.stmt(then)?;
                let o = match otherwise {
                    Some(o) => Some(Box::new(self.stmt(o)?)),
                    None => None,
                };
                Stmt::IfThenElse {
                    cond: c,
                    then: Box::new(t),
                    otherwise: o,
                }
            }
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let (m, e) = (self.expr(min)?, self.expr(extent)?);
                if *var == self.var {
                    return None;
                }
                if self.is_vector(&m) || self.is_vector(&e) {
                    // A loop over one point per lane (the pure dimension of
                    // a reduction computed per output element) binds its
                    // variable per lane; other loops whose bounds vary
                    // across lanes cannot run as one.
                    if self
                        .lane_invariant(&e)
                        .and_then(|e| argent_arith::const_int(&e))
                        != Some(1)
                    {
                        return None;
                    }
                    let m = self.to_lanes(m);
                    self.bind_vector(var, &m);
                    let b = self.stmt(body);
                    self.unbind_vector(var);
                    return Some(Stmt::LetStmt {
                        name: var.clone(),
                        value: m,
                        body: Box::new(b?),
                    });
                }
                Stmt::For {
                    var: var.clone(),
                    min: m,
                    extent: e,
                    kind: *kind,
                    body: Box::new(self.stmt(body)?),
                }
            }
            Stmt::ProducerConsumer {
                func,
                producing,
                body,
            } => Stmt::ProducerConsumer {
                func: func.clone(),
                producing: *producing,
                body: Box::new(self.stmt(body)?),
            },
            Stmt::Evaluate(e) => Stmt::Evaluate(self.expr(e)?),
            Stmt::Assert { cond, kind, args } => {
                let c = self.expr(cond)?;
                let mut a = Vec::with_capacity(args.len());
                for x in args {
                    a.push(self.expr(x)?);
                }
                if self.is_vector(&c) || a.iter().any(|x| self.is_vector(x)) {
                    return None;
                }
                Stmt::Assert {
                    cond: c,
                    kind: kind.clone(),
                    args: a,
                }
            }
            // Scratch allocated per iteration (an inline reduction's
            // accumulator, say): each lane gets its own, interleaved, as in
            // Halide's vectoriser.
            Stmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => {
                let mut size = self.expr(size)?;
                if self.is_vector(&size) {
                    // The same in every lane (the one point of a reduction
                    // computed per output element), or no single buffer.
                    size = self.lane_invariant(&size)?;
                }
                self.widened.push(buffer.clone());
                let body = self.stmt(body);
                self.widened.pop();
                Stmt::Allocate {
                    buffer: buffer.clone(),
                    ty: *ty,
                    size: Expr::mul(size, Expr::i32(self.lanes as i64)),
                    body: Box::new(body?),
                }
            }
            Stmt::Provide { .. } | Stmt::Realize { .. } => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::*;
    use argent_ir::{BinOp, Intrinsic, Type};
    use expect_test::expect;

    fn input(e: Expr) -> Expr {
        Expr::call_input(Type::I32, "in", vec![e])
    }

    /// `for (x, 0, n) kind { out(x) = value }`, flattened.
    fn loop_module(kind: ForKind, n: i64, value: Expr) -> argent_ir::Module {
        let body = Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: Expr::i32(n),
            kind,
            body: Box::new(Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value,
            }),
        };
        module_1d(body)
    }

    /// Vectorises `vector`'s loop over x (8 lanes), asserts that the loop
    /// is gone and that the result equals `serial`'s on `pixels`, and
    /// returns the vectorised body's text.
    fn widened_like_serial(
        serial: &argent_ir::Module,
        mut vector: argent_ir::Module,
        pixels: &[i64],
    ) -> String {
        vector.body = vectorize(&vector.body, true);
        let text = vector.body.to_string();
        assert!(!text.contains("for (x,"), "the loop over x stays:\n{text}");
        assert_eq!(
            run_1d(serial, pixels, 0, 8).map(|r| r.0),
            run_1d(&vector, pixels, 0, 8).map(|r| r.0),
            "{text}"
        );
        text
    }

    #[test]
    fn dense_loads_and_stores() {
        let m = loop_module(ForKind::Vectorized, 8, input(x() + 1) * 3 + x());
        expect![[r#"
            out[ramp((out.stride.0 * (0 - out.min.0)), out.stride.0, 8)] = ((in[ramp((in.stride.0 * (1 - in.min.0)), in.stride.0, 8)] * x8(3)) + ramp(0, 1, 8))
        "#]]
        .assert_eq(&argent_arith::simplify_stmt(&vectorize(&m.body, true)).to_string());
    }

    #[test]
    fn a_scalar_target_gets_serial_loops_or_four_lanes_around_inner_loops() {
        let m = loop_module(ForKind::Vectorized, 8, input(x() + 1) * 3 + x());
        let text = vectorize(&m.body, false).to_string();
        assert!(
            !text.contains("ramp") && !text.contains("vectorized"),
            "{text}"
        );
        assert!(text.starts_with("for (x, 0, 8)"), "{text}");
        // A loop inside: 16 lanes run as 4 vectors of 4.
        let inner = Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: Expr::i32(16),
            kind: ForKind::Vectorized,
            body: Box::new(Stmt::For {
                var: "r".into(),
                min: Expr::i32(0),
                extent: Expr::i32(3),
                kind: ForKind::Serial,
                body: Box::new(Stmt::Store {
                    buffer: "out".into(),
                    index: x() * 3 + Expr::var_i32("r"),
                    value: x(),
                }),
            }),
        };
        expect![[r#"
            for (x_chunk, 0, 4) {
              for (r, 0, 3) {
                out[ramp((r + (x_chunk * 12)), 3, 4)] = ramp((x_chunk * 4), 1, 4)
              }
            }
        "#]]
        .assert_eq(&argent_arith::simplify_stmt(&vectorize(&inner, false)).to_string());
    }

    #[test]
    fn dense_when_strides_are_known() {
        // With unit strides bound, the indices fold into ramps of stride 1.
        let body = Stmt::LetStmt {
            name: "s".into(),
            value: Expr::i32(1),
            body: Box::new(Stmt::For {
                var: "x".into(),
                min: Expr::var_i32("base"),
                extent: Expr::i32(16),
                kind: ForKind::Vectorized,
                body: Box::new(Stmt::Store {
                    buffer: "out".into(),
                    index: x() * Expr::var_i32("s"),
                    value: Expr::cast(Type::U8, Expr::load(Type::I32, "in", x() + 2)),
                }),
            }),
        };
        expect![[r#"
            out[ramp(base, 1, 16)] = u8x16(in[ramp((base + 2), 1, 16)])
        "#]]
        .assert_eq(&argent_arith::simplify_stmt(&vectorize(&body, true)).to_string());
    }

    #[test]
    fn per_lane_scratch_and_single_point_loops_vectorize() {
        // out[x] = in[x] + in[x + 1] + in[x + 2], summed in scratch that
        // each x allocates, over a loop whose range is the one point x:
        // an inline reduction computed per output element. Every lane gets
        // its own accumulator and binds the loop's variable to its x.
        let var = |n: &str| Expr::var_i32(n);
        let slot = Expr::sub(var("s.x"), var("s.min"));
        let input = |i: Expr| Expr::call_input(Type::I32, "in", vec![i]);
        let accumulate = Stmt::Store {
            buffer: "acc".into(),
            index: slot.clone(),
            value: Expr::add(
                Expr::load(Type::I32, "acc", slot.clone()),
                input(Expr::add(var("s.x"), var("r"))),
            ),
        };
        let reduce = Stmt::For {
            var: "s.x".into(),
            min: var("s.min"),
            extent: Expr::add(Expr::sub(var("s.max"), var("s.min")), Expr::i32(1)),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Block(vec![
                Stmt::Store {
                    buffer: "acc".into(),
                    index: slot.clone(),
                    value: Expr::i32(0),
                },
                Stmt::For {
                    var: "r".into(),
                    min: Expr::i32(0),
                    extent: Expr::i32(3),
                    kind: ForKind::Serial,
                    body: Box::new(accumulate),
                },
            ])),
        };
        let per_x = |kind| Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: Expr::i32(8),
            kind,
            body: Box::new(Stmt::LetStmt {
                name: "s.min".into(),
                value: x(),
                body: Box::new(Stmt::LetStmt {
                    name: "s.max".into(),
                    value: x(),
                    body: Box::new(Stmt::Allocate {
                        buffer: "acc".into(),
                        ty: Type::I32,
                        size: Expr::add(Expr::sub(var("s.max"), var("s.min")), Expr::i32(1)),
                        body: Box::new(Stmt::Block(vec![
                            reduce.clone(),
                            Stmt::Provide {
                                func: "out".into(),
                                args: vec![x()],
                                value: Expr::load(Type::I32, "acc", Expr::sub(x(), var("s.min"))),
                            },
                        ])),
                    }),
                }),
            }),
        };
        let text = widened_like_serial(
            &module_1d(per_x(ForKind::Serial)),
            module_1d(per_x(ForKind::Vectorized)),
            &ramp_input(12),
        );
        assert!(
            text.contains("allocate acc: i32[(1 * 8)]"),
            "one accumulator per lane:\n{text}"
        );
        assert!(
            text.contains("let s.x = s.min"),
            "the one-point loop binds its variable:\n{text}"
        );
    }

    #[test]
    fn selects_whose_sides_load_the_same_elements_vectorize() {
        // An alpha channel passed through: both sides read in(x), so every
        // lane's loads are in bounds whichever side it takes.
        let alpha = Expr::select(Expr::eq(x(), Expr::i32(3)), input(x()), input(x()) * 2 + 1);
        widened_like_serial(
            &loop_module(ForKind::Serial, 8, alpha.clone()),
            loop_module(ForKind::Vectorized, 8, alpha),
            &ramp_input(8),
        );
        // Different elements on each side: serial.
        let shifted = Expr::select(Expr::eq(x(), Expr::i32(3)), input(x()), input(x() + 1));
        let m = loop_module(ForKind::Vectorized, 8, shifted);
        assert!(
            vectorize(&m.body, true)
                .to_string()
                .starts_with("for (x, 0, 8)")
        );
    }

    #[test]
    fn transcendental_calls_vectorise_as_their_expansions() {
        // camera_pipe's mosaic: `pow` on both sides of a select. The calls
        // become their expansions (what `pow` is defined as), widened, so
        // no lane computes them one by one.
        let pow = |e: Expr| {
            Expr::call(
                Type::F32,
                CallTarget::Intrinsic(Intrinsic::Pow),
                vec![Expr::cast(Type::F32, e) / Expr::f32(255.0), Expr::f32(2.2)],
            )
        };
        let value = Expr::cast(
            Type::I32,
            Expr::select(
                Expr::eq(x() % 2, Expr::i32(0)),
                pow(input(x())) * Expr::f32(1000.0),
                pow(input(x())) * Expr::f32(500.0),
            ),
        );
        let pixels: Vec<i64> = (0..8).map(|k| k * 37).collect();
        let text = widened_like_serial(
            &loop_module(ForKind::Serial, 8, value.clone()),
            loop_module(ForKind::Vectorized, 8, value),
            &pixels,
        );
        assert!(!text.contains("pow("), "the call stays:\n{text}");
    }

    #[test]
    fn selects_over_private_scratch_vectorize() {
        // A mean's rounding, `select(acc < 0, acc - 1, acc + 1) / 2`, of an
        // accumulator each x allocates: the scratch holds both sides'
        // elements, so the select is widened with the loads in it.
        let acc = || Expr::load(Type::I32, "acc", Expr::i32(0));
        let per_x = |kind| Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: Expr::i32(8),
            kind,
            body: Box::new(Stmt::Allocate {
                buffer: "acc".into(),
                ty: Type::I32,
                size: Expr::i32(1),
                body: Box::new(Stmt::Block(vec![
                    Stmt::Store {
                        buffer: "acc".into(),
                        index: Expr::i32(0),
                        value: input(x()) - 4,
                    },
                    Stmt::Provide {
                        func: "out".into(),
                        args: vec![x()],
                        value: Expr::select(Expr::lt(acc(), Expr::i32(0)), acc() - 1, acc() + 1)
                            / 2,
                    },
                ])),
            }),
        };
        widened_like_serial(
            &module_1d(per_x(ForKind::Serial)),
            module_1d(per_x(ForKind::Vectorized)),
            &ramp_input(8),
        );
    }

    #[test]
    fn unsafe_loops_stay_serial() {
        // A select with a vector condition over a load: lanes not selected
        // could read out of bounds.
        let guarded = Expr::select(Expr::lt(x(), Expr::i32(3)), input(x()), Expr::i32(0));
        let m = loop_module(ForKind::Vectorized, 8, guarded);
        assert!(
            vectorize(&m.body, true)
                .to_string()
                .starts_with("for (x, 0, 8)")
        );
        // A loop-carried dependence: out[x] reads out[x - 1].
        let carried = Stmt::For {
            var: "x".into(),
            min: Expr::i32(1),
            extent: Expr::i32(7),
            kind: ForKind::Vectorized,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: x(),
                value: Expr::load(Type::I32, "out", x() - 1) + 1,
            }),
        };
        assert!(
            vectorize(&carried, true)
                .to_string()
                .starts_with("for (x, 1, 7)")
        );
        // A non-constant extent.
        let dynamic = Stmt::For {
            var: "x".into(),
            min: Expr::i32(0),
            extent: Expr::var_i32("n"),
            kind: ForKind::Vectorized,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: x(),
                value: x(),
            }),
        };
        expect![[r#"
            for (x, 0, n) {
              out[x] = x
            }
        "#]]
        .assert_eq(&vectorize(&dynamic, true).to_string());
    }

    /// Random scalar expressions of `x` and input reads, exercising every
    /// operator lane by lane.
    struct Gen(fastrand_like::Rng);

    mod fastrand_like {
        /// A small xorshift generator (tests only; no dependency needed).
        pub struct Rng(pub u64);
        impl Rng {
            pub fn next(&mut self) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0
            }
            pub fn below(&mut self, n: u64) -> u64 {
                self.next() % n
            }
        }
    }

    impl Gen {
        fn leaf(&mut self) -> Expr {
            match self.0.below(4) {
                0 => x(),
                1 => Expr::i32(self.0.below(21) as i64 - 10),
                _ => input(x() + (self.0.below(3) as i64)),
            }
        }
        fn expr(&mut self, depth: u32) -> Expr {
            if depth == 0 {
                return self.leaf();
            }
            let d = depth - 1;
            match self.0.below(12) {
                0 => self.expr(d) + self.expr(d),
                1 => self.expr(d) - self.expr(d),
                2 => self.expr(d) * self.expr(d),
                3 => Expr::div(self.expr(d), self.expr(d)),
                4 => Expr::modulo(self.expr(d), Expr::i32(self.0.below(7) as i64 - 3)),
                5 => Expr::min(self.expr(d), self.expr(d)),
                6 => Expr::max(self.expr(d), self.expr(d)),
                7 => {
                    let c = Expr::lt(self.expr(d), self.expr(d));
                    Expr::select(c, self.expr(d), self.expr(d))
                }
                8 => Expr::cast(Type::I32, Expr::cast(Type::U8, self.expr(d))),
                9 => Expr::binary(BinOp::Shr, self.expr(d), Expr::i32(self.0.below(4) as i64)),
                10 => Expr::cast(
                    Type::I32,
                    Expr::intrinsic(
                        Type::F32,
                        Intrinsic::Floor,
                        vec![Expr::cast(Type::F32, self.expr(d)) * Expr::f32(0.5)],
                    ),
                ),
                _ => Expr::let_in(
                    "t",
                    self.expr(d),
                    Expr::var_i32("t") * Expr::var_i32("t") + x(),
                ),
            }
        }
    }

    #[test]
    fn vectorized_loops_compute_what_serial_loops_do() {
        let mut g = Gen(fastrand_like::Rng(0x9e3779b97f4a7c15));
        let input = ramp_input(20);
        let mut vectorized = 0;
        for case in 0..400 {
            let value = g.expr(3);
            let lanes = [4, 8, 16][case % 3];
            let serial = loop_module(ForKind::Serial, lanes, value.clone());
            let mut vector = loop_module(ForKind::Vectorized, lanes, value.clone());
            vector.body = vectorize(&vector.body, true);
            if !vector.body.to_string().contains("for (") {
                vectorized += 1;
            }
            let want = run_1d(&serial, &input, 0, lanes);
            let got = run_1d(&vector, &input, 0, lanes);
            assert_eq!(
                want.map(|r| r.0),
                got.map(|r| r.0),
                "case {case}: {value}\n{}",
                vector.body
            );
        }
        assert!(
            vectorized > 250,
            "only {vectorized} of 400 loops were vectorised"
        );
    }
}
