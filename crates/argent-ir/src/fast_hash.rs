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

/// The bytes of `rest` (fewer than 8) as a little-endian word, zero
/// above them: what copying them into a zeroed `[u8; 8]` gives, read in
/// at most three loads. The copy, of a length known only at run time,
/// became a `memory.copy` in the compiler's wasm build, which V8 runs as
/// a call into the engine: about 10 ns, a dozen thousand times a compile.
#[inline]
fn tail_word(rest: &[u8]) -> u64 {
    let mut word = 0u64;
    let mut at = 0;
    if rest.len() >= 4 {
        word = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as u64;
        at = 4;
    }
    if rest.len() - at >= 2 {
        word |= (u16::from_le_bytes([rest[at], rest[at + 1]]) as u64) << (8 * at);
        at += 2;
    }
    if rest.len() > at {
        word |= (rest[at] as u64) << (8 * at);
    }
    word
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
            self.add(tail_word(rest));
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
    fn a_tail_is_read_as_its_zero_padded_word() {
        let bytes = *b"abcdefg";
        for n in 1..8 {
            let mut padded = [0u8; 8];
            padded[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(
                tail_word(&bytes[..n]),
                u64::from_le_bytes(padded),
                "{n} bytes"
            );
        }
    }

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
