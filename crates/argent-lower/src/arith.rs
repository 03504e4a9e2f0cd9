//! Minimal symbolic arithmetic used by lowering: a canonicalising
//! simplifier for the integer index expressions that bounds inference
//! produces, and symbolic interval analysis.
//!
//! The full simplifier and interval analysis live in `argent-arith` (owned
//! by the passes engineer). Lowering needs only the affine subset here to
//! keep bounds expressions readable and to prove facts such as
//! `(y + 1) - (y - 1) + 1 == 3` (storage folding); it can switch to
//! `argent_arith::bounds_of_expr_in_scope` once that API settles.

use argent_arith::fast_hash::FastHashMap;
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Type, UnaryOp};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// An atom of an affine form, ordered structurally. Keying terms by their
/// printed text cost time proportional to the atom's size at every level of
/// every simplification; a structural comparison stops at the first
/// difference (or at once for shared nodes), and any total order keeps the
/// form canonical.
#[derive(Clone, Debug)]
struct TermKey(Expr);

impl PartialEq for TermKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for TermKey {}

impl PartialOrd for TermKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TermKey {
    fn cmp(&self, other: &Self) -> Ordering {
        argent_arith::expr_cmp(&self.0, &other.0)
    }
}

/// An affine form `sum(coef * atom) + constant` over atoms that are not
/// themselves affine (variables, min/max, divisions, calls, ...).
#[derive(Clone, Debug)]
struct Affine {
    terms: BTreeMap<TermKey, (i64, Expr)>,
    constant: i64,
}

impl Affine {
    fn constant(c: i64) -> Affine {
        Affine {
            terms: BTreeMap::new(),
            constant: c,
        }
    }
    fn atom(e: Expr) -> Affine {
        let mut terms = BTreeMap::new();
        terms.insert(TermKey(e.clone()), (1, e));
        Affine { terms, constant: 0 }
    }
    fn add(mut self, other: Affine, sign: i64) -> Affine {
        self.constant = self
            .constant
            .wrapping_add(other.constant.wrapping_mul(sign));
        for (k, (c, e)) in other.terms {
            let entry = self.terms.entry(k).or_insert((0, e));
            entry.0 = entry.0.wrapping_add(c.wrapping_mul(sign));
        }
        self.terms.retain(|_, (c, _)| *c != 0);
        self
    }
    fn scale(mut self, k: i64) -> Affine {
        if k == 0 {
            return Affine::constant(0);
        }
        self.constant = self.constant.wrapping_mul(k);
        for (c, _) in self.terms.values_mut() {
            *c = c.wrapping_mul(k);
        }
        self
    }
    fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }
    fn to_expr(&self, ty: Type) -> Expr {
        let mut out: Option<Expr> = None;
        // Positive terms first so that `a - b` prints as a subtraction.
        let mut terms: Vec<&(i64, Expr)> = self.terms.values().collect();
        terms.sort_by_key(|(c, _)| *c < 0);
        for (c, e) in terms {
            let (mag, neg) = (c.abs(), *c < 0);
            let term = if mag == 1 {
                e.clone()
            } else {
                Expr::mul(e.clone(), Expr::int(ty, mag))
            };
            out = Some(match (out, neg) {
                (None, false) => term,
                (None, true) => Expr::sub(Expr::int(ty, 0), term),
                (Some(acc), false) => Expr::add(acc, term),
                (Some(acc), true) => Expr::sub(acc, term),
            });
        }
        match out {
            None => Expr::int(ty, self.constant),
            Some(acc) if self.constant > 0 => Expr::add(acc, Expr::int(ty, self.constant)),
            Some(acc) if self.constant < 0 => Expr::sub(acc, Expr::int(ty, -self.constant)),
            Some(acc) => acc,
        }
    }
}

/// [`simplify`], then a subtracted expression moved into a `min` or `max`
/// of the sum one of whose operands it equals up to a constant:
/// `min(x, y + c) - y` becomes `min(x - y, c)` (for `max`, for either
/// operand, and for a subtracted `min` too), as Halide's simplifier does.
/// The height of a clamped footprint, `min(y + 1, y_max) - y + 5` in a
/// consumer unrolled by two rows, then has the constant bound 6.
///
/// Only storage folding asks for it. In the simplifier at large, the
/// simpler extents let `partition_loops` split more loops: camera_pipe's
/// IR after partitioning grew from 21 to 31 thousand nodes, and its
/// compile took half as long again.
/// Index arithmetic is assumed not to overflow, as everywhere in lowering.
pub fn simplify_cancelling_min_max(e: &Expr) -> Expr {
    let e = simplify(e);
    if !is_index_type(e.ty()) {
        return e;
    }
    cancel_into_min_max(affine_of(&e)).to_expr(e.ty())
}

fn cancel_into_min_max(f: Affine) -> Affine {
    for (s, m) in f.terms.values() {
        if *s != 1 && *s != -1 {
            continue;
        }
        let ExprKind::Binary {
            op: op @ (BinOp::Min | BinOp::Max),
            a,
            b,
        } = m.kind()
        else {
            continue;
        };
        for (arm, other) in [(b, a), (a, b)] {
            let arm = affine_of(arm);
            // Every atom of the arm must appear in the sum with the
            // opposite sign, so that subtracting it cancels them.
            if arm.terms.is_empty()
                || !arm.terms.iter().all(|(k, (c, _))| {
                    f.terms
                        .get(k)
                        .is_some_and(|(fc, _)| *fc == c.wrapping_mul(-*s))
                })
            {
                continue;
            }
            let mut atoms = arm.clone();
            atoms.constant = 0;
            let other = simplify_binary(BinOp::Sub, other.clone(), atoms.to_expr(Type::I32));
            let folded = simplify_binary(*op, other, Expr::int(Type::I32, arm.constant));
            let s = *s;
            return f
                .clone()
                .add(Affine::atom(m.clone()), -s)
                .add(atoms, s)
                .add(affine_of(&folded), s);
        }
    }
    f
}

fn is_index_type(ty: Type) -> bool {
    ty == Type::I32
}

/// Affine form of an already simplified `i32` expression.
fn affine_of(e: &Expr) -> Affine {
    match e.kind() {
        ExprKind::IntImm(v) => Affine::constant(*v),
        ExprKind::Binary { op, a, b } => match op {
            BinOp::Add => affine_of(a).add(affine_of(b), 1),
            BinOp::Sub => affine_of(a).add(affine_of(b), -1),
            BinOp::Mul => {
                let (fa, fb) = (affine_of(a), affine_of(b));
                match (fa.as_const(), fb.as_const()) {
                    (_, Some(k)) => fa.scale(k),
                    (Some(k), _) => fb.scale(k),
                    _ => Affine::atom(e.clone()),
                }
            }
            _ => Affine::atom(e.clone()),
        },
        ExprKind::Unary {
            op: UnaryOp::Neg,
            value,
        } => affine_of(value).scale(-1),
        _ => Affine::atom(e.clone()),
    }
}

/// How many simplified nodes [`simplify`] remembers before forgetting them all.
const SIMPLIFY_MEMO_LIMIT: usize = 1 << 18;

thread_local! {
    /// Results of [`simplify`] by node identity. Bounds inference builds
    /// bounds from bounds that are already simplified and simplifies the
    /// whole again at every level; remembering the shared subtrees makes
    /// that linear. Each entry holds its key node, so the address cannot be
    /// reused by another node while the entry lives.
    /// Keyed by address with the fast hasher: SipHash showed in profiles.
    static SIMPLIFY_MEMO: std::cell::RefCell<FastHashMap<usize, (Expr, Expr)>> =
        std::cell::RefCell::new(FastHashMap::default());
}

/// Forget the results that [`simplify`] remembers (they stay correct, but a
/// new lowering has no use for the last one's).
pub fn forget_simplifications() {
    SIMPLIFY_MEMO.with(|m| m.borrow_mut().clear());
    SIZE_MEMO.with(|m| m.borrow_mut().clear());
}

/// Simplify an expression: constant folding, affine canonicalisation of
/// `i32` arithmetic, and min/max/select/comparison folding where the
/// difference of the operands is a known constant.
pub fn simplify(e: &Expr) -> Expr {
    // Leaves simplify to themselves; no need to remember them.
    if matches!(
        e.kind(),
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_)
    ) {
        return e.clone();
    }
    let id = e.node() as *const _ as usize;
    if let Some(done) = SIMPLIFY_MEMO.with(|m| m.borrow().get(&id).map(|(_, r)| r.clone())) {
        return done;
    }
    let result = simplify_uncached(e);
    SIMPLIFY_MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= SIMPLIFY_MEMO_LIMIT {
            m.clear();
        }
        m.insert(id, (e.clone(), result.clone()));
        // Simplified expressions are built upon again (bounds of bounds);
        // they are their own simplification.
        let result_id = result.node() as *const _ as usize;
        m.entry(result_id)
            .or_insert_with(|| (result.clone(), result.clone()));
    });
    result
}

