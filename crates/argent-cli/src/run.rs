//! Loading pipelines (with diagnostics rendered for the terminal) and
//! running them on photos with the reference interpreter.

use crate::error::CliError;
use crate::images::{self, Raster};
use argent_interp::{Buffer, Value};
use argent_ir::{Pipeline, TypeKind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The example `argent` runs when given no arguments, embedded so that it
/// works from any folder.
const DEFAULT_EXAMPLE: &str = include_str!("../../../examples/unsharp_mask.ag");
const DEFAULT_EXAMPLE_NAME: &str = "examples/unsharp_mask.ag";
/// The photo used when an input is not given on the command line.
const BUNDLED_PHOTO: &[u8] = include_bytes!("../../../images/chelsea.png");
const BUNDLED_PHOTO_NAME: &str = "images/chelsea.png";

/// The interpreter recurses once per stage on demand; deep pipelines such
/// as the local Laplacian need more stack than a main thread has in debug
/// builds, so runs get a thread with a generous stack.
const RUN_STACK_BYTES: usize = 512 << 20;

/// Options of `argent run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The pipeline source file (.ag).
    pub pipeline: PathBuf,
    /// A photo (PNG or JPEG) for an input, as NAME=FILE. Repeat for several
    /// inputs. May be omitted when the pipeline has one input: the bundled
    /// photo images/chelsea.png is used.
    #[arg(short, long = "input", value_name = "NAME=FILE", value_parser = parse_assignment)]
    pub inputs: Vec<(String, String)>,
    /// A parameter value, as NAME=VALUE. Repeat for several parameters;
    /// others take their defaults.
    #[arg(short, long = "param", value_name = "NAME=VALUE", value_parser = parse_assignment)]
    pub params: Vec<(String, String)>,
    /// The output size, as WIDTHxHEIGHT (default: see below).
    #[arg(long, value_name = "WxH", value_parser = parse_size)]
    pub size: Option<(u32, u32)>,
    /// Significant bits of u16 inputs and outputs: photos are scaled to
    /// 0..2^BITS-1 and back (16 fills the range; 12 leaves the headroom that
    /// 12-bit camera data has, as the box blur example expects).
    #[arg(long, value_name = "BITS", default_value_t = 16, value_parser = clap::value_parser!(u8).range(8..=16))]
    pub bits: u8,
    /// A file holding a `schedule { ... }` block that replaces the pipeline's own.
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,
    /// Where to write the output (.png, .jpg or .jpeg). With several outputs,
    /// each goes to FILE with `-NAME` added before the extension.
    /// Default: out/<pipeline name>.png.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print how long the interpreter took.
    #[arg(long)]
    pub time: bool,
    /// What executes the pipeline: the reference interpreter (the algorithm
    /// alone), or the lowered program (the schedule's loop nest, run by the
    /// lowered-IR executor; the WebAssembly runtime runs the same program).
    #[arg(long, value_enum, default_value_t = Engine::Reference)]
    pub engine: Engine,
    /// With `--engine lowered`: print how many values each stage stored and
    /// the size of every allocation.
    #[arg(long)]
    pub stats: bool,
}

/// What executes a pipeline in `argent run`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The reference interpreter: evaluates the algorithm, ignores the schedule.
    Reference,
    /// Lowering plus the lowered-IR executor: follows the schedule.
    Lowered,
}

/// Parses `NAME=VALUE`.
fn parse_assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("expected NAME=VALUE, found `{text}`")),
    }
}

/// Parses `WIDTHxHEIGHT` with both at least 1.
fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let parsed = text
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((w, h)) if w > 0 && h > 0 => Ok((w, h)),
        _ => Err(format!(
            "expected WIDTHxHEIGHT such as 640x480, found `{text}`"
        )),
    }
}

/// A compiled pipeline with the text it came from.
pub struct Loaded {
    pub pipeline: Pipeline,
}

/// Reads a text file; failure is a user error naming the file.
fn read_text(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::User(format!("error: cannot read `{}`: {e}", path.display())))
}

/// Compiles pipeline source text. Warnings are rendered to standard error;
/// errors become a user error with every diagnostic rendered against
/// `file_name`.
fn compile(source: &str, file_name: &str, color: bool) -> Result<Pipeline, CliError> {
    let (pipeline, diagnostics) = argent_lang::check(source);
    match pipeline {
        Some(pipeline) => {
            if !diagnostics.is_empty() {
                eprint!(
                    "{}",
                    argent_lang::render(&diagnostics, file_name, source, color)
                );
            }
            Ok(pipeline)
        }
        None => Err(CliError::User(argent_lang::render(
            &diagnostics,
            file_name,
            source,
            color,
        ))),
    }
}

