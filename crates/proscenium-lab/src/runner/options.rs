//! What the runner is asked: the command's options, its profile parsed from a word.

use std::path::PathBuf;

use crate::Error;
use crate::scenario::Profile;
use crate::servers::ServerSpec;

/// What `proscenium bench` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// A name of [`SCENARIOS`](crate::SCENARIOS), or `all`.
    pub scenario: String,
    /// The servers to run, or `None` for the scenario's default list.
    pub servers: Option<Vec<ServerSpec>>,
    /// How long and how much.
    pub profile: Profile,
    /// Where results go; with `all`, one subdirectory a scenario.
    pub out: PathBuf,
    /// Rounds of every server's steps, interleaved; `None` for three.
    pub rounds: Option<u32>,
    /// The servers' cores (`taskset -c` list); with `load_cpus`, or `None` for each
    /// scenario's split of this machine's cores.
    pub server_cpus: Option<String>,
    /// The load generator's cores.
    pub load_cpus: Option<String>,
    /// The command line as typed, recorded in the report for rerunning.
    pub command_line: String,
}

impl Options {
    /// The rounds to run: as given, or three (a median and a spread).
    pub fn rounds(&self) -> u32 {
        self.rounds.unwrap_or(3).max(1)
    }
}

impl std::str::FromStr for Profile {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "quick" => Ok(Self::Quick),
            "full" => Ok(Self::Full),
            _ => Err(Error::UnknownProfile(s.to_owned())),
        }
    }
}
