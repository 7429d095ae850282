//! Resolving a [`Config`] from every source a deployment has, and remembering where
//! each value came from.
//!
//! The sources, lowest first: built-in defaults, the app's own defaults (TOML it
//! embeds), `proscenium.toml` (named by `--config` or `PROSCENIUM_CONFIG`, else found
//! in the served directory or the working directory), `PROSCENIUM_*` environment
//! variables, and flags. Each source becomes a TOML table with the origin of every key
//! it sets; unknown keys are refused source by source (with a "did you mean"); the
//! tables are merged in order and the result deserialized once, so a bad value is
//! reported with the key and the source that set it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value as Json;
use toml::{Table, Value};

use super::{Config, ModelSpec, value};

/// Variables with the `PROSCENIUM_` prefix that are not settings.
const RESERVED_VARS: [&str; 4] = [
    "PROSCENIUM_CONFIG",
    "PROSCENIUM_WORKER",
    "PROSCENIUM_BOARD",
    "PROSCENIUM_TEST_MODEL",
];

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Proscenium's built-in default.
    Default,
    /// The defaults the app embeds.
    App,
    /// A line of a configuration file.
    File {
        /// The file, as it was named or found.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
    },
    /// An environment variable, by name.
    Env(String),
    /// A command-line flag, as written (`--loops`).
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::App => f.write_str("app default"),
            Self::File { path, line } => write!(f, "{}:{line}", path.display()),
            Self::Env(name) | Self::Flag(name) => f.write_str(name),
        }
    }
}

/// A configuration that cannot be used: where, which key, and what was expected.
///
/// Displays as one line, such as
/// `proscenium.toml:7: loops: expected a number from 1 to 1024, got "two"`.
/// The key is left out where the origin, a variable or a flag, names it already.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {}{message}", self.key_prefix())]
pub struct ConfigError {
    /// The source at fault.
    pub origin: Origin,
    /// The key, when the fault is one key's.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    fn key_prefix(&self) -> String {
        match (&self.origin, &self.key) {
            (Origin::Env(_) | Origin::Flag(_), _) | (_, None) => String::new(),
            (_, Some(key)) => format!("{key}: "),
        }
    }

    fn new(origin: Origin, key: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            origin,
            key: key.map(str::to_owned),
            message: message.into(),
        }
    }
}

/// A command-line flag that sets a setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The flag as written, for messages (`--loops`).
    pub name: String,
    /// The setting's key (`loops`, `limits.max_body`).
    pub key: String,
    /// The value as given; `true` for a switch.
    pub text: String,
}

/// The inputs of [`Settings::resolve`].
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The app's own defaults, as TOML.
    pub app_defaults: Option<String>,
    /// The configuration file named on the command line; it must exist.
    pub file: Option<PathBuf>,
    /// Directories where `proscenium.toml` is looked for, in order, when no file is
    /// named (by `file` or `PROSCENIUM_CONFIG`).
    pub search: Vec<PathBuf>,
    /// The environment: every variable whose name starts with `PROSCENIUM_` is a
    /// setting (or `PROSCENIUM_CONFIG`, a file to read).
    pub env: Vec<(String, String)>,
    /// Flags, in the order given.
    pub flags: Vec<Flag>,
}

/// A resolved configuration and the origin of each of its values.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The configuration.
    pub config: Config,
    origins: BTreeMap<String, Origin>,
}

/// One setting as `config` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key, dotted (`limits.max_body`).
    pub key: String,
    /// The value as TOML writes it, or `None` when unset (the model decides).
    pub value: Option<String>,
    /// Where it came from.
    pub origin: Origin,
}

