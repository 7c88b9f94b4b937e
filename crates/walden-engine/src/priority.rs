//! Checkpoints and the read-back check of the data file run below the CPU
//! priority of commits and reads.
//!
//! A checkpoint encodes and writes what changed; on a small machine that
//! takes a core from the sessions, and under load their transactions then
//! wait for the CPU while it runs (an explicit `CHECKPOINT`, unpaced, cost
//! a two-core machine half its TPC-B rate for a few seconds). At nice 10
//! such a thread gets the CPU the sessions leave: as fast as ever on an
//! idle machine, out of their way on a busy one. Linux applies nice per
//! thread; elsewhere this does nothing.

/// The niceness background threads take.
const BACKGROUND_NICE: libc::c_int = 10;

/// Lowers the calling thread's CPU priority for background work (for good:
/// only threads that do nothing else call it).
pub(crate) fn lower_for_background() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take no pointers; a failure (a
    // sandbox refusing it) leaves the priority as it was, which is only
    // slower for the sessions.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
    }
}

/// Runs `f` (checkpoint work a session asked for) on a thread of its own
/// at the checkpoint priority, and waits for it.
pub(crate) fn at_checkpoint_priority<T: Send>(
    f: impl FnOnce() -> crate::error::Result<T> + Send,
) -> crate::error::Result<T> {
    std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("walden-checkpoint".into())
            .spawn_scoped(s, || {
                lower_for_background();
                f()
            })
            .map_err(crate::error::io_err("(a thread for the checkpoint)"))?;
        h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}
