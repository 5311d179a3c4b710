//! The `.properties` syntax: Java's `java.util.Properties::load` format
//! read into `(key, value)` pairs, escapes resolved.

use crate::error::{Error, Result};

/// Parses Java `.properties` text into `(key, value)` pairs in file order
/// (duplicates included).
///
/// The common subset of `java.util.Properties::load`: `key=value`,
/// `key: value` and `key value`; `#` and `!` comment lines; blank lines;
/// whitespace around keys and values is dropped; a line ending in an odd
/// number of backslashes continues on the next one (its leading whitespace
/// dropped); escapes `\t \n \r \f \\ \uXXXX` (surrogate pairs combine), and a
/// backslash before any other character keeps the character (`\=`, `\:`,
/// `\ `, `\#`). One deviation: unescaped trailing whitespace of a value is
/// dropped (Java keeps it; Kafka trims values when it parses them).
///
/// # Errors
/// [`Error::PropertiesSyntax`] with the 1-based line for a malformed
/// `\uXXXX` escape or an unpaired surrogate.
pub fn parse(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, first)) = lines.next() {
        let line_no = index + 1;
        let trimmed = first.trim_start_matches(is_ws);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // Join continuation lines into one logical line.
        let mut logical = String::from(trimmed);
        while ends_with_odd_backslashes(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start_matches(is_ws)),
                None => break,
            }
        }
        out.push(split_entry(&logical, line_no)?);
    }
    Ok(out)
}

/// Java's whitespace in `.properties`: space, tab, form feed.
fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// Splits a logical line (leading whitespace already gone) into key and value.
fn split_entry(line: &str, line_no: usize) -> Result<(String, String)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    let mut escaped = false;
    // The key ends at the first unescaped '=', ':' or whitespace.
    while let Some(&b) = bytes.get(i) {
        if escaped {
            escaped = false;
        } else if b == b'\\' {
            escaped = true;
        } else if b == b'=' || b == b':' || b == b' ' || b == b'\t' || b == b'\x0c' {
            break;
        }
        i += 1;
    }
    let raw_key = &line[..i];
    let mut rest = line[i..].trim_start_matches(is_ws);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches(is_ws);
    }
    Ok((unescape(raw_key, line_no)?, unescape(rest, line_no)?))
}

/// Resolves escapes and drops unescaped trailing whitespace.
fn unescape(raw: &str, line_no: usize) -> Result<String> {
    let syntax = |reason| Error::PropertiesSyntax {
        line: line_no,
        reason,
    };
    let mut out = String::with_capacity(raw.len());
    // Length of `out` up to its last character that is not unescaped
    // whitespace.
    let mut keep = 0;
    let mut chars = raw.chars();
    let mut pending_high: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            if pending_high.is_some() {
                return Err(syntax("unpaired surrogate in \\u escape"));
            }
            out.push(c);
            if !is_ws(c) {
                keep = out.len();
            }
            continue;
        }
        let Some(e) = chars.next() else {
            // A lone trailing backslash (the end of the file cut a
            // continuation): Java drops it.
            break;
        };
        let decoded = match e {
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                if hex.len() != 4 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(syntax("malformed \\uXXXX escape"));
                }
                let unit = u32::from_str_radix(&hex, 16)
                    .map_err(|_| syntax("malformed \\uXXXX escape"))?;
                match (pending_high.take(), unit) {
                    (None, 0xD800..=0xDBFF) => {
                        pending_high = Some(unit);
                        continue;
                    }
                    (Some(high), 0xDC00..=0xDFFF) => {
                        let cp = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                        char::from_u32(cp).ok_or_else(|| syntax("invalid \\u escape"))?
                    }
                    (None, _) => char::from_u32(unit)
                        .ok_or_else(|| syntax("unpaired surrogate in \\u escape"))?,
                    (Some(_), _) => return Err(syntax("unpaired surrogate in \\u escape")),
                }
            }
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            'f' => '\x0c',
            other => other,
        };
        if pending_high.is_some() {
            return Err(syntax("unpaired surrogate in \\u escape"));
        }
        out.push(decoded);
        keep = out.len();
    }
    if pending_high.is_some() {
        return Err(syntax("unpaired surrogate in \\u escape"));
    }
    out.truncate(keep);
    Ok(out)
}

/// The pairs with duplicates removed (the last value wins, at the place of
/// the key's first occurrence), as `java.util.Properties` holds them.
pub(crate) fn entries(text: &str) -> Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in parse(text)? {
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn separators_comments_and_whitespace() {
        let text = "# comment\n! also a comment\n\n   \na=1\nb: 2\nc 3\n  d  =  4  \ne\nf=\n\
                    g = x = y\nh:=z\n";
        assert_eq!(
            pairs(text),
            vec![
                p("a", "1"),
                p("b", "2"),
                p("c", "3"),
                p("d", "4"),
                p("e", ""),
                p("f", ""),
                p("g", "x = y"),
                p("h", "=z"),
            ]
        );
    }

    #[test]
    fn continuations_and_crlf() {
        let text = "list = a,\\\n       b,\\\r\n   c\r\nnext=1\\\\\nlast=\\\n";
        assert_eq!(
            pairs(text),
            vec![p("list", "a,b,c"), p("next", "1\\"), p("last", "")]
        );
        // A comment does not continue.
        assert_eq!(pairs("# x \\\ny=1"), vec![p("y", "1")]);
    }

    #[test]
    fn escapes() {
        let text = "k\\=1\\ x = tab\\there\\nnl \\u00e9\\u4e2d \\uD83D\\uDE00\\\\ \\#\\ \n";
        assert_eq!(pairs(text), vec![p("k=1 x", "tab\there\nnl é中 😀\\ # ")]);
        assert!(matches!(
            parse("a=1\nb=\\u12G4\n"),
            Err(Error::PropertiesSyntax { line: 2, .. })
        ));
        assert!(matches!(
            parse("b=\\u12"),
            Err(Error::PropertiesSyntax { line: 1, .. })
        ));
        assert!(matches!(
            parse("b=\\uD83Dx"),
            Err(Error::PropertiesSyntax { line: 1, .. })
        ));
    }
}
