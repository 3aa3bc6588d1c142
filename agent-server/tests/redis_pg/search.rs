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

/// Once its words' lexemes are known, a query goes to Postgres ready-made (`lexemes.rs`) instead
/// of through `to_tsquery('english', ...)`: it must find and rank exactly the same facts, for
/// stemmed words, words only Postgres takes for stopwords, numbers and non-ASCII letters.
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
        let known = harness.known_query_words();
        let through_words = harness.recall(&s, query(q)).await.unwrap();
        assert!(
            harness.known_query_words() > known,
            "{q:?}: no word learned"
        );
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

/// Recall ranks the facts of a session it holds in the process (`known_facts.rs`): its `ts_rank`
/// must be Postgres's to the bit, or the order of facts would change with where they were ranked.
/// Held against Postgres's own over documents with repeated words, stems, weights (A, B, C and
/// D), lexemes without positions, quotes and backslashes, and queries of one to six lexemes, some
/// repeated, some in no document.
#[tokio::test]
async fn a_document_is_ranked_as_postgres_ranks_it() {
    let harness = Harness::new().await;
    let client = harness.db.client().await;
    let words = [
        "running",
        "runs",
        "ran",
        "dog",
        "dogs",
        "it's",
        "O'Neil",
        r"back\slash",
        "café",
        "42",
        "x86",
        "the",
        "lighthouse",
        "blue",
        "number",
        "cat",
        "cats",
        "zürich",
        "über",
        "park",
    ];
    // A fixed xorshift sequence: the same documents every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % below as u64).unwrap()
    };
    let mut bodies = Vec::new();
    for _ in 0..400 {
        let n = 1 + next(30);
        let body: Vec<&str> = (0..n).map(|_| words[next(words.len())]).collect();
        bodies.push(body.join(" "));
    }
    let variants: Vec<i32> = (0..bodies.len())
        .map(|i| i32::try_from(i % 6).unwrap())
        .collect();
    let rows = client
        .query(
            "SELECT (CASE v
                       WHEN 0 THEN to_tsvector('english', b)
                       WHEN 1 THEN setweight(to_tsvector('english', b), 'A')
                                   || to_tsvector('english', reverse(b))
                       WHEN 2 THEN strip(to_tsvector('english', b))
                       WHEN 3 THEN setweight(to_tsvector('english', b), 'B')
                                   || setweight(to_tsvector('english', 'dog ' || b), 'C')
                       WHEN 4 THEN to_tsvector('simple', b)
                       ELSE array_to_tsvector(regexp_split_to_array(b, ' ')) END)::text
             FROM unnest($1::text[], $2::int[]) AS d(b, v)",
            &[&bodies, &variants],
        )
        .await
        .unwrap();
    let documents: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    let lexemes: Vec<String> = client
        .query(
            "SELECT DISTINCT unnest(tsvector_to_array(d::tsvector)) FROM unnest($1::text[]) AS d",
            &[&documents],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .chain(["absent".to_owned()])
        .collect();
    assert!(lexemes.len() > 30, "{lexemes:?}");
    let quote = |l: &str| format!("'{}'", l.replace('\\', "\\\\").replace('\'', "''"));
    let queries: Vec<Vec<&str>> = (0..300)
        .map(|_| {
            (0..1 + next(6))
                .map(|_| lexemes[next(lexemes.len())].as_str())
                .collect()
        })
        .collect();
    let tsqueries: Vec<String> = queries
        .iter()
        .map(|q| q.iter().map(|l| quote(l)).collect::<Vec<_>>().join(" | "))
        .collect();
    let ranked = client
        .query(
            "SELECT d.ord, q.ord, d.t::tsvector @@ q.t::tsquery, ts_rank(d.t::tsvector, q.t::tsquery)
             FROM unnest($1::text[]) WITH ORDINALITY AS d(t, ord),
                  unnest($2::text[]) WITH ORDINALITY AS q(t, ord)",
            &[&documents, &tsqueries],
        )
        .await
        .unwrap();
    assert_eq!(ranked.len(), documents.len() * queries.len());
    let mut matched = 0;
    for row in &ranked {
        let (d, q): (i64, i64) = (row.get(0), row.get(1));
        let document = &documents[usize::try_from(d - 1).unwrap()];
        let query = &queries[usize::try_from(q - 1).unwrap()];
        let here = agent_server::memory::redis_pg::rank_in_process(document, query)
            .unwrap_or_else(|| panic!("cannot read {document:?}"));
        let postgres: Option<f32> = row.get::<_, bool>(2).then(|| row.get(3));
        assert_eq!(
            here.map(f32::to_bits),
            postgres.map(f32::to_bits),
            "ts_rank({document:?}, {query:?}): here {here:?}, postgres {postgres:?}"
        );
        matched += usize::from(postgres.is_some());
    }
    assert!(
        matched > ranked.len() / 4,
        "{matched} of {} matched",
        ranked.len()
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

/// Words only Postgres takes for stopwords reach it twice: in `to_tsquery` on a recall, and when
/// their lexemes are learnt (`lexemes.rs`). Neither may make `tokio_postgres` log a line per
/// word (a NOTICE that the query held only stopwords): the connections ask for warnings only.
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
