//! Lowered programs compute exactly what the reference interpreter does,
//! for the paper's blur strategies and for random valid schedules; and the
//! strategies compute and store what the paper says they do.

mod common;

use argent_interp::{Buffer, Value};
use argent_ir::{DirectiveKind, Pipeline, Type};
use argent_lower::random_schedule::random_schedule;
use argent_lower::{LowerOptions, lower};
use common::run::{Stats, run};

/// A deterministic test image of `ty` with varied values.
fn image(ty: Type, extents: &[i64], seed: u64) -> Buffer {
    let mut b = Buffer::new(ty, extents);
    let mut rng = argent_lower::random_schedule::Rng::new(seed);
    b.fill(|_| {
        let r = rng.next_u64();
        if ty.is_float() {
            Value::Float((r % 1000) as f32 / 999.0)
        } else {
            Value::Int((r % (ty.max_value().min(65535.0) as u64 + 1)) as i64)
        }
    });
    b
}

/// Lower and run `p`, compare with the interpreter; return the run's stats.
fn check(p: &Pipeline, inputs: &[(&str, &Buffer)], region: &[(i64, i64)]) -> Result<Stats, String> {
    let lowered = lower(p, &LowerOptions::default()).map_err(|e| e.to_string())?;
    let (outs, stats) = run(&lowered.loop_nest, p, inputs, region)
        .map_err(|e| format!("{e}\n{}", lowered.loop_nest))?;
    let expected = argent_interp::realize(p, inputs, &[], region)
        .map_err(|e| format!("interpreter: {e:?}"))?;
    for (o, e) in outs.iter().zip(&expected) {
        if !o.same_contents(e) {
            return Err(format!(
                "output differs from the interpreter\n{}",
                lowered.loop_nest
            ));
        }
    }
    Ok(stats)
}

const STRATEGIES: [(&str, &str); 7] = [
    ("breadth first", "blur_x.compute_root()"),
    ("full fusion (inline)", ""),
    (
        "full fusion (compute_at innermost)",
        "blur_x.compute_at(blur_y, x)",
    ),
    (
        "sliding window",
        "blur_x.store_root().compute_at(blur_y, y)",
    ),
    (
        "overlapping tiles",
        "blur_y.tile(x, y, xo, yo, xi, yi, 8, 8).parallel(yo)\nblur_x.compute_at(blur_y, xo)",
    ),
    (
        "sliding window in strips",
        "blur_y.split(y, yo, yi, 8).parallel(yo)\nblur_x.store_at(blur_y, yo).compute_at(blur_y, yi)",
    ),
    (
        "sliding window in strips, two rows per step",
        "blur_y.split(y, yo, yi, 8).split(yi, yi, yii, 2).reorder(yii, x, yi, yo).unroll(yii).parallel(yo)\nblur_x.store_at(blur_y, yo).compute_at(blur_y, yi)",
    ),
];

