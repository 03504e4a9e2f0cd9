//! Outlining: large loop nests become functions of their own.
//!
//! V8 compiles a function with more than 8192 virtual registers with its
//! mid-tier register allocator, which spills much more than the top-tier
//! one (`--turbo-use-mid-tier-regalloc-for-huge-functions`). A pipeline
//! compiled into one function (every stage of a tile, each in several
//! partitions and layouts) crosses that line: its loops then ran 12-28%
//! slower than with the flag off, which a page cannot turn off. So, in a
//! function larger than [`FUNCTION_NODES`], each loop of at least
//! [`LOOP_NODES`] that is not most of the function becomes a function
//! that takes the loop's free variables (and the buffers' bases) as
//! parameters, and the function that ran it calls it and passes on a
//! failed check's status. The call costs little next to a loop that
//! large: it runs once per iteration of the loop around it (a row, a
//! tile), never per element. Outlined functions are outlined further by
//! the same rule.
//!
//! ```text
//! for (y, ..) {                   for (y, ..) {
//!   for (x, ..) { f[..] = .. }      status = call $f0(args, y, f.base, ..)
//!   for (x, ..) { g[..] = .. }      status = call $f1(args, y, g.base, ..)
//! }                               }
//! ```

use crate::CodegenError;
use crate::emit::{Binding, BufBinding, FnBuilder, val_type};
use argent_ir::fast_hash::FastHashSet;
use argent_ir::visit::{StmtPart, Visitor, for_each_part, walk_expr};
use argent_ir::{Expr, ForKind, Stmt};
use wasm_encoder::{BlockType, Instruction as I, ValType};

/// A function whose IR is larger than this many nodes has its large
/// loops outlined. A node is about 10 bytes of WebAssembly; V8's limit of
/// 8192 virtual registers was crossed by functions of 80 KB and more.
const FUNCTION_NODES: usize = 3000;

/// The smallest loop worth a function of its own.
const LOOP_NODES: usize = 400;

/// A loop that is more than this share of its function (in tenths) stays
/// inline: outlining it would leave the function almost empty.
const MOST_OF_FUNCTION_TENTHS: usize = 8;

/// The most parameters an outlined function takes (engines accept 1000).
const MAX_PARAMS: usize = 400;

/// Which loops become functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outlining {
    /// Large loops of large functions (the rule above).
    Large,
    /// Every loop, for tests: each loop then runs in a function of its own
    /// and receives its free variables as parameters.
    Every,
}

/// The loops of `body` to outline (by address), for a module whose
/// parallel loops become tasks when `tasks` is set.
pub(crate) fn loops_to_outline(
    body: &Stmt,
    tasks: bool,
    outlining: Outlining,
) -> FastHashSet<usize> {
    let mut sizes = Vec::new();
    let total = measure(body, &mut sizes);
    let mut chooser = Chooser {
        tasks,
        every: outlining == Outlining::Every,
        sizes: sizes.into_iter(),
        chosen: FastHashSet::default(),
    };
    chooser.choose(body, total, false);
    chooser.chosen
}

/// The node count of `s` (statements and expressions); pushes the size of
/// each loop of `s` onto `sizes` in pre-order, the order `choose` meets
/// them.
fn measure(s: &Stmt, sizes: &mut Vec<usize>) -> usize {
    // Chains of lets are thousands long in unrolled code: walked in a loop.
    let mut total = 0;
    let mut s = s;
    while let Stmt::LetStmt { value, body, .. } = s {
        total += 1 + expr_nodes(value);
        s = body;
    }
    let slot = matches!(s, Stmt::For { .. }).then(|| {
        sizes.push(0);
        sizes.len() - 1
    });
    let mut own = 1;
    for_each_part(s, |part| match part {
        StmtPart::Expr(e) => own += expr_nodes(e),
        StmtPart::Stmt(c) => own += measure(c, sizes),
    });
    if let Some(slot) = slot {
        sizes[slot] = own;
    }
    total + own
}

fn expr_nodes(e: &Expr) -> usize {
    struct Count(usize);
    impl Visitor for Count {
        fn visit_expr(&mut self, e: &Expr) {
            self.0 += 1;
            walk_expr(self, e);
        }
    }
    let mut count = Count(0);
    count.visit_expr(e);
    count.0
}

