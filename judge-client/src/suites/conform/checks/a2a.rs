//! The A2A checks (A2A 1.0, JSON-RPC binding; docs/contracts/a2a.md): the agent card at the base
//! URL, then JSON-RPC calls to the interface it names, each with `A2A-Version: 1.0`.
//!
//! When the card is not served (404 or 405), every A2A check fails with that one reason; when it
//! names no JSON-RPC interface of A2A 1.x, the checks that need one fail with that reason.

use awc::http::Method;
use protocol::a2a::{
    AGENT_CARD_PATH, BINDING_JSONRPC, ErrorCode, PROTOCOL_VERSION, TaskState, VERSION_HEADER,
};
use serde_json::{Value, json};

use super::{CATALOGUE, Probe, Sent, Verdict, result};
use crate::suites::conform::shape::clip;
use crate::suites::conform::{Api, CheckResult, NOT_SERVED, sse};

/// The context the checks' messages are sent in.
const CONTEXT: &str = "agentwall-conform";
const HELLO: &str = "Say hello in one short sentence.";

fn version() -> Vec<(&'static str, String)> {
    vec![(VERSION_HEADER, PROTOCOL_VERSION.to_owned())]
}

/// A JSON-RPC request.
fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `SendMessage` (or another method taking its params) of one text message in the checks'
/// context.
fn send_params(message_id: &str, text: &str, tenant: Option<&str>) -> Value {
    let mut params = json!({"message": {
        "messageId": message_id,
        "contextId": CONTEXT,
        "role": "ROLE_USER",
        "parts": [{"text": text}]
    }});
    if let Some(tenant) = tenant {
        params["tenant"] = tenant.into();
    }
    params
}

/// The interface the checks call: its URL, tenant and whether the card declares streaming.
struct Interface {
    url: String,
    tenant: Option<String>,
    streaming: bool,
}

/// Every A2A check, in catalogue order.
pub async fn run(probe: &Probe<'_>) -> Vec<CheckResult> {
    let card_url = format!("{}{AGENT_CARD_PATH}", probe.client.base_url());
    let card = probe
        .send_url(Method::GET, &card_url, None, &version())
        .await;
    if matches!(card.status(), Some(404 | 405)) {
        let reason = format!(
            "{NOT_SERVED}: GET {AGENT_CARD_PATH} answered {}",
            card.status().unwrap_or_default()
        );
        return every(Verdict::Fail(reason), &card);
    }
    let body = card.ok_json();
    let shape = body.clone().and_then(|b| card_shape(&b));
    let mut out = vec![result("a2a.agent_card", shape, &[&card.exchange])];
    let interface = body.and_then(|b| interface(&b));
    let interface = match interface {
        Ok(interface) => interface,
        Err(why) => {
            let reason = format!("no JSON-RPC interface to call: {why}");
            out.extend(
                every(Verdict::Fail(reason), &card)
                    .into_iter()
                    .filter(|c| c.name != "a2a.agent_card"),
            );
            return out;
        }
    };
    out.extend(send_message(probe, &interface).await);
    out.extend(stream(probe, &interface).await);
    out.push(malformed_json(probe, &interface).await);
    out.push(
        expect_error(
            probe,
            &interface,
            "a2a.error_invalid_request",
            json!({"jsonrpc": "2.0", "id": "no-method"}),
            ErrorCode::InvalidRequest,
            &version(),
        )
        .await,
    );
    out.push(
        expect_error(
            probe,
            &interface,
            "a2a.error_unknown_method",
            rpc("unknown".into(), "Frobnicate", json!({})),
            ErrorCode::MethodNotFound,
            &version(),
        )
        .await,
    );
    let mut no_message = json!({});
    if let Some(tenant) = &interface.tenant {
        no_message["tenant"] = tenant.as_str().into();
    }
    out.push(
        expect_error(
            probe,
            &interface,
            "a2a.error_invalid_params",
            rpc("no-message".into(), "SendMessage", no_message),
            ErrorCode::InvalidParams,
            &version(),
        )
        .await,
    );
    out.push(
        expect_error(
            probe,
            &interface,
            "a2a.error_task_not_found",
            rpc(
                "unknown-task".into(),
                "GetTask",
                json!({"id": "agentwall-conform-no-such-task"}),
            ),
            ErrorCode::TaskNotFound,
            &version(),
        )
        .await,
    );
    out.push(
        expect_error(
            probe,
            &interface,
            "a2a.error_version_not_supported",
            rpc(
                "version".into(),
                "SendMessage",
                send_params(
                    "agentwall-conform-version",
                    HELLO,
                    interface.tenant.as_deref(),
                ),
            ),
            ErrorCode::VersionNotSupported,
            &[(VERSION_HEADER, "99.0".to_owned())],
        )
        .await,
    );
    out
}