fn simplify_uncached(e: &Expr) -> Expr {
    let ty = e.ty();
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_) => e.clone(),
        ExprKind::Binary { op, a, b } => {
            let (a, b) = (simplify(a), simplify(b));
            simplify_binary(*op, a, b)
        }
        ExprKind::Unary { op, value } => {
            let v = simplify(value);
            match (op, v.as_int()) {
                (UnaryOp::Neg, Some(c)) if is_index_type(ty) => Expr::int(ty, -c),
                (UnaryOp::Not, Some(c)) => Expr::bool(c == 0),
                _ if *op == UnaryOp::Neg && is_index_type(ty) => {
                    affine_of(&v).scale(-1).to_expr(ty)
                }
                _ => Expr::unary(*op, v),
            }
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            let (c, t, o) = (simplify(cond), simplify(then), simplify(otherwise));
            match c.as_int() {
                Some(0) => o,
                Some(_) => t,
                None if t == o => t,
                None => Expr::select(c, t, o),
            }
        }
        ExprKind::Cast { value, saturating } => {
            let v = simplify(value);
            if v.ty() == ty {
                return v;
            }
            if let (Some(f), true) = (v.as_float(), ty == Type::I32) {
                // Float to i32: truncate toward zero after saturating.
                let t = f.trunc().clamp(i32::MIN as f64, i32::MAX as f64);
                if f.is_finite() {
                    return Expr::i32(t as i64);
                }
            }
            if let (Some(c), true) = (v.as_int(), ty == Type::F32) {
                return Expr::f32(c as f32 as f64);
            }
            match v.as_int() {
                Some(c) if ty.is_integer() && !saturating => Expr::int(ty, c),
                _ => Expr::new(
                    ty,
                    ExprKind::Cast {
                        value: v,
                        saturating: *saturating,
                    },
                ),
            }
        }
        ExprKind::Call { target, args } => {
            let args: Vec<Expr> = args.iter().map(simplify).collect();
            if let CallTarget::Intrinsic(Intrinsic::Likely) = target {
                if args[0].is_const() {
                    return args[0].clone();
                }
            }
            if let (CallTarget::Intrinsic(i), Some(x)) =
                (target, args.first().and_then(|a| a.as_float()))
            {
                let x = x as f32;
                let v = match i {
                    Intrinsic::Floor => Some(x.floor()),
                    Intrinsic::Ceil => Some(x.ceil()),
                    Intrinsic::Trunc => Some(x.trunc()),
                    _ => None,
                };
                if let Some(v) = v {
                    return Expr::f32(v as f64);
                }
            }
            Expr::call(ty, target.clone(), args)
        }
        ExprKind::Let { name, value, body } => {
            Expr::let_in(name.clone(), simplify(value), simplify(body))
        }
        _ => e.clone(),
    }
}

fn simplify_binary(op: BinOp, a: Expr, b: Expr) -> Expr {
    let ty = a.ty();
    if ty == Type::F32 {
        if let (Some(x), Some(y)) = (a.as_float(), b.as_float()) {
            let (x, y) = (x as f32, y as f32);
            let v = match op {
                BinOp::Add => Some(x + y),
                BinOp::Sub => Some(x - y),
                BinOp::Mul => Some(x * y),
                BinOp::Div => Some(x / y),
                BinOp::Min => Some(if x < y { x } else { y }),
                BinOp::Max => Some(if x > y { x } else { y }),
                _ => None,
            };
            if let Some(v) = v.filter(|v| v.is_finite()) {
                return Expr::f32(v as f64);
            }
        }
        if matches!(op, BinOp::Min | BinOp::Max) && a == b {
            return a;
        }
    }
    if is_index_type(ty) {
        match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul => {
                let f = affine_of(&Expr::binary(op, a.clone(), b.clone()));
                return f.to_expr(ty);
            }
            BinOp::Div | BinOp::Mod => {
                if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
                    let v = if y == 0 {
                        0
                    } else if op == BinOp::Div {
                        x.div_euclid(y)
                    } else {
                        x.rem_euclid(y)
                    };
                    return Expr::int(ty, v);
                }
                if b.as_int() == Some(1) {
                    return if op == BinOp::Div {
                        a
                    } else {
                        Expr::int(ty, 0)
                    };
                }
                // (x * k + c) / k == x + c / k when k divides the multiple exactly.
                if op == BinOp::Div {
                    if let Some(k) = b.as_int().filter(|k| *k > 0) {
                        let f = affine_of(&a);
                        if f.terms.values().all(|(c, _)| c % k == 0) {
                            let mut q = f.clone();
                            for (c, _) in q.terms.values_mut() {
                                *c /= k;
                            }
                            q.constant = f.constant.div_euclid(k);
                            return q.to_expr(ty);
                        }
                    }
                }
            }
            BinOp::Min | BinOp::Max => {
                if a == b {
                    return a;
                }
                let diff = affine_of(&a).add(affine_of(&b), -1);
                if let Some(d) = diff.as_const() {
                    let a_smaller = d <= 0;
                    return if (op == BinOp::Min) == a_smaller {
                        a
                    } else {
                        b
                    };
                }
                // Division by a positive constant is monotonic: of `x / k` and
                // `(x + c) / k`, the one with the larger numerator is not
                // smaller (the bounds of an upsampling index `(x + 1) / 2`
                // collapse so, level after level of a pyramid).
                if let (
                    ExprKind::Binary {
                        op: BinOp::Div,
                        a: x,
                        b: k1,
                    },
                    ExprKind::Binary {
                        op: BinOp::Div,
                        a: y,
                        b: k2,
                    },
                ) = (a.kind(), b.kind())
                {
                    if k1.as_int().is_some_and(|k| k > 0) && k1 == k2 {
                        let diff = affine_of(x).add(affine_of(y), -1);
                        if let Some(d) = diff.as_const() {
                            let a_smaller = d <= 0;
                            return if (op == BinOp::Min) == a_smaller {
                                a
                            } else {
                                b
                            };
                        }
                    }
                }
                // Monotonic operators distribute: min(max(x, m), max(y, m)) ==
                // max(min(x, y), m), and likewise for the other three
                // combinations. Unions of clamped stencil taps collapse so.
                if let (
                    ExprKind::Binary {
                        op: oa,
                        a: x,
                        b: m1,
                    },
                    ExprKind::Binary {
                        op: ob,
                        a: y,
                        b: m2,
                    },
                ) = (a.kind(), b.kind())
                {
                    if oa == ob && matches!(oa, BinOp::Min | BinOp::Max) && m1 == m2 {
                        let inner = simplify_binary(op, x.clone(), y.clone());
                        return simplify_binary(*oa, inner, m1.clone());
                    }
                }
                // min(max(x, b), b) == b and max(min(x, b), b) == b.
                let other = if op == BinOp::Min {
                    BinOp::Max
                } else {
                    BinOp::Min
                };
                if let ExprKind::Binary {
                    op: inner,
                    a: x,
                    b: y,
                } = a.kind()
                {
                    if *inner == other && (*x == b || *y == b) {
                        return b;
                    }
                }
                if let ExprKind::Binary {
                    op: inner,
                    a: x,
                    b: y,
                } = b.kind()
                {
                    if *inner == other && (*x == a || *y == a) {
                        return a;
                    }
                }
                // min(min(x, b), b) == min(x, b).
                if let ExprKind::Binary {
                    op: inner,
                    a: x,
                    b: y,
                } = a.kind()
                {
                    if *inner == op && (*x == b || *y == b) {
                        return a;
                    }
                }
                if let ExprKind::Binary {
                    op: inner,
                    a: x,
                    b: y,
                } = b.kind()
                {
                    if *inner == op && (*x == a || *y == a) {
                        return b;
                    }
                }
                // min(select(c, x, y), select(c, z, w)) ==
                // select(c, min(x, z), min(y, w)): unions of reads under one
                // guard stay one select.
                if let (
                    ExprKind::Select {
                        cond: c1,
                        then: x,
                        otherwise: y,
                    },
                    ExprKind::Select {
                        cond: c2,
                        then: z,
                        otherwise: w,
                    },
                ) = (a.kind(), b.kind())
                    && c1 == c2
                {
                    return Expr::select(
                        c1.clone(),
                        simplify_binary(op, x.clone(), z.clone()),
                        simplify_binary(op, y.clone(), w.clone()),
                    );
                }
                // A chain `min(min(x, y), z)` (what unions of many reads
                // build) keeps only the operands that no other operand is
                // known to be below (above for `max`), so that unions of
                // taps at constant distances stay one operand per shape.
                if let Some(e) = drop_dominated_operands(op, &a, &b) {
                    return e;
                }
                // min(min(x, c1), c2) == min(x, min(c1, c2)) for constants.
                if let (
                    ExprKind::Binary {
                        op: inner,
                        a: x,
                        b: c1,
                    },
                    Some(c2),
                ) = (a.kind(), b.as_int())
                {
                    if *inner == op {
                        if let Some(c1) = c1.as_int() {
                            let c = if op == BinOp::Min {
                                c1.min(c2)
                            } else {
                                c1.max(c2)
                            };
                            return Expr::binary(op, x.clone(), Expr::int(ty, c));
                        }
                    }
                }
            }
            op if op.is_comparison() => {
                let diff = affine_of(&a).add(affine_of(&b), -1);
                if let Some(d) = diff.as_const() {
                    let v = match op {
                        BinOp::Eq => d == 0,
                        BinOp::Ne => d != 0,
                        BinOp::Lt => d < 0,
                        BinOp::Le => d <= 0,
                        BinOp::Gt => d > 0,
                        _ => d >= 0,
                    };
                    return Expr::bool(v);
                }
            }
            _ => {}
        }
    }
    if ty.is_bool() {
        match (op, a.as_int(), b.as_int()) {
            (BinOp::And, Some(0), _) | (BinOp::And, _, Some(0)) => return Expr::bool(false),
            (BinOp::And, Some(_), _) => return b,
            (BinOp::And, _, Some(_)) => return a,
            (BinOp::Or, Some(0), _) => return b,
            (BinOp::Or, _, Some(0)) => return a,
            (BinOp::Or, Some(_), _) | (BinOp::Or, _, Some(_)) => return Expr::bool(true),
            _ => {}
        }
    }
    Expr::binary(op, a, b)
}

