//! `HELPER __vak-sandbox probe`: what this machine offers the sandbox, for `vak-tools doctor`.
//!
//! Prints `landlock: ABI N` (or `landlock: unavailable (why)`) and `namespaces: yes` (or
//! `namespaces: unavailable (why)`), one per line, then exits. It restricts itself to find the
//! Landlock ABI and enters the namespaces to prove it can: a probe process is thrown away.

use std::process::ExitCode;

use crate::helper::plumbing::enter_namespaces;
use crate::helper::rules;

/// The probe's `main`.
pub(crate) fn main() -> ExitCode {
    // Namespaces first: entering them needs a single thread and nothing else.
    let namespaces = enter_namespaces();
    let landlock = rules::probe_abi();
    let mut out = String::new();
    match landlock {
        Ok(abi) => out.push_str(&format!("landlock: ABI {abi}\n")),
        Err(why) => out.push_str(&format!("landlock: unavailable ({why})\n")),
    }
    match namespaces {
        Ok(()) => out.push_str("namespaces: yes\n"),
        Err(why) => out.push_str(&format!("namespaces: unavailable ({why})\n")),
    }
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(out.as_bytes());
    ExitCode::SUCCESS
}
