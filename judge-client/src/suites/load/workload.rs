//! What the load sends: prompts of a seeded length distribution and a requested output length
//! (`max_tokens`, or `max_output_tokens` on the Responses API), pre-rendered into a pool of
//! request bodies so the hot path only clones a reference-counted buffer.

use std::fmt;
use std::str::FromStr;

use awc::http::header::HeaderValue;
use bytes::Bytes;
use protocol::openai::responses::{ResponseCreateRequest, ResponseInput};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::LoadError;
use super::conversation::Conversations;
use crate::endpoint::Api;

/// Common English words that are one cl100k token each (with their leading space), so a prompt
/// of N words is close to N tokens on most tokenizers.
const WORDS: &[&str] = &[
    "the", "time", "people", "way", "year", "day", "thing", "man", "world", "life", "hand", "part",
    "child", "eye", "woman", "place", "work", "week", "case", "point", "number", "group",
    "problem", "fact", "good", "new", "first", "last", "long", "great", "little", "own", "other",
    "old", "right", "big", "high", "small", "large", "next", "early", "young", "few", "public",
    "same", "able", "see", "know", "take", "come", "think", "look", "want", "give", "use", "find",
    "tell", "ask", "seem", "feel", "try", "leave", "call", "keep", "let", "begin", "help", "show",
    "hear", "play", "run", "move", "live", "hold", "bring", "write", "stand", "learn", "change",
];

/// A distribution of lengths, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LengthDist {
    Fixed {
        tokens: u32,
    },
    /// Uniform over `min..=max`.
    Uniform {
        min: u32,
        max: u32,
    },
    /// Normal, rounded and clamped to at least 1.
    Normal {
        mean: f64,
        sd: f64,
    },
}

impl LengthDist {
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Uniform { min, max } => rng.random_range(min..=max),
            LengthDist::Normal { mean, sd } => {
                // Box-Muller: two uniforms give one standard normal.
                let u1 = 1.0 - rng.random::<f64>();
                let u2 = rng.random::<f64>();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (mean + sd * z).round().max(1.0) as u32
            }
        }
    }
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthDist::Fixed { tokens } => write!(f, "{tokens}"),
            LengthDist::Uniform { min, max } => write!(f, "uniform:{min}-{max}"),
            LengthDist::Normal { mean, sd } => write!(f, "normal:{mean},{sd}"),
        }
    }
}

impl FromStr for LengthDist {
    type Err = LoadError;

    /// `128`, `uniform:64-256` or `normal:128,32`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            LoadError::Invalid(format!(
                "length `{s}`: {why} (use `128`, `uniform:64-256` or `normal:128,32`)"
            ))
        };
        let positive = |v: &str| match v.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad("lengths are whole numbers of tokens, at least 1")),
        };
        if let Some(range) = s.strip_prefix("uniform:") {
            let (min, max) = range.split_once('-').ok_or_else(|| bad("no `-`"))?;
            let (min, max) = (positive(min)?, positive(max)?);
            if min > max {
                return Err(bad("min is above max"));
            }
            return Ok(LengthDist::Uniform { min, max });
        }
        if let Some(params) = s.strip_prefix("normal:") {
            let (mean, sd) = params.split_once(',').ok_or_else(|| bad("no `,`"))?;
            let mean: f64 = mean
                .trim()
                .parse()
                .map_err(|_| bad("mean is not a number"))?;
            let sd: f64 = sd.trim().parse().map_err(|_| bad("sd is not a number"))?;
            if !(mean >= 1.0 && mean.is_finite() && sd >= 0.0 && sd.is_finite()) {
                return Err(bad("mean must be at least 1 and sd at least 0"));
            }
            return Ok(LengthDist::Normal { mean, sd });
        }
        Ok(LengthDist::Fixed {
            tokens: positive(s)?,
        })
    }
}

/// What every request of a run looks like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub model: String,
    /// The API every request goes through.
    pub api: Api,
    pub stream: bool,
    pub prompt_tokens: LengthDist,
    pub output_tokens: LengthDist,
    /// Distinct `X-Session-Id` values, spread over the worker threads.
    pub sessions: u32,
    /// `--turns`: conversations instead of independent requests.
    pub conversations: Option<Conversations>,
}

/// One pre-rendered request.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    pub body: Bytes,
    pub prompt_words: u32,
}

/// A worker's ring of pre-rendered bodies and session ids. Over A2A a body is the prompt as a
/// JSON string, put into a `SendMessage` of its own as it is taken ([`a2a_body`]): each message
/// needs a unique id, and its `contextId` is the session taken with it.
pub struct RequestPool {
    requests: Vec<PreparedRequest>,
    sessions: Vec<HeaderValue>,
    next_request: usize,
    next_session: usize,
    /// Over A2A: whether the message is streamed.
    a2a_stream: Option<bool>,
}

/// Bodies per worker: enough variety for the length distribution, few enough to stay in cache.
pub const POOL_SIZE: usize = 256;

