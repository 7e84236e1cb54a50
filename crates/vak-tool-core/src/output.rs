//! The result of a tool call, shaped the way the Model Context Protocol shapes it.

use serde::{Deserialize, Serialize};

/// One block of a result: text, or an image the model can look at.
///
/// Serialises as MCP does: `{"type":"text","text":…}` and
/// `{"type":"image","mimeType":…,"data":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
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

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image block from its media type and base64 data.
    pub fn image(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Image {
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            Self::Image { .. } => None,
        }
    }
}

/// What a tool call returns: content blocks and whether the call failed.
///
/// A failed call is still a `ToolOutput`: its text says what went wrong and what to try instead.
/// Built with [`ToolOutput::text`], [`ToolOutput::error`] or [`ToolOutput::from_content`], so
/// that fields MCP adds later (structured content, say) are not a breaking change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolOutput {
    /// The blocks of the result, in order.
    pub content: Vec<Content>,
    /// True when the call failed; the text then explains the failure to the model.
    #[serde(default)]
    pub is_error: bool,
    /// The result as data, beside the same text (MCP's `structuredContent`): present on the
    /// successful results of a tool that declares an output schema
    /// ([`ToolSpec::output_schema`](crate::ToolSpec::output_schema)), and valid against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
}

impl ToolOutput {
    /// A successful result holding one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            is_error: false,
            structured: None,
        }
    }

    /// A failed result holding one text block that explains the failure.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            is_error: true,
            structured: None,
        }
    }

    /// A result made of the given blocks.
    pub fn from_content(content: Vec<Content>, is_error: bool) -> Self {
        Self {
            content,
            is_error,
            structured: None,
        }
    }

    /// The same result with this data beside its text (see [`ToolOutput::structured`]).
    #[must_use]
    pub fn with_structured(mut self, data: serde_json::Value) -> Self {
        self.structured = Some(data);
        self
    }

    /// All text blocks joined with newlines (images are left out).
    pub fn text_content(&self) -> String {
        let mut texts = self.content.iter().filter_map(Content::as_text);
        let mut joined = String::from(texts.next().unwrap_or_default());
        for text in texts {
            joined.push('\n');
            joined.push_str(text);
        }
        joined
    }
}
