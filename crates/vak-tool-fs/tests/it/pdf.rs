//! `read` of PDF files: text page by page, a `pages` range, page markers and the page count,
//! pages without text said so; and a set of hostile PDFs, made here, none of which may crash,
//! hang or flood the tool.

use std::fs;
use std::io::Write as _;

use serde_json::json;
use vak_test_support::pdf::{document, pdf, stream};

use crate::read::{Workspace, hash_line};

fn deflated(content: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(content).unwrap();
    let data = encoder.finish().unwrap();
    let mut out = format!(
        "<< /Length {} /Filter /FlateDecode >>\nstream\n",
        data.len()
    )
    .into_bytes();
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\nendstream");
    out
}

#[tokio::test]
async fn a_pdf_reads_as_text_page_by_page() {
    let ws = Workspace::new();
    let bytes = document(&[
        Some("Hello from page one"),
        None,
        Some("Page three, line one\nline two"),
    ]);
    fs::write(ws.path("doc.pdf"), &bytes).unwrap();
    let out = ws.call("read", json!({"path": "doc.pdf"})).await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert_eq!(
        text,
        format!(
            "     1\t[PDF document, 3 pages; the text of pages 1–3 follows]\n\
             \x20    2\t--- page 1 of 3 ---\n\
             \x20    3\tHello from page one\n\
             \x20    4\t--- page 2 of 3 ---\n\
             \x20    5\t[no text on page 2: it may be a scanned image or a drawing; to look at \
             it, render it with `bash` (pdftoppm -f 2 -l 2 -png FILE page) and read the PNG]\n\
             \x20    6\t--- page 3 of 3 ---\n\
             \x20    7\tPage three, line one\n\
             \x20    8\tline two\n{}",
            hash_line(&bytes)
        )
    );
}

