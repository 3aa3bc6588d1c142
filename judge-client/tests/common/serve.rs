//! `judge serve` under test: an HTTP client for its API ([`Api`]), and a server spawned on the
//! test's actix runtime with such a client ([`Serve`]).

use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use awc::Client;
use serde_json::Value;

/// A client of one `judge serve`, in this process or another.
pub struct Api {
    pub base: String,
    pub client: Client,
    /// Sent as a bearer token with every request when set.
    pub token: Option<String>,
}

impl Api {
    pub fn new(base: String, token: Option<&str>) -> Self {
        Self {
            base,
            client: Client::builder().timeout(Duration::from_secs(60)).finish(),
            token: token.map(str::to_owned),
        }
    }

    /// Status and body (as text, exactly as it went over the wire) of one request.
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

    /// [`Api::send`] with an optional JSON body.
    pub async fn send_json(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
        let body = body.map(|b| ("application/json", b.to_string()));
        self.send(method, path, body).await
    }

    /// Status and JSON body (a body that is not JSON comes back as a JSON string).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let (status, text) = self.send("GET", path, None).await;
        (status, json_or_text(text))
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        let (status, text) = self.send_json("POST", path, Some(body)).await;
        (status, json_or_text(text))
    }

    /// Waits for a simulation to end (finished, failed or stopped); returns its last state.
    pub async fn wait_over(&self, id: &str) -> Value {
        for _ in 0..600 {
            let (_, sim) = self.get(&format!("/simulations/{id}")).await;
            if ["finished", "failed", "stopped"].contains(&sim["state"].as_str().unwrap_or("")) {
                return sim;
            }
            actix_rt::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("simulation {id} did not end");
    }
}

/// A `judge serve` running in this process, and a client for it (through `Deref`).
pub struct Serve {
    pub api: Api,
    pub handle: ServerHandle,
}

impl Serve {
    /// Runs `server` (bound at `addr` by `judge_client::serve::bind*`) in the background.
    pub fn spawn(server: Server, addr: SocketAddr, token: Option<&str>) -> Self {
        let handle = server.handle();
        actix_rt::spawn(server);
        Self {
            api: Api::new(format!("http://{addr}"), token),
            handle,
        }
    }

    /// Stops the server, letting requests in flight finish.
    pub async fn stop(self) {
        self.handle.stop(true).await;
    }
}

impl Deref for Serve {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

impl DerefMut for Serve {
    fn deref_mut(&mut self) -> &mut Api {
        &mut self.api
    }
}

fn json_or_text(text: String) -> Value {
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}
