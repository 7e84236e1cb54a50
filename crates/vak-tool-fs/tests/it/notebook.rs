//! Jupyter notebooks: `read` shows numbered cells with their type, id, source and outputs
//! (image outputs as image blocks); `edit` with `cell` changes one cell's source and leaves every
//! other byte of the file as it was.

use std::fs;

use base64::Engine as _;
use image::ImageFormat;
use serde_json::json;
use vak_tool_core::{Content, human};

use crate::image::{encoded, picture};
use crate::read::{Workspace, hash_line};

/// A notebook as Jupyter writes it (one-space indentation, sources as lists of lines), with a
/// stream output, an error with terminal colours, and an image output of `png` (base64).
fn notebook(png: &str) -> String {
    format!(
        r##"{{
 "cells": [
  {{
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {{}},
   "source": [
    "# Sales\n",
    "A \"quick\" look."
   ]
  }},
  {{
   "cell_type": "code",
   "execution_count": 1,
   "id": "load",
   "metadata": {{}},
   "outputs": [
    {{
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "rows: 3\n"
     ]
    }}
   ],
   "source": [
    "rows = [1, 2, 3]\n",
    "print('rows:', len(rows))"
   ]
  }},
  {{
   "cell_type": "code",
   "execution_count": 2,
   "id": "plot",
   "metadata": {{}},
   "outputs": [
    {{
     "data": {{
      "image/png": "{png}",
      "text/plain": [
       "<Figure size 640x480>"
      ]
     }},
     "metadata": {{}},
     "output_type": "display_data"
    }},
    {{
     "ename": "NameError",
     "evalue": "name 'x' is not defined",
     "output_type": "error",
     "traceback": [
      "\u001b[0;31mNameError\u001b[0m: name 'x' is not defined"
     ]
    }}
   ],
   "source": [
    "plot(rows)"
   ]
  }}
 ],
 "metadata": {{
  "kernelspec": {{
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  }}
 }},
 "nbformat": 4,
 "nbformat_minor": 5
}}
"##
    )
}

fn png_base64() -> (Vec<u8>, String) {
    let png = encoded(&picture(6, 4, false), ImageFormat::Png);
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    (png, data)
}

#[tokio::test]
async fn read_shows_numbered_cells_outputs_and_images() {
    let ws = Workspace::new();
    let (png, data) = png_base64();
    let text = notebook(&data);
    fs::write(ws.path("sales.ipynb"), &text).unwrap();
    let out = ws.call("read", json!({"path": "sales.ipynb"})).await;
    assert!(!out.is_error, "{}", out.text_content());
    let blocks: Vec<_> = out.content.iter().collect();
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    assert_eq!(
        blocks[0].as_text(),
        Some(
            format!(
                "     1\t[Jupyter notebook, 3 cells, python; `edit` changes a cell's source when \
                 given the cell's number or id as `cell`]\n\
                 \x20    2\t--- cell 1 [markdown] id=intro ---\n\
                 \x20    3\t# Sales\n\
                 \x20    4\tA \"quick\" look.\n\
                 \x20    5\t--- cell 2 [code] id=load execution_count=1 ---\n\
                 \x20    6\trows = [1, 2, 3]\n\
                 \x20    7\tprint('rows:', len(rows))\n\
                 \x20    8\t--- output 2.1 [stream stdout] ---\n\
                 \x20    9\trows: 3\n\
                 \x20   10\t--- cell 3 [code] id=plot execution_count=2 ---\n\
                 \x20   11\tplot(rows)\n\
                 \x20   12\t--- output 3.1 [display_data, image/png (sent as an image)] ---\n\
                 \x20   13\t<Figure size 640x480>\n\
                 \x20   14\t--- output 3.2 [error NameError] ---\n\
                 \x20   15\tNameError: name 'x' is not defined\n{}",
                hash_line(text.as_bytes())
            )
            .as_str()
        )
    );
    assert_eq!(
        blocks[1].as_text(),
        Some(
            format!(
                "output 3.1: PNG image, 6×4 pixels, {}.",
                human::size(png.len() as u64)
            )
            .as_str()
        )
    );
    match blocks[2] {
        Content::Image {
            media_type,
            data: sent,
        } => {
            assert_eq!(media_type, "image/png");
            assert_eq!(sent, &data);
        }
        other => panic!("not an image: {other:?}"),
    }
    // A page without the output's lines sends no image.
    let out = ws
        .call("read", json!({"path": "sales.ipynb", "limit": 5}))
        .await;
    assert_eq!(out.content.len(), 1);
}

