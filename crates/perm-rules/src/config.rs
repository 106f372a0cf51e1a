//! The `[permissions]` table of the policy file, the environment, and layering.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::{
    Decision, Error, PermissionChecker, PermissionMode, PermissionRule, RuleKind, RuleSource,
};

/// `AGENT_PERMISSIONS_DENY`: comma-separated Deny rules.
pub const ENV_DENY: &str = "AGENT_PERMISSIONS_DENY";
/// `AGENT_PERMISSIONS_ASK`: comma-separated Ask rules.
pub const ENV_ASK: &str = "AGENT_PERMISSIONS_ASK";
/// `AGENT_PERMISSIONS_ALLOW`: comma-separated Allow rules.
pub const ENV_ALLOW: &str = "AGENT_PERMISSIONS_ALLOW";
/// `AGENT_PERMISSIONS_MODE`: one of the [`PermissionMode`] names.
pub const ENV_MODE: &str = "AGENT_PERMISSIONS_MODE";

/// The default decision a policy may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultDecision {
    /// No match -> Allow (the seed's behaviour; must be written: a policy without `default` asks).
    Allow,
    /// No match -> Ask.
    Ask,
}

/// The `[permissions]` table. Rule strings keep their byte span so errors name the line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// The mode (`default`, `acceptEdits`, `plan`, `dontAsk`, `bypassPermissions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PermissionMode>,
    /// The decision when no rule matches: `allow` (default) or `ask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<DefaultDecision>,
    /// Deny rules.
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
    /// Ask rules.
    #[serde(default)]
    pub ask: Vec<Spanned<String>>,
    /// Allow rules.
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
}

#[derive(Deserialize, Serialize)]
struct Doc {
    #[serde(default)]
    permissions: PermissionsConfig,
}

