//! `[commitment]` of `.vak/config.toml`: whether the tool is offered, and where its store is.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[commitment]` of `.vak/config.toml`. Every key is optional; a missing key keeps its
/// default.
///
/// ```
/// let settings: vak_tool_commitments::CommitmentSettings =
///     serde_json::from_str(r#"{"enabled": true, "db": "state/c.db"}"#).unwrap();
/// assert!(settings.enabled);
/// assert_eq!(settings.db.as_deref(), Some(std::path::Path::new("state/c.db")));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct CommitmentSettings {
    /// Whether `commitments` is offered (default `false`). The facade reads it and calls
    /// [`register`](crate::register) only when it is set; `register` itself always registers.
    pub enabled: bool,
    /// The SQLite store, relative to the workspace unless absolute (default `None`:
    /// [`DEFAULT_DB`](crate::DEFAULT_DB), `.vak/commitments.db`). It comes from the person's
    /// configuration, not from the model, so it is not confined to the workspace.
    pub db: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_section_is_the_default_and_unknown_keys_are_refused() {
        let empty: CommitmentSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, CommitmentSettings::default());
        assert!(!empty.enabled);
        assert_eq!(empty.db, None);
        let error = serde_json::from_str::<CommitmentSettings>(r#"{"path": "x"}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field"), "{error}");
    }
}
