//! Java `.properties` files, as Kafka's tools read them (worker and
//! connector configs of `connect-standalone`, chains of `connect-smt`).

use connect_api::config::ConfigMap;

/// Java `.properties` text as a map (later keys win): `#`/`!` comment lines, `key=value`,
/// `key: value` or `key value`, leading whitespace trimmed, backslash line
/// continuation, and Java's escapes (`\t`, `\n`, `\uXXXX`, `\=`...).
pub fn parse_properties(text: &str) -> ConfigMap {
    let mut map = ConfigMap::new();
    let mut lines = text.lines();
    while let Some(first) = lines.next() {
        let trimmed = first.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // Join continuation lines: an odd number of trailing backslashes.
        let mut logical = String::new();
        let mut line = trimmed;
        loop {
            let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
            if trailing % 2 == 1 {
                logical.push_str(&line[..line.len() - 1]);
                match lines.next() {
                    Some(next) => line = next.trim_start(),
                    None => break,
                }
            } else {
                logical.push_str(line);
                break;
            }
        }
        let (key, value) = split_key_value(&logical);
        map.insert(unescape(key), unescape(value));
    }
    map
}

/// Split a logical line at the first unescaped `=`, `:` or whitespace.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => return (&line[..i], line[i + 1..].trim_start()),
            c if c.is_whitespace() => {
                let rest = line[i..].trim_start();
                let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest);
                return (&line[..i], rest.trim_start());
            }
            _ => {}
        }
    }
    (line, "")
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.clone().take(4).collect();
                match u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                {
                    Some(ch) => {
                        out.push(ch);
                        for _ in 0..4 {
                            chars.next();
                        }
                    }
                    // Java rejects a malformed \u escape; keep the text as written.
                    None => out.push_str("\\u"),
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Read and parse the `.properties` file at `path`; the error names the file.
pub fn load_properties(path: &std::path::Path) -> Result<ConfigMap, String> {
    std::fs::read_to_string(path)
        .map(|text| parse_properties(&text))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_basics() {
        let text = "# comment\n! also a comment\n\n  transforms = a, b\ntransforms.a.type:RegexRouter\n\
                    transforms.a.regex (.*)\ntransforms.a.replacement=x-\\\n    $1\nkey\\=with\\:sep = v\\tt\\u0041\n\
                    empty\nlast=wins\nlast=won\n";
        let p = parse_properties(text);
        assert_eq!(p.get("transforms").map(String::as_str), Some("a, b"));
        assert_eq!(
            p.get("transforms.a.type").map(String::as_str),
            Some("RegexRouter")
        );
        assert_eq!(
            p.get("transforms.a.regex").map(String::as_str),
            Some("(.*)")
        );
        assert_eq!(
            p.get("transforms.a.replacement").map(String::as_str),
            Some("x-$1")
        );
        assert_eq!(p.get("key=with:sep").map(String::as_str), Some("v\ttA"));
        assert_eq!(p.get("empty").map(String::as_str), Some(""));
        assert_eq!(p.get("last").map(String::as_str), Some("won"));
        assert_eq!(p.len(), 7);
    }

    #[test]
    fn even_backslashes_do_not_continue() {
        let p = parse_properties("a=x\\\\\nb=y\n");
        assert_eq!(p.get("a").map(String::as_str), Some("x\\"));
        assert_eq!(p.get("b").map(String::as_str), Some("y"));
        // A continuation at end of file simply ends the value.
        assert_eq!(
            parse_properties("c=z\\").get("c").map(String::as_str),
            Some("z")
        );
        assert_eq!(
            parse_properties("d=\\u12").get("d").map(String::as_str),
            Some("\\u12")
        );
    }
}
