//! Differential test over random *programs*: random algorithms written in
//! the source language (one to three typed inputs of different sizes under
//! boundary conditions or, for gray images, ParaC border rules, one to
//! three stages of random arithmetic over stencil taps, casts, saturating
//! casts, selects, the widening and averaging shapes the SIMD peepholes
//! look for; inline reductions with `argmin`/`argmax` and rdom
//! predicates; `bool` stages that later stages select with; update
//! definitions: stencil reductions, scans, a histogram over a fixed or
//! the whole input's domain and its gathers; sometimes two or three
//! outputs that later stages read),
//! each under a random schedule, images with channels interleaved as the
//! runtime passes them or (each buffer in half of the seeds) planar or padded (RGB in
//! RGBX), go through the whole compiler
//! (parser, checker, lowering passes, backend) and run in Node with SIMD
//! and scalar code. Every output must equal the reference interpreter's
//! evaluation of the algorithm alone, bit for bit (any NaN equals any NaN:
//! WebAssembly leaves NaN payloads unspecified).
//!
//! Where `random_exprs.rs` feeds the backend expressions directly, this
//! test lets the front end and every lowering pass (simplification,
//! vectorization, CSE, hoisting) see them first. Longer explorations:
//! `ARGENT_RANDOM_PROGRAM_SEED=n ARGENT_RANDOM_PROGRAMS=N cargo test
//! --release -p argent-wasm --test random_programs`.

mod common;

use argent_interp::{Buffer, Value};
use argent_ir::{BufferRole, Type};
use argent_lower::random_schedule::{Rng, random_schedule};
use argent_wasm::{CodegenOptions, compile};
use common::*;

/// Element types of inputs and stages (8- to 32-bit, signed and not, f32).
const TYPES: [Type; 7] = Type::ALL_SCALAR;

/// The output region: odd sizes, so every split and vector has a tail.
const WIDTH: i64 = 37;
const HEIGHT: i64 = 11;

/// What a stage's expression may read: `(func, its type)`, and the
/// channel count when the funcs are `(x, y, c)`.
struct Sources {
    funcs: Vec<(String, Type)>,
    channels: Option<i64>,
    /// Whether the program declares `rdom r` (for inline reductions).
    rdom: bool,
    /// The program's ranged parameter `k`: its type and value.
    param: Option<(Type, f64)>,
    /// A 1-D func `h(i)` filled by a scatter (a histogram over 16 bins)
    /// and its type, once a stage has built it: later stages gather from
    /// it at data-dependent indices.
    histogram: Option<Type>,
    /// Stages of type `bool` (conditions computed once and read by later
    /// stages' selects).
    bools: Vec<String>,
}

struct Gen<'a> {
    rng: &'a mut Rng,
    sources: &'a Sources,
    /// What stands for `x` and `y` in the definition being written: the
    /// pure variables, or a scan's rdom variable in one of them.
    at: [&'static str; 2],
    /// Whether window operators and inline reductions may appear: not in
    /// a scan, whose rdom variable their own reduction cannot iterate
    /// with (E0303, as in Halide).
    reductions: bool,
}

