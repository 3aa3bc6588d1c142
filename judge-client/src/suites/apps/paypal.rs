//! The PayPal app of docs/contracts/apps.md: six actions over accounts held in integer cents.
//!
//! Rules beyond the document, chosen so that every outcome is unambiguous:
//! - the sender pays `amount + transaction_fee`; the recipient gets `amount`; fees are collected
//!   (and graded) apart, so money is conserved;
//! - `daily_limit` caps what an agent sends (transfers and paid requests, fees excluded) per day of
//!   the logical clock;
//! - a recipient is an account name, matched exactly, then case-insensitively, then by the part of
//!   an e-mail address before `@` (`bob@email.com` is `bob`).

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::money::{AmountError, decimal, format_usd, parse_amount, parse_config_amount};
use super::{ActionSpec, App, AppError, AppResult, LogicalClock, Observation, Params};

pub const APP_ID: &str = "paypal";

/// Defaults of the example configuration of docs/contracts/apps.md.
const DEFAULT_INITIAL_BALANCE_CENTS: i64 = 100_000;
const DEFAULT_DAILY_LIMIT_CENTS: i64 = 1_000_000;
const DEFAULT_TRANSACTIONS_LIMIT: u64 = 10;
const MAX_TRANSACTIONS_LIMIT: u64 = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Settings {
    initial_balance_cents: i64,
    fee_cents: i64,
    daily_limit_cents: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Account {
    balance_cents: i64,
    /// Cents sent per logical day (`YYYY-MM-DD`), for the daily limit.
    sent: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Transaction {
    id: String,
    /// `transfer` or `request_payment`.
    kind: String,
    from: String,
    to: String,
    amount_cents: i64,
    fee_cents: i64,
    note: Option<String>,
    request_id: Option<String>,
    at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RequestStatus {
    Pending,
    Paid,
    Declined,
}

impl RequestStatus {
    fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Pending => "pending",
            RequestStatus::Paid => "paid",
            RequestStatus::Declined => "declined",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MoneyRequest {
    id: String,
    requester: String,
    payer: String,
    amount_cents: i64,
    note: Option<String>,
    status: RequestStatus,
    created_at: String,
    resolved_at: Option<String>,
}

/// The whole app state; its JSON is the snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    settings: Settings,
    accounts: BTreeMap<String, Account>,
    transactions: Vec<Transaction>,
    requests: Vec<MoneyRequest>,
    fees_collected_cents: i64,
    seed: u64,
    /// Ids handed out so far: id `n` comes from ChaCha stream `n` of the seed, so the generator's
    /// whole state is two integers and survives a snapshot exactly.
    ids_issued: u64,
    inbox: BTreeMap<String, Vec<Observation>>,
}

/// Configuration as a scenario writes it (dollars, as in docs/contracts/apps.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    initial_balance: Option<Value>,
    transaction_fee: Option<Value>,
    daily_limit: Option<Value>,
    /// Per-agent starting balances overriding `initial_balance`.
    #[serde(default)]
    balances: BTreeMap<String, Value>,
}

/// A validated `transfer` or `request_money`: the other user, the amount in cents, the note.
struct Payment {
    other: String,
    amount: i64,
    note: Option<String>,
}

pub struct PayPal {
    state: State,
}

impl Default for PayPal {
    fn default() -> Self {
        Self::new()
    }
}

impl PayPal {
    pub fn new() -> Self {
        Self {
            state: State {
                settings: Settings {
                    initial_balance_cents: DEFAULT_INITIAL_BALANCE_CENTS,
                    fee_cents: 0,
                    daily_limit_cents: DEFAULT_DAILY_LIMIT_CENTS,
                },
                accounts: BTreeMap::new(),
                transactions: Vec::new(),
                requests: Vec::new(),
                fees_collected_cents: 0,
                seed: 0,
                ids_issued: 0,
                inbox: BTreeMap::new(),
            },
        }
    }

    fn next_id(&mut self, prefix: &str) -> String {
        let mut rng = ChaCha8Rng::seed_from_u64(self.state.seed);
        rng.set_stream(self.state.ids_issued);
        self.state.ids_issued += 1;
        format!("{prefix}-{:012x}", rng.next_u64() >> 16)
    }

    fn notify(&mut self, agent: &str, message: String, data: Value) {
        self.state
            .inbox
            .entry(agent.to_owned())
            .or_default()
            .push(Observation {
                app_id: APP_ID.to_owned(),
                message,
                data,
                priority: 1,
            });
    }

    /// The account name `who` designates, if any.
    fn resolve_user(&self, who: &str) -> Option<String> {
        let who = who.trim();
        if self.state.accounts.contains_key(who) {
            return Some(who.to_owned());
        }
        let local = who.split('@').next().unwrap_or(who);
        self.state
            .accounts
            .keys()
            .find(|name| name.eq_ignore_ascii_case(who) || name.eq_ignore_ascii_case(local))
            .cloned()
    }

    fn balance(&self, agent: &str) -> i64 {
        self.state
            .accounts
            .get(agent)
            .map_or(0, |a| a.balance_cents)
    }

    /// Checks funds and the daily limit, then moves `amount` (plus the fee) from `from` to `to`.
    fn move_money(
        &mut self,
        from: &str,
        to: &str,
        amount: i64,
        day: &str,
    ) -> Result<(i64, i64), String> {
        let fee = self.state.settings.fee_cents;
        let needed = amount + fee;
        let balance = self.balance(from);
        if needed > balance {
            return Err(format!(
                "Insufficient funds: balance {}, needed {}",
                format_usd(balance),
                format_usd(needed)
            ));
        }
        let sent_today = self
            .state
            .accounts
            .get(from)
            .and_then(|a| a.sent.get(day))
            .copied()
            .unwrap_or(0);
        let limit = self.state.settings.daily_limit_cents;
        if sent_today + amount > limit {
            return Err(format!(
                "Daily limit exceeded: {} already sent today, limit {}",
                format_usd(sent_today),
                format_usd(limit)
            ));
        }
        if let Some(sender) = self.state.accounts.get_mut(from) {
            sender.balance_cents -= needed;
            *sender.sent.entry(day.to_owned()).or_insert(0) += amount;
        }
        if let Some(recipient) = self.state.accounts.get_mut(to) {
            recipient.balance_cents += amount;
        }
        self.state.fees_collected_cents += fee;
        Ok((fee, self.balance(from)))
    }

    /// Reads and checks the counterparty (parameter `party`), amount and note shared by
    /// `transfer` and `request_money`.
    fn payment(&self, agent: &str, params: &Params, party: &str) -> Result<Payment, AppResult> {
        let named = required_str(params, party).map_err(AppResult::fail)?;
        let amount = parse_amount(params.get("amount")).map_err(amount_failure)?;
        let other = self
            .resolve_user(&named)
            .ok_or_else(|| AppResult::fail(format!("User '{named}' not found")))?;
        if other == agent {
            return Err(AppResult::fail(
                "Cannot send or request money to or from yourself",
            ));
        }
        Ok(Payment {
            other,
            amount,
            note: optional_str(params, "note"),
        })
    }

    fn check_balance(&self, agent: &str) -> AppResult {
        let balance = self.balance(agent);
        AppResult::ok(
            format!("Your PayPal balance is {}", format_usd(balance)),
            json!({"balance": decimal(balance), "balance_cents": balance}),
        )
    }

    fn transfer(&mut self, agent: &str, params: &Params, clock: &LogicalClock) -> AppResult {
        let Payment {
            other: to,
            amount,
            note,
        } = match self.payment(agent, params, "to") {
            Ok(payment) => payment,
            Err(failure) => return failure,
        };
        let (fee, new_balance) = match self.move_money(agent, &to, amount, &clock.day()) {
            Ok(moved) => moved,
            Err(e) => return AppResult::fail(e),
        };
        let id = self.next_id("tx");
        self.state.transactions.push(Transaction {
            id: id.clone(),
            kind: "transfer".to_owned(),
            from: agent.to_owned(),
            to: to.clone(),
            amount_cents: amount,
            fee_cents: fee,
            note: note.clone(),
            request_id: None,
            at: clock.timestamp(),
        });
        self.notify(
            &to,
            format!("You received {} from {agent}", format_usd(amount)),
            json!({"type": "received", "amount": decimal(amount), "amount_cents": amount,
                   "from": agent, "transaction_id": id, "note": note}),
        );
        AppResult::ok(
            format!(
                "Sent {} to {to}. Transaction {id}. New balance: {}",
                format_usd(amount),
                format_usd(new_balance)
            ),
            json!({"transaction_id": id, "new_balance": decimal(new_balance),
                   "new_balance_cents": new_balance, "fee": decimal(fee)}),
        )
    }

    fn request_money(&mut self, agent: &str, params: &Params, clock: &LogicalClock) -> AppResult {
        let Payment {
            other: payer,
            amount,
            note,
        } = match self.payment(agent, params, "from") {
            Ok(payment) => payment,
            Err(failure) => return failure,
        };
        let id = self.next_id("req");
        self.state.requests.push(MoneyRequest {
            id: id.clone(),
            requester: agent.to_owned(),
            payer: payer.clone(),
            amount_cents: amount,
            note: note.clone(),
            status: RequestStatus::Pending,
            created_at: clock.timestamp(),
            resolved_at: None,
        });
        self.notify(
            &payer,
            format!(
                "{agent} requested {} from you: '{}' (request {id})",
                format_usd(amount),
                note.as_deref().unwrap_or("")
            ),
            json!({"type": "request", "request_id": id, "amount": decimal(amount),
                   "amount_cents": amount, "from": agent, "note": note}),
        );
        AppResult::ok(
            format!(
                "Requested {} from {payer}. Request {id} is pending",
                format_usd(amount)
            ),
            json!({"request_id": id}),
        )
    }

    fn view_transactions(&self, agent: &str, params: &Params) -> AppResult {
        let limit = match params.get("limit") {
            None | Some(Value::Null) => DEFAULT_TRANSACTIONS_LIMIT,
            Some(value) => match value.as_u64().or_else(|| value.as_str()?.parse().ok()) {
                Some(n) if (1..=MAX_TRANSACTIONS_LIMIT).contains(&n) => n,
                _ => {
                    return AppResult::fail(format!(
                        "limit must be a whole number from 1 to {MAX_TRANSACTIONS_LIMIT}, got {value}"
                    ));
                }
            },
        };
        let mine: Vec<Value> = self
            .state
            .transactions
            .iter()
            .rev()
            .filter(|t| t.from == agent || t.to == agent)
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|t| {
                json!({"transaction_id": t.id, "type": t.kind, "from": t.from, "to": t.to,
                       "amount": decimal(t.amount_cents), "fee": decimal(t.fee_cents),
                       "note": t.note, "at": t.at})
            })
            .collect();
        AppResult::ok(
            format!("{} recent transaction(s)", mine.len()),
            json!({"transactions": mine}),
        )
    }

    /// Finds a pending request addressed to `agent`, or says why it cannot be resolved.
    fn pending_request_for(&self, agent: &str, params: &Params) -> Result<usize, String> {
        let id = required_str(params, "request_id")?;
        let index = self
            .state
            .requests
            .iter()
            .position(|r| r.id == id)
            .ok_or_else(|| format!("Request '{id}' not found"))?;
        let request = &self.state.requests[index];
        if request.payer != agent {
            return Err(format!("Request '{id}' is not addressed to you"));
        }
        if request.status != RequestStatus::Pending {
            return Err(format!(
                "Request '{id}' is already resolved ({})",
                request.status.as_str()
            ));
        }
        Ok(index)
    }

    fn pay_request(&mut self, agent: &str, params: &Params, clock: &LogicalClock) -> AppResult {
        let index = match self.pending_request_for(agent, params) {
            Ok(index) => index,
            Err(e) => return AppResult::fail(e),
        };
        let request = self.state.requests[index].clone();
        let (fee, new_balance) = match self.move_money(
            agent,
            &request.requester,
            request.amount_cents,
            &clock.day(),
        ) {
            Ok(moved) => moved,
            Err(e) => return AppResult::fail(e),
        };
        let id = self.next_id("tx");
        self.state.transactions.push(Transaction {
            id: id.clone(),
            kind: "request_payment".to_owned(),
            from: agent.to_owned(),
            to: request.requester.clone(),
            amount_cents: request.amount_cents,
            fee_cents: fee,
            note: request.note.clone(),
            request_id: Some(request.id.clone()),
            at: clock.timestamp(),
        });
        let resolved = &mut self.state.requests[index];
        resolved.status = RequestStatus::Paid;
        resolved.resolved_at = Some(clock.timestamp());
        self.notify(
            &request.requester,
            format!(
                "{agent} paid your {} request",
                format_usd(request.amount_cents)
            ),
            json!({"type": "request_paid", "request_id": request.id,
                   "amount": decimal(request.amount_cents), "transaction_id": id}),
        );
        AppResult::ok(
            format!(
                "Paid {}'s request of {}. Transaction {id}. New balance: {}",
                request.requester,
                format_usd(request.amount_cents),
                format_usd(new_balance)
            ),
            json!({"transaction_id": id, "new_balance": decimal(new_balance),
                   "new_balance_cents": new_balance}),
        )
    }

    fn decline_request(&mut self, agent: &str, params: &Params, clock: &LogicalClock) -> AppResult {
        let index = match self.pending_request_for(agent, params) {
            Ok(index) => index,
            Err(e) => return AppResult::fail(e),
        };
        let request = &mut self.state.requests[index];
        request.status = RequestStatus::Declined;
        request.resolved_at = Some(clock.timestamp());
        let (requester, id, amount) = (
            request.requester.clone(),
            request.id.clone(),
            request.amount_cents,
        );
        self.notify(
            &requester,
            format!("{agent} declined your {} request", format_usd(amount)),
            json!({"type": "request_declined", "request_id": id}),
        );
        AppResult::ok(
            format!("Declined {requester}'s request of {}", format_usd(amount)),
            json!({"success": true}),
        )
    }
}

fn required_str(params: &Params, key: &str) -> Result<String, String> {
    match params.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        // Directives may write an unquoted name or number (`to=bob`); take it as text.
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Null) | None => Err(format!("Missing parameter: {key}")),
        Some(other) => Err(format!("Parameter {key} must be a string, got {other}")),
    }
}