/// Whether `x <= y` is known from their difference being constant:
/// `Some(true)` when `x <= y`, `Some(false)` when `x > y`, `None` when the
/// difference is not constant. Quotients by the same positive constant
/// compare by their numerators (division by it is monotonic).
fn known_order(x: &Expr, y: &Expr) -> Option<bool> {
    if let Some(d) = affine_of(x).add(affine_of(y), -1).as_const() {
        return Some(d <= 0);
    }
    match (x.kind(), y.kind()) {
        (
            ExprKind::Binary {
                op: BinOp::Div,
                a: nx,
                b: kx,
            },
            ExprKind::Binary {
                op: BinOp::Div,
                a: ny,
                b: ky,
            },
        ) if kx.as_int().is_some_and(|k| k > 0) && kx == ky => {
            let d = affine_of(nx).add(affine_of(ny), -1).as_const()?;
            Some(d <= 0)
        }
        _ => None,
    }
}

/// Operands of nested `op` nodes (`min` or `max`), left to right.
fn chain_operands(op: BinOp, e: &Expr, out: &mut Vec<Expr>) {
    match e.kind() {
        ExprKind::Binary { op: o, a, b } if *o == op => {
            chain_operands(op, a, out);
            chain_operands(op, b, out);
        }
        _ => out.push(e.clone()),
    }
}

/// `op(a, b)` (`min` or `max`, at least one of them a chain of `op`) with
/// the operands dropped that another operand makes redundant, or `None`
/// when none is. Long chains on both sides are left alone so that the
/// comparisons stay cheap.
fn drop_dominated_operands(op: BinOp, a: &Expr, b: &Expr) -> Option<Expr> {
    let is_chain = |e: &Expr| matches!(e.kind(), ExprKind::Binary { op: o, .. } if *o == op);
    if !is_chain(a) && !is_chain(b) {
        return None;
    }
    // Both are simplified, so the operands within each are already
    // independent: only pairs across the two need comparing.
    let (mut kept, mut added) = (Vec::new(), Vec::new());
    chain_operands(op, a, &mut kept);
    chain_operands(op, b, &mut added);
    if kept.len() * added.len() > 256 {
        return None;
    }
    let mut dropped = false;
    for x in added {
        // `x` is redundant when a kept operand is at least as small (for
        // `min`; as large for `max`); it replaces the kept ones it beats.
        let keeps = |k: &Expr| match known_order(k, &x) {
            Some(k_le_x) => k_le_x == (op == BinOp::Min),
            None => false,
        };
        if kept.iter().any(keeps) {
            dropped = true;
            continue;
        }
        let before = kept.len();
        kept.retain(|k| known_order(&x, k).is_none());
        dropped |= kept.len() != before;
        kept.push(x);
    }
    if !dropped {
        return None;
    }
    kept.into_iter().reduce(|acc, x| Expr::binary(op, acc, x))
}

/// Whether `cond` is true up to some value of `var` and false from there
/// on: `a < b` or `a <= b` with `a` growing and `b` not (or the reverse).
fn holds_then_fails(cond: &Expr, var: &str) -> bool {
    use Monotonic::*;
    match cond.kind() {
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } => holds_then_fails(&args[0], var),
        ExprKind::Binary {
            op: BinOp::Lt | BinOp::Le,
            a,
            b,
        } => matches!(
            (monotonic(a, var), monotonic(b, var)),
            (Increasing, Constant) | (Constant, Decreasing) | (Increasing, Decreasing)
        ),
        _ => false,
    }
}

/// Whether `y >= x` is known: `y` is `max(x, ..)` or exceeds `x` by a
/// constant.
fn never_below(y: &Expr, x: &Expr) -> bool {
    match y.kind() {
        ExprKind::Binary {
            op: BinOp::Max,
            a,
            b,
        } if a == x || b == x => true,
        _ => known_order(x, y) == Some(true),
    }
}

/// The constant value of an `i32` expression after simplification.
pub fn const_int(e: &Expr) -> Option<i64> {
    simplify(e).as_int()
}

/// A closed interval `[min, max]` of symbolic bounds; `None` is unbounded.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub min: Option<Expr>,
    pub max: Option<Expr>,
}

impl Interval {
    /// The interval containing exactly `e`.
    pub fn point(e: Expr) -> Interval {
        Interval {
            min: Some(e.clone()),
            max: Some(e),
        }
    }
    /// The interval with no known bounds.
    pub fn everything() -> Interval {
        Interval {
            min: None,
            max: None,
        }
    }
    /// `[min, max]` from both bounds.
    pub fn new(min: Expr, max: Expr) -> Interval {
        Interval {
            min: Some(min),
            max: Some(max),
        }
    }
    pub fn is_bounded(&self) -> bool {
        self.min.is_some() && self.max.is_some()
    }
    /// The smallest interval containing both.
    pub fn union(&self, other: &Interval) -> Interval {
        let lo = match (&self.min, &other.min) {
            (Some(a), Some(b)) => Some(simplify(&Expr::min(a.clone(), b.clone()))),
            _ => None,
        };
        let hi = match (&self.max, &other.max) {
            (Some(a), Some(b)) => Some(simplify(&Expr::max(a.clone(), b.clone()))),
            _ => None,
        };
        Interval { min: lo, max: hi }
    }
    fn of_type(ty: Type) -> Interval {
        if ty.is_bool() {
            return Interval::new(Expr::i32(0), Expr::i32(1));
        }
        if ty.is_integer() && ty.bits < 32 {
            return Interval::new(
                Expr::i32(ty.min_value() as i64),
                Expr::i32(ty.max_value() as i64),
            );
        }
        Interval::everything()
    }
}

/// Variables with known ranges while analysing a statement: loop
/// variables and let-bound names. Later entries shadow earlier ones.
///
/// Let-bound names are pushed unevaluated ([`Scope::push_lazy`]) and their
/// bounds computed on first use: a walk over a large loop nest then pays
/// only for the lets that the expressions it bounds actually use. With
/// [`Scope::naming`], bounds larger than a few nodes are bound to fresh
/// names (`let outg_3.s0.x.min.lo.7 = ..`) collected in order in
/// [`Scope::named`]: a chain of lets, each naming the last (a pyramid's
/// regions), would otherwise expand into expressions that grow with every
/// link.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    entries: Vec<(String, Entry)>,
    naming: Option<Naming>,
    funcs: Option<std::sync::Arc<FuncValues>>,
    /// How many func definitions [`bounds_of_expr`] is inside, and how
    /// many it has followed for the outermost call (see [`FuncValues`]).
    definition_depth: u32,
    definitions_followed: u32,
}

/// The pure definitions of a pipeline's funcs, by name, so that a value
/// loaded from a func is bounded by its definition. A func computed at the
/// root and read as a coordinate (a bilateral grid's `cell(x, y)` or
/// `gray(x, y)`) is then bounded wherever it is computed, as it is when
/// inlined.
///
/// Two bounds, the cheaper first: the definition's values over its whole
/// domain (Halide's `func_value_bounds`; `gray`'s clamp gives [0, 1]),
/// computed once per func; and, where that is unbounded, the definition
/// over the ranges of the arguments actually read (a resize's first tap
/// `begin_x(x)` follows `x`), within limits (see [`definition_bounds`]).
/// Funcs with update definitions are left out: their values are bounded
/// by their type only.
#[derive(Debug, Default)]
pub struct FuncValues {
    definitions: FastHashMap<String, (Vec<String>, Expr)>,
    whole_domain: std::sync::Mutex<FastHashMap<String, Interval>>,
}

impl FuncValues {
    pub fn of(pipeline: &argent_ir::Pipeline) -> std::sync::Arc<FuncValues> {
        let definitions = pipeline
            .funcs
            .iter()
            .filter(|f| f.updates.is_empty())
            .map(|f| (f.name.clone(), (f.args.clone(), f.value.clone())))
            .collect();
        std::sync::Arc::new(FuncValues {
            definitions,
            whole_domain: Default::default(),
        })
    }

    /// The bounds of `func`'s values over its whole domain, computed on
    /// first use (funcs only call funcs defined before them, so this
    /// recursion ends).
    fn whole_domain(self: &std::sync::Arc<Self>, func: &str) -> Option<Interval> {
        if let Some(known) = self.whole_domain.lock().unwrap().get(func) {
            return Some(known.clone());
        }
        let (vars, value) = self.definitions.get(func)?;
        let mut scope = Scope::default().with_func_values(self);
        // Its variables range over everything (unbound, they would stay
        // symbolic), and calls inside use their own whole-domain bounds.
        for var in vars {
            scope.push(var, Interval::everything());
        }
        scope.definition_depth = MAX_DEFINITION_DEPTH;
        let bounds = bounds_of_expr(value, &mut scope);
        self.whole_domain
            .lock()
            .unwrap()
            .insert(func.to_string(), bounds.clone());
        Some(bounds)
    }
}

