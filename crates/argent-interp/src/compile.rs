//! Translation of the algorithm IR into a tree whose names are resolved
//! to indices (variables to frame slots, funcs and inputs to their
//! positions, parameters and buffer fields to constants), with constant
//! operations folded, so evaluation never looks anything up by name. The
//! tree is then turned into closures (`crate::eval::build`).

use crate::error::{IrBug, RunError};
use crate::eval::{Code, build};
use crate::scalar;
use argent_ir::math;
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Func, Intrinsic, Pipeline, Type, UnaryOp};
use std::collections::HashMap;

/// The most dimensions a func or input may have here.
pub(crate) const MAX_DIMS: usize = 8;

pub(crate) enum Node {
    Const(i64),
    Var(u32),
    /// `var + k` on an integer type: the common shape of coordinates.
    VarPlus {
        slot: u32,
        k: i64,
        ty: Type,
    },
    Cast {
        from: Type,
        to: Type,
        saturating: bool,
        value: Box<Node>,
    },
    Unary {
        op: UnaryOp,
        ty: Type,
        value: Box<Node>,
    },
    IntBinary {
        op: BinOp,
        ty: Type,
        a: Box<Node>,
        b: Box<Node>,
    },
    FloatBinary {
        op: BinOp,
        a: Box<Node>,
        b: Box<Node>,
    },
    /// A binary operation with one constant operand: `value op k`, or
    /// `k op value` when `swapped` (one recursion instead of two).
    IntBinaryK {
        op: BinOp,
        ty: Type,
        value: Box<Node>,
        k: i64,
        swapped: bool,
    },
    FloatBinaryK {
        op: BinOp,
        value: Box<Node>,
        k: f32,
        swapped: bool,
    },
    /// `&&` and `||` evaluate their right side only when needed, like
    /// `select`, so a guarded out-of-range input read is not reported.
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Select {
        cond: Box<Node>,
        then: Box<Node>,
        otherwise: Box<Node>,
    },
    CallFunc {
        func: u32,
        args: Vec<Node>,
    },
    /// A func's update reading the func itself (current state).
    SelfRead {
        args: Vec<Node>,
    },
    CallInput {
        input: u32,
        stage: u32,
        args: Vec<Node>,
    },
    Intrinsic {
        which: Intrinsic,
        ty: Type,
        arg_ty: Type,
        args: Vec<Node>,
    },
    Let {
        slot: u32,
        value: Box<Node>,
        body: Box<Node>,
    },
}

pub(crate) struct UpdateCode {
    pub args: Vec<Code>,
    pub value: Code,
    /// `(min, extent)` of each reduction variable, dims[0] first.
    pub rdom: Vec<(Code, Code)>,
    /// The frame slot of each reduction variable, dims[0] first.
    pub rvar_slots: Vec<u32>,
    pub predicate: Option<Code>,
}

pub(crate) struct FuncCode {
    pub name: String,
    pub ty: Type,
    pub dims: usize,
    pub pure: Code,
    pub pure_slots: usize,
    /// Nesting weight (see `Options::max_depth`) of evaluating the pure
    /// definition, and of running the updates of a slice.
    pub pure_depth: usize,
    pub update_depth: usize,
    pub updates: Vec<UpdateCode>,
    pub update_slots: usize,
    /// Dimensions every update writes at the pure variable of that
    /// dimension: values there select independent slices.
    pub slice_dims: Vec<usize>,
    pub other_dims: Vec<usize>,
}

pub(crate) struct Program {
    pub funcs: Vec<FuncCode>,
    pub outputs: Vec<usize>,
}

fn bug(msg: String) -> RunError {
    RunError::Bug(IrBug(msg))
}

/// Names visible while compiling one definition.
struct Scope<'a> {
    locals: Vec<(String, u32)>,
    next: u32,
    max: u32,
    constants: &'a HashMap<String, i64>,
    func_index: &'a HashMap<&'a str, usize>,
    input_index: &'a HashMap<&'a str, usize>,
    pipeline: &'a Pipeline,
    stage: u32,
    /// The func whose update is being compiled (calls to it are self reads).
    updating: Option<usize>,
}

