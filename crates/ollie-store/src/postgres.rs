//! The shared backend: a PostgreSQL server (`--store postgresql://...`), which any number of
//! `ollie worker`s on any hosts write to at once.

use postgres::types::{private::BytesMut, to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, NoTls};

use crate::backend::{Backend, Dialect, Row, Value};
use crate::StoreError;

pub struct Postgres {
    client: Client,
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Postgres, StoreError> {
        let client = Client::connect(url, NoTls)?;
        Ok(Postgres { client })
    }
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            // A parameter takes the type the server inferred for it.
            Value::Int(v) if *ty == Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
            Value::Int(v) if *ty == Type::FLOAT8 => (*v as f64).to_sql(ty, out),
            Value::Int(v) => v.to_sql(ty, out),
            Value::Real(v) => v.to_sql(ty, out),
            Value::Text(v) => v.to_sql(ty, out),
            Value::Blob(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl Backend for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, values: &[Value]) -> Result<u64, StoreError> {
        Ok(self.client.execute(sql, &params(values))?)
    }

    fn query(&mut self, sql: &str, values: &[Value]) -> Result<Vec<Row>, StoreError> {
        let rows = self.client.query(sql, &params(values))?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|k| {
                        let ty = r.columns()[k].type_();
                        Ok(if *ty == Type::VOID {
                            Value::Null
                        } else if *ty == Type::INT8 {
                            r.try_get::<_, Option<i64>>(k)?.map_or(Value::Null, Value::Int)
                        } else if *ty == Type::INT4 {
                            r.try_get::<_, Option<i32>>(k)?.map_or(Value::Null, |v| Value::Int(v.into()))
                        } else if *ty == Type::BOOL {
                            r.try_get::<_, Option<bool>>(k)?.map_or(Value::Null, |v| Value::Int(v.into()))
                        } else if *ty == Type::FLOAT8 {
                            r.try_get::<_, Option<f64>>(k)?.map_or(Value::Null, Value::Real)
                        } else if *ty == Type::NUMERIC {
                            // Only `extract(...)` gives one, and every such use casts it away.
                            return Err(StoreError::Column { column: k, wanted: "a double, not a numeric" });
                        } else if *ty == Type::BYTEA {
                            r.try_get::<_, Option<Vec<u8>>>(k)?.map_or(Value::Null, Value::Blob)
                        } else {
                            r.try_get::<_, Option<String>>(k)?.map_or(Value::Null, Value::Text)
                        })
                    })
                    .collect::<Result<Vec<Value>, StoreError>>()
                    .map(Row)
            })
            .collect()
    }

    fn script(&mut self, sql: &str) -> Result<(), StoreError> {
        Ok(self.client.batch_execute(sql)?)
    }

    fn closed(&self) -> bool {
        self.client.is_closed()
    }
}