#[derive(Clone, Debug)]
enum Entry {
    Known(Interval),
    Lazy(Expr),
}

#[derive(Clone, Debug)]
struct Naming {
    label: &'static str,
    counter: usize,
    lets: Vec<(String, Expr)>,
}

impl Scope {
    pub fn push(&mut self, name: &str, interval: Interval) {
        self.entries
            .push((name.to_string(), Entry::Known(interval)));
    }
    /// Bound loads from funcs by their definitions (see [`FuncValues`]).
    pub fn with_func_values(mut self, funcs: &std::sync::Arc<FuncValues>) -> Scope {
        self.funcs = Some(funcs.clone());
        self
    }
    /// Bind `name` to `value`, whose bounds are computed on first use.
    pub fn push_lazy(&mut self, name: &str, value: Expr) {
        self.entries.push((name.to_string(), Entry::Lazy(value)));
    }
    pub fn pop(&mut self) {
        self.entries.pop();
    }
    /// Whether `name` is bound.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|(n, _)| n == name)
    }
    /// The bounds of `name`, computing them if it is a lazy let.
    pub fn get(&mut self, name: &str) -> Option<Interval> {
        let i = self.entries.iter().rposition(|(n, _)| n == name)?;
        let value = match &self.entries[i].1 {
            Entry::Known(iv) => return Some(iv.clone()),
            Entry::Lazy(v) => v.clone(),
        };
        // Bound the value in the scope where it was bound (a let may refer
        // to an outer binding of its own name).
        let tail = self.entries.split_off(i);
        let iv = bounds_of_expr(&value, self);
        let iv = Interval {
            min: self.name_bound(name, "lo", iv.min),
            max: self.name_bound(name, "hi", iv.max),
        };
        self.entries.extend(tail);
        self.entries[i].1 = Entry::Known(iv.clone());
        Some(iv)
    }
    /// Name large bounds of lets from now on (see the type's doc); the
    /// label and counter keep the names unique.
    pub fn naming(mut self, label: &'static str, counter: usize) -> Scope {
        self.naming = Some(Naming {
            label,
            counter,
            lets: Vec::new(),
        });
        self
    }
    /// The names bound so far, in dependency order, and the next counter.
    pub fn named(&self) -> (Vec<(String, Expr)>, usize) {
        match &self.naming {
            Some(n) => (n.lets.clone(), n.counter),
            None => (Vec::new(), 0),
        }
    }
    fn name_bound(&mut self, let_name: &str, suffix: &str, bound: Option<Expr>) -> Option<Expr> {
        let b = bound?;
        let Some(n) = &mut self.naming else {
            return Some(b);
        };
        if node_count_below(&b, 40) {
            return Some(b);
        }
        n.counter += 1;
        let name = format!("{let_name}.{}{suffix}.{}", n.label, n.counter);
        n.lets.push((name.clone(), b));
        Some(Expr::var_i32(name))
    }
}

fn map2(a: &Option<Expr>, b: &Option<Expr>, f: impl Fn(Expr, Expr) -> Expr) -> Option<Expr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(simplify(&f(a.clone(), b.clone()))),
        _ => None,
    }
}

/// Symbolic bounds of `e` when the variables in `scope` range over their
/// intervals. Integer results are expressed as `i32`; values whose range is
/// unknown (loads, float arithmetic) fall back to the range of their type.
pub fn bounds_of_expr(e: &Expr, scope: &mut Scope) -> Interval {
    let ty = e.ty();
    let result = match e.kind() {
        ExprKind::IntImm(v) => Interval::point(Expr::i32(*v)),
        ExprKind::FloatImm(_) => Interval::point(e.clone()),
        ExprKind::Var(name) => match scope.get(name) {
            Some(i) => i,
            None if ty.is_integer() && ty.bits <= 32 && ty != Type::U32 => {
                Interval::point(Expr::cast(Type::I32, e.clone()))
            }
            None if ty.is_float() => Interval::point(e.clone()),
            None => Interval::of_type(ty),
        },
        ExprKind::Binary { op, a, b } if ty.is_float() => {
            let (ia, ib) = (bounds_of_expr(a, scope), bounds_of_expr(b, scope));
            float_bounds(*op, &ia, &ib)
        }
        // A clamp `max(min(x, hi), lo)` takes each end of x's range to the
        // nearest point of [lo, hi]. Intersecting x's range with [lo, hi]
        // would be wrong: loop synthesis clamps split and fused variables
        // so, and in the tail of a split larger than its loop x lies wholly
        // outside [lo, hi], where the clamp is an endpoint, not nothing.
        ExprKind::Binary {
            op: BinOp::Max,
            a,
            b: lo,
        } if ty == Type::I32 && matches!(a.kind(), ExprKind::Binary { op: BinOp::Min, .. }) => {
            let ExprKind::Binary { a: x, b: hi, .. } = a.kind() else {
                unreachable!()
            };
            let (l, h) = (bounds_of_expr(lo, scope), bounds_of_expr(hi, scope));
            let inner = bounds_of_expr(x, scope);
            clamp_bounds(&inner, &l, &h)
        }
        // `max(a, -a)` is `|a|` (mirror boundary conditions are written so).
        // Bounding the two operands separately forgets that they are the
        // same value and gives a lower bound of about `-max(|a|)`; a
        // mirrored coordinate `e - |a|` then seems to reach twice past the
        // edge, and the input looks too small.
        ExprKind::Binary {
            op: op @ (BinOp::Max | BinOp::Min),
            a,
            b,
        } if ty.is_int() && is_negation_of(a, b) => {
            let magnitude = abs_bounds(&bounds_of_expr(a, scope));
            if *op == BinOp::Max {
                magnitude
            } else {
                // `min(a, -a)` is `-|a|`.
                Interval {
                    min: magnitude.max.map(|m| simplify(&Expr::sub(Expr::i32(0), m))),
                    max: magnitude.min.map(|m| simplify(&Expr::sub(Expr::i32(0), m))),
                }
            }
        }
        // `min(c, k - c)` (how `mirror_image` folds a coordinate back):
        // bounding the operands separately gives `k` as the upper bound,
        // twice past the edge, and the input looks too small. One operand
        // is inside the other; when their sum is invariant the result
        // is at most `k / 2` (see `reflection_bounds`).
        ExprKind::Binary {
            op: op @ (BinOp::Min | BinOp::Max),
            a,
            b,
        } if ty == Type::I32 && (contains_operand(a, b) || contains_operand(b, a)) => {
            let (ia, ib) = (bounds_of_expr(a, scope), bounds_of_expr(b, scope));
            let separate = binary_bounds(*op, &ia, &ib, b);
            if is_point(&ia) || is_point(&ib) {
                // Exact already (or nothing to fold).
                separate
            } else {
                reflection_bounds(*op, a, b, separate, scope)
            }
        }
        ExprKind::Binary { op, a, b } if ty.is_integer() => {
            let (ia, ib) = (bounds_of_expr(a, scope), bounds_of_expr(b, scope));
            binary_bounds(*op, &ia, &ib, b)
        }
        ExprKind::Binary { .. } => Interval::everything(),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            value,
        } if ty.is_int() => {
            let i = bounds_of_expr(value, scope);
            Interval {
                min: i.max.map(|m| simplify(&Expr::sub(Expr::i32(0), m))),
                max: i.min.map(|m| simplify(&Expr::sub(Expr::i32(0), m))),
            }
        }
        ExprKind::Unary { .. } => Interval::everything(),
        ExprKind::Select {
            then, otherwise, ..
        } => bounds_of_expr(then, scope).union(&bounds_of_expr(otherwise, scope)),
        ExprKind::Cast { value, saturating } => {
            let from = value.ty();
            if ty.is_integer()
                && (from.is_integer() || from.is_bool())
                && Type::can_represent(ty, from)
            {
                bounds_of_expr(value, scope)
            } else if ty.is_float() || (ty == Type::I32 && from.is_float()) {
                // Conversions to float, and float to i32 (truncation after
                // saturation), are monotonic: convert the endpoints.
                let i = bounds_of_expr(value, scope);
                let conv = |x: Option<Expr>| {
                    x.map(|x| {
                        simplify(&Expr::new(
                            ty,
                            ExprKind::Cast {
                                value: x,
                                saturating: *saturating,
                            },
                        ))
                    })
                };
                Interval {
                    min: conv(i.min),
                    max: conv(i.max),
                }
            } else {
                Interval::everything()
            }
        }
        ExprKind::Call {
            target:
                CallTarget::Intrinsic(
                    i @ (Intrinsic::Floor
                    | Intrinsic::Ceil
                    | Intrinsic::Round
                    | Intrinsic::Trunc
                    | Intrinsic::Sqrt
                    | Intrinsic::Exp),
                ),
            args,
        } if ty.is_float() => {
            let iv = bounds_of_expr(&args[0], scope);
            let app = |x: Option<Expr>| x.map(|x| simplify(&Expr::intrinsic(ty, *i, vec![x])));
            Interval {
                min: app(iv.min),
                max: app(iv.max),
            }
        }
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Abs),
            args,
        } if ty.is_integer() && args[0].ty().is_integer() => {
            abs_bounds(&bounds_of_expr(&args[0], scope))
        }
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } => bounds_of_expr(&args[0], scope),
        ExprKind::Let { name, value, body } => {
            scope.push_lazy(name, value.clone());
            let b = bounds_of_expr(body, scope);
            scope.pop();
            b
        }
        ExprKind::Call {
            target: CallTarget::Func(func),
            args,
        } => definition_bounds(func, args, scope).unwrap_or_else(Interval::everything),
        _ => Interval::everything(),
    };
    // Bounds whose expressions grow past a size limit are dropped (which is
    // sound): products and selects of deep float code would otherwise grow
    // exponentially with the depth of the expression.
    let limit = if ty.is_float() { 256 } else { 2000 };
    let small = |x: Option<Expr>| x.filter(|x| node_count_below(x, limit));
    let result = Interval {
        min: small(result.min),
        max: small(result.max),
    };
    // Narrow types are never wider than their own range, whatever the
    // operation (this is what bounds data-dependent indices like `cdf(img(x, y))`).
    let type_range = Interval::of_type(ty);
    Interval {
        min: result.min.or(type_range.min),
        max: result.max.or(type_range.max),
    }
}