impl Scope<'_> {
    fn slot(&mut self, name: &str) -> u32 {
        let s = self.next;
        self.next += 1;
        self.max = self.max.max(self.next);
        self.locals.push((name.to_string(), s));
        s
    }

    fn compile(&mut self, e: &Expr) -> Result<Node, RunError> {
        self.compile_unfolded(e).map(fold)
    }

    fn compile_unfolded(&mut self, e: &Expr) -> Result<Node, RunError> {
        let ty = e.ty();
        if ty.is_vector() {
            return Err(bug(format!("vector expression `{e}` in the algorithm")));
        }
        Ok(match e.kind() {
            ExprKind::IntImm(v) => Node::Const(if ty.is_float() {
                scalar::float_constant(*v as f64)
            } else {
                ty.wrap(*v)
            }),
            ExprKind::FloatImm(v) => {
                if ty.is_float() {
                    Node::Const(scalar::float_constant(*v))
                } else {
                    Node::Const(ty.wrap(*v as i64))
                }
            }
            ExprKind::Var(name) => {
                if let Some((_, s)) = self.locals.iter().rev().find(|(n, _)| n == name) {
                    Node::Var(*s)
                } else if let Some(v) = self.constants.get(name.as_str()) {
                    Node::Const(*v)
                } else {
                    return Err(bug(format!(
                        "unknown variable `{name}` in stage `{}`",
                        self.pipeline.funcs[self.stage as usize].name
                    )));
                }
            }
            ExprKind::Cast { value, saturating } => Node::Cast {
                from: value.ty(),
                to: ty,
                saturating: *saturating,
                value: Box::new(self.compile(value)?),
            },
            ExprKind::Unary { op, value } => {
                if value.ty().is_float() && *op == UnaryOp::BitNot {
                    return Err(bug(format!("bitwise complement of a float in `{e}`")));
                }
                Node::Unary {
                    op: *op,
                    ty: value.ty(),
                    value: Box::new(self.compile(value)?),
                }
            }
            ExprKind::Binary { op, a, b } => {
                if a.ty() != b.ty() {
                    return Err(bug(format!(
                        "operands of `{e}` have types {} and {}",
                        a.ty(),
                        b.ty()
                    )));
                }
                let (ca, cb) = (Box::new(self.compile(a)?), Box::new(self.compile(b)?));
                match op {
                    BinOp::And => Node::And(ca, cb),
                    BinOp::Or => Node::Or(ca, cb),
                    _ if a.ty().is_float() => {
                        if matches!(
                            op,
                            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
                        ) {
                            return Err(bug(format!("bitwise operator on floats in `{e}`")));
                        }
                        Node::FloatBinary {
                            op: *op,
                            a: ca,
                            b: cb,
                        }
                    }
                    _ => match (op, &*ca, &*cb) {
                        (BinOp::Add, Node::Var(slot), Node::Const(k)) => Node::VarPlus {
                            slot: *slot,
                            k: *k,
                            ty: a.ty(),
                        },
                        (BinOp::Sub, Node::Var(slot), Node::Const(k))
                            if !scalar::is_u64(a.ty()) =>
                        {
                            Node::VarPlus {
                                slot: *slot,
                                k: a.ty().wrap(k.wrapping_neg()),
                                ty: a.ty(),
                            }
                        }
                        _ => Node::IntBinary {
                            op: *op,
                            ty: a.ty(),
                            a: ca,
                            b: cb,
                        },
                    },
                }
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => Node::Select {
                cond: Box::new(self.compile(cond)?),
                then: Box::new(self.compile(then)?),
                otherwise: Box::new(self.compile(otherwise)?),
            },
            ExprKind::Let { name, value, body } => {
                let value = Box::new(self.compile(value)?);
                let depth = self.locals.len();
                let slot = self.slot(name);
                let body = Box::new(self.compile(body)?);
                self.locals.truncate(depth);
                Node::Let { slot, value, body }
            }
            ExprKind::Call { target, args } => self.compile_call(e, target, args)?,
            ExprKind::Load { .. }
            | ExprKind::Ramp { .. }
            | ExprKind::Broadcast { .. }
            | ExprKind::Shuffle { .. } => {
                return Err(bug(format!(
                    "lowered-only expression `{e}` in the algorithm"
                )));
            }
        })
    }

    fn compile_args(&mut self, args: &[Expr]) -> Result<Vec<Node>, RunError> {
        args.iter()
            .map(|a| {
                if !a.ty().is_integer() {
                    return Err(bug(format!(
                        "coordinate `{a}` has non-integer type {}",
                        a.ty()
                    )));
                }
                self.compile(a)
            })
            .collect()
    }

    fn compile_call(
        &mut self,
        e: &Expr,
        target: &CallTarget,
        args: &[Expr],
    ) -> Result<Node, RunError> {
        match target {
            CallTarget::Func(name) => {
                let Some(&f) = self.func_index.get(name.as_str()) else {
                    return Err(bug(format!("call to unknown func `{name}`")));
                };
                let func = &self.pipeline.funcs[f];
                if func.args.len() != args.len() {
                    return Err(bug(format!(
                        "`{name}` has {} dimensions but `{e}` gives {}",
                        func.args.len(),
                        args.len()
                    )));
                }
                let args = self.compile_args(args)?;
                if self.updating == Some(f) {
                    Ok(Node::SelfRead { args })
                } else {
                    Ok(Node::CallFunc {
                        func: f as u32,
                        args,
                    })
                }
            }
            CallTarget::Input(name) => {
                let Some(&i) = self.input_index.get(name.as_str()) else {
                    return Err(bug(format!("call to unknown input `{name}`")));
                };
                let input = &self.pipeline.inputs[i];
                if input.dims.len() != args.len() {
                    return Err(bug(format!(
                        "`{name}` has {} dimensions but `{e}` gives {}",
                        input.dims.len(),
                        args.len()
                    )));
                }
                Ok(Node::CallInput {
                    input: i as u32,
                    stage: self.stage,
                    args: self.compile_args(args)?,
                })
            }
            CallTarget::Intrinsic(which) => {
                if let Some(expanded) = math::expand_call(*which, args) {
                    return self.compile(&expanded);
                }
                if matches!(
                    which,
                    Intrinsic::Exp
                        | Intrinsic::Log
                        | Intrinsic::Pow
                        | Intrinsic::Sin
                        | Intrinsic::Cos
                        | Intrinsic::Tan
                        | Intrinsic::Atan2
                        | Intrinsic::Lerp
                ) {
                    return Err(bug(format!("wrong number of arguments in `{e}`")));
                }
                let expected = match which {
                    Intrinsic::Absd => 2,
                    _ => 1,
                };
                if args.len() != expected {
                    return Err(bug(format!(
                        "`{}` takes {expected} argument(s) in `{e}`",
                        which.name()
                    )));
                }
                let float_only = matches!(
                    which,
                    Intrinsic::Sqrt
                        | Intrinsic::Floor
                        | Intrinsic::Ceil
                        | Intrinsic::Round
                        | Intrinsic::Trunc
                        | Intrinsic::IsNan
                );
                let mut nodes = Vec::with_capacity(args.len());
                for a in args {
                    let a = if float_only {
                        Expr::cast(Type::F32, a.clone())
                    } else {
                        a.clone()
                    };
                    nodes.push(self.compile(&a)?);
                }
                let arg_ty = if float_only { Type::F32 } else { args[0].ty() };
                if *which == Intrinsic::Absd && args[0].ty() != args[1].ty() {
                    return Err(bug(format!("operands of `{e}` have different types")));
                }
                if *which == Intrinsic::Reinterpret && arg_ty.bits != e.ty().bits {
                    return Err(bug(format!("`{e}` reinterprets {} as {}", arg_ty, e.ty())));
                }
                Ok(Node::Intrinsic {
                    which: *which,
                    ty: e.ty(),
                    arg_ty,
                    args: nodes,
                })
            }
        }
    }
}