#[test]
fn blur_strategies_match_the_interpreter_and_the_paper() {
    let (w, h) = (37, 29);
    let input = image(Type::U16, &[w + 2, h + 2], 1).with_min(&[-1, -1]);
    for (name, schedule) in STRATEGIES {
        let p = common::with_schedule(common::blur(), schedule);
        let stats = check(&p, &[("in", &input)], &[(0, w), (0, h)])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let computed = stats.provides.get("blur_x").copied().unwrap_or(0) as i64;
        let stored = stats.max_realization.get("blur_x").copied().unwrap_or(0);
        match name {
            // Each blur_x value once, over the whole image plus the 2-row apron.
            "breadth first" => {
                assert_eq!(computed, w * (h + 2));
                assert_eq!(stored, w * (h + 2));
            }
            "full fusion (inline)" => assert_eq!(computed, 0),
            // Three blur_x values per output pixel, in a 1x3 buffer.
            "full fusion (compute_at innermost)" => {
                assert_eq!(computed, 3 * w * h);
                assert_eq!(stored, 3);
            }
            // Each value once, in a circular buffer of scanlines (3 rounded to 4).
            "sliding window" => {
                assert_eq!(computed, w * (h + 2));
                assert_eq!(stored, w * 4);
            }
            // Tiles of 8x8 recompute 2 rows per tile of the 37x29 image.
            "overlapping tiles" => {
                assert_eq!(computed, w * (h + 2 * 4));
                assert_eq!(stored, 8 * 10);
            }
            // Strips of 8 rows recompute two rows per strip; 4 folded rows per strip.
            "sliding window in strips" => {
                assert_eq!(computed, w * (h + 2 * 4));
                assert_eq!(stored, w * 4);
            }
            // Each step computes two new rows and reads four: the split of
            // the strip's 8 rows by 2 is exact, so the footprint of a step
            // has a constant height and folds to 4 rows.
            "sliding window in strips, two rows per step" => {
                assert_eq!(computed, w * (h + 2 * 4));
                assert_eq!(stored, w * 4);
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn histogram_with_rfactor_matches_the_interpreter() {
    let img = image(Type::U8, &[23, 11], 3);
    for schedule in [
        "",
        "hist.update(0).rfactor(r.y, v)",
        "hist.update(0).rfactor(r.y, v)\nout.parallel(y)",
        "cdf.compute_at(out, y)",
        // Strips of rows: 4 does not divide the 11 rows, so the last strip
        // is guarded. Strips of columns too, and both together, with the
        // intermediate's 3 partial histograms per strip unrolled.
        "hist.update(0).split(r.y, ryo, ryi, 4).rfactor(ryo, v)",
        "hist.update(0).split(r.y, ryo, ryi, 4).rfactor(ryi, v)",
        "hist.update(0).split(r.x, rxo, rxi, 3).split(r.y, ryo, ryi, 4).rfactor(ryo, v, rxi, u)\n\
         hist_intm.update(0).reorder(u, rxo, ryi, v).unroll(u).parallel(v)",
        "hist.update(0).tile(r.x, r.y, rxo, ryo, rxi, ryi, 8, 2).rfactor(rxo, u, ryo, v).vectorize(i, 8)",
        // A split that makes no factored variable stays a split of the
        // intermediate's loop; the same name for the outer part.
        "hist.update(0).split(r.x, rxo, rxi, 5).split(r.y, r.y, ryi, 3).rfactor(r.y, v)",
    ] {
        let p = common::with_schedule(common::histogram(), schedule);
        check(&p, &[("img", &img)], &[(0, 23), (0, 11)])
            .unwrap_or_else(|e| panic!("{schedule}: {e}"));
    }
}

#[test]
fn random_schedules_factor_some_strips_of_reduction_variables() {
    // Some rfactors factor a piece of a split reduction variable (strips
    // of rows, or rows of strips); every such schedule lowers, and the
    // lowered program computes the interpreter's histogram.
    let p = common::histogram();
    let img = image(Type::U8, &[13, 7], 5);
    let mut strips = 0;
    for seed in 0..300 {
        let list = random_schedule(&p, seed);
        let factored_piece = list.iter().any(|d| {
            matches!(&d.kind, DirectiveKind::Rfactor { pairs }
                if pairs.iter().any(|(rv, _)| !rv.starts_with("r.")))
        });
        if factored_piece {
            strips += 1;
            let mut q = p.clone();
            q.schedule.directives = list;
            check(&q, &[("img", &img)], &[(0, 13), (0, 7)])
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
    }
    assert!(strips >= 5, "{strips} of 300 random histogram schedules");
}

/// `specialize`: two specialised funcs make four versions, one per
/// combination of conditions on the input's size; every image size takes
/// a different one, and each gives the interpreter's values.
#[test]
fn specialized_versions_match_the_interpreter() {
    let source = "input u16 img(x, y)\n\
        p = repeat_edge(img)\n\
        bx(x, y) = (p(x - 1, y) + p(x, y) + p(x + 1, y)) / 3\n\
        out(x, y) = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) / 3\n\
        output out\n\
        schedule {\n\
          bx.compute_root().specialize(img.width >= 16).vectorize(x, 8)\n\
          out.specialize(img.height >= 8).split(y, yo, yi, 4).parallel(yo).vectorize(x, 4)\n\
          out.unroll(x, 2)\n\
        }\n";
    let p = argent_lang::compile(source).expect("the pipeline compiles");
    let lowered = lower(&p, &LowerOptions::default()).expect("it lowers");
    let text = lowered.loop_nest.to_string();
    assert_eq!(
        text.matches("if ((img.extent.0 >= 16))").count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.matches("if ((img.extent.1 >= 8))").count(),
        2,
        "{text}"
    );
    for (w, h) in [(23, 11), (9, 11), (23, 5), (9, 5)] {
        let img = image(Type::U16, &[w, h], w as u64 + 100 * h as u64);
        check(&p, &[("img", &img)], &[(0, w), (0, h)]).unwrap_or_else(|e| panic!("{w}x{h}: {e}"));
    }
}

fn random_schedules_of(
    name: &str,
    p: &Pipeline,
    inputs: &[(&str, &Buffer)],
    regions: &[Vec<(i64, i64)>],
    count: u64,
) {
    for seed in 0..count {
        let mut q = p.clone();
        q.schedule.directives = random_schedule(p, seed);
        for region in regions {
            if let Err(e) = check(&q, inputs, region) {
                let sched: Vec<String> = q
                    .schedule
                    .directives
                    .iter()
                    .map(argent_lower::error::directive_text)
                    .collect();
                panic!(
                    "{name}: seed {seed} at {region:?} fails with schedule\n  {}\n{e}",
                    sched.join("\n  ")
                );
            }
        }
    }
}

#[test]
fn random_blur_schedules_match_the_interpreter() {
    let input = image(Type::U16, &[40, 40], 5).with_min(&[-4, -4]);
    let regions = [
        vec![(0, 1), (0, 1)],
        vec![(0, 17), (0, 3)],
        vec![(0, 31), (0, 29)],
    ];
    random_schedules_of(
        "blur",
        &common::blur_clamped(),
        &[("in", &input)],
        &regions,
        200,
    );
}

#[test]
fn random_histogram_schedules_match_the_interpreter() {
    let img = image(Type::U8, &[17, 9], 9);
    let regions = [vec![(0, 17), (0, 9)]];
    random_schedules_of(
        "histogram",
        &common::histogram(),
        &[("img", &img)],
        &regions,
        200,
    );
}

/// The whole pipeline, through flattening, unrolling, vectorisation and
/// simplification, run by the lowered-IR executor.
#[test]
fn blur_strategies_through_every_pass_match_the_interpreter() {
    let (w, h) = (37, 29);
    let input = image(Type::U16, &[w + 2, h + 2], 1).with_min(&[-1, -1]);
    let extra = [
        (
            "vectorized",
            "blur_y.vectorize(x, 8)\nblur_x.compute_at(blur_y, y).vectorize(x, 8)",
        ),
        (
            "unrolled",
            "blur_y.unroll(y, 2)\nblur_x.compute_root().unroll(x, 4)",
        ),
    ];
    for (name, schedule) in STRATEGIES.iter().chain(extra.iter()) {
        let p = common::with_schedule(common::blur(), schedule);
        let lowered = lower(&p, &LowerOptions::default()).unwrap();
        let mut out = Buffer::new(Type::U16, &[w, h]);
        argent_lower::exec::run(
            &lowered.module,
            &[("in", &input)],
            &mut [("blur_y", &mut out)],
            &[],
        )
        .unwrap_or_else(|e| panic!("{name}: {e:?}\n{}", lowered.module.body));
        let expected =
            argent_interp::realize(&p, &[("in", &input)], &[], &[(0, w), (0, h)]).unwrap();
        assert!(
            out.same_contents(&expected[0]),
            "{name}: differs from the interpreter"
        );
    }
}

/// The deep example pipelines (pyramids of 8 levels, ~90 funcs; a camera
/// pipeline of strided mosaic stages), lowered with their own schedules
/// through every pass and run by the lowered-IR executor, compute exactly
/// what the interpreter does: at odd sizes, at a single pixel, and on an
/// input shifted away from the origin.
#[test]
fn deep_examples_through_every_pass_match_the_interpreter() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    for name in ["camera_pipe", "local_laplacian", "multiscale_interpolation"] {
        let src = std::fs::read_to_string(format!("{dir}/{name}.ag")).unwrap();
        let p = argent_lang::compile(&src).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let lowered = lower(&p, &LowerOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let output = &p.outputs[0];
        let out_ty = p.func(output).unwrap().ty;
        let rank = p.func(output).unwrap().args.len();
        for (w, h, x0) in [(17, 3, 0), (1, 1, 0), (40, 29, 5)] {
            let inputs: Vec<(String, Buffer)> = p
                .inputs
                .iter()
                .map(|i| {
                    let extents: Vec<i64> = [w + 2 * x0, h + 2 * x0, 3][..i.dims.len()].to_vec();
                    (i.name.clone(), image(i.ty, &extents, 7))
                })
                .collect();
            let refs: Vec<(&str, &Buffer)> = inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
            let region: Vec<(i64, i64)> = [(x0, w), (x0, h), (0, 3)][..rank].to_vec();
            let extents: Vec<i64> = region.iter().map(|r| r.1).collect();
            let mins: Vec<i64> = region.iter().map(|r| r.0).collect();
            let mut out = Buffer::new(out_ty, &extents).with_min(&mins);
            argent_lower::exec::run(
                &lowered.module,
                &refs,
                &mut [(output.as_str(), &mut out)],
                &[],
            )
            .unwrap_or_else(|e| panic!("{name} at {region:?}: {e:?}"));
            let expected = argent_interp::realize(&p, &refs, &[], &region)
                .unwrap_or_else(|e| panic!("{name}: interpreter: {e:?}"));
            assert!(
                out.same_contents(&expected[0]),
                "{name} at {region:?}: differs from the interpreter"
            );
        }
    }
}

/// The unsharp mask with its three channels unrolled inside the loop
/// vectorised over x: on interleaved RGB images the three channel stores
/// of every vector leave as one dense, shuffled store, in the last partial
/// strip of rows (where a `likely` guard wraps each store) as in the full
/// strips; and the result is the interpreter's, bit for bit, on sizes
/// whose last strip is partial.
#[test]
fn unrolled_rgb_channels_store_dense_vectors_in_every_strip() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let src = std::fs::read_to_string(format!("{dir}/unsharp_mask.ag")).unwrap();
    let algorithm = &src[..src.find("\nschedule {").expect("a schedule")];
    let src = format!(
        "{algorithm}
schedule {{
  out.bound(c, 0, 3).split(y, yo, yi, 32).reorder(c, x, yi, yo).vectorize(x, 16).unroll(c).parallel(yo)
  blur_x.store_at(out, yo).compute_at(out, yi).reorder(c, x, y).vectorize(x, 4)
}}
"
    );
    let p = argent_lang::compile(&src).unwrap_or_else(|e| panic!("{e:?}"));
    let lowered = lower(&p, &LowerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let body = lowered.module.body.to_string();
    // Stride-3 stores of 16 lanes would be one channel each, lane by lane.
    assert!(
        !body.contains(", 3, 16)] ="),
        "a channel of the RGB output is stored on its own:\n{body}"
    );
    // The full strips and the partial one each store whole pixels.
    assert!(body.matches(", 1, 48)] = ").count() >= 2, "{body}");
    for (w, h) in [(37, 45), (16, 33)] {
        let mut input = Buffer::interleaved(Type::U8, &[w, h, 3]);
        let mut rng = argent_lower::random_schedule::Rng::new(3);
        input.fill(|_| Value::Int((rng.next_u64() % 256) as i64));
        let mut out = Buffer::interleaved(Type::U8, &[w, h, 3]);
        argent_lower::exec::run(
            &lowered.module,
            &[("photo", &input)],
            &mut [("out", &mut out)],
            &[],
        )
        .unwrap_or_else(|e| panic!("{w}x{h}: {e:?}"));
        let expected =
            argent_interp::realize(&p, &[("photo", &input)], &[], &[(0, w), (0, h), (0, 3)])
                .unwrap_or_else(|e| panic!("interpreter: {e:?}"));
        assert!(
            out.same_contents(&expected[0]),
            "{w}x{h}: differs from the interpreter"
        );
    }
}

/// `rfactor` regroups a float sum (by rows, by columns, by both, with the
/// intermediate's rows in parallel), which rounds differently from the
/// interpreter's sum in the reduction domain's order. Each result stays
/// within the bound docs/language.md states: n * 2^-23 (f32's epsilon)
/// times the sum of the magnitudes of the n terms, the sum of two
/// orders' worst-case rounding errors. Integer sums regrouped the same
/// way match exactly.
#[test]
fn float_sums_regrouped_by_rfactor_stay_within_the_rounding_bound() {
    let (w, h) = (37i64, 29i64);
    let img = image(Type::U8, &[w, h], 9);
    let algorithm = "input u8 img(x, y)\n\
        rdom r = [0 .. img.width, 0 .. img.height]\n\
        total(i) = f32(0)\n\
        total(0) += f32(img(r.x, r.y)) * 0.37 - 20.0\n\
        count(i) = u32(0)\n\
        count(0) += u32(img(r.x, r.y))\n\
        output total, count\n";
    let terms: Vec<f64> = img
        .coordinates()
        .map(|c| match img.get(&c) {
            Some(Value::Int(v)) => f64::from(v as f32 * 0.37 - 20.0),
            other => panic!("{other:?}"),
        })
        .collect();
    let magnitude: f64 = terms.iter().map(|t| t.abs()).sum();
    let bound = terms.len() as f64 * f64::from(f32::EPSILON) * magnitude;
    let mut differed = false;
    for schedule in [
        "",
        "total.update(0).rfactor(r.y, v)\ncount.update(0).rfactor(r.y, v)",
        "total.update(0).rfactor(r.x, u)\ncount.update(0).rfactor(r.x, u)",
        "total.update(0).rfactor(r.x, u, r.y, v)\ncount.update(0).rfactor(r.x, u, r.y, v)",
        // The intermediates scheduled by name: column sums, 8 columns per
        // vector, columns adjacent in memory.
        "total.update(0).rfactor(r.x, u)\ncount.update(0).rfactor(r.x, u)\n\
         total_intm.reorder_storage(u, i).update(0).reorder(u, r.y).vectorize(u, 8)\n\
         count_intm.update(0).reorder(u, r.y).vectorize(u, 4)",
    ] {
        let source = format!("{algorithm}schedule {{\n{schedule}\n}}\n");
        let p = argent_lang::compile(&source).expect("the pipeline compiles");
        let lowered = lower(&p, &LowerOptions::default()).expect("it lowers");
        let region = [(0, 1)];
        let (outs, _) = run(&lowered.loop_nest, &p, &[("img", &img)], &region)
            .unwrap_or_else(|e| panic!("{schedule}: {e}"));
        let expected = argent_interp::realize(&p, &[("img", &img)], &[], &region).unwrap();
        let (Some(Value::Float(got)), Some(Value::Float(want))) =
            (outs[0].get(&[0]), expected[0].get(&[0]))
        else {
            panic!("{schedule}: a float total");
        };
        assert!(
            (f64::from(got) - f64::from(want)).abs() <= bound,
            "{schedule}: {got} against {want}, bound {bound}"
        );
        differed |= got != want;
        assert!(
            outs[1].same_contents(&expected[1]),
            "{schedule}: the integer sum"
        );
    }
    // The regrouped sums do round differently (else this test shows nothing).
    assert!(differed, "every grouping gave the interpreter's bits");
}

#[test]
fn random_schedules_specialize_some_outputs_and_both_versions_match_the_interpreter() {
    // About one random schedule in six specialises the output on the
    // input's width; images on either side of the threshold run each
    // version.
    let p = common::blur_clamped();
    let mut specialized = 0;
    for seed in 0..120 {
        let list = random_schedule(&p, seed);
        if !list
            .iter()
            .any(|d| matches!(d.kind, DirectiveKind::Specialize { .. }))
        {
            continue;
        }
        specialized += 1;
        let mut q = p.clone();
        q.schedule.directives = list;
        for w in [5, 30, 70] {
            let img = image(Type::U16, &[w, 9], seed + w as u64);
            check(&q, &[("in", &img)], &[(0, w), (0, 9)])
                .unwrap_or_else(|e| panic!("seed {seed}, width {w}: {e}"));
        }
    }
    assert!(
        specialized >= 8,
        "{specialized} of 120 random blur schedules"
    );
}
