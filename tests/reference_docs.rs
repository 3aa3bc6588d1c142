//! The reference docs cannot drift from the binaries: every long flag (with its environment
//! variable and default) that `agent-server --help`, `judge --help` and `judge <command> --help`
//! print, and every operation of agent-server's and `judge serve`'s `/openapi.json`, must be
//! named in `docs/agent-server.md` or `docs/judge.md`. A failure lists each missing item and
//! the file it is missing from.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, binary, free_port};
use serde_json::Value;

const AGENT_SERVER_DOC: &str = "docs/agent-server.md";
const JUDGE_DOC: &str = "docs/judge.md";

/// One option of a `--help` text.
#[derive(Debug, PartialEq)]
struct HelpFlag {
    name: String,
    env: Option<String>,
    default: Option<String>,
}

/// Flags every clap command has; they need no line in the docs.
const BUILTIN_FLAGS: [&str; 2] = ["help", "version"];

/// The options of a clap `--help` text. An option's entry starts at a line indented by at most
/// six spaces that begins with `-` (`  -h, --help`, `      --addr <ADDR>`); descriptions are
/// indented further or follow on the same line. Works for clap's short and long help layouts.
fn help_flags(help: &str) -> Vec<HelpFlag> {
    let mut entries: Vec<String> = Vec::new();
    let mut in_entry = false;
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        if indent <= 6 && trimmed.starts_with('-') {
            entries.push(trimmed.to_owned());
            in_entry = true;
        } else if indent <= 6 && !trimmed.is_empty() {
            // A heading ("Options:", "Upstream model:") or the text after the options.
            in_entry = false;
        } else if in_entry && let Some(entry) = entries.last_mut() {
            entry.push('\n');
            entry.push_str(trimmed);
        }
    }
    entries
        .iter()
        .filter_map(|entry| {
            let long = entry.lines().next()?.split("--").nth(1)?;
            let name: String = long
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!BUILTIN_FLAGS.contains(&name.as_str())).then(|| HelpFlag {
                name,
                env: bracketed(entry, "[env: ").map(|env| {
                    env.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect()
                }),
                default: bracketed(entry, "[default: "),
            })
        })
        .collect()
}

/// The text after `opening` up to its matching `]`, e.g. `60` of `[default: 60]` and `[END]`
/// of `[default: [END]]`.
fn bracketed(entry: &str, opening: &str) -> Option<String> {
    let start = entry.find(opening)? + opening.len();
    let rest = &entry[start..];
    let mut depth = 0_usize;
    let end = rest.char_indices().find_map(|(at, c)| match c {
        '[' => {
            depth += 1;
            None
        }
        ']' if depth == 0 => Some(at),
        ']' => {
            depth -= 1;
            None
        }
        _ => None,
    })?;
    Some(rest[..end].to_owned())
}

/// The subcommands listed under `Commands:` in a `--help` text (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The parts of a Markdown document under headings that contain `mark` (each heading with
/// everything up to the next heading of the same or a higher level); the whole document when
/// `mark` is `None`.
fn sections(doc: &str, mark: Option<&str>) -> String {
    let Some(mark) = mark else {
        return doc.to_owned();
    };
    let mut out = String::new();
    let mut inside_level: Option<usize> = None;
    let mut in_code_block = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_code_block = !in_code_block;
        }
        let level = line.chars().take_while(|c| *c == '#').count();
        // A shell comment in a code block is not a heading.
        let is_heading = !in_code_block && level > 0 && line[level..].starts_with(' ');
        if is_heading {
            if inside_level.is_some_and(|inside| level <= inside) {
                inside_level = None;
            }
            if inside_level.is_none() && line.contains(mark) {
                inside_level = Some(level);
            }
        }
        if inside_level.is_some() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Whether `text` names the flag as code: `` `--name` ``, `` `--name VALUE` ``, `` `--name=…` ``
/// or `` `--name on\|off` `` (so `--model` is not found in `--model-b`).
fn names_flag(text: &str, name: &str) -> bool {
    let needle = format!("`--{name}");
    text.match_indices(&needle).any(|(at, _)| {
        matches!(
            text[at + needle.len()..].chars().next(),
            Some('`' | ' ' | '=')
        )
    })
}

/// What `text` (the relevant part of `doc`) lacks of `flags`, one message per item.
fn missing_flags(flags: &[HelpFlag], text: &str, doc: &str, command: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for flag in flags {
        let name = &flag.name;
        if !names_flag(text, name) {
            missing.push(format!(
                "flag `--{name}` of `{command}` is missing from {doc}"
            ));
            continue;
        }
        if let Some(env) = &flag.env
            && !text.contains(&format!("`{env}`"))
        {
            missing.push(format!(
                "environment variable `{env}` (of `--{name}`, `{command}`) is missing from {doc}"
            ));
        }
        if let Some(default) = &flag.default {
            let rows_with_default = text
                .lines()
                .filter(|line| line.starts_with('|') && names_flag(line, name))
                .any(|row| row.contains(&format!("`{default}`")));
            if !rows_with_default {
                missing.push(format!(
                    "default `{default}` of `--{name}` (`{command}`) is missing from its table row in {doc}"
                ));
            }
        }
    }
    missing
}

/// What `doc_text` lacks of the operations (`GET /path`) of an OpenAPI document.
fn missing_operations(openapi: &Value, doc_text: &str, doc: &str, server: &str) -> Vec<String> {
    operations(openapi)
        .into_iter()
        .filter(|operation| !doc_text.contains(&format!("`{operation}`")))
        .map(|operation| format!("endpoint `{operation}` of {server} is missing from {doc}"))
        .collect()
}

