#![no_main]
//! Rule text + tool + command: parsing and checking never panic and keep their invariants.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    assert!(perm_rules::fuzz::check_rule_text(data));
});
