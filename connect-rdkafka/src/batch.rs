//! Batch consumption: librdkafka's `rd_kafka_consume_batch_queue` over a
//! queue of the adapter's own that each assigned partition's fetch queue
//! forwards to.
//!
//! rust-rdkafka returns one message per poll, and each poll costs a
//! queue lock, three clock reads and an event allocation; a sink reading a
//! backlog spent more on that than on its own work (BENCHMARKS.md, the
//! head-to-head breakdown). One batch call takes up to a poll's worth of
//! messages under one lock.
//!
//! Why a queue of our own and not the consumer's: the consumer's queue also
//! carries the group's rebalance events, which rust-rdkafka takes as events;
//! a batch call that met one there would have librdkafka "serve" it by
//! unassigning every partition. Here only fetched messages (and per-partition
//! fetch errors) arrive; rebalances stay on the consumer's queue, which the
//! adapter keeps polling.
//!
//! librdkafka drops a partition's forwarding when it stops fetching it
//! (unassign, or the stop before a new assignment) and, once the
//! application has forwarded it, does not forward it anywhere at the next
//! start: so every assignment is forwarded again ([`BatchQueue::forward`]),
//! and the adapter forwards its whole assignment again now and then
//! ([`crate::consumer`]'s `REFORWARD`): a stop that librdkafka completed
//! after the new assignment was forwarded would otherwise leave that
//! partition's records where nobody reads them. The tests have not met
//! that order (`kafka_conformance`'s `a_partition_assigned_again_...`
//! passes without the re-forwarding); it is a net, at one cheap call per
//! assigned partition a second.

#![allow(unsafe_code)]

use std::borrow::Cow;
use std::ffi::{c_void, CStr, CString};
use std::ptr::NonNull;
use std::sync::Arc;

use ::rdkafka::bindings as rd;
use ::rdkafka::client::{Client, ClientContext};
use ::rdkafka::error::RDKafkaErrorCode;
use ::rdkafka::message::Timestamp;
use tokio::sync::Notify;

/// Room for one batch's message pointers, reused from poll to poll (empty
/// between calls).
#[derive(Default)]
pub(crate) struct Slots(Vec<*mut rd::rd_kafka_message_t>);

// SAFETY: the vector holds no pointer between calls of `BatchQueue::drain`
// (it is cleared before that returns), so moving it between threads moves
// nothing of librdkafka's.
unsafe impl Send for Slots {}

/// The adapter's message queue of one consumer.
pub(crate) struct BatchQueue {
    queue: NonNull<rd::rd_kafka_queue_t>,
    rk: NonNull<rd::rd_kafka_t>,
    /// Notified by librdkafka (from its threads) when the queue gets a
    /// message while it was empty since the last batch.
    wake: Arc<Notify>,
}

// SAFETY: librdkafka's queues and client handle are thread-safe (every
// call used here takes the queue's or the client's own locks); the
// pointers stay valid until `drop`, which the owner runs before it
// destroys the client (see `RdConsumer`'s `Drop`).
unsafe impl Send for BatchQueue {}
// SAFETY: as for `Send`: no method needs exclusive access on our side.
unsafe impl Sync for BatchQueue {}

unsafe extern "C" fn nonempty(_rk: *mut rd::rd_kafka_t, opaque: *mut c_void) {
    // SAFETY: `opaque` is the `Notify` inside `BatchQueue::wake`, kept alive
    // until the callback is disabled in `drop`.
    let wake = unsafe { &*(opaque as *const Notify) };
    wake.notify_one();
}

impl BatchQueue {
    /// A new queue of `client`'s, waking [`BatchQueue::wake`] when a
    /// message arrives.
    pub(crate) fn new<C: ClientContext>(client: &Client<C>) -> Option<Self> {
        let rk = NonNull::new(client.native_ptr())?;
        // SAFETY: `rk` is a live client handle.
        let queue = NonNull::new(unsafe { rd::rd_kafka_queue_new(rk.as_ptr()) })?;
        let wake = Arc::new(Notify::new());
        // SAFETY: `queue` is live; the opaque pointer is `wake`'s Notify,
        // which lives as long as `self` (the callback is disabled first in
        // `drop`).
        unsafe {
            rd::rd_kafka_queue_cb_event_enable(
                queue.as_ptr(),
                Some(nonempty),
                Arc::as_ptr(&wake) as *mut c_void,
            );
        }
        Some(BatchQueue { queue, rk, wake })
    }

    /// Woken when the queue got a message after the last batch took all.
    pub(crate) fn wake(&self) -> &Notify {
        &self.wake
    }

    /// Route `topic`-`partition`'s fetched records here. Messages already
    /// queued for it move along, in order; forwarding again is harmless.
    pub(crate) fn forward(&self, topic: &str, partition: i32) {
        let Ok(name) = CString::new(topic) else {
            return;
        };
        // SAFETY: `rk` is live and `name` NUL-terminated for the call; the
        // returned handle is released right after use.
        unsafe {
            let partition_queue =
                rd::rd_kafka_queue_get_partition(self.rk.as_ptr(), name.as_ptr(), partition);
            if partition_queue.is_null() {
                return; // not a partition librdkafka knows (yet)
            }
            rd::rd_kafka_queue_forward(partition_queue, self.queue.as_ptr());
            rd::rd_kafka_queue_destroy(partition_queue);
        }
    }

