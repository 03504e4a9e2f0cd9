//! For every example, random valid schedules (splits with every tail
//! strategy, tiles, fuses, reorders, vectorize and unroll widths, parallel
//! loops, compute and store levels, inlining, bounds, rfactor) lower with
//! the IR verifier on, and the lowered program, run by the executor,
//! computes exactly what the reference interpreter does on 1x1, 17x3 and
//! a 24x16 crop of a real photo. Schedules come from `seeded_schedule`:
//! mutations of the example's own schedule (the autotuner's step), and
//! fully random schedules for even seeds of pipelines small enough that
//! recomputation cannot blow up. 200 seeds per example, fewer for the
//! costly ones by default (`COSTLY_EXAMPLES`; all 200 with `--ignored`).
//! Every example prints its runs and refusals, and at least half of its
//! (seed, size) cases must be compared. Seeded and reproducible: a failure
//! names the example, the seed, the size and the schedule. `SEEDS=n` sets
//! the seeds per example, `ONLY=name` one example, `SEED=s` one seed,
//! `VERBOSE=1` prints every schedule before it runs.

use argent_interp::{Buffer, Value};
use argent_ir::{BufferRole, Pipeline};
use argent_lower::exec::ExecError;
use argent_lower::random_schedule::{FULLY_RANDOM_MAX_FUNCS, seeded_schedule};
use argent_lower::{LowerError, LowerOptions, lower};
use std::sync::Mutex;

/// Examples that do not lower yet with their own schedule; their random
/// schedules are not run. Each must still fail, so a fix shows up here
/// (and then belongs in the checked set). Empty since bounds inference
/// names consumers' regions.
const KNOWN_FAILURES: [&str; 0] = [];

/// Decode a photo of the repository as `(width, height, RGB bytes)`.
fn load_photo(name: &str) -> (usize, usize, Vec<u8>) {
    let path = format!("{}/../../images/{name}", env!("CARGO_MANIFEST_DIR"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("png header");
    let mut data = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut data).expect("png data");
    data.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    let rgb = data
        .chunks(channels)
        .flat_map(|p| match channels {
            1 | 2 => [p[0], p[0], p[0]],
            _ => [p[0], p[1], p[2]],
        })
        .collect();
    (info.width as usize, info.height as usize, rgb)
}

/// The inputs of `p` as a crop of the photo at (`x0`, `y0`) covering
/// `[-margin, w + margin)` x `[-margin, h + margin)`: three-dimensional
/// inputs get its RGB channels, two-dimensional ones its luma, scaled to
/// the input's type.
fn photo_inputs(
    p: &Pipeline,
    photo: &(usize, usize, Vec<u8>),
    (w, h): (i64, i64),
    (x0, y0): (i64, i64),
    margin: i64,
) -> Vec<(String, Buffer)> {
    let (pw, _, rgb) = photo;
    let sample = |x: i64, y: i64, c: i64| -> i64 {
        rgb[((y0 + y) as usize * pw + (x0 + x) as usize) * 3 + c as usize] as i64
    };
    p.inputs
        .iter()
        .map(|input| {
            let dims = input.dims.len();
            let extents: Vec<i64> = [w + 2 * margin, h + 2 * margin, 3][..dims.min(3)].to_vec();
            let mins: Vec<i64> = [-margin, -margin, 0][..dims.min(3)].to_vec();
            let mut b = Buffer::new(input.ty, &extents).with_min(&mins);
            b.fill(|at| {
                let v = if dims >= 3 {
                    sample(at[0], at[1], at[2])
                } else {
                    let (r, g, b) = (
                        sample(at[0], at[1], 0),
                        sample(at[0], at[1], 1),
                        sample(at[0], at[1], 2),
                    );
                    (299 * r + 587 * g + 114 * b) / 1000
                };
                if input.ty.is_float() {
                    Value::Float(v as f32 / 255.0)
                } else if input.ty.bits >= 16 {
                    Value::Int(v * 257)
                } else {
                    Value::Int(v)
                }
            });
            (input.name.clone(), b)
        })
        .collect()
}

/// One output region of one example with its inputs and the interpreter's result.
struct SizeCase {
    label: &'static str,
    region: Vec<(i64, i64)>,
    inputs: Vec<(String, Buffer)>,
    expected: Vec<Buffer>,
}

enum Outcome {
    Matches,
    /// The schedule legitimately needs a larger input (round-up and
    /// shift-inwards splits of a stage that reads an input without a
    /// boundary condition, as in Halide); the check says so before running.
    NeedsLargerInput,
}

/// Run the lowered `module` on one size and compare with the reference.
fn run_case(module: &argent_ir::Module, case: &SizeCase) -> Result<Outcome, String> {
    let inputs: Vec<(&str, &Buffer)> = case.inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
    let mut outputs: Vec<(String, Buffer)> = module
        .buffers
        .iter()
        .filter(|b| b.role == BufferRole::Output)
        .map(|b| {
            let extents: Vec<i64> = case.region[..b.dims].iter().map(|r| r.1).collect();
            let mins: Vec<i64> = case.region[..b.dims].iter().map(|r| r.0).collect();
            (
                b.name.clone(),
                Buffer::new(b.ty.element(), &extents).with_min(&mins),
            )
        })
        .collect();
    let mut out_refs: Vec<(&str, &mut Buffer)> =
        outputs.iter_mut().map(|(n, b)| (n.as_str(), b)).collect();
    match argent_lower::exec::run(module, &inputs, &mut out_refs, &[]) {
        Ok(_) => {}
        Err(ExecError::AssertFailed {
            kind: argent_ir::AssertKind::InputTooSmall { .. },
            ..
        }) => return Ok(Outcome::NeedsLargerInput),
        Err(e) => return Err(format!("the executor fails: {e}")),
    }
    for ((name, got), expected) in outputs.iter().zip(&case.expected) {
        if !got.same_contents(expected) {
            return Err(format!("output `{name}` differs from the interpreter"));
        }
    }
    Ok(Outcome::Matches)
}

fn examples() -> Vec<(String, Pipeline)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let only = std::env::var("ONLY").unwrap_or_default();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ag") && n.contains(&only))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let src = std::fs::read_to_string(format!("{dir}/{n}")).unwrap();
            let p = argent_lang::compile(&src).unwrap_or_else(|e| panic!("{n}: {e:?}"));
            (n, p)
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    /// Size cases whose output was compared with the interpreter's.
    compared: usize,
    seeds: usize,
    runs: usize,
    /// Schedules drawn again (next seed of the stream) because bounds
    /// inference could not bound their regions.
    redraws: usize,
    known_hangs: usize,
    known_wrong: usize,
    needs_larger_input: usize,
    unboundable: usize,
    failures: Vec<String>,
}

