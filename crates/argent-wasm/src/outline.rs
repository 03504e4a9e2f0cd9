//! Outlining: large loop nests become functions of their own.
//!
//! V8 compiles a function with more than 8192 virtual registers with its
//! mid-tier register allocator, which spills much more than the top-tier
//! one (`--turbo-use-mid-tier-regalloc-for-huge-functions`). A pipeline
//! compiled into one function (every stage of a tile, each in several
//! partitions and layouts) crosses that line: its loops then ran 11-22%
//! slower than with the flag off, which a page cannot turn off. So, in a
//! function larger than [`FUNCTION_NODES`], the largest loops (none more
//! than 80% of the function, none inside or around one already chosen)
//! become functions until what is left is under it. Each takes the loop's free
//! variables (and the buffers' bases) as parameters; the function that
//! ran the loop calls it and passes on a failed check's status. The call
//! costs little next to a loop that large: it runs once per iteration of
//! the loop around it (a row, a tile), never per element. Outlined
//! functions (and tasks) are split further by the same rule. An innermost
//! loop whose body alone is larger stays one function.
//!
//! ```text
//! for (y, ..) {                   for (y, ..) {
//!   for (x, ..) { f[..] = .. }      status = call $f0(args, y, f.base, ..)
//!   for (x, ..) { g[..] = .. }      status = call $f1(args, y, g.base, ..)
//! }                               }
//! ```

use crate::CodegenError;
use crate::emit::{Binding, BufBinding, Captures, FnBuilder, val_type};
use argent_ir::fast_hash::FastHashSet;
use argent_ir::visit::{StmtPart, Visitor, for_each_part, walk_expr};
use argent_ir::{Expr, ForKind, Stmt};
use wasm_encoder::{Instruction as I, ValType};

/// A function whose IR is larger than this many nodes has loops outlined
/// until it is not (where it has loops to outline). Nodes are counted by
/// registers (an f32x16 value is four), each about 6-9 bytes of
/// WebAssembly. V8 compiled functions of 45 and 48 KB (sobel, harris:
/// 5,112 and 6,721 nodes) with its top-tier allocator and those of 82 KB
/// and more (unsharp mask: 14,158 nodes) with the mid-tier one (`node
/// --no-liftoff --no-wasm-lazy-compilation --single-threaded
/// --trace-turbo-alloc` traces only the former). Smaller functions are
/// left whole: an outlined loop loses the addresses its caller's loops
/// strength-reduce, and bicubic_resize (5,004 nodes) ran 10% slower
/// outlined.
const FUNCTION_NODES: usize = 7000;

/// The smallest loop worth a function of its own.
const LOOP_NODES: usize = 200;

/// A loop that is more than this share of its function (in tenths) stays
/// inline: outlining it would leave the function almost empty, and the
/// new function as large.
const MOST_OF_FUNCTION_TENTHS: usize = 8;

/// The most parameters an outlined function takes (engines accept 1000).
const MAX_PARAMS: usize = 400;

/// Which loops become functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outlining {
    /// Loops of functions over [`FUNCTION_NODES`], largest first, until
    /// the function is under it.
    Large,
    /// Every loop, for tests: each loop then runs in a function of its own
    /// and receives its free variables as parameters.
    Every,
}

/// One loop of the body, in pre-order.
struct LoopInfo {
    address: usize,
    /// Its nodes, without the bodies of the tasks inside it (other
    /// functions).
    size: usize,
    /// The pre-order index just past its last inner loop.
    end: usize,
    /// Whether its body becomes a task.
    task: bool,
    /// The nodes of its body, when that is a task.
    task_size: usize,
}

/// The loops of `body` to outline (by address), for a module whose
/// parallel loops become tasks when `tasks` is set.
pub(crate) fn loops_to_outline(
    body: &Stmt,
    tasks: bool,
    outlining: Outlining,
) -> FastHashSet<usize> {
    let mut loops = Vec::new();
    let total = measure(body, tasks, false, &mut loops);
    let mut chosen = FastHashSet::default();
    if outlining == Outlining::Every {
        // Every loop that runs in this function (a task's parallel loop
        // runs in its caller's).
        chosen.extend(loops.iter().filter(|l| !l.task).map(|l| l.address));
        return chosen;
    }
    split(&loops, 0..loops.len(), total, &mut chosen);
    chosen
}

/// The node count of `s` in this function (tasks' bodies excluded);
/// pushes each loop of `s` onto `loops` in pre-order.
fn measure(s: &Stmt, tasks: bool, in_task: bool, loops: &mut Vec<LoopInfo>) -> usize {
    // Chains of lets are thousands long in unrolled code: walked in a loop.
    let mut total = 0;
    let mut s = s;
    while let Stmt::LetStmt { value, body, .. } = s {
        total += 1 + expr_nodes(value);
        s = body;
    }
    let this_loop = match s {
        Stmt::For { kind, .. } => {
            loops.push(LoopInfo {
                address: s as *const Stmt as usize,
                size: 0,
                end: 0,
                task: *kind == ForKind::Parallel && tasks && !in_task,
                task_size: 0,
            });
            Some(loops.len() - 1)
        }
        _ => None,
    };
    let task = this_loop.is_some_and(|k| loops[k].task);
    let mut own = 1;
    let mut task_size = 0;
    for_each_part(s, |part| match part {
        StmtPart::Expr(e) => own += expr_nodes(e),
        // A task's body is a function of its own.
        StmtPart::Stmt(c) if task => task_size += measure(c, tasks, true, loops),
        StmtPart::Stmt(c) => own += measure(c, tasks, in_task, loops),
    });
    if let Some(k) = this_loop {
        loops[k].size = own;
        loops[k].task_size = task_size;
        loops[k].end = loops.len();
    }
    total + own
}

