//! The verdict on a run: reading what the browser left behind (the DOM and its log) and
//! deciding whether it is a page, or why not.
//!
//! The rules, in order:
//!
//! 1. A cancelled call is cancelled, whatever was printed.
//! 2. The proxy's refusal of the main document is trusted over the DOM: a refused page renders
//!    the proxy's `403` page and the browser still exits 0.
//!    Likewise a main document that the guard allowed but could not reach is an error, not the
//!    proxy's `502` page.
//! 3. At a deadline kill, the output counts only when it ends with a closed `</html>`: the
//!    browser had finished printing. (Only then: an SVG or XML document has no `</html>`, and a
//!    browser that exited by itself printed all it had.)
//! 4. A failed load is an error naming its `ERR_…` code, whichever way this browser version
//!    says it: Chromium's own network-error page in place of the DOM (148, 150), an empty DOM
//!    with `Page load failed: net::ERR_…` in the log (156), or both (see [`failed_load`]).
//! 5. Otherwise success is exit 0 with a non-empty DOM.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::BrowseError;
use crate::error_page::net_error_page;
use crate::launch::Ending;
use crate::main_document::Report;

/// Bytes read from the end of the DOM file for the `</html>` sentinel.
const TAIL_BYTES: u64 = 64;
/// The most log read, from its end.
const LOG_BYTES: u64 = 64 * 1024;

/// What the browser printed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Captured {
    /// The start of the DOM, at most the body cap.
    pub(crate) dom: String,
    /// The DOM's whole size in bytes.
    pub(crate) dom_bytes: u64,
    /// Whether `dom` is only the start.
    pub(crate) cut: bool,
    /// The last bytes of the DOM.
    pub(crate) tail: String,
    /// The end of the log.
    pub(crate) log: String,
}

impl Captured {
    /// Reads the DOM (the first `cap` bytes, cut on a character boundary) and the log.
    pub(crate) fn read(dom: &Path, log: &Path, cap: usize) -> std::io::Result<Self> {
        let mut file = std::fs::File::open(dom)?;
        let dom_bytes = file.metadata()?.len();
        let mut head = Vec::new();
        (&mut file).take(cap as u64).read_to_end(&mut head)?;
        let cut = dom_bytes > head.len() as u64;
        let dom = utf8_prefix(head);
        file.seek(SeekFrom::Start(dom_bytes.saturating_sub(TAIL_BYTES)))?;
        let mut tail = Vec::new();
        file.read_to_end(&mut tail)?;
        let log = read_end(log, LOG_BYTES).unwrap_or_default();
        Ok(Self {
            dom,
            dom_bytes,
            cut,
            tail: String::from_utf8_lossy(&tail).into_owned(),
            log,
        })
    }
}

/// The valid UTF-8 start of `bytes`: a character cut by the cap is dropped, invalid bytes
/// elsewhere become U+FFFD.
fn utf8_prefix(mut bytes: Vec<u8>) -> String {
    if let Err(error) = std::str::from_utf8(&bytes)
        && error.error_len().is_none()
    {
        bytes.truncate(error.valid_up_to());
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    }
}

