//! Bounds inference must not ask for more of an input than the pipeline
//! reads: examples whose reference run succeeds on an image must also run,
//! lowered under their own schedules, on exactly that image, and compute
//! the same pixels.

use argent_interp::{Buffer, Value};
use argent_ir::Pipeline;
use argent_lower::random_schedule::Rng;
use argent_lower::{LowerOptions, lower};

fn example(name: &str) -> Pipeline {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    argent_lang::compile(&src).unwrap_or_else(|e| panic!("{name} does not compile: {e:?}"))
}

/// A deterministic image with varied values for every input of `p`, with
/// the given extents (each input takes as many as it has dimensions).
fn inputs_for(p: &Pipeline, extents: &[i64]) -> Vec<(String, Buffer)> {
    let mut rng = Rng::new(7);
    p.inputs
        .iter()
        .map(|i| {
            let mut b = Buffer::new(i.ty, &extents[..i.dims.len()]);
            b.fill(|_| Value::Int((rng.next_u64() % (i.ty.max_value() as u64 + 1)) as i64));
            (i.name.clone(), b)
        })
        .collect()
}

/// Lower `name` with its own schedule, run it with `exec::run` over the
/// whole input image and compare with the reference interpreter bit for bit.
fn lowered_matches_interpreter_on_the_whole_image(name: &str, extents: &[i64]) {
    lowered_pipeline_matches_interpreter(name, &example(name), extents);
}

/// `name`'s algorithm under `schedule` (a `schedule { .. }` block replacing
/// the example's own).
fn rescheduled(name: &str, schedule: &str) -> Pipeline {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let algorithm = &src[..src
        .find("\nschedule {")
        .expect("the example has a schedule")];
    let src = format!("{algorithm}\n{schedule}\n");
    argent_lang::compile(&src).unwrap_or_else(|e| panic!("{name} does not compile: {e:?}"))
}

fn lowered_pipeline_matches_interpreter(name: &str, p: &Pipeline, extents: &[i64]) {
    let p = p.clone();
    let inputs = inputs_for(&p, extents);
    let refs: Vec<(&str, &Buffer)> = inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
    let output = &p.outputs[0];
    let out_func = p.func(output).expect("the output is a func");
    let out_extents = &extents[..out_func.args.len()];
    let region: Vec<(i64, i64)> = out_extents.iter().map(|&e| (0, e)).collect();

    let expected = argent_interp::realize(&p, &refs, &[], &region)
        .unwrap_or_else(|e| panic!("{name}: interpreter: {e:?}"));
    let lowered = lower(&p, &LowerOptions::default())
        .unwrap_or_else(|e| panic!("{name} does not lower: {e}"));
    let mut out = Buffer::new(out_func.ty, out_extents);
    argent_lower::exec::run(&lowered.module, &refs, &mut [(output, &mut out)], &[])
        .unwrap_or_else(|e| panic!("{name} on {extents:?}: {e}"));
    assert!(
        out.same_contents(&expected[0]),
        "{name} on {extents:?}: the lowered program differs from the interpreter"
    );
}

/// `mirror_interior` reflects with `e - max(a, -a)`; bounding `max(a, -a)`
/// without knowing both operands are the same value asked for an input
/// about twice as wide as the image.
#[test]
fn gaussian5x5_runs_on_the_image_it_blurs() {
    lowered_matches_interpreter_on_the_whole_image("gaussian5x5.ag", &[21, 37, 3]);
    lowered_matches_interpreter_on_the_whole_image("gaussian5x5.ag", &[2, 3, 1]);
}

/// The language's boundary conditions (docs/language.md).
const BOUNDARY_CONDITIONS: [&str; 5] = [
    "repeat_edge",
    "constant_exterior",
    "repeat_image",
    "mirror_image",
    "mirror_interior",
];

/// Every boundary condition reads only inside the image, so the image
/// itself is a large enough input. `mirror_image` folds with
/// `min(c, 2e - 1 - c)`: bounding the two operands apart asked for an
/// input twice as wide as the image (found by a random program).
#[test]
fn every_boundary_condition_runs_on_the_image_it_reads() {
    for condition in BOUNDARY_CONDITIONS {
        let source = format!(
            "input u8 in(x, y)\nb = {condition}(in)\nout(x, y) = b(x - 2, y + 1) + b(x + 3, y - 1)\noutput out\nschedule {{\n  out.vectorize(x, 8)\n}}\n"
        );
        let p = argent_lang::compile(&source).expect("the pipeline compiles");
        lowered_pipeline_matches_interpreter(condition, &p, &[21, 13]);
        lowered_pipeline_matches_interpreter(condition, &p, &[4, 2]);
    }
}

