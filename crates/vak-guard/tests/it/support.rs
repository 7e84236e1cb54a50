//! What the guard and proxy tests share: the loopback origin servers on 127.0.0.2 (the address
//! the tests' allow lists name) and the scripted resolver are vak-test-support's, shared with
//! webfetch's tests; the settings are the guard's own.

use vak_guard::GuardSettings;

pub(crate) use vak_test_support::net::{
    Answer, SERVER_IP, Scripted, addrs, origin, origin_on, own_address, read_head,
};

/// Guard settings whose allow list names exactly these entries, with `egress = "open"`: these
/// tests pin the private-address rules, which the egress allow-list does not change (the
/// allow-list has tests of its own, in `egress.rs`).
pub(crate) fn allowing<S: ToString>(entries: &[S]) -> GuardSettings {
    GuardSettings::default()
        .open()
        .with_allow(entries.iter().map(ToString::to_string))
}
