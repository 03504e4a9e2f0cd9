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

use crate::expr_eq;
use crate::fast_hash::{FastHashMap, FastHasher};
use argent_ir::visit::{Mutator, Visitor, for_each_child, mutate_expr_children, walk_expr};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Stmt};
use std::hash::{Hash, Hasher};

/// Eliminate common subexpressions of `e` into `let`s.
///
/// Existing `let`s are first substituted into their bodies (unless that
/// would grow the expression more than [`MAX_GROWTH`] times), so that
/// equal subexpressions written under different lets are found too; the
/// ones still shared come back as `cse` lets.
pub fn cse(e: &Expr) -> Expr {
    // Leaves and their broadcasts have nothing to share.
    if is_trivial(e) {
        return e.clone();
    }
    let mut names = NameSource::new(e);
    // The size is estimated before substituting: lets used several times
    // inside lets used several times (the expansions of `pow` and `exp`,
    // say) grow exponentially when substituted, and building the tree
    // took camera_pipe's CSE from milliseconds to over a second.
    let e = if contains_let(e) && inlined_size(e) <= MAX_GROWTH * node_count(e) {
        inline_lets(e)
    } else {
        e.clone()
    };
    cse_with(&e, &mut names)
}

/// The node count of `e` with every `let` substituted into its body
/// (saturating), computed without substituting.
fn inlined_size(e: &Expr) -> usize {
    fn walk(e: &Expr, sizes: &mut Vec<(String, usize)>) -> usize {
        match e.kind() {
            ExprKind::Var(n) => sizes
                .iter()
                .rev()
                .find(|(name, _)| name == n)
                .map_or(1, |(_, size)| *size),
            ExprKind::Let { name, value, body } => {
                let value_size = walk(value, sizes);
                sizes.push((name.clone(), value_size));
                let body_size = walk(body, sizes);
                sizes.pop();
                body_size
            }
            _ => {
                let mut total = 1usize;
                for_each_child(e, |c| total = total.saturating_add(walk(c, sizes)));
                total
            }
        }
    }
    walk(e, &mut Vec::new())
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

/// Whether `e` has a `let` anywhere (a walk that allocates nothing, unlike
/// rebuilding through a `Mutator`).
fn contains_let(e: &Expr) -> bool {
    struct Find(bool);
    impl Visitor for Find {
        fn visit_expr(&mut self, e: &Expr) {
            if self.0 {
                return;
            }
            if let ExprKind::Let { .. } = e.kind() {
                self.0 = true;
                return;
            }
            walk_expr(self, e);
        }
    }
    let mut f = Find(false);
    f.visit_expr(e);
    f.0
}

/// Substitute every `let` into its body (innermost first).
fn inline_lets(e: &Expr) -> Expr {
    struct Inline;
    impl Mutator for Inline {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            let e = mutate_expr_children(self, e);
            match e.kind() {
                ExprKind::Let { name, value, body }
                    if !crate::expr_binds_any(body, &crate::var_names(value)) =>
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
    /// `cse` of each expression, remembered by structure: its result
    /// depends on the expression alone (its fresh names avoid the names
    /// the expression mentions, and its lets are scoped to it), and the
    /// pieces of a partitioned loop repeat the same expressions.
    struct EachExpr(FastHashMap<u64, Vec<(Expr, Expr)>>);
    impl Mutator for EachExpr {
        fn mutate_expr(&mut self, e: &Expr) -> Expr {
            if is_trivial(e) {
                return e.clone();
            }
            let known = self.0.entry(crate::structural_hash(e)).or_default();
            if let Some((_, output)) = known.iter().find(|(input, _)| expr_eq(input, e)) {
                return output.clone();
            }
            let output = cse(e);
            known.push((e.clone(), output.clone()));
            output
        }
    }
    EachExpr(FastHashMap::default()).mutate_stmt(s)
}

/// Fresh names that do not clash with any variable of the input.
struct NameSource {
    /// The input, until the first fresh name is asked for: most expressions
    /// have nothing to share, and then their variables are never listed.
    root: Option<Expr>,
    prefix: String,
    next: usize,
}

impl NameSource {
    fn new(e: &Expr) -> NameSource {
        NameSource {
            root: Some(e.clone()),
            prefix: String::new(),
            next: 0,
        }
    }
    fn fresh(&mut self) -> String {
        if let Some(root) = self.root.take() {
            let vars = crate::var_names(&root);
            self.prefix = "cse".to_string();
            while vars.iter().any(|v| v.starts_with(&self.prefix)) {
                self.prefix.push('_');
            }
        }
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

/// A structural hash, consistent with [`expr_eq`]. `memo` caches it by node
/// address (the table holds every hashed node, so addresses stay unique).
fn structural_hash(e: &Expr, memo: &mut FastHashMap<usize, u64>) -> u64 {
    let key = e.node() as *const _ as usize;
    if let Some(h) = memo.get(&key) {
        return *h;
    }
    let mut h = FastHasher::default();
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
    for_each_child(e, |c| structural_hash(c, memo).hash(&mut h));
    let v = h.finish();
    memo.insert(key, v);
    v
}

/// The distinct subexpressions of a tree with their occurrence counts.
#[derive(Default)]
struct Table {
    memo: FastHashMap<usize, u64>,
    /// Structural hash -> the latest entry with that hash; entries with
    /// equal hashes are chained through [`Entry::same_hash`] (a vector per
    /// hash cost an allocation per distinct subexpression).
    buckets: FastHashMap<u64, usize>,
    entries: Vec<Entry>,
    /// Whether counting met a `let` (whose body `Replace` processes).
    saw_let: bool,
}

struct Entry {
    expr: Expr,
    count: usize,
    /// The previous entry with the same structural hash, if any.
    same_hash: Option<usize>,
}

impl Table {
    fn find(&mut self, e: &Expr) -> Option<usize> {
        let h = structural_hash(e, &mut self.memo);
        let mut next = self.buckets.get(&h).copied();
        while let Some(i) = next {
            if expr_eq(&self.entries[i].expr, e) {
                return Some(i);
            }
            next = self.entries[i].same_hash;
        }
        None
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
            self.saw_let = true;
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
            _ => for_each_child(e, |c| has_load |= self.count(c, conditional)),
        }
        if is_trivial(e) || (conditional && has_load) {
            return has_load;
        }
        match self.find(e) {
            Some(i) => self.entries[i].count += 1,
            None => {
                let h = structural_hash(e, &mut self.memo);
                let idx = self.entries.len();
                let same_hash = self.buckets.insert(h, idx);
                self.entries.push(Entry {
                    expr: e.clone(),
                    count: 1,
                    same_hash,
                });
            }
        }
        has_load
    }
}

struct Replace<'a> {
    table: &'a mut Table,
    names: &'a mut NameSource,
    /// Entry index -> its let name, in the order the lets are created.
    lifted: FastHashMap<usize, String>,
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
            Some(i) if self.table.entries[i].count >= 2 => {
                let name = self.names.fresh();
                self.lifted.insert(i, name.clone());
                self.lets.push((name.clone(), rebuilt.clone()));
                Expr::var(e.ty(), name)
            }
            _ => rebuilt,
        }
    }
}

thread_local! {
    /// Cleared tables kept for the next expression: each statement has many
    /// expressions, and growing fresh hash tables for each cost more than
    /// the counting itself.
    static SPARE_TABLES: std::cell::RefCell<Vec<Table>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn cse_with(e: &Expr, names: &mut NameSource) -> Expr {
    let mut table = SPARE_TABLES
        .with(|t| t.borrow_mut().pop())
        .unwrap_or_default();
    let result = cse_with_table(e, names, &mut table);
    table.memo.clear();
    table.buckets.clear();
    table.entries.clear();
    table.saw_let = false;
    // A few tables suffice (one per nesting level of lets being processed).
    SPARE_TABLES.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() < 4 {
            t.push(table);
        }
    });
    result
}

