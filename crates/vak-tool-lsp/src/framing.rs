//! JSON-RPC framing over a server's standard input and output: `Content-Length` headers, a
//! blank line, the body. Bounded: a header block over [`MAX_HEADER_BYTES`], a body over the
//! configured cap, or a frame without a usable length ends the connection (a stream that lost
//! its framing cannot be trusted to find it again) and says why.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use vak_tool_core::human;

/// The most bytes a frame's header block may take.
pub(crate) const MAX_HEADER_BYTES: u64 = 8 * 1024;

/// Why no frame could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The server closed its output (it exited, or will).
    #[error("closed its output")]
    Closed,
    /// The header block is not `Content-Length: N` lines ending in a blank line.
    #[error("sent a malformed frame ({0})")]
    Malformed(String),
    /// The body is over the cap; it was not read.
    #[error("sent a message of {} (over the {} cap)", human::size(*size), human::size(*limit as u64))]
    TooLarge {
        /// The announced size.
        size: u64,
        /// The cap.
        limit: usize,
    },
    /// Reading failed.
    #[error("could not be read from ({0})")]
    Io(#[from] std::io::Error),
}

/// Reads one frame's body; `limit` is the largest body accepted.
pub(crate) async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> Result<Vec<u8>, FrameError> {
    let mut length: Option<u64> = None;
    let mut used: u64 = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut *reader)
            .take(MAX_HEADER_BYTES - used)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Err(if used == 0 {
                FrameError::Closed
            } else if used >= MAX_HEADER_BYTES {
                FrameError::Malformed(format!(
                    "a header block over {}",
                    human::size(MAX_HEADER_BYTES)
                ))
            } else {
                FrameError::Malformed("the output ended inside a header".into())
            });
        }
        used += read as u64;
        if line.last() != Some(&b'\n') {
            // The take() ran out before the end of the line.
            return Err(FrameError::Malformed(format!(
                "a header block over {}",
                human::size(MAX_HEADER_BYTES)
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(FrameError::Malformed(format!(
                "a header line without a colon: {:?}",
                shorten(text)
            )));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let parsed = value.trim().parse::<u64>().map_err(|_| {
                FrameError::Malformed(format!("Content-Length {:?}", shorten(value.trim())))
            })?;
            length = Some(parsed);
        }
    }
    let Some(length) = length else {
        return Err(FrameError::Malformed("no Content-Length header".into()));
    };
    if length > limit as u64 {
        return Err(FrameError::TooLarge {
            size: length,
            limit,
        });
    }
    let mut body = vec![0; length as usize];
    reader.read_exact(&mut body).await.map_err(|error| {
        if error.kind() == std::io::ErrorKind::UnexpectedEof {
            FrameError::Malformed("the output ended inside a message".into())
        } else {
            FrameError::Io(error)
        }
    })?;
    Ok(body)
}

/// Writes one frame.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

fn shorten(text: &str) -> String {
    text.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(input: &[u8], limit: usize) -> Result<Vec<u8>, FrameError> {
        let mut reader = tokio::io::BufReader::new(input);
        read_frame(&mut reader, limit).await
    }

    #[tokio::test]
    async fn frames_round_trip_and_headers_are_lenient() {
        let mut out = Vec::new();
        write_frame(&mut out, b"{\"a\":1}").await.unwrap();
        assert_eq!(out, b"Content-Length: 7\r\n\r\n{\"a\":1}");
        let mut reader = tokio::io::BufReader::new(
            &b"content-length: 2\r\nContent-Type: x\r\n\r\n{}Content-Length: 1\n\n1"[..],
        );
        assert_eq!(read_frame(&mut reader, 10).await.unwrap(), b"{}");
        assert_eq!(read_frame(&mut reader, 10).await.unwrap(), b"1");
        assert!(matches!(
            read_frame(&mut reader, 10).await,
            Err(FrameError::Closed)
        ));
    }

    #[tokio::test]
    async fn bad_frames_are_errors_that_say_why() {
        let cases: [(&[u8], &str); 6] = [
            (b"garbage\r\n\r\n", "without a colon"),
            (b"X-Other: 1\r\n\r\n{}", "no Content-Length"),
            (b"Content-Length: -4\r\n\r\n", "Content-Length \"-4\""),
            (b"Content-Length: 100\r\n\r\n{}", "ended inside a message"),
            (b"Content-Length: 2\r\n", "ended inside a header"),
            (
                b"Content-Length: 104857600\r\n\r\n",
                "100 MiB (over the 1 KiB cap)",
            ),
        ];
        for (input, expected) in cases {
            let error = read(input, 1024).await.unwrap_err().to_string();
            assert!(error.contains(expected), "{input:?}: {error}");
        }
        let endless = vec![b'a'; 20_000];
        let error = read(&endless, 1024).await.unwrap_err().to_string();
        assert!(error.contains("header block over 8 KiB"), "{error}");
    }
}
