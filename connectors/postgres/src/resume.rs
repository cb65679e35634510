//! Where streaming resumes from a stored position, with Debezium's
//! meaning of the offset keys: `lsn_proc` is the LSN of the last event
//! handed over, `lsn_commit` the end LSN of the last transaction committed
//! before that event's transaction (the slot is confirmed up to it, so the
//! server sends that event's transaction again after a restart).

use crate::offsets::Position;

/// The LSN the slot may be confirmed up to for a stored position:
/// `lsn_commit`, else `lsn_proc`; nothing for a snapshot's position.
pub(crate) fn flush_lsn(p: &Position) -> Option<u64> {
    p.lsn_commit.or(p.lsn_proc)
}

/// The LSN `START_REPLICATION` asks for: the server sends every
/// transaction whose commit record starts at or after it.
pub(crate) fn start_lsn(p: &Position) -> u64 {
    p.lsn_proc.unwrap_or(p.lsn)
}

/// Which changes the server sends again that were handed over already.
///
/// Transactions arrive whole and in commit order. Every transaction whose
/// commit record starts before `lsn_commit` was done; the first one after
/// it is the transaction of the stored event, done up to that event's
/// LSN (changes within a transaction come in LSN order); everything after
/// it is new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resume {
    commit: u64,
    event: u64,
    /// The commit LSN of the first transaction at or after `commit`, once
    /// seen.
    first: Option<u64>,
}

impl Resume {
    /// The skipping a stored position calls for; `None` when nothing was
    /// handed over from the stream (a snapshot's position).
    pub(crate) fn after(p: &Position) -> Option<Resume> {
        let event = p.lsn_proc?;
        Some(Resume {
            commit: p.lsn_commit.unwrap_or(0),
            event,
            first: None,
        })
    }

    /// Whether the change at `lsn` of the transaction committing at
    /// `commit_lsn` was handed over already; `None` once the stream is
    /// past everything handed over (the resume is then done).
    pub(crate) fn skips(&mut self, commit_lsn: u64, lsn: u64) -> Option<bool> {
        if commit_lsn < self.commit {
            return Some(true);
        }
        match self.first {
            None => self.first = Some(commit_lsn),
            Some(first) if first != commit_lsn => return None,
            Some(_) => {}
        }
        Some(lsn <= self.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn position(lsn_commit: Option<u64>, lsn_proc: u64) -> Position {
        Position {
            lsn: lsn_proc,
            lsn_proc: Some(lsn_proc),
            lsn_commit,
            ..Position::default()
        }
    }

    /// A stream of transactions in commit order, each `(commit LSN, end
    /// LSN, change LSNs)`, interleaved as PostgreSQL writes them: a later
    /// transaction's changes may have lower LSNs than an earlier one's.
    fn stream() -> impl Strategy<Value = Vec<(u64, u64, Vec<u64>)>> {
        prop::collection::vec((1u64..5, prop::collection::vec(1u64..40, 1..6)), 1..8).prop_map(
            |txns| {
                let mut out = Vec::new();
                let mut seen = std::collections::HashSet::new();
                let mut commit = 1000;
                for (gap, changes) in txns {
                    // Commits 20 apart, changes up to 80 before their
                    // commit: transactions interleave. Changes are odd,
                    // commits and ends even: no LSN is used twice.
                    commit += gap * 20;
                    let mut lsns: Vec<u64> = changes
                        .iter()
                        .map(|c| commit - c * 2 - 1)
                        .filter(|l| seen.insert(*l))
                        .collect();
                    lsns.sort_unstable();
                    out.push((commit, commit + 6, lsns));
                }
                out.retain(|(_, _, l)| !l.is_empty());
                out
            },
        )
    }

    proptest! {
        /// Stopped after any change of any transaction (the offset the
        /// worker stores with it), a restart that receives the stream
        /// again from the confirmed LSN hands over exactly the changes
        /// after the stop: none twice, none lost.
        #[test]
        fn a_resume_skips_exactly_what_was_handed_over(txns in stream(), stop in any::<prop::sample::Index>()) {
            let all: Vec<(usize, u64, u64)> = txns
                .iter()
                .enumerate()
                .flat_map(|(i, (c, _, l))| l.iter().map(move |l| (i, *c, *l)))
                .collect();
            prop_assume!(!all.is_empty());
            let at = stop.index(all.len());
            let (tx, _, lsn) = all[at];
            let lsn_commit = tx.checked_sub(1).map(|p| txns[p].1);
            let stored = position(lsn_commit, lsn);
            let confirmed = flush_lsn(&stored).unwrap();
            let start = start_lsn(&stored).max(confirmed);
            // The server sends the transactions whose commit starts at or
            // after the start LSN.
            let mut resume = Resume::after(&stored);
            let mut got = Vec::new();
            for (c, _, lsns) in txns.iter().filter(|(c, _, _)| *c >= start) {
                for l in lsns {
                    let skip = match resume.as_mut().map(|r| r.skips(*c, *l)) {
                        Some(Some(s)) => s,
                        Some(None) => { resume = None; false }
                        None => false,
                    };
                    if !skip {
                        got.push((*c, *l));
                    }
                }
            }
            let want: Vec<(u64, u64)> = all[at + 1..].iter().map(|(_, c, l)| (*c, *l)).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_snapshot_position_skips_nothing() {
        let snapshot = Position {
            lsn: 500,
            ..Position::default()
        };
        assert_eq!(Resume::after(&snapshot), None);
        assert_eq!(flush_lsn(&snapshot), None);
        assert_eq!(start_lsn(&snapshot), 500);
    }
}
