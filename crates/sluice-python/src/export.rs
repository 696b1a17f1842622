//! A query's result, handed to Python through the Arrow PyCapsule
//! interface: the C stream carries the result's own buffers (segments
//! mapped from the store, or arrays the query built), so pyarrow, polars,
//! pandas and DuckDB read them without a copy.

use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator};
use arrow_pyarrow::IntoPyArrow;
use arrow_schema::SchemaRef;
use arrow_schema::ffi::FFI_ArrowSchema;
use pyo3::exceptions::{PyImportError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The rows of a query (or of `get`), as Arrow record batches.
///
/// It implements the Arrow PyCapsule interface (`__arrow_c_stream__`), so
/// `pyarrow.table(r)`, `polars.DataFrame(r)` and `duckdb.sql("FROM r")`
/// take it as it is; `to_arrow()`, `to_polars()` and `to_pandas()` are
/// shortcuts. It owns its buffers: it outlives the database handle, and
/// can be read any number of times, from any thread.
#[pyclass(module = "sluice", name = "Result", frozen)]
pub struct QueryResult {
    schema: SchemaRef,
    batches: Arc<Vec<RecordBatch>>,
    explain: Option<String>,
}

impl QueryResult {
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>, explain: Option<String>) -> Self {
        QueryResult {
            schema,
            batches: Arc::new(batches),
            explain,
        }
    }

    fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

/// The result of a plan with each column that is a table's DECIMAL(p,s)
/// column as it is typed `decimal128(p, s)`: the engine computes decimals
/// as `decimal128(38, s)`, and the precision is only a label (the values
/// came from p-digit storage), so nothing is copied.
pub fn narrow_decimals(
    plan: &sluice::query::plan::Plan,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> sluice::Result<(SchemaRef, Vec<RecordBatch>)> {
    use arrow_schema::DataType as A;
    use sluice::query::expr::Expr;
    let sluice::query::plan::Body::Project(exprs) = &plan.body else {
        return Ok((schema, batches));
    };
    let narrow: Vec<Option<(u8, i8)>> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| match (exprs.get(i), f.data_type()) {
            (Some(Expr::Column { index, .. }), A::Decimal128(_, s)) => {
                match plan.table_types.get(*index) {
                    Some(A::Decimal64(p, ps) | A::Decimal128(p, ps)) if ps == s => Some((*p, *s)),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect();
    if narrow.iter().all(Option::is_none) {
        return Ok((schema, batches));
    }
    let fields: Vec<arrow_schema::Field> = schema
        .fields()
        .iter()
        .zip(&narrow)
        .map(|(f, n)| match n {
            Some((p, s)) => f.as_ref().clone().with_data_type(A::Decimal128(*p, *s)),
            None => f.as_ref().clone(),
        })
        .collect();
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ));
    let batches = batches
        .into_iter()
        .map(|b| {
            let cols = b
                .columns()
                .iter()
                .zip(&narrow)
                .map(|(c, n)| match n {
                    Some((p, s)) => {
                        let d = c
                            .as_any()
                            .downcast_ref::<arrow_array::Decimal128Array>()
                            .ok_or_else(|| {
                                sluice::Error::Internal("a decimal column is not decimal128".into())
                            })?
                            .clone()
                            .with_precision_and_scale(*p, *s)?;
                        Ok(Arc::new(d) as arrow_array::ArrayRef)
                    }
                    None => Ok(c.clone()),
                })
                .collect::<sluice::Result<Vec<_>>>()?;
            Ok(RecordBatch::try_new(schema.clone(), cols)?)
        })
        .collect::<sluice::Result<Vec<_>>>()?;
    Ok((schema, batches))
}

/// A batch with its `decimal64` columns (as a table stores DECIMAL) as
/// `decimal128` of the same precision, the type results have.
pub fn decimal128(b: RecordBatch) -> sluice::Result<RecordBatch> {
    use arrow_schema::DataType as A;
    if !b
        .schema()
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), A::Decimal64(..)))
    {
        return Ok(b);
    }
    let mut fields = Vec::new();
    let mut cols = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        match f.data_type() {
            A::Decimal64(p, s) => {
                let t = A::Decimal128(*p, *s);
                cols.push(arrow_cast::cast(c, &t)?);
                fields.push(f.as_ref().clone().with_data_type(t));
            }
            _ => {
                cols.push(c.clone());
                fields.push(f.as_ref().clone());
            }
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(arrow_schema::Schema::new(fields)),
        cols,
    )?)
}

