//! `APP_ACTION: app.action(k=v, ...)` directives inside agent text (docs/contracts/apps.md).
//!
//! Hand-written rather than a parser-combinator crate: the grammar is one line long, and the parser
//! must never fail as a whole: it cuts the directives out of free prose, turns each malformed one
//! into an error (which becomes an observation), and keeps the prose around them.
//!
//! Values: `"double"` or `'single'` quoted strings with backslash escapes (`\"`, `\\`, `\n`, `\t`,
//! `\r`, `\'`), numbers (`50`, `-3`, `12.5`, `1e3`), `true`, `false`, `null`, and bare words
//! (`to=bob@email.com`, `amount=$50`) taken as text up to the next `,` or `)`.

use std::ops::Range;

use protocol::apps::DIRECTIVE_MARKER as MARKER;
use serde_json::{Number, Value};

use super::Params;

/// A well-formed directive.
#[derive(Debug, Clone, PartialEq)]
pub struct Directive {
    pub app: String,
    pub action: String,
    pub params: Params,
    /// Where it was in the message (bytes).
    pub span: Range<usize>,
}

/// A directive that could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("malformed APP_ACTION directive `{raw}`: {reason}")]
pub struct DirectiveError {
    pub reason: String,
    /// The text of the directive as written, up to the end of its line.
    pub raw: String,
    pub span: Range<usize>,
}

/// A message split into its prose and its directives, in order of appearance.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedMessage {
    /// The text with every directive (well-formed or not) cut out.
    pub prose: String,
    pub directives: Vec<Result<Directive, DirectiveError>>,
}

impl ParsedMessage {
    pub fn valid(&self) -> impl Iterator<Item = &Directive> {
        self.directives.iter().filter_map(|d| d.as_ref().ok())
    }

    pub fn errors(&self) -> impl Iterator<Item = &DirectiveError> {
        self.directives.iter().filter_map(|d| d.as_ref().err())
    }
}

/// Splits `text` into prose and directives. Never panics, whatever the text.
pub fn parse_message(text: &str) -> ParsedMessage {
    let mut directives = Vec::new();
    let mut prose = String::new();
    let mut copied_to = 0;
    let mut search_from = 0;
    while let Some(found) = text[search_from..].find(MARKER) {
        let start = search_from + found;
        let (item, end) = parse_one(text, start);
        prose.push_str(&text[copied_to..start]);
        directives.push(item);
        copied_to = swallow_gap(text, start, end);
        search_from = end;
    }
    prose.push_str(&text[copied_to..]);
    ParsedMessage {
        prose: tidy_prose(&prose),
        directives,
    }
}

/// Writes a directive that [`parse_message`] reads back to the same app, action and params.
pub fn format_directive(app: &str, action: &str, params: &Params) -> String {
    let args: Vec<String> = params
        .iter()
        .map(|(key, value)| format!("{key}={}", format_value(value)))
        .collect();
    format!("{MARKER} {app}.{action}({})", args.join(", "))
}

fn format_value(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let mut out = String::with_capacity(s.len() + 2);
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    other => out.push(other),
                }
            }
            out.push('"');
            out
        }
        // Nested values have no directive syntax; JSON text in a string is the closest faithful form.
        Value::Array(_) | Value::Object(_) => format_value(&Value::String(value.to_string())),
        scalar => scalar.to_string(),
    }
}