/// Compile `pipeline` with parameters and buffer fields bound to
/// `constants` (raw values by name).
pub(crate) fn compile(
    pipeline: &Pipeline,
    constants: &HashMap<String, i64>,
) -> Result<Program, RunError> {
    let func_index: HashMap<&str, usize> = pipeline
        .funcs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let input_index: HashMap<&str, usize> = pipeline
        .inputs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    if let Some(i) = pipeline.inputs.iter().find(|i| i.dims.len() > MAX_DIMS) {
        return Err(RunError::Unsupported {
            message: format!("input `{}` has more than {MAX_DIMS} dimensions", i.name),
        });
    }
    let mut funcs = Vec::with_capacity(pipeline.funcs.len());
    for (fi, func) in pipeline.funcs.iter().enumerate() {
        if func.ty.is_vector() || func.ty.bits > 32 {
            return Err(bug(format!("func `{}` has type {}", func.name, func.ty)));
        }
        if func.args.len() > MAX_DIMS {
            return Err(RunError::Unsupported {
                message: format!("func `{}` has more than {MAX_DIMS} dimensions", func.name),
            });
        }
        let mut scope = Scope {
            locals: Vec::new(),
            next: 0,
            max: 0,
            constants,
            func_index: &func_index,
            input_index: &input_index,
            pipeline,
            stage: fi as u32,
            updating: None,
        };
        for a in &func.args {
            scope.slot(a);
        }
        if func.value.ty() != func.ty {
            return Err(bug(format!(
                "func `{}` is {} but its definition is {}",
                func.name,
                func.ty,
                func.value.ty()
            )));
        }
        let pure = scope.compile(&func.value)?;
        let pure_slots = scope.max as usize;
        let (slice_dims, other_dims) = slice_dimensions(func);
        check_update_vars(func, &slice_dims)?;
        let mut updates = Vec::with_capacity(func.updates.len());
        let mut update_slots = pure_slots;
        let mut update_depth = 4;
        for (ui, u) in func.updates.iter().enumerate() {
            if u.args.len() != func.args.len() {
                return Err(bug(format!(
                    "update {ui} of `{}` has {} arguments, the func {}",
                    func.name,
                    u.args.len(),
                    func.args.len()
                )));
            }
            if u.value.ty() != func.ty {
                return Err(bug(format!(
                    "update {ui} of `{}` has type {}, the func {}",
                    func.name,
                    u.value.ty(),
                    func.ty
                )));
            }
            let mut scope = Scope {
                locals: Vec::new(),
                next: 0,
                max: 0,
                constants,
                func_index: &func_index,
                input_index: &input_index,
                pipeline,
                stage: fi as u32,
                updating: Some(fi),
            };
            for a in &func.args {
                scope.slot(a);
            }
            let mut rdom = Vec::new();
            let mut rvar_slots = Vec::new();
            if let Some(r) = &u.rdom {
                // Bounds see the pure variables but no reduction variables.
                for d in &r.dims {
                    rdom.push((scope.compile(&d.min)?, scope.compile(&d.extent)?));
                }
                for d in &r.dims {
                    rvar_slots.push(scope.slot(&d.name));
                }
            }
            let predicate = match u.rdom.as_ref().and_then(|r| r.predicate.as_ref()) {
                Some(p) => Some(scope.compile(p)?),
                None => None,
            };
            let args = scope.compile_args(&u.args)?;
            let value = scope.compile(&u.value)?;
            update_slots = update_slots.max(scope.max as usize);
            let depth = args
                .iter()
                .chain([&value])
                .chain(predicate.iter())
                .chain(rdom.iter().flat_map(|(a, b)| [a, b]))
                .map(node_depth)
                .max()
                .unwrap_or(0);
            update_depth = update_depth.max(depth + 4);
            updates.push(UpdateCode {
                args: args.into_iter().map(build).collect(),
                value: build(value),
                rdom: rdom
                    .into_iter()
                    .map(|(a, b)| (build(a), build(b)))
                    .collect(),
                rvar_slots,
                predicate: predicate.map(build),
            });
        }
        funcs.push(FuncCode {
            name: func.name.clone(),
            ty: func.ty,
            dims: func.args.len(),
            pure_depth: node_depth(&pure) + 3,
            update_depth,
            pure: build(pure),
            pure_slots,
            updates,
            update_slots,
            slice_dims,
            other_dims,
        });
    }
    let mut outputs = Vec::new();
    for o in &pipeline.outputs {
        match func_index.get(o.as_str()) {
            Some(&i) => outputs.push(i),
            None => return Err(bug(format!("output `{o}` is not a func"))),
        }
    }
    Ok(Program { funcs, outputs })
}

