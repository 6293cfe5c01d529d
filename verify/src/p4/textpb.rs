//! A strict reader of the protobuf text format, for the messages netc
//! pushes to switches (`DIR/p4/<switch>.txtpb`) and its P4Info.
//!
//! Expects: text as `google.protobuf.text_format` prints it — `#` comments,
//! `name: scalar`, `name { ... }` (also `name: { ... }` and `< ... >`),
//! decimal/hex integers, identifiers (enum values, `true`), and strings in
//! double or single quotes with C escapes (octal, `\x`, `\n` …), adjacent
//! strings concatenated. Guarantees: a tree of fields in file order, each
//! with its `line:col`; anything else (an unterminated string, a bad escape,
//! a missing `}`, a stray token) is a [`TextError`] at `file:line:col`
//! saying what was expected. Field names are not checked here; `request.rs`
//! knows which fields each message has.

/// A position in the file (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i128),
    Str(Vec<u8>),
    Ident(String),
    Msg(Message),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub at: Pos,
    pub value: Value,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct TextError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

struct Reader<'a> {
    file: &'a str,
    s: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
}

/// Parses a whole text-format message.
pub fn parse(file: &str, text: &str) -> Result<Message, TextError> {
    let mut r = Reader {
        file,
        s: text.as_bytes(),
        i: 0,
        line: 1,
        col: 1,
    };
    let m = r.fields(None)?;
    Ok(m)
}

