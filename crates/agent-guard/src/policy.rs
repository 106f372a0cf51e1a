//! The policy file. Its loader is agent-core's public [`agent_core::Policy`], so an embedding
//! agent and this CLI read a policy identically.

pub(crate) use agent_core::Policy;
