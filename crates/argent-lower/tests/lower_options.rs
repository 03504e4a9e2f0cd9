//! Pass dumps and the schedule-tree view, and reproducible random schedules.

mod common;

use argent_lower::random_schedule::random_schedule;
use argent_lower::{LowerOptions, lower};
use expect_test::expect;

#[test]
fn print_after_all_dumps_only_passes_that_changed_the_ir() {
    let p = common::with_schedule(common::blur(), "blur_x.compute_root()");
    let lowered = lower(
        &p,
        &LowerOptions {
            print_after: Some("all".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let names: Vec<&str> = lowered.dumps.iter().map(|(n, _)| n.as_str()).collect();
    // Sliding window, storage folding, unrolling and vectorisation change
    // nothing for breadth-first, and without a boundary condition there is
    // no loop to partition.
    expect![[r#"["synthesize", "bounds_inference", "realize_bounds", "checks", "flatten", "specialize_strides", "simplify", "cse", "hoist_invariants"]"#]].assert_eq(&format!("{names:?}"));
    let one = lower(
        &p,
        &LowerOptions {
            print_after: Some("realize_bounds".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(one.dumps.len(), 1);
    assert!(
        one.dumps[0]
            .1
            .contains("realize blur_x: u16([blur_x.s0.x.min")
    );
}

#[test]
fn random_schedules_are_reproducible_and_vary_with_the_seed() {
    let p = common::blur();
    let a: Vec<String> = random_schedule(&p, 42)
        .iter()
        .map(argent_lower::error::directive_text)
        .collect();
    let b: Vec<String> = random_schedule(&p, 42)
        .iter()
        .map(argent_lower::error::directive_text)
        .collect();
    assert_eq!(a, b);
    let distinct: std::collections::BTreeSet<Vec<String>> = (0..50)
        .map(|s| {
            random_schedule(&p, s)
                .iter()
                .map(argent_lower::error::directive_text)
                .collect()
        })
        .collect();
    assert!(
        distinct.len() > 30,
        "only {} distinct schedules out of 50",
        distinct.len()
    );
}

#[test]
fn printed_directives_keep_their_tail_strategy() {
    // A failing random schedule is printed so it can be re-run: a split's
    // tail strategy changes the bounds, so the text must carry it.
    let text = "blur_y.split(y, yo, yi, 4, round_up)\n\
                blur_y.tile(x, y, xo, yo, xi, yi, 8, 8, guard_with_if)\n\
                blur_x.split(x, xo, xi, 8)";
    let p = common::with_schedule(common::blur(), text);
    let printed: Vec<String> = p
        .schedule
        .directives
        .iter()
        .map(argent_lower::error::directive_text)
        .collect();
    expect![[r#"
        [
            "blur_y.split(y, yo, yi, 4, round_up)",
            "blur_y.tile(x, y, xo, yo, xi, yi, 8, 8, guard_with_if)",
            "blur_x.split(x, xo, xi, 8)",
        ]
    "#]]
    .assert_debug_eq(&printed);
    let again = common::with_schedule(common::blur(), &printed.join("\n"));
    assert_eq!(again.schedule.directives, p.schedule.directives);
}

#[test]
fn rfactor_makes_the_histogram_parallel() {
    let p = common::with_schedule(common::histogram(), "hist.update(0).rfactor(r.y, v)");
    let lowered = lower(&p, &LowerOptions::default()).unwrap();
    let tree = lowered.schedule_tree.to_string();
    expect![[r#"
        domain { hist_intm.s0[v, i], hist_intm.s1[v, r.x], hist.s0[i], hist.s1[i, r.y], cdf.s0[i], cdf.s1[ri], out.s0[y, x] }
          sequence
            sequence
              filter hist_intm.s0
                band [v, i] permutable coincident [1, 1]
              filter hist_intm.s1
                mark parallel
                  band [v] permutable coincident [1]
                    band [r.x] permutable coincident [0]
            sequence
              filter hist.s0
                band [i] permutable coincident [1]
              filter hist.s1
                band [i, r.y] permutable coincident [1, 0]
            sequence
              filter cdf.s0
                band [i] permutable coincident [1]
              filter cdf.s1
                band [ri] coincident [0]
            filter out.s0
              band [y, x] permutable coincident [1, 1]
    "#]].assert_eq(&tree);
    // The intermediate is computed once, at the root, with one partial
    // histogram per row in parallel; the merge then adds the rows up. (It
    // used to be placed like an inline reduction, at the merge's innermost
    // loop: every row's histogram recomputed for each of the 256 bins, on
    // one row at a time.)
    assert!(
        lowered
            .loop_nest
            .to_string()
            .contains("parallel (hist_intm.s1.v, hist_intm.s1.v.min, ((hist_intm.s1.v.max - hist_intm.s1.v.min) + 1))"),
        "{}",
        lowered.loop_nest
    );
}

#[test]
fn random_schedules_reorder_the_storage_of_some_funcs() {
    // `reorder_storage` is drawn on its own stream after the rest of the
    // schedule, for about a quarter of the funcs that have storage.
    let p = common::blur();
    let reordered = (0..200)
        .filter(|&s| {
            random_schedule(&p, s)
                .iter()
                .any(|d| matches!(d.kind, argent_ir::DirectiveKind::ReorderStorage(_)))
        })
        .count();
    assert!(
        (10..100).contains(&reordered),
        "{reordered} of 200 random blur schedules reorder storage"
    );
}

#[test]
fn random_schedules_schedule_some_rfactor_intermediates() {
    // After an rfactor, half the time the intermediate's update gets
    // directives of its own (and sometimes a storage order), as a user
    // may write them; every such schedule lowers.
    let p = common::histogram();
    let mut scheduled = 0;
    for seed in 0..300 {
        let list = random_schedule(&p, seed);
        if list.iter().any(|d| d.func == "hist_intm") {
            scheduled += 1;
            let mut q = p.clone();
            q.schedule.directives = list;
            lower(&q, &LowerOptions::default()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
    }
    assert!(
        scheduled >= 5,
        "{scheduled} of 300 random histogram schedules"
    );
}

#[test]
fn specializations_beyond_the_limit_and_loops_only_one_version_has_are_schedule_errors() {
    let algorithm = "input u8 img(x, y)\nparam i32 n = 0\nb(x, y) = img(x, y) + u8(n)\nout(x, y) = b(x, y) * 2\noutput out\n";
    let error = |schedule: &str| {
        let p = argent_lang::compile(&format!("{algorithm}schedule {{\n{schedule}\n}}\n"))
            .expect("the front end accepts it");
        lower(&p, &LowerOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let five: String = (0..5)
        .map(|k| format!("out.specialize(n == {k}).vectorize(x, 8)\n"))
        .collect();
    expect!["error[S028]: in `out.specialize(n == 0).vectorize(x, 8)` (at 112..131): the schedule has 5 `specialize` directives, but at most 4 are allowed: each one doubles the code the compiler makes"].assert_eq(&error(&five));
    expect!["error[S013]: in `b.compute_at(out, yo)` (at 153..173): out has no loop variable `yo`; its loops are `y`, `x` (in the version where `(n == 1)` does not hold)"].assert_eq(&error(
        "out.specialize(n == 1).split(y, yo, yi, 4)\nb.compute_at(out, yo)",
    ));
}

#[test]
fn vectorized_fused_channels_lower_as_vectorized_pixels_with_unrolled_channels() {
    // `fuse(c, x, cx).vectorize(cx, 16)` over 3 or 4 bounded channels is
    // the same program as `vectorize(x, 16).unroll(c)`: dense interleaved
    // vectors instead of a gather and a scatter per lane. Where the fused
    // loop is named again, or `c` has no constant bound, it stays fused.
    let lowered = |k: i64, schedule: &str| {
        let source = format!(
            "input u8 photo(x, y, c)\nout(x, y, c) = photo(x, y, c) / 2 + 10\noutput out\nschedule {{\n  out{} .reorder(c, x, y).{schedule}\n}}\n",
            if k > 0 { format!(".bound(c, 0, {k})") } else { String::new() }
        )
        .replace(" .", ".");
        let p = argent_lang::compile(&source).expect("the pipeline compiles");
        lower(&p, &LowerOptions::default())
            .expect("it lowers")
            .module
            .body
            .to_string()
    };
    for k in [3, 4] {
        assert_eq!(
            lowered(k, "fuse(c, x, cx).vectorize(cx, 16).parallel(y)"),
            lowered(k, "vectorize(x, 16).unroll(c).parallel(y)"),
            "{k} channels"
        );
    }
    for (k, schedule) in [
        (4, "fuse(c, x, cx).split(cx, a, b, 16).vectorize(b)"),
        (0, "fuse(c, x, cx).vectorize(cx, 16)"),
        (8, "fuse(c, x, cx).vectorize(cx, 16)"),
    ] {
        let text = lowered(k, schedule);
        assert!(
            text.contains(" % x16("),
            "{schedule} with {k} channels stays fused:\n{text}"
        );
    }
    assert!(!lowered(4, "fuse(c, x, cx).vectorize(cx, 16)").contains(" % x16("));
}