impl Settings {
    /// Resolves the configuration from `sources`.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or parsed, an unknown key or variable, or a value
    /// its key does not take — reported with its source and key.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::config::{Flag, Origin, Settings, Sources};
    ///
    /// let sources = Sources {
    ///     env: vec![("PROSCENIUM_LOOPS".into(), "3".into())],
    ///     flags: vec![Flag { name: "--bind".into(), key: "bind".into(), text: ":8080".into() }],
    ///     ..Sources::default()
    /// };
    /// let settings = Settings::resolve(&sources).unwrap();
    /// assert_eq!(settings.config.loops, Some(3));
    /// assert_eq!(settings.origin("loops"), &Origin::Env("PROSCENIUM_LOOPS".into()));
    /// assert_eq!(settings.config.bind.port(), 8080);
    ///
    /// let bad = Sources { env: vec![("PROSCENIUM_LOPS".into(), "3".into())], ..Sources::default() };
    /// assert!(Settings::resolve(&bad).unwrap_err().to_string().contains("PROSCENIUM_LOOPS"));
    /// ```
    pub fn resolve(sources: &Sources) -> Result<Self, ConfigError> {
        let schema = schema();
        let mut layers = Vec::new();
        if let Some(text) = &sources.app_defaults {
            layers.push(Layer::toml(text, &|_| Origin::App)?);
        }
        if let Some(path) = config_file(sources)? {
            layers.push(Layer::file(&path)?);
        }
        layers.push(Layer::env(&sources.env, &schema)?);
        layers.push(Layer::flags(&sources.flags, &schema));
        let mut merged = Layer::default();
        for mut layer in layers {
            layer.expand_model()?;
            layer.check_keys(&schema)?;
            merged.merge(layer);
        }
        merged.into_settings()
    }

    /// Returns where the value of `key` (dotted) came from: its own origin, else the
    /// origin of the table that holds it, else the default.
    pub fn origin(&self, key: &str) -> &Origin {
        let mut key = key;
        loop {
            if let Some(origin) = self.origins.get(key) {
                return origin;
            }
            match key.rsplit_once('.') {
                Some((parent, _)) => key = parent,
                None => return &Origin::Default,
            }
        }
    }

    /// Returns every setting with its value and origin, in key order.
    pub fn entries(&self) -> Vec<Entry> {
        let mut entries = Vec::new();
        let tree = serde_json::to_value(&self.config).unwrap_or(Json::Null);
        for (key, value) in leaves(&tree, "") {
            entries.push(Entry {
                origin: self.origin(&key).clone(),
                value: toml_text(value),
                key,
            });
        }
        entries
    }
}

/// One source as a table, with the origin of each key it sets (tables included).
#[derive(Debug, Default)]
struct Layer {
    table: Table,
    origins: BTreeMap<String, Origin>,
}

