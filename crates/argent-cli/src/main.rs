//! The `argent` command: run Argent pipelines on photographs with the
//! reference interpreter, check them, and print their IR.
//!
//! Exit codes: 0 success, 1 user error (a bad program, option, photo or
//! parameter; the message says what to fix), 2 internal error (a bug in
//! Argent, including any panic).

mod error;
mod images;
mod run;

use clap::{Parser, Subcommand};

/// Lowering allocates and frees millions of small expression nodes; with
/// mimalloc instead of glibc's allocator the compiler runs about a tenth
/// faster (box_blur and local_laplacian in `compile_bench`), as rustc
/// ships with jemalloc for the same reason. In the page the compiler has
/// its own size-class allocator (`argent-web/src/small_blocks.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use error::CliError;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES_HELP: &str = "\
Examples:
  argent
      Run examples/unsharp_mask.ag on the bundled photo and write out/unsharp_mask.png.
  argent run examples/sobel.ag --input photo=images/coffee.png -o out/edges.png --time
  argent run examples/unsharp_mask.ag --param amount=3 --size 200x150
  argent run examples/box_blur.ag --schedule my_schedule.ag
  argent check examples/harris.ag
  argent print examples/histogram_equalize.ag

Exit codes: 0 success, 1 user error, 2 internal error (a bug in Argent).";

const RUN_HELP: &str = "\
Images:
  PNG and JPEG photos are read as 8-bit gray, RGB or RGBA and mapped to the
  input's declared dimensions: (x, y) gets the photo's luma (BT.601); (x, y, c)
  gets the channels as decoded, interleaved (c innermost), with gray photos
  expanded to RGB. Sample values follow the declared type: u8, i16, u32, i32
  keep 0..255; u16 gets v * 257 (0..65535); i8 gets v >> 1; f32 gets v / 255
  (0.0..1.0). Outputs are written as 8-bit PNG with the inverse mapping
  (u16 >> 8; f32 outputs are taken to lie in 0.0..1.0, clamped, * 255, rounded).

Output region:
  --size WxH if given; otherwise the params `out_width` and `out_height` if the
  pipeline declares both (resizing pipelines); otherwise the first input's
  size. With --size, declared `out_width`/`out_height` params not set with
  --param are set to W and H. A third output dimension (channels) takes the
  first 3-D input's channel count (3 or 4), or 3.

Examples:
  argent run examples/unsharp_mask.ag --input photo=images/chelsea.png --param amount=2.5
  argent run examples/local_laplacian.ag -o out/ll.png --time
  argent run examples/bicubic_resize.ag --size 1353x900";

