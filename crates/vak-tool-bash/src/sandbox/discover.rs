//! Finding the sandbox helper.
//!
//! In order: the `[bash] sandbox_helper` setting (the `vak-tools` binary sets it to itself,
//! since it embeds the helper); `vak-sandbox` next to the current executable; `vak-sandbox` in
//! the folder above it (cargo puts test binaries in `target/<profile>/deps/` and the crate's
//! binaries in `target/<profile>/`); `vak-sandbox` on `PATH`.

use std::path::{Path, PathBuf};

/// The helper binary's file name.
pub(crate) const HELPER_NAME: &str = "vak-sandbox";

/// Whether `path` is a file someone may execute.
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// The helper, or every place that was looked at.
pub(crate) fn find_helper(setting: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>> {
    if let Some(path) = setting {
        return if executable(path) {
            Ok(path.to_path_buf())
        } else {
            Err(vec![path.to_path_buf()])
        };
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let mut folder = exe.parent();
        for _ in 0..2 {
            if let Some(dir) = folder {
                candidates.push(dir.join(HELPER_NAME));
                folder = dir.parent();
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|dir| dir.join(HELPER_NAME)));
    }
    match candidates.iter().find(|candidate| executable(candidate)) {
        Some(found) => Ok(found.clone()),
        None => Err(candidates),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_taken_as_is_and_must_be_executable() {
        assert_eq!(
            find_helper(Some(Path::new("/bin/sh"))),
            Ok(PathBuf::from("/bin/sh"))
        );
        assert_eq!(
            find_helper(Some(Path::new("/nonexistent/helper"))),
            Err(vec![PathBuf::from("/nonexistent/helper")])
        );
        assert!(find_helper(Some(Path::new("/etc/passwd"))).is_err());
    }

    #[test]
    fn the_test_layout_finds_the_crates_binary() {
        // cargo builds `vak-sandbox` next to `deps/`, where this test binary runs.
        let found = find_helper(None).unwrap();
        assert!(found.ends_with(HELPER_NAME), "{}", found.display());
    }
}
