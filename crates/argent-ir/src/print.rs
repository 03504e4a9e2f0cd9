//! Text form of the IR: expressions in the language's own syntax where
//! possible, statements as Halide-style pseudo-code (`produce`, `for`,
//! `allocate`), pipelines as one definition per line. Used by
//! `argent print`, `argent lower` and snapshot tests.

use crate::expr::{CallTarget, Expr, ExprKind, UnaryOp};
use crate::pipeline::{FuncOrigin, Pipeline};
use crate::schedule::StageRef;
use crate::stmt::Stmt;
use crate::types::Type;
use std::fmt::{self, Display, Write};

fn fmt_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ty = self.ty();
        match self.kind() {
            ExprKind::IntImm(v) => {
                if ty.is_bool() {
                    write!(f, "{}", *v != 0)
                } else if ty == Type::I32 {
                    write!(f, "{v}")
                } else {
                    write!(f, "{ty}({v})")
                }
            }
            ExprKind::FloatImm(v) => {
                if ty.element() == Type::F32 {
                    write!(f, "{}", fmt_float(*v))
                } else {
                    write!(f, "{ty}({})", fmt_float(*v))
                }
            }
            ExprKind::Var(n) => write!(f, "{n}"),
            ExprKind::Cast { value, saturating } => {
                let prefix = if *saturating { "sat_" } else { "" };
                write!(f, "{prefix}{ty}({value})")
            }
            ExprKind::Unary { op, value } => match op {
                UnaryOp::Neg => write!(f, "-{value}"),
                UnaryOp::Not => write!(f, "!{value}"),
                UnaryOp::BitNot => write!(f, "~{value}"),
            },
            ExprKind::Binary { op, a, b } => match op {
                crate::BinOp::Min | crate::BinOp::Max => write!(f, "{}({a}, {b})", op.symbol()),
                _ => write!(f, "({a} {} {b})", op.symbol()),
            },
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => write!(f, "select({cond}, {then}, {otherwise})"),
            ExprKind::Call { target, args } => {
                match target {
                    CallTarget::Func(n) | CallTarget::Input(n) => write!(f, "{n}(")?,
                    CallTarget::Intrinsic(i) => write!(f, "{}(", i.name())?,
                }
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
            ExprKind::Let { name, value, body } => write!(f, "(let {name} = {value} in {body})"),
            ExprKind::Load { buffer, index } => write!(f, "{buffer}[{index}]"),
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } => write!(f, "ramp({base}, {stride}, {lanes})"),
            ExprKind::Broadcast { value, lanes } => write!(f, "x{lanes}({value})"),
            ExprKind::Shuffle { vectors, indices } => {
                write!(f, "shuffle(")?;
                for v in vectors {
                    write!(f, "{v}, ")?;
                }
                write!(f, "{indices:?})")
            }
        }
    }
}

struct StmtPrinter {
    out: String,
    indent: usize,
}

impl StmtPrinter {
    fn line(&mut self, text: fmt::Arguments<'_>) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        let _ = self.out.write_fmt(text);
        self.out.push('\n');
    }

    fn block(&mut self, header: fmt::Arguments<'_>, body: &Stmt) {
        self.line(format_args!("{header} {{"));
        self.indent += 1;
        self.stmt(body);
        self.indent -= 1;
        self.line(format_args!("}}"));
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::LetStmt { name, value, body } => {
                self.line(format_args!("let {name} = {value}"));
                self.stmt(body);
            }
            Stmt::Assert { cond, kind, args } => {
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                self.line(format_args!(
                    "assert({cond}, {kind:?}, [{}])",
                    args.join(", ")
                ))
            }
            Stmt::ProducerConsumer {
                func,
                producing,
                body,
            } => {
                let word = if *producing { "produce" } else { "consume" };
                self.block(format_args!("{word} {func}"), body)
            }
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let kw = match kind {
                    crate::ForKind::GpuBlock(d) => format!("gpu_block.{d}"),
                    crate::ForKind::GpuThread(d) => format!("gpu_thread.{d}"),
                    k => k.keyword().to_string(),
                };
                self.block(format_args!("{kw} ({var}, {min}, {extent})"), body)
            }
            Stmt::Provide { func, args, value } => {
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                self.line(format_args!("{func}({}) = {value}", args.join(", ")))
            }
            Stmt::Realize {
                func,
                ty,
                bounds,
                body,
            } => {
                let b: Vec<String> = bounds
                    .iter()
                    .map(|r| format!("[{}, {}]", r.min, r.extent))
                    .collect();
                self.block(format_args!("realize {func}: {ty}({})", b.join(", ")), body)
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => self.line(format_args!("{buffer}[{index}] = {value}")),
            Stmt::Allocate {
                buffer,
                ty,
                size,
                body,
            } => {
                self.line(format_args!("allocate {buffer}: {ty}[{size}]"));
                self.stmt(body);
                self.line(format_args!("free {buffer}"));
            }
            Stmt::Block(stmts) => stmts.iter().for_each(|s| self.stmt(s)),
            Stmt::IfThenElse {
                cond,
                then,
                otherwise,
            } => {
                self.block(format_args!("if ({cond})"), then);
                if let Some(o) = otherwise {
                    self.block(format_args!("else"), o);
                }
            }
            Stmt::Evaluate(e) => self.line(format_args!("{e}")),
        }
    }
}

impl Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut p = StmtPrinter {
            out: String::new(),
            indent: 0,
        };
        p.stmt(self);
        f.write_str(&p.out)
    }
}

