//! Property tests of the guard's pure core: URL -> verdict never panics, and the verdict is stable
//! when the parsed URL is serialised and checked again.

use proptest::prelude::*;
use vak_guard::{Chain, Guard, Rule};

use crate::support::allowing;

fn verdict_of(guard: &Guard, input: &str) -> (bool, String) {
    match guard.check_url(input, &Chain::new()) {
        Ok(url) => (true, url.to_string()),
        Err(refusal) => (
            false,
            format!("{:?}", std::mem::discriminant(refusal.rule())),
        ),
    }
}

fn host() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u32>().prop_map(|n| n.to_string()),
        any::<u32>().prop_map(|n| format!("0x{n:x}")),
        any::<u32>().prop_map(|n| format!("0{n:o}")),
        any::<[u8; 4]>().prop_map(|o| format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3])),
        (any::<u8>(), any::<u32>()).prop_map(|(a, b)| format!("{a}.{}", b & 0xff_ffff)),
        any::<[u16; 8]>().prop_map(|s| format!("[{}]", s.map(|x| format!("{x:x}")).join(":"))),
        any::<u32>().prop_map(|n| format!("[::ffff:{}]", std::net::Ipv4Addr::from(n))),
        any::<u32>().prop_map(|n| format!("[64:ff9b::{}]", std::net::Ipv4Addr::from(n))),
        "[a-zA-Z0-9.%-]{1,20}",
        "\\PC{1,12}",
        Just("localhost.".to_string()),
        Just("①②⑦.⓪.⓪.①".to_string()),
    ]
}

fn url() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("http"),
            Just("https"),
            Just("HTTP"),
            Just("file"),
            Just("gopher"),
            Just("")
        ],
        prop_oneof![Just(""), Just("user@"), Just("u:p@"), Just(":@")],
        host(),
        prop_oneof![
            Just(String::new()),
            any::<u16>().prop_map(|p| format!(":{p}")),
            "\\:[0-9]{1,6}"
        ],
        "[/a-z0-9?#%.\\\\]{0,12}",
    )
        .prop_map(|(scheme, userinfo, host, port, path)| {
            format!("{scheme}://{userinfo}{host}{port}{path}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn verdicts_are_total_and_stable(input in prop_oneof![url(), "\\PC{0,40}"]) {
        let guard = Guard::new(&allowing(&["10.0.0.0/8", "wiki.corp"]));
        let result = guard.check_url(&input, &Chain::new());
        let serialised = match &result {
            Ok(url) => Some(url.to_string()),
            Err(refusal) if !matches!(refusal.rule(), Rule::Unparsable { .. }) => {
                refusal.url().map(str::to_string)
            }
            Err(_) => None,
        };
        if let Some(serialised) = serialised {
            let first = verdict_of(&guard, &input);
            let second = verdict_of(&guard, &serialised);
            prop_assert_eq!(first, second, "{} -> {}", input, serialised);
        }
        // Display never panics either.
        if let Err(refusal) = result {
            prop_assert!(!refusal.to_string().is_empty());
        }
    }
}
