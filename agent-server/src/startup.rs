//! Building and running the server: open the memory backend, pick the model, bind the listener.
//! [`Application::build`] binds before it returns, so tests can ask for port 0 and read the port.
//! The application owns its [`Metrics`]: made here, handed to everything that records into them
//! (stores, model, embedder, agent, the HTTP layer), so two servers of one process count apart.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::{App, HttpServer, dev::Server, web};
use anyhow::Context;

use crate::agent::semantic::Semantic;
use crate::agent::{Agent, AgentOptions};
use crate::config::Config;
use crate::embed::Recall;
use crate::http::{self, AppState};
use crate::llm::ChatModel;
use crate::llm::builtin::BuiltinModel;
use crate::llm::upstream::UpstreamModel;
use crate::memory::MemoryStore;
use crate::memory::embedded::EmbeddedStore;
use crate::memory::embedded::responses::EmbeddedResponses;
use crate::memory::redis_pg::responses::PostgresResponses;
use crate::memory::redis_pg::{RedisPostgresConfig, RedisPostgresStore};
use crate::memory::responses::ResponseStore;
use crate::memory::tasks::TaskStore;
use crate::telemetry::Metrics;

pub struct Application {
    port: u16,
    server: Server,
    recall: Recall,
    metrics: Arc<Metrics>,
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let metrics = Arc::new(Metrics::new());
        let store = open_store(&config, &metrics).await?;
        let model: Arc<dyn ChatModel> = match config.upstream()? {
            Some(upstream) => {
                tracing::info!(url = %upstream.base_url, model = ?upstream.model, "answering with the upstream model");
                Arc::new(UpstreamModel::new(upstream, Arc::clone(&metrics))?)
            }
            None => Arc::new(BuiltinModel::new(config.model_name.clone())),
        };
        let (responses, tasks) = open_api_state(&config).await?;
        let recall = Recall::start(config.embeddings()?, Arc::clone(&metrics)).await?;
        let options = AgentOptions {
            memory: config.memory_enabled(),
            recall_limit: config.recall_limit,
            episodes: config.episodes,
            metrics: Arc::clone(&metrics),
            mcp: config.mcp()?,
        };
        let mut agent = Agent::new(store.clone(), model, options);
        if let Some(embedder) = recall.embedder()
            && config.memory_enabled()
        {
            let semantic = Semantic::new(Arc::clone(embedder), Arc::clone(&metrics));
            semantic.start_backfill(store);
            agent = agent.with_semantic(semantic);
        }
        let state = web::Data::new(AppState {
            agent: std::sync::Arc::new(agent),
            responses,
            tasks,
            recall: recall.clone(),
            metrics: Arc::clone(&metrics),
            require_session: config.require_session,
            session_from_user: config.session_from_user,
            api_key: config.api_key.clone(),
            admin_token: config.admin_token.clone(),
            deny_mock_time: config.deny_mock_time,
            max_body_bytes: config.max_body_bytes,
            public_url: config.public_url.clone(),
            started_at: chrono::Utc::now().timestamp(),
        });
        let listener = TcpListener::bind(config.addr).with_context(|| {
            format!(
                "cannot listen on {}; is another server using it? (--addr)",
                config.addr
            )
        })?;
        let port = listener.local_addr()?.port();
        if config.admin_token.is_none() && !config.addr.ip().is_loopback() {
            tracing::warn!(addr = %config.addr, "the control plane is open to the network: set --admin-token");
        }
        let observed = Arc::clone(&metrics);
        let mut server = HttpServer::new(move || {
            let metrics = Arc::clone(&observed);
            App::new()
                // The last `wrap` runs first: a panic answered with a 500 is still observed.
                .wrap(actix_web::middleware::from_fn(http::panics::answer_panics))
                .wrap(actix_web::middleware::from_fn(move |req, next| {
                    http::metrics::observe(Arc::clone(&metrics), req, next)
                }))
                .configure(|cfg| http::configure(cfg, state.clone()))
        })
        // Without TCP_NODELAY a reply written in more than one piece (a streamed head, then its
        // chunks) stalls on Nagle's algorithm and the client's delayed ACK: ~40 ms per streamed
        // upstream turn, measured. Must come before `listen`, which captures the callback.
        .on_connect(|conn, _| {
            if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
                let _ = tcp.set_nodelay(true);
            }
        })
        .listen(listener)?
        .shutdown_timeout(10);
        if let Some(workers) = config.workers {
            server = server.workers(workers.max(1));
        }
        tracing::info!(
            addr = %format!("{}:{port}", config.addr.ip()),
            backend = %store_name(&config),
            memory = config.memory_enabled(),
            recall = recall.mode(),
            "agent-server listening"
        );
        Ok(Self {
            port,
            server: server.run(),
            recall,
            metrics,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server from outside (`stop(true)`: in-flight requests finish first), as
    /// SIGTERM does; for tests that restart a server on the same data.
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// The server's metrics, as `GET /metrics` renders them.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Which recall the server runs, with its embedder when semantic.
    pub fn recall(&self) -> &Recall {
        &self.recall
    }

    /// Runs until SIGINT/SIGTERM; in-flight requests finish (their turns are stored) first.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

fn store_name(config: &Config) -> &'static str {
    if config.redis_url.is_some() {
        "redis+postgres"
    } else {
        "embedded"
    }
}

async fn open_store(
    config: &Config,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<Arc<dyn MemoryStore>> {
    let memory = config.memory_config();
    match (&config.redis_url, &config.database_url) {
        (Some(redis_url), Some(database_url)) => {
            let backend = RedisPostgresConfig {
                redis_url: redis_url.clone(),
                database_url: database_url.clone(),
                timeout: config.backend_timeout,
                cache_items: config.memory_cache_items,
                metrics: Arc::clone(metrics),
                ..RedisPostgresConfig::default()
            };
            let store = RedisPostgresStore::connect(backend, memory)
                .await
                .context("cannot open the redis+postgres memory backend")?;
            Ok(Arc::new(store))
        }
        _ => {
            let path = config.data_dir.join("memory.sqlite3");
            let options = config.embedded_options(Arc::clone(metrics));
            let store = EmbeddedStore::open_with(&path, memory, options)
                .await
                .with_context(|| {
                    format!(
                        "cannot open the embedded memory database {}",
                        path.display()
                    )
                })?;
            Ok(Arc::new(store))
        }
    }
}

/// The API state a backend keeps beside memory, in the memory backend's place: the Responses
/// API's responses and conversations and the A2A tasks, in one store (Postgres beside long-term
/// memory, whose migrations, tasks' table included, [`open_store`] has run; or a file beside the
/// embedded memory file).
async fn open_api_state(
    config: &Config,
) -> anyhow::Result<(Arc<dyn ResponseStore>, Arc<dyn TaskStore>)> {
    match (&config.redis_url, &config.database_url) {
        (Some(_), Some(database_url)) => {
            let store = PostgresResponses::connect(database_url, config.backend_timeout)
                .await
                .context("cannot open the responses store in postgres")?;
            let store = Arc::new(store);
            Ok((store.clone(), store))
        }
        _ => {
            let path = config.data_dir.join("responses.sqlite3");
            let store = EmbeddedResponses::open(&path).await.with_context(|| {
                format!("cannot open the responses database {}", path.display())
            })?;
            let store = Arc::new(store);
            Ok((store.clone(), store))
        }
    }
}
