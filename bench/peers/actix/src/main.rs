//! actix-web peer: `GET /plaintext`, `GET /json` and `GET /dynamic?n=N` (the lab's
//! page of N iterations), `--bind ADDR --workers N`.

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};

#[path = "../../workloads.rs"]
mod workloads;

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
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
                HttpResponse::Ok().content_type("application/json").body(workloads::json())
            }))
            .route("/dynamic", web::get().to(|req: HttpRequest| async move {
                match workloads::dynamic_page(req.query_string()) {
                    Ok(page) => HttpResponse::Ok().content_type("text/html").body(page),
                    Err(reason) => HttpResponse::BadRequest().body(reason),
                }
            }))
    })
    .workers(workers)
    // Every server's listen backlog is 4096, as nginx's `backlog=4096`.
    .backlog(4096)
    .bind(bind)?
    .run()
    .await
}
