//! A simulation's configuration as `POST /simulations` takes it: the YAML of docs/contracts/agent-injection.md (or the
//! same shape in JSON) — `simulation:` with its `agent_injection:` and `injection:` sections —
//! plus `target:` (the agent under test) and `run:` (panel, rounds, seed). Validated when
//! created, so a simulation that exists can start. Keys are only ever references — the name of
//! an environment variable (`api_key_env`) or of a key in `--secrets-file` (`api_key_secret`) —
//! checked when created or injected and read when an endpoint is about to be called.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;
use super::secrets::{self, Secrets};
use crate::endpoint::{Credentials, RetryPolicy, TargetSettings};
use crate::suites::sim::injection::config::{
    AgentInjection, ConfigFile, EndpointConfig, KeyRef, PrivacySection, SimulationSection,
};
use crate::suites::sim::injection::{FallbackStrategy, PrivacyTier, Protocol};
use crate::suites::sim::persona::{self, Persona};
use crate::suites::sim::{SimRunConfig, SimSettings, SimulatorSpec};

/// Every conversation's virtual start, as `judge sim` uses: the same config gives the same run.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Base URL of the agent under test, with or without /v1.
    pub endpoint: String,
    #[serde(default)]
    pub model: Option<String>,
    /// Name of the environment variable holding the bearer key (never the key).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Or: name of the key in `judge serve --secrets-file` (exactly one of the two).
    #[serde(default)]
    pub api_key_secret: Option<String>,
    #[serde(default = "default_target_timeout")]
    pub timeout_seconds: f64,
}

fn default_target_timeout() -> f64 {
    60.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    pub seed: u64,
    pub rounds: usize,
    pub trials: u32,
    /// Persona ids of the shipped panel (empty: all of them).
    pub personas: Vec<String>,
    pub single_turn: bool,
    pub concurrency: usize,
    pub stop_token: String,
    pub max_reply_chars: usize,
}

impl Default for RunSpec {
    fn default() -> Self {
        Self {
            seed: 1,
            rounds: 15,
            trials: 1,
            personas: Vec::new(),
            single_turn: false,
            concurrency: 4,
            stop_token: "[END]".to_owned(),
            max_reply_chars: 2000,
        }
    }
}

/// An OpenAI-compatible model the judge itself talks to: the LLM user simulator
/// (`user_simulator:`) or the LLM judge (`judge:`), as `judge sim --user-endpoint` and
/// `--judge-endpoint` take them on the command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmSpec {
    /// Base URL, with or without /v1.
    pub endpoint: String,
    /// Default: the first model the endpoint lists.
    #[serde(default)]
    pub model: Option<String>,
    /// Name of the environment variable holding the bearer key (never the key).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Or: name of the key in `judge serve --secrets-file` (exactly one of the two).
    #[serde(default)]
    pub api_key_secret: Option<String>,
    #[serde(default = "default_target_timeout")]
    pub timeout_seconds: f64,
}

/// The body of `POST /simulations`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    simulation: SimulationSection,
    #[serde(default)]
    injection: Option<PrivacySection>,
    target: TargetSpec,
    #[serde(default)]
    run: RunSpec,
    /// The persona's turns come from this model instead of the scripted simulator.
    #[serde(default)]
    user_simulator: Option<LlmSpec>,
    /// Rubric scores of every conversation from this model.
    #[serde(default)]
    judge: Option<LlmSpec>,
}

/// `POST /simulations/{id}/inject-agent`: the body of docs/contracts/agent-injection.md, with the key as a reference.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectBody {
    /// The persona id whose turns the endpoint plays.
    pub agent_id: String,
    pub endpoint_url: String,
    /// Name of the environment variable holding the endpoint's key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Or: name of the key in `judge serve --secrets-file` (exactly one of the two).
    #[serde(default)]
    pub api_key_secret: Option<String>,
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub privacy_tier: Option<PrivacyTier>,
    /// `true`: the judge's simulator takes a failed turn; `false`: the turn is an error message.
    /// Applies to every endpoint of the simulation (the fallback strategy is per simulation).
    #[serde(default)]
    pub fallback_to_simulated: Option<bool>,
    /// `agentworld` (default) or `openai`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub protocol: Option<Protocol>,
    #[serde(default)]
    pub model: Option<String>,
}

/// A validated simulation configuration.
#[derive(Debug, Clone)]
pub struct SimulationConfig {
    pub name: String,
    /// The document as received (it holds no secret: keys are references).
    pub document: Value,
    pub file: ConfigFile,
    pub target: TargetSpec,
    pub run: RunSpec,
    pub personas: Vec<Persona>,
    pub user_simulator: Option<LlmSpec>,
    pub judge: Option<LlmSpec>,
}

