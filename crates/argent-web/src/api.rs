//! The compiler driver behind the wasm-bindgen exports, in plain Rust so it
//! is tested natively: source text in, JSON-ready responses and module
//! bytes out.

use crate::abi::abi_to_json;
use crate::describe::{PipelineDescription, SpanDescription, describe_pipeline, resolve_span};
use argent_ir::Pipeline;
use argent_lang::{Diagnostic, Severity};
use argent_lower::{LowerError, LowerOptions, Lowered};
use argent_wasm::CodegenOptions;
use serde::{Deserialize, Serialize};

/// Options the runtime passes as JSON. Unknown fields are rejected so a
/// typo in the page does not silently compile something else.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CompileOptions {
    /// Emit SIMD128 code; the runtime turns this off when the engine
    /// lacks SIMD (probed with `WebAssembly.validate`).
    pub simd: bool,
    /// Emit parallel loops as calls to the worker pool (needs shared
    /// memory); when false, parallel loops run serially.
    pub threads: bool,
    /// Testing aid: replace the program's schedule by
    /// `argent_lower::random_schedule::random_schedule(pipeline, seed)`;
    /// the response then carries the schedule as text, so a failing seed
    /// can be reproduced and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_schedule: Option<u64>,
    /// With `random_schedule`: take the seed's schedule from
    /// `argent_lower::random_schedule::seeded_schedule` instead (mutations
    /// of the program's own schedule, and fully random schedules for even
    /// seeds of small pipelines), which keeps deep pipelines affordable.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mutate: bool,
    /// Validate the emitted module with `wasmparser` before returning it,
    /// so that a backend bug comes back as a `codegen` diagnostic. Off by
    /// default: the engine validates the module anyway when the runtime
    /// compiles it, and validating twice cost about a fifth of the
    /// backend's time. Always on with `random_schedule` (a testing aid)
    /// and in debug builds.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub validate: bool,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            simd: true,
            threads: true,
            random_schedule: None,
            mutate: false,
            validate: false,
        }
    }
}

/// A labelled secondary location of a diagnostic.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelJson {
    pub span: SpanDescription,
    pub message: String,
}

/// One diagnostic as the editor needs it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticJson {
    pub code: String,
    /// `"error"` or `"warning"`.
    pub severity: String,
    pub message: String,
    pub span: SpanDescription,
    pub labels: Vec<LabelJson>,
    pub notes: Vec<String>,
}

/// Time spent in each compiler phase, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub parse: f64,
    pub lower: f64,
    pub codegen: f64,
    pub total: f64,
}

/// The answer to `check`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResponse {
    pub diagnostics: Vec<DiagnosticJson>,
    /// All diagnostics rendered as the terminal shows them (no colour).
    pub rendered: String,
}

/// The answer to `compile`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum CompileResponse {
    #[serde(rename_all = "camelCase")]
    Ok {
        /// How to call the module (the backend's ABI description).
        abi: serde_json::Value,
        pipeline: PipelineDescription,
        timings: Timings,
        options: CompileOptions,
        /// Warnings, if any.
        diagnostics: Vec<DiagnosticJson>,
        /// The random schedule that replaced the program's own (one
        /// directive a line), when the options asked for one.
        #[serde(skip_serializing_if = "Option::is_none")]
        schedule: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Error {
        /// Which phase failed: `"options"`, `"parse"`, `"lower"`,
        /// `"codegen"`, or `"unavailable"`.
        phase: String,
        diagnostics: Vec<DiagnosticJson>,
        rendered: String,
    },
}

/// Serialises a response; the structs above always serialise, so a
/// failure here is a bug and becomes a JSON error rather than a panic.
pub fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| {
        format!(
            r#"{{"status":"error","phase":"internal","diagnostics":[],"rendered":{}}}"#,
            serde_json::Value::String(format!("internal error serialising a response: {error}"))
        )
    })
}

/// Parses the options JSON; an empty string means the defaults.
pub fn parse_options(options_json: &str) -> Result<CompileOptions, String> {
    if options_json.trim().is_empty() {
        return Ok(CompileOptions::default());
    }
    serde_json::from_str(options_json).map_err(|error| format!("bad compile options: {error}"))
}

/// The name diagnostics give the source text when rendered.
const FILE_NAME: &str = "pipeline.ag";

