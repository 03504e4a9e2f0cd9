//! Invalid schedules and the errors they get: each case is the schedule
//! and the rendered error, in one data-driven snapshot.

mod common;

use argent_ir::Pipeline;
use argent_lower::{LowerOptions, lower};
use expect_test::expect;

fn render(p: Pipeline, schedule: &str) -> String {
    let p = common::with_schedule(p, schedule);
    match lower(&p, &LowerOptions::default()) {
        Ok(_) => "(accepted)".to_string(),
        Err(e) => e.to_string(),
    }
}

/// `total(i) = 0.0; total(0) += f32(img(r.x, r.y))`: a float sum, whose
/// order matters bit for bit.
fn total() -> Pipeline {
    use argent_ir::*;
    let mut p = common::histogram();
    let img = Expr::call_input(Type::U8, "img", vec![common::v("r.x"), common::v("r.y")]);
    let read = Expr::call_func(Type::F32, "total", vec![common::c(0)]);
    let hist_rdom = p.funcs[0].updates[0].rdom.clone();
    p.funcs = vec![Func {
        name: "total".into(),
        ty: Type::F32,
        args: vec!["i".into()],
        value: Expr::f32(0.0),
        updates: vec![Update {
            args: vec![common::c(0)],
            value: read + Expr::cast(Type::F32, img),
            rdom: hist_rdom,
            span: Span::DUMMY,
        }],
        origin: FuncOrigin::User,
        span: Span::DUMMY,
    }];
    p.outputs = vec!["total".into()];
    p
}

