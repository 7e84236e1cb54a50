//! Reading a response body: content codings decoded, the cap counted on decoded bytes.

use std::io;
use std::pin::Pin;
use std::time::Duration;

use async_compression::tokio::bufread::{BrotliDecoder, GzipDecoder};
use http_body_util::{BodyDataStream, BodyExt};
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::io::StreamReader;

/// How long the reader keeps counting (and discarding) bytes past the cap, to say how much was
/// cut off. Short, so that a trickle after the cap cannot spend the chain's deadline.
const OVERFLOW_BUDGET: Duration = Duration::from_millis(500);

/// How many decoded bytes past the cap are counted at most, as a multiple of the cap.
const OVERFLOW_FACTOR: usize = 4;

/// What was cut off a body at the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The body ended this many decoded bytes after the cap.
    Exactly(u64),
    /// At least this many decoded bytes followed the cap (counting stopped there).
    AtLeast(u64),
}

/// A content coding the reader decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coding {
    Identity,
    Gzip,
    Brotli,
}

impl Coding {
    /// The coding of a `Content-Encoding` value, or `None` for one this reader cannot decode.
    pub(crate) fn parse(value: Option<&str>) -> Option<Self> {
        let Some(value) = value else {
            return Some(Coding::Identity);
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Some(Coding::Identity),
            "gzip" | "x-gzip" => Some(Coding::Gzip),
            "br" => Some(Coding::Brotli),
            _ => None,
        }
    }
}

/// Reads the body, decoded, keeping at most `cap` bytes. `received` is updated as bytes come in
/// (the caller reports it when the deadline cuts the read short). Counting past the cap takes at
/// most a quarter of the time left before `deadline`, so the page is still returned in time.
pub(crate) async fn read_capped(
    body: Incoming,
    coding: Coding,
    cap: usize,
    deadline: tokio::time::Instant,
    received: &mut usize,
) -> io::Result<(Vec<u8>, Option<Cut>)> {
    let stream = BodyDataStream::new(body.map_err(io::Error::other));
    let raw = StreamReader::new(stream);
    let mut reader: Pin<Box<dyn AsyncRead + Send>> = match coding {
        Coding::Identity => Box::pin(raw),
        Coding::Gzip => Box::pin(multi_member(GzipDecoder::new(raw))),
        Coding::Brotli => Box::pin(BrotliDecoder::new(raw)),
    };
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    read_from(&mut reader, cap, OVERFLOW_BUDGET.min(left / 4), received).await
}

fn multi_member<R: tokio::io::AsyncBufRead>(mut decoder: GzipDecoder<R>) -> GzipDecoder<R> {
    decoder.multiple_members(true);
    decoder
}

/// The capped read itself, over any decoded reader.
pub(crate) async fn read_from<R: AsyncRead + Unpin + ?Sized>(
    reader: &mut R,
    cap: usize,
    overflow_budget: Duration,
    received: &mut usize,
) -> io::Result<(Vec<u8>, Option<Cut>)> {
    let mut kept = Vec::with_capacity(cap.min(64 * 1024));
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let room = cap - kept.len();
        if room == 0 {
            break;
        }
        let want = room.min(buffer.len());
        let read = reader.read(&mut buffer[..want]).await?;
        if read == 0 {
            return Ok((kept, None));
        }
        kept.extend_from_slice(&buffer[..read]);
        *received = kept.len();
    }
    // At the cap: count what follows, briefly and boundedly, to report the cut.
    let limit = (cap.max(1) as u64).saturating_mul(OVERFLOW_FACTOR as u64);
    let mut extra = 0u64;
    let counting = async {
        while extra < limit {
            match reader.read(&mut buffer).await {
                Ok(0) => return true,
                Ok(read) => extra += read as u64,
                Err(_) => return false,
            }
        }
        false
    };
    let ended = tokio::time::timeout(overflow_budget, counting)
        .await
        .unwrap_or(false);
    let cut = if ended {
        Cut::Exactly(extra)
    } else {
        Cut::AtLeast(extra)
    };
    // A body that ended exactly at the cap was not cut.
    if cut == Cut::Exactly(0) {
        return Ok((kept, None));
    }
    Ok((kept, Some(cut)))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(data: &[u8], cap: usize) -> (Vec<u8>, Option<Cut>) {
        let mut reader = data;
        let mut received = 0;
        read_from(&mut reader, cap, OVERFLOW_BUDGET, &mut received)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn cap_and_cut() {
        assert_eq!(read(b"hello", 10).await, (b"hello".to_vec(), None));
        assert_eq!(read(b"hello", 5).await, (b"hello".to_vec(), None));
        assert_eq!(
            read(b"hello world", 5).await,
            (b"hello".to_vec(), Some(Cut::Exactly(6)))
        );
        let big = vec![b'x'; 100];
        assert!(matches!(read(&big, 10).await.1, Some(Cut::AtLeast(n)) if n >= 40));
    }

    #[test]
    fn codings() {
        assert_eq!(Coding::parse(None), Some(Coding::Identity));
        assert_eq!(Coding::parse(Some("GZIP")), Some(Coding::Gzip));
        assert_eq!(Coding::parse(Some("br")), Some(Coding::Brotli));
        assert_eq!(Coding::parse(Some("zstd")), None);
        assert_eq!(Coding::parse(Some("deflate")), None);
        assert_eq!(Coding::parse(Some("gzip, br")), None);
    }
}
