//! End-to-end tests of the `argent` binary: every example runs on a crop of
//! a bundled photo and writes a PNG of the right shape; a few results are
//! checked pixel by pixel against plain Rust; errors give the documented
//! exit codes and rendered diagnostics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn argent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_argent"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("the argent binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A folder for this test binary's files.
fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("argent-cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 64x48 crop of chelsea.png (the cat's face: edges, texture and flat
/// areas), so that every example runs quickly in debug builds.
fn photo_crop() -> &'static Path {
    static CROP: OnceLock<PathBuf> = OnceLock::new();
    CROP.get_or_init(|| {
        let path = scratch().join("chelsea-crop.png");
        let photo = image::open(repo_root().join("images/chelsea.png"))
            .unwrap()
            .into_rgb8();
        image::imageops::crop_imm(&photo, 180, 60, 64, 48)
            .to_image()
            .save(&path)
            .unwrap();
        path
    })
}

/// Runs `example` on the crop and returns the decoded output.
fn run_example(example: &str, input: &str, extra: &[&str]) -> image::DynamicImage {
    // Tests run in parallel and several run one example (box_blur with and
    // without `--bits 12`): each run writes a file of its own, or one
    // could read the other's half-written PNG.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = scratch().join(format!("{}-{run}.png", example.trim_end_matches(".ag")));
    let input_arg = format!("{input}={}", photo_crop().display());
    let pipeline = format!("examples/{example}");
    let mut args = vec![
        "run",
        pipeline.as_str(),
        "--input",
        input_arg.as_str(),
        "-o",
    ];
    let out_arg = out.display().to_string();
    args.push(&out_arg);
    args.extend_from_slice(extra);
    let output = argent(&args);
    assert!(
        output.status.success(),
        "{example} failed with {:?}:\n{}{}",
        output.status.code(),
        stdout(&output),
        stderr(&output)
    );
    image::open(&out).unwrap_or_else(|e| panic!("{example} wrote no readable PNG: {e}"))
}

/// An example file, its input's name, extra arguments, and the output's
/// expected width, height and channel count.
type ExampleCase = (
    &'static str,
    &'static str,
    &'static [&'static str],
    (u32, u32, u8),
);

/// Every example in the folder.
const EXAMPLES: &[ExampleCase] = &[
    (
        "bicubic_resize.ag",
        "photo",
        &["--size", "96x72"],
        (96, 72, 3),
    ),
    ("bilateral_grid.ag", "photo", &[], (64, 48, 3)),
    ("border_rules.ag", "src", &[], (64, 48, 1)),
    ("box_blur.ag", "in", &[], (64, 48, 1)),
    ("brighten_contrast.ag", "photo", &[], (64, 48, 3)),
    ("camera_pipe.ag", "photo", &[], (64, 48, 3)),
    ("gaussian5x5.ag", "photo", &[], (64, 48, 3)),
    ("grayscale.ag", "photo", &[], (64, 48, 1)),
    ("harris.ag", "photo", &[], (64, 48, 1)),
    ("histogram_equalize.ag", "img", &[], (64, 48, 1)),
    ("local_laplacian.ag", "photo", &[], (64, 48, 3)),
    ("median3x3.ag", "photo", &[], (64, 48, 3)),
    ("multiscale_interpolation.ag", "photo", &[], (64, 48, 3)),
    ("sepia.ag", "photo", &[], (64, 48, 3)),
    ("sobel.ag", "photo", &[], (64, 48, 1)),
    ("unsharp_mask.ag", "photo", &[], (64, 48, 3)),
    (
        "window_ops.ag",
        "photo",
        &["--param", "mode=3"],
        (64, 48, 3),
    ),
];

fn check_example(example: &str) {
    let (_, input, extra, (width, height, channels)) = EXAMPLES
        .iter()
        .find(|e| e.0 == example)
        .unwrap_or_else(|| panic!("{example} is not in EXAMPLES"));
    let image = run_example(example, input, extra);
    assert_eq!(
        (image.width(), image.height(), image.color().channel_count()),
        (*width, *height, *channels),
        "{example}"
    );
}

