//! What `read` says about a path that does not exist: a missing folder, or names that look
//! alike.

use std::fs;
use std::path::Path;

/// What to say when a path does not exist: a missing folder, or names that look alike.
pub(super) fn not_found_hint(path: &Path, shown: &str) -> String {
    let name = Path::new(shown)
        .file_name()
        .map_or_else(|| "NAME".into(), |name| name.to_string_lossy());
    let tail = format!(
        " Check the path, or find the file with `glob` (for example {{\"pattern\": \"**/{name}\"}})."
    );
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return tail;
    };
    let Ok(entries) = fs::read_dir(parent) else {
        let folder = Path::new(shown)
            .parent()
            .filter(|folder| !folder.as_os_str().is_empty())
            .unwrap_or(parent);
        return format!(
            " Its folder `{}` does not exist either.{tail}",
            folder.display()
        );
    };
    let wanted = name.to_string_lossy().to_lowercase();
    let wanted_stem = stem(&wanted);
    let mut similar: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|candidate| {
            let lower = candidate.to_lowercase();
            let candidate_stem = stem(&lower);
            lower == wanted
                || candidate_stem == wanted_stem
                || (wanted_stem.len() >= 3 && candidate_stem.contains(wanted_stem))
                || (candidate_stem.len() >= 3 && wanted_stem.contains(candidate_stem))
        })
        .collect();
    if similar.is_empty() {
        return tail;
    }
    similar.sort();
    similar.truncate(5);
    let names = similar
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(" Its folder has similar names: {names}.{tail}")
}

fn stem(name: &str) -> &str {
    match name.rfind('.') {
        Some(dot) if dot > 0 => &name[..dot],
        _ => name,
    }
}
