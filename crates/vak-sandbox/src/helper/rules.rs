//! The Landlock rules of a sandboxed command: read and execute everywhere, write only below
//! the writable folders and to the harmless devices.
//!
//! The ruleset handles every filesystem right of Landlock ABI 5 (best effort) and refuses to
//! run below ABI 3: before it, `truncate(2)` is not governed, so a command could empty any file
//! the user owns. The scopes of ABI 6 (no signal to a process outside the sandbox, no abstract
//! Unix socket outside it) are added where the kernel has them; the PID and network namespaces
//! already give both.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, RestrictionStatus, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

/// The oldest ABI that can keep files outside the writable folders whole.
pub(crate) const MIN_ABI: ABI = ABI::V3;
/// The newest ABI whose filesystem rights the rules use.
const TARGET_ABI: ABI = ABI::V5;

/// Devices any program may open for writing: they hold no data.
pub(crate) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];

/// Folders of devices that work like those above (pseudo-terminals, the sandbox's private
/// shared memory).
const DEVICE_TREES: &[&str] = &["/dev/pts", "/dev/shm"];

/// Restricts the calling thread (and everything it starts from now on) to reading anywhere and
/// writing only below `write` and to the harmless devices. Sets `no_new_privs`.
pub(crate) fn restrict(write: &[PathBuf]) -> Result<RestrictionStatus, String> {
    let everything = AccessFs::from_all(TARGET_ABI);
    let read = AccessFs::from_read(TARGET_ABI);
    let file_write = AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    let existing = |paths: &[&str]| -> Vec<PathBuf> {
        paths
            .iter()
            .map(PathBuf::from)
            .filter(|path| path.exists())
            .collect()
    };
    let error = |error: landlock::RulesetError| format!("landlock: {error}");
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(MIN_ABI))
        .map_err(error)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(everything)
        .map_err(error)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(error)?
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules([Path::new("/")], read))
        .map_err(error)?
        .add_rules(path_beneath_rules(write, everything))
        .map_err(error)?
        .add_rules(path_beneath_rules(existing(DEVICES), read | file_write))
        .map_err(error)?
        .add_rules(path_beneath_rules(existing(DEVICE_TREES), everything))
        .map_err(error)?
        .restrict_self()
        .map_err(error)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("landlock: the kernel did not enforce the rules".into());
    }
    Ok(status)
}

/// The Landlock ABI this kernel offers, as the `landlock` crate sees it, found by restricting
/// the calling thread with a ruleset that still allows everything (for `vak-tools doctor`; run
/// it in a process that ends right after).
pub(crate) fn probe_abi() -> Result<i32, String> {
    let everything = AccessFs::from_all(ABI::V1);
    let status = Ruleset::default()
        .handle_access(everything)
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules([Path::new("/")], everything)))
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|error| error.to_string())?;
    match status.landlock {
        landlock::LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => Ok(kernel_abi.unwrap_or(effective_abi as i32)),
        landlock::LandlockStatus::NotEnabled => Err("built into the kernel but not enabled".into()),
        landlock::LandlockStatus::NotImplemented => Err("not built into the kernel".into()),
    }
}
