//! The compiler's memory allocator in the page: free lists of small blocks
//! by size class in front of the standard allocator.
//!
//! Compiling allocates and frees millions of small blocks (expression
//! nodes, names, vectors of operands). In the page the standard allocator
//! is dlmalloc, compiled to Wasm, and a profile of compiling `box_blur` in
//! Node showed about a fifth of the time in its `malloc`, `free` and
//! helpers. Here a small block is taken from, and given back to, the free
//! list of its size class (a few instructions), and the lists are refilled
//! by carving large chunks obtained from the standard allocator. Blocks
//! over [`MAX_SMALL`] bytes, or aligned beyond [`CLASS_BYTES`], go to the
//! standard allocator directly.
//!
//! Small blocks are never returned to the standard allocator: a freed block
//! waits on its list for the next allocation of its class. A Wasm memory
//! never shrinks anyway, so this costs at most the peak use of each class.
//!
//! The allocator is not thread-safe; it is the global allocator only on
//! `wasm32` without the `atomics` feature, where there is one thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;

/// Sizes are rounded up to multiples of this, which is also the alignment
/// of every small block.
const CLASS_BYTES: usize = 16;
/// The largest size served from the free lists.
pub const MAX_SMALL: usize = 512;
const CLASSES: usize = MAX_SMALL / CLASS_BYTES;
/// Bytes obtained from the standard allocator at a time for small blocks.
const CHUNK_BYTES: usize = 256 * 1024;

struct Lists {
    /// Head of each class's list of free blocks; a free block's first
    /// word points to the next.
    free: [*mut u8; CLASSES],
    /// The unused part of the current chunk.
    next: *mut u8,
    end: *mut u8,
}

/// See the module documentation.
pub struct SizeClassAllocator {
    lists: UnsafeCell<Lists>,
}

// SAFETY: on wasm32 without the `atomics` target feature there is exactly
// one thread, so the lists are never touched concurrently.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl Sync for SizeClassAllocator {}

impl Default for SizeClassAllocator {
    fn default() -> SizeClassAllocator {
        SizeClassAllocator::new()
    }
}

impl SizeClassAllocator {
    /// An allocator with empty lists (usable in a `static`).
    pub const fn new() -> SizeClassAllocator {
        SizeClassAllocator {
            lists: UnsafeCell::new(Lists {
                free: [ptr::null_mut(); CLASSES],
                next: ptr::null_mut(),
                end: ptr::null_mut(),
            }),
        }
    }

    /// The size class of `layout`, when it is small.
    fn class_of(layout: Layout) -> Option<usize> {
        (layout.size() <= MAX_SMALL && layout.align() <= CLASS_BYTES)
            .then(|| layout.size().max(1).div_ceil(CLASS_BYTES) - 1)
    }

