//! CPU time of this process or thread, and pinning a thread to a core.

use std::time::Duration;

/// Returns user + system CPU time of `who` (`libc::RUSAGE_SELF` or `RUSAGE_THREAD`).
pub fn used(who: libc::c_int) -> Duration {
    // SAFETY: getrusage writes a whole rusage into the zeroed value it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Pins the calling thread to `core`.
pub fn pin(core: usize) -> Result<(), String> {
    // SAFETY: the set is zeroed, then filled by the libc macros, and passed by pointer.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("cannot pin to core {core}"))
    }
}
