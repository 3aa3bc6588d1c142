//! Instructions about later turns: a standing trigger rule, prospective memory, a reminder.

use chrono::Duration;
use rand::RngExt;

use super::{capitalised, distinct, one};
use crate::suites::ltm::filler::MAX_MESSAGE_TOKENS;
use crate::suites::ltm::scoring::Scorer;
use crate::suites::ltm::script::{Builder, TURN_GAP_SECONDS};
use crate::suites::ltm::vocab::{ORDINALS, REPLY_WORDS, SMALL_TALK, TASKS, TRIGGER_WORDS};

/// Type 6: "Whenever I say X, reply Y": it fires on X and stays silent on other words.
pub fn trigger_rule(b: &mut Builder) {
    let s = b.session("main");
    let words = distinct(&mut b.rng, TRIGGER_WORDS, 3);
    let (trigger, controls) = (words[0], &words[1..]);
    let answer = one(&mut b.rng, REPLY_WORDS);
    b.tell(s, format!("Whenever I say {trigger}, reply {answer}."));
    let span = b.params.span_tokens;
    b.filler(s, span);
    let silent = || Scorer::Silent {
        forbidden: vec![answer.to_owned()],
    };
    b.ask(
        s,
        format!("{}.", capitalised(controls[0])),
        "Noted.",
        "silent on another word (1)",
        silent(),
    );
    b.ask(
        s,
        format!("{}.", capitalised(trigger)),
        capitalised(answer),
        "fires on the trigger",
        Scorer::Mentions {
            groups: vec![vec![answer.to_owned()]],
            forbidden: vec![],
        },
    );
    b.ask(
        s,
        format!("{}.", capitalised(controls[1])),
        "Noted.",
        "silent on another word (2)",
        silent(),
    );
}

/// Type 7: "In your third reply from now, say X": silent before, X in exactly that reply.
pub fn prospective(b: &mut Builder) {
    let s = b.session("main");
    let (ordinal, n) = one(&mut b.rng, ORDINALS);
    let word = one(&mut b.rng, REPLY_WORDS);
    b.tell(s, format!("In your {ordinal} reply from now, say {word}."));
    // The span must fit in the n replies the instruction counts.
    let per_turn = (b.params.span_tokens / n as u32).min(MAX_MESSAGE_TOKENS);
    for i in 1..=n {
        let text = b
            .filler_one(per_turn)
            .unwrap_or_else(|| one(&mut b.rng, SMALL_TALK).to_owned());
        if i < n {
            b.ask(
                s,
                text,
                "Noted.",
                format!("reply {i} stays silent"),
                Scorer::Silent {
                    forbidden: vec![word.to_owned()],
                },
            );
        } else {
            b.ask(
                s,
                text,
                format!("Noted. {}", capitalised(word)),
                format!("reply {n} says it"),
                Scorer::Mentions {
                    groups: vec![vec![word.to_owned()]],
                    forbidden: vec![],
                },
            );
        }
    }
}

/// Type 10: "Remind me to X in N hours": silent before the due time, fires on the first reply after.
pub fn reminder(b: &mut Builder) {
    let s = b.session("main");
    let (task, key) = one(&mut b.rng, TASKS);
    let said_at = b.clock(s);
    // The filler is planned first: the reminder is due a few hours after the filler ends,
    // however long the filler keeps the session clock running.
    let filler = b.filler_texts(b.params.span_tokens);
    let filler_minutes = (filler.len() as i64 + 1) * TURN_GAP_SECONDS / 60;
    let hours = (filler_minutes + 59) / 60 + b.rng.random_range(2..=6i64);
    let due = said_at + Duration::hours(hours);
    let talk = distinct(&mut b.rng, SMALL_TALK, 2);
    b.tell(s, format!("Remind me to {task} in {hours} hours."));
    for text in filler {
        b.tell(s, text);
    }
    b.advance_to(s, due - Duration::hours(1));
    b.ask(
        s,
        talk[0],
        "Noted.",
        "silent before due",
        Scorer::Silent {
            forbidden: vec![key.to_owned()],
        },
    );
    b.advance_to(s, due + Duration::hours(1));
    b.ask(
        s,
        talk[1],
        format!("Reminder: {task}."),
        "fires when due",
        Scorer::Mentions {
            groups: vec![vec![key.to_owned()]],
            forbidden: vec![],
        },
    );
}
