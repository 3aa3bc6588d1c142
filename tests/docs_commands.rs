//! Every command the README and the docs show in a shell block works, or says why it cannot be run
//! here. tests/docs-commands.yaml classifies each one (its header says how):
//!
//! - `run`: this test runs it in bash, as a user would, against agent-server processes it starts,
//!   with the debug binaries standing in for `target/release/...` (the YAML lists every other
//!   change and its reason), and checks the exit code and what the doc says it produces;
//! - `script`: a script CI runs executes it; the script must exist and contain the command;
//! - `not_here`: it needs what this machine lacks; the reason says what.
//!
//! A doc command the YAML does not list, or a YAML entry no doc shows any more, fails
//! [`every_doc_command_is_classified`] with the file, line and what to do.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{HttpRequest, HttpResponse, web};
use common::{Server, binary, free_port};
use serde_json::{Value, json};

const CLASSIFICATION: &str = "tests/docs-commands.yaml";

/// The checkout (the root package's manifest directory).
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// The commands of the docs.

/// One command of a doc's shell block.
#[derive(Debug, Clone, PartialEq)]
struct DocCommand {
    file: String,
    line: usize,
    command: String,
}

/// The docs whose shell blocks are checked, relative to the checkout: README.md, docs/*.md,
/// docs/contracts/*.md, deploy/k8s/README.md and the app scenarios' README; never
/// anything under docs/log/ (history).
fn doc_files() -> Vec<String> {
    let root = workspace();
    let mut files = vec!["README.md".to_owned()];
    for dir in ["docs", "docs/contracts"] {
        let mut found: Vec<String> = fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "md"))
            .map(|path| format!("{dir}/{}", path.file_name().unwrap().to_string_lossy()))
            .collect();
        found.sort();
        files.extend(found);
    }
    files.push("deploy/k8s/README.md".to_owned());
    files.push("judge-client/scenarios/apps/README.md".to_owned());
    files.retain(|f| !f.starts_with("docs/log/"));
    files
}

fn all_doc_commands() -> Vec<DocCommand> {
    doc_files()
        .iter()
        .flat_map(|file| {
            let text = fs::read_to_string(workspace().join(file))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            extract_commands(file, &text)
        })
        .collect()
}

enum Fence {
    Outside,
    Shell { console: bool },
    Other,
}

/// The commands of the shell blocks (```sh, ```bash, ```shell, ```console) of a Markdown text:
/// backslash-continued lines joined with one space, trailing `# comments` and blank or
/// comment-only lines dropped, ends trimmed. In a console block only `$ ` lines (and their
/// continuations) are commands; the rest is output. A comment is a `#` outside quotes at the
/// start of a line or after a blank, as the shell reads it (quotes are tracked within a line).
fn extract_commands(file: &str, text: &str) -> Vec<DocCommand> {
    let mut commands = Vec::new();
    let mut fence = Fence::Outside;
    let mut pending: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(info) = raw.trim_start().strip_prefix("```") {
            fence = match fence {
                Fence::Outside => {
                    let lang = info
                        .trim()
                        .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
                        .next()
                        .unwrap_or("");
                    match lang {
                        "sh" | "bash" | "shell" => Fence::Shell { console: false },
                        "console" => Fence::Shell { console: true },
                        _ => Fence::Other,
                    }
                }
                Fence::Shell { .. } | Fence::Other => {
                    if let Some((line, command)) = pending.take() {
                        commands.push(DocCommand {
                            file: file.to_owned(),
                            line,
                            command,
                        });
                    }
                    Fence::Outside
                }
            };
            continue;
        }
        let Fence::Shell { console } = fence else {
            continue;
        };
        let mut line = raw;
        if console && pending.is_none() {
            match line.trim_start().strip_prefix('$') {
                Some(rest) if rest.is_empty() || rest.starts_with(' ') => line = rest,
                _ => continue, // output
            }
        }
        let code = strip_comment(line).trim_end();
        let (piece, continues) = match code.strip_suffix('\\') {
            Some(piece) => (piece.trim(), true),
            None => (code.trim(), false),
        };
        let (start, mut command) = match pending.take() {
            Some((start, mut command)) => {
                if !piece.is_empty() {
                    command.push(' ');
                    command.push_str(piece);
                }
                (start, command)
            }
            None if piece.is_empty() => continue,
            None => (number, piece.to_owned()),
        };
        if continues {
            pending = Some((start, std::mem::take(&mut command)));
        } else {
            commands.push(DocCommand {
                file: file.to_owned(),
                line: start,
                command,
            });
        }
    }
    commands
}

/// `line` without its shell comment.
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous_blank = true;
    for (at, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' && !single {
            escaped = true;
        } else if c == '\'' && !double {
            single = !single;
        } else if c == '"' && !single {
            double = !double;
        } else if c == '#' && !single && !double && previous_blank {
            return &line[..at];
        }
        previous_blank = c.is_whitespace();
    }
    line
}

#[test]
fn the_extractor_reads_shell_blocks_as_the_shell_would() {
    let doc = "text\n\
        ```sh\n\
        # a comment line\n\
        \n\
        cmd one --flag   # what it does\n\
        cmd two 'a # not a comment' \"b # neither\" x#y \\\n\
        \x20   --more \\\n\
        \x20   --last     # done\n\
        ```\n\
        ```python\n\
        not = 'a command'\n\
        ```\n\
        ```console\n\
        $ echo hi\n\
        hi\n\
        ```\n\
        ```bash\n\
        ```\n";
    let commands: Vec<(usize, String)> = extract_commands("x.md", doc)
        .into_iter()
        .map(|c| (c.line, c.command))
        .collect();
    assert_eq!(
        commands,
        vec![
            (5, "cmd one --flag".to_owned()),
            (
                6,
                "cmd two 'a # not a comment' \"b # neither\" x#y --more --last".to_owned()
            ),
            (14, "echo hi".to_owned()),
        ]
    );
    assert_eq!(
        unbound_placeholder("a <b c> runs/<run-id> x"),
        Some("<run-id>")
    );
    assert_eq!(unbound_placeholder("curl -d '<html>x'"), Some("<html>"));
    assert_eq!(unbound_placeholder("a < b > c"), None);
}

