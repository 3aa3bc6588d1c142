//! The Responses API checks (`/v1/responses`, its retrieval, input items and deletion).

use protocol::openai::responses::{FunctionTool, Item, ResponseCreateRequest, ResponseInput};
use serde_json::{Value, json};

use super::{
    CATALOGUE, LONG_PROMPT, Probe, Sent, TOOL_DESCRIPTION, TOOL_NAME, TOOL_PROMPT, TOOL_RESULT,
    Verdict, result,
};
use crate::suites::conform::events::{check_order, check_sequence, response_events};
use crate::suites::conform::shape::{
    self, FUNCTION_CALL_ITEM, ITEM_LIST, OUTPUT_MESSAGE, RESPONSE, RESPONSE_USAGE, require,
};
use crate::suites::conform::{Api, CheckResult, Exchange, NOT_SERVED, sse};

const PATH: &str = "/responses";
const HELLO: &str = "Say hello in one short sentence.";

/// Every Responses check, in catalogue order. When the first request answers 404, the API is
/// not served: every check fails with that one reason (and the one exchange) instead of each
/// failing on its own.
pub async fn run(probe: &Probe<'_>) -> Vec<CheckResult> {
    let created = send(probe, &input(probe, HELLO)).await;
    if created.status() == Some(404) {
        let reason = format!("{NOT_SERVED}: POST /v1/responses answered 404");
        return CATALOGUE
            .iter()
            .filter(|s| s.api == Api::Responses)
            .map(|s| result(s.name, Verdict::Fail(reason.clone()), &[&created.exchange]))
            .collect();
    }
    let stored = created.ok_json().ok();
    let mut out = basic(&created);
    out.extend(stream(probe).await);
    out.push(max_output_tokens(probe).await);
    out.extend(tools(probe).await);
    out.push(chain(probe, &created, stored.as_ref()).await);
    out.push(store_false(probe).await);
    out.extend(retrieval(probe, &created, stored.as_ref()).await);
    out.push(delete(probe).await);
    out.push(malformed_json(probe).await);
    out.push(missing_input(probe).await);
    out.push(unknown_previous(probe).await);
    out
}

/// A request of `text` as its input.
fn input(probe: &Probe<'_>, text: &str) -> ResponseCreateRequest {
    ResponseCreateRequest {
        model: Some(probe.model.clone()),
        input: Some(ResponseInput::Text(text.to_owned())),
        ..ResponseCreateRequest::default()
    }
}

async fn send(probe: &Probe<'_>, request: &ResponseCreateRequest) -> Sent {
    let body = serde_json::to_value(request).expect("a request always encodes");
    probe.post(PATH, &body).await
}

fn id_of(body: &Value) -> Option<&str> {
    body["id"].as_str().filter(|id| !id.is_empty())
}

/// `responses.json_shape` and `responses.usage` on the first response.
fn basic(created: &Sent) -> Vec<CheckResult> {
    let body = created.ok_json();
    let shape = body.clone().and_then(|b| response_shape(&b, "completed"));
    let usage = body.and_then(|b| usage_consistent(&b));
    vec![
        result("responses.json_shape", shape, &[&created.exchange]),
        result("responses.usage", usage, &[&created.exchange]),
    ]
}

/// The response object's shape, with an assistant message in `output`.
fn response_shape(body: &Value, status: &str) -> Result<(), String> {
    require(body, RESPONSE, "the response")?;
    if body["object"] != "response" {
        return Err(format!("object is {}, not \"response\"", body["object"]));
    }
    if body["status"] != status {
        return Err(format!("status is {}, not {status:?}", body["status"]));
    }
    let message = body["output"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "message"))
        .ok_or_else(|| {
            format!(
                "output has no message item: {}",
                shape::clip(&body["output"].to_string())
            )
        })?;
    require(message, OUTPUT_MESSAGE, "the output message")?;
    if message["role"] != "assistant" {
        return Err(format!("the output message's role is {}", message["role"]));
    }
    if message["content"][0]["type"] != "output_text" {
        return Err(format!(
            "the output message's first part is {}, not output_text",
            message["content"][0]["type"]
        ));
    }
    Ok(())
}

fn usage_consistent(body: &Value) -> Result<(), String> {
    shape::usage_adds_up(body, RESPONSE_USAGE, "input_tokens", "output_tokens")
}

