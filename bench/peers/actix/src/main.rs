//! actix-web peer: `GET /plaintext`, `GET /json` and `GET /dynamic` (the lab's
//! 1,250,000-iteration page), `--bind ADDR --workers N`.

use actix_web::{web, App, HttpResponse, HttpServer};

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

/// The lab's dynamic page: the same 1,250,000 iterations as examples/lab-app.
fn dynamic_page() -> String {
    let mut acc: u32 = 0;
    for i in 0..1_250_000u32 {
        acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(i));
    }
    format!("<!doctype html><title>dynamic</title><p>1250000 iterations: {acc}</p>")
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let bind = arg("--bind", "127.0.0.1:8081");
    let workers: usize = arg("--workers", "1").parse().expect("--workers N");
    HttpServer::new(|| {
        App::new()
            .route("/plaintext", web::get().to(|| async {
                HttpResponse::Ok().content_type("text/plain").body("Hello, World!")
            }))
            .route("/json", web::get().to(|| async {
                HttpResponse::Ok().content_type("application/json").body(r#"{"message":"Hello, World!"}"#)
            }))
            .route("/dynamic", web::get().to(|| async {
                HttpResponse::Ok().content_type("text/html").body(dynamic_page())
            }))
    })
    .workers(workers)
    // Every server's listen backlog is 4096, as nginx's `backlog=4096`.
    .backlog(4096)
    .bind(bind)?
    .run()
    .await
}
