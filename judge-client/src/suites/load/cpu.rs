//! The judge's own CPU time, so a run can say what each request cost the client and warn when
//! the client, not the target, was the bottleneck.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};

fn cpu_of(who: UsageWho) -> Duration {
    // getrusage only fails for an invalid `who`; a zero reading then just hides the figure.
    getrusage(who).map_or(Duration::ZERO, |usage| {
        let user = usage.user_time();
        let system = usage.system_time();
        let as_duration = |tv: nix::sys::time::TimeVal| {
            Duration::from_secs(tv.tv_sec().max(0) as u64)
                + Duration::from_micros(tv.tv_usec().max(0) as u64)
        };
        as_duration(user) + as_duration(system)
    })
}

/// User plus system CPU time of the whole process so far.
pub fn process_cpu() -> Duration {
    cpu_of(UsageWho::RUSAGE_SELF)
}

/// User plus system CPU time of the calling thread so far.
pub fn thread_cpu() -> Duration {
    cpu_of(UsageWho::RUSAGE_THREAD)
}

/// A worker thread busier than this share of its wall time cannot be trusted to send on time.
pub const SATURATED_SHARE: f64 = 0.9;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_grows_with_work() {
        // Spin until the thread's CPU time has grown by 20 ms: on a loaded machine the thread
        // gets only a share of the wall time, so the bound is on wall time, not the test.
        let before = thread_cpu();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while thread_cpu() - before < Duration::from_millis(20)
            && start.elapsed() < Duration::from_secs(20)
        {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let spent = thread_cpu() - before;
        assert!(spent >= Duration::from_millis(20), "{spent:?}");
        assert!(process_cpu() >= spent);
    }
}
