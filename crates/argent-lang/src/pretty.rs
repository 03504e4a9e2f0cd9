//! A compact text form of the syntax tree: one statement per line,
//! expressions fully parenthesised so precedence is visible. Used by the
//! parser's snapshot tests and `argent print --ast`-style tooling.

use crate::ast::*;
use std::fmt::Write;

/// The whole program, one statement per line.
pub fn program(p: &Program) -> String {
    let mut out = String::new();
    for s in &p.stmts {
        stmt(&mut out, s);
    }
    out
}

fn stmt(out: &mut String, s: &Stmt) {
    match s {
        Stmt::Input { ty, name, dims, .. } => {
            let dims: Vec<&str> = dims.iter().map(|d| d.name.as_str()).collect();
            let _ = writeln!(out, "input {} {}({})", ty.name, name.name, dims.join(", "));
        }
        Stmt::Param {
            ty,
            name,
            default,
            range,
            ..
        } => {
            let _ = write!(out, "param {} {}", ty.name, name.name);
            if let Some(d) = default {
                let _ = write!(out, " = {}", expr(d));
            }
            if let Some(r) = range {
                let _ = write!(out, " in {} .. {}", expr(&r.min), expr(&r.end));
            }
            out.push('\n');
        }
        Stmt::RDom {
            name,
            ranges,
            predicate,
            ..
        } => {
            let rs: Vec<String> = ranges
                .iter()
                .map(|r| format!("{} .. {}", expr(&r.min), expr(&r.end)))
                .collect();
            let _ = write!(out, "rdom {} = [{}]", name.name, rs.join(", "));
            if let Some(p) = predicate {
                let _ = write!(out, " where {}", expr(p));
            }
            out.push('\n');
        }
        Stmt::Let { name, value, .. } => {
            let _ = writeln!(out, "let {} = {}", name.name, expr(value));
        }
        Stmt::Define {
            name,
            args,
            op,
            value,
            ..
        } => {
            let op = match op {
                AssignOp::Set => "=",
                AssignOp::Add => "+=",
                AssignOp::Sub => "-=",
                AssignOp::Mul => "*=",
                AssignOp::Min => "min=",
                AssignOp::Max => "max=",
            };
            let _ = writeln!(
                out,
                "def {}({}) {op} {}",
                name.name,
                list(args),
                expr(value)
            );
        }
        Stmt::Border {
            name,
            source,
            widths,
            rules,
            ..
        } => {
            let w: Vec<String> = widths.iter().map(|w| w.0.to_string()).collect();
            let _ = writeln!(
                out,
                "border {} = {} width ({}) {{",
                name.name,
                source.name,
                w.join(", ")
            );
            for r in rules {
                let cs: Vec<String> = r
                    .coords
                    .iter()
                    .map(|c| match c {
                        BorderCoord::Any => "*".to_string(),
                        BorderCoord::Before(k) => format!("-{k}"),
                        BorderCoord::After(k) => format!("+{k}"),
                    })
                    .collect();
                let _ = writeln!(out, "  ({}) = {}", cs.join(", "), expr(&r.value));
            }
            out.push_str("}\n");
        }
        Stmt::Output { names, .. } => {
            let n: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
            let _ = writeln!(out, "output {}", n.join(", "));
        }
        Stmt::Schedule(b) => {
            out.push_str("schedule {\n");
            for c in &b.chains {
                let _ = write!(out, "  {}", c.func.name);
                for call in &c.calls {
                    let _ = write!(out, ".{}({})", call.name.name, list(&call.args));
                }
                out.push('\n');
            }
            out.push_str("}\n");
        }
    }
}

fn list(es: &[Expr]) -> String {
    es.iter().map(expr).collect::<Vec<_>>().join(", ")
}

/// One expression, fully parenthesised.
pub fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Name(n) => n.clone(),
        ExprKind::Star => "*".into(),
        ExprKind::Error => "<error>".into(),
        ExprKind::Field { base, field } => format!("{}.{}", expr(base), field.name),
        ExprKind::Call { callee, args } => format!("{}({})", expr(callee), list(args)),
        ExprKind::Window { base, dims } => {
            let ds: Vec<String> = dims
                .iter()
                .map(|d| match d {
                    WindowDim::Index(i) => expr(i),
                    WindowDim::Range { start, count } => {
                        format!("{} : {}", expr(start), expr(count))
                    }
                })
                .collect();
            format!("{}[{}]", expr(base), ds.join(", "))
        }
        ExprKind::Kernel(rows) => {
            let rs: Vec<String> = rows.iter().map(|r| list(r)).collect();
            format!("[{}]", rs.join("; "))
        }
        ExprKind::Unary { op, operand } => {
            let o = match op {
                UnaryOp::Neg => "-",
                UnaryOp::Not => "!",
                UnaryOp::BitNot => "~",
            };
            format!("({o}{})", expr(operand))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let o = match op {
                BinaryOp::Or => "||",
                BinaryOp::And => "&&",
                BinaryOp::Eq => "==",
                BinaryOp::Ne => "!=",
                BinaryOp::Lt => "<",
                BinaryOp::Le => "<=",
                BinaryOp::Gt => ">",
                BinaryOp::Ge => ">=",
                BinaryOp::BitOr => "|",
                BinaryOp::BitXor => "^",
                BinaryOp::BitAnd => "&",
                BinaryOp::Shl => "<<",
                BinaryOp::Shr => ">>",
                BinaryOp::Add => "+",
                BinaryOp::Sub => "-",
                BinaryOp::Mul => "*",
                BinaryOp::Div => "/",
                BinaryOp::Mod => "%",
            };
            format!("({} {o} {})", expr(lhs), expr(rhs))
        }
        ExprKind::Let { name, value, body } => {
            format!("(let {} = {} in {})", name.name, expr(value), expr(body))
        }
    }
}