#[tokio::test]
async fn a_damaged_image_output_is_text_not_an_image() {
    let ws = Workspace::new();
    let (png, _) = png_base64();
    let damaged = base64::engine::general_purpose::STANDARD.encode(&png[..png.len() - 20]);
    fs::write(ws.path("nb.ipynb"), notebook(&damaged)).unwrap();
    let out = ws.call("read", json!({"path": "nb.ipynb"})).await;
    assert_eq!(out.content.len(), 2);
    assert_eq!(
        out.content[1].as_text(),
        Some(
            "[output 3.1: the PNG image is not sent: it is damaged or cut short (the file ends \
             too soon (it is cut short))]"
        )
    );
}

#[tokio::test]
async fn edit_changes_one_cell_by_id_or_number_and_nothing_else() {
    let ws = Workspace::new();
    let (_, data) = png_base64();
    let before = notebook(&data);
    fs::write(ws.path("sales.ipynb"), &before).unwrap();
    let out = ws
        .call(
            "edit",
            json!({
                "path": "sales.ipynb",
                "cell": "load",
                "edits": [{"old_text": "rows = [1, 2, 3]", "new_text": "rows = [1, 2, 3, 4]\nrows.sort()"}]
            }),
        )
        .await;
    let after = before.replace(
        "    \"rows = [1, 2, 3]\\n\",\n",
        "    \"rows = [1, 2, 3, 4]\\n\",\n    \"rows.sort()\\n\",\n",
    );
    assert_ne!(after, before);
    assert_eq!(fs::read_to_string(ws.path("sales.ipynb")).unwrap(), after);
    assert_eq!(
        out.text_content(),
        format!(
            "Edited sales.ipynb cell 2 (code, id load): 1 edit applied.\n\
             edits[0]: matched line 1 (match level: exact).\n\
             Changed lines in the new file: 1-2.\n\
             --- a/sales.ipynb cell 2\n+++ b/sales.ipynb cell 2\n@@ -1,2 +1,3 @@\n\
             -rows = [1, 2, 3]\n+rows = [1, 2, 3, 4]\n+rows.sort()\n print('rows:', len(rows))\n\
             \\ No newline at end of file\n\
             [only this cell's source changed; the rest of the notebook is byte for byte as it \
             was (outputs included: run the cell again to refresh them)]\n{}",
            hash_line(after.as_bytes())
        )
    );
    // By number (an integer or text), a markdown cell with quotes.
    let out = ws
        .call(
            "edit",
            json!({
                "path": "sales.ipynb",
                "cell": 1,
                "edits": [{"old_text": "A \"quick\" look.", "new_text": "A \"slow\" look."}]
            }),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let after = after.replace(r#""A \"quick\" look.""#, r#""A \"slow\" look.""#);
    assert_eq!(fs::read_to_string(ws.path("sales.ipynb")).unwrap(), after);
}

#[tokio::test]
async fn a_cell_that_is_not_there_or_a_file_that_is_not_a_notebook_is_refused() {
    let ws = Workspace::new();
    let (_, data) = png_base64();
    fs::write(ws.path("nb.ipynb"), notebook(&data)).unwrap();
    fs::write(ws.path("plain.txt"), "text\n").unwrap();
    for (path, cell, want) in [
        (
            "nb.ipynb",
            json!(7),
            "cannot edit cell \"7\" of nb.ipynb: the notebook has 3 cells (numbered 1 to 3, as \
             `read` shows them), so there is no cell 7. Nothing was written.",
        ),
        (
            "nb.ipynb",
            json!("nope"),
            "cannot edit cell \"nope\" of nb.ipynb: no cell has the id \"nope\"; give a cell \
             number (1 to 3) or one of the ids `read` shows (intro, load, plot). Nothing was \
             written.",
        ),
        (
            "plain.txt",
            json!(1),
            "cannot edit cell \"1\" of plain.txt: `cell` applies to Jupyter notebooks, and this \
             file is not one (nbformat 4 JSON with a `cells` list). Nothing was written.",
        ),
    ] {
        let out = ws
            .call(
                "edit",
                json!({"path": path, "cell": cell, "edits": [{"old_text": "a", "new_text": "b"}]}),
            )
            .await;
        assert!(out.is_error);
        assert_eq!(out.text_content(), want);
    }
}
