//! Common-subexpression elimination: structurally equal subexpressions
//! that occur more than once are computed once into a `let`.
//!
//! ```text
//! (a + b) * (a + b) + c          ==>   (let cse0 = (a + b) in (cse0 * cse0) + c)
//! ```
//!
//! Expressions are pure and division by zero is defined, so lifting a
//! subexpression out of a `select` branch is safe, except for loads: a load
//! that only a branch (or the right side of `&&`/`||`) evaluates stays
//! there, because the other branch may be taken exactly when its address
//! is out of bounds. The bodies of existing `let`s are processed on their
//! own, so nothing mentioning a let-bound name escapes its scope.

use crate::{expr_eq, vars_of};
use argent_ir::visit::{Mutator, mutate_expr_children};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Stmt};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// Eliminate common subexpressions of `e` into `let`s.
///
/// Existing `let`s are first substituted into their bodies (unless that
/// would grow the expression more than [`MAX_GROWTH`] times), so that
/// equal subexpressions written under different lets are found too; the
/// ones still shared come back as `cse` lets.
pub fn cse(e: &Expr) -> Expr {
    let mut names = NameSource::new(e);
    let inlined = inline_lets(e);
    let e = if node_count(&inlined) <= MAX_GROWTH * node_count(e) {
        inlined
    } else {
        e.clone()
    };
    cse_with(&e, &mut names)
}

/// How much substituting lets may grow an expression before CSE.
const MAX_GROWTH: usize = 4;

fn node_count(e: &Expr) -> usize {
    struct Count(usize);
    impl argent_ir::visit::Visitor for Count {
        fn visit_expr(&mut self, e: &Expr) {
            self.0 += 1;
            argent_ir::visit::walk_expr(self, e);
        }
    }
    let mut c = Count(0);
    argent_ir::visit::Visitor::visit_expr(&mut c, e);
    c.0
}

/// Substitute every `let` into its body (innermost first).
fn inline_lets(e: &Expr) -> Expr {
    struct Inline;
    impl Mutator for Inline {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            let e = mutate_expr_children(self, e);
            match e.kind() {
                ExprKind::Let { name, value, body }
                    if !crate::expr_binds_any(body, &vars_of(value)) =>
                {
                    argent_ir::visit::substitute(body, name, value)
                }
                _ => e,
            }
        }
    }
    Inline.mutate_expr(e)
}

/// Apply [`cse`] to every expression of a statement separately.
pub fn cse_stmt(s: &Stmt) -> Stmt {
    struct EachExpr;
    impl Mutator for EachExpr {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            cse(e)
        }
    }
    EachExpr.mutate_stmt(s)
}

/// Fresh names that do not clash with any variable of the input.
struct NameSource {
    prefix: String,
    next: usize,
}

impl NameSource {
    fn new(e: &Expr) -> NameSource {
        let vars = vars_of(e);
        let mut prefix = "cse".to_string();
        while vars.iter().any(|v| v.starts_with(&prefix)) {
            prefix.push('_');
        }
        NameSource { prefix, next: 0 }
    }
    fn fresh(&mut self) -> String {
        let n = format!("{}{}", self.prefix, self.next);
        self.next += 1;
        n
    }
}

/// Whether lifting `e` into a let could not pay off.
fn is_trivial(e: &Expr) -> bool {
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) | ExprKind::Var(_) => true,
        ExprKind::Broadcast { value, .. } => is_trivial(value),
        ExprKind::Call {
            target: CallTarget::Intrinsic(argent_ir::Intrinsic::Likely),
            ..
        } => true,
        _ => false,
    }
}

/// A structural hash, consistent with [`expr_eq`].
fn structural_hash(e: &Expr, memo: &mut HashMap<usize, u64>) -> u64 {
    let key = e.node() as *const _ as usize;
    if let Some(h) = memo.get(&key) {
        return *h;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    e.ty().hash(&mut h);
    std::mem::discriminant(e.kind()).hash(&mut h);
    match e.kind() {
        ExprKind::IntImm(v) => v.hash(&mut h),
        ExprKind::FloatImm(v) => v.to_bits().hash(&mut h),
        ExprKind::Var(n) => n.hash(&mut h),
        ExprKind::Cast { saturating, .. } => saturating.hash(&mut h),
        ExprKind::Unary { op, .. } => op.hash(&mut h),
        ExprKind::Binary { op, .. } => op.hash(&mut h),
        ExprKind::Call { target, .. } => target.hash(&mut h),
        ExprKind::Let { name, .. } => name.hash(&mut h),
        ExprKind::Load { buffer, .. } => buffer.hash(&mut h),
        ExprKind::Ramp { lanes, .. } | ExprKind::Broadcast { lanes, .. } => lanes.hash(&mut h),
        ExprKind::Shuffle { indices, .. } => indices.hash(&mut h),
        ExprKind::Select { .. } => {}
    }
    for c in children(e) {
        structural_hash(&c, memo).hash(&mut h);
    }
    let v = h.finish();
    memo.insert(key, v);
    v
}

fn children(e: &Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    struct Collect<'a>(&'a mut Vec<Expr>);
    impl argent_ir::visit::Visitor for Collect<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            self.0.push(e.clone());
        }
    }
    argent_ir::visit::walk_expr(&mut Collect(&mut out), e);
    out
}

