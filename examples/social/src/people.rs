//! The people side of the API: who is signed in, a user's page, following and
//! leaving, and the timeline — the pictures of the people one follows and one's own,
//! newest first, put together from each one's list in the cache.

use proscenium::state::State;
use proscenium::{FromRequestParts, Json, Path, Request, StatusCode};
use serde_json::{Value, json};

use crate::api::{Answer, ApiError, Me, Social};
use crate::store::{Picture, Profile, User};

/// The most pictures a timeline shows.
const TIMELINE: usize = 50;

/// The user signed in, if a request names one (no error when it does not).
pub(crate) struct Viewer(Option<User>);

impl FromRequestParts for Viewer {
    type Rejection = ApiError;

    async fn from_request_parts(req: &Request) -> Answer<Self> {
        Ok(Self(
            Me::from_request_parts(req).await.ok().map(|Me(me)| me),
        ))
    }

    fn state_access() -> Option<proscenium::state::StateAccess> {
        Me::state_access()
    }
}

/// `GET /me`: who the session belongs to (401 when it is no one's: the page signs
/// out).
pub(crate) async fn me(Me(me): Me) -> Json<Value> {
    Json(json!({ "name": me.name, "email": me.email }))
}

/// `GET /users/:name`: their counts, and whether the one asking follows them.
pub(crate) async fn profile(
    State(social): State<Social>,
    Path(name): Path<String>,
    Viewer(viewer): Viewer,
) -> Answer<Json<Profile>> {
    let user = social.store.user_named(&name).await?;
    let viewer = viewer.map(|v| v.id);
    Ok(Json(social.store.profile(&user, viewer).await?))
}

/// `DELETE /users/:name/followers`: the user signed in no longer follows `name`
/// (204 whether they did or not).
pub(crate) async fn unfollow(
    State(social): State<Social>,
    Path(name): Path<String>,
    Me(me): Me,
) -> Answer<StatusCode> {
    let them = social.store.user_named(&name).await?;
    social.store.unfollow(me.id, them.id).await?;
    social.cache.forget_following(me.id).await;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /timeline`: the pictures of those the user signed in follows and their own,
/// newest first, [`TIMELINE`] at most; each one's list read from the cache at once.
pub(crate) async fn timeline(
    State(social): State<Social>,
    Me(me): Me,
) -> Answer<Json<Vec<Picture>>> {
    let mut people = social.cache.following(&social.store, me.id).await?;
    people.push(me.id);
    let lists = futures_util::future::join_all(
        people
            .iter()
            .map(|&id| social.cache.pictures_of(&social.store, id)),
    );
    let mut pictures: Vec<Picture> = lists
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect();
    // Ids grow with time: the newest first.
    pictures.sort_unstable_by_key(|picture| std::cmp::Reverse(picture.id));
    pictures.truncate(TIMELINE);
    Ok(Json(pictures))
}
