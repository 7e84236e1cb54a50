//! One escape route per test module, each run in `read-only` and in
//! `workspace-write`, judged from the host.

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use crate::support::{Mode, Setup, both_modes, host};

/// `python3`, outside any pyenv shim (which reads its own state from places that vary).
const PYTHON: &str = "/usr/bin/python3";

// Route 1: a descriptor the caller left open reaches the command.
both_modes!(inherited_descriptors_are_closed, |setup| {
    let log = setup.host.path().join("outside.log");
    std::fs::write(&log, "").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let wrap = format!("exec 7>>{} 8<>/dev/tcp/127.0.0.1/{port}", log.display());
    let out = setup.run(
        "echo PWN >&7; echo seven=$?; echo PWN >&8; echo eight=$?; ls /proc/self/fd",
        &wrap,
    );
    out.assert_ran();
    assert!(out.stdout.contains("seven=1"), "{}", out.shown());
    assert!(out.stdout.contains("eight=1"), "{}", out.shown());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "",
        "{}",
        out.shown()
    );
    // The connection the caller made is closed without a byte from the command.
    let (mut stream, _) = listener.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
});

// Route 2: the host's System V IPC.
both_modes!(host_ipc_is_out_of_reach, |setup| {
    let queue = host("ipcmk", &["-Q"]);
    let queue = queue.trim().rsplit(' ').next().unwrap().to_owned();
    let memory = host("ipcmk", &["-M", "4096"]);
    let memory = memory.trim().rsplit(' ').next().unwrap().to_owned();
    let out = setup.run(
        &format!(
            "ipcrm -q {queue}; echo q=$?; ipcrm -m {memory}; echo m=$?; ipcs -q | grep -c '^0x' \
             ; hostname vak-pwned; echo h=$?"
        ),
        "",
    );
    // Still there on the host (`ipcs -i` fails for a removed one).
    let queue_there = std::process::Command::new("ipcs")
        .args(["-q", "-i", &queue])
        .output()
        .unwrap()
        .status
        .success();
    let memory_there = std::process::Command::new("ipcs")
        .args(["-m", "-i", &memory])
        .output()
        .unwrap()
        .status
        .success();
    let _ = std::process::Command::new("ipcrm")
        .args(["-q", &queue, "-m", &memory])
        .output();
    out.assert_ran();
    assert!(queue_there, "{}", out.shown());
    assert!(memory_there, "{}", out.shown());
    assert!(out.stdout.contains("q=1"), "{}", out.shown());
    assert!(out.stdout.contains("m=1"), "{}", out.shown());
    assert_ne!(host("hostname", &[]).trim(), "vak-pwned");
});

