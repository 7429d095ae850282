//! An event as it crosses processes: one version byte, then the event in MessagePack
//! with named fields (`rmp-serde`), so a field added later with a serde default still
//! reads an older event, and a format changed past that gets a new version byte that
//! older processes refuse by name instead of misreading.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// An event that may cross clusters — and, over Redis Streams, processes and hosts:
/// it serializes with serde. Every such type is one; no impl is written by hand.
pub trait Event: Serialize + DeserializeOwned + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Send + 'static> Event for T {}

/// The version byte of events written today.
pub(crate) const VERSION: u8 = 1;

/// Why an event could not be put on or taken off the wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(
    not(feature = "redis"),
    expect(unreachable_pub, reason = "`stream` re-exports it")
)]
pub enum WireError {
    /// The event did not serialize.
    #[error("the event does not serialize: {0}")]
    Encode(String),
    /// No bytes where an event was expected.
    #[error("an empty entry where an event was expected")]
    Empty,
    /// Written by a process of another format version.
    #[error("an event of wire version {0}, where this process reads version {VERSION}")]
    Version(u8),
    /// The bytes are not an event of the expected type.
    #[error("the entry is not the event type expected: {0}")]
    Decode(String),
}

/// Returns `event` as it crosses processes.
pub(crate) fn encode<T: Serialize>(event: &T) -> Result<Vec<u8>, WireError> {
    let mut bytes = vec![VERSION];
    rmp_serde::encode::write_named(&mut bytes, event)
        .map_err(|e| WireError::Encode(e.to_string()))?;
    Ok(bytes)
}

/// Reads an event written by [`encode`].
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, WireError> {
    match bytes.split_first() {
        None => Err(WireError::Empty),
        Some((&VERSION, rest)) => {
            rmp_serde::from_slice(rest).map_err(|e| WireError::Decode(e.to_string()))
        }
        Some((&other, _)) => Err(WireError::Version(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Entry {
        client: String,
        status: u16,
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Grown {
        client: String,
        status: u16,
        #[serde(default)]
        bytes: u64,
    }

    #[test]
    fn events_round_trip_and_a_field_added_with_a_default_still_reads() {
        let entry = Entry {
            client: "10.0.0.7".into(),
            status: 404,
        };
        let bytes = encode(&entry).unwrap();
        assert_eq!(bytes[0], VERSION);
        assert_eq!(decode::<Entry>(&bytes).unwrap(), entry);
        let grown: Grown = decode(&bytes).unwrap();
        assert_eq!((grown.status, grown.bytes), (404, 0));
    }

    #[test]
    fn another_version_an_empty_entry_and_another_type_are_refused_by_name() {
        let mut bytes = encode(&7_u32).unwrap();
        assert!(matches!(decode::<Entry>(&bytes), Err(WireError::Decode(_))));
        bytes[0] = 9;
        let refused = decode::<u32>(&bytes).unwrap_err();
        assert_eq!(refused, WireError::Version(9));
        assert!(refused.to_string().contains("version 9"), "{refused}");
        assert_eq!(decode::<u32>(&[]), Err(WireError::Empty));
    }
}
