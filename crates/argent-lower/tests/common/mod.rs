//! Pipelines built with the IR's Rust API, shared by the tests.
#![allow(dead_code)]

pub mod run;

use argent_ir::*;

pub fn v(name: &str) -> Expr {
    Expr::var_i32(name)
}

pub fn c(x: i64) -> Expr {
    Expr::i32(x)
}

/// The paper's two-stage blur over a u16 input.
pub fn blur() -> Pipeline {
    let t = Type::U16;
    let inp = |dx: i64, dy: i64| Expr::call_input(t, "in", vec![v("x") + dx, v("y") + dy]);
    let bx = |dx: i64, dy: i64| Expr::call_func(t, "blur_x", vec![v("x") + dx, v("y") + dy]);
    let three = Expr::int(t, 3);
    Pipeline {
        inputs: vec![Input {
            name: "in".into(),
            ty: t,
            dims: vec!["x".into(), "y".into()],
            span: Span::DUMMY,
        }],
        params: vec![],
        funcs: vec![
            Func {
                name: "blur_x".into(),
                ty: t,
                args: vec!["x".into(), "y".into()],
                value: Expr::div(inp(-1, 0) + inp(0, 0) + inp(1, 0), three.clone()),
                updates: vec![],
                origin: FuncOrigin::User,
                span: Span::DUMMY,
            },
            Func {
                name: "blur_y".into(),
                ty: t,
                args: vec!["x".into(), "y".into()],
                value: Expr::div(bx(0, -1) + bx(0, 0) + bx(0, 1), three),
                updates: vec![],
                origin: FuncOrigin::User,
                span: Span::DUMMY,
            },
        ],
        outputs: vec!["blur_y".into()],
        schedule: Schedule::default(),
    }
}

/// The blur over a clamped (repeat-edge) input, so any schedule may read
/// past the image (as shift-inwards and round-up splits do).
pub fn blur_clamped() -> Pipeline {
    let mut p = blur();
    let clamp_x = Expr::clamp(v("x"), v("in.min.0"), v("in.min.0") + v("in.extent.0") - 1);
    let clamp_y = Expr::clamp(v("y"), v("in.min.1"), v("in.min.1") + v("in.extent.1") - 1);
    let t = Type::U16;
    p.funcs.insert(
        0,
        Func {
            name: "clamped".into(),
            ty: t,
            args: vec!["x".into(), "y".into()],
            value: Expr::call_input(t, "in", vec![clamp_x, clamp_y]),
            updates: vec![],
            origin: FuncOrigin::Boundary {
                input: "in".into(),
                condition: "repeat_edge".into(),
            },
            span: Span::DUMMY,
        },
    );
    let rename = |e: &Expr| -> Expr {
        struct R;
        impl argent_ir::visit::Mutator for R {
            fn mutate_expr(&mut self, e: &Expr) -> Expr {
                let e = argent_ir::visit::mutate_expr_children(self, e);
                if let ExprKind::Call {
                    target: CallTarget::Input(_),
                    args,
                } = e.kind()
                {
                    return Expr::call_func(e.ty(), "clamped", args.clone());
                }
                e
            }
        }
        argent_ir::visit::Mutator::mutate_expr(&mut R, e)
    };
    p.funcs[1].value = rename(&p.funcs[1].value);
    p
}

/// Histogram equalisation-like pipeline: hist over a u8 image, a cdf scan, and a lookup.
pub fn histogram() -> Pipeline {
    let img = |x: Expr, y: Expr| Expr::call_input(Type::U8, "img", vec![x, y]);
    let rdom2 = RDom {
        name: "r".into(),
        dims: vec![
            RVar {
                name: "r.x".into(),
                min: c(0),
                extent: v("img.extent.0"),
            },
            RVar {
                name: "r.y".into(),
                min: c(0),
                extent: v("img.extent.1"),
            },
        ],
        predicate: None,
        span: Span::DUMMY,
    };
    let hist_at = |e: Expr| Expr::call_func(Type::U32, "hist", vec![e]);
    let idx = Expr::cast(Type::I32, img(v("r.x"), v("r.y")));
    let rdom1 = RDom {
        name: "ri".into(),
        dims: vec![RVar {
            name: "ri".into(),
            min: c(1),
            extent: c(255),
        }],
        predicate: None,
        span: Span::DUMMY,
    };
    let cdf_at = |e: Expr| Expr::call_func(Type::U32, "cdf", vec![e]);
    Pipeline {
        inputs: vec![Input {
            name: "img".into(),
            ty: Type::U8,
            dims: vec!["x".into(), "y".into()],
            span: Span::DUMMY,
        }],
        params: vec![],
        funcs: vec![
            Func {
                name: "hist".into(),
                ty: Type::U32,
                args: vec!["i".into()],
                value: Expr::int(Type::U32, 0),
                updates: vec![Update {
                    args: vec![idx.clone()],
                    value: hist_at(idx) + Expr::int(Type::U32, 1),
                    rdom: Some(rdom2),
                    span: Span::DUMMY,
                }],
                origin: FuncOrigin::User,
                span: Span::DUMMY,
            },
            Func {
                name: "cdf".into(),
                ty: Type::U32,
                args: vec!["i".into()],
                value: hist_at(c(0)),
                updates: vec![Update {
                    args: vec![v("ri")],
                    value: cdf_at(v("ri") - 1) + hist_at(v("ri")),
                    rdom: Some(rdom1),
                    span: Span::DUMMY,
                }],
                origin: FuncOrigin::User,
                span: Span::DUMMY,
            },
            Func {
                name: "out".into(),
                ty: Type::U32,
                args: vec!["x".into(), "y".into()],
                value: cdf_at(Expr::cast(Type::I32, img(v("x"), v("y")))),
                updates: vec![],
                origin: FuncOrigin::User,
                span: Span::DUMMY,
            },
        ],
        outputs: vec!["out".into()],
        schedule: Schedule::default(),
    }
}

