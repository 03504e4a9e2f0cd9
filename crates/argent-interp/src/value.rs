//! Scalar values as callers see them, and the raw form the interpreter
//! computes with.

use argent_ir::Type;

/// A scalar value passed in (parameters, buffer elements) or read back.
/// Integer and bool values are held as their mathematical value (bools as
/// 0 or 1); floats as f32.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f32),
}

impl Value {
    /// The value as an integer (floats truncate toward zero).
    pub fn as_i64(self) -> i64 {
        match self {
            Value::Int(v) => v,
            Value::Float(f) => f as i64,
        }
    }

    /// The value as a float (integers round to nearest).
    pub fn as_f32(self) -> f32 {
        match self {
            Value::Int(v) => v as f32,
            Value::Float(f) => f,
        }
    }

    /// The raw form of this value for type `ty` (see [`crate::scalar`]):
    /// integers are wrapped to the type, floats become their bits.
    pub fn to_raw(self, ty: Type) -> i64 {
        if ty.is_float() {
            crate::scalar::from_f32(self.as_f32())
        } else {
            ty.wrap(self.as_i64())
        }
    }

    /// The value of raw `bits` of type `ty`.
    pub fn from_raw(ty: Type, bits: i64) -> Value {
        if ty.is_float() {
            Value::Float(crate::scalar::to_f32(bits))
        } else {
            Value::Int(bits)
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v as i64)
    }
}

impl From<u8> for Value {
    fn from(v: u8) -> Value {
        Value::Int(v as i64)
    }
}

impl From<u16> for Value {
    fn from(v: u16) -> Value {
        Value::Int(v as i64)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v as i64)
    }
}

impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v as i64)
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}
