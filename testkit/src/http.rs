//! Fake HTTP servers (upstream models, OTLP collectors, proxies) for tests that run the real
//! binaries: an actix-web app on a free loopback port, served from a thread of its own so that it
//! answers whatever runtime, or none, the test itself uses.

use std::sync::mpsc;

use actix_web::{App, HttpServer, web};

/// Serves the app `configure` builds on a free loopback port, with one worker, from a thread of
/// its own that lives as long as the test process; returns the port.
pub fn serve(configure: impl Fn(&mut web::ServiceConfig) + Send + Clone + 'static) -> u16 {
    let (port_tx, port_rx) = mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let server = HttpServer::new(move || App::new().configure(configure.clone()))
                .workers(1)
                .bind(("127.0.0.1", 0))
                .expect("bind a loopback port");
            port_tx
                .send(server.addrs()[0].port())
                .expect("the test waits");
            server.run().await.expect("the fake server runs");
        });
    });
    port_rx.recv().expect("the fake server reports its port")
}