/// Every A2A check with the same verdict and exchange.
fn every(verdict: Verdict, sent: &Sent) -> Vec<CheckResult> {
    CATALOGUE
        .iter()
        .filter(|s| s.api == Api::A2a)
        .map(|s| result(s.name, verdict.clone(), &[&sent.exchange]))
        .collect()
}

/// A string field that must be there and not empty.
fn string(value: &Value, path: &str, what: &str) -> Result<(), String> {
    let field = path
        .split('.')
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str);
    match field {
        Some(s) if !s.is_empty() => Ok(()),
        _ => Err(format!("{what}: {path} is not a non-empty string")),
    }
}

fn strings(value: &Value, key: &str, what: &str) -> Result<(), String> {
    match value.get(key).and_then(Value::as_array) {
        Some(items) if items.iter().all(Value::is_string) => Ok(()),
        _ => Err(format!("{what}: {key} is not a list of strings")),
    }
}

/// The card's required fields (a2a.proto's `REQUIRED` ones) and a JSON-RPC interface of 1.x.
fn card_shape(card: &Value) -> Result<(), String> {
    for key in ["name", "description", "version"] {
        string(card, key, "the agent card")?;
    }
    if !card.get("capabilities").is_some_and(Value::is_object) {
        return Err("the agent card: capabilities is not an object".to_owned());
    }
    for key in ["defaultInputModes", "defaultOutputModes"] {
        strings(card, key, "the agent card")?;
    }
    let skills = card
        .get("skills")
        .and_then(Value::as_array)
        .ok_or("the agent card: skills is not a list")?;
    for (i, skill) in skills.iter().enumerate() {
        let what = format!("skills[{i}]");
        for key in ["id", "name", "description"] {
            string(skill, key, &what)?;
        }
        strings(skill, "tags", &what)?;
    }
    let interfaces = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .filter(|i| !i.is_empty())
        .ok_or("the agent card: supportedInterfaces is not a non-empty list")?;
    for (i, interface) in interfaces.iter().enumerate() {
        let what = format!("supportedInterfaces[{i}]");
        for key in ["url", "protocolBinding", "protocolVersion"] {
            string(interface, key, &what)?;
        }
    }
    interface(card).map(|_| ())
}

/// The first JSON-RPC interface of A2A 1.x the card names.
fn interface(card: &Value) -> Result<Interface, String> {
    let parsed: protocol::a2a::AgentCard = serde_json::from_value(card.clone())
        .map_err(|e| format!("the agent card does not parse ({e})"))?;
    let interface = parsed.interface(BINDING_JSONRPC).ok_or_else(|| {
        format!("supportedInterfaces names no {BINDING_JSONRPC} interface of protocol version 1.x")
    })?;
    Ok(Interface {
        url: interface.url.clone(),
        tenant: interface.tenant.clone().filter(|t| !t.is_empty()),
        streaming: parsed.capabilities.streaming == Some(true),
    })
}

/// The `result` of a JSON-RPC success answering `id`.
fn rpc_result(body: &Value, id: &Value) -> Result<Value, String> {
    if body["jsonrpc"] != "2.0" {
        return Err(format!("jsonrpc is {}, not \"2.0\"", body["jsonrpc"]));
    }
    if &body["id"] != id {
        return Err(format!("id is {}, not the request's {id}", body["id"]));
    }
    if let Some(error) = body.get("error") {
        return Err(format!(
            "a JSON-RPC error answered: {}",
            clip(&error.to_string())
        ));
    }
    body.get("result")
        .cloned()
        .ok_or_else(|| "the answer has neither result nor error".to_owned())
}

