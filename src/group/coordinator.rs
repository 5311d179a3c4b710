//! The in-process group coordinator (Kafka's classic, eager protocol).
//!
//! A member joining, leaving, changing its subscription or missing
//! `max.poll.interval.ms` starts a rebalance. Every remaining member must
//! rejoin (at its next poll, after revoking its partitions and committing)
//! before the new assignment is handed out under a new generation, so a
//! partition never has two owners at once. Commits carry the member's
//! generation; one from an older generation is refused. A change of a
//! subscribed topic's metadata (deleted, created, more partitions) that a
//! member sees at its poll rebalances the group too, as Kafka's does.

use super::{Assignor, TopicPartition};
use crate::error::{Error, Result};
use crate::log::Notifier;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a member must do next, as its poll sees the group.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum MemberView {
    /// The member was removed (missed `max.poll.interval.ms`): rejoin.
    Removed,
    /// A rebalance started: revoke, commit, then [`Group::rejoin`].
    MustRejoin,
    /// Rejoined; waiting for the other members.
    Waiting,
    /// The group is stable: this generation, these partitions.
    Stable(i32, Vec<TopicPartition>),
}

struct Member {
    topics: Vec<String>,
    joined: bool,
    last_poll: Instant,
    max_poll_interval: Duration,
}

struct GroupState {
    generation: i32,
    rebalancing: bool,
    members: BTreeMap<String, Member>,
    assignment: BTreeMap<String, Vec<TopicPartition>>,
    assignor: Option<Arc<dyn Assignor>>,
    /// The partition counts the assignment was computed from (topics that
    /// did not exist then are absent).
    counts: BTreeMap<String, u32>,
}

/// One consumer group's membership.
pub(crate) struct Group {
    id: String,
    state: Mutex<GroupState>,
    changed: Condvar,
    notifier: Arc<Notifier>,
}

/// A snapshot of a group for `describe`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupMembers {
    /// The current generation (0 before the first assignment).
    pub generation: i32,
    /// Whether a rebalance is in progress.
    pub rebalancing: bool,
    /// Each member and its partitions.
    pub members: Vec<(String, Vec<TopicPartition>)>,
}

impl Group {
    fn new(id: &str, notifier: Arc<Notifier>) -> Self {
        Group {
            id: id.to_owned(),
            state: Mutex::new(GroupState {
                generation: 0,
                rebalancing: false,
                members: BTreeMap::new(),
                assignment: BTreeMap::new(),
                assignor: None,
                counts: BTreeMap::new(),
            }),
            changed: Condvar::new(),
            notifier,
        }
    }

    fn announce(&self) {
        self.changed.notify_all();
        // Wake consumers blocked waiting for data, so they take part.
        self.notifier.notify();
    }

    fn start_rebalance(st: &mut GroupState) {
        st.rebalancing = true;
        for m in st.members.values_mut() {
            m.joined = false;
        }
    }

    /// Removes members that have not polled within their
    /// `max.poll.interval.ms`; returns whether any was removed.
    fn expire(st: &mut GroupState, now: Instant) -> bool {
        let before = st.members.len();
        st.members
            .retain(|_, m| now.saturating_duration_since(m.last_poll) <= m.max_poll_interval);
        let removed = st.members.len() != before;
        if removed {
            let members = &st.members;
            st.assignment.retain(|id, _| members.contains_key(id));
            if st.members.is_empty() {
                st.rebalancing = false;
            } else if !st.rebalancing {
                // During a rebalance, members that already rejoined stay
                // rejoined; the removal may let it complete.
                Self::start_rebalance(st);
            }
        }
        removed
    }

    /// Adds a member and starts a rebalance.
    pub(crate) fn join(
        &self,
        member_id: String,
        topics: Vec<String>,
        assignor: Arc<dyn Assignor>,
        max_poll_interval: Duration,
    ) {
        let mut st = self.state.lock();
        if st.members.is_empty() {
            st.assignor = Some(assignor);
        }
        Self::start_rebalance(&mut st);
        st.members.insert(
            member_id,
            Member {
                topics,
                // A new member owns nothing: it has nothing to revoke.
                joined: true,
                last_poll: Instant::now(),
                max_poll_interval,
            },
        );
        drop(st);
        self.announce();
    }

    /// Removes a member (close, unsubscribe) and rebalances the rest.
    pub(crate) fn leave(&self, member_id: &str) {
        let mut st = self.state.lock();
        if st.members.remove(member_id).is_some() {
            st.assignment.remove(member_id);
            if st.members.is_empty() {
                st.rebalancing = false;
                st.assignment.clear();
            } else {
                Self::start_rebalance(&mut st);
            }
        }
        drop(st);
        self.announce();
    }

    /// Records a poll and tells the member what to do. `metadata` is the
    /// partition count of each topic the member subscribes to, as it sees
    /// them now (`None`: no such topic); one that differs from what the
    /// assignment was computed from starts a rebalance.
    pub(crate) fn poll(&self, member_id: &str, metadata: &[(String, Option<u32>)]) -> MemberView {
        let now = Instant::now();
        let mut st = self.state.lock();
        if let Some(m) = st.members.get_mut(member_id) {
            m.last_poll = now;
        }
        if Self::expire(&mut st, now) {
            self.announce();
        }
        let stale = !st.rebalancing
            && st.generation > 0
            && st.members.contains_key(member_id)
            && metadata
                .iter()
                .any(|(t, n)| st.counts.get(t).copied() != *n);
        if stale {
            crate::event!(
                "group {}: subscribed topic metadata changed, rebalancing",
                self.id
            );
            Self::start_rebalance(&mut st);
            self.announce();
        }
        let Some(m) = st.members.get(member_id) else {
            return MemberView::Removed;
        };
        if st.rebalancing {
            return if m.joined {
                MemberView::Waiting
            } else {
                MemberView::MustRejoin
            };
        }
        MemberView::Stable(
            st.generation,
            st.assignment.get(member_id).cloned().unwrap_or_default(),
        )
    }

