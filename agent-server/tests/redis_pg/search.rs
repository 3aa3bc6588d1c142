//! Full-text search: odd queries, ready tsqueries, ranking as Postgres ranks, and stopwords.

use crate::harness::*;

#[tokio::test]
async fn odd_unicode_queries_never_break_the_full_text_search() {
    let harness = Harness::new().await;
    let s = session();
    harness
        .inject(
            &s,
            vec![fact(None, "The café in Zürich serves ½ portions.")],
        )
        .await
        .unwrap();
    for q in [
        "café",
        "ZÜRICH",
        "½",
        "x²",
        "ǅemal",
        "𝟘𝟙",
        "İstanbul",
        "東京に住んでいます",
        "٣٤٥",
        "a\u{0}b",
        "don't",
        "O'Brien's",
        "\\",
        "'",
        "::",
        "foo:*",
        "<-> <2>",
        "NULL",
    ] {
        harness
            .recall(&s, query(q))
            .await
            .unwrap_or_else(|e| panic!("query {q:?} failed: {e}"));
    }
    let ctx = harness.recall(&s, query("Zürich café")).await.unwrap();
    assert_eq!(ctx.facts.len(), 1);
}

/// A query finds and ranks the same facts each time it is asked, for stemmed words, words only
/// Postgres takes for stopwords, numbers and non-ASCII letters.
#[tokio::test]
async fn ready_queries_find_and_rank_facts_exactly_as_to_tsquery_does() {
    let harness = Harness::new().await;
    let s = session();
    let bodies = [
        "I was running to the station",
        "She runs every morning before work",
        "The runner ran a marathon in 2024",
        "Café au lait at the naïve bistro in Zürich",
        "Über cool x86 machines and ARM64 boards",
        "O'Neil's dogs were barking at the dog park",
        "running running running all day long",
        "ourselves and yourselves, once more, very further",
    ];
    for body in bodies {
        harness.commit_turn(&s, turn(body, body)).await.unwrap();
    }
    // No word in two queries: the first recall of each has words to learn.
    let queries = [
        "running",
        "runs dogs barking",
        "café naïve zürich",
        "über x86 arm64 2024",
        "ourselves yourselves once very further",
        "park morning marathon station",
        "o neil",
    ];
    let ranked = |ctx: &agent_server::memory::MemoryContext| -> Vec<(String, f64)> {
        ctx.facts
            .iter()
            .map(|r| (r.fact.text.clone(), r.score))
            .collect()
    };
    for q in queries {
        let through_words = harness.recall(&s, query(q)).await.unwrap();
        let ready = harness.recall(&s, query(q)).await.unwrap();
        assert_eq!(ranked(&ready), ranked(&through_words), "{q:?}");
    }
    let found = harness.recall(&s, query("running")).await.unwrap();
    assert_eq!(
        found.facts.len(),
        3,
        "running, runs and ran? {:?}",
        ranked(&found)
    );
}

/// What `tokio_postgres` logs (through the `log` crate), kept for the test that reads it.
struct PostgresLog(std::sync::Mutex<Vec<String>>);

impl log::Log for PostgresLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.target().starts_with("tokio_postgres")
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
            lines.push(record.args().to_string());
        }
    }

    fn flush(&self) {}
}

/// Words only Postgres takes for stopwords reach it in `to_tsquery` on a recall. That may not
/// make `tokio_postgres` log a line per word (a NOTICE that the query held only stopwords): the
/// connections ask for warnings only.
#[tokio::test]
async fn stopwords_only_postgres_knows_put_no_notices_in_the_log() {
    static LOG: PostgresLog = PostgresLog(std::sync::Mutex::new(Vec::new()));
    log::set_logger(&LOG).expect("only this test installs a logger");
    log::set_max_level(log::LevelFilter::Info);
    let harness = Harness::new().await;
    let s = session();
    harness
        .commit_turn(&s, turn("Ourselves first", "Yourselves too"))
        .await
        .unwrap();
    for _ in 0..2 {
        harness
            .recall(&s, query("ourselves yourselves once further"))
            .await
            .unwrap();
    }
    let notices: Vec<String> = LOG
        .0
        .lock()
        .unwrap()
        .iter()
        // Other tests of this binary log through the same logger, so only this notice is looked
        // for (in English, as the test servers speak it).
        .filter(|line| line.contains("only stop words"))
        .cloned()
        .collect();
    assert!(notices.is_empty(), "{notices:#?}");
}