/// The one field of a `oneof` object that is set, among `fields`.
fn oneof<'v>(
    value: &'v Value,
    fields: &[&'static str],
) -> Result<(&'static str, &'v Value), String> {
    let set: Vec<&'static str> = fields
        .iter()
        .copied()
        .filter(|f| value.get(*f).is_some_and(|v| !v.is_null()))
        .collect();
    match set.as_slice() {
        [one] => Ok((one, &value[*one])),
        [] => Err(format!("none of {} is set", fields.join(", "))),
        many => Err(format!("more than one of {} is set", many.join(", "))),
    }
}

/// Every part has exactly one of text, raw, url, data.
fn parts_shape(parts: &Value, what: &str) -> Result<(), String> {
    let parts = parts
        .as_array()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| format!("{what}: parts is not a non-empty list"))?;
    for (i, part) in parts.iter().enumerate() {
        oneof(part, &["text", "raw", "url", "data"])
            .map_err(|e| format!("{what}: parts[{i}]: {e}"))?;
    }
    Ok(())
}

fn agent_message_shape(message: &Value, what: &str) -> Result<(), String> {
    string(message, "messageId", what)?;
    if message["role"] != "ROLE_AGENT" {
        return Err(format!(
            "{what}: role is {}, not \"ROLE_AGENT\"",
            message["role"]
        ));
    }
    parts_shape(&message["parts"], what)
}

/// A state by its proto name, when it is one.
fn state_of(status: &Value) -> Result<TaskState, String> {
    let name = status["state"]
        .as_str()
        .ok_or_else(|| format!("status.state is {}, not a state name", status["state"]))?;
    match TaskState::parse(name) {
        TaskState::Other(_) | TaskState::Unspecified => Err(format!(
            "status.state {name:?} is not one of the TASK_STATE_ names"
        )),
        state if name != state.as_str() => Err(format!(
            "status.state {name:?} is A2A 0.3's name; 1.0 writes {:?}",
            state.as_str()
        )),
        state => Ok(state),
    }
}

fn task_shape(task: &Value) -> Result<TaskState, String> {
    string(task, "id", "the task")?;
    let state = state_of(&task["status"]).map_err(|e| format!("the task: {e}"))?;
    for (i, artifact) in task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        string(artifact, "artifactId", &format!("artifacts[{i}]"))?;
        parts_shape(&artifact["parts"], &format!("artifacts[{i}]"))?;
    }
    if let Some(message) = task["status"].get("message") {
        agent_message_shape(message, "status.message")?;
    }
    Ok(state)
}