/// Where the prose resumes after a directive spanning `start..end`: past the blanks that followed
/// it and, when the directive had its line to itself, past that line's end too, so cutting it
/// leaves no empty line behind.
fn swallow_gap(text: &str, start: usize, end: usize) -> usize {
    let rest = &text[end..];
    let after = end + (rest.len() - rest.trim_start_matches([' ', '\t']).len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let alone = text[line_start..start].trim().is_empty();
    match text[after..].chars().next() {
        Some('\n') if alone => after + 1,
        Some('\r') if alone && text[after..].starts_with("\r\n") => after + 2,
        _ => after,
    }
}

/// Removes the blank lines and trailing spaces left where directives were cut out.
fn tidy_prose(prose: &str) -> String {
    let lines: Vec<&str> = prose.lines().map(str::trim_end).collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    for line in lines {
        if line.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(line);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out.join("\n")
}

/// Parses the directive whose marker starts at `start`; returns it and the byte after it. A
/// malformed directive extends to the end of its line, so the next line can hold the next one.
fn parse_one(text: &str, start: usize) -> (Result<Directive, DirectiveError>, usize) {
    let mut cursor = Cursor {
        text,
        pos: start + MARKER.len(),
    };
    match cursor.directive() {
        Ok((app, action, params)) => (
            Ok(Directive {
                app,
                action,
                params,
                span: start..cursor.pos,
            }),
            cursor.pos,
        ),
        Err(reason) => {
            let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
            // A marker later on the same line starts its own directive.
            let end = text[start + MARKER.len()..end]
                .find(MARKER)
                .map_or(end, |i| start + MARKER.len() + i);
            let error = DirectiveError {
                reason,
                raw: text[start..end].trim_end().to_owned(),
                span: start..end,
            };
            (Err(error), end)
        }
    }
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips spaces and tabs (a directive stays on its line, except inside quoted strings).
    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        self.skip_blanks();
        match self.peek() {
            Some(c) if c == wanted => {
                self.pos += c.len_utf8();
                Ok(())
            }
            Some(c) => Err(format!("expected `{wanted}`, found `{c}`")),
            None => Err(format!("expected `{wanted}`, found the end of the message")),
        }
    }

    fn ident(&mut self, what: &str) -> Result<String, String> {
        self.skip_blanks();
        let start = self.pos;
        while let Some(c) = self.peek() {
            let ok = c.is_ascii_alphanumeric() || c == '_' || (c == '-' && self.pos > start);
            if !ok {
                break;
            }
            self.pos += 1;
        }
        let name = &self.text[start..self.pos];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("expected {what} name"));
        }
        Ok(name.to_owned())
    }

    fn directive(&mut self) -> Result<(String, String, Params), String> {
        let app = self.ident("an app")?;
        self.expect('.')?;
        let action = self.ident("an action")?;
        self.expect('(')?;
        let mut params = Params::new();
        loop {
            self.skip_blanks();
            if self.peek() == Some(')') {
                self.pos += 1;
                return Ok((app, action, params));
            }
            let key = self.ident("a parameter")?;
            self.expect('=')?;
            self.skip_blanks();
            let value = self.value()?;
            if params.insert(key.clone(), value).is_some() {
                return Err(format!("parameter `{key}` given twice"));
            }
            self.skip_blanks();
            match self.bump() {
                Some(',') => {}
                Some(')') => return Ok((app, action, params)),
                Some(c) => return Err(format!("expected `,` or `)`, found `{c}`")),
                None => return Err("missing `)`".to_owned()),
            }
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(quote @ ('"' | '\'')) => {
                self.pos += 1;
                self.quoted(quote).map(Value::String)
            }
            Some(_) => self.bare(),
            None => Err("expected a value, found the end of the message".to_owned()),
        }
    }

    fn quoted(&mut self, quote: char) -> Result<String, String> {
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err(format!("unterminated string (missing `{quote}`)")),
                Some(c) if c == quote => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some(other) => out.push(other),
                    None => return Err("unterminated string after `\\`".to_owned()),
                },
                Some(c) => out.push(c),
            }
        }
    }

    /// A number, a keyword, or a bare word up to the next `,` or `)` on the line.
    fn bare(&mut self) -> Result<Value, String> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, ',' | ')' | '\n' | '"' | '\'' | '(' | '=') {
                break;
            }
            self.pos += c.len_utf8();
        }
        let word = self.text[start..self.pos].trim();
        if word.is_empty() {
            return Err("expected a value".to_owned());
        }
        Ok(match word {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            _ => number(word).unwrap_or_else(|| Value::String(word.to_owned())),
        })
    }
}