/// Conditions on coordinates narrow each branch's region, but not against
/// constants near the ends of the `i32` range: `y < -2147483648` narrowed
/// `y` to at most `-2147483648 - 1`, which wrapped to 2147483647, and the
/// region of `b` asked for 4 GiB; `x < -2147483647` gave regions whose
/// coordinates `x - 2` wrapped at run time (found by random programs).
#[test]
fn conditions_against_extreme_constants_do_not_wrap_regions() {
    let source = "input u8 in(x, y)\n\
                  b = repeat_edge(in)\n\
                  out(x, y) = select(x < -2147483647, b(x - 2, y), b(x + 1, y)) \
                  + select(y != -2147483648, b(x, y - 1), u8(0))\n\
                  output out\n\
                  schedule {\n  b.compute_root()\n}\n";
    let p = argent_lang::compile(source).expect("the pipeline compiles");
    lowered_pipeline_matches_interpreter("extreme conditions", &p, &[21, 13]);
}

/// Border rules read the input only inside the image (the rules say what
/// lies outside), so any image large enough for the rules is enough.
#[test]
fn border_rules_runs_on_the_image_it_blurs() {
    lowered_matches_interpreter_on_the_whole_image("border_rules.ag", &[23, 35]);
    lowered_matches_interpreter_on_the_whole_image("border_rules.ag", &[451, 7]);
}

/// A func computed at the root and read as a coordinate is bounded by its
/// definition over the arguments read, as if it were inlined: the bilateral
/// grid's intensity cell (through `gray`, clamped to [0, 1], and the
/// ranged param `r_sigma`) and the resize's first tap `begin_x(x)`. Both
/// schedules were refused as unboundable ("an index used to read it has
/// no known range").
#[test]
fn funcs_read_as_coordinates_are_bounded_by_their_definitions() {
    let grid = rescheduled(
        "bilateral_grid.ag",
        "schedule {\n  gray.compute_root()\n  cell.compute_root()\n  histogram.compute_root()\n  blurz.compute_root()\n  blury.compute_root()\n}",
    );
    lowered_pipeline_matches_interpreter("bilateral_grid.ag", &grid, &[37, 21, 3]);
    let resize = rescheduled(
        "bicubic_resize.ag",
        "schedule {\n  begin_x.compute_root()\n  begin_y.compute_root()\n  resized_y.compute_root()\n}",
    );
    lowered_pipeline_matches_interpreter("bicubic_resize.ag", &resize, &[19, 23, 3]);
    // The grid's z extent is that of the cells, not of all i32: the
    // histogram's storage is small.
    let lowered = lower(&grid, &LowerOptions::default()).unwrap();
    let text = lowered.loop_nest.to_string();
    assert!(
        !text.contains("2147483647"),
        "an i32-wide bound remains:\n{text}"
    );
}

/// An output that another stage reads around each point (here `f`, read
/// by `g` two columns left and a row below) is computed over everything
/// its readers need, not only the region of its own buffer, and its
/// updates and schedule go with that computation. Reads of `f` outside
/// its buffer took whatever lay in memory next to it (found by random
/// programs with two outputs).
#[test]
fn outputs_read_by_other_stages_are_computed_where_they_are_read() {
    let source = "input u8 in(x, y)\n\
                  b = repeat_edge(in)\n\
                  rdom s = [1 .. 5]\n\
                  f(x, y) = u16(b(x, y)) * 3\n\
                  f(x, s) = f(x, s - 1) + f(x, s)\n\
                  g(x, y) = f(x - 2, y + 1) + f(x + 1, y - 1)\n\
                  output g, f\n\
                  schedule {\n  f.vectorize(x, 8)\n  f.update(0).vectorize(x, 8)\n  g.vectorize(x, 8)\n}\n";
    let p = argent_lang::compile(source).expect("the pipeline compiles");
    let lowered = lower(&p, &LowerOptions::default()).expect("the pipeline lowers");
    for extents in [[21, 13], [3, 2]] {
        let inputs = inputs_for(&p, &extents);
        let refs: Vec<(&str, &Buffer)> = inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
        let region: Vec<(i64, i64)> = extents.iter().map(|&e| (0, e)).collect();
        let expected = argent_interp::realize(&p, &refs, &[], &region).expect("the reference runs");
        let mut g = Buffer::new(argent_ir::Type::U16, &extents);
        let mut f = Buffer::new(argent_ir::Type::U16, &extents);
        argent_lower::exec::run(
            &lowered.module,
            &refs,
            &mut [("g", &mut g), ("f", &mut f)],
            &[],
        )
        .expect("the lowered pipeline runs");
        assert!(g.same_contents(&expected[0]), "g differs on {extents:?}");
        assert!(f.same_contents(&expected[1]), "f differs on {extents:?}");
    }
}

