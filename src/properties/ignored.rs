//! The tables of keys a `.properties` file may give that kafkalite accepts
//! and does not use (they only mean something with a network, replicas, a
//! cluster or a JVM), each with the reason returned in its
//! [`IgnoredKey`](super::IgnoredKey).

// Reasons are shared so the tables stay short.
const NO_NETWORK: &str = "no network: the store is a library in this process";
const NO_REPLICAS: &str = "no replicas: durability is chosen per append (Durability)";
const NO_ZOOKEEPER: &str = "no ZooKeeper or KRaft controller: one process owns the store";
const NO_SERDE: &str = "keys and values are bytes (anything Into<Bytes>); serialize in your code";
const NO_RETRIES: &str = "appends are local calls that succeed or fail at once; nothing to retry";
const NO_TRANSACTIONS: &str = "no transactions";
const NO_BROKER_ID: &str = "no cluster: the store has no broker or node identity";

/// Ignored keys every client config shares (exact names).
fn client(key: &str) -> Option<&'static str> {
    Some(match key {
        "bootstrap.servers"
        | "client.dns.lookup"
        | "send.buffer.bytes"
        | "receive.buffer.bytes"
        | "request.timeout.ms"
        | "connections.max.idle.ms"
        | "metadata.max.age.ms"
        | "reconnect.backoff.ms"
        | "reconnect.backoff.max.ms"
        | "socket.connection.setup.timeout.ms"
        | "socket.connection.setup.timeout.max.ms"
        | "security.protocol"
        | "client.rack"
        | "metric.reporters"
        | "metrics.num.samples"
        | "metrics.sample.window.ms"
        | "metrics.recording.level"
        | "auto.include.jmx.reporter"
        | "enable.metrics.push" => NO_NETWORK,
        "retries" | "retry.backoff.ms" | "retry.backoff.max.ms" => NO_RETRIES,
        _ if key.starts_with("ssl.") || key.starts_with("sasl.") => NO_NETWORK,
        _ => return None,
    })
}

/// Ignored `producer.properties` keys.
pub(crate) fn producer(key: &str) -> Option<&'static str> {
    Some(match key {
        "key.serializer" | "value.serializer" => NO_SERDE,
        "client.id" => "names a client in broker logs and quotas; there is no broker",
        "enable.idempotence" => {
            "appends are never retried, so never duplicated; order per partition is kept"
        }
        "max.in.flight.requests.per.connection" | "delivery.timeout.ms" => NO_NETWORK,
        "max.request.size" => "no requests; the topic's max.message.bytes bounds a batch",
        _ => return client(key),
    })
}

/// Ignored `consumer.properties` keys.
pub(crate) fn consumer(key: &str) -> Option<&'static str> {
    Some(match key {
        "key.deserializer" | "value.deserializer" => NO_SERDE,
        "session.timeout.ms" | "heartbeat.interval.ms" => {
            "no heartbeats: a member leaves on close or drop, or after max.poll.interval.ms"
        }
        "fetch.min.bytes" | "fetch.max.wait.ms" => {
            "no fetch requests: poll returns what is readable, waiting up to its timeout"
        }
        "check.crcs" => "batch CRCs are always checked",
        _ => return client(key),
    })
}

/// Ignored topic-level keys.
pub(crate) fn topic(key: &str) -> Option<&'static str> {
    Some(match key {
        "min.insync.replicas"
        | "unclean.leader.election.enable"
        | "leader.replication.throttled.replicas"
        | "follower.replication.throttled.replicas" => NO_REPLICAS,
        "message.format.version" | "message.downconversion.enable" => {
            "batches are always record batch v2 and are never converted"
        }
        "preallocate" => "index disk is reserved in small steps; .log files grow by appends",
        _ => return None,
    })
}

/// Ignored broker (`server.properties`) keys.
pub(crate) fn broker(key: &str) -> Option<&'static str> {
    Some(match key {
        "broker.id" | "node.id" | "broker.rack" => NO_BROKER_ID,
        "process.roles"
        | "controller.quorum.voters"
        | "controller.quorum.bootstrap.servers"
        | "controller.listener.names"
        | "metadata.log.dir" => NO_ZOOKEEPER,
        "listeners"
        | "advertised.listeners"
        | "listener.security.protocol.map"
        | "inter.broker.listener.name"
        | "security.inter.broker.protocol"
        | "num.network.threads"
        | "num.io.threads"
        | "queued.max.requests"
        | "socket.send.buffer.bytes"
        | "socket.receive.buffer.bytes"
        | "socket.request.max.bytes"
        | "connections.max.idle.ms"
        | "max.connections"
        | "max.connections.per.ip" => NO_NETWORK,
        "log.dirs" | "log.dir" => "the store's directory is the path given to Store::open",
        "num.recovery.threads.per.data.dir" => {
            "recovery runs in Store::open; only partitions without a clean shutdown are scanned"
        }
        "offsets.topic.replication.factor"
        | "transaction.state.log.replication.factor"
        | "share.coordinator.state.topic.replication.factor"
        | "default.replication.factor"
        | "min.insync.replicas"
        | "unclean.leader.election.enable"
        | "num.replica.fetchers"
        | "replica.lag.time.max.ms" => NO_REPLICAS,
        "transaction.state.log.min.isr"
        | "transaction.state.log.num.partitions"
        | "transaction.state.log.segment.bytes"
        | "share.coordinator.state.topic.min.isr" => NO_TRANSACTIONS,
        "offsets.topic.num.partitions" | "offsets.topic.segment.bytes" => {
            "the offset store (__consumer_offsets) has one partition"
        }
        "group.initial.rebalance.delay.ms" => {
            "the in-process coordinator rebalances as soon as a member joins or leaves"
        }
        "delete.topic.enable" => {
            "Store::delete_topic is always allowed; don't call it to forbid it"
        }
        "log.flush.scheduler.interval.ms" => {
            "flush.ms is checked every log.flush.offset.checkpoint.interval.ms"
        }
        _ if key.starts_with("zookeeper.") => NO_ZOOKEEPER,
        _ if key.starts_with("ssl.") || key.starts_with("sasl.") => NO_NETWORK,
        _ => return None,
    })
}