macro_rules! example_tests {
    ($($test:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_example($file);
            }
        )*

        #[test]
        fn every_example_file_has_a_test() {
            let tested = [$($file),*];
            let mut missing = Vec::new();
            for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                if name.ends_with(".ag") && !tested.contains(&name.as_str()) {
                    missing.push(name);
                }
            }
            assert!(missing.is_empty(), "examples without a CLI test: {missing:?}");
            assert_eq!(tested.len(), EXAMPLES.len());
        }
    };
}

example_tests! {
    runs_bicubic_resize => "bicubic_resize.ag",
    runs_bilateral_grid => "bilateral_grid.ag",
    runs_border_rules => "border_rules.ag",
    runs_box_blur => "box_blur.ag",
    runs_brighten_contrast => "brighten_contrast.ag",
    runs_camera_pipe => "camera_pipe.ag",
    runs_gaussian5x5 => "gaussian5x5.ag",
    runs_grayscale => "grayscale.ag",
    runs_harris => "harris.ag",
    runs_histogram_equalize => "histogram_equalize.ag",
    runs_local_laplacian => "local_laplacian.ag",
    runs_median3x3 => "median3x3.ag",
    runs_multiscale_interpolation => "multiscale_interpolation.ag",
    runs_sepia => "sepia.ag",
    runs_sobel => "sobel.ag",
    runs_unsharp_mask => "unsharp_mask.ag",
    runs_window_ops => "window_ops.ag",
}

fn crop_pixels() -> image::RgbImage {
    image::open(photo_crop()).unwrap().into_rgb8()
}

#[test]
fn grayscale_matches_plain_rust() {
    let out = run_example("grayscale.ag", "photo", &[]).into_luma8();
    let photo = crop_pixels();
    for (x, y, p) in photo.enumerate_pixels() {
        let [r, g, b] = p.0.map(u32::from);
        let expected = ((r * 77 + g * 150 + b * 29 + 128) >> 8) as u8;
        assert_eq!(out.get_pixel(x, y).0[0], expected, "pixel ({x}, {y})");
    }
}

#[test]
fn brighten_contrast_uses_the_parameters_given() {
    let out = run_example(
        "brighten_contrast.ag",
        "photo",
        &["--param", "brightness=0.1", "--param", "contrast=2"],
    )
    .into_rgb8();
    let photo = crop_pixels();
    for (x, y, p) in photo.enumerate_pixels() {
        for c in 0..3 {
            let level = p.0[c] as f32 / 255.0;
            let adjusted = ((level - 0.5) * 2.0 + 0.5 + 0.1) * 255.0 + 0.5;
            let expected = adjusted.clamp(0.0, 255.0) as u8;
            let got = out.get_pixel(x, y).0[c];
            // f32 rounding of the same formula may differ by one step.
            assert!(
                got.abs_diff(expected) <= 1,
                "pixel ({x}, {y}, {c}): {got} vs {expected}"
            );
        }
    }
}

