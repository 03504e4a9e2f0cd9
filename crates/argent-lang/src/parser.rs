//! A hand-written recovering parser: recursive descent for statements,
//! precedence climbing for expressions. On an error it reports, skips to
//! the end of the line (or the closing brace of a block) and goes on, so
//! one run reports several errors. Recursion is bounded: nesting deeper
//! than [`MAX_NESTING`] is an error, never a stack overflow.

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::lexer::{Tok, Token, lex};
use argent_ir::Span;

/// How deep parentheses, unary operators and lets may nest.
pub const MAX_NESTING: u32 = 128;
/// How tall an expression tree may grow (long operator chains).
pub const MAX_TREE_DEPTH: u32 = 256;
/// Parsing stops after this many errors: the rest would be noise.
const MAX_ERRORS: usize = 50;

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    diags: &'a mut Vec<Diagnostic>,
    nesting: u32,
    /// Set once per statement when nesting or tree depth overflows, so the
    /// statement reports it once and is then skipped.
    too_deep: bool,
}

/// Parses a whole pipeline file. Always returns a program (possibly
/// partial); errors go to `diags`.
pub fn parse_program(source: &str, diags: &mut Vec<Diagnostic>) -> Program {
    let tokens = lex(source, diags);
    let mut p = Parser {
        tokens,
        pos: 0,
        diags,
        nesting: 0,
        too_deep: false,
    };
    let mut stmts = Vec::new();
    let mut broken = Vec::new();
    let first_error = p.diags.len();
    loop {
        p.skip_newlines();
        if p.at(&Tok::Eof) || p.diags.len() >= MAX_ERRORS {
            break;
        }
        let before = p.diags.len();
        let start = p.pos;
        p.too_deep = false;
        match p.statement() {
            Some(s) if p.diags.len() == before => stmts.push(s),
            _ => {
                if let Some(b) = p.declared_name(start) {
                    broken.push(b);
                }
                p.recover_line();
                // Guarantee progress even if recovery consumed nothing.
                if p.pos == start {
                    p.bump();
                }
            }
        }
    }
    let syntax_errors = p.diags.len() > first_error;
    Program {
        stmts,
        broken,
        syntax_errors,
        end: Span::new(source.len(), source.len()),
    }
}