/// How deep, and how many definitions for one call, [`definition_bounds`]
/// follows at the arguments' ranges: a resize's `begin_x(x)` reads
/// `source_x(x)` when both are computed at the root, but a pyramid level
/// reads the last level many times per point, and following every read
/// multiplies.
const MAX_DEFINITION_DEPTH: u32 = 3;
const MAX_DEFINITIONS_FOLLOWED: u32 = 16;

/// Bounds of `func(args)` from `func`'s definition (see [`FuncValues`]):
/// over its whole domain, or, where that is unbounded, over the bounds of
/// `args` (within [`MAX_DEFINITION_DEPTH`] and
/// [`MAX_DEFINITIONS_FOLLOWED`]). `None` when the scope has no
/// definitions or `func` has none.
fn definition_bounds(func: &str, args: &[Expr], scope: &mut Scope) -> Option<Interval> {
    let funcs = scope.funcs.clone()?;
    let whole = funcs.whole_domain(func)?;
    if whole.is_bounded() || scope.definition_depth >= MAX_DEFINITION_DEPTH {
        return Some(whole);
    }
    // The definitions followed for one call at the top, at most.
    if scope.definition_depth == 0 {
        scope.definitions_followed = 0;
    }
    if scope.definitions_followed >= MAX_DEFINITIONS_FOLLOWED {
        return Some(whole);
    }
    scope.definitions_followed += 1;
    let (vars, value) = funcs.definitions.get(func)?;
    if vars.len() != args.len() {
        return Some(whole);
    }
    let ranges: Vec<Interval> = args.iter().map(|a| bounds_of_expr(a, scope)).collect();
    for (var, range) in vars.iter().zip(ranges) {
        scope.push(var, range);
    }
    scope.definition_depth += 1;
    let at_args = bounds_of_expr(value, scope);
    scope.definition_depth -= 1;
    for _ in vars {
        scope.pop();
    }
    Some(Interval {
        min: at_args.min.or(whole.min),
        max: at_args.max.or(whole.max),
    })
}

/// Bounds of `max(min(x, hi), lo)` for x, lo and hi in the given
/// intervals: each end of x's range clamped, `[max(min(x.min, hi.min),
/// lo.min), max(min(x.max, hi.max), lo.max)]`, with a term dropped from a
/// `min` or `max` where dropping it keeps the bound sound, and the max
/// kept within the width of x's range where the limits are fixed.
fn clamp_bounds(x: &Interval, lo: &Interval, hi: &Interval) -> Interval {
    let min = match (&x.min, &hi.min) {
        (Some(a), Some(b)) => Some(Expr::min(a.clone(), b.clone())),
        _ => None,
    };
    let min = match (min, &lo.min) {
        (Some(a), Some(b)) => Some(simplify(&Expr::max(a, b.clone()))),
        (a, b) => a.or(b.clone()),
    };
    let max = match (&x.max, &hi.max) {
        (Some(a), Some(b)) => Some(Expr::min(a.clone(), b.clone())),
        (a, b) => a.clone().or(b.clone()),
    };
    let max = match (max, &lo.max) {
        (Some(a), Some(b)) => Some(simplify(&Expr::max(a, b.clone()))),
        _ => None,
    };
    let min = min.map(|m| simplify(&m));
    // With fixed limits the clamp is monotonic and moves no two values
    // further apart than they were, so its range is at most as wide as
    // x's: `max <= min + (x.max - x.min)`. This keeps an empty range empty
    // (a consumer's region that a sliding window emptied must not make
    // its producers' regions grow), where clamping the ends alone would
    // turn it into a point.
    let fixed = |i: &Interval| i.min.is_some() && i.min == i.max;
    let max = match (&min, max, &x.min, &x.max) {
        (Some(m), Some(hi_end), Some(x_lo), Some(x_hi)) if fixed(lo) && fixed(hi) => {
            let width = Expr::sub(x_hi.clone(), x_lo.clone());
            Some(simplify(&Expr::min(hi_end, Expr::add(m.clone(), width))))
        }
        (_, max, _, _) => max,
    };
    Interval { min, max }
}

/// Whether `b` is `-a` or `a` is `-b`, written as a negation or as a
/// subtraction from zero.
fn is_negation_of(a: &Expr, b: &Expr) -> bool {
    let negated = |n: &Expr| -> Option<Expr> {
        match n.kind() {
            ExprKind::Unary {
                op: UnaryOp::Neg,
                value,
            } => Some(value.clone()),
            ExprKind::Binary {
                op: BinOp::Sub,
                a: zero,
                b: value,
            } if zero.as_int() == Some(0) => Some(value.clone()),
            _ => None,
        }
    };
    if negated(b).is_some_and(|x| &x == a) || negated(a).is_some_and(|x| &x == b) {
        return true;
    }
    // The simplifier may have distributed the negation, writing `max(c, -c)`
    // for `c = m - k` as `max(m - k, k - m)`: two sums whose sum is zero.
    let is_sum = |e: &Expr| {
        e.ty() == Type::I32
            && matches!(
                e.kind(),
                ExprKind::Binary {
                    op: BinOp::Add | BinOp::Sub,
                    ..
                }
            )
    };
    is_sum(a) && is_sum(b) && simplify(&Expr::add(a.clone(), b.clone())).as_int() == Some(0)
}

/// Whether `i` is a single value.
fn is_point(i: &Interval) -> bool {
    matches!((&i.min, &i.max), (Some(lo), Some(hi)) if argent_arith::expr_eq(lo, hi))
}

/// Whether `operand` (not a constant) occurs inside `e`: the cheap test
/// that comes before `reflection_bounds` simplifies a sum.
fn contains_operand(e: &Expr, operand: &Expr) -> bool {
    operand.as_int().is_none()
        && !std::ptr::eq(e, operand)
        && argent_ir::visit::expr_any(e, |sub| argent_arith::expr_eq(sub, operand))
}

/// Tightens `separate`, the bounds of `min(a, b)` or `max(a, b)` from
/// each operand's own bounds, when `a + b` is some `k` that does not vary
/// over `scope`: then the smaller of the two is at most `floor(k / 2)`
/// and the larger at least `ceil(k / 2)`, wherever `a` lies.
///
/// ```text
/// min(c, (2 * e - 1) - c), c in [0, 2 * e - 1]:  [0, 2 * e - 1]  ==>  [0, e - 1]
/// ```
fn reflection_bounds(
    op: BinOp,
    a: &Expr,
    b: &Expr,
    separate: Interval,
    scope: &mut Scope,
) -> Interval {
    let sum = simplify(&Expr::add(a.clone(), b.clone()));
    let Interval {
        min: Some(low),
        max: Some(high),
    } = bounds_of_expr(&sum, scope)
    else {
        return separate;
    };
    if !argent_arith::expr_eq(&low, &high) {
        return separate;
    }
    let tighter = |bound: Option<Expr>, half: Expr, combine: fn(Expr, Expr) -> Expr| {
        Some(match bound {
            Some(bound) => simplify(&combine(bound, half)),
            None => simplify(&half),
        })
    };
    let mut out = separate;
    if op == BinOp::Min {
        let half = Expr::div(high, Expr::i32(2));
        out.max = tighter(out.max, half, Expr::min);
    } else {
        let half = Expr::div(Expr::add(high, Expr::i32(1)), Expr::i32(2));
        out.min = tighter(out.min, half, Expr::max);
    }
    out
}

/// Bounds of `|a|` for `a` in `i`. The lower bound is the largest of the
/// three facts `|a| >= a`, `|a| >= -a` and `|a| >= 0` that are known, which
/// is exact (0 when `i` straddles zero); the upper bound needs both ends.
fn abs_bounds(i: &Interval) -> Interval {
    let negate = |x: &Expr| Expr::sub(Expr::i32(0), x.clone());
    let mut min = Expr::i32(0);
    if let Some(lo) = &i.min {
        min = Expr::max(lo.clone(), min);
    }
    if let Some(hi) = &i.max {
        min = Expr::max(negate(hi), min);
    }
    Interval {
        min: Some(simplify(&min)),
        max: map2(&i.min, &i.max, |lo, hi| Expr::max(negate(&lo), hi)),
    }
}

