//! `memcmp` and `bcmp` for the compiler in the page, comparing eight bytes
//! at a time.
//!
//! The compiler compares names all the time (scopes are searched by name,
//! sums are kept sorted by their terms, sets of names are ordered), and
//! those names share long prefixes: `blur_y.s0.x.x.invariant61` against
//! `blur_y.s0.x.x.invariant62`. On `wasm32-unknown-unknown` the standard
//! library's `memcmp` comes from `compiler_builtins` and compares one byte
//! per iteration; a profile of compiling `box_blur` in Node put 6% of the
//! compiler's time in it. The definitions here take precedence over those
//! (which are weak symbols) and load a `u64` from each side per step, so a
//! 25-byte name costs three steps and a byte loop of one.
//!
//! Only `wasm32` builds define them: natively the C library's versions are
//! faster still. Being `#[no_mangle]` in a `cdylib`, they are also exported
//! from the module (wasm-bindgen lists them among the raw exports in
//! `web/pkg/argent_web_bg.wasm.d.ts`); nothing in the runtime calls them.

/// The first differing byte of two words loaded little-endian, as
/// `memcmp` orders them (unsigned bytes, lowest address first).
#[inline]
fn first_difference(x: u64, y: u64) -> i32 {
    let shift = (x ^ y).trailing_zeros() & !7;
    i32::from((x >> shift) as u8) - i32::from((y >> shift) as u8)
}

/// Compares `n` bytes at `a` and `b`: negative, zero or positive as the
/// first differing byte of `a` is smaller, absent or larger.
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[inline]
unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n`, so both reads are inside the ranges.
        let (x, y) = unsafe {
            (
                a.add(i).cast::<u64>().read_unaligned(),
                b.add(i).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            return first_difference(x, y);
        }
        i += 8;
    }
    while i < n {
        // SAFETY: `i < n`.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

/// The C library's `memcmp` (see the module documentation).
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { compare(a, b, n) }
}

/// `memcmp` for equality only, which LLVM calls where the order does not
/// matter.
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { compare(a, b, n) }
}

#[cfg(test)]
mod tests {
    use super::compare;

    fn sign(v: i32) -> i32 {
        v.signum()
    }

    #[test]
    fn orders_like_slices() {
        let words: &[&[u8]] = &[
            b"",
            b"a",
            b"blur_y.s0.x.x.invariant61",
            b"blur_y.s0.x.x.invariant62",
            b"blur_y.s0.x.x.invariant6\xff",
            b"blur_x.s0.x.x.invariant61",
            b"\x80bcdefgh",
            b"abcdefgh",
            b"abcdefgi",
            b"abcdefghij",
            b"abcdefghik",
        ];
        for a in words {
            for b in words {
                let n = a.len().min(b.len());
                let expected = a[..n].cmp(&b[..n]) as i32;
                // SAFETY: both slices hold at least `n` bytes.
                let got = unsafe { compare(a.as_ptr(), b.as_ptr(), n) };
                assert_eq!(sign(got), expected, "{a:?} against {b:?}");
            }
        }
    }
}
