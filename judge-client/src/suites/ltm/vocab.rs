//! Word lists the generators draw from. Lists are disjoint from each other and from the filler's
//! words, so that a value can only be mentioned in a reply because the test put it there.

/// A personal attribute with its possible values: "My {name} is {value}." / "What is my {name}?"
pub struct Attribute {
    pub name: &'static str,
    pub values: &'static [&'static str],
}

pub const ATTRIBUTES: &[Attribute] = &[
    Attribute {
        name: "favourite colour",
        values: &[
            "teal",
            "crimson",
            "amber",
            "indigo",
            "olive",
            "maroon",
            "lavender",
            "turquoise",
            "ochre",
            "magenta",
        ],
    },
    Attribute {
        name: "favourite fruit",
        values: &[
            "mango", "papaya", "apricot", "cherry", "kiwi", "fig", "lychee", "plum", "guava",
            "pear",
        ],
    },
    Attribute {
        name: "pet's name",
        values: &[
            "Biscuit", "Pepper", "Luna", "Ziggy", "Mochi", "Noodle", "Waffles", "Juniper",
            "Pickle", "Tofu",
        ],
    },
    Attribute {
        name: "favourite sport",
        values: &[
            "tennis",
            "rowing",
            "fencing",
            "cricket",
            "curling",
            "hockey",
            "archery",
            "badminton",
            "squash",
            "judo",
        ],
    },
    Attribute {
        name: "favourite instrument",
        values: &[
            "cello",
            "banjo",
            "oboe",
            "harp",
            "ukulele",
            "trumpet",
            "clarinet",
            "accordion",
            "sitar",
            "flute",
        ],
    },
    Attribute {
        name: "favourite drink",
        values: &[
            "espresso", "lemonade", "kombucha", "matcha", "cider", "cocoa", "chai", "smoothie",
            "horchata", "kefir",
        ],
    },
    Attribute {
        name: "favourite flower",
        values: &[
            "tulip", "orchid", "peony", "daisy", "lily", "lilac", "iris", "poppy", "dahlia",
            "magnolia",
        ],
    },
];

pub const CITIES: &[&str] = &[
    "Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi", "Tbilisi", "Montreal", "Valencia", "Kyoto",
    "Adelaide", "Porto", "Krakow", "Seville", "Dublin", "Bergen", "Tallinn",
];

pub const RELATIONS: &[&str] = &["sister", "brother", "best friend", "manager", "cousin"];

pub const NAMES: &[&str] = &[
    "Ana", "Bruno", "Chloe", "Dmitri", "Esme", "Farid", "Greta", "Hiro", "Ines", "Jonas",
];

/// Shopping items: (singular, plural).
pub const GROCERIES: &[(&str, &str)] = &[
    ("apple", "apples"),
    ("carrot", "carrots"),
    ("egg", "eggs"),
    ("lemon", "lemons"),
    ("onion", "onions"),
    ("tomato", "tomatoes"),
    ("potato", "potatoes"),
    ("cucumber", "cucumbers"),
];

/// Words that trigger a standing rule.
pub const TRIGGER_WORDS: &[&str] = &[
    "marmalade",
    "zeppelin",
    "kaleidoscope",
    "thunderbolt",
    "pistachio",
    "harmonica",
    "origami",
    "avalanche",
];

/// Words the agent is asked to say.
pub const REPLY_WORDS: &[&str] = &[
    "bingo",
    "jackpot",
    "eureka",
    "touchdown",
    "checkmate",
    "hooray",
    "kaboom",
    "bravo",
];

pub const ORDINALS: &[(&str, usize)] = &[("second", 2), ("third", 3), ("fourth", 4)];

/// Reminder tasks: (task as said, the word a reply must contain).
pub const TASKS: &[(&str, &str)] = &[
    ("call the plumber", "plumber"),
    ("water the plants", "plants"),
    ("book the train tickets", "tickets"),
    ("pay the electricity bill", "bill"),
    ("send the birthday card", "card"),
    ("pick up the dry cleaning", "cleaning"),
    ("renew the library books", "books"),
    ("feed the neighbour's cat", "cat"),
];

/// Small talk that asks for nothing in particular.
pub const SMALL_TALK: &[&str] = &[
    "How is your day going?",
    "Good morning.",
    "Any news?",
    "Tell me something cheerful.",
    "I am back.",
];

pub const EPISODE_VERBS: &[&str] = &[
    "repaired",
    "painted",
    "cleaned",
    "sold",
    "photographed",
    "measured",
    "polished",
    "inspected",
];

pub const EPISODE_OBJECTS: &[&str] = &[
    "bicycle",
    "fence",
    "piano",
    "laptop",
    "garden shed",
    "kitchen sink",
    "rowboat",
    "lawnmower",
];

/// Upcoming events for relative dates.
pub const EVENTS: &[&str] = &[
    "flight",
    "dentist appointment",
    "job interview",
    "concert",
    "exam",
];
