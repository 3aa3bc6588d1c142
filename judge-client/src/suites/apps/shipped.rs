//! The scenarios shipped with the judge, compiled into the binary so that `judge apps` works from
//! any directory (and from a container image holding only the binary). The YAML files in
//! `judge-client/scenarios/apps/` are the source; a test checks that this list names each one.

use super::scenario::{Scenario, ScenarioError};

/// `(file name, text)` of a file of `scenarios/apps/`, read at compile time.
macro_rules! shipped {
    ($file:literal) => {
        (
            $file,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scenarios/apps/",
                $file
            )),
        )
    };
}

/// `(file name, YAML text)` of every shipped scenario, in file-name order.
pub const SCENARIOS: &[(&str, &str)] = &[
    shipped!("01_transfer_basic.yaml"),
    shipped!("02_check_balance.yaml"),
    shipped!("03_insufficient_funds_recovery.yaml"),
    shipped!("04_daily_limit.yaml"),
    shipped!("05_unknown_recipient.yaml"),
    shipped!("06_invalid_amount_precision.yaml"),
    shipped!("07_invalid_amount_negative.yaml"),
    shipped!("08_request_money.yaml"),
    shipped!("09_pay_request.yaml"),
    shipped!("10_decline_request.yaml"),
    shipped!("11_view_transactions.yaml"),
    shipped!("12_already_resolved.yaml"),
    shipped!("13_fee_and_split.yaml"),
    shipped!("14_request_unknown_user.yaml"),
];

/// The shipped scenarios, parsed, in file-name order.
pub fn scenarios() -> Result<Vec<Scenario>, ScenarioError> {
    SCENARIOS
        .iter()
        .map(|(name, text)| {
            Scenario::from_yaml(text).map_err(|e| match e {
                ScenarioError::Yaml { source, .. } => ScenarioError::Yaml {
                    path: format!("<shipped>/{name}").into(),
                    source,
                },
                other => other,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_in_the_scenario_folder_is_shipped() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/apps");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
            .collect();
        on_disk.sort();
        let shipped: Vec<&str> = SCENARIOS.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            shipped, on_disk,
            "list each scenario file in apps/shipped.rs"
        );
        assert_eq!(scenarios().unwrap().len(), on_disk.len());
    }
}
