//! The optional formats (`image`, `pdf`, `notebook` features): with one on, `read` and `edit`
//! offer it; with it off, the schema and the description do not mention it and such a file is
//! refused (image, PDF) or read as the text it is (notebook), the refusal naming the feature.
//!
//! CI runs this module in both states: with every feature (the workspace run) and with none
//! (`cargo xtask ci`'s `fs without formats` step).

use serde_json::json;
use vak_tool_core::Registry;
use vak_tool_fs::FsSettings;

use crate::read::Workspace;

/// A 1×1 PNG.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\0\x05\0\x01\xff\x89\x99=\x1d\0\0\0\0IEND\xaeB`\x82";

/// A notebook of one code cell.
const NOTEBOOK: &str = r#"{"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": ["print(1)\n"], "outputs": [], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#;

fn spec(tool: &str) -> (String, serde_json::Value) {
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, &FsSettings::default());
    let spec = registry.spec(tool).unwrap();
    (spec.description.clone(), spec.input_schema.clone())
}

#[tokio::test]
async fn images_are_read_only_with_the_image_feature() {
    let workspace = Workspace::new();
    std::fs::write(workspace.path("dot.png"), PNG).unwrap();
    let out = workspace.call("read", json!({"path": "dot.png"})).await;
    let (description, _) = spec("read");
    if cfg!(feature = "image") {
        assert!(!out.is_error, "{out:?}");
        assert!(description.contains("PNG, JPEG, GIF"), "{description}");
    } else {
        assert!(out.is_error, "{out:?}");
        let text = out.text_content();
        assert!(text.contains("`dot.png` is a PNG image (70 B)"), "{text}");
        assert!(
            text.contains("the `image` feature of vak-tool-fs is off"),
            "{text}"
        );
        assert!(!description.contains("PNG"), "{description}");
    }
}

#[tokio::test]
async fn pdfs_are_read_only_with_the_pdf_feature() {
    let workspace = Workspace::new();
    std::fs::write(workspace.path("doc.pdf"), b"%PDF-1.4\n%\xe2\xe3\n1 0 obj\n").unwrap();
    let out = workspace.call("read", json!({"path": "doc.pdf"})).await;
    let (description, schema) = spec("read");
    let text = out.text_content();
    assert!(out.is_error, "{out:?}");
    if cfg!(feature = "pdf") {
        assert!(text.contains("could not be parsed as a PDF"), "{text}");
        assert!(schema["properties"]["pages"].is_object(), "{schema}");
        assert!(description.contains("PDF files"), "{description}");
    } else {
        assert!(text.contains("`doc.pdf` is a PDF document"), "{text}");
        assert!(
            text.contains("the `pdf` feature of vak-tool-fs is off"),
            "{text}"
        );
        assert!(text.contains("pdftotext"), "{text}");
        assert!(schema["properties"].get("pages").is_none(), "{schema}");
        assert!(!description.contains("PDF"), "{description}");
        // Unknown, as any argument the schema does not list.
        let out = workspace
            .call("read", json!({"path": "doc.pdf", "pages": "1"}))
            .await;
        assert!(out.text_content().contains("`pages`"), "{out:?}");
    }
}

#[tokio::test]
async fn notebooks_are_cells_only_with_the_notebook_feature() {
    let workspace = Workspace::new();
    std::fs::write(workspace.path("n.ipynb"), NOTEBOOK).unwrap();
    let out = workspace.call("read", json!({"path": "n.ipynb"})).await;
    assert!(!out.is_error, "{out:?}");
    let text = out.text_content();
    let (read_description, _) = spec("read");
    let (edit_description, edit_schema) = spec("edit");
    if cfg!(feature = "notebook") {
        assert!(text.contains("[Jupyter notebook, 1 cell"), "{text}");
        assert!(
            edit_schema["properties"]["cell"].is_object(),
            "{edit_schema}"
        );
        assert!(edit_description.contains("`cell`"), "{edit_description}");
        assert!(read_description.contains("Jupyter"), "{read_description}");
    } else {
        // The JSON text itself, numbered like any file.
        assert!(text.starts_with("     1\t{\"cells\": ["), "{text}");
        assert!(
            edit_schema["properties"].get("cell").is_none(),
            "{edit_schema}"
        );
        assert!(!edit_description.contains("notebook"), "{edit_description}");
        assert!(!read_description.contains("Jupyter"), "{read_description}");
        let out = workspace
            .call(
                "edit",
                json!({"path": "n.ipynb", "cell": "1", "edits": [{"old_text": "print(1)", "new_text": "print(2)"}]}),
            )
            .await;
        assert!(
            out.is_error && out.text_content().contains("`cell`"),
            "{out:?}"
        );
    }
}
