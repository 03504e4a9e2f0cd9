//! Structured diagnostics and their rendering.
//!
//! The library returns [`Diagnostic`] values (code, span, message, labels,
//! notes) so the browser editor can underline them; [`render`] turns them
//! into the familiar terminal form with the offending line and a caret.

use argent_ir::Span;
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term;
use std::fmt;

/// How serious a diagnostic is. Only errors make compilation fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem found in the source text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Short stable code such as `E0101` (see docs/language.md).
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    /// The primary location.
    pub span: Span,
    /// Secondary locations with explanations.
    pub labels: Vec<(Span, String)>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error with a code, primary span and message.
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A warning with a code, primary span and message.
    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.labels.push((span, text.into()));
        self
    }

    /// Adds a note printed under the source excerpt.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Whether this diagnostic makes compilation fail.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{word}[{}] at {}..{}: {}",
            self.code, self.span.start, self.span.end, self.message
        )
    }
}

/// A list of diagnostics: the error type of [`crate::compile`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Clamps a span to the source so rendering never fails on a span that a
/// caller built against another text.
fn clamp_range(span: Span, len: usize) -> std::ops::Range<usize> {
    let start = (span.start as usize).min(len);
    let end = (span.end as usize).clamp(start, len);
    start..end
}

/// Renders diagnostics in the terminal style (header, offending line with a
/// caret, labels, notes), with ANSI colours when `color` is true.
pub fn render(diagnostics: &[Diagnostic], file_name: &str, source: &str, color: bool) -> String {
    let file = SimpleFile::new(file_name, source);
    let config = term::Config::default();
    let mut out = String::new();
    for d in diagnostics {
        let mut labels = vec![cs::Label::primary((), clamp_range(d.span, source.len()))];
        for (span, text) in &d.labels {
            labels.push(
                cs::Label::secondary((), clamp_range(*span, source.len())).with_message(text),
            );
        }
        let diagnostic = match d.severity {
            Severity::Error => cs::Diagnostic::error(),
            Severity::Warning => cs::Diagnostic::warning(),
        }
        .with_code(d.code)
        .with_message(&d.message)
        .with_labels(labels)
        .with_notes(d.notes.clone());
        let rendered = if color {
            let mut writer = term::termcolor::Ansi::new(Vec::new());
            term::emit_to_write_style(&mut writer, &config, &file, &diagnostic)
                .map(|_| String::from_utf8_lossy(&writer.into_inner()).into_owned())
        } else {
            term::emit_into_string(&config, &file, &diagnostic)
        };
        match rendered {
            Ok(text) => out.push_str(&text),
            // Rendering only fails for spans outside the file, which the
            // clamping above rules out; fall back to the one-line form.
            Err(_) => {
                out.push_str(&d.to_string());
                out.push('\n');
            }
        }
    }
    out
}