/// `a2a.send_message`, `a2a.task_state`, `a2a.get_task` and `a2a.cancel_terminal` on one
/// `SendMessage`.
async fn send_message(probe: &Probe<'_>, interface: &Interface) -> Vec<CheckResult> {
    let id = json!(1);
    let request = rpc(
        id.clone(),
        "SendMessage",
        send_params("agentwall-conform-1", HELLO, interface.tenant.as_deref()),
    );
    let sent = probe.post_url(&interface.url, &request).await;
    let answer = sent.ok_json().and_then(|b| rpc_result(&b, &id));
    let payload = answer.and_then(|r| {
        let (kind, value) =
            oneof(&r, &["task", "message"]).map_err(|e| format!("the SendMessage result: {e}"))?;
        Ok((kind, value.clone()))
    });
    let shape = payload.clone().and_then(|(kind, value)| match kind {
        "message" => agent_message_shape(&value, "the message"),
        _ => task_shape(&value).map(|_| ()),
    });
    let mut out = vec![result("a2a.send_message", shape, &[&sent.exchange])];
    let task = match payload {
        Ok(("task", task)) => task,
        Ok(_) => {
            let why = Verdict::NotApplicable(
                "SendMessage answered a message, not a task: there is no task to check".into(),
            );
            for name in ["a2a.task_state", "a2a.get_task", "a2a.cancel_terminal"] {
                out.push(result(name, why.clone(), &[&sent.exchange]));
            }
            return out;
        }
        Err(e) => {
            let why = Verdict::Fail(format!("no task to check: {e}"));
            for name in ["a2a.task_state", "a2a.get_task", "a2a.cancel_terminal"] {
                out.push(result(name, why.clone(), &[&sent.exchange]));
            }
            return out;
        }
    };
    let state = task_shape(&task);
    let task_state = state.clone().and_then(|state| {
        if task["contextId"] != CONTEXT {
            return Err(format!(
                "contextId is {}, not the message's {CONTEXT:?}",
                task["contextId"]
            ));
        }
        if !state.is_final() {
            return Err(format!(
                "a blocking SendMessage answered the task in state {state}, neither terminal nor \
                 interrupted"
            ));
        }
        Ok(())
    });
    out.push(result("a2a.task_state", task_state, &[&sent.exchange]));
    let task_id = task["id"].as_str().unwrap_or_default().to_owned();
    let get_id = json!("get");
    let mut params = json!({"id": task_id});
    if let Some(tenant) = &interface.tenant {
        params["tenant"] = tenant.as_str().into();
    }
    let got = probe
        .post_url(
            &interface.url,
            &rpc(get_id.clone(), "GetTask", params.clone()),
        )
        .await;
    let get = got
        .ok_json()
        .and_then(|b| rpc_result(&b, &get_id))
        .and_then(|t| {
            let got_state = task_shape(&t)?;
            if t["id"] != task["id"] || t["contextId"] != task["contextId"] {
                return Err(format!(
                    "GetTask answered the task {} in context {}, not {} in {}",
                    t["id"], t["contextId"], task["id"], task["contextId"]
                ));
            }
            match &state {
                Ok(sent_state) if sent_state.is_terminal() && &got_state != sent_state => Err(
                    format!("the task was {sent_state} when sent and is {got_state} now"),
                ),
                _ => Ok(()),
            }
        });
    out.push(result(
        "a2a.get_task",
        get,
        &[&sent.exchange, &got.exchange],
    ));
    let cancel = match state {
        Ok(state) if state.is_terminal() => {
            expect_error(
                probe,
                interface,
                "a2a.cancel_terminal",
                rpc("cancel".into(), "CancelTask", params),
                ErrorCode::TaskNotCancelable,
                &version(),
            )
            .await
        }
        _ => result(
            "a2a.cancel_terminal",
            Verdict::NotApplicable("the task SendMessage returned is not terminal".into()),
            &[&sent.exchange],
        ),
    };
    out.push(cancel);
    out
}

/// `a2a.stream_events`, `a2a.sse_framing` (a card that declares streaming) and
/// `a2a.stream_unsupported` (one that does not) on one `SendStreamingMessage`.
async fn stream(probe: &Probe<'_>, interface: &Interface) -> Vec<CheckResult> {
    let id = json!("stream");
    let request = rpc(
        id.clone(),
        "SendStreamingMessage",
        send_params(
            "agentwall-conform-stream",
            HELLO,
            interface.tenant.as_deref(),
        ),
    );
    let sent = probe.post_url(&interface.url, &request).await;
    let exchanges = [&sent.exchange];
    if !interface.streaming {
        let refused = refused_with(&sent, ErrorCode::UnsupportedOperation);
        let why = Verdict::NotApplicable("the card does not declare capabilities.streaming".into());
        return vec![
            result("a2a.stream_events", why.clone(), &exchanges),
            result("a2a.sse_framing", why, &exchanges),
            result("a2a.stream_unsupported", refused, &exchanges),
        ];
    }
    let parsed = sent.ok_stream().map(sse::parse);
    let events = parsed.clone().and_then(|s| stream_order(&s, &id));
    let framing = parsed.and_then(|s| match s.problems.as_slice() {
        [] => Ok(()),
        problems => Err(problems.join("; ")),
    });
    vec![
        result("a2a.stream_events", events, &exchanges),
        result("a2a.sse_framing", framing, &exchanges),
        result(
            "a2a.stream_unsupported",
            Verdict::NotApplicable("the card declares capabilities.streaming".into()),
            &exchanges,
        ),
    ]
}