struct Chooser {
    tasks: bool,
    every: bool,
    /// Each loop's size, in pre-order.
    sizes: std::vec::IntoIter<usize>,
    chosen: FastHashSet<usize>,
}

impl Chooser {
    /// Marks the loops of `s` to outline, inside a function of `function`
    /// nodes (a task's when `in_task`).
    fn choose(&mut self, s: &Stmt, function: usize, in_task: bool) {
        let mut s = s;
        while let Stmt::LetStmt { body, .. } = s {
            s = body;
        }
        match s {
            Stmt::For { kind, body, .. } => {
                let size = self.sizes.next().unwrap_or(0);
                if *kind == ForKind::Parallel && self.tasks && !in_task {
                    // The body becomes a task: a function of its own.
                    self.choose(body, size, true);
                } else if self.every
                    || (function > FUNCTION_NODES
                        && size >= LOOP_NODES
                        && size * 10 <= function * MOST_OF_FUNCTION_TENTHS)
                {
                    self.chosen.insert(s as *const Stmt as usize);
                    self.choose(body, size, in_task);
                } else {
                    self.choose(body, function, in_task);
                }
            }
            _ => for_each_part(s, |part| {
                if let StmtPart::Stmt(c) = part {
                    self.choose(c, function, in_task);
                }
            }),
        }
    }
}

impl FnBuilder<'_> {
    /// Emits loop `s` (chosen by [`loops_to_outline`]) as a call to a new
    /// function that runs it; returns false, emitting nothing, when the
    /// loop uses a value a parameter cannot carry (a vector).
    pub(crate) fn outlined_loop(&mut self, s: &Stmt) -> Result<bool, CodegenError> {
        let Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } = s
        else {
            return Ok(false);
        };
        let (vars, buffers) = crate::emit::names_in(s);
        let mut scalars = Vec::new();
        for name in &vars {
            match self.lookup(name) {
                Some(Binding::Scalar { local, ty }) => scalars.push((name.clone(), *local, *ty)),
                Some(Binding::Vector(_) | Binding::Lanes { .. }) => return Ok(false),
                None if name.contains('#') => return Ok(false),
                None => {}
            }
        }
        let bufs: Vec<BufBinding> = buffers.iter().filter_map(|b| self.buffer(b).ok()).collect();
        if 1 + scalars.len() + bufs.len() > MAX_PARAMS {
            return Ok(false);
        }
        let mut params = vec![ValType::I32];
        for (_, _, ty) in &scalars {
            params.push(val_type(*ty)?);
        }
        params.extend(bufs.iter().map(|_| ValType::I32));
        let type_index = self.ctx.function_type(&params);
        let slot = self.ctx.reserve_function(None, type_index);

        let function = {
            let in_task = self.in_task;
            let float_lets = self.float_lets_of(&vars);
            let mut f = FnBuilder::new(&mut *self.ctx, params.len() as u32, in_task);
            f.args_ptr = 0;
            for (k, (name, _, ty)) in scalars.iter().enumerate() {
                f.scopes.push((
                    name.clone(),
                    Binding::Scalar {
                        local: 1 + k as u32,
                        ty: *ty,
                    },
                ));
            }
            for (k, b) in bufs.iter().enumerate() {
                f.buffers.push(BufBinding {
                    name: b.name.clone(),
                    base: (1 + scalars.len() + k) as u32,
                    ty: b.ty,
                });
            }
            f.set_float_lets(float_lets);
            f.loop_stmt(var, min, extent, *kind, body)?;
            f.emit(I::I32Const(0));
            f.finish()
        };
        self.ctx.fill_function(slot, function);

        self.emit(I::LocalGet(self.args_ptr));
        for (_, local, _) in &scalars {
            self.emit(I::LocalGet(*local));
        }
        for b in &bufs {
            self.emit(I::LocalGet(b.base));
        }
        self.emit(I::Call(self.ctx.function_index(slot)));
        let status = self.local(ValType::I32);
        self.emit(I::LocalTee(status));
        self.emit(I::If(BlockType::Empty));
        self.emit(I::LocalGet(status));
        self.emit(I::Return);
        self.emit(I::End);
        Ok(true)
    }
}
