//! Child processes idemspec starts in a process group of their own (hooks, the user's command
//! under `idemspec client`, a target it starts), so a deadline or a crash kills everything the
//! shell started, not only the shell.

/// Makes `command` the leader of a new process group (Unix; elsewhere nothing), and makes sure it
/// inherits no descriptor beyond stdin, stdout and stderr: every descriptor idemspec opens is
/// close-on-exec already, but one idemspec itself inherited from its parent (a CI runner's pipe)
/// may not be, so each one above 2 is marked close-on-exec first.
pub fn in_own_group(command: &mut tokio::process::Command) {
    #[cfg(unix)]
    {
        close_fds::set_fds_cloexec_threadsafe(3, &[]);
        command.process_group(0);
    }
    #[cfg(not(unix))]
    let _ = command;
}

/// Sends SIGKILL to the process group led by `pid` (nothing when it is gone already: ESRCH is the
/// usual answer after a clean exit).
pub fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    {
        let Some(pid) = pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        else {
            return;
        };
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Kills the process group led by its pid when dropped ([`kill_group`]): held beside a child
/// whose future may be dropped before it ends (an interrupted run), so what the child's shell
/// started does not outlive idemspec.
#[derive(Debug)]
pub struct GroupGuard(pub Option<u32>);

impl GroupGuard {
    /// Lets the group live on: for a child whose background processes are its point (a hook
    /// that restarts the target), once it exited on its own.
    pub fn release(mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// Set to `stdin` on a child that is itself idemspec (`idemspec __leasebroker`): its stdin is a
/// pipe whose only write end idemspec holds, and the child exits when the pipe closes — when
/// idemspec exits, even by SIGKILL ([`exit_with_parent`]). Children that run a user's command get
/// the same from the shell that runs it (`target_process`).
pub const LIFELINE_ENV: &str = "IDEMSPEC_LIFELINE";

/// Where [`LIFELINE_ENV`] says so, watches stdin on a thread of its own and exits the process
/// (status 1) once it reaches its end: the idemspec that started this one is gone, and a server
/// it no longer runs checks against must not hold its ports. Elsewhere nothing.
pub fn exit_with_parent() {
    if std::env::var_os(LIFELINE_ENV).is_none_or(|v| v != "stdin") {
        return;
    }
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin().lock();
        while std::io::Read::read(&mut stdin, &mut sink).is_ok_and(|n| n > 0) {}
        eprintln!("idemspec: the process that started this one is gone; exiting");
        std::process::exit(1);
    });
}

/// Whether a process with this id exists (Unix: signal 0 reaches it, or it exists under another
/// user; elsewhere assumed running).
pub fn is_running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return false;
        };
        !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}
