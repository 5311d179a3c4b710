//! Record batch encode and decode throughput with every codec (none, gzip,
//! snappy, lz4, zstd at Kafka's default levels), for
//! ~300-byte network-flow log records in 16 KiB and 1 MiB batches.
//!
//! Throughput is counted in uncompressed record-batch bytes for every case,
//! so every codec's numbers compare the same logical work. Decode is
//! `RecordBatch::decode` (header + CRC) plus iterating every record.
#![allow(missing_docs, reason = "criterion_group! generates an undocumented fn")]

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafkalite::{BatchBuilder, Compression, Record, RecordBatch};
use std::hint::black_box;

/// A small deterministic PRNG (xorshift64*), so every run sees the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const APPS: [&str; 6] = ["https", "dns", "ssh", "postgres", "kafka", "ntp"];
const VERDICTS: [&str; 3] = ["allow", "allow", "deny"];
const PROTOS: [&str; 3] = ["TCP", "TCP", "UDP"];

/// One network-flow log line, about 300 bytes: tab-separated fields with
/// timestamps, IPs, ports, counters and a hostname. Fields repeat across
/// lines (like real flow logs), so lz4 has something to find.
fn flow_record(rng: &mut Rng, seq: u64) -> Record {
    let ts = 1_700_000_000_000 + seq as i64 * 7 + rng.below(5) as i64;
    let src = format!(
        "10.{}.{}.{}",
        rng.below(4),
        rng.below(32),
        rng.below(254) + 1
    );
    let dst = format!("172.16.{}.{}", rng.below(8), rng.below(254) + 1);
    let sport = 32_768 + rng.below(28_000);
    let app = APPS[rng.below(APPS.len() as u64) as usize];
    let dport = match app {
        "https" => 443,
        "dns" => 53,
        "ssh" => 22,
        "postgres" => 5432,
        "kafka" => 9092,
        _ => 123,
    };
    let line = format!(
        "ts={ts}\tevent=flow_end\tsrc={src}:{sport}\tdst={dst}:{dport}\tproto={proto}\t\
         app={app}\tbytes_in={bi}\tbytes_out={bo}\tpackets={pk}\tduration_ms={dur}\t\
         verdict={verdict}\tiface=eth{iface}\tvlan={vlan}\trule=fw-{rule:04}\t\
         sensor=edge-{edge:02}.dc{dc}.flows.example.net\tseq={seq}",
        proto = PROTOS[rng.below(3) as usize],
        bi = rng.below(1_000_000),
        bo = rng.below(100_000),
        pk = rng.below(2_000),
        dur = rng.below(60_000),
        verdict = VERDICTS[rng.below(3) as usize],
        iface = rng.below(4),
        vlan = 100 + rng.below(20),
        rule = rng.below(300),
        edge = rng.below(12),
        dc = rng.below(3) + 1,
    );
    Record::new(line).key(src).timestamp(ts)
}

/// Records filling about `target` bytes of an uncompressed batch.
fn records_for(target: usize) -> Vec<Record> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut b = BatchBuilder::new(Compression::None);
    let mut out = Vec::new();
    for seq in 0.. {
        let r = flow_record(&mut rng, seq);
        if b.size() + b.record_size(&r) > target {
            break;
        }
        b.push(&r);
        out.push(r);
    }
    out
}

fn encode(records: &[Record], compression: Compression, capacity: usize) -> Bytes {
    let mut b = BatchBuilder::with_capacity(compression, capacity);
    for r in records {
        b.push(r);
    }
    b.base_offset(1_000).build()
}

const SIZES: [(&str, usize); 2] = [("16KiB", 16 << 10), ("1MiB", 1 << 20)];
const CODECS: [Compression; 5] = Compression::ALL;

fn bench_encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("encode");
    for (label, size) in SIZES {
        let records = records_for(size);
        let raw = encode(&records, Compression::None, size).len();
        g.throughput(Throughput::Bytes(raw as u64));
        for codec in CODECS {
            let id = BenchmarkId::new(codec.name(), label);
            g.bench_with_input(id, &records, |b, records| {
                b.iter(|| encode(black_box(records), codec, size));
            });
        }
    }
    g.finish();
}

fn bench_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for (label, size) in SIZES {
        let records = records_for(size);
        let raw = encode(&records, Compression::None, size).len();
        g.throughput(Throughput::Bytes(raw as u64));
        for codec in CODECS {
            let batch = encode(&records, codec, size);
            let id = BenchmarkId::new(codec.name(), label);
            g.bench_with_input(id, &batch, |b, batch| {
                b.iter(|| {
                    let batch = RecordBatch::decode(black_box(batch)).expect("valid batch");
                    let mut n = 0usize;
                    for r in batch.records().expect("supported codec") {
                        black_box(r.expect("valid record"));
                        n += 1;
                    }
                    assert_eq!(n, records.len());
                });
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_encode, bench_decode);
criterion_main!(benches);
