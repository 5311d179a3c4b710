//! A record's fields encoded on the stack before one copy into its batch
//! (`BatchBuilder::push_parts_at`).

use crate::record::varint::zigzag;

/// A record's varint fields before its value (and its key, when that is
/// short: [`KEY_ROOM`](Fields::KEY_ROOM)), or before its key (a longer
/// one), encoded on the stack and copied into the batch at once, rather
/// than a byte at a time with a capacity check and a length update each.
pub(super) struct Fields {
    bytes: [u8; Fields::ROOM],
    len: usize,
}

// Length (5), attributes (1), timestamp delta (10), offset delta (5), key
// length (5), the key, value length (5).
const _: () = assert!(5 + 1 + 10 + 5 + 5 + Fields::KEY_ROOM + 5 <= Fields::ROOM);

impl Default for Fields {
    fn default() -> Self {
        Fields {
            bytes: [0; Fields::ROOM],
            len: 0,
        }
    }
}

impl Fields {
    /// The widest fields it holds: length (5 bytes), attributes (1),
    /// timestamp delta (10), offset delta (5), key and value lengths (5
    /// each), and a key of up to [`KEY_ROOM`](Self::KEY_ROOM) bytes.
    pub(super) const ROOM: usize = 64;

    /// The longest key that goes into the record's one copy of its fields:
    /// what the widest other fields (31 bytes) leave.
    pub(super) const KEY_ROOM: usize = Self::ROOM - 31;

    /// A key's bytes, after its length.
    pub(super) fn key(&mut self, k: &[u8]) {
        let room = self.bytes.get_mut(self.len..self.len + k.len());
        debug_assert!(room.is_some(), "a key past the fields' room");
        if let Some(room) = room {
            room.copy_from_slice(k);
            self.len += k.len();
        }
    }

    pub(super) fn byte(&mut self, b: u8) {
        debug_assert!(self.len < Self::ROOM, "a field past the fields' room");
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    pub(super) fn varint(&mut self, v: i32) {
        self.varlong(i64::from(v));
    }

    pub(super) fn varlong(&mut self, v: i64) {
        let mut z = zigzag(v);
        while z >= 0x80 {
            self.byte((z as u8) | 0x80);
            z >>= 7;
        }
        self.byte(z as u8);
    }

    /// A key's or value's length, −1 for null.
    pub(super) fn length_of(&mut self, b: Option<&[u8]>) {
        self.varint(b.map_or(-1, |b| b.len() as i32));
    }

    /// Appends the fields to `buf`, reserving room for `more` bytes in
    /// all. With room to spare, all [`ROOM`](Self::ROOM) bytes are copied
    /// (a copy of constant size, not a call) and the excess cut off again.
    pub(super) fn copy_to(&self, buf: &mut Vec<u8>, more: usize) {
        let len = buf.len();
        if buf.capacity() - len >= more.max(Self::ROOM) {
            buf.extend_from_slice(&self.bytes);
            buf.truncate(len + self.len);
        } else {
            buf.reserve(more);
            buf.extend_from_slice(self.bytes.get(..self.len).unwrap_or_default());
        }
    }
}
