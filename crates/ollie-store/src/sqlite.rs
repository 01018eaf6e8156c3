//! The embedded backend: SQLite in one file (`ollie.db` in the output directory), for a search
//! run by one process.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::Connection;

use crate::backend::{Backend, Dialect, Row, Value};
use crate::StoreError;

pub struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, StoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A reader beside a running search (`ollie runs`) waits for its write rather than failing.
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        Ok(Sqlite { conn })
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Real(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Value::Blob(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
        })
    }
}

/// `$1` parameters as SQLite numbers them.
fn positional(sql: &str) -> String {
    sql.replace('$', "?")
}

impl Backend for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let mut stmt = self.conn.prepare_cached(&positional(sql))?;
        Ok(stmt.execute(rusqlite::params_from_iter(params))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&positional(sql))?;
        let n = stmt.column_count();
        let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
            (0..n)
                .map(|k| {
                    Ok(match r.get_ref(k)? {
                        ValueRef::Null => Value::Null,
                        ValueRef::Integer(v) => Value::Int(v),
                        ValueRef::Real(v) => Value::Real(v),
                        ValueRef::Text(v) => Value::Text(String::from_utf8_lossy(v).into_owned()),
                        ValueRef::Blob(v) => Value::Blob(v.to_vec()),
                    })
                })
                .collect::<rusqlite::Result<Vec<Value>>>()
                .map(Row)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn script(&mut self, sql: &str) -> Result<(), StoreError> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.script("BEGIN IMMEDIATE")
    }
}
