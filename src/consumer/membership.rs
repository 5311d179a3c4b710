//! Membership: subscribing to topics through a consumer group (joining,
//! rebalancing, the listener's callbacks) or assigning partitions by hand.

use super::{Consumer, Membership, RebalanceListener};
use crate::error::Result;
use crate::group::{MemberView, TopicPartition};
use crate::log::Durability;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Consumer {
    /// Joins the consumer's group for these topics; partitions are assigned
    /// at the next `poll`. Replaces an earlier subscription or assignment.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) without a `group.id`; [`Error::UnknownTopic`](crate::Error::UnknownTopic).
    pub fn subscribe(&mut self, topics: &[&str]) -> Result<()> {
        self.check_open()?;
        let group_id = self.group_id()?.to_owned();
        for t in topics {
            self.store.partition_count(t)?;
        }
        self.unsubscribe()?;
        let group = self.store.groups().group(&group_id);
        let member_id = self.store.groups().member_id(&self.config.client_id);
        let topics: Vec<String> = topics.iter().map(|t| (*t).to_owned()).collect();
        group.join(
            member_id.clone(),
            topics.clone(),
            Arc::clone(&self.config.assignor),
            self.config.max_poll_interval,
        );
        self.membership = Some(Membership {
            group,
            member_id,
            generation: 0,
            topics,
        });
        Ok(())
    }

    /// As [`subscribe`](Self::subscribe), with callbacks for rebalances.
    ///
    /// # Errors
    /// As [`subscribe`](Self::subscribe).
    pub fn subscribe_with_listener(
        &mut self,
        topics: &[&str],
        listener: impl RebalanceListener + 'static,
    ) -> Result<()> {
        self.subscribe(topics)?;
        self.listener = Some(Box::new(listener));
        Ok(())
    }

    /// Takes these partitions by hand (no group membership). Replaces an
    /// earlier subscription or assignment.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`](crate::Error::UnknownTopic), [`Error::UnknownPartition`](crate::Error::UnknownPartition).
    pub fn assign(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        self.check_open()?;
        for tp in partitions {
            self.store.partition(&tp.topic, tp.partition)?;
        }
        self.unsubscribe()?;
        self.set_assignment(partitions.to_vec());
        Ok(())
    }

    /// Leaves the group (committing first if auto-commit is on) and drops
    /// the assignment.
    ///
    /// # Errors
    /// The auto-commit's error.
    pub fn unsubscribe(&mut self) -> Result<()> {
        let mut result = Ok(());
        if self.membership.is_some() || !self.assignment.is_empty() {
            result = self.revoke_all();
        }
        if let Some(m) = self.membership.take() {
            m.group.leave(&m.member_id);
        }
        self.set_assignment(Vec::new());
        result
    }

    fn set_assignment(&mut self, partitions: Vec<TopicPartition>) {
        self.positions = partitions.iter().map(|tp| (tp.clone(), None)).collect();
        self.buffered.clear();
        self.paused.retain(|tp| partitions.contains(tp));
        self.assignment = partitions;
        for tp in self.assignment.clone() {
            let committed = self
                .config
                .group_id
                .as_deref()
                .and_then(|g| self.store.offsets().get(g, &tp));
            if let Some(c) = committed {
                self.positions.insert(tp, Some(c.offset));
            }
        }
    }

    /// Auto-commits (when on) and runs the revoke callback for everything
    /// assigned.
    fn revoke_all(&mut self) -> Result<()> {
        let mut result = Ok(());
        if self.config.enable_auto_commit && self.config.group_id.is_some() {
            result = self.commit(self.consumed_offsets(), Durability::Fsync);
        }
        let revoked = self.assignment.clone();
        if let Some(mut l) = self.listener.take() {
            if self.membership.is_some() {
                l.on_partitions_revoked(self, &revoked);
            }
            self.listener = Some(l);
        }
        result
    }

    /// The partitions currently assigned.
    pub fn assignment(&self) -> &[TopicPartition] {
        &self.assignment
    }

    /// The subscribed topics (empty with manual assignment).
    pub fn subscription(&self) -> Vec<String> {
        self.membership
            .as_ref()
            .map(|m| m.topics.clone())
            .unwrap_or_default()
    }

    /// The member id in the group, when subscribed.
    pub fn member_id(&self) -> Option<&str> {
        self.membership.as_ref().map(|m| m.member_id.as_str())
    }

    /// The group generation this consumer's assignment belongs to.
    pub fn generation(&self) -> Option<i32> {
        self.membership.as_ref().map(|m| m.generation)
    }

    pub(super) fn ensure_assignment(&mut self, deadline: Instant) -> Result<()> {
        loop {
            let Some(m) = &self.membership else {
                return Ok(());
            };
            let (group, member_id) = (Arc::clone(&m.group), m.member_id.clone());
            let metadata: Vec<(String, Option<u32>)> = m
                .topics
                .iter()
                .map(|t| (t.clone(), self.store.existing_partition_count(t)))
                .collect();
            match group.poll(&member_id, &metadata) {
                MemberView::Stable(generation, parts) => {
                    if generation != m.generation {
                        if let Some(m) = &mut self.membership {
                            m.generation = generation;
                        }
                        self.set_assignment(parts.clone());
                        if let Some(mut l) = self.listener.take() {
                            l.on_partitions_assigned(self, &parts);
                            self.listener = Some(l);
                        }
                    }
                    return Ok(());
                }
                MemberView::MustRejoin => {
                    // Commit failures here mean the generation moved on;
                    // the records will be processed again (at least once).
                    let _ = self.revoke_all();
                    self.set_assignment(Vec::new());
                    let store = self.store.clone();
                    group.rejoin(&member_id, &|t| store.existing_partition_count(t));
                }
                MemberView::Waiting => {
                    let store = self.store.clone();
                    group.try_complete(&|t| store.existing_partition_count(t));
                    let now = Instant::now();
                    if now >= deadline {
                        return Ok(());
                    }
                    group.wait(deadline.min(now + Duration::from_millis(50)));
                }
                MemberView::Removed => {
                    // Missed max.poll.interval.ms: the partitions are gone
                    // already. Join again as a new member.
                    let topics = m.topics.clone();
                    self.set_assignment(Vec::new());
                    let member_id = self.store.groups().member_id(&self.config.client_id);
                    group.join(
                        member_id.clone(),
                        topics,
                        Arc::clone(&self.config.assignor),
                        self.config.max_poll_interval,
                    );
                    if let Some(m) = &mut self.membership {
                        m.member_id = member_id;
                        m.generation = 0;
                    }
                }
            }
        }
    }
}
