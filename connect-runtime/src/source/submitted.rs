//! Per-source-partition tracking of submitted records, so that only offsets
//! whose records (and every earlier record of the same source partition)
//! are done get committed.
//!
//! Submissions live in one ring in submission order, addressed by a
//! sequence number that doubles as the producer's delivery token, so an ack
//! is an O(1) index, with no map lookup and no allocation. At flush time the
//! ring is scanned once: per source partition, the committable offset is the
//! offset of the last submission in its longest done prefix. A record
//! dropped by a transform or tolerated by the error pipeline is "done" at
//! once, so it moves the offset forward as soon as everything before it is
//! done (Kafka waits for a later acked record: KAFKA-15296).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use connect_api::{SourceMap, SourceRecord};

/// State of one submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Handed to the producer, no ack yet.
    InFlight,
    /// Acknowledged, dropped or dead-lettered: its offset may be committed.
    Done,
}

#[derive(Debug)]
struct Submission {
    partition: Arc<SourceMap>,
    offset: SourceMap,
    state: State,
    /// Sent to the dead letter queue rather than to its topic.
    dead_letter: bool,
    /// The produced record, kept until its ack for `commit_record` and for the
    /// DLQ should delivery fail. Boxed: most tasks let go of records once
    /// sent, and an unboxed slot made every entry of the ring 240 bytes
    /// larger, entries touched again, cold, at the ack.
    record: Option<Box<SourceRecord>>,
}

/// What [`SubmittedRecords::complete`] hands back.
#[derive(Debug)]
pub struct Completed {
    /// The record attached with [`SubmittedRecords::attach`], if any.
    pub record: Option<SourceRecord>,
    /// Whether the submission was a dead-letter send.
    pub dead_letter: bool,
}

/// Offsets ready to be written: one (partition, offset) per source partition.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CommittableOffsets {
    /// The offsets, in first-seen order.
    pub offsets: Vec<(SourceMap, SourceMap)>,
    /// Records still in flight after this snapshot.
    pub in_flight: usize,
}

impl CommittableOffsets {
    /// Whether there is nothing to commit.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }
}

/// The tracker: see the module docs.
#[derive(Debug, Default)]
pub struct SubmittedRecords {
    ring: VecDeque<Option<Submission>>,
    /// Sequence number of `ring[0]`.
    base: u64,
    in_flight: usize,
    /// Offsets released from the front of the ring by
    /// [`SubmittedRecords::release_done`]: committable, the latest per source
    /// partition, in first-seen order.
    ready: Vec<(Arc<SourceMap>, SourceMap)>,
    /// Index in `ready` of the last partition released: runs of one
    /// partition skip the search.
    last_ready: usize,
}

impl SubmittedRecords {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a submission that awaits an ack; returns its token.
    pub fn submit(&mut self, partition: Arc<SourceMap>, offset: SourceMap) -> u64 {
        self.push(partition, offset, State::InFlight, false)
    }

    /// Record a dead-letter send that awaits its ack; returns its token.
    pub fn submit_dead_letter(&mut self, partition: Arc<SourceMap>, offset: SourceMap) -> u64 {
        self.push(partition, offset, State::InFlight, true)
    }

    /// Record a submission that is done already (dropped by a transform or
    /// tolerated by the error pipeline); returns its token.
    pub fn submit_done(&mut self, partition: Arc<SourceMap>, offset: SourceMap) -> u64 {
        self.push(partition, offset, State::Done, false)
    }

    fn push(
        &mut self,
        partition: Arc<SourceMap>,
        offset: SourceMap,
        state: State,
        dead_letter: bool,
    ) -> u64 {
        let token = self.base + self.ring.len() as u64;
        if state == State::InFlight {
            self.in_flight += 1;
        }
        self.ring.push_back(Some(Submission {
            partition,
            offset,
            state,
            dead_letter,
            record: None,
        }));
        token
    }

    /// Keep the produced `record` with its submission until the ack.
    pub fn attach(&mut self, token: u64, record: SourceRecord) {
        if let Some(s) = self.slot(token) {
            s.record = Some(Box::new(record));
        }
    }

    /// The submission `token` is done (acked, or its failure handled).
    /// Unknown or repeated tokens are ignored and return `None`.
    pub fn complete(&mut self, token: u64) -> Option<Completed> {
        let s = self.slot(token)?;
        if s.state == State::Done {
            return None;
        }
        s.state = State::Done;
        let done = Completed {
            record: s.record.take().map(|r| *r),
            dead_letter: s.dead_letter,
        };
        self.in_flight -= 1;
        Some(done)
    }

    /// Detach the record of an in-flight submission, leaving it in flight
    /// (to send it again, or to the DLQ, under the same token).
    pub fn take_record(&mut self, token: u64) -> Option<SourceRecord> {
        let s = self.slot(token)?;
        if s.state == State::Done {
            return None;
        }
        s.record.take().map(|r| *r)
    }

