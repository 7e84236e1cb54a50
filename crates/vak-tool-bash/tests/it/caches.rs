//! The package managers' caches in `workspace-write`: writable, in the workspace's own
//! `.vak/cache`, never the home folder's (shared by every project), judged from the host. Both
//! operations stay on the machine: npm adds a local tarball to its cache, cargo locks a
//! project whose one dependency is a local git repository (`file://`), which it clones into
//! `$CARGO_HOME/git`.

use std::path::Path;

use serde_json::json;

use crate::support::{Setup, test_settings};

/// The package's files (npm's tarball holds `package/package.json`) and two crates below
/// `root`: `b`, made a git repository by the command, and `a`, depending on it by git.
fn plant(root: &Path) {
    std::fs::create_dir_all(root.join("staging/package")).unwrap();
    std::fs::write(
        root.join("staging/package/package.json"),
        r#"{"name": "vak-left-pad", "version": "1.0.0"}"#,
    )
    .unwrap();
    let b = root.join("b");
    std::fs::create_dir_all(b.join("src")).unwrap();
    std::fs::write(
        b.join("Cargo.toml"),
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(b.join("src/lib.rs"), "").unwrap();
    let a = root.join("a");
    std::fs::create_dir_all(a.join("src")).unwrap();
    std::fs::write(
        a.join("Cargo.toml"),
        format!(
            "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             [dependencies]\nb = {{ git = \"file://{}\" }}\n",
            b.display()
        ),
    )
    .unwrap();
    std::fs::write(a.join("src/lib.rs"), "").unwrap();
}

/// Makes the tarball and `b`'s repository, then the two cache writes.
const COMMAND: &str = "set -e; tar czf vak-left-pad-1.0.0.tgz -C staging package; \
    (cd b && git init -q && git add . && \
     git -c user.name=t -c user.email=t@t commit -qm b); set +e; \
    npm cache add ./vak-left-pad-1.0.0.tgz --offline && npm cache ls --offline && echo npm=ok; \
    cd a && cargo generate-lockfile && echo cargo=ok";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_caches_are_writable_and_the_workspaces_own() {
    // A home folder as a person's looks: cargo's and npm's folders already there.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".cargo")).unwrap();
    std::fs::create_dir(home.path().join(".npm")).unwrap();
    let setup = Setup::with_settings(test_settings());
    plant(setup.dir.path());
    // A fake home (the real one is never touched); rustup still finds its toolchains.
    let rustup = std::env::var_os("RUSTUP_HOME").unwrap_or_else(|| {
        Path::new(&std::env::var_os("HOME").unwrap())
            .join(".rustup")
            .into_os_string()
    });
    let mut env: Vec<_> = setup.ctx.env().to_vec();
    env.retain(|(name, _)| name != "CARGO_HOME");
    env.push(("HOME".into(), home.path().as_os_str().to_owned()));
    env.push(("RUSTUP_HOME".into(), rustup));
    let ctx = setup.ctx.clone().with_env(env);
    let run = setup.call_in(json!({ "command": COMMAND }), &ctx).await;
    assert!(run.text.contains("npm=ok"), "{}", run.text);
    assert!(run.text.contains("vak-left-pad-1.0.0.tgz"), "{}", run.text);
    assert!(run.text.contains("cargo=ok"), "{}", run.text);
    assert!(!run.text.contains("EROFS"), "{}", run.text);
    // On the host: in the workspace's cache folder, nothing in the home folder.
    let caches = setup.dir.path().join(".vak/cache");
    assert!(caches.join("npm/_cacache").is_dir());
    assert!(caches.join("cargo/.package-cache").is_file());
    assert!(caches.join("cargo/git/db").is_dir());
    assert!(setup.dir.path().join("a/Cargo.lock").is_file());
    for folder in ["", ".cargo", ".npm"] {
        let entries = std::fs::read_dir(home.path().join(folder)).unwrap().count();
        assert_eq!(entries, if folder.is_empty() { 2 } else { 0 }, "~/{folder}");
    }
    // Kept out of the repository.
    let ignore = std::fs::read_to_string(caches.join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|line| line == "*"), "{ignore}");
}