/// `METHOD /path` of every operation in an OpenAPI document.
fn operations(openapi: &Value) -> Vec<String> {
    let paths = openapi["paths"]
        .as_object()
        .expect("the OpenAPI document has paths");
    let mut operations = Vec::new();
    for (path, item) in paths {
        for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
            if item.get(method).is_some() {
                operations.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    operations
}

fn help_text(binary_name: &str, args: &[&str]) -> String {
    let output = Command::new(binary(binary_name))
        .args(args)
        .arg("--help")
        .output()
        .expect("the binary runs");
    assert!(
        output.status.success(),
        "{binary_name} {args:?} --help failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("help is UTF-8")
}

fn read_doc(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

fn get_json(url: &str) -> Value {
    ureq::get(url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .body_mut()
        .read_json()
        .expect("JSON")
}

fn assert_none_missing(missing: &[String]) {
    assert!(
        missing.is_empty(),
        "the reference docs lack {} item(s):\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}

#[test]
fn agent_server_doc_names_every_flag_and_endpoint() {
    let doc = read_doc(AGENT_SERVER_DOC);
    let flags = help_flags(&help_text("agent-server", &[]));
    assert!(
        flags.iter().any(|f| f.name == "addr"
            && f.env.as_deref() == Some("AGENT_ADDR")
            && f.default.as_deref() == Some("127.0.0.1:8080")),
        "the help parser found no --addr with its env and default: {flags:?}"
    );
    let mut missing = missing_flags(&flags, &doc, AGENT_SERVER_DOC, "agent-server");

    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let openapi = get_json(&format!("{}/openapi.json", server.base_url));
    assert!(
        operations(&openapi).contains(&"POST /v1/chat/completions".to_owned()),
        "agent-server's OpenAPI document has no chat route: {openapi}"
    );
    missing.extend(missing_operations(
        &openapi,
        &doc,
        AGENT_SERVER_DOC,
        "agent-server",
    ));
    assert_none_missing(&missing);
}

#[test]
fn judge_doc_names_every_command_flag_and_endpoint() {
    let doc = read_doc(JUDGE_DOC);
    let commands = subcommands(&help_text("judge", &[]));
    assert!(
        commands.len() >= 10 && commands.iter().any(|c| c == "serve"),
        "the help parser found too few judge commands: {commands:?}"
    );
    let mut missing = Vec::new();
    for command in &commands {
        let mark = format!("`judge {command}`");
        let text = sections(&doc, Some(&mark));
        if text.is_empty() {
            missing.push(format!("no heading of {JUDGE_DOC} names {mark}"));
            continue;
        }
        let flags = help_flags(&help_text("judge", &[command]));
        missing.extend(missing_flags(
            &flags,
            &text,
            JUDGE_DOC,
            &format!("judge {command}"),
        ));
    }

    let runs = tempfile::tempdir().unwrap();
    let serve = JudgeServe::start(runs.path());
    let openapi = get_json(&format!("{}/openapi.json", serve.base_url));
    assert!(
        operations(&openapi).contains(&"GET /runs".to_owned()),
        "judge serve's OpenAPI document has no /runs: {openapi}"
    );
    let serve_text = sections(&doc, Some("`judge serve`"));
    missing.extend(missing_operations(
        &openapi,
        &serve_text,
        JUDGE_DOC,
        "judge serve",
    ));
    assert_none_missing(&missing);
}

/// A `judge serve` process on a free loopback port; killed on drop.
struct JudgeServe {
    child: Child,
    base_url: String,
}

impl JudgeServe {
    fn start(runs: &Path) -> Self {
        let port = free_port();
        let child = Command::new(binary("judge"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--runs"])
            .arg(runs)
            .env_remove("JUDGE_SERVE_TOKEN")
            .env_remove("JUDGE_DATABASE_URL")
            .env_remove("JUDGE_SECRETS_FILE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("judge serve starts");
        let serve = Self {
            child,
            base_url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{}/runs", serve.base_url))
            .call()
            .is_err()
        {
            assert!(Instant::now() < deadline, "judge serve did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
        serve
    }
}

impl Drop for JudgeServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_help_parser_reads_both_clap_layouts() {
    let long = "Options:\n      --addr <ADDR>\n          Address to listen on\n          \n          [env: AGENT_ADDR=]\n          [default: 127.0.0.1:8080]\n\n      --deny-mock-time\n          Refuse X-Mock-Time\n\n  -h, --help\n          Print help\n\nUpstream model:\n      --llm-model <LLM_MODEL>\n          --llm-base-url's model [env: LLM_MODEL=]\n";
    let short = "Options:\n      --out <OUT>      Where run directories go [default: runs]\n      --stop-token <STOP_TOKEN>  Ends a conversation [default: [END]]\n      --api-key <API_KEY>    [env: JUDGE_API_KEY]\n  -h, --help       Print help\n";
    let flag = |name: &str, env: Option<&str>, default: Option<&str>| HelpFlag {
        name: name.to_owned(),
        env: env.map(str::to_owned),
        default: default.map(str::to_owned),
    };
    assert_eq!(
        help_flags(long),
        vec![
            flag("addr", Some("AGENT_ADDR"), Some("127.0.0.1:8080")),
            flag("deny-mock-time", None, None),
            flag("llm-model", Some("LLM_MODEL"), None),
        ]
    );
    assert_eq!(
        help_flags(short),
        vec![
            flag("out", None, Some("runs")),
            flag("stop-token", None, Some("[END]")),
            flag("api-key", Some("JUDGE_API_KEY"), None)
        ]
    );
    assert!(names_flag("| `--model` | x |", "model"));
    assert!(!names_flag("| `--model-b` | x |", "model"));
    assert!(names_flag("`--history new\\|full`", "history"));
}
