//! End-to-end tests: real servers on loopback ports, spoken to over real sockets, with
//! raw bytes wherever the exact wire matters.

// Nothing in a test binary is reachable from outside, so `pub` here means "shared
// between area modules".
#![allow(unreachable_pub)]

mod support;

mod admin;
mod cgi;
mod compression;
mod feeds;
mod from_axum;
mod hosted;
mod http2;
mod http2_defences;
mod http2_threads;
mod http_app;
mod http_bodies;
mod http_extract;
mod http_handlers;
mod http_limits;
mod http_memory;
mod http_wire;
mod idle;
mod lua;
mod lua_threads;
mod metrics_actors;
mod metrics_hub;
mod metrics_stages;
mod middleware;
mod overload;
mod request_ids;
mod runtime;
mod slow_clients;
mod stages;
mod state;
mod tls;
mod tls_acme;
mod tower_layers;
mod upgrade;
mod web_hostile;
mod web_log;
mod web_static;
mod websocket;