fn diagnostic_json(source: &str, diagnostic: &Diagnostic) -> DiagnosticJson {
    DiagnosticJson {
        code: diagnostic.code.to_string(),
        severity: match diagnostic.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
        .to_string(),
        message: diagnostic.message.clone(),
        span: resolve_span(source, diagnostic.span),
        labels: diagnostic
            .labels
            .iter()
            .map(|(span, message)| LabelJson {
                span: resolve_span(source, *span),
                message: message.clone(),
            })
            .collect(),
        notes: diagnostic.notes.clone(),
    }
}

fn diagnostics_json(source: &str, diagnostics: &[Diagnostic]) -> Vec<DiagnosticJson> {
    diagnostics
        .iter()
        .map(|d| diagnostic_json(source, d))
        .collect()
}

/// A lowering failure as a front-end style diagnostic: schedule errors
/// point at the directive, algorithm errors at the whole program, and
/// compiler bugs say so.
fn lower_error_diagnostic(error: &LowerError) -> Diagnostic {
    match error {
        LowerError::Schedule(e) => Diagnostic::error(e.code.code(), e.span, e.message.clone())
            .with_note(format!("in the directive `{}`", e.directive)),
        LowerError::Algorithm(message) => {
            Diagnostic::error("L0001", argent_ir::Span::DUMMY, message.clone())
        }
        LowerError::Bug(bug) => Diagnostic::error("ICE", argent_ir::Span::DUMMY, bug.to_string())
            .with_note("this is a bug in the Argent compiler, not in your program"),
    }
}

/// Checks a program and reports its diagnostics (errors and warnings).
pub fn check(source: &str) -> CheckResponse {
    let (_, diagnostics) = argent_lang::check(source);
    CheckResponse {
        diagnostics: diagnostics_json(source, &diagnostics),
        rendered: argent_lang::render(&diagnostics, FILE_NAME, source, false),
    }
}

/// Compiles a program to a Wasm module. `now_ms` is a monotonic clock.
pub fn compile(
    source: &str,
    options_json: &str,
    now_ms: &dyn Fn() -> f64,
) -> (CompileResponse, Vec<u8>) {
    let (response, wasm, leftovers) = compile_leaving_cleanup(source, options_json, now_ms);
    drop(leftovers);
    (response, wasm)
}

/// What a compile built on its way and no longer needs: the checked
/// program and the lowered IR, with every intermediate tree (see
/// `argent_lower::Lowered::retired`). Dropping it frees them.
pub struct Leftovers {
    _parts: Option<(Pipeline, Lowered)>,
}

