//! `vak-sandbox`: the helper that runs a `bash` command inside its sandbox, installed next to
//! `vak-tools` (which prefers it to re-running its own, much larger, binary: see the sandbox
//! section of docs/benchmarks.md). Started by the tool, never by hand.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    vak_tools::bash::sandbox::helper_main()
}
