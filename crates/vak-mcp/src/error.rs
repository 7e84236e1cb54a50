//! Why a server could not start or serve.

/// Why serving stopped before it began, or could not go on. Its text is one line for a person.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The MCP handshake failed for another reason than the client leaving.
    #[error("MCP initialisation failed: {0}")]
    Initialize(String),
    /// The HTTP server could not be set up (address, token, certificate).
    #[error("{0}")]
    Setup(String),
}
