//! Bounded capture of one output stream.

use tokio::io::{AsyncRead, AsyncReadExt};

/// What was kept of one stream: a head of at most `cap` bytes and the total count.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    total: u64,
}

impl Capture {
    /// Reads `reader` to its end, keeping at most `cap` bytes; the rest is counted and discarded
    /// so the writer never blocks on a full pipe and memory stays bounded.
    pub(crate) async fn read_from<R: AsyncRead + Unpin>(reader: &mut R, cap: usize) -> Self {
        let mut capture = Capture {
            head: Vec::with_capacity(cap.min(64 * 1024)),
            total: 0,
        };
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = buf.get(..n).unwrap_or_default();
                    capture.push(chunk, cap);
                }
            }
        }
        capture
    }

    fn push(&mut self, chunk: &[u8], cap: usize) {
        self.total = self.total.saturating_add(chunk.len() as u64);
        let room = cap.saturating_sub(self.head.len());
        let take = room.min(chunk.len());
        self.head
            .extend_from_slice(chunk.get(..take).unwrap_or_default());
    }

    /// Decodes the head lossily and keeps at most `max_chars` characters.
    pub(crate) fn finish(&self, max_chars: usize) -> Rendered {
        render(&self.head, self.total, max_chars)
    }
}

/// A stream as returned to the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub(crate) text: String,
    pub(crate) truncated: bool,
    pub(crate) dropped_bytes: u64,
    pub(crate) total_bytes: u64,
}

/// Head bytes needed so that `max_chars` whole characters always fit: a character is at most
/// four bytes, and the extra four keep a character split at the cut from becoming U+FFFD.
pub(crate) fn head_cap(max_chars: usize) -> usize {
    max_chars.saturating_mul(4).saturating_add(4)
}

fn render(head: &[u8], total: u64, max_chars: usize) -> Rendered {
    let mut text = String::new();
    let mut chars = 0usize;
    let mut kept_bytes = 0usize;
    'outer: for chunk in head.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if chars == max_chars {
                break 'outer;
            }
            text.push(ch);
            chars += 1;
            kept_bytes += ch.len_utf8();
        }
        if !chunk.invalid().is_empty() {
            if chars == max_chars {
                break;
            }
            // One replacement character stands for one invalid sequence, as in from_utf8_lossy.
            text.push(char::REPLACEMENT_CHARACTER);
            chars += 1;
            kept_bytes += chunk.invalid().len();
        }
    }
    let dropped_bytes = total.saturating_sub(kept_bytes as u64);
    Rendered {
        text,
        truncated: dropped_bytes > 0,
        dropped_bytes,
        total_bytes: total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap_of(bytes: &[u8], max_chars: usize) -> Rendered {
        let mut c = Capture::default();
        for chunk in bytes.chunks(3) {
            c.push(chunk, head_cap(max_chars));
        }
        c.finish(max_chars)
    }

    #[test]
    fn short_output_is_whole() {
        let r = cap_of(b"hello\n", 10);
        assert_eq!(r.text, "hello\n");
        assert!(!r.truncated);
        assert_eq!(r.dropped_bytes, 0);
    }

    #[test]
    fn cut_on_char_boundary_counts_dropped_bytes() {
        let s = "ab\u{e9}\u{e9}";
        let r = cap_of(s.as_bytes(), 3);
        assert_eq!(r.text, "ab\u{e9}");
        assert!(r.truncated);
        assert_eq!(r.dropped_bytes, 2);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let r = cap_of(b"a\xffb", 10);
        assert_eq!(r.text, "a\u{fffd}b");
        assert!(!r.truncated);
    }

    #[test]
    fn head_is_bounded() {
        let mut c = Capture::default();
        for _ in 0..1000 {
            c.push(&[b'x'; 1000], head_cap(10));
        }
        assert_eq!(c.head.len(), head_cap(10));
        assert_eq!(c.total, 1_000_000);
        let r = c.finish(10);
        assert_eq!(r.text.len(), 10);
        assert_eq!(r.dropped_bytes, 1_000_000 - 10);
    }

    #[test]
    fn four_byte_chars_fill_the_limit() {
        let s = "\u{1f600}".repeat(20);
        let r = cap_of(s.as_bytes(), 5);
        assert_eq!(r.text, "\u{1f600}".repeat(5));
        assert_eq!(r.dropped_bytes, 60);
    }
}
