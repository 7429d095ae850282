//! actix-web peer: `GET /plaintext` and `GET /json`, `--bind ADDR --workers N`.

use actix_web::{web, App, HttpResponse, HttpServer};

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
                HttpResponse::Ok().content_type("application/json").body(r#"{"message":"Hello, World!"}"#)
            }))
    })
    .workers(workers)
    .backlog(1024)
    .bind(bind)?
    .run()
    .await
}
