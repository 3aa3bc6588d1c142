//! Deterministic synthetic filler: neutral sentences, counted in cl100k tokens (tiktoken-rs embeds
//! its BPE ranks in the binary, so counting works offline).

use rand::RngExt;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
use tiktoken_rs::CoreBPE;

/// Every filler turn starts with this, so that a target (and the builtin model) can tell filler
/// from statements about the user.
pub const FILLER_PREFIX: &str = "Background reading:";

/// Filler ends this many tokens short of its budget at most.
pub const FILLER_SLACK: u32 = 24;

/// No single message carries more filler than this, whatever the span: a message of hundreds of
/// thousands of tokens exceeds request-size limits (agent-server's default is 1 MiB, about 200k
/// tokens of filler) and most models' context windows, so the test would measure the limit, not
/// memory. Only a test whose span must fit in a fixed number of turns meets it (prospective); its
/// span is then what that number of turns can carry, and results record it (`filler_tokens`).
pub const MAX_MESSAGE_TOKENS: u32 = 32_000;

const ADJECTIVES: &[&str] = &[
    "quiet",
    "ancient",
    "narrow",
    "wooden",
    "distant",
    "silver",
    "gentle",
    "crooked",
    "hollow",
    "sunlit",
    "weathered",
    "tiny",
    "massive",
    "rusty",
    "misty",
    "humble",
];
const NOUNS: &[&str] = &[
    "lighthouse",
    "bridge",
    "orchard",
    "library",
    "mill",
    "harbour",
    "valley",
    "tower",
    "market",
    "chapel",
    "meadow",
    "quarry",
    "canal",
    "barn",
    "glacier",
    "workshop",
];
const VERBS: &[&str] = &[
    "overlooks",
    "leans toward",
    "stands beside",
    "faces",
    "shelters",
    "borders",
    "echoes across",
    "hides behind",
    "rises above",
    "slopes down to",
];
const CODAS: &[&str] = &[
    "in the early light",
    "after the long winter",
    "as the tide turns",
    "during the harvest",
    "under a grey sky",
    "since anyone can remember",
    "when the bells ring",
    "on most afternoons",
];

/// The cl100k tokenizer, loaded once.
pub fn tokenizer() -> &'static CoreBPE {
    tiktoken_rs::cl100k_base_singleton()
}

pub fn count_tokens(text: &str) -> u32 {
    tokenizer().encode_ordinary(text).len() as u32
}

fn sentence(rng: &mut ChaCha8Rng) -> String {
    let pick = |rng: &mut ChaCha8Rng, list: &[&'static str]| -> &'static str {
        list.choose(rng).copied().unwrap_or_default()
    };
    let adjective = pick(rng, ADJECTIVES);
    let noun = pick(rng, NOUNS);
    let verb = pick(rng, VERBS);
    let adjective2 = pick(rng, ADJECTIVES);
    let noun2 = pick(rng, NOUNS);
    let mut text = format!("The {adjective} {noun} {verb} the {adjective2} {noun2}");
    if rng.random_bool(0.5) {
        text.push(' ');
        text.push_str(pick(rng, CODAS));
    }
    text.push('.');
    text
}

/// One filler turn of at most `budget` tokens (at least one sentence), with its token count.
///
/// Each sentence is counted alone, with its leading space: cl100k splits text into words before
/// merging, and no word spans the boundary between a sentence's closing `.` and the next ` The`,
/// so a turn's count is the sum of its pieces' (the tests check it against counting the whole).
/// Counting the growing turn instead made long spans quadratic.
pub(crate) fn filler_turn(rng: &mut ChaCha8Rng, budget: u32) -> (String, u32) {
    let mut text = FILLER_PREFIX.to_owned();
    let mut tokens = count_tokens(&text);
    loop {
        let piece = format!(" {}", sentence(rng));
        let n = tokens + count_tokens(&piece);
        if n > budget && text.len() > FILLER_PREFIX.len() {
            return (text, tokens);
        }
        text.push_str(&piece);
        tokens = n;
        if n > budget {
            return (text, tokens);
        }
    }
}

/// Filler turns totalling between `total - FILLER_SLACK` and `total` tokens, each at most
/// `per_turn` tokens. Returns the turns and their summed token count.
pub fn filler_turns(rng: &mut ChaCha8Rng, total: u32, per_turn: u32) -> (Vec<String>, u32) {
    let mut turns = Vec::new();
    let mut counted = 0u32;
    while total.saturating_sub(counted) >= FILLER_SLACK {
        let budget = (total - counted).min(per_turn.max(FILLER_SLACK));
        let (text, n) = filler_turn(rng, budget);
        counted += n;
        turns.push(text);
    }
    (turns, counted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn tokenizer_is_offline_cl100k() {
        // Known cl100k encodings: "hello world" is two tokens.
        assert_eq!(
            tokenizer().encode_ordinary("hello world"),
            vec![15339, 1917]
        );
    }

    #[test]
    fn filler_meets_its_budget_and_is_seeded() {
        for total in [0u32, 10, 100, 1000, 2500, 40_000] {
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let (turns, counted) = filler_turns(&mut rng, total, 250);
            let recount: u32 = turns.iter().map(|t| count_tokens(t)).sum();
            assert_eq!(recount, counted);
            assert!(counted <= total, "{counted} > {total}");
            assert!(
                counted + FILLER_SLACK > total,
                "{counted} too short of {total}"
            );
            assert!(turns.iter().all(|t| t.starts_with(FILLER_PREFIX)));
            assert!(turns.iter().all(|t| count_tokens(t) <= 250));
            let mut again = ChaCha8Rng::seed_from_u64(7);
            assert_eq!(filler_turns(&mut again, total, 250).0, turns);
        }
    }
}
