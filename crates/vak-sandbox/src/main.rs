//! `vak-sandbox`: the helper that runs a `bash` command inside its sandbox (see the
//! `vak_sandbox` library). Started by the tool, never by hand.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    vak_sandbox::helper_main()
}
