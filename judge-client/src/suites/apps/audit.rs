//! The audit log: every action an agent attempted, in execution order, with its outcome (docs/contracts/apps.md).
//! Malformed directives are logged too, so an agent's syntax errors are visible.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Action name logged for a directive that could not be parsed.
pub const INVALID_DIRECTIVE: &str = "invalid_directive";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Position in the log, from 0: the total order of execution.
    pub seq: u64,
    /// Simulation step the action ran in.
    pub step: u64,
    pub agent: String,
    pub app: String,
    pub action: String,
    pub params: Value,
    pub success: bool,
    pub result: Option<Value>,
    pub error: Option<String>,
    /// Logical time (RFC 3339, UTC).
    pub time: String,
    /// The JSON-RPC id of the MCP `tools/call` that asked for the action (MCP mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_request_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditLog {
    entries: Vec<AuditEntry>,
}

impl AuditLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an entry, numbering it.
    pub fn record(&mut self, mut entry: AuditEntry) {
        entry.seq = self.entries.len() as u64;
        self.entries.push(entry);
    }

    /// Marks the last entry as asked by the MCP request `id`.
    pub fn tag_last(&mut self, id: &str) {
        if let Some(entry) = self.entries.last_mut() {
            entry.mcp_request_id = Some(id.to_owned());
        }
    }

    pub fn entries(&self) -> &[AuditEntry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn for_agent<'a>(&'a self, agent: &'a str) -> impl Iterator<Item = &'a AuditEntry> + 'a {
        self.entries.iter().filter(move |e| e.agent == agent)
    }

    pub fn for_step(&self, step: u64) -> impl Iterator<Item = &AuditEntry> + '_ {
        self.entries.iter().filter(move |e| e.step == step)
    }

    /// One JSON object per line, in order.
    pub fn write_jsonl<W: Write>(&self, mut out: W) -> io::Result<()> {
        for entry in &self.entries {
            serde_json::to_writer(&mut out, entry)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    pub fn to_jsonl(&self) -> String {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = self.write_jsonl(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Reads what [`AuditLog::write_jsonl`] wrote.
    pub fn from_jsonl(text: &str) -> Result<Self, serde_json::Error> {
        let entries = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<Vec<AuditEntry>, _>>()?;
        Ok(Self { entries })
    }
}
