//! What the tool asks of the helper, as the helper's command line, and the messages the helper
//! sends back on its control socket.
//!
//! The command line is `HELPER __vak-sandbox ROLE [--net none|guarded] [--stdin
//! null|pipe|tty] [--join PID:START] [--write DIR]… [--protect DIR]… [--deny PATH]… --cwd DIR -- PROGRAM
//! ARG…`: plain arguments rather than one encoded blob, so a command line as long as the
//! kernel allows for one argument still fits, and paths need not be UTF-8. The session's
//! network holder is `HELPER __vak-sandbox net`, with no more arguments.
//!
//! Messages go both ways on the control socket, one line each, a descriptor attached to some:
//! the helper reports (`init`, `proxy`, `exit`, `signal`, `error`; the holder `ready`,
//! `dialed`, `nodial`), the tool hands over the shell's standard input (`stdin`), asks the
//! holder to connect on the session's loopback (`dial`), and gives a helper started ahead of
//! its call (`standby`) the call to run (`start`).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::limits::Limits;

/// The hidden first argument that selects the helper, in `vak-sandbox` and in `vak-tools`.
pub const HELPER_ARG: &str = "__vak-sandbox";

/// The network a sandboxed command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Net {
    /// A network namespace with only loopback up.
    None,
    /// As `None`, plus a listener on loopback whose connections the tool serves with the
    /// guarded forward proxy; the proxy variables point at it.
    Guarded,
}

/// What the shell's standard input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stdin {
    /// `/dev/null`: a foreground call.
    Null,
    /// A pipe whose reading end the tool sends (a `stdin` message): a background job.
    Pipe,
    /// A pseudo-terminal whose terminal side the tool sends (a `stdin` message): it becomes
    /// the controlling terminal and the shell's standard input, output and error.
    Tty,
}

impl Stdin {
    fn name(self) -> &'static str {
        match self {
            Stdin::Null => "null",
            Stdin::Pipe => "pipe",
            Stdin::Tty => "tty",
        }
    }
}

/// What one sandboxed command runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    /// The network it gets.
    pub(crate) net: Net,
    /// Its standard input.
    pub(crate) stdin: Stdin,
    /// The session's network holder (pid and start time, as the tool sees it), whose user and
    /// network namespaces the command joins instead of making its own.
    pub(crate) join: Option<(i32, u64)>,
    /// Folders (real paths) below which the command may write.
    pub(crate) write: Vec<PathBuf>,
    /// Folders inside a writable one that stay read-only (`<workspace>/.vak`), except for the
    /// writable folders inside them (the scratch folder).
    pub(crate) protect: Vec<PathBuf>,
    /// Paths that read as absent (`[sandbox] deny_read`, real paths that existed when the
    /// call was planned): init mounts an empty read-only tmpfs over each folder and an empty
    /// read-only file over each file.
    pub(crate) deny: Vec<PathBuf>,
    /// The folder it starts in (a real path).
    pub(crate) cwd: PathBuf,
    /// The program and its arguments: `SHELL -c COMMAND`.
    pub(crate) program: Vec<OsString>,
    /// The folders of the call's cgroup, which the run process joins before anything else
    /// (the limits; see the `limits` module).
    pub(crate) cgroups: Vec<PathBuf>,
    /// The call's limits; init sets them as rlimits when there is no cgroup.
    pub(crate) limits: Limits,
    /// `full-access`: none of the confinement, only the PID and mount namespaces that contain
    /// the command's processes (see the `contain` module).
    pub(crate) full_access: bool,
    /// Whether the command may create Unix sockets (`[bash] unix_sockets = "allow"`); by
    /// default seccomp refuses `socket(AF_UNIX, …)`.
    pub(crate) unix_sockets: bool,
}

