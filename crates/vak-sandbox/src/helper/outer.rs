//! The helper's **run** role: the outer process of one sandboxed command (started by the tool,
//! fd 0 the control socket).
//!
//! 1. Join the user and network namespaces of the session's holder (see [`super::holder`]),
//!    checking that the process it names is still that holder, then `unshare(NS | PID)`. (With
//!    no holder named: `unshare(USER | NS | NET | PID)` in one call and map the user as the
//!    holder does.) The user namespace keeps root's ids for root (so it still reads what root
//!    can), and anyone else's own uid and gid. A user namespace even for root: without one, a
//!    command running as root could `setns` back into the host's network namespace.
//! 2. Start **init**, which becomes process 1 of the new PID namespace, and tell the tool its
//!    pid. Give up its own stdout and stderr (so the pipes close when the command's last
//!    process ends, not when the helper does).
//! 3. Wait for the first of: init ends (end too), or the control socket hangs up — the tool
//!    ended the call, or the tool's process died, even by SIGKILL — then SIGKILL init. The
//!    kernel kills every process of a PID namespace when its process 1 dies, so nothing the
//!    command started survives either event. It never reads the socket: what the tool sends
//!    is for init.

use std::process::{Command, ExitCode, Stdio};

use nix::sched::CloneFlags;
use rustix::process::{Pid, PidfdFlags};

use crate::helper::plumbing::{
    OWN_NAMESPACES, control, enter_namespaces, keep_admin_capabilities_across_exec, release_output,
    send,
};
use crate::wire::{Message, Role, Spec};

/// Joins the user and network namespaces of the session's holder, the process `pid` that
/// started at `start` (clock ticks after boot), then enters new mount and PID namespaces.
///
/// The namespace files are opened first and the holder's start time is checked after: if the
/// holder had died and its pid been reused, the check fails, so the files never belong to
/// another process.
fn join(pid: i32, start: u64) -> Result<(), String> {
    let open = |kind: &str| {
        std::fs::File::open(format!("/proc/{pid}/ns/{kind}"))
            .map_err(|error| format!("opening the session's {kind} namespace: {error}"))
    };
    let user = open("user")?;
    let net = open("net")?;
    let alive = crate::client::process::read_stat(pid)
        .is_some_and(|stat| stat.start == start && !stat.ended());
    if !alive {
        return Err("the session's network holder has ended; call again".into());
    }
    nix::sched::setns(&user, CloneFlags::CLONE_NEWUSER)
        .map_err(|error| format!("joining the session's user namespace: {error}"))?;
    nix::sched::setns(&net, CloneFlags::CLONE_NEWNET)
        .map_err(|error| format!("joining the session's network namespace: {error}"))?;
    nix::sched::unshare(OWN_NAMESPACES).map_err(|error| format!("creating namespaces: {error}"))?;
    if rustix::process::getuid().as_raw() != 0 {
        keep_admin_capabilities_across_exec()?;
    }
    Ok(())
}

/// The run role: namespaces, init (in the role `init`, [`Role::Init`] or, for a helper started
/// ahead of its call, [`Role::StandbyInit`]), then watch both until one ends.
pub(crate) fn run(spec: &Spec, init: Role) -> Result<ExitCode, String> {
    let init_role = init;
    crate::limits::join(&spec.cgroups)?;
    match spec.join {
        _ if spec.full_access => crate::helper::contain::enter()?,
        Some((pid, start)) => join(pid, start)?,
        None => enter_namespaces()?,
    }
    // The running helper itself, through the kernel's handle on its image: a file put in its
    // place since (by a command of the same session, say) is never what runs as init.
    let exe = std::path::Path::new("/proc/self/exe");
    #[allow(
        clippy::disallowed_methods,
        reason = "vak-tool-bash starts processes: here, the sandbox's init"
    )]
    let mut init = Command::new(exe);
    let mut init = init
        .args(spec.to_args(init_role))
        .stdin(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("starting init ({}): {error}", exe.display()))?;
    let pid = i32::try_from(init.id()).unwrap_or(0);
    send(&Message::Init(pid), None);
    release_output();
    let pidfd = Pid::from_raw(pid)
        .ok_or_else(|| "init has no pid".to_owned())
        .and_then(|pid| {
            rustix::process::pidfd_open(pid, PidfdFlags::empty())
                .map_err(|error| format!("watching init: {error}"))
        })?;
    let socket = control();
    loop {
        use rustix::event::{PollFd, PollFlags};
        let mut ready = [
            // A hang-up only: the data on the socket is init's to read.
            PollFd::new(&socket, PollFlags::RDHUP),
            PollFd::new(&pidfd, PollFlags::IN),
        ];
        match rustix::event::poll(&mut ready, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(format!("waiting: {error}")),
        }
        let control_ready = !ready[0].revents().is_empty();
        let init_ended = !ready[1].revents().is_empty();
        if init_ended {
            let _ = init.wait();
            return Ok(ExitCode::SUCCESS);
        }
        if control_ready {
            // The tool is done with the call, or gone: end everything.
            let _ = init.kill();
            let _ = init.wait();
            return Ok(ExitCode::SUCCESS);
        }
    }
}
