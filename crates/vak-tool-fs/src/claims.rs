//! What each file tool's call touches, for a scheduler (see `vak_tool_core::Claims`): paths
//! resolved exactly as the tools resolve them, symbolic links included.

use std::path::PathBuf;

use vak_tool_core::{Claims, ToolContext};

/// Reads the file `path`; nothing when the path does not resolve (the call then fails first).
pub(crate) fn read_file(ctx: &ToolContext, path: &str) -> Claims {
    match ctx.resolve_path(path) {
        Ok(path) => Claims::none().read_file(&path),
        Err(_) => Claims::none(),
    }
}

/// Writes the file `path`; nothing when the path does not resolve.
pub(crate) fn write_file(ctx: &ToolContext, path: &str) -> Claims {
    match ctx.resolve_path(path) {
        Ok(path) => Claims::none().write_file(&path),
        Err(_) => Claims::none(),
    }
}

/// Reads everything below `path` (the working folder when absent): glob, grep and tree.
pub(crate) fn read_tree(ctx: &ToolContext, path: Option<&str>) -> Claims {
    let root = match path {
        Some(path) => ctx.resolve_path(path),
        None => Ok(ctx.cwd().to_path_buf()),
    };
    match root {
        Ok(root) => Claims::none().read_tree(&root),
        Err(_) => Claims::none(),
    }
}

/// The path a deletion of `path` removes: a symbolic link itself (in its resolved folder), not
/// the file it names; otherwise the path resolved as every tool resolves it.
pub(crate) fn resolve_for_delete(
    ctx: &ToolContext,
    path: impl AsRef<std::path::Path>,
) -> Result<PathBuf, vak_tool_core::PathError> {
    let path = path.as_ref();
    let given = ctx.cwd().join(path);
    if std::fs::symlink_metadata(&given).is_ok_and(|meta| meta.is_symlink())
        && let (Some(parent), Some(name)) = (given.parent(), given.file_name())
    {
        return Ok(ctx.resolve_path(parent)?.join(name));
    }
    ctx.resolve_path(path)
}

/// Writes every file a patch names (`Add`, `Delete`, `Update` and `Move to` headers); the whole
/// workspace when one of them does not resolve, so that a patch the scheduler cannot read
/// through is still ordered against every file call.
pub(crate) fn patch(ctx: &ToolContext, patch: &str) -> Claims {
    const HEADERS: [&str; 4] = [
        "*** Add File:",
        "*** Delete File:",
        "*** Update File:",
        "*** Move to:",
    ];
    let mut paths: Vec<PathBuf> = Vec::new();
    for line in patch.lines() {
        let line = line.trim();
        let Some(name) = HEADERS
            .iter()
            .find_map(|header| line.strip_prefix(header))
            .map(str::trim)
        else {
            continue;
        };
        let resolved = if line.starts_with("*** Delete File:") {
            resolve_for_delete(ctx, name)
        } else {
            ctx.resolve_path(name)
        };
        match resolved {
            Ok(path) => paths.push(path),
            Err(_) => return Claims::none().write_tree(ctx.workspace()),
        }
    }
    paths
        .iter()
        .fold(Claims::none(), |claims, path| claims.write_file(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_through_links_and_dot_dot() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("real")).unwrap();
        std::fs::write(ws.join("real/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink(ws.join("real"), ws.join("link")).unwrap();
        let ctx = ToolContext::new(&ws).unwrap();
        let expected = Claims::none().write_file(&ws.join("real/f.txt"));
        assert_eq!(write_file(&ctx, "link/f.txt"), expected);
        assert_eq!(write_file(&ctx, "real/../real/f.txt"), expected);
        assert_eq!(
            write_file(&ctx, &ws.join("link/f.txt").display().to_string()),
            expected
        );
        // Outside the workspace: the call fails before touching anything.
        assert_eq!(read_file(&ctx, "../outside"), Claims::none());
        assert_eq!(read_tree(&ctx, None), Claims::none().read_tree(&ws));
        assert_eq!(
            read_tree(&ctx, Some("link")),
            Claims::none().read_tree(&ws.join("real"))
        );
    }

    #[test]
    fn a_patch_claims_every_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let ctx = ToolContext::new(&ws).unwrap();
        let claims = patch(
            &ctx,
            "*** Begin Patch\n*** Add File: a.txt\n+x\n  *** Update File: b.txt\n*** Move to: c/d.txt\n@@\n-y\n+z\n*** Delete File: e.txt\n*** End Patch",
        );
        let expected = ["a.txt", "b.txt", "c/d.txt", "e.txt"]
            .iter()
            .fold(Claims::none(), |claims, name| {
                claims.write_file(&ws.join(name))
            });
        assert_eq!(claims, expected);
        let outside = patch(
            &ctx,
            "*** Begin Patch\n*** Delete File: ../../etc/passwd\n*** End Patch",
        );
        assert_eq!(outside, Claims::none().write_tree(&ws));
    }
}
