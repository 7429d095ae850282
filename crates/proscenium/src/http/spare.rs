//! Header tables of finished requests and responses, kept on their thread for the next
//! ones: a table is two allocations (its index and its entries), and a plaintext request
//! and its response took two tables — four of its seven allocations.
//!
//! A table comes back cleared (its values dropped) with its capacity; tables grown past
//! [`LARGEST`] fields are not kept, nor more than [`KEEP`] tables per thread, so what a
//! thread holds here stays small.
//!
//! One table is kept as it is: the last whose one field was a `Content-Type`, for the
//! next response with the same type ([`with_content_type`]). Most responses of a route
//! are such a table, and clearing it then inserting the same field again was a
//! measurable part of a pipelined plaintext request (docs/performance.md).

use std::cell::{Cell, RefCell};

use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue};

/// Tables kept per thread: enough for a loop's pipelined batch of requests and their
/// responses.
const KEEP: usize = 64;

/// The capacity above which a table is freed rather than kept.
const LARGEST: usize = 64;

thread_local! {
    static SPARE: RefCell<Vec<HeaderMap>> = const { RefCell::new(Vec::new()) };
    static TYPED: Cell<Option<HeaderMap>> = const { Cell::new(None) };
}

/// A header table holding `Content-Type: content_type` alone: the typed one kept, if it
/// holds this very text (the same static string, not only equal bytes), or else an
/// empty one with the field inserted.
pub(crate) fn with_content_type(content_type: &'static str) -> HeaderMap {
    if let Some(typed) = TYPED.try_with(Cell::take).ok().flatten() {
        if sole_content_type(&typed)
            .is_some_and(|v| std::ptr::eq(v.as_bytes(), content_type.as_bytes()))
        {
            return typed;
        }
        keep_cleared(typed);
    }
    let mut map = headers(1);
    map.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    map
}

/// The value of a table's one field, if that field is `Content-Type`.
fn sole_content_type(map: &HeaderMap) -> Option<&HeaderValue> {
    if map.len() != 1 {
        return None;
    }
    map.iter()
        .next()
        .filter(|(name, _)| *name == CONTENT_TYPE)
        .map(|(_, value)| value)
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

/// Keeps `map` for a later request or response on this thread, if it is worth keeping:
/// as it is when its one field is a `Content-Type`, else cleared.
pub(crate) fn keep(map: HeaderMap) {
    if sole_content_type(&map).is_none() {
        return keep_cleared(map);
    }
    // During the thread's teardown the table is simply dropped.
    if let Ok(Some(before)) = TYPED.try_with(|typed| typed.replace(Some(map))) {
        keep_cleared(before);
    }
}

fn keep_cleared(mut map: HeaderMap) {
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
    fn a_table_whose_one_field_is_its_content_type_is_kept_with_it() {
        static TEXT: &str = "text/plain";
        let typed = with_content_type(TEXT);
        assert_eq!(typed.len(), 1);
        assert_eq!(typed[CONTENT_TYPE], TEXT);
        let at = typed.get(CONTENT_TYPE).unwrap().as_bytes().as_ptr();
        keep(typed);
        let again = with_content_type(TEXT);
        assert_eq!(
            again.get(CONTENT_TYPE).unwrap().as_bytes().as_ptr(),
            at,
            "the same table"
        );
        keep(again);
        // Equal text elsewhere is another type as far as the kept table knows: a table
        // of its own, the kept one cleared.
        let elsewhere: &'static str = String::from(TEXT).leak();
        let other = with_content_type(elsewhere);
        assert_eq!(other[CONTENT_TYPE], TEXT);
        assert_ne!(other.get(CONTENT_TYPE).unwrap().as_bytes().as_ptr(), at);
        assert!(TYPED.take().is_none());
    }

    #[test]
    fn a_typed_table_changed_by_its_user_is_cleared_when_kept() {
        let mut changed = with_content_type("text/html");
        changed.insert(ACCEPT, HeaderValue::from_static("b"));
        keep(changed);
        assert!(TYPED.take().is_none());
        let again = with_content_type("text/html");
        assert_eq!(again.len(), 1);
        assert!(again.get(ACCEPT).is_none());
    }

    #[test]
    fn large_tables_are_not_kept() {
        let mut map = HeaderMap::with_capacity(LARGEST * 2);
        map.insert(HOST, HeaderValue::from_static("a"));
        keep(map);
        assert!(SPARE.with_borrow(|spare| spare.iter().all(|m| m.capacity() <= LARGEST)));
    }
}
