//! TLS measurements for issue 34 (`bench/tls.sh` runs them; docs/performance.md "TLS"
//! has the figures):
//!
//! - `load`: a handshake load generator — every request on a new TLS connection, full
//!   or resumed handshakes, from threads of blocking clients;
//! - `idle`: memory per idle TLS connection of a server (one request each, then idle);
//! - `providers`: rustls' in-memory handshakes and AES-128-GCM throughput under
//!   aws-lc-rs and ring, the choice of Proscenium's provider;
//! - `ktls`: a 300 KB file sent by kernel TLS (`sendfile`) after a rustls handshake,
//!   against rustls encrypting `pread` chunks in user space;
//! - `held`: the heap rustls holds for an idle server connection.
//!
//! Run with: `cargo run --release --manifest-path bench/tls/Cargo.toml -- COMMAND ...`

mod args;
mod config;
mod cpu;
mod held;
mod idle;
mod ktls;
mod load;
mod providers;

#[global_allocator]
static ALLOCATOR: held::Counting = held::Counting;

fn main() {
    let mut args = args::Args::from_env();
    let result = match args.command().as_str() {
        "load" => load::run(&mut args),
        "idle" => idle::run(&mut args),
        "providers" => providers::run(&mut args),
        "ktls" => ktls::run(&mut args),
        "held" => held::run(&mut args),
        other => Err(format!(
            "unknown command {other:?}: load, idle, providers, ktls or held"
        )),
    };
    if let Err(error) = result {
        eprintln!("tls-bench: {error}");
        std::process::exit(1);
    }
}
