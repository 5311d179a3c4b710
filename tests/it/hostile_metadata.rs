//! Hostile names and values that reach store metadata (issue 17): config
//! values, topic names read back from `topics.meta`, internal topic names,
//! offset metadata and group ids. Each is refused with a typed error, changes
//! nothing, and never reaches outside the store's directory.

use kafkalite::{
    Consumer, ConsumerConfig, Durability, Error, OffsetAndMetadata, Record, Store, StoreOptions,
    TopicConfig, TopicPartition,
};
use std::path::{Path, PathBuf};

/// A store at `<tmp>/a/store`, and a victim directory `<tmp>/victim-0`
/// holding one file: what `../../victim` reaches from inside the store.
struct Sandbox {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    victim: PathBuf,
}

fn sandbox() -> Sandbox {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("a").join("store");
    let victim = tmp.path().join("victim-0");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious"), b"keep me").unwrap();
    Sandbox {
        _tmp: tmp,
        store,
        victim,
    }
}

fn victim_untouched(s: &Sandbox) {
    let entries: Vec<_> = std::fs::read_dir(&s.victim)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("precious")]);
    assert_eq!(
        std::fs::read(s.victim.join("precious")).unwrap(),
        b"keep me"
    );
}

/// Writes `body` as a sealed metadata file (the CRC-32 line `write_sealed`
/// appends), as a crafted or damaged store would hold it.
fn write_sealed(path: &Path, body: &str) {
    let text = format!("{body}crc32 {:08x}\n", crc32fast::hash(body.as_bytes()));
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_config_value_with_a_newline_is_refused_and_nothing_outside_the_store_changes() {
    let s = sandbox();
    let store = Store::open(&s.store, StoreOptions::default()).unwrap();
    let injected = "ops\ntopic ../../victim 1";
    let mut config = TopicConfig::default();
    assert!(matches!(
        config.set("kafkalite.retain.for.groups", injected),
        Err(Error::InvalidConfig {
            key: "kafkalite.retain.for.groups",
            ..
        })
    ));
    assert_eq!(config, TopicConfig::default());
    // The same value set on the field directly is refused by create_topic.
    config.retain_for_groups = vec![injected.to_owned()];
    assert!(matches!(
        store.create_topic("u", 1, config.clone()),
        Err(Error::InvalidConfig {
            key: "kafkalite.retain.for.groups",
            ..
        })
    ));
    assert!(store.list_topics().is_empty());
    store.create_topic("v", 1, TopicConfig::default()).unwrap();
    assert!(matches!(
        store.alter_topic_config("v", config),
        Err(Error::InvalidConfig {
            key: "kafkalite.retain.for.groups",
            ..
        })
    ));
    store.close().unwrap();
    drop(store);
    let store = Store::open(&s.store, StoreOptions::default()).unwrap();
    assert_eq!(store.list_topics(), vec!["v"]);
    assert_eq!(
        store.describe_topic("v").unwrap().config,
        TopicConfig::default()
    );
    assert!(matches!(
        store.delete_topic("../../victim"),
        Err(Error::UnknownTopic { .. })
    ));
    store.close().unwrap();
    victim_untouched(&s);
}

#[test]
fn a_group_name_with_a_comma_or_control_character_is_refused_as_a_retained_group() {
    for bad in ["a,b", "tab\there", " padded", "", "nul\0"] {
        let mut config = TopicConfig::default();
        config.retain_for_groups = vec![bad.to_owned()];
        assert!(
            matches!(
                config.validate(),
                Err(Error::InvalidConfig {
                    key: "kafkalite.retain.for.groups",
                    ..
                })
            ),
            "{bad:?}"
        );
    }
    // A list of good names round-trips through its text form.
    let mut c = TopicConfig::default();
    c.set("kafkalite.retain.for.groups", "billing,audit.v2")
        .unwrap();
    c.validate().unwrap();
    assert_eq!(c.retain_for_groups, vec!["billing", "audit.v2"]);
}

#[test]
fn a_topic_name_read_from_topics_meta_that_leaves_the_store_is_corrupt_and_nothing_outside_changes()
{
    let s = sandbox();
    Store::open(&s.store, StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
    let meta = s.store.join("topics.meta");
    for name in ["../../victim", "/tmp/abs", "a b", "__consumer_offsets"] {
        write_sealed(&meta, &format!("kafkalite-topics 1\ntopic {name} 1\n"));
        for read_only in [false, true] {
            let r = if read_only {
                Store::open_read_only(&s.store, StoreOptions::default())
            } else {
                Store::open(&s.store, StoreOptions::default())
            };
            match r {
                Err(Error::Corrupt { path, .. }) => assert_eq!(path, meta, "{name:?}"),
                other => panic!("{name:?} read_only={read_only}: {other:?}"),
            }
        }
    }
    victim_untouched(&s);
}

#[test]
fn a_config_value_read_from_topics_meta_that_validate_refuses_is_corrupt_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    Store::open(d.path(), StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
    let meta = d.path().join("topics.meta");
    for line in [
        "config t segment.ms=0",
        "config t no.such.key=1",
        "config t retention.ms=99999999999999999999",
        "topic t 0",
        "topic t 1",
    ] {
        write_sealed(&meta, &format!("kafkalite-topics 1\ntopic t 1\n{line}\n"));
        match Store::open(d.path(), StoreOptions::default()) {
            Err(Error::Corrupt { path, .. }) => assert_eq!(path, meta, "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn creating_an_internal_topic_is_refused_and_committed_offsets_survive() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = Consumer::new(&store, ConsumerConfig::with_group("g")).unwrap();
    c.assign(&[TopicPartition::new("t", 0)]).unwrap();
    c.commit_offsets(&[(TopicPartition::new("t", 0), OffsetAndMetadata::new(0))])
        .unwrap();
    for name in ["__consumer_offsets", "__transaction_state"] {
        assert!(
            matches!(
                store.create_topic(name, 1, TopicConfig::default()),
                Err(Error::InvalidTopicName { .. })
            ),
            "{name}"
        );
        assert!(matches!(
            store.append(name, 0, &[Record::new("x")], Durability::Written),
            Err(Error::UnknownTopic { .. })
        ));
    }
    assert_eq!(store.committed_offset("g", "t", 0).unwrap().offset, 0);
    drop(c);
    store.close().unwrap();
    drop(store);
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    assert_eq!(store.list_topics(), vec!["t"]);
    assert_eq!(store.committed_offset("g", "t", 0).unwrap().offset, 0);
}

#[test]
fn auto_creating_an_internal_topic_is_refused_and_committed_offsets_survive() {
    let d = tempfile::tempdir().unwrap();
    let mut options = StoreOptions::default();
    options.auto_create_topics = true;
    let store = Store::open(d.path(), options.clone()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = Consumer::new(&store, ConsumerConfig::with_group("g")).unwrap();
    c.assign(&[TopicPartition::new("t", 0)]).unwrap();
    c.commit_offsets(&[(TopicPartition::new("t", 0), OffsetAndMetadata::new(0))])
        .unwrap();
    assert!(matches!(
        store.append(
            "__consumer_offsets",
            0,
            &[Record::new("x")],
            Durability::Written
        ),
        Err(Error::InvalidTopicName { .. })
    ));
    drop(c);
    store.close().unwrap();
    drop(store);
    let store = Store::open(d.path(), options).unwrap();
    assert_eq!(store.list_topics(), vec!["t"]);
    assert_eq!(store.committed_offset("g", "t", 0).unwrap().offset, 0);
}

fn store_with_topic(dir: &Path) -> Store {
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    store
}

#[test]
fn offset_metadata_over_4096_bytes_is_refused_and_the_store_still_opens() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_topic(d.path());
    let tp = TopicPartition::new("t", 0);
    let mut c = Consumer::new(&store, ConsumerConfig::with_group("g")).unwrap();
    c.assign(std::slice::from_ref(&tp)).unwrap();
    let at_limit = OffsetAndMetadata {
        metadata: "m".repeat(4096),
        ..OffsetAndMetadata::new(0)
    };
    c.commit_offsets(&[(tp.clone(), at_limit)]).unwrap();
    for size in [4097, 40_000] {
        let over = OffsetAndMetadata {
            metadata: "m".repeat(size),
            ..OffsetAndMetadata::new(0)
        };
        match c.commit_offsets(&[(tp.clone(), over)]) {
            Err(Error::OffsetMetadataTooLarge { size: s, max: 4096 }) => assert_eq!(s, size),
            other => panic!("{size}: {other:?}"),
        }
    }
    assert_eq!(c.committed(&tp).unwrap().unwrap().metadata.len(), 4096);
    drop(c);
    store.close().unwrap();
    drop(store);
    Store::open_read_only(d.path(), StoreOptions::default()).unwrap();
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    assert_eq!(
        store.committed_offset("g", "t", 0).unwrap().metadata.len(),
        4096
    );
}

#[test]
fn a_group_id_over_32767_bytes_or_with_control_characters_is_refused_at_the_call() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_topic(d.path());
    for bad in ["g".repeat(40_000), "line\nbreak".to_owned(), String::new()] {
        match Consumer::new(&store, ConsumerConfig::with_group(bad.clone())) {
            Err(Error::InvalidGroupId { .. }) => {}
            other => panic!("{}: {other:?}", bad.len()),
        }
        assert!(matches!(
            store.reset_group_offsets(&bad, "t", kafkalite::ResetTo::Earliest),
            Err(Error::InvalidGroupId { .. })
        ));
    }
    store.close().unwrap();
    drop(store);
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    assert!(store.list_groups().is_empty());
}

/// Issue 17, finding 1: a `.properties` file reaches the same path (its
/// parser turns `\n` into a newline); it is refused the same way.
#[test]
fn a_properties_file_that_injects_a_newline_into_a_config_value_is_refused() {
    let text = "kafkalite.retain.for.groups=ops\\ntopic ../../victim 1\n";
    assert!(matches!(
        TopicConfig::from_properties(text),
        Err(Error::InvalidConfig {
            key: "kafkalite.retain.for.groups",
            ..
        })
    ));
    let text = "kafkalite.retain.for.groups=ops\\u000atopic x 1\n";
    assert!(matches!(
        TopicConfig::from_properties(text),
        Err(Error::InvalidConfig {
            key: "kafkalite.retain.for.groups",
            ..
        })
    ));
    let (ok, _) =
        TopicConfig::from_properties("kafkalite.retain.for.groups=billing, audit\n").unwrap();
    assert_eq!(ok.retain_for_groups, vec!["billing", "audit"]);
}
