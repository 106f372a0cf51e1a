use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::Intervention;

/// A hash of `value` in which object key order (and, since it works on parsed JSON, whitespace)
/// does not matter.
///
/// Object entries are hashed separately and combined with a commutative sum, so no sorting or
/// allocation is needed; every value kind is tagged so `"1"`, `1` and `[1]` differ. The hasher is
/// `DefaultHasher::new()` (fixed keys), so the result is stable within a build.
pub fn canonical_hash(value: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_value(value, &mut hasher);
    hasher.finish()
}

fn hash_value(value: &Value, state: &mut DefaultHasher) {
    match value {
        Value::Null => state.write_u8(0),
        Value::Bool(b) => {
            state.write_u8(1);
            b.hash(state);
        }
        Value::Number(n) => {
            state.write_u8(2);
            // Equal JSON numbers share one representation in serde_json (i64/u64/f64 in order).
            if let Some(i) = n.as_i64() {
                state.write_u8(0);
                i.hash(state);
            } else if let Some(u) = n.as_u64() {
                state.write_u8(1);
                u.hash(state);
            } else if let Some(f) = n.as_f64() {
                state.write_u8(2);
                f.to_bits().hash(state);
            }
        }
        Value::String(s) => {
            state.write_u8(3);
            s.hash(state);
        }
        Value::Array(items) => {
            state.write_u8(4);
            state.write_usize(items.len());
            for item in items {
                hash_value(item, state);
            }
        }
        Value::Object(map) => {
            state.write_u8(5);
            state.write_usize(map.len());
            state.write_u64(object_digest(map));
        }
    }
}

/// The order-independent digest of an object's entries: each entry is hashed on its own and
/// the results are summed, so any iteration order gives the same digest. Kept separate so a
/// test can feed the entries in different orders (serde_json's `Map` always iterates sorted,
/// so a test through `canonical_hash` alone could not notice an order-dependent combination).
fn object_digest<'a>(entries: impl IntoIterator<Item = (&'a String, &'a Value)>) -> u64 {
    let mut sum: u64 = 0;
    for (key, item) in entries {
        let mut entry = DefaultHasher::new();
        key.hash(&mut entry);
        hash_value(item, &mut entry);
        sum = sum.wrapping_add(entry.finish());
    }
    sum
}

