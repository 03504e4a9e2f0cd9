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
use argent_lower::exec::{ExecError, ExecStats};
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
/// `[-margin, w + margin)` x `[-margin, h + margin)` (and the channels
/// `[-margin, 3 + margin)` for a margin of `PADDING` or more): three-dimensional
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
        rgb[((y0 + y) as usize * pw + (x0 + x) as usize) * 3 + c.rem_euclid(3) as usize] as i64
    };
    p.inputs
        .iter()
        .map(|input| {
            let dims = input.dims.len();
            // The padded inputs have an apron in the channels too (the
            // photo's channels repeated): round-up splits of `c` read it.
            let cm = if margin >= PADDING { margin } else { 0 };
            let extents: Vec<i64> =
                [w + 2 * margin, h + 2 * margin, 3 + 2 * cm][..dims.min(3)].to_vec();
            let mins: Vec<i64> = [-margin, -margin, -cm][..dims.min(3)].to_vec();
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
    /// The same output region from inputs with a `PADDING` apron, and
    /// the interpreter's result for them: a schedule that needs a larger
    /// input than `inputs` (round-up splits of a stage that reads an
    /// input without a boundary condition) is checked on these instead of
    /// being refused.
    padded: Option<(Vec<(String, Buffer)>, Vec<Buffer>)>,
}

/// The apron of the padded inputs: more than any two nested splits of
/// the random schedules can round up (factors of at most 16).
const PADDING: i64 = 40;

enum Outcome {
    /// Output identical to the interpreter's; what the run did.
    Matches(ExecStats),
    /// The schedule legitimately needs a larger input (round-up and
    /// shift-inwards splits of a stage that reads an input without a
    /// boundary condition, as in Halide), even the padded one; the
    /// program's check says so before running.
    NeedsLargerInput,
    /// The schedule recomputes so much that one run needs more than
    /// `ITERATION_BUDGET` loop iterations: refused (and named in the
    /// output) rather than run for minutes or hours.
    OverBudget,
}

/// Loop iterations one run of a random schedule may take in the executor
/// (a minute or more on this machine's loaded cores); above, the run is
/// refused as too costly. A hang in a lowered program shows up as such a refusal with its
/// seed printed, never as a stuck test.
const ITERATION_BUDGET: u64 = 200_000_000;

/// Run the lowered `module` on one size and compare with the reference.
fn run_case(module: &argent_ir::Module, case: &SizeCase, budget: u64) -> Result<Outcome, String> {
    match run_on(module, case, &case.inputs, &case.expected, budget)? {
        Outcome::NeedsLargerInput => match &case.padded {
            Some((inputs, expected)) => run_on(module, case, inputs, expected, budget),
            None => Ok(Outcome::NeedsLargerInput),
        },
        outcome => Ok(outcome),
    }
}

/// Run the lowered `module` on `inputs` and compare with `expected`.
fn run_on(
    module: &argent_ir::Module,
    case: &SizeCase,
    inputs: &[(String, Buffer)],
    expected: &[Buffer],
    budget: u64,
) -> Result<Outcome, String> {
    let inputs: Vec<(&str, &Buffer)> = inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
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
    let stats =
        match argent_lower::exec::run_with_budget(module, &inputs, &mut out_refs, &[], budget) {
            Ok(stats) => stats,
            Err(ExecError::AssertFailed {
                kind: argent_ir::AssertKind::InputTooSmall { .. },
                ..
            }) => return Ok(Outcome::NeedsLargerInput),
            Err(ExecError::BudgetExceeded { .. }) => return Ok(Outcome::OverBudget),
            Err(e) => return Err(format!("the executor fails: {e}")),
        };
    for ((name, got), expected) in outputs.iter().zip(expected) {
        if !got.same_contents(expected) {
            return Err(format!("output `{name}` differs from the interpreter"));
        }
    }
    Ok(Outcome::Matches(stats))
}

/// The three sizes of the check (1x1, 17x3 and a 24x16 crop of the photo,
/// each from a different place of the photo) with the interpreter's result.
fn size_cases(name: &str, p: &Pipeline, photo: &(usize, usize, Vec<u8>)) -> Vec<SizeCase> {
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
            let inputs = photo_inputs(p, &photo, (w, h), (x0, y0), margin);
            let refs: Vec<(&str, &Buffer)> = inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
            argent_interp::realize(p, &refs, &[], &region).map(|e| (inputs, e))
        };
        let (inputs, expected) = reference(0)
            .or_else(|_| reference(8))
            .unwrap_or_else(|e| panic!("{name} at {label}: the interpreter fails: {e:?}"));
        let padded = reference(PADDING).ok();
        cases.push(SizeCase {
            label,
            region,
            inputs,
            expected,
            padded,
        });
    }
    cases
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
    /// (seed, size) cases refused for needing more than ITERATION_BUDGET.
    over_budget: Vec<String>,
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

