//! The transaction's all-or-nothing promise, with failures and crashes injected at every step.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use super::recover::recover_dir;
use super::*;

/// Every file under `root` (the journal folder excluded) with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.starts_with(root.join("journal")) {
                continue;
            }
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                out.insert(path.strip_prefix(root).unwrap().join(""), Vec::new());
                walk(&path, root, out);
            } else {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A tree, and a transaction over it that writes, creates (in new folders), writes a file with
/// two hard links, and removes; `variant` varies the sizes.
fn scene(root: &Path, variant: usize) -> Transaction {
    fs::create_dir_all(root.join("src")).unwrap();
    for n in 0..4 {
        fs::write(
            root.join(format!("src/f{n}.txt")),
            format!("old {n}\n").repeat(variant + 1),
        )
        .unwrap();
    }
    fs::write(root.join("linked.txt"), "linked old\n").unwrap();
    fs::hard_link(root.join("linked.txt"), root.join("other-name.txt")).unwrap();
    fs::write(root.join("gone.txt"), "to remove\n").unwrap();
    let mut transaction = Transaction::new(root.join("journal"));
    for n in 0..4 {
        transaction.write(
            root.join(format!("src/f{n}.txt")),
            format!("new {n}\n").repeat(variant + 2).into_bytes(),
            Expect::Anything,
        );
    }
    transaction.write(
        root.join("a/b/new.txt"),
        b"created\n".to_vec(),
        Expect::Anything,
    );
    transaction.write(
        root.join("linked.txt"),
        b"linked new\n".to_vec(),
        Expect::Anything,
    );
    transaction.remove(root.join("gone.txt"), Expect::Anything);
    transaction
}

/// What the tree is after a successful commit of [`scene`].
fn after(root: &Path, variant: usize) -> BTreeMap<PathBuf, Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join(root.file_name().unwrap());
    scene(&scratch, variant).commit().unwrap();
    snapshot(&scratch)
}

#[test]
fn a_commit_applies_everything_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let outcomes = scene(root, 0).commit().unwrap();
    assert_eq!(outcomes.len(), 7);
    assert_eq!(outcomes[4], Outcome::Written(Previous::Created));
    assert_eq!(
        outcomes[5],
        Outcome::Written(Previous::Replaced {
            bytes: 11,
            way: Way::InPlaceLinks(2)
        })
    );
    assert_eq!(outcomes[6], Outcome::Removed { bytes: 10 });
    assert_eq!(
        fs::read(root.join("other-name.txt")).unwrap(),
        b"linked new\n"
    );
    assert_eq!(fs::read(root.join("a/b/new.txt")).unwrap(), b"created\n");
    assert!(!root.join("gone.txt").exists());
    // No temporary file, backup or journal left.
    let names: Vec<String> = snapshot(root)
        .keys()
        .map(|path| path.display().to_string())
        .filter(|name| name.contains(".vak-tx-"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    assert_eq!(fs::read_dir(root.join("journal")).unwrap().count(), 0);
}

#[test]
fn a_failure_at_the_last_file_leaves_every_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut transaction = scene(root, 0);
    let before = snapshot(root);
    let inode = fs::metadata(root.join("src/f0.txt")).unwrap().ino();
    let last = transaction.len() - 1;
    transaction.fail_apply_at = Some(last);
    let error = transaction.commit().unwrap_err();
    assert!(error.to_string().contains("simulated failure"), "{error}");
    assert_eq!(snapshot(root), before);
    // The old file itself is back, not a copy.
    assert_eq!(fs::metadata(root.join("src/f0.txt")).unwrap().ino(), inode);
    assert_eq!(fs::read_dir(root.join("journal")).unwrap().count(), 0);
}

#[test]
fn a_failure_at_each_file_leaves_every_file_as_it_was() {
    for at in 0..7 {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut transaction = scene(root, at);
        let before = snapshot(root);
        transaction.fail_apply_at = Some(at);
        assert!(transaction.commit().is_err());
        assert_eq!(snapshot(root), before, "failure at {at}");
    }
}