/// Parse a tiny directive list like `blur_x.compute_at(blur_y, y)` (one per
/// line) so tests read like schedules. Supports the forms the tests use.
pub fn with_schedule(mut p: Pipeline, text: &str) -> Pipeline {
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        p.schedule.directives.extend(parse_chain(line));
    }
    p
}

fn arg_expr(s: &str) -> Expr {
    match s.trim().parse::<i64>() {
        Ok(n) => c(n),
        Err(_) => v(s.trim()),
    }
}

fn tail(s: Option<&&str>) -> TailStrategy {
    match s.map(|s| s.trim()) {
        Some("round_up") => TailStrategy::RoundUp,
        Some("guard_with_if") => TailStrategy::GuardWithIf,
        Some("shift_inwards") => TailStrategy::ShiftInwards,
        _ => TailStrategy::Auto,
    }
}

pub fn parse_chain(line: &str) -> Vec<Directive> {
    let mut parts = line.split(").").collect::<Vec<_>>();
    let first = parts.remove(0);
    let (func, first_call) = first.split_once('.').expect("func.directive");
    let mut calls = vec![first_call.to_string()];
    calls.extend(parts.iter().map(|p| p.to_string()));
    let mut stage = StageRef::Pure;
    let mut out = Vec::new();
    for call in calls {
        let call = call.trim_end_matches(')');
        let (name, args) = call.split_once('(').unwrap_or((call, ""));
        let a: Vec<&str> = if args.trim().is_empty() {
            vec![]
        } else {
            args.split(',').map(str::trim).collect()
        };
        let s = |i: usize| a[i].to_string();
        let kind = match name {
            "update" => {
                stage = StageRef::Update(a.first().map_or(0, |x| x.parse().unwrap()));
                continue;
            }
            "split" => DirectiveKind::Split {
                old: s(0),
                outer: s(1),
                inner: s(2),
                factor: arg_expr(a[3]),
                tail: tail(a.get(4)),
            },
            "fuse" => DirectiveKind::Fuse {
                inner: s(0),
                outer: s(1),
                fused: s(2),
            },
            "reorder" => DirectiveKind::Reorder(a.iter().map(|x| x.to_string()).collect()),
            "tile" => DirectiveKind::Tile {
                x: s(0),
                y: s(1),
                xo: s(2),
                yo: s(3),
                xi: s(4),
                yi: s(5),
                x_factor: arg_expr(a[6]),
                y_factor: arg_expr(a[7]),
                tail: tail(a.get(8)),
            },
            "vectorize" => DirectiveKind::Vectorize {
                var: s(0),
                factor: a.get(1).map(|x| arg_expr(x)),
            },
            "unroll" => DirectiveKind::Unroll {
                var: s(0),
                factor: a.get(1).map(|x| arg_expr(x)),
            },
            "parallel" => DirectiveKind::Parallel {
                var: s(0),
                task_size: a.get(1).map(|x| arg_expr(x)),
            },
            "serial" => DirectiveKind::Serial { var: s(0) },
            "compute_at" => DirectiveKind::ComputeAt {
                consumer: s(0),
                var: s(1),
            },
            "store_at" => DirectiveKind::StoreAt {
                consumer: s(0),
                var: s(1),
            },
            "compute_root" => DirectiveKind::ComputeRoot,
            "store_root" => DirectiveKind::StoreRoot,
            "compute_inline" => DirectiveKind::ComputeInline,
            "bound" => DirectiveKind::Bound {
                var: s(0),
                min: arg_expr(a[1]),
                extent: arg_expr(a[2]),
            },
            "align_bounds" => DirectiveKind::AlignBounds {
                var: s(0),
                modulus: arg_expr(a[1]),
                remainder: arg_expr(a[2]),
            },
            "fold_storage" => DirectiveKind::FoldStorage {
                var: s(0),
                extent: arg_expr(a[1]),
            },
            "reorder_storage" => {
                DirectiveKind::ReorderStorage(a.iter().map(|x| x.to_string()).collect())
            }
            "rfactor" => DirectiveKind::Rfactor {
                pairs: a
                    .chunks(2)
                    .map(|p| (p[0].to_string(), p[1].to_string()))
                    .collect(),
            },
            "gpu_blocks" => DirectiveKind::GpuBlocks(a.iter().map(|x| x.to_string()).collect()),
            "gpu_threads" => DirectiveKind::GpuThreads(a.iter().map(|x| x.to_string()).collect()),
            "gpu_tile" => DirectiveKind::GpuTile {
                x: s(0),
                y: s(1),
                bx: s(2),
                by: s(3),
                tx: s(4),
                ty: s(5),
                x_size: arg_expr(a[6]),
                y_size: arg_expr(a[7]),
            },
            other => panic!("unknown directive {other}"),
        };
        out.push(Directive {
            func: func.to_string(),
            stage,
            kind,
            span: Span::DUMMY,
        });
    }
    out
}
