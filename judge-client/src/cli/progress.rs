//! The progress bar the suites draw while they run.

use indicatif::{ProgressBar, ProgressStyle};
use judge_client::suites::ltm::results::TestResult;
use judge_client::suites::ltm::run::Progress;

pub struct Bar(pub ProgressBar);

impl Progress for Bar {
    fn begin(&self, total: usize, already_done: usize) {
        self.0.set_length(total as u64);
        self.0.set_position(already_done as u64);
    }

    fn test_done(&self, result: &TestResult) {
        self.0
            .set_message(format!("{} {}", result.id, result.status.as_str()));
        self.0.inc(1);
    }

    fn end(&self) {
        self.0.finish_and_clear();
    }
}

pub fn progress_bar(quiet: bool) -> Bar {
    if quiet {
        return Bar(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    Bar(bar)
}
