//! What the lab runs besides the servers: the load generators (wrk, vegeta), nginx,
//! Node.js, Apache httpd, a JDK and Maven, installed on first use (saying so), and the
//! programs it builds (the examples of this workspace, the Rust and JVM peers from
//! `bench/peers/`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::Error;
use crate::progress::Progress;

/// The vegeta release installed from the Go module proxy.
pub(crate) const VEGETA: &str = "github.com/tsenart/vegeta/v12@v12.12.0";

/// Locates, installs and builds the lab's programs; each is built once a run.
#[derive(Debug)]
pub(crate) struct Tools {
    root: PathBuf,
    /// Where cargo puts this workspace's builds: `CARGO_TARGET_DIR` when set (the test
    /// script of a clean checkout sets it), else `target/` under the root.
    target: PathBuf,
    progress: Progress,
    built: RefCell<BTreeSet<String>>,
}

impl Tools {
    /// Tools for the checkout at `root` (where `bench/peers/` and `examples/` are).
    pub(crate) fn new(root: PathBuf, progress: Progress) -> Self {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| root.join("target"), |dir| root.join(dir));
        Self {
            root,
            target,
            progress,
            built: RefCell::default(),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Returns the path of `command`, installing Debian's `package` when it is missing.
    pub(crate) fn need(&self, command: &str, package: &str) -> Result<PathBuf, Error> {
        if let Some(path) = which(command) {
            return Ok(path);
        }
        self.install(package, command)?;
        which(command).ok_or_else(|| Error::Tool(format!("{package} installed no {command}")))
    }

    /// Makes sure Ruby loads `library` (`require`), installing Ruby and Debian's
    /// `package` if not.
    pub(crate) fn need_ruby_library(&self, library: &str, package: &str) -> Result<(), Error> {
        let ruby = self.need("ruby", "ruby")?;
        let loads = || quiet(Command::new(&ruby).args(["-e", &format!("require {library:?}")]));
        if !loads() {
            self.install(package, &format!("Ruby's {library}"))?;
        }
        if loads() {
            Ok(())
        } else {
            Err(Error::Tool(format!(
                "{package} installed no Ruby {library}"
            )))
        }
    }

    /// Makes sure the file at `path` exists, installing Debian's `package` if not.
    pub(crate) fn need_file(&self, path: &Path, package: &str) -> Result<(), Error> {
        if !path.exists() {
            self.install(package, &path.display().to_string())?;
        }
        if path.exists() {
            Ok(())
        } else {
            Err(Error::Tool(format!(
                "{package} installed no {}",
                path.display()
            )))
        }
    }

    /// Installs Debian's `package` (apt-get, updating the index if the first try
    /// fails), saying so.
    fn install(&self, package: &str, needed_for: &str) -> Result<(), Error> {
        self.progress.say(format!(
            "installing {package} (apt-get), needed for {needed_for}..."
        ));
        let install = |update: bool| {
            let mut script = String::new();
            if update {
                script.push_str("apt-get update -qq && ");
            }
            script.push_str("DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ");
            script.push_str(package);
            quiet(Command::new("sh").args(["-c", &script]))
        };
        if install(false) || install(true) {
            Ok(())
        } else {
            Err(Error::Tool(format!(
                "{needed_for} is missing and `apt-get install {package}` failed"
            )))
        }
    }

    /// Returns vegeta, installing it with `go install` into the target directory's
    /// `lab-tools` when missing.
    pub(crate) fn vegeta(&self) -> Result<PathBuf, Error> {
        if let Some(path) = self.installed_vegeta() {
            return Ok(path);
        }
        let bin = self.target.join("lab-tools");
        let path = bin.join("vegeta");
        let go = self.need("go", "golang-go")?;
        self.progress
            .say(format!("installing vegeta ({VEGETA}, go install)..."));
        let ok = quiet(
            Command::new(go)
                .args(["install", VEGETA])
                .env("GOBIN", &bin),
        );
        if ok && path.exists() {
            Ok(path)
        } else {
            Err(Error::Tool(format!("`go install {VEGETA}` failed")))
        }
    }

    /// Returns vegeta when it is installed already.
    pub(crate) fn installed_vegeta(&self) -> Option<PathBuf> {
        let local = self.target.join("lab-tools/vegeta");
        which("vegeta").or_else(|| local.exists().then_some(local))
    }

    /// Builds the example `examples/NAME` (lab-app, fib-cache) in release mode.
    pub(crate) fn build_example(&self, name: &str) -> Result<(), Error> {
        self.build_binary(name, name)
    }

    /// Builds this workspace's `package` in release mode, and checks it made `binary`
    /// (the `proscenium` command is `proscenium-cli`'s).
    pub(crate) fn build_binary(&self, package: &str, binary: &str) -> Result<(), Error> {
        let mut cargo = Command::new("cargo");
        cargo
            .args(["build", "--release", "--quiet", "-p", package])
            .current_dir(&self.root);
        self.build(package, &mut cargo)?;
        let path = self.example_binary(binary);
        if path.is_file() {
            Ok(())
        } else {
            Err(Error::Build {
                what: binary.to_owned(),
                log: format!("cargo succeeded but {} is missing", path.display()),
            })
        }
    }

    /// The release binary `name` of this workspace.
    pub(crate) fn example_binary(&self, name: &str) -> PathBuf {
        self.target.join("release").join(name)
    }

    /// Builds the peer `bench/peers/NAME` into `bench/peers/target`.
    pub(crate) fn build_peer(&self, name: &str) -> Result<(), Error> {
        let mut cargo = Command::new("cargo");
        cargo
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(self.root.join(format!("bench/peers/{name}/Cargo.toml")))
            .env("CARGO_TARGET_DIR", self.root.join("bench/peers/target"));
        self.build(&format!("the {name} peer"), &mut cargo)
    }

    /// Runs the cargo build of `what` unless this run built it already.
    fn build(&self, what: &str, cargo: &mut Command) -> Result<(), Error> {
        if self.built.borrow().contains(what) {
            return Ok(());
        }
        self.progress
            .say(format!("building {what} (cargo build --release)..."));
        let output = cargo
            .stdout(Stdio::null())
            .output()
            .map_err(Error::io("run cargo"))?;
        if !output.status.success() {
            return Err(Error::Build {
                what: what.to_owned(),
                log: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        self.built.borrow_mut().insert(what.to_owned());
        Ok(())
    }

    /// Builds the JVM peer `bench/peers/NAME` into its `target/peer-NAME.jar` with Maven
    /// (installing a JDK and Maven if missing): offline first, as the local repository
    /// has every dependency after the first build, then online to fetch them.
    pub(crate) fn build_jvm_peer(&self, name: &str) -> Result<(), Error> {
        let what = format!("the {name} peer");
        if self.built.borrow().contains(&what) {
            return Ok(());
        }
        self.need("java", "default-jdk-headless")?;
        let mvn = self.need("mvn", "maven")?;
        self.progress
            .say(format!("building {what} (mvn package)..."));
        let maven = |offline: bool| self.maven(&mvn, name, offline);
        let mut output = maven(true)?;
        if !output.status.success() {
            output = maven(false)?;
        }
        if !output.status.success() {
            // Maven reports its errors on stdout.
            return Err(Error::Build {
                what,
                log: String::from_utf8_lossy(&output.stdout).into_owned()
                    + &String::from_utf8_lossy(&output.stderr),
            });
        }
        self.built.borrow_mut().insert(what);
        Ok(())
    }

    /// Runs `mvn` to package the JVM peer `name` and the modules it needs, offline
    /// (from the local repository alone) or not.
    fn maven(&self, mvn: &Path, name: &str, offline: bool) -> Result<Output, Error> {
        let mut command = Command::new(mvn);
        command.args(["-q", "-B"]);
        if offline {
            command.arg("-o");
        }
        command
            .arg("-f")
            .arg(self.root.join("bench/peers/pom.xml"))
            .args(["-pl", name, "-am", "package"])
            .output()
            .map_err(Error::io("run mvn"))
    }

    pub(crate) fn jvm_peer_jar(&self, name: &str) -> PathBuf {
        self.root
            .join(format!("bench/peers/{name}/target/peer-{name}.jar"))
    }

    pub(crate) fn peer_binary(&self, name: &str) -> PathBuf {
        self.root
            .join(format!("bench/peers/target/release/peer-{name}"))
    }
}

/// Finds `command` on the PATH.
fn which(command: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(command))
        .find(|path| path.is_file())
}

/// Runs a command with its output discarded; says whether it succeeded.
fn quiet(command: &mut Command) -> bool {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