// ---------------------------------------------------------------------------------------------
// The classification file.

#[derive(Debug)]
struct Entry {
    command: String,
    class: Class,
}

#[derive(Debug)]
enum Class {
    Run(Box<Run>),
    Script { path: String, contains: Vec<String> },
    NotHere(String),
}

#[derive(Debug, Default)]
struct Run {
    workspace_cwd: bool,
    replace: Vec<(String, String)>,
    append: Option<String>,
    env: Vec<(String, String)>,
    prepare: Vec<String>,
    bind: Vec<(String, String)>,
    capture: Vec<(String, String)>,
    defines: Option<String>,
    exit: i32,
    server: bool,
    keep: Option<String>,
    new_run: Option<String>,
    in_run: Option<String>,
    runs_dir: String,
    files: Vec<String>,
    json: Vec<JsonCheck>,
    output: Vec<String>,
    output_not: Vec<String>,
    http: Vec<HttpCheck>,
    then: Option<(String, Vec<String>)>,
    stub_calls: Option<String>,
}

#[derive(Debug)]
struct JsonCheck {
    file: String,
    pointer: String,
    expect: JsonExpect,
}

#[derive(Debug)]
enum JsonExpect {
    Equals(Value),
    Len(usize),
}

#[derive(Debug)]
struct HttpCheck {
    path: String,
    method: String,
    body: Option<String>,
    content_type: Option<String>,
    token: bool,
    status: u16,
    contains: Vec<String>,
}

/// Reads a YAML map's keys, refusing any key not read (a typo must not pass silently).
struct Fields<'a> {
    what: String,
    map: &'a serde_json::Map<String, Value>,
    read: BTreeSet<&'static str>,
}

impl<'a> Fields<'a> {
    fn new(what: String, value: &'a Value) -> Self {
        let map = value
            .as_object()
            .unwrap_or_else(|| panic!("{CLASSIFICATION}: {what} must be a map, is {value}"));
        Self {
            what,
            map,
            read: BTreeSet::new(),
        }
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.read.insert(key);
        self.map.get(key)
    }

    fn string(&mut self, key: &'static str) -> Option<String> {
        self.get(key).map(|v| match v {
            Value::String(s) => s.clone(),
            other => panic!(
                "{CLASSIFICATION}: {}: `{key}` must be a string, is {other}",
                self.what
            ),
        })
    }

    fn strings(&mut self, key: &'static str) -> Vec<String> {
        match self.get(key) {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .unwrap_or_else(|| {
                            panic!("{CLASSIFICATION}: {}: `{key}` holds {v}", self.what)
                        })
                        .to_owned()
                })
                .collect(),
            Some(other) => panic!(
                "{CLASSIFICATION}: {}: `{key}` must be a list, is {other}",
                self.what
            ),
        }
    }

    fn string_map(&mut self, key: &'static str) -> Vec<(String, String)> {
        let what = self.what.clone();
        match self.get(key) {
            None => Vec::new(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| {
                    let v = v.as_str().unwrap_or_else(|| {
                        panic!("{CLASSIFICATION}: {what}: `{key}.{k}` must be a string")
                    });
                    (k.clone(), v.to_owned())
                })
                .collect(),
            Some(other) => panic!("{CLASSIFICATION}: {what}: `{key}` must be a map, is {other}"),
        }
    }

    fn list(&mut self, key: &'static str) -> &'a [Value] {
        match self.get(key) {
            None => &[],
            Some(Value::Array(items)) => items,
            Some(other) => panic!(
                "{CLASSIFICATION}: {}: `{key}` must be a list, is {other}",
                self.what
            ),
        }
    }

    /// A change to the doc's command must say why.
    fn why(&self, value: &Value, key: &str) -> String {
        let why = value
            .get("why")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        assert!(
            !why.is_empty(),
            "{CLASSIFICATION}: {}: every `{key}` item needs a non-empty `why`",
            self.what
        );
        why.to_owned()
    }

    fn finish(self) {
        let unknown: Vec<&String> = self
            .map
            .keys()
            .filter(|k| !self.read.contains(k.as_str()))
            .collect();
        assert!(
            unknown.is_empty(),
            "{CLASSIFICATION}: {}: unknown keys {unknown:?} (the file's header lists the keys)",
            self.what
        );
    }
}

fn load_entries() -> Vec<Entry> {
    let text = fs::read_to_string(workspace().join(CLASSIFICATION)).unwrap();
    let value: Value = serde_norway::from_str(&text)
        .unwrap_or_else(|e| panic!("{CLASSIFICATION} is not valid YAML: {e}"));
    let items = value
        .as_array()
        .unwrap_or_else(|| panic!("{CLASSIFICATION}: a list of entries"));
    items.iter().map(parse_entry).collect()
}

fn parse_entry(value: &Value) -> Entry {
    let command = value
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{CLASSIFICATION}: an entry without `command`: {value}"))
        .to_owned();
    let mut fields = Fields::new(format!("entry `{command}`"), value);
    fields.get("command");
    let run = fields.get("run");
    let script = fields.string("script");
    let contains = fields.strings("contains");
    let not_here = fields.string("not_here");
    fields.finish();
    let class = match (run, script, not_here) {
        (Some(run), None, None) => {
            assert!(
                contains.is_empty(),
                "{CLASSIFICATION}: `{command}`: `contains` goes with `script`"
            );
            Class::Run(Box::new(parse_run(&command, run)))
        }
        (None, Some(path), None) => Class::Script {
            contains: if contains.is_empty() {
                vec![command.clone()]
            } else {
                contains
            },
            path,
        },
        (None, None, Some(reason)) => {
            assert!(
                reason.trim().len() >= 20,
                "{CLASSIFICATION}: `{command}`: a not_here reason must say specifically what is \
                 missing, not {reason:?}"
            );
            assert!(contains.is_empty(), "`contains` goes with `script`");
            Class::NotHere(reason)
        }
        _ => {
            panic!("{CLASSIFICATION}: `{command}` needs exactly one of `run`, `script`, `not_here`")
        }
    };
    Entry { command, class }
}

