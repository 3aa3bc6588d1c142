use serde::{Deserialize, Deserializer, Serialize};

/// `GET /v1/models` answer. Lenient as it arrives: servers that leave out `object`, or send
/// `null` for a model's `object`, `created` or `owned_by`, are read as if they had sent the
/// defaults; unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelList {
    /// Always `list`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub object: String,
    pub data: Vec<Model>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Model {
    pub id: String,
    /// Always `model`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub object: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub created: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub owned_by: String,
}

/// A field that may be `null`, read as its default.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl ModelList {
    pub fn new(data: Vec<Model>) -> Self {
        Self {
            object: "list".into(),
            data,
        }
    }

    /// The listed model ids, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.data.iter().map(|m| m.id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_from_other_servers_are_read_leniently() {
        let list: ModelList = serde_json::from_str(
            r#"{"data": [{"id": "a", "created": null, "owned_by": null, "root": "a"},
                         {"id": "b", "object": null}], "extra": 1}"#,
        )
        .unwrap();
        assert_eq!(list.ids().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!((list.object.as_str(), list.data[0].created), ("", 0));
        assert!(serde_json::from_str::<ModelList>(r#"{"object": "list"}"#).is_err());
    }
}