fn binary_bounds(op: BinOp, a: &Interval, b: &Interval, b_expr: &Expr) -> Interval {
    let b_const = if b.min == b.max {
        b.min.as_ref().and_then(|x| x.as_int())
    } else {
        None
    };
    let _ = b_expr;
    match op {
        BinOp::Add => Interval {
            min: map2(&a.min, &b.min, Expr::add),
            max: map2(&a.max, &b.max, Expr::add),
        },
        BinOp::Sub => Interval {
            min: map2(&a.min, &b.max, Expr::sub),
            max: map2(&a.max, &b.min, Expr::sub),
        },
        BinOp::Mul => {
            if let Some(k) = b
                .min
                .as_ref()
                .and_then(|x| x.as_int())
                .filter(|_| b.min == b.max)
            {
                let scaled = |x: &Option<Expr>| {
                    x.as_ref()
                        .map(|x| simplify(&Expr::mul(x.clone(), Expr::i32(k))))
                };
                if k >= 0 {
                    Interval {
                        min: scaled(&a.min),
                        max: scaled(&a.max),
                    }
                } else {
                    Interval {
                        min: scaled(&a.max),
                        max: scaled(&a.min),
                    }
                }
            } else if a.min.as_ref().and_then(|x| x.as_int()).is_some() && a.min == a.max {
                binary_bounds(op, b, a, b_expr)
            } else if a.min == a.max && b.min == b.max && a.is_bounded() && b.is_bounded() {
                Interval::point(simplify(&Expr::mul(
                    a.min.clone().unwrap(),
                    b.min.clone().unwrap(),
                )))
            } else if a.is_bounded() && b.is_bounded() {
                let (a0, a1, b0, b1) = (
                    a.min.clone().unwrap(),
                    a.max.clone().unwrap(),
                    b.min.clone().unwrap(),
                    b.max.clone().unwrap(),
                );
                let p = [
                    Expr::mul(a0.clone(), b0.clone()),
                    Expr::mul(a0, b1.clone()),
                    Expr::mul(a1.clone(), b0),
                    Expr::mul(a1, b1),
                ];
                let lo = p.iter().cloned().reduce(Expr::min).unwrap();
                let hi = p.iter().cloned().reduce(Expr::max).unwrap();
                Interval::new(simplify(&lo), simplify(&hi))
            } else {
                Interval::everything()
            }
        }
        BinOp::Div => match b_const {
            Some(k) if k > 0 => Interval {
                min: a
                    .min
                    .as_ref()
                    .map(|x| simplify(&Expr::div(x.clone(), Expr::i32(k)))),
                max: a
                    .max
                    .as_ref()
                    .map(|x| simplify(&Expr::div(x.clone(), Expr::i32(k)))),
            },
            Some(k) if k < 0 => Interval {
                min: a
                    .max
                    .as_ref()
                    .map(|x| simplify(&Expr::div(x.clone(), Expr::i32(k)))),
                max: a
                    .min
                    .as_ref()
                    .map(|x| simplify(&Expr::div(x.clone(), Expr::i32(k)))),
            },
            _ => match (&a.min, &a.max, &b.min, &b.max) {
                // A quotient of single points is a single point (a fused
                // loop's `xy / extent` at one point of the fused loop).
                (Some(lo), Some(hi), Some(d), Some(d_hi)) if lo == hi && d == d_hi => {
                    Interval::point(simplify(&Expr::div(lo.clone(), d.clone())))
                }
                // For a single divisor of unknown sign, the quotient is
                // monotonic in the dividend, increasing or decreasing (and
                // 0 when the divisor is): its ends are the ends' quotients.
                (Some(lo), Some(hi), Some(d), Some(d_hi)) if d == d_hi => {
                    let (q_lo, q_hi) = (
                        Expr::div(lo.clone(), d.clone()),
                        Expr::div(hi.clone(), d.clone()),
                    );
                    Interval::new(
                        simplify(&Expr::min(q_lo.clone(), q_hi.clone())),
                        simplify(&Expr::max(q_lo, q_hi)),
                    )
                }
                // A positive divisor: the quotient grows with the dividend
                // and moves towards zero (or -1) as the divisor grows, so
                // its extremes are at the corners.
                (Some(lo), Some(hi), Some(d_lo), Some(d_hi))
                    if d_lo.as_int().is_some_and(|k| k > 0) =>
                {
                    let q = |x: &Expr, d: &Expr| Expr::div(x.clone(), d.clone());
                    Interval::new(
                        simplify(&Expr::min(q(lo, d_lo), q(lo, d_hi))),
                        simplify(&Expr::max(q(hi, d_lo), q(hi, d_hi))),
                    )
                }
                _ => Interval::everything(),
            },
        },
        // A remainder of single points is a single point.
        BinOp::Mod if a.is_bounded() && b.is_bounded() && a.min == a.max && b.min == b.max => {
            Interval::point(simplify(&Expr::binary(
                BinOp::Mod,
                a.min.clone().unwrap(),
                b.min.clone().unwrap(),
            )))
        }
        BinOp::Mod => match (&b.max, b.max.as_ref().and_then(|x| x.as_int())) {
            (_, Some(k)) if k > 0 => Interval::new(Expr::i32(0), Expr::i32(k - 1)),
            // Euclidean: x % b is in [0, |b| - 1] (0 when b == 0).
            (Some(hi), None) if b.min.is_some() => {
                let lo = b.min.clone().unwrap_or_else(|| Expr::i32(0));
                let bound = Expr::max(
                    Expr::max(
                        Expr::sub(hi.clone(), Expr::i32(1)),
                        Expr::sub(Expr::i32(-1), lo),
                    ),
                    Expr::i32(0),
                );
                Interval::new(Expr::i32(0), simplify(&bound))
            }
            _ => Interval::everything(),
        },
        BinOp::Min => Interval {
            min: map2(&a.min, &b.min, Expr::min),
            max: match (&a.max, &b.max) {
                (Some(x), Some(y)) => Some(simplify(&Expr::min(x.clone(), y.clone()))),
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                _ => None,
            },
        },
        BinOp::Max => Interval {
            min: match (&a.min, &b.min) {
                (Some(x), Some(y)) => Some(simplify(&Expr::max(x.clone(), y.clone()))),
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                _ => None,
            },
            max: map2(&a.max, &b.max, Expr::max),
        },
        BinOp::Shr => match b_const {
            Some(k) if (0..31).contains(&k) => {
                binary_bounds(BinOp::Div, a, &Interval::point(Expr::i32(1 << k)), b_expr)
            }
            _ => Interval::everything(),
        },
        BinOp::Shl => match b_const {
            Some(k) if (0..31).contains(&k) => {
                binary_bounds(BinOp::Mul, a, &Interval::point(Expr::i32(1 << k)), b_expr)
            }
            _ => Interval::everything(),
        },
        BinOp::BitAnd => match (b_const, a.min.as_ref().and_then(|x| x.as_int())) {
            (Some(k), Some(lo)) if k >= 0 && lo >= 0 => Interval::new(Expr::i32(0), Expr::i32(k)),
            _ => Interval::everything(),
        },
        _ => Interval::everything(),
    }
}

/// How an expression changes as one variable increases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Monotonic {
    Constant,
    Increasing,
    Decreasing,
    Unknown,
}

impl Monotonic {
    fn flip(self) -> Monotonic {
        match self {
            Monotonic::Increasing => Monotonic::Decreasing,
            Monotonic::Decreasing => Monotonic::Increasing,
            m => m,
        }
    }
    fn join(self, other: Monotonic) -> Monotonic {
        use Monotonic::*;
        match (self, other) {
            (Constant, m) | (m, Constant) => m,
            (a, b) if a == b => a,
            _ => Unknown,
        }
    }
}

/// Whether `e` is monotonic in the variable `var` (non-strictly).
pub fn monotonic(e: &Expr, var: &str) -> Monotonic {
    use Monotonic::*;
    if !argent_ir::visit::expr_uses_var(e, var) {
        return Constant;
    }
    match e.kind() {
        ExprKind::Var(n) if n == var => Increasing,
        ExprKind::Binary { op, a, b } => {
            let (ma, mb) = (monotonic(a, var), monotonic(b, var));
            match op {
                BinOp::Add | BinOp::Min | BinOp::Max => ma.join(mb),
                BinOp::Sub => ma.join(mb.flip()),
                BinOp::Mul | BinOp::Div => match (mb, const_int(b), ma, const_int(a)) {
                    (Constant, Some(k), m, _) if k > 0 => m,
                    (Constant, Some(k), m, _) if k < 0 => m.flip(),
                    (m, _, Constant, Some(k)) if *op == BinOp::Mul && k >= 0 => m,
                    _ => Unknown,
                },
                _ => Unknown,
            }
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } if monotonic(cond, var) == Constant => {
            monotonic(then, var).join(monotonic(otherwise, var))
        }
        // `select(a < b, x, y)` with `a` growing, `b` not and `y >= x`: the
        // condition holds up to some point and fails after it, and the
        // value moves from x up to something at least x, so it grows when
        // x and y do. Bounds inference empties a region so in the guarded
        // tail of a loop.
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } if holds_then_fails(cond, var) && never_below(otherwise, then) => {
            match monotonic(then, var).join(monotonic(otherwise, var)) {
                m @ (Constant | Increasing) => m.join(Increasing),
                _ => Unknown,
            }
        }
        ExprKind::Cast { value, .. } if e.ty() == Type::I32 => monotonic(value, var),
        ExprKind::Call {
            target: CallTarget::Intrinsic(Intrinsic::Likely),
            args,
        } => monotonic(&args[0], var),
        _ => Unknown,
    }
}