fn cse_with_table(e: &Expr, names: &mut NameSource, table: &mut Table) -> Expr {
    table.count(e, false);
    // Most expressions (indices, conditions) share nothing: then there is
    // nothing to rebuild.
    if !table.saw_let && table.entries.iter().all(|entry| entry.count < 2) {
        return e.clone();
    }
    let mut r = Replace {
        table,
        names,
        lifted: FastHashMap::default(),
        lets: Vec::new(),
    };
    let body = r.mutate_expr(e);
    let lets = std::mem::take(&mut r.lets);
    let (lets, body) = inline_single_uses(lets, body);
    let (lets, mut body) = sink_into_shuffled_vectors(lets, body);
    for (name, value) in lets.into_iter().rev() {
        body = Expr::let_in(name, value, body);
    }
    body
}

/// Moves each let (of `lets`, in creation order) that only one of the
/// vectors shuffled by `body` uses into that vector, and, when the vector
/// values that several of them share would fill more registers than
/// [`SHARED_VECTOR_REGISTERS`], copies those into each user too.
///
/// The stores of an image's interleaved channels combine into one store of
/// a shuffle of the channels (`interleave_stores`), and a let computed
/// before the shuffle stays live until the shuffle: with every channel's
/// values (say a load widened to four f32 registers) lifted to the top,
/// all channels' registers were live at once and V8 spilled them, as it
/// does not move loads past each other. Computed inside its vector, a
/// value lives only while that channel is computed. Values all channels
/// use (the pixel's other channels in a colour matrix) are worth sharing
/// while they fit in registers; past that, each channel recomputes them,
/// as the channel loop did before it was unrolled (multiscale
/// interpolation's weights: 1.3x slower when shared).
///
/// ```text
/// let a = f(p) in let b = f(q) in shuffle(a + a, b + b)
///     ==>   shuffle(let a = f(p) in a + a, let b = f(q) in b + b)
/// ```
fn sink_into_shuffled_vectors(
    lets: Vec<(String, Expr)>,
    body: Expr,
) -> (Vec<(String, Expr)>, Expr) {
    let ExprKind::Shuffle { vectors, indices } = body.kind() else {
        return (lets, body);
    };
    if vectors.len() < 2 || lets.is_empty() {
        return (lets, body);
    }
    let (kept, sunk, shared_registers) = place_lets(&lets, vectors, false);
    let (kept, sunk) = if shared_registers > SHARED_VECTOR_REGISTERS {
        let (kept, sunk, _) = place_lets(&lets, vectors, true);
        (kept, sunk)
    } else {
        (kept, sunk)
    };
    let vectors = vectors
        .iter()
        .zip(sunk)
        .map(|(vector, lets)| {
            lets.into_iter()
                .rev()
                .fold(vector.clone(), |body, (name, value)| {
                    Expr::let_in(name, value, body)
                })
        })
        .collect();
    (kept, Expr::shuffle(vectors, indices.clone()))
}