fn text_hash(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Refuses the same `(tool_name, args)` called `threshold` times in a row, and notices a tool
/// returning the same error again and again.
#[derive(Debug, Clone)]
pub struct DuplicateDetector {
    threshold: u32,
    error_threshold: u32,
    exempt: HashSet<String>,
    last_call: Option<(String, u64)>,
    run: u32,
    // Per tool: hash of its last error and how many times in a row it came back.
    errors: HashMap<String, (u64, u32)>,
}

impl Default for DuplicateDetector {
    fn default() -> Self {
        DuplicateDetector::new(3, 3, std::iter::empty::<String>())
    }
}

impl DuplicateDetector {
    /// A detector refusing the `threshold`-th identical call in a row and reporting the
    /// `error_threshold`-th identical error in a row; `exempt` tools are never refused.
    pub fn new<I, S>(threshold: u32, error_threshold: u32, exempt: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        DuplicateDetector {
            threshold,
            error_threshold,
            exempt: exempt.into_iter().map(Into::into).collect(),
            last_call: None,
            run: 0,
            errors: HashMap::new(),
        }
    }

    /// Records a call about to run; `Some` means refuse it with the message as its error result.
    ///
    /// A refused call still counts, so a fourth identical call is refused too; any different
    /// call (an exempt one included) starts a new run.
    pub fn on_call(&mut self, tool: &str, args: &Value) -> Option<Intervention> {
        let hash = canonical_hash(args);
        match &mut self.last_call {
            Some((name, h)) if name == tool && *h == hash => {
                self.run = self.run.saturating_add(1);
            }
            Some((name, h)) => {
                name.clear();
                name.push_str(tool);
                *h = hash;
                self.run = 1;
            }
            None => {
                self.last_call = Some((tool.to_owned(), hash));
                self.run = 1;
            }
        }
        if self.run >= self.threshold && !self.exempt.contains(tool) {
            Some(Intervention::DuplicateCall {
                tool: tool.to_owned(),
                count: self.run,
            })
        } else {
            None
        }
    }

    /// Records a tool's result; `Some` when it returned the same error `error_threshold` times
    /// in a row (a success or a different error resets that tool's count).
    pub fn on_result(&mut self, tool: &str, output: &str, is_error: bool) -> Option<Intervention> {
        if !is_error {
            self.errors.remove(tool);
            return None;
        }
        let hash = text_hash(output);
        let count = match self.errors.get_mut(tool) {
            Some((h, count)) if *h == hash => {
                *count = count.saturating_add(1);
                *count
            }
            Some(entry) => {
                *entry = (hash, 1);
                1
            }
            None => {
                self.errors.insert(tool.to_owned(), (hash, 1));
                1
            }
        };
        (count >= self.error_threshold).then(|| Intervention::RepeatedError {
            tool: tool.to_owned(),
            count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn third_identical_call_is_refused_second_is_not() {
        let mut d = DuplicateDetector::default();
        let args = json!({"path": "a", "n": 1});
        assert_eq!(d.on_call("read_file", &args), None);
        assert_eq!(d.on_call("read_file", &args), None);
        let hit = d
            .on_call("read_file", &json!({"n": 1, "path": "a"}))
            .unwrap();
        assert_eq!(hit.code(), "duplicate_call");
        assert_eq!(hit.action(), crate::Action::RefuseCall);
        assert!(
            d.on_call("read_file", &args).is_some(),
            "a fourth is refused too"
        );
    }

    #[test]
    fn a_different_call_resets_the_run() {
        let mut d = DuplicateDetector::default();
        let a = json!({"p": 1});
        d.on_call("t", &a);
        d.on_call("t", &a);
        assert_eq!(d.on_call("t", &json!({"p": 2})), None);
        assert_eq!(d.on_call("u", &a), None);
        assert_eq!(d.on_call("t", &a), None);
    }

    #[test]
    fn exempt_tools_are_never_refused() {
        let mut d = DuplicateDetector::new(2, 3, ["poll"]);
        let a = json!({});
        for _ in 0..5 {
            assert_eq!(d.on_call("poll", &a), None);
        }
        d.on_call("t", &a);
        assert!(d.on_call("t", &a).is_some());
    }

    #[test]
    fn canonical_hash_ignores_key_order_but_not_types() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":{"x":[1,2],"y":null}}"#).unwrap();
        let b: Value =
            serde_json::from_str("{ \"b\" : {\"y\":null, \"x\":[1, 2]},\n \"a\": 1 }").unwrap();
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
        assert_ne!(canonical_hash(&json!("1")), canonical_hash(&json!(1)));
        assert_ne!(
            canonical_hash(&json!([1, 2])),
            canonical_hash(&json!([2, 1]))
        );
        assert_ne!(
            canonical_hash(&json!({"a": 1, "b": 2})),
            canonical_hash(&json!({"a": 2, "b": 1}))
        );
    }

    // `serde_json::Map` iterates in sorted key order whatever the input text, so the test above
    // cannot see an order-dependent combination. This one feeds the same entries to the
    // combination in every order and needs the digests to agree.
    #[test]
    fn object_digest_is_independent_of_entry_order() {
        let entries: Vec<(String, Value)> = vec![
            ("a".to_owned(), json!(1)),
            ("b".to_owned(), json!({"x": [1, 2], "y": null})),
            ("c".to_owned(), json!("1")),
            ("d".to_owned(), json!([true, 2.5])),
        ];
        let forward = object_digest(entries.iter().map(|(k, v)| (k, v)));
        let mut orders = 0;
        permute(
            &mut (0..entries.len()).collect::<Vec<_>>(),
            0,
            &mut |order| {
                let digest = object_digest(order.iter().map(|&i| (&entries[i].0, &entries[i].1)));
                assert_eq!(digest, forward, "order {order:?} changed the digest");
                orders += 1;
            },
        );
        assert_eq!(orders, 24);
        // Still sensitive to which value sits under which key.
        let swapped = [("a".to_owned(), json!("1")), ("c".to_owned(), json!(1))];
        let straight = [("a".to_owned(), json!(1)), ("c".to_owned(), json!("1"))];
        assert_ne!(
            object_digest(swapped.iter().map(|(k, v)| (k, v))),
            object_digest(straight.iter().map(|(k, v)| (k, v)))
        );
    }

    fn permute(items: &mut Vec<usize>, start: usize, visit: &mut dyn FnMut(&[usize])) {
        if start == items.len() {
            visit(items);
            return;
        }
        for i in start..items.len() {
            items.swap(start, i);
            permute(items, start + 1, visit);
            items.swap(start, i);
        }
    }

    #[test]
    fn repeated_error_fires_at_threshold_and_resets_on_success() {
        let mut d = DuplicateDetector::default();
        assert_eq!(d.on_result("t", "boom", true), None);
        assert_eq!(d.on_result("t", "boom", true), None);
        let hit = d.on_result("t", "boom", true).unwrap();
        assert_eq!(hit.code(), "repeated_error");
        assert_eq!(d.on_result("t", "ok", false), None);
        assert_eq!(d.on_result("t", "boom", true), None);
        assert_eq!(d.on_result("t", "other", true), None);
        assert_eq!(d.on_result("u", "other", true), None);
    }
}