/// `word` as a JSON number, if it is written as one (integers stay integers).
fn number(word: &str) -> Option<Value> {
    let digits = word.strip_prefix('-').unwrap_or(word);
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if let Ok(i) = word.parse::<i64>() {
        return Some(Value::Number(i.into()));
    }
    if let Ok(u) = word.parse::<u64>() {
        return Some(Value::Number(u.into()));
    }
    let looks_numeric = digits
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    if !looks_numeric {
        return None;
    }
    word.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn only(text: &str) -> Directive {
        let parsed = parse_message(text);
        assert_eq!(parsed.directives.len(), 1, "{parsed:?}");
        parsed.directives[0].clone().expect("well-formed")
    }

    #[test]
    fn reads_the_documents_examples() {
        let d =
            only(r#"APP_ACTION: paypal.transfer(to="bob@email.com", amount=50.00, note="Dinner")"#);
        assert_eq!((d.app.as_str(), d.action.as_str()), ("paypal", "transfer"));
        assert_eq!(d.params["to"], json!("bob@email.com"));
        assert_eq!(d.params["amount"], json!(50.0));
        assert_eq!(d.params["note"], json!("Dinner"));
        assert!(only("APP_ACTION: paypal.check_balance()").params.is_empty());
        let d = only(r#"APP_ACTION: amazon.search_products(query="laptop", max_price=1000)"#);
        assert_eq!(d.params["max_price"], json!(1000));
    }

    #[test]
    fn quoted_strings_keep_commas_parentheses_and_escaped_quotes() {
        let d =
            only(r#"APP_ACTION: paypal.transfer(to='bob', amount=5, note="a, (b) \"c\" \\ d")"#);
        assert_eq!(d.params["note"], json!(r#"a, (b) "c" \ d"#));
        assert_eq!(d.params["to"], json!("bob"));
    }

    #[test]
    fn reads_bare_words_booleans_and_null() {
        let d = only("APP_ACTION: x.y(a=bob, b=true, c=false, d=null, e=$50, f=-2.5,)");
        assert_eq!(d.params["a"], json!("bob"));
        assert_eq!(d.params["b"], json!(true));
        assert_eq!(d.params["c"], json!(false));
        assert_eq!(d.params["d"], Value::Null);
        assert_eq!(d.params["e"], json!("$50"));
        assert_eq!(d.params["f"], json!(-2.5));
    }

    #[test]
    fn keeps_prose_and_reads_several_directives_in_order() {
        let text = "Sure, paying now.\nAPP_ACTION: paypal.transfer(to=\"bob\", amount=30)\nAPP_ACTION: paypal.check_balance() Done!";
        let parsed = parse_message(text);
        let actions: Vec<&str> = parsed.valid().map(|d| d.action.as_str()).collect();
        assert_eq!(actions, ["transfer", "check_balance"]);
        assert_eq!(parsed.prose, "Sure, paying now.\nDone!");
    }

    #[test]
    fn malformed_directives_are_errors_and_parsing_goes_on() {
        let text = "Hi\nAPP_ACTION: paypal.transfer(to=\"bob, amount=3\nAPP_ACTION: paypal.check_balance()\nAPP_ACTION: nonsense";
        let parsed = parse_message(text);
        assert_eq!(parsed.directives.len(), 3);
        assert!(parsed.directives[0].is_err());
        assert!(parsed.directives[1].is_ok());
        let last = parsed.directives[2].clone().unwrap_err();
        assert_eq!(last.raw, "APP_ACTION: nonsense");
        assert_eq!(parsed.prose, "Hi");
    }

    #[test]
    fn duplicate_parameters_are_rejected() {
        let parsed = parse_message("APP_ACTION: a.b(x=1, x=2)");
        assert!(parsed.directives[0].is_err());
    }

    #[test]
    fn formatter_output_reads_back() {
        let mut params = Params::new();
        params.insert("note".into(), json!("he said \"hi\", (ok)\n\\"));
        params.insert("amount".into(), json!(12.5));
        params.insert("flag".into(), json!(true));
        let text = format_directive("paypal", "transfer", &params);
        let d = only(&text);
        assert_eq!(d.params, params);
    }
}
