//! The JSON API (the thesis's Programs 4.1–4.2 and its routes): sign up, log in,
//! follow, upload pictures, like them, list a user's pictures and likes; and the
//! live feed of likes, over a WebSocket and as server-sent events.

use argon2::password_hash::rand_core::{OsRng, RngCore as _};
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use bytes::Bytes;
use proscenium::app::MultipartError;
use proscenium::extract::FromRequestHead;
use proscenium::hub::Hub;
use proscenium::sse::LastEventId;
use proscenium::state::State;
use proscenium::ws::WebSocketUpgrade;
use proscenium::{
    App, Body, FromRequestParts, Json, Multipart, Path, Request, Response, StatusCode, header,
};
use serde::Deserialize;
use serde_json::json;

use crate::actors::{Actors, Mail, Notify};
use crate::cache::Cache;
use crate::store::{Picture, Store, StoreError, User};

/// What the handlers share.
#[derive(Clone)]
pub(crate) struct Social {
    pub(crate) store: Store,
    pub(crate) hub: Hub,
    pub(crate) actors: Actors,
    pub(crate) uploads: Uploads,
    pub(crate) cache: Cache,
}

/// What one upload may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uploads {
    /// Pictures in one upload (a hostile one once stored 20,000 in 3.7 MB).
    pub(crate) pictures: usize,
    /// Bytes one picture may take decoded: its declared dimensions are read before
    /// anything is decoded (a PNG of 471 kB once decoded to 463 MB).
    pub(crate) decoded: u64,
}

/// The routes; the page and its files are served beside them.
pub(crate) fn routes(social: Social) -> App {
    App::new()
        .with_state(social)
        .post("/users", sign_up)
        .post("/sessions", log_in)
        .get("/me", crate::people::me)
        .get("/timeline", crate::people::timeline)
        .get("/users/:name", crate::people::profile)
        .post("/users/:name/followers", follow)
        .delete("/users/:name/followers", crate::people::unfollow)
        .get("/users/:name/followers", followers)
        .get("/users/:name/pictures", pictures_of)
        .get("/users/:name/likes", likes_of)
        .post("/pictures", upload)
        .get("/pictures/:id", picture_file)
        .get("/thumbs/:id", thumbnail_file)
        .post("/picture/:id/likes", like)
        .get("/feed", feed)
        .get("/feed/events", feed_events)
}

/// A refusal, as JSON: `{"error": "..."}` with its status.
#[derive(Debug)]
pub(crate) struct ApiError(StatusCode, String);

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self(status, message.into())
    }
}

impl proscenium::IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<MultipartError> for ApiError {
    fn from(error: MultipartError) -> Self {
        Self::new(error.status(), error.to_string())
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => Self::new(StatusCode::NOT_FOUND, "no such thing"),
            StoreError::Taken => Self::new(StatusCode::CONFLICT, "taken"),
            // The cause is logged; the client learns only that it was the server's.
            error => {
                tracing::error!(%error, "the store failed");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the server could not do that",
                )
            }
        }
    }
}

pub(crate) type Answer<T> = Result<T, ApiError>;

#[derive(Deserialize)]
struct SignUp {
    name: String,
    email: String,
    password: String,
}

/// `POST /users`: 201 with the user, 409 if the name is taken, 400 for a bad form,
/// 500 (its cause logged) if the store fails (Program 4.1). The Mailman sends the
/// welcome.
async fn sign_up(
    State(social): State<Social>,
    Json(form): Json<SignUp>,
) -> Answer<(StatusCode, Json<User>)> {
    let valid_name = (1..=32).contains(&form.name.len())
        && form
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid_name {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "a name is 1 to 32 letters, digits, _ or -",
        ));
    }
    if !is_plain_address(&form.email) || form.password.len() < 8 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "an email address and a password of 8 characters or more",
        ));
    }
    let hash = hashed(form.password).await?;
    let id = social
        .store
        .create_user(&form.name, &form.email, &hash)
        .await
        .map_err(|error| match error {
            StoreError::Taken => ApiError::new(StatusCode::CONFLICT, "the name is taken"),
            error => error.into(),
        })?;
    let welcome = Mail::Welcome {
        name: form.name.clone(),
        email: form.email.clone(),
    };
    if let Err(error) = social.actors.mailman.try_tell(welcome) {
        tracing::warn!(%error, user = %form.name, "the welcome mail was not queued");
    }
    let user = User {
        id,
        name: form.name,
        email: form.email,
        password: String::new(),
    };
    Ok((StatusCode::CREATED, Json(user)))
}