/// A stream's events: JSON-RPC results answering `id`, each a `StreamResponse`; a message
/// alone, or a task first and then updates of that task, the final one (terminal or
/// interrupted) last.
fn stream_order(stream: &sse::SseStream, id: &Value) -> Result<(), String> {
    let mut kinds = Vec::new();
    let mut task_id: Option<String> = None;
    let mut final_at = None;
    for (i, data) in stream.data().enumerate() {
        let body: Value = serde_json::from_str(data)
            .map_err(|e| format!("event {i} is not JSON ({e}): {}", clip(data)))?;
        let result = rpc_result(&body, id).map_err(|e| format!("event {i}: {e}"))?;
        let (kind, value) = oneof(
            &result,
            &["task", "message", "statusUpdate", "artifactUpdate"],
        )
        .map_err(|e| format!("event {i}: {e}"))?;
        if final_at.is_some() {
            return Err(format!("event {i} ({kind}) comes after the final event"));
        }
        match (i, kind) {
            (0, "message") => {
                agent_message_shape(value, "the message")?;
                final_at = Some(i);
            }
            (0, "task") => {
                let state = task_shape(value)?;
                task_id = value["id"].as_str().map(str::to_owned);
                if state.is_final() {
                    final_at = Some(i);
                }
            }
            (0, other) => {
                return Err(format!(
                    "the stream begins with {other}, not a task or a message"
                ));
            }
            (_, "statusUpdate" | "artifactUpdate") => {
                if value["taskId"].as_str() != task_id.as_deref() {
                    return Err(format!(
                        "event {i} ({kind}) is about task {}, not the stream's {}",
                        value["taskId"],
                        task_id.as_deref().unwrap_or("?")
                    ));
                }
                if kind == "statusUpdate" && state_of(&value["status"])?.is_final() {
                    final_at = Some(i);
                }
                if kind == "artifactUpdate" {
                    parts_shape(
                        &value["artifact"]["parts"],
                        &format!("event {i}'s artifact"),
                    )?;
                }
            }
            (_, other) => {
                return Err(format!(
                    "event {i} is a {other} after the stream's first event"
                ));
            }
        }
        kinds.push(kind);
    }
    if kinds.is_empty() {
        return Err("the stream has no event".to_owned());
    }
    if final_at.is_none() {
        return Err(format!(
            "the stream ({}) ends without a final event (a message, or a terminal or interrupted \
             state)",
            kinds.join(", ")
        ));
    }
    Ok(())
}

/// Whether `sent` was answered with a JSON-RPC error of `code`.
fn refused_with(sent: &Sent, code: ErrorCode) -> Result<(), String> {
    let answer = sent.answer.as_ref().map_err(ToString::to_string)?;
    let body: Value = serde_json::from_slice(&answer.body).map_err(|e| {
        format!(
            "HTTP {}, and the body is not JSON ({e}): {}",
            answer.status,
            clip(&String::from_utf8_lossy(&answer.body))
        )
    })?;
    if body["jsonrpc"] != "2.0" {
        return Err(format!("jsonrpc is {}, not \"2.0\"", body["jsonrpc"]));
    }
    let got = body["error"]["code"].as_i64().ok_or_else(|| {
        format!(
            "expected JSON-RPC error {code}, got {}",
            clip(&body.to_string())
        )
    })?;
    if got != code.code() {
        return Err(format!("expected JSON-RPC error {code}, got code {got}"));
    }
    if !body["error"]["message"].is_string() {
        return Err("the error has no message".to_owned());
    }
    Ok(())
}