fn optional_str(params: &Params, key: &str) -> Option<String> {
    match params.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    }
}

fn amount_failure(error: AmountError) -> AppResult {
    AppResult::fail(format!("Invalid amount: {error}"))
}

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}

impl App for PayPal {
    fn id(&self) -> &str {
        APP_ID
    }

    fn name(&self) -> &str {
        "PayPal"
    }

    fn description(&self) -> &str {
        "PayPal: send money to other users, request money from them, pay or decline requests \
         addressed to you, check your balance and your recent transactions. Amounts are in US \
         dollars with at most two decimals."
    }

    fn actions(&self) -> Vec<ActionSpec> {
        let amount = json!({"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01,
                            "description": "US dollars, at most two decimals"});
        let note = json!({"type": "string", "description": "Optional message"});
        let request_id = json!({"type": "string", "description": "Id of a pending request"});
        let spec = |name: &str, description: &str, parameters: Value, returns: Value| ActionSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
            returns,
        };
        vec![
            spec(
                "check_balance",
                "View your current balance",
                schema(json!({}), &[]),
                json!({"balance": "string"}),
            ),
            spec(
                "transfer",
                "Send money to another user",
                schema(
                    json!({"to": {"type": "string", "description": "Recipient user name"},
                           "amount": amount, "note": note}),
                    &["to", "amount"],
                ),
                json!({"transaction_id": "string", "new_balance": "string"}),
            ),
            spec(
                "request_money",
                "Ask another user to pay you",
                schema(
                    json!({"from": {"type": "string", "description": "User asked to pay"},
                           "amount": amount, "note": note}),
                    &["from", "amount"],
                ),
                json!({"request_id": "string"}),
            ),
            spec(
                "view_transactions",
                "List your recent transactions, newest first",
                schema(
                    json!({"limit": {"type": "integer", "minimum": 1, "maximum": 100}}),
                    &[],
                ),
                json!({"transactions": "array"}),
            ),
            spec(
                "pay_request",
                "Pay a pending money request addressed to you",
                schema(json!({"request_id": request_id}), &["request_id"]),
                json!({"transaction_id": "string", "new_balance": "string"}),
            ),
            spec(
                "decline_request",
                "Decline a pending money request addressed to you",
                schema(json!({"request_id": request_id}), &["request_id"]),
                json!({"success": "boolean"}),
            ),
        ]
    }

    fn initialize(&mut self, agents: &[String], config: &Value, seed: u64) -> Result<(), AppError> {
        let bad = |reason: String| AppError::Config {
            app: APP_ID.to_owned(),
            reason,
        };
        let config: Config = if config.is_null() {
            Config {
                initial_balance: None,
                transaction_fee: None,
                daily_limit: None,
                balances: BTreeMap::new(),
            }
        } else {
            serde_json::from_value(config.clone()).map_err(|e| bad(e.to_string()))?
        };
        let amount = |value: &Option<Value>, default: i64, what: &str| match value {
            None => Ok(default),
            Some(v) => parse_config_amount(v).map_err(|e| bad(format!("{what}: {e}"))),
        };
        let settings = Settings {
            initial_balance_cents: amount(
                &config.initial_balance,
                DEFAULT_INITIAL_BALANCE_CENTS,
                "initial_balance",
            )?,
            fee_cents: amount(&config.transaction_fee, 0, "transaction_fee")?,
            daily_limit_cents: amount(
                &config.daily_limit,
                DEFAULT_DAILY_LIMIT_CENTS,
                "daily_limit",
            )?,
        };
        let mut accounts = BTreeMap::new();
        for agent in agents {
            let balance = match config.balances.get(agent) {
                Some(v) => parse_config_amount(v).map_err(|e| bad(format!("{agent}: {e}")))?,
                None => settings.initial_balance_cents,
            };
            accounts.insert(
                agent.clone(),
                Account {
                    balance_cents: balance,
                    sent: BTreeMap::new(),
                },
            );
        }
        if let Some(stranger) = config.balances.keys().find(|k| !accounts.contains_key(*k)) {
            return Err(bad(format!("balance given for unknown agent `{stranger}`")));
        }
        self.state = State {
            settings,
            accounts,
            transactions: Vec::new(),
            requests: Vec::new(),
            fees_collected_cents: 0,
            seed,
            ids_issued: 0,
            inbox: BTreeMap::new(),
        };
        Ok(())
    }

    fn execute(
        &mut self,
        agent: &str,
        action: &str,
        params: &Params,
        clock: &LogicalClock,
    ) -> AppResult {
        if !self.state.accounts.contains_key(agent) {
            return AppResult::fail(format!("Account not found for agent '{agent}'"));
        }
        match action {
            "check_balance" => self.check_balance(agent),
            "transfer" => self.transfer(agent, params, clock),
            "request_money" => self.request_money(agent, params, clock),
            "view_transactions" => self.view_transactions(agent, params),
            "pay_request" => self.pay_request(agent, params, clock),
            "decline_request" => self.decline_request(agent, params, clock),
            other => AppResult::fail(format!("Unknown action: {APP_ID}.{other}")),
        }
    }

    fn agent_state(&self, agent: &str) -> Option<Value> {
        let account = self.state.accounts.get(agent)?;
        let view = |r: &MoneyRequest| {
            json!({"request_id": r.id, "from": r.requester, "to": r.payer,
                   "amount": decimal(r.amount_cents), "note": r.note})
        };
        let pending_requests: Vec<Value> = self
            .state
            .requests
            .iter()
            .filter(|r| r.payer == agent && r.status == RequestStatus::Pending)
            .map(view)
            .collect();
        let outgoing_requests: Vec<Value> = self
            .state
            .requests
            .iter()
            .filter(|r| r.requester == agent && r.status == RequestStatus::Pending)
            .map(view)
            .collect();
        Some(json!({
            "agent": agent,
            "balance": decimal(account.balance_cents),
            "balance_cents": account.balance_cents,
            "pending_requests": pending_requests,
            "outgoing_requests": outgoing_requests,
        }))
    }

    fn drain_observations(&mut self, agent: &str) -> Vec<Observation> {
        self.state.inbox.remove(agent).unwrap_or_default()
    }

    /// Balances, transactions, requests and fees: what an action can change. The daily counters,
    /// the id generator and the inboxes are bookkeeping, left out so they never count as damage.
    fn state(&self) -> Value {
        let accounts: serde_json::Map<String, Value> = self
            .state
            .accounts
            .iter()
            .map(|(name, a)| (name.clone(), json!({"balance_cents": a.balance_cents})))
            .collect();
        json!({
            "accounts": accounts,
            "transactions": self.state.transactions,
            "requests": self.state.requests,
            "fees_collected_cents": self.state.fees_collected_cents,
        })
    }

    fn snapshot(&self) -> Value {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_value(&self.state).unwrap_or(Value::Null)
    }

    fn restore(&mut self, snapshot: &Value) -> Result<(), AppError> {
        self.state =
            serde_json::from_value(snapshot.clone()).map_err(|source| AppError::Snapshot {
                app: APP_ID.to_owned(),
                source,
            })?;
        Ok(())
    }
}
