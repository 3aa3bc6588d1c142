//! Every task agent-server spawns starts here, so that none escapes its request's trace.
//!
//! A spawned task does not inherit its spawner's task-locals, and the head-sampling decision of a
//! request travels in one ([`sampling::carried`]): a task spawned without it would build the step
//! spans of a request whose trace is not recorded, or start traces of its own. So request work is
//! spawned with [`in_request`] or [`local_in_request`], and the server's own work (a batch of many
//! requests' writes) with [`server_work`], which says that it belongs to no request. The raw
//! spawns are banned in this crate (`clippy.toml`'s `disallowed-methods`); only this module may
//! call them.
//!
//! A task that panics hands its spawner the panic; [`panic_message`] reads what it said.
#![allow(clippy::disallowed_methods)]

use std::any::Any;
use std::future::Future;

use tokio::task::JoinHandle;

use crate::telemetry::sampling;

/// Spawns `task`, part of the current request's work, on the runtime, inside that request's trace.
pub fn in_request<F>(task: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(sampling::carried(task))
}

/// Spawns `task`, part of the current request's work, as a local task on this actix worker (it
/// need not be `Send`), inside that request's trace.
pub fn local_in_request<F>(task: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    actix_rt::spawn(sampling::carried(task))
}

/// Spawns `task`, the server's own work rather than one request's (it serves many), on the
/// runtime. Its spans follow the span it is instrumented with, if any.
pub fn server_work<F>(task: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(task)
}

/// What a panic said, when it said it with a string (as `panic!` and `expect` do).
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panics_message_is_read_from_either_string_type() {
        let borrowed = std::panic::catch_unwind(|| panic!("borrowed")).unwrap_err();
        assert_eq!(panic_message(&*borrowed), "borrowed");
        let owned = std::panic::catch_unwind(|| panic!("owned {}", 1)).unwrap_err();
        assert_eq!(panic_message(&*owned), "owned 1");
        let other = std::panic::catch_unwind(|| std::panic::panic_any(7_u8)).unwrap_err();
        assert_eq!(panic_message(&*other), "(no message)");
    }
}
