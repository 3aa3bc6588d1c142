//! The held-out phrasings: what the user says, in several variants per purpose. Slots are
//! written `{v}`, `{city}`, `{name}` and so on and filled by [`fill`]. Some variants are typed
//! in a hurry on purpose (lower case, "abt", "pls", a misspelt word); the values themselves are
//! always spelt right, since the scorers look for them.
//!
//! Written without the standard templates' skeletons: `heldout::tests` checks that no variant,
//! filled, shares its skeleton or more than a bounded share of its word trigrams with a
//! standard turn.

/// How the user talks about one attribute of [`crate::suites::ltm::vocab::ATTRIBUTES`].
pub(crate) struct AttributePhrases {
    /// The attribute's `name` in the vocabulary.
    pub name: &'static str,
    /// A turn that gives the value `{v}` in passing.
    pub tell: &'static [&'static str],
    /// A turn that gives a new value `{v}`, replacing an earlier one.
    pub change: &'static [&'static str],
    /// A clause giving `{v}`, for turns that tell several things at once.
    pub clause: &'static [&'static str],
    /// A question that asks for the value in other words than `tell`.
    pub ask: &'static [&'static str],
}

pub(crate) const ATTRIBUTES: &[AttributePhrases] = &[
    AttributePhrases {
        name: "favourite colour",
        tell: &[
            "Repainted the spare room over the weekend, {v} this time, because honestly no other shade makes me as happy.",
            "If you ever have to pick a colour for something of mine, go with {v}. I always come back to it.",
            "ugh, the shop was out of the {v} notebooks again and that's the only colour I actually like",
            "my whole wardrobe is basically {v} at this point lol, can't help myself",
        ],
        change: &[
            "Funny thing, I've gone right off the colour I used to love. These days it's all {v} for me.",
            "update on the colour front: {v} now, the old one bores me",
            "I repainted my bike {v} because that's the shade I'm crazy about lately, the previous one had to go.",
        ],
        clause: &[
            "I'm weirdly devoted to the colour {v}",
            "everything I buy ends up {v}",
        ],
        ask: &[
            "If you were buying me a scarf, which shade should it be?",
            "Which colour do I keep gravitating towards, do you remember?",
            "what colour would i want the new sofa in, going by what i've told you?",
        ],
    },
    AttributePhrases {
        name: "favourite fruit",
        tell: &[
            "Bought a whole crate of {v} at the market on Saturday, I could honestly live on the stuff.",
            "Nothing beats a perfectly ripe {v}. Seriously, it's what I'd take to a desert island.",
            "my smoothies are always {v} based bc nothing else comes close for me",
        ],
        change: &[
            "Weirdly I've stopped craving my usual fruit, {v} has taken over completely.",
            "new obsession at breakfast: {v}. the old fave is dethroned",
            "Turns out I'm all about {v} now, I went off the other one entirely.",
        ],
        clause: &[
            "I could eat {v} all day long",
            "my fruit bowl is mostly {v}",
        ],
        ask: &[
            "I'm making a fruit salad just for me, which fruit absolutely has to go in?",
            "Which fruit could I eat every single day without getting tired of it?",
            "what should I grab from the market stall if I want to treat myself?",
        ],
    },
    AttributePhrases {
        name: "pet's name",
        tell: &[
            "Our cat {v} knocked my coffee off the table again this morning, zero shame whatsoever.",
            "Took {v} to the vet today; turns out the little furball is just a bit chubby. Best pet ever though.",
            "we called the puppy {v}, it was my niece's idea and it kind of stuck",
        ],
        change: &[
            "We ended up renaming the cat, she only answers to {v} now.",
            "Small correction about the dog: the old name never stuck, we switched to {v}.",
            "the kitten's name changed btw, everyone calls her {v} these days",
        ],
        clause: &["we named our cat {v}", "the dog answers to {v}"],
        ask: &[
            "What do I call my furry housemate again?",
            "Who's the animal I live with? What's their name?",
            "remind me what my pet answers to?",
        ],
    },
    AttributePhrases {
        name: "favourite sport",
        tell: &[
            "Joined the local {v} club last month, it's the only sport I've ever stuck with.",
            "Watched {v} on TV all evening again. Nothing else gets me off the sofa shouting like that.",
            "i'd play {v} every day if my knees let me",
        ],
        change: &[
            "I've drifted away from my old sport; these days I'm hooked on {v}.",
            "switched sports this year, it's {v} for me now",
            "Gave up on the old sport, {v} is where my weekends go now.",
        ],
        clause: &[
            "{v} is the sport I follow religiously",
            "I spend my weekends doing {v}",
        ],
        ask: &[
            "If you got me tickets for something athletic, what should they be for?",
            "Which game or sport would I rather be doing right now?",
            "what do i love playing or watching most, athletically speaking?",
        ],
    },
    AttributePhrases {
        name: "favourite instrument",
        tell: &[
            "Been practising the {v} every night, I've loved that instrument since I was a kid.",
            "Heard a street musician playing the {v} today and got goosebumps. That sound gets me every time.",
            "if i could master one instrument it'd be the {v}, no question",
        ],
        change: &[
            "I've fallen for a different instrument lately: the {v}.",
            "new fave instrument alert, the {v} has won me over",
            "Sold my old instrument, I'm all about the {v} now.",
        ],
        clause: &[
            "I've been learning to play the {v}",
            "the {v} is the sound I love most",
        ],
        ask: &[
            "Which instrument should I finally take lessons in?",
            "What sound makes me go all misty-eyed, musically?",
            "if i joined an orchestra what would i want to be playing?",
        ],
    },
    AttributePhrases {
        name: "favourite drink",
        tell: &[
            "Can't start the day without my {v}, it's easily what I reach for first.",
            "ordered my usual {v} at the cafe again, the staff know me by it now",
            "Nothing hits like an ice-cold {v} after work, honestly.",
        ],
        change: &[
            "I've switched what I drink in the mornings: {v} has replaced the old one.",
            "new go-to when I'm thirsty: {v}, can't get enough",
            "Gave up my usual drink last month, I'm on {v} now.",
        ],
        clause: &["my usual order is {v}", "I drink {v} by the litre"],
        ask: &[
            "What should you order for me if we meet at a café?",
            "What do I usually sip on to get through the afternoon?",
            "whats my pick when someone offers me something to drink?",
        ],
    },
    AttributePhrases {
        name: "favourite flower",
        tell: &[
            "My partner surprised me with {v} blooms yesterday, exactly the ones I adore.",
            "the {v} in the garden finally opened and I'm way too happy about it",
            "For my birthday, just bring {v} flowers. Nothing else makes me smile like that.",
        ],
        change: &[
            "My taste in flowers has moved on; I'd pick {v} every time now.",
            "new fave flower: {v}, I know, I know, I've changed my mind again",
            "Dug up the old flower bed and replanted it with {v}, they're the ones I love now.",
        ],
        clause: &[
            "{v} blooms make me ridiculously happy",
            "I plant {v} every spring",
        ],
        ask: &[
            "If you sent me a bouquet, what should be in it?",
            "Which blooms would cheer me up the most?",
            "what should i plant by the front door to make myself happy?",
        ],
    },
];