/// `responses.stream_events`, `.stream_sequence`, `.sse_framing` and `.stream_usage` on one
/// stream.
async fn stream(probe: &Probe<'_>) -> Vec<CheckResult> {
    let request = ResponseCreateRequest {
        stream: Some(true),
        ..input(probe, HELLO)
    };
    let sent = send(probe, &request).await;
    let exchanges = [&sent.exchange];
    let parsed = sent.ok_stream().map(sse::parse);
    let events = parsed.clone().and_then(|s| response_events(&s));
    let order = events.clone().and_then(|e| check_order(&e));
    let sequence = events.clone().and_then(|e| check_sequence(&e));
    let framing = parsed.and_then(|s| match s.problems.as_slice() {
        [] => Ok(()),
        problems => Err(problems.join("; ")),
    });
    let usage = events.and_then(|e| {
        let completed = e
            .iter()
            .find(|e| e["type"] == "response.completed")
            .ok_or("the stream has no response.completed event")?;
        usage_consistent(&completed["response"])
    });
    vec![
        result("responses.stream_events", order, &exchanges),
        result("responses.stream_sequence", sequence, &exchanges),
        result("responses.sse_framing", framing, &exchanges),
        result("responses.stream_usage", usage, &exchanges),
    ]
}

async fn max_output_tokens(probe: &Probe<'_>) -> CheckResult {
    // OpenAI's smallest accepted max_output_tokens.
    const LIMIT: u64 = 16;
    let request = ResponseCreateRequest {
        max_output_tokens: Some(LIMIT as u32),
        ..input(probe, LONG_PROMPT)
    };
    let sent = send(probe, &request).await;
    let verdict = match sent
        .ok_json()
        .and_then(|b| require(&b, RESPONSE_USAGE, "usage (needed to verify the limit)").map(|()| b))
    {
        Err(reason) => Verdict::Fail(reason),
        Ok(body) => {
            let used = body["usage"]["output_tokens"].as_u64().unwrap_or_default();
            let status = body["status"].as_str().unwrap_or_default();
            let reason = body["incomplete_details"]["reason"].as_str();
            if used > LIMIT {
                Verdict::Fail(format!(
                    "max_output_tokens {LIMIT} but usage.output_tokens is {used} (status {status:?})"
                ))
            } else if status == "incomplete" && reason == Some("max_output_tokens") {
                Verdict::Pass
            } else if status == "incomplete" {
                Verdict::Fail(format!(
                    "status \"incomplete\" but incomplete_details.reason is {reason:?}, not \"max_output_tokens\""
                ))
            } else if used == LIMIT {
                Verdict::Fail(format!(
                    "the reply used all {LIMIT} tokens but status is {status:?}, not \"incomplete\""
                ))
            } else {
                Verdict::PassNote(format!(
                    "the reply ended on its own within the limit ({used} of {LIMIT} tokens, status {status:?})"
                ))
            }
        }
    };
    result("responses.max_output_tokens", verdict, &[&sent.exchange])
}

fn function_tool() -> Vec<FunctionTool> {
    vec![FunctionTool {
        kind: "function".to_owned(),
        name: TOOL_NAME.to_owned(),
        description: Some(TOOL_DESCRIPTION.to_owned()),
        parameters: Some(super::tool_parameters()),
        strict: None,
        extra: Default::default(),
    }]
}

/// `responses.function_call`, `.function_call_round_trip` (stateless: the call and its output
/// sent back as input) and `.chain_function_call` (the output chained to the stored response
/// holding the call).
async fn tools(probe: &Probe<'_>) -> Vec<CheckResult> {
    let request = ResponseCreateRequest {
        tools: Some(function_tool()),
        tool_choice: Some(json!({"type": "function", "name": TOOL_NAME})),
        ..input(probe, TOOL_PROMPT)
    };
    let sent = send(probe, &request).await;
    let answer = sent.ok_json();
    let (verdict, call) = match &answer {
        Err(reason) => (Verdict::Fail(reason.clone()), None),
        Ok(answer) => judge_function_call(answer),
    };
    let mut out = vec![result(
        "responses.function_call",
        verdict,
        &[&sent.exchange],
    )];

    let made_up = call.is_none();
    let call = call.unwrap_or_else(
        || json!({"call_id": "call_conform_1", "arguments": "{\"city\":\"Paris\"}"}),
    );
    let call_id = call["call_id"].as_str().unwrap_or_default().to_owned();
    let output = Item::function_call_output(&call_id, TOOL_RESULT);
    let stateless = ResponseCreateRequest {
        tools: Some(function_tool()),
        input: Some(ResponseInput::Items(vec![
            Item::message("user", TOOL_PROMPT),
            Item::function_call(
                &call_id,
                TOOL_NAME,
                call["arguments"].as_str().unwrap_or_default(),
            ),
            output.clone(),
        ])),
        ..input(probe, TOOL_PROMPT)
    };
    let back = send(probe, &stateless).await;
    let mut exchanges: Vec<&Exchange> = Vec::new();
    if !made_up {
        exchanges.push(&sent.exchange);
    }
    exchanges.push(&back.exchange);
    let verdict = match back.ok_json().and_then(|b| response_shape(&b, "completed")) {
        Err(reason) => Verdict::Fail(reason),
        Ok(()) if made_up => Verdict::PassNote(
            "the model made no call, so the judge sent back a call of its own making".to_owned(),
        ),
        Ok(()) => Verdict::Pass,
    };
    out.push(result(
        "responses.function_call_round_trip",
        verdict,
        &exchanges,
    ));

    let previous = answer
        .as_ref()
        .ok()
        .and_then(|a| id_of(a).map(str::to_owned));
    let chained = match (made_up, previous) {
        (true, _) => result(
            "responses.chain_function_call",
            Verdict::NotApplicable(
                "the model never called the forced tool, so there is no stored function_call to chain to"
                    .to_owned(),
            ),
            &[&sent.exchange],
        ),
        (false, None) => result(
            "responses.chain_function_call",
            Verdict::Fail("the response holding the function_call has no id".to_owned()),
            &[&sent.exchange],
        ),
        (false, Some(previous)) => {
            let request = ResponseCreateRequest {
                tools: Some(function_tool()),
                previous_response_id: Some(previous.clone()),
                input: Some(ResponseInput::Items(vec![output])),
                ..input(probe, TOOL_PROMPT)
            };
            let next = send(probe, &request).await;
            let verdict = next
                .ok_json()
                .and_then(|b| response_shape(&b, "completed").map(|()| b))
                .and_then(|b| names_previous(&b, &previous));
            result(
                "responses.chain_function_call",
                verdict,
                &[&sent.exchange, &next.exchange],
            )
        }
    };
    out.push(chained);
    out
}

