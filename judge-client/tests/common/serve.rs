//! A `judge serve` under test, spawned on the test's actix runtime, and an HTTP client for it.

use std::net::SocketAddr;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use awc::Client;
use serde_json::Value;

pub struct Serve {
    pub base: String,
    pub handle: ServerHandle,
    pub client: Client,
    /// Sent as a bearer token with every request when set.
    pub token: Option<String>,
}

impl Serve {
    /// Runs `server` (bound at `addr` by `judge_client::serve::bind*`) in the background.
    pub fn spawn(server: Server, addr: SocketAddr, token: Option<&str>) -> Self {
        let handle = server.handle();
        actix_rt::spawn(server);
        Self {
            base: format!("http://{addr}"),
            handle,
            client: Client::builder().timeout(Duration::from_secs(60)).finish(),
            token: token.map(str::to_owned),
        }
    }

    /// Status and body (as text) of one request.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, String)>,
    ) -> (u16, String) {
        let url = format!("{}{path}", self.base);
        let mut req = match method {
            "GET" => self.client.get(&url),
            "POST" => self.client.post(&url),
            "DELETE" => self.client.delete(&url),
            other => panic!("method {other}"),
        };
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        let mut response = match body {
            Some((content_type, text)) => req
                .insert_header(("Content-Type", content_type))
                .send_body(text)
                .await
                .expect("request"),
            None => req.send().await.expect("request"),
        };
        let bytes = response.body().limit(16 << 20).await.expect("body");
        (
            response.status().as_u16(),
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    /// Status and JSON body (a body that is not JSON comes back as a JSON string).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let (status, text) = self.send("GET", path, None).await;
        (status, json_or_text(text))
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        let (status, text) = self
            .send("POST", path, Some(("application/json", body.to_string())))
            .await;
        (status, json_or_text(text))
    }

    /// Stops the server, letting requests in flight finish.
    pub async fn stop(self) {
        self.handle.stop(true).await;
    }
}

fn json_or_text(text: String) -> Value {
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}
