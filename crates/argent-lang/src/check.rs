//! The checker: resolves names, applies the type rules, desugars the
//! language's conveniences (boundary conditions, border rules, windows,
//! inline reductions, compound updates, global lets) and produces an
//! `argent_ir::Pipeline`. Errors are collected, not fatal: a broken
//! definition is skipped and the rest is still checked.

use crate::ast::{self, AssignOp, BinaryOp, BorderCoord, ExprKind, Stmt, WindowDim};
use crate::boundary;
use crate::diag::Diagnostic;
use crate::types::{self, Lit, TypeError, Typed};
use argent_ir::fast_hash::{FastHashMap as HashMap, FastHashSet as HashSet};
use argent_ir::visit::expr_uses_var;
use argent_ir::{
    BinOp, Expr, Func, FuncOrigin, Input, Param, Pipeline, RDom, RVar, Span, Type, UnaryOp, Update,
    buffer_field,
};
use std::collections::BTreeSet;

/// Inline reductions (Halide's `sum(e)` over the rvars `e` uses).
const REDUCTIONS: [&str; 6] = ["sum", "minimum", "maximum", "product", "argmin", "argmax"];
/// Builtin function names, for suggestions.
const BUILTINS: [&str; 22] = [
    "select", "clamp", "min", "max", "abs", "absd", "lerp", "sqrt", "exp", "log", "pow", "sin",
    "cos", "tan", "atan2", "floor", "ceil", "round", "trunc", "is_nan", "mean", "convolve",
];
/// The names of rdom dimensions, in order.
const RVAR_NAMES: [&str; 4] = ["x", "y", "z", "w"];
/// Windows larger than this many points are refused (convolve unrolls).
const MAX_WINDOW: i64 = 4096;
/// Border rules describe a few pixels; wider borders are refused so the
/// footprint check stays small.
const MAX_BORDER_WIDTH: i64 = 64;
/// How tall a global let's value may be once the lets it uses are
/// substituted (a bound on the IR depth, so later passes that recurse over
/// expressions cannot overflow the stack).
const MAX_LET_DEPTH: u32 = 512;

#[derive(Clone, Debug)]
struct InputInfo {
    ty: Type,
    dims: Vec<String>,
}

/// What a name at global scope means.
#[derive(Clone, Debug)]
enum Global {
    Input(InputInfo),
    Param(Type),
    /// A global let: its value and a bound on its depth once substituted.
    Let(Typed, u32),
    RDom(RDom),
    Func,
    /// A declaration that had errors: uses of the name stay silent.
    Broken,
}

/// A func's signature once known. `ty` is `None` when its definition had
/// errors (calls to it are then silently poisoned).
#[derive(Clone, Debug)]
struct Sig {
    ty: Option<Type>,
    arity: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    /// Global lets, rdom bounds, param values.
    Global,
    /// A pure definition.
    Pure,
    /// An update definition.
    Update,
    /// The `where` predicate of the rdom named in `Scope::rdom_owner`.
    Predicate,
    /// The right-hand side of a border rule.
    Border,
}

/// An inline reduction being checked: which rdom its body uses.
#[derive(Default)]
struct Frame {
    rdom: Option<String>,
}

/// What is visible while checking one expression.
struct Scope {
    ctx: Ctx,
    pure_vars: Vec<String>,
    locals: Vec<(String, Typed, Option<Expr>)>,
    frames: Vec<Frame>,
    /// In an update: the rdom its rvars come from. In a predicate: the rdom.
    rdom_owner: Option<String>,
    /// Name of the func being defined, for naming generated funcs.
    owner: String,
    /// In a border rule: the input and, per dimension, whether `*` is allowed.
    border: Option<(String, Vec<bool>)>,
    /// Longest chain of global lets referenced.
    let_depth: u32,
}

impl Scope {
    fn new(ctx: Ctx, owner: &str) -> Scope {
        Scope {
            ctx,
            pure_vars: Vec::new(),
            locals: Vec::new(),
            frames: Vec::new(),
            rdom_owner: None,
            owner: owner.to_string(),
            border: None,
            let_depth: 0,
        }
    }
}

/// Static facts about one border-rule block, for the footprint check.
#[derive(Clone, Debug)]
pub(crate) struct BorderInfo {
    pub func: String,
    pub widths: Vec<i64>,
    pub rules: Vec<Vec<BorderCoord>>,
    pub span: Span,
    pub width_span: Span,
}

/// Checks a parsed program. Returns the pipeline (meaningful only when no
/// errors were added to `diags`).
/// The conditions of the `specialize` directives of `block`, typed
/// against `pipeline`'s parameters and inputs, by the span of the
/// condition (for a schedule checked apart from its algorithm, whose
/// global lets are gone).
pub fn schedule_conditions(
    block: &ast::ScheduleBlock,
    pipeline: &Pipeline,
    diags: &mut Vec<Diagnostic>,
) -> Conditions {
    let mut globals: HashMap<String, Global> = HashMap::default();
    for i in &pipeline.inputs {
        globals.insert(
            i.name.clone(),
            Global::Input(InputInfo {
                ty: i.ty,
                dims: i.dims.clone(),
            }),
        );
    }
    for p in &pipeline.params {
        globals.insert(p.name.clone(), Global::Param(p.ty));
    }
    let mut c = Checker::new(diags);
    c.globals = globals;
    c.func_names = pipeline.funcs.iter().map(|f| f.name.clone()).collect();
    c.specialize_conditions(block)
}

/// Typed `specialize` conditions by the span (start, end) of the condition.
pub type Conditions = HashMap<(u32, u32), Expr>;

pub fn check_program(program: &ast::Program, diags: &mut Vec<Diagnostic>) -> Pipeline {
    Checker::new(diags).run(program)
}

struct Checker<'d> {
    diags: &'d mut Vec<Diagnostic>,
    globals: HashMap<String, Global>,
    global_spans: HashMap<String, Span>,
    /// Every name defined as a func anywhere in the file.
    func_names: HashSet<String>,
    sigs: HashMap<String, Sig>,
    /// Funcs built so far, by name.
    built: HashMap<String, Func>,
    /// Funcs generated for a func's windows and reductions, in creation order.
    generated: HashMap<String, Vec<Func>>,
    gen_counter: HashMap<String, usize>,
    inputs: Vec<Input>,
    params: Vec<Param>,
    borders: Vec<BorderInfo>,
}

impl<'d> Checker<'d> {
    /// A checker that knows no names yet.
    fn new(diags: &'d mut Vec<Diagnostic>) -> Checker<'d> {
        Checker {
            diags,
            globals: HashMap::default(),
            global_spans: HashMap::default(),
            func_names: HashSet::default(),
            sigs: HashMap::default(),
            built: HashMap::default(),
            generated: HashMap::default(),
            gen_counter: HashMap::default(),
            inputs: Vec::new(),
            params: Vec::new(),
            borders: Vec::new(),
        }
    }
}

/// A func as declared in the source, before checking.
enum Decl<'a> {
    User(Vec<&'a Stmt>),
    Boundary,
    Border,
}

impl<'d> Checker<'d> {
    fn error(
        &mut self,
        code: &'static str,
        span: Span,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(code, span, message));
        self.diags.last_mut().expect("just pushed")
    }

    fn type_error(&mut self, e: TypeError, span: Span, arg_spans: &[Span]) {
        let primary = e
            .arg
            .and_then(|i| arg_spans.get(i).copied())
            .unwrap_or(span);
        let d = self.error(e.code, primary, e.message);
        if let Some(n) = e.note {
            d.notes.push(n);
        }
    }

    /// Records a declaration that failed to check, so later uses of the
    /// name do not add "unknown name" errors on top.
    fn mark_broken(&mut self, name: &ast::Ident) {
        if !self.global_spans.contains_key(&name.name) {
            self.global_spans.insert(name.name.clone(), name.span);
            self.globals.insert(name.name.clone(), Global::Broken);
        }
    }

    /// Reports a duplicate if `name` is taken; returns whether it is free.
    fn claim(&mut self, name: &ast::Ident) -> bool {
        if matches!(self.globals.get(&name.name), Some(Global::Broken)) {
            // A line that failed to parse mentioned this name first.
            self.globals.remove(&name.name);
            self.global_spans.insert(name.name.clone(), name.span);
            return true;
        }
        if let Some(prev) = self.global_spans.get(&name.name).copied() {
            self.error(
                "E0103",
                name.span,
                format!("`{}` is defined twice", name.name),
            )
            .labels
            .push((prev, "first defined here".to_string()));
            return false;
        }
        self.global_spans.insert(name.name.clone(), name.span);
        true
    }

    fn run(&mut self, program: &ast::Program) -> Pipeline {
        for (name, is_func) in &program.broken {
            if *is_func {
                self.func_names.insert(name.name.clone());
            }
            self.mark_broken(name);
        }
        // Funcs may be used before their definition, so collect their names first.
        for s in &program.stmts {
            if let Stmt::Define { name, .. } | Stmt::Border { name, .. } = s {
                self.func_names.insert(name.name.clone());
            }
            if let Stmt::Let { name, value, .. } = s
                && boundary_call(value).is_some()
            {
                self.func_names.insert(name.name.clone());
            }
        }

        let mut decls: Vec<(String, Decl)> = Vec::new();
        let mut decl_index: HashMap<String, usize> = HashMap::default();
        let mut outputs: Vec<ast::Ident> = Vec::new();
        let mut schedule: Option<&ast::ScheduleBlock> = None;

        for s in &program.stmts {
            match s {
                Stmt::Input {
                    ty,
                    name,
                    dims,
                    span,
                } => self.input(ty, name, dims, *span),
                Stmt::Param {
                    ty,
                    name,
                    default,
                    range,
                    span,
                } => self.param(ty, name, default.as_ref(), range.as_ref(), *span),
                Stmt::RDom {
                    name,
                    ranges,
                    predicate,
                    span,
                } => self.rdom(name, ranges, predicate.as_ref(), *span),
                Stmt::Let { name, value, span } => {
                    if let Some((condition, args)) = boundary_call(value) {
                        if self.claim(name) {
                            self.globals.insert(name.name.clone(), Global::Func);
                            self.boundary(name, condition, args, value.span, *span);
                            decl_index.insert(name.name.clone(), decls.len());
                            decls.push((name.name.clone(), Decl::Boundary));
                        }
                    } else {
                        self.global_let(name, value);
                    }
                }
                Stmt::Define { name, .. } => {
                    if let Some(&i) = decl_index.get(&name.name) {
                        if let Decl::User(defs) = &mut decls[i].1 {
                            defs.push(s);
                        } else {
                            self.error(
                                "E0103",
                                name.span,
                                format!("`{}` is defined twice", name.name),
                            );
                        }
                    } else if self.claim(name) {
                        self.globals.insert(name.name.clone(), Global::Func);
                        decl_index.insert(name.name.clone(), decls.len());
                        decls.push((name.name.clone(), Decl::User(vec![s])));
                    }
                }
                Stmt::Border {
                    name,
                    source,
                    widths,
                    rules,
                    span,
                } => {
                    if self.claim(name) {
                        self.globals.insert(name.name.clone(), Global::Func);
                        self.border(name, source, widths, rules, *span);
                        decl_index.insert(name.name.clone(), decls.len());
                        decls.push((name.name.clone(), Decl::Border));
                    }
                }
                Stmt::Output { names, .. } => outputs.extend(names.iter().cloned()),
                Stmt::Schedule(block) => {
                    if let Some(prev) = schedule {
                        let head = |s: Span| Span {
                            start: s.start,
                            end: s.start + "schedule".len() as u32,
                        };
                        self.error(
                            "E0609",
                            head(block.span),
                            "a pipeline has at most one schedule block",
                        )
                        .labels
                        .push((head(prev.span), "first schedule here".to_string()));
                    } else {
                        schedule = Some(block);
                    }
                }
            }
        }

        // Arity of every user func comes from its pure definition's head,
        // so calls can be checked before the callee's body is.
        for (name, decl) in &decls {
            if let Decl::User(defs) = decl
                && let Stmt::Define { args, .. } = defs[0]
            {
                self.sigs.insert(
                    name.clone(),
                    Sig {
                        ty: None,
                        arity: args.len(),
                    },
                );
            }
        }

        let order = self.order_funcs(&decls);
        let mut funcs: Vec<Func> = Vec::new();
        for i in order {
            let (name, decl) = &decls[i];
            if let Decl::User(defs) = decl {
                self.user_func(name, defs);
            }
            for g in self.generated.remove(name).unwrap_or_default() {
                funcs.push(g);
            }
            if let Some(f) = self.built.remove(name) {
                funcs.push(f);
            }
        }

        let mut pipeline = Pipeline {
            inputs: std::mem::take(&mut self.inputs),
            params: std::mem::take(&mut self.params),
            funcs,
            outputs: Vec::new(),
            schedule: Default::default(),
        };
        self.outputs(&outputs, &mut pipeline, program);
        let borders = std::mem::take(&mut self.borders);
        crate::footprint::check_borders(&pipeline, &borders, self.diags);
        if let Some(block) = schedule {
            // Funcs whose definitions had errors are not in the pipeline;
            // the schedule should not report them a second time.
            let declared: HashSet<String> = self.func_names.iter().cloned().collect();
            let conditions = self.specialize_conditions(block);
            pipeline.schedule = crate::schedule::check_schedule(
                block,
                &pipeline,
                Some(&declared),
                &conditions,
                self.diags,
            );
        }
        pipeline
    }

