//! `judge conform`: the API conformance suite (Chat Completions, Responses, A2A) against any
//! server.

use std::path::PathBuf;
use std::process::ExitCode;

use super::EXIT_NONCONFORMANT;
use super::summary::print_files;
use super::target::TargetArgs;
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use judge_client::suites::conform::{self, Api, CheckStatus, ConformConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiChoice {
    Chat,
    Responses,
    /// Chat Completions and the Responses API.
    Both,
    /// A2A 1.0 over JSON-RPC (docs/contracts/a2a.md).
    A2a,
    /// All three.
    All,
}

impl ApiChoice {
    fn apis(self) -> Vec<Api> {
        match self {
            ApiChoice::Chat => vec![Api::Chat],
            ApiChoice::Responses => vec![Api::Responses],
            ApiChoice::Both => vec![Api::Chat, Api::Responses],
            ApiChoice::A2a => vec![Api::A2a],
            ApiChoice::All => vec![Api::Chat, Api::Responses, Api::A2a],
        }
    }
}

#[derive(Args)]
pub struct ConformArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Which API to check: `chat`, `responses`, `both` (those two), `a2a` or `all`.
    #[arg(long, value_enum, default_value = "both")]
    pub api: ApiChoice,
    /// A header sent on every request, as NAME:VALUE (repeatable), e.g. `--header
    /// X-Session-Id:conform` for an agent-server that requires one. Only names are recorded.
    #[arg(long = "header", value_name = "NAME:VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?} is not NAME:VALUE"))?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!("{name:?} is not a header name"));
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

pub async fn conform(args: ConformArgs) -> anyhow::Result<ExitCode> {
    if args.target.endpoint.is_none() {
        bail!("--endpoint is required (for example --endpoint http://127.0.0.1:8080)");
    }
    let config = ConformConfig {
        apis: args.api.apis(),
        headers: args.headers.clone(),
    };
    let run = conform::run(
        args.target.settings()?,
        args.target.credentials(),
        config,
        &args.out,
    )
    .await
    .context("running the conformance suite")?;
    let results = &run.results;
    for summary in &results.apis {
        println!(
            "{}: {} pass, {} fail, {} not applicable{}",
            summary.api.title(),
            summary.passed,
            summary.failed,
            summary.not_applicable,
            if summary.served {
                ""
            } else {
                " (endpoint not served)"
            }
        );
        let checks = results.checks.iter().filter(|c| c.api == summary.api);
        if !summary.served {
            if let Some(first) = results.checks.iter().find(|c| c.api == summary.api) {
                println!("  every check: {}", first.reason.as_deref().unwrap_or(""));
            }
            continue;
        }
        for check in checks {
            let mark = match check.status {
                CheckStatus::Pass => "PASS",
                CheckStatus::Fail => "FAIL",
                CheckStatus::NotApplicable => "N/A ",
            };
            match (&check.status, &check.reason) {
                (CheckStatus::Pass, _) | (_, None) => println!("  {mark} {}", check.name),
                (_, Some(reason)) => println!("  {mark} {}: {reason}", check.name),
            }
        }
    }
    print_files(&run.dir);
    if run.conformant() {
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "FAIL: {} check(s) failed (exit {EXIT_NONCONFORMANT})",
            results.failed
        );
        Ok(ExitCode::from(EXIT_NONCONFORMANT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_as_name_and_value() {
        assert_eq!(
            parse_header("X-Session-Id: abc:1"),
            Ok(("X-Session-Id".to_owned(), "abc:1".to_owned()))
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
    }
}