/// The part of the helper a command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The outer helper: enters the namespaces, starts the init, watches the control socket.
    Run,
    /// Process 1 of the new PID namespace: mounts, loopback, Landlock, the shell, reaping.
    Init,
    /// `vak-tools doctor`: says what this machine supports.
    Probe,
    /// The session's network holder: makes the user and network namespaces that the session's
    /// commands join, and connects on their loopback for the proxy.
    Net,
    /// A run process started ahead of its call (see the `standby` module): as [`Role::Run`],
    /// but its init waits for the call's [`Message::Start`] before anything else.
    Standby,
    /// The init of a standby helper: waits for [`Message::Start`], then is [`Role::Init`] with
    /// the specification and environment it carries.
    StandbyInit,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Run => "run",
            Role::Init => "init",
            Role::Probe => "probe",
            Role::Net => "net",
            Role::Standby => "standby",
            Role::StandbyInit => "standby-init",
        }
    }
}

impl Spec {
    /// The arguments after the helper's path, for `role`.
    pub(crate) fn to_args(&self, role: Role) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![HELPER_ARG.into(), role.name().into()];
        args.push("--net".into());
        args.push(
            match self.net {
                Net::None => "none",
                Net::Guarded => "guarded",
            }
            .into(),
        );
        args.push("--stdin".into());
        args.push(self.stdin.name().into());
        if let Some((pid, start)) = self.join {
            args.push("--join".into());
            args.push(format!("{pid}:{start}").into());
        }
        for dir in &self.write {
            args.push("--write".into());
            args.push(dir.into());
        }
        for dir in &self.protect {
            args.push("--protect".into());
            args.push(dir.into());
        }
        for path in &self.deny {
            args.push("--deny".into());
            args.push(path.into());
        }
        args.push("--cwd".into());
        args.push(self.cwd.as_os_str().into());
        if self.unix_sockets {
            args.push("--unix-sockets".into());
            args.push("allow".into());
        }
        for dir in &self.cgroups {
            args.push("--cgroup".into());
            args.push(dir.into());
        }
        if let Some(max) = self.limits.max_processes {
            args.push("--max-processes".into());
            args.push(max.to_string().into());
        }
        if let Some(max) = self.limits.max_memory {
            args.push("--max-memory".into());
            args.push(max.to_string().into());
        }
        if let Some(max) = self.limits.max_open_files {
            args.push("--max-open-files".into());
            args.push(max.to_string().into());
        }
        if self.full_access {
            args.push("--full-access".into());
            args.push("yes".into());
        }
        args.push("--".into());
        args.extend(self.program.iter().cloned());
        args
    }

    /// Parses the arguments after the helper's own path (starting with [`HELPER_ARG`]).
    pub(crate) fn parse(args: &[OsString]) -> Result<(Role, Option<Spec>), String> {
        let mut args = args.iter();
        if args.next().map(OsString::as_os_str) != Some(OsStr::new(HELPER_ARG)) {
            return Err(format!("the first argument must be {HELPER_ARG}"));
        }
        let role = match args.next().and_then(|role| role.to_str()) {
            Some("run") => Role::Run,
            Some("init") => Role::Init,
            Some("probe") => return Ok((Role::Probe, None)),
            Some("net") => return Ok((Role::Net, None)),
            Some("standby") => Role::Standby,
            Some("standby-init") => Role::StandbyInit,
            other => return Err(format!("unknown role {other:?}")),
        };
        let mut spec = Spec {
            net: Net::None,
            stdin: Stdin::Null,
            join: None,
            write: Vec::new(),
            protect: Vec::new(),
            deny: Vec::new(),
            cwd: PathBuf::from("/"),
            program: Vec::new(),
            cgroups: Vec::new(),
            limits: Limits::default(),
            full_access: false,
            unix_sockets: false,
        };
        while let Some(flag) = args.next() {
            let flag = flag.to_str().unwrap_or_default();
            if flag == "--" {
                spec.program = args.cloned().collect();
                break;
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag {
                "--net" => {
                    spec.net = match value.to_str() {
                        Some("none") => Net::None,
                        Some("guarded") => Net::Guarded,
                        _ => return Err(format!("unknown network {value:?}")),
                    }
                }
                "--stdin" => {
                    spec.stdin = match value.to_str() {
                        Some("null") => Stdin::Null,
                        Some("pipe") => Stdin::Pipe,
                        Some("tty") => Stdin::Tty,
                        _ => return Err(format!("unknown standard input {value:?}")),
                    }
                }
                "--join" => {
                    let parsed = value
                        .to_str()
                        .and_then(|text| text.split_once(':'))
                        .and_then(|(pid, start)| Some((pid.parse().ok()?, start.parse().ok()?)));
                    spec.join = Some(parsed.ok_or_else(|| format!("bad --join {value:?}"))?);
                }
                "--write" => spec.write.push(value.into()),
                "--protect" => spec.protect.push(value.into()),
                "--deny" => spec.deny.push(value.into()),
                "--cwd" => spec.cwd = value.into(),
                "--unix-sockets" => {
                    spec.unix_sockets = match value.to_str() {
                        Some("allow") => true,
                        Some("deny") => false,
                        _ => return Err(format!("unknown unix_sockets {value:?}")),
                    }
                }
                "--cgroup" => spec.cgroups.push(value.into()),
                "--max-processes" | "--max-memory" | "--max-open-files" => {
                    let number = value
                        .to_str()
                        .and_then(|text| text.parse().ok())
                        .ok_or_else(|| format!("bad {flag} {value:?}"))?;
                    match flag {
                        "--max-processes" => spec.limits.max_processes = Some(number),
                        "--max-memory" => spec.limits.max_memory = Some(number),
                        _ => spec.limits.max_open_files = Some(number),
                    }
                }
                "--full-access" => spec.full_access = value == "yes",
                _ => return Err(format!("unknown flag {flag:?}")),
            }
        }
        if spec.program.is_empty() {
            return Err("no program to run after --".into());
        }
        Ok((role, Some(spec)))
    }
}

