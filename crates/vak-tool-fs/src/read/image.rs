//! An image file read whole and handed to the model as an image block.

use std::fs;
use std::io::Read;

use base64::Engine as _;
use vak_tool_core::{Content, ToolOutput, human};

use super::Request;
use super::error::ReadError;
use crate::file_kind::ImageKind;

/// Reads an image whole and returns it as an image block plus a line describing it.
pub(super) fn read_image(
    request: &Request,
    kind: ImageKind,
    start: Vec<u8>,
    mut file: fs::File,
    bytes: u64,
) -> Result<ToolOutput, ReadError> {
    let limit = request.image_bytes;
    if bytes > limit {
        return Err(ReadError::ImageTooLarge {
            path: request.shown.clone(),
            kind,
            pixels: imagesize::blob_size(&start)
                .ok()
                .map(|size| (size.width, size.height)),
            bytes,
            limit,
        });
    }
    let mut data = start;
    // Read at most one byte past the limit, in case the file grew since it was measured.
    (&mut file)
        .take((limit + 1).saturating_sub(data.len() as u64))
        .read_to_end(&mut data)
        .map_err(|source| ReadError::Io {
            path: request.shown.clone(),
            source,
        })?;
    let bytes = data.len() as u64;
    if bytes > limit {
        return Err(ReadError::ImageTooLarge {
            path: request.shown.clone(),
            kind,
            pixels: None,
            bytes,
            limit,
        });
    }
    let Ok(pixels) = imagesize::blob_size(&data) else {
        return Err(ReadError::DamagedImage {
            path: request.shown.clone(),
            kind,
            bytes,
        });
    };
    let text = format!(
        "`{}`: {} image, {}×{} pixels, {}.",
        request.shown,
        kind.name(),
        pixels.width,
        pixels.height,
        human::size(bytes)
    );
    Ok(ToolOutput::from_content(
        vec![
            Content::text(text),
            Content::image(
                kind.media_type(),
                base64::engine::general_purpose::STANDARD.encode(&data),
            ),
        ],
        false,
    ))
}
