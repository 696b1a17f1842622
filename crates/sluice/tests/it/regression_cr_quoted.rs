//! A file whose lines end with a lone CR (classic Mac OS) and whose quoted
//! fields hold a CR: the quoted CR is data, kept as the file has it, not
//! turned into an LF (csvkit's `examples/mac_newlines.csv` was loaded with
//! `Once upon\na time` for the file's `Once upon\ra time`).

use sluice::infer::{InferOptions, infer};
use sluice::load::{Header, LoadOptions, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, table_rows};

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[test]
fn cr_inside_quotes_of_a_cr_file_is_data() {
    let dir = TempDir::new("regression-cr-quoted");
    let inputs = [Input::File(dir.write(
        "mac_newlines.csv",
        b"a,b,c\r1,2,3\r\"Once upon\ra time\",5,6\r\"say \"\"hi\"\"\rthen\",7,8\r",
    ))];
    let inf = infer(&inputs, &InferOptions::default()).unwrap();
    assert!(inf.header);
    let o = LoadOptions {
        schema: Some(inf.schema.clone()),
        dialect: inf.dialect.clone(),
        header: Header::Yes,
        ..LoadOptions::default()
    };
    let db_dir = dir.path().join("db");
    let mut db = Database::open_writer(&db_dir).unwrap();
    load(&mut db, "t", &inputs, &o).unwrap();
    drop(db);
    assert_eq!(
        table_rows(&db_dir, "t"),
        vec![
            vec![s("1"), s("2"), s("3")],
            vec![s("Once upon\ra time"), s("5"), s("6")],
            vec![s("say \"hi\"\rthen"), s("7"), s("8")],
        ]
    );
}
