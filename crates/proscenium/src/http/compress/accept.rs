//! `Accept-Encoding` (RFC 9110 §12.5.3): the codings a client takes, each with its
//! weight, ranked without allocating.

/// A content coding the server can produce, in the server's order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Coding {
    Zstd,
    Br,
    Gzip,
}

impl Coding {
    /// Every coding, the server's preferred first: it breaks ties of the client's
    /// weights (zstd and br compress text better than gzip at the same cost).
    pub(crate) const ALL: [Coding; 3] = [Coding::Zstd, Coding::Br, Coding::Gzip];

    /// Returns the coding's name, as `Content-Encoding` carries it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Br => "br",
            Coding::Gzip => "gzip",
        }
    }

    /// Returns the extension of a file precompressed in this coding.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Coding::Zstd => "zst",
            Coding::Br => "br",
            Coding::Gzip => "gz",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Returns the coding a name in `Accept-Encoding` stands for (`x-gzip` is gzip,
    /// RFC 9110 §8.4.1.3).
    fn named(name: &[u8]) -> Option<Coding> {
        let is = |known: &str| name.eq_ignore_ascii_case(known.as_bytes());
        match () {
            () if is("zstd") => Some(Coding::Zstd),
            () if is("br") => Some(Coding::Br),
            () if is("gzip") || is("x-gzip") => Some(Coding::Gzip),
            () => None,
        }
    }
}

/// The codings a request accepts, most wanted first: by the client's weight, then by
/// the server's order; codings weighted 0 (or not named, with no `*`) are left out.
pub(crate) fn ranked(value: &[u8]) -> impl Iterator<Item = Coding> {
    let weights = weights(value);
    let mut order = Coding::ALL;
    // Stable: equal weights keep the server's order.
    order.sort_by_key(|c| std::cmp::Reverse(weights[c.index()]));
    order.into_iter().filter(move |c| weights[c.index()] > 0)
}

/// Each coding's weight in thousandths: the one given for its name, else `*`'s, else
/// 0. An element whose weight cannot be read is ignored.
fn weights(value: &[u8]) -> [u16; 3] {
    let mut named: [Option<u16>; 3] = [None; 3];
    let mut any = None;
    for element in value.split(|&b| b == b',') {
        let mut parts = element.split(|&b| b == b';');
        let name = parts.next().unwrap_or_default().trim_ascii();
        let Some(weight) = weight(parts) else {
            continue;
        };
        if name == b"*" {
            any = Some(weight);
        } else if let Some(coding) = Coding::named(name) {
            named[coding.index()] = Some(weight);
        }
    }
    named.map(|w| w.or(any).unwrap_or(0))
}

/// The weight among an element's parameters: `q=` (RFC 9110 §12.4.2), 1 without one.
fn weight<'a>(params: impl Iterator<Item = &'a [u8]>) -> Option<u16> {
    for param in params {
        let param = param.trim_ascii();
        if let Some(q) = param
            .strip_prefix(b"q=")
            .or_else(|| param.strip_prefix(b"Q="))
        {
            return qvalue(q.trim_ascii());
        }
    }
    Some(1000)
}

/// Reads a qvalue: `0`, `1`, or either with up to three decimals, in thousandths.
fn qvalue(q: &[u8]) -> Option<u16> {
    let (whole, decimals) = match q.iter().position(|&b| b == b'.') {
        Some(dot) => (&q[..dot], &q[dot + 1..]),
        None => (q, &[][..]),
    };
    if decimals.len() > 3 || !decimals.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths: u16 = 0;
    for i in 0..3 {
        let digit = decimals.get(i).map_or(0, |d| u16::from(d - b'0'));
        thousandths = thousandths * 10 + digit;
    }
    match whole {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(value: &str) -> Vec<Coding> {
        ranked(value.as_bytes()).collect()
    }

    #[test]
    fn ties_go_to_the_server_order() {
        use Coding::*;
        assert_eq!(rank("gzip, deflate, br, zstd"), [Zstd, Br, Gzip]);
        assert_eq!(rank("gzip, br"), [Br, Gzip]);
        assert_eq!(rank("gzip"), [Gzip]);
        assert_eq!(rank("*"), [Zstd, Br, Gzip]);
    }

    #[test]
    fn weights_order_the_codings() {
        use Coding::*;
        assert_eq!(rank("zstd;q=0.5, br;q=0.8, gzip;q=1"), [Gzip, Br, Zstd]);
        assert_eq!(rank("gzip;q=0.9, br ; q=0.95"), [Br, Gzip]);
        assert_eq!(rank("br;q=0.001, gzip;q=0.002"), [Gzip, Br]);
    }

    #[test]
    fn zero_refuses_and_star_covers_the_rest() {
        use Coding::*;
        assert_eq!(rank("br;q=0, *"), [Zstd, Gzip]);
        assert_eq!(rank("*;q=0, gzip"), [Gzip]);
        assert_eq!(rank("*;q=0.5, zstd;q=0.1"), [Br, Gzip, Zstd]);
        assert_eq!(rank("gzip;q=0.000"), []);
        assert_eq!(rank("identity"), []);
        assert_eq!(rank("identity, *;q=0"), []);
        assert_eq!(rank(""), []);
    }

    #[test]
    fn names_and_parameters_are_read_leniently() {
        use Coding::*;
        assert_eq!(rank("GZIP, X-Gzip;Q=0.5"), [Gzip]);
        assert_eq!(rank("x-gzip"), [Gzip]);
        assert_eq!(rank(" br ;foo=bar; q=1.0 ,"), [Br]);
    }

    #[test]
    fn unreadable_weights_ignore_their_element() {
        use Coding::*;
        assert_eq!(rank("br;q=2, gzip"), [Gzip]);
        assert_eq!(rank("br;q=0.5555, gzip;q=abc, zstd;q=1.5"), []);
        assert_eq!(rank("br;q=, gzip;q=.5"), []);
        assert_eq!(rank("br;q=1.001"), []);
        assert_eq!(rank(",,;;,"), []);
    }
}