impl Gen<'_> {
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        *self.rng.pick(items)
    }

    /// A literal of `ty`, written with a cast so that it has that type
    /// wherever it stands.
    fn literal(&mut self, ty: Type) -> String {
        if ty.is_float() {
            let v = (self.rng.below(4001) as f64 - 2000.0) / 8.0;
            return format!("f32({v:?})");
        }
        let v = match self.rng.below(4) {
            0 => self.pick(&[0i64, 1, 2, 3, 4, 7, 8, 15, 16, 100]),
            1 => ty.max_value() as i64 - self.rng.below(3) as i64,
            2 => ty.min_value() as i64 + self.rng.below(3) as i64,
            _ => {
                let span = (ty.max_value() - ty.min_value()) as u64 + 1;
                ty.min_value() as i64 + (self.rng.next_u64() % span) as i64
            }
        };
        format!("{ty}({v})")
    }

    /// `e` (of type `from`) as `to`: a plain or a saturating cast.
    fn convert(&mut self, e: String, from: Type, to: Type) -> String {
        if from == to {
            e
        } else if self.rng.below(3) == 0 {
            format!("sat_{to}({e})")
        } else {
            format!("{to}({e})")
        }
    }

    /// A read of a source func at a small offset, as `ty`.
    fn tap(&mut self, ty: Type) -> String {
        let k = self.rng.below(self.sources.funcs.len());
        let (name, from) = self.sources.funcs[k].clone();
        let offset = |d: i64, v: &str| match d {
            0 => v.to_string(),
            d if d > 0 => format!("{v}+{d}"),
            d => format!("{v}{d}"),
        };
        if k == 0 && self.at == ["x", "y"] && self.rng.below(8) == 0 {
            let read = self.guarded_far_read();
            return self.convert(read, from, ty);
        }
        let dx = self.rng.below(5) as i64 - 2;
        let dy = self.rng.below(3) as i64 - 1;
        let read = match self.sources.channels {
            None => format!(
                "{name}({}, {})",
                offset(dx, self.at[0]),
                offset(dy, self.at[1])
            ),
            // Mostly the same channel; sometimes a fixed one (what a
            // luma or an alpha pass-through reads).
            Some(channels) => {
                let c = if self.rng.below(4) == 0 {
                    self.rng.below(channels as usize).to_string()
                } else {
                    "c".to_string()
                };
                format!(
                    "{name}({}, {}, {c})",
                    offset(dx, self.at[0]),
                    offset(dy, self.at[1])
                )
            }
        };
        self.convert(read, from, ty)
    }

    /// A read of the input itself in an arm of a `select` whose condition
    /// keeps it to the first column or row, where it reads inside the
    /// input; in the other lanes its address is millions of elements
    /// away. Bounds inference narrows the input's region by the
    /// condition, so the input is only checked to cover the taken lanes'
    /// points, and vector code must not trap on the others (see
    /// `guard_speculative` in the backend). Or an arm that no point takes.
    fn guarded_far_read(&mut self) -> String {
        // A stage may be computed for channels past the input's.
        let (channel, clamped) = match self.sources.channels {
            Some(n) => (", c".to_string(), format!(", clamp(c, 0, {})", n - 1)),
            None => (String::new(), String::new()),
        };
        // The input covers x from 2 and y from -2 (see `check_random_programs`).
        match self.rng.below(3) {
            0 => format!(
                "select(x < 1, in(max(x, 0) * 1000003 + 2, clamp(y, 0, 3){clamped}), b(x, y{channel}))"
            ),
            1 => format!(
                "select(y < 1, in(clamp(x, 2, 5), max(y, 0) * 1000003{clamped}), b(x, y{channel}))"
            ),
            // No point takes this arm, so the input need not cover its
            // region, which bounds of `x * x` over an empty range of `x`
            // do not make empty.
            _ => format!("select(x < -1000, in(x * x, clamp(y, 0, 3){clamped}), b(x, y{channel}))"),
        }
    }

    fn leaf(&mut self, ty: Type) -> String {
        match self.rng.below(8) {
            0 | 1 => self.literal(ty),
            2 => {
                let v = if self.sources.channels.is_some() {
                    self.pick(&[self.at[0], self.at[1], "c"])
                } else {
                    self.pick(&self.at.clone())
                };
                self.convert(v.to_string(), Type::I32, ty)
            }
            3 if self.sources.param.is_some() => {
                let (param_ty, _) = self.sources.param.expect("checked");
                self.convert("k".to_string(), param_ty, ty)
            }
            4 if self.sources.histogram.is_some() => {
                // A gather: the bin is computed from data.
                let bin = self.tap(Type::I32);
                let index = if self.rng.below(2) == 0 {
                    format!("({bin} & 15)")
                } else {
                    format!("clamp({bin}, 0, 15)")
                };
                let from = self.sources.histogram.expect("checked");
                self.convert(format!("h({index})"), from, ty)
            }
            _ => self.tap(ty),
        }
    }

    fn boolean(&mut self, depth: u32) -> String {
        match self.rng.below(6) {
            0 if depth > 0 => {
                let op = self.pick(&["&&", "||"]);
                format!(
                    "({} {op} {})",
                    self.boolean(depth - 1),
                    self.boolean(depth - 1)
                )
            }
            1 if depth > 0 => format!("!({})", self.boolean(depth - 1)),
            // A condition on the parameter alone: its stage is unswitched.
            3 if self.sources.param.is_some() => {
                let (ty, _) = self.sources.param.expect("checked");
                let op = self.pick(&["<", "==", ">="]);
                format!("(k {op} {})", self.literal(ty))
            }
            2 if !self.sources.bools.is_empty() => {
                let k = self.rng.below(self.sources.bools.len());
                let name = self.sources.bools[k].clone();
                let dx = self.rng.below(3) as i64 - 1;
                let [x, y] = self.at;
                let channel = if self.sources.channels.is_some() {
                    ", c"
                } else {
                    ""
                };
                format!("{name}({x} + {dx}, {y}{channel})")
            }
            _ => {
                let ty = self.pick(&TYPES);
                let op = self.pick(&["<", "<=", "==", "!=", ">", ">="]);
                format!(
                    "({} {op} {})",
                    self.expr(ty, depth.saturating_sub(1)),
                    self.expr(ty, depth.saturating_sub(1))
                )
            }
        }
    }

    /// A random expression of type `ty`.
    fn expr(&mut self, ty: Type, depth: u32) -> String {
        if depth == 0 || self.rng.below(5) == 0 {
            return self.leaf(ty);
        }
        let d = depth - 1;
        let float = ty.is_float();
        match self.rng.below(14) {
            0..=2 => {
                let ops: &[&str] = if float {
                    &["+", "-", "*", "/"]
                } else {
                    &["+", "-", "*", "/", "%", "&", "|", "^"]
                };
                let op = self.pick(ops);
                let a = self.expr(ty, d);
                // Divisors: mostly constants (the magic-number and shift
                // paths), sometimes expressions (zero included).
                let b = if matches!(op, "/" | "%") && self.rng.below(3) > 0 {
                    self.literal(ty)
                } else {
                    self.expr(ty, d)
                };
                format!("({a} {op} {b})")
            }
            3 if !float => {
                let op = self.pick(&["<<", ">>"]);
                let amount = self.rng.below(ty.bits as usize);
                format!("({} {op} {ty}({amount}))", self.expr(ty, d))
            }
            4 => {
                let f = self.pick(&["min", "max"]);
                format!("{f}({}, {})", self.expr(ty, d), self.expr(ty, d))
            }
            5 => {
                let (lo, hi) = (self.literal(ty), self.literal(ty));
                format!("clamp({}, {lo}, {hi})", self.expr(ty, d))
            }
            6 => format!(
                "select({}, {}, {})",
                self.boolean(d),
                self.expr(ty, d),
                self.expr(ty, d)
            ),
            7 => {
                let from = self.pick(&TYPES);
                let e = self.expr(from, d);
                self.convert(e, from, ty)
            }
            8 => {
                // abs and absd give unsigned integers: cast back.
                let e = if self.rng.below(2) == 0 {
                    format!("abs({})", self.expr(ty, d))
                } else {
                    format!("absd({}, {})", self.expr(ty, d), self.expr(ty, d))
                };
                if float || ty.is_uint() {
                    e
                } else {
                    format!("{ty}({e})")
                }
            }
            9 if float => {
                let f = self.pick(&["floor", "ceil", "round", "trunc", "sqrt"]);
                format!("{f}({})", self.expr(ty, d))
            }
            12 if self.reductions => self.window(ty),
            13 if self.reductions && self.sources.rdom => self.reduction(ty),
            _ => self.widening(ty, d),
        }
    }

    /// A window operator over a source func (ParaC): `sum`, `mean`,
    /// `min`, `max` or `convolve` of a rectangle of up to 3x3 points.
    fn window(&mut self, ty: Type) -> String {
        let k = self.rng.below(self.sources.funcs.len());
        let (name, from) = self.sources.funcs[k].clone();
        let (w, h) = (1 + self.rng.below(3), 1 + self.rng.below(3));
        let (x0, y0) = (self.rng.below(3) as i64 - 2, self.rng.below(3) as i64 - 1);
        let channel = if self.sources.channels.is_some() {
            ", c"
        } else {
            ""
        };
        let [x, y] = self.at;
        let view = format!("{name}[{x} + {x0} : {w}, {y} + {y0} : {h}{channel}]");
        // `sum` and integer `convolve` widen (u32 stays u32), the others
        // keep the element type.
        let widened = match from {
            Type::U32 | Type::F32 => from,
            _ => Type::I32,
        };
        let (e, result) = match self.rng.below(5) {
            0 => (format!("sum({view})"), widened),
            1 => (format!("mean({view})"), from),
            2 => (format!("min({view})"), from),
            3 => (format!("max({view})"), from),
            _ => {
                let rows: Vec<String> = (0..h)
                    .map(|_| {
                        let row: Vec<String> = (0..w)
                            .map(|_| (self.rng.below(8) as i64 - 3).to_string())
                            .collect();
                        row.join(", ")
                    })
                    .collect();
                (format!("convolve({view}, [{}])", rows.join("; ")), widened)
            }
        };
        self.convert(e, result, ty)
    }

    /// An inline reduction over the program's 3x2 rdom `r`, in integers
    /// (a random schedule may `rfactor` it, which reassociates).
    fn reduction(&mut self, ty: Type) -> String {
        let k = self.rng.below(self.sources.funcs.len());
        let (name, from) = self.sources.funcs[k].clone();
        let element = *self.rng.pick(&[Type::U8, Type::I16, Type::I32, Type::U32]);
        let channel = if self.sources.channels.is_some() {
            ", c"
        } else {
            ""
        };
        let [x, y] = self.at;
        let tap = format!("{name}({x} + r.x, {y} + r.y{channel})");
        let tap = self.convert(tap, from, element);
        let op = *self
            .rng
            .pick(&["sum", "minimum", "maximum", "product", "argmin", "argmax"]);
        if op.starts_with("arg") {
            // The coordinate of the first extreme point.
            let which = self.pick(&["x", "y"]);
            return self.convert(format!("{op}({tap}).{which}"), Type::I32, ty);
        }
        self.convert(format!("{op}({tap})"), element, ty)
    }

    /// The shapes of the SIMD peepholes, computed in a wider type and
    /// brought back to `ty`: widening products and sums, rounding
    /// averages, saturating sums and differences, Q15 products, dot
    /// products of 16-bit pairs.
    fn widening(&mut self, ty: Type, d: u32) -> String {
        let narrow = self.pick(&[Type::U8, Type::I8, Type::U16, Type::I16]);
        let wide = match (narrow.bits, narrow.is_int()) {
            (8, false) => self.pick(&[Type::U16, Type::I16, Type::U32, Type::I32]),
            (8, true) => self.pick(&[Type::I16, Type::I32]),
            (_, false) => self.pick(&[Type::U32, Type::I32]),
            _ => Type::I32,
        };
        let operand = |g: &mut Self| {
            let e = g.expr(narrow, d);
            format!("{wide}({e})")
        };
        let (a, b) = (operand(self), operand(self));
        let e = match self.rng.below(6) {
            0 => format!("({a} * {b})"),
            1 => format!("(({a} + {b} + {wide}(1)) >> {wide}(1))"),
            2 => format!("sat_{narrow}({a} + {b})"),
            3 => format!("sat_{narrow}({a} - {b})"),
            4 if narrow == Type::I16 => format!("sat_i16(({a} * {b} + i32(16384)) >> i32(15))"),
            4 | 5 if narrow.bits == 16 && wide == Type::I32 => {
                let (c, e) = (operand(self), operand(self));
                format!("({a} * {b} + {c} * {e})")
            }
            _ => format!("({a} + {b})"),
        };
        let from = if e.starts_with("sat_") { narrow } else { wide };
        self.convert(e, from, ty)
    }
}

