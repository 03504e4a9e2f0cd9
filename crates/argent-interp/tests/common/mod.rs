//! Pipelines built with the IR constructors, shared by the tests and the
//! benchmark (the text front end is a separate crate).
#![allow(dead_code)]

use argent_interp::{Buffer, Options, Value, realize_with};
use argent_ir::*;
use std::time::Instant;

pub fn var(name: &str) -> Expr {
    Expr::var_i32(name)
}

pub fn x() -> Expr {
    var("x")
}

pub fn y() -> Expr {
    var("y")
}

pub fn c() -> Expr {
    var("c")
}

pub fn func(name: &str, ty: Type, args: &[&str], value: Expr) -> Func {
    Func {
        name: name.to_string(),
        ty,
        args: args.iter().map(|a| a.to_string()).collect(),
        value,
        updates: Vec::new(),
        origin: FuncOrigin::User,
        span: Span::DUMMY,
    }
}

pub fn input(name: &str, ty: Type, dims: &[&str]) -> Input {
    Input {
        name: name.to_string(),
        ty,
        dims: dims.iter().map(|a| a.to_string()).collect(),
        span: Span::DUMMY,
    }
}

pub fn param(name: &str, ty: Type, default: Option<f64>, range: Option<(f64, f64)>) -> Param {
    Param {
        name: name.to_string(),
        ty,
        default,
        range,
        span: Span::DUMMY,
    }
}

pub fn rdom(name: &str, bounds: &[(Expr, Expr)], predicate: Option<Expr>) -> RDom {
    let names = ["x", "y", "z", "w"];
    RDom {
        name: name.to_string(),
        dims: bounds
            .iter()
            .zip(names)
            .map(|((min, extent), n)| RVar {
                name: format!("{name}.{n}"),
                min: min.clone(),
                extent: extent.clone(),
            })
            .collect(),
        predicate,
        span: Span::DUMMY,
    }
}

pub fn update(args: Vec<Expr>, value: Expr, rdom: Option<RDom>) -> Update {
    Update {
        args,
        value,
        rdom,
        span: Span::DUMMY,
    }
}

pub fn pipeline(
    inputs: Vec<Input>,
    params: Vec<Param>,
    funcs: Vec<Func>,
    outputs: &[&str],
) -> Pipeline {
    Pipeline {
        inputs,
        params,
        funcs,
        outputs: outputs.iter().map(|o| o.to_string()).collect(),
        schedule: Schedule::default(),
    }
}

pub fn field(input: &str, f: &str, d: usize) -> Expr {
    var(&buffer_field(input, f, d))
}

/// `repeat_edge(input)` as the front end builds it: every coordinate
/// clamped into the buffer.
pub fn repeat_edge(name: &str, input: &Input) -> Func {
    let args: Vec<Expr> = input
        .dims
        .iter()
        .enumerate()
        .map(|(d, n)| {
            let lo = field(&input.name, "min", d);
            let hi = lo.clone() + field(&input.name, "extent", d) - 1;
            Expr::clamp(var(n), lo, hi)
        })
        .collect();
    let dims: Vec<&str> = input.dims.iter().map(|s| s.as_str()).collect();
    let mut f = func(
        name,
        input.ty,
        &dims,
        Expr::call_input(input.ty, &input.name, args),
    );
    f.origin = FuncOrigin::Boundary {
        input: input.name.clone(),
        condition: "repeat_edge".into(),
    };
    f
}

pub fn call(f: &Func, args: Vec<Expr>) -> Expr {
    Expr::call_func(f.ty, &f.name, args)
}

