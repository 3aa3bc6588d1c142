//! Throwaway Postgres databases: one per test, on the server of an admin URL.

use uuid::Uuid;

use crate::env::{SETUP_HINT, admin_url};

/// `url` with its database name replaced (URL form only, which is what the script prints).
pub fn with_dbname(url: &str, dbname: &str) -> String {
    let (scheme, rest) = url
        .split_once("://")
        .unwrap_or_else(|| panic!("AGENTWALL_TEST_DATABASE_URL must be a postgres:// URL"));
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{scheme}://{authority}/{dbname}{query}")
}

/// `url` with its user replaced (URL form only).
pub fn with_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url
        .split_once("://")
        .unwrap_or_else(|| panic!("AGENTWALL_TEST_DATABASE_URL must be a postgres:// URL"));
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{user}@{host}")
}

pub async fn admin_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}; {SETUP_HINT}"));
    tokio::spawn(connection);
    client
}

/// A database of its own, dropped when the test ends.
pub struct TestDb {
    admin: String,
    pub name: String,
    pub url: String,
}

impl TestDb {
    pub async fn create() -> Self {
        Self::create_on(&admin_url()).await
    }

    pub async fn create_on(admin: &str) -> Self {
        let name = format!("test_{}", Uuid::new_v4().simple());
        admin_client(admin)
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create the test database");
        Self {
            admin: admin.to_owned(),
            url: with_dbname(admin, &name),
            name,
        }
    }

    pub async fn client(&self) -> tokio_postgres::Client {
        admin_client(&self.url).await
    }

    /// Drops the database now, while a server may still be using it (a dependency that
    /// disappears under a running program).
    pub async fn drop_now(&self) {
        admin_client(&self.admin)
            .await
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await
            .expect("drop the test database");
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Drop runs inside the test's runtime, which cannot block on itself: use a thread with a
        // runtime of its own. Best effort: the servers are throwaway anyway.
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
                    .await
                    .ok()?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await
                    .ok()
            })
        });
        let _ = dropped.join();
    }
}
