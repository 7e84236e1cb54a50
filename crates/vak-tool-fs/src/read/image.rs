//! An image file handed to the model as an image block: decoded whole first (a damaged image is
//! a text error, never a block a model API would reject), then fitted to the size limits.
//!
//! [`check`] decodes strictly; [`fit`] scales down and re-encodes what is too large.

mod check;
mod fit;

use std::fs;
use std::io::Read;

use vak_tool_core::{Content, ToolOutput, human};

pub(crate) use self::check::Problem;
pub(crate) use self::fit::{FitLimits, Fitted, orientation_words};
use super::Request;
use super::error::ReadError;
use crate::file_kind::ImageKind;

/// Checks an image and fits it to `limits`.
pub(crate) fn prepare(bytes: &[u8], kind: ImageKind, limits: FitLimits) -> Result<Fitted, Problem> {
    let checked = check::check(bytes, kind, limits.decode_bytes)?;
    fit::fit(bytes, kind, checked, limits)
}

/// The pixel size a header gives, if it parses.
pub(crate) fn header_size(bytes: &[u8], kind: ImageKind) -> Option<(u32, u32)> {
    check::header_size(bytes, kind).ok()
}

/// What was sent, after the file's own description: `; sent scaled down to …` or nothing.
pub(crate) fn sent_note(fitted: &Fitted, limits: FitLimits) -> String {
    let Some(changed) = &fitted.changed else {
        return String::new();
    };
    let (width, height) = changed.size;
    let what = if changed.first_frame {
        "it is animated: its first frame is sent"
    } else {
        "sent"
    };
    let upright_size = match changed.turned {
        Some(turned) if turned.to_exif() >= 5 => (fitted.original.1, fitted.original.0),
        _ => fitted.original,
    };
    let scaled = if changed.size == upright_size {
        String::new()
    } else {
        " scaled down".to_owned()
    };
    let mut before = String::new();
    if let Some(turned) = changed.turned {
        before.push_str(&format!(
            "; its EXIF orientation ({}) says it is seen {}: it was turned upright before \
             anything else, and what is sent has no orientation tag",
            turned.to_exif(),
            orientation_words(turned)
        ));
    }
    if let Some(reason) = changed.converted {
        before.push_str(&format!("; re-encoded since {reason}"));
    }
    format!(
        "{before}; {what}{scaled} as {width}×{height} pixels, {format}, {size} (images are \
         fitted to {side} px on the long side and {limit} of base64)",
        format = changed.format,
        size = human::size(changed.bytes),
        side = human::grouped(u64::from(limits.max_side)),
        limit = human::size(limits.max_base64 as u64),
    )
}

/// Reads an image whole and returns a line describing it and the image block.
pub(super) fn read_image(
    request: &Request,
    kind: ImageKind,
    start: Vec<u8>,
    mut file: fs::File,
    bytes: u64,
) -> Result<ToolOutput, ReadError> {
    let limit = request.image_file_bytes;
    let too_large = |bytes, pixels| ReadError::ImageTooLarge {
        path: request.shown.clone(),
        kind,
        pixels,
        bytes,
        limit,
    };
    if bytes > limit {
        return Err(too_large(bytes, header_size(&start, kind)));
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
        return Err(too_large(bytes, None));
    }
    let fitted = prepare(&data, kind, request.image).map_err(|problem| ReadError::Image {
        path: request.shown.clone(),
        kind,
        bytes,
        problem,
    })?;
    let (width, height) = fitted.original;
    let text = format!(
        "`{}`: {} image, {width}×{height} pixels, {}{}.",
        request.shown,
        kind.name(),
        human::size(bytes),
        sent_note(&fitted, request.image),
    );
    Ok(ToolOutput::from_content(
        vec![
            Content::text(text),
            Content::image(fitted.media_type, fitted.data),
        ],
        false,
    ))
}
