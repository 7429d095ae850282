//! The README's and the deployment guide's examples, compiled (and run where not marked
//! `no_run`) as doc tests of this crate. They live here, not in the `proscenium` crate,
//! because its published package holds only its own directory, where those files are
//! not.

/// The README's examples.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The deployment guide's examples.
#[cfg(doctest)]
#[doc = include_str!("../docs/guide/deploy.md")]
pub struct DeployGuideDoctests;