/// A random program and the types of its outputs (the inputs' types are
/// the compiled pipeline's).
struct Program {
    source: String,
    /// The output funcs' types, in the order of the `output` line.
    outputs: Vec<Type>,
    /// `Some(n)`: the input and every func are `(x, y, c)` with `n`
    /// channels, stored interleaved (`c` innermost, as canvas RGBA).
    channels: Option<i64>,
    /// The border block of a program with ParaC border rules, and the
    /// boundary condition line that replaces it when the program reads
    /// farther out than the rules' width.
    border: Option<(String, String)>,
}

fn random_program(rng: &mut Rng) -> Program {
    let input = *rng.pick(&TYPES);
    let boundary = *rng.pick(&[
        "repeat_edge(in)",
        "constant_exterior(in, 3)",
        "mirror_image(in)",
        "mirror_interior(in)",
        "repeat_image(in)",
    ]);
    let channels = (rng.below(3) == 0).then(|| *rng.pick(&[3, 4]));
    let args = if channels.is_some() {
        "x, y, c"
    } else {
        "x, y"
    };
    // Gray programs sometimes replace the boundary condition with ParaC
    // border rules (`check_random_programs` falls back to the boundary
    // condition when the program reads farther out than the rules' width).
    let border = channels.is_none().then(|| random_border(rng)).flatten();
    let mut source = format!("input {input} in({args})\n");
    match &border {
        Some(rules) => source.push_str(rules),
        None => source.push_str(&format!("b = {boundary}\n")),
    }
    let fallback = format!("b = {boundary}\n");
    // Sometimes a second input (a mask, a second image) of another type
    // and size, under its own boundary condition, and then sometimes a
    // third.
    let mut more_inputs = Vec::new();
    if rng.below(4) == 0 {
        for (name, func) in [("m", "b2"), ("m2", "b3")] {
            let ty = *rng.pick(&TYPES);
            let condition = *rng.pick(&["repeat_edge", "mirror_interior", "repeat_image"]);
            source.push_str(&format!(
                "input {ty} {name}({args})\n{func} = {condition}({name})\n"
            ));
            more_inputs.push((func.to_string(), ty));
            if rng.below(3) != 0 {
                break;
            }
        }
    }
    let rdom = rng.below(3) == 0;
    if rdom {
        // Sometimes with a predicate: reductions skip some points.
        let predicate = *rng.pick(&["", "", " where r.x != r.y", " where r.x + r.y < 1"]);
        source.push_str(&format!("rdom r = [-1 .. 2, 0 .. 2]{predicate}\n"));
    }
    // A ranged parameter: the compiler relies on the range (bounds, and
    // float-to-int conversions without saturation checks).
    let param = (rng.below(3) == 0).then(|| {
        let ty = *rng.pick(&[Type::I32, Type::F32, Type::U8, Type::I16]);
        let (lo, hi, value) = if ty.is_float() {
            let value = (rng.below(2401) as f64 - 200.0) / 8.0;
            (-25.0, 275.0, value)
        } else {
            let (lo, hi) = if ty == Type::U8 {
                (0, 200)
            } else {
                (-300, 300)
            };
            (
                lo as f64,
                hi as f64,
                (lo + rng.below((hi - lo + 1) as usize) as i64) as f64,
            )
        };
        let declaration = if ty.is_float() {
            format!("param {ty} k = {value:?} in {lo:?} .. {hi:?}\n")
        } else {
            format!(
                "param {ty} k = {} in {} .. {}\n",
                value as i64, lo as i64, hi as i64
            )
        };
        source.push_str(&declaration);
        (ty, value)
    });
    // Update definitions: 1-D stencil rdoms `u` and `v` (with a hole), a
    // scan rdom `s`, and the rdoms a histogram scatters over: 9x5 points,
    // or the input's whole extent.
    let updates = rng.below(3) == 0;
    if updates {
        source.push_str(
            "rdom u = [-1 .. 2]\nrdom v = [-2 .. 3] where v != 0\nrdom s = [1 .. 9]\n\
             rdom rh = [0 .. 9, 0 .. 5]\nrdom rw = [0 .. in.width, 0 .. in.height]\n",
        );
    }
    let mut funcs = vec![("b".to_string(), input)];
    funcs.extend(more_inputs);
    let mut sources = Sources {
        funcs,
        channels,
        rdom,
        param,
        histogram: None,
        bools: Vec::new(),
    };
    let stages = 1 + rng.below(4);
    let mut types = Vec::new();
    for k in 0..stages {
        // Sometimes a condition, for the later stages to select with.
        if k + 1 < stages && rng.below(5) == 0 {
            let body = Gen {
                rng,
                sources: &sources,
                at: ["x", "y"],
                reductions: true,
            }
            .boolean(3);
            source.push_str(&format!("f{k}({args}) = {body}\n"));
            sources.bools.push(format!("f{k}"));
            types.push(Type::BOOL);
            continue;
        }
        let ty = *rng.pick(&TYPES);
        let body = Gen {
            rng,
            sources: &sources,
            at: ["x", "y"],
            reductions: true,
        }
        .expr(ty, 4);
        // Every stage's value has type `ty`, even a bare literal's.
        source.push_str(&format!("f{k}({args}) = {ty}({body})\n"));
        if updates && rng.below(2) == 0 {
            let update = random_update(rng, &sources, &format!("f{k}"), ty);
            source.push_str(&update);
        }
        sources.funcs.push((format!("f{k}"), ty));
        types.push(ty);
        // A histogram of this stage (or of the input) for the stages
        // after it to gather from.
        if updates && sources.histogram.is_none() && k + 1 < stages && rng.below(2) == 0 {
            let (ty, histogram) = random_histogram(rng, &sources);
            source.push_str(&histogram);
            sources.histogram = Some(ty);
        }
    }
    // Sometimes earlier stages are outputs too (computed once, stored in
    // their own buffers as well as read by the stages after them).
    let mut outputs = vec![stages - 1];
    for _ in 0..2 {
        let k = rng.below(stages);
        if rng.below(3) == 0 && types[k] != Type::BOOL && !outputs.contains(&k) {
            outputs.push(k);
        }
    }
    let names: Vec<String> = outputs.iter().map(|k| format!("f{k}")).collect();
    source.push_str(&format!("output {}\n", names.join(", ")));
    Program {
        source,
        outputs: outputs.iter().map(|&k| types[k]).collect(),
        channels,
        border: border.map(|rules| (rules, fallback)),
    }
}

