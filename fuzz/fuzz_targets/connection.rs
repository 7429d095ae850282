//! A whole connection over loopback TCP: bytes in, answers out — one answer per request
//! the decoder reads, bodies as asked, and the bytes the server holds bounded
//! (`proscenium::fuzz::connection`). This binary's allocator counts those bytes.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator, reporting each allocation and free to `fuzz::held`.
struct Counting;

/// Sizes fit `isize`: `Layout` guarantees it.
fn signed(layout: Layout) -> isize {
    isize::try_from(layout.size()).unwrap_or(isize::MAX)
}

// SAFETY: every call is passed on to `System` unchanged; the counting around it
// touches only const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        proscenium::fuzz::held::note(signed(layout));
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        proscenium::fuzz::held::note(signed(layout));
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        proscenium::fuzz::held::note(-signed(layout));
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grown = isize::try_from(new_size).unwrap_or(isize::MAX) - signed(layout);
        proscenium::fuzz::held::note(grown);
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| proscenium::fuzz::connection(data));