/// Dimensions at which every update writes the plain pure variable of
/// that dimension, and the rest.
fn slice_dimensions(func: &Func) -> (Vec<usize>, Vec<usize>) {
    (0..func.args.len()).partition(|&d| {
        func.updates
            .iter()
            .all(|u| u.args.get(d).and_then(|a| a.as_var()) == Some(func.args[d].as_str()))
    })
}

/// Pure variables may appear in updates only in slice dimensions: the
/// interpreter runs an update once per slice, where exactly those
/// variables have values.
fn check_update_vars(func: &Func, slice_dims: &[usize]) -> Result<(), RunError> {
    for (d, var) in func.args.iter().enumerate() {
        if slice_dims.contains(&d) {
            continue;
        }
        for (ui, u) in func.updates.iter().enumerate() {
            let mut exprs: Vec<&Expr> = u.args.iter().chain(std::iter::once(&u.value)).collect();
            if let Some(r) = &u.rdom {
                exprs.extend(r.dims.iter().flat_map(|d| [&d.min, &d.extent]));
                exprs.extend(r.predicate.iter());
            }
            if exprs
                .iter()
                .any(|e| argent_ir::visit::expr_uses_var(e, var))
            {
                return Err(RunError::Unsupported {
                    message: format!(
                        "update {ui} of `{}` uses the pure variable `{var}`, but another update writes dimension {d} at computed positions",
                        func.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The longest chain of nested nodes, which bounds the recursion depth of
/// evaluating `n`.
fn node_depth(n: &Node) -> usize {
    let children: Vec<&Node> = match n {
        Node::Const(_) | Node::Var(_) | Node::VarPlus { .. } => vec![],
        Node::Cast { value, .. }
        | Node::Unary { value, .. }
        | Node::IntBinaryK { value, .. }
        | Node::FloatBinaryK { value, .. } => vec![value],
        Node::IntBinary { a, b, .. }
        | Node::FloatBinary { a, b, .. }
        | Node::And(a, b)
        | Node::Or(a, b) => vec![a, b],
        Node::Select {
            cond,
            then,
            otherwise,
        } => vec![cond, then, otherwise],
        Node::CallFunc { args, .. }
        | Node::SelfRead { args }
        | Node::CallInput { args, .. }
        | Node::Intrinsic { args, .. } => args.iter().collect(),
        Node::Let { value, body, .. } => vec![value, body],
    };
    1 + children.into_iter().map(node_depth).max().unwrap_or(0)
}

/// Evaluate a node whose operands are all constants (parameters and
/// buffer fields are constants here, so clamps of boundary conditions
/// fold to a compare against a number).
fn fold(n: Node) -> Node {
    let c = |n: &Node| match n {
        Node::Const(v) => Some(*v),
        _ => None,
    };
    let folded = match &n {
        Node::Cast {
            from,
            to,
            saturating,
            value,
        } => c(value).map(|v| scalar::cast(*from, *to, *saturating, v)),
        Node::Unary { op, ty, value } => c(value).map(|v| scalar::unary(*op, *ty, v)),
        Node::IntBinary { op, ty, a, b } => c(a)
            .zip(c(b))
            .map(|(x, y)| scalar::int_binary(*op, *ty, x, y)),
        Node::FloatBinary { op, a, b } => c(a)
            .zip(c(b))
            .map(|(x, y)| scalar::float_binary(*op, scalar::to_f32(x), scalar::to_f32(y))),
        Node::And(a, b) => c(a).zip(c(b)).map(|(x, y)| (x != 0 && y != 0) as i64),
        Node::Or(a, b) => c(a).zip(c(b)).map(|(x, y)| (x != 0 || y != 0) as i64),
        Node::Intrinsic {
            which,
            ty,
            arg_ty,
            args,
        } => {
            let values: Option<Vec<i64>> = args.iter().map(c).collect();
            values.and_then(|v| {
                scalar::intrinsic(*which, *ty, *arg_ty, v[0], v.get(1).copied().unwrap_or(0))
            })
        }
        _ => None,
    };
    if let Some(v) = folded {
        return Node::Const(v);
    }
    match n {
        Node::IntBinary { op, ty, a, b } => match (*a, *b) {
            (a, Node::Const(k)) => Node::IntBinaryK {
                op,
                ty,
                value: Box::new(a),
                k,
                swapped: false,
            },
            (Node::Const(k), b) => Node::IntBinaryK {
                op,
                ty,
                value: Box::new(b),
                k,
                swapped: true,
            },
            (a, b) => Node::IntBinary {
                op,
                ty,
                a: Box::new(a),
                b: Box::new(b),
            },
        },
        Node::FloatBinary { op, a, b } => match (*a, *b) {
            (a, Node::Const(k)) => Node::FloatBinaryK {
                op,
                value: Box::new(a),
                k: scalar::to_f32(k),
                swapped: false,
            },
            (Node::Const(k), b) => Node::FloatBinaryK {
                op,
                value: Box::new(b),
                k: scalar::to_f32(k),
                swapped: true,
            },
            (a, b) => Node::FloatBinary {
                op,
                a: Box::new(a),
                b: Box::new(b),
            },
        },
        Node::Select {
            cond,
            then,
            otherwise,
        } => match *cond {
            Node::Const(v) => {
                if v != 0 {
                    *then
                } else {
                    *otherwise
                }
            }
            cond => Node::Select {
                cond: Box::new(cond),
                then,
                otherwise,
            },
        },
        n => n,
    }
}
