//! A deterministic web-server log in the combined log format, with incidents planted
//! so the CEP graph has alarms to raise, and the parser that reads it back.
//!
//! The generator aligns incidents with the spatial window (`WINDOW` entries): one
//! incident in every `INCIDENT_EVERY`-th window, starting at offset `INCIDENT_OFFSET`
//! inside it, so an incident never straddles two windows and the alarm count is known.

use std::fmt::Write as _;

/// Entries in one spatial window.
pub const WINDOW: usize = 1_000;
/// One incident is planted in every this-many windows.
pub const INCIDENT_EVERY: usize = 5;
/// Where inside its window an incident starts.
const INCIDENT_OFFSET: usize = 100;
/// Requests of one planted incident (a 404 scan or a 5xx burst).
pub const INCIDENT_LEN: usize = 40;
/// Distinct background clients.
const CLIENTS: u32 = 256;
const PATHS: [&str; 8] = [
    "/",
    "/index.html",
    "/api/items",
    "/api/cart",
    "/login",
    "/static/app.js",
    "/static/site.css",
    "/search?q=shoes",
];

/// One parsed log entry: the fields the stages use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The client's address.
    pub client: String,
    /// The request path.
    pub path: String,
    /// The response status.
    pub status: u16,
    /// The response size in bytes.
    pub bytes: u64,
}

/// The kind of a planted incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incident {
    /// One client requesting many missing paths.
    Scan,
    /// Many server errors in a row.
    Burst,
}

/// SplitMix64: small, seeded, and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Returns the incident planted at entry `index`, if any, and its kind.
pub fn incident_at(index: usize) -> Option<Incident> {
    let (window, offset) = (index / WINDOW, index % WINDOW);
    let planted = window.is_multiple_of(INCIDENT_EVERY)
        && (INCIDENT_OFFSET..INCIDENT_OFFSET + INCIDENT_LEN).contains(&offset);
    let kind = if (window / INCIDENT_EVERY).is_multiple_of(2) {
        Incident::Scan
    } else {
        Incident::Burst
    };
    planted.then_some(kind)
}

/// Returns how many incidents a log of `entries` entries holds (complete ones only).
pub fn incidents(entries: usize) -> usize {
    let full = |w: usize| w * WINDOW + INCIDENT_OFFSET + INCIDENT_LEN <= entries;
    (0..entries.div_ceil(WINDOW))
        .filter(|w| w % INCIDENT_EVERY == 0 && full(*w))
        .count()
}

/// Writes `entries` log lines, seeded by `seed`, each ending in `\n`, to `out`.
pub fn generate(entries: usize, seed: u64, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let mut rng = Rng(seed);
    let mut line = String::with_capacity(256);
    for index in 0..entries {
        line.clear();
        let (client, path, status) = match incident_at(index) {
            Some(Incident::Scan) => {
                let window = index / WINDOW;
                (
                    format!("203.0.113.{}", window % 250),
                    format!("/admin/{index}.php"),
                    404,
                )
            }
            Some(Incident::Burst) => (
                background_client(&mut rng),
                PATHS[rng.below(8) as usize].to_owned(),
                503,
            ),
            None => {
                let status = match rng.below(1000) {
                    0..=4 => 404,
                    5 => 500,
                    _ => 200,
                };
                (
                    background_client(&mut rng),
                    PATHS[rng.below(8) as usize].to_owned(),
                    status,
                )
            }
        };
        let second = index / 20;
        let _ = writeln!(
            line,
            "{client} - - [24/Nov/2026:{:02}:{:02}:{:02} +0000] \"GET {path} HTTP/1.1\" {status} {} \"-\" \"Mozilla/5.0\"",
            (second / 3600) % 24,
            (second / 60) % 60,
            second % 60,
            200 + rng.below(5000),
        );
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

fn background_client(rng: &mut Rng) -> String {
    let n = rng.below(u64::from(CLIENTS)) as u32;
    format!("10.0.{}.{}", n / 256, n % 256)
}

/// Parses one combined-log-format line; `None` when it is malformed.
pub fn parse(line: &str) -> Option<Entry> {
    let (client, rest) = line.split_once(' ')?;
    let (_, rest) = rest.split_once("] \"")?;
    let (request, rest) = rest.split_once("\" ")?;
    let path = request.split(' ').nth(1)?;
    let mut fields = rest.split(' ');
    let status = fields.next()?.parse().ok()?;
    let bytes = fields.next()?.parse().unwrap_or(0);
    Some(Entry {
        client: client.to_owned(),
        path: path.to_owned(),
        status,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_lines_parse_and_repeat_under_one_seed() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        generate(3_000, 7, &mut a).unwrap();
        generate(3_000, 7, &mut b).unwrap();
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        let parsed: Vec<_> = text.lines().map(|l| parse(l).unwrap()).collect();
        assert_eq!(parsed.len(), 3_000);
        assert_eq!(parsed[100].status, 404);
        assert!(parsed[100].client.starts_with("203.0.113."));
    }

    #[test]
    fn incidents_are_counted_whole() {
        assert_eq!(incidents(20_000), 4);
        assert_eq!(incidents(1_000_000), 200);
        assert_eq!(incidents(120), 0);
        assert_eq!(incidents(140), 1);
    }

    #[test]
    fn parse_rejects_malformed_lines() {
        assert_eq!(parse("garbage"), None);
    }
}
