//! agent-server's modules import one another one way only: in every folder of `src/` (the crate
//! root included), no child module names another that names it back, directly or around a loop.
//! The layers this holds, lowest first: `task` and `telemetry`; `memory`; `text` (what a user's
//! words say, which both the agent and the builtin model read); `outbound` (HTTP to other
//! services); `embed`, `llm` and `mcp` (remote MCP tools); `agent`; `http`, `error` and `config`;
//! `startup`.

use std::path::Path;

use testkit::modules::ModuleGraph;

#[test]
fn no_folder_of_agent_server_has_modules_that_import_one_another_in_a_loop() {
    let graph = ModuleGraph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let root = graph.among_children(&[]);
    // The graph is read: the agent names memory, and the HTTP layer names the agent.
    assert!(
        root["agent"].contains("memory") && root["http"].contains("agent"),
        "{root:#?}"
    );
    let circles: Vec<_> = graph
        .folders()
        .into_iter()
        .filter_map(|folder| {
            graph
                .circle_among_children(&folder)
                .map(|circle| format!("in crate::{}: {}", folder.join("::"), circle.join(" -> ")))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