#[test]
fn a_changed_target_stops_the_transaction_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    fs::write(root.join("b.txt"), "b\n").unwrap();
    let stamp = Stamp::of(&fs::metadata(root.join("b.txt")).unwrap());
    fs::write(root.join("b.txt"), "someone else\n").unwrap();
    let mut transaction = Transaction::new(root.join("journal"));
    transaction.write(root.join("a.txt"), b"A\n".to_vec(), Expect::Anything);
    transaction.write(
        root.join("b.txt"),
        b"B\n".to_vec(),
        Expect::Unchanged(stamp),
    );
    let error = transaction.commit().unwrap_err();
    assert!(matches!(error, CommitError::Changed { .. }), "{error}");
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"a\n");
    assert_eq!(fs::read(root.join("b.txt")).unwrap(), b"someone else\n");
    assert_eq!(fs::read_dir(root).unwrap().count(), 3);
}

#[test]
fn the_same_file_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut transaction = Transaction::new(dir.path().join("journal"));
    transaction.write(dir.path().join("a"), b"1".to_vec(), Expect::Anything);
    transaction.write(dir.path().join("a"), b"2".to_vec(), Expect::Anything);
    assert!(transaction.commit().is_err());
    assert!(!dir.path().join("a").exists());
}

/// A crash after every step of the commit, each followed by recovery: the tree is always
/// entirely as before or entirely as after, and nothing of the transaction is left.
#[test]
fn a_crash_at_any_step_then_recovery_gives_all_or_nothing() {
    let mut iterations = 0;
    let (mut finished, mut undone) = (0, 0);
    for variant in 0..3 {
        let mut step = 1;
        loop {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("ws");
            fs::create_dir(&root).unwrap();
            let mut transaction = scene(&root, variant);
            let before = snapshot(&root);
            let want = after(&root, variant);
            transaction.crash_after = Some(step);
            let crashed = transaction.commit().is_err();
            let recovered = recover_dir(&root.join("journal"));
            let now = snapshot(&root);
            iterations += 1;
            if now == before {
                undone += 1;
            } else if now == want {
                finished += 1;
            } else {
                panic!(
                    "crash after step {step} (variant {variant}): a mixed state\n{:#?}",
                    now.keys().collect::<Vec<_>>()
                );
            }
            assert_eq!(
                fs::read_dir(root.join("journal")).unwrap().count(),
                0,
                "journal left after step {step}"
            );
            if !crashed {
                assert!(recovered.is_empty());
                break;
            }
            assert_eq!(recovered.len(), 1, "step {step}");
            assert_eq!(recovered[0].finished, now == want && now != before);
            step += 1;
        }
    }
    assert!(iterations > 40, "{iterations}");
    assert!(
        finished > 10 && undone > 5,
        "{finished} finished, {undone} undone"
    );
}

#[test]
fn recovery_leaves_a_running_transaction_alone() {
    let dir = tempfile::tempdir().unwrap();
    let journal_dir = dir.path().join("journal");
    fs::create_dir(&journal_dir).unwrap();
    let files = Files::new(&journal_dir, "live");
    let text = journal::render("live", &[(Op::Write, &dir.path().join("x"))], &[]);
    let held = journal::write_whole(&files.journal, &text, fs::File::lock).unwrap();
    assert!(recover_dir(&journal_dir).is_empty());
    assert!(files.journal.exists());
    drop(held);
    assert_eq!(recover_dir(&journal_dir).len(), 1);
    assert!(!files.journal.exists());
}

#[test]
fn write_one_creates_parents_and_reports_the_old_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x/y.txt");
    assert_eq!(
        write_one(&path, b"1", None, |_| Ok(())).unwrap(),
        Previous::Created
    );
    assert_eq!(
        write_one(&path, b"22", None, |_| Ok(())).unwrap(),
        Previous::Replaced {
            bytes: 1,
            way: Way::Renamed
        }
    );
    assert_eq!(fs::read_dir(dir.path().join("x")).unwrap().count(), 1);
}