/// ParaC border rules `b` over the gray input `in`, one time in four (the
/// rules take the input's type; literals adapt to it): a random width of 1 to 3 pixels per dimension, a rule
/// for every side pixel and every corner, each a random value read from
/// the image's first or last rows and columns (or a literal).
fn random_border(rng: &mut Rng) -> Option<String> {
    if rng.below(4) != 0 {
        return None;
    }
    let (wx, wy) = (1 + rng.below(3) as i64, 1 + rng.below(3) as i64);
    // A read `j` pixels into the image from its first (`+` false) or last
    // edge along `dim`, with `*` for the other coordinate.
    let read = |rng: &mut Rng, dim: usize, far: bool| {
        let j = rng.below(3);
        let extent = ["in.width", "in.height"][dim];
        let at = if far {
            format!("{extent} - {}", j + 1)
        } else {
            j.to_string()
        };
        if dim == 0 {
            format!("in({at}, *)")
        } else {
            format!("in(*, {at})")
        }
    };
    let value = |rng: &mut Rng, dim: usize, far: bool| match rng.below(5) {
        0 => format!("{}", rng.below(7)),
        1 => format!("{} + {}", read(rng, dim, far), read(rng, dim, far)),
        2 => format!("{} - {}", read(rng, dim, far), read(rng, dim, far)),
        _ => read(rng, dim, far),
    };
    let mut rules = format!("border b = in width ({wx}, {wy}) {{\n");
    for k in 1..=wx {
        for far in [false, true] {
            let side = if far { "+" } else { "-" };
            rules.push_str(&format!("  ({side}{k}, *) = {}\n", value(rng, 0, far)));
        }
    }
    for k in 1..=wy {
        for far in [false, true] {
            let side = if far { "+" } else { "-" };
            rules.push_str(&format!("  (*, {side}{k}) = {}\n", value(rng, 1, far)));
        }
    }
    for i in 1..=wx {
        for j in 1..=wy {
            for (sx, sy) in [("-", "-"), ("-", "+"), ("+", "-"), ("+", "+")] {
                let corner = match rng.below(3) {
                    0 => format!("{}", rng.below(9)),
                    _ => {
                        let x = if sx == "+" { "in.width - 1" } else { "0" };
                        let y = if sy == "+" { "in.height - 1" } else { "0" };
                        format!("in({x}, {y})")
                    }
                };
                rules.push_str(&format!("  ({sx}{i}, {sy}{j}) = {corner}\n"));
            }
        }
    }
    rules.push_str("}\n");
    Some(rules)
}

