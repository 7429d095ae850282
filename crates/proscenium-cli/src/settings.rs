//! Resolves the configuration: the config file (if any), then the flags over it.

use std::path::{Path, PathBuf};

use proscenium::Config;

use crate::cli::ServeArgs;

/// Why the configuration could not be resolved.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SettingsError(pub(crate) String);

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Returns the configuration `args` ask for.
///
/// # Errors
///
/// When a named file is missing, a file is not valid TOML or has unknown keys, or DIR
/// is not a directory.
pub(crate) fn resolve(args: &ServeArgs) -> Result<Config, SettingsError> {
    let mut config = match config_file(args) {
        Some(path) => load(&path)?,
        None => Config::default(),
    };
    if let Some(dir) = &args.dir {
        if !dir.is_dir() {
            return Err(SettingsError(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        config.root = Some(dir.clone());
    }
    apply_flags(&mut config, args);
    Ok(config)
}

fn apply_flags(config: &mut Config, args: &ServeArgs) {
    if let Some(bind) = args.bind {
        config.bind = bind;
    }
    if let Some(spec) = args.model {
        spec.apply(config);
    }
    if let Some(workers) = args.workers {
        config.model = proscenium::Model::Prefork;
        config.workers = Some(workers);
    }
    if let Some(loops) = args.loops {
        config.loops = Some(loops);
    }
    if let Some(threads) = args.blocking_pool {
        config.blocking_threads = Some(threads);
    }
    if let Some(dispatch) = args.dispatch {
        config.dispatch = dispatch;
    }
    if let Some(log) = &args.log {
        config.log = Some(log.clone());
    }
    config.debug |= args.debug;
    config.tools |= args.tools;
}

/// Returns the config file to read: the named one, DIR's, or the working directory's.
fn config_file(args: &ServeArgs) -> Option<PathBuf> {
    if let Some(path) = &args.config {
        return Some(path.clone());
    }
    let in_dir = args.dir.as_ref().map(|d| d.join("proscenium.toml"));
    in_dir
        .into_iter()
        .chain([PathBuf::from("proscenium.toml")])
        .find(|p| p.is_file())
}

fn load(path: &Path) -> Result<Config, SettingsError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SettingsError(format!("cannot read {}: {e}", path.display())))?;
    let mut config: Config = toml::from_str(&text)
        .map_err(|e| SettingsError(format!("{}: {}", path.display(), one_line(&e.to_string()))))?;
    // A relative root in a config file is relative to the file, not to the shell.
    if let (Some(root), Some(base)) = (&config.root, path.parent()) {
        if root.is_relative() {
            config.root = Some(base.join(root));
        }
    }
    Ok(config)
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn args(line: &[&str]) -> ServeArgs {
        match Cli::try_parse_from(["proscenium", "serve"].iter().chain(line))
            .unwrap()
            .command
        {
            Command::Serve(args) | Command::Routes(args) => args,
            Command::Bench(_) => unreachable!("serve was parsed"),
        }
    }

    fn config_file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    #[test]
    fn defaults_are_yarns() {
        let config = resolve(&ServeArgs::default()).unwrap();
        assert_eq!(config.bind.to_string(), "127.0.0.1:3000");
    }

    #[test]
    fn flags_override_the_file_in_both_spellings() {
        let file =
            config_file("bind = \"127.0.0.1:4000\"\nloops = 3\ndispatch = \"round-robin\"\n");
        let path = file.path().to_str().unwrap();
        let from_file = resolve(&args(&["--config", path])).unwrap();
        assert_eq!((from_file.bind.port(), from_file.loops), (4000, Some(3)));
        for line in [
            [
                "--config",
                path,
                "--bind",
                "127.0.0.1:5000",
                "--loops",
                "1",
                "--dispatch",
                "reuseport",
            ],
            [
                "-c",
                path,
                "-b",
                "127.0.0.1:5000",
                "-l",
                "1",
                "--dispatch",
                "reuseport",
            ],
        ] {
            let config = resolve(&args(&line)).unwrap();
            assert_eq!(config.bind.port(), 5000);
            assert_eq!(config.loops, Some(1));
            assert_eq!(config.dispatch, proscenium::Dispatch::Reuseport);
        }
    }

    #[test]
    fn the_model_flag_sets_model_and_loops() {
        let config = resolve(&args(&["--model", "loops:3"])).unwrap();
        assert_eq!(
            (config.model, config.loop_count()),
            (proscenium::Model::Loops, 3)
        );
        let config = resolve(&args(&["-m", "event-loop", "--blocking-pool", "2"])).unwrap();
        assert_eq!((config.loop_count(), config.blocking_pool_size()), (1, 2));
        let config = resolve(&args(&["--model", "thread-per-conn:50"])).unwrap();
        assert_eq!(
            (config.model, config.thread_count()),
            (proscenium::Model::ThreadPerConn, 50)
        );
        let config = resolve(&args(&["-w", "4"])).unwrap();
        assert_eq!(
            (config.model, config.worker_count()),
            (proscenium::Model::Prefork, 4)
        );
        assert!(Cli::try_parse_from(["proscenium", "serve", "--model", "fibers"]).is_err());
    }

    #[test]
    fn bad_values_are_one_clear_line() {
        let file = config_file("loops = \"many\"\n");
        let err = resolve(&args(&["--config", file.path().to_str().unwrap()])).unwrap_err();
        assert!(!err.0.contains('\n'), "{err}");
        assert!(err.0.contains("loops"), "{err}");
        assert!(Cli::try_parse_from(["proscenium", "serve", "--dispatch", "fastest"]).is_err());
        assert!(
            resolve(&args(&["/no/such/dir"]))
                .unwrap_err()
                .0
                .contains("not a directory")
        );
    }

    #[test]
    fn dir_sets_the_root_and_its_config_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("proscenium.toml"), "tools = true\n").unwrap();
        let config = resolve(&args(&[dir.path().to_str().unwrap()])).unwrap();
        assert!(config.tools);
        assert_eq!(config.root.as_deref(), Some(dir.path()));
    }
}
