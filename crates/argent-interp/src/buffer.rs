//! Typed images with explicit per-dimension layout.

use crate::value::Value;
use argent_ir::{Type, TypeKind};

/// One dimension of a buffer: coordinates `min .. min + extent - 1`, and
/// the distance in elements between neighbours along it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim {
    pub min: i64,
    pub extent: i64,
    pub stride: i64,
}

/// A typed image of any number of dimensions, stored as little-endian
/// bytes. Layout is free: planar (dim 0 innermost) and interleaved
/// (channels innermost, as canvas RGBA) images differ only in strides, and
/// the interpreter reads both through the same coordinates.
#[derive(Clone, PartialEq)]
pub struct Buffer {
    ty: Type,
    dims: Vec<Dim>,
    data: Vec<u8>,
}

/// Shows the type and layout, not the (usually large) contents.
impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("ty", &self.ty.to_string())
            .field("dims", &self.dims)
            .field("bytes", &self.data.len())
            .finish()
    }
}

impl Buffer {
    /// A zeroed, dense buffer with dimension 0 innermost and all minimums
    /// 0. Negative extents count as 0.
    pub fn new(ty: Type, extents: &[i64]) -> Buffer {
        let mut stride = 1;
        let dims = extents
            .iter()
            .map(|&e| {
                let d = Dim {
                    min: 0,
                    extent: e.max(0),
                    stride,
                };
                stride *= e.max(0);
                d
            })
            .collect();
        Buffer::with_layout(ty, dims)
    }

    /// A zeroed, dense buffer whose *last* dimension is innermost,
    /// followed by dimensions 0, 1, ...: for `(x, y, c)` extents this is
    /// the interleaved layout of canvas RGBA data (`c` stride 1, `x`
    /// stride `channels`, `y` stride `width * channels`).
    pub fn interleaved(ty: Type, extents: &[i64]) -> Buffer {
        let n = extents.len();
        let mut dims = vec![
            Dim {
                min: 0,
                extent: 0,
                stride: 0
            };
            n
        ];
        if n > 0 {
            let mut stride = 1;
            let order = std::iter::once(n - 1).chain(0..n - 1);
            for d in order {
                let e = extents[d].max(0);
                dims[d] = Dim {
                    min: 0,
                    extent: e,
                    stride,
                };
                stride *= e;
            }
        }
        Buffer::with_layout(ty, dims)
    }

    /// A zeroed buffer with the given layout; storage covers every
    /// addressable element. Negative extents count as 0 and negative
    /// strides as their magnitude.
    pub fn with_layout(ty: Type, dims: Vec<Dim>) -> Buffer {
        let dims: Vec<Dim> = dims
            .into_iter()
            .map(|d| Dim {
                min: d.min,
                extent: d.extent.max(0),
                stride: d.stride.abs(),
            })
            .collect();
        let elements = if dims.iter().any(|d| d.extent == 0) {
            0
        } else {
            1 + dims.iter().map(|d| (d.extent - 1) * d.stride).sum::<i64>()
        };
        Buffer {
            ty: ty.element(),
            dims,
            data: vec![0; elements as usize * ty.bytes()],
        }
    }

    /// A buffer over existing little-endian `data` with the given layout
    /// (for example a canvas `ImageData` array with interleaved strides).
    /// `None` when a stride or extent is negative or `data` is too short.
    pub fn from_bytes(ty: Type, dims: Vec<Dim>, data: Vec<u8>) -> Option<Buffer> {
        if dims.iter().any(|d| d.extent < 0 || d.stride < 0) {
            return None;
        }
        let elements = if dims.iter().any(|d| d.extent == 0) {
            0
        } else {
            1 + dims.iter().map(|d| (d.extent - 1) * d.stride).sum::<i64>()
        };
        if (data.len() as i64) < elements * ty.bytes() as i64 {
            return None;
        }
        Some(Buffer {
            ty: ty.element(),
            dims,
            data,
        })
    }

    /// The same buffer with its coordinates shifted so that dimension `d`
    /// starts at `mins[d]` (a crop of a larger image).
    pub fn with_min(mut self, mins: &[i64]) -> Buffer {
        for (d, &m) in self.dims.iter_mut().zip(mins) {
            d.min = m;
        }
        self
    }

    /// An interleaved u8 image `(x, y, c)` from rows of pixels of
    /// `channels` bytes each (the layout of PNG decoders and canvas data).
    /// `None` when `data` has the wrong length.
    pub fn from_interleaved_u8(
        width: i64,
        height: i64,
        channels: i64,
        data: &[u8],
    ) -> Option<Buffer> {
        if width < 0 || height < 0 || channels < 0 || data.len() as i64 != width * height * channels
        {
            return None;
        }
        let mut b = Buffer::interleaved(Type::U8, &[width, height, channels]);
        b.data.copy_from_slice(data);
        Some(b)
    }

    /// The element type.
    pub fn ty(&self) -> Type {
        self.ty
    }

    /// The layout of every dimension.
    pub fn dims(&self) -> &[Dim] {
        &self.dims
    }

    /// The number of dimensions.
    pub fn dimensions(&self) -> usize {
        self.dims.len()
    }

