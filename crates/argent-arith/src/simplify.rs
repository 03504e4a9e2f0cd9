//! A rule-based simplifier for expressions and statements.
//!
//! Which rules apply depends on the type, because Argent's integers wrap:
//! - Integer `+`, `-`, `*` by constants and negation form a ring modulo
//!   2^bits, so sums are normalised into linear combinations of atoms
//!   (`(x + 3) + 2` -> `x + 5`, `(a + 2) - (a + 7)` -> `-5`) for every
//!   integer type, and equality of two sums that differ by a constant folds.
//! - Rules that reason about order (comparisons of `x + c1` with `x + c2`,
//!   `min`/`max` of them, pulling multiples out of `/` and `%`) hold only
//!   when the arithmetic does not overflow. As in Halide, they are applied
//!   to `i32` only, which is what indices and loop bounds use; `u8`, `u16`,
//!   `u32`, `i8` and `i16` get only the exact rules.
//! - Floats are never reassociated: only constant folding (in single
//!   precision, exactly as evaluated at run time), `x * 1`, `x / 1`,
//!   `x - 0` and moving constants to the right of `+` and `*`.
//!
//! Constant bounds of loop variables (and of `let`s) are tracked while
//! simplifying statements, so `min(x, 100)` inside `for (x, 0, 16)` becomes
//! `x`. Example:
//!
//! ```text
//! for (x, 0, 1) { f[(x + 2) - 1] = min(x, 7) }   ==>   f[1] = 0
//! ```

use crate::eval::{self, Scalar, const_scalar, scalar_to_expr};
use crate::fast_hash::FastHashMap;
use crate::interval::Scope;
use crate::{const_int, expr_binds_any, expr_cmp, expr_eq, is_const, vars_of};
use argent_ir::visit::{Visitor, expr_uses_var, substitute, walk_expr, walk_stmt};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Stmt, Type, UnaryOp};
use std::cell::RefCell;
use std::cmp::Ordering;

/// Simplify an expression. The result has the same value for every
/// assignment of its free variables (assuming, like Halide, that `i32`
/// arithmetic in comparisons and `min`/`max` does not overflow).
pub fn simplify(e: &Expr) -> Expr {
    let key = crate::structural_hash(e);
    let known = SIMPLIFIED.with_borrow(|simplified| {
        simplified
            .get(&key)?
            .iter()
            .find(|(input, _)| expr_eq(input, e))
            .map(|(_, output)| output.clone())
    });
    if let Some(output) = known {
        return output;
    }
    let mut simplifier = Simplifier::fresh();
    let r = simplifier.expr(e);
    simplifier.recycle();
    SIMPLIFIED.with_borrow_mut(|simplified| {
        if simplified.len() >= SIMPLIFIED_MAX_ENTRIES {
            simplified.clear();
        }
        simplified
            .entry(key)
            .or_default()
            .push((e.clone(), r.clone()));
    });
    r
}

// What [`simplify`] returned, by the structural hash of its input: the
// passes ask it about the same expressions again and again (box_blur's
// compile makes 223 calls on 130 different expressions: the taps of a
// stencil, the same bound from several passes), and its result depends on
// the expression alone.
thread_local! {
    static SIMPLIFIED: RefCell<FastHashMap<u64, Vec<(Expr, Expr)>>> =
        RefCell::new(FastHashMap::default());
}

/// The most inputs [`SIMPLIFIED`] remembers before it starts again, which
/// bounds what it keeps alive between compiles (local_laplacian's compile
/// simplifies about 850 different expressions).
const SIMPLIFIED_MAX_ENTRIES: usize = 2048;

/// Empties [`simplify`]'s memo. Lowering calls it when it starts, so what
/// one compile simplified does not outlive the next.
pub fn forget_simplified() {
    let _ = SIMPLIFIED.try_with(|simplified| simplified.borrow_mut().clear());
}

/// Simplify a statement: every expression in it, plus dead-code rules
/// (constant conditions, loops of extent 0 or 1, empty bodies, trivial
/// `LetStmt`s substituted into their bodies).
pub fn simplify_stmt(s: &Stmt) -> Stmt {
    let mut simplifier = Simplifier::fresh();
    let r = simplifier.stmt(s);
    simplifier.recycle();
    r
}

/// Simplify `e` knowing that each variable of `scope` lies in its interval
/// (only constant bounds are used).
pub fn simplify_in_scope(e: &Expr, scope: &Scope) -> Expr {
    let mut s = Simplifier::fresh();
    for (name, interval) in scope.iter() {
        let lo = interval
            .min
            .as_ref()
            .and_then(const_int)
            .unwrap_or(i64::MIN);
        let hi = interval
            .max
            .as_ref()
            .and_then(const_int)
            .unwrap_or(i64::MAX);
        s.push_bounds(name, (lo, hi));
    }
    let r = s.expr(e);
    s.recycle();
    r
}

/// Whether `e` (a bool) simplifies to `true`.
pub fn can_prove(e: &Expr) -> bool {
    const_int(&simplify(e)) == Some(1)
}

/// Whether `e` (a bool) simplifies to `true` given the bounds in `scope`.
pub fn can_prove_in_scope(e: &Expr, scope: &Scope) -> bool {
    const_int(&simplify_in_scope(e, scope)) == Some(1)
}

/// A simplified `i32` expression `e` as `c * var + rest`, with `c` a
/// non-zero constant and `rest` free of `var`, read off its linear form:
/// what substituting `var = 0` and `var = 1` and simplifying finds, without
/// simplifying `e` again twice. `None` when `var` occurs other than as a
/// term of the sum (under a `min`, a division, a product with another
/// variable) or not at all.
pub fn split_linear(e: &Expr, var: &str) -> Option<(i64, Expr)> {
    if e.ty() != Type::I32 {
        return None;
    }
    let mut l = linearize(e);
    let at = l
        .terms
        .iter()
        .position(|(t, _)| matches!(t.kind(), ExprKind::Var(n) if n == var))?;
    let (_, c) = l.terms.remove(at);
    if l.terms.iter().any(|(t, _)| expr_uses_var(t, var)) {
        return None;
    }
    Some((c, rebuild(&l)))
}

/// Inclusive constant bounds of an integer expression.
pub(crate) type Bounds = (i64, i64);

