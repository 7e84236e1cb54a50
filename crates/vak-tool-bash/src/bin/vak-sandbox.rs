//! `vak-sandbox`: the helper that runs a `bash` command inside its sandbox (see
//! `vak_tool_bash::sandbox`). Started by the tool, never by hand.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    vak_tool_bash::sandbox::helper_main()
}
