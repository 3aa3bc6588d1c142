//! all-MiniLM-L6-v2 in process, checked against vectors computed independently of this crate: a
//! numpy forward pass over the same safetensors with its own tokenizer
//! (`tests/reference/minilm_numpy.py`).
//!
//! The model and numpy come as `testkit::embedding` says.

use std::sync::OnceLock;

use embeddings::{EmbedError, SentenceModel, cosine};
use testkit::embedding::{assert_same_vectors, model_dir, reference};

fn model() -> &'static SentenceModel {
    static MODEL: OnceLock<SentenceModel> = OnceLock::new();
    MODEL.get_or_init(|| SentenceModel::load(&model_dir()).expect("the model loads"))
}

fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "I went to a support group yesterday and it was so powerful.",
        "My favourite colour is teal.",
        "What is my favourite colour?",
        "Caroline is researching adoption agencies.",
        "Melanie painted a sunrise over the lake in 2022!",
        "The meeting on 7 May 2023 was moved to 3:45 pm, room B-12.",
        "Remind me to call Dr. O'Neil about the X-ray results.",
        "Café, naïve, résumé: accents are stripped before the vocabulary is read.",
        "",
        "ok",
        "Do you remember the name of my dog? It's Pixel.",
        "We camped at Lake Tahoe; the kids loved the canoe.",
        "unbelievably-hyphenated compound-words and snake_case_identifiers",
        "I'm allergic to peanuts and shellfish.",
        "Buy milk, eggs, bread and coffee on the way home.",
        "She said the pottery class helped her through a hard time.",
        "The quarterly revenue grew 12.5% year over year.",
        "Which book did I say I was reading last week?",
        "   leading and trailing spaces   ",
        "ALL CAPS SHOUTING IS LOWER-CASED",
    ]
    .map(str::to_owned)
    .to_vec();
    // Longer than the model's 256 tokens: truncated as sentence-transformers truncates.
    texts.push("memory ".repeat(400));
    texts
}

#[test]
fn vectors_match_an_independent_numpy_forward_pass() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    // One batch of very different lengths, so padding and the attention mask are exercised.
    let ours = model().embed(&texts).unwrap();
    let theirs = reference(&texts);
    assert_same_vectors(&ours, &theirs, &texts, "against the numpy reference");
}

#[test]
fn a_vector_does_not_depend_on_its_batch() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = model().embed(&texts).unwrap();
    for (text, in_batch) in texts.iter().zip(&batch) {
        let alone = &model().embed(&[text]).unwrap()[0];
        assert!(cosine(alone, in_batch) > 0.99999, "{text:?}");
    }
}

#[test]
fn a_paraphrase_that_shares_no_word_is_nearer_than_a_sentence_that_shares_six() {
    let said = "I went to a support group yesterday and it was so powerful.";
    let paraphrase = "What gathering did you attend that you found inspiring?";
    let same_words = "I went to buy a group of power cables yesterday.";
    let words = |t: &str| -> std::collections::HashSet<String> {
        t.split(|c: char| !c.is_alphabetic())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    assert_eq!(words(said).intersection(&words(paraphrase)).count(), 0);
    // i, went, to, a, group, yesterday
    assert_eq!(words(said).intersection(&words(same_words)).count(), 6);
    let vectors = model().embed(&[said, paraphrase, same_words]).unwrap();
    let near = cosine(&vectors[0], &vectors[1]);
    let far = cosine(&vectors[0], &vectors[2]);
    assert!(
        near > far + 0.05,
        "paraphrase {near:.3} should beat shared words {far:.3}"
    );
}

#[test]
fn an_empty_batch_is_empty() {
    assert!(model().embed(&[]).unwrap().is_empty());
}

#[test]
fn a_directory_without_the_model_names_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = SentenceModel::load(dir.path()).unwrap_err();
    match &err {
        EmbedError::Read { path, .. } => assert!(path.ends_with("1_Pooling/config.json"), "{err}"),
        other => panic!("expected a read error, got {other}"),
    }
    assert!(err.to_string().contains("1_Pooling/config.json"), "{err}");

    std::fs::create_dir(dir.path().join("1_Pooling")).unwrap();
    std::fs::write(dir.path().join("1_Pooling/config.json"), "{not json").unwrap();
    let err = SentenceModel::load(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::Invalid {
                what: "pooling config",
                ..
            }
        ),
        "{err}"
    );
}