/// `module`, or an ImportError that says what to install.
fn need<'py>(py: Python<'py>, module: &str, what: &str) -> PyResult<Bound<'py, PyModule>> {
    py.import(module).map_err(|e| {
        PyImportError::new_err(format!(
            "{what} needs {module}, which is not installed ({e}); pip install {module}"
        ))
    })
}

#[pymethods]
impl QueryResult {
    /// Exports the result as an Arrow C stream (the PyCapsule interface).
    /// `requested_schema` is ignored (the interface allows it): the
    /// result keeps its own types.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = (*self.batches).clone();
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), self.schema.clone());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// The result's schema as an Arrow C schema (the PyCapsule interface).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyCapsule::new_with_value(py, schema, c"arrow_schema")
    }

    /// A `pyarrow.Table` over the result's buffers (no copy).
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        need(py, "pyarrow", "to_arrow()")?;
        let table = arrow_pyarrow::Table::try_new((*self.batches).clone(), self.schema.clone())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        table.into_pyarrow(py)
    }

    /// A `polars.DataFrame` (read through the C stream: pyarrow is not
    /// needed).
    fn to_polars<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let pl = need(slf.py(), "polars", "to_polars()")?;
        pl.getattr("DataFrame")?.call1((slf,))
    }

    /// A `pandas.DataFrame` (through pyarrow). An integer or boolean
    /// column with NULLs becomes pandas' nullable type (`Int64`,
    /// `boolean`), not float64 or object: a BIGINT such as
    /// 9223372036854775807 reads back as itself.
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pd = need(py, "pandas", "to_pandas()")?;
        let table = self.to_arrow(py)?;
        let df = table.call_method0("to_pandas")?;
        let pa = py.import("pyarrow")?;
        let nullable = pyo3::types::PyDict::new(py);
        for (arrow, pandas) in [
            ("int8", "Int8Dtype"),
            ("int16", "Int16Dtype"),
            ("int32", "Int32Dtype"),
            ("int64", "Int64Dtype"),
            ("bool_", "BooleanDtype"),
        ] {
            nullable.set_item(pa.call_method0(arrow)?, pd.getattr(pandas)?.call0()?)?;
        }
        let mapper = nullable.getattr("get")?;
        for (i, f) in self.schema.fields().iter().enumerate() {
            let has_nulls = self.batches.iter().any(|b| b.column(i).null_count() > 0);
            let integer = matches!(
                f.data_type(),
                arrow_schema::DataType::Int8
                    | arrow_schema::DataType::Int16
                    | arrow_schema::DataType::Int32
                    | arrow_schema::DataType::Int64
                    | arrow_schema::DataType::Boolean
            );
            if has_nulls && integer {
                let kwargs = pyo3::types::PyDict::new(py);
                kwargs.set_item("types_mapper", &mapper)?;
                let col = table.call_method1("column", (i,))?.call_method(
                    "to_pandas",
                    (),
                    Some(&kwargs),
                )?;
                df.call_method1("isetitem", (i, col.getattr("values")?))?;
            }
        }
        Ok(df)
    }

    /// Rows in the result.
    #[getter]
    fn num_rows(&self) -> usize {
        self.rows()
    }

    /// The names of the result's columns.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// Record batches the result holds (each exported as it is).
    #[getter]
    fn num_batches(&self) -> usize {
        self.batches.len()
    }

    /// The plan as text, when the statement was an EXPLAIN.
    #[getter]
    fn explain(&self) -> Option<String> {
        self.explain.clone()
    }

    /// Addresses of the data buffers of each column of the first batch
    /// (for a test that the export does not copy).
    fn _buffer_addresses(&self) -> Vec<Vec<usize>> {
        let Some(b) = self.batches.first() else {
            return Vec::new();
        };
        b.columns()
            .iter()
            .map(|c| {
                let data = c.to_data();
                data.buffers()
                    .iter()
                    .map(|buf| buf.as_ptr() as usize)
                    .collect()
            })
            .collect()
    }

    fn __len__(&self) -> usize {
        self.rows()
    }

    fn __repr__(&self) -> String {
        let columns: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect();
        format!(
            "sluice.Result({} rows; {})",
            self.rows(),
            columns.join(", ")
        )
    }
}
