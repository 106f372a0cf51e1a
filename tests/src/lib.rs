//! Cross-crate scenarios live in `tests/`; this library holds their shared fixtures.
