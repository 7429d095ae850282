//! Resolving a [`Config`] from every source a deployment has, and remembering where
//! each value came from.
//!
//! The sources, lowest first: built-in defaults, the app's own defaults (TOML it
//! embeds), the platform's `PORT` (for `bind` alone, and only where no source above
//! it sets `bind`), `proscenium.toml` (named by `--config` or `PROSCENIUM_CONFIG`,
//! else found in the served directory or the working directory), `PROSCENIUM_*`
//! environment variables, `--set KEY=VALUE`, and the other flags. Each source becomes a TOML table with the origin of every key
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

/// The keys naming a path which, relative in a file, is relative to the file, not to
/// the shell.
const FILE_RELATIVE: [&str; 6] = [
    "root",
    "client.ca",
    "redis.ca",
    "feeds.ca",
    "hosted.rack",
    "hosted.dir",
];

/// Variables with the `PROSCENIUM_` prefix that are not settings.
const RESERVED_VARS: [&str; 7] = [
    "PROSCENIUM_CONFIG",
    "PROSCENIUM_WORKER",
    "PROSCENIUM_BOARD",
    "PROSCENIUM_METRICS",
    "PROSCENIUM_SUPERVISOR",
    "PROSCENIUM_TEST_MODEL",
    "PROSCENIUM_TEST_WORKERS",
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
    /// setting (or `PROSCENIUM_CONFIG`, a file to read); `PORT` gives `bind` where no
    /// file, variable or flag does.
    pub env: Vec<(String, String)>,
    /// Flags, in the order given: of two for one key, the later wins.
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
        let file = config_file(sources)?;
        let mut upper = Vec::new();
        if let Some(path) = &file {
            upper.push(Layer::file(path)?);
        }
        upper.push(Layer::env(&sources.env, &schema)?);
        upper.push(Layer::flags(&sources.flags, &schema));
        if !upper.iter().any(|layer| layer.table.contains_key("bind")) {
            layers.extend(Layer::port(&sources.env)?);
        }
        layers.extend(upper);
        let mut merged = Layer::default();
        for mut layer in layers {
            layer.expand_model()?;
            layer.check_keys(&schema)?;
            merged.merge(layer);
        }
        let mut settings = merged.into_settings()?;
        settings.config.file = file;
        Ok(settings)
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
        if let Some(base) = path.parent() {
            for key in FILE_RELATIVE {
                layer.relative_to(base, key);
            }
        }
        Ok(layer)
    }

    /// Joins the path at the dotted `key` to `base`, when it is relative.
    fn relative_to(&mut self, base: &Path, key: &str) {
        let mut table = &mut self.table;
        let mut parts = key.split('.').peekable();
        while let Some(part) = parts.next() {
            match (table.get_mut(part), parts.peek()) {
                (Some(Value::Table(inner)), Some(_)) => table = inner,
                (Some(Value::String(path)), None) if Path::new(path.as_str()).is_relative() => {
                    *path = base.join(&*path).to_string_lossy().into_owned();
                    return;
                }
                _ => return,
            }
        }
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
            let value = scalar(text, schema, key, Structured::No);
            layer.set(key, value, Origin::Env(name.clone()));
        }
        Ok(layer)
    }

    /// `bind = "0.0.0.0:$PORT"`, from the `PORT` a platform sets (Heroku, Cloud Run,
    /// Fly.io), if any. IPv4's every interface, as `:PORT` is: `[::]` fails where a
    /// container has IPv6 turned off, and takes IPv4 too only where the kernel's
    /// `bindv6only` is 0.
    fn port(vars: &[(String, String)]) -> Result<Option<Self>, ConfigError> {
        let Some((name, text)) = vars.iter().find(|(name, _)| name == "PORT") else {
            return Ok(None);
        };
        let origin = Origin::Env(name.clone());
        let port: u16 = text.trim().parse().map_err(|_| {
            let message = format!("expected a port from 0 to 65535, got {text:?}");
            ConfigError::new(origin.clone(), None, message)
        })?;
        let mut layer = Self::default();
        let bind = std::net::SocketAddr::from(([0, 0, 0, 0], port));
        layer.set("bind", Value::String(bind.to_string()), origin);
        Ok(Some(layer))
    }

    fn flags(flags: &[Flag], schema: &Json) -> Self {
        let mut layer = Self::default();
        for flag in flags {
            let value = scalar(&flag.text, schema, &flag.key, Structured::Yes);
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
                    let origin = self.origin_within(&key);
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

    /// Returns the origin of `key`, or of the first key below it a source set
    /// (`--set limit.max_body=1` names no `limit` of its own).
    fn origin_within(&self, key: &str) -> Origin {
        let below = format!("{key}.");
        self.origins
            .get(key)
            .or_else(|| {
                self.origins
                    .range(below.clone()..)
                    .next()
                    .filter(|(set, _)| set.starts_with(&below))
                    .map(|(_, origin)| origin)
            })
            .cloned()
            .unwrap_or(Origin::Default)
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
pub(super) fn leaves<'a>(tree: &'a Json, prefix: &str) -> Vec<(String, &'a Json)> {
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

/// Whether a source's text may be an array or an inline table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Structured {
    /// A flag (`--set cgi.dirs=["bin"]`): any value the file could hold.
    Yes,
    /// A variable: a number, a boolean or a string.
    No,
}

/// Reads a variable's or flag's text as a TOML value (`4`, `true`, `0.5`; for a flag,
/// arrays, inline tables and quoted strings too); text kept as it is where the key
/// takes a string (durations and sizes among them), or where it is no such TOML value.
fn scalar(text: &str, schema: &Json, key: &str, structured: Structured) -> Value {
    let takes_string = key
        .split('.')
        .try_fold(schema, |tree, part| tree.get(part))
        .is_some_and(Json::is_string);
    let parsed = toml::de::ValueDeserializer::parse(text)
        .ok()
        .and_then(|de| Value::deserialize(de).ok())
        .filter(|v| match structured {
            // A flag's quoted string is that string, as in the file.
            Structured::Yes => v.is_str() || !takes_string,
            Structured::No => !(takes_string || v.is_table() || v.is_array()),
        });
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
#[path = "sources_tests.rs"]
mod tests;
