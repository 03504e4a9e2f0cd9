//! A small, fast, non-cryptographic hasher for the compiler's internal
//! tables: the simplifier's, CSE's and the backend's (the multiply-rotate
//! scheme of rustc's `FxHasher`).
//!
//! The standard library's SipHash resists collision attacks, which these
//! tables (keyed by variable names, node addresses and structural hashes
//! of the compiler's own IR) do not need; it showed up in profiles of
//! lowering large pipelines.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub type FastHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A `HashSet` with [`FastHasher`].
pub type FastHashSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

/// Hashes one machine word at a time by rotate, xor and multiply.
#[derive(Default, Clone, Copy)]
pub struct FastHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault};

    #[test]
    fn equal_keys_hash_equal_and_different_keys_differ() {
        let b = BuildHasherDefault::<FastHasher>::default();
        assert_eq!(b.hash_one("f.s0.x.min"), b.hash_one("f.s0.x.min"));
        assert_ne!(b.hash_one("f.s0.x.min"), b.hash_one("f.s0.y.min"));
        // The tail shorter than a word counts too.
        assert_ne!(b.hash_one("abcdefgh1"), b.hash_one("abcdefgh2"));
        let mut m: FastHashMap<String, i32> = FastHashMap::default();
        m.insert("x".into(), 1);
        m.insert("y".into(), 2);
        assert_eq!(m.get("x"), Some(&1));
        assert_eq!(m.get("y"), Some(&2));
    }
}