impl Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.inputs {
            writeln!(f, "input {} {}({})", i.ty, i.name, i.dims.join(", "))?;
        }
        for p in &self.params {
            write!(f, "param {} {}", p.ty, p.name)?;
            if let Some(d) = p.default {
                write!(f, " = {d}")?;
            }
            if let Some((lo, hi)) = p.range {
                write!(f, " in {lo} .. {hi}")?;
            }
            writeln!(f)?;
        }
        for func in &self.funcs {
            let origin = match &func.origin {
                FuncOrigin::User => String::new(),
                FuncOrigin::Boundary { input, condition } => format!("  # {condition}({input})"),
                FuncOrigin::BorderRule { input, width } => {
                    format!("  # border rules of {input}, width {width:?}")
                }
                FuncOrigin::Generated { from } => format!("  # from {from}"),
                FuncOrigin::Rfactor { from } => format!("  # rfactor of {from}"),
            };
            writeln!(
                f,
                "{}: {} ({}) = {}{origin}",
                func.name,
                func.ty,
                func.args.join(", "),
                func.value
            )?;
            for u in &func.updates {
                let args: Vec<String> = u.args.iter().map(|a| a.to_string()).collect();
                write!(f, "{}({}) = {}", func.name, args.join(", "), u.value)?;
                if let Some(r) = &u.rdom {
                    let dims: Vec<String> = r
                        .dims
                        .iter()
                        .map(|d| format!("{} in [{}, +{}]", d.name, d.min, d.extent))
                        .collect();
                    write!(f, "  over {}", dims.join(", "))?;
                    if let Some(p) = &r.predicate {
                        write!(f, " where {p}")?;
                    }
                }
                writeln!(f)?;
            }
        }
        writeln!(f, "output {}", self.outputs.join(", "))?;
        if !self.schedule.directives.is_empty() {
            writeln!(f, "schedule {{")?;
            for d in &self.schedule.directives {
                let stage = match d.stage {
                    StageRef::Pure => String::new(),
                    StageRef::Update(i) => format!(".update({i})"),
                };
                writeln!(f, "  {}{stage}.{}", d.func, d.kind)?;
            }
            writeln!(f, "}}")?;
        }
        Ok(())
    }
}

fn tail_name(t: crate::TailStrategy) -> &'static str {
    match t {
        crate::TailStrategy::Auto => "",
        crate::TailStrategy::RoundUp => ", round_up",
        crate::TailStrategy::GuardWithIf => ", guard_with_if",
        crate::TailStrategy::ShiftInwards => ", shift_inwards",
    }
}

impl Display for crate::DirectiveKind {
    /// The directive in the schedule language's own syntax, e.g.
    /// `split(x, xo, xi, 16)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::DirectiveKind as D;
        let name = self.name();
        let opt = |e: &Option<Expr>| e.as_ref().map(|e| format!(", {e}")).unwrap_or_default();
        match self {
            D::Split {
                old,
                outer,
                inner,
                factor,
                tail,
            } => {
                write!(
                    f,
                    "{name}({old}, {outer}, {inner}, {factor}{})",
                    tail_name(*tail)
                )
            }
            D::Fuse {
                inner,
                outer,
                fused,
            } => write!(f, "{name}({inner}, {outer}, {fused})"),
            D::Reorder(vars)
            | D::ReorderStorage(vars)
            | D::GpuBlocks(vars)
            | D::GpuThreads(vars) => {
                write!(f, "{name}({})", vars.join(", "))
            }
            D::Tile {
                x,
                y,
                xo,
                yo,
                xi,
                yi,
                x_factor,
                y_factor,
                tail,
            } => write!(
                f,
                "{name}({x}, {y}, {xo}, {yo}, {xi}, {yi}, {x_factor}, {y_factor}{})",
                tail_name(*tail)
            ),
            D::Vectorize { var, factor } | D::Unroll { var, factor } => {
                write!(f, "{name}({var}{})", opt(factor))
            }
            D::Parallel { var, task_size } => write!(f, "{name}({var}{})", opt(task_size)),
            D::Serial { var } => write!(f, "{name}({var})"),
            D::ComputeAt { consumer, var } | D::StoreAt { consumer, var } => {
                write!(f, "{name}({consumer}, {var})")
            }
            D::ComputeRoot | D::StoreRoot | D::ComputeInline => write!(f, "{name}()"),
            D::Bound { var, min, extent } => write!(f, "{name}({var}, {min}, {extent})"),
            D::AlignBounds {
                var,
                modulus,
                remainder,
            } => write!(f, "{name}({var}, {modulus}, {remainder})"),
            D::FoldStorage { var, extent } => write!(f, "{name}({var}, {extent})"),
            // The rest of the chain, which applies to the specialization.
            D::Specialize { cond, directives } => {
                // `specialize(n == 1)`, not `specialize((n == 1))`.
                let text = cond.to_string();
                let inner = text
                    .strip_prefix('(')
                    .and_then(|t| t.strip_suffix(')'))
                    .filter(|t| parens_balance(t))
                    .unwrap_or(&text);
                write!(f, "{name}({inner})")?;
                for d in directives {
                    write!(f, ".{}", d.kind)?;
                }
                Ok(())
            }
            D::Rfactor { pairs } => {
                let p: Vec<String> = pairs.iter().map(|(r, v)| format!("{r}, {v}")).collect();
                write!(f, "{name}({})", p.join(", "))
            }
            D::GpuTile {
                x,
                y,
                bx,
                by,
                tx,
                ty,
                x_size,
                y_size,
            } => {
                write!(
                    f,
                    "{name}({x}, {y}, {bx}, {by}, {tx}, {ty}, {x_size}, {y_size})"
                )
            }
        }
    }
}

/// Whether every `)` of `text` closes an earlier `(` and all are closed.
fn parens_balance(text: &str) -> bool {
    let mut depth = 0i32;
    for ch in text.chars() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}
