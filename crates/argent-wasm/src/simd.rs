//! SIMD128 code generation for vector expressions.
//!
//! A vector of `n` lanes of `b` bits lives in `ceil(n * b / 128)` v128
//! locals (see [`VecVal`]). Lanes hold exactly the type's bits, so 8- and
//! 16-bit arithmetic wraps for free. Any node without a SIMD lowering is
//! computed lane by lane with scalar code and packed with `replace_lane`,
//! so every vector expression compiles; the patterns below only make the
//! common shapes fast, and each one matches the scalar semantics exactly.

use crate::CodegenError;
use crate::emit::{Binding, FnBuilder, VecVal, mem};
use crate::scalarize::lane_of;
use argent_ir::fast_hash::FastHashSet;
use argent_ir::visit::{Visitor, for_each_child, walk_expr};
use argent_ir::{BinOp, CallTarget, Expr, ExprKind, Intrinsic, Stmt, Type, UnaryOp};
use wasm_encoder::{Instruction as I, ValType};

/// Why a vector lowering did not happen.
pub(crate) enum VErr {
    /// No SIMD lowering for this shape: fall back to lanes.
    Unsupported,
    /// A real error (unbound name, ...).
    Fatal(CodegenError),
}

impl From<CodegenError> for VErr {
    fn from(e: CodegenError) -> Self {
        VErr::Fatal(e)
    }
}

type VResult<T> = Result<T, VErr>;

fn lanes_per_part(bits: u8) -> u16 {
    128 / bits as u16
}

fn layout_ok(lanes: u16, bits: u8) -> bool {
    matches!(bits, 8 | 16 | 32) && {
        let per = lanes_per_part(bits);
        lanes.is_multiple_of(per) || lanes < per
    }
}

fn part_count(lanes: u16, bits: u8) -> usize {
    (lanes as usize * bits as usize).div_ceil(128)
}

/// A v128 constant with every `bits`-wide lane equal to `value`.
fn splat_bits(bits: u8, value: i64) -> i128 {
    let lanes: Vec<i64> = vec![value; lanes_per_part(bits) as usize];
    pack(bits, &lanes)
}

fn pack(bits: u8, lanes: &[i64]) -> i128 {
    let mut out: u128 = 0;
    let mask: u128 = (1u128 << bits) - 1;
    for (k, v) in lanes.iter().enumerate() {
        out |= ((*v as u128) & mask) << (k * bits as usize);
    }
    out as i128
}

/// The constant-stride ramp `base + stride * [0..lanes)` if `e` is one.
fn dense_or_strided(index: &Expr) -> Option<(Expr, i64)> {
    if let ExprKind::Ramp { base, stride, .. } = index.kind()
        && base.ty().is_scalar()
        && let Some(s) = stride.as_int()
    {
        return Some((base.clone(), s));
    }
    None
}

/// A ramp of a scalar with a constant stride, as its base, stride and
/// lane count.
fn constant_stride_ramp(value: &Expr) -> Option<(&Expr, &Expr, u16)> {
    match value.kind() {
        ExprKind::Ramp {
            base,
            stride,
            lanes,
        } if base.ty().is_scalar() && stride.as_int().is_some() => Some((base, stride, *lanes)),
        _ => None,
    }
}

/// `Broadcast(FloatImm c)` as `c`.
fn float_broadcast(e: &Expr) -> Option<f64> {
    match e.kind() {
        ExprKind::Broadcast { value, .. } => value.as_float(),
        _ => None,
    }
}

/// `1 / c` when `c` is a power of two whose reciprocal is a normal f32.
fn exact_reciprocal(c: f64) -> Option<f64> {
    let f = c as f32;
    let r = 1.0 / f;
    let power_of_two = f.is_normal() && f.abs().to_bits() & 0x007f_ffff == 0;
    (power_of_two && r.is_normal()).then_some(r as f64)
}

/// The multiplier `m < 2^16` and shift `p` with `floor(x * m / 2^p) ==
/// floor(x / c)` for every `bits`-bit unsigned `x` (Granlund-Montgomery:
/// `2^p <= m*c <= 2^p + 2^(p-bits)`), if there is one.
fn unsigned_magic(c: i64, bits: u8) -> Option<(u64, u32)> {
    let n = bits as u32;
    let c = c as u64;
    (16..=32u32).find_map(|p| {
        let m = (1u64 << p).div_ceil(c);
        (m < (1 << 16) && m * c - (1u64 << p) <= 1u64 << (p - n)).then_some((m, p))
    })
}

/// The constants of `div_mod_unsigned_by_three` for lanes of `bits` bits:
/// the inverse of 3 modulo `2^bits` and `(2^bits - 1) / 3`, as the scalars
/// whose splats are hoisted out of loops.
fn three_inverse_and_step(bits: u8) -> (Expr, Expr) {
    if bits == 16 {
        (
            Expr::constant(Type::U16, 43691.0),
            Expr::constant(Type::U16, 21845.0),
        )
    } else {
        (
            Expr::constant(Type::I32, 0xAAAA_AAABu32 as i32 as f64),
            Expr::constant(Type::I32, 0x5555_5555 as f64),
        )
    }
}

/// The scalar whose 16-bit splat holds the magic multiplier `m`, as hoisted
/// out of loops.
fn magic_splat_value(m: u64) -> Expr {
    Expr::constant(Type::U16, m as f64)
}

/// Splits a gather's vector index into the part that differs per lane and
/// the sum of its broadcast terms (`v - x4(k * 256) + x4(3840)` into `v`
/// and `3840 - k * 256`), if it has any. Both sides wrap like the original
/// sum, so `base + (v + s) * size` is the same address.
fn split_gather_index(index: &Expr) -> (Expr, Option<Expr>) {
    fn go(e: &Expr, negate: bool, scalars: &mut Vec<(Expr, bool)>) -> Option<Expr> {
        match e.kind() {
            ExprKind::Broadcast { value, .. } if value.ty().is_scalar() => {
                scalars.push((value.clone(), negate));
                None
            }
            ExprKind::Binary {
                op: op @ (BinOp::Add | BinOp::Sub),
                a,
                b,
            } => {
                let a = go(a, negate, scalars);
                let b = go(b, negate != (*op == BinOp::Sub), scalars);
                match (a, b) {
                    (Some(a), Some(b)) if *op == BinOp::Add => Some(Expr::add(a, b)),
                    (Some(a), Some(b)) => Some(Expr::sub(a, b)),
                    (Some(a), None) => Some(a),
                    (None, Some(b)) if *op == BinOp::Add => Some(b),
                    (None, Some(b)) => {
                        Some(Expr::sub(Expr::broadcast(Expr::i32(0), b.ty().lanes), b))
                    }
                    (None, None) => None,
                }
            }
            // Vector terms keep their place (and sign) in the rebuilt sum.
            _ => Some(e.clone()),
        }
    }
    if index.ty().element() != Type::I32 {
        return (index.clone(), None);
    }
    let mut scalars = Vec::new();
    let Some(lanes) = go(index, false, &mut scalars) else {
        return (index.clone(), None);
    };
    let scalar = scalars
        .into_iter()
        .fold(None, |acc: Option<Expr>, (s, negate)| {
            Some(match (acc, negate) {
                (None, false) => s,
                (None, true) => Expr::sub(Expr::i32(0), s),
                (Some(a), false) => Expr::add(a, s),
                (Some(a), true) => Expr::sub(a, s),
            })
        });
    (lanes, scalar)
}

/// A load index whose clamped ramp was taken away, and the clamp's bounds
/// and ramp start (see [`FnBuilder::unclamped_index`]).
struct Unclamped {
    dense: Expr,
    lo: Expr,
    hi: Expr,
    first: Expr,
}

/// A value computed earlier in the current statement.
pub(crate) struct CachedVector {
    key: CacheKey,
    value: VecVal,
    /// The variables the key mentions and the registers of their bindings
    /// when it was computed (`None`: not recorded; the entry is dropped when
    /// the innermost let scope around its computation ends).
    deps: Option<Vec<(String, Option<u32>)>>,
}

/// What a vector cache entry holds the value of.
#[derive(PartialEq)]
enum CacheKey {
    /// An expression, with the mask width for bool vectors (0 otherwise).
    Expr { expr: Expr, mask_bits: u8 },
    /// One instruction (its encoding) applied to these registers: values
    /// numbered by how they were computed (see `FnBuilder::numbered_map2`).
    Instruction {
        opcode: Vec<u8>,
        a: Vec<u32>,
        b: Vec<u32>,
    },
    /// The byte offset `lane << shift` of one lane of `register` (see
    /// `FnBuilder::lane_offset`).
    LaneOffset {
        register: u32,
        lane: u16,
        shift: i32,
    },
    /// The base address `buffer.base + (scalar << shift)` of gathers (see
    /// `FnBuilder::gather_base`).
    GatherBase {
        buffer: String,
        shift: i32,
        scalar: Expr,
    },
    /// The `bytes` at `pointer + offset` in `buffer` (see
    /// `FnBuilder::pointer_load`).
    Bytes {
        buffer: String,
        pointer: u32,
        offset: u64,
        bytes: usize,
    },
}

impl CachedVector {
    /// Whether the cached value was read from `buffer`, so that a store to
    /// `buffer` makes it stale.
    pub(crate) fn loads_from(&self, buffer: &str) -> bool {
        match &self.key {
            CacheKey::Expr { expr, .. } => crate::emit::loads_from(expr, buffer),
            CacheKey::GatherBase { scalar, .. } => crate::emit::loads_from(scalar, buffer),
            CacheKey::Bytes { buffer: b, .. } => b == buffer,
            CacheKey::Instruction { .. } | CacheKey::LaneOffset { .. } => false,
        }
    }
}

/// The load of `bytes` (16, 8 or 4) into a register, the rest zeroed.
fn v128_load_of(bytes: usize, offset: u64) -> VResult<I<'static>> {
    Ok(match bytes {
        16 => I::V128Load(mem(offset, 0)),
        8 => I::V128Load64Zero(mem(offset, 0)),
        4 => I::V128Load32Zero(mem(offset, 0)),
        _ => return Err(VErr::Unsupported),
    })
}

/// A register that identifies a binding: bindings made within one
/// statement never share registers.
pub(crate) fn binding_id(b: &Binding) -> u32 {
    match b {
        Binding::Scalar { local, .. } => *local,
        Binding::Vector(v) => v.parts[0],
        Binding::Lanes { locals } => locals.first().copied().unwrap_or(u32::MAX),
    }
}

/// The gathers of 32-bit elements (loads with an index that is neither
/// dense nor strided) in `value`, leaving out those under a scalar select
/// (its branches run conditionally, so their loads may not be done early).
fn gathers_of(value: &Expr) -> Vec<Expr> {
    struct Gathers(Vec<Expr>);
    impl Visitor for Gathers {
        fn visit_expr(&mut self, e: &Expr) {
            match e.kind() {
                ExprKind::Select { .. } if e.ty().is_scalar() => return,
                ExprKind::Load { index, .. }
                    if e.ty().is_vector()
                        && e.ty().bits == 32
                        && !e.ty().is_bool()
                        && dense_or_strided(index).is_none()
                        && !matches!(index.kind(), ExprKind::Broadcast { .. })
                        && !self.0.contains(e) =>
                {
                    self.0.push(e.clone());
                }
                _ => {}
            }
            walk_expr(self, e);
        }
    }
    let mut g = Gathers(Vec::new());
    g.visit_expr(value);
    g.0
}

/// Whether computing `e` costs enough that an equal occurrence later in
/// the same statement should reuse its registers (variables, constants and
/// broadcasts are as cheap to recompute as to look up).
fn worth_sharing(e: &Expr) -> bool {
    match e.kind() {
        ExprKind::Load { .. }
        | ExprKind::Cast { .. }
        | ExprKind::Binary { .. }
        | ExprKind::Select { .. }
        | ExprKind::Call { .. }
        | ExprKind::Shuffle { .. } => true,
        // A ramp from a computed base costs the base, a splat and an add.
        ExprKind::Ramp { base, .. } => !matches!(
            base.kind(),
            ExprKind::Var(_) | ExprKind::IntImm(_) | ExprKind::FloatImm(_)
        ),
        _ => false,
    }
}

/// How many low bits of the unsigned lanes of `e` can be nonzero: fewer
/// than the width for a logical shift right by a constant from 1 to the
/// width less one.
fn significant_bits(e: &Expr) -> u8 {
    let bits = e.ty().bits;
    match e.kind() {
        ExprKind::Binary {
            op: BinOp::Shr, b, ..
        } if e.ty().is_uint() => match broadcast_const(b) {
            Some(k) if (1..i64::from(bits)).contains(&k) => bits - k as u8,
            _ => bits,
        },
        _ => bits,
    }
}

/// `Broadcast(IntImm c)` (or a vector constant) as `c`.
fn broadcast_const(e: &Expr) -> Option<i64> {
    match e.kind() {
        ExprKind::Broadcast { value, .. } => value.as_int(),
        ExprKind::IntImm(v) => Some(*v),
        _ => None,
    }
}

/// `e`, a sum of terms weighted by positive constants, rewritten as a
/// sum of shifted partial sums, one per bit of the weights (Horner's rule
/// in base two), when that saves a multiply: some weight is not a power
/// of two, or two terms share a weight. `None` otherwise.
///
/// `i32x4.mul` is two instructions on x86 (`pmulld`, ten cycles of
/// latency on Intel), while a shift and an add are one each. The taps of
/// a 5-tap gaussian, 1 4 6 4 1, become `(((b + c + d) << 1) + c) << 1 +
/// (a + e)`: five adds and two shifts for four adds, two shifts and a
/// multiply. Integer lanes wrap, so the regrouped sum is the same in
/// every bit.
fn regroup_weighted_sum(e: &Expr) -> Option<Expr> {
    fn terms<'a>(e: &'a Expr, out: &mut Vec<(u64, &'a Expr)>) {
        match e.kind() {
            ExprKind::Binary {
                op: BinOp::Add,
                a,
                b,
            } => {
                terms(a, out);
                terms(b, out);
            }
            ExprKind::Binary {
                op: BinOp::Mul,
                a,
                b,
            } => match (broadcast_const(a), broadcast_const(b)) {
                (_, Some(c)) if c > 0 && c < 1 << 16 => out.push((c as u64, a)),
                (Some(c), None) if c > 0 && c < 1 << 16 => out.push((c as u64, b)),
                _ => out.push((1, e)),
            },
            _ => out.push((1, e)),
        }
    }
    let mut weighted = Vec::new();
    terms(e, &mut weighted);
    let odd_weight = weighted.iter().any(|(c, _)| !c.is_power_of_two());
    let shared_weight = weighted
        .iter()
        .enumerate()
        .any(|(i, (c, _))| *c > 1 && weighted[..i].iter().any(|(d, _)| d == c));
    if !odd_weight && !shared_weight {
        return None;
    }
    let ty = e.ty();
    let top = weighted.iter().map(|(c, _)| 63 - c.leading_zeros()).max()?;
    let shifted = |x: Expr, k: u32| {
        let amount = Expr::broadcast(Expr::int(ty.element(), i64::from(k)), ty.lanes);
        Expr::binary(BinOp::Shl, x, amount)
    };
    // From the top bit down: each step doubles what has been summed so
    // far (as one shift, owed until the next group is added) and adds the
    // terms whose weights have that bit.
    let mut acc: Option<Expr> = None;
    let mut owed = 0;
    for bit in (0..=top).rev() {
        if acc.is_some() {
            owed += 1;
        }
        let group = weighted
            .iter()
            .filter(|(c, _)| c >> bit & 1 == 1)
            .map(|(_, t)| (*t).clone())
            .reduce(Expr::add);
        if let Some(g) = group {
            acc = Some(match acc.take() {
                None => g,
                Some(a) => Expr::add(shifted(a, std::mem::take(&mut owed)), g),
            });
        }
    }
    let acc = acc?;
    Some(if owed > 0 { shifted(acc, owed) } else { acc })
}

/// `value` if `e` is an exact widening cast of it to a type at least twice
/// as wide.
fn exact_widening(e: &Expr) -> Option<&Expr> {
    if let ExprKind::Cast { value, .. } = e.kind() {
        let (from, to) = (value.ty().element(), e.ty().element());
        if from.is_integer()
            && to.is_integer()
            && to.bits >= 2 * from.bits
            && Type::can_represent(to, from)
        {
            return Some(value);
        }
    }
    None
}

