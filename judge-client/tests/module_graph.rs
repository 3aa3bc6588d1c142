//! `judge serve`'s modules import one another one way only: the graph of which module of
//! `src/serve/` names which (outside test code) has no circle, so the state never depends on the
//! runners nor the index on the simulations.

use std::path::Path;

use testkit::modules::ModuleGraph;

#[test]
fn serve_modules_import_one_another_without_a_circle() {
    let graph = ModuleGraph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let serve = ["serve".to_owned()];
    let among = graph.among_children(&serve);
    assert!(among.len() > 10, "{among:?}");
    assert!(
        among["runner"].contains("state") && among["live"].contains("index"),
        "the graph is read: {among:#?}"
    );
    assert_eq!(graph.circle_among_children(&serve), None, "{among:#?}");
}