/// Open bugs: (example, seed) whose schedule lowers but does not finish
/// in the executor. Skipped and counted so the rest of the sweep runs.
/// Empty: bicubic_resize seed 53 (a producer computed inside a fused loop
/// recomputes its whole strip per point) is now refused by the iteration
/// budget, see `a_producer_inside_a_fused_loop_is_refused_by_the_iteration_budget`.
const KNOWN_HANGS: [(&str, u64); 0] = [];

/// Open bugs: (example, seed) whose lowered program is wrong, checked to
/// still fail so that a fix shows up. Empty: multiscale_interpolation 60
/// and 125 are fixed, see
/// `sliding_does_not_move_rounded_up_loops_past_their_producers` and
/// `a_fused_loop_over_a_slid_empty_region_asks_nothing_of_its_producers`;
/// harris seed 22 (a fused loop
/// over an empty region ran a positive number of times) is fixed, see
/// `a_fused_loop_over_an_empty_region_runs_no_iteration`, and so are
/// gaussian5x5 46, sobel 112 and unsharp_mask 178, see
/// `clamped_loop_variables_outside_their_range_keep_their_producers`.
const KNOWN_WRONG: [(&str, u64); 0] = [];

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
        let cases = size_cases(&name, &p, &photo);
        // The example's own schedule first, then the random ones, on two
        // threads (seeds interleaved).
        let own = lower(&p, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        for case in &cases {
            match run_case(&own.module, case, ITERATION_BUDGET) {
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
                        // bound (an index with no known range, such as a
                        // value of a reduction used as a coordinate) is
                        // refused and drawn again from
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
                                Err(LowerError::Algorithm(why)) => {
                                    if verbose {
                                        eprintln!("  {name} seed {seed} is unboundable: {why}");
                                    }
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
                                let failure = format!(
                                    "{name} seed {seed}: lowering fails: {e}\n    {}",
                                    schedule()
                                );
                                eprintln!("  FAILURE {failure}");
                                tally.lock().unwrap().failures.push(failure);
                                continue;
                            }
                        };
                        let known_wrong = KNOWN_WRONG.contains(&(name.as_str(), seed));
                        let mut wrong_sizes = 0;
                        for case in cases {
                            let outcome = run_case(&module, case, ITERATION_BUDGET);
                            let mut t = tally.lock().unwrap();
                            t.runs += 1;
                            match outcome {
                                Ok(Outcome::Matches(_)) => t.compared += 1,
                                Ok(Outcome::NeedsLargerInput) => t.needs_larger_input += 1,
                                Ok(Outcome::OverBudget) => {
                                    t.over_budget.push(format!("{seed} at {}", case.label))
                                }
                                Err(_) if known_wrong => {
                                    wrong_sizes += 1;
                                    t.known_wrong += 1;
                                }
                                Err(e) => {
                                    let failure = format!(
                                        "{name} seed {seed} at {}: {e}\n    {}",
                                        case.label,
                                        schedule()
                                    );
                                    // At once: a long sweep names its failures as they come.
                                    eprintln!("  FAILURE {failure}");
                                    t.failures.push(failure)
                                }
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
            "{name}: {seeds} {kind} schedules x {} sizes in {:.1?}: {} runs, {} compared, {} need a larger input, {} over the iteration budget{}, {} unboundable schedules ({} drawn again), {} failures",
            cases.len(),
            start.elapsed(),
            t.runs,
            t.compared,
            t.needs_larger_input,
            t.over_budget.len(),
            if t.over_budget.is_empty() {
                String::new()
            } else {
                format!(" (seed {})", t.over_budget.join(", "))
            },
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
        total
            .over_budget
            .extend(t.over_budget.iter().map(|c| format!("{name} {c}")));
        total.unboundable += t.unboundable;
        total.redraws += t.redraws;
        total.known_hangs += t.known_hangs;
        total.known_wrong += t.known_wrong;
        total.failures.extend(t.failures);
        checked += 1;
    }
    let t = total;
    println!(
        "{checked} examples: {} seeds, {} runs, {} compared, {} needing a larger input, {} over the iteration budget, {} schedules with unboundable regions ({} drawn again), {} known hangs skipped, {} known wrong results",
        t.seeds,
        t.runs,
        t.compared,
        t.needs_larger_input,
        t.over_budget.len(),
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

/// `example` under `schedule` (a `schedule { ... }` block replacing its
/// own), lowered with the verifier on and run at every size of the check:
/// the output must equal the interpreter's. Returns each size's stats.
fn run_example_with_schedule(example: &str, schedule: &str) -> Vec<(&'static str, ExecStats)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let src = std::fs::read_to_string(format!("{dir}/{example}")).unwrap();
    let mut p = argent_lang::compile(&src).unwrap_or_else(|e| panic!("{example}: {e:?}"));
    p.schedule = argent_lang::parse_schedule(schedule, &p)
        .unwrap_or_else(|e| panic!("{example}: the schedule does not parse: {e:?}"));
    let options = LowerOptions {
        verify: true,
        ..Default::default()
    };
    let module = lower(&p, &options)
        .unwrap_or_else(|e| panic!("{example}: {e}"))
        .module;
    let photo = load_photo("chelsea.png");
    size_cases(example, &p, &photo)
        .iter()
        .map(|case| match run_case(&module, case, ITERATION_BUDGET) {
            Ok(Outcome::Matches(stats)) => (case.label, stats),
            Ok(other) => panic!(
                "{example} at {}: {}",
                case.label,
                match other {
                    Outcome::NeedsLargerInput => "input too small",
                    _ => "over the iteration budget",
                }
            ),
            Err(e) => panic!("{example} at {}: {e}", case.label),
        })
        .collect()
}

/// Regression (harris seed 22): a fused loop of a func whose region is
/// empty in some tile iterations (the 256x128 tile is larger than the
/// output, so `sxy_sum0`'s region per point of the tile tail is empty)
/// multiplied two negative extents into a positive trip count and wrote
/// outside the allocation. The fused extent is now the product of the
/// extents clamped at zero.
#[test]
fn a_fused_loop_over_an_empty_region_runs_no_iteration() {
    let results = run_example_with_schedule(
        "harris.ag",
        "schedule {
           out.tile(x, y, xi, yi, 256, 128)
           iy.vectorize(x, 4)
           sxy_sum0.update(0).fuse(x, y, xy)
         }",
    );
    for (label, stats) in results {
        // Nine taps per output point (3x3 box), nothing more: the tile's
        // tail points outside the output compute nothing.
        let points = stats.stores_to("out");
        assert_eq!(stats.stores_to("sxy_sum0"), points * 10, "{label}\n{stats}");
    }
}

/// bicubic_resize seed 53 (formerly a "hang"): with
/// `resized_y.fuse(x, y, xy)`, its inline sum `resized_y_sum0` is computed
/// inside the fused loop, whose variables are `xy % e` and `xy / e` of a
/// symbolic extent `e`. Bounds inference gave such a quotient no bounds
/// (and the remainder all of `0..e`), so each point of `resized_y`
/// recomputed its sum over the whole strip: quadratic work (10.9 M values
/// of the sum for 2,592 points at 17x3 while regions took parameters at
/// their declared maximum; it now fits 20 M iterations at 24x16). The
/// executor's iteration budget turns such work into a clear refusal
/// instead of a stuck test. Quotients and remainders of single points are
/// now bounded as single points, as in Halide (see
/// `arith::tests::quotients_and_remainders_of_points_are_points`); the
/// small budget below still refuses the run, which is what this checks.
#[test]
fn a_producer_inside_a_fused_loop_is_refused_by_the_iteration_budget() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let src = std::fs::read_to_string(format!("{dir}/bicubic_resize.ag")).unwrap();
    let mut p = argent_lang::compile(&src).unwrap();
    p.schedule = argent_lang::parse_schedule(
        "schedule {
           kernel_x.compute_root()
           kernel_y.compute_root()
           out.split(y, yo, yi, 32).reorder(c, x, yi, yo).vectorize(x, 16).parallel(yo)
           resized_y.compute_at(out, yo).reorder(c, x, y).vectorize(x, 4).fuse(x, y, xy)
         }",
        &p,
    )
    .unwrap();
    let module = lower(&p, &LowerOptions::default()).unwrap().module;
    let photo = load_photo("chelsea.png");
    let cases = size_cases("bicubic_resize.ag", &p, &photo);
    // Both sizes match within 20 M iterations since regions follow the
    // run-time parameters; the quadratic recomputation remains, and a
    // budget below it is a clear refusal, never a stuck test.
    for case in [&cases[0], &cases[2]] {
        let outcome = run_case(&module, case, 20_000_000);
        assert!(
            matches!(outcome, Ok(Outcome::Matches(_))),
            "{:?}",
            outcome.map(|_| ())
        );
    }
    let small = run_case(&module, &cases[2], 2_000);
    assert!(
        matches!(small, Ok(Outcome::OverBudget)),
        "{:?}",
        small.map(|o| matches!(o, Outcome::Matches(_)))
    );
}

/// Regression (found by the 200-seed sweep): schedules whose split or tile
/// factor exceeds the extent of the loop it splits (gaussian5x5 seed 46;
/// sobel seed 112: `gx.tile(y_i0, y_o0, .., 16, 2)` of a 4-iteration loop;
/// unsharp_mask seed 178: `sharp.tile(x, c, .., 2, 4)` over 3 channels).
/// The clamped loop variable lies outside its range in the tail
/// iterations, and bounds inference bounded the clamp `max(min(x, hi),
/// lo)` by the intersection of x's range with [lo, hi], which is empty
/// there: a producer computed at those iterations was allocated nothing
/// while its consumer still read it ("outside 0..0"). The clamp is now
/// bounded by clamping the ends of x's range (see `arith::clamp_bounds`).
const CLAMPED_TAIL_SEEDS: [(&str, u64); 3] = [
    ("gaussian5x5.ag", 46),
    ("sobel.ag", 112),
    ("unsharp_mask.ag", 178),
];

#[test]
fn clamped_loop_variables_outside_their_range_keep_their_producers() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let photo = load_photo("chelsea.png");
    for (example, seed) in CLAMPED_TAIL_SEEDS {
        let src = std::fs::read_to_string(format!("{dir}/{example}")).unwrap();
        let mut p = argent_lang::compile(&src).unwrap();
        p.schedule.directives = seeded_schedule(&p, seed);
        let module = lower(&p, &LowerOptions::default()).unwrap().module;
        for case in size_cases(example, &p, &photo) {
            let outcome = run_case(&module, &case, ITERATION_BUDGET);
            assert!(
                matches!(outcome, Ok(Outcome::Matches(_))),
                "{example} seed {seed} at {}: {:?}",
                case.label,
                outcome.map(|o| matches!(o, Outcome::Matches(_)))
            );
        }
    }
}