/// Reads and compiles a pipeline and, when given, replaces its schedule
/// with the one in `schedule_path`.
pub fn load(path: &Path, schedule_path: Option<&Path>, color: bool) -> Result<Loaded, CliError> {
    let source = read_text(path)?;
    let mut pipeline = compile(&source, &path.display().to_string(), color)?;
    if let Some(schedule_path) = schedule_path {
        let schedule_source = read_text(schedule_path)?;
        let schedule =
            argent_lang::parse_schedule(&schedule_source, &pipeline).map_err(|diagnostics| {
                CliError::User(argent_lang::render(
                    &diagnostics.0,
                    &schedule_path.display().to_string(),
                    &schedule_source,
                    color,
                ))
            })?;
        pipeline.schedule = schedule;
    }
    Ok(Loaded { pipeline })
}

/// `argent` with no arguments: the embedded unsharp-mask example on the
/// bundled photo, written to out/unsharp_mask.png.
pub fn run_default() -> Result<(), CliError> {
    let pipeline = compile(DEFAULT_EXAMPLE, DEFAULT_EXAMPLE_NAME, false)
        .map_err(|e| CliError::Internal(format!("the embedded example does not compile:\n{e}")))?;
    let photo = images::decode(BUNDLED_PHOTO)
        .map_err(|e| CliError::Internal(format!("the bundled photo does not decode: {e}")))?;
    let path = PathBuf::from("out/unsharp_mask.png");
    let inputs = vec![(pipeline.inputs[0].name.clone(), photo)];
    let report = execute(
        &pipeline,
        &inputs,
        &[],
        None,
        16,
        Engine::Reference,
        false,
        &path,
    )?;
    let mut text = format!(
        "Ran {DEFAULT_EXAMPLE_NAME} (unsharp mask, amount 1.5) on the bundled photo {BUNDLED_PHOTO_NAME} ({}x{}).\n",
        report.width, report.height
    );
    for written in &report.written {
        text += &format!("Wrote {}\n", written.display());
    }
    text += &format!(
        "Took {} (reference interpreter).\n",
        format_duration(report.elapsed)
    );
    text += "Next: `argent run examples/sobel.ag -o out/sobel.png`, or `argent --help`.\n";
    crate::write_stdout(&text)
}

/// `argent run`.
pub fn run(args: &RunArgs, color: bool) -> Result<(), CliError> {
    let loaded = load(&args.pipeline, args.schedule.as_deref(), color)?;
    let pipeline = &loaded.pipeline;

    // Photos for every input, the bundled one standing in for a single
    // input that was not given.
    let mut photos: Vec<(String, Raster)> = Vec::new();
    for (name, file) in &args.inputs {
        if pipeline.input(name).is_none() {
            return Err(CliError::User(format!(
                "error: the pipeline has no input named `{name}`; its inputs are: {}",
                list(pipeline.inputs.iter().map(|i| i.name.as_str()))
            )));
        }
        let raster =
            images::read(Path::new(file)).map_err(|e| CliError::User(format!("error: {e}")))?;
        photos.push((name.clone(), raster));
    }
    if args.inputs.is_empty() && pipeline.inputs.len() == 1 {
        let raster = images::decode(BUNDLED_PHOTO)
            .map_err(|e| CliError::Internal(format!("the bundled photo does not decode: {e}")))?;
        photos.push((pipeline.inputs[0].name.clone(), raster));
    }
    for input in &pipeline.inputs {
        if !photos.iter().any(|(name, _)| *name == input.name) {
            return Err(CliError::User(format!(
                "error: no photo was given for input `{0}`; pass one with --input {0}=photo.png",
                input.name
            )));
        }
    }

    let stem = args
        .pipeline
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".to_string());
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(format!("{stem}.png")));
    images::output_format(&path).map_err(|e| CliError::User(format!("error: {e}")))?;
    let report = execute(
        pipeline,
        &photos,
        &args.params,
        args.size,
        args.bits,
        args.engine,
        args.stats,
        &path,
    )?;
    let mut text = String::new();
    for written in &report.written {
        text += &format!(
            "wrote {} ({}x{})\n",
            written.display(),
            report.width,
            report.height
        );
    }
    if args.time {
        text += &format!(
            "realized in {} (reference interpreter)\n",
            format_duration(report.elapsed)
        );
    }
    crate::write_stdout(&text)
}

/// What a run produced.
struct Report {
    written: Vec<PathBuf>,
    width: u32,
    height: u32,
    elapsed: Duration,
}

