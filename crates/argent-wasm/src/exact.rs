//! Region checks in exact arithmetic.
//!
//! Bounds inference writes each region a stage reads as `i32` expressions
//! of the buffer sizes and of the parameters (at their declared range's
//! extremes). In wrapping `i32` arithmetic a region that passes 2^31 wraps
//! around: `in(x * k, y)` with `k` declared up to 43,383,509 and an output
//! 100 pixels wide "reads x from 0 to 95", the check passes on a 1000-pixel
//! input, and the loop then reads far outside it (a trap, or another
//! buffer's bytes). Halide has the same hole.
//!
//! So the checks that inputs and outputs cover their regions, and the
//! `checked_` lets that name parts of those regions, are evaluated here in
//! `i64`, where sums and products of `i32` values are exact: a region that
//! truly fits is compared exactly, and one that does not fails the run
//! with an error naming the stage and the input, before anything runs.
//!
//! Only those expressions: everywhere else `i32` arithmetic wraps, as the
//! language defines (a hash of the coordinates may overflow on purpose),
//! and a value the program computes is what it is, wrapped or not.
//!
//! ```text
//! assert(max(((out.extent.0 * 43383509) + ..)) <= (in.extent.0 + in.min.0) - 1), InputTooSmall ..)
//! ```
//! compares `i64` values, and fails with `RegionOverflow` ("the region of
//! input `in` that stage `out` reads in dimension 0 does not fit in 32-bit
//! coordinates") when an argument does not fit in `i32`.

use crate::CodegenError;
use crate::emit::{Binding, FnBuilder, mem};
use argent_ir::{AssertKind, BinOp, CallTarget, Expr, ExprKind, Intrinsic, Type, UnaryOp};
use wasm_encoder::{BlockType, Instruction as I, ValType};