#[tokio::test]
async fn a_page_range_reads_those_pages() {
    let ws = Workspace::new();
    let texts: Vec<String> = (1..=6).map(|n| format!("text of page {n}")).collect();
    let texts: Vec<Option<&str>> = texts.iter().map(|text| Some(text.as_str())).collect();
    let bytes = document(&texts);
    fs::write(ws.path("doc.pdf"), &bytes).unwrap();
    for (pages, want) in [
        (
            json!("3-4"),
            "     1\t[PDF document, 6 pages; the text of pages 3–4 follows]\n\
             \x20    2\t--- page 3 of 6 ---\n     3\ttext of page 3\n\
             \x20    4\t--- page 4 of 6 ---\n     5\ttext of page 4\n",
        ),
        (
            json!(6),
            "     1\t[PDF document, 6 pages; the text of page 6 follows]\n\
             \x20    2\t--- page 6 of 6 ---\n     3\ttext of page 6\n",
        ),
        (
            json!("5-"),
            "     1\t[PDF document, 6 pages; the text of pages 5–6 follows]\n\
             \x20    2\t--- page 5 of 6 ---\n     3\ttext of page 5\n\
             \x20    4\t--- page 6 of 6 ---\n     5\ttext of page 6\n",
        ),
    ] {
        let out = ws
            .call("read", json!({"path": "doc.pdf", "pages": pages}))
            .await;
        assert_eq!(
            out.text_content(),
            format!("{want}{}", hash_line(&bytes)),
            "{pages}"
        );
    }
    // A range past the end, a range that does not parse, `pages` on a text file.
    let out = ws
        .call("read", json!({"path": "doc.pdf", "pages": "9-12"}))
        .await;
    assert!(out.is_error);
    assert_eq!(
        out.text_content(),
        format!(
            "`doc.pdf` is a PDF ({}), but the document has 6 pages, so pages=9-12 names none of \
             them; give a range from 1 to 6. Call read again with such a range.",
            vak_tool_core::human::size(bytes.len() as u64)
        )
    );
    let out = ws
        .call("read", json!({"path": "doc.pdf", "pages": "4-2"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.text_content()
            .starts_with("pages=\"4-2\" is not a page range")
    );
    fs::write(ws.path("t.txt"), "text\n").unwrap();
    let out = ws
        .call("read", json!({"path": "t.txt", "pages": "1"}))
        .await;
    assert_eq!(
        out.text_content(),
        "`t.txt` is not a PDF, so `pages` does not apply: leave it out and use `offset` and \
         `limit` to page through the lines."
    );
}

#[tokio::test]
async fn without_a_range_pages_stop_when_the_text_fills_a_page() {
    let mut ws = Workspace::new();
    // 256 bytes are kept for the header and the last note; each page renders as 83 bytes.
    ws.settings.read_bytes = 256 + 3 * 83;
    let texts: Vec<String> = (1..=5)
        .map(|n| format!("page {n} {}", "x".repeat(40)))
        .collect();
    let texts: Vec<Option<&str>> = texts.iter().map(|text| Some(text.as_str())).collect();
    fs::write(ws.path("doc.pdf"), document(&texts)).unwrap();
    let out = ws.call("read", json!({"path": "doc.pdf"})).await;
    let text = out.text_content();
    assert!(
        text.contains("[text of pages 1–3 of 5 shown; continue with pages=\"4-5\"]"),
        "{text}"
    );
    assert!(!text.contains("continue with offset"), "{text}");
}

/// Hostile PDFs: each made here, each answered with text or an error, never a crash (the test
/// process would abort), never the deadline (which is set far beyond what any case needs, so
/// that reaching it means the extraction did not end by itself).
#[tokio::test]
async fn hostile_pdfs_are_answered_without_crash_or_hang() {
    let catalog = b"<< /Type /Catalog /Pages 2 0 R >>".to_vec();
    let page = |contents: &str| {
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 \
             R >> >> /Contents {contents} >>"
        )
        .into_bytes()
    };
    let pages_one = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec();
    let font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec();
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let dict_nested = |depth: usize| format!("{}{}", "<< /A ".repeat(depth), ">>".repeat(depth));

    let mut cases: Vec<(&str, &str, Vec<u8>)> = Vec::new();
    // Nesting: arrays and dictionaries 100,000 deep, in the catalog and in a content stream.
    cases.push((
        "deep arrays in an object",
        "[PDF document with no pages]",
        pdf(&[
            format!(
                "<< /Type /Catalog /Pages 2 0 R /Deep {} >>",
                nested(100_000)
            )
            .into_bytes(),
            pages_one.clone(),
            page("5 0 R"),
            font.clone(),
            stream(b"BT /F1 12 Tf (ok) Tj ET"),
        ]),
    ));
    cases.push((
        "deep dictionaries in an object",
        "[PDF document with no pages]",
        pdf(&[
            catalog.clone(),
            format!(
                "<< /Type /Pages /Kids [3 0 R] /Count 1 /X {} >>",
                dict_nested(50_000)
            )
            .into_bytes(),
            page("5 0 R"),
            font.clone(),
            stream(b"BT /F1 12 Tf (ok) Tj ET"),
        ]),
    ));
    cases.push((
        "deep arrays in a content stream",
        "[the text of page 1 could not be extracted: ",
        pdf(&[
            catalog.clone(),
            pages_one.clone(),
            page("5 0 R"),
            font.clone(),
            stream(format!("BT /F1 12 Tf {} TJ ET", nested(100_000)).as_bytes()),
        ]),
    ));
    // A page tree 3,000 levels deep.
    let depth = 3000;
    let mut objects = vec![catalog.clone()];
    for level in 0..depth {
        objects.push(format!("<< /Type /Pages /Kids [{} 0 R] /Count 1 >>", level + 3).into_bytes());
    }
    objects.push(
        format!(
            "<< /Type /Page /Parent {} 0 R /Contents {} 0 R >>",
            depth + 1,
            depth + 3
        )
        .into_bytes(),
    );
    objects.push(stream(b"BT (deep) Tj ET"));
    cases.push((
        "a page tree 3,000 deep",
        "[PDF document, 1 page; ",
        pdf(&objects),
    ));
    // Reference cycles: the page tree, a content reference, the resources.
    cases.push((
        "a cycle in Kids",
        "[PDF document with no pages]",
        pdf(&[
            catalog.clone(),
            b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>".to_vec(),
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>".to_vec(),
        ]),
    ));
    cases.push((
        "a content reference to itself",
        "[no text on page 1: ",
        pdf(&[
            catalog.clone(),
            pages_one.clone(),
            page("5 0 R"),
            font.clone(),
            b"5 0 R".to_vec(),
        ]),
    ));
    cases.push((
        "resources that refer to themselves",
        "[no text on page 1: ",
        pdf(&[
            catalog.clone(),
            pages_one.clone(),
            b"<< /Type /Page /Parent 2 0 R /Resources 4 0 R /Contents 5 0 R >>".to_vec(),
            b"<< /Font 4 0 R /XObject 4 0 R >>".to_vec(),
            stream(b"BT /F1 12 Tf (x) Tj ET"),
        ]),
    ));
    // Huge streams: a deflate bomb (16 MiB of spaces, 16 KiB compressed) over the 1 MiB
    // per-stream limit set below, and a length that claims a gigabyte.
    cases.push((
        "a deflate bomb",
        "couldn't decompress stream",
        pdf(&[
            catalog.clone(),
            pages_one.clone(),
            page("5 0 R"),
            font.clone(),
            deflated(&vec![b' '; 16 * 1024 * 1024]),
        ]),
    ));
    cases.push((
        "a length of a gigabyte",
        "[PDF document, 1 page; ",
        pdf(&[
            catalog.clone(),
            pages_one.clone(),
            page("5 0 R"),
            font.clone(),
            b"<< /Length 1073741824 >>\nstream\nBT (x) Tj ET\nendstream".to_vec(),
        ]),
    ));
    // Broken structure: cut in half, garbage after the header, a /Prev loop in the trailer.
    let good = document(&[Some("fine"), Some("also fine")]);
    cases.push(("cut in half", "fine", good[..good.len() / 2].to_vec()));
    let mut garbage = b"%PDF-1.7\n".to_vec();
    let mut seed = 7u32;
    for _ in 0..20_000 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        garbage.push((seed >> 16) as u8);
    }
    cases.push((
        "garbage after the header",
        "could not be parsed as a PDF",
        garbage,
    ));
    let mut looped = good.clone();
    let start = String::from_utf8_lossy(&looped)
        .rsplit("startxref\n")
        .next()
        .and_then(|rest| rest.lines().next().map(str::to_owned))
        .unwrap();
    let text = String::from_utf8_lossy(&looped).replace(
        "trailer\n<< /Size",
        &format!("trailer\n<< /Prev {start} /Size"),
    );
    looped = text.into_bytes();
    cases.push(("a /Prev loop", "also fine", looped));
    // Ten thousand pages without text: as many as fill a page of output are read.
    let many: Vec<Option<&str>> = vec![None; 10_000];
    cases.push((
        "ten thousand pages",
        "of 10,000 shown; continue with pages=",
        document(&many),
    ));

    let mut ws = Workspace::new();
    ws.settings.pdf_stream_bytes = 1024 * 1024;
    ws.settings.pdf_deadline_ms = 120_000;
    let mut answered = 0;
    for (name, want, bytes) in &cases {
        fs::write(ws.path("h.pdf"), bytes).unwrap();
        let out = ws.call("read", json!({"path": "h.pdf"})).await;
        let text = out.text_content();
        assert!(!text.contains("took longer than"), "{name}: {text}");
        assert!(!text.contains("parser failed"), "{name}: {text}");
        assert!(text.len() <= 400 * 1024, "{name}: {} bytes", text.len());
        if out.is_error {
            assert!(text.starts_with("`h.pdf` is a PDF ("), "{name}: {text}");
        }
        assert!(
            text.contains(want),
            "{name}: {want:?} not in {}",
            &text[text.len().saturating_sub(600)..]
        );
        answered += 1;
    }
    assert_eq!(answered, cases.len());
    assert_eq!(cases.len(), 13);
}