/// A constant upper bound of `e`, found by replacing `min(p, q)` terms
/// with positive coefficients by `p` or `q` (and `max` terms with negative
/// ones likewise) until the affine form is constant. Proves facts like
/// `min(a, M) - max(a, m) <= 0` that plain interval arithmetic cannot.
pub fn const_upper_bound(e: &Expr) -> Option<i64> {
    const_upper_bound_at_depth(e, 0)
}

/// [`const_upper_bound`], choosing branches of min/max nested up to three
/// deep (`min(min(2 * y + 1, 127) + m, M) - max(max(2 * y, 0) + m, M') + 1`
/// is at most 2).
fn const_upper_bound_at_depth(e: &Expr, depth: usize) -> Option<i64> {
    let f = affine_of(&simplify(e));
    let mut choices: Vec<Vec<Expr>> = Vec::new();
    for (c, atom) in f.terms.values() {
        let mut opts = vec![atom.clone()];
        if let ExprKind::Binary { op, a, b } = atom.kind() {
            if (*op == BinOp::Min && *c > 0) || (*op == BinOp::Max && *c < 0) {
                opts = vec![a.clone(), b.clone()];
            }
        }
        choices.push(opts);
    }
    if choices.iter().map(|c| c.len()).product::<usize>() > 256 {
        return None;
    }
    let coefs: Vec<i64> = f.terms.values().map(|(c, _)| *c).collect();
    let mut best: Option<i64> = None;
    let mut idx = vec![0usize; choices.len()];
    loop {
        let mut sum = Expr::i32(f.constant);
        for (k, opts) in choices.iter().enumerate() {
            sum = Expr::add(sum, Expr::mul(opts[idx[k]].clone(), Expr::i32(coefs[k])));
        }
        let sum = simplify(&sum);
        let v = match sum.as_int() {
            Some(v) => Some(v),
            None if depth < 3 => const_upper_bound_at_depth(&sum, depth + 1),
            None => None,
        };
        if let Some(v) = v {
            best = Some(best.map_or(v, |b: i64| b.min(v)));
        }
        let mut k = 0;
        loop {
            if k == idx.len() {
                return best;
            }
            idx[k] += 1;
            if idx[k] < choices[k].len() {
                break;
            }
            idx[k] = 0;
            k += 1;
        }
    }
}

/// Whether `e <= 0` is known for every value of its variables, by cases on
/// its `min` and `max` terms: `min(p, q)` with a positive coefficient is
/// at most `p` and at most `q` (one case must prove it), `max(p, q)` is
/// one of them (both cases must). Unlike [`const_upper_bound`], this
/// proves `max(min(a, M), m) <= M` given `m <= M`. Cases nest at most
/// `depth` deep, so it takes at most `2^depth` simplifications.
pub fn provably_nonpositive(e: &Expr, depth: usize) -> bool {
    let e = simplify(e);
    if let Some(v) = e.as_int() {
        return v <= 0;
    }
    if depth == 0 || !node_count_below(&e, 200) {
        return false;
    }
    let f = affine_of(&e);
    // The largest term first: a smaller one may also occur inside it
    // (`max(e, 1)` in `max(min(a, m + max(e, 1) - 1), m)`), where a case
    // on the outer occurrence alone would lose what it says.
    let Some((coefficient, atom, op, a, b)) = f
        .terms
        .values()
        .filter_map(|(c, atom)| match atom.kind() {
            ExprKind::Binary { op, a, b } if matches!(op, BinOp::Min | BinOp::Max) => {
                Some((*c, atom, *op, a, b))
            }
            _ => None,
        })
        .max_by_key(|(_, atom, ..)| tree_size(atom))
    else {
        return false;
    };
    // `e` with `atom` replaced by `by`.
    let case = |by: &Expr| {
        let mut rest = Expr::i32(f.constant);
        for (c, other) in f.terms.values() {
            let term = if std::ptr::eq(other, atom) { by } else { other };
            rest = Expr::add(rest, Expr::mul(term.clone(), Expr::i32(*c)));
        }
        provably_nonpositive(&rest, depth - 1)
    };
    if (op == BinOp::Min) == (coefficient > 0) {
        case(a) || case(b)
    } else {
        case(a) && case(b)
    }
}

fn float_bounds(op: BinOp, a: &Interval, b: &Interval) -> Interval {
    let all = |x: &Interval| x.min.is_some() && x.max.is_some();
    let consts = |x: &Interval| -> Option<(f64, f64)> {
        Some((x.min.as_ref()?.as_float()?, x.max.as_ref()?.as_float()?))
    };
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Min | BinOp::Max => {
            binary_bounds(op, a, b, &Expr::f32(0.0))
        }
        BinOp::Mul | BinOp::Div if all(a) && all(b) => {
            let divisor_ok = op == BinOp::Mul
                || b.min == b.max
                || consts(b)
                    .is_some_and(|(lo, hi)| (lo > 0.0) == (hi > 0.0) && lo != 0.0 && hi != 0.0);
            if !divisor_ok {
                return Interval::everything();
            }
            let (a0, a1, b0, b1) = (
                a.min.clone().unwrap(),
                a.max.clone().unwrap(),
                b.min.clone().unwrap(),
                b.max.clone().unwrap(),
            );
            let f = |x: Expr, y: Expr| Expr::binary(op, x, y);
            let p = [
                f(a0.clone(), b0.clone()),
                f(a0, b1.clone()),
                f(a1.clone(), b0),
                f(a1, b1),
            ];
            let lo = p.iter().cloned().reduce(Expr::min).map(|e| simplify(&e));
            let hi = p.iter().cloned().reduce(Expr::max).map(|e| simplify(&e));
            Interval { min: lo, max: hi }
        }
        _ => Interval::everything(),
    }
}

/// Tree sizes above this are all the same to [`node_count_below`] (its
/// limits are smaller).
const SIZE_CAP: usize = 1 << 12;

thread_local! {
    /// Tree sizes (capped at [`SIZE_CAP`]) by node identity, each entry
    /// holding its node. Bounds are built from bounds already measured, so
    /// measuring a new node only looks up its children; counting afresh
    /// at every level of [`bounds_of_expr`] was quadratic.
    static SIZE_MEMO: std::cell::RefCell<FastHashMap<usize, (Expr, usize)>> =
        std::cell::RefCell::new(FastHashMap::default());
}

/// The number of nodes of `e` as a tree (shared subtrees counted once per
/// use), or [`SIZE_CAP`] if that is more.
fn tree_size(e: &Expr) -> usize {
    if matches!(
        e.kind(),
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_)
    ) {
        return 1;
    }
    let id = e.node() as *const _ as usize;
    if let Some(n) = SIZE_MEMO.with(|m| m.borrow().get(&id).map(|(_, n)| *n)) {
        return n;
    }
    let sum = |v: &[&Expr]| v.iter().map(|x| tree_size(x)).sum::<usize>();
    let below = match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_) => 0,
        ExprKind::Cast { value, .. }
        | ExprKind::Unary { value, .. }
        | ExprKind::Broadcast { value, .. } => tree_size(value),
        ExprKind::Binary { a, b, .. } => sum(&[a, b]),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => sum(&[cond, then, otherwise]),
        ExprKind::Call { args, .. } => args.iter().map(tree_size).sum(),
        ExprKind::Let { value, body, .. } => sum(&[value, body]),
        ExprKind::Load { index, .. } => tree_size(index),
        ExprKind::Ramp { base, stride, .. } => sum(&[base, stride]),
        ExprKind::Shuffle { vectors, .. } => vectors.iter().map(tree_size).sum(),
    };
    let n = (1 + below).min(SIZE_CAP);
    SIZE_MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= SIMPLIFY_MEMO_LIMIT {
            m.clear();
        }
        m.insert(id, (e.clone(), n));
    });
    n
}