fn judge_function_call(answer: &Value) -> (Verdict, Option<Value>) {
    let call = answer["output"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "function_call"));
    let Some(call) = call else {
        return (
            Verdict::NotApplicable(format!(
                "the model answered without calling the forced tool {TOOL_NAME} \
                 (a model that cannot call tools; inconclusive): output {}",
                shape::clip(&answer["output"].to_string())
            )),
            None,
        );
    };
    let verdict = require(call, FUNCTION_CALL_ITEM, "the function_call item").and_then(|()| {
        if call["name"] != TOOL_NAME {
            return Err(format!(
                "the forced tool is {TOOL_NAME} but the call names {}",
                call["name"]
            ));
        }
        let arguments = call["arguments"].as_str().unwrap_or_default();
        serde_json::from_str::<Value>(arguments)
            .map_err(|e| format!("the arguments {arguments:?} are not JSON ({e})"))?;
        Ok(())
    });
    (verdict.into(), Some(call.clone()))
}

fn names_previous(body: &Value, previous: &str) -> Result<(), String> {
    if body["previous_response_id"] == previous {
        Ok(())
    } else {
        Err(format!(
            "previous_response_id is {}, not the chained {previous:?}",
            body["previous_response_id"]
        ))
    }
}

/// `responses.previous_response_id`: a second turn chained to the first response.
async fn chain(probe: &Probe<'_>, created: &Sent, stored: Option<&Value>) -> CheckResult {
    let Some(previous) = stored.and_then(id_of) else {
        return result(
            "responses.previous_response_id",
            Verdict::Fail("the first response failed, so there is nothing to chain to".to_owned()),
            &[&created.exchange],
        );
    };
    let request = ResponseCreateRequest {
        previous_response_id: Some(previous.to_owned()),
        ..input(probe, "And now say goodbye.")
    };
    let next = send(probe, &request).await;
    let verdict = next
        .ok_json()
        .and_then(|b| response_shape(&b, "completed").map(|()| b))
        .and_then(|b| names_previous(&b, previous));
    result(
        "responses.previous_response_id",
        verdict,
        &[&created.exchange, &next.exchange],
    )
}

/// `responses.store_false`: created, then not retrievable.
async fn store_false(probe: &Probe<'_>) -> CheckResult {
    let request = ResponseCreateRequest {
        store: Some(false),
        ..input(probe, HELLO)
    };
    let sent = send(probe, &request).await;
    let id = match sent.ok_json() {
        Err(reason) => {
            return result(
                "responses.store_false",
                Verdict::Fail(reason),
                &[&sent.exchange],
            );
        }
        Ok(body) => match id_of(&body) {
            Some(id) => id.to_owned(),
            None => {
                return result(
                    "responses.store_false",
                    Verdict::Fail("the response has no id".to_owned()),
                    &[&sent.exchange],
                );
            }
        },
    };
    let get = probe.get(&format!("{PATH}/{id}")).await;
    let verdict = match get.status() {
        Some(404) => get.client_error(),
        Some(status) if (200..300).contains(&status) => Err(format!(
            "a response created with store: false was retrieved (GET answered HTTP {status})"
        )),
        _ => Err(format!(
            "GET of a response created with store: false answered {}, not 404",
            status_text(&get)
        )),
    };
    result(
        "responses.store_false",
        verdict,
        &[&sent.exchange, &get.exchange],
    )
}