/// How many 128-bit registers of vector values the channels of an
/// interleaved store may share (x86-64 has 16).
const SHARED_VECTOR_REGISTERS: usize = 12;

/// Lets that stay around a shuffle, each shuffled vector's own lets
/// (outermost first), and the registers the shared vector lets fill.
type Placement = (Vec<(String, Expr)>, Vec<Vec<(String, Expr)>>, usize);

/// Where each of `lets` goes (see [`sink_into_shuffled_vectors`]); with
/// `copy_shared`, a vector let that several vectors (and no kept let) use
/// is copied into each of them.
fn place_lets(lets: &[(String, Expr)], vectors: &[Expr], copy_shared: bool) -> Placement {
    let uses = |e: &Expr, name: &str| crate::count_var_uses(e, name) > 0;
    let mut sunk: Vec<Vec<(String, Expr)>> = vec![Vec::new(); vectors.len()];
    let mut kept: Vec<(String, Expr)> = Vec::new();
    let mut shared_registers = 0;
    // Innermost first: a let's users are then all placed already.
    for (name, value) in lets.iter().rev() {
        let users: Vec<usize> = (0..vectors.len())
            .filter(|&i| uses(&vectors[i], name) || sunk[i].iter().any(|(_, v)| uses(v, name)))
            .collect();
        let kept_uses = kept.iter().any(|(_, v)| uses(v, name));
        let ty = value.ty();
        match users[..] {
            [only] if !kept_uses => sunk[only].insert(0, (name.clone(), value.clone())),
            [_, _, ..] if !kept_uses && ty.is_vector() && copy_shared => {
                for i in users {
                    sunk[i].insert(0, (name.clone(), value.clone()));
                }
            }
            _ => {
                if ty.is_vector() {
                    let bits = usize::from(ty.lanes) * usize::from(ty.bits.max(8));
                    shared_registers += bits.div_ceil(128);
                }
                kept.insert(0, (name.clone(), value.clone()))
            }
        }
    }
    (kept, sunk, shared_registers)
}

/// Substitute back the lets (in creation order, each value using only
/// earlier ones) that `body` and the later values use at most once: a
/// subexpression counted twice only because its parent occurred twice is
/// used once after the parent was lifted.
///
/// Uses are counted once and a let's count is final when every later let
/// has been decided (a let used once moves its uses to its single user; an
/// unused one takes its uses away), so one backward pass decides and one
/// forward pass substitutes.
fn inline_single_uses(lets: Vec<(String, Expr)>, body: Expr) -> (Vec<(String, Expr)>, Expr) {
    if lets.is_empty() {
        return (lets, body);
    }
    let index: FastHashMap<&str, usize> = lets
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.as_str(), i))
        .collect();
    // uses[i]: how often lets[i] is used; refs[i]: the lets lets[i]'s value
    // uses, with repetitions.
    let mut uses = vec![0usize; lets.len()];
    let mut refs: Vec<Vec<usize>> = Vec::with_capacity(lets.len());
    for (_, value) in &lets {
        let mut r = Vec::new();
        for_each_var(value, |n| {
            if let Some(&j) = index.get(n) {
                r.push(j);
            }
        });
        for &j in &r {
            uses[j] += 1;
        }
        refs.push(r);
    }
    for_each_var(&body, |n| {
        if let Some(&j) = index.get(n) {
            uses[j] += 1;
        }
    });
    let mut inline = vec![false; lets.len()];
    for i in (0..lets.len()).rev() {
        if uses[i] <= 1 {
            inline[i] = true;
            if uses[i] == 0 {
                for &j in &refs[i] {
                    uses[j] -= 1;
                }
            }
        }
    }
    drop(index);
    let mut map = crate::fast_hash::FastHashMap::default();
    let mut kept = Vec::new();
    for ((name, value), inline) in lets.into_iter().zip(inline) {
        let value = crate::substitute_many(&value, &map);
        if inline {
            map.insert(name, value);
        } else {
            kept.push((name, value));
        }
    }
    let body = crate::substitute_many(&body, &map);
    (kept, body)
}

/// Call `f` with the name of every variable occurrence in `e`.
fn for_each_var(e: &Expr, f: impl FnMut(&str)) {
    struct Vars<F>(F);
    impl<F: FnMut(&str)> Visitor for Vars<F> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Var(n) = e.kind() {
                (self.0)(n);
            }
            walk_expr(self, e);
        }
    }
    Vars(f).visit_expr(e);
}
