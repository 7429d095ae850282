//! The thesis's actors (sec. 4.2–4.4): the Mailman writes welcome and reminder mails
//! to an outbox directory, the Notifier calls a push service over the HTTP client —
//! with an access token it renews on a schedule, the thesis's `renewAccessToken` —
//! and the Subscriber and the Feeder (`feed.rs`) carry the hub's likes to the
//! WebSockets open on this replica.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use proscenium::actor::{Actor, Addr, Context, Handler, Message, Overflow, Props, System};
use proscenium::client::Client;
use proscenium::hub::Hub;
use serde::{Deserialize, Serialize};

use crate::feed::{Feeder, Subscriber};

/// A mail to write: the welcome at once, the reminder later.
#[derive(Debug, Clone)]
pub(crate) enum Mail {
    Welcome { name: String, email: String },
    Reminder { name: String, email: String },
}

impl Message for Mail {
    type Reply = ();
}

/// Writes mails as files in its outbox (a stand-in for SMTP that a test can read),
/// and sends each new user a reminder some time after the welcome.
pub(crate) struct Mailman {
    outbox: PathBuf,
    reminder_after: Duration,
    written: Arc<AtomicU64>,
}

impl Actor for Mailman {}

impl Handler<Mail> for Mailman {
    fn handle(&mut self, mail: Mail, ctx: &mut Context<Self>) {
        let (name, email, subject, body) = match &mail {
            Mail::Welcome { name, email } => {
                // The thesis's scheduled reminder (sec. 4.2): a message to itself, later.
                ctx.run_later(
                    self.reminder_after,
                    Mail::Reminder {
                        name: name.clone(),
                        email: email.clone(),
                    },
                );
                (
                    name,
                    email,
                    "Welcome",
                    "Welcome! Upload a picture, and see who likes it.",
                )
            }
            Mail::Reminder { name, email } => (
                name,
                email,
                "We miss you",
                "Your followers are waiting for your next picture.",
            ),
        };
        let Some(text) = mail_text(name, email, subject, body) else {
            tracing::error!(to = ?email, user = ?name, "mail not written: a header value holds a line break");
            return;
        };
        let number = self.written.fetch_add(1, Ordering::Relaxed) + 1;
        let file = self.outbox.join(format!("{number:06}-{name}.eml"));
        // Written beside it and renamed, as a maildir delivers: whoever reads the
        // outbox sees a whole mail or none (a reader once found a `.eml` still empty).
        let part = file.with_extension("eml.part");
        match std::fs::write(&part, text).and_then(|()| std::fs::rename(&part, &file)) {
            Ok(()) => tracing::info!(to = %email, %subject, file = %file.display(), "mail written"),
            Err(error) => tracing::error!(to = %email, %error, "mail not written"),
        }
    }
}

/// A mail's text, or `None` if a header value holds a CR, an LF or another control
/// character: written into the header, a line break starts a header of the sender's
/// choosing (`Bcc:`). Sign-up refuses such an address too; this holds for every mail.
fn mail_text(name: &str, email: &str, subject: &str, body: &str) -> Option<String> {
    let header = [name, email, subject];
    if header
        .iter()
        .any(|value| value.chars().any(char::is_control))
    {
        return None;
    }
    Some(format!(
        "To: {name} <{email}>\r\nSubject: {subject}\r\n\r\n{body}\r\n"
    ))
}

/// A notification for a user's devices.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Notify {
    pub(crate) to: String,
    pub(crate) text: String,
}

impl Message for Notify {
    type Reply = ();
}

/// Renew the push service's access token now (and, from the answer, when next).
#[derive(Debug, Clone)]
pub(crate) struct Renew;

impl Message for Renew {
    type Reply = ();
}

/// Where the Notifier gets its access token, and how often at most it renews it.
#[derive(Debug, Clone)]
pub(crate) struct TokenSource {
    /// `POST`ed, answered `{"token": "...", "expires_in": SECONDS}`.
    pub(crate) url: String,
    /// The thesis renewed every 30 minutes; a token that expires sooner is renewed at
    /// half its lifetime.
    pub(crate) every: Duration,
}

/// A token endpoint's answer.
#[derive(Deserialize)]
struct Token {
    token: String,
    expires_in: u64,
}

/// A failed renewal is tried again after this (or `every`, if sooner); the token held
/// meanwhile is kept.
const RETRY_RENEWAL: Duration = Duration::from_secs(5);

/// Sends notifications to the push service (`--push URL`): `POST URL` with
/// `{"to": ..., "text": ...}`, through the HTTP client (its timeout, its retries), with
/// `Authorization: Bearer TOKEN` once it holds an access token (`--push-token URL`,
/// renewed from when it starts, as the thesis's scheduled `renewAccessToken`); a
/// failure is logged, the notification dropped.
pub(crate) struct Notifier {
    client: Client,
    push: Option<String>,
    tokens: Option<TokenSource>,
    token: Option<String>,
}