/// A turn that tells two attributes at once, from `{a}` and `{b}`, two clauses.
pub(crate) const TWO_FACTS: &[&str] = &[
    "Two random things about me: {a}, and {b}.",
    "So you get to know me a bit: {a}, plus {b}.",
    "fun facts, since we're chatting: {a}. also {b} lol",
];

/// A visit to `{city}` mentioned in passing.
pub(crate) const VISITED: &[&str] = &[
    "Just got back from {city}, and the food alone was worth the trip.",
    "Still jetlagged after {city}, but what a place.",
    "Showing my friends the photos from my trip to {city} tonight.",
    "my {city} trip was ages ago but i still think about that old town",
];

/// Two visits in one turn, `{a}` and `{b}`.
pub(crate) const VISITED_TWO: &[&str] = &[
    "Two trips this year so far: {a} in spring and {b} in the summer.",
    "Spent a week in {a} and then hopped over to {b}, exhausted but happy.",
];

pub(crate) const ASK_VISITED: &[&str] = &[
    "Where all have I been, travel-wise, that I've told you about?",
    "Can you list the places I've travelled to?",
    "which places have i been on trips to, going by what i said?",
];

/// Groceries: the first turn, with two amounts `{a}` and `{b}` ("3 eggs", "one lemon").
pub(crate) const GROCERY_FIRST: &[&str] = &[
    "We're out of a few things. Can you note down {a} and {b} for the next shop?",
    "For the weekly shop I'll need {a} and {b}, keep track of that for me?",
    "grocery run later: {a}, {b}. pls remember",
];