    /// Set the offset of a submission (in flight or done but not yet
    /// committed): records carry their offset until their ack.
    pub fn set_offset(&mut self, token: u64, offset: SourceMap) {
        if let Some(s) = self.slot(token) {
            s.offset = offset;
        }
    }

    /// Turn an in-flight submission into a dead-letter send: it stays in
    /// flight until the DLQ acknowledges it. Returns its source partition
    /// and offset (for the DLQ's context headers).
    pub fn redirect_to_dead_letter(&mut self, token: u64) -> Option<(Arc<SourceMap>, SourceMap)> {
        let s = self.slot(token)?;
        if s.state == State::Done {
            return None;
        }
        s.dead_letter = true;
        Some((s.partition.clone(), s.offset.clone()))
    }

    /// Whether `token` is an in-flight dead-letter send.
    pub fn is_dead_letter(&self, token: u64) -> bool {
        matches!(self.get(token), Some(s) if s.dead_letter && s.state == State::InFlight)
    }

    /// Whether `token` is a submission still waiting for its ack.
    pub fn is_in_flight(&self, token: u64) -> bool {
        matches!(self.get(token), Some(s) if s.state == State::InFlight)
    }

    fn get(&self, token: u64) -> Option<&Submission> {
        let i = usize::try_from(token.checked_sub(self.base)?).ok()?;
        self.ring.get(i)?.as_ref()
    }

    fn slot(&mut self, token: u64) -> Option<&mut Submission> {
        let i = usize::try_from(token.checked_sub(self.base)?).ok()?;
        self.ring.get_mut(i)?.as_mut()
    }

    /// Submissions not yet acknowledged.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Submissions held (in flight, or done behind one in flight): the
    /// figure backpressure is measured on, since it is what uses memory.
    pub fn held(&self) -> usize {
        self.ring.len()
    }

    /// Release the done submissions at the front of the ring: everything
    /// before them is done too, so their offsets are committable now. Their
    /// memory goes at once, and [`held`](Self::held) counts only what is
    /// really held up, so backpressure follows acks rather than offset
    /// flushes. The caller runs this after setting acked offsets.
    pub fn release_done(&mut self) {
        loop {
            match self.ring.front() {
                Some(Some(s)) if s.state == State::Done => {}
                Some(None) => {}
                _ => return,
            }
            let entry = self.ring.pop_front().flatten();
            self.base += 1;
            if let Some(s) = entry {
                self.keep_ready(s.partition, s.offset);
            }
        }
    }

    fn keep_ready(&mut self, partition: Arc<SourceMap>, offset: SourceMap) {
        let same = |(p, _): &(Arc<SourceMap>, SourceMap)| Arc::ptr_eq(p, &partition);
        let found = match self.ready.get(self.last_ready) {
            Some(entry) if same(entry) => Some(self.last_ready),
            // Tasks usually share one Arc per partition; equality is the
            // fallback for those that do not.
            _ => self
                .ready
                .iter()
                .position(same)
                .or_else(|| self.ready.iter().position(|(p, _)| **p == *partition)),
        };
        match found {
            Some(i) => {
                self.ready[i].1 = offset;
                self.last_ready = i;
            }
            None => {
                self.last_ready = self.ready.len();
                self.ready.push((partition, offset));
            }
        }
    }

    /// Put back offsets taken by [`committable`](Self::committable) whose
    /// write failed, so the next flush writes them again. A partition that
    /// has a later offset ready by then keeps the later one.
    pub fn restore(&mut self, offsets: Vec<(SourceMap, SourceMap)>) {
        for (partition, offset) in offsets {
            if !self.ready.iter().any(|(p, _)| **p == partition) {
                self.ready.push((Arc::new(partition), offset));
            }
        }
    }

    /// Forget every offset of `partition` submitted so far: none of them is
    /// committed, even once acknowledged (the task found its stored offset
    /// invalid and starts the partition over). Their submissions stay for
    /// their acks, filed under the empty partition, whose offsets are
    /// never written.
    pub fn forget(&mut self, partition: &SourceMap) {
        self.ready.retain(|(p, _)| **p != *partition);
        self.last_ready = 0;
        let nowhere = Arc::new(SourceMap::new());
        for sub in self.ring.iter_mut().flatten() {
            if *sub.partition == *partition {
                sub.partition = Arc::clone(&nowhere);
            }
        }
    }