/// Chooses loops among `region` (pre-order indices of the loops of one
/// function, with those of the functions inside it) to outline from a
/// function of `size` nodes, then does the same inside each function made
/// (outlined loops and tasks).
fn split(
    loops: &[LoopInfo],
    region: std::ops::Range<usize>,
    size: usize,
    chosen: &mut FastHashSet<usize>,
) {
    // The loops of this function: not inside one of its tasks.
    let mut own = Vec::new();
    let mut k = region.start;
    while k < region.end {
        own.push(k);
        // A task's inner loops are the task's.
        k = if loops[k].task { loops[k].end } else { k + 1 };
    }
    let mut candidates: Vec<usize> = own
        .iter()
        .copied()
        .filter(|&k| {
            !loops[k].task
                && loops[k].size >= LOOP_NODES
                && loops[k].size * 10 <= size * MOST_OF_FUNCTION_TENTHS
        })
        .collect();
    candidates.sort_by_key(|&k| std::cmp::Reverse(loops[k].size));
    let nested = |a: usize, b: usize| a < b && b < loops[a].end;
    let mut outlined: Vec<usize> = Vec::new();
    let mut inline = size;
    for k in candidates {
        if inline <= FUNCTION_NODES {
            break;
        }
        if outlined.iter().any(|&o| nested(o, k) || nested(k, o)) {
            continue;
        }
        outlined.push(k);
        inline -= loops[k].size;
        chosen.insert(loops[k].address);
    }
    for &k in &outlined {
        split(loops, k + 1..loops[k].end, loops[k].size, chosen);
    }
    // Tasks are functions too, whatever function they are reached from.
    for &k in &own {
        if loops[k].task && !outlined.iter().any(|&o| nested(o, k)) {
            split(loops, k + 1..loops[k].end, loops[k].task_size, chosen);
        }
    }
}

fn expr_nodes(e: &Expr) -> usize {
    struct Count(usize);
    impl Visitor for Count {
        fn visit_expr(&mut self, e: &Expr) {
            // A vector wider than a register is one instruction per
            // register.
            let ty = e.ty();
            self.0 += (usize::from(ty.lanes) * usize::from(ty.bits.max(8))).div_ceil(128);
            walk_expr(self, e);
        }
    }
    let mut count = Count(0);
    count.visit_expr(e);
    count.0
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
        let Some(Captures {
            scalars,
            buffers: bufs,
        }) = self.captures(s, None)
        else {
            return Ok(false);
        };
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
            let names: Vec<String> = scalars.iter().map(|(n, _, _)| n.clone()).collect();
            let float_lets = self.float_lets_of(&names);
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
                    input: b.input,
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
        let status = self.set_new_local(ValType::I32);
        self.return_if_failed(status);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `for (name, 0, 8) { out[name] = name + name + .. }` with `terms`
    /// additions.
    fn big_loop(name: &str, terms: usize) -> Stmt {
        let v = Expr::var_i32(name);
        let value = (0..terms).fold(v.clone(), |sum, _| sum + v.clone());
        Stmt::For {
            var: name.into(),
            min: Expr::i32(0),
            extent: Expr::i32(8),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: v,
                value,
            }),
        }
    }

    fn address(s: &Stmt) -> usize {
        s as *const Stmt as usize
    }

    #[test]
    fn the_largest_loops_of_a_large_function_are_outlined_until_it_fits() {
        // 3 loops of about 3000 nodes each: outlining the first (the
        // largest) leaves about 6000, under the limit.
        let body = Stmt::Block(vec![
            big_loop("a", 1600),
            big_loop("b", 1500),
            big_loop("c", 1500),
        ]);
        let Stmt::Block(loops) = &body else {
            unreachable!()
        };
        let chosen = loops_to_outline(&body, false, Outlining::Large);
        assert_eq!(chosen, FastHashSet::from_iter([address(&loops[0])]));
        // A small function stays whole; with `Every`, every loop goes.
        let small = Stmt::Block(vec![big_loop("a", 100), big_loop("b", 100)]);
        assert!(loops_to_outline(&small, false, Outlining::Large).is_empty());
        assert_eq!(loops_to_outline(&small, false, Outlining::Every).len(), 2);
        // One loop that is the whole function is not outlined (the new
        // function would be as large).
        let whole = big_loop("a", 9000);
        assert!(loops_to_outline(&whole, false, Outlining::Large).is_empty());
    }
}