fn status_text(sent: &Sent) -> String {
    match &sent.answer {
        Ok(a) => format!("HTTP {}", a.status),
        Err(e) => e.to_string(),
    }
}

/// `responses.retrieve` and `responses.input_items` of the first response.
async fn retrieval(probe: &Probe<'_>, created: &Sent, stored: Option<&Value>) -> Vec<CheckResult> {
    let Some((stored, id)) = stored.and_then(|s| id_of(s).map(|id| (s, id))) else {
        let reason = "the first response failed, so there is nothing to retrieve".to_owned();
        return vec![
            result(
                "responses.retrieve",
                Verdict::Fail(reason.clone()),
                &[&created.exchange],
            ),
            result(
                "responses.input_items",
                Verdict::Fail(reason),
                &[&created.exchange],
            ),
        ];
    };
    let get = probe.get(&format!("{PATH}/{id}")).await;
    let retrieved = get.ok_json().and_then(|b| {
        response_shape(&b, "completed")?;
        if b["id"] != id {
            return Err(format!("GET returned id {}, not {id:?}", b["id"]));
        }
        if b["output"] != stored["output"] {
            return Err("the retrieved output differs from the created one".to_owned());
        }
        Ok(())
    });
    let items = probe.get(&format!("{PATH}/{id}/input_items")).await;
    let listed = items.ok_json().and_then(|b| {
        require(&b, ITEM_LIST, "the input item list")?;
        if b["object"] != "list" {
            return Err(format!("object is {}, not \"list\"", b["object"]));
        }
        let has_input = b["data"].as_array().is_some_and(|items| {
            items
                .iter()
                .any(|i| i["role"] == "user" && i.to_string().contains(HELLO))
        });
        if has_input {
            Ok(())
        } else {
            Err(format!(
                "data holds no user message with the input {HELLO:?}: {}",
                shape::clip(&b["data"].to_string())
            ))
        }
    });
    vec![
        result(
            "responses.retrieve",
            retrieved,
            &[&created.exchange, &get.exchange],
        ),
        result(
            "responses.input_items",
            listed,
            &[&created.exchange, &items.exchange],
        ),
    ]
}

/// `responses.delete`: a fresh stored response deleted, then 404.
async fn delete(probe: &Probe<'_>) -> CheckResult {
    let sent = send(probe, &input(probe, HELLO)).await;
    let id = match sent.ok_json() {
        Err(reason) => return result("responses.delete", Verdict::Fail(reason), &[&sent.exchange]),
        Ok(body) => id_of(&body).unwrap_or_default().to_owned(),
    };
    let deleted = probe.delete(&format!("{PATH}/{id}")).await;
    let deleted_ok = match &deleted.answer {
        Ok(a) if (200..300).contains(&a.status) => Ok(()),
        _ => Err(format!("DELETE answered {}", status_text(&deleted))),
    };
    let get = probe.get(&format!("{PATH}/{id}")).await;
    let verdict = deleted_ok.and_then(|()| match get.status() {
        Some(404) => get.client_error(),
        Some(status) if (200..300).contains(&status) => Err(format!(
            "the deleted response is still there (GET answered HTTP {status})"
        )),
        _ => Err(format!(
            "GET of the deleted response answered {}, not 404",
            status_text(&get)
        )),
    });
    result(
        "responses.delete",
        verdict,
        &[&sent.exchange, &deleted.exchange, &get.exchange],
    )
}

async fn malformed_json(probe: &Probe<'_>) -> CheckResult {
    let sent = probe
        .send(
            awc::http::Method::POST,
            PATH,
            Some(br#"{"model": "x", "input": "hi""#.to_vec()),
        )
        .await;
    result(
        "responses.error_malformed_json",
        sent.client_error(),
        &[&sent.exchange],
    )
}

async fn missing_input(probe: &Probe<'_>) -> CheckResult {
    let request = ResponseCreateRequest {
        input: None,
        ..input(probe, HELLO)
    };
    let sent = send(probe, &request).await;
    result(
        "responses.error_missing_input",
        sent.client_error(),
        &[&sent.exchange],
    )
}

async fn unknown_previous(probe: &Probe<'_>) -> CheckResult {
    let request = ResponseCreateRequest {
        previous_response_id: Some("resp_conform_does_not_exist_0000".to_owned()),
        ..input(probe, HELLO)
    };
    let sent = send(probe, &request).await;
    result(
        "responses.error_unknown_previous_response_id",
        sent.client_error(),
        &[&sent.exchange],
    )
}
