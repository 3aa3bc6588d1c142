use serde::{Deserialize, Serialize};

/// OpenAI's error envelope: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorObject {
    pub message: String,
    /// Error class, such as `invalid_request_error`. Some servers omit it.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The request field or header at fault, if one is.
    #[serde(default)]
    pub param: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub code: Option<ErrorCode>,
}

/// OpenAI sends string codes (`"invalid_api_key"`); some compatible servers send numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ErrorCode {
    Text(String),
    Number(i64),
}

impl ErrorBody {
    pub fn new(
        message: impl Into<String>,
        kind: impl Into<String>,
        param: Option<String>,
        code: Option<&str>,
    ) -> Self {
        Self {
            error: ErrorObject {
                message: message.into(),
                kind: kind.into(),
                param,
                code: code.map(|c| ErrorCode::Text(c.to_owned())),
            },
        }
    }
}