impl RequestPool {
    /// The pool of worker `worker` of `workers`: seeded by `(seed, worker)`, so a run is
    /// reproducible and workers do not send identical streams.
    pub fn new(workload: &Workload, seed: u64, worker: usize, workers: usize) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((worker as u64 + 1) << 32));
        let requests = (0..POOL_SIZE).map(|_| render(workload, &mut rng)).collect();
        let per_worker = (workload.sessions as usize / workers.max(1)).max(1);
        let sessions = (0..per_worker)
            .map(|i| {
                HeaderValue::from_str(&format!("load-{seed}-w{worker}-{i}"))
                    .expect("session ids are ASCII")
            })
            .collect();
        Self {
            requests,
            sessions,
            next_request: 0,
            next_session: 0,
            a2a_stream: (workload.api == Api::A2a).then_some(workload.stream),
        }
    }

    /// The next body and session id, round robin (cheap clones of shared buffers; over A2A the
    /// prompt put into its message).
    pub fn take(&mut self) -> (PreparedRequest, HeaderValue) {
        let mut request = self.requests[self.next_request].clone();
        let session = self.sessions[self.next_session].clone();
        if let Some(stream) = self.a2a_stream {
            request.body = a2a_body(stream, session.to_str().ok(), &request.body);
        }
        self.next_request = (self.next_request + 1) % self.requests.len();
        self.next_session = (self.next_session + 1) % self.sessions.len();
        (request, session)
    }
}

fn render(workload: &Workload, rng: &mut ChaCha8Rng) -> PreparedRequest {
    let words = workload.prompt_tokens.sample(rng);
    let max_tokens = workload.output_tokens.sample(rng);
    let mut prompt = String::with_capacity(words as usize * 7);
    for i in 0..words {
        if i > 0 {
            prompt.push(' ');
        }
        prompt.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
    let body = match workload.api {
        Api::A2a => Bytes::from(serde_json::to_vec(&prompt).expect("a string serialises")),
        _ => request_body(workload, &[("user", prompt)], max_tokens),
    };
    PreparedRequest {
        body,
        prompt_words: words,
    }
}

/// A2A's `SendMessage` (`SendStreamingMessage` when `stream`) of one user message whose text is
/// `text_json` (a JSON string), in the context `session` when given, with a fresh message id.
pub(super) fn a2a_body(stream: bool, session: Option<&str>, text_json: &[u8]) -> Bytes {
    let method = if stream {
        protocol::a2a::method::SEND_STREAMING_MESSAGE
    } else {
        protocol::a2a::method::SEND_MESSAGE
    };
    let context = session
        .map(|s| format!(",\"contextId\":{}", serde_json::Value::from(s)))
        .unwrap_or_default();
    let mut body = Vec::with_capacity(text_json.len() + 256);
    body.extend_from_slice(
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{method}\",\"params\":{{\"message\":{{\
             \"role\":\"ROLE_USER\",\"messageId\":\"{}\"{context},\"parts\":[{{\"text\":",
            uuid::Uuid::new_v4()
        )
        .as_bytes(),
    );
    body.extend_from_slice(text_json);
    body.extend_from_slice(b"}]}}}");
    Bytes::from(body)
}