/// Regression (multiscale_interpolation seed 60): `interp_7`'s rows are
/// split with `round_up`, so its loop runs to
/// `min + 4 * ceil(extent / 4) - 1`, past its region's max. Its region
/// follows from `interp_6`'s, which slides along `out`'s rows: the raised
/// min moved that end past every row bounds inference had given the root
/// level `down_6` (computed from the regions before sliding), which was
/// read one past its storage. No func computed in a loop that holds a
/// rounded-up func slides now.
#[test]
fn sliding_does_not_move_rounded_up_loops_past_their_producers() {
    run_example_with_schedule(
        "multiscale_interpolation.ag",
        "schedule {
           down_0.compute_root()
           down_1.compute_root()
           down_2.compute_root()
           down_3.compute_root()
           down_4.compute_root()
           down_5.compute_root()
           down_6.compute_root()
           out.split(y, yo, yi, 32)
           interp_1.store_at(out, yo).compute_at(out, yi)
           interp_2.store_at(out, yo).compute_at(out, yi)
           interp_3.store_at(out, yo).compute_at(out, yi)
           interp_4.store_at(out, yo).compute_at(out, yi)
           interp_5.store_at(out, yo).compute_at(out, yi)
           interp_6.store_at(out, yo).compute_at(out, yi)
           interp_7.store_at(out, yo).compute_at(out, yi).split(y, yo, yi, 4, round_up)
         }",
    );
}