/// A message on the control socket: one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// The init process was started; its pid as the tool sees it.
    Init(i32),
    /// The proxy listener (sent along as a file descriptor) listens on this loopback port.
    Proxy(u16),
    /// The shell exited with this code.
    Exit(i32),
    /// A signal with this number ended the shell.
    Signal(i32),
    /// Init to tool, just before `Exit` or `Signal`: the shell left no process behind. Init
    /// has no child left, so it is about to end, and every process of the namespace with it:
    /// the tool need not look for leftovers.
    Alone,
    /// The sandbox could not be set up; the shell did not run.
    Error(String),
    /// Tool to helper: the shell's standard input (a pipe's reading end or a terminal) is
    /// attached.
    Stdin,
    /// Holder to tool: the namespaces exist and loopback is up.
    Ready,
    /// Tool to holder: connect to this loopback address and port.
    Dial(std::net::IpAddr, u16),
    /// Holder to tool: connected; the socket is attached.
    Dialed,
    /// Holder to tool: the connection failed, for this reason.
    NoDial(String),
    /// Tool to a standby helper's init: the call to run, as init's arguments (those of
    /// [`Spec::to_args`] for [`Role::Init`]) and the shell's whole environment. Sent hex-encoded,
    /// so that any byte of a command or a variable fits on the message's line.
    Start {
        /// Init's arguments, [`HELPER_ARG`] first.
        args: Vec<OsString>,
        /// The shell's environment, nothing else added but the proxy's variables.
        env: Vec<(OsString, OsString)>,
    },
}

/// `bytes` as lower-case hexadecimal digits.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    text
}

/// The bytes of `hex`'s digits; `None` when it is not hexadecimal.
fn unhex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let value = |digit: u8| {
        char::from(digit)
            .to_digit(16)
            .and_then(|v| u8::try_from(v).ok())
    };
    digits
        .chunks(2)
        .map(|pair| Some(value(pair[0])? << 4 | value(pair[1])?))
        .collect()
}

