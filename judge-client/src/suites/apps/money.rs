//! Money as integer cents. Amounts arrive as JSON numbers or strings ("50", 50.5, "$12.30"); they
//! are read from their decimal text, never through float arithmetic, so `0.1 + 0.2` problems cannot
//! reach a balance.

use serde_json::Value;

/// Why an amount was refused. The texts are what the agent reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error("Amount is required")]
    Missing,
    #[error("Amount must be a number, got {0}")]
    NotANumber(String),
    #[error("Amount must be positive, got {0}")]
    NotPositive(String),
    #[error("Amount must have at most two decimals, got {0}")]
    TooPrecise(String),
    #[error("Amount is too large: {0}")]
    TooLarge(String),
}

/// Largest amount accepted: a trillion dollars keeps every sum far from `i64` overflow.
const MAX_CENTS: i64 = 100_000_000_000_000;

/// Reads a positive amount with at most two decimals as cents.
pub fn parse_amount(value: Option<&Value>) -> Result<i64, AmountError> {
    let text = match value {
        None | Some(Value::Null) => return Err(AmountError::Missing),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.trim().trim_start_matches('$').trim().to_owned(),
        Some(other) => return Err(AmountError::NotANumber(other.to_string())),
    };
    parse_decimal(&text)
}

/// Reads a non-negative configuration amount (fee 0 is fine) as cents.
pub fn parse_config_amount(value: &Value) -> Result<i64, AmountError> {
    match value {
        Value::Number(n) if n.as_f64() == Some(0.0) => Ok(0),
        Value::String(s) if s.trim().trim_start_matches('$').trim() == "0" => Ok(0),
        other => parse_amount(Some(other)),
    }
}

fn parse_decimal(text: &str) -> Result<i64, AmountError> {
    let original = text.to_owned();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    // serde_json writes very small or large floats in exponent form (1e-7): such an amount has
    // too many decimals or is absurdly large, so the exponent is evaluated only to say which.
    if digits.contains(['e', 'E']) {
        return match digits.parse::<f64>() {
            Ok(v) if negative || v <= 0.0 => Err(AmountError::NotPositive(original)),
            Ok(v) if v < 1.0 => Err(AmountError::TooPrecise(original)),
            Ok(_) => Err(AmountError::TooLarge(original)),
            Err(_) => Err(AmountError::NotANumber(original)),
        };
    }
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let well_formed = !(whole.is_empty() && fraction.is_empty())
        && whole.chars().all(|c| c.is_ascii_digit())
        && fraction.chars().all(|c| c.is_ascii_digit());
    if !well_formed {
        return Err(AmountError::NotANumber(original));
    }
    // Trailing zeros carry no precision ("50.000" is fifty dollars; serde_json writes 50.0).
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > 2 {
        return Err(AmountError::TooPrecise(original));
    }
    let whole = whole.trim_start_matches('0');
    if whole.len() > 13 {
        return Err(AmountError::TooLarge(original));
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole
            .parse()
            .map_err(|_| AmountError::TooLarge(original.clone()))?
    };
    let cents_part: i64 = format!("{fraction:0<2}")
        .parse()
        .map_err(|_| AmountError::NotANumber(original.clone()))?;
    let cents = whole * 100 + cents_part;
    if negative || cents == 0 {
        return Err(AmountError::NotPositive(original));
    }
    if cents > MAX_CENTS {
        return Err(AmountError::TooLarge(original));
    }
    Ok(cents)
}

/// `$1,234.50`-style text without the thousands separators: `$1234.50`.
pub fn format_usd(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    format!("{sign}${}.{:02}", abs / 100, abs % 100)
}

/// The amount as plain decimal text, as results and the audit log show it: `70.00`.
pub fn decimal(cents: i64) -> String {
    format_usd(cents).replacen('$', "", 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_integers_decimals_and_dollar_strings() {
        assert_eq!(parse_amount(Some(&json!(50))), Ok(5000));
        assert_eq!(parse_amount(Some(&json!(50.5))), Ok(5050));
        assert_eq!(parse_amount(Some(&json!(0.01))), Ok(1));
        assert_eq!(parse_amount(Some(&json!("$12.30"))), Ok(1230));
        assert_eq!(parse_amount(Some(&json!("50.000"))), Ok(5000));
    }

    #[test]
    fn rejects_zero_negative_and_over_precise_amounts() {
        assert!(matches!(
            parse_amount(Some(&json!(0))),
            Err(AmountError::NotPositive(_))
        ));
        assert!(matches!(
            parse_amount(Some(&json!(-5))),
            Err(AmountError::NotPositive(_))
        ));
        assert!(matches!(
            parse_amount(Some(&json!(10.005))),
            Err(AmountError::TooPrecise(_))
        ));
        assert!(matches!(
            parse_amount(Some(&json!(1e-7))),
            Err(AmountError::TooPrecise(_))
        ));
        assert!(matches!(
            parse_amount(Some(&json!("ten"))),
            Err(AmountError::NotANumber(_))
        ));
        assert!(matches!(
            parse_amount(Some(&json!(1e30))),
            Err(AmountError::TooLarge(_))
        ));
        assert_eq!(parse_amount(None), Err(AmountError::Missing));
    }

    #[test]
    fn formats_cents() {
        assert_eq!(format_usd(7000), "$70.00");
        assert_eq!(format_usd(5), "$0.05");
        assert_eq!(decimal(123456), "1234.56");
    }
}