/// A request answered with JSON-RPC error `code`.
async fn expect_error(
    probe: &Probe<'_>,
    interface: &Interface,
    name: &str,
    request: Value,
    code: ErrorCode,
    headers: &[(&'static str, String)],
) -> CheckResult {
    let sent = probe
        .send_url(
            Method::POST,
            &interface.url,
            Some(request.to_string().into_bytes()),
            headers,
        )
        .await;
    let verdict = refused_with(&sent, code).and_then(|()| {
        let answer = sent.answer.as_ref().map_err(ToString::to_string)?;
        let body: Value = serde_json::from_slice(&answer.body).map_err(|e| e.to_string())?;
        match request.get("id") {
            Some(id) if body["id"] != *id => {
                Err(format!("id is {}, not the request's {id}", body["id"]))
            }
            _ => Ok(()),
        }
    });
    result(name, verdict, &[&sent.exchange])
}

/// `a2a.error_malformed_json`: a parse error, with `id` null (the request's could not be read).
async fn malformed_json(probe: &Probe<'_>, interface: &Interface) -> CheckResult {
    let sent = probe
        .send_url(
            Method::POST,
            &interface.url,
            Some(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ".to_vec()),
            &version(),
        )
        .await;
    let verdict = refused_with(&sent, ErrorCode::ParseError).and_then(|()| {
        let answer = sent.answer.as_ref().map_err(ToString::to_string)?;
        let body: Value = serde_json::from_slice(&answer.body).map_err(|e| e.to_string())?;
        if body.get("id") != Some(&Value::Null) {
            return Err(format!("id is {}, not null", body["id"]));
        }
        Ok(())
    });
    result("a2a.error_malformed_json", verdict, &[&sent.exchange])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::conform::sse::parse;

    fn line(result: Value) -> String {
        format!(
            "data: {}\n\n",
            json!({"jsonrpc": "2.0", "id": "s", "result": result})
        )
    }

    #[test]
    fn a_task_stream_must_end_on_its_final_event() {
        let task = json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}});
        let chunk = json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "hi"}]}}});
        let done = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let good = parse(
            format!(
                "{}{}{}",
                line(task.clone()),
                line(chunk.clone()),
                line(done.clone())
            )
            .as_bytes(),
        );
        assert_eq!(stream_order(&good, &json!("s")), Ok(()));
        let late = parse(
            format!(
                "{}{}{}",
                line(task.clone()),
                line(done.clone()),
                line(chunk.clone())
            )
            .as_bytes(),
        );
        assert!(
            stream_order(&late, &json!("s"))
                .unwrap_err()
                .contains("after the final event")
        );
        let unfinished = parse(format!("{}{}", line(task.clone()), line(chunk.clone())).as_bytes());
        assert!(
            stream_order(&unfinished, &json!("s"))
                .unwrap_err()
                .contains("without a final event")
        );
        let headless = parse(line(chunk).as_bytes());
        assert!(
            stream_order(&headless, &json!("s"))
                .unwrap_err()
                .contains("begins with")
        );
        let message =
            json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}});
        assert_eq!(
            stream_order(&parse(line(message).as_bytes()), &json!("s")),
            Ok(())
        );
        let old_names = json!({"task": {"id": "t", "status": {"state": "completed"}}});
        assert!(
            stream_order(&parse(line(old_names).as_bytes()), &json!("s"))
                .unwrap_err()
                .contains("0.3")
        );
    }

    #[test]
    fn a_card_needs_its_required_fields_and_a_jsonrpc_interface() {
        let card = json!({
            "name": "n", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}]
        });
        assert_eq!(card_shape(&card), Ok(()));
        let mut grpc = card.clone();
        grpc["supportedInterfaces"][0]["protocolBinding"] = "GRPC".into();
        assert!(card_shape(&grpc).unwrap_err().contains("JSONRPC"));
        let mut no_skills = card.clone();
        no_skills.as_object_mut().unwrap().remove("skills");
        assert!(card_shape(&no_skills).is_err());
        let mut untagged = card;
        untagged["skills"][0]
            .as_object_mut()
            .unwrap()
            .remove("tags");
        assert!(card_shape(&untagged).unwrap_err().contains("tags"));
    }
}
