//! A small blocking Kafka client for `migrate` and `import`: the messages
//! are encoded and decoded by the `kafka-protocol` crate; this module only
//! frames them over `std::net::TcpStream`, one request at a time per
//! connection, negotiates versions with ApiVersions, and keeps one
//! connection per broker.

use crate::util::{CliError, CliResult};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId, MetadataRequest, MetadataResponse, RequestHeader,
    ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a response may take (Produce with acks=all waits for replicas).
const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest response accepted.
const MAX_RESPONSE: usize = 256 << 20;

/// A string as the protocol's `StrBytes`.
pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// A topic name as the protocol's `TopicName`.
pub fn tn(s: &str) -> TopicName {
    TopicName(sb(s))
}

/// Kafka's error code as its name, for messages.
pub fn error_name(code: i16) -> String {
    let name = match code {
        1 => "OFFSET_OUT_OF_RANGE",
        2 => "CORRUPT_MESSAGE",
        3 => "UNKNOWN_TOPIC_OR_PARTITION",
        5 => "LEADER_NOT_AVAILABLE",
        6 => "NOT_LEADER_OR_FOLLOWER",
        7 => "REQUEST_TIMED_OUT",
        10 => "MESSAGE_TOO_LARGE",
        13 => "NETWORK_EXCEPTION",
        14 => "COORDINATOR_LOAD_IN_PROGRESS",
        15 => "COORDINATOR_NOT_AVAILABLE",
        16 => "NOT_COORDINATOR",
        19 => "NOT_ENOUGH_REPLICAS",
        20 => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        22 => "ILLEGAL_GENERATION",
        25 => "UNKNOWN_MEMBER_ID",
        27 => "REBALANCE_IN_PROGRESS",
        29 => "TOPIC_AUTHORIZATION_FAILED",
        30 => "GROUP_AUTHORIZATION_FAILED",
        32 => "INVALID_TIMESTAMP",
        36 => "TOPIC_ALREADY_EXISTS",
        37 => "INVALID_PARTITIONS",
        40 => "INVALID_CONFIG",
        42 => "INVALID_REQUEST",
        43 => "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        44 => "POLICY_VIOLATION",
        45 => "OUT_OF_ORDER_SEQUENCE_NUMBER",
        47 => "INVALID_PRODUCER_EPOCH",
        59 => "UNKNOWN_PRODUCER_ID",
        68 => "NON_EMPTY_GROUP",
        69 => "GROUP_ID_NOT_FOUND",
        87 => "INVALID_RECORD",
        _ => "",
    };
    if name.is_empty() {
        format!("Kafka error {code}")
    } else {
        format!("{name} ({code})")
    }
}

/// One connection to one broker, with the versions it supports.
pub struct Conn {
    addr: String,
    stream: TcpStream,
    correlation: i32,
    versions: HashMap<i16, (i16, i16)>,
}

