//! What the result says: status line, labelled streams, caps, decoding.

use crate::support::{Setup, section};

/// Whole results of short commands: (command, expected text, is_error).
const CASES: &[(&str, &str, bool)] = &[
    (
        "echo out; echo err >&2; exit 7",
        "exit code: 7\n--- stdout ---\nout\n--- stderr ---\nerr",
        true,
    ),
    ("echo hi", "exit code: 0\n--- stdout ---\nhi", false),
    ("true", "exit code: 0\n(no output)", false),
    // grep's "no match": shown plainly, still an error result.
    ("echo abc | grep -q xyz", "exit code: 1\n(no output)", true),
    (
        "echo only-err >&2",
        "exit code: 0\n--- stderr ---\nonly-err",
        false,
    ),
    (
        "kill -KILL $$",
        "killed by SIGKILL (signal 9)\n(no output)",
        true,
    ),
    (
        "echo before; kill -SEGV $$",
        "killed by SIGSEGV (signal 11)\n--- stdout ---\nbefore",
        true,
    ),
    // Invalid UTF-8 becomes U+FFFD; NUL and other controls are escaped.
    (
        r"printf 'a\377b\000c\007d\n'",
        "exit code: 0\n--- stdout ---\na\u{fffd}b\\x00c\\x07d",
        false,
    ),
    // Binary output is named by size and kind, not shown as thousands of U+FFFD.
    (
        r"head -c 60000 /dev/zero | tr '\000' '\001'",
        "exit code: 0\n--- stdout: binary data, 58.6 KiB (unknown kind), not shown ---\n[to look \
         at it, send it to a file (command > out.bin) and run `file out.bin` or `xxd out.bin | \
         head`]",
        false,
    ),
    // One character written a byte at a time, across separate reads.
    (
        r"printf '\342'; sleep 0.1; printf '\202'; sleep 0.1; printf '\254\n'",
        "exit code: 0\n--- stdout ---\n€",
        false,
    ),
    // ANSI colours removed, a progress line collapsed to its last frame, CRLF made LF.
    (
        r"printf '\033[31mred\033[0m plain\n'; printf ' 10%%\r 50%%\r100%%\n'; printf 'dos\r\n'",
        "exit code: 0\n--- stdout ---\nred plain\n100%\ndos",
        false,
    ),
    // stdin is /dev/null: cat and read see end-of-file at once.
    (
        "cat; read line; echo \"read status $?\"",
        "exit code: 0\n--- stdout ---\nread status 1",
        false,
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_table() {
    for (command, expected, is_error) in CASES {
        let setup = Setup::new();
        let run = setup.command(command).await;
        assert_eq!(run.text, *expected, "command: {command}");
        assert_eq!(run.out.is_error, *is_error, "command: {command}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_end_of_file_comes_at_once() {
    let setup = Setup::new();
    let run = setup
        .call(serde_json::json!({"command": "cat; read x; echo done", "timeout_ms": 60000}))
        .await;
    // Had `cat` or `read` waited for input, the timeout would have ended the call and the
    // first line would say so.
    assert_eq!(run.text, "exit code: 0\n--- stdout ---\ndone");
}

/// Parses the header of a capped stream: (total bytes, bytes left out, lines left out).
fn capped_counts(section: &str) -> (u64, u64, u64) {
    let header = section.lines().next().unwrap();
    let number_before = |word: &str| -> u64 {
        let at = header.find(word).unwrap();
        header[..at]
            .split_whitespace()
            .last()
            .unwrap()
            .trim_start_matches('(')
            .parse()
            .unwrap()
    };
    let total = number_before(" bytes in");
    let middle = &header[header.find("the middle").unwrap()..];
    let dropped: u64 = middle.split_whitespace().nth(2).unwrap().parse().unwrap();
    let lines: u64 = middle
        .split_whitespace()
        .nth(4)
        .unwrap()
        .trim_start_matches('(')
        .parse()
        .unwrap();
    (total, dropped, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_keeps_head_and_tail_and_counts_the_rest() {
    let setup = Setup::new();
    let run = setup.command("yes | head -c 50000000").await;
    assert!(!run.out.is_error, "{}", run.first_line());
    assert!(
        run.text.len() <= 2 * 1024 * 1024,
        "{} bytes",
        run.text.len()
    );
    let stdout = section(&run.text, "stdout").unwrap();
    let (total, dropped, dropped_lines) = capped_counts(stdout);
    assert_eq!(total, 50_000_000);
    assert!(stdout.starts_with("--- stdout: 50000000 bytes in 25000000 lines;"));
    // What is shown plus what is left out is the whole stream.
    let shown = stdout.lines().filter(|line| *line == "y").count() as u64;
    assert_eq!(shown + dropped_lines, 25_000_000);
    assert_eq!(shown * 2 + dropped, 50_000_000);
    assert!(stdout.contains(&format!(
        "[... {dropped} bytes ({dropped_lines} lines) left out ...]"
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_byte_before_exit_is_captured_despite_a_background_holder() {
    let setup = Setup::new();
    let run = setup
        .command(r"head -c 3000000 /dev/zero | tr '\0' a; sleep 5 &")
        .await;
    assert!(!run.out.is_error, "{}", run.text.lines().next().unwrap());
    let stdout = section(&run.text, "stdout").unwrap();
    let (total, dropped, _) = capped_counts(stdout);
    assert_eq!(total, 3_000_000);
    let shown = stdout
        .lines()
        .skip(1)
        .filter(|line| !line.starts_with("[..."))
        .map(str::len)
        .sum::<usize>() as u64;
    assert_eq!(shown + dropped, 3_000_000);
    assert!(run.text.contains("1 background process was still running"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stderr_flood_without_stdout_does_not_deadlock() {
    let setup = Setup::new();
    let run = setup
        .command(r"head -c 4194304 /dev/zero | tr '\0' e >&2")
        .await;
    assert!(!run.out.is_error, "{}", run.first_line());
    assert!(section(&run.text, "stdout").is_none());
    let stderr = section(&run.text, "stderr").unwrap();
    assert_eq!(capped_counts(stderr).0, 4_194_304);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_caps_apply_to_each_stream() {
    let mut settings = vak_tool_bash::BashSettings::default();
    settings.stream_bytes = 10;
    let setup = Setup::with_settings(settings);
    let run = setup
        .command("printf 'abcdefghijklmnopqrstuvwxyz'; printf '0123456789' >&2")
        .await;
    assert_eq!(
        run.text,
        "exit code: 0\n\
         --- stdout: 26 bytes in 1 line; the middle 16 bytes (0 lines) is left out ---\n\
         abcde\n\
         [... 16 bytes (0 lines) left out ...]\n\
         vwxyz\n\
         --- stderr ---\n\
         0123456789"
    );
}
