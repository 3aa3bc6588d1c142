//! The configuration file of docs/contracts/agent-injection.md, and what the runner uses of it.
//!
//! ```yaml
//! simulation:
//!   name: "Agent Benchmark"
//!   agent_injection:
//!     endpoints:
//!       - {agent_id: maya, url: "http://127.0.0.1:9000/respond", api_key_env: MY_KEY,
//!          timeout_seconds: 30, privacy_tier: basic, protocol: agentworld}
//!       # or `api_key_secret: NAME`: a key of `judge serve --secrets-file` (judge serve only)
//!     circuit_breaker: {failure_threshold: 5, half_open_probe_interval_seconds: 30, success_threshold: 2}
//!     concurrency: {max_inflight_per_endpoint: 10, qps_cap: 100}
//!     fallback: {strategy: simulated_agent}      # or error_message, skip
//!     benchmark: {record: true, fixture_path: "./benchmarks/run-{timestamp}.json"}
//!     rate_limit: {max_retries: 3, base_backoff_ms: 1000}   # extension: the 429 backoff
//!   injection: {privacy_tier: basic, send_persona_details_externally: true, redact_pii_patterns: true}
//! ```
//!
//! `injection:` is accepted at the top level too, as the document shows it on its own.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::endpoint::{BreakerPolicy, RetryPolicy};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrivacyTier {
    /// `persona_ref` only (id, version, hash).
    Minimal,
    /// Plus name and traits.
    Basic,
    /// Plus background and the system prompt.
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The JSON request and response of docs/contracts/agent-injection.md, posted to `url` as is.
    Agentworld,
    /// OpenAI Chat Completions; `url` is the base URL, as for the target.
    Openai,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackStrategy {
    /// The judge's own simulator takes the turn.
    SimulatedAgent,
    /// The turn holds an error message; nothing is sent to the agent under test.
    ErrorMessage,
    /// The turn is left empty; nothing is sent to the agent under test.
    Skip,
}

