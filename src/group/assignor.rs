//! Partition assignors: which member of a group consumes which partition.
//! Members are ordered by member id, as Kafka orders them.

use super::TopicPartition;
use std::collections::BTreeMap;

/// Members (member id → subscribed topics) and topics (name → partition
/// count) in; member id → assigned partitions out. Every partition of a
/// subscribed topic goes to exactly one member subscribed to it.
pub trait Assignor: Send + Sync {
    /// The protocol name (`range`, `roundrobin`, ...).
    fn name(&self) -> &str;

    /// Computes the assignment. Members with nothing to do get an empty list.
    fn assign(
        &self,
        members: &BTreeMap<String, Vec<String>>,
        partitions: &BTreeMap<String, u32>,
    ) -> BTreeMap<String, Vec<TopicPartition>>;
}

/// Kafka's `RangeAssignor` (the default): per topic, partitions in order are
/// split into contiguous ranges over the sorted subscribed members; the first
/// `partitions % members` members get one extra.
#[derive(Clone, Copy, Debug, Default)]
pub struct RangeAssignor;

impl Assignor for RangeAssignor {
    fn name(&self) -> &str {
        "range"
    }

    fn assign(
        &self,
        members: &BTreeMap<String, Vec<String>>,
        partitions: &BTreeMap<String, u32>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let mut out: BTreeMap<String, Vec<TopicPartition>> =
            members.keys().map(|m| (m.clone(), Vec::new())).collect();
        for (topic, &count) in partitions {
            let subscribed: Vec<&String> = members
                .iter()
                .filter(|(_, topics)| topics.contains(topic))
                .map(|(m, _)| m)
                .collect();
            if subscribed.is_empty() {
                continue;
            }
            let n = subscribed.len() as u32;
            let (per, extra) = (count / n, count % n);
            for (i, m) in subscribed.into_iter().enumerate() {
                let i = i as u32;
                let start = per * i + i.min(extra);
                let len = per + u32::from(i < extra);
                if let Some(list) = out.get_mut(m) {
                    list.extend(
                        (start..start + len).map(|p| TopicPartition::new(topic.as_str(), p)),
                    );
                }
            }
        }
        out
    }
}

/// Kafka's `RoundRobinAssignor`: all subscribed partitions, sorted by topic
/// then partition, dealt in turn to the sorted members, skipping members not
/// subscribed to a partition's topic.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobinAssignor;

impl Assignor for RoundRobinAssignor {
    fn name(&self) -> &str {
        "roundrobin"
    }

