use serde::{Deserialize, Serialize};

/// `GET /v1/models` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelList {
    /// Always `list`.
    pub object: String,
    pub data: Vec<Model>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Model {
    pub id: String,
    /// Always `model`.
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub created: i64,
    #[serde(default)]
    pub owned_by: String,
}

impl ModelList {
    pub fn new(data: Vec<Model>) -> Self {
        Self {
            object: "list".into(),
            data,
        }
    }
}
