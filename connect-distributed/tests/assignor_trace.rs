//! The Rust assignor against Java's own: `tests/java/AssignorTrace.java`
//! ran Kafka 4.4.0's `IncrementalCooperativeAssignor` over 300 random
//! simulated clusters (workers joining and leaving, connectors added,
//! resized and deleted, time passing, then settling) and recorded every
//! round's decisions in `tests/golden/assignor_trace.txt`. This test
//! replays the same steps through [`assign`] and requires the same
//! decisions: the same items assigned to the same members in the same
//! order, the same revocations, the same delay.

use std::collections::BTreeMap;

use connect_distributed::assignor::{
    assign, AssignorConfig, AssignorState, ConfigSnapshot, ConnectorsAndTasks, Member, RoundInput,
};
use connect_distributed::protocol::{SubProtocol, TaskId};

const TRACE: &str = include_str!("golden/assignor_trace.txt");

fn items(connectors: &[String], tasks: &[TaskId]) -> String {
    let parts: Vec<String> = connectors
        .iter()
        .cloned()
        .chain(tasks.iter().map(|t| format!("{}/{}", t.connector, t.task)))
        .collect();
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(",")
    }
}

struct Replay {
    config: AssignorConfig,
    snapshot: ConfigSnapshot,
    workers: BTreeMap<String, ConnectorsAndTasks>,
    leader: Option<String>,
    state: AssignorState,
    generation: i32,
    now: i64,
}

impl Replay {
    fn new(max_delay_ms: i32) -> Self {
        Replay {
            config: AssignorConfig { max_delay_ms },
            snapshot: ConfigSnapshot::default(),
            workers: BTreeMap::new(),
            leader: None,
            state: AssignorState::default(),
            generation: 0,
            now: 1_000_000,
        }
    }

    /// One round; returns the lines Java printed for it.
    fn round(&mut self) -> Vec<String> {
        let leader = match &self.leader {
            Some(l) if self.workers.contains_key(l) => l.clone(),
            _ => {
                self.state = AssignorState::default();
                self.workers.keys().next().cloned().expect("a worker")
            }
        };
        self.leader = Some(leader.clone());
        let last_completed = self.generation;
        self.generation += 1;
        let members: Vec<Member> = self
            .workers
            .iter()
            .map(|(id, current)| Member {
                id: id.clone(),
                url: format!("http://{id}:8083/"),
                config_offset: self.snapshot.offset,
                current: current.clone(),
            })
            .collect();
        let input = RoundInput {
            leader_id: &leader,
            members: &members,
            snapshot: &self.snapshot,
            protocol: SubProtocol::Sessioned,
            last_completed_generation: last_completed,
            generation: self.generation,
            now_ms: self.now,
        };
        let (round, state) = assign(&self.state, &self.config, &input).expect("assign");
        self.state = state;
        let mut lines = Vec::new();
        for (id, owned) in self.workers.iter_mut() {
            let m = &round.members[id];
            let mut rc = m.revoked.connectors.clone();
            rc.sort();
            let mut rt = m.revoked.tasks.clone();
            rt.sort();
            lines.push(format!(
                "member {id} assigned {} revoked {} delay {}",
                items(&m.assigned.connectors, &m.assigned.tasks),
                items(&rc, &rt),
                round.delay
            ));
            let mut connectors = m.assigned.connectors.clone();
            connectors.extend(
                owned
                    .connectors
                    .iter()
                    .filter(|c| !rc.contains(*c))
                    .cloned(),
            );
            let mut tasks = m.assigned.tasks.clone();
            tasks.extend(owned.tasks.iter().filter(|t| !rt.contains(*t)).cloned());
            *owned = ConnectorsAndTasks { connectors, tasks };
        }
        lines
    }
}

#[test]
fn rust_assignor_decides_as_javas_does() {
    let mut lines = TRACE.lines().peekable();
    let mut cases = 0;
    let mut rounds = 0;
    while let Some(header) = lines.next() {
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.first(), Some(&"case"), "bad header {header}");
        let case = parts[1];
        let mut replay = Replay::new(parts[3].parse().expect("delay"));
        loop {
            let line = lines.next().expect("unterminated case");
            let step: Vec<&str> = line.split(' ').collect();
            match step[0] {
                "end" => break,
                "add" => {
                    replay
                        .workers
                        .insert(step[1].to_owned(), ConnectorsAndTasks::default());
                }
                "remove" => {
                    replay.workers.remove(step[1]);
                }
                "set" => {
                    replay
                        .snapshot
                        .connectors
                        .insert(step[1].to_owned(), step[2].parse().expect("tasks"));
                    replay.snapshot.offset += 1;
                }
                "delete" => {
                    replay.snapshot.connectors.remove(step[1]);
                    replay.snapshot.offset += 1;
                }
                "advance" => replay.now += step[1].parse::<i64>().expect("ms"),
                "round" => {
                    rounds += 1;
                    let generation = replay.generation + 1;
                    for ours in replay.round() {
                        let java = lines.next().expect("member line");
                        assert_eq!(ours, java, "case {case}, generation {generation}");
                    }
                }
                other => panic!("unknown step {other} in case {case}"),
            }
        }
        cases += 1;
    }
    assert_eq!(cases, 300);
    assert!(rounds > 3000, "only {rounds} rounds");
}
