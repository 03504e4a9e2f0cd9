//! The lexer: source text to tokens. Newlines end statements except inside
//! parentheses and brackets, where a line may continue (braces do not
//! suppress newlines, because `schedule { }` and `border { }` blocks hold
//! one item per line).

use crate::diag::Diagnostic;
use argent_ir::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Semi,
    Dot,
    DotDot,
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Pipe,
    Caret,
    Amp,
    Shl,
    Shr,
    OrOr,
    AndAnd,
    Bang,
    Tilde,
    Newline,
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(v) => format!("number `{v}`"),
            Tok::Float(v) => format!("number `{v}`"),
            Tok::Newline => "end of line".to_string(),
            Tok::Eof => "end of file".to_string(),
            other => format!("`{}`", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::Semi => ";",
            Tok::Dot => ".",
            Tok::DotDot => "..",
            Tok::Assign => "=",
            Tok::PlusAssign => "+=",
            Tok::MinusAssign => "-=",
            Tok::StarAssign => "*=",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Pipe => "|",
            Tok::Caret => "^",
            Tok::Amp => "&",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::OrOr => "||",
            Tok::AndAnd => "&&",
            Tok::Bang => "!",
            Tok::Tilde => "~",
            _ => "?",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Splits `source` into tokens, always ending with `Eof`. Invalid
/// characters and malformed numbers are reported and skipped.
pub fn lex(source: &str, diags: &mut Vec<Diagnostic>) -> Vec<Token> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    // Nesting of ( and [; newlines inside them are not statement ends.
    let mut depth: usize = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let one = |tok: Tok| (tok, 1usize);
        let next = bytes.get(i + 1).copied();
        let (tok, len) = match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\n' => {
                i += 1;
                // Continuation lines inside brackets are indented; a line
                // that starts with a name in column 0 begins a new
                // statement, which keeps one unclosed `(` from swallowing
                // the rest of the file.
                if depth > 0 && bytes.get(i).is_some_and(|c| c.is_ascii_alphabetic()) {
                    depth = 0;
                }
                if depth == 0
                    && !matches!(
                        tokens.last(),
                        Some(Token {
                            tok: Tok::Newline,
                            ..
                        })
                    )
                {
                    // An empty span: errors at a line end point at the end
                    // of that line, not at the start of the next.
                    tokens.push(Token {
                        tok: Tok::Newline,
                        span: Span::new(start, start),
                    });
                }
                continue;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let mut j = i;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                (Tok::Ident(source[i..j].to_string()), j - i)
            }
            b'0'..=b'9' => {
                let (tok, len) = lex_number(source, i, diags);
                (tok, len)
            }
            b'(' => {
                depth += 1;
                one(Tok::LParen)
            }
            b'[' => {
                depth += 1;
                one(Tok::LBracket)
            }
            b')' => {
                depth = depth.saturating_sub(1);
                one(Tok::RParen)
            }
            b']' => {
                depth = depth.saturating_sub(1);
                one(Tok::RBracket)
            }
            b'{' => one(Tok::LBrace),
            b'}' => {
                // A closing brace ends any line continuation left open by
                // an unbalanced parenthesis inside the block.
                depth = 0;
                one(Tok::RBrace)
            }
            b',' => one(Tok::Comma),
            b':' => one(Tok::Colon),
            b';' => one(Tok::Semi),
            b'.' if next == Some(b'.') => (Tok::DotDot, 2),
            b'.' if next.is_some_and(|n| n.is_ascii_digit()) => lex_number(source, i, diags),
            b'.' => one(Tok::Dot),
            b'=' if next == Some(b'=') => (Tok::EqEq, 2),
            b'=' => one(Tok::Assign),
            b'+' if next == Some(b'=') => (Tok::PlusAssign, 2),
            b'+' => one(Tok::Plus),
            b'-' if next == Some(b'=') => (Tok::MinusAssign, 2),
            b'-' => one(Tok::Minus),
            b'*' if next == Some(b'=') => (Tok::StarAssign, 2),
            b'*' => one(Tok::Star),
            b'/' => one(Tok::Slash),
            b'%' => one(Tok::Percent),
            b'!' if next == Some(b'=') => (Tok::NotEq, 2),
            b'!' => one(Tok::Bang),
            b'<' if next == Some(b'=') => (Tok::Le, 2),
            b'<' if next == Some(b'<') => (Tok::Shl, 2),
            b'<' => one(Tok::Lt),
            b'>' if next == Some(b'=') => (Tok::Ge, 2),
            b'>' if next == Some(b'>') => (Tok::Shr, 2),
            b'>' => one(Tok::Gt),
            b'|' if next == Some(b'|') => (Tok::OrOr, 2),
            b'|' => one(Tok::Pipe),
            b'&' if next == Some(b'&') => (Tok::AndAnd, 2),
            b'&' => one(Tok::Amp),
            b'^' => one(Tok::Caret),
            b'~' => one(Tok::Tilde),
            _ => {
                // Skip the whole (possibly multi-byte) character.
                let ch = source[i..].chars().next().unwrap_or('?');
                let len = ch.len_utf8();
                diags.push(
                    Diagnostic::error(
                        "E0001",
                        Span::new(i, i + len),
                        format!("unexpected character `{}`", ch.escape_debug()),
                    )
                    .with_note("Argent source uses ASCII operators; comments start with `#`"),
                );
                i += len;
                continue;
            }
        };
        tokens.push(Token {
            tok,
            span: Span::new(start, start + len),
        });
        i += len;
    }
    tokens.push(Token {
        tok: Tok::Eof,
        span: Span::new(source.len(), source.len()),
    });
    tokens
}