/// The distinct subexpressions of a tree with their occurrence counts.
#[derive(Default)]
struct Table {
    memo: HashMap<usize, u64>,
    buckets: HashMap<u64, Vec<usize>>,
    entries: Vec<(Expr, usize)>,
}

impl Table {
    fn find(&mut self, e: &Expr) -> Option<usize> {
        let h = structural_hash(e, &mut self.memo);
        self.buckets
            .get(&h)?
            .iter()
            .copied()
            .find(|&i| expr_eq(&self.entries[i].0, e))
    }

    /// Count the occurrences of `e`'s subexpressions. `conditional` is
    /// set below a `select` branch or the right side of `&&`/`||`: a load
    /// seen only there must not be lifted out, since lifting would read
    /// memory the program does not read (possibly out of bounds). Returns
    /// whether `e` contains a load.
    fn count(&mut self, e: &Expr, conditional: bool) -> bool {
        // Let bodies are handled separately (see `cse_with`), so the
        // counting stops at lets.
        if let ExprKind::Let { .. } = e.kind() {
            return true;
        }
        let mut has_load = matches!(e.kind(), ExprKind::Load { .. });
        match e.kind() {
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                has_load |= self.count(cond, conditional);
                has_load |= self.count(then, true);
                has_load |= self.count(otherwise, true);
            }
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                a,
                b,
            } => {
                has_load |= self.count(a, conditional);
                has_load |= self.count(b, true);
            }
            _ => {
                for c in children(e) {
                    has_load |= self.count(&c, conditional);
                }
            }
        }
        if is_trivial(e) || (conditional && has_load) {
            return has_load;
        }
        match self.find(e) {
            Some(i) => self.entries[i].1 += 1,
            None => {
                let h = structural_hash(e, &mut self.memo);
                self.entries.push((e.clone(), 1));
                let idx = self.entries.len() - 1;
                self.buckets.entry(h).or_default().push(idx);
            }
        }
        has_load
    }
}

struct Replace<'a> {
    table: &'a mut Table,
    names: &'a mut NameSource,
    /// Entry index -> its let name, in the order the lets are created.
    lifted: HashMap<usize, String>,
    lets: Vec<(String, Expr)>,
}

impl Mutator for Replace<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        if let ExprKind::Let { name, value, body } = e.kind() {
            let v = self.mutate_expr(value);
            let b = cse_with(body, self.names);
            return Expr::let_in(name.clone(), v, b);
        }
        let idx = if is_trivial(e) {
            None
        } else {
            self.table.find(e)
        };
        if let Some(i) = idx
            && let Some(name) = self.lifted.get(&i)
        {
            return Expr::var(e.ty(), name.clone());
        }
        let rebuilt = mutate_expr_children(self, e);
        match idx {
            Some(i) if self.table.entries[i].1 >= 2 => {
                let name = self.names.fresh();
                self.lifted.insert(i, name.clone());
                self.lets.push((name.clone(), rebuilt.clone()));
                Expr::var(e.ty(), name)
            }
            _ => rebuilt,
        }
    }
}

fn cse_with(e: &Expr, names: &mut NameSource) -> Expr {
    let mut table = Table::default();
    table.count(e, false);
    let mut r = Replace {
        table: &mut table,
        names,
        lifted: HashMap::new(),
        lets: Vec::new(),
    };
    let body = r.mutate_expr(e);
    let mut lets = std::mem::take(&mut r.lets);
    // A subexpression counted twice only because its parent occurred twice
    // is used once after the parent was lifted: inline it back.
    let mut body = body;
    loop {
        let mut changed = false;
        for i in 0..lets.len() {
            let name = lets[i].0.clone();
            let uses: usize = lets[i + 1..]
                .iter()
                .map(|(_, v)| crate::count_var_uses(v, &name))
                .sum::<usize>()
                + crate::count_var_uses(&body, &name);
            if uses <= 1 {
                let value = lets[i].1.clone();
                for (_, v) in lets[i + 1..].iter_mut() {
                    *v = argent_ir::visit::substitute(v, &name, &value);
                }
                body = argent_ir::visit::substitute(&body, &name, &value);
                lets.remove(i);
                changed = true;
                break;
            }
        }
        if !changed {
            break;
        }
    }
    for (name, value) in lets.into_iter().rev() {
        body = Expr::let_in(name, value, body);
    }
    body
}
