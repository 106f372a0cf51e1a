//! The tool registry and its restricted views.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::Error;
use crate::tool::{AgentTool, ToolSchema};

/// The tools an agent may call, by name. Cloning is cheap (the tools are shared).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Arc<BTreeMap<String, Arc<dyn AgentTool>>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// Adds `tool`; a second tool with the same name is an error.
    pub fn register(&mut self, tool: Arc<dyn AgentTool>) -> Result<(), Error> {
        let name = tool.name().to_owned();
        let tools = Arc::make_mut(&mut self.tools);
        if tools.contains_key(&name) {
            return Err(Error::DuplicateTool(name));
        }
        tools.insert(name, tool);
        Ok(())
    }

    /// Adds `tool`, builder style.
    pub fn with(mut self, tool: Arc<dyn AgentTool>) -> Result<Self, Error> {
        self.register(tool)?;
        Ok(self)
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.get(name)
    }

    /// The tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The declarations handed to the model, sorted by name.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools.values().map(|t| t.schema()).collect()
    }

    /// A view exposing only the tools named in `allowlist` (names not registered are ignored).
    /// The view can only narrow: restricting a restricted view never brings a tool back.
    pub fn restrict<S: AsRef<str>>(&self, allowlist: &[S]) -> ToolRegistry {
        let tools = allowlist
            .iter()
            .filter_map(|name| {
                let name = name.as_ref();
                self.tools
                    .get(name)
                    .map(|tool| (name.to_owned(), Arc::clone(tool)))
            })
            .collect();
        ToolRegistry {
            tools: Arc::new(tools),
        }
    }

    /// A view without the tools named in `denylist`.
    pub fn without<S: AsRef<str>>(&self, denylist: &[S]) -> ToolRegistry {
        let tools = self
            .tools
            .iter()
            .filter(|(name, _)| !denylist.iter().any(|d| d.as_ref() == name.as_str()))
            .map(|(name, tool)| (name.clone(), Arc::clone(tool)))
            .collect();
        ToolRegistry {
            tools: Arc::new(tools),
        }
    }
}
