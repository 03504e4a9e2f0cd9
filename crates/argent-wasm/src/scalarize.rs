//! Lane-by-lane rewriting of vector code: the scalar fallback used when
//! SIMD is off and, per statement, when a vector shape has no SIMD
//! lowering. A vector variable `v` becomes the scalar variables `v#0`,
//! `v#1`, ...; the emitter resolves `v#i` either to such a scalar binding
//! or to lane `i` of a vector binding named `v`.

use argent_ir::visit::{Visitor, map_child_stmts, walk_expr};
use argent_ir::{Expr, ExprKind, Stmt};

/// The name of lane `lane` of vector variable `name`.
pub(crate) fn lane_name(name: &str, lane: u16) -> String {
    format!("{name}#{lane}")
}

/// The scalar expression computing lane `lane` of `e` (`e` itself when it
/// is scalar).
pub fn lane_of(e: &Expr, lane: u16) -> Expr {
    let ty = e.ty();
    if ty.is_scalar() {
        return e.clone();
    }
    let elem = ty.element();
    match e.kind() {
        ExprKind::IntImm(_) | ExprKind::FloatImm(_) => Expr::new(elem, e.kind().clone()),
        ExprKind::Var(name) => Expr::var(elem, lane_name(name, lane)),
        ExprKind::Cast { value, saturating } => Expr::new(
            elem,
            ExprKind::Cast {
                value: lane_of(value, lane),
                saturating: *saturating,
            },
        ),
        ExprKind::Unary { op, value } => Expr::new(
            elem,
            ExprKind::Unary {
                op: *op,
                value: lane_of(value, lane),
            },
        ),
        ExprKind::Binary { op, a, b } => Expr::new(
            elem,
            ExprKind::Binary {
                op: *op,
                a: lane_of(a, lane),
                b: lane_of(b, lane),
            },
        ),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => Expr::new(
            elem,
            ExprKind::Select {
                cond: lane_of(cond, lane),
                then: lane_of(then, lane),
                otherwise: lane_of(otherwise, lane),
            },
        ),
        ExprKind::Call { target, args } => Expr::new(
            elem,
            ExprKind::Call {
                target: target.clone(),
                args: args.iter().map(|a| lane_of(a, lane)).collect(),
            },
        ),
        ExprKind::Let { name, value, body } if value.ty().is_vector() => {
            // The body's lane may read other lanes of the value than its
            // own (a shuffle interleaving two vectors, a value of another
            // width), so each lane of the value that it reads is bound.
            let body = lane_of(body, lane);
            let names: Vec<String> = (0..value.ty().lanes).map(|k| lane_name(name, k)).collect();
            let read = vars_read(&body, &names);
            let mut out = body;
            for k in (0..value.ty().lanes).rev() {
                if read[k as usize] {
                    out = Expr::new(
                        elem,
                        ExprKind::Let {
                            name: names[k as usize].clone(),
                            value: lane_of(value, k),
                            body: out,
                        },
                    );
                }
            }
            out
        }
        ExprKind::Let { name, value, body } => Expr::new(
            elem,
            ExprKind::Let {
                name: name.clone(),
                value: value.clone(),
                body: lane_of(body, lane),
            },
        ),
        ExprKind::Load { buffer, index } => Expr::load(elem, buffer.clone(), lane_of(index, lane)),
        ExprKind::Ramp {
            base,
            stride,
            lanes: _,
        } => {
            let base_lanes = base.ty().lanes;
            let inner = lane % base_lanes;
            let step = (lane / base_lanes) as i64;
            let base = lane_of(base, inner);
            if step == 0 {
                return base;
            }
            let stride = lane_of(stride, inner);
            let scaled = Expr::mul(stride, Expr::constant(elem, step as f64));
            Expr::add(base, scaled)
        }
        ExprKind::Broadcast { value, .. } => lane_of(value, lane % value.ty().lanes),
        ExprKind::Shuffle { vectors, indices } => {
            let mut pick = indices[lane as usize];
            for v in vectors {
                let lanes = v.ty().lanes as u32;
                if pick < lanes {
                    return lane_of(v, pick as u16);
                }
                pick -= lanes;
            }
            // Out-of-range shuffle indices are rejected by the IR verifier;
            // lane 0 of the first vector keeps this total.
            lane_of(&vectors[0], 0)
        }
    }
}

/// Which of `names` `e` mentions (free or not: binding a name that an
/// inner `let` hides as well costs only its computation).
fn vars_read(e: &Expr, names: &[String]) -> Vec<bool> {
    struct Reads<'a> {
        names: &'a [String],
        read: Vec<bool>,
    }
    impl Visitor for Reads<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Var(n) = e.kind() {
                if let Some(k) = self.names.iter().position(|m| m == n) {
                    self.read[k] = true;
                }
            }
            walk_expr(self, e);
        }
    }
    let mut reads = Reads {
        names,
        read: vec![false; names.len()],
    };
    reads.visit_expr(e);
    reads.read
}

/// Rewrites every vector statement in `s` (stores, lets) into its lanes.
pub fn scalarize_stmt(s: &Stmt) -> Stmt {
    match s {
        Stmt::LetStmt { name, value, body } if value.ty().is_vector() => {
            let mut out = scalarize_stmt(body);
            for lane in (0..value.ty().lanes).rev() {
                out = Stmt::LetStmt {
                    name: lane_name(name, lane),
                    value: lane_of(value, lane),
                    body: Box::new(out),
                };
            }
            out
        }
        Stmt::Store {
            buffer,
            index,
            value,
        } if value.ty().is_vector() || index.ty().is_vector() => {
            let lanes = value.ty().lanes.max(index.ty().lanes);
            Stmt::Block(
                (0..lanes)
                    .map(|lane| Stmt::Store {
                        buffer: buffer.clone(),
                        index: lane_of(index, lane),
                        value: lane_of(value, lane),
                    })
                    .collect(),
            )
        }
        // Everything else is scalar already; recurse into what it encloses.
        other => map_child_stmts(other, scalarize_stmt),
    }
}
