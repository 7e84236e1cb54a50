//! Path resolution with workspace confinement.
//!
//! The real location of a path is found by walking it one component at a time and following
//! every symbolic link of the part that exists, as the kernel would. Only then is it compared
//! with the workspace, so that neither `..` nor a link that points outside can escape.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::PathPolicy;

/// The most symbolic links followed while resolving one path (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Why a path the model gave cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    #[error(
        "the path is empty: give a file or folder path, relative to the working folder or absolute"
    )]
    Empty,
    /// The real location lies outside the workspace.
    #[error(
        "`{given}` resolves to {resolved}{via}, which is outside the workspace {workspace}. \
         File tools only reach paths inside the workspace: use a path under {workspace}",
        resolved = resolved.display(),
        workspace = workspace.display(),
        via = if *through_link { " through a symbolic link" } else { "" }
    )]
    OutsideWorkspace {
        /// The path as the model gave it.
        given: String,
        /// Where it really points.
        resolved: PathBuf,
        /// The workspace root.
        workspace: PathBuf,
        /// Whether a symbolic link took it out.
        through_link: bool,
    },
    /// Too many symbolic links, most likely a loop.
    #[error(
        "`{given}` goes through more than {MAX_LINKS} symbolic links (a loop?): give a path without the loop"
    )]
    LinkLoop {
        /// The path as the model gave it.
        given: String,
    },
    /// The real location is hidden from the tools (`[sandbox] deny_read`: a credential store).
    #[error(
        "`{given}` resolves to {resolved}, which is hidden by `[sandbox] deny_read` (a \
         credential store, or a path the person listed): the tools do not read it, and commands \
         see it as absent. If the task needs it, the person running the agent can remove it \
         from `[sandbox] deny_read` (or set `default_deny_read = false` for the built-in \
         credential stores)",
        resolved = resolved.display()
    )]
    Hidden {
        /// The path as the model gave it.
        given: String,
        /// Where it really points.
        resolved: PathBuf,
    },
    /// The filesystem refused a look-up on the way.
    #[error("cannot resolve `{given}`: {source}")]
    Io {
        /// The path as the model gave it.
        given: String,
        /// The underlying error.
        source: io::Error,
    },
}

/// Resolves `input` against `base` (the cwd), then applies `policy`. `workspace` and `base` are
/// canonical.
pub(crate) fn resolve(
    workspace: &Path,
    base: &Path,
    input: &Path,
    policy: PathPolicy,
) -> Result<PathBuf, PathError> {
    if input.as_os_str().is_empty() {
        return Err(PathError::Empty);
    }
    let given = || input.display().to_string();
    let joined = if input.is_absolute() {
        input.to_path_buf()
    } else {
        base.join(input)
    };
    let (resolved, through_link) = real_location(&joined).map_err(|error| match error {
        RealError::Loop => PathError::LinkLoop { given: given() },
        RealError::Io(source) => PathError::Io {
            given: given(),
            source,
        },
    })?;
    if policy == PathPolicy::Workspace && !resolved.starts_with(workspace) {
        return Err(PathError::OutsideWorkspace {
            given: given(),
            resolved,
            workspace: workspace.to_path_buf(),
            through_link,
        });
    }
    Ok(resolved)
}

enum RealError {
    Loop,
    Io(io::Error),
}

