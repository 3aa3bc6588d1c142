//! Sentence embeddings computed in process, with no server: a sentence-transformers model
//! directory holding a BERT encoder (all-MiniLM-L6-v2 and its kin) run on the CPU with candle.
//!
//! A sentence-transformers directory holds `config.json` (the BERT shape), `tokenizer.json`,
//! `model.safetensors`, `sentence_bert_config.json` (the longest input, in tokens) and
//! `1_Pooling/config.json` (how token vectors become one sentence vector). [`SentenceModel`]
//! reads all five and reproduces what `SentenceTransformer.encode(..., normalize_embeddings=True)`
//! returns: the attention-masked mean of the last layer's token vectors, L2-normalised.
//!
//! Inference is synchronous and CPU-bound: async callers run it on a blocking thread, in batches.

mod model_dir;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

pub use model_dir::ModelDir;

/// Why a model could not be loaded or a batch not embedded.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid {what}: {reason}")]
    Invalid {
        path: PathBuf,
        what: &'static str,
        reason: String,
    },
    #[error("unsupported model: {0}")]
    Unsupported(String),
    #[error("tokenizer failed: {0}")]
    Tokenizer(String),
    #[error("model inference failed: {0}")]
    Inference(#[from] candle_core::Error),
}

/// A sentence-transformers BERT model, loaded once and shared by reference.
pub struct SentenceModel {
    bert: BertModel,
    tokenizer: Tokenizer,
    dimension: usize,
    name: String,
}

impl std::fmt::Debug for SentenceModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceModel")
            .field("name", &self.name)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

impl SentenceModel {
    /// Loads the model in `dir` (see the crate doc for the files it needs).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let files = ModelDir::read(dir)?;
        let config: Config = files.json("config.json", "BERT config")?;
        if !files.pooling.pooling_mode_mean_tokens || files.pooling.other_modes() {
            return Err(EmbedError::Unsupported(format!(
                "{} pools other than by the mean of token vectors",
                dir.display()
            )));
        }
        let weights = files.bytes("model.safetensors")?;
        // Buffered, not memory-mapped: the workspace forbids `unsafe`, which mmap needs.
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
        let bert = BertModel::load(vb, &config)?;

        let mut tokenizer =
            Tokenizer::from_file(dir.join("tokenizer.json")).map_err(|e| EmbedError::Invalid {
                path: dir.join("tokenizer.json"),
                what: "tokenizer",
                reason: e.to_string(),
            })?;
        // The tokenizer file's own settings (truncation at 128, padding to a fixed 128) are not
        // what sentence-transformers uses: it truncates at `max_seq_length` and pads a batch to
        // its longest member.
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: files.max_seq_length.min(config.max_position_embeddings),
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id: config.pad_token_id as u32,
            ..PaddingParams::default()
        }));
        Ok(Self {
            bert,
            tokenizer,
            dimension: files.pooling.word_embedding_dimension,
            name: dir
                .file_name()
                .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into()),
        })
    }

    /// Length of every vector this model returns.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The model directory's name, for logs and `/readyz`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One L2-normalised vector per text, in order. An empty text gets the vector of an empty
    /// sentence (its special tokens), as sentence-transformers gives.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        let rows = encodings.len();
        let columns = encodings[0].get_ids().len();
        let flat = |f: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings
                .iter()
                .flat_map(|e| f(e).iter().copied())
                .collect()
        };
        let device = &self.bert.device;
        let ids = Tensor::from_vec(flat(|e| e.get_ids()), (rows, columns), device)?;
        let types = Tensor::from_vec(flat(|e| e.get_type_ids()), (rows, columns), device)?;
        let mask = Tensor::from_vec(flat(|e| e.get_attention_mask()), (rows, columns), device)?;

        let tokens = self.bert.forward(&ids, &types, Some(&mask))?; // (rows, columns, hidden)
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (rows, columns, 1)
        let summed = tokens.broadcast_mul(&mask)?.sum(1)?; // (rows, hidden)
        // A row always has at least its [CLS] and [SEP] tokens, so the count is never 0.
        let counts = mask.sum(1)?; // (rows, 1)
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
        Ok(mean.broadcast_div(&norms)?.to_vec2::<f32>()?)
    }
}

/// Cosine similarity of two vectors of the same length (the dot product, for the unit vectors
/// [`SentenceModel::embed`] returns).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 {
        0.0
    } else {
        dot / denominator
    }
}