/// Refuses any `api_key` field, wherever it is: judge serve never takes a secret's value.
fn refuse_inline_keys(value: &Value, path: &str) -> Result<(), ApiError> {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if key == "api_key" {
                    return Err(ApiError::bad(format!(
                        "`{here}`: judge serve never takes an API key's value; name the environment variable that holds it in `api_key_env`, or its name in the secrets file in `api_key_secret`"
                    )));
                }
                refuse_inline_keys(inner, &here)?;
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|v| refuse_inline_keys(v, path)),
        _ => Ok(()),
    }
}

fn check_env_name(name: &str) -> Result<(), ApiError> {
    let fine = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if fine {
        Ok(())
    } else {
        Err(ApiError::bad(format!(
            "`{name}` is not an environment variable name (letters, digits and `_`)"
        )))
    }
}

fn check_url(field: &str, url: &str) -> Result<(), ApiError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(ApiError::bad(format!(
            "`{field}` must be an http:// or https:// URL, got `{url}`"
        )))
    }
}

/// What every endpoint of a simulation config has, whichever role it plays (the target, the
/// user simulator, the judge): one check for all of them.
struct EndpointFields<'a> {
    endpoint: &'a str,
    timeout_seconds: f64,
    api_key_env: Option<&'a str>,
    api_key_secret: Option<&'a str>,
}

impl<'a> From<&'a TargetSpec> for EndpointFields<'a> {
    fn from(spec: &'a TargetSpec) -> Self {
        Self {
            endpoint: &spec.endpoint,
            timeout_seconds: spec.timeout_seconds,
            api_key_env: spec.api_key_env.as_deref(),
            api_key_secret: spec.api_key_secret.as_deref(),
        }
    }
}

impl<'a> From<&'a LlmSpec> for EndpointFields<'a> {
    fn from(spec: &'a LlmSpec) -> Self {
        Self {
            endpoint: &spec.endpoint,
            timeout_seconds: spec.timeout_seconds,
            api_key_env: spec.api_key_env.as_deref(),
            api_key_secret: spec.api_key_secret.as_deref(),
        }
    }
}

fn check_endpoint(
    field: &str,
    spec: EndpointFields<'_>,
    secrets: Option<&Secrets>,
) -> Result<(), ApiError> {
    check_url(&format!("{field}.endpoint"), spec.endpoint)?;
    if !(spec.timeout_seconds > 0.0 && spec.timeout_seconds.is_finite()) {
        return Err(ApiError::bad(format!(
            "`{field}.timeout_seconds` must be positive"
        )));
    }
    key_ref(field, spec.api_key_env, spec.api_key_secret, secrets)?;
    Ok(())
}

/// The key reference of `field` (`target`, `judge`, an injected agent...), checked: exactly
/// one kind, a well-formed name, and a secret this server has. A secret it lacks is 422 (the
/// config is well formed, the server cannot serve it) and the message names only the secret.
fn key_ref(
    field: &str,
    env: Option<&str>,
    secret: Option<&str>,
    secrets: Option<&Secrets>,
) -> Result<Option<KeyRef>, ApiError> {
    let reference =
        KeyRef::from_fields(env, secret).map_err(|e| ApiError::bad(format!("{field}: {e}")))?;
    match &reference {
        Some(KeyRef::Env(var)) => check_env_name(var)?,
        Some(KeyRef::Secret(name)) => {
            secrets::check_name(name).map_err(|e| ApiError::bad(format!("{field}: {e}")))?;
            if !secrets.is_some_and(|file| file.contains(name)) {
                return Err(missing_secret(field, name, secrets));
            }
        }
        None => {}
    }
    Ok(reference)
}

fn missing_secret(field: &str, name: &str, secrets: Option<&Secrets>) -> ApiError {
    ApiError::Unprocessable(match secrets {
        None => format!(
            "{field}: `api_key_secret: {name}` needs a secrets file: start judge serve with --secrets-file"
        ),
        Some(file) => format!(
            "{field}: the secrets file {} has no secret `{name}`",
            file.path().display()
        ),
    })
}

/// The value of `reference`, read now (just before the endpoint is called). An unset variable
/// is 400 as it always was; a secret gone since it was checked (the file was reloaded) is 422
/// like at create time.
fn resolve(
    field: &str,
    reference: &KeyRef,
    env: &impl Fn(&str) -> Option<String>,
    secrets: Option<&Secrets>,
) -> Result<String, ApiError> {
    match reference {
        KeyRef::Env(var) => env(var).ok_or_else(|| {
            ApiError::bad(format!(
                "{field}: environment variable {var} is not set on the server"
            ))
        }),
        KeyRef::Secret(name) => secrets
            .and_then(|file| file.get(name))
            .ok_or_else(|| missing_secret(field, name, secrets)),
    }
}