/// Harris corners computed independently with plain f32 loops, in the
/// same operation order as the example (no fused multiply-add), so the
/// interpreter must agree exactly.
#[test]
fn harris_matches_plain_rust() {
    let out = run_example("harris.ag", "photo", &[]).into_luma8();
    let photo = crop_pixels();
    let (w, h) = (photo.width() as i64, photo.height() as i64);
    let (k, gain) = (0.04f32, 20000.0f32);
    let gray = |x: i64, y: i64| {
        let p = photo
            .get_pixel(x.clamp(0, w - 1) as u32, y.clamp(0, h - 1) as u32)
            .0;
        let [r, g, b] = p.map(|v| v as f32);
        (0.299f32 * r + 0.587f32 * g + 0.114f32 * b) / 255.0f32
    };
    let iy = |x: i64, y: i64| {
        (gray(x - 1, y + 1) - gray(x - 1, y - 1)) / 12.0f32
            + (gray(x, y + 1) - gray(x, y - 1)) * (2.0f32 / 12.0f32)
            + (gray(x + 1, y + 1) - gray(x + 1, y - 1)) / 12.0f32
    };
    let ix = |x: i64, y: i64| {
        (gray(x + 1, y - 1) - gray(x - 1, y - 1)) / 12.0f32
            + (gray(x + 1, y) - gray(x - 1, y)) * (2.0f32 / 12.0f32)
            + (gray(x + 1, y + 1) - gray(x - 1, y + 1)) / 12.0f32
    };
    // The inline `sum` starts from zero and visits r.x fastest.
    let box_sum = |f: &dyn Fn(i64, i64) -> f32, x: i64, y: i64| {
        let mut acc = 0.0f32;
        for ry in -1..=1 {
            for rx in -1..=1 {
                acc += f(x + rx, y + ry);
            }
        }
        acc
    };
    let ixx = |x: i64, y: i64| ix(x, y) * ix(x, y);
    let iyy = |x: i64, y: i64| iy(x, y) * iy(x, y);
    let ixy = |x: i64, y: i64| ix(x, y) * iy(x, y);
    let mut corners = 0;
    for y in 0..h {
        for x in 0..w {
            let (sxx, syy, sxy) = (
                box_sum(&ixx, x, y),
                box_sum(&iyy, x, y),
                box_sum(&ixy, x, y),
            );
            let det = sxx * syy - sxy * sxy;
            let trace = sxx + syy;
            let response = det - k * trace * trace;
            let v = response.max(0.0).sqrt() * gain + 0.5f32;
            let expected = v.clamp(0.0, 255.0) as u8;
            corners += (expected > 0) as usize;
            assert_eq!(
                out.get_pixel(x as u32, y as u32).0[0],
                expected,
                "pixel ({x}, {y})"
            );
        }
    }
    // A photo crop has corners: the comparison is not vacuous.
    assert!(corners > 0);
}

#[test]
fn box_blur_on_twelve_bit_data_does_not_wrap() {
    let out = run_example("box_blur.ag", "in", &["--bits", "12"]).into_luma8();
    let photo = crop_pixels();
    let (w, h) = photo.dimensions();
    // BT.601 luma scaled to 0..4095; three 12-bit values never overflow u16.
    let luma = |x: i64, y: i64| {
        let p = photo
            .get_pixel(
                x.clamp(0, w as i64 - 1) as u32,
                y.clamp(0, h as i64 - 1) as u32,
            )
            .0;
        let [r, g, b] = p.map(u32::from);
        let v = (299 * r + 587 * g + 114 * b + 500) / 1000;
        (v * 4095 + 127) / 255
    };
    let blur_x = |x: i64, y: i64| (luma(x - 1, y) + luma(x, y) + luma(x + 1, y)) / 3;
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let v = (blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) / 3;
            let expected = ((v * 255 + 2047) / 4095) as u8;
            assert_eq!(
                out.get_pixel(x as u32, y as u32).0[0],
                expected,
                "pixel ({x}, {y})"
            );
        }
    }
}

#[test]
fn box_blur_reads_u16_and_writes_the_high_byte() {
    let out = run_example("box_blur.ag", "in", &[]).into_luma8();
    let photo = crop_pixels();
    let (w, h) = photo.dimensions();
    // The CLI's conversions: BT.601 luma, * 257 into u16, >> 8 back out.
    let luma = |x: i64, y: i64| {
        let p = photo
            .get_pixel(
                x.clamp(0, w as i64 - 1) as u32,
                y.clamp(0, h as i64 - 1) as u32,
            )
            .0;
        let [r, g, b] = p.map(u32::from);
        ((299 * r + 587 * g + 114 * b + 500) / 1000) as u16 * 257
    };
    // u16 arithmetic wraps, exactly as the program says.
    let blur_x = |x: i64, y: i64| {
        luma(x - 1, y)
            .wrapping_add(luma(x, y))
            .wrapping_add(luma(x + 1, y))
            / 3
    };
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let v = blur_x(x, y - 1)
                .wrapping_add(blur_x(x, y))
                .wrapping_add(blur_x(x, y + 1))
                / 3;
            assert_eq!(
                out.get_pixel(x as u32, y as u32).0[0],
                (v >> 8) as u8,
                "pixel ({x}, {y})"
            );
        }
    }
}