/// [`compile`], handing back what remains to be freed instead of freeing
/// it, so that the caller can answer first: freeing the lowered IR takes
/// about a twentieth of a compile.
pub fn compile_leaving_cleanup(
    source: &str,
    options_json: &str,
    now_ms: &dyn Fn() -> f64,
) -> (CompileResponse, Vec<u8>, Leftovers) {
    let nothing = Leftovers { _parts: None };
    let fail = |phase: &str, diagnostics: Vec<Diagnostic>| CompileResponse::Error {
        phase: phase.to_string(),
        diagnostics: diagnostics_json(source, &diagnostics),
        rendered: argent_lang::render(&diagnostics, FILE_NAME, source, false),
    };
    let options = match parse_options(options_json) {
        Ok(options) => options,
        Err(message) => {
            let diagnostic = Diagnostic::error("W0001", argent_ir::Span::DUMMY, message);
            return (fail("options", vec![diagnostic]), Vec::new(), nothing);
        }
    };
    let started = now_ms();
    let (pipeline, diagnostics) = argent_lang::check(source);
    let Some(mut pipeline) = pipeline else {
        return (fail("parse", diagnostics), Vec::new(), nothing);
    };
    let schedule = options.random_schedule.map(|seed| {
        pipeline.schedule.directives = if options.mutate {
            argent_lower::random_schedule::seeded_schedule(&pipeline, seed)
        } else {
            argent_lower::random_schedule::random_schedule(&pipeline, seed)
        };
        pipeline
            .schedule
            .directives
            .iter()
            .map(argent_lower::error::directive_text)
            .collect::<Vec<_>>()
            .join("\n")
    });
    let parsed = now_ms();
    let lower_options = LowerOptions {
        scalar_target: !options.simd,
        ..LowerOptions::default()
    };
    let lowered = match argent_lower::lower(&pipeline, &lower_options) {
        Ok(lowered) => lowered,
        Err(error) => {
            let mut diagnostic = lower_error_diagnostic(&error);
            if let (Some(seed), Some(text)) = (options.random_schedule, &schedule) {
                diagnostic = diagnostic.with_note(format!("with random schedule {seed}:\n{text}"));
            }
            return (fail("lower", vec![diagnostic]), Vec::new(), nothing);
        }
    };
    let lowered_at = now_ms();
    let codegen_options = CodegenOptions {
        simd: options.simd,
        threads: options.threads,
    };
    let validate = options.validate || options.random_schedule.is_some() || cfg!(debug_assertions);
    let compiled = if validate {
        argent_wasm::compile(&lowered.module, &codegen_options)
    } else {
        argent_wasm::compile_unvalidated(&lowered.module, &codegen_options)
    };
    let compiled = match compiled {
        Ok(compiled) => compiled,
        Err(error) => {
            let mut diagnostic = if error.is_user_error() {
                Diagnostic::error("L0002", argent_ir::Span::DUMMY, error.to_string())
            } else {
                Diagnostic::error("ICE", argent_ir::Span::DUMMY, error.to_string())
                    .with_note("this is a bug in the Argent compiler, not in your program")
            };
            if let (Some(seed), Some(text)) = (options.random_schedule, &schedule) {
                diagnostic = diagnostic.with_note(format!("with random schedule {seed}:\n{text}"));
            }
            return (fail("codegen", vec![diagnostic]), Vec::new(), nothing);
        }
    };
    let finished = now_ms();
    let response = CompileResponse::Ok {
        abi: abi_to_json(&compiled.abi),
        pipeline: describe_pipeline(&pipeline),
        timings: Timings {
            parse: parsed - started,
            lower: lowered_at - parsed,
            codegen: finished - lowered_at,
            total: finished - started,
        },
        options,
        diagnostics: diagnostics_json(source, &diagnostics),
        schedule,
    };
    let leftovers = Leftovers {
        _parts: Some((pipeline, lowered)),
    };
    (response, compiled.bytes, leftovers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn clock() -> f64 {
        0.0
    }

    #[test]
    fn syntax_errors_come_back_as_located_diagnostics() {
        let source = "input u8 in(x, y)\nout(x, y) = in(x, y) +\noutput out\n";
        let (response, wasm) = compile(source, "", &clock);
        assert!(wasm.is_empty());
        let CompileResponse::Error {
            phase,
            diagnostics,
            rendered,
        } = response
        else {
            panic!("a syntax error must fail: {response:?}");
        };
        assert_eq!(phase, "parse");
        let first = &diagnostics[0];
        assert_eq!(first.severity, "error");
        assert!(
            first.span.start.line >= 2,
            "points into the program: {first:?}"
        );
        assert!(
            rendered.contains(&first.code),
            "rendered text names the code: {rendered}"
        );
    }

    #[test]
    fn bad_options_are_reported_not_ignored() {
        let (response, _) = compile("", r#"{"simd": true, "threds": false}"#, &clock);
        let CompileResponse::Error {
            phase, diagnostics, ..
        } = response
        else {
            panic!("unknown option must fail");
        };
        assert_eq!(phase, "options");
        expect!["bad compile options: unknown field `threds`, expected one of `simd`, `threads`, `randomSchedule`, `mutate`, `validate` at line 1 column 23"]
            .assert_eq(&diagnostics[0].message);
    }

    #[test]
    fn a_pipeline_compiles_to_a_described_module() {
        let source =
            "input u8 in(x, y)\nparam u8 k = 3 in 0 .. 10\nout(x, y) = in(x, y) + k\noutput out\n";
        let (response, wasm) = compile(source, r#"{"simd": false, "threads": false}"#, &clock);
        let CompileResponse::Ok { pipeline, abi, .. } = &response else {
            panic!("compiles: {response:?}");
        };
        assert_eq!(argent_wasm::validate(&wasm), Ok(()));
        expect![[r#"{"inputs":[{"name":"in","type":"u8","dims":["x","y"]}],"outputs":[{"name":"out","type":"u8","dims":["x","y"]}],"params":[{"name":"k","type":"u8","default":3.0,"range":[0.0,10.0]}]}"#]]
            .assert_eq(&to_json(pipeline));
        assert_eq!(abi["sharedMemory"], false);
        assert_eq!(abi["buffers"].as_array().map(Vec::len), Some(2));
    }

    /// Without SIMD the module has no vector instructions and does not grow
    /// with the vector width (lane by lane, 32 lanes took four times the
    /// code of 8): a vectorised loop of straight-line code is a serial
    /// loop, one around a loop (an inline reduction) runs 4 lanes at a time.
    #[test]
    fn without_simd_the_code_does_not_grow_with_the_vector_width() {
        let scalar = |value: &str, lanes: u32| {
            let source = format!(
                "input u8 in(x, y)\nout(x, y) = {value}\noutput out\nschedule {{\n  out.vectorize(x, {lanes})\n}}\n"
            );
            let (response, wasm) = compile(&source, r#"{"simd": false, "validate": true}"#, &clock);
            assert!(
                matches!(response, CompileResponse::Ok { .. }),
                "{response:?}"
            );
            wasm
        };
        for value in [
            "in(x, y) / 3 + in(x + 1, y)",
            "u8(sum(in[x - 1 : 3, y - 1 : 3]) / 9)",
        ] {
            let (narrow, wide) = (scalar(value, 8), scalar(value, 32));
            let text = wasmprinter::print_bytes(&wide).expect("a valid module");
            assert!(!text.contains("v128") && !text.contains("i8x16"), "{text}");
            assert!(
                wide.len() <= narrow.len() + 16,
                "{value}: 8 lanes: {} bytes, 32 lanes: {} bytes",
                narrow.len(),
                wide.len()
            );
        }
    }

    /// Validation is a check only: the page's default (unvalidated) module
    /// is the validated one, byte for byte, and it is valid.
    #[test]
    fn validation_does_not_change_the_module() {
        let source = "input u8 in(x, y)\nout(x, y) = in(x, y) / 3 + in(x + 1, y)\noutput out\nschedule {\n  out.vectorize(x, 16)\n}\n";
        let (unchecked, plain) = compile(source, "", &clock);
        let (checked, validated) = compile(source, r#"{"validate": true}"#, &clock);
        assert!(
            matches!(unchecked, CompileResponse::Ok { .. }),
            "{unchecked:?}"
        );
        assert!(matches!(checked, CompileResponse::Ok { .. }), "{checked:?}");
        assert_eq!(plain, validated);
        assert_eq!(argent_wasm::validate(&plain), Ok(()));
    }

    /// A random schedule replaces the program's own and comes back as
    /// text; the same seed gives the same schedule.
    #[test]
    fn a_random_schedule_is_applied_and_reported() {
        let source = "input u8 in(x, y)\nf(x, y) = in(x, y) / 2\nout(x, y) = f(x, y) + f(x + 1, y)\noutput out\nschedule {\n  out.vectorize(x, 8)\n}\n";
        let schedules: Vec<Option<String>> = (0..6)
            .map(|seed| {
                let options =
                    format!(r#"{{"simd": true, "threads": false, "randomSchedule": {seed}}}"#);
                let (response, wasm) = compile(source, &options, &clock);
                let CompileResponse::Ok { schedule, .. } = response else {
                    panic!("seed {seed} compiles: {response:?}");
                };
                assert_eq!(argent_wasm::validate(&wasm), Ok(()));
                schedule
            })
            .collect();
        assert!(schedules.iter().all(Option::is_some));
        // Seeds give different schedules.
        assert!(schedules.iter().any(|s| s != &schedules[0]));
        let (again, _) = compile(source, r#"{"randomSchedule": 3}"#, &clock);
        let CompileResponse::Ok { schedule, .. } = again else {
            panic!("compiles");
        };
        assert_eq!(schedule, schedules[3]);
        // Mutations start from the program's own schedule.
        let (mutated, _) = compile(source, r#"{"randomSchedule": 1, "mutate": true}"#, &clock);
        let CompileResponse::Ok { schedule, .. } = mutated else {
            panic!("compiles");
        };
        assert!(schedule.unwrap().contains("out.vectorize(x, 8)"));
    }
}