/// The key of `field` given as its two optional fields, read now.
fn key_from(
    field: &str,
    env_field: Option<&str>,
    secret_field: Option<&str>,
    env: &impl Fn(&str) -> Option<String>,
    secrets: Option<&Secrets>,
) -> Result<Option<String>, ApiError> {
    match key_ref(field, env_field, secret_field, secrets)? {
        Some(reference) => resolve(field, &reference, env, secrets).map(Some),
        None => Ok(None),
    }
}

/// Parses a request body: YAML when the content type says so, JSON otherwise.
pub fn parse_document(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| ApiError::bad("the body is not UTF-8"))?;
    if text.trim().is_empty() {
        return Err(ApiError::bad(
            "the body is empty: send a simulation config (the YAML of docs/contracts/agent-injection.md, or JSON)",
        ));
    }
    if content_type.contains("yaml") {
        serde_norway::from_str(text).map_err(|e| ApiError::bad(format!("invalid YAML: {e}")))
    } else {
        serde_json::from_str(text).map_err(|e| ApiError::bad(format!("invalid JSON: {e}")))
    }
}

impl SimulationConfig {
    /// `secrets`: the server's `--secrets-file`, which every `api_key_secret` must name a key of.
    pub fn from_document(document: Value, secrets: Option<&Secrets>) -> Result<Self, ApiError> {
        refuse_inline_keys(&document, "")?;
        let body: CreateBody = serde_json::from_value(document.clone())
            .map_err(|e| ApiError::bad(format!("invalid simulation config: {e}")))?;
        let run = body.run;
        if !(1..=200).contains(&run.rounds) {
            return Err(ApiError::bad("`run.rounds` must be between 1 and 200"));
        }
        if !(1..=20).contains(&run.trials) {
            return Err(ApiError::bad("`run.trials` must be between 1 and 20"));
        }
        if !(1..=10).contains(&run.concurrency) {
            return Err(ApiError::bad("`run.concurrency` must be between 1 and 10"));
        }
        if run.stop_token.is_empty() || run.max_reply_chars == 0 {
            return Err(ApiError::bad(
                "`run.stop_token` must not be empty and `run.max_reply_chars` must be positive",
            ));
        }
        check_endpoint("target", (&body.target).into(), secrets)?;
        for (field, spec) in [
            ("user_simulator", &body.user_simulator),
            ("judge", &body.judge),
        ] {
            if let Some(spec) = spec {
                check_endpoint(field, spec.into(), secrets)?;
            }
        }
        let panel = persona::shipped().map_err(|e| ApiError::Internal(e.to_string()))?;
        let known: Vec<String> = panel.iter().map(|p| p.id.clone()).collect();
        let personas = persona::select(panel, &run.personas).map_err(|e| {
            ApiError::bad(format!("`run.personas`: {e} (known: {})", known.join(", ")))
        })?;
        let config = Self {
            name: body.simulation.name.clone(),
            document,
            file: ConfigFile {
                simulation: body.simulation,
                injection: body.injection,
            },
            target: body.target,
            run,
            personas,
            user_simulator: body.user_simulator,
            judge: body.judge,
        };
        config.check_injection(secrets)?;
        Ok(config)
    }

    /// The injection section must resolve (keys aside, which are read at start) and every
    /// injected agent must play a persona of the panel.
    fn check_injection(&self, secrets: Option<&Secrets>) -> Result<(), ApiError> {
        for e in self.endpoints() {
            key_ref(
                &format!("injected agent `{}`", e.agent_id),
                e.api_key_env.as_deref(),
                e.api_key_secret.as_deref(),
                secrets,
            )?;
            if !self.personas.iter().any(|p| p.id == e.agent_id) {
                return Err(ApiError::bad(format!(
                    "injected agent `{}` is not a persona of this simulation's panel ({})",
                    e.agent_id,
                    self.persona_ids().join(", ")
                )));
            }
        }
        // A placeholder key: only the shape is checked here.
        self.file
            .plan_with(|_| Ok(String::new()))
            .map(|_| ())
            .map_err(|e| ApiError::bad(e.to_string()))
    }

    pub fn persona_ids(&self) -> Vec<String> {
        self.personas.iter().map(|p| p.id.clone()).collect()
    }