/// The range of an integer or bool type (the whole `i64` range for floats
/// and for unsigned values beyond it), computed with shifts: this is called
/// for every node whose bounds are asked for.
fn type_range(ty: Type) -> Bounds {
    let t = ty.element();
    let bits = u32::from(t.bits);
    if t.is_bool() {
        (0, 1)
    } else if t.is_int() && bits < 64 {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else if t.is_uint() && bits < 63 {
        (0, (1i64 << bits) - 1)
    } else if t.is_uint() {
        (0, i64::MAX)
    } else {
        (i64::MIN, i64::MAX)
    }
}

/// `v.insert(at, item)` by swaps: a linear form has a handful of terms,
/// and `Vec::insert` shifts them with a copy of run-time length, which the
/// compiler's wasm build makes a `memory.copy` (a call into the engine).
fn insert_small<T>(v: &mut Vec<T>, at: usize, item: T) {
    v.push(item);
    for i in (at + 1..v.len()).rev() {
        v.swap(i - 1, i);
    }
}

/// `v.remove(at)` by swaps (see [`insert_small`]).
fn remove_small<T>(v: &mut Vec<T>, at: usize) {
    for i in at + 1..v.len() {
        v.swap(i - 1, i);
    }
    v.pop();
}

/// A sum `constant + sum(coefficient * atom)` in the ring of an integer
/// type; coefficients and constant are kept wrapped to the type.
#[derive(Clone, Debug)]
struct Linear {
    ty: Type,
    terms: Vec<(Expr, i64)>,
    constant: i64,
}

impl Linear {
    fn constant(ty: Type, c: i64) -> Linear {
        Linear {
            ty,
            terms: Vec::new(),
            constant: ty.wrap(c),
        }
    }

    /// Add `c * t`. The terms are kept sorted by `expr_cmp` (the order
    /// `rebuild` prints them in), so a binary search finds a matching atom
    /// in a logarithmic number of comparisons instead of a scan over every
    /// term; long sums otherwise made simplification quadratic.
    fn add_term(&mut self, t: &Expr, c: i64) {
        let ty = self.ty;
        match self.terms.binary_search_by(|(x, _)| expr_cmp(x, t)) {
            Ok(pos) => {
                let nc = ty.wrap(self.terms[pos].1.wrapping_add(c));
                if nc == 0 {
                    remove_small(&mut self.terms, pos);
                } else {
                    self.terms[pos].1 = nc;
                }
            }
            Err(pos) => {
                if ty.wrap(c) != 0 {
                    insert_small(&mut self.terms, pos, (t.clone(), ty.wrap(c)));
                }
            }
        }
    }

    /// Add the constant `c`.
    fn add_constant(&mut self, c: i64) {
        self.constant = self.ty.wrap(self.constant.wrapping_add(c));
    }

    fn add(&mut self, other: &Linear, sign: i64) {
        for (t, c) in &other.terms {
            self.add_term(t, c.wrapping_mul(sign));
        }
        self.constant = self.ty.wrap(
            self.constant
                .wrapping_add(other.constant.wrapping_mul(sign)),
        );
    }

    fn scale(&mut self, c: i64) {
        let ty = self.ty;
        for t in &mut self.terms {
            t.1 = ty.wrap(t.1.wrapping_mul(c));
        }
        self.terms.retain(|t| t.1 != 0);
        self.constant = ty.wrap(self.constant.wrapping_mul(c));
    }

    fn is_constant(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether every coefficient and the constant are small enough that
    /// the order-based `i32` rules cannot be fooled by an intermediate
    /// result wrapping (values are assumed to stay well inside 2^30).
    fn is_small(&self) -> bool {
        const LIMIT: i64 = 1 << 24;
        self.constant.abs() <= LIMIT && self.terms.iter().all(|(_, c)| c.abs() <= LIMIT)
    }
}

/// Decompose an integer scalar expression into a linear combination.
fn linearize(e: &Expr) -> Linear {
    let mut l = Linear::constant(e.ty(), 0);
    linearize_into(e, 1, &mut l);
    l
}

/// Add `scale * e` to `l`, taking sums, differences, negations and
/// products by constants apart. Accumulating into one combination, rather
/// than building one per subterm and merging them, spares a vector and a
/// copy of every atom per node; the ring arithmetic makes the result the
/// same.
fn linearize_into(e: &Expr, scale: i64, l: &mut Linear) {
    match e.kind() {
        ExprKind::IntImm(v) => l.add_constant(v.wrapping_mul(scale)),
        ExprKind::Binary {
            op: BinOp::Add,
            a,
            b,
        } => {
            linearize_into(a, scale, l);
            linearize_into(b, scale, l);
        }
        ExprKind::Binary {
            op: BinOp::Sub,
            a,
            b,
        } => {
            linearize_into(a, scale, l);
            linearize_into(b, scale.wrapping_neg(), l);
        }
        ExprKind::Binary {
            op: BinOp::Mul,
            a,
            b,
        } if const_int(b).is_some() || const_int(a).is_some() => {
            let (x, c) = match const_int(b) {
                Some(c) => (a, c),
                None => (b, const_int(a).unwrap_or(1)),
            };
            linearize_into(x, scale.wrapping_mul(c), l);
        }
        ExprKind::Unary {
            op: UnaryOp::Neg,
            value,
        } => linearize_into(value, scale.wrapping_neg(), l),
        _ => l.add_term(e, scale),
    }
}

/// Whether a wrapped coefficient reads better subtracted: negative for
/// signed types, more than half the range for unsigned ones.
fn reads_negative(ty: Type, c: i64) -> bool {
    let neg = ty.wrap(c.wrapping_neg());
    if ty.is_int() {
        c < 0 && neg != c
    } else {
        neg < c
    }
}

/// Rebuild an expression from a linear combination, in canonical order:
/// atoms sorted, added terms first, then subtracted ones, then the constant.
fn rebuild(l: &Linear) -> Expr {
    let ty = l.ty;
    // `add_term` keeps the terms sorted, so no sort is needed here.
    debug_assert!(
        l.terms
            .is_sorted_by(|a, b| expr_cmp(&a.0, &b.0) != Ordering::Greater)
    );
    let term = |t: &Expr, c: i64| {
        if c == 1 {
            t.clone()
        } else {
            Expr::mul(t.clone(), Expr::int(ty, c))
        }
    };
    let mut acc: Option<Expr> = None;
    for (t, c) in l.terms.iter().filter(|(_, c)| !reads_negative(ty, *c)) {
        let x = term(t, *c);
        acc = Some(match acc {
            None => x,
            Some(a) => Expr::add(a, x),
        });
    }
    let mut constant = l.constant;
    for (t, c) in l.terms.iter().filter(|(_, c)| reads_negative(ty, *c)) {
        let x = term(t, ty.wrap(c.wrapping_neg()));
        acc = Some(match acc {
            None => {
                // Nothing positive yet: start from the constant.
                let start = Expr::int(ty, constant);
                constant = 0;
                Expr::sub(start, x)
            }
            Some(a) => Expr::sub(a, x),
        });
    }
    match acc {
        None => Expr::int(ty, constant),
        Some(a) if constant == 0 => a,
        Some(a) if reads_negative(ty, constant) => {
            Expr::sub(a, Expr::int(ty, constant.wrapping_neg()))
        }
        Some(a) => Expr::add(a, Expr::int(ty, constant)),
    }
}

fn bool_expr(lanes: u16, v: bool) -> Expr {
    Expr::broadcast(Expr::bool(v), lanes)
}

fn is_float_const(e: &Expr, v: f64) -> bool {
    match e.kind() {
        ExprKind::FloatImm(x) => *x == v && x.is_sign_positive() == v.is_sign_positive(),
        ExprKind::Broadcast { value, .. } => is_float_const(value, v),
        _ => false,
    }
}

/// Intrinsics whose constant folding matches every backend bit for bit
/// (the transcendental functions are left to run time).
fn foldable(i: Intrinsic) -> bool {
    matches!(
        i,
        Intrinsic::Abs
            | Intrinsic::Absd
            | Intrinsic::Floor
            | Intrinsic::Ceil
            | Intrinsic::Round
            | Intrinsic::Trunc
            | Intrinsic::IsNan
            | Intrinsic::Reinterpret
            | Intrinsic::Likely
            | Intrinsic::Sqrt
    )
}

/// What the simplifier knows about one binding of a variable.
#[derive(Debug)]
struct Binding {
    /// Constant bounds of the bound value.
    bounds: Bounds,
    /// For a `LetStmt` whose (trivial) value is substituted into its uses
    /// instead of being kept: the simplified value and its variables.
    value: Option<(Expr, Vec<String>)>,
    /// When the binding was made; a variable of `value` bound again later
    /// (a larger `seq`) would be captured by substituting `value`.
    seq: u64,
    /// Whether the simplifier has met a use of the binding. A binding never
    /// used cannot occur in the output, so its let is dropped unchecked.
    used: bool,
    /// Whether a use could not take `value` (it would have been captured),
    /// so that the let must be emitted after all.
    captured: bool,
}

#[derive(Default)]
pub(crate) struct Simplifier {
    /// The bindings in scope of each variable (loop variables, lets),
    /// innermost last.
    env: FastHashMap<String, Vec<Binding>>,
    /// The `seq` of the next binding.
    next_seq: u64,
    /// The last few sums built by `int_binary`, with the linear form each
    /// was rebuilt from. Simplifying a long sum bottom up otherwise takes
    /// the already simplified left operand apart again at every `+`. An
    /// entry is taken out on use (nodes are rarely operands twice), and
    /// holding the node keeps its address from being reused.
    linear_memo: Vec<(Expr, Linear)>,
    /// `const_interval` of composite nodes, by node address, valid while
    /// the bindings stay the same (cleared when one is made or dropped).
    /// Rules ask for the bounds of their operands, which are subtrees of
    /// the result: without it, simplifying a deep tree would walk each
    /// subtree once per ancestor. Holding the node keeps its address from
    /// being reused.
    interval_memo: RefCell<FastHashMap<usize, (Expr, Bounds)>>,
    /// Results of `expr` for composite nodes, by address, under the same
    /// rule as `interval_memo`.
    simplify_memo: FastHashMap<usize, (Expr, Expr)>,
}

/// How many rebuilt sums `Simplifier::linear_memo` remembers: enough to
/// survive the simplification of a right operand (whose loads may hold sums
/// of their own) between two steps of a chain.
const LINEAR_MEMO_SIZE: usize = 8;

// Simplifiers whose tables are kept for reuse (see `Simplifier::fresh`),
// at most `SPARE_SIMPLIFIERS` of them.
thread_local! {
    static SPARE: RefCell<Vec<Simplifier>> = const { RefCell::new(Vec::new()) };
}

/// How many finished simplifiers [`SPARE`] keeps: enough for the nesting
/// of simplifications inside bounds computations inside simplifications.
const SPARE_SIMPLIFIERS: usize = 4;

/// A simplifier whose tables have grown past this many entries is dropped
/// rather than kept: clearing a table costs its capacity (at every binding
/// made or dropped), which a larger simplification would otherwise leave
/// to every small one. 128 measured best for box_blur (fewer instructions
/// than 32 or 1024).
const SPARE_MAX_ENTRIES: usize = 128;

impl Simplifier {
    /// A simplifier with no bindings. Passes simplify many small
    /// expressions one at a time; reusing the hash tables of a finished
    /// simplifier spares growing them from nothing (and the key strings of
    /// its variables) every time.
    pub(crate) fn fresh() -> Simplifier {
        SPARE
            .try_with(|spare| spare.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Forget everything this simplifier learnt and keep its tables for
    /// [`Simplifier::fresh`]. The names of `env` stay, bound to nothing
    /// (an empty stack reads as unbound), so binding them again allocates
    /// nothing.
    pub(crate) fn recycle(mut self) {
        if self.env.len() > SPARE_MAX_ENTRIES
            || self.interval_memo.get_mut().capacity() > SPARE_MAX_ENTRIES
            || self.simplify_memo.capacity() > SPARE_MAX_ENTRIES
        {
            return;
        }
        for bindings in self.env.values_mut() {
            bindings.clear();
        }
        self.next_seq = 0;
        self.linear_memo.clear();
        self.forget_intervals();
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARE_SIMPLIFIERS {
                spare.push(self);
            }
        });
    }

    pub(crate) fn push_bounds(&mut self, name: &str, b: Bounds) {
        self.push_binding(name, b, None);
    }

    fn push_binding(&mut self, name: &str, bounds: Bounds, value: Option<(Expr, Vec<String>)>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.forget_intervals();
        let binding = Binding {
            bounds,
            value,
            seq,
            used: false,
            captured: false,
        };
        match self.env.get_mut(name) {
            Some(stack) => stack.push(binding),
            None => {
                self.env.insert(name.to_string(), vec![binding]);
            }
        }
    }

    pub(crate) fn pop_bounds(&mut self, name: &str) {
        self.pop_binding(name);
    }

    fn pop_binding(&mut self, name: &str) -> Option<Binding> {
        self.forget_intervals();
        self.env.get_mut(name).and_then(|v| v.pop())
    }

    /// Forget what depends on the bindings (they are about to change).
    fn forget_intervals(&mut self) {
        let memo = self.interval_memo.get_mut();
        if !memo.is_empty() {
            memo.clear();
        }
        if !self.simplify_memo.is_empty() {
            self.simplify_memo.clear();
        }
    }

    /// A use of the variable `name` (of type `ty`): its substituted value
    /// when it has one that no binding made since would capture, else the
    /// variable itself. Marks the binding as used.
    fn lookup_var(&mut self, e: &Expr, name: &str) -> Expr {
        let Some(binding) = self.env.get(name).and_then(|v| v.last()) else {
            return e.clone();
        };
        let substituted = binding.value.as_ref().and_then(|(value, vars)| {
            let captured = vars.iter().any(|u| {
                self.env
                    .get(u)
                    .and_then(|v| v.last())
                    .is_some_and(|b| b.seq > binding.seq)
            });
            (!captured).then(|| value.clone())
        });
        let binding = self
            .env
            .get_mut(name)
            .and_then(|v| v.last_mut())
            .expect("looked up above");
        binding.used = true;
        match substituted {
            Some(value) => value,
            None => {
                binding.captured |= binding.value.is_some();
                e.clone()
            }
        }
    }

    /// Constant bounds of an integer expression, exact under wrapping: a
    /// result that would leave the type's range gives the whole range.
    pub(crate) fn const_interval(&self, e: &Expr) -> Bounds {
        if matches!(
            e.kind(),
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_)
        ) {
            return self.const_interval_uncached(e);
        }
        let key = e.node() as *const _ as usize;
        if let Some((_, b)) = self.interval_memo.borrow().get(&key) {
            return *b;
        }
        let b = self.const_interval_uncached(e);
        self.interval_memo.borrow_mut().insert(key, (e.clone(), b));
        b
    }

    /// The bounds of a linear combination, from the bounds of its atoms:
    /// what `const_interval(&rebuild(l))` gives, without building the
    /// expression (and remembering the bounds of each new node). Summed
    /// exactly, so it is never looser than bounding the sum node by node.
    fn linear_interval(&self, l: &Linear) -> Bounds {
        self.exact_linear_interval(l).unwrap_or(type_range(l.ty))
    }

    /// [`Simplifier::linear_interval`] when the exact sum stays inside
    /// the type's range (so the wrapped value is the exact one), else
    /// `None`.
    fn exact_linear_interval(&self, l: &Linear) -> Option<Bounds> {
        let full = type_range(l.ty);
        let (mut lo, mut hi) = (l.constant as i128, l.constant as i128);
        for (t, c) in &l.terms {
            let (t0, t1) = self.const_interval(t);
            let (p, q) = (t0 as i128 * *c as i128, t1 as i128 * *c as i128);
            lo += p.min(q);
            hi += p.max(q);
        }
        (lo >= full.0 as i128 && hi <= full.1 as i128).then_some((lo as i64, hi as i64))
    }

    /// `small_difference(a, b)` when both sides sum exactly (see
    /// [`Simplifier::sums_exactly`]).
    fn exact_small_difference(&self, a: &Expr, b: &Expr) -> Option<Linear> {
        let (la, lb) = (linearize(a), linearize(b));
        if !la.is_small() || !lb.is_small() || !self.sums_exactly(&la) || !self.sums_exactly(&lb) {
            return None;
        }
        let mut d = la;
        d.add(&lb, -1);
        d.is_small().then_some(d)
    }

    /// Whether `l` may be reasoned about as its exact sum (an order of
    /// two sums, a constant moved across a comparison): its range is
    /// known not to wrap, or it is index arithmetic (variables, buffer
    /// fields), which is assumed not to overflow, as in Halide. Values
    /// computed from data (reads, loads, conversions) wrap in `i32` as the
    /// language defines: `v >= i32(x) - 4` is not `v + 4 >= i32(x)` when
    /// `v` is near 2147483647 (found by a random program).
    fn sums_exactly(&self, l: &Linear) -> bool {
        let holds_data =
            |t: &Expr| !matches!(t.kind(), ExprKind::Var(_)) && crate::computes_with_data(t);
        !l.terms.iter().any(|(t, _)| holds_data(t)) || self.exact_linear_interval(l).is_some()
    }

    fn const_interval_uncached(&self, e: &Expr) -> Bounds {
        let ty = e.ty();
        let full = type_range(ty);
        if !(ty.is_integer() || ty.is_bool()) {
            return full;
        }
        let fit = |lo: i128, hi: i128| -> Bounds {
            if lo >= full.0 as i128 && hi <= full.1 as i128 && lo <= hi {
                (lo as i64, hi as i64)
            } else {
                full
            }
        };
        match e.kind() {
            ExprKind::IntImm(v) => (*v, *v),
            ExprKind::Var(n) => match self.env.get(n).and_then(|v| v.last()) {
                Some(&Binding {
                    bounds: (lo, hi), ..
                }) => (lo.max(full.0), hi.min(full.1)),
                None => full,
            },
            ExprKind::Broadcast { value, .. } => self.const_interval(value),
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => {
                let (b, s) = (self.const_interval(base), self.const_interval(stride));
                let n = *lanes as i128 - 1;
                let cands = [b.0 as i128 + s.0 as i128 * n, b.0 as i128 + s.1 as i128 * n];
                let hi_c = [b.1 as i128 + s.0 as i128 * n, b.1 as i128 + s.1 as i128 * n];
                let lo = (b.0 as i128).min(cands[0]).min(cands[1]);
                let hi = (b.1 as i128).max(hi_c[0]).max(hi_c[1]);
                fit(lo, hi)
            }
            ExprKind::Cast { value, saturating } => {
                let from = value.ty();
                if !from.is_integer() && !from.is_bool() {
                    return full;
                }
                let (lo, hi) = self.const_interval(value);
                if *saturating {
                    (lo.clamp(full.0, full.1), hi.clamp(full.0, full.1))
                } else {
                    fit(lo as i128, hi as i128)
                }
            }
            ExprKind::Call {
                target: CallTarget::Intrinsic(Intrinsic::Likely),
                args,
            } if args.len() == 1 => self.const_interval(&args[0]),
            ExprKind::Select {
                then, otherwise, ..
            } => {
                let (a, b) = (self.const_interval(then), self.const_interval(otherwise));
                (a.0.min(b.0), a.1.max(b.1))
            }
            ExprKind::Let { body, .. } => {
                // The let-bound name is not tracked here, so the body's
                // bounds are only as good as its other variables.
                let _ = body;
                full
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                value,
            } => {
                let (lo, hi) = self.const_interval(value);
                fit(-(hi as i128), -(lo as i128))
            }
            ExprKind::Binary { op, a, b } => {
                if op.is_comparison() || op.is_logical() {
                    return (0, 1);
                }
                let (x, y) = (self.const_interval(a), self.const_interval(b));
                let (x0, x1, y0, y1) = (x.0 as i128, x.1 as i128, y.0 as i128, y.1 as i128);
                match op {
                    BinOp::Add => fit(x0 + y0, x1 + y1),
                    BinOp::Sub => fit(x0 - y1, x1 - y0),
                    BinOp::Mul => {
                        let c = [x0 * y0, x0 * y1, x1 * y0, x1 * y1];
                        fit(*c.iter().min().unwrap(), *c.iter().max().unwrap())
                    }
                    BinOp::Min => (x.0.min(y.0), x.1.min(y.1)),
                    BinOp::Max => (x.0.max(y.0), x.1.max(y.1)),
                    BinOp::Div if y0 == y1 && y0 != 0 => {
                        let c = y0;
                        let (q0, q1) = (x0.div_euclid(c), x1.div_euclid(c));
                        fit(q0.min(q1), q0.max(q1))
                    }
                    BinOp::Div if y0 > 0 => {
                        // Euclidean quotients by positive divisors are
                        // monotone in the dividend; the extremes are at
                        // the corners.
                        let c = [
                            x0.div_euclid(y0),
                            x0.div_euclid(y1),
                            x1.div_euclid(y0),
                            x1.div_euclid(y1),
                        ];
                        fit(*c.iter().min().unwrap(), *c.iter().max().unwrap())
                    }
                    BinOp::Mod if y0 == y1 && y0 != 0 => {
                        let c = y0.abs();
                        if x0.div_euclid(c) == x1.div_euclid(c) {
                            fit(x0.rem_euclid(c), x1.rem_euclid(c))
                        } else {
                            fit(0, c - 1)
                        }
                    }
                    BinOp::Mod => {
                        let m = y0.abs().max(y1.abs());
                        if x0 >= 0 && x1 < m && y0 > 0 && x1 < y0 {
                            (x.0, x.1)
                        } else {
                            fit(0, (m - 1).max(0))
                        }
                    }
                    BinOp::BitAnd if x0 >= 0 && y0 >= 0 => fit(0, x1.min(y1)),
                    BinOp::Shr if y0 == y1 && (0..63).contains(&y0) => fit(x0 >> y0, x1 >> y0),
                    BinOp::Shl if y0 == y1 && (0..32).contains(&y0) => fit(x0 << y0, x1 << y0),
                    _ => full,
                }
            }
            _ => full,
        }
    }

    // ---- expressions --------------------------------------------------------

    /// Simplify `e`. Composite nodes are remembered by address while the
    /// bindings stay the same, so a subtree shared by several parents (as
    /// unrolling and vectorization leave them) is simplified once and stays
    /// shared; a node the rules leave as it was is returned itself rather
    /// than rebuilt, so unchanged parts of the input are not copied.
    pub(crate) fn expr(&mut self, e: &Expr) -> Expr {
        if matches!(
            e.kind(),
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_)
        ) {
            return self.expr_node(e);
        }
        // Nodes over leaves only are cheaper to simplify again than to
        // remember.
        if !has_composite_child(e) {
            let r = self.expr_node(e);
            return self.keep_unchanged(e, r);
        }
        let key = e.node() as *const _ as usize;
        if let Some((_, r)) = self.simplify_memo.get(&key) {
            return r.clone();
        }
        let r = self.expr_node(e);
        let r = self.keep_unchanged(e, r);
        self.simplify_memo.insert(key, (e.clone(), r.clone()));
        r
    }

    /// `e` itself when the rules rebuilt it as it was, else `r`. A sum
    /// remembered in `linear_memo` is then remembered under `e`, so that
    /// the next `+` of a chain still finds its linear form.
    fn keep_unchanged(&mut self, e: &Expr, r: Expr) -> Expr {
        if r.same_as(e) || !shallow_same(&r, e) {
            return r;
        }
        if let Some(entry) = self.linear_memo.iter_mut().find(|(x, _)| x.same_as(&r)) {
            entry.0 = e.clone();
        }
        e.clone()
    }

    fn expr_node(&mut self, e: &Expr) -> Expr {
        match e.kind() {
            ExprKind::IntImm(_) | ExprKind::FloatImm(_) => e.clone(),
            ExprKind::Var(n) => {
                let e = &self.lookup_var(e, n);
                if !matches!(e.kind(), ExprKind::Var(_)) {
                    return e.clone();
                }
                if e.ty().is_integer() {
                    let (lo, hi) = self.const_interval(e);
                    if lo == hi {
                        return Expr::int(e.ty(), lo);
                    }
                }
                e.clone()
            }
            ExprKind::Cast { value, saturating } => {
                let v = self.expr(value);
                self.cast(e.ty(), v, *saturating)
            }
            ExprKind::Unary { op, value } => {
                let v = self.expr(value);
                self.unary(*op, v)
            }
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub,
                ..
            } if takes_linear_forms(e.ty()) => {
                let l = self.linear_of(e);
                let sum = rebuild(&l);
                self.remember_linear(&sum, l);
                sum
            }
            ExprKind::Binary { op, a, b } => {
                let (a, b) = (self.expr(a), self.expr(b));
                self.binary(*op, a, b)
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond);
                let (t, o) = (self.expr(then), self.expr(otherwise));
                self.select(c, t, o)
            }
            ExprKind::Call { target, args } => {
                let args: Vec<Expr> = args.iter().map(|a| self.expr(a)).collect();
                if let CallTarget::Intrinsic(i) = target
                    && foldable(*i)
                    && !args.is_empty()
                    && let Some(vals) = args
                        .iter()
                        .map(const_scalar)
                        .collect::<Option<Vec<Scalar>>>()
                {
                    let tys: Vec<Type> = args.iter().map(|a| a.ty()).collect();
                    return scalar_to_expr(e.ty(), eval::intrinsic(*i, e.ty(), &tys, &vals));
                }
                Expr::call(e.ty(), target.clone(), args)
            }
            ExprKind::Let { name, value, body } => self.let_expr(name, value, body),
            ExprKind::Load { buffer, index } => {
                Expr::load(e.ty().element(), buffer.clone(), self.expr(index))
            }
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => {
                let (b, s) = (self.expr(base), self.expr(stride));
                if const_int(&s) == Some(0) && !s.ty().is_float() {
                    return Expr::broadcast(b, *lanes);
                }
                Expr::ramp(b, s, *lanes)
            }
            ExprKind::Broadcast { value, lanes } => Expr::broadcast(self.expr(value), *lanes),
            ExprKind::Shuffle { vectors, indices } => {
                if vectors.is_empty() {
                    return e.clone();
                }
                let v: Vec<Expr> = vectors.iter().map(|x| self.expr(x)).collect();
                Expr::shuffle(v, indices.clone())
            }
        }
    }

    /// The simplified linear form of a scalar integer expression. A whole
    /// sum is taken apart top down and rebuilt once: simplifying it bottom
    /// up rebuilt every partial sum, quadratic in the number of terms. The
    /// result is the form bottom-up simplification reaches, since
    /// `linearize(&rebuild(&l))` equals `l` and every step below is the
    /// corresponding rule of `binary`.
    fn linear_of(&mut self, e: &Expr) -> Linear {
        let mut l = Linear::constant(e.ty(), 0);
        self.linear_into(e, 1, &mut l);
        l
    }

    /// Add `scale` times the simplified linear form of `e` to `l` (see
    /// [`linearize_into`]), simplifying the operands left to right.
    fn linear_into(&mut self, e: &Expr, scale: i64, l: &mut Linear) {
        match e.kind() {
            ExprKind::Binary {
                op: op @ (BinOp::Add | BinOp::Sub),
                a,
                b,
            } => {
                self.linear_into(a, scale, l);
                let sign = if *op == BinOp::Add {
                    scale
                } else {
                    scale.wrapping_neg()
                };
                self.linear_into(b, sign, l);
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                value,
            } => self.linear_into(value, scale.wrapping_neg(), l),
            ExprKind::Binary {
                op: BinOp::Mul,
                a,
                b,
            } => {
                let (a, b) = (self.expr(a), self.expr(b));
                linearize_into(&self.binary(BinOp::Mul, a, b), scale, l);
            }
            _ => linearize_into(&self.expr(e), scale, l),
        }
    }

    /// Remember the linear form `sum` was rebuilt from (see `linear_memo`).
    fn remember_linear(&mut self, sum: &Expr, l: Linear) {
        if self.linear_memo.len() == LINEAR_MEMO_SIZE {
            self.linear_memo.remove(0);
        }
        self.linear_memo.push((sum.clone(), l));
    }

    fn let_expr(&mut self, name: &str, value: &Expr, body: &Expr) -> Expr {
        let v = self.expr(value);
        // Small affine values are substituted, as `LetStmt`s' are (see
        // `let_chain`): inlining binds a func's arguments to lets such as
        // `let s.y = y + 1`, and only substituted do the uses' indices fold
        // (`(s.y + 6) % 8` to `(y + 7) % 8`), so that equal loads look equal.
        let trivial = is_trivial(&v)
            || is_small_affine(&v, 3)
            || argent_ir::visit::expr_uses_var(body, name) && count_uses(body, name) <= 1;
        if trivial && !expr_binds_any(body, &crate::var_names(&v)) {
            return self.expr(&substitute(body, name, &v));
        }
        let b = if v.ty().is_integer() {
            let bounds = self.const_interval(&v);
            self.push_bounds(name, bounds);
            let b = self.expr(body);
            self.pop_bounds(name);
            b
        } else {
            self.push_bounds(name, (i64::MIN, i64::MAX));
            let b = self.expr(body);
            self.pop_bounds(name);
            b
        };
        if !expr_uses_var(&b, name) {
            return b;
        }
        Expr::let_in(name, v, b)
    }

    fn cast(&mut self, ty: Type, v: Expr, saturating: bool) -> Expr {
        let from = v.ty();
        if let Some(c) = const_scalar(&v) {
            return scalar_to_expr(ty, eval::cast(ty, from, c, saturating));
        }
        if from == ty {
            return v;
        }
        let int_to_int = from.is_integer() && ty.is_integer();
        if saturating && int_to_int {
            let (lo, hi) = self.const_interval(&v);
            let (tlo, thi) = type_range(ty);
            if lo >= tlo && hi <= thi {
                return self.cast(ty, v, false);
            }
        }
        if !saturating
            && let ExprKind::Cast {
                value: inner,
                saturating: false,
            } = v.kind()
        {
            // A lossless conversion followed by another one is the
            // second applied directly.
            let (t0, t1) = (inner.ty(), from);
            let lossless =
                (t0.is_integer() || t0.is_bool()) && Type::can_represent(t1, t0) && !t1.is_bool();
            // Except through a float to `u32`: that conversion saturates
            // at 0 (`u32(f32(i8(-29)))` is 0), where `u32(i8(-29))` wraps.
            let saturates_below_zero = t1.is_float() && ty.element() == Type::U32 && t0.is_int();
            if lossless
                && !saturates_below_zero
                && !(t1.is_float() && ty.is_integer() && !t0.is_integer())
            {
                return self.cast(ty, inner.clone(), false);
            }
        }
        Expr::new(
            ty,
            ExprKind::Cast {
                value: v,
                saturating,
            },
        )
    }

    fn unary(&mut self, op: UnaryOp, v: Expr) -> Expr {
        let ty = v.ty();
        if let Some(c) = const_scalar(&v) {
            return scalar_to_expr(ty, eval::unary(op, ty, c));
        }
        match (op, v.kind()) {
            (
                UnaryOp::Neg,
                ExprKind::Unary {
                    op: UnaryOp::Neg,
                    value,
                },
            )
            | (
                UnaryOp::Not,
                ExprKind::Unary {
                    op: UnaryOp::Not,
                    value,
                },
            )
            | (
                UnaryOp::BitNot,
                ExprKind::Unary {
                    op: UnaryOp::BitNot,
                    value,
                },
            ) => return value.clone(),
            (UnaryOp::Neg, _) if ty.is_integer() && ty.is_scalar() => {
                let mut l = linearize(&v);
                l.scale(-1);
                return rebuild(&l);
            }
            (UnaryOp::Not, ExprKind::Binary { op: cmp, a, b }) if cmp.is_comparison() => {
                let exact =
                    a.ty().is_integer() || a.ty().is_bool() || matches!(cmp, BinOp::Eq | BinOp::Ne);
                if exact {
                    let (nop, x, y) = match cmp {
                        BinOp::Eq => (BinOp::Ne, a, b),
                        BinOp::Ne => (BinOp::Eq, a, b),
                        BinOp::Lt => (BinOp::Le, b, a),
                        BinOp::Le => (BinOp::Lt, b, a),
                        BinOp::Gt => (BinOp::Le, a, b),
                        _ => (BinOp::Lt, a, b),
                    };
                    return self.binary(nop, x.clone(), y.clone());
                }
            }
            _ => {}
        }
        Expr::unary(op, v)
    }

    fn select(&mut self, c: Expr, t: Expr, o: Expr) -> Expr {
        if let Some(v) = const_int(&c) {
            return if v != 0 { t } else { o };
        }
        if expr_eq(&t, &o) {
            return t;
        }
        if let ExprKind::Unary {
            op: UnaryOp::Not,
            value,
        } = c.kind()
        {
            return self.select(value.clone(), o, t);
        }
        if t.ty().is_bool() && t.ty() == c.ty() {
            match (const_int(&t), const_int(&o)) {
                (Some(1), Some(0)) => return c,
                (Some(0), Some(1)) => return self.unary(UnaryOp::Not, c),
                _ => {}
            }
        }
        Expr::select(c, t, o)
    }

    pub(crate) fn binary(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let ty = a.ty();
        if let (Some(x), Some(y)) = (const_scalar(&a), const_scalar(&b)) {
            let rty = if op.is_comparison() || op.is_logical() {
                Type::BOOL.with_lanes(ty.lanes)
            } else {
                ty
            };
            return scalar_to_expr(rty, eval::binary(op, ty, x, y));
        }
        if op.is_logical() {
            return self.logical(op, a, b);
        }
        // Comparisons are canonically `<` and `<=`.
        if op == BinOp::Gt {
            return self.binary(BinOp::Lt, b, a);
        }
        if op == BinOp::Ge {
            return self.binary(BinOp::Le, b, a);
        }
        if ty.is_vector() {
            return self.vector_binary(op, a, b);
        }
        if ty.is_float() {
            return self.float_binary(op, a, b);
        }
        if ty.is_bool() && !op.is_comparison() {
            return Expr::binary(op, a, b);
        }
        self.int_binary(op, a, b)
    }

    fn logical(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let lanes = a.ty().lanes;
        let (ca, cb) = (const_int(&a), const_int(&b));
        match op {
            BinOp::And => {
                if ca == Some(0) || cb == Some(0) {
                    return bool_expr(lanes, false);
                }
                if ca == Some(1) {
                    return b;
                }
                if cb == Some(1) {
                    return a;
                }
            }
            _ => {
                if ca == Some(1) || cb == Some(1) {
                    return bool_expr(lanes, true);
                }
                if ca == Some(0) {
                    return b;
                }
                if cb == Some(0) {
                    return a;
                }
            }
        }
        if expr_eq(&a, &b) {
            return a;
        }
        Expr::binary(op, a, b)
    }

    fn float_binary(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let (a, b) = if matches!(op, BinOp::Add | BinOp::Mul) && is_const(&a) && !is_const(&b) {
            (b, a)
        } else {
            (a, b)
        };
        match op {
            BinOp::Mul | BinOp::Div if is_float_const(&b, 1.0) => a,
            BinOp::Sub if is_float_const(&b, 0.0) => a,
            _ => Expr::binary(op, a, b),
        }
    }

    fn vector_binary(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        use ExprKind::{Broadcast, Ramp};
        let lanes = a.ty().lanes;
        if let (Broadcast { value: x, .. }, Broadcast { value: y, .. }) = (a.kind(), b.kind()) {
            let r = self.binary(op, x.clone(), y.clone());
            return Expr::broadcast(r, lanes);
        }
        if a.ty().is_integer() {
            match (op, a.kind(), b.kind()) {
                (
                    BinOp::Add,
                    Ramp {
                        base: b1,
                        stride: s1,
                        ..
                    },
                    Ramp {
                        base: b2,
                        stride: s2,
                        ..
                    },
                ) => {
                    let base = self.binary(BinOp::Add, b1.clone(), b2.clone());
                    let stride = self.binary(BinOp::Add, s1.clone(), s2.clone());
                    return self.ramp(base, stride, lanes);
                }
                (
                    BinOp::Sub,
                    Ramp {
                        base: b1,
                        stride: s1,
                        ..
                    },
                    Ramp {
                        base: b2,
                        stride: s2,
                        ..
                    },
                ) => {
                    let base = self.binary(BinOp::Sub, b1.clone(), b2.clone());
                    let stride = self.binary(BinOp::Sub, s1.clone(), s2.clone());
                    return self.ramp(base, stride, lanes);
                }
                (BinOp::Add | BinOp::Sub, Ramp { base, stride, .. }, Broadcast { value, .. }) => {
                    let base = self.binary(op, base.clone(), value.clone());
                    return self.ramp(base, stride.clone(), lanes);
                }
                (BinOp::Add, Broadcast { value, .. }, Ramp { base, stride, .. }) => {
                    let base = self.binary(BinOp::Add, value.clone(), base.clone());
                    return self.ramp(base, stride.clone(), lanes);
                }
                (BinOp::Sub, Broadcast { value, .. }, Ramp { base, stride, .. }) => {
                    let base = self.binary(BinOp::Sub, value.clone(), base.clone());
                    let stride = self.unary(UnaryOp::Neg, stride.clone());
                    return self.ramp(base, stride, lanes);
                }
                (BinOp::Mul, Ramp { base, stride, .. }, Broadcast { value, .. })
                | (BinOp::Mul, Broadcast { value, .. }, Ramp { base, stride, .. }) => {
                    let base = self.binary(BinOp::Mul, base.clone(), value.clone());
                    let stride = self.binary(BinOp::Mul, stride.clone(), value.clone());
                    return self.ramp(base, stride, lanes);
                }
                (BinOp::Div, Ramp { base, stride, .. }, Broadcast { value, .. })
                    if a.ty().element() == Type::I32 =>
                {
                    if let (Some(s), Some(c)) = (const_int(stride), const_int(value))
                        && c > 0
                        && s % c == 0
                    {
                        let base = self.binary(BinOp::Div, base.clone(), value.clone());
                        return self.ramp(base, Expr::i32(s / c), lanes);
                    }
                }
                _ => {}
            }
            // Identities that hold lane by lane.
            let (ca, cb) = (const_int(&a), const_int(&b));
            match op {
                BinOp::Add if cb == Some(0) => return a,
                BinOp::Add if ca == Some(0) => return b,
                BinOp::Sub if cb == Some(0) => return a,
                BinOp::Mul if cb == Some(1) => return a,
                BinOp::Mul if ca == Some(1) => return b,
                BinOp::Div if cb == Some(1) => return a,
                _ => {}
            }
        } else if a.ty().is_float() {
            return self.float_binary(op, a, b);
        }
        Expr::binary(op, a, b)
    }

    fn ramp(&mut self, base: Expr, stride: Expr, lanes: u16) -> Expr {
        if const_int(&stride) == Some(0) {
            Expr::broadcast(base, lanes)
        } else {
            Expr::ramp(base, stride, lanes)
        }
    }

    fn int_binary(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let ty = a.ty();
        if !takes_linear_forms(ty) && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) {
            return self.value_arith(op, a, b);
        }
        match op {
            BinOp::Add | BinOp::Sub => {
                // Linearize the operands directly rather than a freshly
                // built `a op b`, which would only be taken apart again.
                // `linearize(&rebuild(&l))` equals `l`, so a remembered form of
                // `a` stands in for walking it.
                let mut l = match self.linear_memo.iter().position(|(x, _)| x.same_as(&a)) {
                    Some(pos) => self.linear_memo.remove(pos).1,
                    None => linearize(&a),
                };
                l.add(&linearize(&b), if op == BinOp::Add { 1 } else { -1 });
                let sum = rebuild(&l);
                if self.linear_memo.len() == LINEAR_MEMO_SIZE {
                    self.linear_memo.remove(0);
                }
                self.linear_memo.push((sum.clone(), l));
                sum
            }
            BinOp::Mul => {
                if const_int(&a).is_some() || const_int(&b).is_some() {
                    return rebuild(&linearize(&Expr::binary(op, a, b)));
                }
                let (a, b) = if expr_cmp(&a, &b) == Ordering::Greater {
                    (b, a)
                } else {
                    (a, b)
                };
                Expr::mul(a, b)
            }
            BinOp::Div => self.int_div(a, b),
            BinOp::Mod => self.int_mod(a, b),
            BinOp::Min | BinOp::Max => self.int_min_max(op, a, b),
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le => self.int_compare(op, a, b),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                let (a, b) =
                    if is_const(&a) || (!is_const(&b) && expr_cmp(&a, &b) == Ordering::Greater) {
                        (b, a)
                    } else {
                        (a, b)
                    };
                let all_ones = ty.wrap(-1);
                match (op, const_int(&b)) {
                    (BinOp::BitAnd, Some(0)) => return b,
                    (BinOp::BitAnd, Some(c)) if c == all_ones => return a,
                    (BinOp::BitOr | BinOp::BitXor, Some(0)) => return a,
                    (BinOp::BitOr, Some(c)) if c == all_ones => return b,
                    _ => {}
                }
                if expr_eq(&a, &b) {
                    return if op == BinOp::BitXor {
                        Expr::int(ty, 0)
                    } else {
                        a
                    };
                }
                Expr::binary(op, a, b)
            }
            BinOp::Shl | BinOp::Shr => {
                if const_int(&b) == Some(0) || const_int(&a) == Some(0) {
                    return a;
                }
                Expr::binary(op, a, b)
            }
            _ => Expr::binary(op, a, b),
        }
    }

    /// `a op b` for a sum, difference or product of values (not of
    /// indices, see [`takes_linear_forms`]): identities only, the operands
    /// keep the order and grouping the program gave them.
    fn value_arith(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let (ca, cb) = (const_int(&a), const_int(&b));
        // `(x + c1) + c2` is `x + (c1 + c2)`, and likewise for differences
        // and products: exact, since integer arithmetic wraps, and `x`
        // keeps its grouping. Inlined stages that each add a constant
        // (`brighter = in + 10`, `dimmer = brighter - 4`) become one add.
        if let Some(c2) = cb
            && let ExprKind::Binary {
                op: inner,
                a: x,
                b: c1,
            } = a.kind()
            && let Some(c1) = const_int(c1)
        {
            use BinOp::{Add, Mul, Sub};
            let folded = match (*inner, op) {
                (Add, Add) | (Sub, Sub) => Some((*inner, c1.wrapping_add(c2))),
                (Add, Sub) | (Sub, Add) => Some((*inner, c1.wrapping_sub(c2))),
                (Mul, Mul) => Some((Mul, c1.wrapping_mul(c2))),
                _ => None,
            };
            if let Some((op, c)) = folded {
                let c = Expr::int(a.ty(), a.ty().element().wrap(c));
                return self.value_arith(op, x.clone(), c);
            }
        }
        match op {
            BinOp::Add if cb == Some(0) => a,
            BinOp::Add if ca == Some(0) => b,
            BinOp::Sub if cb == Some(0) => a,
            BinOp::Sub if expr_eq(&a, &b) => Expr::int(a.ty(), 0),
            BinOp::Mul if cb == Some(1) => a,
            BinOp::Mul if ca == Some(1) => b,
            BinOp::Mul if ca == Some(0) => a,
            BinOp::Mul if cb == Some(0) => b,
            _ => Expr::binary(op, a, b),
        }
    }

    fn int_div(&mut self, a: Expr, b: Expr) -> Expr {
        let ty = a.ty();
        let Some(c) = const_int(&b) else {
            if const_int(&a) == Some(0) {
                return a;
            }
            return Expr::div(a, b);
        };
        if c == 0 {
            return Expr::int(ty, 0);
        }
        if c == 1 || const_int(&a) == Some(0) {
            return a;
        }
        if ty == Type::I32 && c > 0 {
            // (x / c1) / c2 == x / (c1 * c2) for positive divisors.
            if let ExprKind::Binary {
                op: BinOp::Div,
                a: x,
                b: c1,
            } = a.kind()
                && let Some(c1) = const_int(c1)
                && c1 > 0
                && (c1 * c).abs() <= i32::MAX as i64
            {
                return self.int_div(x.clone(), Expr::i32(c1 * c));
            }
            let lin = linearize(&a);
            if !lin.is_small() || c > 1 << 24 {
                return Expr::div(a, b);
            }
            // The constant moves into the quotient only when c divides it,
            // so `(w - 1) / 2` stays as written.
            let (kq, kr) = if lin.constant % c == 0 {
                (lin.constant / c, 0)
            } else {
                (0, lin.constant)
            };
            let mut quotient = Linear::constant(ty, kq);
            let mut rest = Linear::constant(ty, kr);
            for (t, k) in &lin.terms {
                if k % c == 0 {
                    quotient.add_term(t, k / c);
                } else {
                    rest.add_term(t, *k);
                }
            }
            let rest_e = rebuild(&rest);
            let (lo, hi) = self.const_interval(&rest_e);
            let rest_is_zero = lo >= 0 && hi < c;
            if rest_is_zero {
                return rebuild(&quotient);
            }
            if quotient.is_constant() && quotient.constant == 0 {
                return Expr::div(a, b);
            }
            let q = rebuild(&quotient);
            let r = Expr::div(rest_e, b);
            return self.binary(BinOp::Add, q, r);
        }
        Expr::div(a, b)
    }

    fn int_mod(&mut self, a: Expr, b: Expr) -> Expr {
        let ty = a.ty();
        let Some(c) = const_int(&b) else {
            if const_int(&a) == Some(0) {
                return a;
            }
            return Expr::modulo(a, b);
        };
        if c == 0 || c == 1 || (ty.is_int() && c == -1) || const_int(&a) == Some(0) {
            return Expr::int(ty, 0);
        }
        if ty == Type::I32 && c > 0 {
            if let ExprKind::Binary {
                op: BinOp::Mod,
                a: x,
                b: c1,
            } = a.kind()
                && let Some(c1) = const_int(c1)
                && c1 > 0
                && c1 % c == 0
            {
                return self.int_mod(x.clone(), b);
            }
            let lin = linearize(&a);
            if !lin.is_small() || c > 1 << 24 {
                return Expr::modulo(a, b);
            }
            // Reduce each coefficient to the representative of smallest
            // magnitude, so nothing grows.
            let reduce = |k: i64| {
                let r = k.rem_euclid(c);
                if r > c / 2 { r - c } else { r }
            };
            let mut reduced = Linear::constant(ty, lin.constant.rem_euclid(c));
            for (t, k) in &lin.terms {
                reduced.add_term(t, reduce(*k));
            }
            let r = rebuild(&reduced);
            if let Some(v) = const_int(&r) {
                return Expr::i32(v.rem_euclid(c));
            }
            let (lo, hi) = self.const_interval(&r);
            if lo >= 0 && hi < c {
                return r;
            }
            return Expr::modulo(r, b);
        }
        let (lo, hi) = self.const_interval(&a);
        if c > 0 && lo >= 0 && hi < c {
            return a;
        }
        Expr::modulo(a, b)
    }

    fn int_min_max(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let ty = a.ty();
        let is_min = op == BinOp::Min;
        if expr_eq(&a, &b) {
            return a;
        }
        let (a, b) = if is_const(&a) && !is_const(&b) {
            (b, a)
        } else {
            (a, b)
        };
        // Idempotence and absorption (exact for every type):
        // min(a, min(a, b)) == min(a, b), min(a, max(a, b)) == a.
        for (x, y) in [(&a, &b), (&b, &a)] {
            if let ExprKind::Binary {
                op: inner,
                a: p,
                b: q,
            } = y.kind()
                && (expr_eq(x, p) || expr_eq(x, q))
            {
                if *inner == op {
                    return y.clone();
                }
                if matches!(
                    (op, inner),
                    (BinOp::Min, BinOp::Max) | (BinOp::Max, BinOp::Min)
                ) {
                    return x.clone();
                }
            }
        }
        let (tlo, thi) = type_range(ty);
        if let Some(c2) = const_int(&b) {
            if (is_min && c2 >= thi) || (!is_min && c2 <= tlo) {
                return a;
            }
            if (is_min && c2 <= tlo) || (!is_min && c2 >= thi) {
                return b;
            }
            if let ExprKind::Binary {
                op: inner,
                a: x,
                b: c1,
            } = a.kind()
                && let Some(c1) = const_int(c1)
            {
                // min(min(x, c1), c2) == min(x, min(c1, c2)).
                if *inner == op {
                    let c = if is_min { c1.min(c2) } else { c1.max(c2) };
                    return self.int_min_max(op, x.clone(), Expr::int(ty, c));
                }
                // min(max(x, c1), c2) == c2 when c1 >= c2.
                if is_min && *inner == BinOp::Max && c1 >= c2
                    || !is_min && *inner == BinOp::Min && c1 <= c2
                {
                    return b;
                }
            }
        }
        // Decide from constant bounds (exact for every type).
        let (ia, ib) = (self.const_interval(&a), self.const_interval(&b));
        if ia.1 <= ib.0 {
            return if is_min { a } else { b };
        }
        if ib.1 <= ia.0 {
            return if is_min { b } else { a };
        }
        if let Some(d) = (ty == Type::I32)
            .then(|| self.exact_small_difference(&a, &b))
            .flatten()
        {
            let (lo, hi) = self.linear_interval(&d);
            if hi <= 0 {
                return if is_min { a } else { b };
            }
            if lo >= 0 {
                return if is_min { b } else { a };
            }
        }
        let (a, b) = if !is_const(&b) && expr_cmp(&a, &b) == Ordering::Greater {
            (b, a)
        } else {
            (a, b)
        };
        Expr::binary(op, a, b)
    }

    fn int_compare(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let ty = a.ty();
        if expr_eq(&a, &b) {
            return Expr::bool(matches!(op, BinOp::Eq | BinOp::Le));
        }
        if ty.is_bool() {
            return Expr::binary(op, a, b);
        }
        // Both sides are taken apart once, for every rule below.
        let (la, lb) = (linearize(&a), linearize(&b));
        let mut d = la.clone();
        d.add(&lb, -1);
        if d.is_constant() && matches!(op, BinOp::Eq | BinOp::Ne) {
            // Exact in the ring: a == b exactly when a - b == 0.
            return Expr::bool((d.constant == 0) == (op == BinOp::Eq));
        }
        let (ia, ib) = (self.const_interval(&a), self.const_interval(&b));
        let decided = match op {
            BinOp::Lt if ia.1 < ib.0 => Some(true),
            BinOp::Lt if ia.0 >= ib.1 => Some(false),
            BinOp::Le if ia.1 <= ib.0 => Some(true),
            BinOp::Le if ia.0 > ib.1 => Some(false),
            BinOp::Eq | BinOp::Ne if ia.1 < ib.0 || ib.1 < ia.0 => Some(op == BinOp::Ne),
            _ => None,
        };
        if let Some(v) = decided {
            return Expr::bool(v);
        }
        // As `small_difference(&a, &b)`, from the forms already at hand.
        let small = (ty == Type::I32
            && la.is_small()
            && lb.is_small()
            && d.is_small()
            && self.sums_exactly(&la)
            && self.sums_exactly(&lb))
        .then_some(d);
        if let Some(d) = small {
            let (lo, hi) = self.linear_interval(&d);
            let decided = match op {
                BinOp::Lt if hi < 0 => Some(true),
                BinOp::Lt if lo >= 0 => Some(false),
                BinOp::Le if hi <= 0 => Some(true),
                BinOp::Le if lo > 0 => Some(false),
                BinOp::Eq | BinOp::Ne if lo > 0 || hi < 0 => Some(op == BinOp::Ne),
                _ => None,
            };
            if let Some(v) = decided {
                return Expr::bool(v);
            }
            if matches!(op, BinOp::Lt | BinOp::Le) {
                // Move constants to one side: x + 3 < y  ==>  x < y - 3.
                if !la.is_constant() && la.constant != 0 {
                    let k = la.constant;
                    let mut na = la;
                    na.constant = 0;
                    let mut nb = lb;
                    nb.constant -= k;
                    if self.sums_exactly(&na) && self.sums_exactly(&nb) {
                        return Expr::binary(op, rebuild(&na), rebuild(&nb));
                    }
                } else if la.is_constant() && !lb.is_constant() && lb.constant != 0 {
                    let k = lb.constant;
                    let mut nb = lb;
                    nb.constant = 0;
                    let moved = Linear::constant(ty, la.constant - k);
                    if moved.constant == la.constant - k && self.sums_exactly(&nb) {
                        return Expr::binary(op, Expr::i32(la.constant - k), rebuild(&nb));
                    }
                }
            }
        }
        let (a, b) = if matches!(op, BinOp::Eq | BinOp::Ne)
            && (is_const(&a) || (!is_const(&b) && expr_cmp(&a, &b) == Ordering::Greater))
        {
            (b, a)
        } else {
            (a, b)
        };
        Expr::binary(op, a, b)
    }

    // ---- statements ---------------------------------------------------------

    /// A chain of directly nested `LetStmt`s at once. Trivial values are
    /// not kept but bound as values that uses of the name take (see
    /// [`Simplifier::lookup_var`]), so the rest is simplified once with
    /// them substituted, rather than substituted and walked once per chain
    /// (quadratic in the nesting depth of the chains lowering produces). A
    /// value that would be captured by a binding below stays a `let`, and
    /// kept lets nothing uses are dropped.
    fn let_chain(&mut self, s: &Stmt) -> Stmt {
        // The chain's lets in order, and whether each was substituted.
        let mut chain: Vec<(String, Expr, bool)> = Vec::new();
        let mut cur = s;
        while let Stmt::LetStmt { name, value, body } = cur {
            let v = self.expr(value);
            let bounds = if v.ty().is_integer() {
                self.const_interval(&v)
            } else {
                (i64::MIN, i64::MAX)
            };
            // A value mentioning the name it is bound to (`let x = x + 1`)
            // is kept: were the let emitted after all (see below), the
            // substituted copies would be captured by it.
            let value = (is_trivial(&v) || is_small_affine(&v, 3))
                .then(|| vars_of(&v))
                .filter(|vars| !vars.iter().any(|u| u == name))
                .map(|vars| (v.clone(), vars));
            let substituted = value.is_some();
            self.push_binding(name, bounds, value);
            chain.push((name.clone(), v, substituted));
            cur = body;
        }
        let rest = self.stmt(cur);
        // Pop the bindings innermost first, keeping the lets something may
        // use: a kept let met during simplification, or a substituted one
        // with a captured use.
        let mut maybe_used: Vec<bool> = Vec::with_capacity(chain.len());
        for (name, _, _) in chain.iter().rev() {
            let b = self.pop_binding(name).expect("pushed above");
            maybe_used.push(if b.value.is_some() {
                b.captured
            } else {
                b.used
            });
        }
        maybe_used.reverse();
        let candidates: Vec<&str> = chain
            .iter()
            .zip(&maybe_used)
            .filter(|(_, m)| **m)
            .map(|((n, _, _), _)| n.as_str())
            .collect();
        let mut live = names_used_in(&rest, &candidates);
        let mut out = rest;
        for ((name, value, _), maybe) in chain.into_iter().zip(maybe_used).rev() {
            if maybe && live.remove(&name) {
                live.extend(vars_of(&value));
                out = Stmt::LetStmt {
                    name,
                    value,
                    body: Box::new(out),
                };
            }
        }
        out
    }

    fn stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::LetStmt { .. } => self.let_chain(s),
            Stmt::Assert { cond, kind, args } => {
                let c = self.expr(cond);
                if const_int(&c) == Some(1) {
                    return Stmt::no_op();
                }
                Stmt::Assert {
                    cond: c,
                    kind: kind.clone(),
                    args: args.iter().map(|a| self.expr(a)).collect(),
                }
            }
            Stmt::ProducerConsumer {
                func,
                producing,
                body,
            } => {
                let b = self.stmt(body);
                if b.is_no_op() {
                    return b;
                }
                Stmt::ProducerConsumer {
                    func: func.clone(),
                    producing: *producing,
                    body: Box::new(b),
                }
            }
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let (m, ext) = (self.expr(min), self.expr(extent));
                if let Some(n) = const_int(&ext) {
                    if n <= 0 {
                        return Stmt::no_op();
                    }
                    if n == 1 {
                        let as_let = Stmt::LetStmt {
                            name: var.clone(),
                            value: m,
                            body: body.clone(),
                        };
                        return self.stmt(&as_let);
                    }
                }
                let (mlo, mhi) = self.const_interval(&m);
                let (_, ehi) = self.const_interval(&ext);
                let hi = if mhi == i64::MAX || ehi == i64::MAX {
                    i64::MAX
                } else {
                    mhi.saturating_add(ehi - 1)
                };
                self.push_bounds(var, (mlo, hi));
                let b = self.stmt(body);
                self.pop_bounds(var);
                if b.is_no_op() {
                    return b;
                }
                Stmt::For {
                    var: var.clone(),
                    min: m,
                    extent: ext,
                    kind: *kind,
                    body: Box::new(b),
                }
            }
            Stmt::Provide { func, args, value } => Stmt::Provide {
                func: func.clone(),
                args: args.iter().map(|a| self.expr(a)).collect(),
                value: self.expr(value),
            },
            Stmt::Realize {
                func,
                ty,
                bounds,
                body,
            } => {
                let bounds = bounds
                    .iter()
                    .map(|r| argent_ir::Range {
                        min: self.expr(&r.min),
                        extent: self.expr(&r.extent),
                    })
                    .collect();
                let b = self.stmt(body);
                if b.is_no_op() {
                    return b;
                }
                Stmt::Realize {
                    func: func.clone(),
                    ty: *ty,
                    bounds,
                    body: Box::new(b),
                }
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => Stmt::Store {
                buffer: buffer.clone(),
                index: self.expr(index),
                value: self.expr(value),
            },
            Stmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => {
                let size = self.expr(size);
                let b = self.stmt(body);
                if b.is_no_op() {
                    return b;
                }
                Stmt::Allocate {
                    buffer: buffer.clone(),
                    ty: *ty,
                    size,
                    body: Box::new(b),
                }
            }
            Stmt::Block(stmts) => Stmt::block(
                stmts
                    .iter()
                    .map(|s| self.stmt(s))
                    .filter(|s| !s.is_no_op())
                    .collect(),
            ),
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond);
                if let Some(v) = const_int(&c) {
                    return if v != 0 {
                        self.stmt(then)
                    } else {
                        otherwise
                            .as_ref()
                            .map(|o| self.stmt(o))
                            .unwrap_or_else(Stmt::no_op)
                    };
                }
                let t = self.stmt(then);
                let o = otherwise
                    .as_ref()
                    .map(|o| self.stmt(o))
                    .filter(|o| !o.is_no_op());
                match (t.is_no_op(), o) {
                    (true, None) => Stmt::no_op(),
                    (true, Some(o)) => {
                        let nc = self.unary(UnaryOp::Not, c);
                        Stmt::IfThenElse {
                            cond: nc,
                            then: Box::new(o),
                            otherwise: None,
                        }
                    }
                    (false, o) => Stmt::IfThenElse {
                        cond: c,
                        then: Box::new(t),
                        otherwise: o.map(Box::new),
                    },
                }
            }
            Stmt::Evaluate(e) => {
                let e = self.expr(e);
                if is_const(&e) {
                    return Stmt::no_op();
                }
                Stmt::Evaluate(e)
            }
        }
    }
}

