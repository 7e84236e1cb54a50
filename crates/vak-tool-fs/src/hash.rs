//! The short content hash that `read`, `write` and `edit` print and `edit` checks with
//! `expect_hash`, and the line that carries it at the end of their results.

use sha2::{Digest, Sha256};

/// The first 16 hex digits of the SHA-256 of `bytes`.
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A streaming version of [`content_hash`] for files read in pieces.
#[derive(Default)]
pub(crate) struct ContentHasher(Sha256);

impl ContentHasher {
    /// Feeds more bytes.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The hash of everything fed.
    pub(crate) fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .take(8)
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// The line that ends a result and carries the hash `edit` checks.
pub(crate) fn hash_line(hash: &str) -> String {
    format!("[hash of the whole file: {hash} (give it to edit as expect_hash)]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_value_and_streaming_agree() {
        // sha256("abc") = ba7816bf8f01cfea…
        assert_eq!(content_hash(b"abc"), "ba7816bf8f01cfea");
        let mut hasher = ContentHasher::default();
        hasher.update(b"a");
        hasher.update(b"bc");
        assert_eq!(hasher.finish(), "ba7816bf8f01cfea");
    }
}
