//! The command line that starts each kind of server, pinned to its cores by `taskset`.

use std::path::Path;
use std::process::Command;

use super::{
    Mpm, NodeMode, Placement, httpd_defines, jvm_flags, nginx, open_to_httpd_children,
    proscenium_model,
};
use crate::Error;
use crate::tools::Tools;

/// A server's command as it is put together: `taskset -c CORES`, then the server's own.
pub(super) struct Launch<'a> {
    pub(super) command: Command,
    tools: &'a Tools,
    at: &'a Placement<'a>,
    /// The address the server listens on, `127.0.0.1:PORT`.
    bind: String,
}

impl<'a> Launch<'a> {
    pub(super) fn new(tools: &'a Tools, at: &'a Placement<'a>) -> Self {
        let mut command = Command::new("taskset");
        command.args(["-c", at.cores]);
        Self {
            command,
            tools,
            at,
            bind: format!("127.0.0.1:{}", at.port),
        }
    }

    /// lab-app under `model`, with a blocking pool of `pool` threads when given.
    pub(super) fn proscenium(
        mut self,
        model: &str,
        pool: Option<usize>,
        workers: Option<usize>,
    ) -> Self {
        let model = proscenium_model(model, self.at.core_count);
        self.command
            .arg(self.tools.example_binary("lab-app"))
            .args(["--bind", &self.bind, "--model", &model])
            .arg(self.at.root)
            .args(["--upstream", self.at.upstream]);
        if let Some(pool) = pool {
            self.command.args(["--blocking-pool", &pool.to_string()]);
        }
        if let Some(workers) = workers {
            self.command.args(["--workers", &workers.to_string()]);
        }
        // Leda's cache stage held Fig. 9a's 300 KB file; by default it keeps 64 KiB.
        if model.starts_with("staged") {
            self.command
                .args(["--set", "limits.static_cache_file=512KiB"]);
        }
        self
    }

    /// fib-cache on `loops` loops (one a core by default) and no blocking pool.
    pub(super) fn fib_cache(mut self, loops: Option<usize>) -> Self {
        let loops = loops.unwrap_or(self.at.core_count).to_string();
        self.command
            .arg(self.tools.example_binary("fib-cache"))
            .args([
                "--bind",
                &self.bind,
                "--loops",
                &loops,
                "--blocking-pool",
                "0",
            ]);
        self
    }

    /// A Rust peer of `bench/peers/` (actix, hyper) with a worker a core.
    pub(super) fn rust_peer(mut self, peer: &str) -> Self {
        let workers = self.at.core_count.to_string();
        self.command.arg(self.tools.peer_binary(peer)).args([
            "--bind",
            &self.bind,
            "--workers",
            &workers,
        ]);
        self
    }

    pub(super) fn node(mut self, mode: NodeMode) -> Self {
        self.command
            .arg("node")
            .arg(self.tools.root().join("bench/peers/node/server.js"))
            .args(["--bind", &self.bind, "--upstream", self.at.upstream]);
        match mode {
            NodeMode::Single => {}
            NodeMode::Cluster => {
                self.command
                    .args(["--cluster", &self.at.core_count.to_string()]);
            }
            NodeMode::NonBlocking => {
                self.command.arg("--nbk");
            }
        }
        self
    }

    /// `proscenium serve` on a loop a core, serving Leda's page as Lua or as CGI.
    pub(super) fn script(mut self, cgi: bool) -> Self {
        let scripts = self.tools.root().join("bench/peers/lua");
        let (dir, flag) = if cgi {
            (scripts.join("cgi"), "--cgi")
        } else {
            (scripts.join("leda"), "--lua")
        };
        self.command
            .arg(self.tools.example_binary("proscenium"))
            .args(["serve", "--bind", &self.bind, "--model"])
            .arg(proscenium_model("loops", self.at.core_count))
            .arg(flag)
            .arg(dir);
        self
    }

