//! Guarded execution of an already-validated command.