/// The real location of an absolute path: symbolic links of the existing part followed, `.`
/// and `..` applied after each link is expanded (as the kernel does), the part that does not
/// exist appended as written. Also tells whether any link was followed.
fn real_location(path: &Path) -> Result<(PathBuf, bool), RealError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            other => pending.push_back(other.as_os_str().to_owned()),
        }
    }
    let mut exists = true;
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == "." {
            continue;
        }
        if part == ".." {
            out.pop();
            continue;
        }
        out.push(&part);
        if !exists {
            continue;
        }
        match std::fs::symlink_metadata(&out) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(RealError::Loop);
                }
                let target = std::fs::read_link(&out).map_err(RealError::Io)?;
                out.pop();
                let mut expanded = VecDeque::new();
                for component in target.components() {
                    match component {
                        Component::Prefix(_) | Component::RootDir => {
                            out = PathBuf::from(component.as_os_str());
                        }
                        other => expanded.push_back(other.as_os_str().to_owned()),
                    }
                }
                while let Some(part) = expanded.pop_back() {
                    pending.push_front(part);
                }
            }
            Ok(_) => {}
            Err(error)
                if error.kind() == io::ErrorKind::NotFound
                    || error.kind() == io::ErrorKind::NotADirectory =>
            {
                exists = false;
            }
            Err(error) => return Err(RealError::Io(error)),
        }
    }
    Ok((out, links > 0))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    struct Fixture {
        _outside: tempfile::TempDir,
        _root: tempfile::TempDir,
        workspace: PathBuf,
        outside: PathBuf,
    }

    /// A workspace with `sub/file.txt`, a link `in -> sub`, a link `out -> <outside>`, a link
    /// `loop -> loop`, a dangling link `dangling -> sub/new.txt`, and an outside folder.
    fn fixture() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let outside_dir = tempfile::tempdir().unwrap();
        let workspace = root.path().canonicalize().unwrap();
        let outside = outside_dir.path().canonicalize().unwrap();
        std::fs::create_dir(workspace.join("sub")).unwrap();
        std::fs::write(workspace.join("sub/file.txt"), "x").unwrap();
        std::fs::write(outside.join("secret.txt"), "s").unwrap();
        symlink(workspace.join("sub"), workspace.join("in")).unwrap();
        symlink(&outside, workspace.join("out")).unwrap();
        symlink("loop", workspace.join("loop")).unwrap();
        symlink("sub/new.txt", workspace.join("dangling")).unwrap();
        symlink("../../etc", workspace.join("sub/up")).unwrap();
        Fixture {
            _outside: outside_dir,
            _root: root,
            workspace,
            outside,
        }
    }

    enum Expect {
        At(&'static str),
        Outside,
        Loop,
    }

    #[test]
    fn resolution_table() {
        use Expect::*;
        let fx = fixture();
        let ws = &fx.workspace;
        let outside_file = fx.outside.join("secret.txt");
        let outside_file = outside_file.to_str().unwrap();
        let ws_file = ws.join("sub/file.txt");
        let ws_file = ws_file.to_str().unwrap();
        // (cwd relative to workspace, input, expected under Workspace policy)
        let cases: Vec<(&str, &str, Expect)> = vec![
            ("", "sub/file.txt", At("sub/file.txt")),
            ("sub", "file.txt", At("sub/file.txt")),
            ("sub", "./file.txt", At("sub/file.txt")),
            ("sub", "../sub/file.txt", At("sub/file.txt")),
            ("", ws_file, At("sub/file.txt")),
            ("", "in/file.txt", At("sub/file.txt")),
            ("", "sub/new/deeper/file.txt", At("sub/new/deeper/file.txt")),
            ("", "sub/new/../x.txt", At("sub/x.txt")),
            ("", "dangling", At("sub/new.txt")),
            ("", "in/../sub/file.txt", At("sub/file.txt")),
            ("", ".", At("")),
            ("", "..", Outside),
            ("sub", "../../x", Outside),
            ("", "sub/../../x", Outside),
            ("", outside_file, Outside),
            ("", "/etc/passwd", Outside),
            ("", "out/secret.txt", Outside),
            ("", "out/new-file.txt", Outside),
            ("", "sub/up/passwd", Outside),
            ("", "loop", Loop),
            ("", "loop/x", Loop),
        ];
        for (cwd, input, expected) in cases {
            let base = ws.join(cwd);
            let got = resolve(ws, &base, Path::new(input), PathPolicy::Workspace);
            match (expected, got) {
                (At(rel), Ok(path)) => {
                    let want = if rel.is_empty() {
                        ws.clone()
                    } else {
                        ws.join(rel)
                    };
                    assert_eq!(path, want, "cwd {cwd:?} input {input:?}");
                }
                (Outside, Err(PathError::OutsideWorkspace { .. })) => {}
                (Loop, Err(PathError::LinkLoop { .. })) => {}
                (_, got) => panic!("cwd {cwd:?} input {input:?}: unexpected {got:?}"),
            }
        }
    }

    #[test]
    fn unrestricted_policy_resolves_outside_paths() {
        let fx = fixture();
        let ws = &fx.workspace;
        for (input, want) in [
            ("out/secret.txt", fx.outside.join("secret.txt")),
            ("out/new.txt", fx.outside.join("new.txt")),
            ("sub/file.txt", ws.join("sub/file.txt")),
        ] {
            let got = resolve(ws, ws, Path::new(input), PathPolicy::Unrestricted).unwrap();
            assert_eq!(got, want, "{input}");
        }
        let parent = resolve(ws, ws, Path::new(".."), PathPolicy::Unrestricted).unwrap();
        assert_eq!(parent, ws.parent().unwrap());
    }

    #[test]
    fn errors_explain_themselves() {
        let fx = fixture();
        let ws = &fx.workspace;
        let error =
            resolve(ws, ws, Path::new("out/secret.txt"), PathPolicy::Workspace).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("out/secret.txt"), "{text}");
        assert!(text.contains("through a symbolic link"), "{text}");
        assert!(text.contains("outside the workspace"), "{text}");
        let error = resolve(ws, ws, Path::new(""), PathPolicy::Workspace).unwrap_err();
        assert!(matches!(error, PathError::Empty));
    }
}