/// The separable 3x3 box blur of the issue, in u16 with wrapping sums.
pub fn box_blur() -> Pipeline {
    let input = input("in", Type::U16, &["x", "y"]);
    let clamped = repeat_edge("clamped", &input);
    let cl = |dx: i64, dy: i64| call(&clamped, vec![x() + dx, y() + dy]);
    let three = || Expr::int(Type::U16, 3);
    let blur_x = func(
        "blur_x",
        Type::U16,
        &["x", "y"],
        (cl(-1, 0) + cl(0, 0) + cl(1, 0)) / three(),
    );
    let bx = |dy: i64| call(&blur_x, vec![x(), y() + dy]);
    let blur_y = func(
        "blur_y",
        Type::U16,
        &["x", "y"],
        (bx(-1) + bx(0) + bx(1)) / three(),
    );
    pipeline(
        vec![input],
        vec![],
        vec![clamped, blur_x, blur_y],
        &["blur_y"],
    )
}

/// The unsharp mask of the issue over `(x, y, c)`.
pub fn unsharp() -> Pipeline {
    let photo = input("photo", Type::U8, &["x", "y", "c"]);
    let amount = param("amount", Type::F32, Some(1.5), Some((0.0, 4.0)));
    let p = repeat_edge("p", &photo);
    let f = func(
        "f",
        Type::F32,
        &["x", "y", "c"],
        Expr::cast(Type::F32, call(&p, vec![x(), y(), c()])),
    );
    let fc = |dx: i64, dy: i64| call(&f, vec![x() + dx, y() + dy, c()]);
    let two = || Expr::f32(2.0);
    let four = || Expr::f32(4.0);
    let blur_x = func(
        "blur_x",
        Type::F32,
        &["x", "y", "c"],
        (fc(-1, 0) + two() * fc(0, 0) + fc(1, 0)) / four(),
    );
    let bx = |dy: i64| call(&blur_x, vec![x(), y() + dy, c()]);
    let blur = func(
        "blur",
        Type::F32,
        &["x", "y", "c"],
        (bx(-1) + two() * bx(0) + bx(1)) / four(),
    );
    let sharp = func(
        "sharp",
        Type::F32,
        &["x", "y", "c"],
        Expr::select(
            Expr::eq(c(), Expr::i32(3)),
            fc(0, 0),
            fc(0, 0)
                + Expr::var(Type::F32, "amount") * (fc(0, 0) - call(&blur, vec![x(), y(), c()])),
        ),
    );
    let out = func(
        "out",
        Type::U8,
        &["x", "y", "c"],
        Expr::saturating_cast(Type::U8, call(&sharp, vec![x(), y(), c()]) + Expr::f32(0.5)),
    );
    pipeline(
        vec![photo],
        vec![amount],
        vec![p, f, blur_x, blur, sharp, out],
        &["out"],
    )
}

/// Histogram equalisation of the issue: scatter, scan, gather.
pub fn histogram_equalisation() -> Pipeline {
    let img = input("img", Type::U8, &["x", "y"]);
    let width = field("img", "extent", 0);
    let height = field("img", "extent", 1);
    let r = rdom(
        "r",
        &[
            (Expr::i32(0), width.clone()),
            (Expr::i32(0), height.clone()),
        ],
        None,
    );
    let read_img = |a: Expr, b: Expr| Expr::call_input(Type::U8, "img", vec![a, b]);
    let mut hist = func("hist", Type::U32, &["i"], Expr::int(Type::U32, 0));
    let at = Expr::cast(Type::I32, read_img(var("r.x"), var("r.y")));
    hist.updates.push(update(
        vec![at.clone()],
        Expr::call_func(Type::U32, "hist", vec![at]) + Expr::int(Type::U32, 1),
        Some(r),
    ));
    let ri = rdom("ri", &[(Expr::i32(0), Expr::i32(256))], None);
    let mut cdf = func("cdf", Type::U32, &["i"], Expr::int(Type::U32, 0));
    cdf.updates.push(update(
        vec![var("ri.x")],
        Expr::call_func(Type::U32, "cdf", vec![var("ri.x") - 1])
            + Expr::call_func(Type::U32, "hist", vec![var("ri.x")]),
        Some(ri),
    ));
    let total = Expr::cast(Type::U32, width * height);
    let level = Expr::cast(Type::I32, read_img(x(), y()));
    let out = func(
        "out",
        Type::U8,
        &["x", "y"],
        Expr::cast(
            Type::U8,
            Expr::call_func(Type::U32, "cdf", vec![level]) * Expr::int(Type::U32, 255) / total,
        ),
    );
    pipeline(vec![img], vec![], vec![hist, cdf, out], &["out"])
}

