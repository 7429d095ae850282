//! The live feed of likes (Program 4.5, Fig. 4.2): the Subscriber holds the hub's
//! pattern subscription (`/picture/*/likes`, every replica's likes) and hands each
//! like to the Feeder, which holds this replica's sockets and what each watches.
//!
//! A socket gets every like until it says which pictures are on its screen, as the
//! thesis's Subscriber keeps a set a socket: `{"watch": [12, 15]}` (sent again when
//! the screen changes, replacing the set) is answered `{"watching": [12, 15]}` once
//! it holds, and from then on only those pictures' likes come.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use proscenium::actor::{Actor, Addr, Context, Handler, Message};
use proscenium::hub::Post;
use proscenium::ws::{self, CloseCode, WebSocket};
use serde::Deserialize;

/// The most pictures a socket may watch: a screen holds far fewer, and the set is
/// kept in memory for as long as the socket is open.
const MAX_WATCHED: usize = 1_000;

/// A socket joining the feed.
pub(crate) struct Join {
    id: u64,
    socket: ws::Sender,
}

/// The pictures a socket watches, from now on.
struct Watch {
    id: u64,
    pictures: BTreeSet<i64>,
}

/// A socket gone.
struct Leave(u64);

impl Message for Join {
    type Reply = ();
}

impl Message for Watch {
    type Reply = ();
}

impl Message for Leave {
    type Reply = ();
}

/// One socket and the pictures it watches (`None`: every picture).
struct Watcher {
    socket: ws::Sender,
    pictures: Option<BTreeSet<i64>>,
}

impl Watcher {
    fn wants(&self, picture: Option<i64>) -> bool {
        match (&self.pictures, picture) {
            (None, _) => true,
            (Some(pictures), Some(picture)) => pictures.contains(&picture),
            (Some(_), None) => false,
        }
    }
}

/// Holds this replica's feed sockets and pushes each like to those watching.
#[derive(Default)]
pub(crate) struct Feeder {
    sockets: HashMap<u64, Watcher>,
}

impl Actor for Feeder {}

impl Handler<Join> for Feeder {
    fn handle(&mut self, Join { id, socket }: Join, _: &mut Context<Self>) {
        let pictures = None;
        self.sockets.insert(id, Watcher { socket, pictures });
    }
}

impl Handler<Watch> for Feeder {
    fn handle(&mut self, Watch { id, pictures }: Watch, _: &mut Context<Self>) {
        let Some(watcher) = self.sockets.get_mut(&id) else {
            return;
        };
        let watching = serde_json::json!({ "watching": pictures });
        if watcher
            .socket
            .feed(ws::Message::text(watching.to_string()))
            .is_ok()
        {
            watcher.pictures = Some(pictures);
        } else {
            self.sockets.remove(&id);
        }
    }
}

impl Handler<Leave> for Feeder {
    fn handle(&mut self, Leave(id): Leave, _: &mut Context<Self>) {
        self.sockets.remove(&id);
    }
}

impl Handler<Arc<Post>> for Feeder {
    fn handle(&mut self, post: Arc<Post>, _: &mut Context<Self>) {
        let picture = picture_of(post.topic());
        // One message for every socket, made once; a closed socket is let go.
        let message = post.message();
        self.sockets.retain(|_, watcher| {
            !watcher.wants(picture) || watcher.socket.feed(message.clone()).is_ok()
        });
    }
}

/// The picture a like's topic (`/picture/ID/likes`) is about.
fn picture_of(topic: &str) -> Option<i64> {
    topic
        .strip_prefix("/picture/")?
        .strip_suffix("/likes")?
        .parse()
        .ok()
}

/// Takes the hub's likes and hands them to the Feeder.
pub(crate) struct Subscriber {
    pub(crate) feeder: Addr<Feeder>,
}

impl Actor for Subscriber {}

impl Handler<Arc<Post>> for Subscriber {
    fn handle(&mut self, post: Arc<Post>, _: &mut Context<Self>) {
        if let Err(error) = self.feeder.try_tell(post) {
            tracing::warn!(%error, "a like did not reach the feeder");
        }
    }
}

/// What a socket may say.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Said {
    watch: BTreeSet<i64>,
}

/// Serves one feed socket: joins it to the Feeder, passes on what it watches, and
/// takes it out when it closes. A message that is not a watch list, or watches
/// more than [`MAX_WATCHED`] pictures, closes it with 1008.
pub(crate) async fn serve(feeder: Addr<Feeder>, mut socket: WebSocket) {
    static SOCKETS: AtomicU64 = AtomicU64::new(0);
    let id = SOCKETS.fetch_add(1, Ordering::Relaxed);
    if feeder
        .try_tell(Join {
            id,
            socket: socket.sender(),
        })
        .is_err()
    {
        return;
    }
    while let Some(Ok(message)) = socket.recv().await {
        let ws::Message::Text(text) = message else {
            continue;
        };
        match serde_json::from_str::<Said>(&text) {
            Ok(Said { watch }) if watch.len() <= MAX_WATCHED => {
                if feeder
                    .try_tell(Watch {
                        id,
                        pictures: watch,
                    })
                    .is_err()
                {
                    break;
                }
            }
            _ => {
                let why = format!("expected {{\"watch\": [picture ids]}}, at most {MAX_WATCHED}");
                let _ = socket.close(CloseCode::Policy, &why).await;
                break;
            }
        }
    }
    let _ = feeder.try_tell(Leave(id));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_likes_topic_names_its_picture() {
        assert_eq!(picture_of("/picture/1234/likes"), Some(1234));
        assert_eq!(picture_of("/picture/x/likes"), None);
        assert_eq!(picture_of("/news"), None);
    }
}