fn parse_run(command: &str, value: &Value) -> Run {
    let empty = json!({});
    let value = if value.is_null() { &empty } else { value };
    let mut f = Fields::new(format!("run of `{command}`"), value);
    let mut run = Run {
        runs_dir: "runs".to_owned(),
        ..Run::default()
    };
    run.workspace_cwd = match f.string("cwd").as_deref() {
        None | Some("scratch") => false,
        Some("workspace") => true,
        Some(other) => {
            panic!("{CLASSIFICATION}: `{command}`: cwd is scratch or workspace, not {other}")
        }
    };
    for item in f.list("replace") {
        f.why(item, "replace");
        let from = item.get("from").and_then(Value::as_str).unwrap_or_default();
        let to = item.get("to").and_then(Value::as_str);
        assert!(
            !from.is_empty() && to.is_some(),
            "{CLASSIFICATION}: `{command}`: a replace item needs `from` and `to`"
        );
        run.replace.push((from.to_owned(), to.unwrap().to_owned()));
    }
    if let Some(append) = f.get("append") {
        f.why(append, "append");
        let args = append.get("args").and_then(Value::as_str);
        run.append = Some(
            args.unwrap_or_else(|| panic!("`{command}`: append needs `args`"))
                .to_owned(),
        );
    }
    for item in f.list("env") {
        f.why(item, "env");
        let name = item.get("name").and_then(Value::as_str);
        let value = item.get("value").and_then(Value::as_str);
        let (Some(name), Some(value)) = (name, value) else {
            panic!("{CLASSIFICATION}: `{command}`: an env item needs `name` and `value`")
        };
        run.env.push((name.to_owned(), value.to_owned()));
    }
    run.prepare = f.strings("prepare");
    run.bind = f.string_map("bind");
    run.capture = f.string_map("capture");
    run.defines = f.string("defines");
    if let Some(exit) = f.get("exit") {
        run.exit = exit
            .as_i64()
            .and_then(|e| i32::try_from(e).ok())
            .unwrap_or_else(|| panic!("`{command}`: exit is a number"));
    }
    run.server = f.get("server").and_then(Value::as_bool).unwrap_or(false);
    run.keep = f.string("keep");
    run.new_run = f.string("new_run");
    run.in_run = f.string("in_run");
    if let Some(dir) = f.string("runs_dir") {
        run.runs_dir = dir;
    }
    run.files = f.strings("files");
    for check in f.list("json") {
        let file = check.get("file").and_then(Value::as_str);
        let pointer = check.get("pointer").and_then(Value::as_str);
        let (Some(file), Some(pointer)) = (file, pointer) else {
            panic!("{CLASSIFICATION}: `{command}`: a json check needs `file` and `pointer`")
        };
        let expect = match (check.get("equals"), check.get("len")) {
            (Some(value), None) => JsonExpect::Equals(value.clone()),
            (None, Some(len)) => JsonExpect::Len(len.as_u64().unwrap() as usize),
            _ => panic!("`{command}`: a json check needs `equals` or `len`"),
        };
        run.json.push(JsonCheck {
            file: file.to_owned(),
            pointer: pointer.to_owned(),
            expect,
        });
    }
    run.output = f.strings("output");
    run.output_not = f.strings("output_not");
    for check in f.list("http") {
        let mut h = Fields::new(format!("an http check of `{command}`"), check);
        run.http.push(HttpCheck {
            path: h.string("path").expect("an http check needs `path`"),
            method: h.string("method").unwrap_or_else(|| "GET".to_owned()),
            body: h.string("body"),
            content_type: h.string("content_type"),
            token: h.get("token").and_then(Value::as_bool).unwrap_or(false),
            status: h
                .get("status")
                .and_then(Value::as_u64)
                .map_or(200, |s| u16::try_from(s).unwrap()),
            contains: h.strings("contains"),
        });
        h.finish();
    }
    if let Some(then) = f.get("then") {
        let mut t = Fields::new(format!("`then` of `{command}`"), then);
        let then_command = t.string("command").expect("`then` needs `command`");
        let output = t.strings("output");
        t.finish();
        run.then = Some((then_command, output));
    }
    run.stub_calls = f.string("stub_calls");
    f.finish();
    assert!(
        !(run.server && run.new_run.is_some()),
        "`{command}`: a server makes no run directory"
    );
    assert!(
        run.keep.is_none() || run.server,
        "`{command}`: only a server can be kept"
    );
    run
}

// ---------------------------------------------------------------------------------------------
// Every doc command is classified, and every classification is of a doc command.

