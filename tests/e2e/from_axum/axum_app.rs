use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::multipart::{Multipart, MultipartError};
use axum::extract::{Extension, Form, Json, Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum_extra::extract::cookie::{Cookie, CookieJar};
use tower_http::{cors::CorsLayer, trace::TraceLayer};

#[derive(Clone, Default)]
struct Notes(Arc<Mutex<Vec<String>>>);

#[derive(Clone)]
struct User(String);

#[derive(serde::Deserialize)]
struct Login {
    name: String,
}

/// Where a real app would ask its session store (Redis, a database).
async fn user_of(token: &str) -> Option<String> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    token.strip_prefix("session-").map(str::to_owned)
}

async fn require_session(jar: CookieJar, mut req: Request, next: Next) -> Response {
    let Some(cookie) = jar.get("session") else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    match user_of(cookie.value()).await {
        Some(name) => {
            req.extensions_mut().insert(User(name));
            next.run(req).await
        }
        None => StatusCode::UNAUTHORIZED.into_response(),
    }
}

async fn login(jar: CookieJar, Form(login): Form<Login>) -> (CookieJar, Redirect) {
    let session = Cookie::new("session", format!("session-{}", login.name));
    (jar.add(session), Redirect::to("/notes"))
}

async fn list(State(notes): State<Notes>) -> Json<Vec<String>> {
    Json(notes.0.lock().unwrap().clone())
}

async fn add(
    State(notes): State<Notes>,
    Extension(User(name)): Extension<User>,
    Json(note): Json<String>,
) -> StatusCode {
    notes.0.lock().unwrap().push(format!("{name}: {note}"));
    StatusCode::CREATED
}

async fn one(
    State(notes): State<Notes>,
    Path(id): Path<usize>,
) -> Result<Json<String>, StatusCode> {
    let notes = notes.0.lock().unwrap();
    notes
        .get(id)
        .cloned()
        .map(Json)
        .ok_or(StatusCode::NOT_FOUND)
}

async fn upload(mut multipart: Multipart) -> Result<String, MultipartError> {
    let mut sizes = Vec::new();
    while let Some(field) = multipart.next_field().await? {
        let name = field.name().unwrap_or_default().to_owned();
        let bytes = field.bytes().await?;
        sizes.push(format!("{name}={}", bytes.len()));
    }
    Ok(sizes.join(","))
}

pub(super) fn app() -> Router {
    let signed_in = Router::new()
        .route("/notes", post(add))
        .route("/upload", post(upload))
        .route_layer(middleware::from_fn(require_session));
    Router::new()
        .route("/login", post(login))
        .route("/notes", get(list))
        .route("/notes/{id}", get(one))
        .merge(signed_in)
        .layer(CorsLayer::permissive())
        .layer(TraceLayer::new_for_http())
        .with_state(Notes::default())
}