    pub fn endpoints(&self) -> &[EndpointConfig] {
        self.file
            .simulation
            .agent_injection
            .as_ref()
            .map_or(&[], |i| i.endpoints.as_slice())
    }

    pub fn fallback(&self) -> FallbackStrategy {
        self.file
            .simulation
            .agent_injection
            .as_ref()
            .map_or(FallbackStrategy::SimulatedAgent, |i| i.fallback.strategy)
    }

    /// Adds (or replaces) the endpoint playing `body.agent_id`; a secret it names must be in
    /// `secrets`.
    pub fn inject(&mut self, body: InjectBody, secrets: Option<&Secrets>) -> Result<(), ApiError> {
        check_url("endpoint_url", &body.endpoint_url)?;
        let mut next = self.clone();
        let injection =
            next.file
                .simulation
                .agent_injection
                .get_or_insert_with(|| AgentInjection {
                    endpoints: Vec::new(),
                    circuit_breaker: Default::default(),
                    concurrency: Default::default(),
                    fallback: Default::default(),
                    benchmark: Default::default(),
                    rate_limit: Default::default(),
                });
        if let Some(simulated) = body.fallback_to_simulated {
            injection.fallback.strategy = if simulated {
                FallbackStrategy::SimulatedAgent
            } else {
                FallbackStrategy::ErrorMessage
            };
        }
        injection.endpoints.retain(|e| e.agent_id != body.agent_id);
        injection.endpoints.push(EndpointConfig {
            agent_id: body.agent_id,
            url: body.endpoint_url,
            api_key_env: body.api_key_env,
            api_key_secret: body.api_key_secret,
            timeout_seconds: body.timeout_seconds.unwrap_or(30.0),
            privacy_tier: body.privacy_tier,
            protocol: body.protocol.unwrap_or(Protocol::Agentworld),
            model: body.model,
        });
        next.check_injection(secrets)?;
        *self = next;
        Ok(())
    }

    /// Removes the endpoint playing `agent_id`; false when none did.
    pub fn remove(&mut self, agent_id: &str) -> bool {
        let Some(injection) = self.file.simulation.agent_injection.as_mut() else {
            return false;
        };
        let before = injection.endpoints.len();
        injection.endpoints.retain(|e| e.agent_id != agent_id);
        injection.endpoints.len() != before
    }