/// Whether some child of `e` is neither a constant nor a variable.
fn has_composite_child(e: &Expr) -> bool {
    let mut found = false;
    argent_ir::visit::walk_expr(
        &mut ChildKinds(|c: &Expr| {
            found |= !matches!(
                c.kind(),
                ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_)
            )
        }),
        e,
    );
    found
}

/// A visitor calling its closure on each node it is shown (used on the
/// direct children of one node through `walk_expr`).
struct ChildKinds<F>(F);

impl<F: FnMut(&Expr)> Visitor for ChildKinds<F> {
    fn visit_expr(&mut self, e: &Expr) {
        (self.0)(e);
    }
}

/// Whether `a` is the node `b` would be rebuilt as: the same kind, fields
/// and type, with the same child nodes.
fn shallow_same(a: &Expr, b: &Expr) -> bool {
    use ExprKind::*;
    if a.same_as(b) {
        return true;
    }
    if a.ty() != b.ty() {
        return false;
    }
    let same_all =
        |x: &[Expr], y: &[Expr]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.same_as(q));
    match (a.kind(), b.kind()) {
        (
            Cast {
                value: x,
                saturating: s,
            },
            Cast {
                value: y,
                saturating: t,
            },
        ) => s == t && x.same_as(y),
        (Unary { op: o, value: x }, Unary { op: p, value: y }) => o == p && x.same_as(y),
        (
            Binary {
                op: o,
                a: x1,
                b: x2,
            },
            Binary {
                op: p,
                a: y1,
                b: y2,
            },
        ) => o == p && x1.same_as(y1) && x2.same_as(y2),
        (
            Select {
                cond: c1,
                then: t1,
                otherwise: o1,
            },
            Select {
                cond: c2,
                then: t2,
                otherwise: o2,
            },
        ) => c1.same_as(c2) && t1.same_as(t2) && o1.same_as(o2),
        (Call { target: t, args: x }, Call { target: u, args: y }) => t == u && same_all(x, y),
        (
            Let {
                name: n,
                value: v1,
                body: b1,
            },
            Let {
                name: m,
                value: v2,
                body: b2,
            },
        ) => n == m && v1.same_as(v2) && b1.same_as(b2),
        (
            Load {
                buffer: n,
                index: x,
            },
            Load {
                buffer: m,
                index: y,
            },
        ) => n == m && x.same_as(y),
        (
            Ramp {
                base: b1,
                stride: s1,
                lanes: l1,
            },
            Ramp {
                base: b2,
                stride: s2,
                lanes: l2,
            },
        ) => l1 == l2 && b1.same_as(b2) && s1.same_as(s2),
        (Broadcast { value: x, lanes: l }, Broadcast { value: y, lanes: m }) => {
            l == m && x.same_as(y)
        }
        (
            Shuffle {
                vectors: x,
                indices: i,
            },
            Shuffle {
                vectors: y,
                indices: j,
            },
        ) => i == j && same_all(x, y),
        _ => false,
    }
}