impl Reader<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }
    fn err(&self, at: Pos, message: impl Into<String>) -> TextError {
        TextError {
            file: self.file.to_string(),
            line: at.line,
            col: at.col,
            message: message.into(),
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        if c == b'\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            if c == b'#' {
                while self.peek().is_some_and(|c| c != b'\n') {
                    self.bump();
                }
            } else if c.is_ascii_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }
    fn ident(&mut self) -> String {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        {
            self.bump();
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    /// Fields until `close` (or the end of the text when `close` is None).
    fn fields(&mut self, close: Option<(u8, Pos)>) -> Result<Message, TextError> {
        let mut m = Message::default();
        loop {
            self.skip_space();
            let at = self.pos();
            match (self.peek(), close) {
                (None, None) => return Ok(m),
                (None, Some((c, open))) => {
                    return Err(self.err(
                        at,
                        format!(
                            "expected `{}` to close the message opened at line {}:{}, found the end of the file",
                            c as char, open.line, open.col
                        ),
                    ))
                }
                (Some(c), Some((want, _))) if c == want => {
                    self.bump();
                    return Ok(m);
                }
                (Some(c), _) if c.is_ascii_alphabetic() || c == b'_' => {}
                (Some(c), _) => {
                    return Err(self.err(
                        at,
                        format!("expected a field name, found `{}`", c as char),
                    ))
                }
            }
            let name = self.ident();
            self.skip_space();
            let mut colon = false;
            if self.peek() == Some(b':') {
                self.bump();
                self.skip_space();
                colon = true;
            }
            let vat = self.pos();
            let value = match self.peek() {
                Some(b'{') | Some(b'<') => {
                    let open = self.bump().unwrap_or(b'{');
                    let close = if open == b'{' { b'}' } else { b'>' };
                    Value::Msg(self.fields(Some((close, vat)))?)
                }
                _ if !colon => {
                    return Err(self.err(
                        vat,
                        format!("expected `:` or `{{` after field `{name}`"),
                    ))
                }
                Some(b'"') | Some(b'\'') => Value::Str(self.strings()?),
                Some(c) if c == b'-' || c.is_ascii_digit() => Value::Int(self.int()?),
                Some(c) if c.is_ascii_alphabetic() || c == b'_' => Value::Ident(self.ident()),
                _ => {
                    return Err(self.err(
                        vat,
                        format!("expected a value for field `{name}` (a number, a string, an enum name or `{{`)"),
                    ))
                }
            };
            m.fields.push(Field { name, at, value });
            // text_format allows `,` or `;` between fields
            self.skip_space();
            if matches!(self.peek(), Some(b',') | Some(b';')) {
                self.bump();
            }
        }
    }

    fn int(&mut self) -> Result<i128, TextError> {
        let at = self.pos();
        let neg = self.peek() == Some(b'-');
        if neg {
            self.bump();
        }
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.bump();
        }
        let t = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            i128::from_str_radix(h, 16)
        } else if t.len() > 1 && t.starts_with('0') {
            i128::from_str_radix(&t[1..], 8)
        } else {
            t.parse::<i128>()
        }
        .map_err(|_| self.err(at, format!("expected an integer, found `{t}`")))?;
        Ok(if neg { -v } else { v })
    }

    fn strings(&mut self) -> Result<Vec<u8>, TextError> {
        let mut out = Vec::new();
        while let Some(q @ (b'"' | b'\'')) = self.peek() {
            let open = self.pos();
            self.bump();
            loop {
                let at = self.pos();
                match self.bump() {
                    None | Some(b'\n') => {
                        return Err(self.err(
                            open,
                            "unterminated string (expected a closing quote on the same line)",
                        ))
                    }
                    Some(c) if c == q => break,
                    Some(b'\\') => out.push(self.escape(at)?),
                    Some(c) => out.push(c),
                }
            }
            self.skip_space();
        }
        Ok(out)
    }

    fn escape(&mut self, at: Pos) -> Result<u8, TextError> {
        let c = self.bump();
        let v = match c {
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'a') => 0x07,
            Some(b'b') => 0x08,
            Some(b'f') => 0x0c,
            Some(b'v') => 0x0b,
            Some(b'\\') => b'\\',
            Some(b'\'') => b'\'',
            Some(b'"') => b'"',
            Some(b'?') => b'?',
            Some(d @ b'0'..=b'7') => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            self.bump();
                            v = v * 8 + u32::from(d - b'0');
                        }
                        _ => break,
                    }
                }
                u8::try_from(v).map_err(|_| self.err(at, "octal escape above \\377"))?
            }
            Some(b'x') => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 {
                    match self.peek().and_then(|c| (c as char).to_digit(16)) {
                        Some(d) => {
                            self.bump();
                            v = v * 16 + d;
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    return Err(self.err(at, "expected hex digits after `\\x`"));
                }
                v as u8
            }
            _ => {
                return Err(self.err(
                    at,
                    "unknown escape (expected \\n \\r \\t \\\\ \\' \\\" \\ooo or \\xHH)",
                ))
            }
        };
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_messages_escapes_and_positions() {
        let m = parse(
            "f",
            "# c\nupdates {\n  type: INSERT\n  value: \"\\n\\n\\001\\013\" 'a'\n  n: 0x10 m <k: -3>\n}\n",
        )
        .unwrap();
        let Value::Msg(u) = &m.fields[0].value else {
            panic!()
        };
        assert_eq!(m.fields[0].at, Pos { line: 2, col: 1 });
        assert_eq!(u.fields[0].value, Value::Ident("INSERT".into()));
        assert_eq!(u.fields[1].value, Value::Str(vec![10, 10, 1, 11, b'a']));
        assert_eq!(u.fields[1].at, Pos { line: 4, col: 3 });
        assert_eq!(u.fields[2].value, Value::Int(16));
        let Value::Msg(k) = &u.fields[3].value else {
            panic!()
        };
        assert_eq!(k.fields[0].value, Value::Int(-3));
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse("x.txtpb", "a {\n  b: \"oops\n}\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 6));
        assert!(e
            .to_string()
            .starts_with("x.txtpb:2:6: unterminated string"));
        let e = parse("x", "a {\n  b: 1\n").unwrap_err();
        assert!(e.message.contains("expected `}`"), "{e}");
        let e = parse("x", "a b").unwrap_err();
        assert!(e.message.contains("expected `:` or `{`"), "{e}");
        let e = parse("x", "a: \"\\q\"").unwrap_err();
        assert!(e.message.contains("unknown escape"), "{e}");
        let e = parse("x", "a: 12zz").unwrap_err();
        assert!(e.message.contains("expected an integer"), "{e}");
    }
}