/// A histogram scattered from a mirrored image over a fixed reduction
/// domain reads only inside the image. The simplifier writes the mirror's
/// `max(c, -c)` in the scatter's index as `max(m - k, k - m)`; bounded as
/// two unrelated values it reached twice past the edge, and every image
/// looked too small (found by random programs).
#[test]
fn scatters_through_every_boundary_condition_read_inside_the_image() {
    for condition in BOUNDARY_CONDITIONS {
        let source = format!(
            "input u8 in(x, y)\nb = {condition}(in)\nrdom r = [0 .. 9, 0 .. 5]\n\
             h(i) = u32(0)\nh(clamp(i32(b(r.x - 2, r.y)), 0, 15)) += u32(1)\n\
             out(x, y) = h(clamp(i32(in(x, y)), 0, 15))\noutput out\n"
        );
        let p = argent_lang::compile(&source).expect("the pipeline compiles");
        lowered_pipeline_matches_interpreter(condition, &p, &[21, 13]);
    }
}

/// Vector code evaluates both branches of a `select` in every lane, so a
/// func read in one branch is loaded where the condition fails too: its
/// buffer must hold those points. Narrowed by the condition, `g` below got
/// the rows `y >= 256` of an 11-row output, an empty buffer, and the
/// vectorised output loaded rows 0-10 of it anyway (random programs seed
/// 11458 trapped that way). Inputs are still narrowed (they are checked,
/// not allocated). A func that no output reads is not computed at all.
#[test]
fn funcs_read_under_a_select_hold_every_lane_the_select_loads() {
    let source = "input u8 in(x, y)\nb = repeat_edge(in)\n\
        g(x, y) = b(x + 1, y) + u8(3)\n\
        unused(x, y) = g(x - 5, y) * u8(2)\n\
        out(x, y) = select(y <= 255, b(x, y), g(x, y))\noutput out\n\
        schedule {\n  g.compute_root()\n  unused.compute_root()\n  out.vectorize(x, 8)\n}\n";
    let p = argent_lang::compile(source).expect("the pipeline compiles");
    lowered_pipeline_matches_interpreter("select over a func", &p, &[21, 11]);
    let lowered = lower(&p, &LowerOptions::default()).expect("it lowers");
    let text = lowered.module.body.to_string();
    assert!(
        !text.contains("unused"),
        "an unread func is computed:\n{text}"
    );
    // Narrowed, g's first row was `max(out.min.1, 256)`.
    assert!(
        !text.contains("256"),
        "g's region is narrowed by the select:\n{text}"
    );
}

/// A read in a select arm needs the input only where some point takes
/// the arm. Narrowed by a condition that no point of the output meets,
/// `x` ranges over an empty interval, and the region computed over it is
/// not always empty (`x * x + 1000` over `[0, -1]` is `[1000, 1001]`):
/// such regions were checked anyway, and every input was "too small".
/// Where the arm is taken, the check still applies.
#[test]
fn reads_in_select_arms_that_no_point_takes_need_nothing() {
    let source = "input u8 in(x, y)\n\
        out(x, y) = select(x < 0, in(x * x + 1000, y), u8(1)) \
        + select(x > 100, in(x + 1000, y - 50), u8(2)) + in(x, y)\n\
        output out\nschedule {\n  out.vectorize(x, 8)\n}\n";
    let p = argent_lang::compile(source).expect("the pipeline compiles");
    lowered_pipeline_matches_interpreter("untaken arms", &p, &[21, 13]);

    let taken = "input u8 in(x, y)\n\
        out(x, y) = select(x > 15, in(x + 1000, y), u8(1))\noutput out\n";
    let p = argent_lang::compile(taken).expect("the pipeline compiles");
    let lowered = lower(&p, &LowerOptions::default()).expect("it lowers");
    let input = Buffer::new(argent_ir::Type::U8, &[21, 13]);
    let mut out = Buffer::new(argent_ir::Type::U8, &[21, 13]);
    let err = argent_lower::exec::run(
        &lowered.module,
        &[("in", &input)],
        &mut [("out", &mut out)],
        &[],
    )
    .expect_err("the taken arm reads outside the input");
    let message = err.to_string();
    assert!(
        message.contains("1016") && message.contains("1020"),
        "the error names the region the taken arm reads: {message}"
    );
}