impl FnBuilder<'_> {
    /// The check `kind` with `cond` and `args` evaluated exactly (see the
    /// module docs); `code` is its status.
    pub(crate) fn exact_region_check(
        &mut self,
        cond: &Expr,
        kind: &AssertKind,
        args: &[Expr],
        code: i32,
    ) -> Result<(), CodegenError> {
        let overflow = self.register_overflow(overflow_message(kind));
        self.exact_bool(cond)?;
        self.emit(I::I32Eqz);
        self.emit(I::If(BlockType::Empty));
        // The region did not fit the buffer: report it, or say that it
        // does not fit 32-bit coordinates at all.
        let mut values = Vec::new();
        for arg in args {
            self.exact(arg)?;
            let v = self.set_new_local(ValType::I64);
            self.fail_unless_i32(v, overflow);
            values.push(v);
        }
        for (k, v) in values.into_iter().enumerate() {
            self.emit(I::LocalGet(self.args_ptr));
            self.emit(I::LocalGet(v));
            self.emit(I::I32WrapI64);
            let offset = self.ctx.error_args_offset as u64 + 4 * k as u64;
            self.emit(I::I32Store(mem(offset, 2)));
        }
        self.fail(code);
        self.emit(I::End);
        Ok(())
    }

    /// Binds the `checked_` let `name` (part of a region bounds inference
    /// checks) to `value` evaluated exactly, failing the run when it does
    /// not fit in `i32`.
    pub(crate) fn bind_exact_let(
        &mut self,
        name: &str,
        value: &Expr,
    ) -> Result<Binding, CodegenError> {
        let stage = name.split('.').next().unwrap_or(name);
        let overflow = self.register_overflow(format!("the region of stage `{stage}`"));
        self.exact(value)?;
        let v = self.set_new_local(ValType::I64);
        self.fail_unless_i32(v, overflow);
        self.emit(I::LocalGet(v));
        self.emit(I::I32WrapI64);
        let local = self.set_new_local(ValType::I32);
        Ok(Binding::Scalar {
            local,
            ty: Type::I32,
        })
    }

    fn register_overflow(&mut self, region: String) -> i32 {
        self.register_assert(AssertKind::RegionOverflow { region }, Vec::new())
    }

    /// Returns `status` unless the i64 local `v` holds an `i32` value.
    fn fail_unless_i32(&mut self, v: u32, status: i32) {
        self.emit(I::LocalGet(v));
        self.emit(I::LocalGet(v));
        self.emit(I::I32WrapI64);
        self.emit(I::I64ExtendI32S);
        self.emit(I::I64Ne);
        self.emit(I::If(BlockType::Empty));
        self.fail(status);
        self.emit(I::End);
    }

    /// Pushes bool `e` (as an i32 0 or 1) with its `i32` comparisons made
    /// between exact values.
    fn exact_bool(&mut self, e: &Expr) -> Result<(), CodegenError> {
        match e.kind() {
            ExprKind::Binary { op, a, b } if matches!(op, BinOp::And | BinOp::Or) => {
                self.exact_bool(a)?;
                self.exact_bool(b)?;
                self.emit(if *op == BinOp::And {
                    I::I32And
                } else {
                    I::I32Or
                });
            }
            ExprKind::Binary { op, a, b }
                if a.ty() == Type::I32
                    && matches!(
                        op,
                        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
                    ) =>
            {
                self.exact(a)?;
                self.exact(b)?;
                self.emit(match op {
                    BinOp::Eq => I::I64Eq,
                    BinOp::Ne => I::I64Ne,
                    BinOp::Lt => I::I64LtS,
                    BinOp::Le => I::I64LeS,
                    BinOp::Gt => I::I64GtS,
                    _ => I::I64GeS,
                });
            }
            ExprKind::Unary {
                op: UnaryOp::Not,
                value,
            } => {
                self.exact_bool(value)?;
                self.emit(I::I32Eqz);
            }
            ExprKind::Let { name, value, body } if value.ty() == Type::I32 => {
                self.exact_let(name, value, |this| this.exact_bool(body))?;
            }
            _ => self.expr(e)?,
        }
        Ok(())
    }

    /// Pushes the exact value of `i32` expression `e` as an i64: sums,
    /// differences, products, minima, maxima, selects, lets and division
    /// by positive constants without wrapping; anything else (a load, a
    /// cast, a call) as its `i32` value.
    fn exact(&mut self, e: &Expr) -> Result<(), CodegenError> {
        if e.ty() != Type::I32 {
            self.expr(e)?;
            self.emit(I::I64ExtendI32S);
            return Ok(());
        }
        match e.kind() {
            ExprKind::IntImm(v) => self.emit(I::I64Const(*v)),
            ExprKind::Var(name) => match self.exact_lets.iter().rev().find(|(n, _)| n == name) {
                Some(&(_, local)) => self.emit(I::LocalGet(local)),
                None => {
                    self.expr(e)?;
                    self.emit(I::I64ExtendI32S);
                }
            },
            ExprKind::Binary { op, a, b } if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) => {
                self.exact(a)?;
                self.exact(b)?;
                self.emit(match op {
                    BinOp::Add => I::I64Add,
                    BinOp::Sub => I::I64Sub,
                    _ => I::I64Mul,
                });
            }
            ExprKind::Binary { op, a, b } if matches!(op, BinOp::Min | BinOp::Max) => {
                self.exact(a)?;
                let x = self.set_new_local(ValType::I64);
                self.exact(b)?;
                let y = self.set_new_local(ValType::I64);
                self.emit(I::LocalGet(x));
                self.emit(I::LocalGet(y));
                self.emit(I::LocalGet(x));
                self.emit(I::LocalGet(y));
                self.emit(if *op == BinOp::Min {
                    I::I64LtS
                } else {
                    I::I64GtS
                });
                self.emit(I::Select);
            }
            ExprKind::Binary { op, a, b }
                if matches!(op, BinOp::Div | BinOp::Mod) && b.as_int().is_some_and(|c| c > 0) =>
            {
                // Euclidean, as the language defines: for c > 0 the
                // quotient is the floor, `(t - (c - 1)) / c` truncated
                // for negative t.
                let c = b.as_int().expect("a constant divisor");
                self.exact(a)?;
                let t = self.set_new_local(ValType::I64);
                self.emit(I::LocalGet(t));
                self.emit(I::LocalGet(t));
                self.emit(I::I64Const(c - 1));
                self.emit(I::I64Sub);
                self.emit(I::LocalGet(t));
                self.emit(I::I64Const(0));
                self.emit(I::I64GeS);
                self.emit(I::Select);
                self.emit(I::I64Const(c));
                self.emit(I::I64DivS);
                if *op == BinOp::Mod {
                    self.emit(I::I64Const(c));
                    self.emit(I::I64Mul);
                    let q = self.set_new_local(ValType::I64);
                    self.emit(I::LocalGet(t));
                    self.emit(I::LocalGet(q));
                    self.emit(I::I64Sub);
                }
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                self.exact(then)?;
                self.exact(otherwise)?;
                self.exact_bool(cond)?;
                self.emit(I::Select);
            }
            ExprKind::Let { name, value, body } if value.ty() == Type::I32 => {
                self.exact_let(name, value, |this| this.exact(body))?;
            }
            ExprKind::Call {
                target: CallTarget::Intrinsic(Intrinsic::Likely),
                args,
            } if args.len() == 1 => self.exact(&args[0])?,
            _ => {
                self.expr(e)?;
                self.emit(I::I64ExtendI32S);
            }
        }
        Ok(())
    }

    /// Evaluates `body` with `name` bound to `value`: exactly for the
    /// expressions here, and wrapped for any part evaluated as `i32`.
    fn exact_let(
        &mut self,
        name: &str,
        value: &Expr,
        body: impl FnOnce(&mut Self) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        self.exact(value)?;
        let wide = self.set_new_local(ValType::I64);
        self.emit(I::LocalGet(wide));
        self.emit(I::I32WrapI64);
        let local = self.set_new_local(ValType::I32);
        self.exact_lets.push((name.to_string(), wide));
        self.scopes.push((
            name.to_string(),
            Binding::Scalar {
                local,
                ty: Type::I32,
            },
        ));
        let r = body(self);
        self.scopes.pop();
        self.exact_lets.pop();
        r
    }
}

/// The region of a region check, as its overflow error names it.
fn overflow_message(kind: &AssertKind) -> String {
    match kind {
        AssertKind::InputTooSmall { input, stage, dim } => {
            format!("the region of input `{input}` that stage `{stage}` reads in dimension {dim}")
        }
        AssertKind::OutputTooSmall { output, dim } => {
            format!("the region of output `{output}` written in dimension {dim}")
        }
        other => format!("the region checked by `{other:?}`"),
    }
}
