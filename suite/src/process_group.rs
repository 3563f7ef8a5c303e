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
