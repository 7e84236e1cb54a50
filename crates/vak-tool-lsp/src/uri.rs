//! File paths as `file://` URIs and back.

use std::path::{Path, PathBuf};

/// The `file://` URI of an absolute path.
pub(crate) fn of(path: &Path) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", path.display()))
}

/// The path of a `file://` URI.
pub(crate) fn to_path(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri).ok()?.to_file_path().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_with_escapes() {
        let path = Path::new("/tmp/a b/ü#x.py");
        let uri = of(path);
        assert_eq!(uri, "file:///tmp/a%20b/%C3%BC%23x.py");
        assert_eq!(to_path(&uri).as_deref(), Some(path));
        assert_eq!(to_path("http://x/y"), None);
    }
}