/// `items` joined by NUL bytes (which no argument or variable holds), hex-encoded; `-` for
/// none (a line's trailing space may be trimmed).
fn encode_list<'a>(items: impl Iterator<Item = &'a OsStr>) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let mut bytes = Vec::new();
    for (index, item) in items.enumerate() {
        if index > 0 {
            bytes.push(0);
        }
        bytes.extend_from_slice(item.as_bytes());
    }
    if bytes.is_empty() {
        return "-".to_owned();
    }
    hex(&bytes)
}

/// The items of [`encode_list`]'s text (none for an empty text).
fn decode_list(text: &str) -> Option<Vec<OsString>> {
    use std::os::unix::ffi::OsStringExt as _;
    if text == "-" {
        return Some(Vec::new());
    }
    let bytes = unhex(text)?;
    Some(
        bytes
            .split(|&byte| byte == 0)
            .map(|item| OsString::from_vec(item.to_vec()))
            .collect(),
    )
}

impl Message {
    /// Whether a descriptor comes with the message (sent along with its bytes): only the
    /// messages that carry one may claim a received descriptor, whatever else arrived with it.
    pub(crate) fn carries_fd(&self) -> bool {
        matches!(self, Message::Proxy(_) | Message::Stdin | Message::Dialed)
    }

    /// The message's line, with its line feed.
    pub(crate) fn encode(&self) -> String {
        match self {
            Message::Init(pid) => format!("init {pid}\n"),
            Message::Proxy(port) => format!("proxy {port}\n"),
            Message::Exit(code) => format!("exit {code}\n"),
            Message::Signal(number) => format!("signal {number}\n"),
            Message::Alone => "alone -\n".to_owned(),
            Message::Error(text) => format!("error {}\n", text.replace('\n', " ")),
            Message::Stdin => "stdin -\n".to_owned(),
            Message::Ready => "ready -\n".to_owned(),
            Message::Dial(ip, port) => format!("dial {ip} {port}\n"),
            Message::Dialed => "dialed -\n".to_owned(),
            Message::NoDial(text) => format!("nodial {}\n", text.replace('\n', " ")),
            Message::Start { args, env } => {
                let pairs: Vec<OsString> = env
                    .iter()
                    .map(|(name, value)| {
                        let mut pair = name.clone();
                        pair.push("=");
                        pair.push(value);
                        pair
                    })
                    .collect();
                format!(
                    "start {} {}\n",
                    encode_list(args.iter().map(OsString::as_os_str)),
                    encode_list(pairs.iter().map(OsString::as_os_str))
                )
            }
        }
    }