    fn outputs(&mut self, names: &[ast::Ident], pipeline: &mut Pipeline, program: &ast::Program) {
        let mut seen = HashSet::default();
        for n in names {
            if !seen.insert(n.name.clone()) {
                self.error(
                    "E0107",
                    n.span,
                    format!("`{}` is listed as an output twice", n.name),
                );
                continue;
            }
            match self.globals.get(&n.name) {
                Some(Global::Func) => pipeline.outputs.push(n.name.clone()),
                Some(Global::Input(_)) => {
                    self.error(
                        "E0107",
                        n.span,
                        format!("`{}` is an input, not a func", n.name),
                    )
                    .notes
                    .push("an output must be a func; write e.g. `out(x, y) = in(x, y)`".into());
                }
                Some(Global::Broken) => {}
                Some(_) => {
                    self.error("E0107", n.span, format!("`{}` is not a func", n.name));
                }
                None if self.global_spans.contains_key(&n.name)
                    || self.func_names.contains(&n.name) => {}
                None => {
                    let s = self.suggest(&n.name, true);
                    let d = self.error(
                        "E0107",
                        n.span,
                        format!("unknown func `{}` in output", n.name),
                    );
                    if let Some(s) = s {
                        d.notes.push(format!("did you mean `{s}`?"));
                    }
                }
            }
        }
        if names.is_empty() && !program.syntax_errors {
            let end = program.end;
            self.error("E0108", end, "the pipeline has no output")
                .notes
                .push("add a line such as `output result`".into());
        }
    }

    // ---- declarations -------------------------------------------------------

    fn type_name(&mut self, ty: &ast::Ident) -> Option<Type> {
        match Type::from_name(&ty.name) {
            Some(t) => Some(t),
            None => {
                self.error("E0110", ty.span, format!("unknown type `{}`", ty.name))
                    .notes
                    .push("the types are u8 u16 u32 i8 i16 i32 f32".into());
                None
            }
        }
    }

    fn input(&mut self, ty: &ast::Ident, name: &ast::Ident, dims: &[ast::Ident], span: Span) {
        let t = self.type_name(ty);
        if t == Some(Type::BOOL) {
            self.error("E0110", ty.span, "inputs cannot be bool images");
            return self.mark_broken(name);
        }
        if dims.is_empty() || dims.len() > 4 {
            self.error(
                "E0307",
                span,
                format!(
                    "an input has 1 to 4 dimensions, `{}` has {}",
                    name.name,
                    dims.len()
                ),
            );
            return self.mark_broken(name);
        }
        let mut seen = HashSet::default();
        for d in dims {
            if !seen.insert(&d.name) {
                self.error(
                    "E0307",
                    d.span,
                    format!("dimension `{}` is named twice", d.name),
                );
                return self.mark_broken(name);
            }
        }
        let Some(t) = t else {
            return self.mark_broken(name);
        };
        if !self.claim(name) {
            return;
        }
        let info = InputInfo {
            ty: t,
            dims: dims.iter().map(|d| d.name.clone()).collect(),
        };
        self.inputs.push(Input {
            name: name.name.clone(),
            ty: t,
            dims: info.dims.clone(),
            span,
        });
        self.globals.insert(name.name.clone(), Global::Input(info));
    }

    /// A compile-time constant value of a global expression.
    fn constant(&mut self, e: &ast::Expr, what: &str) -> Option<(f64, Type)> {
        let mut scope = Scope::new(Ctx::Global, "");
        let t = self.expr(e, &mut scope)?;
        let ty = t.ty();
        let expr = match t.lit {
            Some(Lit::Int(v)) => return Some((v as f64, Type::I32)),
            Some(Lit::Float(v)) => return Some((v, Type::F32)),
            None => t.expr,
        };
        match const_value(&expr) {
            Some(v) => Some((v, ty)),
            None => {
                self.error("E0208", e.span, format!("{what} must be a constant"))
                    .notes
                    .push("use literals and arithmetic on them".into());
                None
            }
        }
    }

