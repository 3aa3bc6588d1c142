//! The flags every command that talks to a target shares (`--endpoint`, keys, resilience).

use anyhow::bail;
use clap::Args;
use judge_client::endpoint::{BreakerPolicy, Credentials, RetryPolicy, TargetSettings};

#[derive(Args)]
pub struct TargetArgs {
    /// Base URL of the target, with or without /v1 (e.g. http://127.0.0.1:8080).
    #[arg(long, env = "JUDGE_ENDPOINT")]
    pub endpoint: Option<String>,
    /// Bearer key for /v1.
    #[arg(long, env = "JUDGE_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Bearer token for /control (defaults to --api-key).
    #[arg(long, env = "JUDGE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Model name to send (default: the first one GET /v1/models lists).
    #[arg(long)]
    pub model: Option<String>,
    /// Per-request timeout, in seconds.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Retries after 429 Too Many Requests (or a refused connection).
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// First backoff wait in milliseconds, doubled per retry (Retry-After wins when sent).
    #[arg(long, default_value_t = 1000)]
    pub backoff_ms: u64,
    /// Longest single backoff wait in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    pub max_backoff_ms: u64,
    /// Consecutive failures that open the circuit breaker (0 disables it).
    #[arg(long, default_value_t = 5)]
    pub breaker_threshold: u32,
    /// Milliseconds the circuit stays open before one probe request goes through.
    #[arg(long, default_value_t = 30_000)]
    pub breaker_open_ms: u64,
    /// Most requests started per second.
    #[arg(long, default_value_t = 100)]
    pub max_rps: u32,
    /// `max_tokens` sent with every chat request (default: none, the target decides; cap it for
    /// a local model that would otherwise write until its context is full).
    #[arg(long)]
    pub max_tokens: Option<u32>,
}

impl TargetArgs {
    pub fn settings(&self) -> anyhow::Result<TargetSettings> {
        let Some(endpoint) = self.endpoint.clone() else {
            bail!("--endpoint is required (for example --endpoint http://127.0.0.1:8080)");
        };
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            bail!("--timeout must be a positive number of seconds");
        }
        Ok(TargetSettings {
            model: self.model.clone(),
            timeout_ms: (self.timeout * 1000.0).round() as u64,
            retry: RetryPolicy {
                max_retries: self.retries,
                base_ms: self.backoff_ms,
                max_wait_ms: self.max_backoff_ms,
            },
            breaker: BreakerPolicy {
                failure_threshold: self.breaker_threshold,
                open_ms: self.breaker_open_ms,
                ..BreakerPolicy::default()
            },
            max_rps: self.max_rps.max(1),
            max_tokens: self.max_tokens,
            ..TargetSettings::new(endpoint)
        })
    }

    pub fn credentials(&self) -> Credentials {
        Credentials {
            api_key: self.api_key.clone(),
            admin_token: self.admin_token.clone(),
        }
    }
}
