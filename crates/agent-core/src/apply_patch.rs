//! MERGE-PENDING placeholder: replaced by the full parser from the wt-cli branch.
#![allow(missing_docs)]

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(String);

#[derive(Debug)]
pub struct Patch {
    paths: Vec<String>,
}

impl Patch {
    pub fn written_paths(&self) -> Vec<&str> {
        self.paths.iter().map(String::as_str).collect()
    }
}

pub fn parse(text: &str) -> Result<Patch, PatchError> {
    let mut paths = Vec::new();
    for line in text.lines() {
        for h in [
            "*** Add File: ",
            "*** Delete File: ",
            "*** Update File: ",
            "*** Move to: ",
        ] {
            if let Some(p) = line.strip_prefix(h) {
                paths.push(p.trim().to_owned());
            }
        }
    }
    if !text.contains("*** Begin Patch") {
        return Err(PatchError("no `*** Begin Patch`".into()));
    }
    Ok(Patch { paths })
}
