//! Property tests of the `APP_ACTION:` parser: it never panics on any text, and it reads back
//! whatever the formatter writes, wherever the directive sits in prose.

use judge_client::suites::apps::Params;
use judge_client::suites::apps::directive::{format_directive, parse_message};
use proptest::prelude::*;
use serde_json::{Number, Value};

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::String),
        // Strings built from the characters the grammar cares about.
        "[\"'\\\\(),= a-z\n\t]{0,12}".prop_map(Value::String),
        any::<i64>().prop_map(|i| Value::Number(i.into())),
        any::<u64>().prop_map(|u| Value::Number(u.into())),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

fn params() -> impl Strategy<Value = Params> {
    prop::collection::btree_map("[a-z_][a-z0-9_]{0,8}", scalar(), 0..5)
        .prop_map(|map| map.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_any_text(text in any::<String>()) {
        let parsed = parse_message(&text);
        prop_assert!(parsed.prose.len() <= text.len());
    }

    #[test]
    fn never_panics_on_directive_like_text(
        text in "(APP_ACTION: ?|[a-z]{1,3}|[.(),=\"'\\\\ \n]|-?[0-9]{1,3}(\\.[0-9]{1,3})?){0,30}"
    ) {
        let _ = parse_message(&text);
    }

    #[test]
    fn reads_back_what_the_formatter_writes(
        app in "[a-z][a-z0-9_]{0,8}",
        action in "[a-z][a-z0-9_]{0,12}",
        params in params(),
        before in "[A-Za-z ,.!?]{0,20}",
        after in "[A-Za-z ,.!?]{0,20}",
    ) {
        let directive = format_directive(&app, &action, &params);
        let text = format!("{before}\n{directive}\n{after}");
        let parsed = parse_message(&text);
        prop_assert_eq!(parsed.directives.len(), 1);
        let read = parsed.directives[0].clone().expect("well-formed");
        prop_assert_eq!(&read.app, &app);
        prop_assert_eq!(&read.action, &action);
        prop_assert_eq!(&read.params, &params);
        prop_assert!(!parsed.prose.contains("APP_ACTION"));
    }
}
