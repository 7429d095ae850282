//! The stand-in for TLS sessions in a build without the `tls` feature: neither a
//! server configuration nor a session can be made, so every connection is plain TCP
//! and each function here is one no caller can reach.

use std::io::{self, Read, Write};
use std::sync::Arc;

use super::{Peek, Plain};

/// A TLS server configuration, of which this build has none.
#[derive(Debug)]
pub(crate) enum ServerConfig {}

/// A TLS session, of which this build has none.
#[derive(Debug)]
pub(super) enum Session {}

impl Session {
    pub(super) fn is_handshaking(&self) -> bool {
        match *self {}
    }

    pub(super) fn alpn(&self) -> Option<&[u8]> {
        match *self {}
    }

    pub(super) fn wants_write(&self) -> bool {
        match *self {}
    }

    pub(super) fn held(&self) -> usize {
        match *self {}
    }
}

pub(super) fn session(config: &Arc<ServerConfig>) -> Option<Box<Session>> {
    match **config {}
}

pub(super) fn has_plaintext(tls: &mut Session) -> bool {
    match *tls {}
}

pub(super) fn read(
    tls: &mut Session,
    _: &mut (impl Read + Write + Peek),
    _: &mut dyn Plain,
    _: usize,
) -> io::Result<usize> {
    match *tls {}
}

pub(super) fn pull(tls: &mut Session, _: &mut (impl Read + Write)) -> io::Result<bool> {
    match *tls {}
}

pub(super) fn send(tls: &mut Session, _: &[u8]) -> io::Result<usize> {
    match *tls {}
}

pub(super) fn close(tls: &mut Session) {
    match *tls {}
}

pub(super) fn flush(tls: &mut Session, _: &mut impl Write) -> io::Result<usize> {
    match *tls {}
}

pub(super) fn trim(tls: &mut Session) {
    match *tls {}
}