    /// Take the committable offsets: per source partition, the offset of the
    /// last done submission before its first in-flight one. Those
    /// submissions are released.
    pub fn committable(&mut self) -> CommittableOffsets {
        // Partition identity: pointer first (tasks usually share one Arc per
        // partition), equality as the fallback.
        let mut by_ptr: HashMap<*const SourceMap, usize> = HashMap::new();
        let mut slots: Vec<(Arc<SourceMap>, Option<SourceMap>, bool)> = Vec::new();
        self.last_ready = 0;
        for (partition, offset) in self.ready.drain(..) {
            by_ptr.insert(Arc::as_ptr(&partition), slots.len());
            slots.push((partition, Some(offset), false));
        }
        for entry in self.ring.iter_mut() {
            let Some(sub) = entry else { continue };
            let ptr = Arc::as_ptr(&sub.partition);
            let slot = match by_ptr.get(&ptr) {
                Some(&i) => i,
                None => {
                    let i = slots
                        .iter()
                        .position(|(p, _, _)| **p == *sub.partition)
                        .unwrap_or_else(|| {
                            slots.push((sub.partition.clone(), None, false));
                            slots.len() - 1
                        });
                    by_ptr.insert(ptr, i);
                    i
                }
            };
            let (_, latest, blocked) = &mut slots[slot];
            if *blocked {
                continue;
            }
            match sub.state {
                State::InFlight => *blocked = true,
                State::Done => {
                    *latest = Some(std::mem::take(&mut sub.offset));
                    *entry = None;
                }
            }
        }
        while matches!(self.ring.front(), Some(None)) {
            self.ring.pop_front();
            self.base += 1;
        }
        CommittableOffsets {
            offsets: slots
                .into_iter()
                .filter_map(|(p, o, _)| o.map(|o| (SourceMap::clone(&p), o)))
                .collect(),
            in_flight: self.in_flight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn part(name: &str) -> Arc<SourceMap> {
        let mut m = SourceMap::new();
        m.insert("p".into(), name.into());
        Arc::new(m)
    }

    fn off(n: i64) -> SourceMap {
        let mut m = SourceMap::new();
        m.insert("n".into(), n.into());
        m
    }

    #[test]
    fn forgotten_partitions_commit_nothing_submitted_before() {
        let mut t = SubmittedRecords::new();
        let (a, b) = (part("a"), part("b"));
        let a0 = t.submit(a.clone(), off(0));
        t.submit_done(b.clone(), off(5));
        t.submit_done(a.clone(), off(1));
        t.complete(a0);
        t.release_done();
        let a2 = t.submit(a.clone(), off(2));
        t.forget(&a);
        t.complete(a2);
        t.set_offset(a2, off(2));
        let offsets = t.committable().offsets;
        assert!(
            offsets.iter().all(|(p, _)| *p != *a),
            "a forgotten offset came back: {offsets:?}"
        );
        assert!(offsets.contains(&(SourceMap::clone(&b), off(5))));
        // What is submitted after the reset counts again.
        t.submit_done(a.clone(), off(0));
        assert!(t
            .committable()
            .offsets
            .contains(&(SourceMap::clone(&a), off(0))));
    }

    #[test]
    fn restored_offsets_are_committable_again_unless_superseded() {
        let mut t = SubmittedRecords::new();
        let (a, b) = (part("a"), part("b"));
        let ta = t.submit(a.clone(), off(1));
        let tb = t.submit(b.clone(), off(1));
        t.complete(ta);
        t.complete(tb);
        let taken = t.committable();
        assert_eq!(taken.offsets.len(), 2);
        assert!(t.committable().is_empty());
        // b moves on before the failed write is put back: b keeps 2.
        let tb2 = t.submit(b.clone(), off(2));
        t.complete(tb2);
        t.release_done();
        t.restore(taken.offsets);
        let again = t.committable();
        assert_eq!(
            again.offsets,
            vec![
                (SourceMap::clone(&b), off(2)),
                (SourceMap::clone(&a), off(1))
            ]
        );
    }

    #[test]
    fn offset_waits_for_earlier_records_of_its_partition_only() {
        let mut t = SubmittedRecords::new();
        let a = part("a");
        let b = part("b");
        let a1 = t.submit(a.clone(), off(1));
        let b1 = t.submit(b.clone(), off(1));
        let a2 = t.submit(a.clone(), off(2));
        t.complete(a2);
        t.complete(b1);
        let c = t.committable();
        assert_eq!(c.offsets, vec![(SourceMap::clone(&b), off(1))]);
        assert_eq!(c.in_flight, 1);
        t.complete(a1);
        assert_eq!(
            t.committable().offsets,
            vec![(SourceMap::clone(&a), off(2))]
        );
        assert_eq!(t.held(), 0);
    }

    #[test]
    fn released_records_stop_counting_as_held_and_commit_later() {
        let mut t = SubmittedRecords::new();
        let (a, b) = (part("a"), part("b"));
        let a1 = t.submit(a.clone(), off(1));
        let b1 = t.submit(b.clone(), off(1));
        let a2 = t.submit(a.clone(), off(2));
        let b2 = t.submit(b.clone(), off(2));
        t.complete(a1);
        t.complete(a2);
        t.complete(b2);
        t.release_done();
        // a1 is released; b1 is in flight, so a2 and b2 stay behind it.
        assert_eq!(t.held(), 3);
        t.complete(b1);
        t.release_done();
        assert_eq!(t.held(), 0, "everything acked is released");
        assert_eq!(t.in_flight(), 0);
        let c = t.committable();
        assert_eq!(
            c.offsets,
            vec![
                (SourceMap::clone(&a), off(2)),
                (SourceMap::clone(&b), off(2))
            ]
        );
        assert!(t.committable().is_empty(), "released offsets commit once");
    }

    #[test]
    fn dropped_records_move_the_offset_forward_alone() {
        let mut t = SubmittedRecords::new();
        let a = part("a");
        let acked = t.submit(a.clone(), off(1));
        t.complete(acked);
        t.submit_done(a.clone(), off(2));
        assert_eq!(
            t.committable().offsets,
            vec![(SourceMap::clone(&a), off(2))]
        );
    }

    #[test]
    fn equal_partitions_in_different_arcs_group_together() {
        let mut t = SubmittedRecords::new();
        let first = t.submit(part("a"), off(1));
        t.submit_done(part("a"), off(2));
        assert!(t.committable().is_empty(), "2 must wait for 1");
        t.complete(first);
        assert_eq!(
            t.committable().offsets,
            vec![(SourceMap::clone(&part("a")), off(2))]
        );
    }

    #[test]
    fn stale_and_repeated_tokens_are_ignored() {
        let mut t = SubmittedRecords::new();
        let tok = t.submit(part("a"), off(1));
        assert!(t.complete(tok).is_some());
        assert!(t.complete(tok).is_none());
        t.complete(tok + 100);
        assert_eq!(t.in_flight(), 0);
        t.committable();
        t.complete(tok);
        assert_eq!(t.in_flight(), 0);
    }

    #[test]
    fn redirect_keeps_the_offset_in_place() {
        let mut t = SubmittedRecords::new();
        let a = part("a");
        let first = t.submit(a.clone(), off(1));
        let second = t.submit(a.clone(), off(2));
        t.complete(second);
        let (p, o) = t.redirect_to_dead_letter(first).unwrap();
        assert_eq!((p, o), (a.clone(), off(1)));
        assert!(t.is_dead_letter(first));
        assert!(
            t.committable().is_empty(),
            "the DLQ send is still in flight"
        );
        assert!(t.complete(first).unwrap().dead_letter);
        assert_eq!(
            t.committable().offsets,
            vec![(SourceMap::clone(&a), off(2))]
        );
    }

    proptest! {
        /// Whatever the ack order, a committed offset never passes a record
        /// of its partition that is still in flight, and once everything is
        /// acked the last offset of each partition is committed.
        #[test]
        fn never_commits_past_an_in_flight_record(
            parts in proptest::collection::vec(0usize..3, 1..40),
            order in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
            flush_every in 1usize..8,
        ) {
            let names = [part("a"), part("b"), part("c")];
            let mut t = SubmittedRecords::new();
            let mut subs = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                let tok = t.submit(names[*p].clone(), off(i as i64));
                subs.push((tok, *p, i as i64, false));
            }
            let mut committed: HashMap<usize, i64> = HashMap::new();
            for (step, idx) in order.iter().enumerate() {
                let k = idx.index(subs.len());
                t.complete(subs[k].0);
                subs[k].3 = true;
                if step % 3 == 0 {
                    t.release_done();
                }
                if step % flush_every == 0 {
                    for (p, o) in t.committable().offsets {
                        let pi = names.iter().position(|n| **n == p).unwrap();
                        let n = o["n"].as_i64().unwrap();
                        // Every record of pi up to n must be acked.
                        for s in subs.iter().filter(|s| s.1 == pi && s.2 <= n) {
                            prop_assert!(s.3, "committed {} past in-flight {}", n, s.2);
                        }
                        committed.insert(pi, n);
                    }
                }
            }
            for s in subs.iter_mut() { t.complete(s.0); s.3 = true; }
            for (p, o) in t.committable().offsets {
                let pi = names.iter().position(|n| **n == p).unwrap();
                committed.insert(pi, o["n"].as_i64().unwrap());
            }
            for (pi, _) in names.iter().enumerate() {
                let last = subs.iter().filter(|s| s.1 == pi).map(|s| s.2).max();
                prop_assert_eq!(committed.get(&pi).copied(), last);
            }
            prop_assert_eq!(t.held(), 0);
        }
    }
}