/// Whether `email` is a plain address, `local@domain` of printable ASCII without
/// spaces, quotes, brackets or separators: what goes into a mail's `To:` header, where
/// a line break would write headers of the sender's choosing (`Bcc:`).
fn is_plain_address(email: &str) -> bool {
    let plain = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_graphic() && !b"<>()[]\\,;:\"@".contains(&b))
    };
    email.len() <= 254
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| plain(local) && plain(domain))
}

/// Hashes a password with Argon2 on the blocking pool (tens of milliseconds of CPU:
/// not on a loop).
async fn hashed(password: String) -> Answer<String> {
    let task = proscenium::rt::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        argon2::Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
    })
    .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy; try again"))?;
    match task.await {
        Ok(Ok(hash)) => Ok(hash),
        _ => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "could not hash the password",
        )),
    }
}

#[derive(Deserialize)]
struct LogIn {
    name: String,
    password: String,
}

/// `POST /sessions`: 200 with a token for `Authorization: Bearer`, 401 otherwise.
async fn log_in(
    State(social): State<Social>,
    Json(form): Json<LogIn>,
) -> Answer<Json<serde_json::Value>> {
    let refused = || ApiError::new(StatusCode::UNAUTHORIZED, "wrong name or password");
    let user = match social.store.user_named(&form.name).await {
        Err(StoreError::NotFound) => return Err(refused()),
        found => found?,
    };
    let stored = user.password.clone();
    let checked = proscenium::rt::spawn_blocking(move || {
        PasswordHash::new(&stored).is_ok_and(|hash| {
            argon2::Argon2::default()
                .verify_password(form.password.as_bytes(), &hash)
                .is_ok()
        })
    })
    .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy; try again"))?;
    if !checked.await.unwrap_or(false) {
        return Err(refused());
    }
    let mut token = [0u8; 24];
    OsRng.fill_bytes(&mut token);
    let token: String = token.iter().map(|b| format!("{b:02x}")).collect();
    social.store.open_session(&token, user.id).await?;
    Ok(Json(json!({ "token": token, "name": user.name })))
}

/// The user signed in: the one whose session the request's `Authorization: Bearer
/// TOKEN` names, looked up in the store (401 without one).
pub(crate) struct Me(pub(crate) User);

impl FromRequestParts for Me {
    type Rejection = ApiError;

    async fn from_request_parts(req: &Request) -> Answer<Self> {
        let log_in_first = || ApiError::new(StatusCode::UNAUTHORIZED, "log in first");
        let token = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .ok_or_else(log_in_first)?;
        let State(social) = State::<Social>::from_request_head(req)
            .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "no store"))?;
        match social.store.user_of_session(token).await {
            Err(StoreError::NotFound) => Err(log_in_first()),
            found => Ok(Self(found?)),
        }
    }

    fn state_access() -> Option<proscenium::state::StateAccess> {
        <State<Social> as FromRequestHead>::state_access()
    }
}

