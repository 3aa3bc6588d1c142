//! The files of a sentence-transformers model directory, read and checked before any weight is
//! loaded, so a wrong path fails with the name of the file that is missing or malformed.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::EmbedError;

/// `1_Pooling/config.json`: how token vectors become one sentence vector.
#[derive(Debug, Clone, Deserialize)]
pub struct Pooling {
    pub word_embedding_dimension: usize,
    #[serde(default)]
    pub pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pub pooling_mode_cls_token: bool,
    #[serde(default)]
    pub pooling_mode_max_tokens: bool,
    #[serde(default)]
    pub pooling_mode_mean_sqrt_len_tokens: bool,
}

impl Pooling {
    /// Whether a mode besides the mean is also asked for (sentence-transformers concatenates
    /// them; this crate computes the mean only).
    pub fn other_modes(&self) -> bool {
        self.pooling_mode_cls_token
            || self.pooling_mode_max_tokens
            || self.pooling_mode_mean_sqrt_len_tokens
    }
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: usize,
}

/// A model directory whose small files have been read.
#[derive(Debug, Clone)]
pub struct ModelDir {
    pub dir: PathBuf,
    pub pooling: Pooling,
    /// The longest input in tokens; longer texts are truncated, as sentence-transformers does.
    pub max_seq_length: usize,
}

impl ModelDir {
    pub fn read(dir: &Path) -> Result<Self, EmbedError> {
        let pooling = read_json(dir, "1_Pooling/config.json", "pooling config")?;
        let config: SentenceBertConfig = read_json(
            dir,
            "sentence_bert_config.json",
            "sentence-transformers config",
        )?;
        Ok(Self {
            dir: dir.to_owned(),
            pooling,
            max_seq_length: config.max_seq_length,
        })
    }

    pub fn bytes(&self, name: &str) -> Result<Vec<u8>, EmbedError> {
        read_bytes(&self.dir, name)
    }

    pub fn json<T: DeserializeOwned>(
        &self,
        name: &str,
        what: &'static str,
    ) -> Result<T, EmbedError> {
        read_json(&self.dir, name, what)
    }
}

fn read_bytes(dir: &Path, name: &str) -> Result<Vec<u8>, EmbedError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| EmbedError::Read { path, source })
}

fn read_json<T: DeserializeOwned>(
    dir: &Path,
    name: &str,
    what: &'static str,
) -> Result<T, EmbedError> {
    serde_json::from_slice(&read_bytes(dir, name)?).map_err(|e| EmbedError::Invalid {
        path: dir.join(name),
        what,
        reason: e.to_string(),
    })
}
