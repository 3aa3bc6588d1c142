//! PII redaction of text sent to injected endpoints: e-mail addresses, IBANs, payment card numbers
//! (Luhn-checked, so order numbers survive) and phone numbers. Each match becomes a placeholder
//! (`[EMAIL]`, `[IBAN]`, `[CARD]`, `[PHONE]`). The order matters: IBANs and cards contain digit
//! runs a phone pattern would also take.

use std::sync::LazyLock;

use regex::{Captures, Regex};

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
        .expect("valid regex")
});
static IBAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
        .expect("valid regex")
});
static CARD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[0-9](?:[ -]?[0-9]){12,18}\b").expect("valid regex"));
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{2,4}(?:[ .-]?[0-9]{2,4}){1,4}",
    )
    .expect("valid regex")
});
static ISO_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$").expect("valid regex"));

/// Whether a digit string passes the Luhn checksum of card numbers.
fn luhn(digits: &str) -> bool {
    let mut sum = 0;
    for (i, d) in digits
        .chars()
        .rev()
        .filter_map(|c| c.to_digit(10))
        .enumerate()
    {
        let mut v = d;
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum % 10 == 0
}

fn digit_count(text: &str) -> usize {
    text.chars().filter(char::is_ascii_digit).count()
}

/// `text` with every recognised piece of PII replaced by its placeholder.
pub fn redact(text: &str) -> String {
    let text = EMAIL.replace_all(text, "[EMAIL]");
    let text = IBAN.replace_all(&text, "[IBAN]");
    let text = CARD.replace_all(&text, |c: &Captures| {
        let digits: String = c[0].chars().filter(char::is_ascii_digit).collect();
        if luhn(&digits) {
            "[CARD]".to_owned()
        } else {
            c[0].to_owned()
        }
    });
    let text = PHONE.replace_all(&text, |c: &Captures| {
        // A phone number has 7 to 15 digits; dates and times (2026-01-05, 09:00) have fewer or
        // use other separators.
        if (7..=15).contains(&digit_count(&c[0])) && !ISO_DATE.is_match(&c[0]) {
            "[PHONE]".to_owned()
        } else {
            c[0].to_owned()
        }
    });
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pii_is_replaced_and_ordinary_text_kept() {
        let input = "Mail jane.doe+x@mail.example.co.uk or call +44 20 7946 0958, \
                     card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00. \
                     Order INC4471 on 2026-01-05 at 09:00, flight JL042, locker 4815.";
        let out = redact(input);
        assert_eq!(
            out,
            "Mail [EMAIL] or call [PHONE], card [CARD], IBAN [IBAN]. \
             Order INC4471 on 2026-01-05 at 09:00, flight JL042, locker 4815."
        );
    }

    #[test]
    fn cards_need_a_valid_checksum_and_phones_other_formats_match() {
        assert_eq!(redact("4111-1111-1111-1111"), "[CARD]");
        // 16 digits failing the checksum: neither a card nor a phone number.
        assert_eq!(redact("ref 1234 5678 9012 3456"), "ref 1234 5678 9012 3456");
        assert_eq!(redact("(555) 123-4567"), "[PHONE]");
        assert_eq!(redact("555.123.4567"), "[PHONE]");
        assert_eq!(redact("GB82WEST12345698765432"), "[IBAN]");
        assert_eq!(redact("nothing here"), "nothing here");
    }
}
