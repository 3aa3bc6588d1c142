//! `POST /control/memory/recall`: what the agent would recall for a text, without answering or
//! storing anything. Lets a benchmark measure retrieval apart from the answer model: each item
//! names the dataset turns it came from (the ids the judge sent with them in [`TURN_ID`]).
//!
//! Scoped by `X-Session-Id` like every control request. A target without it answers 404, and the
//! judge then reports recall@k as not applicable.
//!
//! [`TURN_ID`]: crate::headers::TURN_ID

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Body of `POST /control/memory/recall`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecallRequest {
    /// The text to recall for (a question, as the user would ask it).
    pub text: String,
    /// Most items to return, best first.
    pub limit: u32,
}

/// Answer of `POST /control/memory/recall`: the items, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecallResponse {
    pub items: Vec<RecalledItem>,
}

/// One recalled memory item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecalledItem {
    /// The item as the agent keeps it.
    pub text: String,
    /// Ids of the ingested turns it came from (from [`TURN_ID`](crate::headers::TURN_ID)); empty
    /// when the agent cannot tell.
    #[serde(default)]
    pub source_turn_ids: Vec<String>,
    /// The item's overall rank score, when the agent has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Why it ranked where it did: named component scores (for example `bm25`, `recency`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub why: BTreeMap<String, f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_without_ids_or_scores_are_read() {
        let response: RecallResponse =
            serde_json::from_str(r#"{"items":[{"text":"Ana paints"}]}"#).unwrap();
        assert_eq!(response.items[0].source_turn_ids, Vec::<String>::new());
        assert_eq!(response.items[0].score, None);
        let sent = serde_json::to_value(RecalledItem {
            text: "t".to_owned(),
            source_turn_ids: vec!["D1:3".to_owned()],
            score: Some(0.5),
            why: BTreeMap::from([("bm25".to_owned(), 0.4)]),
        })
        .unwrap();
        assert_eq!(sent["source_turn_ids"][0], "D1:3");
        assert_eq!(sent["why"]["bm25"], 0.4);
    }
}