impl Layer {
    /// A TOML text; `origin` gives a key's origin from the line it is on.
    fn toml(text: &str, origin: &dyn Fn(usize) -> Origin) -> Result<Self, ConfigError> {
        let table: Table = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            ConfigError::new(origin(line), None, one_line(e.message()))
        })?;
        let mut origins = BTreeMap::new();
        if let Ok(spanned) = toml::de::DeTable::parse(text) {
            key_lines(spanned.get_ref(), text, "", &mut |key, line| {
                origins.insert(key, origin(line));
            });
        }
        Ok(Self { table, origins })
    }

    fn file(path: &Path) -> Result<Self, ConfigError> {
        let at = |line| Origin::File {
            path: path.to_owned(),
            line,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(at(0), None, format!("cannot read: {e}")))?;
        let mut layer = Self::toml(&text, &at)?;
        // A relative root in a file is relative to the file, not to the shell.
        if let Some(Value::String(root)) = layer.table.get("root")
            && Path::new(root).is_relative()
            && let Some(base) = path.parent()
        {
            let joined = base.join(root).to_string_lossy().into_owned();
            layer.table.insert("root".to_owned(), Value::String(joined));
        }
        Ok(layer)
    }

    fn env(vars: &[(String, String)], schema: &Json) -> Result<Self, ConfigError> {
        let names: BTreeMap<String, String> = leaves(schema, "")
            .into_iter()
            .map(|(key, _)| (env_name(&key), key))
            .collect();
        let mut layer = Self::default();
        for (name, text) in vars {
            if !name.starts_with("PROSCENIUM_") || RESERVED_VARS.contains(&name.as_str()) {
                continue;
            }
            let Some(key) = names.get(name) else {
                let hint = did_you_mean(name, names.keys().map(String::as_str));
                return Err(ConfigError::new(
                    Origin::Env(name.clone()),
                    None,
                    format!("no such setting{hint}"),
                ));
            };
            layer.set(key, scalar(text, schema, key), Origin::Env(name.clone()));
        }
        Ok(layer)
    }

    fn flags(flags: &[Flag], schema: &Json) -> Self {
        let mut layer = Self::default();
        for flag in flags {
            let value = scalar(&flag.text, schema, &flag.key);
            layer.set(&flag.key, value, Origin::Flag(flag.name.clone()));
        }
        layer
    }

    /// Sets the dotted `key`, making the tables on its way.
    fn set(&mut self, key: &str, value: Value, origin: Origin) {
        let mut table = &mut self.table;
        let mut parts = key.split('.').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                table.insert(part.to_owned(), value);
                break;
            }
            let next = table
                .entry(part.to_owned())
                .or_insert_with(|| Value::Table(Table::new()));
            let Value::Table(next) = next else { break };
            table = next;
        }
        self.origins.insert(key.to_owned(), origin);
    }

    /// Turns `model = "loops:4"` into `model = "loops"` and `loops = 4` (`threads`
    /// for the thread models, `workers` for `prefork`), from the same source.
    fn expand_model(&mut self) -> Result<(), ConfigError> {
        let Some(Value::String(text)) = self.table.get("model") else {
            return Ok(());
        };
        let origin = self
            .origins
            .get("model")
            .cloned()
            .unwrap_or(Origin::Default);
        let spec: ModelSpec = text
            .parse()
            .map_err(|e: String| ConfigError::new(origin.clone(), Some("model"), e))?;
        let Some(count) = spec.count else {
            return Ok(());
        };
        let key = match spec.model {
            super::Model::Loops | super::Model::Staged => "loops",
            super::Model::Prefork => "workers",
            _ => "threads",
        };
        self.set(
            "model",
            Value::String(spec.model.to_string()),
            origin.clone(),
        );
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.set(key, Value::Integer(count), origin);
        Ok(())
    }

    /// Refuses keys the configuration does not have. Named tables (`dispatchers`, `clusters`,
    /// `pools`) are checked by their own types when deserialized.
    fn check_keys(&self, schema: &Json) -> Result<(), ConfigError> {
        self.check_table(&self.table, schema, "")
    }

    fn check_table(&self, table: &Table, schema: &Json, prefix: &str) -> Result<(), ConfigError> {
        let Json::Object(known) = schema else {
            return Ok(());
        };
        for (name, value) in table {
            let key = join(prefix, name);
            match (known.get(name), value) {
                (None, _) => {
                    let hint = did_you_mean(name, known.keys().map(String::as_str));
                    let origin = self.origins.get(&key).cloned().unwrap_or(Origin::Default);
                    return Err(ConfigError::new(
                        origin,
                        Some(&key),
                        format!("no such setting{hint}"),
                    ));
                }
                (Some(inner @ Json::Object(fields)), Value::Table(table)) if !fields.is_empty() => {
                    self.check_table(table, inner, &key)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Lays `upper` over this layer: its values replace these, tables merge.
    fn merge(&mut self, upper: Self) {
        merge_tables(&mut self.table, upper.table);
        self.origins.extend(upper.origins);
    }

    fn into_settings(self) -> Result<Settings, ConfigError> {
        let config: Config =
            serde_path_to_error::deserialize(Value::Table(self.table)).map_err(|e| {
                let key = e.path().to_string();
                let settings = Settings {
                    config: Config::default(),
                    origins: self.origins.clone(),
                };
                let origin = settings.origin(&key).clone();
                ConfigError::new(origin, Some(&key), value::reword(e.inner().message()))
            })?;
        Ok(Settings {
            config,
            origins: self.origins,
        })
    }
}

/// Returns the file to read: the one named by flag or `PROSCENIUM_CONFIG` (which must
/// exist), else the first `proscenium.toml` in the search path.
fn config_file(sources: &Sources) -> Result<Option<PathBuf>, ConfigError> {
    let from_env = sources
        .env
        .iter()
        .find(|(name, _)| name == "PROSCENIUM_CONFIG")
        .map(|(_, path)| (PathBuf::from(path), Origin::Env("PROSCENIUM_CONFIG".into())));
    let named = match &sources.file {
        Some(path) => Some((path.clone(), Origin::Flag("--config".into()))),
        None => from_env,
    };
    if let Some((path, origin)) = named {
        return if path.is_file() {
            Ok(Some(path))
        } else {
            Err(ConfigError::new(
                origin,
                None,
                format!("{}: no such file", path.display()),
            ))
        };
    }
    Ok(sources
        .search
        .iter()
        .map(|dir| dir.join("proscenium.toml"))
        .find(|p| p.is_file()))
}

/// Every key the configuration has, with its default, as a JSON tree (unset options
/// are `null`, named tables empty objects).
fn schema() -> Json {
    serde_json::to_value(Config::default()).unwrap_or(Json::Null)
}

/// Returns the leaves of a JSON tree with their dotted keys; an empty table is no
/// leaf.
fn leaves<'a>(tree: &'a Json, prefix: &str) -> Vec<(String, &'a Json)> {
    match tree {
        Json::Object(fields) => fields
            .iter()
            .flat_map(|(name, value)| leaves(value, &join(prefix, name)))
            .collect(),
        leaf => vec![(prefix.to_owned(), leaf)],
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// `limits.max_body` → `PROSCENIUM_LIMITS_MAX_BODY`.
fn env_name(key: &str) -> String {
    format!("PROSCENIUM_{}", key.replace('.', "_").to_ascii_uppercase())
}

/// Reads a variable's or flag's text as a TOML value (`4`, `true`, `0.5`); text kept
/// as a string where the key takes a string, or where it is no TOML value.
fn scalar(text: &str, schema: &Json, key: &str) -> Value {
    let takes_string = key
        .split('.')
        .try_fold(schema, |tree, part| tree.get(part))
        .is_some_and(Json::is_string);
    let parsed = (!takes_string)
        .then(|| toml::de::ValueDeserializer::parse(text).ok())
        .flatten()
        .and_then(|de| Value::deserialize(de).ok())
        .filter(|v| !v.is_table() && !v.is_array());
    parsed.unwrap_or_else(|| Value::String(text.to_owned()))
}

fn merge_tables(lower: &mut Table, upper: Table) {
    for (name, value) in upper {
        match (lower.get_mut(&name), value) {
            (Some(Value::Table(lower)), Value::Table(upper)) => merge_tables(lower, upper),
            (_, value) => {
                lower.insert(name, value);
            }
        }
    }
}

/// Calls `found` with the dotted key and line of every key in a parsed document.
fn key_lines(
    table: &toml::de::DeTable<'_>,
    text: &str,
    prefix: &str,
    found: &mut dyn FnMut(String, usize),
) {
    for (name, value) in table {
        let key = join(prefix, name.get_ref());
        found(key.clone(), line_of(text, name.span().start));
        if let toml::de::DeValue::Table(inner) = value.get_ref() {
            key_lines(inner, text, &key, found);
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Returns `, did you mean X?` for the candidate closest to `name`, if any is close.
fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    candidates
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| format!(", did you mean `{c}`?"))
        .unwrap_or_default()
}

/// A JSON leaf as TOML writes it; `None` for an unset option.
fn toml_text(value: &Json) -> Option<String> {
    match value {
        Json::Null => None,
        Json::String(s) => Some(Value::String(s.clone()).to_string()),
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn resolve_file(f: &tempfile::NamedTempFile) -> Result<Settings, ConfigError> {
        Settings::resolve(&Sources {
            file: Some(f.path().to_owned()),
            ..Sources::default()
        })
    }

    fn resolve_env(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        Settings::resolve(&Sources {
            env: env(pairs),
            ..Sources::default()
        })
    }

    fn resolve_flag(name: &str, key: &str, text: &str) -> Result<Settings, ConfigError> {
        Settings::resolve(&Sources {
            flags: vec![flag(name, key, text)],
            ..Sources::default()
        })
    }

    fn flag(name: &str, key: &str, text: &str) -> Flag {
        Flag {
            name: name.to_owned(),
            key: key.to_owned(),
            text: text.to_owned(),
        }
    }

    #[test]
    fn defaults_then_app_then_file_then_env_then_flags() {
        let f = file("loops = 2\nworkers = 2\nblocking_threads = 3\n[limits]\nmax_body = 10\n");
        let mut sources = Sources {
            app_defaults: Some("loops = 1\nworkers = 1\nthreads = 7\n".into()),
            file: Some(f.path().to_owned()),
            env: env(&[
                ("PROSCENIUM_WORKERS", "3"),
                ("PROSCENIUM_BLOCKING_THREADS", "4"),
            ]),
            flags: vec![flag("--blocking-pool", "blocking_threads", "5")],
            ..Sources::default()
        };
        let s = Settings::resolve(&sources).unwrap();
        let c = &s.config;
        assert_eq!(
            (
                c.threads,
                c.loops,
                c.workers,
                c.blocking_threads,
                c.limits.max_body
            ),
            (Some(7), Some(2), Some(3), Some(5), 10)
        );
        assert_eq!(s.origin("threads"), &Origin::App);
        assert_eq!(
            s.origin("loops"),
            &Origin::File {
                path: f.path().to_owned(),
                line: 1
            }
        );
        assert_eq!(
            s.origin("limits.max_body"),
            &Origin::File {
                path: f.path().to_owned(),
                line: 5
            }
        );
        assert_eq!(
            s.origin("workers"),
            &Origin::Env("PROSCENIUM_WORKERS".into())
        );
        assert_eq!(
            s.origin("blocking_threads"),
            &Origin::Flag("--blocking-pool".into())
        );
        assert_eq!(s.origin("dispatch"), &Origin::Default);
        sources.flags.clear();
        assert_eq!(
            Settings::resolve(&sources).unwrap().config.blocking_threads,
            Some(4)
        );
    }

    #[test]
    fn a_model_with_a_count_sets_the_count_from_the_same_source() {
        let sources = Sources {
            env: env(&[("PROSCENIUM_MODEL", "thread-pool:8")]),
            ..Sources::default()
        };
        let s = Settings::resolve(&sources).unwrap();
        assert_eq!(
            (s.config.model, s.config.threads),
            (super::super::Model::ThreadPool, Some(8))
        );
        assert_eq!(s.origin("threads"), &Origin::Env("PROSCENIUM_MODEL".into()));
        let f = file("model = \"prefork:3\"\n");
        let s = resolve_file(&f).unwrap();
        assert_eq!(s.config.workers, Some(3));
    }

    #[test]
    fn bad_values_name_source_key_and_expectation() {
        let f = file("# a comment\n\nloops = \"two\"\n");
        let err = resolve_file(&f).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}:3: loops: expected a number from 1 to 1024, got \"two\"",
                f.path().display()
            )
        );
        let err = resolve_env(&[("PROSCENIUM_LIMITS_MAX_HEADERS", "0")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "PROSCENIUM_LIMITS_MAX_HEADERS: expected a number from 1 to 10000, got 0"
        );
        let err = resolve_flag("--bind", "bind", "3000").unwrap_err();
        assert!(
            err.to_string().starts_with("--bind: expected an address"),
            "{err}"
        );
        let err = resolve_flag("--model", "model", "fibers").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--model: unknown model `fibers`"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_and_variables_are_refused_with_a_suggestion() {
        let f = file("loops = 1\n[limits]\nmax_bdy = 5\n");
        let err = resolve_file(&f).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}:3: limits.max_bdy: no such setting, did you mean `max_body`?",
                f.path().display()
            )
        );
        let err = resolve_env(&[("PROSCENIUM_LOPS", "2"), ("PROSCENIUM_WORKER", "1")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "PROSCENIUM_LOPS: no such setting, did you mean `PROSCENIUM_LOOPS`?"
        );
        let f = file("[pools.images]\nthread = 2\n");
        let err = resolve_file(&f).unwrap_err();
        assert!(err.to_string().contains("threads"), "{err}");
    }

    #[test]
    fn a_syntax_error_names_its_line_and_a_named_file_must_exist() {
        let f = file("loops = 1\nbind = \n");
        let err = resolve_file(&f).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{}:2: ", f.path().display())),
            "{err}"
        );
        assert!(!err.to_string().contains('\n'), "{err}");
        let err = resolve_env(&[("PROSCENIUM_CONFIG", "/no/such.toml")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "PROSCENIUM_CONFIG: /no/such.toml: no such file"
        );
    }

    #[test]
    fn named_tables_come_from_files_and_entries_list_every_value() {
        let f = file(
            "[pools.images]\nthreads = 2\n[dispatchers.mailer]\nkind = \"pool\"\nthreads = 2\n",
        );
        let dir = f.path().parent().unwrap().to_owned();
        let s = Settings::resolve(&Sources {
            file: Some(f.path().to_owned()),
            search: vec![dir],
            ..Sources::default()
        })
        .unwrap();
        assert_eq!(s.config.pools["images"], super::super::PoolSpec::threads(2));
        let entries = s.entries();
        let images = entries
            .iter()
            .find(|e| e.key == "pools.images.threads")
            .unwrap();
        assert_eq!(images.value.as_deref(), Some("2"));
        assert!(matches!(images.origin, Origin::File { line: 2, .. }));
        let bind = entries.iter().find(|e| e.key == "bind").unwrap();
        assert_eq!(
            (bind.value.as_deref(), &bind.origin),
            (Some("\"127.0.0.1:3000\""), &Origin::Default)
        );
        assert!(
            entries
                .iter()
                .any(|e| e.key == "loops" && e.value.is_none())
        );
    }

    #[test]
    fn stage_clusters_come_from_files_and_a_misspelt_key_is_refused() {
        let f = file(
            "[clusters.extrusion]\nstages = [\"extrusion\"]\nthreads = 4\ninstances = { extrusion = 4 }\n",
        );
        let s = resolve_file(&f).unwrap();
        let extrusion = &s.config.clusters["extrusion"];
        assert_eq!(
            (extrusion.threads, extrusion.instances["extrusion"]),
            (Some(4), 4)
        );
        let f = file("[clusters.extrusion]\nthread = 4\n");
        let err = resolve_file(&f).unwrap_err();
        assert!(err.to_string().contains("thread"), "{err}");
    }

    #[test]
    fn redis_and_the_processes_come_from_a_file_or_the_environment() {
        let f = file(
            "[redis]\nurl = \"redis://127.0.0.1:6380\"\n\
             [processes.correlate]\nclusters = [\"correlate\"]\nhost = \"h2\"\n\
             [processes.main]\nclusters = [\"sources\", \"main\"]\n",
        );
        let s = resolve_file(&f).unwrap();
        assert_eq!(
            s.config.redis.url.as_deref(),
            Some("redis://127.0.0.1:6380")
        );
        let correlate = &s.config.processes["correlate"];
        assert_eq!(
            (correlate.clusters.as_slice(), correlate.host.as_str()),
            (&["correlate".to_owned()][..], "h2")
        );
        assert_eq!(s.config.processes["main"].host, "localhost");
        let s = resolve_env(&[("PROSCENIUM_REDIS_URL", "redis://10.0.0.9")]).unwrap();
        assert_eq!(s.config.redis.url.as_deref(), Some("redis://10.0.0.9"));
        assert!(
            Settings::resolve(&Sources::default())
                .unwrap()
                .config
                .redis
                .url
                .is_none()
        );
    }

    #[test]
    fn a_redis_url_that_is_not_one_and_a_misspelt_process_key_are_refused_by_name() {
        let err = resolve_env(&[("PROSCENIUM_REDIS_URL", "localhost:6379")]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("PROSCENIUM_REDIS_URL") && text.contains("redis://"),
            "{text}"
        );
        let f = file("[processes.correlate]\ncluster = [\"correlate\"]\n");
        let err = resolve_file(&f).unwrap_err();
        assert!(err.to_string().contains("cluster"), "{err}");
        let f = file("[redis]\nurls = \"redis://x\"\n");
        let err = resolve_file(&f).unwrap_err();
        assert!(err.to_string().contains("did you mean"), "{err}");
    }
}
