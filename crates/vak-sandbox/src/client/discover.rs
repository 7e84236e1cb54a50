//! Finding the sandbox helper.
//!
//! In order: the `[bash] sandbox_helper` setting (the `vak-tools` binary sets it to itself,
//! since it embeds the helper); `vak-sandbox` next to the current executable; `vak-sandbox` in
//! the folder above it (cargo puts test binaries in `target/<profile>/deps/` and the crate's
//! binaries in `target/<profile>/`); `vak-sandbox` on `PATH`.
//!
//! A sandboxed call never takes its helper from a folder the sandbox can write
//! ([`find_helper_outside`]): a command could put its own program there, and the next call
//! would run it unconfined (`cargo run` from the workspace finds `target/debug/vak-sandbox`
//! inside it). [`RUNNING_PROGRAM`] names the running program itself, through the kernel's
//! handle on its image, which no file put in its place since can change.

use std::path::{Path, PathBuf};

/// The helper binary's file name.
pub(crate) const HELPER_NAME: &str = "vak-sandbox";

/// Whether `path` is a file someone may execute.
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// The running program itself as the helper (for a program that embeds it, as `vak-tools`
/// does): `/proc/self/exe` is the image the process runs, whatever has been put at its path
/// since.
pub const RUNNING_PROGRAM: &str = "/proc/self/exe";

/// Whether `path` is a file that only its owner may change, and its owner root or this user: a
/// helper anybody else can replace would be no sandbox.
fn trusted(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let user = rustix::process::getuid().as_raw();
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.mode() & 0o022 == 0 && (meta.uid() == 0 || meta.uid() == user))
}

/// The helper of a sandboxed call whose commands may write below `writable` (real paths):
/// as [`find_helper`], skipping every candidate below one of them (and refusing a setting
/// there), or one that others may change. `Err` says why none would do.
pub(crate) fn find_helper_outside(
    setting: Option<&Path>,
    writable: &[PathBuf],
) -> Result<PathBuf, String> {
    let inside = |path: &Path| {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        writable.iter().any(|folder| real.starts_with(folder))
    };
    let suitable =
        |path: &Path| path == Path::new(RUNNING_PROGRAM) || (!inside(path) && trusted(path));
    if let Some(path) = setting {
        if !executable(path) {
            return Err(format!(
                "its helper `{}` was not found or cannot be run; install `vak-sandbox` or name \
                 it in `[bash] sandbox_helper`",
                path.display()
            ));
        }
        if !suitable(path) {
            return Err(format!(
                "its helper `{}` lies in a folder the sandbox lets commands write, or others may \
                 change it, so a command could replace it; install `vak-sandbox` elsewhere and \
                 name it in `[bash] sandbox_helper`",
                path.display()
            ));
        }
        return Ok(path.to_path_buf());
    }
    let candidates = candidates();
    match candidates
        .iter()
        .find(|candidate| executable(candidate) && suitable(candidate))
    {
        Some(found) => Ok(found.clone()),
        None => {
            let looked: Vec<String> = candidates
                .iter()
                .take(6)
                .map(|path| path.display().to_string())
                .collect();
            Err(format!(
                "its helper `vak-sandbox` was not found outside the folders it may write \
                 (looked at {}{}); install it next to the program or name it in `[bash] \
                 sandbox_helper`",
                looked.join(", "),
                if candidates.len() > 6 { ", …" } else { "" }
            ))
        }
    }
}

/// Where a helper is looked for when no setting names it, in order.
fn candidates() -> Vec<PathBuf> {
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
    candidates
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
    let candidates = candidates();
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
    fn a_helper_in_a_folder_the_sandbox_writes_is_never_taken() {
        let own = find_helper(None).unwrap();
        let folder = std::fs::canonicalize(own.parent().unwrap()).unwrap();
        // Outside the writable folders, the same discovery finds it.
        assert_eq!(find_helper_outside(None, &[]), Ok(own.clone()));
        // Inside one, discovery skips it, and a setting naming it is refused.
        let found = find_helper_outside(None, std::slice::from_ref(&folder));
        assert_ne!(found.as_deref().ok(), Some(own.as_path()), "{found:?}");
        let refused = find_helper_outside(Some(&own), std::slice::from_ref(&folder)).unwrap_err();
        assert!(refused.contains("could replace it"), "{refused}");
        // The running program's own image is always fine.
        assert_eq!(
            find_helper_outside(Some(Path::new(RUNNING_PROGRAM)), &[folder]),
            Ok(PathBuf::from(RUNNING_PROGRAM))
        );
        // A helper anyone may change is refused too.
        let dir = std::env::temp_dir().join(format!("vak-helper-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join(HELPER_NAME);
        std::fs::copy(&own, &copy).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(find_helper_outside(Some(&copy), &[]).is_err());
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_helper_outside(Some(&copy), &[]), Ok(copy.clone()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_test_layout_finds_the_crates_binary() {
        // cargo builds `vak-sandbox` next to `deps/`, where this test binary runs.
        let found = find_helper(None).unwrap();
        assert!(found.ends_with(HELPER_NAME), "{}", found.display());
    }
}
