//! Static files: [`StaticFiles`] (precompressed siblings, conditional requests, byte
//! ranges), directory listings, the file cache's hook, and the diagnostic tools'
//! routes. A leaf that `cgi` and `lua` serve files through; the site is assembled
//! from it (and them) by [`site::configure`](crate::site::configure). (The access log
//! and error pages are the connection's: `http::access_log`, `http::error_page`.)

mod conditional;
pub(crate) mod file_cache;
mod listing;
mod static_files;
mod tools;

pub use self::static_files::StaticFiles;
pub use self::tools::echo;
pub(crate) use self::tools::mount as mount_tools;
