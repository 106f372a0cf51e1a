//! Cross-crate scenario tests.

use perm_rules::Decision;

#[test]
fn decisions_combine_to_the_strictest() {
    let findings = [Decision::Allow, Decision::Deny, Decision::Ask];
    assert_eq!(findings.iter().copied().max(), Some(Decision::Deny));
}