    /// Take up to `max` queued messages without waiting, calling `each` on
    /// every one in queue order (a per-partition fetch error as `Err`).
    /// Returns how many were taken.
    pub(crate) fn drain(
        &self,
        slots: &mut Slots,
        max: usize,
        mut each: impl FnMut(Result<Fetched<'_>, RDKafkaErrorCode>),
    ) -> usize {
        let slots = &mut slots.0;
        slots.clear();
        slots.reserve(max);
        // SAFETY: `slots` has room for `max` pointers; librdkafka writes
        // `n` of them and hands their ownership to us.
        let n = unsafe {
            rd::rd_kafka_consume_batch_queue(self.queue.as_ptr(), 0, slots.as_mut_ptr(), max)
        };
        let n = usize::try_from(n).unwrap_or(0).min(max);
        // SAFETY: librdkafka initialised the first `n` slots.
        unsafe { slots.set_len(n) };
        for &message in slots.iter() {
            // SAFETY: each pointer is a live message we own until the
            // destroy below; the view does not outlive this iteration.
            let raw = unsafe { &*message };
            if raw.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                each(Ok(Fetched { raw }));
            } else {
                each(Err(raw.err.into()));
            }
            // SAFETY: ours (see above), destroyed once.
            unsafe { rd::rd_kafka_message_destroy(message) };
        }
        slots.clear();
        n
    }
}

impl Drop for BatchQueue {
    fn drop(&mut self) {
        // SAFETY: the queue is live; disabling the callback first means no
        // librdkafka thread uses `wake` once it is freed.
        unsafe {
            rd::rd_kafka_queue_cb_event_enable(self.queue.as_ptr(), None, std::ptr::null_mut());
            rd::rd_kafka_queue_destroy(self.queue.as_ptr());
        }
    }
}

/// One message of a batch, borrowed from librdkafka until the batch moves on.
pub(crate) struct Fetched<'a> {
    raw: &'a rd::rd_kafka_message_t,
}

/// `len` bytes at `ptr` (none for a null pointer: a null key or value).
///
/// SAFETY: `ptr` is null or valid for `len` bytes for `'a`.
unsafe fn bytes<'a>(ptr: *const c_void, len: usize) -> Option<&'a [u8]> {
    if ptr.is_null() {
        None
    } else {
        // SAFETY: the caller's promise.
        Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
    }
}

/// What the consumer reads of a fetched message, whether it came from
/// rust-rdkafka's one-by-one poll or from a batch.
pub(crate) trait Fetch {
    fn topic(&self) -> &str;
    fn partition(&self) -> i32;
    fn offset(&self) -> i64;
    fn timestamp(&self) -> Timestamp;
    fn key(&self) -> Option<&[u8]>;
    fn payload(&self) -> Option<&[u8]>;
    /// Each header's name and value (`None`: a null value), in order.
    fn headers<'s>(&'s self, each: impl FnMut(Cow<'s, str>, Option<&'s [u8]>));
}

impl Fetch for Fetched<'_> {
    fn topic(&self) -> &str {
        // SAFETY: a fetched message's `rkt` is its live topic handle, and
        // librdkafka's topic names are NUL-terminated and outlive it.
        let name = unsafe { CStr::from_ptr(rd::rd_kafka_topic_name(self.raw.rkt)) };
        name.to_str().unwrap_or("")
    }

    fn partition(&self) -> i32 {
        self.raw.partition
    }

    fn offset(&self) -> i64 {
        self.raw.offset
    }

    fn key(&self) -> Option<&[u8]> {
        // SAFETY: librdkafka's key pointer and length belong together.
        unsafe { bytes(self.raw.key, self.raw.key_len) }
    }

    fn payload(&self) -> Option<&[u8]> {
        // SAFETY: as for `key`.
        unsafe { bytes(self.raw.payload, self.raw.len) }
    }

    fn timestamp(&self) -> Timestamp {
        let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        // SAFETY: the message is live; `kind` is valid for a write.
        let ms = unsafe { rd::rd_kafka_message_timestamp(self.raw, &mut kind) };
        match kind {
            rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_CREATE_TIME => {
                Timestamp::CreateTime(ms)
            }
            rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME => {
                Timestamp::LogAppendTime(ms)
            }
            _ => Timestamp::NotAvailable,
        }
    }

    fn headers<'s>(&'s self, mut each: impl FnMut(Cow<'s, str>, Option<&'s [u8]>)) {
        let mut headers: *mut rd::rd_kafka_headers_t = std::ptr::null_mut();
        // SAFETY: the message is live; `headers` is valid for a write and
        // points into the message afterwards (freed with it).
        let err = unsafe { rd::rd_kafka_message_headers(self.raw, &mut headers) };
        if err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR || headers.is_null() {
            return;
        }
        for idx in 0.. {
            let (mut name, mut value, mut size) = (std::ptr::null(), std::ptr::null(), 0usize);
            // SAFETY: `headers` is live; the out-pointers are valid.
            let err = unsafe {
                rd::rd_kafka_header_get_all(headers, idx, &mut name, &mut value, &mut size)
            };
            if err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR || name.is_null() {
                break;
            }
            // SAFETY: librdkafka's header names are NUL-terminated, values
            // `size` bytes (null for a null value), both owned by the message.
            let (name, value) = unsafe { (CStr::from_ptr(name), bytes(value, size)) };
            each(String::from_utf8_lossy(name.to_bytes()), value);
        }
    }
}
