//! Containing panics in plugin code.
//!
//! Connectors, tasks, transformations and converters are other people's
//! code: any call into them may panic. Kafka's worker turns any
//! `Throwable` from a plugin into a failure of its unit; [`contain`] and
//! [`contain_sync`] do the same with a panic, turning it into a
//! [`ConnectError`] that names the call, the panic's message and where it
//! happened (with a backtrace when `RUST_BACKTRACE` asks for one), so the
//! unit goes FAILED with that trace instead of dying silently.
//!
//! This needs `panic = "unwind"` (Rust's default): with `panic = "abort"`
//! in the final binary's profile, any plugin panic ends the process.
//!
//! While a contained call runs, the process's panic hook records the
//! panic's location here instead of printing it: the worker logs the
//! failure itself, at ERROR, with its connector and task. Panics elsewhere
//! go to the hook that was installed before, unchanged.

use std::any::Any;
use std::backtrace::{Backtrace, BacktraceStatus};
use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Once;
use std::task::Poll;

use connect_api::{ConnectError, Result};

thread_local! {
    /// How many contained calls this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Where the last contained panic on this thread happened.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if DEPTH.with(Cell::get) == 0 {
                return previous(info);
            }
            let mut place = info
                .location()
                .map(|l| format!("at {}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_else(|| "at an unknown location".to_string());
            let backtrace = Backtrace::capture();
            if backtrace.status() == BacktraceStatus::Captured {
                place.push_str(&format!("\nstack backtrace:\n{backtrace}"));
            }
            LAST.with(|last| *last.borrow_mut() = Some(place));
        }));
    });
}

/// Marks this thread as inside a contained call while it lives.
struct Inside;

impl Inside {
    fn enter() -> Inside {
        DEPTH.with(|d| d.set(d.get() + 1));
        Inside
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// The error a panic in `what` becomes: its message and where it happened.
fn panicked(what: &dyn Display, payload: Box<dyn Any + Send>) -> ConnectError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    let place = LAST
        .with(|last| last.borrow_mut().take())
        .unwrap_or_default();
    ConnectError::other(format!("{what} panicked: {message} {place}"))
}

/// Run `call` (plugin code named by `what`, e.g. "connector files: start"),
/// turning a panic in any of its polls into an error.
pub(crate) async fn contain<T>(
    what: impl Display,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    install_hook();
    let mut call = std::pin::pin!(call);
    std::future::poll_fn(|cx| {
        let polled = {
            let _inside = Inside::enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx)))
        };
        match polled {
            Ok(poll) => poll,
            Err(payload) => Poll::Ready(Err(panicked(&what, payload))),
        }
    })
    .await
}

/// [`contain`] for a synchronous call.
pub(crate) fn contain_sync<T>(what: impl Display, call: impl FnOnce() -> Result<T>) -> Result<T> {
    install_hook();
    let result = {
        let _inside = Inside::enter();
        std::panic::catch_unwind(AssertUnwindSafe(call))
    };
    result.unwrap_or_else(|payload| Err(panicked(&what, payload)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_becomes_an_error_naming_the_call_message_and_place() {
        let e = contain("task t-0: poll", async {
            tokio::task::yield_now().await;
            if true {
                panic!("index out of bounds");
            }
            Ok(())
        })
        .await
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("task t-0: poll panicked: index out of bounds"),
            "{text}"
        );
        assert!(text.contains("panics.rs:"), "{text}");
        assert_eq!(contain("ok", async { Ok(7) }).await.unwrap(), 7);
        let e = contain_sync("validate", || -> Result<()> {
            panic!("{}", String::from("boom"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("validate panicked: boom"), "{e}");
        assert_eq!(DEPTH.with(Cell::get), 0);
    }
}