/// `POST /users/:name/followers`: the user signed in follows `name`.
async fn follow(
    State(social): State<Social>,
    Path(name): Path<String>,
    Me(me): Me,
) -> Answer<StatusCode> {
    let them = social.store.user_named(&name).await?;
    social.store.follow(me.id, them.id).await?;
    social.cache.forget_following(me.id).await;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /users/:name/followers`: their names.
async fn followers(
    State(social): State<Social>,
    Path(name): Path<String>,
) -> Answer<Json<Vec<String>>> {
    let user = social.store.user_named(&name).await?;
    Ok(Json(social.store.followers(user.id).await?))
}

/// `GET /users/:name/pictures`, newest first (through the cache).
async fn pictures_of(
    State(social): State<Social>,
    Path(name): Path<String>,
) -> Answer<Json<Vec<Picture>>> {
    let user = social.store.user_named(&name).await?;
    Ok(Json(
        social.cache.pictures_of(&social.store, user.id).await?,
    ))
}

/// `GET /users/:name/likes`: the pictures they like.
async fn likes_of(
    State(social): State<Social>,
    Path(name): Path<String>,
) -> Answer<Json<Vec<Picture>>> {
    let user = social.store.user_named(&name).await?;
    Ok(Json(social.store.liked_by(user.id).await?))
}

/// A picture sent in an upload.
struct Upload {
    title: String,
    /// Its media type.
    kind: &'static str,
    bytes: Bytes,
}

/// `POST /pictures` (signed in), `multipart/form-data` with one or more image files
/// (PNG or JPEG): each is stored — all at once, not one after another (Program 4.2)
/// — and answered 201 with the pictures; their thumbnails are then made on the
/// `thumbnails` pool (Programs 4.3–4.4), one picture after another, kept, and
/// announced on `/picture/ID/thumbnail`. 413 for more pictures than
/// [`Uploads::pictures`], or one larger decoded than [`Uploads::decoded`].
async fn upload(
    State(social): State<Social>,
    Me(me): Me,
    multipart: Result<Multipart, MultipartError>,
) -> Answer<(StatusCode, Json<Vec<Picture>>)> {
    let uploads = parts(multipart?, social.uploads).await?;
    let stored = futures_util::future::join_all(
        uploads
            .into_iter()
            .map(|upload| store_one(&social, &me, upload)),
    );
    let stored: Vec<(Picture, Bytes)> = stored.await.into_iter().collect::<Answer<_>>()?;
    let (pictures, images) = stored
        .into_iter()
        .map(|(picture, bytes)| {
            let id = picture.id;
            (picture, (id, bytes))
        })
        .unzip();
    social.cache.forget_pictures(me.id).await;
    thumbnails(&social, me.id, images);
    Ok((StatusCode::CREATED, Json(pictures)))
}

/// The image files of a `multipart/form-data` body: 400 for a file that is not PNG or
/// JPEG; 413 past `limits` (and past `[limits] multipart_*`, which the extractor keeps).
async fn parts(mut multipart: Multipart, limits: Uploads) -> Answer<Vec<Upload>> {
    let bad = |message: &str| ApiError::new(StatusCode::BAD_REQUEST, message);
    let too_large = |message: String| ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, message);
    let mut uploads = Vec::new();
    while let Some(field) = multipart.next_field().await? {
        if uploads.len() == limits.pictures {
            let most = limits.pictures;
            return Err(too_large(format!("at most {most} pictures in one upload")));
        }
        let title = field.file_name().unwrap_or("untitled").to_owned();
        let bytes = field.bytes().await?;
        let format = image::guess_format(&bytes).ok();
        let kind = match format {
            Some(image::ImageFormat::Png) => "image/png",
            Some(image::ImageFormat::Jpeg) => "image/jpeg",
            _ => return Err(bad(&format!("{title}: not a PNG or JPEG image"))),
        };
        let size = format
            .and_then(|format| decoded_size(format, &bytes).ok())
            .ok_or_else(|| bad(&format!("{title}: the image's header does not decode")))?;
        if size > limits.decoded {
            let (size, most) = (size >> 20, limits.decoded >> 20);
            return Err(too_large(format!(
                "{title}: {size} MiB decoded, more than {most} MiB"
            )));
        }
        uploads.push(Upload { title, kind, bytes });
    }
    if uploads.is_empty() {
        return Err(bad("no pictures in the upload"));
    }
    Ok(uploads)
}

/// Stores one upload; returns the picture, and its bytes for the thumbnail.
async fn store_one(social: &Social, me: &User, upload: Upload) -> Answer<(Picture, Bytes)> {
    let id = social
        .store
        .add_picture(me.id, &upload.title, upload.kind, upload.bytes.clone())
        .await?;
    let picture = Picture {
        id,
        owner: me.name.clone(),
        title: upload.title,
        likes: 0,
        thumbnail: false,
        owner_id: me.id,
    };
    Ok((picture, upload.bytes))
}

/// The bytes an image takes decoded, from the dimensions and colour type its header
/// declares; nothing else is decoded.
fn decoded_size(format: image::ImageFormat, bytes: &[u8]) -> image::ImageResult<u64> {
    use image::ImageDecoder as _;
    let header = std::io::Cursor::new(bytes);
    Ok(match format {
        image::ImageFormat::Png => image::codecs::png::PngDecoder::new(header)?.total_bytes(),
        _ => image::codecs::jpeg::JpegDecoder::new(header)?.total_bytes(),
    })
}

/// Makes the thumbnails of one upload's pictures on the `thumbnails` pool, after the
/// answer, one picture after another (four large pictures decoded at once once took
/// 1.06 GB); as each is made the store keeps it and the hub announces it.
fn thumbnails(social: &Social, owner: i64, pictures: Vec<(i64, Bytes)>) {
    let decoded = social.uploads.decoded;
    let social = social.clone();
    let made = proscenium::rt::spawn_blocking_on("thumbnails", move || {
        for (id, bytes) in pictures {
            let made = thumbnail_of(&bytes, decoded);
            let keeping = social.clone();
            social.store.background().spawn(async move {
                keep_thumbnail(&keeping, owner, id, made).await;
            });
        }
    });
    if let Err(error) = made {
        tracing::warn!(%error, "no thumbnails: the pool refused");
    }
}

/// A picture's thumbnail as PNG, decoded within `decoded` bytes (the declared size is
/// checked at upload; this bounds what the decoder may allocate besides).
fn thumbnail_of(bytes: &[u8], decoded: u64) -> image::ImageResult<Vec<u8>> {
    let mut reader = image::io::Reader::new(std::io::Cursor::new(bytes)).with_guessed_format()?;
    let mut limits = image::io::Limits::default();
    limits.max_alloc = Some(decoded);
    reader.limits(limits);
    let thumbnail = reader.decode()?.thumbnail(200, 200);
    let mut png = std::io::Cursor::new(Vec::new());
    thumbnail.write_to(&mut png, image::ImageFormat::Png)?;
    Ok(png.into_inner())
}

/// Keeps a thumbnail made of `owner`'s picture `id`, and announces it; a picture that
/// did not decode is logged.
async fn keep_thumbnail(social: &Social, owner: i64, id: i64, made: image::ImageResult<Vec<u8>>) {
    let png = match made {
        Ok(png) => png,
        Err(error) => {
            tracing::warn!(picture = id, %error, "no thumbnail: the image does not decode");
            return;
        }
    };
    if let Err(error) = social.store.keep_thumbnail(id, png).await {
        tracing::error!(picture = id, %error, "the thumbnail was not kept");
        return;
    }
    social.cache.forget_pictures(owner).await;
    if let Err(error) = social.hub.publish(
        &format!("/picture/{id}/thumbnail"),
        format!("{{\"picture\":{id}}}"),
    ) {
        tracing::error!(picture = id, %error, "the thumbnail was not announced");
    }
}

/// `GET /pictures/:id`: the picture as uploaded.
async fn picture_file(
    State(social): State<Social>,
    Path(id): Path<i64>,
) -> Answer<([(header::HeaderName, String); 1], Body)> {
    let (kind, bytes) = social.store.picture_data(id).await?;
    Ok(([(header::CONTENT_TYPE, kind)], Body::from(bytes)))
}

/// `GET /thumbs/:id`: the thumbnail, once made (404 until then).
async fn thumbnail_file(
    State(social): State<Social>,
    Path(id): Path<i64>,
) -> Answer<([(header::HeaderName, &'static str); 1], Body)> {
    let png = social.store.thumbnail(id).await?;
    Ok(([(header::CONTENT_TYPE, "image/png")], Body::from(png)))
}

/// `POST /picture/:id/likes` (signed in): 201 with the picture as it now is. The
/// like goes to the hub (`/picture/ID/likes`, every replica's feed) and, through the
/// Notifier, to the picture's owner. A user likes a picture once: liking it again
/// answers 200 and tells no one (300 likes of one picture once sent 300 events and
/// 300 notifications).
async fn like(
    State(social): State<Social>,
    Path(id): Path<i64>,
    Me(me): Me,
) -> Answer<(StatusCode, Json<Picture>)> {
    let (picture, new) = social.store.like(id, me.id).await?;
    if !new {
        return Ok((StatusCode::OK, Json(picture)));
    }
    social.cache.forget_pictures(picture.owner_id).await;
    let news = json!({ "picture": id, "title": picture.title, "owner": picture.owner, "by": me.name, "likes": picture.likes });
    if let Err(error) = social
        .hub
        .publish_json(&format!("/picture/{id}/likes"), &news)
    {
        tracing::error!(%error, "a like was not published");
    }
    if picture.owner != me.name {
        let text = format!("{} likes your picture {}", me.name, picture.title);
        if let Err(error) = social.actors.notifier.try_tell(Notify {
            to: picture.owner.clone(),
            text,
        }) {
            tracing::warn!(%error, "a notification was not queued");
        }
    }
    Ok((StatusCode::CREATED, Json(picture)))
}

/// `GET /feed`: a WebSocket the Feeder pushes likes to, from every replica: every
/// like, or those of the pictures it says it watches (`feed.rs`).
async fn feed(State(social): State<Social>, ws: WebSocketUpgrade) -> Response {
    let feeder = social.actors.feeder;
    ws.on_upgrade(move |socket| crate::feed::serve(feeder, socket))
}

/// `GET /feed/events`: the same likes as server-sent events, resumed after
/// `Last-Event-ID`.
async fn feed_events(State(social): State<Social>, last: LastEventId) -> Response {
    social.hub.sse("/picture/*/likes", &last)
}