/// Decode a photograph shipped with the repository as `(width, height,
/// RGB bytes)`, falling back to the shared copy.
pub fn load_photo() -> (i64, i64, Vec<u8>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../images/astronaut.png");
    let path = if std::path::Path::new(dir).exists() {
        dir.to_string()
    } else {
        "/work/shared/images/chelsea.png".to_string()
    };
    let file = std::fs::File::open(&path).expect("photo");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("png header");
    let mut data = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut data).expect("png data");
    data.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    let (w, h) = (info.width as usize, info.height as usize);
    let mut rgb = Vec::with_capacity(w * h * 3);
    for p in data.chunks(channels) {
        match channels {
            1 | 2 => rgb.extend([p[0], p[0], p[0]]),
            _ => rgb.extend(&p[..3]),
        }
    }
    (w as i64, h as i64, rgb)
}

/// The photo's red channel as a planar 2-D buffer of `ty`, mapped by `f`.
pub fn channel_buffer(
    w: i64,
    h: i64,
    rgb: &[u8],
    ty: Type,
    f: impl Fn(u8, i64, i64) -> i64,
) -> Buffer {
    let mut b = Buffer::new(ty, &[w, h]);
    for yy in 0..h {
        for xx in 0..w {
            let v = rgb[((yy * w + xx) * 3) as usize];
            b.set(&[xx, yy], argent_interp::Value::Int(f(v, xx, yy)));
        }
    }
    b
}

/// An input for `pipeline`'s declared input of `ty` with `dims`
/// dimensions, made from the photo: RGB for three dimensions, the red
/// channel for two; 8-bit samples scaled to the type (x257 for 16 bits).
fn photo_input(ty: Type, dims: usize, w: i64, h: i64, rgb: &[u8]) -> Buffer {
    let scale = |v: u8| -> Value {
        match ty {
            t if t.is_float() => Value::Float(v as f32 / 255.0),
            t if t.bits >= 16 => Value::Int(v as i64 * 257),
            _ => Value::Int(v as i64),
        }
    };
    let extents: Vec<i64> = [w, h, 3, 1][..dims].to_vec();
    let mut b = if dims == 3 {
        Buffer::interleaved(ty, &extents)
    } else {
        Buffer::new(ty, &extents)
    };
    b.fill(|p| {
        let c = p.get(2).copied().unwrap_or(0) as usize;
        scale(rgb[((p[1] * w + p[0]) * 3) as usize + c])
    });
    b
}

/// Run `pipeline` on the photo; returns the outputs and the seconds taken.
pub fn run_on_photo(
    pipeline: &Pipeline,
    w: i64,
    h: i64,
    rgb: &[u8],
) -> (Result<Vec<Buffer>, argent_interp::RunError>, f64) {
    let inputs: Vec<(String, Buffer)> = pipeline
        .inputs
        .iter()
        .map(|i| (i.name.clone(), photo_input(i.ty, i.dims.len(), w, h, rgb)))
        .collect();
    let refs: Vec<(&str, &Buffer)> = inputs.iter().map(|(n, b)| (n.as_str(), b)).collect();
    let dims = pipeline
        .func(&pipeline.outputs[0])
        .map_or(2, |f| f.args.len());
    let region: Vec<(i64, i64)> = [(0, w), (0, h), (0, 3), (0, 1)][..dims].to_vec();
    let options = Options {
        max_depth: 1 << 20,
        ..Options::default()
    };
    let start = Instant::now();
    let result = realize_with(pipeline, &refs, &[], &region, &options);
    (result, start.elapsed().as_secs_f64())
}
