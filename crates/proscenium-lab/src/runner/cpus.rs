//! The CPU split: which cores run the servers and which the load, from
//! `--server-cpus` / `--load-cpus` or, by default, the scenario's [`Cores`] on every
//! core of the machine (`Split`: the first half for the server, the rest for the load;
//! `Shared`: all for both).

use super::Options;
use crate::Error;
use crate::scenario::Cores;

/// A set of cores in `taskset -c` syntax, and how many it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CpuSet {
    pub(super) list: String,
    pub(super) count: usize,
}

impl CpuSet {
    /// Reads a `taskset -c` list such as `0-3,6`.
    fn parse(list: &str) -> Result<Self, Error> {
        let cores = cores_of(list).ok_or_else(|| {
            Error::Tool(format!(
                "`{list}` is not a CPU list (such as 0-3 or 0,2,4-5)"
            ))
        })?;
        Ok(Self {
            list: list.to_owned(),
            count: cores.len(),
        })
    }

    fn range(from: usize, to: usize) -> Self {
        Self {
            list: format!("{from}-{to}"),
            count: to + 1 - from,
        }
    }

    fn overlaps(&self, other: &Self) -> bool {
        let (a, b) = (cores_of(&self.list), cores_of(&other.list));
        a.zip(b)
            .is_some_and(|(a, b)| a.iter().any(|c| b.contains(c)))
    }
}

/// The cores of a list, or `None` when it is not one.
fn cores_of(list: &str) -> Option<Vec<usize>> {
    let mut cores = Vec::new();
    for part in list.split(',') {
        let (from, to) = part.split_once('-').unwrap_or((part, part));
        let (from, to): (usize, usize) = (from.trim().parse().ok()?, to.trim().parse().ok()?);
        if from > to {
            return None;
        }
        cores.extend(from..=to);
    }
    Some(cores)
}

/// The cores chosen for a whole run.
#[derive(Debug, Clone)]
pub(super) struct CpuSplit {
    /// Both given on the command line, or `None` for each scenario's default.
    chosen: Option<(CpuSet, CpuSet)>,
    machine_cores: usize,
}

impl CpuSplit {
    pub(super) fn choose(options: &Options, machine_cores: usize) -> Result<Self, Error> {
        let chosen = match (&options.server_cpus, &options.load_cpus) {
            (Some(server), Some(load)) => Some((CpuSet::parse(server)?, CpuSet::parse(load)?)),
            (None, None) => None,
            _ => {
                return Err(Error::Tool(
                    "--server-cpus and --load-cpus go together".to_owned(),
                ));
            }
        };
        Ok(Self {
            chosen,
            machine_cores,
        })
    }

    /// The server's cores and the load's for a scenario planned with `cores`.
    pub(super) fn for_plan(&self, cores: Cores) -> (CpuSet, CpuSet) {
        if let Some(chosen) = &self.chosen {
            return chosen.clone();
        }
        let n = self.machine_cores.max(1);
        let all = CpuSet::range(0, n - 1);
        match cores {
            Cores::Split if n >= 2 => (CpuSet::range(0, n / 2 - 1), CpuSet::range(n / 2, n - 1)),
            _ => (all.clone(), all),
        }
    }

    /// What the split costs the figures, for the report's deviations.
    pub(super) fn note(&self, cores: Cores) -> Option<String> {
        let (server, load) = self.for_plan(cores);
        if server.overlaps(&load) {
            Some(format!(
                "servers and load share cores {}: every cycle the load generator spends is one \
                 the server lacks, so throughput is a lower bound and latency includes waiting \
                 for the generator; on a larger machine, --server-cpus and --load-cpus give \
                 the load cores of its own",
                server.list
            ))
        } else if server.count < 2 {
            Some(format!(
                "the server has one core ({}), the load {}: the multi-core models cannot \
                 spread, and a server that waits on the generator shows as under 100 % busy",
                server.list, load.list
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(cores: usize) -> CpuSplit {
        CpuSplit {
            chosen: None,
            machine_cores: cores,
        }
    }

    fn lists(split: &CpuSplit, cores: Cores) -> (String, usize, String) {
        let (s, l) = split.for_plan(cores);
        (s.list, s.count, l.list)
    }

    #[test]
    fn split_puts_server_and_load_on_separate_cores() {
        assert_eq!(
            lists(&split(2), Cores::Split),
            ("0-0".into(), 1, "1-1".into())
        );
        assert_eq!(
            lists(&split(8), Cores::Split),
            ("0-3".into(), 4, "4-7".into())
        );
        assert_eq!(
            lists(&split(2), Cores::Shared),
            ("0-1".into(), 2, "0-1".into())
        );
        assert_eq!(
            lists(&split(1), Cores::Split),
            ("0-0".into(), 1, "0-0".into())
        );
    }

    #[test]
    fn chosen_cores_override_every_scenario_and_say_what_sharing_costs() {
        let chosen = CpuSplit {
            chosen: Some((CpuSet::parse("0-5").unwrap(), CpuSet::parse("6,7").unwrap())),
            machine_cores: 8,
        };
        assert_eq!(
            lists(&chosen, Cores::Shared),
            ("0-5".into(), 6, "6,7".into())
        );
        assert!(
            chosen.note(Cores::Shared).is_none(),
            "apart, and enough cores"
        );
        assert!(
            split(2)
                .note(Cores::Shared)
                .unwrap()
                .contains("share cores 0-1")
        );
        assert!(split(2).note(Cores::Split).unwrap().contains("one core"));
        assert!(CpuSet::parse("3-1").is_err() && CpuSet::parse("a").is_err());
        assert_eq!(CpuSet::parse("0-3,6").unwrap().count, 5);
    }
}
