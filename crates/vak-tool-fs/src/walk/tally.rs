//! [`Tally`]: what a walk left out, counted by rule, and the sentence that tells the model, so
//! that "nothing found" can be told from "not looked at".

use std::collections::BTreeMap;

use vak_tool_core::human;

use super::Rule;

/// Files and folders left out by one rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Files left out.
    pub(crate) files: usize,
    /// Folders left out (not walked into, so what they hold is not counted).
    pub(crate) folders: usize,
}

impl Counts {
    fn total(self) -> usize {
        self.files + self.folders
    }

    /// `1 folder`, `3 files`, `2 folders and 5 files`.
    fn phrase(self) -> String {
        let folders = human::count(self.folders as u64, "folder", "folders");
        let files = human::count(self.files as u64, "file", "files");
        match (self.folders, self.files) {
            (0, _) => files,
            (_, 0) => folders,
            _ => format!("{folders} and {files}"),
        }
    }
}

/// What a walk left out, by rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    by_rule: BTreeMap<Rule, Counts>,
    /// The walk was cut short by its file limit (`no_ignore` walks).
    pub(crate) walk_limit: Option<usize>,
}

impl Tally {
    /// Counts one entry left out.
    pub(crate) fn add(&mut self, rule: Rule, folder: bool) {
        let counts = self.by_rule.entry(rule).or_default();
        if folder {
            counts.folders += 1;
        } else {
            counts.files += 1;
        }
    }

    /// Entries left out by `rule`.
    pub(crate) fn get(&self, rule: Rule) -> Counts {
        self.by_rule.get(&rule).copied().unwrap_or_default()
    }

    /// Every entry left out.
    pub(crate) fn total(&self) -> usize {
        self.by_rule.values().map(|counts| counts.total()).sum()
    }

    /// `0 skipped`, or `7 skipped: 1 folder and 2 files ignored by .gitignore, 1 .git folder,
    /// 1 binary file`, then a hint when `no_ignore` would have included some of them.
    pub(crate) fn sentence(&self, no_ignore: bool) -> String {
        let mut text = format!("{} skipped", human::grouped(self.total() as u64));
        let parts: Vec<String> = self
            .by_rule
            .iter()
            .filter(|(_, counts)| counts.total() > 0)
            .map(|(rule, counts)| describe(*rule, *counts))
            .collect();
        if !parts.is_empty() {
            text.push_str(": ");
            text.push_str(&parts.join(", "));
        }
        if !no_ignore
            && self
                .by_rule
                .iter()
                .any(|(rule, counts)| rule.lifted_by_no_ignore() && counts.total() > 0)
        {
            text.push_str("; `no_ignore: true` includes ignored files and build folders");
        }
        if let Some(limit) = self.walk_limit {
            text.push_str(&format!(
                "; the walk stopped after {} files, so this is not everything: give a narrower \
                 `path`",
                human::grouped(limit as u64)
            ));
        }
        text
    }
}

fn describe(rule: Rule, counts: Counts) -> String {
    let phrase = counts.phrase();
    match rule {
        Rule::GitIgnore => format!("{phrase} ignored by .gitignore"),
        Rule::DotIgnore => format!("{phrase} ignored by .ignore"),
        Rule::GitExclude => format!("{phrase} ignored by .git/info/exclude"),
        Rule::GlobalExclude => format!("{phrase} ignored by your global git excludes"),
        Rule::GitFolder => human::count(counts.total() as u64, ".git folder", ".git folders"),
        Rule::BuildFolder => human::count(
            counts.total() as u64,
            "build or package folder (target, node_modules)",
            "build or package folders (target, node_modules)",
        ),
        Rule::Link => human::count(
            counts.total() as u64,
            "symbolic link leading outside the workspace, nowhere or into a loop",
            "symbolic links leading outside the workspace, nowhere or into a loop",
        ),
        Rule::Unreadable => format!("{phrase} that could not be read"),
        Rule::Binary => human::count(counts.total() as u64, "binary file", "binary files"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences() {
        let tally = |entries: &[(Rule, bool)]| {
            let mut tally = Tally::default();
            for (rule, folder) in entries {
                tally.add(*rule, *folder);
            }
            tally
        };
        let cases: &[(Tally, bool, &str)] = &[
            (Tally::default(), false, "0 skipped"),
            (
                tally(&[
                    (Rule::GitIgnore, true),
                    (Rule::GitIgnore, false),
                    (Rule::GitIgnore, false),
                ]),
                false,
                "3 skipped: 1 folder and 2 files ignored by .gitignore; `no_ignore: true` includes \
                 ignored files and build folders",
            ),
            (
                tally(&[(Rule::GitIgnore, false)]),
                true,
                "1 skipped: 1 file ignored by .gitignore",
            ),
            (
                tally(&[
                    (Rule::Binary, false),
                    (Rule::GitFolder, true),
                    (Rule::Link, false),
                    (Rule::Unreadable, true),
                ]),
                false,
                "4 skipped: 1 .git folder, 1 symbolic link leading outside the workspace, \
                 nowhere or into a loop, 1 folder that could not be read, 1 binary file",
            ),
            (
                tally(&[(Rule::BuildFolder, true), (Rule::BuildFolder, true)]),
                false,
                "2 skipped: 2 build or package folders (target, node_modules); `no_ignore: true` \
                 includes ignored files and build folders",
            ),
            (
                Tally {
                    walk_limit: Some(100_000),
                    ..tally(&[(Rule::DotIgnore, false), (Rule::GlobalExclude, false)])
                },
                true,
                "2 skipped: 1 file ignored by .ignore, 1 file ignored by your global git \
                 excludes; the walk stopped after 100,000 files, so this is not everything: give \
                 a narrower `path`",
            ),
        ];
        for (tally, no_ignore, want) in cases {
            assert_eq!(tally.sentence(*no_ignore), *want);
        }
    }
}