    fn param(
        &mut self,
        ty: &ast::Ident,
        name: &ast::Ident,
        default: Option<&ast::Expr>,
        range: Option<&ast::RangeAst>,
        span: Span,
    ) {
        let Some(t) = self.type_name(ty) else {
            return self.mark_broken(name);
        };
        if t.is_bool() {
            self.error(
                "E0403",
                ty.span,
                "parameters are numbers; bool parameters are not supported",
            )
            .notes
            .push("use an i32 parameter with range 0 .. 1".into());
            return self.mark_broken(name);
        }
        let mut ok = true;
        let check_value =
            |c: &mut Self, e: &ast::Expr, what: &str, code: &'static str| -> Option<f64> {
                let (v, _) = c.constant(e, what)?;
                if t.is_integer() && v.fract() != 0.0 {
                    c.error(
                        code,
                        e.span,
                        format!("{what} {v} is not an integer, but `{}` is {t}", name.name),
                    );
                    return None;
                }
                if v < t.min_value() || v > t.max_value() {
                    c.error(code, e.span, format!("{what} {v} does not fit in {t}"));
                    return None;
                }
                Some(v)
            };
        let default_value = match default {
            Some(e) => {
                let v = check_value(self, e, "the default value", "E0401");
                ok &= v.is_some();
                v
            }
            None => None,
        };
        let range_value = match range {
            Some(r) => {
                let lo = check_value(self, &r.min, "the lower bound", "E0402");
                let hi = check_value(self, &r.end, "the upper bound", "E0402");
                match (lo, hi) {
                    (Some(lo), Some(hi)) if lo > hi => {
                        self.error(
                            "E0402",
                            r.span,
                            format!("empty range: {lo} is greater than {hi}"),
                        )
                        .notes
                        .push("a parameter range `lo .. hi` includes both ends".into());
                        ok = false;
                        None
                    }
                    (Some(lo), Some(hi)) => Some((lo, hi)),
                    _ => {
                        ok = false;
                        None
                    }
                }
            }
            None => None,
        };
        if let (Some(v), Some((lo, hi)), Some(d)) = (default_value, range_value, default)
            && (v < lo || v > hi)
        {
            self.error(
                "E0401",
                d.span,
                format!("the default value {v} is outside the range {lo} .. {hi}"),
            )
            .labels
            .push((
                range.map(|r| r.span).unwrap_or(span),
                "range declared here".into(),
            ));
            ok = false;
        }
        if !ok {
            return self.mark_broken(name);
        }
        if !self.claim(name) {
            return;
        }
        self.params.push(Param {
            name: name.name.clone(),
            ty: t,
            default: default_value,
            range: range_value,
            span,
        });
        self.globals.insert(name.name.clone(), Global::Param(t));
    }

    fn int_expr(&mut self, e: &ast::Expr, scope: &mut Scope, what: &str) -> Option<Expr> {
        let t = self.expr(e, scope)?;
        if !t.ty().is_integer() {
            self.error(
                "E0205",
                e.span,
                format!("{what} must be an integer, found {}", t.ty()),
            )
            .notes
            .push(if t.ty().is_float() {
                "convert it with i32(...), after floor/round if needed".to_string()
            } else {
                "bool values cannot be used as numbers; use select(c, 1, 0)".to_string()
            });
            return None;
        }
        match types::coerce(&t, Type::I32) {
            Ok(e) => Some(e),
            Err(err) => {
                self.type_error(err, e.span, &[]);
                None
            }
        }
    }

    fn rdom(
        &mut self,
        name: &ast::Ident,
        ranges: &[ast::RangeAst],
        predicate: Option<&ast::Expr>,
        span: Span,
    ) {
        if ranges.len() > 4 {
            self.error(
                "E0308",
                span,
                format!(
                    "an rdom has 1 to 4 dimensions, `{}` has {}",
                    name.name,
                    ranges.len()
                ),
            );
            return self.mark_broken(name);
        }
        let mut dims = Vec::new();
        let mut ok = true;
        for (i, r) in ranges.iter().enumerate() {
            let mut scope = Scope::new(Ctx::Global, &name.name);
            let min = self.int_expr(&r.min, &mut scope, "an rdom bound");
            let end = self.int_expr(&r.end, &mut scope, "an rdom bound");
            let (Some(min), Some(end)) = (min, end) else {
                ok = false;
                continue;
            };
            let extent = simplify_sub(&end, &min);
            if let Some(ext) = extent.as_int()
                && ext <= 0
            {
                self.error(
                    "E0308",
                    r.span,
                    format!("this range is empty ({ext} points)"),
                )
                .notes
                .push("rdom ranges are half-open: `min .. end` covers min to end - 1".into());
                ok = false;
            }
            dims.push(RVar {
                name: format!("{}.{}", name.name, RVAR_NAMES[i]),
                min,
                extent,
            });
        }
        if !ok {
            return self.mark_broken(name);
        }
        if !self.claim(name) {
            return;
        }
        let mut rdom = RDom {
            name: name.name.clone(),
            dims,
            predicate: None,
            span,
        };
        // The predicate may use this rdom's own variables.
        self.globals
            .insert(name.name.clone(), Global::RDom(rdom.clone()));
        if let Some(p) = predicate {
            let mut scope = Scope::new(Ctx::Predicate, &name.name);
            scope.rdom_owner = Some(name.name.clone());
            if let Some(t) = self.expr(p, &mut scope) {
                if t.ty().is_bool() && t.lit.is_none() {
                    rdom.predicate = Some(t.expr);
                    self.globals.insert(name.name.clone(), Global::RDom(rdom));
                } else {
                    self.error(
                        "E0203",
                        p.span,
                        format!("the `where` predicate must be bool, found {}", t.ty()),
                    );
                }
            }
        }
    }

    /// Types the condition of every `specialize` call of `block`: a `bool`
    /// of parameters, input sizes and global lets, like a global let's
    /// value (E0610 otherwise).
    fn specialize_conditions(&mut self, block: &ast::ScheduleBlock) -> Conditions {
        let mut out = Conditions::default();
        for chain in &block.chains {
            for call in &chain.calls {
                let [cond] = call.args.as_slice() else {
                    continue;
                };
                if call.name.name != "specialize" {
                    continue;
                }
                let mut scope = Scope::new(Ctx::Global, "");
                let Some(t) = self.expr(cond, &mut scope) else {
                    continue;
                };
                if t.ty() != Type::BOOL {
                    self.error(
                        "E0610",
                        cond.span,
                        format!(
                            "the condition of `specialize` must be bool, found {}",
                            t.ty()
                        ),
                    )
                    .notes
                    .push(
                        "e.g. `out.specialize(photo.width >= 64)` or `out.specialize(mode == 1)`"
                            .into(),
                    );
                    continue;
                }
                out.insert((cond.span.start, cond.span.end), t.expr);
            }
        }
        out
    }

    fn global_let(&mut self, name: &ast::Ident, value: &ast::Expr) {
        let mut scope = Scope::new(Ctx::Global, &name.name);
        let t = self.expr(value, &mut scope);
        let Some(t) = t else {
            // Claim the name anyway so later uses are not reported as unknown.
            return self.mark_broken(name);
        };
        let depth = scope.let_depth + value.depth;
        if depth > MAX_LET_DEPTH {
            self.error("E0004", value.span, "global lets refer to each other too deeply")
                .notes
                .push(format!(
                    "substituted, this value would be {depth} levels deep; at most {MAX_LET_DEPTH} are allowed"
                ));
            return self.mark_broken(name);
        }
        if self.claim(name) {
            self.globals
                .insert(name.name.clone(), Global::Let(t, depth));
        }
    }

    fn boundary(
        &mut self,
        name: &ast::Ident,
        condition: &str,
        args: &[ast::Expr],
        call_span: Span,
        span: Span,
    ) {
        let want = if condition == "constant_exterior" {
            2
        } else {
            1
        };
        if args.len() != want && !(condition == "constant_exterior" && args.len() == 1) {
            self.error(
                "E0201",
                call_span,
                format!(
                    "`{condition}` takes {want} argument{}, but {} {} given",
                    if want == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            );
            return;
        }
        let input = match &args[0].kind {
            ExprKind::Name(n) => n.clone(),
            _ => {
                self.error(
                    "E0501",
                    args[0].span,
                    format!("`{condition}` wraps an input image, given by name"),
                );
                return;
            }
        };
        let info = match self.globals.get(&input) {
            Some(Global::Input(info)) => info.clone(),
            Some(Global::Func) => {
                self.error("E0501", args[0].span, format!("`{input}` is a func; boundary conditions wrap inputs"))
                    .notes
                    .push("funcs are defined everywhere already; clamp their coordinates with clamp(...) instead".into());
                return;
            }
            _ => {
                let s = self.suggest(&input, false);
                let d = self.error("E0101", args[0].span, format!("unknown input `{input}`"));
                if let Some(s) = s {
                    d.notes.push(format!("did you mean `{s}`?"));
                }
                return;
            }
        };
        let value = if let Some(v) = args.get(1) {
            let mut scope = Scope::new(Ctx::Global, &name.name);
            let t = self.expr(v, &mut scope);
            let Some(t) = t else { return };
            match types::coerce(&t, info.ty) {
                Ok(e) => Some(e),
                Err(e) => {
                    self.type_error(e, v.span, &[]);
                    return;
                }
            }
        } else {
            None
        };
        if let Some(f) = boundary::boundary_func(
            &name.name, condition, &input, info.ty, &info.dims, value, span,
        ) {
            self.sigs.insert(
                name.name.clone(),
                Sig {
                    ty: Some(info.ty),
                    arity: info.dims.len(),
                },
            );
            self.built.insert(name.name.clone(), f);
        }
    }

    fn border(
        &mut self,
        name: &ast::Ident,
        source: &ast::Ident,
        widths: &[(i64, Span)],
        rules: &[ast::BorderRule],
        span: Span,
    ) {
        let info = match self.globals.get(&source.name) {
            Some(Global::Input(info)) => info.clone(),
            _ => {
                self.error(
                    "E0501",
                    source.span,
                    format!("border rules extend an input; `{}` is not one", source.name),
                );
                return;
            }
        };
        let n = info.dims.len();
        let width_span = widths.iter().map(|w| w.1).reduce(Span::to).unwrap_or(span);
        let w: Vec<i64> = if widths.len() == 1 {
            vec![widths[0].0; n]
        } else if widths.len() == n {
            widths.iter().map(|w| w.0).collect()
        } else {
            self.error(
                "E0502",
                width_span,
                format!(
                    "`{}` has {n} dimensions but {} widths are given",
                    source.name,
                    widths.len()
                ),
            );
            return;
        };
        if let Some(big) = w.iter().find(|w| **w > MAX_BORDER_WIDTH) {
            self.error(
                "E0502",
                width_span,
                format!("a border width of {big} is too large; at most {MAX_BORDER_WIDTH}"),
            );
            return;
        }
        let mut ok = true;
        let mut seen: HashMap<Vec<BorderCoord>, Span> = HashMap::default();
        let mut arms: Vec<(usize, Expr, Expr)> = Vec::new();
        let vars: Vec<Expr> = info.dims.iter().map(|d| Expr::var_i32(d.clone())).collect();
        let field = |f: &str, d: usize| Expr::var_i32(buffer_field(&source.name, f, d));
        for rule in rules {
            if rule.coords.len() != n {
                self.error(
                    "E0502",
                    rule.lhs_span,
                    format!(
                        "a rule for `{}` needs {n} coordinates, found {}",
                        source.name,
                        rule.coords.len()
                    ),
                );
                ok = false;
                continue;
            }
            if rule.coords.iter().all(|c| *c == BorderCoord::Any) {
                self.error(
                    "E0502",
                    rule.lhs_span,
                    "a border rule must name at least one side (`-k` or `+k`)",
                );
                ok = false;
                continue;
            }
            let mut bad = false;
            for (d, c) in rule.coords.iter().enumerate() {
                if let BorderCoord::Before(k) | BorderCoord::After(k) = c
                    && (*k < 1 || *k > w[d])
                {
                    self.error("E0502", rule.lhs_span, format!(
                            "coordinate {} of this rule is {} pixels outside, but the declared width is {}",
                            d, k, w[d]))
                            .labels.push((width_span, "width declared here".into()));
                    bad = true;
                }
            }
            if let Some(prev) = seen.get(&rule.coords) {
                self.error(
                    "E0502",
                    rule.lhs_span,
                    "this border pixel already has a rule",
                )
                .labels
                .push((*prev, "first rule here".into()));
                bad = true;
            }
            if bad {
                ok = false;
                continue;
            }
            seen.insert(rule.coords.clone(), rule.lhs_span);
            let mut scope = Scope::new(Ctx::Border, &name.name);
            scope.border = Some((
                source.name.clone(),
                rule.coords.iter().map(|c| *c == BorderCoord::Any).collect(),
            ));
            let Some(t) = self.expr(&rule.value, &mut scope) else {
                ok = false;
                continue;
            };
            let value = match t.lit {
                Some(_) => types::coerce(&t, info.ty),
                None if t.ty() == info.ty => Ok(t.expr.clone()),
                None => Err(TypeError::new(
                    "E0206",
                    format!(
                        "this rule's value has type {}, but `{}` is {}",
                        t.ty(),
                        source.name,
                        info.ty
                    ),
                )
                .note(format!(
                    "convert it explicitly, e.g. `{}(...)` or `sat_{}(...)`",
                    info.ty, info.ty
                ))),
            };
            let value = match value {
                Ok(v) => v,
                Err(e) => {
                    self.type_error(e, rule.value.span, &[]);
                    ok = false;
                    continue;
                }
            };
            let cond = rule
                .coords
                .iter()
                .enumerate()
                .map(|(d, c)| {
                    let v = vars[d].clone();
                    match c {
                        BorderCoord::Before(k) => {
                            Expr::eq(v, Expr::sub(field("min", d), Expr::i32(*k)))
                        }
                        BorderCoord::After(k) => Expr::eq(
                            v,
                            Expr::add(
                                Expr::add(field("min", d), field("extent", d)),
                                Expr::i32(k - 1),
                            ),
                        ),
                        BorderCoord::Any => Expr::and(
                            Expr::le(field("min", d), v.clone()),
                            Expr::lt(v, Expr::add(field("min", d), field("extent", d))),
                        ),
                    }
                })
                .reduce(Expr::and)
                .unwrap_or_else(|| Expr::bool(true));
            let specificity = rule
                .coords
                .iter()
                .filter(|c| **c == BorderCoord::Any)
                .count();
            arms.push((specificity, cond, value));
        }
        if !ok {
            return;
        }
        // Corners (fewer `*`) are tested before edges.
        arms.sort_by_key(|a| a.0);
        let interior: Vec<Expr> = vars
            .iter()
            .enumerate()
            .map(|(d, v)| {
                Expr::clamp(
                    Expr::likely(v.clone()),
                    field("min", d),
                    Expr::sub(Expr::add(field("min", d), field("extent", d)), Expr::i32(1)),
                )
            })
            .collect();
        let read = Expr::call_input(info.ty, source.name.clone(), interior);
        let mut rules_value = read.clone();
        for (_, cond, v) in arms.into_iter().rev() {
            rules_value = Expr::select(cond, v, rules_value);
        }
        // Almost every read is inside the image, so that test comes first,
        // marked likely: `partition_loops` then gives the loops over the
        // interior a steady state without any rule, which `vectorize` can
        // widen. Tested only after the rules (each an equality with a
        // coordinate outside the image), the interior was a steady state
        // the partitioner could not describe, and the stage ran scalar
        // code. No rule matches inside the image: the value is the same.
        let inside = vars
            .iter()
            .enumerate()
            .map(|(d, v)| {
                Expr::and(
                    Expr::le(field("min", d), v.clone()),
                    Expr::lt(v.clone(), Expr::add(field("min", d), field("extent", d))),
                )
            })
            .reduce(Expr::and)
            .unwrap_or_else(|| Expr::bool(true));
        let value = Expr::select(Expr::likely(inside), read, rules_value);
        self.sigs.insert(
            name.name.clone(),
            Sig {
                ty: Some(info.ty),
                arity: n,
            },
        );
        self.built.insert(
            name.name.clone(),
            Func {
                name: name.name.clone(),
                ty: info.ty,
                args: info.dims.clone(),
                value,
                updates: Vec::new(),
                origin: FuncOrigin::BorderRule {
                    input: source.name.clone(),
                    width: w.clone(),
                },
                span,
            },
        );
        self.borders.push(BorderInfo {
            func: name.name.clone(),
            widths: w,
            rules: rules.iter().map(|r| r.coords.clone()).collect(),
            span: name.span.to(source.span),
            width_span,
        });
    }

    // ---- funcs ------------------------------------------------------------

    /// Orders funcs callees first (source order among independent ones)
    /// and reports cycles through pure definitions as recursion.
    fn order_funcs(&mut self, decls: &[(String, Decl)]) -> Vec<usize> {
        let index: HashMap<&str, usize> = decls
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.as_str(), i))
            .collect();
        let n = decls.len();
        let mut edges: Vec<Vec<(usize, Span)>> = vec![Vec::new(); n];
        for (i, (_, decl)) in decls.iter().enumerate() {
            if let Decl::User(defs) = decl {
                for (k, def) in defs.iter().enumerate() {
                    let Stmt::Define { args, value, .. } = def else {
                        continue;
                    };
                    let mut calls = Vec::new();
                    for a in args {
                        collect_calls(a, &mut calls);
                    }
                    collect_calls(value, &mut calls);
                    for (callee, span) in calls {
                        if let Some(&j) = index.get(callee.as_str()) {
                            // Updates may read the func they update (scans).
                            if j == i && k > 0 {
                                continue;
                            }
                            edges[i].push((j, span));
                        }
                    }
                }
            }
        }
        // Kahn's algorithm on callee -> caller, smallest index first.
        let mut pending: Vec<usize> = edges
            .iter()
            .map(|e| e.iter().map(|x| x.0).collect::<BTreeSet<_>>().len())
            .collect();
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, e) in edges.iter().enumerate() {
            for j in e.iter().map(|x| x.0).collect::<BTreeSet<_>>() {
                callers[j].push(i);
            }
        }
        let mut ready: BTreeSet<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
        let mut order = Vec::new();
        while let Some(&i) = ready.iter().next() {
            ready.remove(&i);
            order.push(i);
            for &c in &callers[i] {
                pending[c] -= 1;
                if pending[c] == 0 {
                    ready.insert(c);
                }
            }
        }
        if order.len() < n {
            let done: HashSet<usize> = order.iter().copied().collect();
            for i in 0..n {
                if done.contains(&i) {
                    continue;
                }
                // Funcs left over only because they call into a cycle are
                // checked last (their callees' types are unknown, which
                // stays silent); only funcs on a cycle are reported.
                order.push(i);
                if !reaches_itself(i, &edges) {
                    continue;
                }
                // Point at a call that stays inside the cycle.
                let Some(&(j, call_span)) = edges[i]
                    .iter()
                    .find(|(j, _)| !done.contains(j) && reaches(*j, i, &edges))
                else {
                    continue;
                };
                let name = &decls[i].0;
                let def_span = self.global_spans.get(name).copied().unwrap_or(call_span);
                let msg = if i == j {
                    format!("`{name}` is defined in terms of itself")
                } else {
                    format!(
                        "`{name}` and `{}` are defined in terms of each other",
                        decls[j].0
                    )
                };
                self.error("E0301", call_span, msg)
                    .with_label_mut(def_span, format!("`{name}` defined here"))
                    .notes
                    .push("funcs cannot be defined in a cycle: only an update definition may read its own func (use an rdom for scans)".into());
            }
        }
        order
    }

    fn user_func(&mut self, name: &str, defs: &[&Stmt]) {
        let Stmt::Define {
            name: ident,
            args,
            op,
            op_span,
            value,
            span,
        } = defs[0]
        else {
            return;
        };
        if *op != AssignOp::Set {
            self.error(
                "E0109",
                *op_span,
                format!("the first definition of `{name}` must be a pure definition with `=`"),
            )
            .notes
            .push(format!(
                "give `{name}` an initial value first, e.g. `{name}(x) = 0`"
            ));
            return;
        }
        let mut pure = Vec::new();
        let mut ok = true;
        for a in args {
            match &a.kind {
                ExprKind::Name(v) if !pure.contains(v) && !self.is_value_global(v) => {
                    pure.push(v.clone())
                }
                ExprKind::Name(v) if pure.contains(v) => {
                    self.error(
                        "E0105",
                        a.span,
                        format!("pure variable `{v}` appears twice"),
                    );
                    ok = false;
                }
                ExprKind::Name(v) => {
                    let what = match self.globals.get(v) {
                        Some(Global::RDom(_)) => "an rdom",
                        Some(Global::Param(_)) => "a parameter",
                        Some(Global::Input(_)) => "an input",
                        Some(Global::Let(..)) => "a global let",
                        _ => "a func",
                    };
                    let d = self.error(
                        "E0105",
                        a.span,
                        format!("`{v}` is {what}, not a new pure variable"),
                    );
                    if what == "an rdom" {
                        d.notes.push(format!("the first definition of `{name}` must be pure; rdoms go in update definitions"));
                    } else {
                        d.notes.push(
                            "the arguments of a pure definition are fresh variable names".into(),
                        );
                    }
                    ok = false;
                }
                _ => {
                    self.error("E0105", a.span, "the arguments of a pure definition must be variable names")
                        .notes
                        .push(format!("the first definition of `{name}` must be pure; give it an initial value, then add update definitions"));
                    ok = false;
                }
            }
        }
        if !ok {
            return;
        }
        let mut scope = Scope::new(Ctx::Pure, name);
        scope.pure_vars = pure.clone();
        let Some(t) = self.expr(value, &mut scope) else {
            return;
        };
        let value_expr = match t.finish() {
            Ok(e) => e,
            Err(e) => {
                self.type_error(e, value.span, &[]);
                return;
            }
        };
        let ty = value_expr.ty();
        self.sigs.insert(
            name.to_string(),
            Sig {
                ty: Some(ty),
                arity: pure.len(),
            },
        );
        let mut func = Func {
            name: name.to_string(),
            ty,
            args: pure.clone(),
            value: value_expr,
            updates: Vec::new(),
            origin: FuncOrigin::User,
            span: ident.span.to(*span),
        };
        let mut all_ok = true;
        for def in &defs[1..] {
            match self.update(&func, def) {
                Some(u) => func.updates.push(u),
                None => all_ok = false,
            }
        }
        if !all_ok {
            // Keep the signature so callers still check, but drop the func.
            return;
        }
        self.built.insert(name.to_string(), func);
    }

    fn update(&mut self, func: &Func, def: &Stmt) -> Option<Update> {
        let Stmt::Define {
            args,
            op,
            op_span,
            value,
            span,
            ..
        } = def
        else {
            return None;
        };
        let name = func.name.as_str();
        if args.len() != func.args.len() {
            self.error(
                "E0201",
                *span,
                format!(
                    "`{name}` has {} dimensions, but this update gives {} coordinates",
                    func.args.len(),
                    args.len()
                ),
            );
            return None;
        }
        let mut scope = Scope::new(Ctx::Update, name);
        // Plain names that are not globals are the update's pure variables
        // and must sit where the pure definition has them.
        for (j, a) in args.iter().enumerate() {
            if let ExprKind::Name(v) = &a.kind
                && !self.is_value_global(v)
            {
                if *v != func.args[j] {
                    let d = self.error(
                        "E0304",
                        a.span,
                        format!("`{v}` is not the pure variable at position {j} of `{name}`"),
                    );
                    d.notes.push(format!(
                        "`{name}`'s pure variables are ({}); an update keeps each in its place",
                        func.args.join(", ")
                    ));
                    return None;
                }
                scope.pure_vars.push(v.clone());
            }
        }
        let mut lhs = Vec::new();
        let mut ok = true;
        for a in args {
            let what = format!("a coordinate of `{name}`");
            match self.int_expr(a, &mut scope, &what) {
                Some(e) => lhs.push(e),
                None => ok = false,
            }
        }
        let t = self.expr(value, &mut scope);
        if !ok {
            return None;
        }
        let t = t?;
        let current = Typed::of(Expr::call_func(func.ty, name, lhs.clone()));
        let combined = match op {
            AssignOp::Set => Ok(t),
            AssignOp::Add => types::binary(BinOp::Add, &current, &t),
            AssignOp::Sub => types::binary(BinOp::Sub, &current, &t),
            AssignOp::Mul => types::binary(BinOp::Mul, &current, &t),
            AssignOp::Min => types::binary(BinOp::Min, &current, &t),
            AssignOp::Max => types::binary(BinOp::Max, &current, &t),
        };
        let combined = match combined {
            Ok(c) => c,
            Err(e) => {
                let e = if e.arg == Some(1) {
                    TypeError { arg: None, ..e }
                } else {
                    e
                };
                self.type_error(e, value.span, &[]);
                return None;
            }
        };
        let new_value = if combined.lit.is_some() {
            match types::coerce(&combined, func.ty) {
                Ok(v) => v,
                Err(e) => {
                    self.type_error(e, value.span, &[]);
                    return None;
                }
            }
        } else if combined.ty() != func.ty {
            let d = self.error(
                "E0206",
                value.span,
                format!(
                    "this update produces {}, but `{name}` holds {}",
                    combined.ty(),
                    func.ty
                ),
            );
            d.labels.push((
                *op_span,
                format!("`{name}` was defined as {} by its pure definition", func.ty),
            ));
            d.notes.push(format!(
                "convert the value explicitly, e.g. `{}(...)`",
                func.ty
            ));
            return None;
        } else {
            combined.expr
        };
        let rdom = match &scope.rdom_owner {
            Some(r) => match self.globals.get(r) {
                Some(Global::RDom(rd)) => Some(rd.clone()),
                _ => None,
            },
            None => None,
        };
        Some(Update {
            args: lhs,
            value: new_value,
            rdom,
            span: *span,
        })
    }

    // ---- expressions ------------------------------------------------------

    /// Whether `v` names a global value (param, let, rdom). Pure variables
    /// may reuse the names of funcs and inputs, which are always called
    /// with arguments, but not of values, which would be shadowed silently.
    fn is_value_global(&self, v: &str) -> bool {
        matches!(
            self.globals.get(v),
            Some(Global::Param(_) | Global::Let(..) | Global::RDom(_) | Global::Broken)
        )
    }

    fn suggest(&self, name: &str, funcs_only: bool) -> Option<String> {
        let mut best: Option<(usize, String)> = None;
        let candidates = self
            .global_spans
            .keys()
            .filter(|n| !funcs_only || self.func_names.contains(*n))
            .cloned()
            .chain(if funcs_only {
                Vec::new()
            } else {
                BUILTINS.iter().map(|s| s.to_string()).collect()
            });
        for c in candidates {
            let d = edit_distance(name, &c);
            let limit = (name.len().max(c.len()) / 3).max(1);
            if d <= limit && d < name.len() && best.as_ref().is_none_or(|b| d < b.0) && c != name {
                best = Some((d, c));
            }
        }
        best.map(|b| b.1)
    }

    fn suggest_in_scope(&self, name: &str, scope: &Scope) -> Option<String> {
        let mut best = self
            .suggest(name, false)
            .map(|s| (edit_distance(name, &s), s));
        for c in scope
            .pure_vars
            .iter()
            .chain(scope.locals.iter().map(|l| &l.0))
        {
            let d = edit_distance(name, c);
            if d <= (name.len().max(c.len()) / 3).max(1)
                && d < name.len()
                && best.as_ref().is_none_or(|b| d < b.0)
            {
                best = Some((d, c.clone()));
            }
        }
        best.map(|b| b.1)
    }

    /// Records that rdom `rdom` is used here; reports a use outside a
    /// reduction or a second rdom in the same reduction.
    fn use_rdom(&mut self, rdom: &str, span: Span, scope: &mut Scope) -> bool {
        let slot = if let Some(frame) = scope.frames.last_mut() {
            &mut frame.rdom
        } else {
            match scope.ctx {
                Ctx::Update | Ctx::Predicate => &mut scope.rdom_owner,
                _ => {
                    let d = self.error(
                        "E0302",
                        span,
                        format!("rdom `{rdom}` used outside a reduction"),
                    );
                    d.notes.push(match scope.ctx {
                        Ctx::Pure => "rdom variables may appear in update definitions or inside sum(...), minimum(...) and the other inline reductions".to_string(),
                        _ => "rdom variables only make sense in update definitions and inline reductions".to_string(),
                    });
                    return false;
                }
            }
        };
        match slot {
            Some(existing) if existing != rdom => {
                let existing = existing.clone();
                let d = self.error(
                    "E0303",
                    span,
                    format!(
                        "this uses rdom `{rdom}`, but the same reduction already uses `{existing}`"
                    ),
                );
                d.notes.push("one update or inline reduction iterates over a single rdom; combine them into one multi-dimensional rdom".into());
                false
            }
            _ => {
                *slot = Some(rdom.to_string());
                true
            }
        }
    }

    fn rvar(&mut self, rdom: &RDom, dim: usize, span: Span, scope: &mut Scope) -> Option<Typed> {
        if !self.use_rdom(&rdom.name, span, scope) {
            return None;
        }
        Some(Typed::of(Expr::var_i32(rdom.dims[dim].name.clone())))
    }

    fn name(&mut self, n: &str, span: Span, scope: &mut Scope) -> Option<Typed> {
        if let Some((_, t, _)) = scope.locals.iter().rev().find(|(l, _, _)| l == n) {
            return Some(t.clone());
        }
        if scope.pure_vars.iter().any(|v| v == n) {
            return Some(Typed::of(Expr::var_i32(n)));
        }
        match self.globals.get(n).cloned() {
            Some(Global::Param(ty)) => Some(Typed::of(Expr::var(ty, n))),
            Some(Global::Let(t, depth)) => {
                scope.let_depth = scope.let_depth.max(depth);
                Some(t)
            }
            Some(Global::RDom(r)) => {
                if r.dims.len() == 1 {
                    self.rvar(&r, 0, span, scope)
                } else {
                    let fields: Vec<String> = (0..r.dims.len())
                        .map(|i| format!("{n}.{}", RVAR_NAMES[i]))
                        .collect();
                    self.error(
                        "E0106",
                        span,
                        format!(
                            "rdom `{n}` has {} dimensions; name one of them",
                            r.dims.len()
                        ),
                    )
                    .notes
                    .push(format!("write {}", fields.join(", ")));
                    None
                }
            }
            Some(Global::Input(_)) => {
                self.error(
                    "E0104",
                    span,
                    format!("`{n}` is an image and needs coordinates, e.g. `{n}(x, y)`"),
                );
                None
            }
            Some(Global::Func) => {
                self.error(
                    "E0104",
                    span,
                    format!("`{n}` is a func and needs coordinates, e.g. `{n}(x, y)`"),
                );
                None
            }
            Some(Global::Broken) => None,
            None if self.func_names.contains(n) => {
                self.error(
                    "E0104",
                    span,
                    format!("`{n}` is a func and needs coordinates, e.g. `{n}(x, y)`"),
                );
                None
            }
            None if self.global_spans.contains_key(n) => None, // its definition had errors
            None => {
                let s = self.suggest_in_scope(n, scope);
                let d = self.error("E0101", span, format!("unknown name `{n}`"));
                if let Some(s) = s {
                    d.notes.push(format!("did you mean `{s}`?"));
                }
                if scope.ctx == Ctx::Global && n.len() <= 2 {
                    d.notes.push("global lets cannot use pure variables; make it a func, e.g. `k(x, y) = ...`".into());
                }
                None
            }
        }
    }

    fn input_property(
        &mut self,
        input: &str,
        info: &InputInfo,
        prop: &str,
        dim: Option<(i64, Span)>,
        span: Span,
    ) -> Option<Typed> {
        let (field, d) = match (prop, dim) {
            ("width", None) => ("extent", 0),
            ("height", None) => ("extent", 1),
            ("channels", None) => ("extent", 2),
            ("extent", Some((d, _))) | ("min", Some((d, _))) => (prop, d),
            ("extent" | "min", None) => {
                self.error(
                    "E0106",
                    span,
                    format!("`{input}.{prop}` needs a dimension, e.g. `{input}.{prop}(0)`"),
                );
                return None;
            }
            _ => {
                self.error("E0106", span, format!("images have no property `{prop}`"))
                    .notes
                    .push(
                        "the properties are width, height, channels, extent(d) and min(d)".into(),
                    );
                return None;
            }
        };
        if d < 0 || d as usize >= info.dims.len() {
            let at = dim.map(|x| x.1).unwrap_or(span);
            self.error(
                "E0106",
                at,
                format!(
                    "`{input}` has {} dimension{}, so it has no dimension {d}",
                    info.dims.len(),
                    if info.dims.len() == 1 { "" } else { "s" }
                ),
            );
            return None;
        }
        Some(Typed::of(Expr::var_i32(buffer_field(
            input, field, d as usize,
        ))))
    }

    fn expr(&mut self, e: &ast::Expr, scope: &mut Scope) -> Option<Typed> {
        match &e.kind {
            ExprKind::Int(v) => Some(Typed::int_lit(*v)),
            ExprKind::Float(v) => Some(Typed::float_lit(*v)),
            ExprKind::Name(n) => self.name(n, e.span, scope),
            ExprKind::Error => None,
            ExprKind::Star => {
                self.error(
                    "E0507",
                    e.span,
                    "`*` is only allowed as a coordinate in border rules",
                );
                None
            }
            ExprKind::Kernel(_) => {
                self.error(
                    "E0209",
                    e.span,
                    "a kernel literal is only allowed as the second argument of `convolve`",
                );
                None
            }
            ExprKind::Window { .. } => {
                self.error(
                    "E0704",
                    e.span,
                    "a window view must be the argument of sum, mean, min, max or convolve",
                )
                .notes
                .push("e.g. `mean(f[x-1 : 3, y-1 : 3])`".into());
                None
            }
            ExprKind::Field { base, field } => self.field(base, field, e.span, scope),
            ExprKind::Unary { op, operand } => {
                let t = self.expr(operand, scope)?;
                let op = match op {
                    ast::UnaryOp::Neg => UnaryOp::Neg,
                    ast::UnaryOp::Not => UnaryOp::Not,
                    ast::UnaryOp::BitNot => UnaryOp::BitNot,
                };
                match types::unary(op, &t) {
                    Ok(v) => Some(v),
                    Err(err) => {
                        self.type_error(err, e.span, &[]);
                        None
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs, scope);
                let b = self.expr(rhs, scope);
                let (a, b) = (a?, b?);
                let op = binop(*op);
                match types::binary(op, &a, &b) {
                    Ok(v) => Some(v),
                    Err(err) => {
                        let code = err.code;
                        let arg = err.arg;
                        self.type_error(err, e.span, &[lhs.span, rhs.span]);
                        if code == "E0202" && arg.is_none() {
                            // Name both operand types.
                            if let Some(d) = self.diags.last_mut() {
                                d.labels
                                    .push((lhs.span, format!("this is {}", describe(&a))));
                                d.labels
                                    .push((rhs.span, format!("this is {}", describe(&b))));
                            }
                        }
                        None
                    }
                }
            }
            ExprKind::Let { name, value, body } => {
                let v = self.expr(value, scope)?;
                if v.lit.is_some() {
                    scope.locals.push((name.name.clone(), v, None));
                    let r = self.expr(body, scope);
                    scope.locals.pop();
                    return r;
                }
                let var = Typed::of(Expr::var(v.ty(), name.name.clone()));
                scope
                    .locals
                    .push((name.name.clone(), var, Some(v.expr.clone())));
                let r = self.expr(body, scope);
                scope.locals.pop();
                let r = r?;
                let body_expr = match r.clone().finish() {
                    Ok(b) => b,
                    Err(err) => {
                        self.type_error(err, body.span, &[]);
                        return None;
                    }
                };
                Some(Typed::of(Expr::let_in(
                    name.name.clone(),
                    v.expr,
                    body_expr,
                )))
            }
            ExprKind::Call { callee, args } => self.call(callee, args, e.span, scope),
        }
    }

    fn field(
        &mut self,
        base: &ast::Expr,
        field: &ast::Ident,
        span: Span,
        scope: &mut Scope,
    ) -> Option<Typed> {
        match &base.kind {
            ExprKind::Name(n)
                if !scope.locals.iter().any(|l| &l.0 == n) && !scope.pure_vars.contains(n) =>
            {
                match self.globals.get(n).cloned() {
                    Some(Global::RDom(r)) => {
                        let Some(dim) = RVAR_NAMES.iter().position(|x| *x == field.name) else {
                            self.error(
                                "E0106",
                                field.span,
                                format!(
                                    "rdom dimensions are named x, y, z, w; found `{}`",
                                    field.name
                                ),
                            );
                            return None;
                        };
                        if dim >= r.dims.len() {
                            self.error(
                                "E0106",
                                field.span,
                                format!(
                                    "rdom `{n}` has {} dimension{}, so it has no `.{}`",
                                    r.dims.len(),
                                    if r.dims.len() == 1 { "" } else { "s" },
                                    field.name
                                ),
                            );
                            return None;
                        }
                        self.rvar(&r, dim, span, scope)
                    }
                    Some(Global::Input(info)) => {
                        self.input_property(n, &info, &field.name, None, span)
                    }
                    _ => {
                        if self.globals.contains_key(n) || self.func_names.contains(n) {
                            self.error(
                                "E0106",
                                field.span,
                                format!("`{n}` has no field `{}`", field.name),
                            )
                            .notes
                            .push("fields exist on rdoms (r.x) and inputs (img.width)".into());
                        } else {
                            self.name(n, base.span, scope);
                        }
                        None
                    }
                }
            }
            ExprKind::Call { callee, args } if matches!(&callee.kind, ExprKind::Name(c) if c == "argmin" || c == "argmax") =>
            {
                let ExprKind::Name(c) = &callee.kind else {
                    return None;
                };
                self.arg_extremum(c, args, Some(field), span, scope)
            }
            _ => {
                self.error(
                    "E0106",
                    field.span,
                    format!("this value has no field `{}`", field.name),
                );
                None
            }
        }
    }

    fn call(
        &mut self,
        callee: &ast::Expr,
        args: &[ast::Expr],
        span: Span,
        scope: &mut Scope,
    ) -> Option<Typed> {
        let n = match &callee.kind {
            ExprKind::Name(n) => n.clone(),
            ExprKind::Field { base, field } => {
                if let ExprKind::Name(img) = &base.kind
                    && let Some(Global::Input(info)) = self.globals.get(img).cloned()
                {
                    if args.len() != 1 {
                        self.error(
                            "E0201",
                            span,
                            format!("`{img}.{}` takes 1 argument (a dimension)", field.name),
                        );
                        return None;
                    }
                    let d = match args[0].kind {
                        ExprKind::Int(d) => d,
                        _ => {
                            self.error(
                                "E0208",
                                args[0].span,
                                "the dimension must be an integer literal",
                            );
                            return None;
                        }
                    };
                    return self.input_property(
                        img,
                        &info,
                        &field.name,
                        Some((d, args[0].span)),
                        span,
                    );
                }
                self.error("E0104", callee.span, "this cannot be called");
                return None;
            }
            ExprKind::Call { callee: inner, .. } if matches!(&inner.kind, ExprKind::Name(c) if boundary::CONDITIONS.contains(&c.as_str())) =>
            {
                self.error(
                    "E0506",
                    callee.span,
                    "a boundary condition defines a func and must stand on its own line",
                )
                .notes
                .push("write `p = repeat_edge(input)` and then read `p(x, y)`".into());
                return None;
            }
            _ => {
                self.error(
                    "E0104",
                    callee.span,
                    "only funcs, images and builtins can be called",
                );
                return None;
            }
        };
        let callable =
            self.func_names.contains(&n) || matches!(self.globals.get(&n), Some(Global::Input(_)));
        if !callable && (scope.locals.iter().any(|l| l.0 == n) || scope.pure_vars.contains(&n)) {
            self.error(
                "E0104",
                callee.span,
                format!("`{n}` is a variable, not a func"),
            );
            return None;
        }
        // Border rule: reading the source with `*` coordinates.
        if let Some((src, stars)) = scope.border.clone()
            && src == n
        {
            return self.border_read(&n, &stars, args, span, scope);
        }
        let is_window = args.len() == 1 && matches!(args[0].kind, ExprKind::Window { .. });
        if matches!(n.as_str(), "sum" | "mean" | "min" | "max") && is_window {
            return self.window_op(&n, &args[0], None, span, scope);
        }
        if n == "convolve" {
            if args.len() != 2 {
                self.error(
                    "E0201",
                    span,
                    format!(
                        "`convolve` takes 2 arguments (a window and a kernel), but {} were given",
                        args.len()
                    ),
                );
                return None;
            }
            if !matches!(args[1].kind, ExprKind::Kernel(_)) {
                self.error(
                    "E0209",
                    args[1].span,
                    "the second argument of `convolve` must be a kernel literal like `[1, 2, 1]`",
                );
                return None;
            }
            if !matches!(args[0].kind, ExprKind::Window { .. }) {
                self.error("E0704", args[0].span, "the first argument of `convolve` must be a window view like `f[x-1 : 3, y-1 : 3]`");
                return None;
            }
            return self.window_op("convolve", &args[0], Some(&args[1]), span, scope);
        }
        if n == "mean" {
            self.error(
                "E0704",
                span,
                "`mean` takes a window view, e.g. `mean(f[x-1 : 3, y])`",
            );
            return None;
        }
        if REDUCTIONS.contains(&n.as_str()) {
            if n == "argmin" || n == "argmax" {
                return self.arg_extremum(&n, args, None, span, scope);
            }
            return self.inline_reduction(&n, args, span, scope);
        }
        if boundary::CONDITIONS.contains(&n.as_str()) {
            self.error(
                "E0506",
                span,
                format!("`{n}` defines a func and must stand on its own line"),
            )
            .notes
            .push(format!("write `p = {n}(input)` and then read `p(x, y)`"));
            return None;
        }
        match self.globals.get(&n).cloned() {
            Some(Global::Input(info)) => {
                if args.len() != info.dims.len() {
                    self.arity_error(&n, info.dims.len(), args.len(), span);
                    return None;
                }
                let coords = self.coords(&n, args, scope)?;
                return Some(Typed::of(Expr::call_input(info.ty, n, coords)));
            }
            Some(Global::Func) | None if self.func_names.contains(&n) => {
                if scope.ctx == Ctx::Global || scope.ctx == Ctx::Predicate {
                    self.error("E0306", span, format!("`{n}` is a func; global lets, rdom bounds and parameters cannot call funcs"))
                        .notes
                        .push("make the value a func with the coordinates it needs".into());
                    return None;
                }
                if scope.ctx == Ctx::Border {
                    self.error(
                        "E0502",
                        span,
                        format!("border rules may only read their own input, not `{n}`"),
                    );
                    return None;
                }
                let sig = self.sigs.get(&n).cloned();
                let coords = match &sig {
                    Some(s) if s.arity != args.len() => {
                        self.arity_error(&n, s.arity, args.len(), span);
                        return None;
                    }
                    _ => self.coords(&n, args, scope)?,
                };
                let ty = sig?.ty?;
                return Some(Typed::of(Expr::call_func(ty, n, coords)));
            }
            Some(Global::Broken) => return None,
            Some(Global::Param(_)) | Some(Global::Let(..)) | Some(Global::RDom(_)) => {
                self.error(
                    "E0104",
                    callee.span,
                    format!("`{n}` is a value, not a func; it takes no arguments"),
                );
                return None;
            }
            _ => {}
        }
        // Builtins and casts: check the arguments, then apply the rules.
        let mut typed = Vec::new();
        let mut ok = true;
        for a in args {
            match self.expr(a, scope) {
                Some(t) => typed.push(t),
                None => ok = false,
            }
        }
        let is_builtin = types::builtin(&n, &[]).is_some();
        if !is_builtin {
            let s = self.suggest_in_scope(&n, scope);
            let d = self.error("E0102", callee.span, format!("unknown function `{n}`"));
            if let Some(s) = s {
                d.notes.push(format!("did you mean `{s}`?"));
            }
            return None;
        }
        if !ok {
            return None;
        }
        let spans: Vec<Span> = args.iter().map(|a| a.span).collect();
        match types::builtin(&n, &typed)? {
            Ok(t) => Some(t),
            Err(err) => {
                let arity = err.code == "E0201";
                self.type_error(err, span, &spans);
                if !arity
                    && let Some(d) = self.diags.last_mut()
                    && d.labels.is_empty()
                    && typed.len() > 1
                    && d.span == span
                {
                    for (s, t) in spans.iter().zip(&typed) {
                        d.labels.push((*s, format!("this is {}", describe(t))));
                    }
                }
                None
            }
        }
    }

    fn arity_error(&mut self, n: &str, want: usize, got: usize, span: Span) {
        self.error(
            "E0201",
            span,
            format!(
                "`{n}` has {want} dimension{}, but {got} coordinate{} {} given",
                if want == 1 { "" } else { "s" },
                if got == 1 { "" } else { "s" },
                if got == 1 { "was" } else { "were" }
            ),
        );
    }

    /// Checks call coordinates: integers, converted to i32.
    fn coords(&mut self, callee: &str, args: &[ast::Expr], scope: &mut Scope) -> Option<Vec<Expr>> {
        let mut out = Vec::new();
        let mut ok = true;
        for (i, a) in args.iter().enumerate() {
            let what = format!("coordinate {i} of `{callee}`");
            match self.int_expr(a, scope, &what) {
                Some(e) => out.push(e),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn border_read(
        &mut self,
        src: &str,
        stars: &[bool],
        args: &[ast::Expr],
        span: Span,
        scope: &mut Scope,
    ) -> Option<Typed> {
        let Some(Global::Input(info)) = self.globals.get(src).cloned() else {
            return None;
        };
        if args.len() != info.dims.len() {
            self.arity_error(src, info.dims.len(), args.len(), span);
            return None;
        }
        let mut coords = Vec::new();
        for (d, a) in args.iter().enumerate() {
            if matches!(a.kind, ExprKind::Star) {
                if !stars[d] {
                    self.error(
                        "E0502",
                        a.span,
                        format!("`*` at coordinate {d}, but this rule's coordinate {d} is not `*`"),
                    );
                    return None;
                }
                coords.push(Expr::var_i32(info.dims[d].clone()));
            } else {
                let what = format!("coordinate {d} of `{src}`");
                let e = self.int_expr(a, scope, &what)?;
                // Rule coordinates count from the image's first pixel.
                coords.push(Expr::add(Expr::var_i32(buffer_field(src, "min", d)), e));
            }
        }
        Some(Typed::of(Expr::call_input(info.ty, src, coords)))
    }

    /// Wraps the let-bound locals an expression uses around it, so it can
    /// move into a generated func.
    fn wrap_locals(scope: &Scope, mut e: Expr) -> Expr {
        for (name, _, value) in scope.locals.iter().rev() {
            if let Some(v) = value
                && expr_uses_var(&e, name)
            {
                e = Expr::let_in(name.clone(), v.clone(), e);
            }
        }
        e
    }

    fn gen_name(&mut self, owner: &str, what: &str) -> String {
        loop {
            let counter = self.gen_counter.entry(owner.to_string()).or_insert(0);
            let name = format!("{owner}_{what}{counter}");
            *counter += 1;
            if !self.global_spans.contains_key(&name) && !self.func_names.contains(&name) {
                self.func_names.insert(name.clone());
                return name;
            }
        }
    }

    /// The pure variables of the enclosing definition that `exprs` use,
    /// in the enclosing order: the generated func's arguments.
    fn captured(scope: &Scope, exprs: &[&Expr]) -> Vec<String> {
        scope
            .pure_vars
            .iter()
            .filter(|v| exprs.iter().any(|e| expr_uses_var(e, v)))
            .cloned()
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_generated(
        &mut self,
        scope: &Scope,
        name: String,
        ty: Type,
        args: Vec<String>,
        value: Expr,
        update: Option<(Expr, RDom)>,
        span: Span,
    ) -> Expr {
        let arg_exprs: Vec<Expr> = args.iter().map(|a| Expr::var_i32(a.clone())).collect();
        let updates = update
            .map(|(v, rdom)| {
                vec![Update {
                    args: arg_exprs.clone(),
                    value: v,
                    rdom: Some(rdom),
                    span,
                }]
            })
            .unwrap_or_default();
        self.sigs.insert(
            name.clone(),
            Sig {
                ty: Some(ty),
                arity: args.len(),
            },
        );
        let func = Func {
            name: name.clone(),
            ty,
            args,
            value,
            updates,
            origin: FuncOrigin::Generated {
                from: scope.owner.clone(),
            },
            span,
        };
        self.generated
            .entry(scope.owner.clone())
            .or_default()
            .push(func);
        Expr::call_func(ty, name, arg_exprs)
    }

    fn inline_reduction(
        &mut self,
        n: &str,
        args: &[ast::Expr],
        span: Span,
        scope: &mut Scope,
    ) -> Option<Typed> {
        if args.len() != 1 {
            self.error(
                "E0201",
                span,
                format!("`{n}` takes 1 argument, but {} were given", args.len()),
            );
            return None;
        }
        let (body, rdom) = self.reduction_body(n, &args[0], span, scope)?;
        let ty = body.ty();
        let name = self.gen_name(&scope.owner, n);
        let args_names = Self::captured(scope, &[&body]);
        let current = Expr::call_func(
            ty,
            name.clone(),
            args_names
                .iter()
                .map(|a| Expr::var_i32(a.clone()))
                .collect(),
        );
        let (init, value) = match n {
            "sum" => (Expr::constant(ty, 0.0), Expr::add(current, body)),
            "product" => (Expr::constant(ty, 1.0), Expr::mul(current, body)),
            "minimum" => (Expr::constant(ty, ty.max_value()), Expr::min(current, body)),
            _ => (Expr::constant(ty, ty.min_value()), Expr::max(current, body)),
        };
        Some(Typed::of(self.emit_generated(
            scope,
            name,
            ty,
            args_names,
            init,
            Some((value, rdom)),
            span,
        )))
    }

    /// Checks a reduction's body in a new frame; returns it (with locals
    /// wrapped) and the rdom it iterates over.
    /// Reductions and windows become funcs, which global lets and rdom
    /// predicates cannot hold.
    fn can_generate(&mut self, what: &str, span: Span, scope: &Scope) -> bool {
        if matches!(scope.ctx, Ctx::Global | Ctx::Predicate) {
            self.error(
                "E0306",
                span,
                format!(
                    "`{what}` is not allowed in global lets, rdom bounds, predicates or parameters"
                ),
            )
            .notes
            .push("use it inside a func definition".into());
            return false;
        }
        true
    }

    fn reduction_body(
        &mut self,
        n: &str,
        arg: &ast::Expr,
        span: Span,
        scope: &mut Scope,
    ) -> Option<(Expr, RDom)> {
        if !self.can_generate(n, span, scope) {
            return None;
        }
        scope.frames.push(Frame::default());
        let t = self.expr(arg, scope);
        let frame = scope.frames.pop().unwrap_or_default();
        let t = t?;
        let body = match t.finish() {
            Ok(b) => b,
            Err(e) => {
                self.type_error(e, arg.span, &[]);
                return None;
            }
        };
        if body.ty().is_bool() {
            self.error(
                "E0202",
                arg.span,
                format!("`{n}` needs a number, found bool"),
            );
            return None;
        }
        let Some(rdom_name) = frame.rdom else {
            self.error(
                "E0305",
                span,
                format!("`{n}` needs an expression that uses an rdom"),
            )
            .notes
            .push(format!("e.g. `rdom r = [-1 .. 2]` and `{n}(f(x + r))`"));
            return None;
        };
        let Some(Global::RDom(rdom)) = self.globals.get(&rdom_name).cloned() else {
            return None;
        };
        Some((Self::wrap_locals(scope, body), rdom))
    }

    /// argmin/argmax: the first point (in iteration order, x fastest) where
    /// the body is extreme. Built as two generated funcs: the extreme
    /// value, then the smallest linear index attaining it.
    fn arg_extremum(
        &mut self,
        n: &str,
        args: &[ast::Expr],
        field: Option<&ast::Ident>,
        span: Span,
        scope: &mut Scope,
    ) -> Option<Typed> {
        if args.len() != 1 {
            self.error(
                "E0201",
                span,
                format!("`{n}` takes 1 argument, but {} were given", args.len()),
            );
            return None;
        }
        let (body, rdom) = self.reduction_body(n, &args[0], span, scope)?;
        let dim = match field {
            Some(f) => match RVAR_NAMES.iter().position(|x| *x == f.name) {
                Some(d) if d < rdom.dims.len() => d,
                _ => {
                    self.error(
                        "E0106",
                        f.span,
                        format!("rdom `{}` has no dimension `{}`", rdom.name, f.name),
                    );
                    return None;
                }
            },
            None if rdom.dims.len() == 1 => 0,
            None => {
                self.error(
                    "E0106",
                    span,
                    format!(
                        "`{n}` over the {}-dimensional rdom `{}` needs a dimension",
                        rdom.dims.len(),
                        rdom.name
                    ),
                )
                .notes
                .push(format!("write `{n}(...).x` or `.y`"));
                return None;
            }
        };
        let ty = body.ty();
        let args_names = Self::captured(scope, &[&body]);
        let arg_exprs: Vec<Expr> = args_names
            .iter()
            .map(|a| Expr::var_i32(a.clone()))
            .collect();
        // The extreme value.
        let best_name = self.gen_name(
            &scope.owner,
            if n == "argmin" { "minimum" } else { "maximum" },
        );
        let best_cur = Expr::call_func(ty, best_name.clone(), arg_exprs.clone());
        let (init, upd) = if n == "argmin" {
            (
                Expr::constant(ty, ty.max_value()),
                Expr::min(best_cur, body.clone()),
            )
        } else {
            (
                Expr::constant(ty, ty.min_value()),
                Expr::max(best_cur, body.clone()),
            )
        };
        let best = self.emit_generated(
            scope,
            best_name,
            ty,
            args_names.clone(),
            init,
            Some((upd, rdom.clone())),
            span,
        );
        // The first linear index where the value is attained.
        let mut linear = Expr::i32(0);
        let mut stride = Expr::i32(1);
        for d in &rdom.dims {
            let off = Expr::sub(Expr::var_i32(d.name.clone()), d.min.clone());
            linear = Expr::add(linear, Expr::mul(off, stride.clone()));
            stride = Expr::mul(stride, d.extent.clone());
        }
        let idx_name = self.gen_name(&scope.owner, n);
        let idx_cur = Expr::call_func(Type::I32, idx_name.clone(), arg_exprs);
        let candidate = Expr::select(Expr::eq(body, best), linear, Expr::i32(i32::MAX as i64));
        let index = self.emit_generated(
            scope,
            idx_name,
            Type::I32,
            args_names,
            Expr::i32(i32::MAX as i64),
            Some((Expr::min(idx_cur, candidate), rdom.clone())),
            span,
        );
        // Linear index back to the coordinate of dimension `dim`.
        let mut inner = Expr::i32(1);
        for d in &rdom.dims[..dim] {
            inner = Expr::mul(inner, d.extent.clone());
        }
        let r = &rdom.dims[dim];
        let coord = Expr::add(
            Expr::modulo(Expr::div(index, inner), r.extent.clone()),
            r.min.clone(),
        );
        Some(Typed::of(coord))
    }

    fn window_op(
        &mut self,
        op: &str,
        window: &ast::Expr,
        kernel: Option<&ast::Expr>,
        span: Span,
        scope: &mut Scope,
    ) -> Option<Typed> {
        let ExprKind::Window { base, dims } = &window.kind else {
            return None;
        };
        if !self.can_generate(op, span, scope) {
            return None;
        }
        let ExprKind::Name(src) = &base.kind else {
            self.error(
                "E0701",
                base.span,
                "a window view is taken of a func or image, by name",
            );
            return None;
        };
        let (ty, arity, is_input) = match self.globals.get(src).cloned() {
            Some(Global::Input(info)) => (Some(info.ty), info.dims.len(), true),
            _ if self.func_names.contains(src) => {
                if scope.ctx == Ctx::Global {
                    self.error("E0306", span, "global lets cannot call funcs");
                    return None;
                }
                match self.sigs.get(src) {
                    Some(s) => (s.ty, s.arity, false),
                    None => return None,
                }
            }
            _ => {
                let s = self.suggest(src, false);
                let d = self.error(
                    "E0701",
                    base.span,
                    format!("unknown func or image `{src}` in window view"),
                );
                if let Some(s) = s {
                    d.notes.push(format!("did you mean `{s}`?"));
                }
                return None;
            }
        };
        if dims.len() != arity {
            self.error(
                "E0703",
                window.span,
                format!(
                    "`{src}` has {arity} dimensions, but the window gives {}",
                    dims.len()
                ),
            );
            return None;
        }
        // Starts (or single indices) and constant counts per dimension.
        let mut starts = Vec::new();
        let mut counts: Vec<Option<i64>> = Vec::new();
        for (d, wd) in dims.iter().enumerate() {
            let what = format!("coordinate {d} of the window");
            match wd {
                WindowDim::Index(e) => {
                    starts.push(self.int_expr(e, scope, &what)?);
                    counts.push(None);
                }
                WindowDim::Range { start, count } => {
                    starts.push(self.int_expr(start, scope, &what)?);
                    let c = self.window_count(count, scope)?;
                    counts.push(Some(c));
                }
            }
        }
        let ty = ty?;
        let ranged: Vec<usize> = (0..arity).filter(|d| counts[*d].is_some()).collect();
        if ranged.is_empty() {
            self.error(
                "E0702",
                window.span,
                "this window has no `start : count` dimension",
            )
            .notes
            .push("write e.g. `f[x-1 : 3, y]`".into());
            return None;
        }
        let total: i64 = ranged
            .iter()
            .map(|d| counts[*d].unwrap_or(1))
            .fold(1, i64::saturating_mul);
        if total > MAX_WINDOW {
            self.error(
                "E0702",
                window.span,
                format!("this window has {total} points; at most {MAX_WINDOW} are allowed"),
            );
            return None;
        }
        let starts: Vec<Expr> = starts
            .into_iter()
            .map(|s| Self::wrap_locals(scope, s))
            .collect();
        let start_refs: Vec<&Expr> = starts.iter().collect();
        let args_names = Self::captured(scope, &start_refs);
        let read = |offsets: &[Expr]| -> Expr {
            let mut k = 0;
            let coords = starts
                .iter()
                .enumerate()
                .map(|(d, s)| {
                    if counts[d].is_some() {
                        let c = Expr::add(s.clone(), offsets[k].clone());
                        k += 1;
                        c
                    } else {
                        s.clone()
                    }
                })
                .collect();
            if is_input {
                Expr::call_input(ty, src.clone(), coords)
            } else {
                Expr::call_func(ty, src.clone(), coords)
            }
        };
        let wide = widen(ty);
        if let Some(kernel) = kernel {
            return self.convolve(kernel, &ranged, &counts, ty, &read, args_names, span, scope);
        }
        let gname = self.gen_name(&scope.owner, op);
        let rdom_name = format!("{gname}_r");
        let rdom = RDom {
            name: rdom_name.clone(),
            dims: ranged
                .iter()
                .enumerate()
                .map(|(i, d)| RVar {
                    name: format!("{rdom_name}.{}", RVAR_NAMES.get(i).copied().unwrap_or("v")),
                    min: Expr::i32(0),
                    extent: Expr::i32(counts[*d].unwrap_or(1)),
                })
                .collect(),
            predicate: None,
            span: window.span,
        };
        let offsets: Vec<Expr> = rdom
            .dims
            .iter()
            .map(|r| Expr::var_i32(r.name.clone()))
            .collect();
        let elem = read(&offsets);
        let arg_exprs: Vec<Expr> = args_names
            .iter()
            .map(|a| Expr::var_i32(a.clone()))
            .collect();
        match op {
            "sum" | "mean" => {
                let cur = Expr::call_func(wide, gname.clone(), arg_exprs);
                let upd = Expr::add(cur, Expr::cast(wide, elem));
                let s = self.emit_generated(
                    scope,
                    gname,
                    wide,
                    args_names,
                    Expr::constant(wide, 0.0),
                    Some((upd, rdom)),
                    span,
                );
                if op == "sum" {
                    return Some(Typed::of(s));
                }
                Some(Typed::of(mean_of(s, total, ty)))
            }
            _ => {
                let cur = Expr::call_func(ty, gname.clone(), arg_exprs);
                let (init, upd) = if op == "min" {
                    (Expr::constant(ty, ty.max_value()), Expr::min(cur, elem))
                } else {
                    (Expr::constant(ty, ty.min_value()), Expr::max(cur, elem))
                };
                Some(Typed::of(self.emit_generated(
                    scope,
                    gname,
                    ty,
                    args_names,
                    init,
                    Some((upd, rdom)),
                    span,
                )))
            }
        }
    }

    fn window_count(&mut self, count: &ast::Expr, scope: &mut Scope) -> Option<i64> {
        let t = self.expr(count, scope)?;
        let v = match t.lit {
            Some(Lit::Int(v)) => Some(v),
            Some(Lit::Float(_)) => None,
            None => const_value(&t.expr)
                .filter(|v| v.fract() == 0.0 && t.ty().is_integer())
                .map(|v| v as i64),
        };
        match v {
            Some(v) if v >= 1 => Some(v),
            Some(v) => {
                self.error(
                    "E0702",
                    count.span,
                    format!("a window count must be at least 1, found {v}"),
                );
                None
            }
            None => {
                self.error(
                    "E0702",
                    count.span,
                    "a window count must be a constant integer",
                )
                .notes
                .push(
                    "windows have a size known at compile time; use an rdom for a variable size"
                        .into(),
                );
                None
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn convolve(
        &mut self,
        kernel: &ast::Expr,
        ranged: &[usize],
        counts: &[Option<i64>],
        ty: Type,
        read: &dyn Fn(&[Expr]) -> Expr,
        args_names: Vec<String>,
        span: Span,
        scope: &mut Scope,
    ) -> Option<Typed> {
        let ExprKind::Kernel(rows) = &kernel.kind else {
            return None;
        };
        if ranged.len() > 2 {
            self.error(
                "E0209",
                kernel.span,
                "convolve supports 1- and 2-dimensional windows",
            );
            return None;
        }
        let cx = counts[ranged[0]].unwrap_or(1) as usize;
        let cy = ranged
            .get(1)
            .map(|d| counts[*d].unwrap_or(1) as usize)
            .unwrap_or(1);
        if rows.len() != cy || rows.iter().any(|r| r.len() != cx) {
            let shape: Vec<String> = rows.iter().map(|r| r.len().to_string()).collect();
            self.error(
                "E0209",
                kernel.span,
                format!(
                    "the window is {cx} wide and {cy} high, but the kernel's rows have {} entries",
                    if rows.len() == 1 {
                        shape[0].clone()
                    } else {
                        format!("[{}]", shape.join(", "))
                    }
                ),
            )
            .notes
            .push("rows are separated by `;` and run along y; entries in a row run along x".into());
            return None;
        }
        let mut weights = Vec::new();
        let mut any_float = ty.is_float();
        for row in rows {
            for e in row {
                let t = self.expr(e, scope)?;
                let v = match t.lit {
                    Some(Lit::Int(v)) => v as f64,
                    Some(Lit::Float(v)) => {
                        any_float = true;
                        v
                    }
                    None => {
                        self.error("E0208", e.span, "kernel entries must be constant numbers");
                        return None;
                    }
                };
                weights.push(v);
            }
        }
        let out = if any_float { Type::F32 } else { widen(ty) };
        let mut terms = Vec::new();
        for j in 0..cy {
            for i in 0..cx {
                let w = weights[j * cx + i];
                if w == 0.0 {
                    continue;
                }
                let mut offsets = vec![Expr::i32(i as i64)];
                if ranged.len() == 2 {
                    offsets.push(Expr::i32(j as i64));
                }
                let v = Expr::cast(out, read(&offsets));
                terms.push(if w == 1.0 {
                    v
                } else {
                    Expr::mul(v, Expr::constant(out, w))
                });
            }
        }
        let value = balanced_sum(terms).unwrap_or_else(|| Expr::constant(out, 0.0));
        let name = self.gen_name(&scope.owner, "convolve");
        Some(Typed::of(self.emit_generated(
            scope, name, out, args_names, value, None, span,
        )))
    }
}

trait LabelMut {
    fn with_label_mut(&mut self, span: Span, text: String) -> &mut Self;
}
impl LabelMut for Diagnostic {
    fn with_label_mut(&mut self, span: Span, text: String) -> &mut Self {
        self.labels.push((span, text));
        self
    }
}

/// The accumulator type of window sums and convolutions: 8- and 16-bit
/// integers and i32 sum in i32, u32 in u32, f32 in f32.
pub(crate) fn widen(ty: Type) -> Type {
    match ty.kind {
        argent_ir::TypeKind::Float => Type::F32,
        argent_ir::TypeKind::UInt if ty.bits >= 32 => Type::U32,
        _ => Type::I32,
    }
}

/// The mean of `count` values whose sum (in the widened type) is `sum`,
/// rounded toward zero and converted back to the element type.
fn mean_of(sum: Expr, count: i64, ty: Type) -> Expr {
    let wide = sum.ty();
    if wide.is_float() {
        return Expr::div(sum, Expr::f32(count as f64));
    }
    let n = Expr::int(wide, count);
    let q = if wide.is_int() {
        // Euclidean division rounds toward -inf for negative sums; mirror
        // it to round toward zero.
        Expr::select(
            Expr::lt(sum.clone(), Expr::int(wide, 0)),
            Expr::unary(
                UnaryOp::Neg,
                Expr::div(Expr::unary(UnaryOp::Neg, sum.clone()), n.clone()),
            ),
            Expr::div(sum, n),
        )
    } else {
        Expr::div(sum, n)
    };
    Expr::cast(ty, q)
}

/// Adds terms as a balanced tree, so long sums stay shallow.
fn balanced_sum(mut terms: Vec<Expr>) -> Option<Expr> {
    if terms.is_empty() {
        return None;
    }
    while terms.len() > 1 {
        let mut next = Vec::with_capacity(terms.len().div_ceil(2));
        let mut it = terms.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => next.push(Expr::add(a, b)),
                None => next.push(a),
            }
        }
        terms = next;
    }
    terms.pop()
}

fn describe(t: &Typed) -> String {
    match t.lit {
        Some(Lit::Int(_)) => "an integer literal".into(),
        Some(Lit::Float(_)) => "a float literal".into(),
        None => format!("{}", t.ty()),
    }
}

fn binop(op: BinaryOp) -> BinOp {
    match op {
        BinaryOp::Or => BinOp::Or,
        BinaryOp::And => BinOp::And,
        BinaryOp::Eq => BinOp::Eq,
        BinaryOp::Ne => BinOp::Ne,
        BinaryOp::Lt => BinOp::Lt,
        BinaryOp::Le => BinOp::Le,
        BinaryOp::Gt => BinOp::Gt,
        BinaryOp::Ge => BinOp::Ge,
        BinaryOp::BitOr => BinOp::BitOr,
        BinaryOp::BitXor => BinOp::BitXor,
        BinaryOp::BitAnd => BinOp::BitAnd,
        BinaryOp::Shl => BinOp::Shl,
        BinaryOp::Shr => BinOp::Shr,
        BinaryOp::Add => BinOp::Add,
        BinaryOp::Sub => BinOp::Sub,
        BinaryOp::Mul => BinOp::Mul,
        BinaryOp::Div => BinOp::Div,
        BinaryOp::Mod => BinOp::Mod,
    }
}

/// `end - min`, folded when both are constants.
fn simplify_sub(end: &Expr, min: &Expr) -> Expr {
    match (end.as_int(), min.as_int()) {
        (Some(a), Some(b)) => Expr::i32(a - b),
        _ if min.as_int() == Some(0) => end.clone(),
        _ => Expr::sub(end.clone(), min.clone()),
    }
}

/// If `e` is a call to a boundary condition, its name and arguments.
fn boundary_call(e: &ast::Expr) -> Option<(&'static str, &[ast::Expr])> {
    if let ExprKind::Call { callee, args } = &e.kind
        && let ExprKind::Name(n) = &callee.kind
    {
        return boundary::CONDITIONS
            .iter()
            .find(|c| **c == n)
            .map(|c| (*c, args.as_slice()));
    }
    None
}

/// Names called (or windowed) in an expression, with the call's span.
fn collect_calls(e: &ast::Expr, out: &mut Vec<(String, Span)>) {
    match &e.kind {
        ExprKind::Call { callee, args } => {
            if let ExprKind::Name(n) = &callee.kind {
                out.push((n.clone(), e.span));
            } else {
                collect_calls(callee, out);
            }
            for a in args {
                collect_calls(a, out);
            }
        }
        ExprKind::Window { base, dims } => {
            if let ExprKind::Name(n) = &base.kind {
                out.push((n.clone(), e.span));
            }
            for d in dims {
                match d {
                    WindowDim::Index(i) => collect_calls(i, out),
                    WindowDim::Range { start, count } => {
                        collect_calls(start, out);
                        collect_calls(count, out);
                    }
                }
            }
        }
        ExprKind::Field { base, .. } => collect_calls(base, out),
        ExprKind::Unary { operand, .. } => collect_calls(operand, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            collect_calls(lhs, out);
            collect_calls(rhs, out);
        }
        ExprKind::Let { value, body, .. } => {
            collect_calls(value, out);
            collect_calls(body, out);
        }
        ExprKind::Kernel(rows) => rows.iter().flatten().for_each(|x| collect_calls(x, out)),
        _ => {}
    }
}

/// The value of a constant IR expression, following the language's
/// arithmetic (wrapping integers, Euclidean division, x/0 == 0).
pub(crate) fn const_value(e: &Expr) -> Option<f64> {
    use argent_ir::ExprKind as K;
    let ty = e.ty();
    let wrap = |v: f64| {
        if ty.is_integer() {
            ty.wrap(v as i64) as f64
        } else {
            v as f32 as f64
        }
    };
    Some(match e.kind() {
        K::IntImm(v) => *v as f64,
        K::FloatImm(v) => *v,
        K::Cast { value, saturating } => {
            let v = const_value(value)?;
            if ty.is_integer() {
                let v = if *saturating {
                    v.clamp(ty.min_value(), ty.max_value())
                } else {
                    v
                };
                ty.wrap(v.trunc() as i64) as f64
            } else {
                v as f32 as f64
            }
        }
        K::Unary {
            op: UnaryOp::Neg,
            value,
        } => wrap(-const_value(value)?),
        K::Binary { op, a, b } => {
            let (x, y) = (const_value(a)?, const_value(b)?);
            let v = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                BinOp::Div if ty.is_integer() => {
                    if y == 0.0 {
                        0.0
                    } else {
                        (x as i64).div_euclid(y as i64) as f64
                    }
                }
                BinOp::Mod if ty.is_integer() => {
                    if y == 0.0 {
                        0.0
                    } else {
                        (x as i64).rem_euclid(y as i64) as f64
                    }
                }
                BinOp::Div => x / y,
                _ => return None,
            };
            wrap(v)
        }
        _ => return None,
    })
}

/// Whether `from` can reach `to` along call edges (iterative DFS).
fn reaches(from: usize, to: usize, edges: &[Vec<(usize, Span)>]) -> bool {
    let mut stack = vec![from];
    let mut seen = HashSet::default();
    while let Some(i) = stack.pop() {
        if i == to {
            return true;
        }
        if seen.insert(i) {
            stack.extend(edges[i].iter().map(|e| e.0));
        }
    }
    false
}

fn reaches_itself(i: usize, edges: &[Vec<(usize, Span)>]) -> bool {
    edges[i].iter().any(|(j, _)| reaches(*j, i, edges))
}

/// Levenshtein distance, for "did you mean" notes.
fn edit_distance(a: &str, b: &str) -> usize {
    // Suggestions are for typos in short names; long ones are not compared.
    if a.len() > 64 || b.len() > 64 {
        return usize::MAX;
    }
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