    /// A block of class `class`: from its free list, else carved from the
    /// current chunk, else from a new chunk. Null when memory is exhausted.
    ///
    /// # Safety
    /// No other call on this allocator may be running.
    unsafe fn alloc_small(&self, class: usize) -> *mut u8 {
        // SAFETY: single-threaded by the caller's contract, and no
        // reference into the lists outlives this call.
        let lists = unsafe { &mut *self.lists.get() };
        let head = lists.free[class];
        if !head.is_null() {
            // SAFETY: `head` is a free block of this class, whose first
            // word holds the next free block (written by `dealloc`).
            lists.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        let bytes = (class + 1) * CLASS_BYTES;
        if (lists.end as usize) - (lists.next as usize) < bytes {
            // The rest of the old chunk (under MAX_SMALL bytes) is left
            // unused.
            let layout = Layout::from_size_align(CHUNK_BYTES, CLASS_BYTES).expect("valid layout");
            // SAFETY: the layout has a non-zero size.
            let chunk = unsafe { System.alloc(layout) };
            if chunk.is_null() {
                return chunk;
            }
            lists.next = chunk;
            // SAFETY: one past the end of the chunk just allocated.
            lists.end = unsafe { chunk.add(CHUNK_BYTES) };
        }
        let block = lists.next;
        // SAFETY: `bytes` fit in the chunk (checked above).
        lists.next = unsafe { block.add(bytes) };
        block
    }
}

// SAFETY: small blocks are distinct `CLASS_BYTES`-aligned ranges of at
// least the requested size, handed out once until freed; everything else
// is the standard allocator's.
unsafe impl GlobalAlloc for SizeClassAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match SizeClassAllocator::class_of(layout) {
            // SAFETY: the allocator is used from one thread (see `Sync`).
            Some(class) => unsafe { self.alloc_small(class) },
            // SAFETY: forwarded with the caller's guarantees.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        match SizeClassAllocator::class_of(layout) {
            Some(class) => {
                // SAFETY: single-threaded; `block` was allocated with this
                // layout, so it is a free block of this class from now on
                // and at least one pointer wide and aligned.
                let lists = unsafe { &mut *self.lists.get() };
                unsafe { block.cast::<*mut u8>().write(lists.free[class]) };
                lists.free[class] = block;
            }
            // SAFETY: forwarded with the caller's guarantees.
            None => unsafe { System.dealloc(block, layout) },
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_class = SizeClassAllocator::class_of(layout);
        // SAFETY: the caller guarantees that `new_size`, rounded up to the
        // alignment, does not overflow.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new_class = SizeClassAllocator::class_of(new_layout);
        match (old_class, new_class) {
            (Some(a), Some(b)) if a == b => block,
            // SAFETY: forwarded with the caller's guarantees.
            (None, None) => unsafe { System.realloc(block, layout, new_size) },
            _ => {
                // SAFETY: as `alloc`, then the old block is valid for
                // `layout.size()` bytes and the new for `new_size`.
                unsafe {
                    let moved = self.alloc(new_layout);
                    if !moved.is_null() {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                    moved
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocates blocks of every small size and some large ones, fills
    /// each with its own byte, frees every other one, allocates again,
    /// grows and shrinks some, and checks that no block's contents were
    /// overwritten by another's.
    #[test]
    fn blocks_of_every_size_keep_their_contents() {
        let a = SizeClassAllocator::new();
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let fill = |p: *mut u8, n: usize, v: u8| unsafe { ptr::write_bytes(p, v, n) };
        let check = |live: &[(*mut u8, Layout, u8)]| {
            for &(p, l, v) in live {
                let bytes = unsafe { std::slice::from_raw_parts(p, l.size()) };
                assert!(
                    bytes.iter().all(|&b| b == v),
                    "a block of {} bytes was overwritten",
                    l.size()
                );
            }
        };
        let sizes: Vec<usize> = (1..=MAX_SMALL + 40)
            .step_by(7)
            .chain([4096, 100_000])
            .collect();
        for round in 0..3u8 {
            for (i, &size) in sizes.iter().enumerate() {
                let align = [1, 4, 8, 16, 32][i % 5];
                let layout = Layout::from_size_align(size, align).unwrap();
                let p = unsafe { a.alloc(layout) };
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "misaligned block");
                let v = (i as u8).wrapping_mul(31).wrapping_add(round);
                fill(p, size, v);
                live.push((p, layout, v));
            }
            check(&live);
            let mut kept = Vec::new();
            for (k, (p, l, v)) in live.drain(..).enumerate() {
                if k % 2 == 0 {
                    unsafe { a.dealloc(p, l) };
                } else if k % 3 == 0 {
                    let new_size = if l.size() > 64 {
                        l.size() / 2
                    } else {
                        l.size() * 9
                    };
                    let q = unsafe { a.realloc(p, l, new_size) };
                    assert!(!q.is_null());
                    let bytes = unsafe { std::slice::from_raw_parts(q, l.size().min(new_size)) };
                    assert!(bytes.iter().all(|&b| b == v), "realloc lost the contents");
                    let nl = Layout::from_size_align(new_size, l.align()).unwrap();
                    fill(q, new_size, v);
                    kept.push((q, nl, v));
                } else {
                    kept.push((p, l, v));
                }
            }
            live = kept;
            check(&live);
        }
        for (p, l, _) in live {
            unsafe { a.dealloc(p, l) };
        }
    }

    #[test]
    fn a_freed_small_block_is_reused_for_its_size_class() {
        let a = SizeClassAllocator::new();
        let layout = Layout::from_size_align(40, 8).unwrap();
        let p = unsafe { a.alloc(layout) };
        unsafe { a.dealloc(p, layout) };
        let same_class = Layout::from_size_align(33, 8).unwrap();
        assert_eq!(unsafe { a.alloc(same_class) }, p);
    }
}