impl FnBuilder<'_> {
    fn v128_local(&mut self) -> u32 {
        self.local(ValType::V128)
    }

    fn const_part(&mut self, value: i128) -> u32 {
        self.emit(I::V128Const(value));
        let l = self.v128_local();
        self.emit(I::LocalSet(l));
        l
    }

    /// Applies a unary v128 instruction to every part.
    fn map1(&mut self, a: &VecVal, op: I<'static>, lane_bits: u8) -> VecVal {
        let parts = a
            .parts
            .iter()
            .map(|&p| {
                self.emit(I::LocalGet(p));
                self.emit(op.clone());
                let l = self.v128_local();
                self.emit(I::LocalSet(l));
                l
            })
            .collect();
        VecVal {
            parts,
            lane_bits,
            lanes: a.lanes,
        }
    }

    /// Applies a binary v128 instruction part by part.
    fn map2(&mut self, a: &VecVal, b: &VecVal, op: I<'static>) -> VecVal {
        let parts = a
            .parts
            .iter()
            .zip(&b.parts)
            .map(|(&pa, &pb)| {
                self.emit(I::LocalGet(pa));
                self.emit(I::LocalGet(pb));
                self.emit(op.clone());
                let l = self.v128_local();
                self.emit(I::LocalSet(l));
                l
            })
            .collect();
        VecVal {
            parts,
            lane_bits: a.lane_bits,
            lanes: a.lanes,
        }
    }

    /// Applies a shift-like instruction `(v128, i32) -> v128` to every part.
    fn map_shift(&mut self, a: &VecVal, op: I<'static>, amount: i32) -> VecVal {
        let parts = a
            .parts
            .iter()
            .map(|&p| {
                self.emit(I::LocalGet(p));
                self.emit(I::I32Const(amount));
                self.emit(op.clone());
                let l = self.v128_local();
                self.emit(I::LocalSet(l));
                l
            })
            .collect();
        VecVal {
            parts,
            lane_bits: a.lane_bits,
            lanes: a.lanes,
        }
    }

    fn with_const(&mut self, a: &VecVal, value: i64, op: I<'static>) -> VecVal {
        let c = self.const_part(splat_bits(a.lane_bits, value));
        let cv = VecVal {
            parts: vec![c; a.parts.len()],
            lane_bits: a.lane_bits,
            lanes: a.lanes,
        };
        self.map2(a, &cv, op)
    }

    /// Pushes lane `lane` of `v` as a scalar of type `ty`.
    pub(crate) fn extract_lane(&mut self, v: &VecVal, lane: u16, ty: Type) {
        let per = lanes_per_part(v.lane_bits);
        let part = v.parts[(lane / per) as usize];
        let k = (lane % per) as u8;
        self.emit(I::LocalGet(part));
        let signed = ty.is_int();
        match (v.lane_bits, ty.is_float()) {
            (32, true) => self.emit(I::F32x4ExtractLane(k)),
            (32, false) => self.emit(I::I32x4ExtractLane(k)),
            (16, _) if signed => self.emit(I::I16x8ExtractLaneS(k)),
            (16, _) => self.emit(I::I16x8ExtractLaneU(k)),
            (_, _) if signed => self.emit(I::I8x16ExtractLaneS(k)),
            _ => self.emit(I::I8x16ExtractLaneU(k)),
        }
        if ty.is_bool() {
            self.emit(I::I32Const(0));
            self.emit(I::I32Ne);
        }
    }

    fn replace_lane_instr(bits: u8, float: bool, k: u8) -> I<'static> {
        match (bits, float) {
            (32, true) => I::F32x4ReplaceLane(k),
            (32, false) => I::I32x4ReplaceLane(k),
            (16, _) => I::I16x8ReplaceLane(k),
            _ => I::I8x16ReplaceLane(k),
        }
    }

    /// Builds a vector from per-lane scalar code (`push` pushes lane `i`).
    fn build_lanes(
        &mut self,
        ty: Type,
        bits: u8,
        mut push: impl FnMut(&mut Self, u16) -> Result<(), CodegenError>,
    ) -> VResult<VecVal> {
        let per = lanes_per_part(bits);
        let n = part_count(ty.lanes, bits);
        let parts: Vec<u32> = (0..n).map(|_| self.const_part(0)).collect();
        for lane in 0..ty.lanes {
            let part = parts[(lane / per) as usize];
            self.emit(I::LocalGet(part));
            push(self, lane)?;
            if ty.is_bool() {
                // 0/1 to an all-ones mask.
                let t = self.set_new_local(ValType::I32);
                self.emit(I::I32Const(0));
                self.emit(I::LocalGet(t));
                self.emit(I::I32Sub);
            }
            self.emit(Self::replace_lane_instr(
                bits,
                ty.is_float(),
                (lane % per) as u8,
            ));
            self.emit(I::LocalSet(part));
        }
        Ok(VecVal {
            parts,
            lane_bits: bits,
            lanes: ty.lanes,
        })
    }

    /// Computes `e` lane by lane with scalar code.
    fn lanewise(&mut self, e: &Expr, bits: u8) -> VResult<VecVal> {
        self.build_lanes(e.ty(), bits, |s, lane| s.expr(&lane_of(e, lane)))
    }

    /// Any vector expression, bool vectors as 8-bit masks.
    pub(crate) fn vexpr_any(&mut self, e: &Expr) -> VResult<VecVal> {
        let hint = if e.ty().is_bool() { 8 } else { e.ty().bits };
        self.vexpr(e, hint)
    }

    /// Computes vector `e`; bool vectors come out as masks `mask_bits` wide.
    pub(crate) fn vexpr(&mut self, e: &Expr, mask_bits: u8) -> VResult<VecVal> {
        let ty = e.ty();
        let bits = if ty.is_bool() { mask_bits } else { ty.bits };
        if !layout_ok(ty.lanes, bits) || (ty.is_float() && ty.bits != 32) {
            return Err(VErr::Unsupported);
        }
        if ty.is_scalar() {
            return Err(VErr::Unsupported);
        }
        if !ty.is_bool()
            && !self.hoisted_vectors.is_empty()
            && let Some(v) = self.hoisted_vector(e)
        {
            return Ok(v);
        }
        let key_bits = if ty.is_bool() { mask_bits } else { 0 };
        let shareable = self.vector_cache.is_some() && worth_sharing(e);
        if shareable && let Some(v) = self.cached_vector(e, key_bits) {
            return Ok(v);
        }
        let mark = self.checkpoint();
        let v = match self.vexpr_node(e, mask_bits) {
            Ok(v) => v,
            Err(VErr::Unsupported) => {
                // Values computed by the discarded code are gone with it.
                self.roll_back(mark);
                self.lanewise(e, bits)?
            }
            Err(fatal) => return Err(fatal),
        };
        let v = if ty.is_bool() && v.lane_bits != mask_bits {
            self.mask_convert(&v, mask_bits)?
        } else {
            v
        };
        if shareable {
            self.cache_vector(e, key_bits, &v);
        }
        Ok(v)
    }

    /// Records that `value` holds `e` for the rest of the statement (while
    /// the variables `e` mentions keep their bindings).
    fn cache_vector(&mut self, e: &Expr, key_bits: u8, value: &VecVal) {
        if self.vector_cache.is_none() {
            return;
        }
        let deps = self.binding_deps(e);
        if let Some(cache) = &mut self.vector_cache {
            cache.push(CachedVector {
                key: CacheKey::Expr {
                    expr: e.clone(),
                    mask_bits: key_bits,
                },
                value: value.clone(),
                deps,
            });
        }
    }

    /// The variables of `e` with the register that identifies each one's
    /// current binding, or `None` when `e` is too big to walk cheaply.
    pub(crate) fn binding_deps(&self, e: &Expr) -> Option<Vec<(String, Option<u32>)>> {
        /// Enough for the index arithmetic of a gather; bigger values stay
        /// tied to their let scopes.
        const MAX_NODES: usize = 48;
        /// The names `e` reads, each once, borrowed: most have no local
        /// binding and are dropped, so only the kept ones are copied.
        fn collect<'e>(e: &'e Expr, names: &mut Vec<&'e str>, nodes: &mut usize) {
            *nodes += 1;
            if *nodes > MAX_NODES {
                return;
            }
            match e.kind() {
                ExprKind::Var(n) => {
                    if !names.contains(&n.as_str()) {
                        names.push(n);
                    }
                }
                // A let inside changes what its names mean; rare here.
                ExprKind::Let { .. } => *nodes = MAX_NODES + 1,
                _ => for_each_child(e, |c| collect(c, names, nodes)),
            }
        }
        let mut names = Vec::new();
        let mut nodes = 0;
        collect(e, &mut names, &mut nodes);
        if nodes > MAX_NODES {
            return None;
        }
        Some(
            names
                .into_iter()
                .filter_map(|n| {
                    let id = self.local_binding(n)?;
                    Some((n.to_string(), Some(id)))
                })
                .collect(),
        )
    }

    /// Computes `body` with `name` bound to `binding`.
    fn vexpr_in_scope(
        &mut self,
        name: String,
        binding: Binding,
        body: &Expr,
        mask_bits: u8,
    ) -> VResult<VecVal> {
        // Cached values that mention an outer `name` would be wrong inside
        // the body, and values mentioning this `name` would be wrong after it.
        let shadows = self.lookup(&name).is_some();
        let outer_cache = if shadows {
            self.vector_cache.replace(Vec::new())
        } else {
            None
        };
        let cache_mark = self.vector_cache.as_ref().map_or(0, Vec::len);
        self.scopes.push((name, binding));
        let r = self.vexpr(body, mask_bits);
        self.scopes.pop();
        if shadows {
            self.vector_cache = outer_cache;
        } else if let Some(cache) = &mut self.vector_cache {
            // Values whose variables are all known stay: a later let that
            // binds `name` to the same registers (an equal value, found in
            // the cache) makes them valid again, as in the second of two
            // inlined copies of one function. The rest die with the scope.
            let mut index = 0;
            cache.retain(|c| {
                let keep = index < cache_mark || c.deps.is_some();
                index += 1;
                keep
            });
        }
        r
    }

    /// The registers of an equal expression computed earlier in this
    /// statement, if any.
    fn cached_vector(&self, e: &Expr, key_bits: u8) -> Option<VecVal> {
        let cache = self.vector_cache.as_ref()?;
        cache
            .iter()
            .rev()
            .find(|c| {
                let CacheKey::Expr { expr, mask_bits } = &c.key else {
                    return false;
                };
                if *mask_bits != key_bits {
                    return false;
                }
                match &c.deps {
                    None => std::ptr::eq(expr.kind(), e.kind()) || expr == e,
                    Some(deps) => self.same_value(expr, deps, e),
                }
            })
            .map(|c| c.value.clone())
    }

    /// Whether `e` now computes what `cached` computed when its variables
    /// had the bindings `deps`: equal trees whose variables, by whatever
    /// name, are bound to the same registers (the second of two inlined
    /// copies of a function names its lets differently).
    pub(crate) fn same_value(
        &self,
        cached: &Expr,
        deps: &[(String, Option<u32>)],
        e: &Expr,
    ) -> bool {
        fn eq(b: &FnBuilder<'_>, deps: &[(String, Option<u32>)], x: &Expr, y: &Expr) -> bool {
            if x.ty() != y.ty() {
                return false;
            }
            let all = |xs: &[Expr], ys: &[Expr]| {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| eq(b, deps, x, y))
            };
            match (x.kind(), y.kind()) {
                (ExprKind::Var(nx), ExprKind::Var(ny)) => {
                    let then = deps.iter().find(|(n, _)| n == nx).and_then(|(_, id)| *id);
                    let now = b.local_binding(ny);
                    match (then, now) {
                        (Some(t), Some(n)) => t == n,
                        (None, None) => nx == ny,
                        _ => false,
                    }
                }
                (ExprKind::IntImm(a), ExprKind::IntImm(c)) => a == c,
                (ExprKind::FloatImm(a), ExprKind::FloatImm(c)) => a.to_bits() == c.to_bits(),
                (
                    ExprKind::Cast {
                        value: a,
                        saturating: sa,
                    },
                    ExprKind::Cast {
                        value: c,
                        saturating: sc,
                    },
                ) => sa == sc && eq(b, deps, a, c),
                (ExprKind::Unary { op: oa, value: a }, ExprKind::Unary { op: oc, value: c }) => {
                    oa == oc && eq(b, deps, a, c)
                }
                (
                    ExprKind::Binary {
                        op: oa,
                        a: a1,
                        b: a2,
                    },
                    ExprKind::Binary {
                        op: oc,
                        a: c1,
                        b: c2,
                    },
                ) => oa == oc && eq(b, deps, a1, c1) && eq(b, deps, a2, c2),
                (
                    ExprKind::Select {
                        cond: a1,
                        then: a2,
                        otherwise: a3,
                    },
                    ExprKind::Select {
                        cond: c1,
                        then: c2,
                        otherwise: c3,
                    },
                ) => eq(b, deps, a1, c1) && eq(b, deps, a2, c2) && eq(b, deps, a3, c3),
                (
                    ExprKind::Call {
                        target: ta,
                        args: a,
                    },
                    ExprKind::Call {
                        target: tc,
                        args: c,
                    },
                ) => ta == tc && all(a, c),
                (
                    ExprKind::Load {
                        buffer: ba,
                        index: a,
                    },
                    ExprKind::Load {
                        buffer: bc,
                        index: c,
                    },
                ) => ba == bc && eq(b, deps, a, c),
                (
                    ExprKind::Ramp {
                        base: a1,
                        stride: a2,
                        lanes: la,
                    },
                    ExprKind::Ramp {
                        base: c1,
                        stride: c2,
                        lanes: lc,
                    },
                ) => la == lc && eq(b, deps, a1, c1) && eq(b, deps, a2, c2),
                (
                    ExprKind::Broadcast {
                        value: a,
                        lanes: la,
                    },
                    ExprKind::Broadcast {
                        value: c,
                        lanes: lc,
                    },
                ) => la == lc && eq(b, deps, a, c),
                (
                    ExprKind::Shuffle {
                        vectors: a,
                        indices: ia,
                    },
                    ExprKind::Shuffle {
                        vectors: c,
                        indices: ic,
                    },
                ) => ia == ic && all(a, c),
                // Entries with lets inside have no recorded variables.
                _ => false,
            }
        }
        eq(self, deps, cached, e)
    }

    /// Changes the lane width of a mask vector.
    fn mask_convert(&mut self, v: &VecVal, to: u8) -> VResult<VecVal> {
        if !layout_ok(v.lanes, to) {
            return Err(VErr::Unsupported);
        }
        let mut v = v.clone();
        while v.lane_bits < to {
            v = self.widen2(&v, true);
        }
        while v.lane_bits > to {
            v = self.narrow2(&v, Narrow::SignedToSigned);
        }
        Ok(v)
    }

    /// Doubles the lane width (sign- or zero-extending).
    fn widen2(&mut self, v: &VecVal, signed: bool) -> VecVal {
        let out_bits = v.lane_bits * 2;
        let per_in = lanes_per_part(v.lane_bits);
        let per_out = lanes_per_part(out_bits);
        let n = part_count(v.lanes, out_bits);
        let mut parts = Vec::new();
        for j in 0..n {
            let start = j as u16 * per_out;
            let src = v.parts[(start / per_in) as usize];
            let high = !start.is_multiple_of(per_in);
            self.emit(I::LocalGet(src));
            self.emit(match (v.lane_bits, high, signed) {
                (8, false, true) => I::I16x8ExtendLowI8x16S,
                (8, true, true) => I::I16x8ExtendHighI8x16S,
                (8, false, false) => I::I16x8ExtendLowI8x16U,
                (8, true, false) => I::I16x8ExtendHighI8x16U,
                (_, false, true) => I::I32x4ExtendLowI16x8S,
                (_, true, true) => I::I32x4ExtendHighI16x8S,
                (_, false, false) => I::I32x4ExtendLowI16x8U,
                (_, true, false) => I::I32x4ExtendHighI16x8U,
            });
            let l = self.v128_local();
            self.emit(I::LocalSet(l));
            parts.push(l);
        }
        VecVal {
            parts,
            lane_bits: out_bits,
            lanes: v.lanes,
        }
    }

    /// Halves the lane width.
    fn narrow2(&mut self, v: &VecVal, how: Narrow) -> VecVal {
        let out_bits = v.lane_bits / 2;
        let src = if how == Narrow::Wrap {
            let mask = (1i64 << out_bits) - 1;
            self.with_const(v, mask, I::V128And)
        } else {
            v.clone()
        };
        let n = part_count(v.lanes, out_bits);
        let mut parts = Vec::new();
        for j in 0..n {
            let a = src.parts[2 * j];
            let b = *src.parts.get(2 * j + 1).unwrap_or(&a);
            self.emit(I::LocalGet(a));
            self.emit(I::LocalGet(b));
            self.emit(match (v.lane_bits, how) {
                (16, Narrow::SignedToSigned) => I::I8x16NarrowI16x8S,
                (16, _) => I::I8x16NarrowI16x8U,
                (_, Narrow::SignedToSigned) => I::I16x8NarrowI32x4S,
                (_, _) => I::I16x8NarrowI32x4U,
            });
            let l = self.v128_local();
            self.emit(I::LocalSet(l));
            parts.push(l);
        }
        VecVal {
            parts,
            lane_bits: out_bits,
            lanes: v.lanes,
        }
    }

    /// Splats, before a loop over `var`, every broadcast in `body` of a
    /// scalar that does not change inside the loop, so the loop body reuses
    /// a register instead of splatting again on every iteration.
    pub(crate) fn hoist_splats(
        &mut self,
        bound: &FastHashSet<&str>,
        body: &Stmt,
    ) -> Result<(), CodegenError> {
        // Enough registers for the hot broadcasts of big bodies, few enough
        // that they need not all live on the stack.
        const MAX_HOISTED: usize = 48;
        /// The broadcast values of the body.
        #[derive(Default)]
        struct Scan {
            values: Vec<Expr>,
        }
        impl Visitor for Scan {
            fn visit_expr(&mut self, e: &Expr) {
                if let ExprKind::Broadcast { value, .. } = e.kind()
                    && value.ty().is_scalar()
                    && !value.ty().is_bool()
                    && (value.ty().bits == 32 || (value.ty().is_integer() && value.ty().bits <= 32))
                    && self.values.len() < 4 * MAX_HOISTED
                    && !self.values.contains(value)
                {
                    self.values.push(value.clone());
                }
                // The `1 - w` of a vector float lerp.
                if let ExprKind::Call {
                    target: CallTarget::Intrinsic(Intrinsic::Lerp),
                    ..
                } = e.kind()
                    && e.ty().is_vector()
                    && e.ty().is_float()
                    && self.values.len() < 4 * MAX_HOISTED
                    && !self.values.contains(&Expr::f32(1.0))
                {
                    self.values.push(Expr::f32(1.0));
                }
                // The constants of an unsigned division by a constant.
                if let ExprKind::Binary {
                    op: BinOp::Div | BinOp::Mod,
                    a,
                    b,
                } = e.kind()
                    && a.ty().is_vector()
                    && a.ty().is_uint()
                    && let Some(c) = broadcast_const(b)
                    && c > 0
                    && c % 3 == 0
                    && ((c / 3) as u64).is_power_of_two()
                {
                    let bits = if a.ty().bits == 32 { 32 } else { 16 };
                    let (inverse, step) = three_inverse_and_step(bits);
                    for value in [inverse, step] {
                        if self.values.len() < 4 * MAX_HOISTED && !self.values.contains(&value) {
                            self.values.push(value);
                        }
                    }
                } else if let ExprKind::Binary {
                    op: BinOp::Div | BinOp::Mod,
                    a,
                    b,
                } = e.kind()
                    && a.ty().is_vector()
                    && a.ty().is_uint()
                    && a.ty().bits <= 16
                    && let Some(c) = broadcast_const(b)
                    && c > 0
                    && !(c as u64).is_power_of_two()
                    && let Some((m, _)) = unsigned_magic(c, a.ty().bits)
                {
                    let value = magic_splat_value(m);
                    if self.values.len() < 4 * MAX_HOISTED && !self.values.contains(&value) {
                        self.values.push(value);
                    }
                }
                walk_expr(self, e);
            }
        }
        /// Whether `e` is plain scalar arithmetic on variables outside `bound`.
        struct Invariant<'a> {
            bound: &'a FastHashSet<&'a str>,
            vars: Vec<String>,
            ok: bool,
        }
        impl Visitor for Invariant<'_> {
            fn visit_expr(&mut self, e: &Expr) {
                match e.kind() {
                    ExprKind::Var(n) if self.bound.contains(n.as_str()) => self.ok = false,
                    ExprKind::Var(n) => self.vars.push(n.clone()),
                    ExprKind::Load { .. }
                    | ExprKind::Let { .. }
                    | ExprKind::Shuffle { .. }
                    | ExprKind::Ramp { .. }
                    | ExprKind::Broadcast { .. } => self.ok = false,
                    ExprKind::Call { target, .. }
                        if !matches!(target, CallTarget::Intrinsic(_)) =>
                    {
                        self.ok = false
                    }
                    _ => {}
                }
                if self.ok {
                    walk_expr(self, e);
                }
            }
        }
        let mut scan = Scan::default();
        scan.visit_stmt(body);
        let mut hoisted = 0;
        for value in scan.values {
            if hoisted == MAX_HOISTED {
                break;
            }
            let mut check = Invariant {
                bound,
                vars: Vec::new(),
                ok: true,
            };
            check.visit_expr(&value);
            let bits = value.ty().bits;
            if !check.ok
                || !check
                    .vars
                    .iter()
                    .all(|n| matches!(self.lookup(n), Some(Binding::Scalar { .. })))
                || self.hoisted_splat(&value, bits).is_some()
            {
                continue;
            }
            let v = match self.splat_scalar(&value, lanes_per_part(bits), bits) {
                Ok(v) => v,
                Err(VErr::Fatal(e)) => return Err(e),
                Err(VErr::Unsupported) => continue,
            };
            self.hoisted_splats.push((value, bits, v.parts[0]));
            hoisted += 1;
        }
        Ok(())
    }

    /// The register holding an earlier hoisted splat of `value`.
    fn hoisted_splat(&self, value: &Expr, bits: u8) -> Option<u32> {
        self.hoisted_splats
            .iter()
            .rev()
            .find(|(v, b, _)| *b == bits && v == value)
            .map(|(_, _, l)| *l)
    }

    fn splat_scalar(&mut self, value: &Expr, lanes: u16, bits: u8) -> VResult<VecVal> {
        if !value.ty().is_bool()
            && let Some(local) = self.hoisted_splat(value, bits)
        {
            return Ok(VecVal {
                parts: vec![local; part_count(lanes, bits)],
                lane_bits: bits,
                lanes,
            });
        }
        self.expr(value)?;
        if value.ty().is_bool() {
            let t = self.set_new_local(ValType::I32);
            self.emit(I::I32Const(0));
            self.emit(I::LocalGet(t));
            self.emit(I::I32Sub);
        }
        self.emit(match (bits, value.ty().is_float()) {
            (32, true) => I::F32x4Splat,
            (32, false) => I::I32x4Splat,
            (16, _) => I::I16x8Splat,
            _ => I::I8x16Splat,
        });
        let l = self.v128_local();
        self.emit(I::LocalSet(l));
        Ok(VecVal {
            parts: vec![l; part_count(lanes, bits)],
            lane_bits: bits,
            lanes,
        })
    }

    fn vexpr_node(&mut self, e: &Expr, mask_bits: u8) -> VResult<VecVal> {
        let ty = e.ty();
        let elem = ty.element();
        let bits = if ty.is_bool() { mask_bits } else { ty.bits };
        match e.kind() {
            ExprKind::Var(name) => match self.lookup(name).cloned() {
                Some(Binding::Vector(v)) => Ok(v),
                Some(Binding::Lanes { locals, .. }) => self.build_lanes(ty, bits, |s, lane| {
                    s.emit(I::LocalGet(locals[lane as usize]));
                    Ok(())
                }),
                _ => Err(VErr::Fatal(CodegenError::Unbound(name.clone()))),
            },
            ExprKind::Broadcast { value, lanes } if value.ty().is_scalar() => {
                self.splat_scalar(value, *lanes, bits)
            }
            ExprKind::Ramp {
                base,
                stride,
                lanes,
            } if base.ty().is_scalar() && elem.is_integer() => {
                let b = self.splat_scalar(base, *lanes, bits)?;
                let per = lanes_per_part(bits);
                let mut parts = Vec::new();
                let steps = |j: usize| -> Vec<i64> {
                    (0..per).map(|k| j as i64 * per as i64 + k as i64).collect()
                };
                let add = int_instr(BinOp::Add, bits, false).unwrap();
                let mul = int_instr(BinOp::Mul, bits, false);
                let stride_vec = match stride.as_int() {
                    Some(_) => None,
                    None => Some(self.splat_scalar(stride, *lanes, bits)?),
                };
                for j in 0..b.parts.len() {
                    self.emit(I::LocalGet(b.parts[j]));
                    match (&stride_vec, stride.as_int()) {
                        (None, Some(s)) => {
                            let c: Vec<i64> = steps(j).iter().map(|k| k * s).collect();
                            self.emit(I::V128Const(pack(bits, &c)));
                        }
                        (Some(sv), _) => {
                            let Some(mul) = mul.clone() else {
                                return Err(VErr::Unsupported);
                            };
                            self.emit(I::LocalGet(sv.parts[0]));
                            self.emit(I::V128Const(pack(bits, &steps(j))));
                            self.emit(mul);
                        }
                        _ => unreachable!(),
                    }
                    self.emit(add.clone());
                    let l = self.v128_local();
                    self.emit(I::LocalSet(l));
                    parts.push(l);
                }
                Ok(VecVal {
                    parts,
                    lane_bits: bits,
                    lanes: *lanes,
                })
            }
            ExprKind::Cast { value, saturating } => self.vcast(e, value, *saturating, mask_bits),
            ExprKind::Unary { op, value } => {
                let v = self.vexpr(value, mask_bits)?;
                Ok(match op {
                    UnaryOp::Not | UnaryOp::BitNot => self.map1(&v, I::V128Not, v.lane_bits),
                    UnaryOp::Neg => {
                        let i = match (bits, ty.is_float()) {
                            (32, true) => I::F32x4Neg,
                            (32, false) => I::I32x4Neg,
                            (16, _) => I::I16x8Neg,
                            _ => I::I8x16Neg,
                        };
                        self.map1(&v, i, bits)
                    }
                })
            }
            ExprKind::Binary { op, a, b } => self.vbinary(e, *op, a, b, mask_bits),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                // Bounds inference narrows an input's region by the
                // condition of the arm that reads it: that arm must not
                // load where the condition fails (see `guard_speculative`).
                let speculative = self.loads_input(then) || self.loads_input(otherwise);
                // With a scalar condition only the arm taken runs.
                if speculative && cond.ty().is_scalar() {
                    return self.if_else_vectors(
                        cond,
                        |b| b.vexpr(then, mask_bits),
                        |b| b.vexpr(otherwise, mask_bits),
                    );
                }
                if speculative
                    && !(self.speculative_loads_fit(then) && self.speculative_loads_fit(otherwise))
                {
                    return Err(VErr::Unsupported);
                }
                self.speculative += u32::from(speculative);
                let arms = self
                    .vexpr(then, mask_bits)
                    .and_then(|t| Ok((t, self.vexpr(otherwise, mask_bits)?)));
                self.speculative -= u32::from(speculative);
                let (t, o) = arms?;
                if cond.ty().is_scalar() {
                    self.expr(cond)?;
                    let c = self.set_new_local(ValType::I32);
                    let parts = t
                        .parts
                        .iter()
                        .zip(&o.parts)
                        .map(|(&pt, &po)| {
                            self.emit(I::LocalGet(pt));
                            self.emit(I::LocalGet(po));
                            self.emit(I::LocalGet(c));
                            self.emit(I::Select);
                            let l = self.v128_local();
                            self.emit(I::LocalSet(l));
                            l
                        })
                        .collect();
                    return Ok(VecVal { parts, ..t });
                }
                let c = self.vexpr(cond, t.lane_bits)?;
                let parts = (0..t.parts.len())
                    .map(|j| {
                        self.emit(I::LocalGet(t.parts[j]));
                        self.emit(I::LocalGet(o.parts[j]));
                        self.emit(I::LocalGet(c.parts[j]));
                        self.emit(I::V128Bitselect);
                        let l = self.v128_local();
                        self.emit(I::LocalSet(l));
                        l
                    })
                    .collect();
                Ok(VecVal { parts, ..t })
            }
            ExprKind::Call {
                target: CallTarget::Intrinsic(intrinsic),
                args,
            } => self.vintrinsic(*intrinsic, args, ty, mask_bits),
            ExprKind::Let { name, value, body }
                if let Some((scalar, stride, lanes)) = constant_stride_ramp(value) =>
            {
                // A let-bound ramp (typically a shared index) stays visible
                // as one in the body, so loads and stores through it are
                // still recognised as dense or strided: only its base gets
                // a local.
                self.expr(scalar)?;
                let ty = scalar.ty();
                let local = self.set_new_local(crate::emit::val_type(ty)?);
                let scalar_name = format!("{name}.scalar");
                let body = argent_ir::visit::substitute(
                    body,
                    name,
                    &Expr::ramp(Expr::var(ty, scalar_name.clone()), stride.clone(), lanes),
                );
                self.vexpr_in_scope(scalar_name, Binding::Scalar { local, ty }, &body, mask_bits)
            }
            ExprKind::Let { name, value, body } if value.ty().is_vector() => {
                let v = self.vexpr_any(value)?;
                let recorded = self.binding_deps(value).map(|deps| {
                    let entry = (name.clone(), v.parts[0], value.clone(), deps);
                    self.let_values.push(entry);
                    self.let_values.len()
                });
                let r = self.vexpr_in_scope(name.clone(), Binding::Vector(v), body, mask_bits);
                if let Some(len) = recorded {
                    self.let_values.truncate(len - 1);
                }
                r
            }
            ExprKind::Let { name, value, body } => {
                // A scalar computed earlier in this run of stores binds
                // the same local (see `bind_value`), so what the body
                // computes from it is recognised as computed too.
                let binding = self.bind_value(value)?;
                self.vexpr_in_scope(name.clone(), binding, body, mask_bits)
            }
            ExprKind::Load { buffer, index } => self.vload(e, buffer, index, mask_bits),
            ExprKind::Shuffle { vectors, indices } => {
                let srcs: Vec<VecVal> = vectors
                    .iter()
                    .map(|v| self.vexpr(v, mask_bits))
                    .collect::<VResult<_>>()?;
                // Every source must use the same lane width.
                if srcs.iter().any(|s| s.lane_bits != bits) {
                    return Err(VErr::Unsupported);
                }
                if let Some(parts) = self.interleave_registers(&srcs, indices, bits) {
                    return Ok(VecVal {
                        parts,
                        lane_bits: bits,
                        lanes: ty.lanes,
                    });
                }
                let per = lanes_per_part(bits) as usize;
                let mut regs = Vec::new();
                let mut lane_src = Vec::new();
                for s in &srcs {
                    for lane in 0..s.lanes as usize {
                        lane_src.push((regs.len() + lane / per, (lane % per) as u8));
                    }
                    regs.extend(&s.parts);
                }
                let n = part_count(ty.lanes, bits);
                let bytes = bits as usize / 8;
                let mut parts = Vec::new();
                for j in 0..n {
                    let mut picks = [None; 16];
                    for k in 0..per {
                        let lane = j * per + k;
                        if lane >= indices.len() {
                            break;
                        }
                        let Some(&(reg, l)) = lane_src.get(indices[lane] as usize) else {
                            return Err(VErr::Unsupported);
                        };
                        for byte in 0..bytes {
                            picks[k * bytes + byte] = Some((reg, l * bytes as u8 + byte as u8));
                        }
                    }
                    parts.push(self.gather_bytes(&regs, &picks));
                }
                Ok(VecVal {
                    parts,
                    lane_bits: bits,
                    lanes: ty.lanes,
                })
            }
            _ => Err(VErr::Unsupported),
        }
    }

    /// `in[ramp(b, k, n)]` zero-extended to `to_bits`-wide lanes, for a
    /// channel of interleaved data whose pixels fit a lane: u8 with stride
    /// 4 or 2 (RGBA, two channels), u16 with stride 2. Masking the pixels
    /// of the window down to their first element already gives the
    /// channel's values zero-extended to the width of a pixel; then one
    /// narrow (u8 RGBA to 16 bits), nothing (to the pixel's own width) or
    /// one extend (u8 pairs to 32 bits) gives the lanes. Loading the
    /// channel's elements and widening them would narrow the window down
    /// to single elements and extend them again: for the f32 lanes of an
    /// RGBA channel that is two narrows and six extends per 16 pixels
    /// here. RGB u8 pixels do not fit a lane; their channels widen to 32
    /// bits by swizzles (`swizzled_channel_load`). `None` for anything else.
    fn widened_channel_load(&mut self, value: &Expr, to_bits: u8) -> VResult<Option<VecVal>> {
        let ExprKind::Load { buffer, index } = value.kind() else {
            return Ok(None);
        };
        let Some((base, k)) = dense_or_strided(index) else {
            return Ok(None);
        };
        let buf = self.buffer(buffer)?;
        let lanes = value.ty().lanes;
        match ChannelWidening::of(buf.ty, k, to_bits, lanes) {
            None => Ok(None),
            Some(ChannelWidening::Swizzle) => {
                self.swizzled_channel_load(&buf, &base, lanes).map(Some)
            }
            Some(ChannelWidening::MaskPixels { pixel_bits }) => {
                let (addr, first) = self.base_address(&buf, &base, 2)?;
                let addr = addr.expect("a base address used twice has a local");
                let element_mask = (1i64 << buf.ty.bits) - 1;
                let mask = self.const_part(splat_bits(pixel_bits, element_mask));
                // One register of whole pixels per 16 bytes of the window
                // (the last may reach into the slack after the buffer).
                let parts = (0..part_count(lanes, pixel_bits))
                    .map(|j| {
                        self.emit(I::LocalGet(addr));
                        self.emit(I::V128Load(mem(first + 16 * j as u64, 0)));
                        self.emit(I::LocalGet(mask));
                        self.emit(I::V128And);
                        self.set_new_local(ValType::V128)
                    })
                    .collect();
                let pixels = VecVal {
                    parts,
                    lane_bits: pixel_bits,
                    lanes,
                };
                Ok(Some(if pixel_bits > to_bits {
                    self.narrow2(&pixels, Narrow::SignedToUnsigned)
                } else if pixel_bits < to_bits {
                    self.widen2(&pixels, false)
                } else {
                    pixels
                }))
            }
        }
    }

    /// `widened_channel_load` of a channel read through a clamped index (a
    /// `repeat_edge` at the image's border, see `unclamped_index`):
    /// versioned like `versioned_load`, the channel widened straight from
    /// the window when the whole ramp is inside, gathered and extended at
    /// the edge.
    fn widened_versioned_channel_load(
        &mut self,
        value: &Expr,
        to_bits: u8,
    ) -> VResult<Option<VecVal>> {
        let ExprKind::Load { buffer, index } = value.kind() else {
            return Ok(None);
        };
        if dense_or_strided(index).is_some() {
            return Ok(None);
        }
        let lanes = value.ty().lanes;
        let Some(unclamped) = self.unclamped_index(index, lanes) else {
            return Ok(None);
        };
        let Some((_, k)) = dense_or_strided(&unclamped.dense) else {
            return Ok(None);
        };
        let buf = self.buffer(buffer)?;
        if ChannelWidening::of(buf.ty, k, to_bits, lanes).is_none() {
            return Ok(None);
        }
        let inside_load = Expr::load(value.ty(), buffer.clone(), unclamped.dense.clone());
        self.versioned(
            &unclamped,
            lanes,
            |b| {
                let v = b.widened_channel_load(&inside_load, to_bits)?;
                Ok(v.expect("the shape was checked"))
            },
            |b| {
                let mut v = b.gather(value, buffer, index, 32)?;
                while v.lane_bits < to_bits {
                    v = b.widen2(&v, false);
                }
                Ok(v)
            },
        )
        .map(Some)
    }

    /// A channel of interleaved u8 RGB pixels (`in[ramp(base, 3, lanes)]`)
    /// zero-extended to 32-bit lanes: four pixels span 10 bytes, so each
    /// register of four lanes is one load and one swizzle that puts each
    /// pixel's byte at the bottom of its lane and zeros above it (indices
    /// with the top bit set; V8 emits one `pshufb` for constant indices
    /// like these). Picking the bytes into one u8 vector and extending it
    /// takes about as many shuffles plus two or six extends.
    fn swizzled_channel_load(
        &mut self,
        buf: &crate::emit::BufBinding,
        base: &Expr,
        lanes: u16,
    ) -> VResult<VecVal> {
        let (addr, first) = self.base_address(buf, base, 2)?;
        let addr = addr.expect("a base address used twice has a local");
        let mut indices = [0x80u8; 16];
        for lane in 0..4 {
            indices[4 * lane] = 3 * lane as u8;
        }
        let indices = self.const_part(i128::from_le_bytes(indices));
        let parts = (0..lanes as u64 / 4)
            .map(|j| {
                self.emit(I::LocalGet(addr));
                self.emit(I::V128Load(mem(first + 12 * j, 0)));
                self.emit(I::LocalGet(indices));
                self.emit(I::I8x16Swizzle);
                self.set_new_local(ValType::V128)
            })
            .collect();
        Ok(VecVal {
            parts,
            lane_bits: 32,
            lanes,
        })
    }

    /// Every `k`-th element (the first of each group) of the window `regs`
    /// when a group is one wider lane (four u8 or two u16 elements in an
    /// i32 lane, two u8 in an i16 lane) or two (four u16 elements): masks
    /// each wide lane down to its low element and narrows, which needs no
    /// shuffle masks. V8 turns each `i8x16.shuffle` of two registers into
    /// two `pshufb` plus an `or`, loading both masks inside the loop; an
    /// RGBA channel of 16 pixels is four `and`s and three narrows this way
    /// instead of three two-register shuffles. Four u16 elements per pixel
    /// (an RGBA intermediate stored with `reorder_storage(c, x, y)`) take
    /// two rounds of masking the low u16 of each i32 lane and narrowing:
    /// six `and`s and three narrows for 8 pixels. `None` for other strides
    /// and element sizes.
    fn deinterleave_by_narrowing(&mut self, regs: &[u32], k: usize, bytes: usize) -> Option<u32> {
        // Per round: whether to mask first, and the narrow.
        let (mask_bits, rounds): (u8, &[(bool, I<'static>)]) = match (k, bytes) {
            (4, 1) => (
                32,
                &[(true, I::I16x8NarrowI32x4U), (false, I::I8x16NarrowI16x8U)],
            ),
            (2, 1) => (16, &[(true, I::I8x16NarrowI16x8U)]),
            (2, 2) => (32, &[(true, I::I16x8NarrowI32x4U)]),
            (4, 2) => (
                32,
                &[(true, I::I16x8NarrowI32x4U), (true, I::I16x8NarrowI32x4U)],
            ),
            _ => return None,
        };
        let low = (1i64 << (8 * bytes)) - 1;
        let mask = self.const_part(splat_bits(mask_bits, low));
        let mut level: Vec<u32> = regs.to_vec();
        // Each narrow halves the lane width: pairs of registers become one
        // (a missing partner only fills lanes past the window's end).
        for (masked, narrow) in rounds {
            if *masked {
                level = level
                    .iter()
                    .map(|&r| {
                        self.emit(I::LocalGet(r));
                        self.emit(I::LocalGet(mask));
                        self.emit(I::V128And);
                        self.set_new_local(ValType::V128)
                    })
                    .collect();
            }
            level = level
                .chunks(2)
                .map(|pair| {
                    self.emit(I::LocalGet(pair[0]));
                    self.emit(I::LocalGet(*pair.get(1).unwrap_or(&pair[0])));
                    self.emit(narrow.clone());
                    self.set_new_local(ValType::V128)
                })
                .collect();
        }
        (level.len() == 1).then(|| level[0])
    }

    /// The interleaving of two or four vectors of whole registers (lane `l`
    /// of source `j` at lane `k * l + j`: the channels of interleaved
    /// pixels) as a tree of unpacks: per register of each source, four
    /// sources take 8 shuffles (zips of `bits`-wide lanes, then of twice
    /// that), each one `punpckl*`/`punpckh*` in V8. Picking bytes
    /// (`gather_bytes`) takes 12 shuffles there, 8 of them with lanes left
    /// open, which V8 compiles to two `pshufb` and an `or` with their masks
    /// loaded in the loop. `None` for other shuffles.
    fn interleave_registers(
        &mut self,
        srcs: &[VecVal],
        indices: &[u32],
        bits: u8,
    ) -> Option<Vec<u32>> {
        let k = srcs.len();
        let n = srcs.first()?.lanes as usize;
        let per = lanes_per_part(bits) as usize;
        if !matches!(k, 2 | 4)
            || n % per != 0
            || (k == 4 && bits > 32)
            || srcs
                .iter()
                .any(|s| s.lanes as usize != n || s.lane_bits != bits)
            || indices.len() != k * n
            || indices
                .iter()
                .enumerate()
                .any(|(i, &index)| index as usize != (i % k) * n + i / k)
        {
            return None;
        }
        // `zip(a, b, bytes, high)`: the low (or high) halves of `a` and `b`
        // with their `bytes`-wide lanes alternating.
        let zip = |this: &mut Self, a: u32, b: u32, bytes: usize, high: bool| {
            let mut lanes = [0u8; 16];
            let half = 8 / bytes;
            for i in 0..half {
                let from = (i + if high { half } else { 0 }) * bytes;
                for byte in 0..bytes {
                    lanes[2 * i * bytes + byte] = (from + byte) as u8;
                    lanes[(2 * i + 1) * bytes + byte] = (16 + from + byte) as u8;
                }
            }
            this.emit(I::LocalGet(a));
            this.emit(I::LocalGet(b));
            this.emit(I::I8x16Shuffle(lanes));
            let l = this.v128_local();
            this.emit(I::LocalSet(l));
            l
        };
        let bytes = bits as usize / 8;
        let mut parts = Vec::with_capacity(k * n / per);
        for block in 0..n / per {
            let r: Vec<u32> = srcs.iter().map(|s| s.parts[block]).collect();
            if k == 2 {
                parts.push(zip(self, r[0], r[1], bytes, false));
                parts.push(zip(self, r[0], r[1], bytes, true));
                continue;
            }
            let low01 = zip(self, r[0], r[1], bytes, false);
            let high01 = zip(self, r[0], r[1], bytes, true);
            let low23 = zip(self, r[2], r[3], bytes, false);
            let high23 = zip(self, r[2], r[3], bytes, true);
            parts.push(zip(self, low01, low23, 2 * bytes, false));
            parts.push(zip(self, low01, low23, 2 * bytes, true));
            parts.push(zip(self, high01, high23, 2 * bytes, false));
            parts.push(zip(self, high01, high23, 2 * bytes, true));
        }
        Some(parts)
    }

    /// `gather_bytes` from three or more registers, or from two whose bytes
    /// do not move as whole 32-bit words: each register's bytes
    /// put in place by a swizzle whose other indices have the top bit set
    /// (zeros), then the results or-ed together. With constant indices V8
    /// emits one `pshufb` per swizzle and one `por` per or, where a
    /// two-register shuffle whose lanes fit no pattern of its own is two
    /// `pshufb`s and a `por`: an RGB channel of 16 pixels (three registers)
    /// is five instructions this way and seven as a tree of shuffles.
    fn swizzle_and_merge(
        &mut self,
        regs: &[u32],
        used: &[usize],
        picks: &[Option<(usize, u8)>; 16],
    ) -> u32 {
        let mut merged: Option<u32> = None;
        for &r in used {
            let mut indices = [0x80u8; 16];
            for (i, p) in picks.iter().enumerate() {
                if let Some((from, byte)) = p
                    && *from == r
                {
                    indices[i] = *byte;
                }
            }
            let indices = self.const_part(i128::from_le_bytes(indices));
            self.emit(I::LocalGet(regs[r]));
            self.emit(I::LocalGet(indices));
            self.emit(I::I8x16Swizzle);
            if let Some(m) = merged {
                self.emit(I::LocalGet(m));
                self.emit(I::V128Or);
            }
            merged = Some(self.set_new_local(ValType::V128));
        }
        merged.expect("two or more registers")
    }

    /// Builds one register whose byte `i` is byte `picks[i].1` of register
    /// `picks[i].0` (don't-care where `None`), with a tree of shuffles.
    fn gather_bytes(&mut self, regs: &[u32], picks: &[Option<(usize, u8)>; 16]) -> u32 {
        // The identity pick of one register needs no instruction.
        if let Some(Some((r0, _))) = picks.first()
            && picks
                .iter()
                .enumerate()
                .all(|(i, p)| p.is_none() || *p == Some((*r0, i as u8)))
        {
            return regs[*r0];
        }
        let mut used: Vec<usize> = picks.iter().flatten().map(|(r, _)| *r).collect();
        used.sort();
        used.dedup();
        if used.len() >= 3 || (used.len() == 2 && !moves_whole_words(picks)) {
            return self.swizzle_and_merge(regs, &used, picks);
        }
        // First level: pairs of source registers.
        let mut partials: Vec<(u32, [bool; 16])> = Vec::new();
        for pair in used.chunks(2) {
            let (ra, rb) = (pair[0], *pair.get(1).unwrap_or(&pair[0]));
            let mut lanes = [0u8; 16];
            let mut covered = [false; 16];
            for (i, p) in picks.iter().enumerate() {
                match p {
                    Some((r, b)) if *r == ra => {
                        lanes[i] = *b;
                        covered[i] = true;
                    }
                    Some((r, b)) if *r == rb => {
                        lanes[i] = 16 + *b;
                        covered[i] = true;
                    }
                    _ => {}
                }
            }
            self.emit(I::LocalGet(regs[ra]));
            self.emit(I::LocalGet(regs[rb]));
            self.emit(I::I8x16Shuffle(lanes));
            let l = self.v128_local();
            self.emit(I::LocalSet(l));
            partials.push((l, covered));
        }
        // Then merge partial results pairwise.
        while partials.len() > 1 {
            let mut next = Vec::new();
            for pair in partials.chunks(2) {
                if pair.len() == 1 {
                    next.push(pair[0]);
                    continue;
                }
                let ((pa, ca), (pb, cb)) = (pair[0], pair[1]);
                let mut lanes = [0u8; 16];
                let mut covered = [false; 16];
                for i in 0..16 {
                    if ca[i] {
                        lanes[i] = i as u8;
                        covered[i] = true;
                    } else if cb[i] {
                        lanes[i] = 16 + i as u8;
                        covered[i] = true;
                    }
                }
                self.emit(I::LocalGet(pa));
                self.emit(I::LocalGet(pb));
                self.emit(I::I8x16Shuffle(lanes));
                let l = self.v128_local();
                self.emit(I::LocalSet(l));
                next.push((l, covered));
            }
            partials = next;
        }
        partials[0].0
    }

    /// A dense load of 8-, 16- or 32-bit integers widened to twice their
    /// width as it is loaded: `v128.load8x8`, `load16x4` or `load32x2`,
    /// one instruction per register of wide lanes. An extend of a loaded
    /// register costs a load and one or two shuffles per wide register
    /// (V8 zeroes a register before each `extend_high`); the widening load
    /// is one `pmovzx`/`pmovsx` with a memory operand. `None` when `value`
    /// is not such a load, or when it was already loaded in this
    /// statement (extending that register reads memory once).
    fn widening_load(&mut self, value: &Expr, signed: bool) -> VResult<Option<VecVal>> {
        let ExprKind::Load { buffer, index } = value.kind() else {
            return Ok(None);
        };
        let Some((base, 1)) = dense_or_strided(index) else {
            return Ok(None);
        };
        let buf = self.buffer(buffer)?;
        let elem = value.ty().element();
        if buf.ty.is_bool() || buf.ty != elem || elem.bits > 32 {
            return Ok(None);
        }
        let out_bits = elem.bits * 2;
        let lanes = value.ty().lanes;
        let per_out = lanes_per_part(out_bits) as usize;
        if !layout_ok(lanes, out_bits) || !(lanes as usize).is_multiple_of(per_out) {
            return Ok(None);
        }
        if self.vector_cache.is_some()
            && worth_sharing(value)
            && self.cached_vector(value, 0).is_some()
        {
            return Ok(None);
        }
        let n = part_count(lanes, out_bits);
        let bytes = elem.bits as u64 / 8;
        let (addr, first) = self.base_address(&buf, &base, n)?;
        let mut parts = Vec::new();
        for j in 0..n {
            if let Some(addr) = addr {
                self.emit(I::LocalGet(addr));
            }
            let at = mem(first + j as u64 * per_out as u64 * bytes, 0);
            self.emit(match (elem.bits, signed) {
                (8, true) => I::V128Load8x8S(at),
                (8, false) => I::V128Load8x8U(at),
                (16, true) => I::V128Load16x4S(at),
                (16, false) => I::V128Load16x4U(at),
                (_, true) => I::V128Load32x2S(at),
                (_, false) => I::V128Load32x2U(at),
            });
            let l = self.v128_local();
            self.emit(I::LocalSet(l));
            parts.push(l);
        }
        Ok(Some(VecVal {
            parts,
            lane_bits: out_bits,
            lanes,
        }))
    }

    fn vload(&mut self, e: &Expr, buffer: &str, index: &Expr, mask_bits: u8) -> VResult<VecVal> {
        let buf = self.buffer(buffer)?;
        let ty = e.ty();
        let elem_bits = if buf.ty.is_bool() { 8 } else { buf.ty.bits };
        let bytes = elem_bits as usize / 8;
        if !layout_ok(ty.lanes, elem_bits) {
            return Err(VErr::Unsupported);
        }
        let per = lanes_per_part(elem_bits) as usize;
        let n = part_count(ty.lanes, elem_bits);
        let mut parts = Vec::new();
        match dense_or_strided(index) {
            // Several registers at a pointer hoisted out of the loop: each
            // 16 bytes at the pointer are loaded once per statement, so the
            // taps of a stencil over wide vectors share the registers they
            // overlap in (a 5-tap stencil of 8 x u32 reads x-2's second
            // register where it reads x+2's first).
            Some((base, 1))
                if n >= 2
                    && !buf.ty.is_bool()
                    && self.vector_cache.is_some()
                    && (self.speculative == 0 || !buf.input)
                    && let Some((pointer, first)) = self.hoisted_pointer_address(&buf, &base) =>
            {
                for j in 0..n {
                    let lanes_here = (ty.lanes as usize - j * per).min(per);
                    let offset = first + (j * per * bytes) as u64;
                    parts.push(self.pointer_load(buffer, pointer, offset, lanes_here * bytes)?);
                }
            }
            Some((base, 1)) => {
                let (addr, first) = self.base_address(&buf, &base, n)?;
                for j in 0..n {
                    let lanes_here = (ty.lanes as usize - j * per).min(per);
                    let offset = first + (j * per * bytes) as u64;
                    if let Some(addr) = addr {
                        self.emit(I::LocalGet(addr));
                    }
                    self.emit(v128_load_of(lanes_here * bytes, offset)?);
                    let l = self.v128_local();
                    self.emit(I::LocalSet(l));
                    parts.push(l);
                }
            }
            // Interleaved data (RGBA and friends): load the window and
            // pick every k-th element with shuffles.
            Some((base, k @ 2..=4)) => {
                let k = k as usize;
                let (addr, first) = self.base_address(&buf, &base, 2)?;
                let addr = addr.expect("a base address used twice has a local");
                for j in 0..n {
                    let lanes_here = (ty.lanes as usize - j * per).min(per);
                    let offset = first + (j * per * k * bytes) as u64;
                    let window = ((lanes_here - 1) * k + 1) * bytes;
                    let regs: Vec<u32> = (0..window.div_ceil(16))
                        .map(|w| {
                            self.emit(I::LocalGet(addr));
                            self.emit(I::V128Load(mem(offset + 16 * w as u64, 0)));
                            let l = self.v128_local();
                            self.emit(I::LocalSet(l));
                            l
                        })
                        .collect();
                    if let Some(part) = self.deinterleave_by_narrowing(&regs, k, bytes) {
                        parts.push(part);
                        continue;
                    }
                    let mut picks = [None; 16];
                    for lane in 0..lanes_here {
                        for byte in 0..bytes {
                            let p = lane * k * bytes + byte;
                            picks[lane * bytes + byte] = Some((p / 16, (p % 16) as u8));
                        }
                    }
                    parts.push(self.gather_bytes(&regs, &picks));
                }
            }
            _ => {
                if let ExprKind::Broadcast { value, lanes } = index.kind()
                    && value.ty().is_scalar()
                {
                    let scalar = Expr::load(buf.ty, buffer, value.clone());
                    let v = self.splat_scalar(&scalar, *lanes, elem_bits)?;
                    return self.finish_load(v, buf.ty, mask_bits);
                }
                if !buf.ty.is_bool()
                    && let Some(unclamped) = self.unclamped_index(index, ty.lanes)
                {
                    return self.versioned_load(e, buffer, index, unclamped, mask_bits);
                }
                return self.gather(e, buffer, index, mask_bits);
            }
        }
        let v = VecVal {
            parts,
            lane_bits: elem_bits,
            lanes: ty.lanes,
        };
        self.finish_load(v, buf.ty, mask_bits)
    }

    /// A register holding the `bytes` (16, 8 or 4) at `pointer + offset` in
    /// `buffer`, loaded by this statement once: later loads of the same
    /// bytes reuse it until a store to `buffer` (see `vector_store_run`).
    fn pointer_load(
        &mut self,
        buffer: &str,
        pointer: u32,
        offset: u64,
        bytes: usize,
    ) -> VResult<u32> {
        let key = CacheKey::Bytes {
            buffer: buffer.to_string(),
            pointer,
            offset,
            bytes,
        };
        if let Some(cache) = &self.vector_cache
            && let Some(hit) = cache.iter().rev().find(|c| c.key == key)
        {
            return Ok(hit.value.parts[0]);
        }
        self.emit(I::LocalGet(pointer));
        self.emit(v128_load_of(bytes, offset)?);
        let l = self.v128_local();
        self.emit(I::LocalSet(l));
        self.cache_register(key, l, 8, 16, Some(Vec::new()));
        Ok(l)
    }

    /// Records that `register` (one part of `lanes` lanes of `lane_bits`)
    /// holds the value `key` stands for, for the rest of the statement.
    fn cache_register(
        &mut self,
        key: CacheKey,
        register: u32,
        lane_bits: u8,
        lanes: u16,
        deps: Option<Vec<(String, Option<u32>)>>,
    ) {
        if let Some(cache) = &mut self.vector_cache {
            cache.push(CachedVector {
                key,
                value: VecVal {
                    parts: vec![register],
                    lane_bits,
                    lanes,
                },
                deps,
            });
        }
    }

    /// Loads a vector with vector indices: one load per lane straight into
    /// its lane. Broadcast terms of the index are added to the base address
    /// once rather than to every lane.
    fn gather(&mut self, e: &Expr, buffer: &str, index: &Expr, mask_bits: u8) -> VResult<VecVal> {
        let buf = self.buffer(buffer)?;
        let ty = e.ty();
        let elem_bits = if buf.ty.is_bool() { 8 } else { buf.ty.bits };
        let bytes = elem_bits as usize / 8;
        let per = lanes_per_part(elem_bits) as usize;
        let n = part_count(ty.lanes, elem_bits);
        let speculative = self.speculative > 0 && buf.input;
        let neighbour = if elem_bits == 32
            && ty.lanes.is_multiple_of(4)
            && self.vector_cache.is_some()
            && !speculative
        {
            self.gather_neighbour(e, buffer, index)
                .filter(|g| self.cached_vector(g, 0).is_none())
        } else {
            None
        };
        let (lanes_index, scalar) = split_gather_index(&self.expand_sum(index, 3));
        let idx = self.vexpr(&lanes_index, 32)?;
        if idx.lane_bits != 32 {
            return Err(VErr::Unsupported);
        }
        let shift = bytes.trailing_zeros() as i32;
        let base = match scalar {
            Some(scalar) => self.gather_base(&buf, &scalar, shift)?,
            None => buf.base,
        };
        if let Some(neighbour) = neighbour {
            return self.paired_gather(&idx, base, ty.lanes, &neighbour);
        }
        let mut parts = Vec::new();
        for j in 0..n {
            let lanes_here = (ty.lanes as usize - j * per).min(per);
            let part = self.v128_local();
            for k in 0..lanes_here {
                self.emit(I::LocalGet(base));
                self.lane_offset(&idx, (j * per + k) as u16, shift);
                self.emit(I::I32Add);
                self.guard_speculative(&buf, 0);
                let m = mem(0, shift as u32);
                if k == 0 {
                    // The first lane fills the register.
                    self.emit(match elem_bits {
                        32 => I::V128Load32Splat(m),
                        16 => I::V128Load16Splat(m),
                        _ => I::V128Load8Splat(m),
                    });
                } else {
                    self.emit(I::LocalGet(part));
                    let lane = k as u8;
                    self.emit(match elem_bits {
                        32 => I::V128Load32Lane { memarg: m, lane },
                        16 => I::V128Load16Lane { memarg: m, lane },
                        _ => I::V128Load8Lane { memarg: m, lane },
                    });
                }
                self.emit(I::LocalSet(part));
            }
            parts.push(part);
        }
        let v = VecVal {
            parts,
            lane_bits: elem_bits,
            lanes: ty.lanes,
        };
        self.finish_load(v, buf.ty, mask_bits)
    }

    /// A local holding `buf.base + (scalar << shift)`, the base address of a
    /// gather, computed once per statement (the gathers of a grid's
    /// corners and channels share a few bases).
    fn gather_base(
        &mut self,
        buf: &crate::emit::BufBinding,
        scalar: &Expr,
        shift: i32,
    ) -> VResult<u32> {
        let key = CacheKey::GatherBase {
            buffer: buf.name.clone(),
            shift,
            scalar: scalar.clone(),
        };
        if let Some(cache) = &self.vector_cache
            && let Some(hit) = cache.iter().rev().find(|c| {
                c.key == key
                    && c.deps
                        .as_ref()
                        .is_some_and(|deps| deps.iter().all(|(n, id)| self.local_binding(n) == *id))
            })
        {
            return Ok(hit.value.parts[0]);
        }
        self.push_byte_address(buf.base, scalar, shift as u32)?;
        let local = self.set_new_local(ValType::I32);
        let deps = self.binding_deps(scalar);
        if deps.is_some() {
            self.cache_register(key, local, 32, 1, deps);
        }
        Ok(local)
    }

    /// `e` with the let-bound vector variables among the terms of its sum
    /// replaced by their values (`depth` levels deep), when those values
    /// still mean what they meant at their lets: `g[c1]` with `c1 = (a + b)
    /// + x4(s)` is then a gather at `a + b` from a base moved by `s`, and
    /// shares its lanes with `g[c0]`, `c0 = a + b`.
    fn expand_sum(&self, e: &Expr, depth: u32) -> Expr {
        match e.kind() {
            ExprKind::Binary {
                op: op @ (BinOp::Add | BinOp::Sub),
                a,
                b,
            } if depth > 0 => {
                let a = self.expand_sum(a, depth);
                let b = self.expand_sum(b, depth);
                Expr::binary(*op, a, b)
            }
            ExprKind::Var(_) if depth > 0 => match self.vector_let_value(e) {
                Some(value) => self.expand_sum(&value, depth - 1),
                None => e.clone(),
            },
            _ => e.clone(),
        }
    }

    /// The value of the let-bound vector variable `e`, when it still means
    /// what it meant at its let.
    fn vector_let_value(&self, e: &Expr) -> Option<Expr> {
        let ExprKind::Var(name) = e.kind() else {
            return None;
        };
        let Some(Binding::Vector(v)) = self.lookup(name) else {
            return None;
        };
        let (_, _, value, deps) = self
            .let_values
            .iter()
            .rev()
            .find(|(n, id, _, _)| n == name && *id == v.parts[0])?;
        deps.iter()
            .all(|(n, id)| self.local_binding(n) == *id)
            .then(|| value.clone())
    }

    /// A load index with exactly one clamped ramp, `max(xN(lo), min(xN(hi),
    /// ramp(first, 1, N)))` (a boundary condition's `repeat_edge`, in either
    /// nesting and operand order, with or without `likely`), that is
    /// otherwise affine in the lanes: a sum of ramps and broadcasts, scaled
    /// by constants. Returns the index with the clamp taken away when its
    /// stride is one to four (a dense or interleaved load). Let-bound
    /// vector variables are seen through.
    fn unclamped_index(&self, index: &Expr, lanes: u16) -> Option<Unclamped> {
        let mut clamp = None;
        let (base, stride) = self.affine_lanes(index, lanes, &mut clamp, 4)?;
        let (lo, hi, first) = clamp?;
        (1..=4).contains(&stride).then(|| Unclamped {
            dense: Expr::ramp(base, Expr::i32(stride), lanes),
            lo,
            hi,
            first,
        })
    }

    /// `e` as `ramp(base, stride, lanes)`, reading one clamped ramp (see
    /// [`FnBuilder::unclamped_index`]) as its ramp and recording its bounds
    /// in `clamp`. Index arithmetic wraps, so the sum may be regrouped.
    fn affine_lanes(
        &self,
        e: &Expr,
        lanes: u16,
        clamp: &mut Option<(Expr, Expr, Expr)>,
        depth: u32,
    ) -> Option<(Expr, i64)> {
        if e.ty() != Type::I32.with_lanes(lanes) {
            return None;
        }
        match e.kind() {
            ExprKind::Broadcast { value, .. } if value.ty() == Type::I32 => {
                Some((value.clone(), 0))
            }
            ExprKind::Ramp { base, stride, .. } if base.ty() == Type::I32 => {
                Some((base.clone(), stride.as_int()?))
            }
            ExprKind::Binary {
                op: op @ (BinOp::Add | BinOp::Sub),
                a,
                b,
            } => {
                let (ba, sa) = self.affine_lanes(a, lanes, clamp, depth)?;
                let (bb, sb) = self.affine_lanes(b, lanes, clamp, depth)?;
                let base = match (ba.as_int(), bb.as_int()) {
                    (_, Some(0)) => ba,
                    (Some(0), _) if *op == BinOp::Add => bb,
                    _ => Expr::binary(*op, ba, bb),
                };
                let stride = if *op == BinOp::Add {
                    sa.wrapping_add(sb)
                } else {
                    sa.wrapping_sub(sb)
                };
                Some((base, stride))
            }
            ExprKind::Binary {
                op: BinOp::Mul,
                a,
                b,
            } => {
                let constant = |x: &Expr| match x.kind() {
                    ExprKind::Broadcast { value, .. } => value.as_int(),
                    _ => None,
                };
                let (c, other) = match (constant(a), constant(b)) {
                    (Some(c), _) => (c, b),
                    (None, Some(c)) => (c, a),
                    _ => return None,
                };
                let (base, stride) = self.affine_lanes(other, lanes, clamp, depth)?;
                let base = if c == 1 {
                    base
                } else {
                    Expr::mul(base, Expr::i32(c))
                };
                Some((base, stride.checked_mul(c)?))
            }
            ExprKind::Binary {
                op: op @ (BinOp::Min | BinOp::Max),
                a,
                b,
            } if clamp.is_none() => {
                let found = self.clamped_unit_ramp(*op, a, b, lanes)?;
                let first = found.2.clone();
                *clamp = Some(found);
                Some((first, 1))
            }
            ExprKind::Call {
                target: CallTarget::Intrinsic(Intrinsic::Likely),
                args,
            } => self.affine_lanes(&args[0], lanes, clamp, depth),
            ExprKind::Var(_) if depth > 0 => {
                self.affine_lanes(&self.vector_let_value(e)?, lanes, clamp, depth - 1)
            }
            _ => None,
        }
    }

    /// `op(a, b)` as `(lo, hi, first)` when it is `max(xN(lo), min(xN(hi),
    /// ramp(first, 1, N)))` or `min(xN(hi), max(xN(lo), ...))`, operands
    /// in either order.
    fn clamped_unit_ramp(
        &self,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        lanes: u16,
    ) -> Option<(Expr, Expr, Expr)> {
        let through = |e: &Expr| {
            let mut e = e.clone();
            for _ in 0..4 {
                match e.kind() {
                    ExprKind::Call {
                        target: CallTarget::Intrinsic(Intrinsic::Likely),
                        args,
                    } => e = args[0].clone(),
                    ExprKind::Var(_) => match self.vector_let_value(&e) {
                        Some(value) => e = value,
                        None => break,
                    },
                    _ => break,
                }
            }
            e
        };
        // The scalar bound and the other operand.
        let bound_and_rest = |a: &Expr, b: &Expr| {
            let (a, b) = (through(a), through(b));
            let scalar = |e: &Expr| match e.kind() {
                ExprKind::Broadcast { value, .. } if value.ty() == Type::I32 => Some(value.clone()),
                _ => None,
            };
            match (scalar(&a), scalar(&b)) {
                (Some(bound), None) => Some((bound, b)),
                (None, Some(bound)) => Some((bound, a)),
                _ => None,
            }
        };
        let (outer_bound, inner) = bound_and_rest(a, b)?;
        let ExprKind::Binary {
            op: inner_op @ (BinOp::Min | BinOp::Max),
            a: c,
            b: d,
        } = inner.kind()
        else {
            return None;
        };
        if *inner_op == op {
            return None;
        }
        let (inner_bound, ramp) = bound_and_rest(c, d)?;
        let (first, stride, n) = constant_stride_ramp(&ramp)?;
        if stride.as_int() != Some(1) || n != lanes || first.ty() != Type::I32 {
            return None;
        }
        let (lo, hi) = if op == BinOp::Max {
            (outer_bound, inner_bound)
        } else {
            (inner_bound, outer_bound)
        };
        Some((lo, hi, first.clone()))
    }

    /// A load whose index has a clamped ramp (see
    /// [`FnBuilder::unclamped_index`]): `if (all lanes of the ramp are
    /// inside its bounds) { dense or interleaved load } else { gather }`.
    /// Loop partitioning leaves clamps in its boundary pieces (the first
    /// and last tiles, rows and columns of an image), where most vectors
    /// are still inside the image, and a gather costs a lane extraction and
    /// a load per lane.
    fn versioned_load(
        &mut self,
        e: &Expr,
        buffer: &str,
        index: &Expr,
        unclamped: Unclamped,
        mask_bits: u8,
    ) -> VResult<VecVal> {
        self.versioned(
            &unclamped,
            e.ty().lanes,
            |b| b.vload(e, buffer, &unclamped.dense, mask_bits),
            |b| b.gather(e, buffer, index, mask_bits),
        )
    }

    /// `if (every lane of the clamped ramp is inside its clamp) { inside }
    /// else { edge }`, the two arms' vectors copied into the same registers.
    fn versioned(
        &mut self,
        unclamped: &Unclamped,
        lanes: u16,
        inside: impl FnOnce(&mut Self) -> VResult<VecVal>,
        edge: impl FnOnce(&mut Self) -> VResult<VecVal>,
    ) -> VResult<VecVal> {
        let Unclamped { lo, hi, first, .. } = unclamped;
        let last = Expr::add(first.clone(), Expr::i32(i64::from(lanes) - 1));
        let cond = Expr::and(
            Expr::le(lo.clone(), first.clone()),
            Expr::le(last, hi.clone()),
        );
        self.if_else_vectors(&cond, inside, edge)
    }

    /// `if (cond) { then } else { otherwise }` for scalar `cond`, the two
    /// arms' vectors copied into the same registers.
    fn if_else_vectors(
        &mut self,
        cond: &Expr,
        then: impl FnOnce(&mut Self) -> VResult<VecVal>,
        otherwise: impl FnOnce(&mut Self) -> VResult<VecVal>,
    ) -> VResult<VecVal> {
        self.expr(cond)?;
        self.emit(I::If(wasm_encoder::BlockType::Empty));
        let t = self.in_branch(then)?;
        let parts: Vec<u32> = t.parts.iter().map(|_| self.v128_local()).collect();
        self.copy_parts(&t.parts, &parts);
        self.emit(I::Else);
        let o = self.in_branch(otherwise)?;
        if o.parts.len() != parts.len() || o.lane_bits != t.lane_bits {
            return Err(VErr::Unsupported);
        }
        self.copy_parts(&o.parts, &parts);
        self.emit(I::End);
        Ok(VecVal { parts, ..t })
    }

    fn copy_parts(&mut self, from: &[u32], to: &[u32]) {
        for (&f, &t) in from.iter().zip(to) {
            self.emit(I::LocalGet(f));
            self.emit(I::LocalSet(t));
        }
    }

    /// Runs `f`, which emits one arm of an `if`: what it computes there is
    /// forgotten afterwards (the scalar and vector caches drop the entries
    /// it made), since the other arm never computed it.
    fn in_branch<T>(&mut self, f: impl FnOnce(&mut Self) -> VResult<T>) -> VResult<T> {
        let vectors = self.vector_cache.as_ref().map(Vec::len);
        let scalars = self.scalar_cache.as_ref().map(Vec::len);
        let r = f(self);
        if let (Some(cache), Some(len)) = (&mut self.vector_cache, vectors) {
            cache.truncate(len);
        }
        if let (Some(cache), Some(len)) = (&mut self.scalar_cache, scalars) {
            cache.truncate(len);
        }
        r
    }

    /// Pushes `idx[lane] << shift`, the byte offset of one gather lane. It
    /// is kept in a local for the rest of the statement, so gathers with
    /// the same lane indices at other bases (the channels of a grid)
    /// extract each lane once.
    fn lane_offset(&mut self, idx: &VecVal, lane: u16, shift: i32) {
        let per = lanes_per_part(idx.lane_bits);
        let register = idx.parts[(lane / per) as usize];
        let key = CacheKey::LaneOffset {
            register,
            lane: lane % per,
            shift,
        };
        if let Some(cache) = &self.vector_cache
            && let Some(hit) = cache
                .iter()
                .rev()
                .find(|c| c.deps.is_some() && c.key == key)
        {
            self.emit(I::LocalGet(hit.value.parts[0]));
            return;
        }
        self.extract_lane(idx, lane, Type::I32);
        if shift > 0 {
            self.emit(I::I32Const(shift));
            self.emit(I::I32Shl);
        }
        if self.vector_cache.is_some() {
            let local = self.local(ValType::I32);
            self.emit(I::LocalTee(local));
            self.cache_register(key, local, 32, 1, Some(Vec::new()));
        }
    }

    /// Gathers the 32-bit elements at `base + 4 * idx[k]` and their
    /// neighbours one element up with one 64-bit load per lane, then splits
    /// the pairs with two shuffles per four lanes. Returns the lower
    /// elements; the upper ones are cached as the value of `neighbour`,
    /// which the statement reads later. Half the lane extractions and loads
    /// of two separate gathers (trilinear interpolation reads `g[i]` and
    /// `g[i + 1]` at every corner).
    fn paired_gather(
        &mut self,
        idx: &VecVal,
        base: u32,
        lanes: u16,
        neighbour: &Expr,
    ) -> VResult<VecVal> {
        let mut lower = Vec::new();
        let mut upper = Vec::new();
        for j in 0..(lanes / 4) {
            // Two registers of two pairs each: [a0 b0 a1 b1], [a2 b2 a3 b3].
            let mut halves = [0; 2];
            for (h, half) in halves.iter_mut().enumerate() {
                let reg = self.v128_local();
                for k in 0..2u16 {
                    self.emit(I::LocalGet(base));
                    self.lane_offset(idx, j * 4 + h as u16 * 2 + k, 2);
                    self.emit(I::I32Add);
                    let m = mem(0, 2);
                    if k == 0 {
                        self.emit(I::V128Load64Zero(m));
                    } else {
                        self.emit(I::LocalGet(reg));
                        self.emit(I::V128Load64Lane { memarg: m, lane: 1 });
                    }
                    self.emit(I::LocalSet(reg));
                }
                *half = reg;
            }
            for (pick, out) in [(0u8, &mut lower), (1u8, &mut upper)] {
                let mut lanes = [0u8; 16];
                for (k, lane) in lanes.chunks_mut(4).enumerate() {
                    let first = (k as u8 * 2 + pick) * 4;
                    for (b, byte) in lane.iter_mut().enumerate() {
                        *byte = first + b as u8;
                    }
                }
                self.emit(I::LocalGet(halves[0]));
                self.emit(I::LocalGet(halves[1]));
                self.emit(I::I8x16Shuffle(lanes));
                let l = self.v128_local();
                self.emit(I::LocalSet(l));
                out.push(l);
            }
        }
        let value = |parts| VecVal {
            parts,
            lane_bits: 32,
            lanes,
        };
        self.cache_vector(neighbour, 0, &value(upper));
        Ok(value(lower))
    }

    /// The byte address of element `base` of `buf` as a local plus a
    /// constant byte offset, for `uses` accesses at further constant
    /// offsets: the address is computed once. With a single use the address
    /// is left on the stack instead (`None`).
    fn base_address(
        &mut self,
        buf: &crate::emit::BufBinding,
        base: &Expr,
        uses: usize,
    ) -> VResult<(Option<u32>, u64)> {
        let offset = self.address(buf, base)?;
        if uses <= 1 {
            return Ok((None, offset));
        }
        Ok((Some(self.set_new_local(ValType::I32)), offset))
    }

    /// Turns loaded bool bytes (0/1) into masks.
    fn finish_load(&mut self, v: VecVal, elem: Type, mask_bits: u8) -> VResult<VecVal> {
        if !elem.is_bool() {
            return Ok(v);
        }
        let m = self.with_const(&v, 0, I::I8x16Ne);
        self.mask_convert(&m, mask_bits)
    }

    /// Stores a vector; dense ramps become v128 stores.
    pub(crate) fn vstore(&mut self, buffer: &str, index: &Expr, value: &Expr) -> VResult<()> {
        let outer = self.vector_cache.replace(Vec::new());
        let r = self.vstore_statement(buffer, index, value);
        self.vector_cache = outer;
        r
    }

    /// Stores a vector as one statement, sharing values with the current
    /// vector cache (a fresh one, or a run of stores' own).
    pub(crate) fn vstore_statement(
        &mut self,
        buffer: &str,
        index: &Expr,
        value: &Expr,
    ) -> VResult<()> {
        let outer_gathers = std::mem::replace(&mut self.statement_gathers, gathers_of(value));
        let outer_scopes = std::mem::replace(&mut self.statement_scopes, self.scopes.len());
        let r = self.vstore_shared(buffer, index, value);
        self.statement_gathers = outer_gathers;
        self.statement_scopes = outer_scopes;
        r
    }

    /// The gather `buffer[index + 1]` (same lanes and type as `e`) that the
    /// current statement also reads, when `e = buffer[index]` is a gather
    /// of 32-bit elements whose index is `v + s` for a constant `s` (or
    /// just `v`).
    fn gather_neighbour(&self, e: &Expr, buffer: &str, index: &Expr) -> Option<Expr> {
        let (lanes, scalar) = split_gather_index(index);
        let offset = match &scalar {
            None => 0,
            Some(s) => s.as_int()?,
        };
        self.statement_gathers
            .iter()
            .find(|g| {
                let ExprKind::Load {
                    buffer: other,
                    index: other_index,
                } = g.kind()
                else {
                    return false;
                };
                if other != buffer || g.ty() != e.ty() {
                    return false;
                }
                let (other_lanes, other_scalar) = split_gather_index(other_index);
                let other_offset = match &other_scalar {
                    None => Some(0),
                    Some(s) => s.as_int(),
                };
                other_offset == Some(offset + 1) && other_lanes == lanes
            })
            .cloned()
    }

    /// [`Self::vstore`] with the statement's cache of computed values set up.
    pub(crate) fn vstore_shared(
        &mut self,
        buffer: &str,
        index: &Expr,
        value: &Expr,
    ) -> VResult<()> {
        let buf = self.buffer(buffer)?;
        let lanes = value.ty().lanes;
        if index.ty().lanes != lanes {
            return Err(VErr::Unsupported);
        }
        let mut v = self.vexpr(value, 8)?;
        if buf.ty.is_bool() {
            v = self.with_const(&v, 1, I::V128And);
        }
        let bytes = v.lane_bits as usize / 8;
        if bytes != buf.ty.bytes() {
            return Err(VErr::Unsupported);
        }
        let per = lanes_per_part(v.lane_bits) as usize;
        if let Some((base, 1)) = dense_or_strided(index) {
            let (addr, first) = self.base_address(&buf, &base, v.parts.len())?;
            for (j, &part) in v.parts.iter().enumerate() {
                let lanes_here = (lanes as usize - j * per).min(per);
                let offset = first + (j * per * bytes) as u64;
                if let Some(addr) = addr {
                    self.emit(I::LocalGet(addr));
                }
                self.emit(I::LocalGet(part));
                self.emit(match lanes_here * bytes {
                    16 => I::V128Store(mem(offset, 0)),
                    8 => I::V128Store64Lane {
                        memarg: mem(offset, 0),
                        lane: 0,
                    },
                    4 => I::V128Store32Lane {
                        memarg: mem(offset, 0),
                        lane: 0,
                    },
                    _ => return Err(VErr::Unsupported),
                });
            }
            return Ok(());
        }
        // Scattered or strided: one lane store per lane, straight from the
        // registers.
        if let Some((base, stride)) = dense_or_strided(index)
            && stride >= 0
        {
            // Constant stride: one address, the lanes at constant offsets.
            let (addr, first) = self.base_address(&buf, &base, lanes as usize)?;
            for lane in 0..lanes {
                if let Some(addr) = addr {
                    self.emit(I::LocalGet(addr));
                }
                let offset = first + (lane as i64 * stride * bytes as i64) as u64;
                self.store_lane(&v, lane, offset);
            }
            return Ok(());
        }
        for lane in 0..lanes {
            let offset = self.address(&buf, &lane_of(index, lane))?;
            self.store_lane(&v, lane, offset);
        }
        Ok(())
    }

    /// Stores lane `lane` of `v` at the address on the stack plus
    /// `offset`: `v128.store8_lane` and its wider forms, one instruction
    /// (`pextrb` to memory on x86) where extracting the lane and storing
    /// the scalar took two.
    fn store_lane(&mut self, v: &VecVal, lane: u16, offset: u64) {
        let per = lanes_per_part(v.lane_bits);
        self.emit(I::LocalGet(v.parts[(lane / per) as usize]));
        let k = (lane % per) as u8;
        let bytes = u64::from(v.lane_bits / 8);
        let memarg = mem(offset, bytes.trailing_zeros());
        self.emit(match bytes {
            1 => I::V128Store8Lane { memarg, lane: k },
            2 => I::V128Store16Lane { memarg, lane: k },
            4 => I::V128Store32Lane { memarg, lane: k },
            _ => I::V128Store64Lane { memarg, lane: k },
        });
    }

    fn vintrinsic(
        &mut self,
        intrinsic: Intrinsic,
        args: &[Expr],
        ty: Type,
        mask_bits: u8,
    ) -> VResult<VecVal> {
        let arg_ty = args[0].ty().element();
        let float = arg_ty.is_float();
        match intrinsic {
            Intrinsic::Likely => self.vexpr(&args[0], mask_bits),
            Intrinsic::Reinterpret if ty.bits == arg_ty.bits => {
                let v = self.vexpr(&args[0], mask_bits)?;
                Ok(v)
            }
            Intrinsic::Sqrt
            | Intrinsic::Floor
            | Intrinsic::Ceil
            | Intrinsic::Trunc
            | Intrinsic::Round
                if float =>
            {
                let v = self.vexpr(&args[0], 32)?;
                let i = match intrinsic {
                    Intrinsic::Sqrt => I::F32x4Sqrt,
                    Intrinsic::Floor => I::F32x4Floor,
                    Intrinsic::Ceil => I::F32x4Ceil,
                    Intrinsic::Trunc => I::F32x4Trunc,
                    _ => I::F32x4Nearest,
                };
                Ok(self.map1(&v, i, 32))
            }
            Intrinsic::IsNan if float => {
                let v = self.vexpr(&args[0], 32)?;
                Ok(self.map2(&v, &v, I::F32x4Ne))
            }
            Intrinsic::Abs => {
                let v = self.vexpr(&args[0], 32)?;
                if arg_ty.is_uint() {
                    return Ok(v);
                }
                let i = match (arg_ty.bits, float) {
                    (32, true) => I::F32x4Abs,
                    (32, false) => I::I32x4Abs,
                    (16, _) => I::I16x8Abs,
                    _ => I::I8x16Abs,
                };
                Ok(self.map1(&v, i, v.lane_bits))
            }
            Intrinsic::Absd => {
                let a = self.vexpr(&args[0], 32)?;
                let b = self.vexpr(&args[1], 32)?;
                if float {
                    let d = self.map2(&a, &b, I::F32x4Sub);
                    return Ok(self.map1(&d, I::F32x4Abs, 32));
                }
                let signed = arg_ty.is_int();
                let bits = arg_ty.bits;
                let hi = self.map2(&a, &b, minmax_instr(false, bits, signed));
                let lo = self.map2(&a, &b, minmax_instr(true, bits, signed));
                Ok(self.map2(&hi, &lo, int_instr(BinOp::Sub, bits, false).unwrap()))
            }
            Intrinsic::Lerp if float && args[2].ty().element().is_float() && ty.bits == 32 => {
                // `a * (1 - w) + b * w` with the same separately rounded
                // operations as the scalar expansion (`math::expand_lerp`),
                // so each lane is bit-exact; computed lane by lane it would
                // also take every gather in `a` and `b` apart.
                let a = self.vexpr(&args[0], 32)?;
                let b = self.vexpr(&args[1], 32)?;
                let w = self.vexpr(&args[2], 32)?;
                // As an expression, so lerps with one weight share it.
                let one_minus_w = self.vexpr(
                    &Expr::sub(Expr::broadcast(Expr::f32(1.0), ty.lanes), args[2].clone()),
                    32,
                )?;
                let a_part = self.map2(&a, &one_minus_w, I::F32x4Mul);
                let b_part = self.map2(&b, &w, I::F32x4Mul);
                Ok(self.map2(&a_part, &b_part, I::F32x4Add))
            }
            _ => Err(VErr::Unsupported),
        }
    }

    fn vbinary(
        &mut self,
        e: &Expr,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        mask_bits: u8,
    ) -> VResult<VecVal> {
        let t = a.ty().element();
        let float = t.is_float();
        let signed = t.is_int();
        let bits = if t.is_bool() { mask_bits } else { t.bits };
        // Widening multiply: extmul.
        if op == BinOp::Mul
            && let (Some(x), Some(y)) = (exact_widening(a), exact_widening(b))
            && x.ty() == y.ty()
            && t.bits == 2 * x.ty().bits
            && x.ty().bits <= 16
        {
            let xv = self.vexpr(x, 8)?;
            let yv = self.vexpr(y, 8)?;
            let s = x.ty().is_int();
            let (low, high) = match (x.ty().bits, s) {
                (8, true) => (I::I16x8ExtMulLowI8x16S, I::I16x8ExtMulHighI8x16S),
                (8, false) => (I::I16x8ExtMulLowI8x16U, I::I16x8ExtMulHighI8x16U),
                (_, true) => (I::I32x4ExtMulLowI16x8S, I::I32x4ExtMulHighI16x8S),
                (_, false) => (I::I32x4ExtMulLowI16x8U, I::I32x4ExtMulHighI16x8U),
            };
            let per_out = lanes_per_part(t.bits);
            let per_in = lanes_per_part(x.ty().bits);
            let n = part_count(e.ty().lanes, t.bits);
            let mut parts = Vec::new();
            for j in 0..n {
                let start = j as u16 * per_out;
                let src = (start / per_in) as usize;
                self.emit(I::LocalGet(xv.parts[src]));
                self.emit(I::LocalGet(yv.parts[src]));
                self.emit(if start.is_multiple_of(per_in) {
                    low.clone()
                } else {
                    high.clone()
                });
                let l = self.v128_local();
                self.emit(I::LocalSet(l));
                parts.push(l);
            }
            return Ok(VecVal {
                parts,
                lane_bits: t.bits,
                lanes: e.ty().lanes,
            });
        }
        // Dot product of i16 pairs: i32x4.dot_i16x8_s.
        if op == BinOp::Add
            && let Some(v) = self.try_dot(e, a, b)?
        {
            return Ok(v);
        }
        // A sum of 32-bit lanes weighted by constants (a filter's taps)
        // is regrouped by the bits of its weights, without multiplies.
        if op == BinOp::Add
            && !float
            && !t.is_bool()
            && bits == 32
            && let Some(regrouped) = regroup_weighted_sum(e)
        {
            return self.vexpr(&regrouped, 32);
        }
        let operand_hint = if t.is_bool() { mask_bits } else { 32 };
        // Multiplying integer lanes by a power of two is a shift: one
        // instruction where `i32x4.mul` is two on x86 (`pmulld`, with ten
        // cycles of latency on Intel) and `i8x16` has no multiply at all.
        if op == BinOp::Mul && !float && !t.is_bool() {
            let (x, c) = match (broadcast_const(a), broadcast_const(b)) {
                (_, Some(c)) => (a, c),
                (Some(c), None) => (b, c),
                _ => (a, 0),
            };
            if c > 0 && (c as u64).is_power_of_two() {
                let xv = self.vexpr(x, operand_hint)?;
                let k = c.trailing_zeros() as i32;
                if k == 0 {
                    return Ok(xv);
                }
                if k < i32::from(bits) {
                    return Ok(self.map_shift(&xv, shift_instr(true, bits, signed), k));
                }
            }
        }
        match op {
            BinOp::Shl | BinOp::Shr => {
                let Some(mut amount) = broadcast_const(b) else {
                    return Err(VErr::Unsupported);
                };
                let mut left = op == BinOp::Shl;
                if amount < 0 {
                    amount = -amount;
                    left = !left;
                }
                let av = self.vexpr(a, operand_hint)?;
                if amount >= bits as i64 {
                    if left || !signed {
                        let z = self.const_part(0);
                        return Ok(VecVal {
                            parts: vec![z; av.parts.len()],
                            ..av
                        });
                    }
                    amount = bits as i64 - 1;
                }
                let i = shift_instr(left, bits, signed);
                return Ok(self.map_shift(&av, i, amount as i32));
            }
            BinOp::Div | BinOp::Mod if !float => {
                let Some(c) = broadcast_const(b) else {
                    if bits == 32 {
                        let av = self.vexpr(a, operand_hint)?;
                        let bv = self.vexpr(b, operand_hint)?;
                        return Ok(self.div_mod_i32_via_f64(&av, &bv, op == BinOp::Div, signed));
                    }
                    return Err(VErr::Unsupported);
                };
                let av = self.vexpr(a, operand_hint)?;
                if c == 0 {
                    let z = self.const_part(0);
                    return Ok(VecVal {
                        parts: vec![z; av.parts.len()],
                        ..av
                    });
                }
                if c > 0 && (c as u64).is_power_of_two() {
                    let k = c.trailing_zeros() as i32;
                    return Ok(if op == BinOp::Mod {
                        self.with_const(&av, c - 1, I::V128And)
                    } else if k == 0 {
                        av
                    } else {
                        self.map_shift(&av, shift_instr(false, bits, signed), k)
                    });
                }
                if t.is_uint()
                    && let Some(v) = self.div_mod_unsigned_by_three(&av, c, op == BinOp::Div, t)
                {
                    return Ok(v);
                }
                if c > 0 && bits <= 16 {
                    if t.is_uint()
                        && let Some(v) = self.div_mod_unsigned_magic(&av, c, op == BinOp::Div, t)
                    {
                        return Ok(v);
                    }
                    return Ok(self.div_mod_by_const(&av, c, op == BinOp::Div, t));
                }
                if bits == 32 {
                    let cv = self.with_const_vector(&av, c);
                    return Ok(self.div_mod_i32_via_f64(&av, &cv, op == BinOp::Div, signed));
                }
                return Err(VErr::Unsupported);
            }
            // Division by a power of two is multiplication by its exact
            // reciprocal: both round the same real number, so the results
            // are identical, and a multiply is several times cheaper.
            BinOp::Div
                if float
                    && let Some(reciprocal) = float_broadcast(b).and_then(exact_reciprocal) =>
            {
                let av = self.vexpr(a, operand_hint)?;
                self.emit(I::F32Const((reciprocal as f32).into()));
                self.emit(I::F32x4Splat);
                let r = self.v128_local();
                self.emit(I::LocalSet(r));
                let rv = VecVal {
                    parts: vec![r; av.parts.len()],
                    ..av.clone()
                };
                return Ok(self.map2(&av, &rv, I::F32x4Mul));
            }
            _ => {}
        }
        let av = self.vexpr(a, operand_hint)?;
        let bv = self.vexpr(b, operand_hint)?;
        if av.lane_bits != bv.lane_bits {
            return Err(VErr::Unsupported);
        }
        if float {
            let i = match op {
                BinOp::Add => I::F32x4Add,
                BinOp::Sub => I::F32x4Sub,
                BinOp::Mul => I::F32x4Mul,
                BinOp::Div => I::F32x4Div,
                // pmin(b, a) = a < b ? a : b and pmax(b, a) = a > b ? a : b:
                // exactly the reference `min`/`max` (NaN and signed zeros
                // included), unlike f32x4.min/max.
                BinOp::Min => return Ok(self.map2(&bv, &av, I::F32x4PMin)),
                BinOp::Max => return Ok(self.map2(&bv, &av, I::F32x4PMax)),
                BinOp::Eq => I::F32x4Eq,
                BinOp::Ne => I::F32x4Ne,
                BinOp::Lt => I::F32x4Lt,
                BinOp::Le => I::F32x4Le,
                BinOp::Gt => I::F32x4Gt,
                BinOp::Ge => I::F32x4Ge,
                BinOp::Mod => {
                    // a - b * floor(a / b), as in scalar code.
                    let q = self.map2(&av, &bv, I::F32x4Div);
                    let f = self.map1(&q, I::F32x4Floor, 32);
                    let p = self.map2(&bv, &f, I::F32x4Mul);
                    return Ok(self.map2(&av, &p, I::F32x4Sub));
                }
                _ => return Err(VErr::Unsupported),
            };
            return Ok(self.map2(&av, &bv, i));
        }
        let i = match op {
            BinOp::BitAnd | BinOp::And => I::V128And,
            BinOp::BitOr | BinOp::Or => I::V128Or,
            BinOp::BitXor => I::V128Xor,
            BinOp::Min => minmax_instr(true, bits, signed),
            BinOp::Max => minmax_instr(false, bits, signed),
            BinOp::Mul if bits == 8 => {
                // 16-bit products, low bytes kept.
                let mut parts = Vec::new();
                for j in 0..av.parts.len() {
                    for high in [false, true] {
                        self.emit(I::LocalGet(av.parts[j]));
                        self.emit(I::LocalGet(bv.parts[j]));
                        self.emit(if high {
                            I::I16x8ExtMulHighI8x16U
                        } else {
                            I::I16x8ExtMulLowI8x16U
                        });
                        self.emit(I::V128Const(splat_bits(16, 0xff)));
                        self.emit(I::V128And);
                    }
                    self.emit(I::I8x16NarrowI16x8U);
                    let l = self.v128_local();
                    self.emit(I::LocalSet(l));
                    parts.push(l);
                }
                return Ok(VecVal { parts, ..av });
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                if t.is_bool() && !matches!(op, BinOp::Eq | BinOp::Ne) {
                    return Err(VErr::Unsupported);
                }
                cmp_instr(op, bits, signed)
            }
            other => match int_instr(other, bits, signed) {
                Some(i) => i,
                None => return Err(VErr::Unsupported),
            },
        };
        let commutative = matches!(
            op,
            BinOp::Add
                | BinOp::Mul
                | BinOp::BitAnd
                | BinOp::BitOr
                | BinOp::BitXor
                | BinOp::And
                | BinOp::Or
                | BinOp::Min
                | BinOp::Max
                | BinOp::Eq
                | BinOp::Ne
        );
        Ok(self.numbered_map2(&av, &bv, i, commutative))
    }

    /// [`FnBuilder::map2`], unless the same instruction was already applied
    /// to the same registers in this statement or run of stores: then
    /// those results. Equal expressions are found by the vector cache;
    /// this finds equal values whose expressions differ, such as the pair
    /// sums of a cascade that one unrolled row computes as `a + b` (with
    /// `b` a let of its own) and the row before as a `let` of `a + b`:
    /// their operands resolved to the same registers (registers are never
    /// reused within a statement or run, so they name values).
    fn numbered_map2(
        &mut self,
        a: &VecVal,
        b: &VecVal,
        op: I<'static>,
        commutative: bool,
    ) -> VecVal {
        if self.vector_cache.is_none() {
            return self.map2(a, b, op);
        }
        let (x, y) = if commutative && b.parts < a.parts {
            (b, a)
        } else {
            (a, b)
        };
        let mut opcode = Vec::new();
        wasm_encoder::Encode::encode(&op, &mut opcode);
        let key = CacheKey::Instruction {
            opcode,
            a: x.parts.clone(),
            b: y.parts.clone(),
        };
        if let Some(cache) = &self.vector_cache
            && let Some(hit) = cache.iter().rev().find(|c| c.key == key)
        {
            return hit.value.clone();
        }
        let v = self.map2(a, b, op);
        if let Some(cache) = &mut self.vector_cache {
            cache.push(CachedVector {
                key,
                value: v.clone(),
                deps: Some(Vec::new()),
            });
        }
        v
    }

    /// `c` in every lane of a vector shaped like `like`.
    fn with_const_vector(&mut self, like: &VecVal, c: i64) -> VecVal {
        let part = self.const_part(splat_bits(like.lane_bits, c));
        VecVal {
            parts: vec![part; like.parts.len()],
            ..like.clone()
        }
    }

    /// Euclidean `a / b` or `a % b` of 32-bit lanes (signed or unsigned),
    /// with `x / 0 == x % 0 == 0` as in scalar code, two lanes at a time
    /// in f64: `floor(a / |b|)` is exact there (53-bit mantissas; a
    /// quotient of 32-bit integers that is not an integer lies at least
    /// `1 / |a|` of its size away from one), and the sign of `b` is
    /// applied to the integer quotient, so that `i32::MIN / -1` wraps as
    /// the scalar code does. SIMD128 has no integer division; this is
    /// about 20 instructions for four lanes, against four scalar
    /// divisions and the lane moves around them.
    fn div_mod_i32_via_f64(&mut self, a: &VecVal, b: &VecVal, div: bool, signed: bool) -> VecVal {
        let (convert, truncate) = if signed {
            (I::F64x2ConvertLowI32x4S, I::I32x4TruncSatF64x2SZero)
        } else {
            (I::F64x2ConvertLowI32x4U, I::I32x4TruncSatF64x2UZero)
        };
        // Lanes 2 and 3 moved to lanes 0 and 1.
        let high_lanes = [8u8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
        let low_then_low = [0u8, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
        let mut parts = Vec::with_capacity(a.parts.len());
        for (&pa, &pb) in a.parts.iter().zip(&b.parts) {
            // floor(a / |b|) for each half, truncated back to i32 lanes 0-1.
            for high in [false, true] {
                // By position, not by local: `a % a` reads one local twice,
                // and only the divisor takes its absolute value.
                for (p, is_divisor) in [(pa, false), (pb, true)] {
                    self.emit(I::LocalGet(p));
                    if high {
                        self.emit(I::LocalGet(p));
                        self.emit(I::I8x16Shuffle(high_lanes));
                    }
                    self.emit(convert.clone());
                    if is_divisor {
                        self.emit(I::F64x2Abs);
                    }
                }
                self.emit(I::F64x2Div);
                self.emit(I::F64x2Floor);
                self.emit(truncate.clone());
            }
            self.emit(I::I8x16Shuffle(low_then_low));
            let q = self.v128_local();
            self.emit(I::LocalSet(q));
            if signed {
                // -q where b < 0.
                self.emit(I::I32Const(0));
                self.emit(I::I32x4Splat);
                self.emit(I::LocalGet(q));
                self.emit(I::I32x4Sub);
                self.emit(I::LocalGet(q));
                self.emit(I::LocalGet(pb));
                self.emit(I::I32Const(0));
                self.emit(I::I32x4Splat);
                self.emit(I::I32x4LtS);
                self.emit(I::V128Bitselect);
                self.emit(I::LocalSet(q));
            }
            if div {
                self.emit(I::LocalGet(q));
            } else {
                // a - q * b: in [0, |b|) for the Euclidean quotient.
                self.emit(I::LocalGet(pa));
                self.emit(I::LocalGet(q));
                self.emit(I::LocalGet(pb));
                self.emit(I::I32x4Mul);
                self.emit(I::I32x4Sub);
            }
            // 0 where b == 0.
            self.emit(I::LocalGet(pb));
            self.emit(I::I32Const(0));
            self.emit(I::I32x4Splat);
            self.emit(I::I32x4Ne);
            self.emit(I::V128And);
            let r = self.v128_local();
            self.emit(I::LocalSet(r));
            parts.push(r);
        }
        VecVal { parts, ..a.clone() }
    }

    /// Unsigned `x / c` or `x % c` for `c = 3 * 2^k`, in 5 lane-wise
    /// operations after the shift by `k` instead of the widening multiply's
    /// 11 or so (the box blur's `/ 3`).
    ///
    /// Why it is exact: with `inv` the inverse of 3 modulo `2^N` (`N` = 16 or
    /// 32 bits) and `x = 3q + r`, the wrapping product `m = x * inv` is
    /// `q + r * inv`. For N = 16 that is `q` in `[0, 21845]` when `r = 0`,
    /// `q + 43691` in `[43691, 65535]` when `r = 1` and `q + 21846` in
    /// `[21846, 43690]` when `r = 2` (and the same pattern for N = 32 with
    /// `inv = 0xAAAAAAAB`). Adding `s = 21845` (`0x5555_5555`) once and
    /// twice wraps the two wrong candidates above the right one, so
    /// `q = min_u(m, m + s, m + 2s)`. `tests/exec.rs` checks every u8 and
    /// u16 value, and u32 values around each range's ends. 8-bit lanes are
    /// widened first.
    fn div_mod_unsigned_by_three(
        &mut self,
        x: &VecVal,
        c: i64,
        div: bool,
        ty: Type,
    ) -> Option<VecVal> {
        if c <= 0 || c % 3 != 0 || !((c / 3) as u64).is_power_of_two() {
            return None;
        }
        let k = (c / 3).trailing_zeros() as i32;
        let wide = if ty.bits == 8 {
            self.widen2(x, false)
        } else {
            x.clone()
        };
        let bits = wide.lane_bits;
        let shifted = if k == 0 {
            wide.clone()
        } else {
            self.map_shift(&wide, shift_instr(false, bits, false), k)
        };
        let (inverse, step) = three_inverse_and_step(bits);
        let [inverse, step] = [inverse, step].map(|value| match self.hoisted_splat(&value, bits) {
            Some(local) => local,
            None => {
                let v = splat_bits(bits, value.as_int().expect("an integer constant"));
                self.const_part(v)
            }
        });
        let (mul, add, min) = if bits == 16 {
            (I::I16x8Mul, I::I16x8Add, I::I16x8MinU)
        } else {
            (I::I32x4Mul, I::I32x4Add, I::I32x4MinU)
        };
        let mut parts = Vec::new();
        for &part in &shifted.parts {
            let m = self.v128_local();
            let plus_step = self.v128_local();
            self.emit(I::LocalGet(part));
            self.emit(I::LocalGet(inverse));
            self.emit(mul.clone());
            self.emit(I::LocalTee(m));
            self.emit(I::LocalGet(step));
            self.emit(add.clone());
            self.emit(I::LocalTee(plus_step));
            self.emit(I::LocalGet(step));
            self.emit(add.clone());
            self.emit(I::LocalGet(plus_step));
            self.emit(min.clone());
            self.emit(I::LocalGet(m));
            self.emit(min.clone());
            let q = self.v128_local();
            self.emit(I::LocalSet(q));
            parts.push(q);
        }
        let mut q = VecVal {
            parts,
            lane_bits: bits,
            lanes: x.lanes,
        };
        if !div {
            // x - q * c, exact since q * c <= x.
            let (mul, sub) = if bits == 16 {
                (I::I16x8Mul, I::I16x8Sub)
            } else {
                (I::I32x4Mul, I::I32x4Sub)
            };
            let prod = self.with_const(&q, c, mul);
            q = self.map2(&wide, &prod, sub);
        }
        Some(if ty.bits == 8 {
            self.narrow2(&q, Narrow::SignedToUnsigned)
        } else {
            q
        })
    }

    /// Unsigned `x / c` or `x % c` for 8/16-bit lanes as a 16x16->32-bit
    /// multiply by a magic number and a shift (Granlund-Montgomery: with
    /// `2^p <= m*c <= 2^p + 2^(p-N)`, `floor(x*m / 2^p) == floor(x / c)` for
    /// every `x < 2^N`), when the magic number fits in 16 bits.
    fn div_mod_unsigned_magic(
        &mut self,
        x: &VecVal,
        c: i64,
        div: bool,
        ty: Type,
    ) -> Option<VecVal> {
        let (m, p) = unsigned_magic(c, ty.bits)?;
        let wide = if ty.bits == 8 {
            self.widen2(x, false)
        } else {
            x.clone()
        };
        let magic = match self.hoisted_splat(&magic_splat_value(m), 16) {
            Some(local) => local,
            None => {
                self.emit(I::I32Const(m as i32));
                self.emit(I::I16x8Splat);
                let magic = self.v128_local();
                self.emit(I::LocalSet(magic));
                magic
            }
        };
        let mut parts = Vec::new();
        for &part in &wide.parts {
            for high in [false, true] {
                self.emit(I::LocalGet(part));
                self.emit(I::LocalGet(magic));
                self.emit(if high {
                    I::I32x4ExtMulHighI16x8U
                } else {
                    I::I32x4ExtMulLowI16x8U
                });
                self.emit(I::I32Const(p as i32));
                self.emit(I::I32x4ShrU);
            }
            // Quotients are below 2^16, so the saturating narrow is exact.
            self.emit(I::I16x8NarrowI32x4U);
            let l = self.v128_local();
            self.emit(I::LocalSet(l));
            parts.push(l);
        }
        let mut q = VecVal {
            parts,
            lane_bits: 16,
            lanes: x.lanes,
        };
        if !div {
            // x - q * c, exact in 16-bit lanes since q * c <= x.
            let prod = self.with_const(&q, c, I::I16x8Mul);
            q = self.map2(&wide, &prod, I::I16x8Sub);
        }
        Some(if ty.bits == 8 {
            self.narrow2(&q, Narrow::SignedToUnsigned)
        } else {
            q
        })
    }

    /// Euclidean `x / c` or `x % c` for 8/16-bit lanes and a positive
    /// constant `c`, through f32: for |x| < 2^24 the correctly rounded
    /// quotient is within less than 1/c of x/c, so its floor is exact.
    fn div_mod_by_const(&mut self, x: &VecVal, c: i64, div: bool, ty: Type) -> VecVal {
        let signed = ty.is_int();
        let mut wide = x.clone();
        while wide.lane_bits < 32 {
            wide = self.widen2(&wide, signed);
        }
        let f = self.map1(&wide, I::F32x4ConvertI32x4S, 32);
        self.emit(I::F32Const((c as f32).into()));
        self.emit(I::F32x4Splat);
        let divisor = self.v128_local();
        self.emit(I::LocalSet(divisor));
        let dv = VecVal {
            parts: vec![divisor; f.parts.len()],
            ..f.clone()
        };
        let q = self.map2(&f, &dv, I::F32x4Div);
        // Truncation is the floor for the non-negative quotients of
        // unsigned types.
        let q = if signed {
            self.map1(&q, I::F32x4Floor, 32)
        } else {
            q
        };
        let mut q = self.map1(&q, I::I32x4TruncSatF32x4S, 32);
        if !div {
            let prod = self.with_const(&q, c, I::I32x4Mul);
            q = self.map2(&wide, &prod, I::I32x4Sub);
        }
        // The result is within the type's range, so the saturating
        // narrows are exact and need no masking.
        self.narrow_to(q, true, ty, true, 32)
    }

    /// `i32(a[2i]) * i32(b[2i]) + i32(a[2i+1]) * i32(b[2i+1])` over i16
    /// vectors `a`, `b` (even and odd lanes picked by shuffles).
    fn try_dot(&mut self, e: &Expr, a: &Expr, b: &Expr) -> VResult<Option<VecVal>> {
        if e.ty().element() != Type::I32 {
            return Ok(None);
        }
        let (Some((a1, b1, even)), Some((a2, b2, odd))) = (dot_operands(a), dot_operands(b)) else {
            return Ok(None);
        };
        let n = even.len();
        let is_even = even.iter().enumerate().all(|(i, &x)| x == 2 * i as u32);
        let is_odd = odd.iter().enumerate().all(|(i, &x)| x == 2 * i as u32 + 1);
        if a1 != a2 || b1 != b2 || !is_even || !is_odd || odd.len() != n {
            return Ok(None);
        }
        if a1.ty().lanes as usize != 2 * n || n % 4 != 0 {
            return Ok(None);
        }
        let av = self.vexpr(&a1, 16)?;
        let bv = self.vexpr(&b1, 16)?;
        let v = self.map2(&av, &bv, I::I32x4DotI16x8S);
        Ok(Some(VecVal {
            lanes: n as u16,
            lane_bits: 32,
            ..v
        }))
    }

    fn vcast(
        &mut self,
        e: &Expr,
        value: &Expr,
        saturating: bool,
        mask_bits: u8,
    ) -> VResult<VecVal> {
        let from = value.ty().element();
        let to = e.ty().element();
        if let Some(v) = self.cast_peephole(e, value, saturating)? {
            return Ok(v);
        }
        if from == to {
            return self.vexpr(value, mask_bits);
        }
        if to.is_bool() {
            let v = self.vexpr(value, 32)?;
            let i = if from.is_float() {
                I::F32x4Ne
            } else {
                cmp_instr(BinOp::Ne, v.lane_bits, false)
            };
            let z = self.const_part(0);
            let zv = VecVal {
                parts: vec![z; v.parts.len()],
                ..v.clone()
            };
            return Ok(self.map2(&v, &zv, i));
        }
        if from.is_bool() {
            let bits = if to.is_float() { 32 } else { to.bits };
            let m = self.vexpr(value, bits)?;
            let one = self.with_const(&m, 1, I::V128And);
            return Ok(if to.is_float() {
                self.map1(&one, I::F32x4ConvertI32x4S, 32)
            } else {
                one
            });
        }
        if to.is_integer()
            && from.is_integer()
            && to.bits > from.bits
            && !(saturating && from.is_int() && to.is_uint())
            && let Some(v) = self.widening_load(value, from.is_int())?
        {
            let mut v = v;
            while v.lane_bits < to.bits {
                v = self.widen2(&v, from.is_int());
            }
            return Ok(v);
        }
        // A channel of interleaved u8 or u16 pixels widened to 32-bit lanes
        // (as they are, or to convert to f32: the values fit the signed
        // conversion).
        if (to.bits == 32 || to.is_float())
            && from.is_uint()
            && from.bits <= 16
            && self.cached_vector(value, 0).is_none()
            && let Some(v) = match self.widened_channel_load(value, 32)? {
                Some(v) => Some(v),
                None => self.widened_versioned_channel_load(value, 32)?,
            }
        {
            return Ok(if to.is_float() {
                self.map1(&v, I::F32x4ConvertI32x4S, 32)
            } else {
                v
            });
        }
        let mut v = self.vexpr(value, 32)?;
        if to.is_float() {
            while v.lane_bits < 32 {
                v = self.widen2(&v, from.is_int());
            }
            let i = if from.is_uint() && from.bits == 32 {
                I::F32x4ConvertI32x4U
            } else {
                I::F32x4ConvertI32x4S
            };
            return Ok(self.map1(&v, i, 32));
        }
        if from.is_float() {
            if to.is_uint() && to.bits == 32 {
                return Ok(self.map1(&v, I::I32x4TruncSatF32x4U, 32));
            }
            v = self.map1(&v, I::I32x4TruncSatF32x4S, 32);
            return Ok(self.narrow_to(v, true, to, saturating, 32));
        }
        // Integer to integer.
        if to.bits == from.bits {
            if saturating && from.is_uint() && to.is_int() {
                let max = to.max_value() as i64;
                return Ok(self.with_const(&v, max, minmax_instr(true, from.bits, false)));
            }
            if saturating && from.is_int() && to.is_uint() {
                return Ok(self.with_const(&v, 0, minmax_instr(false, from.bits, true)));
            }
            return Ok(v);
        }
        if to.bits > from.bits {
            if saturating && from.is_int() && to.is_uint() {
                v = self.with_const(&v, 0, minmax_instr(false, from.bits, true));
            }
            while v.lane_bits < to.bits {
                v = self.widen2(&v, from.is_int());
            }
            return Ok(v);
        }
        let significant = if from.is_uint() {
            significant_bits(value)
        } else {
            from.bits
        };
        Ok(self.narrow_to(v, from.is_int(), to, saturating, significant))
    }

    /// Narrows integer lanes (signed or not per `signed`) to `to`, wrapping
    /// or saturating. Of unsigned lanes only the low `significant` bits can
    /// be set (see [`significant_bits`]).
    fn narrow_to(
        &mut self,
        mut v: VecVal,
        signed: bool,
        to: Type,
        saturating: bool,
        significant: u8,
    ) -> VecVal {
        if saturating && signed {
            // narrow_*_sat clamp signed input exactly; chaining them clamps
            // to the final range.
            while v.lane_bits > to.bits {
                let last = v.lane_bits / 2 == to.bits;
                let how = if last && to.is_uint() {
                    Narrow::SignedToUnsigned
                } else {
                    Narrow::SignedToSigned
                };
                v = self.narrow2(&v, how);
            }
            return v;
        }
        // Lanes that fit need neither a clamp nor a mask: the (signed-input)
        // unsigned narrows keep them exactly. Wrapping keeps the low bits,
        // so fitting in `to`'s width suffices; saturating to a signed type
        // needs them below its sign bit. The rounding `u8((x + 128) >> 8)`
        // of u16 lanes is one narrow.
        let room = if saturating && to.is_int() {
            to.bits - 1
        } else {
            to.bits
        };
        let fits = significant <= room;
        // Below 2^(bits - 1) the lanes read the same signed, and one
        // unsigned narrow of signed lanes saturates them exactly to an
        // unsigned type: `sat_u16(x >> 8)` of u32 lanes is one narrow too.
        let saturates_in_one =
            saturating && to.is_uint() && v.lane_bits == 2 * to.bits && significant < v.lane_bits;
        if saturating && !fits && !saturates_in_one {
            // After the clamp every lane fits in `to`.
            let max = to.max_value() as i64;
            v = self.with_const(&v, max, minmax_instr(true, v.lane_bits, false));
        }
        let how = if saturating || fits {
            Narrow::SignedToUnsigned
        } else {
            Narrow::Wrap
        };
        while v.lane_bits > to.bits {
            v = self.narrow2(&v, how);
        }
        v
    }

    /// Saturating add/sub, rounding average and q15 multiply patterns.
    fn cast_peephole(
        &mut self,
        e: &Expr,
        value: &Expr,
        saturating: bool,
    ) -> VResult<Option<VecVal>> {
        let to = e.ty().element();
        if !to.is_integer() || to.bits > 16 {
            return Ok(None);
        }
        if to.bits == 16
            && let Some(v) = self.widened_channel_load(value, 16)?
        {
            return Ok(Some(v));
        }
        let narrow_operand = |x: &Expr| -> Option<Expr> {
            if let Some(inner) = exact_widening(x)
                && inner.ty().element() == to
            {
                return Some(inner.clone());
            }
            // A constant that fits the narrow type.
            if let Some(c) = broadcast_const(x)
                && (c as f64) >= to.min_value()
                && (c as f64) <= to.max_value()
                && let ExprKind::Broadcast { lanes, .. } = x.kind()
            {
                return Some(Expr::broadcast(Expr::int(to, c), *lanes));
            }
            None
        };
        // saturate(wide(a) +- wide(b)) -> add_sat / sub_sat
        if saturating
            && let ExprKind::Binary { op, a, b } = value.kind()
            && matches!(op, BinOp::Add | BinOp::Sub)
            && value.ty().element().bits >= 2 * to.bits
            && (*op == BinOp::Add || value.ty().is_int())
            && value.ty().element().is_integer()
            && let (Some(x), Some(y)) = (narrow_operand(a), narrow_operand(b))
            && (exact_widening(a).is_some() || exact_widening(b).is_some())
        {
            let xv = self.vexpr(&x, 8)?;
            let yv = self.vexpr(&y, 8)?;
            let i = match (op, to.bits, to.is_int()) {
                (BinOp::Add, 8, false) => I::I8x16AddSatU,
                (BinOp::Add, 8, true) => I::I8x16AddSatS,
                (BinOp::Add, _, false) => I::I16x8AddSatU,
                (BinOp::Add, _, true) => I::I16x8AddSatS,
                (_, 8, false) => I::I8x16SubSatU,
                (_, 8, true) => I::I8x16SubSatS,
                (_, _, false) => I::I16x8SubSatU,
                (_, _, true) => I::I16x8SubSatS,
            };
            return Ok(Some(self.map2(&xv, &yv, i)));
        }
        // (wide(a) + wide(b) + 1) >> 1 (or / 2) -> avgr_u
        if to.is_uint()
            && let ExprKind::Binary { op, a: sum, b: by } = value.kind()
            && ((*op == BinOp::Shr && broadcast_const(by) == Some(1))
                || (*op == BinOp::Div && broadcast_const(by) == Some(2)))
            && value.ty().element().bits >= 2 * to.bits
            && value.ty().element().is_integer()
            && let ExprKind::Binary {
                op: BinOp::Add,
                a: s1,
                b: one,
            } = sum.kind()
            && broadcast_const(one) == Some(1)
            && let ExprKind::Binary {
                op: BinOp::Add,
                a: wa,
                b: wb,
            } = s1.kind()
            && let (Some(x), Some(y)) = (exact_widening(wa), exact_widening(wb))
            && x.ty().element() == to
            && y.ty().element() == to
        {
            let xv = self.vexpr(x, 8)?;
            let yv = self.vexpr(y, 8)?;
            let i = if to.bits == 8 {
                I::I8x16AvgrU
            } else {
                I::I16x8AvgrU
            };
            return Ok(Some(self.map2(&xv, &yv, i)));
        }
        // saturate_i16((i32(a) * i32(b) + 16384) >> 15) -> q15mulr_sat_s
        if saturating
            && to == Type::I16
            && let ExprKind::Binary {
                op: BinOp::Shr,
                a: sum,
                b: by,
            } = value.kind()
            && broadcast_const(by) == Some(15)
            && value.ty().element() == Type::I32
            && let ExprKind::Binary {
                op: BinOp::Add,
                a: prod,
                b: round,
            } = sum.kind()
            && broadcast_const(round) == Some(16384)
            && let ExprKind::Binary {
                op: BinOp::Mul,
                a: wa,
                b: wb,
            } = prod.kind()
            && let (Some(x), Some(y)) = (exact_widening(wa), exact_widening(wb))
            && x.ty().element() == Type::I16
            && y.ty().element() == Type::I16
        {
            let xv = self.vexpr(x, 16)?;
            let yv = self.vexpr(y, 16)?;
            return Ok(Some(self.map2(&xv, &yv, I::I16x8Q15MulrSatS)));
        }
        Ok(None)
    }
}

/// Whether every aligned group of four picked bytes is one aligned 32-bit
/// word of one source (or left open): a shuffle of 32-bit lanes, which V8
/// compiles to one `shufps`, `pshufd` or blend.
fn moves_whole_words(picks: &[Option<(usize, u8)>; 16]) -> bool {
    picks.chunks(4).all(|word| {
        let Some(&Some((reg, byte))) = word.iter().find(|p| p.is_some()) else {
            return true;
        };
        let start = byte - byte % 4;
        let offset = word.iter().position(|p| p.is_some()).expect("found above") as u8;
        byte % 4 == offset
            && word
                .iter()
                .enumerate()
                .all(|(i, p)| p.is_none() || *p == Some((reg, start + i as u8)))
    })
}

/// How `widened_channel_load` widens a channel of interleaved pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChannelWidening {
    /// u8 RGB to 32-bit lanes: a load and a zeroing swizzle per register.
    Swizzle,
    /// Pixels of `pixel_bits` (u8 pairs or RGBA, u16 pairs) masked down to
    /// their first element, then narrowed or extended once (or not) to the
    /// target width.
    MaskPixels { pixel_bits: u8 },
}

impl ChannelWidening {
    /// The way for `lanes` lanes of stride `k` in a buffer of `elem`
    /// widened to `to_bits`, if there is one.
    fn of(elem: Type, k: i64, to_bits: u8, lanes: u16) -> Option<ChannelWidening> {
        if elem == Type::U8 && k == 3 && to_bits == 32 {
            return layout_ok(lanes, 32).then_some(ChannelWidening::Swizzle);
        }
        let pixel_bits = match (elem, k) {
            (Type::U8, 2 | 4) => 8 * k as u8,
            (Type::U16, 2) if to_bits == 32 => 32,
            _ => return None,
        };
        let fits = matches!(to_bits, 16 | 32)
            && pixel_bits / 2 <= to_bits
            && pixel_bits >= to_bits / 2
            && layout_ok(lanes, to_bits)
            && layout_ok(lanes, pixel_bits);
        fits.then_some(ChannelWidening::MaskPixels { pixel_bits })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Narrow {
    /// Signed input, signed saturating output.
    SignedToSigned,
    /// Signed input, unsigned saturating output.
    SignedToUnsigned,
    /// Keep the low bits.
    Wrap,
}

fn int_instr(op: BinOp, bits: u8, _signed: bool) -> Option<I<'static>> {
    Some(match (op, bits) {
        (BinOp::Add, 8) => I::I8x16Add,
        (BinOp::Add, 16) => I::I16x8Add,
        (BinOp::Add, _) => I::I32x4Add,
        (BinOp::Sub, 8) => I::I8x16Sub,
        (BinOp::Sub, 16) => I::I16x8Sub,
        (BinOp::Sub, _) => I::I32x4Sub,
        (BinOp::Mul, 16) => I::I16x8Mul,
        (BinOp::Mul, 32) => I::I32x4Mul,
        _ => return None,
    })
}

fn minmax_instr(min: bool, bits: u8, signed: bool) -> I<'static> {
    match (min, bits, signed) {
        (true, 8, true) => I::I8x16MinS,
        (true, 8, false) => I::I8x16MinU,
        (true, 16, true) => I::I16x8MinS,
        (true, 16, false) => I::I16x8MinU,
        (true, _, true) => I::I32x4MinS,
        (true, _, false) => I::I32x4MinU,
        (false, 8, true) => I::I8x16MaxS,
        (false, 8, false) => I::I8x16MaxU,
        (false, 16, true) => I::I16x8MaxS,
        (false, 16, false) => I::I16x8MaxU,
        (false, _, true) => I::I32x4MaxS,
        (false, _, false) => I::I32x4MaxU,
    }
}

fn shift_instr(left: bool, bits: u8, signed: bool) -> I<'static> {
    match (left, bits, signed) {
        (true, 8, _) => I::I8x16Shl,
        (true, 16, _) => I::I16x8Shl,
        (true, _, _) => I::I32x4Shl,
        (false, 8, true) => I::I8x16ShrS,
        (false, 8, false) => I::I8x16ShrU,
        (false, 16, true) => I::I16x8ShrS,
        (false, 16, false) => I::I16x8ShrU,
        (false, _, true) => I::I32x4ShrS,
        (false, _, false) => I::I32x4ShrU,
    }
}

fn cmp_instr(op: BinOp, bits: u8, signed: bool) -> I<'static> {
    use BinOp::*;
    match (bits, op, signed) {
        (8, Eq, _) => I::I8x16Eq,
        (8, Ne, _) => I::I8x16Ne,
        (8, Lt, true) => I::I8x16LtS,
        (8, Lt, false) => I::I8x16LtU,
        (8, Le, true) => I::I8x16LeS,
        (8, Le, false) => I::I8x16LeU,
        (8, Gt, true) => I::I8x16GtS,
        (8, Gt, false) => I::I8x16GtU,
        (8, _, true) => I::I8x16GeS,
        (8, _, false) => I::I8x16GeU,
        (16, Eq, _) => I::I16x8Eq,
        (16, Ne, _) => I::I16x8Ne,
        (16, Lt, true) => I::I16x8LtS,
        (16, Lt, false) => I::I16x8LtU,
        (16, Le, true) => I::I16x8LeS,
        (16, Le, false) => I::I16x8LeU,
        (16, Gt, true) => I::I16x8GtS,
        (16, Gt, false) => I::I16x8GtU,
        (16, _, true) => I::I16x8GeS,
        (16, _, false) => I::I16x8GeU,
        (_, Eq, _) => I::I32x4Eq,
        (_, Ne, _) => I::I32x4Ne,
        (_, Lt, true) => I::I32x4LtS,
        (_, Lt, false) => I::I32x4LtU,
        (_, Le, true) => I::I32x4LeS,
        (_, Le, false) => I::I32x4LeU,
        (_, Gt, true) => I::I32x4GtS,
        (_, Gt, false) => I::I32x4GtU,
        (_, _, true) => I::I32x4GeS,
        (_, _, false) => I::I32x4GeU,
    }
}

/// `(A, B, lanes)` when `m` is `wide(shuffle(A, lanes)) * wide(shuffle(B,
/// lanes))` with `A`, `B` i16 vectors.
fn dot_operands(m: &Expr) -> Option<(Expr, Expr, Vec<u32>)> {
    let ExprKind::Binary {
        op: BinOp::Mul,
        a: x,
        b: y,
    } = m.kind()
    else {
        return None;
    };
    let pick = |s: &Expr| -> Option<(Expr, Vec<u32>)> {
        if let ExprKind::Shuffle { vectors, indices } = exact_widening(s)?.kind()
            && vectors.len() == 1
            && vectors[0].ty().element() == Type::I16
        {
            return Some((vectors[0].clone(), indices.clone()));
        }
        None
    };
    let (xv, xi) = pick(x)?;
    let (yv, yi) = pick(y)?;
    (xi == yi).then_some((xv, yv, xi))
}
