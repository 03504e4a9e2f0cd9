//! Project automation: `cargo xtask <task>`. See `cargo xtask help`.

mod roofline;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  bench [--quick] [--only NAME]
          measure Argent against the baselines side by side in Node (see
          BENCHMARKS.md): a v128 stream-copy roofline, plain JavaScript,
          Halide 21's wasm-simd128 output for the same schedules, OpenCV.js,
          wasm-vips and photon; plus every examples/*.ag through the runtime
          in web/ when scripts/build-web.sh has built it. --quick: about 1
          minute instead of about 2-3. --only: run the sections whose name
          contains NAME (roofline, js, halide, opencv, vips, photon, argent).
          A full run then measures Argent against Halide and OpenCV.js again
          in pairs of adjacent blocks (bench/halide-ab.mjs,
          bench/library-ab.mjs; about 2 minutes more).
  help    this text";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench") => bench(&args[1..]),
        Some("help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown task `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The repository root: xtask's manifest lives one level below it.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the repository")
        .to_path_buf()
}

/// Runs a command to completion, turning a failure into a message that
/// names the command.
fn run(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|error| format!("could not start {command:?}: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})"))
    }
}

fn bench(args: &[String]) -> Result<(), String> {
    let root = repo_root();
    let bench_dir = root.join("bench");
    let build_dir = bench_dir.join("build");
    std::fs::create_dir_all(&build_dir)
        .map_err(|e| format!("creating {}: {e}", build_dir.display()))?;

    // 1. The roofline module, generated fresh so it cannot drift from this code.
    let roofline = build_dir.join("roofline.wasm");
    std::fs::write(&roofline, roofline::stream_copy_module())
        .map_err(|e| format!("writing {}: {e}", roofline.display()))?;

    // 2. Halide's modules: only rebuilt when the generator changed, because
    //    Halide takes seconds to compile local Laplacian.
    if let Err(message) = build_halide(&bench_dir, &build_dir) {
        eprintln!("xtask: Halide baselines unavailable: {message}");
    }

    // 3. The competitor npm packages, installed from bench/package-lock.json.
    if !bench_dir.join("node_modules").exists() {
        run(Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&bench_dir))?;
    }

    // 4. Argent's native compile time, where the lowering crate ships an example for it.
    native_compile_examples(&root);

    // 5. Everything in one Node process.
    let mut node = Command::new("node");
    node.arg(bench_dir.join("run.mjs"))
        .arg("--build")
        .arg(&build_dir)
        .arg("--out")
        .arg(bench_dir.join("results"))
        .args(args)
        .current_dir(&bench_dir);
    run(&mut node)?;

    // 6. The ratios against Halide and OpenCV.js again, measured in
    //    pairs of adjacent blocks (the sections above run minutes apart, and
    //    this machine's speed drifts). Full runs only: they take about two
    //    minutes.
    let partial = args.iter().any(|a| a == "--only" || a == "--quick");
    if !partial && root.join("web").join("dist").exists() {
        for script in ["halide-ab.mjs", "library-ab.mjs"] {
            println!("\n{script}: paired blocks");
            run(Command::new("node")
                .arg(bench_dir.join(script))
                .current_dir(&bench_dir))?;
        }
    }
    Ok(())
}

/// Compiles the Halide pipelines of bench/halide/gen.py to wasm objects and
/// links each into a module with rust-lld.
fn build_halide(bench_dir: &Path, build_dir: &Path) -> Result<(), String> {
    let generator = bench_dir.join("halide").join("gen.py");
    let objects = build_dir.join("halide");
    let names = [
        "halide_blur_paper",
        "halide_blur_strip",
        "halide_unsharp",
        "halide_local_laplacian",
        "halide_bilateral_grid",
    ];
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let generator_time = modified(&generator);
    let stale: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| {
            let wasm = build_dir.join(format!("{name}.wasm"));
            modified(&wasm).is_none() || modified(&wasm) < generator_time
        })
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    run(Command::new("python3")
        .arg(&generator)
        .arg(&objects)
        .args(&stale))?;
    let lld = rust_lld()?;
    for name in stale {
        run(Command::new(&lld)
            .args([
                "-flavor",
                "wasm",
                "--no-entry",
                "--import-memory",
                "--allow-undefined",
            ])
            // Halide puts small fixed-size scratch buffers on the stack.
            .args(["-z", "stack-size=1048576"])
            .arg(format!("--export={name}"))
            .arg("--export=__heap_base")
            .arg("-o")
            .arg(build_dir.join(format!("{name}.wasm")))
            .arg(objects.join(format!("{name}.o"))))?;
    }
    Ok(())
}

/// Finds the rust-lld that ships with the active Rust toolchain.
fn rust_lld() -> Result<PathBuf, String> {
    let output = |args: &[&str]| -> Result<String, String> {
        let out = Command::new("rustc")
            .args(args)
            .output()
            .map_err(|e| format!("running rustc: {e}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let sysroot = output(&["--print", "sysroot"])?;
    let version = output(&["-vV"])?;
    let host = version
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .ok_or("rustc -vV printed no host")?;
    let lld = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin/rust-lld");
    if lld.exists() {
        Ok(lld)
    } else {
        Err(format!(
            "{} does not exist (rustup component llvm-tools?)",
            lld.display()
        ))
    }
}

/// Runs argent-lower's examples in release mode, if it has any: they report
/// the compiler's native compile time, next to the in-page figure.
fn native_compile_examples(root: &Path) {
    let examples = root.join("crates/argent-lower/examples");
    let Ok(entries) = std::fs::read_dir(&examples) else {
        println!("argent native compile time: skipped (crates/argent-lower has no examples/)");
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|_| path.extension().is_some_and(|e| e == "rs"))
        else {
            continue;
        };
        println!(
            "argent native compile time: cargo run --release -p argent-lower --example {name}"
        );
        if let Err(message) = run(Command::new("cargo")
            .args([
                "run",
                "--quiet",
                "--release",
                "-j2",
                "-p",
                "argent-lower",
                "--example",
                name,
            ])
            .current_dir(root))
        {
            eprintln!("xtask: {message}");
        }
    }
}