/// The issue's scale for every example: 200 seeds each. Ignored by
/// default because local_laplacian alone needs about an hour for it: its
/// own schedule computes the pyramid levels at root, and for any output
/// size the finest levels cover about 2^8 times the coarsest level's
/// apron, so one run in the executor takes ~12 s on one core at each of
/// the three sizes (the executor interprets every lane; the interpreter,
/// demand-driven, computes only the points the output needs). Run with
/// `cargo test --release -p argent-lower --test random_schedules -- --ignored`.
#[test]
#[ignore]
fn two_hundred_random_schedules_of_every_example_match_the_interpreter() {
    check_random_schedules(None);
}

/// Every example in every test run: `DEFAULT_SEEDS` seeds each, fewer for
/// the examples in `COSTLY_EXAMPLES`. Not the issue's 200 by default: some
/// random schedules recompute producers at inner loops and take a minute
/// in the executor (bilateral_grid seed 50: 86 s for the three sizes), so
/// 200 seeds of every example take far more than the test budget.
#[test]
fn random_schedules_of_every_example_match_the_interpreter() {
    check_random_schedules(Some(&COSTLY_EXAMPLES));
}

/// The seeds per example that the issue asks for.
const ISSUE_SEEDS: u64 = 200;

/// Seeds per example in every test run.
const DEFAULT_SEEDS: u64 = 24;

/// Examples whose schedules cost seconds each, with the seeds they get in
/// every test run (measured on 2 cores, including the interpreter's
/// reference): camera_pipe lowers in ~1.7 s per schedule (31 funcs, the
/// verifier on), which fits DEFAULT_SEEDS; local_laplacian runs ~36 s
/// per schedule (see above).
const COSTLY_EXAMPLES: [(&str, u64); 1] = [("local_laplacian.ag", 2)];

fn seed_count(name: &str, costly: Option<&[(&str, u64)]>) -> u64 {
    match costly {
        None => ISSUE_SEEDS,
        Some(list) => list
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(DEFAULT_SEEDS, |(_, seeds)| *seeds),
    }
}

/// Open bug: (example, seed) whose schedule lowers but does not finish in
/// the executor even at 1x1 (over 10 minutes; a hang or a blow-up, not
/// yet diagnosed). Skipped and counted so the rest of the sweep runs;
/// `ONLY=bicubic_resize SEED=53 VERBOSE=1` prints the schedule (bicubic's
/// own plus `kernel_x.fuse(x, t, t_fm0)`, `begin_x.unroll(x, 2)`,
/// `resized_y.fuse(x, y, x_fm2)`).
const KNOWN_HANGS: [(&str, u64); 1] = [("bicubic_resize.ag", 53)];

