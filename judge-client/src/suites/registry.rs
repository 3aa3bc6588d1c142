//! Every suite, by kind: the one place that turns a run directory's `suite` into its [`Suite`].
//! A reader that serves every suite (`judge serve`'s catalog and comparisons, the CLI's
//! summaries) implements [`SuiteVisitor`] once, and [`visit`] calls it with the run's suite.

use super::Suite;
use super::apps::Apps;
use super::conform::Conform;
use super::load::Load;
use super::ltm::Ltm;
use super::membench::Membench;
use super::sim::{Ab, Sim};

/// Something done with a suite known only by its kind at run time.
pub trait SuiteVisitor {
    type Output;
    fn visit<S: Suite>(self) -> Self::Output;
}

/// Every suite's kind, in the order the CLI lists them.
pub const KINDS: [&str; 7] = [
    Ltm::KIND,
    Apps::KIND,
    Sim::KIND,
    Ab::KIND,
    Load::KIND,
    Membench::KIND,
    Conform::KIND,
];

/// Calls `visitor` with the suite of kind `kind`; `None` for a kind no suite has.
pub fn visit<V: SuiteVisitor>(kind: &str, visitor: V) -> Option<V::Output> {
    Some(match kind {
        Ltm::KIND => visitor.visit::<Ltm>(),
        Apps::KIND => visitor.visit::<Apps>(),
        Sim::KIND => visitor.visit::<Sim>(),
        Ab::KIND => visitor.visit::<Ab>(),
        Load::KIND => visitor.visit::<Load>(),
        Membench::KIND => visitor.visit::<Membench>(),
        Conform::KIND => visitor.visit::<Conform>(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Kind;
    impl SuiteVisitor for Kind {
        type Output = &'static str;
        fn visit<S: Suite>(self) -> &'static str {
            S::KIND
        }
    }

    #[test]
    fn every_kind_reaches_its_own_suite() {
        for kind in KINDS {
            assert_eq!(visit(kind, Kind), Some(kind));
        }
        assert_eq!(visit("nope", Kind), None);
    }
}