/// An update definition of the stage `f` (of type `ty`): a reduction
/// over the stencil rdom `u` at every pure point (`+= - * min max`), or a
/// scan along `x` or `y` over the rdom `s` that reads the previous step.
fn random_update(rng: &mut Rng, sources: &Sources, f: &str, ty: Type) -> String {
    let channel = if sources.channels.is_some() {
        ", c"
    } else {
        ""
    };
    let k = rng.below(sources.funcs.len());
    let (name, from) = sources.funcs[k].clone();
    let mut g = Gen {
        rng,
        sources,
        at: ["x", "y"],
        reductions: true,
    };
    match g.rng.below(3) {
        0 => {
            let rdom = g.pick(&["u", "v"]);
            let tap = format!("{name}(x + {rdom}, y{channel})");
            let tap = g.convert(tap, from, ty);
            let value = if g.rng.below(2) == 0 {
                tap
            } else {
                let e = g.expr(ty, 2);
                format!("({tap} + {e})")
            };
            // Floats reduce only where the order is kept: `rfactor`
            // accepts min and max, whose result does not depend on it.
            let op = if ty.is_float() {
                g.pick(&["+=", "-=", "min=", "max="])
            } else {
                g.pick(&["+=", "-=", "*=", "min=", "max="])
            };
            format!("{f}(x, y{channel}) {op} {value}\n")
        }
        along => {
            g.reductions = false;
            let (at, previous) = if along == 1 {
                g.at = ["s", "y"];
                ("s, y", "s - 1, y")
            } else {
                g.at = ["x", "s"];
                ("x, s", "x, s - 1")
            };
            let e = g.expr(ty, 2);
            let op = g.pick(&["+", "max", "avg"]);
            let value = match op {
                "+" => format!("{f}({previous}{channel}) + {e}"),
                "max" => format!("max({f}({previous}{channel}), {e})"),
                _ if ty.is_float() => {
                    format!("({f}({previous}{channel}) + {f}({at}{channel})) / f32(2)")
                }
                _ => format!("{ty}(({f}({previous}{channel}) + {f}({at}{channel})) >> {ty}(1))"),
            };
            format!("{f}({at}{channel}) = {value}\n")
        }
    }
}

/// A histogram of a source func over the 9x5 rdom `rh`: `h(i)` of a
/// random type, 16 bins chosen by the data, counted or summed.
fn random_histogram(rng: &mut Rng, sources: &Sources) -> (Type, String) {
    let ty = *rng.pick(&[Type::U32, Type::I32, Type::U16, Type::F32]);
    let k = rng.below(sources.funcs.len());
    let (name, from) = sources.funcs[k].clone();
    let channel = if sources.channels.is_some() {
        ", 0"
    } else {
        ""
    };
    let rdom = *rng.pick(&["rh", "rh", "rw"]);
    let read = format!("{name}({rdom}.x, {rdom}.y{channel})");
    let mut g = Gen {
        rng,
        sources,
        at: ["x", "y"],
        reductions: true,
    };
    // The bin: the low bits, or the value clamped (most land at an end).
    let bin = if g.rng.below(2) == 0 {
        format!("(i32({read}) & 15)")
    } else {
        format!("clamp(i32({read}), 0, 15)")
    };
    let (op, value) = match g.rng.below(3) {
        0 => ("+=", format!("{ty}(1)")),
        1 => ("+=", g.convert(read.clone(), from, ty)),
        _ => ("max=", g.convert(read.clone(), from, ty)),
    };
    (ty, format!("h(i) = {ty}(0)\nh({bin}) {op} {value}\n"))
}

/// A random input image of `ty` over `extents`: whole-range integers
/// (sums wrap), finite floats of moderate size with some specials.
fn input_image(ty: Type, extents: &[i64], rng: &mut Rng) -> Buffer {
    // Three dimensions are interleaved channels.
    let mut b = if extents.len() == 3 {
        Buffer::interleaved(ty, extents)
    } else {
        Buffer::new(ty, extents)
    };
    b.fill(|_| {
        let r = rng.next_u64();
        if ty.is_float() {
            Value::Float(match r % 23 {
                0 => -0.0,
                1 => 0.5,
                _ => ((r >> 8) % 65536) as f32 / 64.0 - 512.0,
            })
        } else {
            let span = (ty.max_value() - ty.min_value()) as u64 + 1;
            Value::Int(ty.min_value() as i64 + ((r >> 8) % span) as i64)
        }
    });
    b
}

