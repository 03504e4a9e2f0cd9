//! Every program in the repository's `examples/` runs through the
//! interpreter on a real photo (parsed by `argent-lang`).

mod common;

use argent_interp::Value;

#[test]
fn every_example_runs_on_a_photo() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "ag"))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    assert!(
        paths.len() >= 15,
        "expected the repository's examples in {dir}"
    );
    // Deep pipelines recurse once per stage: give them a big stack.
    let handle = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || {
            let (w, h, rgb) = common::load_photo();
            let mut failures = Vec::new();
            for path in &paths {
                let source = std::fs::read_to_string(path).unwrap();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                let pipeline = match argent_lang::compile(&source) {
                    Ok(p) => p,
                    Err(e) => {
                        failures.push(format!("{name}: does not compile: {e:?}"));
                        continue;
                    }
                };
                let (result, seconds) = common::run_on_photo(&pipeline, w, h, &rgb);
                match result {
                    Ok(_) => eprintln!("{name}: {} stages, {seconds:.2} s", pipeline.funcs.len()),
                    Err(e) => failures.push(format!("{name}: {e}")),
                }
            }
            failures
        })
        .unwrap();
    let failures = handle.join().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The Harris corner example against plain loops with the same operation
/// order, bit for bit.
#[test]
fn harris_example_matches_plain_loops() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/harris.ag");
    let source = std::fs::read_to_string(path).expect("examples/harris.ag");
    let pipeline = argent_lang::compile(&source).expect("harris compiles");
    let (w, h, rgb) = common::load_photo();
    let (result, _) = common::run_on_photo(&pipeline, w, h, &rgb);
    let out = result.expect("harris runs");
    let (k, gain) = (0.04f32, 20000.0f32);
    let gray = |x: i64, y: i64| {
        let (x, y) = (x.clamp(0, w - 1), y.clamp(0, h - 1));
        let p = |c: i64| rgb[((y * w + x) * 3 + c) as usize] as f32;
        (0.299f32 * p(0) + 0.587f32 * p(1) + 0.114f32 * p(2)) / 255.0
    };
    let third = 2.0f32 / 12.0;
    let iy = |x: i64, y: i64| {
        (gray(x - 1, y + 1) - gray(x - 1, y - 1)) / 12.0
            + (gray(x, y + 1) - gray(x, y - 1)) * third
            + (gray(x + 1, y + 1) - gray(x + 1, y - 1)) / 12.0
    };
    let ix = |x: i64, y: i64| {
        (gray(x + 1, y - 1) - gray(x - 1, y - 1)) / 12.0
            + (gray(x + 1, y) - gray(x - 1, y)) * third
            + (gray(x + 1, y + 1) - gray(x - 1, y + 1)) / 12.0
    };
    let boxed = |f: &dyn Fn(i64, i64) -> f32, x: i64, y: i64| {
        let mut acc = 0.0f32;
        for ry in -1..=1 {
            for rx in -1..=1 {
                acc += f(x + rx, y + ry);
            }
        }
        acc
    };
    let mut mismatches = 0;
    let mut corners = 0;
    for y in 0..h {
        for x in 0..w {
            let sxx = boxed(&|x, y| ix(x, y) * ix(x, y), x, y);
            let syy = boxed(&|x, y| iy(x, y) * iy(x, y), x, y);
            let sxy = boxed(&|x, y| ix(x, y) * iy(x, y), x, y);
            let det = sxx * syy - sxy * sxy;
            let trace = sxx + syy;
            let response = det - k * trace * trace;
            let clamped = if response > 0.0 { response } else { 0.0 };
            let expected = (clamped.sqrt() * gain + 0.5) as u8;
            corners += (expected > 128) as usize;
            if out[0].get(&[x, y]) != Some(Value::Int(expected as i64)) {
                mismatches += 1;
            }
        }
    }
    assert_eq!(mismatches, 0);
    assert!(
        corners > 100,
        "only {corners} strong responses: a weak test image"
    );
}