    fn assign(
        &self,
        members: &BTreeMap<String, Vec<String>>,
        partitions: &BTreeMap<String, u32>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let mut out: BTreeMap<String, Vec<TopicPartition>> =
            members.keys().map(|m| (m.clone(), Vec::new())).collect();
        let ids: Vec<&String> = members.keys().collect();
        if ids.is_empty() {
            return out;
        }
        let mut next = 0usize;
        for (topic, &count) in partitions {
            if !members.values().any(|t| t.contains(topic)) {
                continue;
            }
            for p in 0..count {
                // Advance the circular iterator to a member subscribed to topic.
                // (`ids` is not empty: some member subscribes to the topic.)
                while let Some(&m) = ids.get(next % ids.len()) {
                    next += 1;
                    if members.get(m).is_some_and(|t| t.contains(topic)) {
                        if let Some(list) = out.get_mut(m) {
                            list.push(TopicPartition::new(topic.as_str(), p));
                        }
                        break;
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(spec: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        spec.iter()
            .map(|(m, ts)| (m.to_string(), ts.iter().map(|t| t.to_string()).collect()))
            .collect()
    }

    fn show(a: &BTreeMap<String, Vec<TopicPartition>>) -> Vec<String> {
        a.iter()
            .map(|(m, tps)| {
                let parts: Vec<String> = tps.iter().map(|tp| tp.to_string()).collect();
                format!("{m}: {}", parts.join(" "))
            })
            .collect()
    }

    #[test]
    fn range_matches_kafkas_two_topics_three_partitions_two_consumers() {
        // Kafka's RangeAssignor javadoc example: C0 gets t0p0 t0p1 t1p0 t1p1,
        // C1 gets t0p2 t1p2.
        let m = members(&[("C0", &["t0", "t1"]), ("C1", &["t0", "t1"])]);
        let p: BTreeMap<String, u32> = [("t0".into(), 3), ("t1".into(), 3)].into();
        assert_eq!(
            show(&RangeAssignor.assign(&m, &p)),
            ["C0: t0-0 t0-1 t1-0 t1-1", "C1: t0-2 t1-2"]
        );
    }

    #[test]
    fn roundrobin_matches_kafkas_two_topics_three_partitions_two_consumers() {
        // Kafka's RoundRobinAssignor javadoc: C0 gets t0p0 t0p2 t1p1,
        // C1 gets t0p1 t1p0 t1p2.
        let m = members(&[("C0", &["t0", "t1"]), ("C1", &["t0", "t1"])]);
        let p: BTreeMap<String, u32> = [("t0".into(), 3), ("t1".into(), 3)].into();
        assert_eq!(
            show(&RoundRobinAssignor.assign(&m, &p)),
            ["C0: t0-0 t0-2 t1-1", "C1: t0-1 t1-0 t1-2"]
        );
    }

    #[test]
    fn roundrobin_with_unequal_subscriptions_matches_kafkas_example() {
        // Kafka's javadoc: C0 [t0], C1 [t0, t1], C2 [t0, t1, t2]; t0 has 1,
        // t1 2, t2 3 partitions → C0 [t0p0], C1 [t1p0], C2 [t1p1 t2p0 t2p1 t2p2].
        let m = members(&[
            ("C0", &["t0"]),
            ("C1", &["t0", "t1"]),
            ("C2", &["t0", "t1", "t2"]),
        ]);
        let p: BTreeMap<String, u32> =
            [("t0".into(), 1), ("t1".into(), 2), ("t2".into(), 3)].into();
        assert_eq!(
            show(&RoundRobinAssignor.assign(&m, &p)),
            ["C0: t0-0", "C1: t1-0", "C2: t1-1 t2-0 t2-1 t2-2"]
        );
    }

    #[test]
    fn range_gives_extras_to_the_first_members_and_leaves_extra_members_idle() {
        let m = members(&[("a", &["t"]), ("b", &["t"]), ("c", &["t"])]);
        let p: BTreeMap<String, u32> = [("t".into(), 8)].into();
        assert_eq!(
            show(&RangeAssignor.assign(&m, &p)),
            ["a: t-0 t-1 t-2", "b: t-3 t-4 t-5", "c: t-6 t-7"]
        );
        let p: BTreeMap<String, u32> = [("t".into(), 2)].into();
        assert_eq!(
            show(&RangeAssignor.assign(&m, &p)),
            ["a: t-0", "b: t-1", "c: "]
        );
    }

    proptest::proptest! {
        #[test]
        fn every_partition_goes_to_exactly_one_subscribed_member(
            n_members in 1usize..6,
            counts in proptest::collection::vec(1u32..10, 1..4),
            subs in proptest::collection::vec(proptest::collection::vec(proptest::bool::ANY, 4), 6),
        ) {
            let topics: Vec<String> = (0..counts.len()).map(|i| format!("t{i}")).collect();
            let m: BTreeMap<String, Vec<String>> = (0..n_members)
                .map(|i| {
                    let ts = topics.iter().enumerate().filter(|(j, _)| subs[i][*j]).map(|(_, t)| t.clone()).collect();
                    (format!("m{i}"), ts)
                })
                .collect();
            let p: BTreeMap<String, u32> = topics.iter().cloned().zip(counts.iter().copied()).collect();
            for a in [&RangeAssignor as &dyn Assignor, &RoundRobinAssignor] {
                let out = a.assign(&m, &p);
                let mut seen = std::collections::HashSet::new();
                for (member, tps) in &out {
                    for tp in tps {
                        proptest::prop_assert!(m[member].contains(&tp.topic.to_string()));
                        proptest::prop_assert!(seen.insert(tp.clone()));
                    }
                }
                let wanted: u32 = p.iter().filter(|(t, _)| m.values().any(|s| s.contains(t))).map(|(_, c)| *c).sum();
                proptest::prop_assert_eq!(seen.len() as u32, wanted);
            }
        }
    }
}
