//! Topic patterns as Redis's `PSUBSCRIBE` reads them: `*` any run of bytes (slashes
//! too), `?` one byte, `[abc]`, `[a-z]` and `[^a]` a class, `\x` the byte x itself.

/// Whether `topic` matches `pattern`. Iterative: a `*` that fails is retried one byte
/// further on, from the last `*` only, so a match costs at most the product of the
/// lengths, never an exponential search.
pub(crate) fn matches(pattern: &str, topic: &str) -> bool {
    let (pattern, topic) = (pattern.as_bytes(), topic.as_bytes());
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was: the pattern after it, and the topic byte it stopped at.
    let mut star: Option<(usize, usize)> = None;
    while t < topic.len() {
        if pattern.get(p) == Some(&b'*') {
            p += 1;
            star = Some((p, t));
            continue;
        }
        if let Some(next) = step(pattern, p, topic[t]) {
            p = next;
            t += 1;
            continue;
        }
        let Some((after, at)) = star else {
            return false;
        };
        p = after;
        t = at + 1;
        star = Some((after, at + 1));
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// Where the pattern goes on if its element at `p` (not a `*`) matches `byte`.
fn step(pattern: &[u8], p: usize, byte: u8) -> Option<usize> {
    match *pattern.get(p)? {
        b'?' => Some(p + 1),
        b'[' => {
            let (matched, next) = class(pattern, p + 1, byte);
            matched.then_some(next)
        }
        b'\\' if p + 1 < pattern.len() => (pattern[p + 1] == byte).then_some(p + 2),
        literal => (literal == byte).then_some(p + 1),
    }
}

/// Whether `byte` is in the class starting at `p` (just past its `[`), and where the
/// pattern goes on after the class's `]` (or its end: a class left open runs to it).
fn class(pattern: &[u8], mut p: usize, byte: u8) -> (bool, usize) {
    let negated = pattern.get(p) == Some(&b'^');
    if negated {
        p += 1;
    }
    let mut found = false;
    while p < pattern.len() && pattern[p] != b']' {
        let low = if pattern[p] == b'\\' && p + 1 < pattern.len() {
            p += 1;
            pattern[p]
        } else {
            pattern[p]
        };
        if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() && pattern[p + 2] != b']' {
            let high = pattern[p + 2];
            let (low, high) = if low <= high {
                (low, high)
            } else {
                (high, low)
            };
            found |= (low..=high).contains(&byte);
            p += 3;
        } else {
            found |= low == byte;
            p += 1;
        }
    }
    (found != negated, (p + 1).min(pattern.len()))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns_match_as_redis_psubscribe_does() {
        let cases = [
            ("/picture/*/likes", "/picture/42/likes", true),
            ("/picture/*/likes", "/picture/4/2/likes", true),
            ("/picture/*/likes", "/picture/42/comments", false),
            ("/picture/*", "/picture/", true),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-c]llo", "hbllo", true),
            ("h[c-a]llo", "hbllo", true),
            ("h[a-c]llo", "hdllo", false),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("*.*.*", "a.b.c.d", true),
            ("user/[0-9]*", "user/7/feed", true),
        ];
        for (pattern, topic, want) in cases {
            assert_eq!(matches(pattern, topic), want, "{pattern:?} ~ {topic:?}");
        }
        // Retrying from the last star only: this ends at once, where trying every
        // split would not end in the test's lifetime.
        assert!(!matches(&("*a".repeat(30) + "b"), &"a".repeat(200)));
    }
}
