//! `bash`'s side of its sandbox (the [`vak_sandbox`] crate): the options its settings give,
//! and what `vak-tools` needs to embed the helper and to print `doctor`.

use vak_tool_core::PermissionMode;

pub use vak_sandbox::{HELPER_ARG, RUNNING_PROGRAM, helper_main};

use crate::settings::{BashSettings, UnixSockets};

/// What `[bash]` says about the sandbox of a command.
pub(crate) fn options(settings: &BashSettings) -> vak_sandbox::Options {
    vak_sandbox::Options {
        helper: settings.sandbox_helper.clone(),
        net: settings.network,
        shell: settings.shell.clone(),
        unix_sockets: settings.unix_sockets == UnixSockets::Allow,
        limits: limits(settings),
        env: settings.env.clone(),
        deny_read: settings.deny_read.clone(),
    }
}

/// The limits of `settings` (`[bash] max_processes`, `max_memory`, `max_open_files`) for each
/// command.
fn limits(settings: &BashSettings) -> vak_sandbox::Limits {
    vak_sandbox::Limits {
        max_processes: (settings.max_processes > 0).then_some(settings.max_processes),
        max_memory: settings.max_memory.bytes(),
        max_open_files: match settings.max_open_files {
            Some(0) => None,
            Some(max) => Some(max),
            None => vak_sandbox::half_the_file_table(),
        },
    }
}

/// What this machine offers the sandbox, as `vak-tools doctor` prints it: the mode, the
/// helper, the Landlock ABI, the namespaces, and what `bash` will do in `mode`.
pub fn doctor(settings: &BashSettings, mode: PermissionMode) -> String {
    vak_sandbox::doctor(settings.sandbox_helper.as_deref(), settings.network, mode)
}