impl FallbackStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackStrategy::SimulatedAgent => "simulated_agent",
            FallbackStrategy::ErrorMessage => "error_message",
            FallbackStrategy::Skip => "skip",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ConfigFile {
    pub simulation: SimulationSection,
    #[serde(default)]
    pub injection: Option<PrivacySection>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SimulationSection {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub agent_injection: Option<AgentInjection>,
    #[serde(default)]
    pub injection: Option<PrivacySection>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInjection {
    #[serde(default)]
    pub endpoints: Vec<EndpointConfig>,
    #[serde(default)]
    pub circuit_breaker: BreakerSection,
    #[serde(default)]
    pub concurrency: ConcurrencySection,
    #[serde(default)]
    pub fallback: FallbackSection,
    #[serde(default)]
    pub benchmark: BenchmarkSection,
    #[serde(default)]
    pub rate_limit: RateLimitSection,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    pub agent_id: String,
    pub url: String,
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Name of a key in `judge serve --secrets-file` (exclusive with `api_key_env`).
    #[serde(default)]
    pub api_key_secret: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    #[serde(default)]
    pub privacy_tier: Option<PrivacyTier>,
    #[serde(default = "default_protocol")]
    pub protocol: Protocol,
    #[serde(default)]
    pub model: Option<String>,
}

/// Where an API key comes from: a reference, never the key itself, so configs holding one can
/// be shown, stored and indexed as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRef {
    /// An environment variable of the process that calls the endpoint.
    Env(String),
    /// A named key of `judge serve --secrets-file`.
    Secret(String),
}

impl KeyRef {
    /// The reference given as the two optional fields of a config; both set is a mistake
    /// (which one would win is not obvious to whoever reads the config).
    pub fn from_fields(env: Option<&str>, secret: Option<&str>) -> Result<Option<Self>, String> {
        match (env, secret) {
            (Some(_), Some(_)) => {
                Err("set exactly one of `api_key_env` and `api_key_secret`".to_owned())
            }
            (Some(var), None) => Ok(Some(Self::Env(var.to_owned()))),
            (None, Some(name)) => Ok(Some(Self::Secret(name.to_owned()))),
            (None, None) => Ok(None),
        }
    }
}

impl EndpointConfig {
    pub fn key_ref(&self) -> Result<Option<KeyRef>, String> {
        KeyRef::from_fields(self.api_key_env.as_deref(), self.api_key_secret.as_deref())
    }
}

fn default_timeout() -> f64 {
    30.0
}

fn default_protocol() -> Protocol {
    Protocol::Agentworld
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerSection {
    pub failure_threshold: u32,
    pub half_open_probe_interval_seconds: f64,
    pub success_threshold: u32,
}

impl Default for BreakerSection {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            half_open_probe_interval_seconds: 30.0,
            success_threshold: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConcurrencySection {
    pub max_inflight_per_endpoint: usize,
    pub qps_cap: u32,
}

impl Default for ConcurrencySection {
    fn default() -> Self {
        Self {
            max_inflight_per_endpoint: 10,
            qps_cap: 100,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackSection {
    pub strategy: FallbackStrategy,
}

impl Default for FallbackSection {
    fn default() -> Self {
        Self {
            strategy: FallbackStrategy::SimulatedAgent,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BenchmarkSection {
    pub record: bool,
    pub fixture_path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitSection {
    pub max_retries: u32,
    pub base_backoff_ms: u64,
    pub max_backoff_ms: u64,
}

impl Default for RateLimitSection {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_backoff_ms: 1_000,
            max_backoff_ms: 60_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrivacySection {
    pub privacy_tier: PrivacyTier,
    pub send_persona_details_externally: bool,
    pub redact_pii_patterns: bool,
}

impl Default for PrivacySection {
    fn default() -> Self {
        Self {
            privacy_tier: PrivacyTier::Basic,
            send_persona_details_externally: true,
            redact_pii_patterns: true,
        }
    }
}

/// One injected endpoint, resolved (the API key read from its environment variable).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointSpec {
    /// The persona id whose slot it plays.
    pub agent_id: String,
    pub url: String,
    #[serde(skip)]
    pub api_key: Option<String>,
    pub protocol: Protocol,
    pub model: Option<String>,
    pub timeout_ms: u64,
    pub privacy_tier: PrivacyTier,
    pub redact_pii: bool,
    pub breaker: BreakerPolicy,
    pub retry: RetryPolicy,
    pub max_inflight: usize,
    pub qps_cap: u32,
}

/// Everything about injection a simulation run needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InjectionPlan {
    pub endpoints: Vec<EndpointSpec>,
    pub fallback: FallbackStrategy,
    pub record: bool,
    pub fixture_path: Option<String>,
}

impl InjectionPlan {
    pub fn none() -> Self {
        Self {
            endpoints: Vec::new(),
            fallback: FallbackStrategy::SimulatedAgent,
            record: false,
            fixture_path: None,
        }
    }

    pub fn endpoint_for(&self, persona_id: &str) -> Option<&EndpointSpec> {
        self.endpoints.iter().find(|e| e.agent_id == persona_id)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Yaml {
        path: String,
        source: serde_norway::Error,
    },
    #[error("endpoint `{agent_id}`: {reason}")]
    Invalid { agent_id: String, reason: String },
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&shown, &text)
    }

    pub fn parse(origin: &str, text: &str) -> Result<Self, ConfigError> {
        serde_norway::from_str(text).map_err(|source| ConfigError::Yaml {
            path: origin.to_owned(),
            source,
        })
    }

    /// Resolves the file into a plan; `env` looks up API keys (the process environment in the
    /// CLI). `api_key_secret` is refused: only `judge serve` has a secrets file.
    pub fn plan(&self, env: impl Fn(&str) -> Option<String>) -> Result<InjectionPlan, ConfigError> {
        self.plan_with(|key| match key {
            KeyRef::Env(var) => env(var).ok_or_else(|| format!("environment variable {var} is not set")),
            KeyRef::Secret(name) => Err(format!(
                "`api_key_secret: {name}` is read from `judge serve --secrets-file`; here name an environment variable in `api_key_env`"
            )),
        })
    }

    /// Resolves the file into a plan; `key` reads the value of a key reference (an error is
    /// why it cannot, and must not hold any value).
    pub fn plan_with(
        &self,
        key: impl Fn(&KeyRef) -> Result<String, String>,
    ) -> Result<InjectionPlan, ConfigError> {
        let privacy = self
            .simulation
            .injection
            .or(self.injection)
            .unwrap_or_default();
        let Some(injection) = &self.simulation.agent_injection else {
            return Ok(InjectionPlan::none());
        };
        let breaker = BreakerPolicy {
            failure_threshold: injection.circuit_breaker.failure_threshold,
            open_ms: seconds_to_ms(injection.circuit_breaker.half_open_probe_interval_seconds),
            close_after: injection.circuit_breaker.success_threshold.max(1),
        };
        let retry = RetryPolicy {
            max_retries: injection.rate_limit.max_retries,
            base_ms: injection.rate_limit.base_backoff_ms,
            max_wait_ms: injection.rate_limit.max_backoff_ms,
        };
        let mut endpoints = Vec::new();
        for e in &injection.endpoints {
            let invalid = |reason: &str| ConfigError::Invalid {
                agent_id: e.agent_id.clone(),
                reason: reason.to_owned(),
            };
            if !(e.timeout_seconds > 0.0 && e.timeout_seconds.is_finite()) {
                return Err(invalid("timeout_seconds must be positive"));
            }
            if !(e.url.starts_with("http://") || e.url.starts_with("https://")) {
                return Err(invalid("url must be http:// or https://"));
            }
            let api_key = match e.key_ref().map_err(|r| invalid(&r))? {
                Some(reference) => Some(key(&reference).map_err(|r| invalid(&r))?),
                None => None,
            };
            // Not sending persona details externally caps the tier at minimal.
            let tier = if privacy.send_persona_details_externally {
                e.privacy_tier.unwrap_or(privacy.privacy_tier)
            } else {
                PrivacyTier::Minimal
            };
            endpoints.push(EndpointSpec {
                agent_id: e.agent_id.clone(),
                url: e.url.clone(),
                api_key,
                protocol: e.protocol,
                model: e.model.clone(),
                timeout_ms: seconds_to_ms(e.timeout_seconds),
                privacy_tier: tier,
                redact_pii: privacy.redact_pii_patterns,
                breaker,
                retry,
                max_inflight: injection.concurrency.max_inflight_per_endpoint.max(1),
                qps_cap: injection.concurrency.qps_cap.max(1),
            });
        }
        Ok(InjectionPlan {
            endpoints,
            fallback: injection.fallback.strategy,
            record: injection.benchmark.record,
            fixture_path: injection.benchmark.fixture_path.clone(),
        })
    }
}

fn seconds_to_ms(seconds: f64) -> u64 {
    (seconds.max(0.0) * 1000.0).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC_000: &str = r#"
simulation:
  name: "Agent Benchmark"
  agent_injection:
    endpoints:
      - agent_id: "lisa"
        url: "https://my-agent.example.com/respond"
        api_key_env: "MY_AGENT_API_KEY"
        timeout_seconds: 30
        privacy_tier: "basic"
    circuit_breaker:
      failure_threshold: 5
      half_open_probe_interval_seconds: 30
      success_threshold: 2
    concurrency:
      max_inflight_per_endpoint: 10
      qps_cap: 100
    fallback:
      strategy: "simulated_agent"  # or "error_message" or "skip"
    benchmark:
      record: true
      fixture_path: "./benchmarks/run-{timestamp}.json"
injection:
  privacy_tier: "full"
  send_persona_details_externally: true
  redact_pii_patterns: true
"#;

    #[test]
    fn document_000_example_is_accepted_verbatim() {
        let file = ConfigFile::parse("doc", DOC_000).unwrap();
        let plan = file
            .plan(|v| (v == "MY_AGENT_API_KEY").then(|| "secret".to_owned()))
            .unwrap();
        let e = &plan.endpoints[0];
        assert_eq!(e.agent_id, "lisa");
        assert_eq!(e.api_key.as_deref(), Some("secret"));
        assert_eq!(e.timeout_ms, 30_000);
        // The endpoint's own tier wins over the file-wide default.
        assert_eq!(e.privacy_tier, PrivacyTier::Basic);
        assert_eq!(e.protocol, Protocol::Agentworld);
        assert_eq!(e.breaker, BreakerPolicy::default());
        assert_eq!((e.max_inflight, e.qps_cap), (10, 100));
        assert!(plan.record);
        assert_eq!(plan.fallback, FallbackStrategy::SimulatedAgent);
        // The key never reaches anything serialised.
        assert!(!serde_json::to_string(&plan).unwrap().contains("secret"));
    }

    #[test]
    fn missing_key_and_no_external_details_are_handled() {
        let file = ConfigFile::parse("doc", DOC_000).unwrap();
        assert!(file.plan(|_| None).is_err());
        let text = DOC_000.replace(
            "send_persona_details_externally: true",
            "send_persona_details_externally: false",
        );
        let plan = ConfigFile::parse("doc", &text)
            .unwrap()
            .plan(|_| Some("k".into()))
            .unwrap();
        assert_eq!(plan.endpoints[0].privacy_tier, PrivacyTier::Minimal);
        let typo = DOC_000.replace("qps_cap", "qps_capp");
        assert!(ConfigFile::parse("doc", &typo).is_err());
    }

    #[test]
    fn a_secret_reference_is_resolved_by_the_caller_and_refused_by_plan() {
        let text = DOC_000.replace(
            "api_key_env: \"MY_AGENT_API_KEY\"",
            "api_key_secret: \"lisa-key\"",
        );
        let file = ConfigFile::parse("doc", &text).unwrap();
        // `judge sim` has no secrets file: the message says where such keys are read.
        let err = file.plan(|_| Some("env".into())).unwrap_err().to_string();
        assert!(
            err.contains("--secrets-file") && err.contains("lisa-key"),
            "{err}"
        );
        let plan = file
            .plan_with(|k| match k {
                KeyRef::Secret(name) if name == "lisa-key" => Ok("from-file".into()),
                other => Err(format!("unexpected {other:?}")),
            })
            .unwrap();
        assert_eq!(plan.endpoints[0].api_key.as_deref(), Some("from-file"));
        let both = DOC_000.replace(
            "api_key_env: \"MY_AGENT_API_KEY\"",
            "api_key_env: \"MY_AGENT_API_KEY\"\n        api_key_secret: \"lisa-key\"",
        );
        let err = ConfigFile::parse("doc", &both)
            .unwrap()
            .plan(|_| Some("k".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one"), "{err}");
    }
}