/// Groceries: one more amount `{a}` for the same shop.
pub(crate) const GROCERY_ALSO: &[&str] = &[
    "Stick {a} on there as well.",
    "Oh, and {a} for the salad.",
    "also {a}, almost forgot",
];

/// Groceries: `{n}` extra of an item already down (`{item}` in the right number).
pub(crate) const GROCERY_MORE: &[&str] = &[
    "Actually, I'll need {n} extra {item}, I'm baking on Sunday.",
    "Bump that up by {n} {item}, my brother's coming to stay.",
    "make it {n} {item} more than i said",
];

/// Groceries: an item (`{items}`, plural) no longer needed.
pub(crate) const GROCERY_DROP: &[&str] = &[
    "Scratch the {items}, my neighbour gave me loads.",
    "Never mind the {items}, turns out we still have plenty in the fridge.",
    "forget the {items}, changed my mind",
];

/// Groceries: the last amount `{a}`.
pub(crate) const GROCERY_LAST: &[&str] = &[
    "One last thing for the shop: {a}.",
    "Just remembered I also need {a}.",
    "+ {a} pls",
];

pub(crate) const ASK_GROCERIES: &[&str] = &[
    "I'm at the supermarket now. What do I need to get, and how many of each?",
    "Heading to the store, what's left to buy?",
    "whats still on the grocery list at this point?",
];

/// A person named `{name}` who is the user's `{relation}`.
pub(crate) const PERSON: &[&str] = &[
    "Had a long call with {name} last night (my {relation}, if I haven't said) and we talked for hours.",
    "Dinner on Friday with {name}, my {relation}, should be fun.",
    "my {relation} {name} sent me the funniest meme today",
];

/// Where `{name}` lives: `{city}`.
pub(crate) const HOME_TOWN: &[&str] = &[
    "{name} keeps sending me photos from {city}, where they've been living for years now.",
    "Saw {name} on a video call yesterday. They're still renting that tiny flat in {city}.",
    "{name}'s place in {city} has the best balcony, so jealous",
];

pub(crate) const ASK_HOME_TOWN: &[&str] = &[
    "If I wanted to visit my {relation}, which city would I be flying to?",
    "Where's home for my {relation} these days?",
    "what city should i post my {relation}'s birthday present to?",
];

/// A standing rule: on the word `{trigger}`, answer `{answer}`.
pub(crate) const RULE: &[&str] = &[
    "Let's play a little game: any time the word {trigger} comes up in my messages, answer with just {answer}.",
    "New rule between us: if I ever mention {trigger}, you respond with {answer} and nothing more.",
    "ok silly request but if {trigger} shows up in something i write, say {answer} back",
];

/// A sentence that happens to contain the word `{word}`.
pub(crate) const WORD_IN_PASSING: &[&str] = &[
    "My nephew kept talking about {word} all afternoon, no idea why.",
    "Random thought: {word} is such a fun word to say out loud.",
    "I watched a documentary that mentioned {word} and now it's stuck in my head.",
    "ugh, autocorrect keeps changing my texts to {word}",
];

/// Say `{word}` in the `{nth}` answer after this one (`{n}` as a number).
pub(crate) const LATER_REPLY: &[&str] = &[
    "A little test of your memory: don't say it yet, but in the {nth} answer you give after this one, include the word {word}.",
    "Small challenge: count your answers starting with the next one, and when you get to number {n}, slip the word {word} in.",
    "pls work the word {word} into answer number {n} after this one, not before",
];

/// Small talk that asks for nothing in particular.
pub(crate) const CHIT_CHAT: &[&str] = &[
    "Back from a walk, it's lovely out.",
    "Just made myself a sandwich.",
    "Long day. What's up with you?",
    "Hey again!",
    "Had a nap, feeling a bit better now.",
];

/// Reminder tasks, rephrased: (the task's key word in the vocabulary, the task in other words).
/// Each phrase holds the key word, which a reply that fires must name.
pub(crate) const TASKS: &[(&str, &str)] = &[
    ("plumber", "ring the plumber about the dripping tap"),
    ("plants", "give the plants a drink"),
    ("tickets", "sort out the tickets for the train to the coast"),
    ("bill", "settle the electricity bill"),
    ("card", "post the card for my mum's birthday"),
    ("cleaning", "collect the cleaning from the dry cleaner's"),
    ("books", "extend the loan on my library books"),
    ("cat", "go and feed next door's cat"),
];