impl Conn {
    /// Connects to `addr` (HOST:PORT) and asks for its API versions.
    pub fn connect(addr: &str) -> CliResult<Conn> {
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| CliError::msg(format!("cannot resolve broker address {addr}: {e}")))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            CliError::msg(format!(
                "cannot connect to the Kafka broker at {addr}: {}",
                last.map_or_else(|| "no address".to_owned(), |e| e.to_string())
            ))
        })?;
        let io = |e: std::io::Error| CliError::msg(format!("broker {addr}: {e}"));
        stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        let mut conn = Conn {
            addr: addr.to_owned(),
            stream,
            correlation: 0,
            versions: HashMap::new(),
        };
        // ApiVersions v2: not flexible, answered by every broker since 2.0.
        let resp = conn.send_at(ApiVersionsRequest::default(), 2)?;
        if resp.error_code != 0 {
            return Err(CliError::msg(format!(
                "broker {addr}: ApiVersions failed: {}",
                error_name(resp.error_code)
            )));
        }
        for k in resp.api_keys {
            conn.versions
                .insert(k.api_key, (k.min_version, k.max_version));
        }
        Ok(conn)
    }

    /// The version to use for `R`: the highest both sides support, at most
    /// `cap` (the newest version whose fields this client fills).
    fn version_for<R: Request>(&self, cap: i16) -> CliResult<i16> {
        let api = ApiKey::try_from(R::KEY)
            .map_err(|()| CliError::msg(format!("unknown API key {}", R::KEY)))?;
        let (bmin, bmax) = self.versions.get(&R::KEY).copied().ok_or_else(|| {
            CliError::msg(format!(
                "broker {} does not support the {api:?} request",
                self.addr
            ))
        })?;
        let v = bmax.min(cap).min(R::VERSIONS.max);
        if v < bmin || v < R::VERSIONS.min {
            return Err(CliError::msg(format!(
                "broker {} supports {api:?} versions {bmin}..={bmax}, this client {}..={cap}",
                self.addr,
                R::VERSIONS.min
            )));
        }
        Ok(v)
    }

    /// Sends `req` at the highest common version up to `cap` and reads the
    /// response.
    pub fn send<R: Request>(&mut self, req: R, cap: i16) -> CliResult<R::Response> {
        let v = self.version_for::<R>(cap)?;
        self.send_at(req, v)
    }

    /// Sends `req` at version `v` and reads its response.
    pub fn send_at<R: Request>(&mut self, req: R, v: i16) -> CliResult<R::Response> {
        let addr = self.addr.clone();
        let enc = |e: String| CliError::msg(format!("encoding a request for {addr}: {e}"));
        self.correlation = self.correlation.wrapping_add(1);
        if std::env::var_os("KAFKALITE_DEBUG_PROTOCOL").is_some() {
            eprintln!("-> {addr}: api {} v{v} #{}", R::KEY, self.correlation);
        }
        let mut header = RequestHeader::default();
        header.request_api_key = R::KEY;
        header.request_api_version = v;
        header.correlation_id = self.correlation;
        header.client_id = Some(sb("kafkalite"));
        let mut body = BytesMut::new();
        body.put_i32(0);
        header
            .encode(&mut body, R::header_version(v))
            .map_err(|e| enc(e.to_string()))?;
        req.encode(&mut body, v).map_err(|e| enc(e.to_string()))?;
        let len = i32::try_from(body.len() - 4)
            .map_err(|_| CliError::msg("request larger than 2 GiB"))?;
        body[..4].copy_from_slice(&len.to_be_bytes());
        let io = |e: std::io::Error| {
            CliError::msg(format!(
                "connection to the Kafka broker at {addr} failed: {e}"
            ))
        };
        self.stream.write_all(&body).map_err(io)?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).map_err(io)?;
        let len = usize::try_from(i32::from_be_bytes(len))
            .ok()
            .filter(|&n| n <= MAX_RESPONSE)
            .ok_or_else(|| CliError::msg(format!("broker {addr}: bad response size")))?;
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf).map_err(io)?;
        let mut buf = Bytes::from(buf);
        let dec = |e: String| CliError::msg(format!("bad response from {addr}: {e}"));
        let rh = ResponseHeader::decode(&mut buf, R::Response::header_version(v))
            .map_err(|e| dec(e.to_string()))?;
        if rh.correlation_id != self.correlation {
            return Err(CliError::msg(format!(
                "broker {addr}: response correlation id {} for request {}",
                rh.correlation_id, self.correlation
            )));
        }
        let resp = R::Response::decode(&mut buf, v).map_err(|e| dec(e.to_string()))?;
        Ok(resp)
    }
}

/// A partition's leader and the topic's partitions, from Metadata.
#[derive(Clone, Debug)]
pub struct TopicMeta {
    /// Partition index → leader broker id.
    pub leaders: Vec<i32>,
}

/// A cluster: the bootstrap connection, the brokers from Metadata and one
/// connection per broker used.
pub struct Cluster {
    bootstrap: String,
    brokers: HashMap<i32, String>,
    conns: HashMap<i32, Conn>,
    boot: Conn,
    /// The cluster id, when the broker reports one.
    pub cluster_id: Option<String>,
}