fn read_end(path: &Path, most: u64) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    file.seek(SeekFrom::Start(size.saturating_sub(most)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A DOM that may be returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepted {
    /// The browser was killed at the deadline after it had printed the whole page.
    pub(crate) at_deadline: bool,
    /// The browser printed the page at its `--timeout`, before the load had finished.
    pub(crate) load_timed_out: bool,
}

/// Everything the verdict depends on.
pub(crate) struct Evidence<'a> {
    pub(crate) ending: Ending,
    pub(crate) captured: &'a Captured,
    pub(crate) report: &'a Report,
    /// Whether the DOM is the proxy's own refusal page.
    pub(crate) refusal_page: bool,
    /// Whether the browser ran as long as its `--timeout`.
    pub(crate) reached_timeout: bool,
    pub(crate) deadline: Duration,
    pub(crate) browser: &'a Path,
}

/// Decides whether the run produced a page, or why not.
pub(crate) fn judge(evidence: &Evidence<'_>) -> Result<Accepted, BrowseError> {
    let captured = evidence.captured;
    if evidence.ending == Ending::Cancelled {
        return Err(BrowseError::Cancelled);
    }
    if let Some((blocked, redirected)) = &evidence.report.main_refused {
        return Err(BrowseError::MainRefused {
            blocked: blocked.clone(),
            redirected: *redirected,
        });
    }
    if evidence.refusal_page
        && let Some(blocked) = evidence.report.blocked.first()
    {
        return Err(BrowseError::MainRefused {
            blocked: blocked.clone(),
            redirected: false,
        });
    }
    if let Some(reason) = &evidence.report.main_failed
        && evidence.report.final_url.is_none()
    {
        return Err(BrowseError::Unreachable {
            reason: reason.clone(),
        });
    }
    let has_dom = !captured.dom.trim().is_empty();
    if let Some(code) = failed_load(captured) {
        return Err(BrowseError::LoadFailed {
            code,
            blocked: evidence.report.blocked.clone(),
        });
    }
    let load_timed_out = evidence.reached_timeout || captured.log.contains("Page load timed out");
    match evidence.ending {
        Ending::Cancelled => Err(BrowseError::Cancelled),
        Ending::Deadline => {
            if has_dom && closes_html(&captured.tail) {
                Ok(Accepted {
                    at_deadline: true,
                    load_timed_out,
                })
            } else {
                Err(BrowseError::Deadline {
                    deadline: evidence.deadline,
                })
            }
        }
        Ending::Exited(status) if status.success() && has_dom => Ok(Accepted {
            at_deadline: false,
            load_timed_out,
        }),
        Ending::Exited(status) => {
            let how = match status.code() {
                Some(0) => "exited normally".to_owned(),
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_owned(),
            };
            Err(BrowseError::BrowserFailed {
                how,
                log_tail: log_tail(&captured.log),
                browser: PathBuf::from(evidence.browser),
            })
        }
    }
}

/// Whether the output ends with a closed `</html>` (whitespace after it allowed).
pub(crate) fn closes_html(tail: &str) -> bool {
    tail.trim_end().to_ascii_lowercase().ends_with("</html>")
}

/// The `ERR_…` code of a load that failed, from whichever signal this browser version gives:
/// its network-error page in place of the DOM (Chromium 148 and 150, which log nothing about
/// it), or an empty DOM with `Page load failed: net::ERR_…` in the log (156 and later), or both.
/// A DOM that is not the error page is a page, whatever the log says (a subframe's failure is
/// not the page's).
pub(crate) fn failed_load(captured: &Captured) -> Option<String> {
    let logged = load_failure(&captured.log);
    if let Some(page) = net_error_page(&captured.dom) {
        // The page names the code it was rendered for; the log line, when there is one, names
        // the same. Without either, Chromium's generic code.
        return Some(
            page.code
                .or(logged)
                .unwrap_or_else(|| "ERR_FAILED".to_owned()),
        );
    }
    if captured.dom.trim().is_empty() {
        return logged;
    }
    None
}

/// The `ERR_…` code of `Page load failed: net::ERR_…`, if the log has one.
pub(crate) fn load_failure(log: &str) -> Option<String> {
    let marker = "Page load failed: net::";
    let start = log.rfind(marker)? + marker.len();
    let code: String = log[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    code.starts_with("ERR_").then_some(code)
}

/// The last lines of the log worth showing: not the D-Bus and font chatter of a headless run.
pub(crate) fn log_tail(log: &str) -> String {
    const NOISE: &[&str] = &["dbus", "Fontconfig", "bus.cc", "gcm", "ALSA"];
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !NOISE.iter().any(|noise| line.contains(noise)))
        .collect();
    let start = lines.len().saturating_sub(6);
    lines[start..]
        .iter()
        .map(|line| {
            let mut line = (*line).to_owned();
            if line.len() > 300 {
                let mut end = 300;
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
                line.truncate(end);
                line.push('…');
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a DOM is an HTML document (and not SVG, XML or another markup).
pub(crate) fn is_html(dom: &str) -> bool {
    let start = dom.trim_start().get(..5).unwrap_or_default();
    start.eq_ignore_ascii_case("<html") || start.eq_ignore_ascii_case("<!doc")
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::*;
    use vak_guard::proxy::Blocked;

    fn exited(code: i32) -> Ending {
        Ending::Exited(ExitStatus::from_raw(code << 8))
    }

    fn blocked(url: &str) -> Blocked {
        Blocked::new(
            url,
            "loopback",
            None,
            "refused by the network guard: loopback",
        )
    }

    /// (ending, dom, tail, log, main refused, refusal page) → Ok(at_deadline) or an error
    /// containing the text.
    #[test]
    fn verdicts() {
        let full = "<html><body>x</body></html>";
        let svg = "<svg><text>x</text></svg>";
        let failed = "[1:2:ERROR] x\nPage load failed: net::ERR_NAME_NOT_RESOLVED.\n";
        type Case<'a> = (Ending, &'a str, &'a str, bool, bool, Result<bool, &'a str>);
        let cases: &[Case<'_>] = &[
            (exited(0), full, "", false, false, Ok(false)),
            (exited(0), svg, "", false, false, Ok(false)),
            (
                exited(0),
                "",
                failed,
                false,
                false,
                Err("net::ERR_NAME_NOT_RESOLVED"),
            ),
            (exited(0), "  \n", "", false, false, Err("exited normally")),
            (exited(1), full, "boom", false, false, Err("status 1")),
            (exited(0), full, "", true, false, Err("refused a redirect")),
            (exited(0), full, "", false, true, Err("refused the page")),
            (Ending::Deadline, full, "", false, false, Ok(true)),
            (
                Ending::Deadline,
                "<html><body>x",
                "",
                false,
                false,
                Err("within 4 s"),
            ),
            (Ending::Deadline, svg, "", false, false, Err("within 4 s")),
            (Ending::Deadline, "", "", false, false, Err("within 4 s")),
            (Ending::Cancelled, full, "", true, false, Err("cancelled")),
        ];
        let unreachable = Report {
            main_failed: Some("could not connect: nobody listens".into()),
            ..Report::default()
        };
        let captured = Captured {
            dom: full.into(),
            tail: full.into(),
            ..Captured::default()
        };
        let evidence = |report| Evidence {
            ending: exited(0),
            captured: &captured,
            report,
            refusal_page: false,
            reached_timeout: false,
            deadline: Duration::from_secs(4),
            browser: Path::new("chromium"),
        };
        let error = judge(&evidence(&unreachable)).unwrap_err().to_string();
        assert!(
            error.contains("could not be reached: could not connect"),
            "{error}"
        );
        // Reached in the end (a retry): the page counts.
        let mut reached = unreachable.clone();
        reached.final_url = Some(url::Url::parse("http://example.com/").unwrap());
        assert!(judge(&evidence(&reached)).is_ok());

        // Printed at the browser's --timeout: accepted, and said so.
        let report = Report::default();
        assert!(!judge(&evidence(&report)).unwrap().load_timed_out);
        let mut late = evidence(&report);
        late.reached_timeout = true;
        assert!(judge(&late).unwrap().load_timed_out);
        let logged = Captured {
            log: "[1:1:ERROR:headless_command_handler.cc] Page load timed out.".into(),
            ..captured.clone()
        };
        let mut logged_evidence = evidence(&report);
        logged_evidence.captured = &logged;
        assert!(judge(&logged_evidence).unwrap().load_timed_out);
        for (ending, dom, log, main_refused, refusal_page, expected) in cases {
            let captured = Captured {
                dom: (*dom).into(),
                dom_bytes: dom.len() as u64,
                cut: false,
                tail: (*dom).into(),
                log: (*log).into(),
            };
            let mut report = Report::default();
            report.blocked.push(blocked("http://127.0.0.1:1/"));
            if *main_refused {
                report.main_refused = Some((blocked("http://127.0.0.1:1/"), true));
            }
            let got = judge(&Evidence {
                ending: *ending,
                captured: &captured,
                report: &report,
                refusal_page: *refusal_page,
                reached_timeout: false,
                deadline: Duration::from_secs(4),
                browser: Path::new("/usr/bin/chromium"),
            });
            match (got, expected) {
                (Ok(accepted), Ok(at_deadline)) => {
                    assert_eq!(accepted.at_deadline, *at_deadline, "{ending:?} {dom:?}");
                }
                (Err(error), Err(text)) => {
                    let message = error.to_string();
                    assert!(message.contains(text), "{ending:?} {dom:?}: {message}");
                }
                (got, expected) => panic!("{ending:?} {dom:?}: got {got:?}, expected {expected:?}"),
            }
        }
    }

    /// Recorded real outputs (tests/fixtures/README.md): Chromium 150 prints its error page and
    /// logs nothing; 156 prints nothing and logs `Page load failed`.
    const C150_DOM: &str = include_str!("../tests/fixtures/chromium-150/https-closed.dom");
    const C150_LOG: &str = include_str!("../tests/fixtures/chromium-150/https-closed.log");
    const C156_DOM: &str = include_str!("../tests/fixtures/chromium-156/https-closed.dom");
    const C156_LOG: &str = include_str!("../tests/fixtures/chromium-156/https-closed.log");

    fn judged(ending: Ending, dom: &str, log: &str) -> Result<Accepted, BrowseError> {
        let captured = Captured {
            dom: dom.into(),
            dom_bytes: dom.len() as u64,
            cut: false,
            tail: dom[dom.len().saturating_sub(64)..].into(),
            log: log.into(),
        };
        judge(&Evidence {
            ending,
            captured: &captured,
            report: &Report::default(),
            refusal_page: false,
            reached_timeout: false,
            deadline: Duration::from_secs(20),
            browser: Path::new("/usr/bin/chromium"),
        })
    }

    /// Each shape of a failed load, from recorded output of two Chromium versions: the log
    /// line only (156), the error page only (150), both (the page of one and the log of the
    /// other, as a version printing both would), and the error page at a deadline kill.
    #[test]
    fn a_failed_load_is_an_error_on_every_chromium() {
        let shapes = [
            ("log line only (156)", exited(0), C156_DOM, C156_LOG),
            ("error page only (150)", exited(0), C150_DOM, C150_LOG),
            ("both", exited(0), C150_DOM, C156_LOG),
            (
                "error page at the deadline",
                Ending::Deadline,
                C150_DOM,
                C150_LOG,
            ),
        ];
        assert!(
            !C150_LOG.contains("Page load failed"),
            "the 150 log has no load line"
        );
        assert!(C156_DOM.trim().is_empty(), "156 prints no DOM");
        for (shape, ending, dom, log) in shapes {
            let error = judged(ending, dom, log).expect_err(shape).to_string();
            assert!(
                error.contains("the browser could not load the page: net::ERR_CONNECTION_CLOSED"),
                "{shape}: {error}"
            );
        }
    }

    /// A real page that talks about a failed load is still a page, and a page is not turned
    /// into an error by a log line about something else's failure.
    #[test]
    fn a_page_about_errors_is_a_page() {
        let page = "<html><head><title>Help</title></head><body class=\"article\"><h1>This site \
                    can’t be reached</h1><p>Chrome says ERR_CONNECTION_CLOSED when the server \
                    hangs up.</p></body></html>";
        assert!(judged(exited(0), page, "").is_ok());
        assert!(judged(exited(0), page, C156_LOG).is_ok());
        // The error page's words, without its structure.
        let body_start = C150_DOM.find("<body").unwrap();
        let words_only = format!("<html><body>{}</html>", &C150_DOM[body_start + 5..]);
        let words_only = words_only.replace("id=\"main-frame-error\"", "id=\"article\"");
        assert!(judged(exited(0), &words_only, "").is_ok());
    }

    #[test]
    fn load_failures_and_logs() {
        assert_eq!(
            load_failure("a\nPage load failed: net::ERR_TUNNEL_CONNECTION_FAILED\n").as_deref(),
            Some("ERR_TUNNEL_CONNECTION_FAILED")
        );
        assert_eq!(load_failure("Page load failed: net::"), None);
        assert_eq!(load_failure("all good"), None);
        let log = "[x:ERROR:dbus/bus.cc:405] Failed to connect\nreal problem\n";
        assert_eq!(log_tail(log), "real problem");
        assert!(closes_html("<html></HTML>\n  "));
        assert!(!closes_html("<html><body>"));
        assert!(is_html("\n<html><head>"));
        assert!(is_html("<!DOCTYPE html><html>"));
        assert!(!is_html("<svg xmlns=\"\"/>"));
    }

    #[test]
    fn reading_caps_on_a_character_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let dom = dir.path().join("dom.html");
        let log = dir.path().join("log");
        std::fs::write(&dom, "<html>ééé</html>").unwrap();
        let captured = Captured::read(&dom, &log, 9).unwrap();
        // 9 bytes would end inside the second é.
        assert_eq!(captured.dom, "<html>é");
        assert!(captured.cut);
        assert_eq!(captured.dom_bytes, 19);
        assert!(closes_html(&captured.tail));
        assert_eq!(captured.log, "");
        let whole = Captured::read(&dom, &log, 100).unwrap();
        assert!(!whole.cut);
        assert_eq!(whole.dom, "<html>ééé</html>");
    }
}
