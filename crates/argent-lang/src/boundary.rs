//! Boundary conditions as funcs, with Halide's formulas
//! (`Halide/src/BoundaryConditions.cpp`): each wraps an input and reads it
//! at a coordinate folded back into `[min, min + extent - 1]`, with the
//! in-range case marked `likely` so loop partitioning can peel the edges.

use argent_ir::{Expr, Func, FuncOrigin, Span, Type, buffer_field};

/// The boundary conditions the language knows, by name.
pub const CONDITIONS: [&str; 5] = [
    "repeat_edge",
    "constant_exterior",
    "mirror_image",
    "mirror_interior",
    "repeat_image",
];

fn field(input: &str, name: &str, d: usize) -> Expr {
    Expr::var(Type::I32, buffer_field(input, name, d))
}

/// `clamp(likely(v), min, min + extent - 1)`.
fn clamped(input: &str, d: usize, v: &Expr) -> Expr {
    let min = field(input, "min", d);
    let max = Expr::sub(
        Expr::add(min.clone(), field(input, "extent", d)),
        Expr::i32(1),
    );
    Expr::clamp(Expr::likely(v.clone()), min, max)
}

fn out_of_bounds(input: &str, d: usize, v: &Expr) -> Expr {
    let min = field(input, "min", d);
    let end = Expr::add(min.clone(), field(input, "extent", d));
    Expr::or(Expr::lt(v.clone(), min), Expr::le(end, v.clone()))
}

/// Builds the func `name` applying `condition` to `input` (of type `ty`
/// with dimension names `dims`). `value` is constant_exterior's value,
/// already of type `ty`. Returns `None` for an unknown condition.
pub fn boundary_func(
    name: &str,
    condition: &str,
    input: &str,
    ty: Type,
    dims: &[String],
    value: Option<Expr>,
    span: Span,
) -> Option<Func> {
    let vars: Vec<Expr> = dims.iter().map(|d| Expr::var_i32(d.clone())).collect();
    let coords: Vec<Expr> = match condition {
        "repeat_edge" | "constant_exterior" => vars
            .iter()
            .enumerate()
            .map(|(d, v)| clamped(input, d, v))
            .collect(),
        "repeat_image" => vars
            .iter()
            .enumerate()
            .map(|(d, v)| {
                let min = field(input, "min", d);
                let extent = field(input, "extent", d);
                let coord = Expr::add(Expr::modulo(Expr::sub(v.clone(), min.clone()), extent), min);
                Expr::select(out_of_bounds(input, d, v), coord, clamped(input, d, v))
            })
            .collect(),
        "mirror_image" => vars
            .iter()
            .enumerate()
            .map(|(d, v)| {
                let min = field(input, "min", d);
                let extent = field(input, "extent", d);
                let two_extent = Expr::mul(Expr::i32(2), extent);
                let coord = Expr::modulo(Expr::sub(v.clone(), min.clone()), two_extent.clone());
                let coord = Expr::min(
                    coord.clone(),
                    Expr::sub(Expr::sub(two_extent, Expr::i32(1)), coord),
                );
                let coord = Expr::add(coord, min);
                Expr::select(out_of_bounds(input, d, v), coord, clamped(input, d, v))
            })
            .collect(),
        "mirror_interior" => vars
            .iter()
            .enumerate()
            .map(|(d, v)| {
                let min = field(input, "min", d);
                let limit = Expr::sub(field(input, "extent", d), Expr::i32(1));
                let coord = Expr::modulo(
                    Expr::sub(v.clone(), min.clone()),
                    Expr::mul(Expr::i32(2), limit.clone()),
                );
                let coord = Expr::sub(coord, limit.clone());
                let coord = Expr::max(coord.clone(), Expr::unary(argent_ir::UnaryOp::Neg, coord));
                let coord = Expr::add(Expr::sub(limit, coord), min);
                Expr::select(out_of_bounds(input, d, v), coord, clamped(input, d, v))
            })
            .collect(),
        _ => return None,
    };
    let read = Expr::call_input(ty, input, coords);
    let body = if condition == "constant_exterior" {
        let oob = vars
            .iter()
            .enumerate()
            .map(|(d, v)| out_of_bounds(input, d, v))
            .reduce(Expr::or)
            .unwrap_or_else(|| Expr::bool(false));
        let value = value.unwrap_or_else(|| Expr::constant(ty, 0.0));
        Expr::select(oob, value, Expr::likely(read))
    } else {
        read
    };
    Some(Func {
        name: name.to_string(),
        ty,
        args: dims.to_vec(),
        value: body,
        updates: Vec::new(),
        origin: FuncOrigin::Boundary {
            input: input.to_string(),
            condition: condition.to_string(),
        },
        span,
    })
}