    /// The raw little-endian storage.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// The element offset of `coords`, or `None` outside the buffer.
    #[inline]
    pub fn offset_of(&self, coords: &[i64]) -> Option<usize> {
        if coords.len() != self.dims.len() {
            return None;
        }
        let mut offset = 0;
        for (d, &c) in self.dims.iter().zip(coords) {
            let rel = c - d.min;
            if rel < 0 || rel >= d.extent {
                return None;
            }
            offset += rel * d.stride;
        }
        Some(offset as usize)
    }

    /// The raw value (see [`crate::scalar`]) of the element at `offset`.
    #[inline]
    pub(crate) fn raw_at(&self, offset: usize) -> i64 {
        let d = &self.data;
        match (self.ty.kind, self.ty.bits) {
            (TypeKind::UInt, 8) | (TypeKind::Bool, _) => d[offset] as i64,
            (TypeKind::Int, 8) => d[offset] as i8 as i64,
            (TypeKind::UInt, 16) => u16::from_le_bytes([d[2 * offset], d[2 * offset + 1]]) as i64,
            (TypeKind::Int, 16) => i16::from_le_bytes([d[2 * offset], d[2 * offset + 1]]) as i64,
            (_, 32) => {
                let b = [
                    d[4 * offset],
                    d[4 * offset + 1],
                    d[4 * offset + 2],
                    d[4 * offset + 3],
                ];
                match self.ty.kind {
                    TypeKind::Int => i32::from_le_bytes(b) as i64,
                    _ => u32::from_le_bytes(b) as i64,
                }
            }
            _ => 0,
        }
    }

    #[inline]
    pub(crate) fn set_raw_at(&mut self, offset: usize, raw: i64) {
        let bytes = raw.to_le_bytes();
        match self.ty.bytes() {
            1 => self.data[offset] = bytes[0],
            2 => self.data[2 * offset..2 * offset + 2].copy_from_slice(&bytes[..2]),
            _ => self.data[4 * offset..4 * offset + 4].copy_from_slice(&bytes[..4]),
        }
    }

    /// The element at `coords`, or `None` outside the buffer.
    pub fn get(&self, coords: &[i64]) -> Option<Value> {
        self.offset_of(coords)
            .map(|o| Value::from_raw(self.ty, self.raw_at(o)))
    }

    /// Store `value` at `coords` (integers wrap to the element type, floats
    /// convert to f32). Returns false, storing nothing, outside the buffer.
    pub fn set(&mut self, coords: &[i64], value: Value) -> bool {
        match self.offset_of(coords) {
            Some(o) => {
                let raw = value.to_raw(self.ty);
                self.set_raw_at(o, raw);
                true
            }
            None => false,
        }
    }

    /// Every coordinate of the buffer, dimension 0 fastest.
    pub fn coordinates(&self) -> impl Iterator<Item = Vec<i64>> + '_ {
        let total: i64 = self.dims.iter().map(|d| d.extent).product();
        let mut current: Vec<i64> = self.dims.iter().map(|d| d.min).collect();
        (0..total).map(move |i| {
            let here = current.clone();
            if i + 1 < total {
                for (c, d) in current.iter_mut().zip(&self.dims) {
                    *c += 1;
                    if *c < d.min + d.extent {
                        break;
                    }
                    *c = d.min;
                }
            }
            here
        })
    }

    /// Set every element to `f(coordinates)`.
    pub fn fill(&mut self, mut f: impl FnMut(&[i64]) -> Value) {
        let coords: Vec<Vec<i64>> = self.coordinates().collect();
        for c in coords {
            let v = f(&c);
            self.set(&c, v);
        }
    }

    /// Whether both buffers have the same type, bounds and element values,
    /// whatever their layouts (floats compare by bits).
    pub fn same_contents(&self, other: &Buffer) -> bool {
        self.ty == other.ty
            && self.dims.len() == other.dims.len()
            && self
                .dims
                .iter()
                .zip(&other.dims)
                .all(|(a, b)| a.min == b.min && a.extent == b.extent)
            && self.coordinates().all(|c| {
                let (a, b) = (self.offset_of(&c), other.offset_of(&c));
                matches!((a, b), (Some(a), Some(b)) if self.raw_at(a) == other.raw_at(b))
            })
    }

    /// The elements of a u8 image `(x, y[, c])` as interleaved rows (the
    /// layout PNG encoders and canvas data take), or `None` for other
    /// types or dimensionalities.
    pub fn to_interleaved_u8(&self) -> Option<Vec<u8>> {
        if self.ty != Type::U8 || !(2..=3).contains(&self.dims.len()) {
            return None;
        }
        let channels = self.dims.get(2).map_or(1, |d| d.extent);
        let (x0, y0) = (self.dims[0].min, self.dims[1].min);
        let c0 = self.dims.get(2).map_or(0, |d| d.min);
        let mut out =
            Vec::with_capacity((self.dims[0].extent * self.dims[1].extent * channels) as usize);
        for y in y0..y0 + self.dims[1].extent {
            for x in x0..x0 + self.dims[0].extent {
                for c in c0..c0 + channels {
                    let coords = [x, y, c];
                    let o = self.offset_of(&coords[..self.dims.len()])?;
                    out.push(self.data[o]);
                }
            }
        }
        Some(out)
    }
}
