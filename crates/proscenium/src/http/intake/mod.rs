//! What clients send that waits to be whole: the server's room for it (`room`),
//! bodies spooled to disk (`spool`), where a request body gathers (`sink`) —
//! shared by HTTP/1.1, HTTP/2 and WebSocket — and a body passed on as it arrives
//! instead, to a route that streams it (`arriving`).

mod arriving;
mod room;
mod sink;
mod spool;

pub(crate) use self::arriving::{Arriving, Feed, Taker, channel as arriving};
#[cfg(feature = "feeds")]
pub(crate) use self::room::Buffer;
pub(crate) use self::room::{Bodies, Budget, NoRoom};
pub(crate) use self::sink::Sink;
pub(crate) use self::spool::create as create_spool_file;
