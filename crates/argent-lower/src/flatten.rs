//! Flattening: multi-dimensional realizations become one-dimensional
//! buffers with unit stride in their innermost dimension.
//!
//! - `Realize f` becomes `let f.min.d`, `f.extent.d`, `f.stride.d` and an
//!   `Allocate f` of the product of the extents: dense, dimension 0
//!   innermost (`f.stride.0 = 1`, `f.stride.d = f.stride.(d-1) *
//!   f.extent.(d-1)`), or in the order `reorder_storage` gave
//!   (`reorder_storage(c, x, y)` on `f(x, y, c)`: `f.stride.2 = 1`,
//!   `f.stride.0 = f.extent.2`, `f.stride.1 = f.stride.0 * f.extent.0`,
//!   so the channels of a pixel are adjacent).
//! - `Provide f(args)` becomes `Store f[sum((args_d - f.min.d) * f.stride.d)]`
//!   and a call `f(args)` a `Load` at the same index.
//! - Inputs and outputs (the module's buffer arguments) use the caller's
//!   `b.min.d` and `b.stride.d`, so interleaved RGBA (channel stride 1,
//!   x stride 4) and planar images take the same code.
//!
//! ```text
//! realize f: i32([0, w], [0, 3]) {       let f.min.0 = 0  let f.extent.0 = w ...
//!   f(x, y) = in(x, y)              ==>   allocate f: i32[(f.extent.0 * f.extent.1)]
//! }                                        f[((x - f.min.0) + ((y - f.min.1) * f.stride.1))] =
//!                                            in[(((x - in.min.0) * in.stride.0) + ((y - in.min.1) * in.stride.1))]
//! ```

use argent_arith::fast_hash::FastHashMap;
use argent_arith::simplify;
use argent_ir::visit::{Mutator, mutate_expr_children, mutate_stmt_children};
use argent_ir::{BufferArg, CallTarget, Expr, ExprKind, Stmt, Type, buffer_field};

/// Flatten every `Realize`, `Provide` and func/input call in `s`.
/// `module_buffers` are the module's inputs and outputs: their accesses use
/// the buffer-field variables the caller binds. `storage_orders` gives the
/// memory order (dimension indices, innermost first) of the funcs that
/// `reorder_storage` laid out otherwise than dimension 0 innermost.
pub fn flatten(
    s: &Stmt,
    module_buffers: &[BufferArg],
    storage_orders: &FastHashMap<String, Vec<usize>>,
) -> Stmt {
    let mut f = Flattener {
        layouts: FastHashMap::default(),
        storage_orders,
    };
    for b in module_buffers {
        f.layouts.entry(b.name.clone()).or_default().push(Layout {
            unit_stride_dim: None,
            dims: b.dims,
        });
    }
    f.mutate_stmt(s)
}

/// How a buffer's elements are laid out: internal allocations are dense,
/// with one dimension of stride 1 known statically (dimension 0 unless
/// `reorder_storage` says otherwise); buffer arguments have none.
#[derive(Clone, Copy, Default)]
struct Layout {
    unit_stride_dim: Option<usize>,
    dims: usize,
}

struct Flattener<'a> {
    /// Buffers visible at this point, innermost realization last.
    layouts: FastHashMap<String, Vec<Layout>>,
    storage_orders: &'a FastHashMap<String, Vec<usize>>,
}

impl Flattener<'_> {
    fn layout(&self, name: &str) -> Option<Layout> {
        self.layouts.get(name).and_then(|v| v.last()).copied()
    }

    /// The flat index of `args` in buffer `name`.
    fn index(&mut self, name: &str, layout: Layout, args: &[Expr]) -> Expr {
        let mut terms: Vec<Expr> = Vec::with_capacity(args.len());
        for (d, a) in args.iter().enumerate().take(layout.dims.max(args.len())) {
            let a = self.mutate_expr(a);
            let rel = Expr::sub(a, Expr::var_i32(buffer_field(name, "min", d)));
            if layout.unit_stride_dim == Some(d) {
                terms.push(rel);
            } else {
                terms.push(Expr::mul(
                    rel,
                    Expr::var_i32(buffer_field(name, "stride", d)),
                ));
            }
        }
        let sum = terms
            .into_iter()
            .reduce(Expr::add)
            .unwrap_or_else(|| Expr::i32(0));
        simplify(&sum)
    }
}

