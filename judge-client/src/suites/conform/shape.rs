//! JSON shapes the conformance checks require: which fields an OpenAI client reads, with which
//! JSON type, as the OpenAI API reference and the official Python SDK's types declare them
//! (`openai.types.chat.ChatCompletion`, `openai.types.responses.Response`, `ErrorObject`, ...).
//! A field the SDK marks optional is only required where a check says why.

use serde_json::Value;

/// The JSON type a field must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Int,
    /// Any JSON number.
    Num,
    Bool,
    Array,
    Object,
    /// A string or `null`; the key must be present.
    StrOrNull,
    /// Any value, `null` included; the key must be present.
    Present,
}

impl Kind {
    fn accepts(self, value: &Value) -> bool {
        match self {
            Kind::Str => value.is_string(),
            Kind::Int => value.is_i64() || value.is_u64(),
            Kind::Num => value.is_number(),
            Kind::Bool => value.is_boolean(),
            Kind::Array => value.is_array(),
            Kind::Object => value.is_object(),
            Kind::StrOrNull => value.is_string() || value.is_null(),
            Kind::Present => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Str => "a string",
            Kind::Int => "an integer",
            Kind::Num => "a number",
            Kind::Bool => "a boolean",
            Kind::Array => "an array",
            Kind::Object => "an object",
            Kind::StrOrNull => "a string or null",
            Kind::Present => "present",
        }
    }
}

/// Dotted paths (array indexes as numbers: `choices.0.message`) and the type each must have.
pub type Spec = &'static [(&'static str, Kind)];

pub const CHAT_COMPLETION: Spec = &[
    ("id", Kind::Str),
    ("object", Kind::Str),
    ("created", Kind::Int),
    ("model", Kind::Str),
    ("choices", Kind::Array),
    ("choices.0.index", Kind::Int),
    ("choices.0.message", Kind::Object),
    ("choices.0.message.role", Kind::Str),
    ("choices.0.finish_reason", Kind::Str),
];

pub const CHAT_CHUNK: Spec = &[
    ("id", Kind::Str),
    ("object", Kind::Str),
    ("created", Kind::Int),
    ("model", Kind::Str),
    ("choices", Kind::Array),
];

pub const CHAT_USAGE: Spec = &[
    ("usage", Kind::Object),
    ("usage.prompt_tokens", Kind::Int),
    ("usage.completion_tokens", Kind::Int),
    ("usage.total_tokens", Kind::Int),
];

pub const CHAT_TOOL_CALL: Spec = &[
    ("id", Kind::Str),
    ("type", Kind::Str),
    ("function.name", Kind::Str),
    ("function.arguments", Kind::Str),
];

pub const RESPONSE: Spec = &[
    ("id", Kind::Str),
    ("object", Kind::Str),
    ("created_at", Kind::Num),
    ("status", Kind::Str),
    ("model", Kind::Str),
    ("output", Kind::Array),
    ("parallel_tool_calls", Kind::Bool),
    ("tool_choice", Kind::Present),
    ("tools", Kind::Array),
];

pub const RESPONSE_USAGE: Spec = &[
    ("usage", Kind::Object),
    ("usage.input_tokens", Kind::Int),
    ("usage.output_tokens", Kind::Int),
    ("usage.total_tokens", Kind::Int),
    ("usage.input_tokens_details.cached_tokens", Kind::Int),
    ("usage.output_tokens_details.reasoning_tokens", Kind::Int),
];

/// An assistant message item of `output`.
pub const OUTPUT_MESSAGE: Spec = &[
    ("type", Kind::Str),
    ("id", Kind::Str),
    ("role", Kind::Str),
    ("status", Kind::Str),
    ("content", Kind::Array),
    ("content.0.type", Kind::Str),
    ("content.0.text", Kind::Str),
    ("content.0.annotations", Kind::Array),
];

pub const FUNCTION_CALL_ITEM: Spec = &[
    ("type", Kind::Str),
    ("call_id", Kind::Str),
    ("name", Kind::Str),
    ("arguments", Kind::Str),
];

pub const ITEM_LIST: Spec = &[
    ("object", Kind::Str),
    ("data", Kind::Array),
    ("first_id", Kind::Str),
    ("last_id", Kind::Str),
    ("has_more", Kind::Bool),
];

/// OpenAI's error envelope: `{"error": {"message", "type", "param", "code"}}`, all four keys
/// present (`param` and `code` may be null; some servers send a numeric code).
pub const ERROR: Spec = &[
    ("error", Kind::Object),
    ("error.message", Kind::Str),
    ("error.type", Kind::Str),
    ("error.param", Kind::StrOrNull),
    ("error.code", Kind::Present),
];

fn lookup<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, segment| match v {
        Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        Value::Object(map) => map.get(segment),
        _ => None,
    })
}

/// What `value` lacks of `spec`, one line per field (empty when it has the shape).
pub fn missing(value: &Value, spec: Spec) -> Vec<String> {
    spec.iter()
        .filter_map(|(path, kind)| match lookup(value, path) {
            None => Some(format!("`{path}` is missing (must be {})", kind.name())),
            Some(v) if !kind.accepts(v) => Some(format!(
                "`{path}` is {} (must be {})",
                clip(&v.to_string()),
                kind.name()
            )),
            Some(_) => None,
        })
        .collect()
}

/// `body.usage` has the shape `spec` and its `total_tokens` is the sum of its `input` and
/// `output` fields (`prompt_tokens` and `completion_tokens` in Chat Completions, `input_tokens`
/// and `output_tokens` in the Responses API).
pub fn usage_adds_up(body: &Value, spec: Spec, input: &str, output: &str) -> Result<(), String> {
    require(body, spec, "usage")?;
    let usage = &body["usage"];
    let count = |field: &str| usage[field].as_u64().unwrap_or_default();
    let (i, o, t) = (count(input), count(output), count("total_tokens"));
    if i + o != t {
        return Err(format!(
            "total_tokens {t} is not {input} {i} + {output} {o}"
        ));
    }
    Ok(())
}

/// `Ok` when `value` has the shape, else every problem in one line.
pub fn require(value: &Value, spec: Spec, what: &str) -> Result<(), String> {
    let problems = missing(value, spec);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {}", problems.join("; ")))
    }
}

pub fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(120).collect();
    if text.chars().count() > 120 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_names_every_absent_or_mistyped_field() {
        let error = json!({"error": {"message": "bad", "type": "invalid_request_error", "param": null, "code": null}});
        assert!(missing(&error, ERROR).is_empty());
        let partial = json!({"error": {"message": "bad", "param": 3}});
        let problems = missing(&partial, ERROR);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("`error.type` is missing"));
        assert!(problems[1].contains("`error.param` is 3"));
        let chat =
            json!({"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]});
        assert!(missing(&chat, CHAT_COMPLETION)[0].contains("choices.0.index"));
    }
}
