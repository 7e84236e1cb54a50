//! `webfetch` end to end against loopback servers on 127.0.0.2.

use std::ffi::OsString;
use std::time::Duration;

use async_compression::tokio::bufread::{BrotliEncoder, GzipEncoder};
use serde_json::json;
use tokio::io::AsyncReadExt;
use vak_tool_core::{DynTool, Registry, human};
use vak_tool_net::WebFetch;

use crate::support::{
    Answer, End, Reply, Scripted, Server, addrs, context, fetch, fetch_with, head_only, html,
    limited, redirect, response, settings, tool,
};

async fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    GzipEncoder::new(data).read_to_end(&mut out).await.unwrap();
    out
}

async fn brotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    BrotliEncoder::new(data)
        .read_to_end(&mut out)
        .await
        .unwrap();
    out
}

#[tokio::test]
async fn fetches_html_as_markdown_with_a_header() {
    let server = Server::start(|request| match request.path.as_str() {
        "/" => html(
            "<html><head><title>T</title><script>var secret = 1;</script></head>\
             <body><h1>Hello</h1><p>See <a href=\"/docs/a.html\">the docs</a>.</p></body></html>",
        ),
        _ => response("404 Not Found", &[], b""),
    })
    .await;
    let out = fetch(&server.url("/")).await;
    assert!(!out.is_error, "{out:?}");
    let text = out.text_content();
    assert!(
        text.starts_with(&format!(
            "URL: {}\nStatus: 200 OK\nContent-Type: text/html; charset=utf-8\n",
            server.url("/")
        )),
        "{text}"
    );
    assert!(text.contains("# Hello"), "{text}");
    assert!(
        text.contains(&format!("[the docs]({})", server.url("/docs/a.html"))),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
}

#[tokio::test]
async fn sends_host_and_accept_and_no_credentials() {
    let server = Server::start(|_| html("<p>x</p>")).await;
    // Proxy variables in the environment are never consulted (they point nowhere).
    let dir = tempfile::tempdir().unwrap();
    let proxy = OsString::from("http://127.0.0.1:9");
    // Nor is a .netrc with a password for the host.
    let netrc = dir.path().join(".netrc");
    std::fs::write(&netrc, "machine 127.0.0.2 login me password secret\n").unwrap();
    let mut env: Vec<(OsString, OsString)> =
        ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"]
            .map(|name| (OsString::from(name), proxy.clone()))
            .to_vec();
    env.push(("HOME".into(), dir.path().into()));
    env.push(("NETRC".into(), netrc.into()));
    let ctx = context(&dir).with_env(env);
    let out = fetch_with(&tool(), &ctx, &server.url("/p?q=1#frag"), "raw").await;
    assert!(!out.is_error, "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let head = requests[0].head.to_ascii_lowercase();
    assert!(head.starts_with("get /p?q=1 http/1.1\r\n"), "{head}");
    assert!(
        head.contains(&format!("host: {}\r\n", server.addr)),
        "{head}"
    );
    assert!(head.contains("accept: text/markdown, "), "{head}");
    assert!(head.contains("accept-encoding: gzip, br\r\n"), "{head}");
    for absent in ["cookie", "authorization", "proxy-"] {
        assert!(!head.contains(absent), "{absent} in {head}");
    }
}

#[tokio::test]
async fn formats() {
    let page = "<h1>Title</h1><p>one <b>two</b></p><style>.x{}</style>";
    let server = Server::start(move |request| match request.path.as_str() {
        "/md" => response(
            "200 OK",
            &[("Content-Type", "text/markdown")],
            b"# Already *markdown*\n",
        ),
        "/json" => response(
            "200 OK",
            &[("Content-Type", "application/json")],
            b"{\"a\": [1, 2]}",
        ),
        _ => html(page),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(&dir);
    let tool = tool();
    let body = |text: String| text.split_once("\n\n").unwrap().1.to_string();
    let markdown = body(
        fetch_with(&tool, &ctx, &server.url("/"), "markdown")
            .await
            .text_content(),
    );
    assert_eq!(markdown, "# Title\n\none **two**");
    let text = body(
        fetch_with(&tool, &ctx, &server.url("/"), "text")
            .await
            .text_content(),
    );
    assert_eq!(text, "Title\none two");
    let raw = body(
        fetch_with(&tool, &ctx, &server.url("/"), "raw")
            .await
            .text_content(),
    );
    assert_eq!(raw, page);
    let md = body(
        fetch_with(&tool, &ctx, &server.url("/md"), "markdown")
            .await
            .text_content(),
    );
    assert_eq!(
        md, "# Already *markdown*\n",
        "a markdown answer passes through"
    );
    let json = body(
        fetch_with(&tool, &ctx, &server.url("/json"), "markdown")
            .await
            .text_content(),
    );
    assert_eq!(json, "{\"a\": [1, 2]}");
    let bad = tool
        .call(json!({"url": server.url("/"), "format": "pdf"}), &ctx)
        .await;
    assert!(
        bad.is_error && bad.text_content().contains("format"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn redirects_are_followed_and_reported() {
    let server = Server::start(|request| match request.path.as_str() {
        "/d" => html("<p>done</p>"),
        _ => response("404 Not Found", &[], b"nope"),
    })
    .await;
    // Relative, dot-relative and scheme-relative hops, ending on a second server.
    let port = server.port();
    let second = Server::start(move |request| match request.path.as_str() {
        "/a" => response(
            "301 Moved Permanently",
            &[("Location", "/b"), ("Set-Cookie", "session=abc; Path=/")],
            b"",
        ),
        "/b" => redirect("302 Found", "c?x=1"),
        "/c?x=1" => redirect("307 Temporary Redirect", &format!("//127.0.0.2:{port}/d")),
        _ => response("404 Not Found", &[], b""),
    })
    .await;
    let out = fetch(&second.url("/a")).await;
    assert!(!out.is_error, "{out:?}");
    let text = out.text_content();
    assert!(
        text.starts_with(&format!("URL: {}\n", server.url("/d"))),
        "{text}"
    );
    let expected = format!(
        "Redirects: {} (301) -> {} (302) -> {} (307) -> {}",
        second.url("/a"),
        second.url("/b"),
        second.url("/c?x=1"),
        server.url("/d")
    );
    assert!(text.contains(&expected), "{text}");
    assert!(text.ends_with("done"), "{text}");
    // A cookie set on the way is never sent back.
    for request in second.requests().iter().chain(server.requests().iter()) {
        assert!(
            !request.head.to_ascii_lowercase().contains("cookie"),
            "{}",
            request.head
        );
    }
}

#[tokio::test]
async fn four_redirects_are_too_many_and_loops_are_named() {
    let server = Server::start(|request| {
        let n: u32 = request.path.trim_start_matches("/r").parse().unwrap_or(0);
        match request.path.as_str() {
            "/loop-a" => redirect("302 Found", "/loop-b"),
            "/loop-b" => redirect("302 Found", "/loop-a"),
            _ => redirect("302 Found", &format!("/r{}", n + 1)),
        }
    })
    .await;
    let out = fetch(&server.url("/r0")).await;
    assert!(out.is_error);
    let text = out.text_content();
    assert!(
        text.contains("too many redirects: 3 already followed"),
        "{text}"
    );
    assert_eq!(
        server.requests().len(),
        4,
        "the fourth redirect is not followed"
    );
    let out = fetch(&server.url("/loop-a")).await;
    assert!(out.text_content().contains("redirect loop"), "{out:?}");
}

#[tokio::test]
async fn redirects_into_loopback_are_refused_by_every_spelling() {
    let targets = [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://①②⑦.⓪.⓪.①/",
        "http://%31%32%37.0.0.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:0:127.0.0.1]/",
        "http://[64:ff9b::127.0.0.1]/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://x.localhost/",
        "//127.0.0.1/scheme-relative",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "gopher://127.0.0.2:70/",
        "http://user:pw@127.0.0.2/",
        "http://127.0.0.2:22/",
    ];
    for target in targets {
        let location = target.to_string();
        let server = Server::start(move |_| redirect("302 Found", &location)).await;
        let start = server.url("/start");
        let out = fetch(&start).await;
        assert!(out.is_error, "{target}: {out:?}");
        let text = out.text_content();
        assert!(
            text.contains("refused by the network guard"),
            "{target}: {text}"
        );
        assert!(
            text.contains("hop: redirect 1 of the chain"),
            "{target}: {text}"
        );
        assert!(
            text.contains(&format!("chain: {start} -> ")),
            "{target}: {text}"
        );
        assert_eq!(server.requests().len(), 1, "{target}");
        assert!(!text.contains(":pw@"), "passwords are not echoed: {text}");
    }
}

#[tokio::test]
async fn cross_scheme_redirect_is_screened_again() {
    let (tls_server, roots) = crate::tls::server(|_| html("<p>secure</p>")).await;
    let target = tls_server.url("/s");
    let server = Server::start(move |_| redirect("302 Found", &target)).await;
    let dir = tempfile::tempdir().unwrap();
    let tool = tool().with_extra_roots(roots);
    let out = fetch_with(&tool, &context(&dir), &server.url("/"), "markdown").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.text_content().ends_with("secure"));
    // https -> http into loopback is refused too.
    let back = Server::start(|_| redirect("301 Moved Permanently", "http://127.0.0.1:8080/")).await;
    let out = fetch(&back.url("/")).await;
    assert!(out.text_content().contains("127.0.0.0/8"), "{out:?}");
}

#[tokio::test]
async fn a_3xx_without_location_is_the_result() {
    let server = Server::start(|_| {
        response(
            "300 Multiple Choices",
            &[("Content-Type", "text/plain")],
            b"pick one",
        )
    })
    .await;
    let out = fetch(&server.url("/")).await;
    assert!(!out.is_error, "{out:?}");
    let text = out.text_content();
    assert!(text.contains("Status: 300 Multiple Choices"), "{text}");
    assert!(text.ends_with("pick one"), "{text}");
}

#[tokio::test]
async fn http_errors_are_errors_with_the_page() {
    let server = Server::start(|_| {
        response(
            "404 Not Found",
            &[("Content-Type", "text/html")],
            b"<h1>Gone</h1>",
        )
    })
    .await;
    let out = fetch(&server.url("/")).await;
    assert!(out.is_error);
    let text = out.text_content();
    assert!(
        text.contains("404 Not Found") && text.contains("# Gone"),
        "{text}"
    );
}

#[tokio::test]
async fn rebinding_gets_one_resolution_per_hop() {
    let server = Server::start(|request| match request.path.as_str() {
        "/one" => redirect("302 Found", "/two"),
        _ => html("<p>two</p>"),
    })
    .await;
    // First answer: the allowed test server; every later answer: loopback.
    let resolver = Scripted::new([addrs(&["127.0.0.2"]), addrs(&["127.0.0.1"])]);
    let webfetch = tool().with_resolver(resolver.clone());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://rebind.test:{}/one", server.port());
    let out = fetch_with(&webfetch, &context(&dir), &url, "markdown").await;
    assert!(out.is_error);
    let text = out.text_content();
    assert!(
        text.contains("127.0.0.0/8 (loopback)") && text.contains("host: rebind.test"),
        "{text}"
    );
    assert_eq!(
        resolver.calls(),
        ["rebind.test", "rebind.test"],
        "one lookup per hop"
    );
    assert_eq!(server.requests().len(), 1);

    // Within one hop nothing looks the name up a second time.
    let resolver = Scripted::new([addrs(&["127.0.0.2"]), addrs(&["127.0.0.1"])]);
    let webfetch = tool().with_resolver(resolver.clone());
    let url = format!("http://rebind.test:{}/two", server.port());
    let out = fetch_with(&webfetch, &context(&dir), &url, "markdown").await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(resolver.calls().len(), 1);
    let head = server.requests().last().unwrap().head.to_ascii_lowercase();
    assert!(
        head.contains(&format!("host: rebind.test:{}\r\n", server.port())),
        "{head}"
    );
}

#[tokio::test]
async fn mixed_answers_and_nxdomain() {
    let dir = tempfile::tempdir().unwrap();
    let webfetch = tool().with_resolver(Scripted::new([addrs(&["127.0.0.2", "10.0.0.1"])]));
    let out = fetch_with(&webfetch, &context(&dir), "http://mixed.test:8080/", "raw").await;
    assert!(out.text_content().contains("address: 10.0.0.1"), "{out:?}");
    let webfetch = tool().with_resolver(Scripted::new([Answer::NotFound]));
    let out = fetch_with(&webfetch, &context(&dir), "http://nx.test/", "raw").await;
    assert!(out.is_error);
    assert!(out.text_content().contains("did not resolve"), "{out:?}");
}

/// Paused time: the runtime jumps to the next timer whenever it is idle, so the 300 ms deadline
/// passes at once; the outer hour is there only to turn a deadline that never fires into a
/// failure instead of a hang.
#[tokio::test(start_paused = true)]
async fn a_hanging_resolver_hits_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let resolver = Scripted::new([Answer::Hang]);
    let tool = WebFetch::new(&limited(Duration::from_millis(300), 512 * 1024))
        .with_resolver(resolver.clone());
    let ctx = context(&dir);
    let call = fetch_with(&tool, &ctx, "http://hang.test/", "raw");
    let out = tokio::time::timeout(Duration::from_secs(3600), call)
        .await
        .expect("the fetch's own deadline never ended the call");
    let text = out.text_content();
    assert!(
        out.is_error && text.contains("did not finish within 300 ms"),
        "{text}"
    );
    assert!(text.contains("connecting to http://hang.test/"), "{text}");
    assert_eq!(resolver.calls(), ["hang.test"]);
}

#[tokio::test]
async fn a_slow_trickle_is_stopped_by_the_deadline() {
    // 400 chunks 50 ms apart: 20 s of body, far past the 800 ms deadline. A deadline that does
    // not cut the read would return the whole body as a success.
    let server = Server::start(|_| Reply::Trickle {
        head: head_only("200 OK", &[("Content-Type", "text/plain")]),
        chunk: b"x".to_vec(),
        every: Duration::from_millis(50),
        most: 400,
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tool = WebFetch::new(&limited(Duration::from_millis(800), 512 * 1024));
    let out = fetch_with(&tool, &context(&dir), &server.url("/"), "raw").await;
    let text = out.text_content();
    assert!(
        out.is_error && text.contains("did not finish within 800 ms"),
        "{text}"
    );
    assert!(text.contains("reading the body of"), "{text}");
    assert!(text.contains(" of body)"), "{text}");
    // The fetch hung up on the server; it did not leave the connection to trickle on.
    let end = server.connection_end().await;
    assert!(
        matches!(end, End::Dropped { chunks } if chunks < 400),
        "{end:?}"
    );
}

#[tokio::test]
async fn a_gzip_bomb_stops_at_the_cap() {
    // 64 gzip members of 1 MiB of zeros each: 64 MiB decoded from a few KiB.
    let member = gzip(&vec![0u8; 1024 * 1024]).await;
    let bomb = member.repeat(64);
    assert!(bomb.len() < 128 * 1024);
    let server = Server::start(move |_| {
        let mut bytes = head_only(
            "200 OK",
            &[("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
        );
        bytes.extend_from_slice(&bomb);
        Reply::Bytes(bytes)
    })
    .await;
    let out = fetch(&server.url("/")).await;
    assert!(!out.is_error, "{:?}", &out.text_content()[..200]);
    let text = out.text_content();
    assert!(
        text.contains(&format!(
            "Truncated: the body was cut at {} (decoded); at least",
            human::size(512 * 1024)
        )),
        "{}",
        &text[..400]
    );
    assert!(text.len() < 600 * 1024);
}

#[tokio::test]
async fn gzip_and_brotli_bodies_are_decoded_and_cut_exactly() {
    let body = "line of text\n".repeat(100);
    let gz = gzip(body.as_bytes()).await;
    let br = brotli(body.as_bytes()).await;
    let server = Server::start(move |request| {
        let (coding, data) = if request.path == "/gz" {
            ("gzip", gz.clone())
        } else {
            ("br", br.clone())
        };
        response(
            "200 OK",
            &[("Content-Type", "text/plain"), ("Content-Encoding", coding)],
            &data,
        )
    })
    .await;
    for path in ["/gz", "/br"] {
        let out = fetch(&server.url(path)).await;
        assert!(out.text_content().ends_with(&body), "{path}");
        let dir = tempfile::tempdir().unwrap();
        let tool = WebFetch::new(&limited(Duration::from_secs(15), 1000));
        let out = fetch_with(&tool, &context(&dir), &server.url(path), "raw").await;
        let text = out.text_content();
        assert!(
            text.contains("cut at 1000 B (decoded); the remaining 300 B were not read"),
            "{path}: {text}"
        );
    }
}

#[tokio::test]
async fn an_oversized_content_length_is_refused_before_the_body() {
    // The server sends the head and then waits, holding the connection until the client hangs
    // up. Without the Content-Length check the fetch would wait for the body until its
    // deadline and report that instead.
    let server = Server::start(|_| {
        Reply::Stall(head_only(
            "200 OK",
            &[
                ("Content-Type", "text/html"),
                ("Content-Length", "10000000"),
            ],
        ))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tool = WebFetch::new(&limited(Duration::from_secs(10), 512 * 1024));
    let out = fetch_with(&tool, &context(&dir), &server.url("/"), "raw").await;
    let text = out.text_content();
    assert!(
        out.is_error
            && text.contains(&format!(
                "declares a body of {} (Content-Length: 10000000), more than the {} limit",
                human::size(10_000_000),
                human::size(512 * 1024)
            )),
        "{text}"
    );
    assert!(!text.contains("did not finish"), "{text}");
    assert_eq!(server.connection_end().await, End::Dropped { chunks: 0 });
}

#[tokio::test]
async fn content_types_are_gated() {
    let server = Server::start(|request| {
        let content_type = request.path.trim_start_matches('/').replace('~', "/");
        if content_type == "none" {
            let body: &[u8] = b"plain words";
            let mut bytes = head_only("200 OK", &[]);
            bytes.extend_from_slice(body);
            return Reply::Bytes(bytes);
        }
        if content_type == "none-html" {
            let mut bytes = head_only("200 OK", &[]);
            bytes.extend_from_slice(b"<!doctype html><h1>Sniffed</h1><script>x</script>");
            return Reply::Bytes(bytes);
        }
        if content_type == "none-binary" {
            let mut bytes = head_only("200 OK", &[]);
            bytes.extend_from_slice(b"\x89PNG\r\n\x1a\n\0\0\0");
            return Reply::Bytes(bytes);
        }
        response("200 OK", &[("Content-Type", &content_type)], b"body")
    })
    .await;
    for refused in [
        "image~png",
        "application~octet-stream",
        "application~pdf",
        "application~zip",
        "none-binary",
    ] {
        let out = fetch(&server.url(&format!("/{refused}"))).await;
        assert!(out.is_error, "{refused}");
        assert!(
            out.text_content().contains("not a text type"),
            "{refused}: {out:?}"
        );
    }
    for accepted in [
        "text~plain",
        "text~csv",
        "application~json",
        "application~xml",
        "application~javascript",
        "application~ld+json",
        "none",
    ] {
        let out = fetch(&server.url(&format!("/{accepted}"))).await;
        assert!(!out.is_error, "{accepted}: {out:?}");
    }
    let out = fetch(&server.url("/image~png")).await;
    assert!(out.text_content().contains("`image/png`"));
    let text = fetch(&server.url("/none-html")).await.text_content();
    assert!(
        text.contains("body looks like HTML") && text.ends_with("# Sniffed"),
        "{text}"
    );
}

#[tokio::test]
async fn charsets_follow_the_whatwg_order() {
    let server = Server::start(|request| match request.path.as_str() {
        "/latin1" => response(
            "200 OK",
            &[("Content-Type", "text/plain; charset=ISO-8859-1")],
            b"caf\xe9",
        ),
        "/meta" => response(
            "200 OK",
            &[("Content-Type", "text/html")],
            b"<meta charset=\"shift_jis\"><p>\x82\xa0</p>",
        ),
        "/bom" => response(
            "200 OK",
            &[("Content-Type", "text/plain; charset=windows-1252")],
            b"\xef\xbb\xbfcaf\xc3\xa9",
        ),
        _ => response("200 OK", &[("Content-Type", "text/plain")], b"caf\xc3\xa9"),
    })
    .await;
    let cases = [
        (
            "/latin1",
            "café",
            Some("windows-1252 (from the Content-Type charset)"),
        ),
        ("/meta", "あ", Some("Shift_JIS (from the <meta> charset)")),
        ("/bom", "café", Some("UTF-8 (from the byte order mark)")),
        ("/utf8", "café", None),
    ];
    for (path, expected, encoding) in cases {
        let text = fetch(&server.url(path)).await.text_content();
        assert!(text.ends_with(expected), "{path}: {text}");
        match encoding {
            Some(encoding) => assert!(
                text.contains(&format!("Encoding: {encoding}")),
                "{path}: {text}"
            ),
            None => assert!(!text.contains("Encoding:"), "{path}: {text}"),
        }
    }
}

#[tokio::test]
async fn cancellation_stops_the_fetch() {
    // The server answers with a head and then nothing; the call is cancelled once the request
    // has arrived. Without cancellation the fetch would end at its 15 s deadline instead.
    let server =
        Server::start(|_| Reply::Stall(head_only("200 OK", &[("Content-Type", "text/plain")])))
            .await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(&dir);
    let cancel = ctx.cancel().clone();
    let webfetch = tool();
    let url = server.url("/");
    let call = fetch_with(&webfetch, &ctx, &url, "raw");
    let cancel_on_arrival = async {
        server.request_arrived().await;
        cancel.cancel();
        std::future::pending::<()>().await;
    };
    let out = tokio::select! {
        out = call => out,
        () = cancel_on_arrival => unreachable!(),
    };
    let text = out.text_content();
    assert!(
        out.is_error && text.contains("the fetch was cancelled"),
        "{text}"
    );
    assert_eq!(server.connection_end().await, End::Dropped { chunks: 0 });
}

#[test]
fn registered_with_a_closed_schema() {
    let mut registry = Registry::new();
    vak_tool_net::register(&mut registry, &settings());
    let tool = registry.get("webfetch").unwrap();
    let spec = tool.spec();
    assert_eq!(spec.capabilities, [vak_tool_core::Capability::Network]);
    // The settings given at registration are the ones described.
    assert!(
        spec.description
            .contains("configuration allows: 127.0.0.2/32"),
        "{}",
        spec.description
    );
    let schema = &spec.input_schema;
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["url"]));
    for field in ["url", "format"] {
        assert!(
            schema["properties"][field]["description"].is_string(),
            "{field}"
        );
    }
}
