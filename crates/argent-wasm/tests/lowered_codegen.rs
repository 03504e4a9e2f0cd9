//! Code generated for whole example pipelines, lowered by argent-lower:
//! WAT snapshots of their steady-state loops, which must be SIMD with no
//! boundary clamps, selects or guards left in them.

use argent_wasm::{CodegenOptions, compile};
use expect_test::expect;

fn example_wat(file: &str) -> String {
    let path = format!("{}/../../examples/{file}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).expect("the example exists");
    source_wat(&source)
}

fn source_wat(source: &str) -> String {
    let pipeline = argent_lang::compile(source).expect("the pipeline compiles");
    let lowered = argent_lower::lower::lower(&pipeline, &Default::default()).expect("it lowers");
    let compiled = compile(&lowered.module, &CodegenOptions::default()).expect("it compiles");
    wasmparser::validate(&compiled.bytes).expect("valid");
    wasmprinter::print_bytes(&compiled.bytes).unwrap()
}

/// The innermost loops of `wat` (those with no loop inside), each as its
/// trimmed instructions.
fn innermost_loops(wat: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = wat.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut loops = Vec::new();
    for start in (0..lines.len()).filter(|&i| lines[i].trim_start().starts_with("loop")) {
        let end = (start + 1..lines.len())
            .find(|&i| lines[i].trim() == "end" && indent(lines[i]) == indent(lines[start]))
            .expect("every loop ends");
        let body = &lines[start + 1..end];
        if !body.iter().any(|l| l.trim_start().starts_with("loop")) {
            loops.push(body.iter().map(|l| l.trim().to_string()).collect());
        }
    }
    loops
}

/// Whether a loop body chooses per element: clamps (`min`/`max`), selects
/// or branches other than the loop's back edge.
fn chooses(body: &[String]) -> bool {
    body.iter().any(|i| {
        i.contains("min_") || i.contains("max_") || i.contains("select") || i.starts_with("if")
    })
}

/// The innermost loops that store whole vectors and choose nothing per
/// element (the steady states), as how many there are and the first.
fn steady_loops(wat: &str) -> String {
    let steady: Vec<Vec<String>> = innermost_loops(wat)
        .into_iter()
        .filter(|body| body.iter().any(|i| i.starts_with("v128.store")) && !chooses(body))
        .collect();
    let first = steady.first().map(|b| b.join("\n")).unwrap_or_default();
    format!("{} steady-state loops; the first:\n{first}", steady.len())
}

/// examples/border_rules.ag: the border block tests for the interior
/// first, so both passes of its blur run vector code without any rule
/// over the interior (the rules came first before, and the horizontal
/// pass, which reads the border, ran as scalar code: 65x slower).
#[test]
fn border_rules_interior_is_vector_code_without_rules() {
    let wat = example_wat("border_rules.ag");
    let steady = steady_loops(&wat);
    let count: usize = steady.split(' ').next().unwrap().parse().unwrap();
    assert!(count >= 2, "{steady}");
    // The horizontal pass loads u8 pixels widened to u16 lanes.
    assert!(
        innermost_loops(&wat).iter().any(|body| !chooses(body)
            && body.iter().any(|i| i.starts_with("v128.load8x8_u"))
            && body.iter().any(|i| i.starts_with("v128.store"))),
        "{steady}"
    );
}

#[test]
fn box_blur_steady_state_is_v128_without_clamps() {
    let wat = example_wat("box_blur.ag");
    expect![[r#"
        0 steady-state loops; the first:
    "#]]
    .assert_eq(&steady_loops(&wat));
}

/// examples/bilateral_grid.ag: the histogram's `select(c == 0, ..)` is
/// resolved per unrolled channel before code generation; the slicing
/// loops gather grid corners as neighbour pairs (64-bit loads) and blend
/// them with whole-vector lerps (no lane extraction of floats); and the
/// colour loop over the channels computes the luma before it.
#[test]
fn bilateral_grid_resolves_channel_selects_and_pairs_gathers() {
    let path = format!(
        "{}/../../examples/bilateral_grid.ag",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = std::fs::read_to_string(&path).expect("the example exists");
    let pipeline = argent_lang::compile(&source).expect("the example compiles");
    let lowered = argent_lower::lower::lower(&pipeline, &Default::default()).expect("it lowers");
    let ir = lowered.module.body.to_string();
    assert!(
        !ir.contains("histogram.s1.c =="),
        "the unrolled channel is constant"
    );
    let wat = example_wat("bilateral_grid.ag");
    let loops = innermost_loops(&wat);
    let count = |body: &[String], op: &str| body.iter().filter(|i| i.starts_with(op)).count();
    let slicing: Vec<&Vec<String>> = loops
        .iter()
        .filter(|b| count(b, "v128.load64_zero") > 0)
        .collect();
    assert!(!slicing.is_empty(), "paired gathers in the slicing loops");
    for body in &slicing {
        // Eight corners of two channels: 16 pairs, 2 lanes per 64-bit load
        // instruction kind, no float lane extraction.
        assert_eq!(
            (
                count(body, "v128.load64_zero"),
                count(body, "v128.load64_lane"),
                count(body, "f32x4.extract_lane"),
                count(body, "f32.load"),
            ),
            (16, 16, 0, 0),
            "{}",
            body.join("\n")
        );
    }
    // The interleaved colour loops (16 byte stores per channel) convert
    // only the channel they write: one u8 -> f32 conversion (4 registers),
    // not four (the luma's three channels are computed before the loop).
    // Their one `if` is `select(c == 3, photo(..), ..)`: the channel is a
    // scalar there, so only the arm it picks runs.
    let colour: Vec<&Vec<String>> = loops
        .iter()
        .filter(|b| {
            count(b, "v128.store8_lane") == 16
                && count(b, "i8x16.shuffle") + count(b, "i8x16.swizzle") > 0
        })
        .collect();
    assert!(!colour.is_empty());
    for body in colour {
        assert_eq!(count(body, "f32x4.convert_i32x4"), 4, "{}", body.join("\n"));
        assert_eq!(count(body, "if"), 1, "{}", body.join("\n"));
    }
}

/// An RGBA blur with its channels unrolled inside a loop vectorised over x:
/// the four channel vectors of each output group leave as one interleaved
/// store (shuffles, then dense `v128.store`s), not as 64 byte stores.
#[test]
fn unrolled_rgba_channels_store_interleaved_vectors() {
    let wat = source_wat(include_str!("../../../web/test/fixtures/rgba_box_blur.ag"));
    let interleaving = innermost_loops(&wat)
        .into_iter()
        .filter(|body| !chooses(body))
        .filter(|body| {
            let whole = |i: &&String| i.starts_with("v128.store") && !i.contains("_lane");
            body.iter().filter(whole).count() >= 4
        })
        .filter(|body| body.iter().any(|i| i.starts_with("i8x16.shuffle")))
        .filter(|body| {
            !body
                .iter()
                .any(|i| i.starts_with("i32.store8") || i.starts_with("v128.store8_lane"))
        })
        .count();
    assert!(
        interleaving >= 1,
        "no steady-state loop stores interleaved RGBA vectors"
    );
}

/// The same RGBA blur's horizontal pass reads the three taps of all four
/// unrolled channels from one address: `repeat_edge` clamps `c` too, and
/// the interleaved copy of the loop nest is for images of exactly four
/// channels from channel 0 (what the runtime passes), where that clamp
/// folds to a constant. The 12 windows (two registers each) then sit at
/// 24 constant offsets from one pointer. Before, each channel's clamped
/// offset was a value of its own, and each channel computed its own
/// addresses in the loop (10-17% slower).
#[test]
fn rgba_channels_read_their_windows_from_one_pointer() {
    let wat = source_wat(include_str!("../../../web/test/fixtures/rgba_box_blur.ag"));
    let horizontal: Vec<usize> = innermost_loops(&wat)
        .into_iter()
        .filter(|body| !chooses(body))
        .filter(|body| {
            let count = |op: &str| body.iter().filter(|i| i.as_str() == op).count();
            // Four channel rows of 8 u16 lanes, each the sum of three taps
            // masked from the RGBA window and narrowed.
            count("i16x8.narrow_i32x4_u") == 12 && count("i16x8.add") == 8
        })
        .map(|body| {
            let loads: std::collections::BTreeSet<&String> = body
                .iter()
                .filter(|i| i.starts_with("v128.load "))
                .collect();
            loads.len()
        })
        .collect();
    assert!(
        horizontal.contains(&24),
        "windows at distinct offsets per branch-free horizontal loop: {horizontal:?}"
    );
}

/// The vector instructions of the steady-state loops of `source` that
/// `count` selects, summed over those loops.
fn steady_count(source: &str, count: impl Fn(&str) -> bool) -> usize {
    innermost_loops(&source_wat(source))
        .into_iter()
        .filter(|body| body.iter().any(|i| i.starts_with("v128.store")) && !chooses(body))
        .map(|body| body.iter().filter(|i| count(i)).count())
        .sum()
}

/// Four rows of a vertical 5-tap binomial, unrolled inside a loop
/// vectorised over x, share the partial sums of their taps when the
/// program writes the filter as a cascade of `[1 1]` pairs: the simplifier
/// keeps the grouping of sums of pixel values, and the stores of the
/// unrolled rows reuse what earlier rows computed. Per 8 lanes (two
/// registers) the four rows then take 7 + 6 + 5 + 4 pair sums, 44 adds,
/// where each row alone would take 10 per register (80), and the weighted
/// form 1 4 6 4 1 takes 40 adds and 16 shifts.
#[test]
fn unrolled_rows_share_a_cascade_of_pair_sums() {
    let schedule =
        "schedule { out.split(y, y, yy, 4).reorder(yy, x, y).vectorize(x, 8).unroll(yy) }";
    let cascade = format!(
        "input u16 in(x, y)
wide(x, y) = u32(in(x, y))
p1(x, y) = wide(x, y) + wide(x, y + 1)
p2(x, y) = p1(x, y) + p1(x, y + 1)
p3(x, y) = p2(x, y) + p2(x, y + 1)
out(x, y) = p3(x, y) + p3(x, y + 1)
output out
{schedule}"
    );
    let weighted = format!(
        "input u16 in(x, y)
wide(x, y) = u32(in(x, y))
out(x, y) = wide(x, y) + 4 * wide(x, y + 1) + 6 * wide(x, y + 2) + 4 * wide(x, y + 3) + wide(x, y + 4)
output out
{schedule}"
    );
    let ops = |source: &str| {
        (
            steady_count(source, |i| i == "i32x4.add"),
            steady_count(source, |i| i.starts_with("i32x4.shl") || i == "i32x4.mul"),
            steady_count(source, |i| i.starts_with("v128.load16x4_u")),
        )
    };
    // Both load each of the 8 input rows once, widening (two loads each).
    assert_eq!(ops(&cascade), (44, 0, 16));
    assert_eq!(ops(&weighted), (40, 16, 16));
}

/// The size in bytes of each function body of a module.
fn function_sizes(bytes: &[u8]) -> Vec<usize> {
    let mut sizes = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::CodeSectionEntry(body) = payload.expect("a valid module") {
            let range = body.range();
            sizes.push(range.end as usize - range.start as usize);
        }
    }
    sizes
}

/// Large pipelines are split into functions small enough for V8's top-tier
/// register allocator (it gives functions of more than 8192 virtual
/// registers, 50-80 KB of code, to a mid-tier one that spills more),
/// and an interleaved output's channel loop stores one dense vector per
/// group of pixels instead of one lane at a time.
#[test]
fn large_pipelines_become_functions_of_moderate_size() {
    for (file, threads) in [
        ("gaussian5x5.ag", false),
        ("unsharp_mask.ag", false),
        ("median3x3.ag", true),
        ("local_laplacian.ag", true),
        ("bilateral_grid.ag", false),
    ] {
        let path = format!("{}/../../examples/{file}", env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(&path).expect("the example exists");
        let pipeline = argent_lang::compile(&source).expect("the pipeline compiles");
        let lowered =
            argent_lower::lower::lower(&pipeline, &Default::default()).expect("it lowers");
        let options = CodegenOptions {
            simd: true,
            threads,
        };
        let compiled = compile(&lowered.module, &options).expect("it compiles");
        let sizes = function_sizes(&compiled.bytes);
        let largest = sizes.iter().max().copied().unwrap_or(0);
        assert!(
            sizes.len() > 4 && largest < 70_000,
            "{file}: functions of {sizes:?} bytes"
        );
    }
    // sepia's RGB channels: 16 pixels stored as three dense vectors (48
    // interleaved bytes), not as 48 lane stores.
    let wat = example_wat("sepia.ag");
    let lines: Vec<&str> = wat.lines().map(str::trim).collect();
    let interleaved = (0..lines.len()).any(|i| {
        lines[i] == "v128.store align=1"
            && lines[i + 1..(i + 8).min(lines.len())].contains(&"v128.store offset=16 align=1")
            && lines[i + 1..(i + 8).min(lines.len())].contains(&"v128.store offset=32 align=1")
    });
    assert!(interleaved, "{wat}");
}