/// Regression (multiscale_interpolation seed 125): `interp_2.fuse(y, c,
/// yc)` rebuilds `y` and `c` from the fused variable with clamps to the
/// region. Where the sliding window empties `interp_2`'s region (its min
/// one above its max), the fused loop runs no iteration, but the clamps
/// were bounded as the point `[min, max(max, min)]`, so `interp_3`'s
/// region reached past the rows the root level `down_3` computed, and
/// `down_3` was read past its storage. A loop whose extent names only
/// outer variables now gives an empty box where that extent is not
/// positive.
#[test]
fn a_fused_loop_over_a_slid_empty_region_asks_nothing_of_its_producers() {
    run_example_with_schedule(
        "multiscale_interpolation.ag",
        "schedule {
           down_0.compute_root()
           down_1.compute_root()
           down_2.compute_root()
           down_3.compute_root()
           down_4.compute_root()
           down_5.compute_root()
           down_6.compute_root()
           out.split(y, yo, yi, 32)
           interp_1.store_at(out, yo).compute_at(out, yi)
           interp_2.store_at(out, yo).compute_at(out, yi).fuse(y, c, yc)
           interp_3.store_at(out, yo).compute_at(out, yi)
           interp_4.store_at(out, yo).compute_at(out, yi)
           interp_5.store_at(out, yo).compute_at(out, yi)
           interp_6.store_at(out, yo).compute_at(out, yi)
           interp_7.store_at(out, yo).compute_at(out, yi)
         }",
    );
}