/// Run, check and print Argent image-processing pipelines.
///
/// Argent pipelines are written in a Halide-style language (see
/// docs/language.md): the algorithm says what each stage computes, the
/// `schedule { }` block how. This command evaluates the algorithm with the
/// reference interpreter on real photos. Without a subcommand it runs
/// examples/unsharp_mask.ag on the bundled photo images/chelsea.png.
#[derive(Parser, Debug)]
#[command(name = "argent", version, after_help = EXAMPLES_HELP)]
struct Cli {
    /// When to colour diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ColorChoice {
    /// Colour when standard error is a terminal and NO_COLOR is not set.
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a pipeline on photos with the reference interpreter and write its outputs as PNG.
    #[command(after_help = RUN_HELP)]
    Run(run::RunArgs),
    /// Check a pipeline (and a separate schedule file) and report diagnostics only.
    Check {
        /// The pipeline source file (.ag).
        pipeline: PathBuf,
        /// A file holding a `schedule { ... }` block that replaces the pipeline's own.
        #[arg(long, value_name = "FILE")]
        schedule: Option<PathBuf>,
    },
    /// Print the algorithm IR of a pipeline (one definition per line, then the schedule).
    Print {
        /// The pipeline source file (.ag).
        pipeline: PathBuf,
        /// A file holding a `schedule { ... }` block that replaces the pipeline's own.
        #[arg(long, value_name = "FILE")]
        schedule: Option<PathBuf>,
    },
    /// Lower a pipeline under its schedule and print the loop nest (Halide's
    /// `.stmt` in spirit), the schedule tree, or the IR after a named pass.
    Lower {
        /// The pipeline source file (.ag).
        pipeline: PathBuf,
        /// A file holding a `schedule { ... }` block that replaces the pipeline's own.
        #[arg(long, value_name = "FILE")]
        schedule: Option<PathBuf>,
        /// Print the schedule tree (domain, bands, marks) instead of loops.
        #[arg(long)]
        schedule_tree: bool,
        /// Print the IR after this pass (or `all`: after every pass that
        /// changed it) instead of only the final result.
        #[arg(long, value_name = "PASS")]
        print_after: Option<String>,
        /// Print each pass's time and the IR size after it to stderr.
        #[arg(long)]
        time_passes: bool,
        /// Lower for an engine without SIMD128: vectorised loops become
        /// serial loops, or 4-lane vectors around inner loops (what the
        /// page compiles where SIMD is missing).
        #[arg(long)]
        scalar: bool,
    },
    /// Fail with an internal error on purpose (tests the exit-code mapping).
    #[command(hide = true)]
    DebugInternalError {
        /// Panic instead of returning an internal error.
        #[arg(long)]
        panic: bool,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version requests are successes; every other command
            // line problem is a user error (clap's own default would be 2,
            // which Argent reserves for its own bugs).
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let color = match cli.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    // A panic anywhere is a bug in Argent: report it as an internal error
    // with exit code 2 rather than Rust's default 101.
    let outcome = std::panic::catch_unwind(|| dispatch(cli.command, color))
        .unwrap_or_else(|payload| Err(CliError::from_panic(payload)));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Writes `text` to standard output. A reader that closes the pipe early
/// (`argent lower x.ag | head`) wants no more of it: that ends the output
/// quietly, where `print!` would panic and report an internal error.
fn write_stdout(text: &str) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::User(format!(
            "error: cannot write to standard output: {e}"
        ))),
        _ => Ok(()),
    }
}

fn dispatch(command: Option<Command>, color: bool) -> Result<(), CliError> {
    match command {
        None => run::run_default(),
        Some(Command::Run(args)) => run::run(&args, color),
        Some(Command::Check { pipeline, schedule }) => {
            let loaded = run::load(&pipeline, schedule.as_deref(), color)?;
            let p = &loaded.pipeline;
            write_stdout(&format!(
                "{}: ok ({} input(s), {} param(s), {} func(s), {} output(s), {} schedule directive(s))\n",
                pipeline.display(),
                p.inputs.len(),
                p.params.len(),
                p.funcs.len(),
                p.outputs.len(),
                p.schedule.directives.len()
            ))
        }
        Some(Command::Print { pipeline, schedule }) => {
            let loaded = run::load(&pipeline, schedule.as_deref(), color)?;
            write_stdout(&loaded.pipeline.to_string())
        }
        Some(Command::Lower {
            pipeline,
            schedule,
            schedule_tree,
            print_after,
            time_passes,
            scalar,
        }) => {
            let loaded = run::load(&pipeline, schedule.as_deref(), color)?;
            let options = argent_lower::LowerOptions {
                print_after: print_after.clone(),
                time_passes,
                scalar_target: scalar,
                ..Default::default()
            };
            let lowered =
                argent_lower::lower(&loaded.pipeline, &options).map_err(run::lower_error)?;
            if time_passes {
                let mut total = 0.0;
                for stat in &lowered.pass_stats {
                    let seconds = stat.seconds.unwrap_or(0.0);
                    total += seconds;
                    eprintln!(
                        "{:<20} {:>9.2} ms {:>10} nodes",
                        stat.pass,
                        seconds * 1e3,
                        stat.nodes
                    );
                }
                eprintln!("{:<20} {:>9.2} ms", "total", total * 1e3);
            }
            let text = if schedule_tree {
                lowered.schedule_tree.to_string()
            } else if print_after.is_some() {
                lowered
                    .dumps
                    .iter()
                    .map(|(pass, text)| format!("# after {pass}\n{text}\n"))
                    .collect()
            } else {
                lowered.module.body.to_string()
            };
            write_stdout(&text)
        }
        Some(Command::DebugInternalError { panic }) => {
            if panic {
                panic!("deliberate panic requested with `argent debug-internal-error --panic`");
            }
            Err(CliError::Internal(
                "deliberate internal error requested with `argent debug-internal-error`"
                    .to_string(),
            ))
        }
    }
}