/// A request's body through the workload's API: `messages` (role, text) as Chat Completions
/// messages; on the Responses API the last one's text as `input`, with `store: false` (nothing is
/// read back, so nothing is stored); over A2A the last one's text as a message in no context
/// (a conversation's turns name theirs, [`a2a_body`]). Streamed bodies ask for the usage.
pub(super) fn request_body(
    workload: &Workload,
    messages: &[(&str, String)],
    max_tokens: u32,
) -> Bytes {
    let body = match workload.api {
        Api::Chat => {
            let messages: Vec<serde_json::Value> = messages
                .iter()
                .map(|(role, content)| serde_json::json!({"role": role, "content": content}))
                .collect();
            let mut body = serde_json::json!({
                "model": workload.model,
                "messages": messages,
                "max_tokens": max_tokens,
            });
            if workload.stream {
                body["stream"] = true.into();
                body["stream_options"] = serde_json::json!({"include_usage": true});
            }
            serde_json::to_vec(&body)
        }
        Api::Responses => serde_json::to_vec(&ResponseCreateRequest {
            model: Some(workload.model.clone()),
            input: Some(ResponseInput::Text(
                messages.last().map(|(_, m)| m.clone()).unwrap_or_default(),
            )),
            max_output_tokens: Some(max_tokens),
            store: Some(false),
            stream: workload.stream.then_some(true),
            ..ResponseCreateRequest::default()
        }),
        Api::A2a => {
            let text = messages.last().map(|(_, m)| m.as_str()).unwrap_or_default();
            return a2a_body(
                workload.stream,
                None,
                &serde_json::to_vec(text).expect("a string serialises"),
            );
        }
    };
    Bytes::from(body.expect("a request serialises"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_length_distributions_and_rejects_bad_ones() {
        assert_eq!(
            "128".parse::<LengthDist>().unwrap(),
            LengthDist::Fixed { tokens: 128 }
        );
        assert_eq!(
            "uniform:64-256".parse::<LengthDist>().unwrap(),
            LengthDist::Uniform { min: 64, max: 256 }
        );
        assert_eq!(
            "normal:128,32".parse::<LengthDist>().unwrap(),
            LengthDist::Normal {
                mean: 128.0,
                sd: 32.0
            }
        );
        for bad in ["0", "-3", "uniform:9-2", "uniform:5", "normal:x,2", "many"] {
            let err = bad.parse::<LengthDist>().unwrap_err().to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn samples_follow_the_distribution() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let uniform = LengthDist::Uniform { min: 10, max: 20 };
        let xs: Vec<u32> = (0..10_000).map(|_| uniform.sample(&mut rng)).collect();
        assert!(xs.iter().all(|x| (10..=20).contains(x)));
        assert!(xs.contains(&10) && xs.contains(&20));
        let normal = LengthDist::Normal {
            mean: 100.0,
            sd: 10.0,
        };
        let ys: Vec<f64> = (0..10_000)
            .map(|_| f64::from(normal.sample(&mut rng)))
            .collect();
        let mean = ys.iter().sum::<f64>() / ys.len() as f64;
        let sd = (ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / ys.len() as f64).sqrt();
        assert!((mean - 100.0).abs() < 0.5, "{mean}");
        assert!((sd - 10.0).abs() < 0.5, "{sd}");
    }

    #[test]
    fn pool_is_seeded_and_renders_openai_requests() {
        let workload = Workload {
            model: "m".into(),
            api: Api::Chat,
            stream: true,
            prompt_tokens: LengthDist::Fixed { tokens: 5 },
            output_tokens: LengthDist::Uniform { min: 3, max: 9 },
            sessions: 4,
            conversations: None,
        };
        let mut a = RequestPool::new(&workload, 9, 0, 2);
        let mut b = RequestPool::new(&workload, 9, 0, 2);
        let mut other_worker = RequestPool::new(&workload, 9, 1, 2);
        let (first, session) = a.take();
        assert_eq!(first.body, b.take().0.body);
        assert_ne!(first.body, other_worker.take().0.body);
        assert_eq!(session, "load-9-w0-0");
        assert_eq!(a.take().1, "load-9-w0-1");
        assert_eq!(
            a.take().1,
            "load-9-w0-0",
            "2 sessions per worker, round robin"
        );
        let json: serde_json::Value = serde_json::from_slice(&first.body).unwrap();
        assert_eq!(json["stream"], true);
        assert_eq!(json["stream_options"]["include_usage"], true);
        let max_tokens = json["max_tokens"].as_u64().unwrap();
        assert!((3..=9).contains(&max_tokens));
        let prompt = json["messages"][0]["content"].as_str().unwrap();
        assert_eq!(prompt.split(' ').count(), 5);
        assert_eq!(first.prompt_words, 5);

        let responses = Workload {
            api: Api::Responses,
            ..workload
        };
        let (first, _) = RequestPool::new(&responses, 9, 0, 2).take();
        let json: serde_json::Value = serde_json::from_slice(&first.body).unwrap();
        assert_eq!(json["stream"], true);
        assert_eq!(json["store"], false);
        assert_eq!(json["input"].as_str().unwrap().split(' ').count(), 5);
        assert!((3..=9).contains(&json["max_output_tokens"].as_u64().unwrap()));
        assert!(json.get("messages").is_none());

        let a2a = Workload {
            api: Api::A2a,
            ..responses
        };
        let mut pool = RequestPool::new(&a2a, 9, 0, 2);
        let (first, session) = pool.take();
        let (second, _) = pool.take();
        let json: serde_json::Value = serde_json::from_slice(&first.body).unwrap();
        assert_eq!(json["jsonrpc"], "2.0");
        assert_eq!(json["method"], "SendStreamingMessage");
        let message = &json["params"]["message"];
        assert_eq!(message["role"], "ROLE_USER");
        assert_eq!(message["contextId"], session.to_str().unwrap());
        assert_eq!(
            message["parts"][0]["text"]
                .as_str()
                .unwrap()
                .split(' ')
                .count(),
            5
        );
        let again: serde_json::Value = serde_json::from_slice(&second.body).unwrap();
        assert_ne!(
            message["messageId"], again["params"]["message"]["messageId"],
            "every message has an id of its own"
        );
        let plain = request_body(
            &Workload {
                stream: false,
                ..a2a
            },
            &[("user", "a \"quoted\" word".to_owned())],
            3,
        );
        let json: serde_json::Value = serde_json::from_slice(&plain).unwrap();
        assert_eq!(json["method"], "SendMessage");
        assert_eq!(
            json["params"]["message"]["parts"][0]["text"],
            "a \"quoted\" word"
        );
        assert!(json["params"]["message"].get("contextId").is_none());
    }
}