impl Cluster {
    /// Connects to the bootstrap server.
    pub fn connect(bootstrap: &str) -> CliResult<Cluster> {
        let boot = Conn::connect(bootstrap)?;
        let mut c = Cluster {
            bootstrap: bootstrap.to_owned(),
            brokers: HashMap::new(),
            conns: HashMap::new(),
            boot,
            cluster_id: None,
        };
        c.metadata(&[])?;
        Ok(c)
    }

    /// Opens the bootstrap connection again (after a failed request).
    pub fn reconnect(&mut self) -> CliResult<()> {
        self.boot = Conn::connect(&self.bootstrap)?;
        Ok(())
    }

    /// The bootstrap address.
    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    /// Metadata for `topics` (none: brokers only). A topic the cluster does
    /// not have is `None`.
    pub fn metadata(&mut self, topics: &[String]) -> CliResult<HashMap<String, Option<TopicMeta>>> {
        let mut req = MetadataRequest::default();
        req.allow_auto_topic_creation = false;
        req.topics = Some(
            topics
                .iter()
                .map(|t| {
                    let mut mt =
                        kafka_protocol::messages::metadata_request::MetadataRequestTopic::default();
                    mt.name = Some(tn(t));
                    mt
                })
                .collect(),
        );
        let resp: MetadataResponse = self.boot.send(req, 12)?;
        self.cluster_id = resp.cluster_id.as_ref().map(|s| s.as_str().to_owned());
        for b in &resp.brokers {
            self.brokers
                .insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
        }
        let mut out = HashMap::new();
        for t in resp.topics {
            let Some(name) = t.name.as_ref().map(|n| n.0.as_str().to_owned()) else {
                continue;
            };
            match t.error_code {
                0 => {}
                3 => {
                    out.insert(name, None);
                    continue;
                }
                e => {
                    return Err(CliError::msg(format!(
                        "metadata for topic {name}: {}",
                        error_name(e)
                    )))
                }
            }
            let mut leaders = vec![-1; t.partitions.len()];
            for p in &t.partitions {
                let i = usize::try_from(p.partition_index).ok();
                if let Some(slot) = i.and_then(|i| leaders.get_mut(i)) {
                    *slot = p.leader_id.0;
                } else {
                    return Err(CliError::msg(format!(
                        "metadata for topic {name}: partition {} out of range",
                        p.partition_index
                    )));
                }
            }
            out.insert(name, Some(TopicMeta { leaders }));
        }
        for t in topics {
            out.entry(t.clone()).or_insert(None);
        }
        Ok(out)
    }

    /// The connection to the bootstrap broker.
    pub fn any(&mut self) -> &mut Conn {
        &mut self.boot
    }

    /// The connection to broker `id` (opened on first use).
    pub fn node(&mut self, id: i32) -> CliResult<&mut Conn> {
        if !self.conns.contains_key(&id) {
            let addr = self
                .brokers
                .get(&id)
                .cloned()
                .ok_or_else(|| CliError::msg(format!("broker {id} is not in the metadata")))?;
            let conn = Conn::connect(&addr)?;
            self.conns.insert(id, conn);
        }
        self.conns
            .get_mut(&id)
            .ok_or_else(|| CliError::msg(format!("broker {id}: no connection")))
    }

    /// Drops the connection to broker `id` (after an error), so the next
    /// use reconnects.
    pub fn forget(&mut self, id: i32) {
        self.conns.remove(&id);
    }

    /// The connection to group `group`'s coordinator.
    pub fn coordinator(&mut self, group: &str) -> CliResult<&mut Conn> {
        let mut req = kafka_protocol::messages::FindCoordinatorRequest::default();
        req.key = sb(group);
        req.key_type = 0;
        let resp = self.boot.send(req, 3)?;
        if resp.error_code != 0 {
            return Err(CliError::msg(format!(
                "finding the coordinator of group {group}: {}",
                error_name(resp.error_code)
            )));
        }
        let id = resp.node_id.0;
        self.brokers
            .entry(id)
            .or_insert_with(|| format!("{}:{}", resp.host.as_str(), resp.port));
        self.node(id)
    }
}

/// `BrokerId` from an i32.
pub fn broker(id: i32) -> BrokerId {
    BrokerId(id)
}