impl Mutator for Flattener<'_> {
    fn mutate_expr(&mut self, e: &Expr) -> Expr {
        if let ExprKind::Call {
            target: CallTarget::Func(name) | CallTarget::Input(name),
            args,
        } = e.kind()
        {
            let layout = self.layout(name).unwrap_or(Layout {
                unit_stride_dim: None,
                dims: args.len(),
            });
            let index = self.index(name, layout, args);
            return Expr::load(e.ty().element(), name.clone(), index);
        }
        mutate_expr_children(self, e)
    }

    fn mutate_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::Provide { func, args, value } => {
                let layout = self.layout(func).unwrap_or(Layout {
                    unit_stride_dim: None,
                    dims: args.len(),
                });
                let index = self.index(func, layout, args);
                Stmt::Store {
                    buffer: func.clone(),
                    index,
                    value: self.mutate_expr(value),
                }
            }
            Stmt::Realize {
                func,
                ty,
                bounds,
                body,
            } => {
                // A realization of a module buffer (an output) is that
                // buffer: nothing to allocate.
                if self
                    .layout(func)
                    .is_some_and(|l| l.unit_stride_dim.is_none())
                {
                    return self.mutate_stmt(body);
                }
                let bounds: Vec<(Expr, Expr)> = bounds
                    .iter()
                    .map(|r| (self.mutate_expr(&r.min), self.mutate_expr(&r.extent)))
                    .collect();
                // The memory order, innermost first: `reorder_storage`'s
                // when it names every dimension of this realization.
                let order: Vec<usize> = match self.storage_orders.get(func) {
                    Some(order) if order.len() == bounds.len() => order.clone(),
                    _ => (0..bounds.len()).collect(),
                };
                self.layouts.entry(func.clone()).or_default().push(Layout {
                    unit_stride_dim: order.first().copied(),
                    dims: bounds.len(),
                });
                let body = self.mutate_stmt(body);
                if let Some(v) = self.layouts.get_mut(func) {
                    v.pop();
                }
                let extent = |d: usize| Expr::var_i32(buffer_field(func, "extent", d));
                let size = (0..bounds.len())
                    .map(extent)
                    .reduce(Expr::mul)
                    .unwrap_or_else(|| Expr::i32(1));
                let mut out = Stmt::Allocate {
                    buffer: func.clone(),
                    ty: ty.element(),
                    size,
                    body: Box::new(body),
                };
                // Bind the fields innermost-last so each may use the
                // previous ones: each dimension's min and extent, and each
                // stride (in memory order) once the fields of its own
                // dimension and the extent it multiplies are bound. Without
                // `reorder_storage` that is min, extent and stride of
                // dimension 0, then of dimension 1, ...
                let mut lets: Vec<(String, Expr)> = Vec::new();
                let mut strides_bound = 0;
                for (d, (min, ext)) in bounds.iter().enumerate() {
                    lets.push((buffer_field(func, "min", d), min.clone()));
                    lets.push((buffer_field(func, "extent", d), ext.clone()));
                    while let Some(&next) = order.get(strides_bound).filter(|&&next| next <= d) {
                        let stride = match strides_bound.checked_sub(1).map(|k| order[k]) {
                            None => Expr::i32(1),
                            Some(inner) if inner <= d => Expr::mul(
                                Expr::var(Type::I32, buffer_field(func, "stride", inner)),
                                Expr::var(Type::I32, buffer_field(func, "extent", inner)),
                            ),
                            Some(_) => break,
                        };
                        lets.push((buffer_field(func, "stride", next), stride));
                        strides_bound += 1;
                    }
                }
                for (name, value) in lets.into_iter().rev() {
                    out = Stmt::LetStmt {
                        name,
                        value,
                        body: Box::new(out),
                    };
                }
                out
            }
            _ => mutate_stmt_children(self, s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::*;
    use argent_ir::{BufferRole, ForKind, Range};
    use expect_test::expect;

    fn blur_x() -> Stmt {
        // realize f over [out.min.0 - 1, out.extent.0 + 2] x [0, 2]:
        //   f(x, y) = in(x) + y;  out(x) = f(x - 1, 0) + f(x + 1, 1)
        let y = Expr::var_i32("y");
        let produce = Stmt::For {
            var: "y".into(),
            min: Expr::i32(0),
            extent: Expr::i32(2),
            kind: ForKind::Serial,
            body: Box::new(Stmt::For {
                var: "x".into(),
                min: Expr::var_i32("out.min.0") - 1,
                extent: Expr::var_i32("out.extent.0") + 2,
                kind: ForKind::Serial,
                body: Box::new(Stmt::Provide {
                    func: "f".into(),
                    args: vec![x(), y.clone()],
                    value: Expr::call_input(Type::I32, "in", vec![x()]) + y,
                }),
            }),
        };
        let f = |a: Expr, b: i64| Expr::call_func(Type::I32, "f", vec![a, Expr::i32(b)]);
        let consume = over_output(
            ForKind::Serial,
            Stmt::Provide {
                func: "out".into(),
                args: vec![x()],
                value: f(x() - 1, 0) + f(x() + 1, 1),
            },
        );
        Stmt::Realize {
            func: "f".into(),
            ty: Type::I32,
            bounds: vec![
                Range {
                    min: Expr::var_i32("out.min.0") - 1,
                    extent: Expr::var_i32("out.extent.0") + 2,
                },
                Range {
                    min: Expr::i32(0),
                    extent: Expr::i32(2),
                },
            ],
            body: Box::new(Stmt::block(vec![produce, consume])),
        }
    }

    #[test]
    fn realizations_become_dense_allocations() {
        let buffers = vec![
            arg("in", Type::I32, 1, BufferRole::Input),
            arg("out", Type::I32, 1, BufferRole::Output),
        ];
        expect![[r#"
            let f.min.0 = (out.min.0 - 1)
            let f.extent.0 = (out.extent.0 + 2)
            let f.stride.0 = 1
            let f.min.1 = 0
            let f.extent.1 = 2
            let f.stride.1 = (f.stride.0 * f.extent.0)
            allocate f: i32[(f.extent.0 * f.extent.1)]
            for (y, 0, 2) {
              for (x, (out.min.0 - 1), (out.extent.0 + 2)) {
                f[((x + (f.stride.1 * (y - f.min.1))) - f.min.0)] = (in[(in.stride.0 * (x - in.min.0))] + y)
              }
            }
            for (x, out.min.0, out.extent.0) {
              out[(out.stride.0 * (x - out.min.0))] = (f[(((x + (f.stride.1 * (0 - f.min.1))) - f.min.0) - 1)] + f[(((x + (f.stride.1 * (1 - f.min.1))) - f.min.0) + 1)])
            }
            free f
        "#]]
        .assert_eq(&flatten(&blur_x(), &buffers, &FastHashMap::default()).to_string());
    }

    #[test]
    fn flattened_code_computes_the_definition() {
        let m = module_1d(blur_x());
        let input = ramp_input(12);
        // The input covers [-1, 10]; the output [0, 9].
        let (values, stats) = run_1d(&m, &input, -1, 10).unwrap();
        let at = |c: i64| input[(c + 1) as usize];
        let want: Vec<i64> = (0..10).map(|x| at(x - 1) + at(x + 1) + 1).collect();
        assert_eq!(values, want);
        assert_eq!(stats.stores_to("f"), 24);
        assert_eq!(stats.allocations["f"].max_bytes, 24 * 4);
    }
}
