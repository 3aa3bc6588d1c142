//! Small, deterministic text helpers the extractor and the builtin model share.

/// Splits text into sentences at `.`, `!`, `?` or a newline followed by whitespace or the end.
/// Decimal points ("3.5") and dates ("2026-01-02") stay inside their sentence.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let at_end = i + 1 == bytes.len();
        let boundary = match b {
            b'\n' => true,
            b'.' | b'!' | b'?' => at_end || bytes[i + 1].is_ascii_whitespace(),
            _ => false,
        };
        if boundary || at_end {
            let s = text[start..=i].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = i + 1;
        }
    }
    out
}

/// Strips the final punctuation and surrounding quotes/space of a sentence.
pub(crate) fn trim_sentence(s: &str) -> &str {
    s.trim().trim_end_matches(['.', '!', '?', ';', ',']).trim()
}

const QUESTION_OPENERS: &[&str] = &[
    "what", "what's", "whats", "where", "where's", "when", "when's", "who", "who's", "whom",
    "which", "how", "how's", "why", "do", "does", "did", "is", "are", "was", "were", "can",
    "could", "would", "will", "have", "has", "tell", "remind", "list", "name", "recall", "say",
];

/// Whether a sentence asks something: it ends with `?`, or opens like a question or a request to
/// recall ("Tell me my ...", "List my ...") rather than like a statement.
pub(crate) fn is_question(sentence: &str) -> bool {
    let s = sentence.trim();
    if s.ends_with('?') {
        return true;
    }
    let first = s
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_lowercase();
    // "Remind me to ..." sets a reminder and "Say X" may be a rule; only count them as questions
    // when they ask about memory.
    match first.as_str() {
        "remind" => s.to_lowercase().starts_with("remind me what"),
        "say" | "name" | "list" | "tell" => {
            let l = s.to_lowercase();
            l.contains(" my ") || l.contains(" me ") || l.contains(" i ")
        }
        other => QUESTION_OPENERS.contains(&other),
    }
}

/// Rewrites a user's first-person sentence as the assistant would say it back:
/// "My favourite colour is teal" → "Your favourite colour is teal".
pub(crate) fn to_second_person(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous_was_i = false;
    for (i, token) in split_keep_separators(text).into_iter().enumerate() {
        if !token.chars().next().is_some_and(char::is_alphanumeric) {
            out.push_str(token);
            continue;
        }
        let lower = token.to_lowercase();
        let swapped = match lower.as_str() {
            "i" => Some("you"),
            "me" => Some("you"),
            "my" => Some("your"),
            "mine" => Some("yours"),
            "myself" => Some("yourself"),
            "i'm" => Some("you're"),
            "i've" => Some("you've"),
            "i'll" => Some("you'll"),
            "i'd" => Some("you'd"),
            "am" if previous_was_i => Some("are"),
            "was" if previous_was_i => Some("were"),
            "your" => Some("my"),
            "yours" => Some("mine"),
            "you" => Some("I"),
            _ => None,
        };
        previous_was_i = lower == "i";
        let word = swapped
            .map(str::to_owned)
            .unwrap_or_else(|| token.to_owned());
        if i == 0 {
            out.push_str(&capitalize(&word));
        } else {
            out.push_str(&word);
        }
    }
    out
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Splits into alternating word and non-word tokens; apostrophes inside words stay in the word.
fn split_keep_separators(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut start = 0;
    let mut in_word = None;
    for (i, c) in text.char_indices() {
        let is_word = c.is_alphanumeric() || (c == '\'' && in_word == Some(true));
        if in_word.is_some_and(|w| w != is_word) {
            tokens.push(&text[start..i]);
            start = i;
        }
        in_word = Some(is_word);
    }
    if start < text.len() {
        tokens.push(&text[start..]);
    }
    tokens
}

/// Whether `phrase` occurs in `text` as whole words, ignoring case.
pub(crate) fn contains_phrase(text: &str, phrase: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (text, phrase) = (words(text), words(phrase));
    !phrase.is_empty() && text.windows(phrase.len()).any(|w| w == phrase.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_on_terminators_not_inside_numbers() {
        assert_eq!(
            sentences("My flight is on 2026-01-02. It costs 3.5 euros! Ok?\nDone"),
            [
                "My flight is on 2026-01-02.",
                "It costs 3.5 euros!",
                "Ok?",
                "Done"
            ]
        );
        assert!(sentences("  ").is_empty());
    }

    #[test]
    fn questions_are_told_from_statements() {
        for q in [
            "What is my favourite colour?",
            "where do I live",
            "Tell me my name.",
            "Did I mention my car",
        ] {
            assert!(is_question(q), "{q}");
        }
        for s in [
            "My favourite colour is teal.",
            "I live in Lisbon",
            "Remind me to call mum in 2 hours.",
            "Whenever I say banana, reply mango.",
        ] {
            assert!(!is_question(s), "{s}");
        }
    }

    #[test]
    fn second_person_swaps_pronouns_and_verbs() {
        assert_eq!(
            to_second_person("My favourite colour is teal."),
            "Your favourite colour is teal."
        );
        assert_eq!(
            to_second_person("I am allergic to nuts and I was born in Porto"),
            "You are allergic to nuts and you were born in Porto"
        );
        assert_eq!(
            to_second_person("I'm moving; tell me if you know mine."),
            "You're moving; tell you if I know yours."
        );
    }

    #[test]
    fn phrases_match_whole_words_only() {
        assert!(contains_phrase("Well, BANANA time!", "banana"));
        assert!(contains_phrase("say blue moon now", "Blue Moon"));
        assert!(!contains_phrase("bananas are great", "banana"));
        assert!(!contains_phrase("anything", ""));
    }
}
