use agent_server::config::Config;
use agent_server::startup::Application;
use awc::http::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

pub const T0: &str = "2026-03-01T09:00:00Z";

pub struct TestApp {
    pub address: String,
    pub client: awc::Client,
    _data: TempDir,
}

/// Starts the server on port 0 with its defaults (embedded store, builtin model).
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    let data = tempfile::tempdir().expect("temp dir");
    let mut config = Config::for_tests(data.path());
    config.workers = Some(1);
    configure(&mut config);
    let app = Application::build(config).await.expect("server starts");
    let address = format!("http://127.0.0.1:{}", app.port());
    actix_web::rt::spawn(app.run_until_stopped());
    let client = awc::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .finish();
    TestApp {
        address,
        client,
        _data: data,
    }
}

pub fn session() -> String {
    format!("test-{}", uuid::Uuid::new_v4())
}

/// A response's status and JSON body.
pub struct Reply {
    pub status: StatusCode,
    pub headers: awc::http::header::HeaderMap,
    pub body: Value,
    pub raw: String,
}

impl Reply {
    pub fn text(&self) -> String {
        self.body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Asserts OpenAI's error shape and returns (code, message).
    pub fn error(&self, status: StatusCode) -> (String, String) {
        assert_eq!(self.status, status, "body: {}", self.raw);
        let e = &self.body["error"];
        assert!(e["type"].is_string(), "no error type: {}", self.raw);
        (
            e["code"].as_str().unwrap_or_default().to_owned(),
            e["message"].as_str().unwrap_or_default().to_owned(),
        )
    }
}

impl TestApp {
    /// A client of a server started elsewhere (on data the test keeps), at `address`.
    pub fn at(address: String) -> Self {
        Self {
            address,
            client: awc::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .finish(),
            _data: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub async fn send(&self, request: awc::ClientRequest, body: Option<&[u8]>) -> Reply {
        let mut response = match body {
            Some(b) => request.send_body(b.to_vec()).await,
            None => request.send().await,
        }
        .expect("request sent");
        let bytes = response
            .body()
            .limit(16 * 1024 * 1024)
            .await
            .expect("body read");
        let raw = String::from_utf8_lossy(&bytes).into_owned();
        Reply {
            status: response.status(),
            headers: response.headers().clone(),
            body: serde_json::from_str(&raw).unwrap_or(Value::Null),
            raw,
        }
    }

    /// POST /v1/chat/completions with one user message, at `mock_time` when given.
    pub async fn say(&self, session: &str, text: &str, mock_time: Option<&str>) -> Reply {
        let body =
            json!({"model": "agentwall-builtin", "messages": [{"role": "user", "content": text}]});
        self.chat(session, &body, mock_time).await
    }

    pub async fn chat(&self, session: &str, body: &Value, mock_time: Option<&str>) -> Reply {
        let mut req = self
            .client
            .post(self.url("/v1/chat/completions"))
            .insert_header(("content-type", "application/json"))
            .insert_header(("x-session-id", session));
        if let Some(t) = mock_time {
            req = req.insert_header(("x-mock-time", t));
        }
        self.send(req, Some(body.to_string().as_bytes())).await
    }

    /// Says `text` and returns the reply text, asserting 200.
    pub async fn ask(&self, session: &str, text: &str, mock_time: Option<&str>) -> String {
        let reply = self.say(session, text, mock_time).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.text()
    }

    pub async fn control_post(
        &self,
        path: &str,
        session: &str,
        body: Option<Value>,
        mock_time: Option<&str>,
    ) -> Reply {
        let mut req = self
            .client
            .post(self.url(path))
            .insert_header(("x-session-id", session));
        if let Some(t) = mock_time {
            req = req.insert_header(("x-mock-time", t));
        }
        match body {
            Some(b) => {
                let req = req.insert_header(("content-type", "application/json"));
                self.send(req, Some(b.to_string().as_bytes())).await
            }
            None => self.send(req, None).await,
        }
    }

    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = self.client.get(self.url(path));
        for (k, v) in headers {
            req = req.insert_header((*k, *v));
        }
        self.send(req, None).await
    }
}

/// `T0` plus a duration, as an RFC 3339 string.
pub fn at(offset: chrono::Duration) -> String {
    let t0 = chrono::DateTime::parse_from_rfc3339(T0).unwrap().to_utc();
    protocol::headers::format_mock_time(t0 + offset)
}