    /// The member has revoked its partitions and rejoins; the last member to
    /// rejoin computes the new assignment. `partitions` gives a topic's
    /// partition count (None for unknown topics, which get no assignment).
    pub(crate) fn rejoin(&self, member_id: &str, partitions: &dyn Fn(&str) -> Option<u32>) {
        let mut st = self.state.lock();
        if let Some(m) = st.members.get_mut(member_id) {
            m.joined = true;
            m.last_poll = Instant::now();
        }
        self.maybe_complete(&mut st, partitions);
        drop(st);
        self.announce();
    }

    /// Waiting members call this too, so a rebalance completes once members
    /// that stopped polling have been expired.
    pub(crate) fn try_complete(&self, partitions: &dyn Fn(&str) -> Option<u32>) {
        let mut st = self.state.lock();
        let was = st.rebalancing;
        self.maybe_complete(&mut st, partitions);
        let done = was && !st.rebalancing;
        drop(st);
        if done {
            self.announce();
        }
    }

    fn maybe_complete(&self, st: &mut GroupState, partitions: &dyn Fn(&str) -> Option<u32>) {
        if !st.rebalancing || !st.members.values().all(|m| m.joined) {
            return;
        }
        let _span = crate::span!("kafkalite.rebalance", group = self.id);
        let subs: BTreeMap<String, Vec<String>> = st
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.topics.clone()))
            .collect();
        let mut counts = BTreeMap::new();
        for topics in subs.values() {
            for t in topics {
                if let Some(n) = partitions(t) {
                    counts.insert(t.clone(), n);
                }
            }
        }
        let assignor = st
            .assignor
            .clone()
            .unwrap_or_else(|| Arc::new(super::RangeAssignor));
        st.assignment = assignor.assign(&subs, &counts);
        st.counts = counts;
        st.generation += 1;
        st.rebalancing = false;
        crate::event!(
            "group {} rebalanced: generation {}, {} member(s), assignor {}",
            self.id,
            st.generation,
            st.members.len(),
            assignor.name()
        );
    }

    /// Waits for a change in the group, up to `deadline`.
    pub(crate) fn wait(&self, deadline: Instant) {
        let mut st = self.state.lock();
        let _ = self.changed.wait_until(&mut st, deadline);
    }

    /// Checks a commit from `member_id` at `generation`. Commits of the
    /// current generation are allowed during a rebalance (that is when
    /// revoking members commit).
    ///
    /// # Errors
    /// [`Error::IllegalGeneration`] for a stale generation or a member the
    /// group no longer has.
    pub(crate) fn check_commit(&self, member_id: Option<&str>, generation: i32) -> Result<()> {
        let st = self.state.lock();
        let ok = match member_id {
            Some(m) => st.members.contains_key(m) && generation == st.generation,
            // A consumer with manual assignment may commit only to a group
            // that has no active members (as Kafka's "simple" consumers).
            None => st.members.is_empty(),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::IllegalGeneration {
                group: self.id.clone(),
                generation,
                current: st.generation,
            })
        }
    }

    /// Whether the group has active members.
    pub(crate) fn is_active(&self) -> bool {
        !self.state.lock().members.is_empty()
    }

    pub(crate) fn describe(&self) -> GroupMembers {
        let st = self.state.lock();
        GroupMembers {
            generation: st.generation,
            rebalancing: st.rebalancing,
            members: st
                .members
                .keys()
                .map(|id| {
                    (
                        id.clone(),
                        st.assignment.get(id).cloned().unwrap_or_default(),
                    )
                })
                .collect(),
        }
    }
}

/// All groups of a store.
pub(crate) struct GroupCoordinator {
    groups: Mutex<HashMap<String, Arc<Group>>>,
    next_member: Mutex<u64>,
    notifier: Arc<Notifier>,
}

impl GroupCoordinator {
    pub(crate) fn new(notifier: Arc<Notifier>) -> Self {
        GroupCoordinator {
            groups: Mutex::new(HashMap::new()),
            next_member: Mutex::new(0),
            notifier,
        }
    }

    pub(crate) fn group(&self, id: &str) -> Arc<Group> {
        let mut g = self.groups.lock();
        Arc::clone(
            g.entry(id.to_owned())
                .or_insert_with(|| Arc::new(Group::new(id, Arc::clone(&self.notifier)))),
        )
    }

    pub(crate) fn existing(&self, id: &str) -> Option<Arc<Group>> {
        self.groups.lock().get(id).cloned()
    }

    pub(crate) fn active_groups(&self) -> Vec<String> {
        self.groups
            .lock()
            .iter()
            .filter(|(_, g)| g.is_active())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// A new member id: `<client id>-<sequence>`, zero-padded so ids sort in
    /// join order (assignors order members by id, as Kafka does).
    pub(crate) fn member_id(&self, client_id: &str) -> String {
        let mut n = self.next_member.lock();
        *n += 1;
        format!("{client_id}-{:010}", *n)
    }
}