fn format_duration(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

/// Parses a parameter value given on the command line for its declared
/// type. Range checks are the interpreter's (it reports them by name).
fn parse_param(pipeline: &Pipeline, name: &str, text: &str) -> Result<Value, CliError> {
    let Some(param) = pipeline.param(name) else {
        return Err(CliError::User(format!(
            "error: the pipeline has no parameter named `{name}`; its parameters are: {}",
            list(pipeline.params.iter().map(|p| p.name.as_str()))
        )));
    };
    let bad = |what: &str| {
        CliError::User(format!(
            "error: bad value `{text}` for parameter `{name}`: expected {what} (it is declared {})",
            param.ty
        ))
    };
    match param.ty.kind {
        TypeKind::Float => text
            .parse::<f32>()
            .map(Value::Float)
            .map_err(|_| bad("a number")),
        TypeKind::Bool => match text {
            "true" | "1" => Ok(Value::Int(1)),
            "false" | "0" => Ok(Value::Int(0)),
            _ => Err(bad("true or false")),
        },
        TypeKind::Int | TypeKind::UInt => text
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| bad("an integer")),
    }
}

/// The value a parameter will have: the one given, else its default.
fn param_value(pipeline: &Pipeline, params: &[(String, Value)], name: &str) -> Option<i64> {
    if let Some((_, v)) = params.iter().find(|(n, _)| n == name) {
        return Some(v.as_i64());
    }
    pipeline
        .param(name)
        .and_then(|p| p.default)
        .map(|d| d as i64)
}

/// Converts the photos, works out the output region, runs the interpreter
/// (timed) and writes every output.
fn execute(
    pipeline: &Pipeline,
    photos: &[(String, Raster)],
    param_args: &[(String, String)],
    size: Option<(u32, u32)>,
    bits: u8,
    engine: Engine,
    stats: bool,
    path: &Path,
) -> Result<Report, CliError> {
    let mut buffers: Vec<(String, Buffer)> = Vec::new();
    for input in &pipeline.inputs {
        let Some((_, raster)) = photos.iter().find(|(name, _)| *name == input.name) else {
            continue;
        };
        let buffer = images::to_input_buffer(raster, &input.name, input.dims.len(), input.ty, bits)
            .map_err(|e| CliError::User(format!("error: {e}")))?;
        buffers.push((input.name.clone(), buffer));
    }

    let mut params: Vec<(String, Value)> = Vec::new();
    for (name, text) in param_args {
        params.push((name.clone(), parse_param(pipeline, name, text)?));
    }

    // The output region (see `argent run --help`).
    let declares_out_size = ["out_width", "out_height"]
        .iter()
        .all(|n| pipeline.param(n).is_some_and(|p| p.ty.is_integer()));
    let (width, height) = match size {
        Some((w, h)) => {
            if declares_out_size {
                for (name, value) in [("out_width", w), ("out_height", h)] {
                    if !params.iter().any(|(n, _)| n == name) {
                        params.push((name.to_string(), Value::Int(value as i64)));
                    }
                }
            }
            (w as i64, h as i64)
        }
        None if declares_out_size => {
            match (
                param_value(pipeline, &params, "out_width"),
                param_value(pipeline, &params, "out_height"),
            ) {
                (Some(w), Some(h)) => (w, h),
                _ => {
                    return Err(CliError::User(
                        "error: the output size is unknown: give --size WxH or the params out_width and out_height"
                            .to_string(),
                    ));
                }
            }
        }
        None => match buffers.first() {
            Some((_, b)) => (b.dims()[0].extent, b.dims()[1].extent),
            None => {
                return Err(CliError::User(
                    "error: the pipeline has no inputs, so the output size is unknown: give --size WxH".to_string(),
                ));
            }
        },
    };
    let channels = buffers
        .iter()
        .find(|(_, b)| b.dimensions() == 3)
        .map_or(3, |(_, b)| b.dims()[2].extent);
    let output_dims = pipeline
        .outputs
        .first()
        .and_then(|name| pipeline.func(name))
        .map_or(2, |f| f.args.len());
    let region: Vec<(i64, i64)> = (0..output_dims)
        .map(|d| match d {
            0 => (0, width),
            1 => (0, height),
            2 => (0, channels),
            _ => (0, 1),
        })
        .collect();

    let (outputs, elapsed) = match engine {
        Engine::Reference => realize_on_big_stack(pipeline, &buffers, &params, &region)?,
        Engine::Lowered => run_lowered(pipeline, &buffers, &params, &region, stats)?,
    };

    let mut written = Vec::new();
    let mut report_size = (width as u32, height as u32);
    for (index, (name, buffer)) in pipeline.outputs.iter().zip(&outputs).enumerate() {
        let raster = images::from_output_buffer(buffer, name, bits)
            .map_err(|e| CliError::User(format!("error: {e}")))?;
        if index == 0 {
            report_size = (raster.width, raster.height);
        }
        let target = if pipeline.outputs.len() == 1 {
            path.to_path_buf()
        } else {
            path_for_output(path, name)
        };
        images::write(&raster, &target).map_err(|e| CliError::User(format!("error: {e}")))?;
        written.push(target);
    }
    Ok(Report {
        written,
        width: report_size.0,
        height: report_size.1,
        elapsed,
    })
}

