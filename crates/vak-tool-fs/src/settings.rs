//! [`FsSettings`]: the limits of the file tools, the `[fs]` section of `.vak/config.toml`.

use serde::{Deserialize, Serialize};

/// `[fs]` of `.vak/config.toml`: how much the file tools gather before they stop.
///
/// These bound memory and work inside a tool; how much of a result a model is *shown* is decided
/// elsewhere (the `vak-window` crate). Every field is optional in the file; a missing one keeps
/// its default. The tools build their descriptions from these values, so the numbers the model
/// reads are the ones in force.
///
/// ```
/// let mut settings = vak_tool_fs::FsSettings::default();
/// settings.read_bytes = 64 * 1024;
/// let mut registry = vak_tool_core::Registry::new();
/// vak_tool_fs::register(&mut registry, &settings);
/// assert!(registry.spec("read").unwrap().description.contains("64 KiB"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct FsSettings {
    /// `read`: the most text one page returns, in bytes, line numbers included (default
    /// 262144, 256 KiB).
    pub read_bytes: usize,
    /// `read`: the largest image file read, in bytes (default 20971520, 20 MiB). A larger one is
    /// refused; a smaller one too large to send is scaled down (see `image_max_side` and
    /// `image_max_bytes`).
    pub image_bytes: u64,
    /// `read`: the longest side of an image sent to the model, in pixels (default 1568, what
    /// model APIs take without scaling it themselves). A larger image is scaled down.
    pub image_max_side: u32,
    /// `read`: the most base64 text one image block may take, in bytes (default 4194304, 4 MiB,
    /// under the 5 MB a model API takes per image). A larger image is scaled down or re-encoded.
    pub image_max_bytes: usize,
    /// `read`: the most memory a decoded image may take, in bytes (default 268435456, 256 MiB);
    /// an image whose pixels need more is refused before it is decoded.
    pub image_decode_bytes: u64,
    /// `read`: the largest PDF file read, in bytes (default 67108864, 64 MiB).
    pub pdf_bytes: u64,
    /// `read`: the most any one stream of a PDF may decompress to, in bytes (default 67108864,
    /// 64 MiB); a larger one (a "deflate bomb") is an error.
    pub pdf_stream_bytes: usize,
    /// `read`: how long the text extraction of a PDF may take, in milliseconds (default 30000).
    pub pdf_deadline_ms: u64,
    /// `read`: the largest Jupyter notebook shown as cells, in bytes (default 67108864, 64 MiB);
    /// a larger one is shown as its JSON text.
    pub notebook_bytes: u64,
    /// `write`: the largest content accepted, in bytes (default 16777216, 16 MiB).
    pub write_bytes: usize,
    /// `edit`: the largest file edited, in bytes (default 536870912, 512 MiB).
    pub edit_file_bytes: u64,
    /// `glob`: the most paths listed (default 1000).
    pub glob_results: usize,
    /// `grep`: the longest matching line shown whole, in characters (default 500); a longer one
    /// is shown as a window of this many characters around its first match.
    pub grep_line_chars: usize,
}

impl Default for FsSettings {
    fn default() -> Self {
        Self {
            read_bytes: 256 * 1024,
            image_bytes: 20 * 1024 * 1024,
            image_max_side: 1568,
            image_max_bytes: 4 * 1024 * 1024,
            image_decode_bytes: 256 * 1024 * 1024,
            pdf_bytes: 64 * 1024 * 1024,
            pdf_stream_bytes: 64 * 1024 * 1024,
            pdf_deadline_ms: 30_000,
            notebook_bytes: 64 * 1024 * 1024,
            write_bytes: 16 * 1024 * 1024,
            edit_file_bytes: 512 * 1024 * 1024,
            glob_results: 1000,
            grep_line_chars: 500,
        }
    }
}

#[cfg(test)]
mod tests {
    use vak_tool_core::Registry;

    use super::*;

    fn descriptions(settings: &FsSettings) -> Vec<(String, String)> {
        let mut registry = Registry::new();
        crate::register(&mut registry, settings);
        registry
            .specs()
            .into_iter()
            .map(|spec| (spec.name.clone(), spec.description.clone()))
            .collect()
    }

    fn description(settings: &FsSettings, tool: &str) -> String {
        descriptions(settings)
            .into_iter()
            .find(|(name, _)| name == tool)
            .map(|(_, text)| text)
            .unwrap()
    }

    #[test]
    fn the_defaults_are_in_the_descriptions() {
        let settings = FsSettings::default();
        for (tool, want) in [
            ("read", "a page also stops at 256 KiB of text"),
            ("read", "files up to 20 MiB"),
            ("read", "larger than 1,568 px on a side or 4 MiB of base64"),
            ("read", "PDF files (up to 64 MiB, 30 s of work)"),
            ("write", "content over 16 MiB"),
            ("edit", "Files over 512 MiB"),
            ("glob", "at most 1,000 paths"),
            ("grep", "A line longer than 500 characters"),
        ] {
            let text = description(&settings, tool);
            assert!(text.contains(want), "{tool}: {want:?} not in {text}");
        }
    }

    #[test]
    fn a_changed_limit_shows_in_the_description() {
        let settings = FsSettings {
            read_bytes: 10 * 1024,
            image_bytes: 3 * 1024 * 1024,
            image_max_side: 800,
            image_max_bytes: 1024 * 1024,
            image_decode_bytes: 1024,
            pdf_bytes: 1024 * 1024,
            pdf_stream_bytes: 1024,
            pdf_deadline_ms: 1500,
            notebook_bytes: 2048,
            write_bytes: 2048,
            edit_file_bytes: 64 * 1024 * 1024,
            glob_results: 25_000,
            grep_line_chars: 120,
        };
        for (tool, want, stale) in [
            ("read", "a page also stops at 10 KiB of text", "256 KiB"),
            ("read", "files up to 3 MiB", "20 MiB"),
            (
                "read",
                "larger than 800 px on a side or 1 MiB of base64",
                "1,568",
            ),
            ("write", "content over 2 KiB", "16 MiB"),
            ("edit", "Files over 64 MiB", "512"),
            ("glob", "at most 25,000 paths", "1,000"),
            ("grep", "A line longer than 120 characters", "500"),
        ] {
            let text = description(&settings, tool);
            assert!(text.contains(want), "{tool}: {want:?} not in {text}");
            assert!(!text.contains(stale), "{tool}: stale {stale:?} in {text}");
        }
    }

    #[test]
    fn the_section_parses_with_defaults_and_refuses_unknown_keys() {
        let settings: FsSettings = serde_json::from_str(r#"{"glob_results": 5}"#).unwrap();
        assert_eq!(settings.glob_results, 5);
        assert_eq!(settings.read_bytes, FsSettings::default().read_bytes);
        let error = serde_json::from_str::<FsSettings>(r#"{"read_byts": 5}"#).unwrap_err();
        assert!(error.to_string().contains("read_byts"), "{error}");
    }
}
