//! RESP2 replies, as the engine produces them and [`super::codec::encode_reply`] writes them.

use bytes::Bytes;

/// A RESP2 reply.
///
/// Error and status texts are stored without the leading `-` / `+` and without the trailing CRLF,
/// e.g. `Reply::Error("ERR syntax error".into())`. The first word of an error is its code
/// (`ERR`, `WRONGTYPE`, `NOSCRIPT`, ...), as in Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A simple string (`+OK`).
    Status(String),
    /// An error (`-ERR ...`).
    Error(String),
    /// An integer (`:1`).
    Integer(i64),
    /// A bulk string; `None` is the nil bulk string (`$-1`).
    Bulk(Option<Bytes>),
    /// An array; `None` is the nil array (`*-1`).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// `+OK`.
    pub fn ok() -> Reply {
        Reply::Status("OK".to_string())
    }

    /// The nil bulk string (`$-1`), what `GET` answers for a missing key.
    pub fn nil() -> Reply {
        Reply::Bulk(None)
    }

    /// A bulk string holding `value`.
    pub fn bulk(value: impl Into<Bytes>) -> Reply {
        Reply::Bulk(Some(value.into()))
    }

    /// An error reply with the full text, code included (`"ERR syntax error"`).
    pub fn error(text: impl Into<String>) -> Reply {
        Reply::Error(text.into())
    }

    #[cfg(test)]
    /// Whether this is an error reply.
    pub(crate) fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
}
