//! What every experiment writes: its samples as JSON (the header, then the
//! fields of its body) and its figures as SVG, each where asked.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::header::Header;
use crate::plot::{self, Figure};

/// The JSON body of an experiment that writes nothing but its samples:
/// `"samples": [..]`.
#[derive(Serialize)]
pub struct Samples<S> {
    pub samples: Vec<S>,
}

/// An experiment's JSON file: the header, then the fields of its body.
#[derive(Serialize)]
struct JsonReport<'a, B> {
    header: &'a Header,
    #[serde(flatten)]
    body: &'a B,
}

/// Writes the header and the fields of `body` as pretty JSON to `path`,
/// creating its directory.
pub fn write_json(header: &Header, body: &impl Serialize, path: &Path) -> io::Result<()> {
    let json =
        serde_json::to_string_pretty(&JsonReport { header, body }).map_err(io::Error::other)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| annotate(e, parent))?;
    }
    fs::write(path, json).map_err(|e| annotate(e, path))
}

/// Draws `figures` into `dir`, creating it; returns the files written.
pub fn draw_figures(figures: &[Figure], dir: &Path) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).map_err(|e| annotate(e, dir))?;
    figures
        .iter()
        .map(|figure| plot::draw(figure, dir))
        .collect()
}

/// `error` with the path it happened on.
pub fn annotate(error: io::Error, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body's fields follow the header as if they were declared next
    /// to it: the files read as before the writer was shared.
    #[test]
    fn json_files_are_the_header_then_the_body() {
        #[derive(Serialize)]
        struct Flat<'a> {
            header: &'a Header,
            load_generator: &'static str,
            samples: &'a [u32],
        }
        #[derive(Serialize)]
        struct Body<'a> {
            load_generator: &'static str,
            samples: &'a [u32],
        }
        let header = Header::collect();
        let dir = std::env::temp_dir().join(format!("bwos-bench-json-{}", std::process::id()));
        let path = dir.join("nested").join("out.json");
        let body = Body {
            load_generator: "wrk -t1",
            samples: &[1, 2],
        };
        write_json(&header, &body, &path).unwrap();
        let written = fs::read_to_string(&path).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        let flat = Flat {
            header: &header,
            load_generator: "wrk -t1",
            samples: &[1, 2],
        };
        assert_eq!(written, serde_json::to_string_pretty(&flat).unwrap());
    }
}