#[test]
fn no_arguments_runs_the_unsharp_mask_on_the_bundled_photo() {
    let dir = scratch().join("default-run");
    std::fs::create_dir_all(&dir).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_argent"))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Wrote out/unsharp_mask.png"), "{text}");
    assert!(text.contains(" ms"), "{text}");
    let image = image::open(dir.join("out/unsharp_mask.png")).unwrap();
    assert_eq!(
        (image.width(), image.height(), image.color().channel_count()),
        (451, 300, 3)
    );
}

#[test]
fn a_single_input_defaults_to_the_bundled_photo() {
    let out = scratch().join("bundled-gray.png");
    let output = argent(&[
        "run",
        "examples/grayscale.ag",
        "-o",
        &out.display().to_string(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let image = image::open(&out).unwrap();
    assert_eq!((image.width(), image.height()), (451, 300));
}

#[test]
fn resize_takes_its_size_from_its_parameters() {
    let out = scratch().join("resize-params.png");
    let input = format!("photo={}", photo_crop().display());
    let output = argent(&[
        "run",
        "examples/bicubic_resize.ag",
        "--input",
        &input,
        "--param",
        "out_width=80",
        "--param",
        "out_height=20",
        "-o",
        &out.display().to_string(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let image = image::open(&out).unwrap();
    assert_eq!((image.width(), image.height()), (80, 20));
}

#[test]
fn several_outputs_each_get_a_file_and_jpeg_photos_are_read() {
    let path = scratch().join("two_outputs.ag");
    std::fs::write(
        &path,
        "input u8 photo(x, y, c)\ninverted(x, y, c) = 255 - photo(x, y, c)\nswapped(x, y, c) = photo(x, y, 2 - c)\noutput inverted, swapped\n",
    )
    .unwrap();
    let out = scratch().join("two.png");
    let output = argent(&[
        "run",
        &path.display().to_string(),
        "--input",
        "photo=images/rocket.jpg",
        "-o",
        &out.display().to_string(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let photo = image::open(repo_root().join("images/rocket.jpg"))
        .unwrap()
        .into_rgb8();
    let inverted = image::open(scratch().join("two-inverted.png"))
        .unwrap()
        .into_rgb8();
    let swapped = image::open(scratch().join("two-swapped.png"))
        .unwrap()
        .into_rgb8();
    assert_eq!(inverted.dimensions(), (640, 427));
    for (x, y, p) in photo.enumerate_pixels() {
        let [r, g, b] = p.0;
        assert_eq!(
            inverted.get_pixel(x, y).0,
            [255 - r, 255 - g, 255 - b],
            "({x}, {y})"
        );
        assert_eq!(swapped.get_pixel(x, y).0, [b, g, r], "({x}, {y})");
    }
}

#[test]
fn check_accepts_every_example() {
    for (example, ..) in EXAMPLES {
        let output = argent(&["check", &format!("examples/{example}")]);
        assert!(output.status.success(), "{example}: {}", stderr(&output));
        assert!(
            stdout(&output).contains(": ok ("),
            "{example}: {}",
            stdout(&output)
        );
    }
}

#[test]
fn print_shows_the_algorithm() {
    let output = argent(&["print", "examples/box_blur.ag"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("blur_x"), "{text}");
    assert!(text.contains("blur_y"), "{text}");
}

#[test]
fn check_of_a_broken_program_renders_a_caret_diagnostic_and_exits_1() {
    let path = scratch().join("broken.ag");
    std::fs::write(
        &path,
        "input u8 photo(x, y)\nout(x, y) = photo(x, y) + nonexistent(x)\noutput out\n",
    )
    .unwrap();
    let output = argent(&["check", "--color", "never", &path.display().to_string()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("error"), "{text}");
    assert!(
        text.contains("broken.ag:2:"),
        "the diagnostic names file, line and column:\n{text}"
    );
    assert!(text.contains("nonexistent"), "{text}");
    assert!(
        text.contains('^'),
        "the diagnostic has a caret under the offending code:\n{text}"
    );
}

#[test]
fn rendered_diagnostics_snapshot() {
    let dir = scratch().join("snapshot");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("typo.ag"),
        "input u8 photo(x, y, c)\nparam f32 amount = 1.5 in 0.0 .. 4.0\nout(x, y, c) = sat_u8(f32(photo(x, y, c)) * amout)\noutput out\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_argent"))
        .args(["check", "--color", "never", "typo.ag"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    expect_test::expect![[r#"
        error[E0101]: unknown name `amout`
          ┌─ typo.ag:3:45
          │
        3 │ out(x, y, c) = sat_u8(f32(photo(x, y, c)) * amout)
          │                                             ^^^^^
          │
          = did you mean `amount`?
    "#]]
    .assert_eq(&stderr(&output));
}

#[test]
fn a_separate_schedule_file_replaces_the_pipelines_schedule() {
    let good = scratch().join("good_schedule.ag");
    std::fs::write(&good, "schedule {\n  blur_y.vectorize(x, 8)\n}\n").unwrap();
    let output = argent(&[
        "check",
        "examples/box_blur.ag",
        "--schedule",
        &good.display().to_string(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("1 schedule directive(s)"),
        "{}",
        stdout(&output)
    );

    let bad = scratch().join("bad_schedule.ag");
    std::fs::write(&bad, "schedule {\n  no_such_func.vectorize(x, 8)\n}\n").unwrap();
    let output = argent(&[
        "check",
        "--color",
        "never",
        "examples/box_blur.ag",
        "--schedule",
        &bad.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("bad_schedule.ag:2:"), "{text}");
    assert!(text.contains("no_such_func"), "{text}");
}

#[test]
fn user_errors_exit_1_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "examples/unsharp_mask.ag", "--param", "amount=lots"],
            "expected a number",
        ),
        (
            &["run", "examples/unsharp_mask.ag", "--param", "amont=2"],
            "no parameter named `amont`",
        ),
        (
            &["run", "examples/unsharp_mask.ag", "--param", "amount=9"],
            "amount",
        ),
        (
            &[
                "run",
                "examples/unsharp_mask.ag",
                "--input",
                "picture=x.png",
            ],
            "no input named `picture`",
        ),
        (
            &[
                "run",
                "examples/unsharp_mask.ag",
                "--input",
                "photo=missing.png",
            ],
            "missing.png",
        ),
        (
            &["run", "examples/unsharp_mask.ag", "--size", "big"],
            "WIDTHxHEIGHT",
        ),
        (
            &["run", "examples/unsharp_mask.ag", "-o", "out/x.bmp"],
            ".png",
        ),
        (&["run", "no/such/pipeline.ag"], "pipeline.ag"),
        (&["frobnicate"], "frobnicate"),
    ];
    for (args, needle) in cases {
        let output = argent(args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(needle),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn reading_past_an_input_without_a_boundary_condition_is_a_user_error() {
    let path = scratch().join("no_boundary.ag");
    std::fs::write(
        &path,
        "input u8 img(x, y)\nshifted(x, y) = img(x + 2, y)\noutput shifted\n",
    )
    .unwrap();
    let input = format!("img={}", photo_crop().display());
    let out = scratch().join("no_boundary.png");
    let output = argent(&[
        "run",
        &path.display().to_string(),
        "--input",
        &input,
        "-o",
        &out.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    // The message names the stage, the input, and the region needed against
    // the region available (the crop is 64 pixels wide).
    assert!(text.contains("`shifted`"), "{text}");
    assert!(text.contains("`img`"), "{text}");
    assert!(text.contains("x from 2 to 65"), "{text}");
    assert!(text.contains("x from 0 to 63"), "{text}");
}

#[test]
fn internal_errors_and_panics_exit_2() {
    for args in [
        &["debug-internal-error"][..],
        &["debug-internal-error", "--panic"][..],
    ] {
        let output = argent(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains("internal error:"),
            "{}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("bug in Argent"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn help_lists_the_commands_with_examples() {
    let output = argent(&["--help"]);
    assert!(output.status.success());
    let text = stdout(&output);
    for needle in ["run", "check", "print", "Examples:", "Exit codes"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    assert!(
        !text.contains("debug-internal-error"),
        "the debug command is hidden"
    );
    let output = argent(&["run", "--help"]);
    assert!(output.status.success());
    let text = stdout(&output);
    for needle in [
        "--input",
        "--param",
        "--size",
        "--schedule",
        "--time",
        "Output region",
        "v * 257",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[test]
fn lower_prints_the_scheduled_loop_nest_and_the_schedule_tree() {
    let output = argent(&["lower", "examples/box_blur.ag"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    // The paper's schedule: parallel tile rows, blur_x allocated per tile.
    assert!(text.contains("produce blur_y"), "{text}");
    assert!(text.contains("parallel (blur_y.s0.y.y"), "{text}");
    assert!(text.contains("allocate blur_x"), "{text}");
    let tree = stdout(&argent(&[
        "lower",
        "--schedule-tree",
        "examples/box_blur.ag",
    ]));
    assert!(tree.contains("blur_x"), "{tree}");
    let dumps = stdout(&argent(&[
        "lower",
        "--print-after",
        "all",
        "examples/box_blur.ag",
    ]));
    assert!(dumps.contains("# after synthesize"), "{dumps}");
    assert!(dumps.contains("# after flatten"), "{dumps}");
    // For an engine without SIMD the vectorised loops stay loops.
    let vectorized = |extra: &[&str]| {
        let args = [
            &["lower", "--print-after", "vectorize"],
            extra,
            &["examples/box_blur.ag"],
        ]
        .concat();
        stdout(&argent(&args))
    };
    let simd = vectorized(&[]);
    assert!(simd.contains("ramp("), "{simd}");
    let scalar = vectorized(&["--scalar"]);
    assert!(
        scalar.contains("# after vectorize") && !scalar.contains("ramp("),
        "{scalar}"
    );
}

#[test]
fn invalid_schedules_are_user_errors_naming_the_directive() {
    let dir = scratch();
    let schedule = dir.join("bad.sched");
    std::fs::write(
        &schedule,
        "schedule {\n  blur_x.compute_at(blur_y, yi)\n}\n",
    )
    .unwrap();
    let output = argent(&[
        "lower",
        "examples/box_blur.ag",
        "--schedule",
        schedule.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("compute_at"),
        "{}",
        stderr(&output)
    );
}

/// The lowered program (the schedule's loop nest, run by the executor)
/// writes exactly the reference interpreter's picture.
#[test]
fn lowered_engine_matches_the_reference_interpreter() {
    for (example, input) in [
        ("unsharp_mask.ag", "photo"),
        ("harris.ag", "photo"),
        ("histogram_equalize.ag", "img"),
    ] {
        let reference = run_example(example, input, &[]);
        let lowered = run_example(example, input, &["--engine", "lowered"]);
        assert_eq!(reference.as_bytes(), lowered.as_bytes(), "{example}");
    }
}

#[test]
fn a_reader_that_closes_the_pipe_early_ends_the_output_quietly() {
    // `argent lower x.ag --print-after all | head -1`: megabytes of IR, of
    // which the reader takes one line. Writing the rest fails with a broken
    // pipe, which is no error of the user's or of Argent's.
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_argent"))
        .args([
            "lower",
            "examples/local_laplacian.ag",
            "--print-after",
            "all",
        ])
        .current_dir(repo_root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the argent binary runs");
    let mut first = [0u8; 16];
    child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_exact(&mut first)
        .expect("the IR starts");
    // The read end is dropped here: every later write hits a closed pipe.
    let output = child.wait_with_output().expect("argent ends");
    assert_eq!(&first[..8], b"# after ");
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status,
        stderr(&output)
    );
    assert_eq!(stderr(&output), "");
}
