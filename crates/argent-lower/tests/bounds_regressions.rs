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
    let p = example(name);
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

/// Border rules read the input only inside the image (the rules say what
/// lies outside), so any image large enough for the rules is enough.
#[test]
fn border_rules_runs_on_the_image_it_blurs() {
    lowered_matches_interpreter_on_the_whole_image("border_rules.ag", &[23, 35]);
    lowered_matches_interpreter_on_the_whole_image("border_rules.ag", &[451, 7]);
}
