//! Word tally: an HTTP app with a stage graph, deployed over processes by its
//! configuration alone. `POST /words/:word` sends the word through the graph's entry
//! `words` to the stage `count` (cluster `back`), which appends `WORD PID` to the file
//! `--out` names; `GET /` answers the serving process's id.
//!
//! `tally --out words.txt` runs it all in one process. With
//! `configs/two-processes.toml` and a Redis (`PROSCENIUM_REDIS_URL`), `tally --config
//! configs/two-processes.toml --out words.txt` starts two processes of itself and
//! supervises them: `front` serves the routes, `back` runs the `count` stage, the
//! words crossing through Redis.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use proscenium::launch::Launcher;
use proscenium::stage::{Admission, Connector, Graph, Out, Stage, StageError};
use proscenium::{App, Path, StatusCode, inline};

/// The app's own option.
#[derive(clap::Args)]
struct Options {
    /// File the count stage appends each word to, as `WORD PID` lines.
    #[arg(long)]
    out: PathBuf,
}

/// The graph every process builds alike: the entry `words` into `count`.
fn graph(out: PathBuf) -> Graph {
    let mut graph = Graph::new();
    let count = graph.stage(Stage::stateful(
        "count",
        move || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&out)
        },
        |file, word: String, _| {
            let file = file
                .as_mut()
                .map_err(|e| StageError::handler(e.to_string()))?;
            writeln!(file, "{word} {}", std::process::id())
                .map_err(|e| StageError::handler(e.to_string()))
        },
    ));
    let words = Out::<String>::new("words");
    graph.entry(
        &words,
        &count,
        Connector::decoupled().admission(Admission::Reject),
    );
    graph.part([("back", (&count).into())]);
    graph
}

fn main() -> ExitCode {
    Launcher::new().options::<Options>().run(|deploy| {
        let running = deploy.start_graph("tally", graph(deploy.options().out.clone()));
        let words = running
            .entry::<String>("words")
            .expect("the graph declares the entry");
        App::new()
            .get(
                "/",
                inline(|| format!("tally, process {}\n", std::process::id())),
            )
            .post(
                "/words/:word",
                inline(move |Path(word): Path<String>| {
                    words.send(word).map(|()| StatusCode::ACCEPTED)
                }),
            )
    })
}
