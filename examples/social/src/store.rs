//! Storage: users, sessions, follows, pictures and likes — in SQLite by default
//! (embedded: a file in the data directory, nothing to install) or in PostgreSQL when
//! `[database] url = "postgres://..."`, through sqlx's `Any` driver, one SQL for both.
//! The tables are made at start when missing (the migration).
//!
//! Queries run on a runtime of their own (`proscenium::rt::Background`): a pooled
//! connection outlives the loop, or the connection's thread, that first opened it.

use std::path::Path;

use bytes::Bytes;
use proscenium::rt::Background;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyConnection, AnyPool, Connection as _, Row as _};

/// Why a query failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// A name (or a like, a follow) that must be unique is taken.
    #[error("taken")]
    Taken,
    /// What the query names is not there.
    #[error("not found")]
    NotFound,
    /// The database failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The store's runtime is gone.
    #[error("the store is shut down")]
    Shutdown,
}

/// A user, as stored.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct User {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) email: String,
    #[serde(skip)]
    pub(crate) password: String,
}

/// A picture, as listed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Picture {
    pub(crate) id: i64,
    pub(crate) owner: String,
    pub(crate) title: String,
    pub(crate) likes: i64,
    /// Whether its thumbnail is made yet.
    pub(crate) thumbnail: bool,
    /// Its owner's id, for the cache of their pictures.
    #[serde(skip)]
    pub(crate) owner_id: i64,
}

/// What a user's page shows of them: counts, and whether the one asking follows them.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Profile {
    pub(crate) name: String,
    pub(crate) pictures: i64,
    pub(crate) followers: i64,
    pub(crate) following: i64,
    pub(crate) followed: bool,
}

/// The database, and the runtime its queries run on.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pool: AnyPool,
    background: Background,
}

