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
//! On the per-record path (transformations, predicates, converters) a
//! panic is a failure of that stage instead, which `errors.tolerance`
//! decides on as Kafka does for any `Throwable` there: [`catch_sync`]
//! catches it without allocating unless it panics, and the caller names it.
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
    Panicked::from_payload(payload).into_error(what)
}

/// The message a panic was raised with (`panic!("...")`'s text).
pub(crate) fn payload_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// A panic [`catch_sync`] caught, with its message and place, waiting to be
/// named by [`into_error`](Self::into_error).
pub(crate) struct Panicked {
    message: String,
    place: String,
}

impl Panicked {
    /// Take the panic's message from its payload and its place from this
    /// thread's record of the last contained panic (set by the hook).
    fn from_payload(payload: Box<dyn Any + Send>) -> Panicked {
        let message = payload_message(&*payload);
        let place = LAST
            .with(|last| last.borrow_mut().take())
            .unwrap_or_default();
        Panicked { message, place }
    }

    /// The error the panic becomes, naming the call it happened in.
    pub(crate) fn into_error(self, what: impl Display) -> ConnectError {
        let Panicked { message, place } = self;
        ConnectError::other(format!("{what} panicked: {message} {place}"))
    }
}

/// Names a call of a task (`task files-0: commit_record`) for [`contain`]
/// without formatting anything unless it panics: for calls made per
/// record or per commit.
pub(crate) struct CallOf<'a>(pub(crate) &'a (dyn Display + Sync), pub(crate) &'static str);

impl Display for CallOf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task {}: {}", self.0, self.1)
    }
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
    catch_sync(call).unwrap_or_else(|p| Err(p.into_error(what)))
}

/// Run the synchronous plugin `call`, catching a panic to be named after
/// the call returns. For the per-record path (transformations, predicates,
/// converters): nothing is allocated unless the call panics, and the name
/// may come from what `call` borrowed mutably (a chain's alias, a
/// converter's class), which [`contain_sync`]'s up-front label cannot.
pub(crate) fn catch_sync<T>(call: impl FnOnce() -> T) -> std::result::Result<T, Panicked> {
    install_hook();
    let result = {
        let _inside = Inside::enter();
        std::panic::catch_unwind(AssertUnwindSafe(call))
    };
    result.map_err(Panicked::from_payload)
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
        let caught = catch_sync(|| -> u8 { panic!("converter {}", 7) }).err();
        let e = caught.map(|p| p.into_error("value converter")).unwrap();
        assert!(
            e.to_string()
                .contains("value converter panicked: converter 7 at "),
            "{e}"
        );
        assert_eq!(catch_sync(|| 3).ok(), Some(3));
        assert_eq!(DEPTH.with(Cell::get), 0);
    }
}
