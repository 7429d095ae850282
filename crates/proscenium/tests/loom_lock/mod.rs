//! loom's lock in parking_lot's shape (no poisoning), for the model tests whose code
//! under test is written against parking_lot.

pub(crate) use loom::sync::MutexGuard;

#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().expect("no model panics holding it")
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.0.get_mut().expect("no model panics holding it")
    }
}