    /// The run configuration, keys read from `env` and `secrets` now (a missing variable is
    /// the caller's mistake: 400; a missing secret 422, as at create time).
    pub fn run_config(
        &self,
        env: impl Fn(&str) -> Option<String>,
        secrets: Option<&Secrets>,
    ) -> Result<SimRunConfig, ApiError> {
        // Checked first so a secret removed by a reload since creation gets its own status.
        self.check_injection(secrets)?;
        let injection = self
            .file
            .plan_with(|reference| {
                resolve("injected agent", reference, &env, secrets).map_err(|e| e.to_string())
            })
            .map_err(|e| ApiError::bad(e.to_string()))?;
        let api_key = key_from(
            "target",
            self.target.api_key_env.as_deref(),
            self.target.api_key_secret.as_deref(),
            &env,
            secrets,
        )?;
        let target = TargetSettings {
            model: self.target.model.clone(),
            timeout_ms: (self.target.timeout_seconds * 1000.0).round() as u64,
            // A simulation in a dashboard should fail fast, not sit in minutes of backoff.
            retry: RetryPolicy {
                max_retries: 1,
                base_ms: 500,
                max_wait_ms: 5_000,
            },
            ..TargetSettings::new(self.target.endpoint.clone())
        };
        // The helpers get the target's resilience with their own endpoint, model and timeout,
        // as `judge sim --user-endpoint` / `--judge-endpoint` do.
        let helper =
            |field: &str, spec: &LlmSpec| -> Result<(TargetSettings, Credentials), ApiError> {
                let settings = TargetSettings {
                    endpoint: spec.endpoint.clone(),
                    model: spec.model.clone(),
                    timeout_ms: (spec.timeout_seconds * 1000.0).round() as u64,
                    ..target.clone()
                };
                let credentials = Credentials {
                    api_key: key_from(
                        field,
                        spec.api_key_env.as_deref(),
                        spec.api_key_secret.as_deref(),
                        &env,
                        secrets,
                    )?,
                    admin_token: None,
                };
                Ok((settings, credentials))
            };
        let simulator = match &self.user_simulator {
            Some(spec) => {
                let (settings, credentials) = helper("user_simulator", spec)?;
                SimulatorSpec::Llm {
                    settings,
                    credentials,
                }
            }
            None => SimulatorSpec::Scripted,
        };
        let judge = match &self.judge {
            Some(spec) => Some(helper("judge", spec)?),
            None => None,
        };
        let run = &self.run;
        Ok(SimRunConfig {
            settings: SimSettings {
                seed: run.seed,
                rounds: run.rounds,
                trials: run.trials,
                single_turn: run.single_turn,
                stop_token: run.stop_token.clone(),
                concurrency: run.concurrency,
                start: crate::suites::sim::runner::sim_start(),
                max_reply_chars: run.max_reply_chars,
                keep_unfaithful_simulator: false,
                api: Default::default(),
                history: Default::default(),
            },
            target,
            credentials: Credentials {
                api_key,
                admin_token: None,
            },
            personas: self.personas.clone(),
            simulator,
            judge,
            injection,
            record: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({"simulation": {"name": "t"}, "target": {"endpoint": "http://127.0.0.1:1"},
               "run": {"rounds": 2, "personas": ["maya"]}})
    }

    #[test]
    fn an_inline_key_is_refused_wherever_it_is() {
        let mut doc = minimal();
        doc["simulation"]["agent_injection"] = json!({"endpoints": [
            {"agent_id": "maya", "url": "http://x", "api_key": "sk-secret"}]});
        let err = SimulationConfig::from_document(doc, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("api_key_env"), "{err}");
        assert!(!err.contains("sk-secret"), "{err}");
    }

    #[test]
    fn every_endpoint_is_checked_alike_and_named_in_the_error() {
        let refused = |patch: &dyn Fn(&mut Value)| {
            let mut doc = minimal();
            patch(&mut doc);
            SimulationConfig::from_document(doc, None)
                .unwrap_err()
                .to_string()
        };
        let err = refused(&|d| d["target"]["timeout_seconds"] = json!(0));
        assert!(
            err.contains("`target.timeout_seconds` must be positive"),
            "{err}"
        );
        let err = refused(&|d| d["target"]["endpoint"] = json!("ftp://x"));
        assert!(err.contains("`target.endpoint` must be an http"), "{err}");
        let err = refused(&|d| d["judge"] = json!({"endpoint": "ftp://x"}));
        assert!(err.contains("`judge.endpoint` must be an http"), "{err}");
        let err = refused(&|d| {
            d["user_simulator"] = json!({"endpoint": "http://x", "timeout_seconds": -1})
        });
        assert!(
            err.contains("`user_simulator.timeout_seconds` must be positive"),
            "{err}"
        );
        let err = refused(&|d| d["target"]["api_key_env"] = json!("lower case"));
        assert!(
            err.contains("`lower case` is not an environment variable name"),
            "{err}"
        );
    }

    #[test]
    fn yaml_and_json_give_the_same_config() {
        let yaml = "simulation:\n  name: t\ntarget:\n  endpoint: http://127.0.0.1:1\nrun:\n  rounds: 2\n  personas: [maya]\n";
        let a = parse_document(yaml.as_bytes(), "application/yaml").unwrap();
        assert_eq!(a, minimal());
        let config = SimulationConfig::from_document(a, None).unwrap();
        assert_eq!(config.persona_ids(), vec!["maya".to_owned()]);
    }

    #[test]
    fn injected_agents_must_play_a_persona_of_the_panel() {
        let mut config = SimulationConfig::from_document(minimal(), None).unwrap();
        let body = |id: &str| InjectBody {
            agent_id: id.to_owned(),
            endpoint_url: "http://127.0.0.1:2/respond".to_owned(),
            api_key_env: Some("MAYA_KEY".to_owned()),
            api_key_secret: None,
            timeout_seconds: None,
            privacy_tier: None,
            fallback_to_simulated: Some(false),
            protocol: None,
            model: None,
        };
        let err = config.inject(body("nobody"), None).unwrap_err().to_string();
        assert!(err.contains("nobody"), "{err}");
        assert!(
            config.endpoints().is_empty(),
            "a refused injection changed the config"
        );
        config.inject(body("maya"), None).unwrap();
        assert_eq!(config.fallback(), FallbackStrategy::ErrorMessage);
        let missing = config.run_config(|_| None, None).unwrap_err().to_string();
        assert!(missing.contains("MAYA_KEY"), "{missing}");
        let plan = config
            .run_config(|v| (v == "MAYA_KEY").then(|| "k".to_owned()), None)
            .unwrap();
        assert_eq!(plan.injection.endpoints[0].api_key.as_deref(), Some("k"));
        assert!(config.remove("maya"));
        assert!(!config.remove("maya"));
    }
}