/// camera_pipe's own schedule: the simulated raw mosaic (three `pow`s a
/// pixel) is stored per strip and computed per pair of output rows, a
/// sliding window. Its region's rows were clamps of the row-pair loop
/// (`max(min(yii * 2, 127), 0)`), and the differences of such clamps are
/// not provably monotonic, so it did not slide: each pair of rows
/// recomputed the whole window, 14 values of raw per output pixel. The
/// regions are now simplified with the loop's constant range first.
#[test]
fn camera_pipe_slides_its_raw_mosaic_along_the_strip() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/camera_pipe.ag"
    ))
    .unwrap();
    let own = &src[src.find("schedule {").unwrap()..];
    let unslid = own.replace(
        "raw.compute_at(processed, yii).store_at(processed, yo).fold_storage(y, 8)",
        "raw.compute_at(processed, yii)",
    );
    assert_ne!(own, unslid, "the schedule no longer stores raw per strip");
    let slid = run_example_with_schedule("camera_pipe.ag", own);
    let recomputed = run_example_with_schedule("camera_pipe.ag", &unslid);
    for ((label, s), (_, r)) in slid.iter().zip(&recomputed) {
        if *label == "1x1" {
            continue;
        }
        assert!(
            2 * s.stores_to("raw") < r.stores_to("raw"),
            "{label}: raw stored {} values with its sliding window, {} without",
            s.stores_to("raw"),
            r.stores_to("raw")
        );
    }
}
