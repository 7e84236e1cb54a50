//! The result of a tool call, shaped the way the Model Context Protocol shapes it.

use serde::{Deserialize, Serialize};

/// One block of a result: text, or an image the model can look at.
///
/// Serialises as MCP does: `{"type":"text","text":…}` and
/// `{"type":"image","mimeType":…,"data":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text for the model to read.
    Text {
        /// The text itself.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its media type, such as `image/png`.
        #[serde(rename = "mimeType")]
        media_type: String,
        /// The image bytes in standard base64.
        data: String,
    },
}

/// What a tool call returns: content blocks and whether the call failed.
///
/// A failed call is still a `ToolOutput`: its text says what went wrong and what to try instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// The blocks of the result, in order.
    pub content: Vec<Content>,
    /// True when the call failed; the text then explains the failure to the model.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result holding one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            is_error: false,
        }
    }

    /// A failed result holding one text block that explains the failure.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            is_error: true,
        }
    }

    /// A result made of the given blocks.
    pub fn from_content(content: Vec<Content>, is_error: bool) -> Self {
        Self { content, is_error }
    }

    /// All text blocks joined with newlines (images are left out).
    pub fn text_content(&self) -> String {
        let mut texts = self.content.iter().filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            Content::Image { .. } => None,
        });
        let mut joined = String::from(texts.next().unwrap_or_default());
        for text in texts {
            joined.push('\n');
            joined.push_str(text);
        }
        joined
    }
}