impl PermissionsConfig {
    /// Parses the `[permissions]` table of a whole policy document (other tables belong to
    /// other layers and are ignored here). `path` names the file in errors.
    pub fn from_policy_text(path: &str, text: &str) -> Result<PermissionsConfig, Error> {
        let doc: Doc = toml::from_str(text).map_err(|e| Error::Policy {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Ok(doc.permissions)
    }

    /// Writes the table as a policy document (`[permissions]` ...) that
    /// [`PermissionsConfig::from_policy_text`] reads back to the same rules.
    pub fn to_policy_text(&self) -> Result<String, Error> {
        toml::to_string(&Doc {
            permissions: self.clone(),
        })
        .map_err(|e| Error::Policy {
            path: "<serialized>".to_owned(),
            message: e.to_string(),
        })
    }
}

/// Where a layer of configuration comes from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// The user's own policy.
    User,
    /// The project's policy.
    Project,
    /// The session's policy.
    Session,
    /// `AGENT_PERMISSIONS_*`.
    Environment,
    /// An administrator's policy, which overrides everything.
    Managed,
}

/// One policy file's `[permissions]` table with where it came from.
#[derive(Debug, Clone)]
pub struct ConfigLayer {
    /// Its place in the layering.
    pub origin: Origin,
    /// The file name used in rule sources and errors.
    pub path: String,
    /// The file's text, used to turn spans into line numbers.
    pub text: String,
    /// The parsed table.
    pub config: PermissionsConfig,
}

impl ConfigLayer {
    /// Parses a whole policy document into a layer.
    pub fn parse(origin: Origin, path: &str, text: &str) -> Result<ConfigLayer, Error> {
        Ok(ConfigLayer {
            origin,
            path: path.to_owned(),
            text: text.to_owned(),
            config: PermissionsConfig::from_policy_text(path, text)?,
        })
    }
}

/// Splits a comma-separated rule list, ignoring commas inside parentheses
/// (`run_bash(echo a,b),read_file` is two rules). Empty items are dropped.
pub fn split_rule_list(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

impl PermissionChecker {
    /// Builds a checker from policy layers and the environment (`env` is injected; pass
    /// `std::env::vars().collect()` in a binary).
    ///
    /// Layers apply user < project < session < environment < managed: rule lists are merged
    /// (Deny anywhere wins because Deny beats every Allow), and the highest layer that sets
    /// `mode` or `default` decides it.
    pub fn from_config(
        layers: &[ConfigLayer],
        env: &HashMap<String, String>,
    ) -> Result<PermissionChecker, Error> {
        let mut sorted: Vec<&ConfigLayer> = layers.iter().collect();
        sorted.sort_by_key(|l| l.origin);
        let mut checker = PermissionChecker::new();
        let mut mode = None;
        let mut default = None;
        let mut env_done = false;
        let apply_env = |checker: &mut PermissionChecker,
                         mode: &mut Option<PermissionMode>|
         -> Result<(), Error> {
            for (var, kind) in [
                (ENV_DENY, RuleKind::Deny),
                (ENV_ASK, RuleKind::Ask),
                (ENV_ALLOW, RuleKind::Allow),
            ] {
                if let Some(value) = env.get(var) {
                    for text in split_rule_list(value) {
                        let source = RuleSource::Env {
                            var: var.to_owned(),
                        };
                        checker.add_rule(PermissionRule::parse(kind, &text, source)?);
                    }
                }
            }
            if let Some(value) = env.get(ENV_MODE).filter(|v| !v.trim().is_empty()) {
                *mode = Some(PermissionMode::parse(value).ok_or_else(|| Error::Env {
                    var: ENV_MODE.to_owned(),
                    message: format!(
                        "unknown mode `{value}`; expected one of default, acceptEdits, plan, dontAsk, bypassPermissions"
                    ),
                })?);
            }
            Ok(())
        };
        for layer in sorted {
            if layer.origin > Origin::Environment && !env_done {
                apply_env(&mut checker, &mut mode)?;
                env_done = true;
            }
            let cfg = &layer.config;
            for (list, kind) in [
                (&cfg.deny, RuleKind::Deny),
                (&cfg.ask, RuleKind::Ask),
                (&cfg.allow, RuleKind::Allow),
            ] {
                for text in list {
                    let source = RuleSource::File {
                        path: layer.path.clone(),
                        line: line_of(&layer.text, text.span().start),
                    };
                    checker.add_rule(PermissionRule::parse(kind, text.get_ref(), source)?);
                }
            }
            mode = cfg.mode.or(mode);
            default = cfg.default.or(default);
        }
        if !env_done {
            apply_env(&mut checker, &mut mode)?;
        }
        checker.set_mode(mode.unwrap_or_default());
        // A policy that does not say is asked, not allowed: fail closed (issue 27: a policy
        // without `default` allowed every call no rule named).
        checker.set_default(match default {
            Some(DefaultDecision::Allow) => Decision::Allow,
            Some(DefaultDecision::Ask) | None => Decision::Ask,
        });
        Ok(checker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lists() {
        assert_eq!(
            split_rule_list("run_bash(echo a,b), read_file,,"),
            vec!["run_bash(echo a,b)", "read_file"]
        );
    }

    #[test]
    fn errors_name_file_line_rule() {
        let text = "[permissions]\ndeny = [\n  \"read_file\",\n  \"run_bash(rm:*\",\n]\n";
        let layer = ConfigLayer::parse(Origin::Project, "p.toml", text).unwrap();
        let err = PermissionChecker::from_config(&[layer], &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("p.toml:4") && err.contains("`run_bash(rm:*`"),
            "{err}"
        );
        let err = ConfigLayer::parse(Origin::Project, "p.toml", "[permissions]\ndenny = []\n")
            .unwrap_err();
        assert!(
            err.to_string().contains("p.toml") && err.to_string().contains("line 2"),
            "{err}"
        );
    }

    #[test]
    fn layering_and_env() {
        let user = ConfigLayer::parse(
            Origin::User,
            "u",
            "[permissions]\nmode = \"plan\"\nallow = [\"run_bash\"]",
        )
        .unwrap();
        let managed =
            ConfigLayer::parse(Origin::Managed, "m", "[permissions]\ndefault = \"ask\"").unwrap();
        let env: HashMap<String, String> = [
            (
                ENV_DENY.to_owned(),
                "run_bash(rm:*),run_bash(echo a,b)".to_owned(),
            ),
            (ENV_MODE.to_owned(), "dontAsk".to_owned()),
        ]
        .into();
        let c = PermissionChecker::from_config(&[managed, user], &env).unwrap();
        assert_eq!(c.mode(), PermissionMode::DontAsk);
        assert_eq!(c.default_decision(), Decision::Ask);
        let texts: Vec<&str> = c.rules().map(|r| r.text()).collect();
        assert_eq!(
            texts,
            vec!["run_bash", "run_bash(rm:*)", "run_bash(echo a,b)"]
        );
        let bad: HashMap<String, String> = [(ENV_MODE.to_owned(), "yolo".to_owned())].into();
        assert!(PermissionChecker::from_config(&[], &bad).is_err());
    }

    #[test]
    fn a_policy_without_default_asks() {
        let env = HashMap::new();
        let layer = |text: &str| ConfigLayer::parse(Origin::Project, "p", text).unwrap();
        let c = PermissionChecker::from_config(&[layer("[permissions]\nallow = [\"ls\"]")], &env)
            .unwrap();
        assert_eq!(c.default_decision(), Decision::Ask);
        let c =
            PermissionChecker::from_config(&[layer("[permissions]\ndefault = \"allow\"")], &env)
                .unwrap();
        assert_eq!(c.default_decision(), Decision::Allow);
    }
}