/// Whether sums of `ty` are taken apart into linear forms (collected
/// terms, folded constants, a canonical order): the `i32` index arithmetic
/// that bounds, loop partitioning and CSE compare. Sums of pixel values
/// (every other integer type) keep the order and grouping the program gave
/// them, so that a sum written as a cascade of pairs (a gaussian as
/// repeated `[1 1]` filters) reaches the backend as such, and unrolled
/// rows can share its partial sums.
fn takes_linear_forms(ty: Type) -> bool {
    ty == Type::I32
}

/// Values cheap enough to copy into every use. Ramps with a constant
/// stride count too, whatever their base: substituted, loads and stores
/// indexed by them are visibly dense (CSE lifts a shared base again).
fn is_trivial(e: &Expr) -> bool {
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_) => true,
        ExprKind::Broadcast { value, .. } => is_trivial(value),
        ExprKind::Ramp { stride, .. } => is_const(stride),
        _ => false,
    }
}

/// Whether `e` is a scalar integer sum of at most `terms` variables (each
/// maybe times a constant) plus a constant, such as `x.min + 8 * t + 255`.
/// Lowering binds region bounds like these to names; substituting them lets
/// differences such as `(x.min + 8 * t + 255) - (x.min + 8 * t) + 1` fold to
/// constants (constant allocation sizes and strides in steady states),
/// while the substituted expression stays as cheap as the variable read.
fn is_small_affine(e: &Expr, terms: usize) -> bool {
    fn count(e: &Expr, budget: &mut usize) -> bool {
        match e.kind() {
            ExprKind::IntImm(_) => true,
            ExprKind::Var(_) => {
                if *budget == 0 {
                    return false;
                }
                *budget -= 1;
                true
            }
            ExprKind::Binary { op, a, b } => match op {
                BinOp::Add | BinOp::Sub => count(a, budget) && count(b, budget),
                BinOp::Mul => {
                    (is_const(b) && matches!(a.kind(), ExprKind::Var(_)) && count(a, budget))
                        || (is_const(a) && matches!(b.kind(), ExprKind::Var(_)) && count(b, budget))
                }
                _ => false,
            },
            _ => false,
        }
    }
    let mut budget = terms;
    e.ty().is_integer() && e.ty().is_scalar() && count(e, &mut budget)
}