fn same_bits(ty: Type, got: &[u8], want: &[u8]) -> bool {
    if !ty.is_float() {
        return got == want;
    }
    got.len() == want.len()
        && got.chunks(4).zip(want.chunks(4)).all(|(g, w)| {
            let g = f32::from_le_bytes(g.try_into().unwrap());
            let w = f32::from_le_bytes(w.try_into().unwrap());
            (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits()
        })
}

/// How a buffer with channels is laid out in memory: the runtime passes
/// interleaved pixels (`stride.0` is the channel count), but a descriptor
/// may give any strides, and the module must read every layout alike.
/// Where the layouts of outputs start among [`buffer_layout`]'s buffers.
const OUTPUT_LAYOUTS: usize = 8;

#[derive(Clone, Copy, Debug)]
enum Layout {
    Interleaved,
    /// One plane per channel (`stride.0 == 1`).
    Planar,
    /// Interleaved with one unused element after each pixel (RGB in RGBX):
    /// `stride.0` is one more than the channel count, so the copies of the
    /// code for interleaved RGB and RGBA must not run.
    Padded,
}

/// The layout of input `k` (output `k` is buffer `OUTPUT_LAYOUTS + k`) of
/// program `seed`: interleaved in half of the programs, planar or padded
/// in a quarter each (from the seed alone, so the programs and schedules
/// of a seed do not change).
fn buffer_layout(seed: u64, k: usize) -> Layout {
    match seed
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(k as u64)
        >> 62
    {
        0 => Layout::Planar,
        1 => Layout::Padded,
        _ => Layout::Interleaved,
    }
}

/// The layout of output `name` of program `seed`.
fn output_layout(pipeline: &argent_ir::Pipeline, seed: u64, name: &str) -> Layout {
    let k = pipeline
        .outputs
        .iter()
        .position(|o| o == name)
        .expect("an output of the pipeline");
    buffer_layout(seed, OUTPUT_LAYOUTS + k)
}

/// A buffer's interleaved bytes (`bytes`, of elements `elem` bytes wide)
/// as a buffer argument in `layout` (elements no pixel covers hold 0xa5).
fn layout_arg(bytes: &[u8], elem: usize, mins: &[i64], extents: &[i64], layout: Layout) -> BufData {
    if extents.len() != 3 || matches!(layout, Layout::Interleaved) {
        return buffer_arg(bytes.to_vec(), mins, extents);
    }
    let (w, h, c) = (
        extents[0] as usize,
        extents[1] as usize,
        extents[2] as usize,
    );
    // Element strides of x, y and c.
    let (sx, sy, sc) = match layout {
        Layout::Planar => (1, w, w * h),
        _ => (c + 1, w * (c + 1), 1),
    };
    let mut out = vec![0xa5u8; (w * h * c.max(sx)).max(sc * c) * elem];
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                let from = ((y * w + x) * c + ch) * elem;
                let to = (x * sx + y * sy + ch * sc) * elem;
                out[to..to + elem].copy_from_slice(&bytes[from..from + elem]);
            }
        }
    }
    BufData {
        bytes: out,
        dims: vec![
            (mins[0] as i32, w as i32, sx as i32),
            (mins[1] as i32, h as i32, sy as i32),
            (0, c as i32, sc as i32),
        ],
    }
}

/// A buffer argument for the module over `[min, min + extent)` per
/// dimension: dense rows, or interleaved channels for three dimensions.
fn buffer_arg(bytes: Vec<u8>, mins: &[i64], extents: &[i64]) -> BufData {
    let (w, h) = (extents[0] as i32, extents[1] as i32);
    let dims = match extents.get(2) {
        None => vec![(mins[0] as i32, w, 1), (mins[1] as i32, h, w)],
        Some(&channels) => {
            let c = channels as i32;
            vec![
                (mins[0] as i32, w, c),
                (mins[1] as i32, h, w * c),
                (0, c, 1),
            ]
        }
    };
    BufData { bytes, dims }
}