/// Whether `e` has at most `limit` nodes (counted as a tree).
pub fn node_count_below(e: &Expr, limit: usize) -> bool {
    debug_assert!(limit < SIZE_CAP);
    tree_size(e) <= limit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounds of `e` with `x` in `[lo, hi]`, as constants.
    fn const_bounds(e: &Expr, lo: i64, hi: i64) -> (Option<i64>, Option<i64>) {
        let mut scope = Scope::default();
        scope.push("x", Interval::new(Expr::i32(lo), Expr::i32(hi)));
        let i = bounds_of_expr(e, &mut scope);
        (
            i.min.and_then(|m| m.as_int()),
            i.max.and_then(|m| m.as_int()),
        )
    }

    /// The interval of `e` with `x` in `[lo, hi]` and `n` a symbolic point,
    /// as printed expressions.
    fn symbolic_bounds(e: &Expr, lo: i64, hi: i64) -> (String, String) {
        let mut scope = Scope::default();
        scope.push("x", Interval::new(Expr::i32(lo), Expr::i32(hi)));
        let i = bounds_of_expr(e, &mut scope);
        let show = |b: Option<Expr>| b.map_or("none".to_string(), |b| b.to_string());
        (show(i.min), show(i.max))
    }

    /// Regression (gaussian5x5 seed 46, sobel 112, unsharp_mask 178): in
    /// the tail of a split larger than its loop, the clamped variable lies
    /// wholly outside [lo, hi]; the clamp is then the nearest endpoint, not
    /// an empty range.
    #[test]
    fn a_clamp_of_a_range_outside_its_limits_is_the_nearest_limit() {
        let x = Expr::var_i32("x");
        let clamp =
            |lo: i64, hi: i64| Expr::max(Expr::min(x.clone(), Expr::i32(hi)), Expr::i32(lo));
        assert_eq!(const_bounds(&clamp(0, 3), 5, 9), (Some(3), Some(3)));
        assert_eq!(const_bounds(&clamp(0, 3), -9, -5), (Some(0), Some(0)));
        assert_eq!(const_bounds(&clamp(0, 3), -2, 1), (Some(0), Some(1)));
        assert_eq!(const_bounds(&clamp(0, 3), 2, 7), (Some(2), Some(3)));
        assert_eq!(const_bounds(&clamp(0, 3), -1, 9), (Some(0), Some(3)));
        // Symbolic limits: x in [5, 9] against [m, m + 3] gives
        // [max(min(5, m + 3), m), max(min(9, m + 3), m)], the max also
        // at most 4 above the min.
        let m = Expr::var_i32("m");
        let symbolic = Expr::max(
            Expr::min(x.clone(), Expr::add(m.clone(), Expr::i32(3))),
            m.clone(),
        );
        assert_eq!(
            symbolic_bounds(&symbolic, 5, 9),
            (
                "max(min(5, (m + 3)), m)".to_string(),
                "min(max(min(9, (m + 3)), m), (max(min(5, (m + 3)), m) + 4))".to_string()
            )
        );
        // An empty range (a region a sliding window emptied) stays empty
        // rather than becoming the nearest limit.
        assert_eq!(const_bounds(&clamp(0, 3), 5, 4), (Some(3), Some(2)));
        assert_eq!(const_bounds(&clamp(0, 3), 2, 1), (Some(2), Some(1)));
    }

    /// The height of a footprint two clamped rows tall: the subtracted
    /// clamp moves into the `min` whose operand it is, up to a constant,
    /// leaving a constant bound.
    #[test]
    fn a_subtracted_operand_moves_into_its_min() {
        let (y, m, n) = (Expr::var_i32("y"), Expr::var_i32("m"), Expr::var_i32("n"));
        let clamp = |v: Expr| Expr::max(Expr::min(v, m.clone()), n.clone());
        let lo = clamp(y.clone());
        let hi = Expr::min(
            clamp(Expr::add(y.clone(), Expr::i32(1))),
            Expr::add(lo.clone(), Expr::i32(1)),
        );
        let height = Expr::add(Expr::sub(hi.clone(), lo.clone()), Expr::i32(5));
        assert_eq!(const_upper_bound(&simplify(&height)), None);
        let cancelled = simplify_cancelling_min_max(&height);
        assert_eq!(
            cancelled.to_string(),
            "(min((max(min((y + 1), m), n) - max(min(y, m), n)), 1) + 5)"
        );
        assert_eq!(const_upper_bound(&cancelled), Some(6));
        // The same with a subtracted `max` and the other operand.
        let low = Expr::max(Expr::sub(lo.clone(), Expr::i32(2)), y.clone());
        let depth = simplify_cancelling_min_max(&Expr::sub(lo.clone(), low));
        assert_eq!(depth.to_string(), "(0 - max((y - max(min(y, m), n)), -2))");
    }

    /// Euclidean quotients and remainders: of single points they are single
    /// points, whatever the divisor; by a single divisor of unknown sign the
    /// quotient lies between the ends' quotients; by a positive range of
    /// divisors, between the corners'.
    #[test]
    fn quotients_and_remainders_of_points_are_points() {
        let (x, n) = (Expr::var_i32("x"), Expr::var_i32("n"));
        let (q, r) = (
            Expr::div(x.clone(), n.clone()),
            Expr::binary(BinOp::Mod, x.clone(), n.clone()),
        );
        let point = |e: &Expr| symbolic_bounds(e, 7, 7);
        assert_eq!(point(&q), ("(7 / n)".to_string(), "(7 / n)".to_string()));
        assert_eq!(point(&r), ("(7 % n)".to_string(), "(7 % n)".to_string()));
        assert_eq!(
            symbolic_bounds(&q, -3, 7),
            (
                "min((-3 / n), (7 / n))".to_string(),
                "max((-3 / n), (7 / n))".to_string()
            )
        );
        // Constant points fold: -7 / 2 == -4 and -7 % 2 == 1 (Euclidean).
        let c = |e: Expr| const_bounds(&e, -7, -7);
        assert_eq!(c(Expr::div(x.clone(), Expr::i32(2))), (Some(-4), Some(-4)));
        assert_eq!(
            c(Expr::binary(BinOp::Mod, x.clone(), Expr::i32(2))),
            (Some(1), Some(1))
        );
        assert_eq!(
            c(Expr::binary(BinOp::Mod, x.clone(), Expr::i32(-2))),
            (Some(1), Some(1))
        );
        // x in [-7, 9] divided by d in [2, 4]: [-7 / 2, 9 / 2] = [-4, 4].
        let mut scope = Scope::default();
        scope.push("x", Interval::new(Expr::i32(-7), Expr::i32(9)));
        scope.push("d", Interval::new(Expr::i32(2), Expr::i32(4)));
        let i = bounds_of_expr(&Expr::div(x.clone(), Expr::var_i32("d")), &mut scope);
        assert_eq!(
            (
                i.min.and_then(|m| m.as_int()),
                i.max.and_then(|m| m.as_int())
            ),
            (Some(-4), Some(4))
        );
    }

    #[test]
    fn reflected_pairs_are_bounded_by_half_their_sum() {
        // `mirror_image` folds a coordinate `c` in [0, 2e - 1] back with
        // `min(c, 2e - 1 - c)`, which is in [0, e - 1].
        let x = Expr::var_i32("x");
        let folded = Expr::min(x.clone(), Expr::sub(Expr::i32(19), x.clone()));
        assert_eq!(const_bounds(&folded, 0, 19), (Some(0), Some(9)));
        let unfolded = Expr::max(Expr::sub(Expr::i32(19), x.clone()), x.clone());
        assert_eq!(const_bounds(&unfolded, 0, 19), (Some(10), Some(19)));
        // With a symbolic extent, as the boundary condition writes it.
        let n2 = Expr::mul(Expr::var_i32("n"), Expr::i32(2));
        let c = Expr::modulo(x.clone(), n2.clone());
        let mirrored = Expr::min(c.clone(), Expr::sub(Expr::sub(n2, Expr::i32(1)), c));
        let mut scope = Scope::default();
        scope.push("x", Interval::new(Expr::i32(-1000), Expr::i32(1000)));
        let max = bounds_of_expr(&mirrored, &mut scope)
            .max
            .expect("bounded above");
        let at =
            |n: i64| simplify(&argent_ir::visit::substitute(&max, "n", &Expr::i32(n))).as_int();
        assert_eq!((at(16), at(1)), (Some(15), Some(0)));
    }

    #[test]
    fn magnitude_idioms_keep_both_operands_the_same_value() {
        let x = Expr::var_i32("x");
        let neg = Expr::sub(Expr::i32(0), x.clone());
        let abs = Expr::max(x.clone(), neg.clone());
        let neg_abs = Expr::min(neg.clone(), x.clone());
        // Straddling zero, above it and below it.
        assert_eq!(const_bounds(&abs, -3, 5), (Some(0), Some(5)));
        assert_eq!(const_bounds(&abs, 2, 5), (Some(2), Some(5)));
        assert_eq!(const_bounds(&abs, -7, -4), (Some(4), Some(7)));
        assert_eq!(const_bounds(&neg_abs, -3, 5), (Some(-5), Some(0)));
        // A mirrored coordinate stays inside [0, 9] for an extent of 10.
        let m = Expr::sub(Expr::i32(9), abs);
        assert_eq!(const_bounds(&m, -9, 8), (Some(0), Some(9)));
    }
}

#[cfg(test)]
mod nonpositive_tests {
    use super::*;

    /// A clamp's upper end stays below the clamp's maximum when the
    /// minimum is below it: `max(min(a, M), m) <= M` given `m <= M`
    /// (here `M = m + max(e, 1) - 1`, an image's last column).
    #[test]
    fn clamps_stay_inside_their_range() {
        let v = |n: &str| Expr::var_i32(n);
        let last = Expr::sub(
            Expr::add(v("m"), Expr::max(v("e"), Expr::i32(1))),
            Expr::i32(1),
        );
        let clamped = Expr::max(Expr::min(v("a"), last.clone()), v("m"));
        assert!(provably_nonpositive(
            &Expr::sub(clamped.clone(), last.clone()),
            6
        ));
        assert!(provably_nonpositive(&Expr::sub(v("m"), clamped.clone()), 6));
        assert!(!provably_nonpositive(&Expr::sub(clamped, v("m")), 6));
        assert!(!provably_nonpositive(&Expr::sub(v("a"), last), 6));
    }
}