/// The token kinds that open or close a line-level construct.
fn is_line_end(t: &Tok) -> bool {
    matches!(t, Tok::Newline | Tok::Eof)
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        let i = (self.pos + n).min(self.tokens.len() - 1);
        &self.tokens[i].tok
    }
    fn span(&self) -> Span {
        self.tokens[self.pos].span
    }
    fn prev_span(&self) -> Span {
        if self.pos == 0 {
            self.span()
        } else {
            self.tokens[self.pos - 1].span
        }
    }
    fn at(&self, t: &Tok) -> bool {
        self.peek() == t
    }
    fn at_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == word)
    }
    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }
    fn eat(&mut self, t: &Tok) -> bool {
        if self.at(t) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn skip_newlines(&mut self) {
        while self.at(&Tok::Newline) {
            self.bump();
        }
    }

    /// The name a statement starting at token `start` declares, if it can
    /// be told, and whether it is a func.
    fn declared_name(&self, start: usize) -> Option<(Ident, bool)> {
        let tok = |k: usize| &self.tokens[(start + k).min(self.tokens.len() - 1)];
        let Tok::Ident(first) = &tok(0).tok else {
            return None;
        };
        let (at, is_func) = match (first.as_str(), &tok(1).tok) {
            ("input" | "param", Tok::Ident(_)) => (2, false),
            ("rdom", Tok::Ident(_)) => (1, false),
            ("border", Tok::Ident(_)) => (1, true),
            (_, Tok::LParen) => (0, true),
            (_, Tok::Assign) => (0, false),
            _ => return None,
        };
        match &tok(at).tok {
            Tok::Ident(name) => Some((
                Ident {
                    name: name.clone(),
                    span: tok(at).span,
                },
                is_func,
            )),
            _ => None,
        }
    }

    fn error_expected(&mut self, what: &str) {
        let found = self.peek().describe();
        let span = self.span();
        self.diags.push(
            Diagnostic::error("E0003", span, format!("expected {what}, found {found}"))
                .with_label(span, format!("expected {what} here")),
        );
    }

    fn expect(&mut self, t: &Tok, what: &str) -> Option<Span> {
        if self.at(t) {
            Some(self.bump().span)
        } else {
            self.error_expected(what);
            None
        }
    }

    fn ident(&mut self, what: &str) -> Option<Ident> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump().span;
                Some(Ident { name, span })
            }
            _ => {
                self.error_expected(what);
                None
            }
        }
    }

    /// Skips the rest of a broken line; stops before a `}` so that the
    /// enclosing block still closes.
    fn recover_line(&mut self) {
        while !is_line_end(self.peek()) && !self.at(&Tok::RBrace) {
            self.bump();
        }
        if self.at(&Tok::RBrace) && !self.in_block_context() {
            self.bump();
        }
    }

    /// Whether a `{` is open before the current position (cheap scan;
    /// only used during recovery).
    fn in_block_context(&self) -> bool {
        let mut depth: i64 = 0;
        for t in &self.tokens[..self.pos] {
            match t.tok {
                Tok::LBrace => depth += 1,
                Tok::RBrace => depth -= 1,
                _ => {}
            }
        }
        depth > 0
    }

    fn end_of_statement(&mut self) -> Option<()> {
        if is_line_end(self.peek()) {
            self.eat(&Tok::Newline);
            Some(())
        } else {
            self.error_expected("end of line");
            None
        }
    }

    fn statement(&mut self) -> Option<Stmt> {
        let start = self.span();
        let keyword = match self.peek() {
            Tok::Ident(s) => s.clone(),
            _ => {
                self.error_expected(
                    "a statement (input, param, rdom, border, a definition, output or schedule)",
                );
                return None;
            }
        };
        let next = self.peek_at(1).clone();
        let next_is_ident = matches!(next, Tok::Ident(_));
        match keyword.as_str() {
            "input" if next_is_ident => self.input(start),
            "param" if next_is_ident => self.param(start),
            "rdom" if next_is_ident => self.rdom(start),
            "border" if next_is_ident => self.border(start),
            "output" if next_is_ident => self.output(start),
            "schedule" if next == Tok::LBrace => {
                let block = self.schedule_block()?;
                self.end_of_statement()?;
                Some(Stmt::Schedule(block))
            }
            _ => match next {
                Tok::Assign => {
                    let name = self.ident("a name")?;
                    self.bump();
                    let value = self.expr()?;
                    let span = start.to(value.span);
                    self.end_of_statement()?;
                    Some(Stmt::Let { name, value, span })
                }
                Tok::LParen => self.definition(start),
                _ => {
                    self.bump();
                    self.error_expected("`=` or `(` after a name at the start of a statement");
                    None
                }
            },
        }
    }

    fn input(&mut self, start: Span) -> Option<Stmt> {
        self.bump();
        let ty = self.ident("a type")?;
        let name = self.ident("the input's name")?;
        self.expect(&Tok::LParen, "`(`")?;
        let mut dims = Vec::new();
        if !self.at(&Tok::RParen) {
            loop {
                dims.push(self.ident("a dimension name")?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        let end = self.expect(&Tok::RParen, "`)` or `,`")?;
        self.end_of_statement()?;
        Some(Stmt::Input {
            ty,
            name,
            dims,
            span: start.to(end),
        })
    }

    fn range(&mut self) -> Option<RangeAst> {
        let min = self.expr()?;
        self.expect(&Tok::DotDot, "`..`")?;
        let end = self.expr()?;
        let span = min.span.to(end.span);
        Some(RangeAst { min, end, span })
    }

    fn param(&mut self, start: Span) -> Option<Stmt> {
        self.bump();
        let ty = self.ident("a type")?;
        let name = self.ident("the parameter's name")?;
        let mut end = name.span;
        let default = if self.eat(&Tok::Assign) {
            let e = self.expr()?;
            end = e.span;
            Some(e)
        } else {
            None
        };
        let range = if self.at_ident("in") {
            self.bump();
            let r = self.range()?;
            end = r.span;
            Some(r)
        } else {
            None
        };
        self.end_of_statement()?;
        Some(Stmt::Param {
            ty,
            name,
            default,
            range,
            span: start.to(end),
        })
    }

    fn rdom(&mut self, start: Span) -> Option<Stmt> {
        self.bump();
        let name = self.ident("the rdom's name")?;
        self.expect(&Tok::Assign, "`=`")?;
        self.expect(&Tok::LBracket, "`[` starting the list of ranges")?;
        let mut ranges = Vec::new();
        loop {
            ranges.push(self.range()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        let mut end = self.expect(&Tok::RBracket, "`]` or `,`")?;
        let predicate = if self.at_ident("where") {
            self.bump();
            let e = self.expr()?;
            end = e.span;
            Some(e)
        } else {
            None
        };
        self.end_of_statement()?;
        Some(Stmt::RDom {
            name,
            ranges,
            predicate,
            span: start.to(end),
        })
    }

    fn int_literal(&mut self, what: &str) -> Option<(i64, Span)> {
        match *self.peek() {
            Tok::Int(v) => {
                let span = self.bump().span;
                Some((v, span))
            }
            _ => {
                self.error_expected(what);
                None
            }
        }
    }

    fn border(&mut self, start: Span) -> Option<Stmt> {
        self.bump();
        let name = self.ident("the border func's name")?;
        self.expect(&Tok::Assign, "`=`")?;
        let source = self.ident("the input the border rules extend")?;
        if !self.at_ident("width") {
            self.error_expected("`width`");
            return None;
        }
        self.bump();
        let mut widths = Vec::new();
        if self.eat(&Tok::LParen) {
            loop {
                widths.push(self.int_literal("a border width")?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            self.expect(&Tok::RParen, "`)` or `,`")?;
        } else {
            widths.push(self.int_literal("a border width")?);
        }
        self.expect(&Tok::LBrace, "`{`")?;
        let mut rules = Vec::new();
        loop {
            self.skip_newlines();
            if self.at(&Tok::RBrace) || self.at(&Tok::Eof) {
                break;
            }
            let before = self.diags.len();
            match self.border_rule() {
                Some(r) if self.diags.len() == before => rules.push(r),
                _ => self.recover_line(),
            }
            if self.diags.len() >= MAX_ERRORS {
                return None;
            }
        }
        let end = self.expect(&Tok::RBrace, "`}` closing the border rules")?;
        self.end_of_statement()?;
        Some(Stmt::Border {
            name,
            source,
            widths,
            rules,
            span: start.to(end),
        })
    }

    fn border_rule(&mut self) -> Option<BorderRule> {
        let open = self.expect(&Tok::LParen, "`(` starting a border rule like `(-1, *)`")?;
        let mut coords = Vec::new();
        loop {
            let coord = match self.peek() {
                Tok::Star => {
                    self.bump();
                    BorderCoord::Any
                }
                Tok::Minus => {
                    self.bump();
                    BorderCoord::Before(self.int_literal("a distance after `-`")?.0)
                }
                Tok::Plus => {
                    self.bump();
                    BorderCoord::After(self.int_literal("a distance after `+`")?.0)
                }
                _ => {
                    self.error_expected("`*`, `-k` or `+k`");
                    return None;
                }
            };
            coords.push(coord);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        let close = self.expect(&Tok::RParen, "`)` or `,`")?;
        self.expect(&Tok::Assign, "`=`")?;
        let value = self.expr()?;
        let span = open.to(value.span);
        if !self.at(&Tok::RBrace) {
            self.end_of_statement()?;
        }
        Some(BorderRule {
            coords,
            lhs_span: open.to(close),
            value,
            span,
        })
    }

    fn output(&mut self, start: Span) -> Option<Stmt> {
        self.bump();
        let mut names = Vec::new();
        loop {
            names.push(self.ident("a func name")?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        let end = names.last().map(|n| n.span).unwrap_or(start);
        self.end_of_statement()?;
        Some(Stmt::Output {
            names,
            span: start.to(end),
        })
    }

    fn definition(&mut self, start: Span) -> Option<Stmt> {
        let name = self.ident("a func name")?;
        self.expect(&Tok::LParen, "`(`")?;
        let args = self.expr_list(&Tok::RParen)?;
        let op_span = self.span();
        let op = match self.peek() {
            Tok::Assign => AssignOp::Set,
            Tok::PlusAssign => AssignOp::Add,
            Tok::MinusAssign => AssignOp::Sub,
            Tok::StarAssign => AssignOp::Mul,
            Tok::Ident(s) if (s == "min" || s == "max") && self.peek_at(1) == &Tok::Assign => {
                let op = if s == "min" {
                    AssignOp::Min
                } else {
                    AssignOp::Max
                };
                self.bump();
                op
            }
            _ => {
                self.error_expected("`=`, `+=`, `-=`, `*=`, `min=` or `max=`");
                return None;
            }
        };
        let op_span = op_span.to(self.span());
        self.bump();
        let value = self.expr()?;
        let span = start.to(value.span);
        self.end_of_statement()?;
        Some(Stmt::Define {
            name,
            args,
            op,
            op_span,
            value,
            span,
        })
    }

    /// A schedule block `schedule { chain* }`. Also the whole content of a
    /// separate schedule file.
    fn schedule_block(&mut self) -> Option<ScheduleBlock> {
        let start = self.bump().span;
        self.expect(&Tok::LBrace, "`{`")?;
        let mut chains = Vec::new();
        loop {
            self.skip_newlines();
            if self.at(&Tok::RBrace) || self.at(&Tok::Eof) {
                break;
            }
            let before = self.diags.len();
            self.too_deep = false;
            match self.schedule_chain() {
                Some(c) if self.diags.len() == before => chains.push(c),
                _ => self.recover_line(),
            }
            if self.diags.len() >= MAX_ERRORS {
                return None;
            }
        }
        let end = self.expect(&Tok::RBrace, "`}` closing the schedule")?;
        Some(ScheduleBlock {
            chains,
            span: start.to(end),
        })
    }

    fn schedule_chain(&mut self) -> Option<ScheduleChain> {
        let func = self.ident("a func name")?;
        let mut calls = Vec::new();
        loop {
            // A chain may continue on the next line when that line starts
            // with `.`.
            if self.at(&Tok::Newline) {
                let mut k = 0;
                while self.peek_at(k) == &Tok::Newline {
                    k += 1;
                }
                if self.peek_at(k) == &Tok::Dot {
                    self.skip_newlines();
                }
            }
            if !self.at(&Tok::Dot) {
                break;
            }
            let dot = self.bump().span;
            let name = self.ident("a directive name")?;
            let (args, end) = if self.eat(&Tok::LParen) {
                let args = self.expr_list(&Tok::RParen)?;
                (args, self.prev_span())
            } else {
                (Vec::new(), name.span)
            };
            calls.push(DirectiveCall {
                name,
                args,
                span: dot.to(end),
            });
        }
        if calls.is_empty() {
            self.error_expected("`.` and a directive");
            return None;
        }
        let span = func
            .span
            .to(calls.last().map(|c| c.span).unwrap_or(func.span));
        if !self.at(&Tok::RBrace) {
            self.end_of_statement()?;
        }
        Some(ScheduleChain { func, calls, span })
    }

    /// Comma-separated expressions up to `close` (consumed).
    fn expr_list(&mut self, close: &Tok) -> Option<Vec<Expr>> {
        let mut args = Vec::new();
        while !self.at(close) {
            args.push(self.expr()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        let what = format!("`,` or `{}`", if *close == Tok::RParen { ")" } else { "]" });
        self.expect(close, &what)?;
        Some(args)
    }

    // ---- expressions ------------------------------------------------------

    fn make(&mut self, kind: ExprKind, span: Span, depth: u32) -> Option<Expr> {
        if depth > MAX_TREE_DEPTH {
            self.report_too_deep(span);
            return None;
        }
        Some(Expr { kind, span, depth })
    }

    fn report_too_deep(&mut self, span: Span) {
        if !self.too_deep {
            self.too_deep = true;
            self.diags.push(
                Diagnostic::error("E0004", span, "expression nested too deeply")
                    .with_note(format!(
                        "at most {MAX_NESTING} levels of nesting and {MAX_TREE_DEPTH} levels of operators; split it with named definitions"
                    )),
            );
        }
    }

    fn enter(&mut self) -> Option<()> {
        if self.nesting >= MAX_NESTING {
            let span = self.span();
            self.report_too_deep(span);
            return None;
        }
        self.nesting += 1;
        Some(())
    }

    /// Parses an expression (including `let ... in ...`).
    pub fn expr(&mut self) -> Option<Expr> {
        self.enter()?;
        let r = self.expr_inner();
        self.nesting -= 1;
        r
    }

    fn expr_inner(&mut self) -> Option<Expr> {
        if self.at_ident("let")
            && matches!(self.peek_at(1), Tok::Ident(_))
            && self.peek_at(2) == &Tok::Assign
        {
            let start = self.bump().span;
            let name = self.ident("a name")?;
            self.bump();
            let value = self.expr()?;
            if !self.at_ident("in") {
                self.error_expected("`in` after the let's value");
                return None;
            }
            self.bump();
            let body = self.expr()?;
            let span = start.to(body.span);
            let depth = value.depth.max(body.depth) + 1;
            return self.make(
                ExprKind::Let {
                    name,
                    value: Box::new(value),
                    body: Box::new(body),
                },
                span,
                depth,
            );
        }
        self.binary(0)
    }

    fn binary(&mut self, min_prec: u8) -> Option<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = binary_op(self.peek()) {
            if prec < min_prec {
                break;
            }
            self.bump();
            self.enter()?;
            let rhs = self.binary(prec + 1);
            self.nesting -= 1;
            let rhs = rhs?;
            let span = lhs.span.to(rhs.span);
            let depth = lhs.depth.max(rhs.depth) + 1;
            lhs = self.make(
                ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
                depth,
            )?;
        }
        Some(lhs)
    }

    fn unary(&mut self) -> Option<Expr> {
        let op = match self.peek() {
            Tok::Minus => UnaryOp::Neg,
            Tok::Bang => UnaryOp::Not,
            Tok::Tilde => UnaryOp::BitNot,
            _ => return self.postfix(),
        };
        let start = self.bump().span;
        self.enter()?;
        let operand = self.unary();
        self.nesting -= 1;
        let operand = operand?;
        let span = start.to(operand.span);
        let depth = operand.depth + 1;
        self.make(
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
            depth,
        )
    }

    fn postfix(&mut self) -> Option<Expr> {
        let mut e = self.primary()?;
        loop {
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    let field = self.ident("a field name after `.`")?;
                    let span = e.span.to(field.span);
                    let depth = e.depth + 1;
                    e = self.make(
                        ExprKind::Field {
                            base: Box::new(e),
                            field,
                        },
                        span,
                        depth,
                    )?;
                }
                Tok::LParen => {
                    self.bump();
                    self.enter()?;
                    let args = self.expr_list(&Tok::RParen);
                    self.nesting -= 1;
                    let args = args?;
                    let span = e.span.to(self.prev_span());
                    let depth = args.iter().map(|a| a.depth).max().unwrap_or(0).max(e.depth) + 1;
                    e = self.make(
                        ExprKind::Call {
                            callee: Box::new(e),
                            args,
                        },
                        span,
                        depth,
                    )?;
                }
                Tok::LBracket => {
                    self.bump();
                    self.enter()?;
                    let dims = self.window_dims();
                    self.nesting -= 1;
                    let dims = dims?;
                    let span = e.span.to(self.prev_span());
                    let depth = dims
                        .iter()
                        .map(|d| match d {
                            WindowDim::Index(i) => i.depth,
                            WindowDim::Range { start, count } => start.depth.max(count.depth),
                        })
                        .max()
                        .unwrap_or(0)
                        .max(e.depth)
                        + 1;
                    e = self.make(
                        ExprKind::Window {
                            base: Box::new(e),
                            dims,
                        },
                        span,
                        depth,
                    )?;
                }
                _ => break,
            }
        }
        Some(e)
    }

    fn window_dims(&mut self) -> Option<Vec<WindowDim>> {
        let mut dims = Vec::new();
        while !self.at(&Tok::RBracket) {
            let start = self.expr()?;
            if self.eat(&Tok::Colon) {
                let count = self.expr()?;
                dims.push(WindowDim::Range { start, count });
            } else {
                dims.push(WindowDim::Index(start));
            }
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RBracket, "`,` or `]` closing the window")?;
        Some(dims)
    }

    fn primary(&mut self) -> Option<Expr> {
        let span = self.span();
        match self.peek().clone() {
            Tok::Int(v) => {
                self.bump();
                self.make(ExprKind::Int(v), span, 1)
            }
            Tok::Float(v) => {
                self.bump();
                self.make(ExprKind::Float(v), span, 1)
            }
            Tok::Ident(name) => {
                self.bump();
                self.make(ExprKind::Name(name), span, 1)
            }
            // `*` stands for a coordinate only where one is expected (a
            // border rule's arguments); elsewhere it is a stray operator.
            Tok::Star if matches!(self.peek_at(1), Tok::Comma | Tok::RParen) => {
                self.bump();
                self.make(ExprKind::Star, span, 1)
            }
            Tok::LParen => {
                self.bump();
                let mut e = self.expr()?;
                let Some(end) = self.expect(&Tok::RParen, "`)`") else {
                    if let Some(d) = self.diags.last_mut() {
                        d.labels.push((span, "unclosed `(` opened here".into()));
                    }
                    return None;
                };
                // Keep the parentheses in the span so carets cover them.
                e.span = span.to(end);
                Some(e)
            }
            Tok::LBracket => {
                self.bump();
                let mut rows = vec![Vec::new()];
                let mut depth = 1;
                while !self.at(&Tok::RBracket) {
                    let e = self.expr()?;
                    depth = depth.max(e.depth + 1);
                    if let Some(row) = rows.last_mut() {
                        row.push(e);
                    }
                    if self.eat(&Tok::Semi) {
                        rows.push(Vec::new());
                    } else if !self.eat(&Tok::Comma) {
                        break;
                    }
                }
                let end = self.expect(&Tok::RBracket, "`,`, `;` or `]` in a kernel")?;
                self.make(ExprKind::Kernel(rows), span.to(end), depth)
            }
            _ => {
                self.error_expected("an expression");
                None
            }
        }
    }
}

/// Binary operators and their precedence (higher binds tighter).
fn binary_op(t: &Tok) -> Option<(BinaryOp, u8)> {
    Some(match t {
        Tok::OrOr => (BinaryOp::Or, 1),
        Tok::AndAnd => (BinaryOp::And, 2),
        Tok::EqEq => (BinaryOp::Eq, 3),
        Tok::NotEq => (BinaryOp::Ne, 3),
        Tok::Lt => (BinaryOp::Lt, 4),
        Tok::Le => (BinaryOp::Le, 4),
        Tok::Gt => (BinaryOp::Gt, 4),
        Tok::Ge => (BinaryOp::Ge, 4),
        Tok::Pipe => (BinaryOp::BitOr, 5),
        Tok::Caret => (BinaryOp::BitXor, 6),
        Tok::Amp => (BinaryOp::BitAnd, 7),
        Tok::Shl => (BinaryOp::Shl, 8),
        Tok::Shr => (BinaryOp::Shr, 8),
        Tok::Plus => (BinaryOp::Add, 9),
        Tok::Minus => (BinaryOp::Sub, 9),
        Tok::Star => (BinaryOp::Mul, 10),
        Tok::Slash => (BinaryOp::Div, 10),
        Tok::Percent => (BinaryOp::Mod, 10),
        _ => return None,
    })
}

/// Parses a file holding only a `schedule { ... }` block.
pub fn parse_schedule_file(source: &str, diags: &mut Vec<Diagnostic>) -> Option<ScheduleBlock> {
    let tokens = lex(source, diags);
    let mut p = Parser {
        tokens,
        pos: 0,
        diags,
        nesting: 0,
        too_deep: false,
    };
    p.skip_newlines();
    if !p.at_ident("schedule") {
        p.error_expected("`schedule {`");
        return None;
    }
    let block = p.schedule_block()?;
    p.skip_newlines();
    if !p.at(&Tok::Eof) {
        p.error_expected("end of file after the schedule block");
        return None;
    }
    Some(block)
}