/// The tables, for each database (their id columns differ).
const SQLITE: &str = "
CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, email TEXT NOT NULL, password TEXT NOT NULL, created BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (token TEXT PRIMARY KEY, user_id BIGINT NOT NULL REFERENCES users(id));
CREATE TABLE IF NOT EXISTS follows (follower BIGINT NOT NULL REFERENCES users(id), followee BIGINT NOT NULL REFERENCES users(id), PRIMARY KEY (follower, followee));
CREATE TABLE IF NOT EXISTS pictures (id INTEGER PRIMARY KEY AUTOINCREMENT, user_id BIGINT NOT NULL REFERENCES users(id), title TEXT NOT NULL, kind TEXT NOT NULL, data BLOB NOT NULL, thumbnail BLOB, created BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS likes (picture_id BIGINT NOT NULL REFERENCES pictures(id), user_id BIGINT NOT NULL REFERENCES users(id), created BIGINT NOT NULL, PRIMARY KEY (picture_id, user_id));
";
const POSTGRES: &str = "
CREATE TABLE IF NOT EXISTS users (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, email TEXT NOT NULL, password TEXT NOT NULL, created BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (token TEXT PRIMARY KEY, user_id BIGINT NOT NULL REFERENCES users(id));
CREATE TABLE IF NOT EXISTS follows (follower BIGINT NOT NULL REFERENCES users(id), followee BIGINT NOT NULL REFERENCES users(id), PRIMARY KEY (follower, followee));
CREATE TABLE IF NOT EXISTS pictures (id BIGSERIAL PRIMARY KEY, user_id BIGINT NOT NULL REFERENCES users(id), title TEXT NOT NULL, kind TEXT NOT NULL, data BYTEA NOT NULL, thumbnail BYTEA, created BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS likes (picture_id BIGINT NOT NULL REFERENCES pictures(id), user_id BIGINT NOT NULL REFERENCES users(id), created BIGINT NOT NULL, PRIMARY KEY (picture_id, user_id));
";

/// A picture's columns, its owner's name and its likes, for the lists.
const PICTURE: &str =
    "SELECT p.id, u.name, p.title, CASE WHEN p.thumbnail IS NULL THEN 0 ELSE 1 END,
    (SELECT COUNT(*) FROM likes l WHERE l.picture_id = p.id) AS likes, p.user_id
    FROM pictures p JOIN users u ON u.id = p.user_id";

impl Store {
    /// Opens the database `url` names — SQLite in `data/social.db` when none — and
    /// makes the tables missing.
    ///
    /// # Errors
    ///
    /// The database cannot be reached, or the tables made.
    pub(crate) fn open(
        url: Option<&str>,
        data: &Path,
        max_connections: u32,
    ) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let url = url.map_or_else(
            || format!("sqlite://{}?mode=rwc", data.join("social.db").display()),
            str::to_owned,
        );
        let background = Background::new("social-store");
        let pool = background
            .block_on(async move {
                // One connection first, so a database out of reach is reported with
                // its cause (a pool would report only that it timed out).
                let mut first = AnyConnection::connect(&url).await?;
                if url.starts_with("sqlite") {
                    // Readers alongside a writer, not behind it.
                    sqlx::query("PRAGMA journal_mode = WAL")
                        .execute(&mut first)
                        .await?;
                }
                let tables = if url.starts_with("postgres") {
                    POSTGRES
                } else {
                    SQLITE
                };
                for statement in tables.split(';').map(str::trim).filter(|s| !s.is_empty()) {
                    sqlx::query(statement).execute(&mut first).await?;
                }
                first.close().await?;
                AnyPoolOptions::new()
                    .max_connections(max_connections)
                    .connect_lazy(&url)
            })
            .ok_or(StoreError::Shutdown)??;
        Ok(Self { pool, background })
    }

    /// The runtime the store's queries run on, for the app's own background work.
    pub(crate) fn background(&self) -> &Background {
        &self.background
    }

    /// Runs `query` with the pool, on the store's runtime.
    async fn run<T, F, Fut>(&self, query: F) -> Result<T, StoreError>
    where
        F: FnOnce(AnyPool) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let running = query(self.pool.clone());
        self.background
            .run(running)
            .await
            .unwrap_or(Err(StoreError::Shutdown))
    }

    /// Adds a user; [`StoreError::Taken`] if the name is.
    pub(crate) async fn create_user(
        &self,
        name: &str,
        email: &str,
        password: &str,
    ) -> Result<i64, StoreError> {
        let (name, email, password) = (name.to_owned(), email.to_owned(), password.to_owned());
        self.run(|pool| async move {
            let row = sqlx::query(
                "INSERT INTO users (name, email, password, created) VALUES ($1, $2, $3, $4) RETURNING id",
            )
            .bind(name)
            .bind(email)
            .bind(password)
            .bind(now())
            .fetch_one(&pool)
            .await
            .map_err(unique)?;
            Ok(row.try_get::<i64, _>(0)?)
        })
        .await
    }

    /// The user called `name`.
    pub(crate) async fn user_named(&self, name: &str) -> Result<User, StoreError> {
        let name = name.to_owned();
        self.run(|pool| async move {
            let row = sqlx::query("SELECT id, name, email, password FROM users WHERE name = $1")
                .bind(name)
                .fetch_optional(&pool)
                .await?
                .ok_or(StoreError::NotFound)?;
            user(&row)
        })
        .await
    }

    /// The user a session's token belongs to.
    pub(crate) async fn user_of_session(&self, token: &str) -> Result<User, StoreError> {
        let token = token.to_owned();
        self.run(|pool| async move {
            let row = sqlx::query(
                "SELECT u.id, u.name, u.email, u.password FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token = $1",
            )
            .bind(token)
            .fetch_optional(&pool)
            .await?
            .ok_or(StoreError::NotFound)?;
            user(&row)
        })
        .await
    }

    /// Runs `sql`, a statement of two parameters, with `first` and `second`.
    async fn execute<A, B>(&self, sql: &'static str, first: A, second: B) -> Result<(), StoreError>
    where
        A: for<'q> sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + 'static,
        B: for<'q> sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + 'static,
    {
        self.run(|pool| async move {
            sqlx::query(sql)
                .bind(first)
                .bind(second)
                .execute(&pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// Opens a session for `user_id` under `token`.
    pub(crate) async fn open_session(&self, token: &str, user_id: i64) -> Result<(), StoreError> {
        let opened = "INSERT INTO sessions (token, user_id) VALUES ($1, $2)";
        self.execute(opened, token.to_owned(), user_id).await
    }

    /// `follower` follows `followee` (again: nothing changes).
    pub(crate) async fn follow(&self, follower: i64, followee: i64) -> Result<(), StoreError> {
        let follows =
            "INSERT INTO follows (follower, followee) VALUES ($1, $2) ON CONFLICT DO NOTHING";
        self.execute(follows, follower, followee).await
    }

    /// `follower` no longer follows `followee` (not following: nothing changes).
    pub(crate) async fn unfollow(&self, follower: i64, followee: i64) -> Result<(), StoreError> {
        let left = "DELETE FROM follows WHERE follower = $1 AND followee = $2";
        self.execute(left, follower, followee).await
    }

    /// The ids of those `user_id` follows.
    pub(crate) async fn following(&self, user_id: i64) -> Result<Vec<i64>, StoreError> {
        self.run(|pool| async move {
            let rows = sqlx::query("SELECT followee FROM follows WHERE follower = $1")
                .bind(user_id)
                .fetch_all(&pool)
                .await?;
            Ok(rows
                .iter()
                .map(|r| r.try_get::<i64, _>(0))
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    /// `user`'s page: their counts, and whether `viewer` follows them.
    pub(crate) async fn profile(
        &self,
        user: &User,
        viewer: Option<i64>,
    ) -> Result<Profile, StoreError> {
        let (id, name) = (user.id, user.name.clone());
        self.run(|pool| async move {
            let row = sqlx::query(
                "SELECT (SELECT COUNT(*) FROM pictures WHERE user_id = $1),
                        (SELECT COUNT(*) FROM follows WHERE followee = $1),
                        (SELECT COUNT(*) FROM follows WHERE follower = $1),
                        (SELECT COUNT(*) FROM follows WHERE follower = $2 AND followee = $1)",
            )
            .bind(id)
            .bind(viewer.unwrap_or(-1))
            .fetch_one(&pool)
            .await?;
            Ok(Profile {
                name,
                pictures: row.try_get(0)?,
                followers: row.try_get(1)?,
                following: row.try_get(2)?,
                followed: row.try_get::<i64, _>(3)? > 0,
            })
        })
        .await
    }

    /// The names of those who follow `user_id`.
    pub(crate) async fn followers(&self, user_id: i64) -> Result<Vec<String>, StoreError> {
        self.run(|pool| async move {
            let rows = sqlx::query(
                "SELECT u.name FROM follows f JOIN users u ON u.id = f.follower WHERE f.followee = $1 ORDER BY u.name",
            )
            .bind(user_id)
            .fetch_all(&pool)
            .await?;
            Ok(rows.iter().map(|r| r.try_get::<String, _>(0)).collect::<Result<_, _>>()?)
        })
        .await
    }

    /// Adds a picture of `user_id`'s — its bytes, of media type `kind` — its
    /// thumbnail not made yet. The bytes live in the database, so every replica
    /// sharing it serves them (the thesis kept them on S3).
    pub(crate) async fn add_picture(
        &self,
        user_id: i64,
        title: &str,
        kind: &str,
        data: Bytes,
    ) -> Result<i64, StoreError> {
        let (title, kind) = (title.to_owned(), kind.to_owned());
        self.run(|pool| async move {
            let row = sqlx::query(
                "INSERT INTO pictures (user_id, title, kind, data, created) VALUES ($1, $2, $3, $4, $5) RETURNING id",
            )
            .bind(user_id)
            .bind(title)
            .bind(kind)
            .bind(data.to_vec())
            .bind(now())
            .fetch_one(&pool)
            .await?;
            Ok(row.try_get::<i64, _>(0)?)
        })
        .await
    }

    /// Keeps a picture's thumbnail (PNG).
    pub(crate) async fn keep_thumbnail(
        &self,
        picture_id: i64,
        png: Vec<u8>,
    ) -> Result<(), StoreError> {
        self.run(|pool| async move {
            sqlx::query("UPDATE pictures SET thumbnail = $1 WHERE id = $2")
                .bind(png)
                .bind(picture_id)
                .execute(&pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// A picture's bytes and media type.
    pub(crate) async fn picture_data(
        &self,
        picture_id: i64,
    ) -> Result<(String, Vec<u8>), StoreError> {
        self.run(|pool| async move {
            let row = sqlx::query("SELECT kind, data FROM pictures WHERE id = $1")
                .bind(picture_id)
                .fetch_optional(&pool)
                .await?
                .ok_or(StoreError::NotFound)?;
            Ok((row.try_get(0)?, row.try_get(1)?))
        })
        .await
    }

    /// A picture's thumbnail, once made.
    pub(crate) async fn thumbnail(&self, picture_id: i64) -> Result<Vec<u8>, StoreError> {
        self.run(|pool| async move {
            let row = sqlx::query(
                "SELECT thumbnail FROM pictures WHERE id = $1 AND thumbnail IS NOT NULL",
            )
            .bind(picture_id)
            .fetch_optional(&pool)
            .await?
            .ok_or(StoreError::NotFound)?;
            Ok(row.try_get(0)?)
        })
        .await
    }

    /// `user_id` likes a picture (again: nothing changes); returns the picture as it
    /// now is, and whether the like is new. [`StoreError::NotFound`] if there is no
    /// such picture.
    pub(crate) async fn like(
        &self,
        picture_id: i64,
        user_id: i64,
    ) -> Result<(Picture, bool), StoreError> {
        self.run(|pool| async move {
            let found = sqlx::query(&format!("{PICTURE} WHERE p.id = $1"))
                .bind(picture_id)
                .fetch_optional(&pool)
                .await?;
            if found.is_none() {
                return Err(StoreError::NotFound);
            }
            let added = sqlx::query(
                "INSERT INTO likes (picture_id, user_id, created) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(picture_id)
            .bind(user_id)
            .bind(now())
            .execute(&pool)
            .await?
            .rows_affected();
            let row = sqlx::query(&format!("{PICTURE} WHERE p.id = $1"))
                .bind(picture_id)
                .fetch_one(&pool)
                .await?;
            Ok((picture(&row)?, added == 1))
        })
        .await
    }

    /// `user_id`'s pictures, newest first.
    pub(crate) async fn pictures_of(&self, user_id: i64) -> Result<Vec<Picture>, StoreError> {
        self.pictures(
            format!("{PICTURE} WHERE p.user_id = $1 ORDER BY p.id DESC"),
            user_id,
        )
        .await
    }

    /// The pictures `user_id` likes, newest like first.
    pub(crate) async fn liked_by(&self, user_id: i64) -> Result<Vec<Picture>, StoreError> {
        self.pictures(
            format!("{PICTURE} JOIN likes k ON k.picture_id = p.id WHERE k.user_id = $1 ORDER BY k.created DESC, p.id DESC"),
            user_id,
        )
        .await
    }

    async fn pictures(&self, sql: String, user_id: i64) -> Result<Vec<Picture>, StoreError> {
        self.run(|pool| async move {
            let rows = sqlx::query(&sql).bind(user_id).fetch_all(&pool).await?;
            rows.iter().map(picture).collect()
        })
        .await
    }
}

fn user(row: &sqlx::any::AnyRow) -> Result<User, StoreError> {
    Ok(User {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        email: row.try_get(2)?,
        password: row.try_get(3)?,
    })
}

fn picture(row: &sqlx::any::AnyRow) -> Result<Picture, StoreError> {
    Ok(Picture {
        id: row.try_get(0)?,
        owner: row.try_get(1)?,
        title: row.try_get(2)?,
        thumbnail: row.try_get::<i64, _>(3)? != 0,
        likes: row.try_get(4)?,
        owner_id: row.try_get(5)?,
    })
}

/// A unique constraint broken is [`StoreError::Taken`].
fn unique(error: sqlx::Error) -> StoreError {
    match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Taken,
        _ => StoreError::Database(error),
    }
}

/// Seconds since the epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