fn count_uses(e: &Expr, name: &str) -> usize {
    crate::count_var_uses(e, name)
}

/// Which of `names` a statement mentions; the walk stops as soon as it
/// has found them all (usually early: lets are used near their binding).
fn names_used_in(s: &Stmt, names: &[&str]) -> crate::fast_hash::FastHashSet<String> {
    struct Names<'a> {
        wanted: &'a [&'a str],
        found: crate::fast_hash::FastHashSet<String>,
    }
    impl Visitor for Names<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if self.found.len() == self.wanted.len() {
                return;
            }
            if let ExprKind::Var(n) = e.kind()
                && self.wanted.contains(&n.as_str())
                && !self.found.contains(n)
            {
                self.found.insert(n.clone());
            }
            walk_expr(self, e);
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            if self.found.len() < self.wanted.len() {
                walk_stmt(self, s);
            }
        }
    }
    let mut wanted: Vec<&str> = names.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut n = Names {
        wanted: &wanted,
        found: Default::default(),
    };
    n.visit_stmt(s);
    n.found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_range_matches_the_types_own_limits() {
        for ty in Type::ALL_SCALAR {
            let expected = if ty.is_integer() || ty.is_bool() {
                (ty.min_value() as i64, ty.max_value() as i64)
            } else {
                (i64::MIN, i64::MAX)
            };
            assert_eq!(type_range(ty), expected, "{ty}");
            assert_eq!(type_range(ty.with_lanes(4)), expected, "{ty} x 4");
        }
    }

    /// Constants added, subtracted or multiplied one after the other fold
    /// into one, wrapped to the type, in pixel arithmetic too (which
    /// otherwise keeps the program's grouping).
    #[test]
    fn constants_applied_in_turn_to_pixel_values_fold() {
        let x = || Expr::var(Type::U8, "x");
        let c = |v: i64| Expr::int(Type::U8, v);
        let cases = [
            (Expr::add(Expr::add(x(), c(1)), c(1)), "(x + u8(2))"),
            (Expr::add(Expr::sub(x(), c(1)), c(1)), "x"),
            (Expr::add(Expr::add(x(), c(200)), c(100)), "(x + u8(44))"),
            (Expr::sub(Expr::add(x(), c(3)), c(5)), "(x + u8(254))"),
            (Expr::mul(Expr::mul(x(), c(16)), c(16)), "u8(0)"),
            (Expr::sub(Expr::sub(x(), c(3)), c(5)), "(x - u8(8))"),
        ];
        for (e, want) in cases {
            assert_eq!(simplify(&e).to_string(), want, "{e}");
        }
        // The value folded by the simplifier equals the value computed
        // step by step, for every u8 and i16 value.
        for ty in [Type::U8, Type::I16] {
            let e = Expr::mul(
                Expr::sub(
                    Expr::add(Expr::var(ty, "v"), Expr::int(ty, 77)),
                    Expr::int(ty, 200),
                ),
                Expr::int(ty, 3),
            );
            let e = Expr::mul(e, Expr::int(ty, 5));
            let folded = simplify(&e);
            for v in [ty.min_value() as i64, -1, 0, 1, 100, ty.max_value() as i64] {
                let v = ty.wrap(v);
                let at = |e: &Expr| {
                    simplify(&argent_ir::visit::substitute(e, "v", &Expr::int(ty, v))).as_int()
                };
                let step_by_step = ty.wrap(ty.wrap(ty.wrap(v + 77) - 200) * 3 * 5);
                assert_eq!(at(&folded), Some(step_by_step), "{ty} {v}: {folded}");
            }
        }
    }

    /// Two conversions fold into one only where the results agree for
    /// every value: through a float to `u32`, negative values saturate to
    /// 0 instead of wrapping (found by a random program).
    #[test]
    fn conversions_through_floats_to_u32_keep_the_float() {
        for t0 in Type::ALL_SCALAR
            .into_iter()
            .filter(|t| t.is_integer() && t.bits < 32)
        {
            let v = Expr::var(t0, "v");
            for to in Type::ALL_SCALAR.into_iter().filter(|t| t.is_integer()) {
                let e = Expr::cast(to, Expr::cast(Type::F32, v.clone()));
                let folded = simplify(&e);
                let lo = t0.min_value() as i64;
                let at = |x: &Expr| {
                    let x = argent_ir::visit::substitute(x, "v", &Expr::int(t0, lo));
                    simplify(&x).as_int()
                };
                assert_eq!(at(&folded), at(&e), "{e} simplified to {folded}");
                // Vectors alike.
                let v = Expr::broadcast(Expr::var(t0, "w"), 4);
                let e = Expr::cast(to.with_lanes(4), Expr::cast(Type::F32.with_lanes(4), v));
                let keeps_float = matches!(simplify(&e).kind(), ExprKind::Cast { value, .. } if value.ty().is_float());
                let wraps_alike = to != Type::U32 || !t0.is_int();
                assert!(
                    keeps_float || wraps_alike,
                    "{e} simplified to {}",
                    simplify(&e)
                );
            }
        }
    }

    /// The memo of `simplify` answers only for the same expression: equal
    /// structure, and floats equal to the bit (`x + 0.0` is not `x`: it
    /// turns -0.0 into 0.0; `x + -0.0` is `x`), from fresh nodes as well.
    #[test]
    fn remembered_simplifications_answer_only_the_same_expression() {
        let x = || Expr::var(Type::F32, "x");
        let plus = |zero: f64| Expr::add(x(), Expr::f32(zero));
        for _ in 0..2 {
            let negative = simplify(&plus(-0.0));
            let positive = simplify(&plus(0.0));
            assert_eq!(negative.to_string(), simplify(&plus(-0.0)).to_string());
            assert_eq!(positive.to_string(), simplify(&plus(0.0)).to_string());
            assert_ne!(negative.to_string(), positive.to_string());
            forget_simplified();
        }
        let y = Expr::var_i32("y");
        let sum = Expr::add(Expr::add(y.clone(), Expr::i32(1)), Expr::i32(2));
        assert_eq!(simplify(&sum).to_string(), "(y + 3)");
        let other = Expr::add(Expr::add(y, Expr::i32(1)), Expr::i32(3));
        assert_eq!(simplify(&other).to_string(), "(y + 4)");
    }

    #[test]
    fn split_linear_reads_the_coefficient_and_the_rest() {
        let (x, y) = (Expr::var_i32("x"), Expr::var_i32("y"));
        // 3 * x + y - 2 - x == 2 * x + (y - 2)
        let e = simplify(&Expr::sub(
            Expr::sub(
                Expr::add(Expr::mul(x.clone(), Expr::i32(3)), y.clone()),
                Expr::i32(2),
            ),
            x.clone(),
        ));
        let (c, rest) = split_linear(&e, "x").expect("linear in x");
        assert_eq!(c, 2);
        assert_eq!(rest.to_string(), "(y - 2)");
        // Under a min, or absent, the variable has no coefficient.
        let clamped = simplify(&Expr::add(Expr::min(x.clone(), y.clone()), x.clone()));
        assert!(split_linear(&clamped, "x").is_none());
        assert!(split_linear(&y, "x").is_none());
    }
}