#[test]
fn invalid_schedules_name_the_directive() {
    let blur_cases = [
        "blur_z.compute_root()",
        "in.compute_root()",
        "blur_y.update(0).parallel(y)",
        "blur_y.split(z, zo, zi, 8)",
        "blur_y.split(x, y, xi, 8)",
        "blur_y.split(x, xo, xo, 8)",
        "blur_y.split(x, xo, xi, 8).split(x, a, b, 2)",
        "blur_y.split(x, xo, xi, 0)",
        "blur_y.fuse(x, y, t).fuse(t, x, u)",
        "blur_y.split(x, xo, xi, 8).fuse(x, y, t)",
        "blur_y.split(x, xo, xi, 8).fuse(xi, y, t)",
        "blur_y.reorder(x, y, x)",
        "blur_y.vectorize(x, w)",
        "blur_y.vectorize(x)",
        "blur_y.unroll(y)",
        "blur_y.parallel(x, n)",
        "blur_x.compute_at(blur_y, z)",
        "blur_x.compute_at(blur_z, x)",
        "blur_x.compute_at(blur_x, x)",
        "blur_y.split(y, yo, yi, 8)\nblur_x.compute_at(blur_y, y)",
        "blur_x.store_at(blur_y, x).compute_at(blur_y, y)",
        "blur_x.store_root()",
        "blur_y.compute_at(blur_x, x)",
        "blur_y.compute_inline()",
        "blur_x.bound(z, 0, 8)",
        "blur_x.fold_storage(y, n)",
        "blur_x.align_bounds(x, 0, 0)",
        "blur_x.compute_root().reorder_storage(y, z)",
        "blur_x.compute_root().reorder_storage(y, y)",
        "blur_y.reorder_storage(y, x)",
        "blur_y.gpu_blocks(x, y, x, y)",
        "blur_x.compute_at(blur_y, x)\nblur_y.compute_at(blur_x, x)",
    ];
    let hist_cases = [
        "hist.compute_inline()",
        "hist.update(1).parallel(r.x)",
        "hist.update(0).parallel(r.y)",
        "hist.update(0).vectorize(r.x, 8)",
        "cdf.update(0).parallel(ri)",
        "cdf.update(0).split(ri, a, b, 4, round_up)",
        "hist.update(0).split(r.x, a, b, 4, shift_inwards)",
        "cdf.compute_root().update(0).split(ri, a, b, 4)",
        "cdf.update(0).rfactor(ri, v)",
        "hist.rfactor(r.y, v)",
        "hist.update(0).rfactor(r.z, v)",
        "hist.update(0).split(r.y, ryo, ryi, 4).rfactor(ryo, v)",
        "hist.update(0).split(r.y, ryo, ryi, 4, round_up).rfactor(ryo, v)",
        "hist.update(0).split(r.y, ryo, ryi, 4).rfactor(ryo, ryi)",
        "hist.update(0).fuse(r.x, r.y, rf).rfactor(rf, v)",
        "hist.update(0).compute_root()",
        "hist.compute_at(out, x)\ncdf.compute_at(out, y)",
        "cdf.compute_at(hist, i)",
        "hist.compute_at(cdf, i)\ncdf.compute_at(hist, i)",
    ];
    let total_cases = [
        "total.update(0).reorder(r.y, r.x)",
        "total.update(0).parallel(r.x)",
        "total.update(0).rfactor(r.y, v)",
    ];
    let mut out = String::new();
    for c in total_cases {
        out += &format!("{}\n  => {}\n", c, render(total(), c));
    }
    for c in blur_cases {
        out += &format!(
            "{}\n  => {}\n",
            c.replace('\n', "; "),
            render(common::blur(), c)
        );
    }
    for c in hist_cases {
        out += &format!(
            "{}\n  => {}\n",
            c.replace('\n', "; "),
            render(common::histogram(), c)
        );
    }
    expect![[r#"
        total.update(0).reorder(r.y, r.x)
          => error[S008]: in `total.update(0).reorder(r.y, r.x)`: total.update(0) is not a recognised associative reduction (`f(..) = f(..) op e` with op +, *, &, |, ^ on integers, or min, max), so the order of its dependent loops (r.y, r.x) must stay as written
        total.update(0).parallel(r.x)
          => error[S011]: in `total.update(0).parallel(r.x)`: iterations of reduction variable `r.x` of total.update(0) depend on each other (the update reads values other iterations write); use rfactor to make it parallel
        total.update(0).rfactor(r.y, v)
          => (accepted)
        blur_z.compute_root()
          => error[S001]: in `blur_z.compute_root()`: there is no func named `blur_z`
        in.compute_root()
          => error[S026]: in `in.compute_root()`: `in` is an input; inputs have no schedule (schedule a func that reads it instead)
        blur_y.update(0).parallel(y)
          => error[S002]: in `blur_y.update(0).parallel(y)`: `blur_y` has 0 update definition(s), so there is no update(0)
        blur_y.split(z, zo, zi, 8)
          => error[S003]: in `blur_y.split(z, zo, zi, 8)`: blur_y has no loop variable `z`; its loops are `y`, `x`
        blur_y.split(x, y, xi, 8)
          => error[S004]: in `blur_y.split(x, y, xi, 8)`: blur_y already has a loop variable named `y`
        blur_y.split(x, xo, xo, 8)
          => error[S004]: in `blur_y.split(x, xo, xo, 8)`: the outer and inner variables are both named `xo`
        blur_y.split(x, xo, xi, 8).split(x, a, b, 2)
          => error[S005]: in `blur_y.split(x, a, b, 2)`: `x` was already split into `xo` and `xi`; it is no longer a loop of blur_y
        blur_y.split(x, xo, xi, 0)
          => error[S009]: in `blur_y.split(x, xo, xi, 0)`: the split factor must be positive, but it is 0
        blur_y.fuse(x, y, t).fuse(t, x, u)
          => error[S005]: in `blur_y.fuse(t, x, u)`: `x` was already fused into `t`; it is no longer a loop of blur_y
        blur_y.split(x, xo, xi, 8).fuse(x, y, t)
          => error[S005]: in `blur_y.fuse(x, y, t)`: `x` was already split into `xo` and `xi`; it is no longer a loop of blur_y
        blur_y.split(x, xo, xi, 8).fuse(xi, y, t)
          => error[S006]: in `blur_y.fuse(xi, y, t)`: `xi` must be the loop directly inside `y`, but the loops of blur_y are `y`, `xo`, `xi`
        blur_y.reorder(x, y, x)
          => error[S007]: in `blur_y.reorder(x, y, x)`: `x` appears more than once
        blur_y.vectorize(x, w)
          => error[S009]: in `blur_y.vectorize(x, w)`: the factor of vectorize must be a positive constant, but it is `w`
        blur_y.vectorize(x)
          => error[S010]: in `blur_y.vectorize(x)`: the extent of `x` is not a known constant; give a factor (`vectorize(x, 8)`) or split it first
        blur_y.unroll(y)
          => error[S010]: in `blur_y.unroll(y)`: the extent of `y` is not a known constant; give a factor (`unroll(y, 8)`) or split it first
        blur_y.parallel(x, n)
          => error[S009]: in `blur_y.parallel(x, n)`: the task size must be a positive constant, but it is `n`
        blur_x.compute_at(blur_y, z)
          => error[S013]: in `blur_x.compute_at(blur_y, z)`: blur_y has no loop variable `z`; its loops are `y`, `x`
        blur_x.compute_at(blur_z, x)
          => error[S012]: in `blur_x.compute_at(blur_z, x)`: there is no func named `blur_z`
        blur_x.compute_at(blur_x, x)
          => error[S024]: in `blur_x.compute_at(blur_x, x)`: `blur_x` cannot be scheduled inside its own loops
        blur_y.split(y, yo, yi, 8); blur_x.compute_at(blur_y, y)
          => error[S013]: in `blur_x.compute_at(blur_y, y)`: blur_y has no loop variable `y`; its loops are `yo`, `yi`, `x`
        blur_x.store_at(blur_y, x).compute_at(blur_y, y)
          => error[S017]: in `blur_x.store_at(blur_y, x)`: the store level blur_y.s0.x is not the compute level blur_y.s0.y nor a loop around it; storage must be at or outside the compute level
        blur_x.store_root()
          => error[S023]: in `blur_x.store_root()`: `blur_x` is inlined, so it has no storage; add compute_at or compute_root
        blur_y.compute_at(blur_x, x)
          => error[S019]: in `blur_y.compute_at(blur_x, x)`: `blur_y` is an output: it is always computed at the root, into its output buffer
        blur_y.compute_inline()
          => error[S019]: in `blur_y.compute_inline()`: `blur_y` is an output and cannot be inlined
        blur_x.bound(z, 0, 8)
          => error[S020]: in `blur_x.bound(z, 0, 8)`: `z` is not a pure variable of `blur_x` (its pure variables are x, y)
        blur_x.fold_storage(y, n)
          => error[S009]: in `blur_x.fold_storage(y, n)`: the fold extent must be a positive constant, but it is `n`
        blur_x.align_bounds(x, 0, 0)
          => error[S009]: in `blur_x.align_bounds(x, 0, 0)`: the modulus must be a positive constant, but it is `0`
        blur_x.compute_root().reorder_storage(y, z)
          => error[S020]: in `blur_x.reorder_storage(y, z)`: `z` is not a pure variable of `blur_x` (its pure variables are x, y)
        blur_x.compute_root().reorder_storage(y, y)
          => error[S007]: in `blur_x.reorder_storage(y, y)`: `y` appears twice
        blur_y.reorder_storage(y, x)
          => error[S019]: in `blur_y.reorder_storage(y, x)`: `blur_y` is an output: its layout in memory is its output buffer's (the caller's strides)
        blur_y.gpu_blocks(x, y, x, y)
          => error[S025]: in `blur_y.gpu_blocks(x, y, x, y)`: GPU mappings take one to three variables, not 4
        blur_x.compute_at(blur_y, x); blur_y.compute_at(blur_x, x)
          => error[S019]: in `blur_y.compute_at(blur_x, x)`: `blur_y` is an output: it is always computed at the root, into its output buffer
        hist.compute_inline()
          => error[S018]: in `hist.compute_inline()`: `hist` has update definitions, so it cannot be inlined
        hist.update(1).parallel(r.x)
          => error[S002]: in `hist.update(1).parallel(r.x)`: `hist` has 1 update definition(s), so there is no update(1)
        hist.update(0).parallel(r.y)
          => error[S011]: in `hist.update(0).parallel(r.y)`: iterations of reduction variable `r.y` of hist.update(0) depend on each other (the update reads values other iterations write); use rfactor to make it parallel
        hist.update(0).vectorize(r.x, 8)
          => error[S011]: in `hist.update(0).vectorize(r.x, 8)`: iterations of reduction variable `r.x` of hist.update(0) depend on each other (the update reads values other iterations write); use rfactor to make it parallel
        cdf.update(0).parallel(ri)
          => error[S011]: in `cdf.update(0).parallel(ri)`: iterations of reduction variable `ri` of cdf.update(0) depend on each other (the update reads values other iterations write); use rfactor to make it parallel
        cdf.update(0).split(ri, a, b, 4, round_up)
          => error[S027]: in `cdf.update(0).split(ri, a, b, 4, round_up)`: `ri` is a reduction variable: rounding up or shifting inwards would reduce some points twice; use guard_with_if
        hist.update(0).split(r.x, a, b, 4, shift_inwards)
          => error[S027]: in `hist.update(0).split(r.x, a, b, 4, shift_inwards)`: `r.x` is a reduction variable: rounding up or shifting inwards would reduce some points twice; use guard_with_if
        cdf.compute_root().update(0).split(ri, a, b, 4)
          => (accepted)
        cdf.update(0).rfactor(ri, v)
          => error[S022]: in `cdf.update(0).rfactor(ri, v)`: the update is not a recognised associative and commutative reduction (`f(..) = f(..) + e`, *, min, max, &, |, ^ on integers; +, *, min, max on floats)
        hist.rfactor(r.y, v)
          => error[S022]: in `hist.rfactor(r.y, v)`: rfactor applies to an update definition (`f.update(0).rfactor(..)`)
        hist.update(0).rfactor(r.z, v)
          => error[S003]: in `hist.update(0).rfactor(r.z, v)`: `r.z` is not a variable of the reduction domain `r`
        hist.update(0).split(r.y, ryo, ryi, 4).rfactor(ryo, v)
          => (accepted)
        hist.update(0).split(r.y, ryo, ryi, 4, round_up).rfactor(ryo, v)
          => error[S027]: in `hist.update(0).split(r.y, ryo, ryi, 4, round_up)`: `r.y` is a reduction variable: rounding up or shifting inwards would reduce some points twice; use guard_with_if
        hist.update(0).split(r.y, ryo, ryi, 4).rfactor(ryo, ryi)
          => error[S004]: in `hist.update(0).rfactor(ryo, ryi)`: `ryi` is already a variable of `hist`
        hist.update(0).fuse(r.x, r.y, rf).rfactor(rf, v)
          => error[S022]: in `hist.update(0).fuse(r.x, r.y, rf)`: rfactor cannot factor `rf`, which fuses two loops; split reduction variables instead
        hist.update(0).compute_root()
          => error[S021]: in `hist.update(0).compute_root()`: `compute_root` applies to the whole func; write it without `.update(..)`
        hist.compute_at(out, x); cdf.compute_at(out, y)
          => error[S015]: in `hist.compute_at(out, x)`: `hist` is also used by cdf, which does not run inside the loop out.s0.x
        cdf.compute_at(hist, i)
          => error[S014]: in `cdf.compute_at(hist, i)`: `hist` does not use `cdf`
        hist.compute_at(cdf, i); cdf.compute_at(hist, i)
          => error[S016]: in `hist.compute_at(cdf, i)`: compute levels form a cycle: hist -> cdf -> hist
    "#]].assert_eq(&out);
}
