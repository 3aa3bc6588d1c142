//! Typed configuration from flags and environment variables (flags win). `agent-server --help`
//! is generated from the doc comments below, so they are written for users.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use anyhow::Context as _;

use crate::embed::{EmbedConfig, EndpointConfig, InProcessConfig};
use crate::llm::prompt::DEFAULT_SYSTEM_PROMPT;
use crate::llm::upstream::UpstreamConfig;
use crate::llm::upstream_api::LlmApi;
use crate::mcp::McpOptions;
use crate::mcp::allow::{AllowList, BadEntry, LOOPBACK};
use crate::memory::MemoryConfig;
use crate::memory::embedded::EmbeddedOptions;
use crate::telemetry::{LogFormat, Metrics};

/// OpenAI-compatible chat server that gives a model long-term memory, with a control plane for
/// benchmarks (reset, inject, mock time).
///
/// With no flags it needs no other service: memory lives in an embedded database under
/// --data-dir and replies come from a deterministic builtin model. --llm-base-url answers with an
/// upstream OpenAI-compatible model instead.
///
/// Traces: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:4318 for Jaeger, :6006 for
/// Phoenix) to export spans over OTLP/HTTP; the standard OTEL_* variables apply. Metrics: GET
/// /metrics (Prometheus text format).
#[derive(Debug, Clone, Parser)]
#[command(name = "agent-server", version, about, long_about)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "AGENT_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Directory of the embedded memory database (created if missing).
    #[arg(long, env = "AGENT_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// `off` stores nothing and recalls nothing: the no-memory baseline for benchmarks.
    #[arg(long, env = "AGENT_MEMORY", value_enum, default_value_t = MemorySwitch::On)]
    pub memory: MemorySwitch,

    /// Require `Authorization: Bearer <KEY>` on /v1/*.
    #[arg(long, env = "AGENT_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Require `Authorization: Bearer <TOKEN>` (or `X-Admin-Token: <TOKEN>`) on /control/*.
    /// Without it the control plane is open to whoever can reach --addr.
    #[arg(long, env = "AGENT_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Refuse any /v1 request without X-Session-Id (400), as earlier versions did. Without it, a
    /// request without the header belongs to its conversation's or previous response's session,
    /// or a new one (a storing Responses request), or is answered without memory.
    #[arg(long, env = "AGENT_REQUIRE_SESSION")]
    pub require_session: bool,

    /// Let the OpenAI `user` (or `safety_identifier`) field name the session of a request without
    /// X-Session-Id. The session is derived by hashing the value with --api-key, so it cannot
    /// collide with an X-Session-Id nor be reached under another key. Off by default: many
    /// harnesses send one fixed `user` for every sample.
    #[arg(long, env = "AGENT_SESSION_FROM_USER")]
    pub session_from_user: bool,

    /// Refuse requests that carry X-Mock-Time (403) instead of moving the clock. For production.
    #[arg(long, env = "AGENT_DENY_MOCK_TIME")]
    pub deny_mock_time: bool,

    /// Largest accepted request body, in bytes; larger bodies get 413 (on /a2a: a JSON-RPC
    /// error, -32600).
    #[arg(long, env = "AGENT_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// The base URL clients reach this server at (e.g. https://agent.example.com behind a proxy):
    /// the A2A agent card names <URL>/a2a as the agent's endpoint. Default: the scheme and host
    /// the card was asked for with (the Host header, or Forwarded / X-Forwarded-Host and
    /// X-Forwarded-Proto).
    #[arg(long, env = "AGENT_PUBLIC_URL", value_parser = public_url)]
    pub public_url: Option<String>,

    /// How long a turn stays in working memory, on the session clock (e.g. 30m, 6h, 2d).
    #[arg(long, env = "AGENT_WORKING_TTL", default_value = "6h", value_parser = humantime::parse_duration)]
    pub working_ttl: Duration,

    /// How many recent turns working memory keeps per session.
    #[arg(long, env = "AGENT_WORKING_CAPACITY", default_value_t = 64)]
    pub working_capacity: usize,

    /// Age at which a long-term fact's recall weight has halved (e.g. 30d).
    #[arg(long, env = "AGENT_RECENCY_HALF_LIFE", default_value = "30d", value_parser = humantime::parse_duration)]
    pub recency_half_life: Duration,

    /// How many memory items (over all sessions) the recall cache keeps in the process; least
    /// recently used sessions are evicted beyond it and read again when next used. Embedded
    /// store: facts and working items, about 0.8 KB each, and the episodes of sessions whose
    /// turns read them (an upstream model's). Redis + Postgres: the working items of
    /// sessions that did not change since this server last read or wrote them; 0 turns it off.
    #[arg(long, env = "AGENT_MEMORY_CACHE_ITEMS", default_value_t = EmbeddedOptions::default().cache_items)]
    pub memory_cache_items: usize,

    /// How many long-term facts are recalled per turn (and as many episodes).
    #[arg(long, env = "AGENT_RECALL_LIMIT", default_value_t = 8)]
    pub recall_limit: usize,

    /// Keep every turn (user and assistant) whole in long-term memory as an episode, and recall
    /// episodes beside facts: what answers "when did I ...?" weeks later. `false`: facts only.
    #[arg(long, env = "AGENT_EPISODES", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub episodes: bool,

    /// Model id reported by /v1/models and in completions.
    #[arg(long, env = "AGENT_MODEL_NAME", default_value = "agentwall-builtin")]
    pub model_name: String,

    /// Redis URL for working memory (with --database-url: the redis+postgres backend).
    #[arg(long, env = "REDIS_URL", requires = "database_url")]
    pub redis_url: Option<String>,

    /// Postgres URL for long-term memory (with --redis-url: the redis+postgres backend).
    #[arg(long, env = "DATABASE_URL", requires = "redis_url")]
    pub database_url: Option<String>,

    /// Longest wait for Redis or Postgres before a request fails with 503.
    #[arg(long, env = "AGENT_BACKEND_TIMEOUT", default_value = "2s", value_parser = humantime::parse_duration)]
    pub backend_timeout: Duration,

    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "AGENT_WORKERS")]
    pub workers: Option<usize>,

    /// Log format on stderr.
    #[arg(long, env = "AGENT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Answer with an upstream OpenAI-compatible model instead of the builtin one: its base URL up
    /// to the API version, e.g. http://127.0.0.1:4000/v1 (requests go to <URL>/chat/completions).
    #[arg(long, env = "LLM_BASE_URL", help_heading = "Upstream model")]
    pub llm_base_url: Option<String>,

    /// API key for the upstream model, sent as `Authorization: Bearer <KEY>`.
    #[arg(
        long,
        env = "LLM_API_KEY",
        hide_env_values = true,
        help_heading = "Upstream model"
    )]
    pub llm_api_key: Option<String>,

    /// Model id to ask the upstream for (default: the `model` of each client request).
    #[arg(long, env = "LLM_MODEL", help_heading = "Upstream model")]
    pub llm_model: Option<String>,

    /// The API Responses turns take upstream: the Responses API when the upstream serves it (auto:
    /// asked once, at the first Responses turn), or Chat Completions (the turn translated). Chat
    /// Completions turns always go as Chat Completions.
    #[arg(long, env = "LLM_API", value_enum, default_value_t = LlmApi::Auto, help_heading = "Upstream model")]
    pub llm_api: LlmApi,

    /// Longest wait for the upstream's answer (for a stream: for its first byte, and between two
    /// chunks); past it the client gets 504 (e.g. 30s, 2m).
    #[arg(long, env = "LLM_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration, help_heading = "Upstream model")]
    pub llm_timeout: Duration,

    /// File whose text opens every upstream prompt (default: a short memory-aware assistant prompt).
    #[arg(long, env = "LLM_SYSTEM_PROMPT_FILE", help_heading = "Upstream model")]
    pub system_prompt_file: Option<PathBuf>,

    /// Put message text on trace spans (gen_ai.input.messages, gen_ai.output.messages). Off by
    /// default: spans carry the session id and token counts, never what was said.
    #[arg(long, env = "AGENT_TRACE_CONTENT")]
    pub trace_content: bool,

    /// Embed in process with the sentence-transformers model in this directory (e.g.
    /// all-MiniLM-L6-v2: config.json, tokenizer.json, model.safetensors, 1_Pooling/). Without it
    /// or --embeddings-base-url, recall is lexical only.
    #[arg(
        long,
        env = "EMBEDDINGS_MODEL_DIR",
        conflicts_with = "embeddings_base_url",
        help_heading = "Embeddings"
    )]
    pub embeddings_model_dir: Option<PathBuf>,

    /// Embed with an OpenAI-compatible embeddings endpoint: its base URL up to the API version,
    /// e.g. http://127.0.0.1:8081/v1 (requests go to <URL>/embeddings). Needs --embeddings-model.
    #[arg(long, env = "EMBEDDINGS_BASE_URL", help_heading = "Embeddings")]
    pub embeddings_base_url: Option<String>,

    /// API key for the embeddings endpoint, sent as `Authorization: Bearer <KEY>`.
    #[arg(
        long,
        env = "EMBEDDINGS_API_KEY",
        hide_env_values = true,
        help_heading = "Embeddings"
    )]
    pub embeddings_api_key: Option<String>,

    /// Embedding model id: asked of the endpoint, and stored with every vector so that vectors of
    /// different models are never compared (in process, default: the model directory's name).
    #[arg(long, env = "EMBEDDINGS_MODEL", help_heading = "Embeddings")]
    pub embeddings_model: Option<String>,

    /// Longest wait for the embeddings endpoint's answer (e.g. 2s, 30s); past it the texts are
    /// not embedded and recall stays lexical for them.
    #[arg(long, env = "EMBEDDINGS_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Embeddings")]
    pub embeddings_timeout: Duration,

    /// Most texts per inference batch (in process) or per request (endpoint); concurrent callers'
    /// texts share batches up to it.
    #[arg(long, env = "EMBEDDINGS_BATCH_SIZE", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096), help_heading = "Embeddings")]
    pub embeddings_batch_size: u32,

    /// The MCP servers a Responses request's `mcp` tools may name, comma-separated: URL prefixes
    /// (http://judge:7600/mcp/), host names (judge, *.example.com, judge:7600), addresses and
    /// networks (10.1.2.3, 10.0.0.0/8, ::1), or * for any. Checked before connecting, without
    /// resolving names; a request naming another server gets 400. Empty: none.
    #[arg(long, env = "AGENT_MCP_ALLOWED_SERVERS", default_value = LOOPBACK, value_parser = allowed_servers, help_heading = "MCP tools")]
    pub mcp_allowed_servers: String,

    /// Longest wait for an MCP server: to connect and list its tools, and for each tool call
    /// (e.g. 2s, 30s). Past it the server's listing or the call fails, and the model and the
    /// client are told.
    #[arg(long, env = "AGENT_MCP_CALL_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "MCP tools")]
    pub mcp_call_timeout: Duration,

    /// Most MCP tool calls in one turn. Calls beyond it are not run, and the model is asked once
    /// more to answer without tools.
    #[arg(long, env = "AGENT_MCP_MAX_CALLS", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = "MCP tools")]
    pub mcp_max_calls: u32,
}

