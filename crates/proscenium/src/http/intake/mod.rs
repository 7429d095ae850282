//! What clients send that waits to be whole: the server's room for it (`room`),
//! bodies spooled to disk (`spool`), and where a request body gathers (`sink`) —
//! shared by HTTP/1.1, HTTP/2 and WebSocket.

mod room;
mod sink;
mod spool;

pub(crate) use self::room::{Bodies, Budget, Buffer, NoRoom};
pub(crate) use self::sink::Sink;
pub(crate) use self::spool::create as create_spool_file;
