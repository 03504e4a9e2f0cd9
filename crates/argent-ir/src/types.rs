//! Scalar and vector types.
//!
//! Argent follows Halide: a type is a kind (unsigned, signed, float, bool),
//! a bit width and a lane count. The algorithm IR is scalar (`lanes == 1`);
//! vectorisation produces vector types whose lane count may exceed what one
//! 128-bit SIMD register holds (backends split those).

use std::fmt;

/// What a type's bits mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TypeKind {
    UInt,
    Int,
    Float,
    Bool,
}

/// A scalar or vector type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Type {
    pub kind: TypeKind,
    pub bits: u8,
    pub lanes: u16,
}

impl Type {
    pub const U8: Type = Type::new(TypeKind::UInt, 8);
    pub const U16: Type = Type::new(TypeKind::UInt, 16);
    pub const U32: Type = Type::new(TypeKind::UInt, 32);
    pub const I8: Type = Type::new(TypeKind::Int, 8);
    pub const I16: Type = Type::new(TypeKind::Int, 16);
    pub const I32: Type = Type::new(TypeKind::Int, 32);
    pub const F32: Type = Type::new(TypeKind::Float, 32);
    pub const BOOL: Type = Type::new(TypeKind::Bool, 1);

    /// All scalar types the language exposes, in a fixed order.
    pub const ALL_SCALAR: [Type; 7] = [
        Type::U8,
        Type::U16,
        Type::U32,
        Type::I8,
        Type::I16,
        Type::I32,
        Type::F32,
    ];

    pub const fn new(kind: TypeKind, bits: u8) -> Type {
        Type {
            kind,
            bits,
            lanes: 1,
        }
    }

    pub const fn with_lanes(self, lanes: u16) -> Type {
        Type { lanes, ..self }
    }

    /// The scalar type of one lane.
    pub const fn element(self) -> Type {
        self.with_lanes(1)
    }

    pub fn is_scalar(self) -> bool {
        self.lanes == 1
    }
    pub fn is_vector(self) -> bool {
        self.lanes > 1
    }
    pub fn is_uint(self) -> bool {
        self.kind == TypeKind::UInt
    }
    pub fn is_int(self) -> bool {
        self.kind == TypeKind::Int
    }
    /// Signed or unsigned integer.
    pub fn is_integer(self) -> bool {
        matches!(self.kind, TypeKind::UInt | TypeKind::Int)
    }
    pub fn is_float(self) -> bool {
        self.kind == TypeKind::Float
    }
    pub fn is_bool(self) -> bool {
        self.kind == TypeKind::Bool
    }

    /// Same kind and lanes with another bit width.
    pub fn with_bits(self, bits: u8) -> Type {
        Type { bits, ..self }
    }

    /// Same bits and lanes, another kind.
    pub fn with_kind(self, kind: TypeKind) -> Type {
        Type { kind, ..self }
    }

    /// Smallest value representable (integers only; floats give -inf).
    pub fn min_value(self) -> f64 {
        match self.kind {
            TypeKind::UInt | TypeKind::Bool => 0.0,
            TypeKind::Int => -(2f64.powi(self.bits as i32 - 1)),
            TypeKind::Float => f64::NEG_INFINITY,
        }
    }

    /// Largest value representable (integers only; floats give +inf).
    pub fn max_value(self) -> f64 {
        match self.kind {
            TypeKind::UInt => 2f64.powi(self.bits as i32) - 1.0,
            TypeKind::Bool => 1.0,
            TypeKind::Int => 2f64.powi(self.bits as i32 - 1) - 1.0,
            TypeKind::Float => f64::INFINITY,
        }
    }

    /// Whether every value of `self` is representable in `other`.
    pub fn can_represent(other: Type, value: Type) -> bool {
        match (other.kind, value.kind) {
            (TypeKind::Float, TypeKind::Float) => other.bits >= value.bits,
            (TypeKind::Float, _) => value.bits < 24,
            (_, TypeKind::Float) => false,
            _ => other.min_value() <= value.min_value() && other.max_value() >= value.max_value(),
        }
    }

    /// Size of one lane in bytes (bool counts as one byte in memory).
    pub fn bytes(self) -> usize {
        (self.bits as usize).div_ceil(8)
    }

    /// Parse a language type name (`u8`, `f32`, `bool`, ...).
    pub fn from_name(name: &str) -> Option<Type> {
        Some(match name {
            "u8" => Type::U8,
            "u16" => Type::U16,
            "u32" => Type::U32,
            "i8" => Type::I8,
            "i16" => Type::I16,
            "i32" => Type::I32,
            "f32" => Type::F32,
            "bool" => Type::BOOL,
            _ => return None,
        })
    }

    /// Wrap an integer value to this (integer) type: the defined overflow
    /// behaviour of Argent's 8/16/32-bit arithmetic.
    pub fn wrap(self, v: i64) -> i64 {
        match self.kind {
            TypeKind::Bool => (v != 0) as i64,
            TypeKind::UInt => {
                if self.bits >= 64 {
                    v
                } else {
                    v & ((1i64 << self.bits) - 1)
                }
            }
            TypeKind::Int => {
                if self.bits >= 64 {
                    v
                } else {
                    let shift = 64 - self.bits as u32;
                    (v << shift) >> shift
                }
            }
            TypeKind::Float => v,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TypeKind::UInt => write!(f, "u{}", self.bits)?,
            TypeKind::Int => write!(f, "i{}", self.bits)?,
            TypeKind::Float => write!(f, "f{}", self.bits)?,
            TypeKind::Bool => write!(f, "bool")?,
        }
        if self.lanes > 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_matches_twos_complement() {
        assert_eq!(Type::U8.wrap(256 + 7), 7);
        assert_eq!(Type::U8.wrap(-1), 255);
        assert_eq!(Type::I8.wrap(128), -128);
        assert_eq!(Type::I16.wrap(-32769), 32767);
        assert_eq!(Type::U32.wrap(-1), 4294967295);
    }

    #[test]
    fn display_names() {
        assert_eq!(Type::U16.to_string(), "u16");
        assert_eq!(Type::F32.with_lanes(4).to_string(), "f32x4");
    }
}
