//! The seam between the store's queries and a database: values, rows, and the four things a
//! backend does (run a statement, run a query, run a script, begin and end a transaction).
//!
//! Queries are written once, in the SQL both backends speak: `$1`-style parameters (SQLite reads
//! them as `?1`), `INSERT ... RETURNING id`, `ON CONFLICT DO NOTHING`, no `MAX(a, b)`. Where the
//! two differ in DDL (an id column, a blob), the schema names a placeholder the backend fills.

use crate::StoreError;

/// One SQL value, as both backends hold it (booleans are integers 0 and 1).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v as i64)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Blob(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// A query's row, read by column position.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Value>);

impl Row {
    fn at(&self, k: usize) -> Result<&Value, StoreError> {
        self.0.get(k).ok_or(StoreError::Column { column: k, wanted: "a column" })
    }

    pub fn opt_i64(&self, k: usize) -> Result<Option<i64>, StoreError> {
        match self.at(k)? {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(*v)),
            _ => Err(StoreError::Column { column: k, wanted: "an integer" }),
        }
    }

    pub fn i64(&self, k: usize) -> Result<i64, StoreError> {
        self.opt_i64(k)?.ok_or(StoreError::Column { column: k, wanted: "an integer" })
    }

    pub fn bool(&self, k: usize) -> Result<bool, StoreError> {
        Ok(self.i64(k)? != 0)
    }

    pub fn opt_f64(&self, k: usize) -> Result<Option<f64>, StoreError> {
        match self.at(k)? {
            Value::Null => Ok(None),
            Value::Real(v) => Ok(Some(*v)),
            // SQLite keeps a REAL that is a whole number as it was written.
            Value::Int(v) => Ok(Some(*v as f64)),
            _ => Err(StoreError::Column { column: k, wanted: "a number" }),
        }
    }

    pub fn f64(&self, k: usize) -> Result<f64, StoreError> {
        self.opt_f64(k)?.ok_or(StoreError::Column { column: k, wanted: "a number" })
    }

    pub fn opt_text(&self, k: usize) -> Result<Option<String>, StoreError> {
        match self.at(k)? {
            Value::Null => Ok(None),
            Value::Text(v) => Ok(Some(v.clone())),
            _ => Err(StoreError::Column { column: k, wanted: "text" }),
        }
    }

    pub fn text(&self, k: usize) -> Result<String, StoreError> {
        self.opt_text(k)?.ok_or(StoreError::Column { column: k, wanted: "text" })
    }

    pub fn blob(&self, k: usize) -> Result<Vec<u8>, StoreError> {
        match self.at(k)? {
            Value::Blob(v) => Ok(v.clone()),
            _ => Err(StoreError::Column { column: k, wanted: "bytes" }),
        }
    }
}

/// Which database a backend is: what fills the schema's placeholders, and how the server's
/// clock is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// A migration's DDL with its placeholders filled: `{id}` (an integer key the database
    /// assigns), `{blob}`.
    pub fn ddl(self, sql: &str) -> String {
        let (id, blob) = match self {
            Dialect::Sqlite => ("INTEGER PRIMARY KEY", "BLOB"),
            Dialect::Postgres => ("BIGSERIAL PRIMARY KEY", "BYTEA"),
        };
        sql.replace("{id}", id).replace("{blob}", blob)
    }

    /// The database server's clock, in Unix seconds: leases are timed by one clock, not by each
    /// host's.
    pub fn now(self) -> &'static str {
        match self {
            Dialect::Sqlite => "((julianday('now') - 2440587.5) * 86400.0)",
            Dialect::Postgres => "extract(epoch from clock_timestamp())::double precision",
        }
    }

    /// What a `SELECT` picking a row to update ends with, so that concurrent pickers skip a row
    /// another holds (SQLite has one writer at a time: nothing).
    pub fn skip_locked(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
        }
    }
}

/// A database connection the store's queries run on.
pub trait Backend: Send {
    fn dialect(&self) -> Dialect;
    /// A statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError>;
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError>;
    /// Statements separated by `;`, without parameters (DDL, `BEGIN`, `COMMIT`).
    fn script(&mut self, sql: &str) -> Result<(), StoreError>;
    /// Begins a transaction that writes (SQLite takes its write lock at once, so two writers
    /// never deadlock upgrading a read lock).
    fn begin(&mut self) -> Result<(), StoreError> {
        self.script("BEGIN")
    }
    /// Whether the connection is lost for good (a server that went away): a new one is needed.
    fn closed(&self) -> bool {
        false
    }
}