/// `--public-url`, checked when the flags are read: an absolute http(s) URL, kept without its
/// trailing slash.
fn public_url(text: &str) -> Result<String, String> {
    let url = text.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("{text:?} is not an http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("{text:?} names no host"));
    }
    if rest.contains(['?', '#', ' ']) {
        return Err(format!(
            "{text:?} has a query, a fragment or a space; give the base URL only"
        ));
    }
    Ok(url.to_owned())
}

/// `--mcp-allowed-servers`, checked when the flags are read.
fn allowed_servers(text: &str) -> Result<String, BadEntry> {
    AllowList::parse(text).map(|_| text.to_owned())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MemorySwitch {
    On,
    Off,
}

impl Config {
    /// Defaults for tests: every flag at its default, data in `data_dir`, port 0.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn for_tests(data_dir: impl Into<PathBuf>) -> Self {
        let mut config = Self::parse_from(["agent-server", "--addr", "127.0.0.1:0"]);
        config.data_dir = data_dir.into();
        config
    }

    pub fn memory_config(&self) -> MemoryConfig {
        MemoryConfig {
            working_ttl: self.working_ttl,
            working_capacity: self.working_capacity.max(1),
            recency_half_life: self.recency_half_life,
        }
    }

    /// Settings of the embedded store, which records into `metrics`.
    pub fn embedded_options(&self, metrics: Arc<Metrics>) -> EmbeddedOptions {
        EmbeddedOptions {
            cache_items: self.memory_cache_items,
            metrics,
        }
    }

    pub fn memory_enabled(&self) -> bool {
        self.memory == MemorySwitch::On
    }

    /// Where embeddings come from: in process (--embeddings-model-dir), an endpoint
    /// (--embeddings-base-url), or nowhere (lexical recall only). Clap refuses both at once.
    pub fn embeddings(&self) -> anyhow::Result<Option<EmbedConfig>> {
        let model = self
            .embeddings_model
            .clone()
            .filter(|m| !m.trim().is_empty());
        let batch_size = self.embeddings_batch_size as usize;
        if let Some(model_dir) = &self.embeddings_model_dir {
            return Ok(Some(EmbedConfig::InProcess(InProcessConfig {
                model_dir: model_dir.clone(),
                model,
                batch_size,
            })));
        }
        let Some(base_url) = self
            .embeddings_base_url
            .clone()
            .filter(|u| !u.trim().is_empty())
        else {
            return Ok(None);
        };
        let model = model.context(
            "--embeddings-base-url needs --embeddings-model: the model id to ask the endpoint for",
        )?;
        Ok(Some(EmbedConfig::Endpoint(EndpointConfig {
            base_url,
            api_key: self.embeddings_api_key.clone().filter(|k| !k.is_empty()),
            model,
            timeout: self.embeddings_timeout,
            batch_size,
        })))
    }

    /// How requests may use remote MCP tools.
    pub(crate) fn mcp(&self) -> Result<McpOptions, BadEntry> {
        Ok(McpOptions {
            allowed: AllowList::parse(&self.mcp_allowed_servers)?,
            call_timeout: self.mcp_call_timeout,
            max_calls: self.mcp_max_calls as usize,
        })
    }

    /// The upstream model's configuration, when --llm-base-url is set. Reads the system prompt file.
    pub fn upstream(&self) -> anyhow::Result<Option<UpstreamConfig>> {
        let Some(base_url) = self.llm_base_url.clone().filter(|u| !u.trim().is_empty()) else {
            return Ok(None);
        };
        let system_prompt = match &self.system_prompt_file {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --system-prompt-file {}", path.display()))?,
            None => DEFAULT_SYSTEM_PROMPT.to_owned(),
        };
        Ok(Some(UpstreamConfig {
            base_url,
            api_key: self.llm_api_key.clone().filter(|k| !k.is_empty()),
            model: self.llm_model.clone().filter(|m| !m.is_empty()),
            timeout: self.llm_timeout,
            system_prompt,
            trace_content: self.trace_content,
            api: self.llm_api,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn defaults_need_no_service() {
        let c = Config::parse_from(["agent-server"]);
        assert_eq!(c.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(c.data_dir, PathBuf::from("./data"));
        assert!(c.memory_enabled());
        assert!(c.redis_url.is_none() && c.database_url.is_none());
        assert_eq!(c.working_ttl, Duration::from_secs(6 * 3600));
    }

    #[test]
    fn the_session_cache_budget_reaches_the_embedded_store() {
        let options = |c: &Config| c.embedded_options(Arc::default()).cache_items;
        let default = Config::parse_from(["agent-server"]);
        assert_eq!(options(&default), EmbeddedOptions::default().cache_items);
        let c = Config::parse_from(["agent-server", "--memory-cache-items", "5000"]);
        assert_eq!(options(&c), 5000);
        assert!(Config::try_parse_from(["agent-server", "--memory-cache-items", "-1"]).is_err());
    }

    #[test]
    fn the_public_url_is_a_base_url_kept_without_its_trailing_slash() {
        let c = Config::parse_from(["agent-server", "--public-url", "https://agent.example.com/"]);
        assert_eq!(c.public_url.as_deref(), Some("https://agent.example.com"));
        let c = Config::parse_from(["agent-server", "--public-url", "http://10.0.0.2:8080/agent"]);
        assert_eq!(c.public_url.as_deref(), Some("http://10.0.0.2:8080/agent"));
        for bad in ["agent.example.com", "ftp://x", "https://", "http://h/?a=1"] {
            assert!(
                Config::try_parse_from(["agent-server", "--public-url", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(Config::parse_from(["agent-server"]).public_url.is_none());
    }

    #[test]
    fn durations_read_like_people_write_them() {
        let c = Config::parse_from(["agent-server", "--working-ttl", "90m", "--memory", "off"]);
        assert_eq!(c.working_ttl, Duration::from_secs(5400));
        assert!(!c.memory_enabled());
        assert!(Config::try_parse_from(["agent-server", "--working-ttl", "soon"]).is_err());
    }

    #[test]
    fn upstream_is_off_by_default_and_reads_its_prompt_file() {
        assert!(
            Config::parse_from(["agent-server"])
                .upstream()
                .unwrap()
                .is_none()
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("system.txt");
        std::fs::write(&file, "Be a pirate.").unwrap();
        let c = Config::parse_from([
            "agent-server",
            "--llm-base-url",
            "http://127.0.0.1:4000/v1",
            "--llm-model",
            "m",
            "--llm-timeout",
            "5s",
            "--system-prompt-file",
            file.to_str().unwrap(),
        ]);
        let up = c.upstream().unwrap().unwrap();
        assert_eq!(
            (up.model.as_deref(), up.timeout, up.system_prompt.as_str()),
            (Some("m"), Duration::from_secs(5), "Be a pirate.")
        );
        assert_eq!(up.api, LlmApi::Auto);
        let chat = Config::parse_from([
            "agent-server",
            "--llm-base-url",
            "http://x/v1",
            "--llm-api",
            "chat",
        ]);
        assert_eq!(chat.upstream().unwrap().unwrap().api, LlmApi::Chat);
        let missing = Config::parse_from([
            "agent-server",
            "--llm-base-url",
            "http://x/v1",
            "--system-prompt-file",
            "/nonexistent",
        ]);
        assert!(
            missing
                .upstream()
                .unwrap_err()
                .to_string()
                .contains("--system-prompt-file")
        );
    }

    #[test]
    fn embeddings_come_from_a_model_directory_or_an_endpoint_never_both() {
        assert!(
            Config::parse_from(["agent-server"])
                .embeddings()
                .unwrap()
                .is_none()
        );
        let local = Config::parse_from(["agent-server", "--embeddings-model-dir", "/models/x"]);
        match local.embeddings().unwrap() {
            Some(EmbedConfig::InProcess(c)) => {
                assert_eq!(
                    (c.model_dir.to_str(), c.model, c.batch_size),
                    (Some("/models/x"), None, 32)
                );
            }
            other => panic!("expected in process, got {other:?}"),
        }
        let endpoint = Config::parse_from([
            "agent-server",
            "--embeddings-base-url",
            "http://127.0.0.1:8081/v1",
            "--embeddings-model",
            "text-embedding-3-small",
            "--embeddings-timeout",
            "3s",
            "--embeddings-batch-size",
            "100",
        ]);
        match endpoint.embeddings().unwrap() {
            Some(EmbedConfig::Endpoint(c)) => assert_eq!(
                (c.model.as_str(), c.timeout, c.batch_size, c.api_key),
                ("text-embedding-3-small", Duration::from_secs(3), 100, None)
            ),
            other => panic!("expected an endpoint, got {other:?}"),
        }
        let err = Config::try_parse_from([
            "agent-server",
            "--embeddings-model-dir",
            "/models/x",
            "--embeddings-base-url",
            "http://x/v1",
        ])
        .unwrap_err();
        assert!(err.to_string().contains("cannot be used with"), "{err}");
        let no_model = Config::parse_from(["agent-server", "--embeddings-base-url", "http://x/v1"]);
        let err = no_model.embeddings().unwrap_err().to_string();
        assert!(err.contains("--embeddings-model"), "{err}");
        assert!(Config::try_parse_from(["agent-server", "--embeddings-batch-size", "0"]).is_err());
    }

    #[test]
    fn mcp_tools_reach_loopback_by_default_and_the_flags_are_checked() {
        let options = Config::parse_from(["agent-server"]).mcp().unwrap();
        assert_eq!(
            (options.call_timeout, options.max_calls),
            (Duration::from_secs(10), 16)
        );
        assert_eq!(options.allowed, AllowList::default());
        let c = Config::parse_from([
            "agent-server",
            "--mcp-allowed-servers",
            "http://judge:7600/mcp/, 10.0.0.0/8",
            "--mcp-call-timeout",
            "750ms",
            "--mcp-max-calls",
            "3",
        ]);
        let options = c.mcp().unwrap();
        assert_eq!(
            (options.call_timeout, options.max_calls),
            (Duration::from_millis(750), 3)
        );
        let judge = url::Url::parse("http://judge:7600/mcp/t1").unwrap();
        assert!(options.allowed.allows(&judge));
        let err = Config::try_parse_from(["agent-server", "--mcp-allowed-servers", "ftp://x/"])
            .unwrap_err();
        assert!(err.to_string().contains("ftp://x/"), "{err}");
        assert!(Config::try_parse_from(["agent-server", "--mcp-max-calls", "0"]).is_err());
    }

    #[test]
    fn redis_and_postgres_go_together() {
        let err = Config::try_parse_from(["agent-server", "--redis-url", "redis://x"]).unwrap_err();
        assert!(err.to_string().contains("--database-url"), "{err}");
    }

    #[test]
    fn help_names_every_env_variable() {
        let help = Config::command().render_long_help().to_string();
        for var in [
            "AGENT_ADDR",
            "AGENT_DATA_DIR",
            "AGENT_MEMORY",
            "AGENT_API_KEY",
            "AGENT_ADMIN_TOKEN",
            "AGENT_DENY_MOCK_TIME",
            "AGENT_MAX_BODY_BYTES",
            "REDIS_URL",
            "DATABASE_URL",
            "LLM_BASE_URL",
            "LLM_API_KEY",
            "LLM_MODEL",
            "LLM_API",
            "LLM_TIMEOUT",
            "LLM_SYSTEM_PROMPT_FILE",
            "AGENT_TRACE_CONTENT",
            "EMBEDDINGS_MODEL_DIR",
            "EMBEDDINGS_BASE_URL",
            "EMBEDDINGS_API_KEY",
            "EMBEDDINGS_MODEL",
            "EMBEDDINGS_TIMEOUT",
            "EMBEDDINGS_BATCH_SIZE",
            "AGENT_MCP_ALLOWED_SERVERS",
            "AGENT_MCP_CALL_TIMEOUT",
            "AGENT_MCP_MAX_CALLS",
        ] {
            assert!(help.contains(var), "--help does not mention {var}");
        }
    }
}