    /// `proscenium serve` hosting the lab's Rack app: a loop and an interpreter
    /// process per core.
    pub(super) fn proscenium_rack(self) -> Self {
        let app = self.hosted_app("config.ru");
        self.proscenium_hosting("--rack", &app.display().to_string(), &[])
    }

    /// `proscenium serve` hosting the lab's WSGI app, as [`Self::proscenium_rack`].
    pub(super) fn proscenium_wsgi(self) -> Self {
        let dir = format!("hosted.dir={}", self.hosted_app("").display());
        self.proscenium_hosting("--wsgi", "hello:application", &["--set", &dir])
    }

    fn proscenium_hosting(mut self, flag: &str, app: &str, more: &[&str]) -> Self {
        let processes = format!("hosted.processes={}", self.at.core_count);
        self.command
            .arg(self.tools.example_binary("proscenium"))
            .args(["serve", "--bind", &self.bind, "--model"])
            .arg(proscenium_model("loops", self.at.core_count))
            .args([flag, app, "--set", &processes])
            .args(more);
        self
    }

    /// Puma in cluster mode: a worker per core, one thread each (a request at a time,
    /// as each of Proscenium's interpreter processes).
    pub(super) fn puma(mut self) -> Self {
        let workers = self.at.core_count.to_string();
        let bind = format!("tcp://{}", self.bind);
        let app = self.hosted_app("config.ru");
        self.command
            .args(["puma", "--quiet", "-w", &workers, "-t", "1:1", "-b", &bind])
            .arg(app);
        self
    }

    /// Gunicorn: a sync worker per core (a request at a time each).
    pub(super) fn gunicorn(mut self) -> Self {
        let workers = self.at.core_count.to_string();
        let dir = self.hosted_app("");
        self.command
            .args([
                "gunicorn",
                "--log-level",
                "warning",
                "-w",
                &workers,
                "-b",
                &self.bind,
            ])
            .arg("--chdir")
            .arg(dir)
            .arg("hello:application");
        self
    }

    /// A file of `bench/peers/hosted`, the lab's Rack and WSGI apps (`""`: the
    /// directory).
    fn hosted_app(&self, file: &str) -> std::path::PathBuf {
        self.tools.root().join("bench/peers/hosted").join(file)
    }

    pub(super) fn nginx(mut self, lua: bool) -> Result<Self, Error> {
        let lua = lua.then(|| self.tools.root().join("bench/peers/lua"));
        let conf = nginx::conf(self.at, lua.as_deref())?;
        self.command.args(["nginx", "-c"]).arg(conf);
        Ok(self)
    }

    /// The JVM peer built as `module`'s jar.
    pub(super) fn jvm(mut self, module: &str) -> Self {
        self.command
            .arg("java")
            .args(jvm_flags(self.at.core_count))
            .arg("-jar")
            .arg(self.tools.jvm_peer_jar(module))
            .args(["--bind", &self.bind, "--upstream", self.at.upstream])
            .arg(self.at.root);
        self
    }

    /// Apache httpd under `mpm`, its scratch files in a directory named `name`.
    pub(super) fn httpd(mut self, name: &str, mpm: Mpm) -> Result<Self, Error> {
        let scratch = self.at.workdir.join(name);
        std::fs::create_dir_all(&scratch).map_err(Error::io("create httpd's directory"))?;
        open_to_httpd_children(self.at.root)?;
        let httpd = self.tools.root().join("bench/peers/httpd");
        let root = self.tools.root();
        self.command
            .args(["apache2", "-f"])
            .arg(httpd.join("httpd.conf"))
            .args(httpd_defines(&[
                ("port", Path::new(&self.at.port.to_string())),
                ("root", self.at.root),
                ("scratch", &scratch),
                ("lua", &httpd.join("lab.lua")),
                ("lualib", &root.join("bench/peers/lua/leda")),
                ("cores", Path::new(&self.at.core_count.to_string())),
            ])?)
            .args(["-D", mpm.define()])
            .arg("-DFOREGROUND");
        Ok(self)
    }
}
