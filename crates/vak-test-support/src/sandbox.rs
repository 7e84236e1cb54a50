//! The sandbox helper binary (`vak-sandbox`) for tests that run tools confined.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The `vak-sandbox` helper where cargo puts its binary: the profile folder above `deps/`, where
/// the running test lives. `cargo test` of one package does not build another package's binary,
/// so it is built here once when missing (with `--release` under a release profile).
pub fn helper() -> PathBuf {
    static HELPER: OnceLock<PathBuf> = OnceLock::new();
    HELPER
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile = exe.parent().and_then(Path::parent).unwrap();
            let helper = profile.join("vak-sandbox");
            if !helper.is_file() {
                #[allow(
                    clippy::disallowed_methods,
                    reason = "a test builds the sandbox helper with cargo"
                )]
                let mut cargo = std::process::Command::new(env!("CARGO"));
                cargo.args(["build", "-p", "vak-sandbox", "--bin", "vak-sandbox"]);
                if profile.file_name() == Some("release".as_ref()) {
                    cargo.arg("--release");
                }
                let status = cargo.status().unwrap();
                assert!(status.success() && helper.is_file(), "building vak-sandbox");
            }
            helper
        })
        .clone()
}
