//! Command-line arguments: a command, `--name value` options and positional words.

use std::collections::HashMap;
use std::str::FromStr;

/// The parsed command line.
pub struct Args {
    command: String,
    options: HashMap<String, String>,
    positional: Vec<String>,
}

impl Args {
    /// Parses the process's arguments.
    pub fn from_env() -> Self {
        let mut words = std::env::args().skip(1);
        let command = words.next().unwrap_or_default();
        let mut options = HashMap::new();
        let mut positional = Vec::new();
        while let Some(word) = words.next() {
            match word.strip_prefix("--") {
                Some(name) => {
                    options.insert(name.to_string(), words.next().unwrap_or_default());
                }
                None => positional.push(word),
            }
        }
        Self {
            command,
            options,
            positional,
        }
    }

    /// Returns the command word.
    pub fn command(&self) -> String {
        self.command.clone()
    }

    /// Returns option `name` parsed, or `default` when absent.
    pub fn get<T: FromStr>(&mut self, name: &str, default: T) -> Result<T, String> {
        match self.options.remove(name) {
            Some(text) => text.parse().map_err(|_| format!("bad --{name} {text:?}")),
            None => Ok(default),
        }
    }

    /// Returns option `name`, which must be given.
    pub fn required(&mut self, name: &str) -> Result<String, String> {
        self.options
            .remove(name)
            .ok_or_else(|| format!("--{name} is required"))
    }

    /// Returns the positional words.
    pub fn positional(&self) -> &[String] {
        &self.positional
    }
}