impl Actor for Notifier {
    fn started(&mut self, ctx: &mut Context<Self>) {
        // `schedule(Duration.Zero, 30.minutes)(renewAccessToken())`: at once, then on.
        if self.tokens.is_some() {
            ctx.run_later(Duration::ZERO, Renew);
        }
    }
}

impl Handler<Renew> for Notifier {
    fn handle(&mut self, _: Renew, ctx: &mut Context<Self>) {
        let Some(tokens) = self.tokens.clone() else {
            return;
        };
        let next = match self.renew(&tokens.url) {
            Ok(lifetime) => tokens.every.min(lifetime / 2).max(Duration::from_secs(1)),
            Err(error) => {
                tracing::warn!(url = %tokens.url, %error, "the push token was not renewed: tried again shortly");
                tokens.every.min(RETRY_RENEWAL)
            }
        };
        ctx.run_later(next, Renew);
    }
}

impl Notifier {
    /// Takes a new token from `url`; returns how long it lives.
    fn renew(&mut self, url: &str) -> Result<Duration, String> {
        let request = http::Request::post(url)
            .body(bytes::Bytes::new())
            .map_err(|e| e.to_string())?;
        let answer = self
            .client
            .send_blocking(request)
            .map_err(|e| e.to_string())?;
        if !answer.status().is_success() {
            return Err(format!("answered {}", answer.status()));
        }
        let token: Token = serde_json::from_slice(answer.body()).map_err(|e| e.to_string())?;
        tracing::info!(expires_in = token.expires_in, "push token renewed");
        self.token = Some(token.token);
        Ok(Duration::from_secs(token.expires_in))
    }
}

impl Handler<Notify> for Notifier {
    fn handle(&mut self, notify: Notify, _: &mut Context<Self>) {
        let Some(push) = &self.push else {
            tracing::info!(to = %notify.to, text = %notify.text, "notification (no push service)");
            return;
        };
        let body = serde_json::to_vec(&notify).expect("a notification serializes");
        let mut request =
            http::Request::post(push.as_str()).header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(bytes::Bytes::from(body));
        let sent = match request {
            Ok(request) => self
                .client
                .send_blocking(request)
                .map(|answer| answer.status()),
            Err(error) => {
                tracing::error!(%push, %error, "the push service's URL is unusable");
                return;
            }
        };
        match sent {
            Ok(status) if status.is_success() => tracing::debug!(to = %notify.to, "notified"),
            Ok(status) => tracing::warn!(to = %notify.to, %status, "the push service refused"),
            Err(error) => tracing::warn!(to = %notify.to, %error, "the push service failed"),
        }
    }
}

/// The app's actors.
#[derive(Clone)]
pub(crate) struct Actors {
    pub(crate) mailman: Addr<Mailman>,
    pub(crate) notifier: Addr<Notifier>,
    pub(crate) feeder: Addr<Feeder>,
}

/// Where the actors take their settings from.
pub(crate) struct Setup {
    pub(crate) outbox: PathBuf,
    pub(crate) reminder_after: Duration,
    pub(crate) push: Option<String>,
    pub(crate) tokens: Option<TokenSource>,
}

impl Actors {
    /// Starts them on the `social` dispatcher, and subscribes the Subscriber.
    pub(crate) fn start(system: &System, hub: &Hub, client: &Client, setup: Setup) -> Self {
        let on_social = |name: &str| {
            Props::named(name)
                .dispatcher("social")
                .mailbox(10_000, Overflow::DropOldest)
        };
        let written = Arc::new(AtomicU64::new(0));
        let (outbox, reminder_after) = (setup.outbox, setup.reminder_after);
        let mailman = system.spawn(on_social("mailman"), move || Mailman {
            outbox: outbox.clone(),
            reminder_after,
            written: Arc::clone(&written),
        });
        let (client, push, tokens) = (client.clone(), setup.push, setup.tokens);
        let notifier = system.spawn(on_social("notifier"), move || Notifier {
            client: client.clone(),
            push: push.clone(),
            tokens: tokens.clone(),
            token: None,
        });
        let feeder = system.spawn(on_social("feeder"), Feeder::default);
        let to_feeder = feeder.clone();
        let subscriber = system.spawn(on_social("subscriber"), move || Subscriber {
            feeder: to_feeder.clone(),
        });
        hub.feed_actor("/picture/*/likes", subscriber.recipient());
        Self {
            mailman,
            notifier,
            feeder,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mail_header_value_with_a_line_break_is_not_written() {
        for email in [
            "a@example.org\r\nBcc: b@example.org",
            "a@example.org\nBcc: b@example.org",
        ] {
            assert_eq!(
                mail_text("ana", email, "Welcome", "Hello"),
                None,
                "{email:?}"
            );
        }
        assert_eq!(
            mail_text("ana\r", "a@example.org", "Welcome", "Hello"),
            None
        );
        assert_eq!(
            mail_text("ana", "a@example.org", "Welcome", "Hello").as_deref(),
            Some("To: ana <a@example.org>\r\nSubject: Welcome\r\n\r\nHello\r\n")
        );
    }
}