struct Case {
    program: Program,
    schedule: String,
    /// Each compiled module, its options and what it is.
    modules: Vec<(argent_wasm::CompiledModule, CodegenOptions, &'static str)>,
    buffers: Vec<BufData>,
    /// The module's parameters (their defaults), as argument words.
    params: Vec<u32>,
    /// Per output: the module's buffer index, the element type, and the
    /// interpreter's bytes.
    want: Vec<(usize, Type, Vec<u8>)>,
}

#[test]
fn random_programs_match_the_interpreter() {
    // The compiler runs with the stack it has in the page (8 MiB, see
    // crates/argent-web/build.rs) and in the `argent` command, not a test
    // thread's 2 MiB: random programs inline into expressions hundreds of
    // nodes deep.
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(check_random_programs)
        .expect("a thread starts")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

fn check_random_programs() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let first = env("ARGENT_RANDOM_PROGRAM_SEED", 1);
    let count = env("ARGENT_RANDOM_PROGRAMS", 150);
    let mut cases = Vec::new();
    let mut refused = 0;
    let mut bordered = 0;
    for seed in first..first + count {
        let mut rng = Rng::new(seed);
        let mut program = random_program(&mut rng);
        // A program of one's own (with its schedule), on the seed's input:
        // how a failure is narrowed down.
        let own = std::env::var("ARGENT_PROGRAM_FILE").ok();
        if let Some(path) = &own {
            program.source =
                std::fs::read_to_string(path).expect("ARGENT_PROGRAM_FILE is readable");
        }
        // Border rules that the program reads beyond (E0503) give way to
        // the boundary condition.
        if let Some((rules, fallback)) = &program.border
            && let Err(e) = argent_lang::compile(&program.source)
            && e.0.iter().any(|d| d.code == "E0503")
        {
            program.source = program.source.replacen(rules.as_str(), fallback, 1);
            program.border = None;
        }
        if program.border.is_some() {
            bordered += 1;
        }
        let mut pipeline = argent_lang::compile(&program.source).unwrap_or_else(|e| {
            panic!(
                "seed {seed}: the program does not compile:\n{}\n{e:?}",
                program.source
            )
        });
        if own.is_some() {
            program.channels = (pipeline.inputs[0].dims.len() == 3).then_some(3);
        }
        program.outputs = pipeline
            .outputs
            .iter()
            .map(|name| {
                pipeline
                    .funcs
                    .iter()
                    .find(|f| f.name == *name)
                    .map(|f| f.ty)
                    .expect("an output is a func")
            })
            .collect();
        // Half the seeds vectorise the output by hand at a width of 4 to
        // 32 lanes; the others take a random schedule.
        let directives = if own.is_some() {
            pipeline.schedule.directives.clone()
        } else if seed % 2 == 0 {
            let lanes = *rng.pick(&[4, 8, 16, 32]);
            let out = pipeline.outputs[0].clone();
            // Interleaved channels: either a vector per channel (strided
            // loads and stores), or all channels unrolled inside the
            // vector loop (shuffles into dense interleaved stores).
            let directive = match program.channels {
                Some(channels) if rng.below(2) == 0 => format!(
                    "{out}.bound(c, 0, {channels}).reorder(c, x, y).unroll(c).vectorize(x, {lanes})"
                ),
                _ => format!("{out}.vectorize(x, {lanes})"),
            };
            let text = format!("{}\nschedule {{\n  {directive}\n}}\n", program.source);
            argent_lang::compile(&text)
                .expect("a vectorised output compiles")
                .schedule
                .directives
        } else {
            random_schedule(&pipeline, seed)
        };
        pipeline.schedule.directives = directives;
        let schedule: Vec<String> = pipeline
            .schedule
            .directives
            .iter()
            .map(argent_lower::error::directive_text)
            .collect();
        let schedule = schedule.join("\n");
        if std::env::var_os("ARGENT_PRINT_PROGRAMS").is_some() {
            eprintln!("seed {seed}:\n{}schedule:\n{schedule}\n", program.source);
        }
        let lowered = match argent_lower::lower::lower(&pipeline, &Default::default()) {
            Ok(lowered) => lowered,
            // A random schedule may store a func where its region has no
            // bound (the error asks for a `bound()` directive): a user
            // error, refused with a message, as it should be.
            Err(argent_lower::error::LowerError::Algorithm(_)) => {
                refused += 1;
                continue;
            }
            Err(e) => panic!(
                "seed {seed}: does not lower:\n{}\n{schedule}\n{e}",
                program.source
            ),
        };
        if std::env::var_os("ARGENT_PRINT_LOWERED").is_some() {
            eprintln!("seed {seed} lowered:\n{}", lowered.loop_nest);
        }
        // Each input is smaller than the output on one side and larger on
        // the other, so the boundary condition has work on every edge; a
        // second input covers another region.
        let channels: Vec<i64> = program.channels.into_iter().collect();
        let inputs: Vec<(String, Buffer, Vec<i64>, Vec<i64>)> = pipeline
            .inputs
            .iter()
            .enumerate()
            .map(|(k, i)| {
                let (extents, mins) = match k {
                    0 => ([WIDTH - 5, HEIGHT + 3], [2, -2, 0]),
                    1 => ([WIDTH + 2, HEIGHT - 4], [-3, 1, 0]),
                    _ => ([WIDTH - 2, HEIGHT + 1], [1, 0, 0]),
                };
                let extents = [&extents[..], &channels].concat();
                let mins = mins[..extents.len()].to_vec();
                let image = input_image(i.ty.element(), &extents, &mut rng).with_min(&mins);
                (i.name.clone(), image, mins, extents)
            })
            .collect();
        let output_extents = [&[WIDTH, HEIGHT][..], &channels].concat();
        let region: Vec<(i64, i64)> = output_extents.iter().map(|&e| (0, e)).collect();
        let named: Vec<(&str, &Buffer)> =
            inputs.iter().map(|(n, b, _, _)| (n.as_str(), b)).collect();
        let expected =
            argent_interp::realize(&pipeline, &named, &[], &region).unwrap_or_else(|e| {
                panic!(
                    "seed {seed}: the interpreter fails: {e:?}\n{}",
                    program.source
                )
            });
        let buffers: Vec<BufData> = lowered
            .module
            .buffers
            .iter()
            .map(|b| match b.role {
                BufferRole::Input => {
                    let k = inputs
                        .iter()
                        .position(|(n, ..)| *n == b.name)
                        .expect("an image per input");
                    let (_, image, mins, extents) = &inputs[k];
                    layout_arg(
                        image.bytes(),
                        b.ty.bytes(),
                        mins,
                        extents,
                        buffer_layout(seed, k),
                    )
                }
                _ => {
                    let elements: i64 = output_extents.iter().product();
                    layout_arg(
                        &vec![0; elements as usize * b.ty.bytes()],
                        b.ty.bytes(),
                        &[0, 0, 0],
                        &output_extents,
                        output_layout(&pipeline, seed, &b.name),
                    )
                }
            })
            .collect();
        // The interpreter's outputs (dense, `x` innermost) in the layout
        // the module writes, and the module's buffer for each.
        let want: Vec<(usize, Type, Vec<u8>)> = program
            .outputs
            .iter()
            .enumerate()
            .map(|(k, &ty)| {
                let mut want = if channels.is_empty() {
                    Buffer::new(ty, &output_extents)
                } else {
                    Buffer::interleaved(ty, &output_extents)
                };
                want.fill(|at| {
                    expected[k]
                        .get(at)
                        .expect("the interpreter covers the region")
                });
                let buffer = lowered
                    .module
                    .buffers
                    .iter()
                    .position(|b| b.role == BufferRole::Output && b.name == pipeline.outputs[k])
                    .expect("a buffer per output");
                let layout = output_layout(&pipeline, seed, &pipeline.outputs[k]);
                let want = layout_arg(
                    want.bytes(),
                    ty.bytes(),
                    &[0, 0, 0],
                    &output_extents,
                    layout,
                );
                (buffer, ty, want.bytes)
            })
            .collect();
        // Every parameter runs with its default, as in the interpreter.
        let params: Vec<u32> = lowered
            .module
            .params
            .iter()
            .map(|m| {
                let p = pipeline
                    .params
                    .iter()
                    .find(|p| p.name == m.name)
                    .expect("a declared parameter");
                let value = p.default.expect("random parameters have defaults");
                if p.ty.is_float() {
                    (value as f32).to_bits()
                } else {
                    value as i64 as i32 as u32
                }
            })
            .collect();
        // The module for engines without SIMD128, as the page compiles it:
        // vectorised loops lowered as serial loops.
        let scalar_target = argent_lower::lower::lower(
            &pipeline,
            &argent_lower::LowerOptions {
                scalar_target: true,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| {
            panic!(
                "seed {seed}: lowers with SIMD but not for a scalar target:\n{}\n{schedule}\n{e}",
                program.source
            )
        });
        let mut modules = Vec::new();
        // SIMD code and the same vector code computed lane by lane (the
        // backend's fallback for vector shapes it has no SIMD lowering for)
        // on one thread; SIMD code on shared memory with two workers
        // (random schedules have parallel loops); the scalar target's code.
        // The last two have every loop in a function of its own (the
        // backend outlines only large loops of large functions).
        let mut too_large = false;
        for (module, simd, threads, outline, label) in [
            (&lowered.module, true, false, false, "SIMD"),
            (
                &lowered.module,
                false,
                false,
                false,
                "vector code lane by lane",
            ),
            (
                &lowered.module,
                true,
                true,
                true,
                "SIMD, 2 threads, loops outlined",
            ),
            (
                &scalar_target.module,
                false,
                false,
                true,
                "scalar target, loops outlined",
            ),
        ] {
            let options = CodegenOptions { simd, threads };
            let compiled = if outline {
                argent_wasm::compile_outlining_every_loop(module, &options)
            } else {
                compile(module, &options)
            };
            let compiled = match compiled {
                Ok(compiled) => compiled,
                // Code larger than engines accept (a wide vector of a
                // large body, computed lane by lane): refused with a
                // message.
                Err(e) if e.is_user_error() => {
                    too_large = true;
                    break;
                }
                Err(e) => panic!(
                    "seed {seed}: the backend fails ({label}): {e:?}\n{}\n{schedule}",
                    program.source
                ),
            };
            wasmparser::validate(&compiled.bytes).expect("a valid module");
            modules.push((compiled, options, label));
        }
        if too_large {
            refused += 1;
            continue;
        }
        cases.push((
            seed,
            Case {
                program,
                schedule,
                modules,
                buffers,
                want,
                params,
            },
        ));
    }
    let jobs: Vec<Job> = cases
        .iter()
        .flat_map(|(_, c)| {
            c.modules.iter().map(|(m, options, _)| Job {
                compiled: m,
                buffers: &c.buffers,
                params: &c.params,
                threads: if options.threads { 2 } else { 0 },
                runs: 1,
                query: false,
            })
        })
        .collect();
    let outputs = run_node_batch(&jobs);
    let mut outputs = outputs.into_iter();
    let mut failures = Vec::new();
    for (seed, case) in &cases {
        for (compiled, _, label) in &case.modules {
            let out = outputs.next().expect("one output per job");
            let verdict = if out.status != 0 {
                let message = usize::try_from(out.status - 1)
                    .ok()
                    .and_then(|k| compiled.abi.asserts.get(k))
                    .map(|info| {
                        info.kind
                            .message(&out.error_args.iter().map(|&a| a as i64).collect::<Vec<_>>())
                    })
                    .unwrap_or_default();
                Some(format!("status {}: {message}", out.status))
            } else {
                case.want.iter().find_map(|(buffer, ty, want)| {
                    let got = &out.buffers[*buffer];
                    if same_bits(*ty, got, want) {
                        return None;
                    }
                    let elem = ty.bytes();
                    let at = got
                        .chunks(elem)
                        .zip(want.chunks(elem))
                        .position(|(g, w)| !same_bits(*ty, g, w))
                        .unwrap_or(0);
                    let channels = case.program.channels.unwrap_or(1);
                    let pixel = at as i64 / channels;
                    Some(format!(
                        "output {} differs at x={}, y={}, c={}: got {:?}, want {:?}",
                        compiled.abi.buffers[*buffer].name,
                        pixel % WIDTH,
                        pixel / WIDTH,
                        at as i64 % channels,
                        &got[at * elem..(at + 1) * elem],
                        &want[at * elem..(at + 1) * elem]
                    ))
                })
            };
            if let Some(why) = verdict {
                let layouts: Vec<String> = case
                    .buffers
                    .iter()
                    .map(|b| format!("{:?}", b.dims.iter().map(|d| d.2).collect::<Vec<_>>()))
                    .collect();
                failures.push(format!(
                    "seed {seed} ({label}, buffer strides {}): {why}\n{}schedule:\n{}\n",
                    layouts.join(" "),
                    case.program.source,
                    case.schedule
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        refused * 10 <= count,
        "{refused} of {count} programs were refused: the check checks too little"
    );
    // About one program in twelve is gray with border rules; most of them
    // read within the rules' width.
    assert!(
        count < 100 || bordered * 40 >= count,
        "only {bordered} of {count} programs kept their border rules"
    );
}
