//! The thesis's social network (Hessenberger 2014, ch. 4) on Proscenium: users,
//! pictures and likes over a JSON API; a thumbnail of every upload made on a
//! two-thread pool named in the configuration; a welcome and a reminder mail from the
//! Mailman actor, a push notification from the Notifier over the HTTP client; and
//! every like pushed live to browsers — over a WebSocket by the Subscriber and Feeder
//! actors, or as server-sent events — from any replica, through Redis when
//! `[feeds] redis` names one. A page at `/` uses it all.
//!
//! Run with: `cargo run --release -p social -- serve` (SQLite in a fresh temporary
//! directory, one process) and open <http://127.0.0.1:3000/>. As replicas: the same
//! binary twice on two ports with `PROSCENIUM_FEEDS_REDIS=redis://...` (or
//! `rediss://...`, with `PROSCENIUM_FEEDS_CA=ca.pem` for a private CA) and
//! `PROSCENIUM_DATABASE_URL=postgres://...` (or one SQLite file, `--data DIR`, for
//! replicas on one host). The push service may be `https://`: a private CA's
//! certificate is trusted with `[client] ca` (`PROSCENIUM_CLIENT_CA`).

mod actors;
mod api;
mod cache;
mod feed;
mod people;
mod store;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use proscenium::client::Client;
use proscenium::hub::Hub;
use proscenium::launch::Launcher;
use proscenium::stream::RedisTarget;
use proscenium::web::StaticFiles;

use crate::actors::{Actors, Setup, TokenSource};
use crate::api::{Social, Uploads};
use crate::cache::Cache;
use crate::store::Store;

/// The app's own options; how it runs comes from the deploy flags and its
/// configuration.
#[derive(clap::Args)]
struct Options {
    /// Where the SQLite database and the mail outbox go (default: a fresh temporary
    /// directory); pictures and thumbnails are kept in the database.
    #[arg(long)]
    data: Option<PathBuf>,
    /// The push service the Notifier posts notifications to, `http://` or `https://`
    /// (default: none, they are logged).
    #[arg(long)]
    push: Option<String>,
    /// Where the Notifier gets the push service's access token (`POST`, answered
    /// `{"token": "...", "expires_in": SECONDS}`; default: none, no token sent).
    #[arg(long)]
    push_token: Option<String>,
    /// Seconds between renewals of the push token, at most (the thesis's 30 minutes;
    /// sooner when the token expires sooner: at half its lifetime).
    #[arg(long, default_value_t = 1800)]
    token_every: u64,
    /// Seconds after the welcome that the reminder mail is sent.
    #[arg(long, default_value_t = 86_400)]
    reminder_after: u64,
    /// The page's files (default: the ones beside this source).
    #[arg(long)]
    page: Option<PathBuf>,
    /// The most pictures one upload may hold (more: 413).
    #[arg(long, default_value_t = 10)]
    max_pictures: usize,
    /// The most MiB one picture may take decoded, as its header declares it (more:
    /// 413); 64 is a 4096×4096 picture with an alpha channel.
    #[arg(long, default_value_t = 64)]
    max_decoded_mib: u64,
}

fn main() -> ExitCode {
    Launcher::new()
        .defaults(include_str!("../proscenium.toml"))
        .options::<Options>()
        .run(|deploy| {
            let (options, config) = (deploy.options(), deploy.config());
            let data = options.data.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!("proscenium-social-{}", std::process::id()))
            });
            for dir in ["outbox"] {
                if let Err(error) = std::fs::create_dir_all(data.join(dir)) {
                    eprintln!("social: cannot make {}: {error}", data.join(dir).display());
                    std::process::exit(1);
                }
            }
            let connections = u32::try_from(config.database.max_connections).unwrap_or(u32::MAX);
            let store = Store::open(config.database.url.as_deref(), &data, connections)
                .unwrap_or_else(|error| {
                    eprintln!("social: the database cannot be used: {error}");
                    std::process::exit(1);
                });
            let hub = Hub::with(config.feeds.clone());
            let redis = config
                .feeds
                .redis
                .as_ref()
                .map(|url| RedisTarget::new(url.as_str(), config.feeds.ca.clone()));
            let cache = Cache::connect(redis, store.background());
            let client = Client::with(config.client.clone());
            let setup = Setup {
                outbox: data.join("outbox"),
                reminder_after: Duration::from_secs(options.reminder_after),
                push: options.push.clone(),
                tokens: options.push_token.clone().map(|url| TokenSource {
                    url,
                    every: Duration::from_secs(options.token_every),
                }),
            };
            let actors = Actors::start(deploy.actors(), &hub, &client, setup);
            let page = options
                .page
                .clone()
                .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/static")));
            let uploads = Uploads {
                pictures: options.max_pictures,
                decoded: options.max_decoded_mib.saturating_mul(1 << 20),
            };
            let social = Social {
                store,
                hub,
                actors,
                uploads,
                cache,
            };
            api::routes(social).fallback(StaticFiles::new(page))
        })
}