/// `out/x.png` and output `edges` give `out/x-edges.png`.
fn path_for_output(path: &Path, output: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = path
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "png".into());
    path.with_file_name(format!("{stem}-{output}.{extension}"))
}

/// Runs the interpreter on a thread with a large stack and times it.
fn realize_on_big_stack(
    pipeline: &Pipeline,
    buffers: &[(String, Buffer)],
    params: &[(String, Value)],
    region: &[(i64, i64)],
) -> Result<(Vec<Buffer>, Duration), CliError> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("argent-run".to_string())
            .stack_size(RUN_STACK_BYTES)
            .spawn_scoped(scope, || {
                let inputs: Vec<(&str, &Buffer)> =
                    buffers.iter().map(|(n, b)| (n.as_str(), b)).collect();
                let params: Vec<(&str, Value)> =
                    params.iter().map(|(n, v)| (n.as_str(), *v)).collect();
                let start = Instant::now();
                let result = argent_interp::realize(pipeline, &inputs, &params, region);
                (result, start.elapsed())
            })
            .map_err(|e| CliError::Internal(format!("cannot start the interpreter thread: {e}")))?;
        match handle.join() {
            Ok((result, elapsed)) => Ok((result?, elapsed)),
            Err(payload) => Err(CliError::from_panic(payload)),
        }
    })
}

/// Lowers the pipeline under its schedule and runs the lowered program
/// with the executor, on output buffers covering `region`.
fn run_lowered(
    pipeline: &Pipeline,
    buffers: &[(String, Buffer)],
    params: &[(String, Value)],
    region: &[(i64, i64)],
    print_stats: bool,
) -> Result<(Vec<Buffer>, Duration), CliError> {
    let start = Instant::now();
    let lowered = argent_lower::lower(pipeline, &argent_lower::LowerOptions::default())
        .map_err(lower_error)?;
    let mut outputs: Vec<Buffer> = Vec::new();
    for name in &pipeline.outputs {
        let func = pipeline
            .func(name)
            .ok_or_else(|| CliError::Internal(format!("output `{name}` has no definition")))?;
        let dims = &region[..func.args.len().min(region.len())];
        let extents: Vec<i64> = dims.iter().map(|d| d.1).collect();
        let mins: Vec<i64> = dims.iter().map(|d| d.0).collect();
        outputs.push(Buffer::new(func.ty, &extents).with_min(&mins));
    }
    let inputs: Vec<(&str, &Buffer)> = buffers.iter().map(|(n, b)| (n.as_str(), b)).collect();
    let params: Vec<(&str, Value)> = params.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let mut targets: Vec<(&str, &mut Buffer)> = pipeline
        .outputs
        .iter()
        .map(String::as_str)
        .zip(outputs.iter_mut())
        .collect();
    let stats =
        argent_lower::exec::run(&lowered.module, &inputs, &mut targets, &params).map_err(|e| {
            match e {
                argent_lower::exec::ExecError::AssertFailed { kind, args } => {
                    let args: Vec<i64> = args.iter().map(|v| v.as_i64()).collect();
                    CliError::User(format!("error: {}", kind.message(&args)))
                }
                e if e.is_compiler_bug() => CliError::Internal(e.to_string()),
                e => CliError::User(format!("error: {e}")),
            }
        })?;
    if print_stats {
        eprint!("{stats}");
    }
    Ok((outputs, start.elapsed()))
}

/// Schedule and algorithm problems are the user's; anything else is ours.
pub fn lower_error(e: argent_lower::LowerError) -> CliError {
    match e {
        argent_lower::LowerError::Bug(bug) => CliError::Internal(bug.to_string()),
        other => CliError::User(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_values_parse() {
        assert_eq!(
            parse_assignment("amount=2.5"),
            Ok(("amount".into(), "2.5".into()))
        );
        assert!(parse_assignment("=3").is_err());
        assert!(parse_assignment("amount").is_err());
        assert_eq!(parse_size("640x480"), Ok((640, 480)));
        assert_eq!(parse_size("64X48"), Ok((64, 48)));
        assert!(parse_size("0x10").is_err());
        assert!(parse_size("640").is_err());
    }

    #[test]
    fn several_outputs_get_their_names_in_the_file_name() {
        assert_eq!(
            path_for_output(Path::new("out/x.png"), "edges"),
            PathBuf::from("out/x-edges.png")
        );
    }
}
