//! Sets of stages, the algebra Leda partitions a graph with:
//! `graph.all() - extrusion` is every stage but `extrusion`.

use std::collections::BTreeSet;
use std::ops::{Add, Mul, Sub};

use super::graph::StageRef;

/// A set of stages by name, combined with `+` (union), `-` (difference) and `*`
/// (intersection), as Leda's `graph:all() - extrusion`.
///
/// # Examples
///
/// ```
/// use proscenium::stage::StageSet;
///
/// let all = StageSet::of(["reader", "extrusion", "renderer"]);
/// let rest = all.clone() - "extrusion";
/// assert_eq!(rest.names().collect::<Vec<_>>(), ["reader", "renderer"]);
/// assert_eq!((rest * all).len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageSet(BTreeSet<String>);

impl StageSet {
    /// Returns the set of the stages named.
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        Self(names.into_iter().map(str::to_owned).collect())
    }

    /// Returns whether the stage named is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// Returns the names in the set, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Returns how many stages are in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Returns whether the set has no stage.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&StageRef> for StageSet {
    fn from(stage: &StageRef) -> Self {
        Self::of([stage.name()])
    }
}

impl From<&str> for StageSet {
    fn from(name: &str) -> Self {
        Self::of([name])
    }
}

impl<R: Into<StageSet>> Add<R> for StageSet {
    type Output = StageSet;

    fn add(self, other: R) -> StageSet {
        Self(self.0.union(&other.into().0).cloned().collect())
    }
}

impl<R: Into<StageSet>> Sub<R> for StageSet {
    type Output = StageSet;

    fn sub(self, other: R) -> StageSet {
        Self(self.0.difference(&other.into().0).cloned().collect())
    }
}

impl<R: Into<StageSet>> Mul<R> for StageSet {
    type Output = StageSet;

    fn mul(self, other: R) -> StageSet {
        Self(self.0.intersection(&other.into().0).cloned().collect())
    }
}