    /// Reads a message's line (without its line feed).
    pub(crate) fn decode(text: &str) -> Option<Self> {
        let (kind, rest) = text.split_once(' ')?;
        Some(match kind {
            "init" => Message::Init(rest.parse().ok()?),
            "proxy" => Message::Proxy(rest.parse().ok()?),
            "exit" => Message::Exit(rest.parse().ok()?),
            "signal" => Message::Signal(rest.parse().ok()?),
            "alone" => Message::Alone,
            "error" => Message::Error(rest.to_owned()),
            "stdin" => Message::Stdin,
            "ready" => Message::Ready,
            "dial" => {
                let (ip, port) = rest.split_once(' ')?;
                Message::Dial(ip.parse().ok()?, port.parse().ok()?)
            }
            "dialed" => Message::Dialed,
            "nodial" => Message::NoDial(rest.to_owned()),
            "start" => {
                use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
                let (args, env) = rest.split_once(' ')?;
                let env = decode_list(env)?
                    .into_iter()
                    .map(|pair| {
                        let bytes = pair.as_bytes();
                        let at = bytes.iter().position(|&byte| byte == b'=')?;
                        Some((
                            OsString::from_vec(bytes[..at].to_vec()),
                            OsString::from_vec(bytes[at + 1..].to_vec()),
                        ))
                    })
                    .collect::<Option<Vec<_>>>()?;
                Message::Start {
                    args: decode_list(args)?,
                    env,
                }
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip() {
        let spec = Spec {
            net: Net::Guarded,
            stdin: Stdin::Tty,
            join: Some((4242, 987_654)),
            write: vec!["/w".into(), "/w/.vak/scratch/a b".into()],
            protect: vec!["/w/.vak".into()],
            deny: vec!["/home/u/.ssh".into(), "/home/u/.netrc".into()],
            cwd: "/w/sub".into(),
            program: vec![
                "/bin/bash".into(),
                "-c".into(),
                "echo --net none -- x".into(),
            ],
            cgroups: vec!["/sys/fs/cgroup/pids/vak-1-2".into()],
            limits: Limits {
                max_processes: Some(64),
                max_memory: Some(1 << 30),
                max_open_files: Some(1 << 16),
            },
            full_access: true,
            unix_sockets: true,
        };
        for role in [Role::Run, Role::Init, Role::Standby, Role::StandbyInit] {
            let args = spec.to_args(role);
            assert_eq!(Spec::parse(&args).unwrap(), (role, Some(spec.clone())));
        }
        let plain = Spec {
            stdin: Stdin::Null,
            join: None,
            cgroups: Vec::new(),
            limits: Limits::default(),
            full_access: false,
            unix_sockets: false,
            ..spec.clone()
        };
        assert_eq!(
            Spec::parse(&plain.to_args(Role::Run)).unwrap(),
            (Role::Run, Some(plain))
        );
        let net: Vec<OsString> = vec![HELPER_ARG.into(), "net".into()];
        assert_eq!(Spec::parse(&net).unwrap(), (Role::Net, None));
        let probe: Vec<OsString> = vec![HELPER_ARG.into(), "probe".into()];
        assert_eq!(Spec::parse(&probe).unwrap(), (Role::Probe, None));
        for bad in [
            vec!["x"],
            vec![HELPER_ARG, "fly"],
            vec![HELPER_ARG, "run", "--net"],
            vec![HELPER_ARG, "run", "--net", "open", "--", "sh"],
            vec![HELPER_ARG, "run", "--cwd", "/"],
            vec![HELPER_ARG, "run", "--stdin", "socket", "--", "sh"],
            vec![HELPER_ARG, "run", "--join", "12", "--", "sh"],
            vec![HELPER_ARG, "run", "--join", "a:b", "--", "sh"],
            vec![HELPER_ARG, "run", "--max-memory", "lots", "--", "sh"],
        ] {
            let bad: Vec<OsString> = bad.into_iter().map(OsString::from).collect();
            assert!(Spec::parse(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn messages_round_trip() {
        for message in [
            Message::Init(42),
            Message::Proxy(3128),
            Message::Exit(-1),
            Message::Signal(9),
            Message::Alone,
            Message::Error("landlock: not supported".into()),
            Message::Stdin,
            Message::Ready,
            Message::Dial("127.0.0.1".parse().unwrap(), 8000),
            Message::Dial("::1".parse().unwrap(), 443),
            Message::Dialed,
            Message::NoDial("Connection refused (os error 111)".into()),
            Message::Start {
                args: vec![
                    HELPER_ARG.into(),
                    "init".into(),
                    "--".into(),
                    "a b\nc\u{e9}".into(),
                ],
                env: vec![
                    ("A".into(), "x=y z\n".into()),
                    ("EMPTY".into(), OsString::new()),
                    (
                        std::os::unix::ffi::OsStringExt::from_vec(vec![b'N', 0xff]),
                        std::os::unix::ffi::OsStringExt::from_vec(vec![0xfe, b' ']),
                    ),
                ],
            },
            Message::Start {
                args: vec![HELPER_ARG.into()],
                env: Vec::new(),
            },
        ] {
            let line = message.encode();
            assert_eq!(line.matches('\n').count(), 1);
            assert_eq!(Message::decode(line.trim_end()), Some(message));
        }
        assert_eq!(Message::decode("nonsense"), None);
        assert_eq!(Message::decode("start 0g 00"), None);
        assert_eq!(Message::decode("start 616 00"), None);
        // A variable without `=`.
        assert_eq!(Message::decode("start 61 41"), None);
    }
}
