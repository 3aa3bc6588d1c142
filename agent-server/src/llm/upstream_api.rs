//! Which API a Responses turn takes to the upstream model (`--llm-api`).
//!
//! A Chat Completions turn always goes to `<base>/chat/completions`. A Responses turn goes to
//! `<base>/responses` in that API's own terms when the upstream serves it, and is otherwise
//! translated to Chat Completions and back (`http::responses::input`, which says what that
//! translation cannot carry). `auto`, the default, asks the upstream once, at the first Responses
//! turn: an empty `POST <base>/responses` costs no generation (a server that has the route refuses
//! the body with 400 or 422), while a server without it answers 404, 405 or 501. The answer is
//! kept for the life of the process and logged; a probe that gets no answer at all (unreachable,
//! timeout) fails that turn and is not kept, so the next turn asks again.

use std::future::Future;

use clap::ValueEnum;
use tokio::sync::OnceCell;

use super::LlmError;

/// `--llm-api`: the API Responses turns take upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LlmApi {
    /// The Responses API if the upstream serves it (asked once), else Chat Completions.
    #[default]
    Auto,
    /// Always Chat Completions (the Responses turn translated).
    Chat,
    /// Always the Responses API.
    Responses,
}

/// The label of the API a call took (`api` on metrics and logs).
pub fn label(native: bool) -> &'static str {
    if native { "responses" } else { "chat" }
}

/// Whether a probe's status says the upstream has no `/responses` route.
pub fn route_missing(status: u16) -> bool {
    matches!(status, 404 | 405 | 501)
}

/// The configured API and, under `auto`, the probe's remembered answer.
#[derive(Debug, Default)]
pub struct ApiChoice {
    configured: LlmApi,
    probed: OnceCell<bool>,
}

impl ApiChoice {
    pub fn new(configured: LlmApi) -> Self {
        Self {
            configured,
            probed: OnceCell::new(),
        }
    }

    /// Whether Responses turns go upstream as Responses requests. Under `auto`, the first caller
    /// runs `probe` (concurrent first callers wait for its answer instead of probing too).
    pub async fn native<F, Fut>(&self, probe: F) -> Result<bool, LlmError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<bool, LlmError>>,
    {
        match self.configured {
            LlmApi::Chat => Ok(false),
            LlmApi::Responses => Ok(true),
            LlmApi::Auto => self.probed.get_or_try_init(probe).await.copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn auto_probes_once_and_keeps_only_an_answer() {
        let probes = AtomicUsize::new(0);
        let choice = ApiChoice::new(LlmApi::Auto);
        let unreachable = || async {
            probes.fetch_add(1, Ordering::SeqCst);
            Err(LlmError::Upstream {
                reason: "down".into(),
            })
        };
        assert!(choice.native(unreachable).await.is_err());
        let served = || async {
            probes.fetch_add(1, Ordering::SeqCst);
            Ok(true)
        };
        assert!(choice.native(served).await.unwrap());
        let not_asked = || async {
            probes.fetch_add(1, Ordering::SeqCst);
            Ok(false)
        };
        assert!(choice.native(not_asked).await.unwrap());
        assert_eq!(probes.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_configured_api_is_never_probed() {
        let never = || -> std::future::Ready<Result<bool, LlmError>> { panic!("probed") };
        assert!(!ApiChoice::new(LlmApi::Chat).native(never).await.unwrap());
        assert!(
            ApiChoice::new(LlmApi::Responses)
                .native(never)
                .await
                .unwrap()
        );
    }

    #[test]
    fn only_a_missing_route_means_not_served() {
        for status in [404, 405, 501] {
            assert!(route_missing(status), "{status}");
        }
        // A server with the route refuses the empty probe; it does not lack the route.
        for status in [200, 400, 401, 422, 500] {
            assert!(!route_missing(status), "{status}");
        }
    }
}
