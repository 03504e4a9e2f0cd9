//! Argent's language front end.
//!
//! Text goes through the [`lexer`], the recovering [`parser`] (an [`ast`]),
//! and the checker, which resolves names, applies Halide's type rules and
//! desugars boundary conditions, border rules, window operators, inline
//! reductions and compound updates into an [`argent_ir::Pipeline`].
//! Problems come back as structured [`Diagnostic`]s; [`render`] prints
//! them with the offending line and a caret. The [`builder`] module builds
//! the same pipelines from Rust.
//!
//! The crate does no I/O and builds for `wasm32-unknown-unknown`.

pub mod ast;
mod boundary;
pub mod builder;
mod check;
mod diag;
mod footprint;
pub mod lexer;
pub mod parser;
pub mod pretty;
mod schedule;
pub mod types;

pub use diag::{Diagnostic, Diagnostics, Severity, render};

use argent_ir::{Pipeline, Schedule};

/// Parses and checks a pipeline source file. Warnings are dropped; use
/// [`check`] to see them.
pub fn compile(source: &str) -> Result<Pipeline, Diagnostics> {
    match check(source) {
        (Some(p), _) => Ok(p),
        (None, diags) => Err(Diagnostics(diags)),
    }
}

/// Parses and checks a pipeline source file, returning the pipeline when
/// there are no errors, and every diagnostic (errors and warnings) found.
pub fn check(source: &str) -> (Option<Pipeline>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let program = parser::parse_program(source, &mut diags);
    let pipeline = check::check_program(&program, &mut diags);
    sort(&mut diags);
    let ok = !diags.iter().any(Diagnostic::is_error);
    (ok.then_some(pipeline), diags)
}

/// Parses a schedule file (just a `schedule { ... }` block) and checks it
/// against `pipeline`. The result replaces `pipeline.schedule`.
pub fn parse_schedule(source: &str, pipeline: &Pipeline) -> Result<Schedule, Diagnostics> {
    let mut diags = Vec::new();
    let block = parser::parse_schedule_file(source, &mut diags);
    let schedule = match block {
        Some(b) if diags.is_empty() => {
            let conditions = check::schedule_conditions(&b, pipeline, &mut diags);
            schedule::check_schedule(&b, pipeline, None, &conditions, &mut diags)
        }
        _ => Schedule::default(),
    };
    sort(&mut diags);
    if diags.iter().any(Diagnostic::is_error) {
        Err(Diagnostics(diags))
    } else {
        Ok(schedule)
    }
}

/// Parses a pipeline file into its syntax tree (for tooling and tests).
pub fn parse(source: &str) -> (ast::Program, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let program = parser::parse_program(source, &mut diags);
    (program, diags)
}

/// Orders diagnostics by position (stable, so related ones stay together).
fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by_key(|d| d.span.start);
}

/// Resets every span in a pipeline to `Span::DUMMY`, so pipelines built
/// from text and from the [`builder`] compare equal.
pub fn strip_spans(p: &mut Pipeline) {
    use argent_ir::Span;
    p.inputs.iter_mut().for_each(|i| i.span = Span::DUMMY);
    p.params.iter_mut().for_each(|i| i.span = Span::DUMMY);
    for f in &mut p.funcs {
        f.span = Span::DUMMY;
        for u in &mut f.updates {
            u.span = Span::DUMMY;
            if let Some(r) = &mut u.rdom {
                r.span = Span::DUMMY;
            }
        }
    }
    p.schedule
        .directives
        .iter_mut()
        .for_each(|d| d.span = Span::DUMMY);
}

pub(crate) fn check_edit_distance(a: &str, b: &str) -> usize {
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