/// Open bug: (example, seed) whose lowered program is wrong, checked to
/// still fail so that a fix shows up. harris seed 22 (a mutation of the
/// own schedule): `sxy_sum0.update(0).fuse(x, y, y_fm0)` on the inlined
/// `sum` with `response.compute_inline()` makes the executor read
/// `sxy_sum0` at 0, outside its region 0..0, at every size.
const KNOWN_WRONG: [(&str, u64); 1] = [("harris.ag", 22)];

/// How often an unboundable schedule is drawn again, and the distance
/// between the seeds of one stream (seed `s` tries `s`, `s + STRIDE`, ...).
const REDRAWS: u64 = 10;
const REDRAW_STRIDE: u64 = 1 << 32;

fn check_random_schedules(costly: Option<&[(&str, u64)]>) {
    let env = |key: &str| std::env::var(key).ok().and_then(|s| s.parse::<u64>().ok());
    let single = env("SEED");
    let verbose = env("VERBOSE").is_some();
    let photo = load_photo("chelsea.png");
    let options = LowerOptions {
        verify: true,
        ..Default::default()
    };
    let mut total = Tally::default();
    let mut checked = 0;
    for (name, p) in examples() {
        let seeds = env("SEEDS").unwrap_or_else(|| seed_count(&name, costly));
        let single_seed = single.is_some();
        let seed_list: Vec<u64> = match single {
            Some(seed) => vec![seed],
            None => (0..seeds).collect(),
        };
        let seeds = seed_list.len() as u64;
        let tally = Mutex::new(Tally::default());
        if KNOWN_FAILURES.contains(&name.as_str()) {
            assert!(
                lower(&p, &options).is_err(),
                "{name} now lowers: remove it from KNOWN_FAILURES so its random schedules are checked"
            );
            continue;
        }
        let rank = p
            .outputs
            .first()
            .and_then(|o| p.func(o))
            .map_or(2, |f| f.args.len());
        let mut cases = Vec::new();
        for (label, w, h, x0, y0) in [
            ("1x1", 1, 1, 200, 100),
            ("17x3", 17, 3, 150, 120),
            ("24x16 photo crop", 24, 16, 180, 90),
        ] {
            let region: Vec<(i64, i64)> = [(0, w), (0, h), (0, 3)][..rank].to_vec();
            // Inputs of exactly the output's size, or, for stages that read
            // them without a boundary condition, with an apron around.
            let reference = |margin: i64| {
                let inputs = photo_inputs(&p, &photo, (w, h), (x0, y0), margin);
                let refs: Vec<(&str, &Buffer)> =
                    inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
                argent_interp::realize(&p, &refs, &[], &region).map(|e| (inputs, e))
            };
            let (inputs, expected) = reference(0)
                .or_else(|_| reference(8))
                .unwrap_or_else(|e| panic!("{name} at {label}: the interpreter fails: {e:?}"));
            cases.push(SizeCase {
                label,
                region,
                inputs,
                expected,
            });
        }
        // The example's own schedule first, then the random ones, on two
        // threads (seeds interleaved).
        let own = lower(&p, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        for case in &cases {
            match run_case(&own.module, case) {
                Err(e) => {
                    let failure = format!("{name} (own schedule) at {}: {e}", case.label);
                    tally.lock().unwrap().failures.push(failure);
                }
                Ok(_) => {}
            }
        }
        let start = std::time::Instant::now();
        std::thread::scope(|scope| {
            for thread in 0..2 {
                let (p, cases, tally, name, options, seed_list) =
                    (&p, &cases, &tally, &name, &options, &seed_list);
                scope.spawn(move || {
                    for &seed in seed_list.iter().skip(thread).step_by(2) {
                        if KNOWN_HANGS.contains(&(name.as_str(), seed)) && !single_seed {
                            tally.lock().unwrap().known_hangs += 1;
                            continue;
                        }
                        let seed_start = std::time::Instant::now();

                        // A schedule whose regions bounds inference cannot
                        // bound (values loaded from a func used as
                        // coordinates, e.g. bicubic_resize's begin_x
                        // computed at root) is refused and drawn again from
                        // the seed's stream, at most REDRAWS times, so that
                        // refusals do not thin out the check.
                        let mut drawn = None;
                        let redraws = if single_seed { 0 } else { REDRAWS };
                        for redraw in 0..=redraws {
                            let seed = seed + redraw * REDRAW_STRIDE;
                            let mut q = p.clone();
                            q.schedule.directives = seeded_schedule(p, seed);
                            match lower(&q, options) {
                                Ok(l) => {
                                    drawn = Some((seed, q, Ok(l.module)));
                                    break;
                                }
                                Err(LowerError::Algorithm(_)) => {
                                    let mut t = tally.lock().unwrap();
                                    t.unboundable += 1;
                                    if redraw < redraws {
                                        t.redraws += 1;
                                    }
                                }
                                Err(e) => {
                                    drawn = Some((seed, q, Err(e)));
                                    break;
                                }
                            }
                        }
                        let Some((seed, q, lowered)) = drawn else {
                            continue;
                        };
                        let schedule = || {
                            q.schedule
                                .directives
                                .iter()
                                .map(argent_lower::error::directive_text)
                                .collect::<Vec<_>>()
                                .join("\n    ")
                        };
                        if verbose {
                            eprintln!("  {name} seed {seed} starts:\n    {}", schedule());
                        }
                        let module = match lowered {
                            Ok(module) => module,
                            Err(e) => {
                                tally.lock().unwrap().failures.push(format!(
                                    "{name} seed {seed}: lowering fails: {e}\n    {}",
                                    schedule()
                                ));
                                continue;
                            }
                        };
                        let known_wrong = KNOWN_WRONG.contains(&(name.as_str(), seed));
                        let mut wrong_sizes = 0;
                        for case in cases {
                            let outcome = run_case(&module, case);
                            let mut t = tally.lock().unwrap();
                            t.runs += 1;
                            match outcome {
                                Ok(Outcome::Matches) => t.compared += 1,
                                Ok(Outcome::NeedsLargerInput) => t.needs_larger_input += 1,
                                Err(_) if known_wrong => {
                                    wrong_sizes += 1;
                                    t.known_wrong += 1;
                                }
                                Err(e) => t.failures.push(format!(
                                    "{name} seed {seed} at {}: {e}\n    {}",
                                    case.label,
                                    schedule()
                                )),
                            }
                        }
                        if known_wrong && wrong_sizes == 0 {
                            tally.lock().unwrap().failures.push(format!(
                                "{name} seed {seed} matches now: remove it from KNOWN_WRONG"
                            ));
                        }
                        // Diagnostics only: names the schedules that dominate the run time.
                        if seed_start.elapsed().as_secs() >= 5 {
                            eprintln!("  {name} seed {seed}: {:.1?}", seed_start.elapsed());
                        }
                    }
                });
            }
        });
        let t = tally.into_inner().unwrap();
        let kind = if p.funcs.len() <= FULLY_RANDOM_MAX_FUNCS {
            "fully random and mutated"
        } else {
            "mutated"
        };
        eprintln!(
            "{name}: {seeds} {kind} schedules x {} sizes in {:.1?}: {} runs, {} compared, {} need a larger input, {} unboundable schedules ({} drawn again), {} failures",
            cases.len(),
            start.elapsed(),
            t.runs,
            t.compared,
            t.needs_larger_input,
            t.unboundable,
            t.redraws,
            t.failures.len()
        );
        // Refusals are legitimate one by one, but a check that refuses
        // most schedules checks nothing: at least half of all the
        // (seed, size) cases must be compared with the interpreter.
        let cases_drawn = seeds as usize * cases.len();
        if t.compared * 2 < cases_drawn {
            total.failures.push(format!(
                "{name}: only {} of {cases_drawn} (seed, size) cases were compared with the interpreter",
                t.compared
            ));
        }
        total.compared += t.compared;
        total.seeds += seeds as usize;
        total.runs += t.runs;
        total.needs_larger_input += t.needs_larger_input;
        total.unboundable += t.unboundable;
        total.redraws += t.redraws;
        total.known_hangs += t.known_hangs;
        total.known_wrong += t.known_wrong;
        total.failures.extend(t.failures);
        checked += 1;
    }
    let t = total;
    println!(
        "{checked} examples: {} seeds, {} runs, {} compared, {} needing a larger input, {} schedules with unboundable regions ({} drawn again), {} known hangs skipped, {} known wrong results",
        t.seeds,
        t.runs,
        t.compared,
        t.needs_larger_input,
        t.unboundable,
        t.redraws,
        t.known_hangs,
        t.known_wrong
    );
    assert!(checked > 0);
    assert!(
        t.failures.is_empty(),
        "{} failures (reproduce one with ONLY=example SEED=seed):\n{}",
        t.failures.len(),
        t.failures[..t.failures.len().min(12)].join("\n")
    );
}
