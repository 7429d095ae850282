//! The thesis's Mailer (sec. 4.2), on Proscenium's actors.
//!
//! Run with: `cargo run --release -p mailer -- --bind 127.0.0.1:8080`
//!
//! - `POST /mail` with `{"email": ..., "content": ...}` answers 202 at once; a pool of
//!   two `Mailer` actors on their own dispatcher (`mailer`) does the slow part, about
//!   200 ms a mail (simulated). The dispatcher's two threads are configuration, not
//!   code: `examples/mailer/proscenium.toml`, embedded as the app's defaults, says
//!   `[dispatchers.mailer] kind = "pool"`, `threads = 2`, and a deployment's own
//!   `proscenium.toml` may say otherwise. A full mailbox answers 503 with
//!   `Retry-After`: the queue is bounded, and a refused mail is one the client knows of.
//! - `GET /mail/sent` → how many mails were sent so far, so a client can see none was
//!   lost; `GET /mail/stats` → `{"sent":…,"most_at_once":…}`, the most mails ever
//!   being sent at one time (at most the dispatcher's threads).
//! - The thesis's two timers, on the actor system: the mailers' SMTP token renewed every
//!   `--token-renewal` seconds (simulated; a `schedule_periodic` never cancelled), and
//!   a digest of the mails sent logged once, `--digest-after` seconds after the start
//!   (a day by default). Neither holds up shutdown.
//! - `GET /albums` lists the albums; `DELETE /albums/:id` answers 202 first and deletes
//!   the album's files afterwards, on the blocking pool (a deferred side effect).

use std::path::{Path as FsPath, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use proscenium::actor::{
    Actor, Context, Handler, Message, Overflow, Props, Router, Routing, SendError, System,
};
use proscenium::launch::Launcher;
use proscenium::state::{Read, SharedMap, Write};
use proscenium::{App, Json, Path, StatusCode, header, inline};
use serde::Deserialize;

/// The mailer's own options; how it runs comes from the deploy flags and its
/// configuration.
#[derive(clap::Args)]
struct Options {
    /// Where the albums' files are (default: three sample albums in a fresh temporary
    /// directory).
    #[arg(long)]
    albums: Option<PathBuf>,
    /// How long sending one mail takes, in milliseconds.
    #[arg(long, default_value_t = 200)]
    mail_ms: u64,
    /// Seconds between renewals of the mailers' SMTP token.
    #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u64).range(1..))]
    token_renewal: u64,
    /// Seconds after the start that a digest of the mails sent is logged.
    #[arg(long, default_value_t = 86_400)]
    digest_after: u64,
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

/// Sends mails, one at a time; counts them in the outbox.
struct Mailer {
    outbox: Arc<Outbox>,
    takes: Duration,
}

impl Actor for Mailer {}

impl Handler<Mail> for Mailer {
    fn handle(&mut self, mail: Mail, _: &mut Context<Self>) {
        let now = self.outbox.sending.fetch_add(1, Ordering::SeqCst) + 1;
        self.outbox.most_at_once.fetch_max(now, Ordering::SeqCst);
        // The slow part: an SMTP exchange, simulated.
        std::thread::sleep(self.takes);
        tracing::info!(to = %mail.email, bytes = mail.content.len(), "mail sent");
        self.outbox.sending.fetch_sub(1, Ordering::SeqCst);
        self.outbox.sent.fetch_add(1, Ordering::SeqCst);
    }
}

/// Mails sent so far, being sent now, and the most ever sent at once; renewals of the
/// SMTP token.
#[derive(Default)]
struct Outbox {
    sent: AtomicU64,
    sending: AtomicUsize,
    most_at_once: AtomicUsize,
    token_renewals: AtomicU64,
}

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
        // The mailers run here: a remote actor's refusals do not come.
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::RETRY_AFTER, "5")],
            "the mail was not queued\n",
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

fn routes(mailers: Router<Mailer>, outbox: Arc<Outbox>, albums: Albums) -> App {
    App::new()
        .state(mailers)
        .state(outbox)
        .state(albums)
        .post("/mail", post_mail)
        .get(
            "/mail/sent",
            inline(|outbox: Read<Arc<Outbox>>| format!("{}\n", outbox.sent.load(Ordering::SeqCst))),
        )
        .get(
            "/mail/stats",
            inline(|outbox: Read<Arc<Outbox>>| {
                Json(serde_json::json!({
                    "sent": outbox.sent.load(Ordering::SeqCst),
                    "most_at_once": outbox.most_at_once.load(Ordering::SeqCst),
                    "token_renewals": outbox.token_renewals.load(Ordering::SeqCst),
                }))
            }),
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

/// The mailers, on the `mailer` dispatcher the configuration describes.
fn mailers(system: &System, outbox: &Arc<Outbox>, takes: Duration) -> Router<Mailer> {
    let outbox = outbox.clone();
    system.spawn_pool(
        &Props::named("mailer")
            .dispatcher("mailer")
            .mailbox(1000, Overflow::Fail),
        2,
        Routing::SmallestMailbox,
        move || Mailer {
            outbox: outbox.clone(),
            takes,
        },
    )
}

/// Starts the thesis's timers: the token renewal every `renewal`, never cancelled
/// (the system's shutdown ends it), and the digest once after `digest`.
fn start_timers(system: &System, outbox: &Arc<Outbox>, renewal: Duration, digest: Duration) {
    let renewing = outbox.clone();
    system.schedule_periodic(renewal, move || {
        // An SMTP login, simulated.
        renewing.token_renewals.fetch_add(1, Ordering::SeqCst);
        tracing::debug!("SMTP token renewed");
    });
    let counting = outbox.clone();
    system.schedule_once(digest, move || {
        let sent = counting.sent.load(Ordering::SeqCst);
        tracing::info!(sent, "digest: mails sent since the start");
    });
}

fn main() -> ExitCode {
    Launcher::new()
        .defaults(include_str!("../proscenium.toml"))
        .options::<Options>()
        .run(|deploy| {
            let options = deploy.options();
            let root = options.albums.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!("proscenium-mailer-{}", std::process::id()))
            });
            let albums = sample_albums(&root).unwrap_or_else(|e| {
                eprintln!(
                    "mailer: cannot create the albums in {}: {e}",
                    root.display()
                );
                std::process::exit(1);
            });
            let outbox = Arc::new(Outbox::default());
            let takes = Duration::from_millis(options.mail_ms);
            start_timers(
                deploy.actors(),
                &outbox,
                Duration::from_secs(options.token_renewal),
                Duration::from_secs(options.digest_after),
            );
            routes(mailers(deploy.actors(), &outbox, takes), outbox, albums)
        })
}
