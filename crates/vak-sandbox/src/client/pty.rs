//! Pseudo-terminals for background jobs that need one (`tty: true`): a REPL, `python3 -i`,
//! `psql`. Opened in safe code with rustix (`/dev/ptmx`, `grantpt`, `unlockpt`, the peer
//! through `TIOCGPTPEER`).
//!
//! The tool keeps the controller side (it reads what the program prints and writes what the
//! model types); the program gets the terminal side as its standard input, output and error,
//! and as its controlling terminal (the shell leads a new session, see `spawn`). The terminal
//! starts in the usual cooked mode: lines are echoed, Ctrl-C (`\x03`) sends SIGINT to the
//! foreground process group, Ctrl-D (`\x04`) at the start of a line is end-of-file.

use std::os::fd::OwnedFd;

use rustix::pty::OpenptFlags;
use rustix::termios::Winsize;

/// The terminal's width: wide, so that long lines are rarely wrapped.
pub(crate) const COLUMNS: u16 = 200;
/// The terminal's height.
pub(crate) const ROWS: u16 = 50;

/// A pseudo-terminal pair.
#[derive(Debug)]
pub(crate) struct Pty {
    /// The controller side: the tool's.
    pub(crate) controller: OwnedFd,
    /// The terminal side: the program's.
    pub(crate) terminal: OwnedFd,
}

/// Opens a pseudo-terminal of [`COLUMNS`] × [`ROWS`]; both descriptors close on `exec`.
pub(crate) fn open() -> std::io::Result<Pty> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let controller = rustix::pty::openpt(flags)?;
    rustix::pty::grantpt(&controller)?;
    rustix::pty::unlockpt(&controller)?;
    let terminal = match rustix::pty::ioctl_tiocgptpeer(&controller, flags) {
        Ok(terminal) => terminal,
        // Kernels before 4.13: open the terminal by its name.
        Err(_) => {
            let name = rustix::pty::ptsname(&controller, Vec::new())?;
            rustix::fs::open(
                name.as_c_str(),
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?
        }
    };
    rustix::termios::tcsetwinsize(
        &terminal,
        Winsize {
            ws_row: ROWS,
            ws_col: COLUMNS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    Ok(Pty {
        controller,
        terminal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_a_terminal_of_the_set_size_that_echoes_what_is_typed() {
        let pty = open().unwrap();
        assert!(rustix::termios::isatty(&pty.terminal));
        let size = rustix::termios::tcgetwinsize(&pty.terminal).unwrap();
        assert_eq!((size.ws_col, size.ws_row), (COLUMNS, ROWS));
        rustix::io::write(&pty.controller, b"hi\n").unwrap();
        let mut line = [0u8; 16];
        let read = rustix::io::read(&pty.terminal, &mut line).unwrap();
        assert_eq!(&line[..read], b"hi\n");
        // The echo comes back to the controller, with the terminal's CR LF.
        let read = rustix::io::read(&pty.controller, &mut line).unwrap();
        assert_eq!(&line[..read], b"hi\r\n");
    }
}
