//! Header tables of finished requests and responses, kept on their thread for the next
//! ones: a table is two allocations (its index and its entries), and a plaintext request
//! and its response took two tables — four of its seven allocations.
//!
//! A table comes back cleared (its values dropped) with its capacity; tables grown past
//! [`LARGEST`] fields are not kept, nor more than [`KEEP`] tables per thread, so what a
//! thread holds here stays small.

use std::cell::RefCell;

use http::HeaderMap;

/// Tables kept per thread: enough for a loop's pipelined batch of requests and their
/// responses.
const KEEP: usize = 64;

/// The capacity above which a table is freed rather than kept.
const LARGEST: usize = 64;

thread_local! {
    static SPARE: RefCell<Vec<HeaderMap>> = const { RefCell::new(Vec::new()) };
}

/// An empty header table with room for `fields` fields: a kept one if there is one.
pub(crate) fn headers(fields: usize) -> HeaderMap {
    let kept = SPARE
        .try_with(|spare| spare.borrow_mut().pop())
        .ok()
        .flatten();
    match kept {
        Some(mut map) => {
            map.reserve(fields);
            map
        }
        None => HeaderMap::with_capacity(fields),
    }
}

/// Keeps `map` for a later request or response on this thread, if it is worth keeping.
pub(crate) fn keep(mut map: HeaderMap) {
    let capacity = map.capacity();
    if capacity == 0 || capacity > LARGEST {
        return;
    }
    map.clear();
    // During the thread's teardown the table is simply dropped.
    let _ = SPARE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < KEEP {
            spare.push(map);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{ACCEPT, HOST, HeaderValue};

    #[test]
    fn a_kept_table_comes_back_empty_with_its_room() {
        let mut map = headers(2);
        map.insert(HOST, HeaderValue::from_static("a"));
        map.insert(ACCEPT, HeaderValue::from_static("b"));
        let room = map.capacity();
        keep(map);
        let again = headers(1);
        assert!(again.is_empty());
        assert_eq!(again.capacity(), room);
    }

    #[test]
    fn large_tables_are_not_kept() {
        let mut map = HeaderMap::with_capacity(LARGEST * 2);
        map.insert(HOST, HeaderValue::from_static("a"));
        keep(map);
        assert!(SPARE.with_borrow(|spare| spare.iter().all(|m| m.capacity() <= LARGEST)));
    }
}
