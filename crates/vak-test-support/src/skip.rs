//! What a test does when a program or SDK that `cargo xtask ci` installs is missing: under `CI`
//! it fails (CI installed it, so its absence is a bug); elsewhere the test is skipped with a line
//! that says how to install it.

/// Whether the test runs under CI (`CI` set to anything but empty or `false`).
#[must_use]
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|value| !value.is_empty() && value != "false")
}

/// `Ok` as `true`; `Err(why)` fails the test under CI, and elsewhere prints
/// `skipped: {why}; {install}` and gives `false`.
#[must_use]
pub fn present_or_skip(found: Result<(), String>, install: &str) -> bool {
    match found {
        Ok(()) => true,
        Err(why) => {
            assert!(!in_ci(), "{why}: {install}");
            eprintln!("skipped: {why}; {install}");
            false
        }
    }
}

/// Whether `program` is a file in one of `PATH`'s folders.
#[must_use]
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// [`on_path`], with [`present_or_skip`]'s verdict: `cargo xtask ci` installs `program`.
#[must_use]
pub fn program_or_skip(program: &str) -> bool {
    let found = if on_path(program) {
        Ok(())
    } else {
        Err(format!("`{program}` is not installed"))
    };
    present_or_skip(found, "`cargo xtask ci` installs it")
}
