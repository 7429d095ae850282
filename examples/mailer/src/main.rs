//! The thesis's Mailer (sec. 4.2), on Proscenium's actors.
//!
//! Run with: `cargo run --release -p mailer -- --bind 127.0.0.1:8080`
//!
//! - `POST /mail` with `{"email": ..., "content": ...}` answers 202 at once; a pool of
//!   two `Mailer` actors on their own two-thread dispatcher (`mailer`) does the slow
//!   part, about 200 ms a mail (simulated). A full mailbox answers 503 with
//!   `Retry-After`: the queue is bounded, and a refused mail is one the client knows of.
//! - `GET /mail/sent` → how many mails were sent so far, so a client can see none was
//!   lost.
//! - `GET /albums` lists the albums; `DELETE /albums/:id` answers 202 first and deletes
//!   the album's files afterwards, on the blocking pool (a deferred side effect).

use std::net::SocketAddr;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clap::Parser;
use proscenium::actor::{
    Actor, Context, DispatcherSpec, Handler, Message, Overflow, Props, Router, Routing, SendError,
    System,
};
use proscenium::state::{Read, SharedMap, Write};
use proscenium::{App, Config, Json, Path, Server, StatusCode, header, inline};
use serde::Deserialize;

/// Command-line options.
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Where the albums' files are (default: three sample albums in a fresh temporary
    /// directory).
    #[arg(long)]
    albums: Option<PathBuf>,
    /// How long sending one mail takes, in milliseconds.
    #[arg(long, default_value_t = 200)]
    mail_ms: u64,
}

/// A mail to send.
#[derive(Debug, Deserialize)]
struct Mail {
    email: String,
    content: String,
}

impl Message for Mail {
    type Reply = ();
}

/// Sends mails, one at a time; counts them in `sent`.
struct Mailer {
    sent: Arc<AtomicU64>,
    takes: Duration,
}

impl Actor for Mailer {}

impl Handler<Mail> for Mailer {
    fn handle(&mut self, mail: Mail, _: &mut Context<Self>) {
        // The slow part: an SMTP exchange, simulated.
        std::thread::sleep(self.takes);
        tracing::info!(to = %mail.email, bytes = mail.content.len(), "mail sent");
        self.sent.fetch_add(1, Ordering::SeqCst);
    }
}

/// Mails sent so far.
struct Sent(Arc<AtomicU64>);

/// Album id → its directory.
type Albums = SharedMap<u32, PathBuf>;

async fn post_mail(
    mailers: Read<Router<Mailer>>,
    Json(mail): Json<Mail>,
) -> (
    StatusCode,
    [(header::HeaderName, &'static str); 1],
    &'static str,
) {
    match mailers.tell(mail).await {
        Ok(()) => (
            StatusCode::ACCEPTED,
            [(header::RETRY_AFTER, "0")],
            "queued\n",
        ),
        Err(SendError::Full | SendError::Dropped) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "the mail queue is full; try again\n",
        ),
        Err(SendError::Stopped) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            "the mailer is stopping\n",
        ),
    }
}

fn delete_album(Path(id): Path<u32>, mut albums: Write<Albums>) -> (StatusCode, String) {
    let Some(dir) = albums.remove(&id) else {
        return (StatusCode::NOT_FOUND, format!("no album {id}\n"));
    };
    // Answer now; delete the files afterwards, off the loop.
    let deferred = proscenium::events::defer(
        move || std::fs::remove_dir_all(&dir).map(|()| dir),
        move |done| match done {
            Ok(dir) => tracing::info!(album = id, dir = %dir.display(), "album files deleted"),
            Err(e) => tracing::error!(album = id, error = %e, "album files not deleted"),
        },
    );
    if let Err(e) = deferred {
        tracing::error!(album = id, error = %e, "album deletion not queued");
    }
    (StatusCode::ACCEPTED, format!("album {id} deleted\n"))
}

fn app(mailers: Router<Mailer>, sent: Arc<AtomicU64>, albums: Albums) -> App {
    App::new()
        .state(mailers)
        .state(Sent(sent))
        .state(albums)
        .post("/mail", post_mail)
        .get(
            "/mail/sent",
            inline(|sent: Read<Sent>| format!("{}\n", sent.0.load(Ordering::SeqCst))),
        )
        .get(
            "/albums",
            inline(|albums: Read<Albums>| {
                let mut ids: Vec<u32> = albums.iter().map(|(id, _)| *id).collect();
                ids.sort_unstable();
                Json(ids)
            }),
        )
        .delete("/albums/:id", inline(delete_album))
}

/// Three sample albums of a few files each, in a fresh directory under `root`.
fn sample_albums(root: &FsPath) -> std::io::Result<Albums> {
    let mut albums = Albums::new();
    for id in 1..=3 {
        let dir = root.join(format!("album-{id}"));
        std::fs::create_dir_all(&dir)?;
        for photo in 1..=3 {
            std::fs::write(dir.join(format!("photo-{photo}.jpg")), [0u8; 1024])?;
        }
        albums.insert(id, dir);
    }
    Ok(albums)
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let root = args.albums.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("proscenium-mailer-{}", std::process::id()))
    });
    let albums = match sample_albums(&root) {
        Ok(albums) => albums,
        Err(e) => {
            eprintln!(
                "mailer: cannot create the albums in {}: {e}",
                root.display()
            );
            std::process::exit(1);
        }
    };
    // The mailers' own dispatcher, capped at two threads, as in the thesis.
    let system = System::with_dispatchers([("mailer".to_owned(), DispatcherSpec::pool(2))].into());
    let sent = Arc::new(AtomicU64::new(0));
    let takes = Duration::from_millis(args.mail_ms);
    let count = sent.clone();
    let mailers = system.spawn_pool(
        &Props::named("mailer")
            .dispatcher("mailer")
            .mailbox(1000, Overflow::Fail),
        2,
        Routing::SmallestMailbox,
        move || Mailer {
            sent: count.clone(),
            takes,
        },
    );
    let config = Config {
        bind: args.bind,
        ..Config::default()
    };
    let server = match Server::new(app(mailers, sent, albums))
        .config(config)
        .start()
    {
        Ok(server) => server,
        Err(e) => {
            eprintln!("mailer: {e}");
            std::process::exit(1);
        }
    };
    println!("mailer: listening on http://{}", server.local_addr());
    if let Err(e) = server.run_until_signal() {
        eprintln!("mailer: {e}");
    }
    system.shutdown();
}
