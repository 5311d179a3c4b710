//! xxHash32, which the LZ4 frame format uses for its header and block
//! checksums.
#![allow(
    clippy::little_endian_bytes,
    reason = "xxHash reads its input as little-endian words"
)]

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

fn read_u32_le(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(b);
    u32::from_le_bytes(w)
}

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(13)
        .wrapping_mul(P1)
}

/// xxHash32 (used by the LZ4 frame format for header and block checksums).
pub(crate) fn xxh32(input: &[u8], seed: u32) -> u32 {
    let mut stripes = input.chunks_exact(16);
    let mut h = if input.len() >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        for stripe in &mut stripes {
            for (lane, word) in v.iter_mut().zip(stripe.chunks_exact(4)) {
                *lane = round(*lane, read_u32_le(word));
            }
        }
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(input.len() as u32);
    let tail = stripes.remainder();
    let mut words = tail.chunks_exact(4);
    for word in &mut words {
        h = h
            .wrapping_add(read_u32_le(word).wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}
