//! A Jupyter notebook as `read` shows it: each cell numbered, with its type, id and source,
//! then its outputs (text, and images as image blocks, checked and fitted like image files).
//!
//! The view is text with line numbers like any file, so `offset` and `limit` page through a
//! long notebook; the images sent are those whose output lines are on the page shown.

use std::fmt::Write as _;

#[cfg(feature = "image")]
use base64::Engine as _;
use vak_tool_core::{Content, human};

#[cfg(feature = "image")]
use super::image::{FitLimits, prepare, sent_note};
#[cfg(feature = "image")]
use crate::file_kind::image_kind;
use crate::notebook::Notebook;

/// The most images one read of a notebook sends.
#[cfg(feature = "image")]
pub(super) const MAX_IMAGES: usize = 8;

/// The notebook's text view, and each image output with the line (1-based) of its marker.
pub(super) fn view(notebook: &Notebook) -> (String, Vec<(u64, String, String)>) {
    let mut text = String::new();
    let mut images = Vec::new();
    let mut line = 1u64;
    // Adds `part` as whole lines and counts them.
    fn push(text: &mut String, line: &mut u64, part: &str) {
        text.push_str(part);
        if !part.ends_with('\n') {
            text.push('\n');
        }
        *line += part.matches('\n').count() as u64 + u64::from(!part.ends_with('\n'));
    }
    let language = notebook
        .language
        .as_deref()
        .map(|language| format!(", {language}"))
        .unwrap_or_default();
    push(
        &mut text,
        &mut line,
        &format!(
            "[Jupyter notebook, {}{language}; `edit` changes a cell's source when given the \
             cell's number or id as `cell`]",
            human::count(notebook.cells.len() as u64, "cell", "cells")
        ),
    );
    for (index, cell) in notebook.cells.iter().enumerate() {
        let number = index + 1;
        let id = cell
            .id
            .as_deref()
            .map(|id| format!(" id={id}"))
            .unwrap_or_default();
        let count = cell
            .execution_count
            .map(|count| format!(" execution_count={count}"))
            .unwrap_or_default();
        push(
            &mut text,
            &mut line,
            &format!("--- cell {number} [{}]{id}{count} ---", cell.kind),
        );
        if cell.source.is_empty() {
            push(&mut text, &mut line, "[empty]");
        } else {
            push(&mut text, &mut line, &cell.source);
        }
        for (output_index, output) in cell.outputs.iter().enumerate() {
            let mut what = output.label.clone();
            for (mime, _) in &output.images {
                let _ = write!(what, ", {mime} (sent as an image)");
            }
            for mime in &output.other {
                let _ = write!(what, ", {mime} (not shown)");
            }
            let marker_line = line;
            push(
                &mut text,
                &mut line,
                &format!("--- output {number}.{} [{what}] ---", output_index + 1),
            );
            for (_, data) in &output.images {
                images.push((
                    marker_line,
                    format!("output {number}.{}", output_index + 1),
                    data.clone(),
                ));
            }
            if let Some(body) = &output.text
                && !body.is_empty()
            {
                push(&mut text, &mut line, body);
            }
        }
    }
    (text, images)
}

/// Without the `image` feature: one line saying how many image outputs on lines
/// `first..=last` this build cannot send.
#[cfg(not(feature = "image"))]
pub(super) fn images_not_built(
    images: &[(u64, String, String)],
    first: u64,
    last: u64,
) -> Option<Content> {
    let on_page = images
        .iter()
        .filter(|(line, _, _)| (first..=last).contains(line))
        .count();
    (on_page > 0).then(|| {
        Content::text(format!(
            "[{} on these lines not sent: this build of the tools was compiled without image \
             support (the `image` feature of vak-tool-fs is off)]",
            human::count(on_page as u64, "image output is", "image outputs are")
        ))
    })
}

/// The image blocks of the outputs whose marker is on lines `first..=last`: each checked and
/// fitted (a damaged one is a line of text instead), at most [`MAX_IMAGES`].
#[cfg(feature = "image")]
pub(super) fn image_blocks(
    images: &[(u64, String, String)],
    first: u64,
    last: u64,
    limits: FitLimits,
) -> Vec<Content> {
    let mut blocks = Vec::new();
    let on_page: Vec<_> = images
        .iter()
        .filter(|(line, _, _)| (first..=last).contains(line))
        .collect();
    for (sent, (_, name, data)) in on_page.iter().enumerate() {
        if sent == MAX_IMAGES {
            blocks.push(Content::text(format!(
                "[{} more image outputs on these lines are not sent (at most {MAX_IMAGES} per \
                 read): read fewer lines at a time to see them]",
                on_page.len() - MAX_IMAGES
            )));
            break;
        }
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
            blocks.push(Content::text(format!(
                "[{name}: the image is not valid base64, so it is not sent]"
            )));
            continue;
        };
        let Some(kind) = image_kind(&bytes) else {
            blocks.push(Content::text(format!(
                "[{name}: the data is not a PNG, JPEG, GIF or WebP image, so it is not sent]"
            )));
            continue;
        };
        match prepare(&bytes, kind, limits) {
            Ok(fitted) => {
                let (width, height) = fitted.original;
                blocks.push(Content::text(format!(
                    "{name}: {} image, {width}×{height} pixels, {}{}.",
                    kind.name(),
                    human::size(bytes.len() as u64),
                    sent_note(&fitted, limits)
                )));
                blocks.push(Content::image(fitted.media_type, fitted.data));
            }
            Err(problem) => blocks.push(Content::text(format!(
                "[{name}: the {} image is not sent: {}]",
                kind.name(),
                super::error::problem_words(&problem)
            ))),
        }
    }
    blocks
}