/// A reminder: `{task}` due in `{h}` hours.
pub(crate) const REMINDER: &[&str] = &[
    "Can you nudge me in {h} hours to {task}? I'll forget otherwise.",
    "I have to {task}. Ping me about it {h} hours from now, please.",
    "dont let me forget to {task}, bring it up again in {h} hrs",
];

/// Episodes, by the vocabulary's verb: what was done to `{o}`, in words that avoid the verb,
/// and what a reply must say (the LLM grader's brief).
pub(crate) const EPISODES: &[(&str, &[&str], &str)] = &[
    (
        "repaired",
        &[
            "finally got the {o} working again after weeks of it being broken",
            "spent the morning fixing up the {o}",
        ],
        "repaired it (fixed it, got it working again)",
    ),
    (
        "painted",
        &[
            "slapped a fresh coat of paint on the {o}",
            "gave the {o} a new colour, it took all afternoon with the brush",
        ],
        "painted it",
    ),
    (
        "cleaned",
        &[
            "scrubbed the {o} until it sparkled",
            "gave the {o} a proper wash, it was filthy",
        ],
        "cleaned it",
    ),
    (
        "sold",
        &[
            "let a guy from down the road take the {o} off my hands for cash",
            "found a buyer online for the {o}, it's gone already",
        ],
        "sold it",
    ),
    (
        "photographed",
        &[
            "took a load of pictures of the {o} for the insurance",
            "got the camera out and shot the {o} from every angle",
        ],
        "photographed it (took pictures of it)",
    ),
    (
        "measured",
        &[
            "got the tape measure out and took down the dimensions of the {o}",
            "worked out exactly how big the {o} is, tape measure and all",
        ],
        "measured it",
    ),
    (
        "polished",
        &[
            "buffed the {o} until I could see my face in it",
            "went over the {o} with wax and a soft cloth till it shone",
        ],
        "polished it",
    ),
    (
        "inspected",
        &[
            "had a close look over the {o} to check for damage",
            "went over the {o} inch by inch looking for problems",
        ],
        "inspected it (looked it over, checked it for damage)",
    ),
];

/// A day's two episodes, `{a}` and `{b}`, in one turn.
pub(crate) const DAY_OF_CHORES: &[&str] = &[
    "Productive day! I {a}, and then I {b}.",
    "what a day, {a} and {b}, i'm wiped out",
    "So, today: {a}. Oh and {b}.",
];

/// What was done to `{o}` on the day `{when}` (yesterday, 3 days ago, on Tuesday).
pub(crate) const ASK_EPISODE: &[&str] = &[
    "Remind me, what did I get up to with the {o} {when}?",
    "I was busy with the {o} {when}, what was I doing to it again?",
    "what happened with the {o} {when}, do you remember?",
];

/// An upcoming `{event}` at `{when}` (in four days, this Thursday, the day after tomorrow).
pub(crate) const UPCOMING: &[&str] = &[
    "Bit nervous, I've got the {event} coming up {when}.",
    "ugh, {when} it's the {event} and i'm so not ready",
    "Just sorted out the {event}, it's happening {when}.",
];

pub(crate) const ASK_DATE: &[&str] = &[
    "Looking back, what was the actual date of that {event}?",
    "When exactly did the {event} happen? Which day of the month?",
    "what date did the {event} end up being on?",
];

/// Fills the `{slot}`s of `template`.
pub(crate) fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    slots
        .iter()
        .fold(template.to_owned(), |text, (slot, value)| {
            text.replace(&format!("{{{slot}}}"), value)
        })
}

/// Every template above that is a whole turn, for the disjointness test (the pieces of turns,
/// clauses, tasks and episodes, are checked inside the turns they are put in).
#[cfg(test)]
pub(crate) fn turn_templates() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = ATTRIBUTES
        .iter()
        .flat_map(|a| [a.tell, a.change, a.ask])
        .flatten()
        .copied()
        .collect();
    for list in [
        TWO_FACTS,
        VISITED,
        VISITED_TWO,
        ASK_VISITED,
        GROCERY_FIRST,
        GROCERY_ALSO,
        GROCERY_MORE,
        GROCERY_DROP,
        GROCERY_LAST,
        ASK_GROCERIES,
        PERSON,
        HOME_TOWN,
        ASK_HOME_TOWN,
        RULE,
        WORD_IN_PASSING,
        LATER_REPLY,
        CHIT_CHAT,
        REMINDER,
        DAY_OF_CHORES,
        ASK_EPISODE,
        UPCOMING,
        ASK_DATE,
    ] {
        all.extend_from_slice(list);
    }
    all
}
