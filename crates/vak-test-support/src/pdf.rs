//! Small PDF documents built in memory: pages of text (one line a `Tj`) or pages that only
//! draw (a scan), with a correct cross-reference table.

use std::fmt::Write as _;
use std::io::Write as _;

/// A PDF from object bodies (object `n` is `objects[n - 1]`), with a correct cross-reference
/// table and a trailer whose root is object 1.
#[must_use]
pub fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (index, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        writeln!(out, "{} 0 obj", index + 1).unwrap();
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
    for offset in offsets {
        let _ = writeln!(table, "{offset:010} 00000 n ");
    }
    out.extend_from_slice(table.as_bytes());
    write!(
        out,
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    )
    .unwrap();
    out
}

/// A stream object's body holding `content` unfiltered.
#[must_use]
pub fn stream(content: &[u8]) -> Vec<u8> {
    let mut out = format!("<< /Length {} >>\nstream\n", content.len()).into_bytes();
    out.extend_from_slice(content);
    out.extend_from_slice(b"\nendstream");
    out
}

/// A document of `texts.len()` pages; a page whose text is `None` only draws (a scan).
#[must_use]
pub fn document(texts: &[Option<&str>]) -> Vec<u8> {
    let pages = texts.len();
    // 1 catalog, 2 pages, 3 font, then per page: the page and its content.
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            kids.join(" ")
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    for (i, text) in texts.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << \
                 /F1 3 0 R >> >> /Contents {} 0 R >>",
                5 + 2 * i
            )
            .into_bytes(),
        );
        let content = match text {
            Some(text) => {
                let lines: Vec<String> =
                    text.lines().map(|line| format!("({line}) Tj T*")).collect();
                format!("BT /F1 12 Tf 14 TL 72 700 Td {} ET", lines.join(" "))
            }
            None => "q 0.5 g 72 72 400 600 re f Q".to_owned(),
        };
        objects.push(stream(content.as_bytes()));
    }
    pdf(&objects)
}