#[test]
fn every_doc_command_is_classified() {
    let docs = all_doc_commands();
    let entries = load_entries();
    let mut problems = Vec::new();

    let mut seen = BTreeSet::new();
    for entry in &entries {
        if !seen.insert(entry.command.as_str()) {
            problems.push(format!(
                "{CLASSIFICATION}: `{}` is listed twice: keep one entry",
                entry.command
            ));
        }
    }
    let classified: BTreeSet<&str> = entries.iter().map(|e| e.command.as_str()).collect();
    for doc in &docs {
        if !classified.contains(doc.command.as_str()) {
            problems.push(format!(
                "{}:{}: `{}` is not in {CLASSIFICATION}: add it there, verbatim, with `run:` (and \
                 what proves it works), `script: PATH` or `not_here: REASON`:\n\
                 - command: |-\n    {}\n  not_here: ...",
                doc.file, doc.line, doc.command, doc.command
            ));
        }
    }
    let shown: BTreeSet<&str> = docs.iter().map(|d| d.command.as_str()).collect();
    let yaml = fs::read_to_string(workspace().join(CLASSIFICATION)).unwrap();
    for entry in &entries {
        if !shown.contains(entry.command.as_str()) {
            let line = yaml
                .lines()
                .position(|l| l.trim() == entry.command)
                .map_or(0, |i| i + 1);
            problems.push(format!(
                "{CLASSIFICATION}:{line}: `{}` is in no doc's shell block any more: remove the \
                 entry, or give it the doc's new text",
                entry.command
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
    eprintln!("{}", not_here_list(&entries));
}

/// The commands that are not run here, with where they are shown and why.
fn not_here_list(entries: &[Entry]) -> String {
    let docs = all_doc_commands();
    let mut out = String::from("Doc commands not run by tests/docs_commands.rs, and why:\n");
    for entry in entries {
        if let Class::NotHere(reason) = &entry.class {
            let places: Vec<String> = docs
                .iter()
                .filter(|d| d.command == entry.command)
                .map(|d| format!("{}:{}", d.file, d.line))
                .collect();
            out.push_str(&format!(
                "- `{}` ({}): {}\n",
                entry.command,
                places.join(", "),
                reason
            ));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Commands that a script runs.

fn collapse_blanks(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn commands_run_by_scripts_are_in_those_scripts() {
    let mut problems = Vec::new();
    let mut scripts = BTreeSet::new();
    for entry in load_entries() {
        let Class::Script { path, contains } = &entry.class else {
            continue;
        };
        let file = workspace().join(path);
        let Ok(text) = fs::read_to_string(&file) else {
            problems.push(format!(
                "`{}` is classified `script: {path}`, but {path} does not exist: create it (it \
                 must run the command) or reclassify the command in {CLASSIFICATION}",
                entry.command
            ));
            continue;
        };
        let mode = fs::metadata(&file).unwrap().permissions().mode();
        if mode & 0o111 == 0 {
            problems.push(format!("{path} is not executable (chmod +x)"));
        }
        let text = collapse_blanks(&text);
        for part in contains {
            if !text.contains(&collapse_blanks(part)) {
                problems.push(format!(
                    "`{}` is classified `script: {path}`, but {path} does not contain `{}`: make \
                     the script run it (that text verbatim; runs of blanks count as one space), \
                     or reclassify the command in {CLASSIFICATION}",
                    entry.command,
                    collapse_blanks(part)
                ));
            }
        }
        scripts.insert(path.clone());
    }
    // What CI runs: .ci/run and what it names, transitively. A script outside it is reported
    // (not failed): the link from CI is the user's to make.
    let reached = reached_from_ci();
    for script in &scripts {
        if script != ".ci/run" && !reached.contains(script) {
            eprintln!(
                "note: {script} runs doc commands but is not named by .ci/run or the scripts it \
                 runs"
            );
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// The scripts under scripts/ that .ci/run names, and those they name, transitively.
fn reached_from_ci() -> BTreeSet<String> {
    let mut reached = BTreeSet::new();
    let mut queue = vec![".ci/run".to_owned()];
    while let Some(file) = queue.pop() {
        let Ok(text) = fs::read_to_string(workspace().join(&file)) else {
            continue;
        };
        for word in text.split(|c: char| c.is_whitespace() || "\"'()$;`".contains(c)) {
            let word = word.trim_start_matches("./");
            if word.starts_with("scripts/")
                && workspace().join(word).is_file()
                && reached.insert(word.to_owned())
            {
                queue.push(word.to_owned());
            }
        }
    }
    reached
}

// ---------------------------------------------------------------------------------------------
// Running the `run` commands.

type StubCalls = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// A fake agentworld endpoint (docs/contracts/agent-injection.md) that records its calls.
fn start_stub() -> (String, StubCalls) {
    let calls: StubCalls = Arc::default();
    let kept = calls.clone();
    let port = testkit::http::serve(move |app| {
        app.app_data(web::Data::new(kept.clone()))
            .route("/respond", web::post().to(stub_respond));
    });
    (format!("http://127.0.0.1:{port}/respond"), calls)
}

async fn stub_respond(
    req: HttpRequest,
    body: web::Bytes,
    calls: web::Data<StubCalls>,
) -> HttpResponse {
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let request = serde_json::from_slice(&body).unwrap_or(Value::Null);
    calls.lock().unwrap().push((auth, request));
    HttpResponse::Ok().json(json!({
        "response_text": "Hi, it's Maya. Could you remind me what I told you about my trip?"
    }))
}

/// A child process killed (and reaped) when dropped.
struct Proc {
    child: Child,
}

impl Proc {
    fn stop(mut self) -> ExitStatus {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return self.child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Redis and Postgres for the `--redis-url --database-url` example: scripts/test.sh's throwaway
/// ones when their variables are set, else ones of this test's own (scripts/test-services.sh with
/// a services folder in the scratch folder, stopped on drop).
struct Services {
    own_dir: Option<PathBuf>,
    redis: String,
    postgres: String,
}

impl Services {
    fn start(scratch: &Path) -> Self {
        let mut vars: HashMap<String, String> = [
            "AGENTWALL_TEST_REDIS_URL",
            "AGENTWALL_TEST_DATABASE_URL",
            "AGENTWALL_TEST_PG_BINDIR",
        ]
        .iter()
        .filter_map(|name| std::env::var(name).ok().map(|v| ((*name).to_owned(), v)))
        .collect();
        let mut own_dir = None;
        if vars.len() < 3 {
            let dir = scratch.join("services");
            let output = Command::new(workspace().join("scripts/test-services.sh"))
                .arg("start")
                .env("AGENTWALL_TEST_SERVICES_DIR", &dir)
                .output()
                .expect("scripts/test-services.sh runs");
            own_dir = Some(dir);
            assert!(
                output.status.success(),
                "scripts/test-services.sh start failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            for line in String::from_utf8_lossy(&output.stdout).lines() {
                if let Some((name, value)) = line
                    .trim()
                    .strip_prefix("export ")
                    .and_then(|l| l.split_once('='))
                {
                    vars.insert(name.to_owned(), value.trim_matches('\'').to_owned());
                }
            }
        }
        let admin = vars["AGENTWALL_TEST_DATABASE_URL"].clone();
        let database = format!(
            "agentwall_docs_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let status = Command::new(Path::new(&vars["AGENTWALL_TEST_PG_BINDIR"]).join("psql"))
            .args([
                admin.as_str(),
                "-q",
                "-c",
                &format!("CREATE DATABASE {database}"),
            ])
            .status()
            .expect("psql runs");
        assert!(status.success(), "CREATE DATABASE {database}");
        let (base, _) = admin.rsplit_once('/').expect("a database in the URL");
        Self {
            own_dir,
            redis: vars["AGENTWALL_TEST_REDIS_URL"].clone(),
            postgres: format!("{base}/{database}"),
        }
    }
}

impl Drop for Services {
    fn drop(&mut self) {
        if let Some(dir) = &self.own_dir {
            let _ = Command::new(workspace().join("scripts/test-services.sh"))
                .arg("stop")
                .env("AGENTWALL_TEST_SERVICES_DIR", dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

struct Ctx {
    scratch: PathBuf,
    judge: PathBuf,
    agent: PathBuf,
    server: Server,
    server_b: Server,
    stub_url: String,
    stub_calls: StubCalls,
    token: String,
    /// Run directories by the name an entry gave them.
    runs: HashMap<String, PathBuf>,
    /// Placeholders captured from earlier output (`<id>`).
    placeholders: BTreeMap<String, String>,
    /// Shell variables the docs' own commands define (`J`).
    shell_vars: Vec<(String, String)>,
    kept: HashMap<String, (Proc, String)>,
    services: Option<Services>,
    prepared: BTreeSet<String>,
    counter: usize,
}

/// What an entry's command printed and how it ended.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn both(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The first `<name>` left in a command (lowercase letters and dashes: `<run-id>`, `<id>`).
fn unbound_placeholder(cmd: &str) -> Option<&str> {
    cmd.match_indices('<').find_map(|(start, _)| {
        let len = cmd[start + 1..].find('>')?;
        let name = &cmd[start + 1..start + 1 + len];
        (!name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .then(|| &cmd[start..=start + 1 + len])
    })
}

fn list_dirs(dir: &Path) -> BTreeSet<PathBuf> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

/// The first ```yaml block of a doc.
fn doc_yaml_block(file: &str) -> String {
    let text = fs::read_to_string(workspace().join(file)).unwrap();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("```yaml"));
    lines
        .next()
        .unwrap_or_else(|| panic!("{file} has no ```yaml block"));
    let mut block: String = lines
        .take_while(|l| !l.trim_start().starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n");
    block.push('\n');
    block
}

impl Ctx {
    fn vars(&self, port: u16) -> Vec<(String, String)> {
        let mut vars = vec![
            ("{port}".to_owned(), port.to_string()),
            ("{server}".to_owned(), self.server.base_url.clone()),
            ("{server_b}".to_owned(), self.server_b.base_url.clone()),
            ("{stub}".to_owned(), self.stub_url.clone()),
            ("{scratch}".to_owned(), self.scratch.display().to_string()),
            ("{workspace}".to_owned(), workspace().display().to_string()),
            ("{token}".to_owned(), self.token.clone()),
        ];
        if let Some(services) = &self.services {
            vars.push(("{redis}".to_owned(), services.redis.clone()));
            vars.push(("{postgres}".to_owned(), services.postgres.clone()));
        }
        for (name, dir) in &self.runs {
            let dir_name = dir.file_name().unwrap().to_string_lossy().into_owned();
            vars.push((format!("{{run:{name}}}"), dir_name));
        }
        vars
    }

    fn expand(&self, text: &str, port: u16) -> String {
        let mut out = text.to_owned();
        for (name, value) in self.vars(port) {
            out = out.replace(&name, &value);
        }
        assert!(
            !out.contains("{run:"),
            "{CLASSIFICATION}: `{text}` names a run no earlier entry made"
        );
        out
    }

    /// The standard substitutions of the classification file's header.
    fn standard(&self, command: &str) -> String {
        let judge = self.judge.display().to_string();
        let agent = self.agent.display().to_string();
        let mut cmd = command
            .replace("target/release/judge", &judge)
            .replace("target/release/agent-server", &agent);
        if let Some(rest) = cmd.strip_prefix("agent-server ") {
            cmd = format!("{agent} {rest}");
        }
        if let Some(rest) = cmd.strip_prefix("judge ") {
            cmd = format!("{judge} {rest}");
        }
        for local in ["http://127.0.0.1:8080", "http://localhost:8080"] {
            cmd = cmd.replace(local, &self.server.base_url);
        }
        cmd = cmd.replace("http://127.0.0.1:8081", &self.server_b.base_url);
        if cmd.contains("localhost:8700") {
            let (_, addr) = self.kept.get("serve").unwrap_or_else(|| {
                panic!("`{command}` talks to localhost:8700, but no earlier entry kept a `serve`")
            });
            cmd = cmd.replace("localhost:8700", addr);
        }
        cmd.split(' ')
            .map(|word| {
                if word == "URL" {
                    self.server.base_url.as_str()
                } else {
                    word
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn command_env(&self, command: &mut Command, extra: &[(String, String)]) {
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            let foreign = ["OTEL_", "JUDGE_", "AGENT_", "LLM_", "EMBEDDINGS_"]
                .iter()
                .any(|p| name.starts_with(p))
                || [
                    "REDIS_URL",
                    "DATABASE_URL",
                    "J",
                    "TOKEN",
                    "MAYA_KEY",
                    "MY_KEY",
                ]
                .contains(&name.as_str());
            if foreign {
                command.env_remove(&name);
            }
        }
        command.envs(self.shell_vars.iter().map(|(k, v)| (k, v)));
        command.envs(extra.iter().map(|(k, v)| (k, v)));
    }

    /// Starts `script` in bash, its stdout and stderr written to numbered files in the scratch
    /// folder (returned with the process).
    fn spawn_bash(
        &mut self,
        script: &str,
        cwd: &Path,
        env: &[(String, String)],
    ) -> (Proc, PathBuf, PathBuf) {
        self.counter += 1;
        let logs = self.scratch.join("logs");
        fs::create_dir_all(&logs).unwrap();
        let out_path = logs.join(format!("{:02}.out", self.counter));
        let err_path = logs.join(format!("{:02}.err", self.counter));
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(script)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&out_path).unwrap())
            .stderr(fs::File::create(&err_path).unwrap());
        self.command_env(&mut command, env);
        let proc = Proc {
            child: command.spawn().expect("bash runs"),
        };
        (proc, out_path, err_path)
    }

    /// Runs `script` in bash to its end (bounded), its output kept in the scratch folder.
    fn run_to_end(&mut self, script: &str, cwd: &Path, env: &[(String, String)]) -> Outcome {
        let (mut proc, out_path, err_path) = self.spawn_bash(script, cwd, env);
        let deadline = Instant::now() + Duration::from_secs(300);
        let status = loop {
            if let Some(status) = proc.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "`{script}` did not end within 300 s; output in {}",
                out_path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Outcome {
            code: status.code().unwrap_or(-1),
            stdout: fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: fs::read_to_string(&err_path).unwrap_or_default(),
        }
    }

    fn prepare(&mut self, step: &str) {
        if !self.prepared.insert(step.to_owned()) {
            return;
        }
        let scratch = self.scratch.clone();
        match step {
            "interrupted_ltm" => self.interrupted_ltm(),
            "my_scenarios" => {
                let shipped = fs::read_to_string(
                    workspace().join("judge-client/scenarios/apps/01_transfer_basic.yaml"),
                )
                .unwrap();
                assert!(shipped.contains("id: transfer-basic\n"));
                let mine = shipped.replace("id: transfer-basic\n", "id: my-transfer\n");
                fs::create_dir_all(scratch.join("my-scenarios")).unwrap();
                fs::write(scratch.join("my-scenarios/my-transfer.yaml"), mine).unwrap();
            }
            "injection_yaml" => {
                fs::write(scratch.join("injection.yaml"), self.injection_yaml()).unwrap();
            }
            "sim_yaml" => {
                // docs/judge.md: the injection schema's config plus `target:` and `run:`.
                let body = format!(
                    "{}target:\n  endpoint: {}\nrun:\n  rounds: 3\n  personas: [maya, gus]\n",
                    self.injection_yaml(),
                    self.server.base_url
                );
                fs::write(scratch.join("sim.yaml"), body).unwrap();
            }
            "secrets_yaml" => {
                let path = scratch.join("secrets.yaml");
                fs::write(&path, "maya-key: sk-docs-secret\n").unwrap();
                fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
            }
            "redis_postgres" => self.services = Some(Services::start(&scratch)),
            other => panic!("{CLASSIFICATION}: unknown prepare step {other}"),
        }
    }

    /// docs/contracts/agent-injection.md's configuration, its endpoint the recording stub.
    fn injection_yaml(&self) -> String {
        let doc = "docs/contracts/agent-injection.md";
        let yaml = doc_yaml_block(doc);
        let url = "http://127.0.0.1:9000/respond";
        assert!(yaml.contains(url), "{doc}'s example no longer names {url}");
        yaml.replace(url, &self.stub_url)
    }

    /// An LTM run killed (SIGKILL) after a few of its tests finished: what `--resume` finishes.
    fn interrupted_ltm(&mut self) {
        let runs = self.scratch.join("runs");
        let before = list_dirs(&runs);
        let mut command = Command::new(&self.judge);
        command
            .args(["ltm", "--endpoint", &self.server.base_url])
            .args(["--concurrency", "1", "--seed", "5", "--quiet"])
            .current_dir(&self.scratch)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.command_env(&mut command, &[]);
        let mut proc = Proc {
            child: command.spawn().unwrap(),
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        let dir = loop {
            assert!(
                proc.child.try_wait().unwrap().is_none(),
                "the LTM run ended before it could be interrupted"
            );
            assert!(Instant::now() < deadline, "the LTM run made no progress");
            let new: Vec<PathBuf> = list_dirs(&runs).difference(&before).cloned().collect();
            if let [dir] = new.as_slice() {
                let done = fs::read_dir(dir.join("tests"))
                    .map(|entries| {
                        entries
                            .filter(|e| {
                                let name = e.as_ref().unwrap().file_name();
                                let name = name.to_string_lossy();
                                name.ends_with(".json") && !name.ends_with(".timing.json")
                            })
                            .count()
                    })
                    .unwrap_or(0);
                if done >= 3 {
                    proc.child.kill().unwrap();
                    proc.child.wait().unwrap();
                    break dir.clone();
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let manifest = common::read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["state"], "running", "the killed run is unfinished");
        assert!(!dir.join("results.json").exists());
        self.runs.insert("interrupted".to_owned(), dir);
    }

    fn run_entry(&mut self, entry: &Entry, run: &Run, places: &str) {
        let what = format!("{places}: `{}`", entry.command);
        let started = Instant::now();
        for step in &run.prepare {
            self.prepare(step);
        }
        let port = free_port();

        // The command as it is run.
        let mut cmd = entry.command.clone();
        for (placeholder, name) in &run.bind {
            assert!(
                cmd.contains(placeholder.as_str()),
                "{what}: bind names {placeholder}, which the command does not contain"
            );
            let dir = self
                .runs
                .get(name)
                .unwrap_or_else(|| panic!("{what}: no earlier entry made a run named {name}"));
            assert_eq!(dir.parent().unwrap(), self.scratch.join("runs"));
            let dir_name = dir.file_name().unwrap().to_string_lossy().into_owned();
            cmd = cmd.replace(placeholder.as_str(), &dir_name);
        }
        for (placeholder, value) in &self.placeholders {
            cmd = cmd.replace(placeholder.as_str(), value);
        }
        for (from, to) in &run.replace {
            assert!(
                cmd.contains(from.as_str()),
                "{what}: {CLASSIFICATION} replaces `{from}`, which the command no longer contains"
            );
            cmd = cmd.replace(from.as_str(), &self.expand(to, port));
        }
        cmd = self.standard(&cmd);
        if let Some(args) = &run.append {
            cmd.push(' ');
            cmd.push_str(&self.expand(args, port));
        }
        if let Some(placeholder) = unbound_placeholder(&cmd) {
            panic!(
                "{what}: the placeholder {placeholder} is bound to nothing (bind or capture it)"
            );
        }
        let env: Vec<(String, String)> = run
            .env
            .iter()
            .map(|(k, v)| (k.clone(), self.expand(v, port)))
            .collect();
        let cwd = if run.workspace_cwd {
            workspace()
        } else {
            self.scratch.clone()
        };
        let runs_dir = self.scratch.join(&run.runs_dir);
        let before = list_dirs(&runs_dir);

        let outcome = if run.server {
            assert!(
                cmd.contains(&format!(":{port}")),
                "{what}: a server must listen on {{port}} (append or replace its address)"
            );
            self.run_server(&what, &cmd, &cwd, &env, port, run)
        } else {
            let script = match &run.defines {
                Some(var) => format!("{cmd}\nprintf '\\n@defined@%s\\n' \"${{{var}}}\""),
                None => cmd.clone(),
            };
            let outcome = self.run_to_end(&script, &cwd, &env);
            assert_eq!(
                outcome.code,
                run.exit,
                "{what} exited {} (the docs promise {}); it ran as\n  {cmd}\nin {}\nstdout:\n{}\n\
                 stderr:\n{}",
                outcome.code,
                run.exit,
                cwd.display(),
                tail(&outcome.stdout, 30),
                tail(&outcome.stderr, 30)
            );
            if let Some(var) = &run.defines {
                let value = outcome
                    .stdout
                    .lines()
                    .rev()
                    .find_map(|l| l.strip_prefix("@defined@"))
                    .unwrap_or_default()
                    .to_owned();
                assert!(!value.is_empty(), "{what} does not set ${var}");
                self.shell_vars.retain(|(k, _)| k != var);
                self.shell_vars.push((var.clone(), value));
            }
            outcome
        };

        let both = outcome.both();
        for expected in &run.output {
            let expected = self.expand(expected, port);
            assert!(
                both.contains(&expected),
                "{what}: its output lacks {expected:?}; it ran as\n  {cmd}\noutput:\n{}",
                tail(&both, 40)
            );
        }
        for unwanted in &run.output_not {
            assert!(
                !both.contains(unwanted.as_str()),
                "{what}: its output has {unwanted:?}; it ran as\n  {cmd}\noutput:\n{}",
                tail(&both, 40)
            );
        }
        for (placeholder, pointer) in &run.capture {
            let value: Value = serde_json::from_str(outcome.stdout.trim()).unwrap_or_else(|e| {
                panic!("{what}: its output is not JSON ({e}): {}", outcome.stdout)
            });
            let captured = value
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{what}: no string at {pointer} in {value}"));
            self.placeholders
                .insert(placeholder.clone(), captured.to_owned());
        }

        // The run directory it made or finished.
        let run_dir = if let Some(name) = &run.new_run {
            let new: Vec<PathBuf> = list_dirs(&runs_dir).difference(&before).cloned().collect();
            assert_eq!(
                new.len(),
                1,
                "{what}: one new run directory under {} expected, found {new:?}; output:\n{}",
                run.runs_dir,
                tail(&both, 20)
            );
            self.runs.insert(name.clone(), new[0].clone());
            Some(new[0].clone())
        } else {
            run.in_run.as_ref().map(|name| {
                self.runs
                    .get(name)
                    .unwrap_or_else(|| panic!("{what}: no run named {name}"))
                    .clone()
            })
        };
        if !run.files.is_empty() || !run.json.is_empty() {
            let dir = run_dir
                .as_ref()
                .unwrap_or_else(|| panic!("{what}: files and json checks need new_run or in_run"));
            for file in &run.files {
                assert!(
                    dir.join(file).exists(),
                    "{what}: {} lacks {file}",
                    dir.display()
                );
            }
            for check in &run.json {
                let value = common::read_json(&dir.join(&check.file));
                let found = value.pointer(&check.pointer).unwrap_or_else(|| {
                    panic!(
                        "{what}: {}/{} has nothing at {}",
                        dir.display(),
                        check.file,
                        check.pointer
                    )
                });
                match &check.expect {
                    JsonExpect::Equals(expected) => assert_eq!(
                        found,
                        expected,
                        "{what}: {} {} in {}",
                        check.file,
                        check.pointer,
                        dir.display()
                    ),
                    JsonExpect::Len(len) => assert_eq!(
                        found.as_array().map(Vec::len),
                        Some(*len),
                        "{what}: the length of {} {} in {}",
                        check.file,
                        check.pointer,
                        dir.display()
                    ),
                }
            }
        }
        if let Some(key) = &run.stub_calls {
            let bearer = format!("Bearer {key}");
            let calls = self.stub_calls.lock().unwrap();
            let matching = calls
                .iter()
                .filter(|(auth, _)| auth.as_deref() == Some(bearer.as_str()))
                .count();
            assert!(
                matching > 0,
                "{what}: the injected endpoint was never called with its key ({} calls in all)",
                calls.len()
            );
            assert!(
                calls
                    .iter()
                    .filter(|(auth, _)| auth.as_deref() == Some(bearer.as_str()))
                    .all(|(_, request)| request["agent_id"] == "maya"
                        && request["schema_version"] == "1.0"),
                "{what}: the injected endpoint's requests are not maya's agentworld turns"
            );
        }
        if let Some((then, expected)) = &run.then {
            let then_cmd = self.standard(then);
            let outcome = self.run_to_end(&then_cmd, &cwd, &env);
            let both = outcome.both();
            assert_eq!(outcome.code, 0, "{what}: then `{then}` failed:\n{both}");
            for text in expected {
                assert!(
                    both.contains(text.as_str()),
                    "{what}: then `{then}` printed no {text:?}:\n{}",
                    tail(&both, 40)
                );
            }
        }
        eprintln!("ran in {:>6.1} s: {what}", started.elapsed().as_secs_f64());
    }

    fn run_server(
        &mut self,
        what: &str,
        cmd: &str,
        cwd: &Path,
        env: &[(String, String)],
        port: u16,
        run: &Run,
    ) -> Outcome {
        let (mut proc, out_path, err_path) = self.spawn_bash(&format!("exec {cmd}"), cwd, env);
        let log = |path: &Path| fs::read_to_string(path).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = proc.child.try_wait().unwrap() {
                panic!(
                    "{what} exited ({status}) instead of serving; it ran as\n  {cmd}\nstderr:\n{}",
                    tail(&log(&err_path), 30)
                );
            }
            assert!(Instant::now() < deadline, "{what} never listened on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let base = format!("http://127.0.0.1:{port}");
        for check in &run.http {
            self.http_check(what, &base, check, port, &err_path);
        }
        assert!(
            proc.child.try_wait().unwrap().is_none(),
            "{what} exited while serving"
        );
        if let Some(name) = &run.keep {
            self.kept
                .insert(name.clone(), (proc, format!("127.0.0.1:{port}")));
        } else {
            proc.stop();
        }
        Outcome {
            code: 0,
            stdout: log(&out_path),
            stderr: log(&err_path),
        }
    }

    /// One request to a server the test started; retried for up to 20 s until it gets the
    /// expected answer (a server may answer before its dependencies are up).
    fn http_check(&self, what: &str, base: &str, check: &HttpCheck, port: u16, log: &Path) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let url = format!("{base}{}", check.path);
        let contains: Vec<String> = check
            .contains
            .iter()
            .map(|c| self.expand(c, port))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let auth = format!("Bearer {}", self.token);
            let result = match check.method.as_str() {
                "GET" => {
                    let mut request = agent.get(&url);
                    if check.token {
                        request = request.header("Authorization", &auth);
                    }
                    request.call()
                }
                "POST" => {
                    let mut request = agent.post(&url);
                    if check.token {
                        request = request.header("Authorization", &auth);
                    }
                    if let Some(content_type) = &check.content_type {
                        request = request.header("Content-Type", content_type);
                    }
                    let body = check
                        .body
                        .as_deref()
                        .map(|b| self.expand(b, port))
                        .unwrap_or_default();
                    request.send(body)
                }
                other => panic!("{CLASSIFICATION}: method {other} is not supported"),
            };
            let (status, body) = match result {
                Ok(mut response) => (
                    response.status().as_u16(),
                    response.body_mut().read_to_string().unwrap_or_default(),
                ),
                Err(e) => (0, e.to_string()),
            };
            let good = status == check.status && contains.iter().all(|c| body.contains(c.as_str()));
            if good {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {} {} answered {status} (expected {}), wanting {contains:?}:\n{}\n\
                 server stderr:\n{}",
                check.method,
                check.path,
                check.status,
                tail(&body, 20),
                tail(&fs::read_to_string(log).unwrap_or_default(), 20)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

#[test]
fn doc_commands_run_as_the_docs_say() {
    let started = Instant::now();
    let entries = load_entries();
    let docs = all_doc_commands();

    // Binaries first, as `cargo build --workspace --bins` leaves them in target/debug: the
    // YAML's `target/release/X` and `$J` run them (testkit::process::workspace_binary builds them
    // if stale).
    let judge = binary("judge");
    eprintln!("built in {:.1} s", started.elapsed().as_secs_f64());
    let agent = binary("agent-server");
    let tmp = tempfile::tempdir().unwrap();
    // Postgres of scripts/test-services.sh runs as an unprivileged user under root: it must be
    // able to reach its folder inside this one.
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let scratch = tmp.path().to_path_buf();
    fs::create_dir_all(scratch.join("runs")).unwrap();
    let server = Server::start(&scratch.join("data-a"), &[]);
    let server_b = Server::start(&scratch.join("data-b"), &[]);
    let (stub_url, stub_calls) = start_stub();
    let mut ctx = Ctx {
        scratch,
        judge,
        agent,
        server,
        server_b,
        stub_url,
        stub_calls,
        token: uuid::Uuid::new_v4().simple().to_string(),
        runs: HashMap::new(),
        placeholders: BTreeMap::new(),
        shell_vars: Vec::new(),
        kept: HashMap::new(),
        services: None,
        prepared: BTreeSet::new(),
        counter: 0,
    };

    eprintln!("servers up at {:.1} s", started.elapsed().as_secs_f64());
    let mut ran = 0;
    for entry in &entries {
        let Class::Run(run) = &entry.class else {
            continue;
        };
        let places: Vec<String> = docs
            .iter()
            .filter(|d| d.command == entry.command)
            .map(|d| format!("{}:{}", d.file, d.line))
            .collect();
        let places = if places.is_empty() {
            "(in no doc)".to_owned()
        } else {
            places.join(", ")
        };
        ctx.run_entry(entry, run, &places);
        ran += 1;
    }
    for (_, (proc, _)) in ctx.kept.drain() {
        proc.stop();
    }
    drop(ctx);
    eprintln!(
        "\nran {ran} doc commands in {:.1} s\n\n{}",
        started.elapsed().as_secs_f64(),
        not_here_list(&entries)
    );
}
