//! Under prefork the supervisor's `/metrics` is the sum of its workers'.
//!
//! Each worker has a link to its supervisor: one end of a Unix socket pair, made by
//! the supervisor as it starts the worker and inherited across exec like the load
//! board. At each scrape the supervisor asks every live worker over its link; the
//! worker answers from a thread of its own (not its loops, so a busy loop does not
//! delay the answer) with its own exposition, and the supervisor adds the texts up,
//! series by series ([`Total`]). The board was the other way: a shared table of
//! counters. A scrape of each worker was chosen because it carries every family the
//! worker serves — those the request path keeps in per-thread tables, and any family
//! added later — with nothing laid out twice, and it costs the workers nothing
//! between scrapes. The links are private: a socket pair has no address.
//!
//! Counters never go backwards: the supervisor keeps each worker's last answer, and
//! when the worker is gone (it died, or was replaced by SIGHUP) adds that answer's
//! counters and histograms to a retired sum served ever after; its gauges (connections
//! open, requests in flight) go with it. What a worker counted after its last scrape
//! is lost with it. A worker that does not answer within [`ANSWER_WITHIN`] counts
//! with its last answer's counters until it is replaced.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::Metrics;
use super::sum::Total;
use crate::rt::prefork::MetricsLinks;

/// How long the supervisor waits for a worker's answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);
/// The largest answer the supervisor reads, far past any exposition's size.
const MAX_ANSWER: u64 = 64 << 20;

/// The supervisor's links to its workers, and what the gone ones counted.
#[derive(Debug, Default)]
pub(crate) struct Workers {
    inner: Mutex<Links>,
}

#[derive(Debug, Default)]
struct Links {
    live: Vec<Link>,
    /// The counters and histograms of the workers that are gone, as an exposition.
    retired: String,
}

#[derive(Debug)]
struct Link {
    seat: usize,
    /// `None` once an answer failed: the rest of a late one could be read as the next.
    stream: Option<UnixStream>,
    /// The worker's last answer.
    last: String,
}

impl Workers {
    /// Returns the links of a supervisor with no workers yet.
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Asks every live worker for its exposition and adds them, and what the gone
    /// ones counted, to `total`.
    pub(crate) fn add_to(&self, total: &mut Total) {
        let mut links = self.lock();
        for link in &mut links.live {
            match link.stream.as_mut().map(ask) {
                Some(Ok(text)) => {
                    total.add(&text);
                    link.last = text;
                }
                Some(Err(e)) => {
                    tracing::warn!(
                        "worker at seat {} did not answer for /metrics ({e}); counting its last answer",
                        link.seat
                    );
                    link.stream = None;
                    total.add_monotonic(&link.last);
                }
                None => total.add_monotonic(&link.last),
            }
        }
        total.add(&links.retired);
    }

    fn lock(&self) -> MutexGuard<'_, Links> {
        // A panic while holding it leaves only texts: keep going.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl MetricsLinks for Workers {
    /// Opens the link of the worker about to start at board seat `seat`; returns the
    /// end the worker inherits. A worker gone from that seat is retired first.
    fn open(&self, seat: usize) -> std::io::Result<UnixStream> {
        let (mine, theirs) = UnixStream::pair()?;
        mine.set_read_timeout(Some(ANSWER_WITHIN))?;
        mine.set_write_timeout(Some(ANSWER_WITHIN))?;
        let mut links = self.lock();
        links.retire(seat);
        links.live.push(Link {
            seat,
            stream: Some(mine),
            last: String::new(),
        });
        Ok(theirs)
    }

    /// Keeps the counters of the worker that sat at `seat`, which is gone.
    fn retire(&self, seat: usize) {
        self.lock().retire(seat);
    }
}

impl Links {
    fn retire(&mut self, seat: usize) {
        let Some(at) = self.live.iter().position(|l| l.seat == seat) else {
            return;
        };
        let gone = self.live.swap_remove(at);
        let mut retired = Total::default();
        retired.add(&self.retired);
        retired.add_monotonic(&gone.last);
        self.retired = retired.render();
    }
}