/// Lexes a decimal or hexadecimal integer, or a float with a fraction
/// and/or exponent. `1..4` is an integer followed by `..`.
fn lex_number(source: &str, start: usize, diags: &mut Vec<Diagnostic>) -> (Tok, usize) {
    let bytes = source.as_bytes();
    let mut j = start;
    let digits = |j: &mut usize| {
        while *j < bytes.len() && (bytes[*j].is_ascii_digit() || bytes[*j] == b'_') {
            *j += 1;
        }
    };
    if bytes[j] == b'0' && matches!(bytes.get(j + 1), Some(b'x' | b'X')) {
        j += 2;
        while j < bytes.len() && (bytes[j].is_ascii_hexdigit() || bytes[j] == b'_') {
            j += 1;
        }
        let text: String = source[start + 2..j].chars().filter(|c| *c != '_').collect();
        return match i64::from_str_radix(&text, 16) {
            Ok(v) if v <= u32::MAX as i64 => (Tok::Int(v), j - start),
            _ => {
                diags.push(Diagnostic::error(
                    "E0002",
                    Span::new(start, j),
                    "invalid hexadecimal literal (at most 32 bits)",
                ));
                (Tok::Int(0), j - start)
            }
        };
    }
    digits(&mut j);
    let mut is_float = false;
    if j < bytes.len()
        && bytes[j] == b'.'
        && bytes.get(j + 1) != Some(&b'.')
        && !bytes
            .get(j + 1)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        is_float = true;
        j += 1;
        digits(&mut j);
    }
    if j < bytes.len() && matches!(bytes[j], b'e' | b'E') {
        let mut k = j + 1;
        if k < bytes.len() && matches!(bytes[k], b'+' | b'-') {
            k += 1;
        }
        if k < bytes.len() && bytes[k].is_ascii_digit() {
            is_float = true;
            j = k;
            digits(&mut j);
        }
    }
    // A trailing `f` (as in C's 1.5f) is accepted on floats.
    if is_float && j < bytes.len() && bytes[j] == b'f' {
        let text: String = source[start..j].chars().filter(|c| *c != '_').collect();
        j += 1;
        return (Tok::Float(text.parse().unwrap_or(0.0)), j - start);
    }
    let text: String = source[start..j].chars().filter(|c| *c != '_').collect();
    if is_float {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => (Tok::Float(v), j - start),
            _ => {
                diags.push(Diagnostic::error(
                    "E0002",
                    Span::new(start, j),
                    "invalid number literal",
                ));
                (Tok::Float(0.0), j - start)
            }
        }
    } else {
        match text.parse::<i64>() {
            Ok(v) if v <= u32::MAX as i64 => (Tok::Int(v), j - start),
            _ => {
                diags.push(
                    Diagnostic::error("E0002", Span::new(start, j), "integer literal too large")
                        .with_note("integer literals must fit in 32 bits"),
                );
                (Tok::Int(0), j - start)
            }
        }
    }
}