/// Python that opens (`open`), creates (`create`) or unlinks (`unlink`) the POSIX message
/// queues named by its arguments (pairs: operation, name) through the C library, printing
/// `OPERATION NAME ok` or `OPERATION NAME errno=N` for each.
const POSIX_QUEUES: &str = "import ctypes, os, sys
l = ctypes.CDLL(None, use_errno=True)
for what, name in zip(sys.argv[1::2], sys.argv[2::2]):
    if what == 'create':
        r = l.mq_open(name.encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    elif what == 'open':
        r = l.mq_open(name.encode(), os.O_RDWR)
    else:
        r = l.mq_unlink(name.encode())
    print(what, name, 'ok' if r >= 0 else 'errno=%d' % ctypes.get_errno())
";

// Route 2, POSIX message queues: they live in the IPC namespace (the kernel's own mqueue
// mount), whether or not the host mounts `/dev/mqueue` (this VM does not), so the test goes
// through `mq_open`/`mq_unlink` of the C library rather than the file system.
both_modes!(host_posix_queues_are_out_of_reach, |setup| {
    let script = setup.workspace.path().join("queues.py");
    std::fs::write(&script, POSIX_QUEUES).unwrap();
    let script = script.display().to_string();
    // Unique per test: the workspace's own name.
    let tag = setup
        .workspace
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace('.', "");
    let (outer, inner) = (format!("/vak-{tag}-host"), format!("/vak-{tag}-inner"));
    let made = host(PYTHON, &[&script, "create", &outer]);
    assert!(made.contains("ok"), "{made}");
    let out = setup.run(
        &format!("{PYTHON} {script} open {outer} unlink {outer} create {inner}"),
        "",
    );
    let after = host(
        PYTHON,
        &[&script, "open", &outer, "open", &inner, "unlink", &outer],
    );
    out.assert_ran();
    // ENOENT: the host's queue is not in the command's IPC namespace at all (with the host's
    // namespace, Landlock alone would answer EACCES), and it cannot remove it.
    assert!(
        out.stdout.contains(&format!("open {outer} errno=2")),
        "{}",
        out.shown()
    );
    assert!(
        out.stdout.contains(&format!("unlink {outer} errno=2")),
        "{}",
        out.shown()
    );
    // Nor can it make one: creating a queue creates a file on the namespace's mqueue file
    // system, outside every writable folder, which Landlock refuses.
    assert!(
        out.stdout.contains(&format!("create {inner} errno=13")),
        "{}",
        out.shown()
    );
    assert!(
        after.contains(&format!("open {outer} ok")),
        "{after}\n{}",
        out.shown()
    );
    assert!(
        after.contains(&format!("open {inner} errno=2")),
        "{after}\n{}",
        out.shown()
    );
});

/// Python that joins a fresh session keyring, adds a secret to it, then becomes the helper
/// (x86-64 system call numbers): the caller of `vak-tools` with a key in its `@s`.
const KEYED_CALLER: &str = "import ctypes, os, sys
l = ctypes.CDLL(None, use_errno=True)
l.syscall.restype = ctypes.c_long
assert l.syscall(250, 1, None) > 0, ctypes.get_errno()
key = l.syscall(248, b'user', b'vak-secret', b's3cret-VALUE', 12, -3)
assert key > 0, ctypes.get_errno()
os.execv(sys.argv[1], sys.argv[1:])";

/// Python, in the sandbox: find `vak-secret` in `@s` and print it.
const KEY_THIEF: &str = "import ctypes
l = ctypes.CDLL(None, use_errno=True)
l.syscall.restype = ctypes.c_long
key = l.syscall(250, 10, -3, b'user', b'vak-secret', 0)
if key < 0:
    print('search refused', ctypes.get_errno())
else:
    buf = ctypes.create_string_buffer(64)
    n = l.syscall(250, 11, key, buf, 64)
    print('read', n, buf.raw[:max(n, 0)])";

// Route 3: the caller's session keyring.
both_modes!(the_callers_keyring_is_unreadable, |setup| {
    std::fs::write(setup.host.path().join("thief.py"), KEY_THIEF).unwrap();
    let thief = setup.host.path().join("thief.py");
    let wrap = format!(
        "set -- {PYTHON} -c \"$(cat <<'EOF'\n{KEYED_CALLER}\nEOF\n)\" \"$0\" \"$@\"; exec \"$@\""
    );
    let out = setup.run(&format!("{PYTHON} {}", thief.display()), &wrap);
    out.assert_ran();
    assert!(!out.stdout.contains("s3cret"), "{}", out.shown());
    assert!(out.stdout.contains("search refused"), "{}", out.shown());
});

// Route 4: the host's terminals (the caller's `/dev/pts/N`).
both_modes!(host_terminals_are_out_of_reach, |setup| {
    use rustix::pty::OpenptFlags;
    let controller = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    rustix::pty::grantpt(&controller).unwrap();
    rustix::pty::unlockpt(&controller).unwrap();
    let name = rustix::pty::ptsname(&controller, Vec::new()).unwrap();
    let name = name.to_string_lossy().into_owned();
    let out = setup.run(
        &format!("echo PWN > {name}; echo w=$?; ls /dev/pts; timeout 1 cat {name}; echo r=$?"),
        "",
    );
    out.assert_ran();
    assert!(out.stdout.contains("w=1"), "{}", out.shown());
    rustix::fs::fcntl_setfl(&controller, rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut buf = [0u8; 64];
    let read = rustix::io::read(&controller, &mut buf);
    assert!(
        matches!(read, Err(rustix::io::Errno::AGAIN)),
        "the terminal got {read:?}: {}",
        out.shown()
    );
});

// Route 5: capabilities, a setuid plant, a file-capability plant.
both_modes!(no_capabilities_and_no_privileged_plants, |setup| {
    let plant = setup.writable().join("s");
    let out = setup.run(
        &format!(
            "cp /bin/true {p}; chmod 4755 {p}; echo suid=$?; chmod g+s {p}; echo sgid=$?; \
             {PYTHON} -c \"import os; os.open('{p}2', os.O_CREAT | os.O_WRONLY, 0o4755)\"; \
             echo open=$?; {PYTHON} -c \"import os; os.setxattr('{p}', \
             'security.capability', bytes.fromhex('01000002' + '20000000' + '00' * 12))\"; \
             echo xattr=$?; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status",
            p = plant.display()
        ),
        "",
    );
    out.assert_ran();
    let mode = std::fs::metadata(&plant).unwrap().permissions().mode();
    assert_eq!(mode & 0o6000, 0, "mode {mode:o}: {}", out.shown());
    if let Ok(meta) = std::fs::metadata(plant.with_file_name("s2")) {
        assert_eq!(meta.permissions().mode() & 0o6000, 0, "{}", out.shown());
    }
    let caps = rustix::fs::getxattr(&plant, "security.capability", &mut [0u8; 64]);
    assert!(caps.is_err(), "file capabilities planted: {}", out.shown());
    assert!(
        out.stdout.contains("CapEff:\t0000000000000000"),
        "{}",
        out.shown()
    );
    assert!(
        out.stdout.contains("CapBnd:\t0000000000000000"),
        "{}",
        out.shown()
    );
    assert!(out.stdout.contains("NoNewPrivs:\t1"), "{}", out.shown());
});

// Route 6: `.git`'s code-running parts, and `.git` itself.
both_modes!(git_config_and_hooks_stay_read_only, |setup| {
    let workspace = setup.workspace.path();
    let git = |args: &[&str]| {
        let mut all = vec!["-C", workspace.to_str().unwrap()];
        all.extend_from_slice(args);
        host("git", &all)
    };
    git(&["init", "-q"]);
    std::fs::write(workspace.join("a"), "a").unwrap();
    git(&["add", "a"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "one",
    ]);
    let config = std::fs::read(workspace.join(".git/config")).unwrap();
    let out = setup.run(
        "git config core.fsmonitor 'touch /tmp/pwned'; echo config=$?; \
         echo 'touch /tmp/pwned' > .git/hooks/pre-commit; echo hook=$?; \
         echo '[core]' >> .git/info/attributes; echo info=$?; \
         mv .git .git-moved; echo moved=$?; \
         echo b > b && git add b && git -c user.name=t -c user.email=t@t commit -qm two \
         && echo COMMITTED; git checkout -q -b other && echo CHECKED_OUT; true",
        "",
    );
    out.assert_ran();
    assert_eq!(
        std::fs::read(workspace.join(".git/config")).unwrap(),
        config,
        "{}",
        out.shown()
    );
    assert!(workspace.join(".git").is_dir(), "{}", out.shown());
    assert!(!workspace.join(".git-moved").exists(), "{}", out.shown());
    assert!(
        !workspace.join(".git/hooks/pre-commit").exists(),
        "{}",
        out.shown()
    );
    assert!(out.stdout.contains("config=") && !out.stdout.contains("config=0"));
    assert!(!out.stdout.contains("hook=0"), "{}", out.shown());
    if setup.mode == Mode::WorkspaceWrite {
        // The work itself still goes on.
        assert!(out.stdout.contains("COMMITTED"), "{}", out.shown());
        assert!(out.stdout.contains("CHECKED_OUT"), "{}", out.shown());
        assert!(git(&["log", "--oneline"]).contains("two"));
    }
});

// Route 7: Unix sockets by path.
both_modes!(host_unix_sockets_are_refused, |setup| {
    let path = setup.host.path().join("host.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "{PYTHON} -c \"import socket; s = socket.socket(socket.AF_UNIX); \
         s.connect('{}'); s.send(b'PWN')\"; echo connect=$?; \
         {PYTHON} -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); \
         print('pair', b.recv(1))\"",
        path.display()
    );
    let out = setup.run(&connect, "");
    out.assert_ran();
    assert!(out.stdout.contains("connect=1"), "{}", out.shown());
    assert!(out.stdout.contains("pair b'x'"), "{}", out.shown());
    assert!(
        matches!(listener.accept(), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "the host socket was connected to: {}",
        out.shown()
    );
    // `unix_sockets = "allow"` lets them through.
    let allowed = Setup {
        unix_sockets: true,
        ..setup
    };
    let out = allowed.run(&connect, "");
    out.assert_ran();
    assert!(out.stdout.contains("connect=0"), "{}", out.shown());
    assert!(listener.accept().is_ok(), "{}", out.shown());
});

// Route 8: address families beyond the Internet's, AF_VSOCK above all (the machine-wide vsock
// space, outside the network namespace).
both_modes!(only_internet_and_unix_sockets_are_made, |setup| {
    let script = "import socket\n\
        def make(name, family, kind, proto=0):\n\
        \x20   try:\n\
        \x20       socket.socket(family, kind, proto).close(); print(name, 'made')\n\
        \x20   except OSError as e:\n\
        \x20       print(name, 'errno', e.errno)\n\
        make('vsock', 40, socket.SOCK_STREAM)\n\
        make('packet', 17, socket.SOCK_RAW)\n\
        make('netlink', 16, socket.SOCK_RAW)\n\
        make('bluetooth', 31, socket.SOCK_STREAM, 3)\n\
        make('alg', 38, socket.SOCK_SEQPACKET)\n\
        make('inet', socket.AF_INET, socket.SOCK_STREAM)\n\
        make('inet6', socket.AF_INET6, socket.SOCK_STREAM)\n\
        make('udp', socket.AF_INET, socket.SOCK_DGRAM)\n\
        try:\n\
        \x20   socket.socketpair(16, socket.SOCK_RAW); print('netlink pair made')\n\
        except OSError as e:\n\
        \x20   print('netlink pair errno', e.errno)\n\
        a, b = socket.socketpair(); a.send(b'x'); print('pair', b.recv(1))\n";
    let host_script = setup.host.path().join("families.py");
    std::fs::write(&host_script, script).unwrap();
    let out = setup.run(&format!("{PYTHON} {}", host_script.display()), "");
    out.assert_ran();
    // EPERM: refused by the filter before the kernel looks at the family.
    for refused in [
        "vsock",
        "packet",
        "netlink",
        "bluetooth",
        "alg",
        "netlink pair",
    ] {
        assert!(
            out.stdout.contains(&format!("{refused} errno 1\n")),
            "{refused}: {}",
            out.shown()
        );
    }
    for made in ["inet", "inet6", "udp"] {
        assert!(
            out.stdout.contains(&format!("{made} made\n")),
            "{made}: {}",
            out.shown()
        );
    }
    assert!(out.stdout.contains("pair b'x'"), "{}", out.shown());
});