/// Asks a worker for its exposition: one byte out, a length and the text back.
fn ask(stream: &mut UnixStream) -> std::io::Result<String> {
    stream.write_all(b"?")?;
    let mut len = [0; 8];
    stream.read_exact(&mut len)?;
    let len = u64::from_le_bytes(len);
    if len > MAX_ANSWER {
        return Err(std::io::Error::other(format!("an answer of {len} bytes")));
    }
    let mut text = String::new();
    stream.take(len).read_to_string(&mut text)?;
    Ok(text)
}

/// Answers the supervisor's asks on `link` with `metrics`' exposition, on a thread of
/// this worker's own, until the supervisor closes the link.
pub(crate) fn answer(mut link: UnixStream, metrics: Metrics) -> std::io::Result<()> {
    let metrics = Arc::new(metrics);
    std::thread::Builder::new()
        .name("proscenium-metrics".to_owned())
        .spawn(move || {
            let mut asked = [0; 1];
            while matches!(link.read(&mut asked), Ok(1)) {
                let text = metrics.render();
                let len = (text.len() as u64).to_le_bytes();
                if link
                    .write_all(&len)
                    .and_then(|()| link.write_all(text.as_bytes()))
                    .is_err()
                {
                    break;
                }
            }
        })
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stands in for a worker: answers each ask on `link` with `text`.
    fn worker(mut link: UnixStream, text: &'static str) {
        std::thread::spawn(move || {
            let mut asked = [0; 1];
            while matches!(link.read(&mut asked), Ok(1)) {
                let _ = link.write_all(&(text.len() as u64).to_le_bytes());
                let _ = link.write_all(text.as_bytes());
            }
        });
    }

    fn scrape(workers: &Workers) -> String {
        let mut total = Total::default();
        workers.add_to(&mut total);
        total.render()
    }

    #[test]
    fn a_scrape_sums_the_workers_and_a_gone_ones_counters_stay() {
        let workers = Workers::new();
        worker(
            workers.open(0).unwrap(),
            "# TYPE n counter\nn_total 3\n# TYPE g gauge\ng 1\n",
        );
        worker(
            workers.open(2).unwrap(),
            "# TYPE n counter\nn_total 4\n# TYPE g gauge\ng 1\n",
        );
        assert_eq!(
            scrape(&workers),
            "# TYPE n counter\nn_total 7\n# TYPE g gauge\ng 2\n"
        );
        workers.retire(2);
        worker(
            workers.open(2).unwrap(),
            "# TYPE n counter\nn_total 1\n# TYPE g gauge\ng 1\n",
        );
        assert_eq!(
            scrape(&workers),
            "# TYPE n counter\nn_total 8\n# TYPE g gauge\ng 2\n",
            "the replaced worker's 4 are kept beside its successor's 1"
        );
    }

    #[test]
    fn a_worker_that_stops_answering_counts_with_its_last_answer() {
        let workers = Workers::new();
        let mut link = workers.open(0).unwrap();
        let answered = std::thread::spawn(move || {
            let mut asked = [0; 1];
            let text = "# TYPE n counter\nn_total 3\n# TYPE g gauge\ng 1\n";
            link.read_exact(&mut asked).unwrap();
            link.write_all(&(text.len() as u64).to_le_bytes()).unwrap();
            link.write_all(text.as_bytes()).unwrap();
            // Asked again, it keeps the link open and says nothing.
            link.read_exact(&mut asked).unwrap();
            link
        });
        assert!(scrape(&workers).contains("n_total 3\n"));
        assert_eq!(scrape(&workers), "# TYPE n counter\nn_total 3\n");
        drop(answered.join().unwrap());
        assert_eq!(scrape(&workers), "# TYPE n counter\nn_total 3\n");
    }
}
