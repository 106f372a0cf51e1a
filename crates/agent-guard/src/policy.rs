//! The policy file. Its loader is agent-core's public [`agent_core::Policy`], so an embedding
//! agent and this CLI read a policy identically.

pub(crate) use agent_core::Policy;

/// This process's environment as the policy reads it: every variable whose name and value are
/// UTF-8. Another variable is left out (`std::env::vars` would panic on it, ending a hook in a
/// refusal whatever the call), unless it is one of ours (`AGENT_*`: rules, mode, the network
/// switch): leaving out a deny rule would weaken the policy, so that is an error.
pub(crate) fn process_env() -> anyhow::Result<std::collections::HashMap<String, String>> {
    let mut env = std::collections::HashMap::new();
    for (name, value) in std::env::vars_os() {
        let Ok(name) = name.into_string() else {
            continue;
        };
        match value.into_string() {
            Ok(value) => {
                env.insert(name, value);
            }
            Err(_) if name.starts_with("AGENT_") => {
                anyhow::bail!("the environment variable `{name}` is not UTF-8; fix or unset it")
            }
            Err(_) => {}
        }
    }
    Ok(env)
}
